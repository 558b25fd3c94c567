/* File-system paths (base/paths.h): one `mkdir -p` for the CLI, the results store and the plots. */
#include "paths.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mx_mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return mx_error(MX_EINVAL, "path too long: '%s'", dir);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        const char was = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return mx_error(MX_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
        *p = was;
        if (!was) break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return mx_error(MX_EIO, "'%s' is not a directory", dir);
    return MX_OK;
}

int mx_mkdir_parent(const char *path)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return mx_error(MX_EINVAL, "path too long: '%s'", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return MX_OK;
    if (slash == dir) return MX_OK; /* "/file": the root exists */
    *slash = '\0';
    return mx_mkdir_p(dir);
}

char *mx_path_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

const char *mx_file_kind(unsigned mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISREG(mode)) return "a regular file";
    return "not a regular file";
}

int mx_path_check_output(const char *path, const char *what)
{
    if (!path || !path[0])
        return mx_error(MX_EINVAL, "%s: the path is empty; accepted: the path of a regular file to write", what);
    struct stat st;
    /* stat, not lstat: a link to a regular file is written through (the link is replaced by
     * the file, as before); a link to a device is refused like the device */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return mx_error(MX_EINVAL, "%s %s: is %s, not a regular file; accepted: a regular file or a new path (--force "
                        "replaces only regular files)", what, path, mx_file_kind(st.st_mode));
    return MX_OK;
}
