/* One writer per results file (results.h, mx_results_lock_take). Every update of a file reads
 * it, adds a run in memory and renames the new version over the old one (image.c): two
 * processes doing that at once each rename their own version, and the runs of the one that
 * renamed first are gone. So a writer holds an advisory lock, flock(2) on a file beside the
 * results, "<file>.lock", for as long as it writes, and a second writer is refused at once.
 *
 * Why a file beside it and not the results file itself: the results file is replaced by
 * rename at every update, and a lock on the replaced inode would protect nothing. Why flock:
 * the kernel drops it when its holder dies (even by SIGKILL), so a killed writer never leaves
 * a file locked; the lock file it leaves behind is empty of meaning and reused. */
#include "results.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* "pid 123: mxbench sweep --out x.h5" from the holder's lock file, or "" when it has not
 * written it yet (it locks first, then writes). */
static void holder_text(int fd, char *buf, size_t n)
{
    buf[0] = 0;
    ssize_t k = pread(fd, buf, n - 1, 0);
    if (k <= 0) {
        buf[0] = 0;
        return;
    }
    buf[k] = 0;
    char *nl = strrchr(buf, '\n');
    if (nl && nl[1] == 0) *nl = 0;
}

/* This process, for the lock file: its pid and its command line (/proc/self/cmdline, NULs
 * turned into spaces, cut at 1000 characters: it only names the holder to a person). */
static void write_holder(int fd)
{
    char cmd[1024] = "";
    size_t len = 0;
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (f) {
        len = fread(cmd, 1, 1000, f);
        fclose(f);
    }
    for (size_t i = 0; i < len; i++)
        if (cmd[i] == 0) cmd[i] = ' ';
    while (len > 0 && cmd[len - 1] == ' ') len--;
    cmd[len] = 0;
    char line[1100];
    const int n = snprintf(line, sizeof line, "pid %ld: %s\n", (long)getpid(), cmd);
    if (ftruncate(fd, 0) == 0 && n > 0) {
        ssize_t w = pwrite(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, 0);
        (void)w; /* best effort: the lock holds without the text */
    }
}

int mx_results_lock_take(mx_results_lock *l, const char *path)
{
    l->fd = -1;
    l->path = mx_path_fmt("%s.lock", path);
    if (!l->path) return mx_error(MX_ENOMEM, "%s: out of memory for its lock file's name", path);
    /* A holder removes its lock file as it ends; a process that opened that file just before
     * holds a lock on an inode no longer named, so it checks, after locking, that the name
     * still leads to its inode, and tries again if not. */
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
        if (fd < 0) {
            int rc = mx_error(MX_EIO, "%s: cannot create its lock file %s: %s", path, l->path, strerror(errno));
            free(l->path);
            l->path = NULL;
            return rc;
        }
        struct stat have, named;
        if (fstat(fd, &have) != 0 || !S_ISREG(have.st_mode)) {
            int rc = mx_error(MX_EINVAL, "%s: its lock file %s is %s, not a regular file; remove it", path, l->path,
                              mx_file_kind(have.st_mode));
            close(fd);
            free(l->path);
            l->path = NULL;
            return rc;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char who[1100];
            holder_text(fd, who, sizeof who);
            close(fd);
            int rc = err == EWOULDBLOCK
                         ? mx_error(MX_EINVAL, "%s is being written by another process (%s); one process at a time "
                                    "writes a results file: wait for it to end, or write another file", path,
                                    who[0] ? who : "it has not said which yet")
                         : mx_error(MX_EIO, "%s: cannot lock %s: %s", path, l->path, strerror(err));
            free(l->path);
            l->path = NULL;
            return rc;
        }
        if (stat(l->path, &named) == 0 && named.st_ino == have.st_ino && named.st_dev == have.st_dev) {
            write_holder(fd);
            l->fd = fd;
            return MX_OK;
        }
        close(fd); /* its holder removed it meanwhile: take the new one */
    }
    int rc = mx_error(MX_EIO, "%s: cannot settle its lock file %s (created and removed by others 100 times)", path,
                      l->path);
    free(l->path);
    l->path = NULL;
    return rc;
}

void mx_results_lock_release(mx_results_lock *l)
{
    if (l->fd >= 0) {
        /* removed while still locked, so that nobody locks the name this process leaves */
        unlink(l->path);
        close(l->fd);
    }
    free(l->path);
    l->fd = -1;
    l->path = NULL;
}
