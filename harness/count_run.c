/* Counted runs (count_run.h): cachegrind's totals, or hardware counters on a child. */
#include "harness/count_run.h"
#include "base/status.h"
#include "harness/sweep_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 256

/* cachegrind's output names its events once ("events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw
 * DLmw") and gives their totals on the "summary:" line, in that order. */
static int read_cachegrind(const char *path, mx_counts *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return mx_error(MX_EIO, "cachegrind wrote no %s: %s", path, strerror(errno));
    char line[1024], events[1024] = "", summary[1024] = "";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "events:", 7) == 0) snprintf(events, sizeof events, "%s", line + 7);
        else if (strncmp(line, "summary:", 8) == 0) snprintf(summary, sizeof summary, "%s", line + 8);
    }
    fclose(f);
    if (!events[0] || !summary[0]) return mx_error(MX_EFORMAT, "%s has no events or summary line", path);
    out->instructions = out->d1_misses = out->ll_misses = NAN;
    double d1 = 0, ll = 0;
    int found = 0;
    char *es = NULL, *ss = NULL;
    for (char *e = strtok_r(events, " \t\n", &es), *v = strtok_r(summary, " \t\n", &ss); e && v;
         e = strtok_r(NULL, " \t\n", &es), v = strtok_r(NULL, " \t\n", &ss)) {
        const double x = strtod(v, NULL);
        if (strcmp(e, "Ir") == 0) out->instructions = x, found |= 1;
        else if (strcmp(e, "D1mr") == 0 || strcmp(e, "D1mw") == 0) d1 += x, found |= 2;
        else if (strcmp(e, "DLmr") == 0 || strcmp(e, "DLmw") == 0) ll += x, found |= 4;
    }
    if (!(found & 1)) return mx_error(MX_EFORMAT, "%s counts no instructions (Ir)", path);
    if (found & 2) out->d1_misses = d1;
    if (found & 4) out->ll_misses = ll;
    return MX_OK;
}

int mx_count_cachegrind(const char *valgrind, char *const argv[], const char *dir, mx_counts *out)
{
    char outfile[4200], opt[4300];
    snprintf(outfile, sizeof outfile, "%s/cachegrind.out", dir);
    snprintf(opt, sizeof opt, "--cachegrind-out-file=%s", outfile);
    char *vargv[MAX_ARGS + 8] = {(char *)valgrind, "-q", "--tool=cachegrind", "--cache-sim=yes", opt};
    int n = 5;
    for (int i = 0; argv[i] && n < MAX_ARGS + 6; i++) vargv[n++] = argv[i];
    vargv[n] = NULL;
    unlink(outfile);
    mx_child_opts o = {0};
    mx_child_result cr;
    MX_TRY(mx_child_run(vargv, &o, NULL, NULL, &cr));
    if (cr.exit_status != 0)
        return mx_error(
            MX_ERUNTIME, "under valgrind, %s exited with %d%s; its last words:\n%s", argv[0], cr.exit_status,
            cr.exit_status == 128 + 4 ? " (SIGILL: an instruction valgrind cannot run)" : "", cr.stderr_tail);
    int rc = read_cachegrind(outfile, out);
    unlink(outfile);
    return rc;
}

static int perf_open(pid_t pid, uint64_t config, int group)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.exclude_kernel = 1; /* what the program does, not the kernel on its behalf */
    a.exclude_hv = 1;
    a.inherit = 1;        /* every thread the child starts: devices, OpenMP and BLAS teams */
    a.disabled = group < 0;
    a.enable_on_exec = group < 0; /* from the exec on, not the fork's bookkeeping */
    return (int)syscall(SYS_perf_event_open, &a, pid, -1, group, 0);
}

int mx_count_perf_available(char *why, int n)
{
    const int fd = perf_open(0, PERF_COUNT_HW_INSTRUCTIONS, -1);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    snprintf(why, (size_t)n, "perf_event_open(instructions): %s%s", strerror(errno),
             errno == ENOENT || errno == EOPNOTSUPP ? " (this CPU or hypervisor exposes no hardware counters)"
             : errno == EACCES || errno == EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)" : "");
    return 0;
}

/* The child waits on a pipe until its counters exist, then execs: counting starts at the exec. */
int mx_count_perf(char *const argv[], mx_counts *out)
{
    int go[2];
    if (pipe(go) != 0) return mx_error(MX_ERUNTIME, "pipe: %s", strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) return mx_error(MX_ERUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1) _exit(127);
        const int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(go[0]);
    const int fi = perf_open(pid, PERF_COUNT_HW_INSTRUCTIONS, -1);
    const int fm = fi >= 0 ? perf_open(pid, PERF_COUNT_HW_CACHE_MISSES, -1) : -1;
    const int err = errno;
    if (fi >= 0 && write(go[1], "x", 1) != 1) {}
    close(go[1]); /* without a byte the child exits: nothing was counted */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    uint64_t ni = 0, nm = 0;
    const int ok = fi >= 0 && read(fi, &ni, sizeof ni) == sizeof ni;
    if (fm < 0 || read(fm, &nm, sizeof nm) != sizeof nm) nm = 0;
    if (fi >= 0) close(fi);
    if (fm >= 0) close(fm);
    if (fi < 0) return mx_error(MX_EUNSUPPORTED, "perf_event_open on the child: %s", strerror(err));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return mx_error(MX_ERUNTIME, "%s exited with %d under hardware counters", argv[0],
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    if (!ok) return mx_error(MX_EIO, "reading the instructions counter: %s", strerror(errno));
    out->instructions = (double)ni;
    out->d1_misses = NAN;
    out->ll_misses = fm >= 0 ? (double)nm : NAN;
    return MX_OK;
}
