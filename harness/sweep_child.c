/* Child processes for sweep runs (see sweep_child.h): fork/exec into its own process
 * group, poll its stderr with a one-second tick, keep the last lines, enforce a timeout. */
#include "sweep_child.h"
#include "engine/status.h"
#include "engine/timer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t current_child;

void mx_child_kill_current(void)
{
    pid_t p = current_child;
    if (p > 0) kill(-p, SIGKILL);
}

static void keep_tail(mx_child_result *res, const char *buf, size_t n)
{
    const size_t cap = sizeof res->stderr_tail - 1;
    size_t have = strlen(res->stderr_tail);
    if (n >= cap) {
        memcpy(res->stderr_tail, buf + n - cap, cap);
        res->stderr_tail[cap] = 0;
        return;
    }
    if (have + n > cap) {
        memmove(res->stderr_tail, res->stderr_tail + (have + n - cap), cap - n);
        have = cap - n;
    }
    memcpy(res->stderr_tail + have, buf, n);
    res->stderr_tail[have + n] = 0;
}

static void exec_child(char *const argv[], int err_fd)
{
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv);
    dprintf(err_fd, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int mx_child_run(char *const argv[], double timeout_s, mx_child_tick_fn tick, void *user, mx_child_result *res)
{
    memset(res, 0, sizeof *res);
    int fds[2];
    if (pipe(fds) != 0) return mx_error(MX_ERUNTIME, "pipe: %s", strerror(errno));
    const double t0 = mx_now();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return mx_error(MX_ERUNTIME, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        exec_child(argv, fds[1]);
    }
    setpgid(pid, pid); /* also here: whichever runs first, the group exists before a kill */
    current_child = pid;
    close(fds[1]);
    char buf[4096];
    for (int open_pipe = 1; open_pipe;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, 1000);
        const double elapsed = mx_now() - t0;
        if (r > 0) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            if (n > 0) keep_tail(res, buf, (size_t)n);
            else if (n == 0 || errno != EINTR) open_pipe = 0;
        }
        if (tick) tick(user, elapsed);
        if (timeout_s > 0 && elapsed > timeout_s && !res->timed_out) {
            res->timed_out = 1;
            kill(-pid, SIGKILL);
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    current_child = 0;
    res->seconds = mx_now() - t0;
    res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    res->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return MX_OK;
}
