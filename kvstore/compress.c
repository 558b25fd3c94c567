/* Gradient compression inside the kvstore (kvstore/mode.h): the compressor of the store's pushes,
 * what its work costs, and what it puts on the wire. A mode that compresses calls
 * mx_kv_gc_compress on the gradient it would send (a device's own, or a process's sum for
 * the servers) and sends the packed payload; the receiver calls mx_kv_gc_decompress. Both
 * are timed as spans, so that a step can tell how much of the work was hidden behind
 * backward and how much added to the tail (the compress phase). */
#include "mode.h"
#include "compressor.h"
#include "base/status.h"
#include "base/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mx_kv_compression_asked(const mx_kvstore *kv) { return kv->opt.compression != MX_GC_NONE; }

int mx_kv_compression_check(mx_kv_mode mode, mx_gc_kind compression)
{
    if (compression == MX_GC_NONE || mode == MX_KV_NONE) return MX_OK;
    /* local, the one store without a wire */
    if (!mx_kv_mode_has(mode, MX_KV_COMPRESSES))
        return mx_error(MX_EINVAL, "compression %s with kvstore %s: %s sums the devices' gradients in host "
                        "memory, with no wire to save bytes on (MXNet refuses it too); accepted with device, "
                        "dist_sync, dist_device_sync, dist_async or dist_allreduce", mx_gc_name(compression),
                        mx_kv_mode_name(mode), mx_kv_mode_name(mode));
    return MX_OK;
}

int mx_kv_gc_create(mx_kvstore *kv)
{
    const mx_gc_kind kind = kv->opt.compression;
    if (kind == MX_GC_NONE) return MX_OK;
    MX_TRY(mx_kv_compression_check(kv->ops->kind, kind));
    if (!kv->gc_keys) kv->gc_keys = kv->keys, kv->gc_nkeys = kv->nkeys; /* the mode compresses whole keys */
    const mx_compressor_opts o = {kv->opt.gc_threshold, kv->opt.gc_topk_ratio};
    MX_TRY(mx_compressor_create(&kv->gc, kind, kv->ndev, kv->gc_keys, kv->gc_nkeys, &o));
    kv->capgc = 4 * kv->gc_nkeys * (kv->ndev + kv->nworkers + 1);
    kv->gc_spans = calloc(kv->capgc, sizeof *kv->gc_spans);
    kv->gc_sumsq = calloc((size_t)kv->ndev * kv->gc_nkeys, sizeof *kv->gc_sumsq);
    if (!kv->gc_spans || !kv->gc_sumsq) return mx_error(MX_ENOMEM, "out of memory for the compression's timings");
    return MX_OK;
}

void mx_kv_gc_destroy(mx_kvstore *kv)
{
    mx_compressor_destroy(kv->gc);
    free(kv->gc_spans);
    free(kv->gc_sumsq);
    kv->gc = NULL;
    kv->gc_spans = NULL;
    kv->gc_sumsq = NULL;
}

size_t mx_kv_gc_packed_bytes(const mx_kvstore *kv, int unit)
{
    return kv->gc->ops->packed_bytes(kv->gc, kv->gc_keys[unit].count);
}

size_t mx_kv_gc_slot_floats(const mx_kvstore *kv, int unit)
{
    const size_t floats = (mx_kv_gc_packed_bytes(kv, unit) + sizeof(float) - 1) / sizeof(float);
    return (floats + 15) / 16 * 16; /* mx_comm_shard's 16-element boundaries */
}

static void note_gc(mx_kvstore *kv, double t0, double t1, double raw, double wire)
{
    pthread_mutex_lock(&kv->lock);
    if (kv->ngc < kv->capgc) kv->gc_spans[kv->ngc++] = (mx_kv_span){t0, t1};
    kv->stats.raw_bytes += raw;
    kv->stats.wire_bytes += wire;
    pthread_mutex_unlock(&kv->lock);
}

static double sumsq(const float *x, size_t n)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    return ss;
}

void mx_kv_gc_compress(mx_kvstore *kv, int party, int unit, const float *g, void *packed)
{
    mx_compressor *c = kv->gc;
    const mx_kv_key *k = &kv->gc_keys[unit];
    float *residual = c->ops->error_feedback ? c->residual[party] + k->offset : NULL;
    const double t0 = mx_now();
    c->ops->compress(c, g, residual, k->count, packed);
    /* kept per push, so that the norm at the end costs nothing to read */
    if (residual) kv->gc_sumsq[(size_t)party * kv->gc_nkeys + unit] = sumsq(residual, k->count);
    note_gc(kv, t0, mx_now(), (double)k->count * sizeof(float), (double)mx_kv_gc_packed_bytes(kv, unit));
}

void mx_kv_gc_decompress(mx_kvstore *kv, int unit, const void *packed, float *out)
{
    const double t0 = mx_now();
    kv->gc->ops->decompress(kv->gc, packed, kv->gc_keys[unit].count, out);
    note_gc(kv, t0, mx_now(), 0, 0);
}

void mx_kv_compression_time(mx_kvstore *kv, double cut, double *work, double *after)
{
    *work = *after = 0;
    if (!kv->gc) return;
    pthread_mutex_lock(&kv->lock);
    for (int i = 0; i < kv->ngc; i++) {
        const mx_kv_span *sp = &kv->gc_spans[i];
        *work += sp->end - sp->start;
        *after += sp->end > cut ? sp->end - (sp->start > cut ? sp->start : cut) : 0;
    }
    pthread_mutex_unlock(&kv->lock);
}

double mx_kv_residual_norm(const mx_kvstore *kv)
{
    if (!kv->gc || !kv->gc->ops->error_feedback) return 0;
    double ss = 0;
    for (size_t i = 0; i < (size_t)kv->ndev * kv->gc_nkeys; i++) ss += kv->gc_sumsq[i];
    return sqrt(ss);
}

void mx_kv_residual_drop_nonfinite(mx_kvstore *kv)
{
    mx_compressor *c = kv->gc;
    if (!c || !c->ops->error_feedback) return;
    for (int p = 0; p < kv->ndev; p++)
        for (int u = 0; u < kv->gc_nkeys; u++) {
            float *r = c->residual[p] + kv->gc_keys[u].offset;
            const size_t n = kv->gc_keys[u].count;
            for (size_t i = 0; i < n; i++)
                if (!isfinite(r[i])) r[i] = 0;
            kv->gc_sumsq[(size_t)p * kv->gc_nkeys + u] = sumsq(r, n);
        }
}

void mx_kv_set_grad_scale(mx_kvstore *kv, float n)
{
    if (kv->gc && n > 0) kv->gc->prescale = n;
}

mx_gc_kind mx_kv_compression(const mx_kvstore *kv) { return kv->gc ? kv->gc->ops->kind : MX_GC_NONE; }
