/* kvstore scheduling shared by every mode: rounds of pushes per key, a ready queue served
 * by priority, comm worker threads, and pulls that wait for the rounds they depend on. */
#include "kvstore.h"
#include "engine/status.h"
#include "engine/timer.h"

#include <stdlib.h>
#include <string.h>

extern const mx_kvstore_ops mx_kv_local_ops, mx_kv_device_ops;
static const mx_kvstore_ops *const modes[] = {&mx_kv_local_ops, &mx_kv_device_ops};

const char *mx_kv_modes(void) { return "local|device"; }

void mx_kv_shard(size_t count, int w, int n, size_t *lo, size_t *hi)
{
    /* Boundaries rounded to 16 floats so shards start on cache lines. */
    size_t per = (count + n - 1) / n;
    per = (per + 15) / 16 * 16;
    *lo = per * w < count ? per * w : count;
    *hi = per * (w + 1) < count ? per * (w + 1) : count;
}

void mx_kv_count_bytes(mx_kvstore *kv, double bytes)
{
    pthread_mutex_lock(&kv->lock);
    kv->stats.bytes += bytes;
    pthread_mutex_unlock(&kv->lock);
}

void mx_kv_stats_reset(mx_kvstore *kv)
{
    pthread_mutex_lock(&kv->lock);
    kv->stats.bytes = 0;
    kv->stats.nspans = 0;
    pthread_mutex_unlock(&kv->lock);
}

/* Caller holds the lock. Spans beyond the capacity (more work per reset than one step
 * makes) are dropped rather than allocated on the hot path. */
static void note_span(mx_kvstore *kv, double start, double end)
{
    if (kv->stats.nspans < kv->stats.capspans) kv->stats.spans[kv->stats.nspans++] = (mx_kv_span){start, end};
}

void mx_kv_work_before(mx_kvstore *kv, double cut, double *work, double *hidden)
{
    pthread_mutex_lock(&kv->lock);
    *work = *hidden = 0;
    for (int i = 0; i < kv->stats.nspans; i++) {
        const mx_kv_span *sp = &kv->stats.spans[i];
        *work += sp->end - sp->start;
        *hidden += (sp->end < cut ? sp->end : cut) - (sp->start < cut ? sp->start : cut);
    }
    pthread_mutex_unlock(&kv->lock);
}

/* ---- scheduling (caller holds the lock) */

static void queue_if_ready(mx_kvstore *kv, int key)
{
    if (kv->queued[key] != kv->completed[key]) return; /* a round is in flight */
    for (int d = 0; d < kv->ndev; d++)
        if (kv->pushed[d * kv->nkeys + key] <= kv->queued[key]) return;
    kv->queued[key]++;
    kv->shards_left[key] = kv->nworkers;
    pthread_cond_broadcast(&kv->work);
}

static int pick_key(mx_kvstore *kv, int w)
{
    int best = -1;
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->queued[k] > kv->taken[w * kv->nkeys + k] && (best < 0 || kv->priority[k] > kv->priority[best]))
            best = k;
    return best;
}

typedef struct {
    mx_kvstore *kv;
    int w;
} worker_arg;

static void *worker_main(void *p)
{
    worker_arg *a = p;
    mx_kvstore *kv = a->kv;
    const int w = a->w;
    free(a);
    pthread_mutex_lock(&kv->lock);
    for (;;) {
        int key;
        while (!kv->stopping && (key = pick_key(kv, w)) < 0) pthread_cond_wait(&kv->work, &kv->lock);
        if (kv->stopping) break;
        kv->taken[w * kv->nkeys + key]++;
        pthread_mutex_unlock(&kv->lock);
        const double t0 = mx_now();
        kv->ops->process(kv, w, key);
        const double t1 = mx_now();
        pthread_mutex_lock(&kv->lock);
        note_span(kv, t0, t1);
        if (--kv->shards_left[key] == 0) {
            kv->completed[key]++;
            pthread_cond_broadcast(&kv->done);
            queue_if_ready(kv, key);
        }
    }
    pthread_mutex_unlock(&kv->lock);
    return NULL;
}

/* ---- public verbs */

int mx_kv_create(mx_kvstore **out, const char *mode, int ndev, mx_backend **be, float **weight, float **grad,
                 const mx_kv_key *keys, int nkeys)
{
    *out = NULL;
    const mx_kvstore_ops *ops = NULL;
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (strcmp(modes[i]->name, mode) == 0) ops = modes[i];
    if (!ops) return mx_error(MX_EINVAL, "kvstore '%s' is not available (available: %s)", mode, mx_kv_modes());
    if (ndev < 1 || nkeys < 1) return mx_error(MX_EINVAL, "kvstore needs devices and keys (got %d, %d)", ndev, nkeys);
    mx_kvstore *kv = calloc(1, sizeof *kv);
    if (!kv) return mx_error(MX_ENOMEM, "out of memory creating kvstore");
    kv->ops = ops;
    kv->ndev = ndev;
    kv->nkeys = nkeys;
    kv->nworkers = ops->nworkers(ndev);
    kv->keys = malloc(sizeof *keys * nkeys);
    kv->be = malloc(sizeof *be * ndev);
    kv->weight = malloc(sizeof *weight * ndev);
    kv->grad = malloc(sizeof *grad * ndev);
    kv->pushed = calloc((size_t)ndev * nkeys, sizeof(int));
    kv->completed = calloc(nkeys, sizeof(int));
    kv->queued = calloc(nkeys, sizeof(int));
    kv->shards_left = calloc(nkeys, sizeof(int));
    kv->taken = calloc((size_t)kv->nworkers * nkeys, sizeof(int));
    kv->priority = calloc(nkeys, sizeof(int));
    kv->threads = calloc(kv->nworkers, sizeof(pthread_t));
    kv->stats.capspans = 2 * nkeys * (kv->nworkers + ndev);
    kv->stats.spans = calloc(kv->stats.capspans, sizeof(mx_kv_span));
    if (!kv->stats.spans || !kv->keys || !kv->be || !kv->weight || !kv->grad || !kv->pushed || !kv->completed || !kv->queued ||
        !kv->shards_left || !kv->taken || !kv->priority || !kv->threads) {
        mx_kv_destroy(kv);
        return mx_error(MX_ENOMEM, "out of memory creating kvstore");
    }
    memcpy(kv->keys, keys, sizeof *keys * nkeys);
    memcpy(kv->be, be, sizeof *be * ndev);
    memcpy(kv->weight, weight, sizeof *weight * ndev);
    memcpy(kv->grad, grad, sizeof *grad * ndev);
    for (int k = 0; k < nkeys; k++)
        if (keys[k].offset + keys[k].count > kv->total) kv->total = keys[k].offset + keys[k].count;
    pthread_mutex_init(&kv->lock, NULL);
    pthread_cond_init(&kv->work, NULL);
    pthread_cond_init(&kv->done, NULL);
    int rc = ops->create(kv);
    if (rc < 0) {
        mx_kv_destroy(kv);
        return rc;
    }
    for (int w = 0; w < kv->nworkers; w++) {
        worker_arg *a = malloc(sizeof *a);
        *a = (worker_arg){kv, w};
        pthread_create(&kv->threads[w], NULL, worker_main, a);
    }
    *out = kv;
    return MX_OK;
}

void mx_kv_destroy(mx_kvstore *kv)
{
    if (!kv) return;
    if (kv->threads && kv->threads[0]) {
        pthread_mutex_lock(&kv->lock);
        kv->stopping = 1;
        pthread_cond_broadcast(&kv->work);
        pthread_mutex_unlock(&kv->lock);
        for (int w = 0; w < kv->nworkers; w++) pthread_join(kv->threads[w], NULL);
    }
    if (kv->mode) kv->ops->destroy(kv);
    free(kv->keys);
    free(kv->be);
    free(kv->weight);
    free(kv->grad);
    free(kv->pushed);
    free(kv->completed);
    free(kv->queued);
    free(kv->shards_left);
    free(kv->taken);
    free(kv->priority);
    free(kv->threads);
    free(kv->stats.spans);
    free(kv);
}

int mx_kv_init(mx_kvstore *kv, const float *value_dev0) { return kv->ops->init(kv, value_dev0); }

void mx_kv_set_updater(mx_kvstore *kv, mx_kv_updater fn, void *user)
{
    kv->updater = fn;
    kv->updater_user = user;
}

static int check_key(const mx_kvstore *kv, const char *verb, int key, int dev, size_t count)
{
    if (key < 0 || key >= kv->nkeys) return mx_error(MX_EINVAL, "kvstore %s: key %d out of range 0..%d", verb, key, kv->nkeys - 1);
    if (dev < 0 || dev >= kv->ndev) return mx_error(MX_EINVAL, "kvstore %s: device %d out of range 0..%d", verb, dev, kv->ndev - 1);
    if (count != kv->keys[key].count)
        return mx_error(MX_EINVAL, "kvstore %s: key %d holds %zu values, got %zu (shapes must match the init)", verb,
                        key, kv->keys[key].count, count);
    return MX_OK;
}

int mx_kv_push(mx_kvstore *kv, int key, int dev, size_t count, int priority)
{
    MX_TRY(check_key(kv, "push", key, dev, count));
    if (!kv->updater) return mx_error(MX_EINVAL, "kvstore push before set_updater");
    pthread_mutex_lock(&kv->lock);
    int *mine = &kv->pushed[dev * kv->nkeys + key];
    while (*mine > kv->completed[key]) pthread_cond_wait(&kv->done, &kv->lock);
    (*mine)++;
    kv->priority[key] = priority;
    queue_if_ready(kv, key);
    pthread_mutex_unlock(&kv->lock);
    return MX_OK;
}

int mx_kv_pull(mx_kvstore *kv, int key, int dev, size_t count)
{
    MX_TRY(check_key(kv, "pull", key, dev, count));
    pthread_mutex_lock(&kv->lock);
    while (kv->completed[key] < kv->pushed[dev * kv->nkeys + key]) pthread_cond_wait(&kv->done, &kv->lock);
    pthread_mutex_unlock(&kv->lock);
    const double t0 = mx_now();
    kv->ops->pull(kv, key, dev, kv->weight[dev] + kv->keys[key].offset);
    const double t1 = mx_now();
    pthread_mutex_lock(&kv->lock);
    note_span(kv, t0, t1);
    pthread_mutex_unlock(&kv->lock);
    return MX_OK;
}
