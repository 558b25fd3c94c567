/* The registry of backend kinds (engine/core/backends.h). The CPU's table is built in; a
 * program registers the others it links (mxbench, CUDA's), so that CPU-only programs and
 * tests carry none of CUDA. */
#include "backends.h"
#include "base/status.h"
#include "engine/cpu/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MX_MAX_BACKENDS 8

static struct {
    pthread_mutex_t lock;
    mx_backend_ops ops[MX_MAX_BACKENDS]; /* prepared copies (defaults filled, alloc/free counted); never move */
    mx_backend_ops raw[MX_MAX_BACKENDS]; /* the tables as written */
    int n;
    char names[256];
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static int register_locked(const mx_backend_ops *ops)
{
    if (!ops->name || !ops->name[0]) return mx_error(MX_EINVAL, "a backend table needs a name");
    for (int i = 0; i < reg.n; i++)
        if (strcmp(reg.ops[i].name, ops->name) == 0)
            return mx_error(MX_EINVAL, "backend '%s' is already registered", ops->name);
    if (reg.n == MX_MAX_BACKENDS)
        return mx_error(MX_EUNSUPPORTED, "cannot register backend '%s': the registry holds %d", ops->name,
                        MX_MAX_BACKENDS);
    MX_TRY(mx_backend_table_prepare(&reg.ops[reg.n], ops));
    reg.raw[reg.n++] = *ops;
    size_t at = 0;
    for (int i = 0; i < reg.n; i++)
        at += (size_t)snprintf(reg.names + at, sizeof reg.names - at, "%s%s", i ? "|" : "", reg.ops[i].name);
    return MX_OK;
}

static void register_builtins(void)
{
    pthread_mutex_lock(&reg.lock);
    if (register_locked(&mx_cpu_backend_ops) < 0)
        fprintf(stderr, "mxbench: the cpu backend's table is incomplete: %s\n", mx_last_error());
    pthread_mutex_unlock(&reg.lock);
}

int mx_backend_register(const mx_backend_ops *ops)
{
    pthread_once(&builtins_once, register_builtins);
    pthread_mutex_lock(&reg.lock);
    const int rc = register_locked(ops);
    pthread_mutex_unlock(&reg.lock);
    return rc;
}

static int find_index(const char *kind)
{
    pthread_once(&builtins_once, register_builtins);
    int found = -1;
    pthread_mutex_lock(&reg.lock);
    for (int i = 0; kind && i < reg.n && found < 0; i++)
        if (strcmp(reg.ops[i].name, kind) == 0) found = i;
    pthread_mutex_unlock(&reg.lock);
    return found;
}

const mx_backend_ops *mx_backend_find(const char *kind)
{
    const int i = find_index(kind);
    return i < 0 ? NULL : &reg.ops[i];
}

const char *mx_backend_names(void)
{
    pthread_once(&builtins_once, register_builtins);
    return reg.names;
}

int mx_backend_create(mx_backend **out, const char *kind, int device, int nthreads)
{
    *out = NULL;
    const int i = find_index(kind);
    if (i < 0)
        return mx_error(MX_EUNSUPPORTED, "backend '%s' is not available in this build (available: %s)",
                        kind ? kind : "(null)", mx_backend_names());
    return mx_backend_open(out, &reg.ops[i], &reg.raw[i], device, nthreads);
}
