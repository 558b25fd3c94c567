/* Running one sweep configuration as a child process (`mxbench train ... --record FILE`, or
 * `mpirun ... mxbench train ...` for a dist_* row), so that a crash, an out-of-memory kill or
 * a hang fails that run and not the sweep. */
#ifndef MX_SWEEP_CHILD_H
#define MX_SWEEP_CHILD_H

#include <stddef.h>

#define MX_CHILD_MARKS 5

typedef struct {
    int exit_status;     /* 0 ok; 128+signal when killed; -1 could not start */
    int term_signal;     /* the signal that killed it, else 0 */
    int timed_out;
    double seconds;
    char stderr_tail[1536];
    /* marks[i]: the first stderr line holding opts.marks[i] ("" when none did), kept whole
     * however much the child printed after it (the line naming a failed rank) */
    char marks[MX_CHILD_MARKS][320];
} mx_child_result;

typedef struct {
    double timeout_s;    /* kill the child after this long (0: no limit) */
    /* > 0: end the child with SIGTERM first and SIGKILL grace_s seconds later (mpirun takes
     * its ranks down on SIGTERM, which run in process groups of their own); 0: SIGKILL at once */
    double grace_s;
    const char *marks[MX_CHILD_MARKS]; /* substrings of stderr lines to keep (NULL: unused) */
} mx_child_opts;

/* Called about once a second while the child runs (progress display). */
typedef void (*mx_child_tick_fn)(void *user, double elapsed);

/* Runs argv (argv[0] a path) in a process group of its own, with stdout discarded and
 * stderr captured; ends it after opts->timeout_s seconds (as opts->grace_s says). When it is
 * ended (timeout, mx_child_kill_current), its children that were still running are killed
 * too once it is gone. */
int mx_child_run(char *const argv[], const mx_child_opts *opts, mx_child_tick_fn tick, void *user,
                 mx_child_result *res);

/* Ends the running child, if any, as its opts->grace_s says (for the sweep's SIGINT/SIGTERM
 * handler: async-signal-safe). */
void mx_child_kill_current(void);

/* For commands that run one child after another (ab, count): SIGINT and SIGTERM end the
 * running child (which runs in a process group of its own, out of the terminal's reach) and
 * are remembered; mx_child_interrupted() is that signal, 0 while none came. */
void mx_child_trap_signals(void);
int mx_child_interrupted(void);

/* Makes a fresh directory $TMPDIR/mxbench-NAME.XXXXXX (/tmp without TMPDIR) into dir; 0, or -1
 * after printing "mxbench NAME: cannot make a temporary directory ..." on stderr. */
int mx_make_temp_dir(const char *name, char *dir, size_t n);

/* A program's path: name itself when it holds a '/', else the first match on PATH (an
 * executable regular file). 0, or -1 when there is none. */
int mx_find_program(const char *name, char *out, size_t n);

#endif
