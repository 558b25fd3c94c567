/* The host monitor (harness/hostload.h): a reading of /proc succeeds on Linux; a busy
 * program beside this one (a child spinning under another name) shows as a thread ready to
 * run and makes the watch call the host noisy; a process under this one's name (mxbench's
 * own: a sweep's parent, an MPI job's ranks) never counts; the figures of an empty watch
 * are NaN and not noisy. Whether an idle host reads 0 others is not asserted: CI's host may
 * run anything beside the test. */
#include "check.h"
#include "harness/hostload.h"

#include <math.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A child spinning until killed, named `name` (NULL: keeps this process's name). */
static pid_t spin(const char *name)
{
    const pid_t pid = fork();
    if (pid == 0) {
        if (name) prctl(PR_SET_NAME, name, 0, 0, 0);
        for (volatile unsigned long i = 0;; i++) {
        }
    }
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void settle(void)
{
    const struct timespec ts = {0, 200 * 1000 * 1000}; /* the child reaches its loop */
    nanosleep(&ts, NULL);
}

/* The most (least) others over a few readings: a reading is an instant, and a spinner may
 * be between time slices at one of them. */
static int others_over_readings(int most)
{
    int v = most ? -1 : 1 << 30;
    for (int i = 0; i < 5; i++) {
        mx_host_sample s;
        mx_host_sample_now(&s);
        CHECK(s.ok, "reading /proc failed");
        if (most ? s.others > v : s.others < v) v = s.others;
    }
    return v;
}

int main(void)
{
    mx_host_sample s;
    mx_host_sample_now(&s);
    CHECK(s.ok && s.total > 0 && s.load1 >= 0 && s.others >= 0, "a reading: ok %d, total %llu, load %g, others %d",
          s.ok, s.total, s.load1, s.others);

    mx_host_watch empty = {0};
    double others, load, steal;
    int noisy;
    mx_host_watch_figures(&empty, &others, &load, &steal, &noisy);
    CHECK(isnan(others) && isnan(load) && isnan(steal) && !noisy, "empty watch: %g %g %g noisy %d", others, load,
          steal, noisy);

    const int before = others_over_readings(1);
    pid_t busy = spin("mx-test-busy");
    settle();
    const int with_busy = others_over_readings(1);
    CHECK(with_busy >= 1, "a spinning program beside this one: %d others ready to run (before: %d)", with_busy, before);
    mx_host_watch w;
    mx_host_watch_start(&w);
    for (int i = 0; i < 4; i++) mx_host_watch_add(&w);
    mx_host_watch_figures(&w, &others, &load, &steal, &noisy);
    CHECK(noisy && others >= MX_NOISY_OTHERS, "busy host: others %g on average, noisy %d", others, noisy);
    stop(busy);

    /* two under this process's own name: mxbench's, never another program. Counted, they
     * would lift even the least reading 2 above the least before; the most before bounds it
     * so that other programs' comings and goings do not fail the test */
    pid_t own[2] = {spin(NULL), spin(NULL)};
    settle();
    const int with_own = others_over_readings(0);
    CHECK(with_own <= before, "spinning processes of this name counted: %d others at least (before: %d at most)",
          with_own, before);
    stop(own[0]);
    stop(own[1]);
    printf("others ready to run: %d before, %d beside a spinning program, %d beside a spinning twin\n", before,
           with_busy, with_own);
    return check_summary("test_hostload");
}
