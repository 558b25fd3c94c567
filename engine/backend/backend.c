/* What every backend shares: the allocator's count, a table made ready (its defaults in
 * engine/backend/defaults.c), opening and closing a device and its workspace (its sticky
 * error in engine/backend/error.c). It knows no backend by name: the registry
 * (engine/core/backends.c) hands it their tables. */
#include "backend.h"
#include "internal.h"
#include "base/status.h"
#include "base/timer.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the allocator's count: every registered table's alloc and free go through these, so
 * memory per device is measured (parameters, optimizer state, activations) whatever the
 * backend, rather than derived from sizes */

static void *counted_alloc(mx_backend *be, size_t bytes)
{
    void *p = be->raw->alloc(be, bytes);
    struct mx_backend_status *st = be->status;
    if (!p || !st) return p;
    pthread_mutex_lock(&st->lock);
    if (st->nblocks == st->cap) {
        const size_t cap = st->cap ? 2 * st->cap : 64;
        struct mem_block *b = realloc(st->blocks, cap * sizeof *b);
        if (!b) { /* uncounted rather than failed: the count is a measurement, not a resource */
            pthread_mutex_unlock(&st->lock);
            return p;
        }
        st->blocks = b;
        st->cap = cap;
    }
    st->blocks[st->nblocks++] = (struct mem_block){p, bytes};
    st->live += bytes;
    if (st->live > st->peak) st->peak = st->live;
    pthread_mutex_unlock(&st->lock);
    return p;
}

static void counted_free(mx_backend *be, void *p)
{
    struct mx_backend_status *st = be->status;
    if (p && st) {
        pthread_mutex_lock(&st->lock);
        for (size_t i = st->nblocks; i-- > 0;)
            if (st->blocks[i].p == p) {
                st->live -= st->blocks[i].bytes;
                st->blocks[i] = st->blocks[--st->nblocks];
                break;
            }
        pthread_mutex_unlock(&st->lock);
    }
    be->raw->free(be, p);
}

mx_backend_mem mx_backend_mem_get(mx_backend *be)
{
    mx_backend_mem m = {0, 0};
    struct mx_backend_status *st = be->status;
    if (!st) return m;
    pthread_mutex_lock(&st->lock);
    m.live = st->live;
    m.peak = st->peak;
    pthread_mutex_unlock(&st->lock);
    return m;
}

void mx_backend_mem_reset_peak(mx_backend *be)
{
    struct mx_backend_status *st = be->status;
    if (!st) return;
    pthread_mutex_lock(&st->lock);
    st->peak = st->live;
    pthread_mutex_unlock(&st->lock);
}

int mx_backend_table_prepare(mx_backend_ops *out, const mx_backend_ops *raw)
{
    if (!raw->name || !raw->name[0]) return mx_error(MX_EINVAL, "a backend table needs a name");
    mx_backend_ops o = *raw;
    MX_TRY(mx_backend_check_and_fill(&o));
    o.alloc = counted_alloc;
    o.free = counted_free;
    *out = o;
    return MX_OK;
}

/* ---- backends */

static atomic_int tf32_default;
void mx_backend_set_tf32_default(int on) { atomic_store(&tf32_default, on ? 1 : 0); }

int mx_backend_open(mx_backend **out, const mx_backend_ops *ops, const mx_backend_ops *raw, int device,
                    int nthreads)
{
    *out = NULL;
    mx_backend *be = calloc(1, sizeof *be);
    struct mx_backend_status *st = calloc(1, sizeof *st);
    if (!be || !st) {
        free(be);
        free(st);
        return mx_error(MX_ENOMEM, "out of memory creating a %s backend", ops->name);
    }
    pthread_mutex_init(&st->lock, NULL);
    atomic_init(&st->code, MX_OK);
    be->status = st;
    be->ops = ops;
    be->raw = raw;
    be->device = device;
    be->nthreads = nthreads < 1 ? 1 : nthreads;
    be->tf32 = atomic_load(&tf32_default);
    const int rc = ops->open(be);
    if (rc < 0) {
        pthread_mutex_destroy(&st->lock);
        free(st->blocks);
        free(st);
        free(be);
        return rc;
    }
    *out = be;
    return MX_OK;
}

void mx_backend_destroy(mx_backend *be)
{
    if (!be) return;
    if (be->scratch) be->ops->free(be, be->scratch);
    be->ops->close(be);
    if (be->status) {
        pthread_mutex_destroy(&be->status->lock);
        free(be->status->blocks);
        free(be->status);
    }
    free(be);
}

void *mx_backend_scratch(mx_backend *be, size_t bytes)
{
    if (bytes <= be->scratch_bytes) return be->scratch;
    if (be->scratch) be->ops->free(be, be->scratch);
    be->scratch = be->ops->alloc(be, bytes);
    be->scratch_bytes = be->scratch ? bytes : 0;
    /* the kernels that asked return without computing: the sticky error says why */
    if (!be->scratch) mx_backend_fail(be, MX_ENOMEM, "out of memory for %zu bytes of kernel workspace", bytes);
    return be->scratch;
}
