/* File-system paths: creating the folders a results file or a plot goes in. */
#ifndef MX_PATHS_H
#define MX_PATHS_H

/* Creates dir and its missing parents (as `mkdir -p`). MX_OK when dir is a directory at the
 * end; MX_EIO naming the first component that could not be made (and why), or MX_EINVAL for
 * a path too long. */
int mx_mkdir_p(const char *dir);

/* The folder part of path ("out/a.h5" -> "out"), created with mx_mkdir_p; a path without a
 * folder needs none. */
int mx_mkdir_parent(const char *path);

#endif
