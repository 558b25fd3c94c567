/* The compressor registry and the push hook that runs one (kvstore/compressor.h). */
#include "compressor.h"
#include "base/limits.h"
#include "base/status.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kinds built, by their line of MX_GC_LIST (NULL: not in this build). */
extern const mx_compressor_ops mx_gc_none, mx_gc_fp16, mx_gc_2bit, mx_gc_topk;
static const mx_compressor_ops *const kinds[MX_NGC] = {
    [MX_GC_NONE] = &mx_gc_none, [MX_GC_FP16] = &mx_gc_fp16, [MX_GC_2BIT] = &mx_gc_2bit, [MX_GC_TOPK] = &mx_gc_topk};

int mx_compressor_built(mx_gc_kind kind) { return kind >= 0 && kind < MX_NGC && kinds[kind]; }

static char built_list[64];
static pthread_once_t built_once = PTHREAD_ONCE_INIT;
static void list_built(void)
{
    size_t at = 0;
    for (int k = 0; k < MX_NGC; k++)
        if (kinds[k])
            at += (size_t)snprintf(built_list + at, sizeof built_list - at, "%s%s", at ? "|" : "",
                                   mx_gc_name((mx_gc_kind)k));
}

const char *mx_compressor_names(void)
{
    pthread_once(&built_once, list_built);
    return built_list;
}

void mx_compressor_destroy(mx_compressor *c)
{
    if (!c) return;
    for (int d = 0; d < c->ndev; d++) {
        if (c->residual) free(c->residual[d]);
        if (c->buf) free(c->buf[d]);
    }
    free(c->residual);
    free(c->buf);
    free(c->keys);
    free(c);
}

int mx_compressor_create(mx_compressor **out, mx_gc_kind kind, int ndev, const mx_kv_key *keys, int nkeys,
                         const mx_compressor_opts *opts)
{
    *out = NULL;
    const char *name = mx_gc_name(kind);
    const double threshold = opts && opts->threshold != 0 ? opts->threshold : MX_GC_THRESHOLD_DEFAULT;
    const double ratio = opts && opts->topk_ratio != 0 ? opts->topk_ratio : MX_GC_TOPK_RATIO_DEFAULT;
    if (!(threshold > 0 && threshold <= MX_MAX_GC_THRESHOLD))
        return mx_error(MX_EINVAL, "2bit threshold %g: accepted above 0 and at most %g", threshold,
                        MX_MAX_GC_THRESHOLD);
    if (!(ratio > 0 && ratio <= 1)) return mx_error(MX_EINVAL, "topk ratio %g: accepted above 0 and at most 1", ratio);
    const mx_compressor_ops *ops = kind >= 0 && kind < MX_NGC ? kinds[kind] : NULL;
    if (!ops)
        return mx_error(MX_EINVAL, "compression '%s' is not in this build (available: %s)", name,
                        mx_compressor_names());
    if (ndev < 1 || nkeys < 1)
        return mx_error(MX_EINVAL, "compressor needs devices and keys (got %d, %d)", ndev, nkeys);
    size_t total = 0, largest = 0;
    for (int k = 0; k < nkeys; k++) {
        if (keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL, "compression '%s': key %d is %s; accepted: f32 gradients", name, k,
                            mx_dtype_name(keys[k].dtype));
        if (keys[k].offset + keys[k].count > total) total = keys[k].offset + keys[k].count;
        if (keys[k].count > largest) largest = keys[k].count;
    }
    mx_compressor *c = calloc(1, sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory creating compressor '%s'", name);
    c->ops = ops;
    c->threshold = threshold;
    c->topk_ratio = ratio;
    c->prescale = 1;
    c->ndev = ndev;
    c->nkeys = nkeys;
    c->keys = malloc(sizeof *keys * nkeys);
    c->residual = calloc(ndev, sizeof *c->residual);
    c->buf = calloc(ndev, sizeof *c->buf);
    int ok = c->keys && c->residual && c->buf;
    if (ok) memcpy(c->keys, keys, sizeof *keys * nkeys);
    const size_t packed = ops->packed_bytes(c, largest);
    for (int d = 0; ok && d < ndev; d++) {
        c->buf[d] = malloc(packed ? packed : 1);
        if (ops->error_feedback) c->residual[d] = calloc(total ? total : 1, sizeof(float));
        ok = c->buf[d] && (!ops->error_feedback || c->residual[d]);
    }
    if (!ok) {
        mx_compressor_destroy(c);
        return mx_error(MX_ENOMEM, "out of memory for compressor '%s' (%d devices, %zu values)", name, ndev, total);
    }
    *out = c;
    return MX_OK;
}

double mx_compressor_residual_norm(const mx_compressor *c)
{
    if (!c || !c->ops->error_feedback) return 0;
    size_t total = 0; /* the residual's extent, as create laid it out; gaps stay 0 */
    for (int k = 0; k < c->nkeys; k++)
        if (c->keys[k].offset + c->keys[k].count > total) total = c->keys[k].offset + c->keys[k].count;
    double ss = 0; /* in double: millions of small squares would lose digits in f32 */
    for (int d = 0; d < c->ndev; d++)
        for (size_t i = 0; i < total; i++) ss += (double)c->residual[d][i] * c->residual[d][i];
    return sqrt(ss);
}

int mx_compressor_push(void *user, int dev, int key, void *data, size_t count, mx_dtype dtype, double *wire_bytes)
{
    mx_compressor *c = user;
    if (dev < 0 || dev >= c->ndev || key < 0 || key >= c->nkeys || count != c->keys[key].count || dtype != MX_F32)
        return mx_error(MX_EINVAL, "compressor '%s': push of key %d (%zu %s) from device %d does not match its table",
                        mx_gc_name(c->ops->kind), key, count, mx_dtype_name(dtype), dev);
    float *residual = c->ops->error_feedback ? c->residual[dev] + c->keys[key].offset : NULL;
    c->ops->compress(c, data, residual, count, c->buf[dev]);
    c->ops->decompress(c, c->buf[dev], count, data);
    *wire_bytes = (double)c->ops->packed_bytes(c, count);
    return MX_OK;
}
