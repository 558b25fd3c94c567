/* The registry of backend kinds: the CPU's, built in, and those a program adds (mxbench adds
 * CUDA's where it is built, harness/devices_cuda.c; tests add failing or minimal ones). */
#ifndef MX_BACKENDS_H
#define MX_BACKENDS_H

#include "engine/backend/backend.h"

/* Adds a backend kind. The table is copied and prepared (mx_backend_table_prepare); fails if
 * the name is taken, a required op is NULL (named in the message) or the registry is full. */
int mx_backend_register(const mx_backend_ops *ops);
/* The registered table of a kind, defaults filled (device_type for records), or NULL. */
const mx_backend_ops *mx_backend_find(const char *kind);
const char *mx_backend_names(void); /* "cpu|..." for messages and --help */

/* Creates a backend of the named kind ("cpu"; "cuda" where the program registered it) for one
 * device; mx_backend_destroy closes it. */
int mx_backend_create(mx_backend **out, const char *kind, int device, int nthreads);

#endif
