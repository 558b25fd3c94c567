/* Writes that fail part-way (a full disk) must leave the results file as it was: each case
 * runs mx_results_append or mx_results_create in a child whose file-size limit
 * (RLIMIT_FSIZE) stops its writes at a chosen byte, from before the working copy starts to
 * just short of the complete new file. The child must return MX_EIO naming the file and the
 * system's error, exit normally (HDF5 1.10 used to crash at exit after a failed close), and
 * leave the file byte for byte as it was, with no working copy beside it. A tiny tmpfs gives
 * the real "No space left on device" in tests/test_full_disk.sh. */
#include "base/status.h"
#include "results/results.h"
#include "tests/check.h"
#include "tests/results_fixture.h"

#include <hdf5.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64], path[128];

typedef struct {
    int rc;
    char msg[1024];
} outcome;

/* Runs the write in a child limited to limit bytes per file. Returns 0 when the child
 * exited normally (its outcome in *o), else the signal that killed it (or -1). */
static int write_limited(long limit, int create, outcome *o, pid_t *child)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN); /* the write then fails with EFBIG instead of killing us */
        struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
        setrlimit(RLIMIT_FSIZE, &rl);
        outcome out = {0};
        if (create) {
            mx_results_meta meta;
            memset(&meta, 0, sizeof meta);
            out.rc = mx_results_create(path, &meta, 1);
        } else {
            mx_run_record r;
            fixture_record(&r, 2, 2, 4000); /* ~200 kB of series: a long way to fail along */
            out.rc = mx_results_append(path, &r);
            mx_record_free(&r);
        }
        snprintf(out.msg, sizeof out.msg, "%s", out.rc == MX_OK ? "" : mx_last_error());
        ssize_t w = write(fds[1], &out, sizeof out);
        close(fds[1]);
        exit(w == (ssize_t)sizeof out ? 0 : 3); /* exit(), not _exit(): HDF5's shutdown must run */
    }
    close(fds[1]);
    *child = pid;
    memset(o, 0, sizeof *o);
    ssize_t got = pid > 0 ? read(fds[0], o, sizeof *o) : -1;
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) return WTERMSIG(status);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof *o ? 0 : -1;
}

static int ncases;

static void check_limit(long limit, int create, const char *before, size_t nbefore, int runs_before)
{
    outcome o;
    pid_t pid = 0;
    ncases++;
    const char *what = create ? "create over the file" : "append";
    int sig = write_limited(limit, create, &o, &pid);
    CHECK(sig == 0, "%s limited to %ld bytes: the child %s %d", what, limit,
          sig > 0 ? "was killed by signal" : "failed:", sig);
    if (sig != 0) return;
    char tmp[200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)pid);
    CHECK(access(tmp, F_OK) != 0, "%s limited to %ld bytes: working copy %s left behind", what, limit, tmp);
    size_t n = 0;
    char *after = slurp(path, &n);
    if (o.rc == MX_OK) { /* the limit was above what the write needed: nothing to check but success */
        free(after);
        return;
    }
    CHECK(o.rc == MX_EIO, "%s limited to %ld bytes: rc %d (%s), want MX_EIO", what, limit, o.rc, o.msg);
    CHECK(strstr(o.msg, path) && strstr(o.msg, strerror(EFBIG)), "%s limited to %ld bytes: message lacks the file "
          "or '%s': %s", what, limit, strerror(EFBIG), o.msg);
    CHECK(after && n == nbefore && memcmp(after, before, n) == 0, "%s limited to %ld bytes: the file changed (%zu "
          "bytes, was %zu)", what, limit, n, nbefore);
    mx_results r;
    int rc = mx_results_load(path, &r);
    CHECK(rc == MX_OK && r.nruns == runs_before, "%s limited to %ld bytes: the file %s", what, limit,
          rc == MX_OK ? "lost runs" : mx_last_error());
    if (rc == MX_OK) mx_results_free(&r);
    free(after);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/mx-test-disk-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(path, sizeof path, "%s/study.h5", dir);
    CHECK(fixture_file(path, 2, 20) == MX_OK, "writing %s: %s", path, mx_last_error());
    size_t size = 0;
    char *before = slurp(path, &size);
    CHECK(before != NULL, "cannot read %s", path);
    if (!before) return check_summary("test_results_disk");

    /* the size the append reaches when nothing stops it, measured on a copy */
    char grown_path[160];
    snprintf(grown_path, sizeof grown_path, "%s/grown.h5", dir);
    copy_file(path, grown_path);
    mx_run_record r;
    fixture_record(&r, 2, 2, 4000);
    CHECK(mx_results_append(grown_path, &r) == MX_OK, "append without a limit: %s", mx_last_error());
    mx_record_free(&r);
    size_t grown = 0;
    free(slurp(grown_path, &grown));
    unlink(grown_path);
    CHECK(grown > size + 100000, "the append grew the file to %zu bytes only (from %zu)", grown, size);

    /* limits from nothing to one byte short of the new file: every stage of the write */
    const long s = (long)size, g = (long)grown;
    const long limits[] = {0, 1, 512, s / 2, s - 1, s, s + 1, s + 4096, (s + g) / 4, (s + g) / 2, g - 4096, g - 1};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        if (limits[i] >= 0 && limits[i] < g) check_limit(limits[i], 0, before, size, 2);
    /* create --force over the file: the old file stays until the new one is complete */
    const long create_limits[] = {0, 100, 1000};
    for (size_t i = 0; i < sizeof create_limits / sizeof create_limits[0]; i++)
        check_limit(create_limits[i], 1, before, size, 2);
    printf("test_results_disk: %d writes stopped part-way\n", ncases);

    free(before);
    unlink(path);
    rmdir(dir);
    return check_summary("test_results_disk");
}
