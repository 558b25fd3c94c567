/* kvstore machinery shared by every mode: bound device buffers, the push hook, each
 * device's push log, rounds per key, comm worker threads that follow one device's push
 * order and ask the mode's policy when a round may run, and pulls that wait for the rounds
 * they depend on. */
#include "mode.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/core/backends.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const mx_kvstore_ops mx_kv_local_ops, mx_kv_device_ops;
#ifdef MXBENCH_HAVE_MPI
/* across processes, over MPI: the parameter server (kvstore/dist.c) and all-reduce (kvstore/allreduce.c) */
extern const mx_kvstore_ops mx_kv_dist_sync_ops, mx_kv_dist_device_sync_ops, mx_kv_dist_async_ops,
    mx_kv_dist_allreduce_ops;
#endif
/* The modes built, by their line in base/kv_modes.def (NULL: not in this build; none is no store). */
static const mx_kvstore_ops *const modes[MX_KV_NMODES] = {
    [MX_KV_LOCAL] = &mx_kv_local_ops, [MX_KV_DEVICE] = &mx_kv_device_ops,
#ifdef MXBENCH_HAVE_MPI
    [MX_KV_DIST_SYNC] = &mx_kv_dist_sync_ops, [MX_KV_DIST_DEVICE_SYNC] = &mx_kv_dist_device_sync_ops,
    [MX_KV_DIST_ASYNC] = &mx_kv_dist_async_ops, [MX_KV_DIST_ALLREDUCE] = &mx_kv_dist_allreduce_ops,
#endif
};

int mx_kv_mode_built(mx_kv_mode mode) { return mode >= 0 && mode < MX_KV_NMODES && modes[mode]; }

/* Built once, before any thread can ask: the list of the registry's modes in table order. */
static char built_list[128];
static pthread_once_t built_once = PTHREAD_ONCE_INIT;
static void list_built(void)
{
    size_t at = 0;
    for (int m = 0; m < MX_KV_NMODES; m++)
        if (modes[m])
            at += (size_t)snprintf(built_list + at, sizeof built_list - at, "%s%s", at ? "|" : "",
                                   mx_kv_mode_name((mx_kv_mode)m));
}

const char *mx_kv_modes(void)
{
    pthread_once(&built_once, list_built);
    return built_list;
}

int mx_kv_all_pushed(const mx_kvstore *kv, int key, int round)
{
    for (int d = 0; d < kv->ndev; d++)
        if (kv->pushed[d * kv->nkeys + key] < round) return 0;
    return 1;
}

int mx_kv_plan_buckets(const mx_kvstore *kv, double cap, mx_kv_bucket *b, int *bucket_of)
{
    int nb = 0;
    for (int k = kv->nkeys - 1; k >= 0; k--) {
        const mx_kv_key *key = &kv->keys[k];
        mx_kv_bucket *cur = nb ? &b[nb - 1] : NULL;
        const size_t end = cur ? cur->off + cur->count : 0;
        if (!cur || key->offset + key->count > cur->off || sizeof(float) * (double)(end - key->offset) > cap) {
            cur = &b[nb++];
            *cur = (mx_kv_bucket){k, k + 1, key->offset, key->count};
        } else {
            cur->lo = k;
            cur->count = end - key->offset;
            cur->off = key->offset;
        }
        bucket_of[k] = nb - 1;
    }
    return nb;
}

void mx_kv_count_bytes(mx_kvstore *kv, double bytes)
{
    pthread_mutex_lock(&kv->lock);
    kv->stats.bytes += bytes;
    pthread_mutex_unlock(&kv->lock);
}

size_t mx_kv_state_floats(const mx_kvstore *kv) { return (size_t)mx_optim_nstate(kv->opt.opt) * kv->total; }

mx_optim_state mx_kv_state_at(const mx_kvstore *kv, float *buf, size_t off)
{
    return mx_optim_state_at(mx_optim_state_of(kv->opt.opt, buf, kv->total), off);
}

int mx_kv_host_create(mx_kvstore *kv, mx_kv_host *h)
{
    MX_TRY(mx_backend_create(&h->host, "cpu", -1, 1));
    const size_t bytes = sizeof(float) * kv->total;
    h->w = h->host->ops->alloc(h->host, bytes);
    h->mom = h->host->ops->alloc(h->host, sizeof(float) * mx_kv_state_floats(kv));
    h->merge = h->host->ops->alloc(h->host, bytes);
    h->tmp = h->host->ops->alloc(h->host, bytes);
    if (!h->w || !h->mom || !h->merge || !h->tmp)
        return mx_error(MX_ENOMEM, "out of memory for kvstore %s host buffers (4 x %zu floats)", mx_kv_name(kv),
                        kv->total);
    return MX_OK;
}

void mx_kv_host_destroy(mx_kv_host *h)
{
    if (!h->host) return;
    float *const copied[3] = {h->w, h->merge, h->tmp};
    for (int i = 0; i < 3; i++)
        if (h->pinned[i]) h->pinned_by->ops->host_release(h->pinned_by, copied[i]);
    float *const bufs[4] = {h->w, h->mom, h->merge, h->tmp};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) h->host->ops->free(h->host, bufs[i]);
    mx_backend_destroy(h->host);
    h->host = NULL;
}

void mx_kv_host_init(mx_kvstore *kv, mx_kv_host *h)
{
    mx_backend *be = kv->dev[0].be;
    float *const copied[3] = {h->w, h->merge, h->tmp};
    h->pinned_by = be;
    for (int i = 0; i < 3; i++) h->pinned[i] = be->ops->host_pin(be, copied[i], sizeof(float) * kv->total);
    be->ops->copy(be, h->w, kv->dev[0].w, sizeof(float) * kv->total, MX_COPY_D2H);
}

void mx_kv_sum_on_host(mx_kvstore *kv, mx_backend *host, int key, float *merge, float *tmp)
{
    const mx_kv_key *k = &kv->keys[key];
    const size_t bytes = sizeof(float) * k->count;
    for (int d = 0; d < kv->ndev; d++) {
        mx_backend *be = kv->dev[d].be;
        be->ops->copy(be, (d ? tmp : merge) + k->offset, (const float *)kv->dev[d].g + k->offset, bytes, MX_COPY_D2H);
        if (d) host->ops->add(host, k->count, merge + k->offset, tmp + k->offset);
    }
    mx_kv_count_bytes(kv, (double)bytes * kv->ndev);
}

mx_kv_stats mx_kv_stats_get(mx_kvstore *kv)
{
    pthread_mutex_lock(&kv->lock);
    mx_kv_stats st = kv->stats;
    pthread_mutex_unlock(&kv->lock);
    return st;
}

void mx_kv_stats_reset(mx_kvstore *kv)
{
    pthread_mutex_lock(&kv->lock);
    memset(&kv->stats, 0, sizeof kv->stats);
    kv->nspans = 0;
    kv->ngc = 0;
    mx_kv_calls_reset(kv); /* every worker is idle between steps: no call is being logged */
    pthread_mutex_unlock(&kv->lock);
}

/* Caller holds the lock. Spans beyond the capacity (more work per reset than one step
 * makes) are dropped rather than allocated on the hot path. */
static void note_span(mx_kvstore *kv, double start, double end)
{
    if (kv->nspans < kv->capspans) kv->spans[kv->nspans++] = (mx_kv_span){start, end};
}

void mx_kv_work_before(mx_kvstore *kv, double cut, double *work, double *hidden)
{
    pthread_mutex_lock(&kv->lock);
    *work = *hidden = 0;
    for (int i = 0; i < kv->nspans; i++) {
        const mx_kv_span *sp = &kv->spans[i];
        *work += sp->end - sp->start;
        *hidden += (sp->end < cut ? sp->end : cut) - (sp->start < cut ? sp->start : cut);
    }
    pthread_mutex_unlock(&kv->lock);
}

/* ---- comm workers */

typedef struct {
    mx_kvstore *kv;
    int w;
} worker_arg;

/* Caller holds the lock. The next key worker w may process, or -1. A round a worker has
 * taken is ready for every worker (readiness only grows), so a stopping store still lets
 * each worker finish the collectives the others entered. */
static int next_key(mx_kvstore *kv, int w, int src)
{
    if (kv->logged[src] <= kv->taken[w]) return -1;
    const int key = kv->log[src * kv->nkeys + kv->taken[w] % kv->nkeys];
    return kv->ops->ready(kv, key, kv->seen[w * kv->nkeys + key] + 1) ? key : -1;
}

static void *worker_main(void *p)
{
    worker_arg *a = p;
    mx_kvstore *kv = a->kv;
    const int w = a->w;
    free(a);
    const int src = kv->ops->follows(kv, w);
    mx_trace_set_track(MX_TRACK_KV_WORKER(w)); /* the comm calls of its reductions on its track */
    pthread_mutex_lock(&kv->lock);
    for (;;) {
        const int key = next_key(kv, w, src);
        if (key < 0) {
            if (kv->stopping) break;
            pthread_cond_wait(&kv->work, &kv->lock);
            continue;
        }
        kv->taken[w]++;
        const int round = ++kv->seen[w * kv->nkeys + key];
        pthread_mutex_unlock(&kv->lock);
        const double t0 = mx_now();
        const int rc = kv->ops->process(kv, w, key);
        const double t1 = mx_now();
        mx_trace_event(MX_TRACK_KV_WORKER(w), "kvstore", "reduce key", key, t0, t1);
        pthread_mutex_lock(&kv->lock);
        note_span(kv, t0, t1);
        if (rc < 0 && !kv->first_error) {
            kv->first_error = rc;
            snprintf(kv->errmsg, sizeof kv->errmsg, "%s", mx_last_error());
        }
        /* A failed round still completes, so that no pull or push waits forever; the
         * error reaches every later pull. */
        kv->finished[w * kv->nkeys + key] = round;
        int all = round;
        for (int v = 0; v < kv->nworkers; v++)
            if (kv->finished[v * kv->nkeys + key] < all) all = kv->finished[v * kv->nkeys + key];
        if (all > kv->completed[key]) {
            kv->completed[key] = all;
            pthread_cond_broadcast(&kv->done);
        }
    }
    pthread_mutex_unlock(&kv->lock);
    return NULL;
}

/* ---- life cycle */

static int create_fail(mx_kvstore *kv, int rc)
{
    mx_kv_destroy(kv);
    return rc;
}

int mx_kv_create(mx_kvstore **out, mx_kv_mode mode, mx_comm *comm, const mx_kv_key *keys, int nkeys,
                 const mx_kv_options *opt)
{
    *out = NULL;
    if (!mx_kv_mode_built(mode))
        return mx_error(MX_EINVAL, "kvstore '%s' is not available (available: %s)", mx_kv_mode_name(mode),
                        mx_kv_modes());
    const mx_kvstore_ops *ops = modes[mode];
    if (!comm) return mx_error(MX_EINVAL, "kvstore %s needs a communicator (got none)", mx_kv_mode_name(mode));
    const int ndev = opt && opt->devices > 0 ? opt->devices : comm->nlocal;
    if (ndev < 1 || ndev > MX_COMM_MAX || nkeys < 1)
        return mx_error(MX_EINVAL, "kvstore needs 1..%d devices and keys (got %d devices, %d keys)", MX_COMM_MAX, ndev,
                        nkeys);
    for (int k = 0; k < nkeys; k++)
        if ((unsigned)keys[k].dtype >= MX_NDTYPES)
            return mx_error(MX_EINVAL, "kvstore key %d: dtype %d unknown (accepted: f32, f16, bf16)", k,
                            (int)keys[k].dtype);
    mx_kvstore *kv = calloc(1, sizeof *kv);
    if (!kv) return mx_error(MX_ENOMEM, "out of memory creating kvstore");
    pthread_mutex_init(&kv->lock, NULL);
    pthread_cond_init(&kv->work, NULL);
    pthread_cond_init(&kv->done, NULL);
    kv->ops = ops;
    kv->comm = comm;
    if (opt) kv->opt = *opt;
    kv->opt.devices = ndev;
    kv->ndev = ndev;
    kv->nkeys = nkeys;
    kv->keys = malloc(sizeof *keys * nkeys);
    kv->dev = calloc(ndev, sizeof *kv->dev);
    if (!kv->keys || !kv->dev) return create_fail(kv, mx_error(MX_ENOMEM, "out of memory creating kvstore"));
    memcpy(kv->keys, keys, sizeof *keys * nkeys);
    for (int k = 0; k < nkeys; k++)
        if (keys[k].offset + keys[k].count > kv->total) kv->total = keys[k].offset + keys[k].count;
    int rc = ops->create(kv);
    if (rc < 0) return create_fail(kv, rc);
    kv->nworkers = ops->nworkers(kv);
    if ((rc = mx_kv_gc_create(kv)) < 0) return create_fail(kv, rc);
    if ((rc = mx_kv_calls_create(kv)) < 0) return create_fail(kv, rc);
    const size_t dk = (size_t)ndev * nkeys, wk = (size_t)kv->nworkers * nkeys;
    kv->pushed = calloc(dk, sizeof(int));
    kv->log = calloc(dk, sizeof(int));
    kv->logged = calloc(ndev, sizeof(long));
    kv->taken = calloc(kv->nworkers, sizeof(long));
    kv->seen = calloc(wk, sizeof(int));
    kv->finished = calloc(wk, sizeof(int));
    kv->completed = calloc(nkeys, sizeof(int));
    kv->threads = calloc(kv->nworkers, sizeof(pthread_t));
    kv->capspans = 2 * nkeys * (kv->nworkers + ndev);
    kv->spans = calloc(kv->capspans, sizeof(mx_kv_span));
    if (!kv->pushed || !kv->log || !kv->logged || !kv->taken || !kv->seen || !kv->finished || !kv->completed ||
        !kv->threads || !kv->spans)
        return create_fail(kv, mx_error(MX_ENOMEM, "out of memory creating kvstore"));
    for (int w = 0; w < kv->nworkers; w++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) return create_fail(kv, mx_error(MX_ENOMEM, "out of memory starting kvstore worker %d", w));
        *a = (worker_arg){kv, w};
        if (pthread_create(&kv->threads[w], NULL, worker_main, a) != 0) {
            free(a);
            return create_fail(kv, mx_error(MX_ERUNTIME, "cannot start kvstore worker %d of %d", w, kv->nworkers));
        }
        kv->started = w + 1;
    }
    *out = kv;
    return MX_OK;
}

void mx_kv_destroy(mx_kvstore *kv)
{
    if (!kv) return;
    pthread_mutex_lock(&kv->lock);
    kv->stopping = 1;
    pthread_cond_broadcast(&kv->work);
    pthread_mutex_unlock(&kv->lock);
    for (int w = 0; w < kv->started; w++) pthread_join(kv->threads[w], NULL);
    if (kv->mode) kv->ops->destroy(kv);
    mx_kv_calls_destroy(kv);
    mx_kv_gc_destroy(kv);
    free(kv->keys);
    free(kv->dev);
    free(kv->pushed);
    free(kv->log);
    free(kv->logged);
    free(kv->taken);
    free(kv->seen);
    free(kv->finished);
    free(kv->completed);
    free(kv->threads);
    free(kv->spans);
    pthread_mutex_destroy(&kv->lock);
    pthread_cond_destroy(&kv->work);
    pthread_cond_destroy(&kv->done);
    free(kv);
}

int mx_kv_bind(mx_kvstore *kv, int dev, mx_backend *be, void *weight, void *grad)
{
    if (dev < 0 || dev >= kv->ndev)
        return mx_error(MX_EINVAL, "kvstore bind: device %d out of range 0..%d", dev, kv->ndev - 1);
    if (!be || !weight || !grad)
        return mx_error(MX_EINVAL,
                        "kvstore bind: device %d needs a backend, a weight and a gradient buffer (got %s%s%s)", dev,
                        be ? "" : "no backend ", weight ? "" : "no weights ", grad ? "" : "no gradients");
    pthread_mutex_lock(&kv->lock);
    kv->dev[dev] = (mx_kv_device){be, weight, grad};
    pthread_mutex_unlock(&kv->lock);
    return MX_OK;
}

int mx_kv_init(mx_kvstore *kv)
{
    for (int d = 0; d < kv->ndev; d++)
        if (!kv->dev[d].be)
            return mx_error(MX_EINVAL, "kvstore init: device %d has not bound its buffers (mx_kv_bind each of 0..%d)",
                            d, kv->ndev - 1);
    return kv->ops->init(kv);
}

void mx_kv_set_updater(mx_kvstore *kv, mx_kv_updater fn, void *user)
{
    kv->updater = fn;
    kv->updater_user = user;
}

void mx_kv_set_push_hook(mx_kvstore *kv, mx_kv_push_hook fn, void *user)
{
    kv->hook = fn;
    kv->hook_user = user;
}

/* ---- push and pull */

static int check_key(const mx_kvstore *kv, const char *verb, int key, int dev, size_t count)
{
    if (key < 0 || key >= kv->nkeys)
        return mx_error(MX_EINVAL, "kvstore %s: key %d out of range 0..%d", verb, key, kv->nkeys - 1);
    if (dev < 0 || dev >= kv->ndev)
        return mx_error(MX_EINVAL, "kvstore %s: device %d out of range 0..%d", verb, dev, kv->ndev - 1);
    if (count != kv->keys[key].count)
        return mx_error(MX_EINVAL, "kvstore %s: key %d holds %zu values, got %zu (shapes must match the init)", verb,
                        key, kv->keys[key].count, count);
    if (!kv->dev[dev].be)
        return mx_error(MX_EINVAL, "kvstore %s: device %d has not bound its buffers (mx_kv_bind)", verb, dev);
    return MX_OK;
}

int mx_kv_push(mx_kvstore *kv, int key, int dev, size_t count)
{
    MX_TRY(check_key(kv, "push", key, dev, count));
    const double t0 = mx_trace_on() ? mx_now() : 0; /* the timeline: waiting, compressing, queueing */
    const mx_kv_key *k = &kv->keys[key];
    double wire = (double)k->count * (double)mx_dtype_size(k->dtype);
    int *mine = &kv->pushed[dev * kv->nkeys + key];
    int rc = MX_OK;
    pthread_mutex_lock(&kv->lock);
    while (*mine > kv->completed[key]) pthread_cond_wait(&kv->done, &kv->lock);
    if (kv->hook) {
        /* After the wait: the previous round no longer reads the buffer the hook rewrites. */
        pthread_mutex_unlock(&kv->lock);
        void *data = (char *)kv->dev[dev].g + k->offset * mx_dtype_size(k->dtype);
        rc = kv->hook(kv->hook_user, dev, key, data, k->count, k->dtype, &wire);
        pthread_mutex_lock(&kv->lock);
        /* A failed hook still enters the round, so that the other devices' pulls do not
         * wait forever for this push; every later pull reports the failure. */
        if (rc < 0 && !kv->first_error) {
            kv->first_error = rc;
            snprintf(kv->errmsg, sizeof kv->errmsg, "push hook of device %d, key %d: %s", dev, key, mx_last_error());
        }
    }
    (*mine)++;
    kv->log[dev * kv->nkeys + kv->logged[dev] % kv->nkeys] = key;
    kv->logged[dev]++;
    if (!kv->gc) { /* a compressing mode counts what it packs (mx_kv_gc_compress) */
        kv->stats.wire_bytes += wire;
        kv->stats.raw_bytes += (double)k->count * (double)mx_dtype_size(k->dtype);
    }
    kv->stats.pushes++;
    pthread_cond_broadcast(&kv->work);
    pthread_mutex_unlock(&kv->lock);
    if (t0 > 0) mx_trace_event(MX_TRACK_DEVICE(kv->dev[dev].be->device), "kvstore", "push key", key, t0, mx_now());
    return rc;
}

int mx_kv_pull(mx_kvstore *kv, int key, int dev, size_t count)
{
    MX_TRY(check_key(kv, "pull", key, dev, count));
    pthread_mutex_lock(&kv->lock);
    while (kv->completed[key] < kv->pushed[dev * kv->nkeys + key]) pthread_cond_wait(&kv->done, &kv->lock);
    const int err = kv->first_error;
    pthread_mutex_unlock(&kv->lock);
    if (err) return mx_error(err, "kvstore %s: %s", mx_kv_name(kv), kv->errmsg);
    const double t0 = mx_now();
    const int rc = kv->ops->pull(kv, key, dev);
    const double t1 = mx_now();
    mx_trace_event(MX_TRACK_DEVICE(kv->dev[dev].be->device), "kvstore", "pull key", key, t0, t1);
    pthread_mutex_lock(&kv->lock);
    note_span(kv, t0, t1);
    pthread_mutex_unlock(&kv->lock);
    return rc;
}
