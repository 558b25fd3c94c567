/* File-system paths (paths.h): one `mkdir -p` for the CLI, the results store and the plots. */
#include "paths.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
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
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return mx_error(MX_EINVAL, "path too long: '%s'", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return MX_OK;
    if (slash == dir) return MX_OK; /* "/file": the root exists */
    *slash = '\0';
    return mx_mkdir_p(dir);
}
