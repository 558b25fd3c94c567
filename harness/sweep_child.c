/* Child processes for sweep runs (see sweep_child.h): fork/exec into its own process
 * group, poll its stderr with a one-second tick, keep the last lines and the marked ones,
 * enforce a timeout. */
#include "sweep_child.h"
#include "base/status.h"
#include "base/timer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t current_child;
static volatile int current_graceful;
static volatile sig_atomic_t end_requested;

void mx_child_kill_current(void)
{
    pid_t p = current_child;
    if (p <= 0) return;
    end_requested = 1; /* the run loop ends it as its grace says */
    if (!current_graceful) kill(-p, SIGKILL);
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

/* Lines of stderr as they come, for the marks. */
typedef struct {
    char line[320];
    size_t len;
} line_buf;

static void check_line(const mx_child_opts *o, mx_child_result *res, line_buf *lb)
{
    lb->line[lb->len] = 0;
    for (int i = 0; i < MX_CHILD_MARKS; i++)
        if (o->marks[i] && !res->marks[i][0] && strstr(lb->line, o->marks[i]))
            snprintf(res->marks[i], sizeof res->marks[i], "%s", lb->line);
    lb->len = 0;
}

static void scan_lines(const mx_child_opts *o, mx_child_result *res, line_buf *lb, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') check_line(o, res, lb);
        else if (lb->len < sizeof lb->line - 1) lb->line[lb->len++] = buf[i];
    }
}

/* The processes whose parent is pid (mpirun's local ranks), with their start times, so that
 * a pid reused later is never killed. */
typedef struct {
    pid_t pid[256];
    unsigned long long start[256];
    int n;
} kids;

static int proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
    if (!p) return -1;
    char state;
    int pp;
    /* fields 3 (state), 4 (ppid), then 5..21, and 22: the start time */
    if (sscanf(p + 2, "%c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &state, &pp,
               start) != 3)
        return -1;
    *ppid = pp;
    return 0;
}

static void find_kids(pid_t parent, kids *k)
{
    k->n = 0;
    DIR *d = opendir("/proc");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) && k->n < 256;) {
        const pid_t pid = (pid_t)atoi(e->d_name);
        pid_t pp;
        unsigned long long st;
        if (pid > 0 && proc_stat(pid, &pp, &st) == 0 && pp == parent) k->pid[k->n] = pid, k->start[k->n++] = st;
    }
    closedir(d);
}

static void kill_kids(const kids *k)
{
    for (int i = 0; i < k->n; i++) {
        pid_t pp;
        unsigned long long st;
        if (proc_stat(k->pid[i], &pp, &st) == 0 && st == k->start[i]) kill(k->pid[i], SIGKILL);
    }
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

int mx_child_run(char *const argv[], const mx_child_opts *o, mx_child_tick_fn tick, void *user, mx_child_result *res)
{
    memset(res, 0, sizeof *res);
    int fds[2];
    if (pipe(fds) != 0) return mx_error(MX_ERUNTIME, "pipe: %s", strerror(errno));
    const double t0 = mx_now();
    end_requested = 0;
    current_graceful = o->grace_s > 0;
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
    line_buf lb = {.len = 0};
    static kids k; /* the child's children when it was ended */
    k.n = 0;
    /* ending: 0 running; 1 SIGTERM sent (SIGKILL due at kill_at); 2 SIGKILL sent */
    int ending = 0;
    double kill_at = 0;
    for (int open_pipe = 1; open_pipe;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, 1000);
        const double elapsed = mx_now() - t0;
        if (r > 0) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            if (n > 0) keep_tail(res, buf, (size_t)n), scan_lines(o, res, &lb, buf, (size_t)n);
            else if (n == 0 || errno != EINTR) open_pipe = 0;
        }
        if (tick) tick(user, elapsed);
        const int timeout = o->timeout_s > 0 && elapsed > o->timeout_s;
        if (!ending && (timeout || end_requested)) {
            res->timed_out = timeout && !end_requested;
            find_kids(pid, &k);
            if (o->grace_s > 0) {
                kill(-pid, SIGTERM);
                ending = 1, kill_at = elapsed + o->grace_s;
            } else {
                kill(-pid, SIGKILL);
                ending = 2, kill_at = elapsed;
            }
        }
        if (ending == 1 && elapsed >= kill_at) {
            kill(-pid, SIGKILL);
            kill_kids(&k);
            ending = 2;
        }
        /* a grandchild still holding the pipe must not keep the sweep waiting */
        if (ending == 2 && elapsed > kill_at + 5) break;
    }
    if (lb.len) check_line(o, res, &lb);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    current_child = 0;
    if (ending) kill_kids(&k); /* none may outlive a run the sweep ended */
    res->seconds = mx_now() - t0;
    res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    res->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return MX_OK;
}

int mx_find_program(const char *name, char *out, size_t n)
{
    struct stat st;
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        const size_t len = strcspn(p, ":");
        snprintf(out, n, "%.*s/%s", (int)len, len ? p : ".", name);
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
        p += len + (p[len] == ':');
    }
    return -1;
}

static volatile sig_atomic_t trapped;

static void on_trapped_signal(int sig)
{
    trapped = sig;
    mx_child_kill_current();
}

void mx_child_trap_signals(void)
{
    signal(SIGINT, on_trapped_signal);
    signal(SIGTERM, on_trapped_signal);
}

int mx_child_interrupted(void) { return trapped; }

int mx_make_temp_dir(const char *name, char *dir, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n, "%s/mxbench-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (mkdtemp(dir)) return 0;
    fprintf(stderr, "mxbench %s: cannot make a temporary directory %s: %s (TMPDIR says where)\n", name, dir,
            strerror(errno));
    return -1;
}
