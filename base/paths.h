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

/* A path built as printf builds text, in memory of its own size (free it): no path is ever
 * cut to fit a buffer, so a name with a suffix ("<out>.run-<pid>.h5") never comes back as
 * another file's name. NULL only when out of memory. */
char *mx_path_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The kind of file st describes, for messages: "a directory", "a FIFO", "a character
 * device", ... */
const char *mx_file_kind(unsigned mode);

/* A file mxbench is about to write (results, --record, --save-params): MX_EINVAL, naming
 * what (e.g. "--record") and path, for an empty path or one that exists and is not a
 * regular file (a device, a FIFO, a directory: replacing it would destroy it, writing into
 * it would hang or lose the data). A missing file, or a regular one, is MX_OK. */
int mx_path_check_output(const char *path, const char *what);

#endif
