/* The sticky error of a device (engine/backend/backend.h): the first failure of its ops,
 * kept until the training step asks; the gemm_ex type check every backend shares. */
#include "internal.h"
#include "base/status.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

void mx_backend_fail(mx_backend *be, int code, const char *fmt, ...)
{
    struct mx_backend_status *st = be->status;
    char msg[sizeof st->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!st) { /* a hand-made mx_backend: nowhere to keep it, so at least say it */
        fprintf(stderr, "mxbench: backend %s device %d failed: %s\n", be->ops->name, be->device, msg);
        return;
    }
    if (code >= 0) code = MX_ERUNTIME; /* a failure must never read as MX_OK */
    pthread_mutex_lock(&st->lock);
    if (atomic_load_explicit(&st->code, memory_order_relaxed) == MX_OK) {
        memcpy(st->msg, msg, sizeof msg);
        atomic_store_explicit(&st->code, code, memory_order_release);
    }
    pthread_mutex_unlock(&st->lock);
}

int mx_backend_error(const mx_backend *be)
{
    if (!be->status) return MX_OK;
    const int code = atomic_load_explicit(&be->status->code, memory_order_acquire);
    if (code == MX_OK) return MX_OK;
    return mx_error(code, "backend %s, device %d: %s", be->ops->name, be->device, be->status->msg);
}

int mx_backend_check_gemm_types(mx_backend *be, mx_dtype a, mx_dtype b, mx_dtype c, mx_dtype compute)
{
    if ((unsigned)a >= MX_NDTYPES || (unsigned)b >= MX_NDTYPES || (unsigned)c >= MX_NDTYPES) {
        mx_backend_fail(be, MX_EINVAL, "gemm_ex: operand dtypes %d, %d, %d; accepted 0..%d (f32, f16, bf16)", (int)a,
                        (int)b, (int)c, MX_NDTYPES - 1);
        return MX_EINVAL;
    }
    if (compute != MX_F32) {
        mx_backend_fail(be, MX_EUNSUPPORTED, "gemm_ex: compute type %s; accepted: f32", mx_dtype_name(compute));
        return MX_EUNSUPPORTED;
    }
    return MX_OK;
}

int mx_backend_check_half(mx_backend *be, mx_dtype t, const char *op)
{
    if (t == MX_F16 || t == MX_BF16) return MX_OK;
    mx_backend_fail(be, MX_EINVAL, "%s: dtype %d; accepted %d (f16), %d (bf16)", op, (int)t, MX_F16, MX_BF16);
    return MX_EINVAL;
}

void mx_backend_set_range_hook(mx_backend *be, mx_range_hook hook, void *user)
{
    be->range_hook = hook;
    be->range_user = user;
}
