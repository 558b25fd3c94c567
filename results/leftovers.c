/* Files a writer killed mid-way leaves beside a results file (results.h,
 * mx_results_remove_leftovers): its working copy <file>.tmp-<pid>, a sweep's per-run record
 * <file>.run-<pid>.h5. They are incomplete by construction and nobody else will finish
 * them, so once their process is gone they are removed. */
#include "results.h"

#include "base/paths.h"
#include "base/status.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The pid of "<base>.<tag>-<pid><rest>" when name has that form, else 0. */
static long leftover_pid(const char *name, const char *base, const char *tag)
{
    size_t nb = strlen(base), nt = strlen(tag);
    if (strncmp(name, base, nb) != 0 || name[nb] != '.' || strncmp(name + nb + 1, tag, nt) != 0 ||
        name[nb + 1 + nt] != '-')
        return 0;
    const char *digits = name + nb + nt + 2;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (end == digits || errno || pid <= 0 || (*end && *end != '.')) return 0;
    return pid;
}

/* A process that no longer exists: kill(pid, 0) says ESRCH. EPERM means it exists (another
 * user's), and its file is left alone. */
static int gone(long pid) { return pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH; }

int mx_results_remove_leftovers(const char *path, const char *const *tags, int ntags, const char *who)
{
    /* a copy of its own size: a folder name cut to fit a buffer would list another folder */
    char *dir = mx_path_fmt("%s", path);
    if (!dir) return mx_error(MX_ENOMEM, "%s: out of memory", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    DIR *d = opendir(slash ? dir : ".");
    if (!d && errno == ENOENT) {
        free(dir);
        return 0; /* nothing written there yet */
    }
    if (!d) {
        int rc = mx_error(MX_EIO, "%s: cannot list %s: %s", path, slash ? dir : ".", strerror(errno));
        fprintf(stderr, "%s: warning: not looking for leftovers of killed runs: %s\n", who, mx_last_error());
        free(dir);
        return rc;
    }
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = 0;
        for (int t = 0; t < ntags && !pid; t++) pid = leftover_pid(e->d_name, base, tags[t]);
        if (!pid || !gone(pid)) continue;
        struct stat st;
        char *file = mx_path_fmt("%s%s%s", slash ? dir : "", slash && slash != dir ? "/" : "", e->d_name);
        if (!file) break;
        if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode)) { /* only files we could have written */
            free(file);
            continue;
        }
        if (unlink(file) == 0) {
            removed++;
            fprintf(stderr, "%s: removed %s, left by process %ld, which no longer runs\n", who, file, pid);
        } else {
            fprintf(stderr, "%s: warning: cannot remove %s (left by process %ld): %s\n", who, file, pid,
                    strerror(errno));
        }
        free(file);
    }
    closedir(d);
    free(dir);
    return removed;
}
