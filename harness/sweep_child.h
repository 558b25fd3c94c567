/* Running one sweep configuration as a child process (`mxbench train ... --record FILE`),
 * so that a crash, an out-of-memory kill or a hang fails that run and not the sweep. */
#ifndef MX_SWEEP_CHILD_H
#define MX_SWEEP_CHILD_H

#include <stddef.h>

typedef struct {
    int exit_status;     /* 0 ok; 128+signal when killed; -1 could not start */
    int term_signal;     /* the signal that killed it, else 0 */
    int timed_out;
    double seconds;
    char stderr_tail[1536];
} mx_child_result;

/* Called about once a second while the child runs (progress display). */
typedef void (*mx_child_tick_fn)(void *user, double elapsed);

/* Runs argv (argv[0] a path) with stdout discarded and stderr captured; kills the child's
 * process group after timeout_s seconds (0 = no limit). */
int mx_child_run(char *const argv[], double timeout_s, mx_child_tick_fn tick, void *user, mx_child_result *res);

/* Kills the running child, if any (for the sweep's SIGINT/SIGTERM handler). */
void mx_child_kill_current(void);

#endif
