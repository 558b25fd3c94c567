/* kvstore `dist_allreduce`: Horovod's (and MXNet's horovod kvstore's, PyTorch DDP's) data
 * parallelism across processes, with no servers. Inside a process it is `local`: each
 * device's gradient is copied to the host and summed there in device order. Across ranks,
 * keys are grouped into buckets of about bucket_mb, filled in backward order (the order
 * devices push); once every key of a bucket is summed locally, one all-reduce over the world
 * comm sums the bucket across ranks while the devices go on with backward (the overlap DDP
 * buys). With an updater each rank then updates its host copy of the weights (host
 * momentum) from the same summed bits, so replicas stay bit-equal without a broadcast.
 *
 * With compression (kvstore/compress.c) a bucket is one unit with its own residual: fp16 is an
 * all-reduce of half-precision values (each rank's sum accumulated in f32, rounded to half
 * once); 2bit and topk cannot be summed packed, so each rank's payload is all-gathered and
 * every rank decompresses and sums them in rank order (the same bits everywhere).
 *
 * Contract, as DDP's: every rank pushes every key once per round in the same order, and a
 * device pulls only after it pushed every key of the pulled key's bucket for that round. */
#include "mode.h"
#include "cluster/cluster.h"
#include "base/limits.h"
#include "base/status.h"
#include "base/timer.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mx_kv_host h;        /* host-side sums, weights and momentum */
    mx_kv_bucket *b;
    int nb;
    int *bucket_of;      /* [nkeys] */
    int *key_round;      /* [nkeys] rounds processed per key (worker only) */
    int *filled;         /* [nb] keys processed in the bucket's current round (worker only) */
    mx_kv_key *units;    /* compression: one unit per bucket */
    float *slots;        /* compression: n payload slots of the largest bucket */
    float *unpacked;     /* compression: one bucket decompressed */
    /* ---- guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int *done;           /* [nb] rounds all-reduced (and updated) */
    int failed;
    char errmsg[256];    /* the worker's message: mx_last_error is per thread */
} kv_allreduce;

static int allreduce_create(mx_kvstore *kv)
{
    const mx_comm *world = kv->opt.world;
    const double mb = kv->opt.bucket_mb;
    if (!world || strcmp(world->ops->name, "mpi") != 0)
        return mx_error(MX_EINVAL,
                        "kvstore dist_allreduce needs the world comm of every worker rank (an mpi comm); got %s",
                        world ? world->ops->name : "none");
    /* MPI counts are ints: a bucket beyond 2^31-1 bytes could not be all-reduced at once */
    if (!(mb >= 0 && mb <= MX_MAX_BUCKET_MB))
        return mx_error(MX_EINVAL, "kvstore dist_allreduce: bucket size %g MiB; accepted: 0 (25, as DDP) up to %d", mb,
                        MX_MAX_BUCKET_MB);
    const mx_cluster *cl = kv->opt.cluster;
    if (cl && (cl->nservers != 0 || cl->nworkers != world->n))
        return mx_error(MX_EINVAL,
                        "kvstore dist_allreduce: the job has %d workers and %d servers, the world comm %d members; "
                        "accepted: no servers, one member per worker",
                        cl->nworkers, cl->nservers, world->n);
    for (int k = 0; k < kv->nkeys; k++) {
        const mx_kv_key *key = &kv->keys[k];
        if (key->dtype != MX_F32)
            return mx_error(MX_EINVAL, "kvstore dist_allreduce: key %d is %s; accepted: f32 (host sums and updates f32 "
                            "master values)", k, mx_dtype_name(key->dtype));
        /* A bucket must be one contiguous range holding only its own keys. */
        if (k && key->offset < kv->keys[k - 1].offset + kv->keys[k - 1].count)
            return mx_error(MX_EINVAL, "kvstore dist_allreduce: key %d at offset %zu overlaps or precedes key %d "
                            "(%zu..%zu); accepted: keys in offset order", k, key->offset, k - 1,
                            kv->keys[k - 1].offset, kv->keys[k - 1].offset + kv->keys[k - 1].count);
    }
    kv_allreduce *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore dist_allreduce");
    kv->mode = m;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->b = calloc(kv->nkeys, sizeof *m->b);
    m->bucket_of = calloc(kv->nkeys, sizeof(int));
    m->key_round = calloc(kv->nkeys, sizeof(int));
    m->filled = calloc(kv->nkeys, sizeof(int));
    m->done = calloc(kv->nkeys, sizeof(int));
    if (!m->b || !m->bucket_of || !m->key_round || !m->filled || !m->done)
        return mx_error(MX_ENOMEM, "out of memory creating kvstore dist_allreduce");
    m->nb = mx_kv_plan_buckets(kv, (mb > 0 ? mb : MX_KV_BUCKET_MB) * 1048576.0, m->b, m->bucket_of);
    for (int b = 0; b < m->nb; b++)
        if (m->b[b].count * sizeof(float) > (size_t)INT32_MAX)
            return mx_error(MX_EINVAL,
                            "kvstore dist_allreduce: keys %d..%d need %zu floats at once, beyond MPI's 2^31-1 "
                            "bytes per call",
                            m->b[b].lo, m->b[b].hi - 1, m->b[b].count);
    if (mx_kv_compression_asked(kv)) {
        if (!(m->units = malloc(sizeof *m->units * m->nb)))
            return mx_error(MX_ENOMEM, "out of memory creating kvstore dist_allreduce");
        for (int b = 0; b < m->nb; b++) m->units[b] = (mx_kv_key){m->b[b].off, m->b[b].count, MX_F32};
        kv->gc_keys = m->units, kv->gc_nkeys = m->nb;
    }
    /* zero-filled: the padding between keys of a bucket is all-reduced too and stays 0 */
    return mx_kv_host_create(kv, &m->h);
}

static int allreduce_nworkers(const mx_kvstore *kv) { return 1; }
static int allreduce_follows(const mx_kvstore *kv, int worker) { return 0; }

/* Replicas start equal on every rank (same seed), so device 0's weights are everyone's. */
static int allreduce_init(mx_kvstore *kv)
{
    kv_allreduce *m = kv->mode;
    mx_kv_host_init(kv, &m->h);
    if (!kv->gc) return MX_OK;
    size_t slot = 0, largest = 0;
    for (int b = 0; b < m->nb; b++) {
        if (mx_kv_gc_slot_floats(kv, b) > slot) slot = mx_kv_gc_slot_floats(kv, b);
        if (m->b[b].count > largest) largest = m->b[b].count;
    }
    m->slots = calloc(slot * kv->opt.world->n + 1, sizeof(float));
    m->unpacked = calloc(largest + 1, sizeof(float));
    if (!m->slots || !m->unpacked) return mx_error(MX_ENOMEM, "out of memory for compressed all-reduces");
    return MX_OK;
}

/* The compressed sum across ranks of bucket b's range (in place): fp16 all-reduced as half
 * values, the others' payloads all-gathered and summed in rank order. Returns the bytes
 * this rank sent and received. */
static int compressed_allreduce(mx_kvstore *kv, kv_allreduce *m, int b, float *range, double *net)
{
    mx_comm *world = kv->opt.world;
    const int n = world->n, me = world->local_first;
    const size_t count = m->b[b].count, packed = mx_kv_gc_packed_bytes(kv, b);
    if (mx_kv_compression(kv) == MX_GC_FP16) {
        mx_kv_gc_compress(kv, 0, b, range, m->slots);
        MX_TRY(mx_kv_allreduce(kv, 0, world, me, m->slots, m->slots, count, MX_F16));
        mx_kv_gc_decompress(kv, b, m->slots, range);
        *net = 4.0 * (n - 1) / n * (double)packed; /* a ring: 2(n-1)/n sent, as much received */
        return MX_OK;
    }
    const size_t slot = mx_kv_gc_slot_floats(kv, b);
    mx_kv_gc_compress(kv, 0, b, range, m->slots + slot * me);
    MX_TRY(mx_kv_allgather(kv, 0, world, me, m->slots, slot * n, MX_F32));
    for (int r = 0; r < n; r++) {
        mx_kv_gc_decompress(kv, b, m->slots + slot * r, m->unpacked);
        for (size_t i = 0; i < count; i++) range[i] = r ? range[i] + m->unpacked[i] : m->unpacked[i];
    }
    *net = 2.0 * (n - 1) * (double)packed; /* ours to each rank, each rank's to us */
    return MX_OK;
}

/* Records the failure for pulls waiting on any bucket and wakes them: the bucket they wait
 * for may never be all-reduced now. */
static int fail(kv_allreduce *m, int rc)
{
    pthread_mutex_lock(&m->lock);
    if (!m->failed) {
        m->failed = rc;
        snprintf(m->errmsg, sizeof m->errmsg, "%s", mx_last_error());
    }
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* Sums the bucket across ranks in place, then updates its keys (in push order). */
static int reduce_bucket(mx_kvstore *kv, kv_allreduce *m, int b)
{
    const mx_kv_bucket *bk = &m->b[b];
    mx_comm *world = kv->opt.world;
    float *range = m->h.merge + bk->off;
    const double t0 = mx_now();
    /* sent and received, as the parameter-server modes count: a ring all-reduce sends
     * 2(n-1)/n of S per rank (reduce-scatter, then all-gather; nccl-tests' busbw traffic)
     * and receives as much */
    double net = 4.0 * (world->n - 1) / world->n * sizeof(float) * (double)bk->count;
    const int rc = kv->gc ? compressed_allreduce(kv, m, b, range, &net)
                          : mx_kv_allreduce(kv, 0, world, world->local_first, range, range, bk->count, MX_F32);
    const double t1 = mx_now();
    pthread_mutex_lock(&kv->lock);
    if (rc == MX_OK) kv->stats.net_bytes += net;
    kv->stats.push_seconds += t1 - t0;
    pthread_mutex_unlock(&kv->lock);
    if (rc < 0) return rc;
    if (kv->updater)
        for (int k = bk->hi - 1; k >= bk->lo; k--) {
            const mx_kv_key *key = &kv->keys[k];
            kv->updater(kv->updater_user, m->h.host, k, 0, key->count, m->h.w + key->offset,
                        mx_kv_state_at(kv, m->h.mom, key->offset), m->h.merge + key->offset);
        }
    return MX_OK;
}

static int allreduce_process(mx_kvstore *kv, int worker, int key)
{
    kv_allreduce *m = kv->mode;
    const int b = m->bucket_of[key], round = ++m->key_round[key];
    pthread_mutex_lock(&m->lock);
    const int failed = m->failed, done = m->done[b];
    pthread_mutex_unlock(&m->lock);
    /* After a failed all-reduce (which failed on every rank) no rank calls another. */
    if (failed) return mx_error(failed, "%s", m->errmsg);
    /* A second round of a key before its bucket was all-reduced would overwrite the sum the
     * other ranks still expect (DDP refuses it too). */
    if (round != done + 1)
        return fail(m, mx_error(MX_EINVAL, "key %d pushed for round %d while its bucket (keys %d..%d) is still "
                                "in round %d: push every key once per round", key, round,
                                m->b[b].lo, m->b[b].hi - 1, done + 1));
    mx_kv_sum_on_host(kv, m->h.host, key, m->h.merge, m->h.tmp);
    if (++m->filled[b] < m->b[b].hi - m->b[b].lo) return MX_OK;
    m->filled[b] = 0;
    const int rc = reduce_bucket(kv, m, b);
    if (rc < 0) return fail(m, rc);
    pthread_mutex_lock(&m->lock);
    m->done[b] = round;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->lock);
    return MX_OK;
}

static int allreduce_pull(mx_kvstore *kv, int key, int dev)
{
    kv_allreduce *m = kv->mode;
    const mx_kv_bucket *bk = &m->b[m->bucket_of[key]];
    /* The bucket completes only once dev pushed all its keys: waiting without them would
     * never end, so say so instead. */
    pthread_mutex_lock(&kv->lock);
    const int *pushed = &kv->pushed[dev * kv->nkeys];
    const int round = pushed[key];
    int missing = -1;
    for (int k = bk->hi - 1; k >= bk->lo && missing < 0; k--)
        if (pushed[k] < round) missing = k;
    pthread_mutex_unlock(&kv->lock);
    if (missing >= 0)
        return mx_error(MX_EINVAL,
                        "kvstore dist_allreduce: pull of key %d from device %d before it pushed key %d of the "
                        "same bucket (keys %d..%d) for round %d: push every key of a round, then pull",
                        key, dev, missing, bk->lo, bk->hi - 1, round);
    pthread_mutex_lock(&m->lock);
    while (!m->failed && m->done[m->bucket_of[key]] < round) pthread_cond_wait(&m->cv, &m->lock);
    const int failed = m->failed;
    pthread_mutex_unlock(&m->lock);
    if (failed) return mx_error(failed, "kvstore dist_allreduce: %s", m->errmsg);
    const mx_kv_key *k = &kv->keys[key];
    mx_backend *be = kv->dev[dev].be;
    /* Without an updater the store holds the summed gradient, and it lands where the
     * device's gradient was. */
    float *dst = (float *)(kv->updater ? kv->dev[dev].w : kv->dev[dev].g) + k->offset;
    const float *src = (kv->updater ? m->h.w : m->h.merge) + k->offset;
    be->ops->copy(be, dst, src, sizeof(float) * k->count, MX_COPY_H2D);
    mx_kv_count_bytes(kv, sizeof(float) * (double)k->count);
    return MX_OK;
}

static void allreduce_destroy(mx_kvstore *kv)
{
    kv_allreduce *m = kv->mode;
    mx_kv_host_destroy(&m->h);
    free(m->b);
    free(m->bucket_of);
    free(m->key_round);
    free(m->filled);
    free(m->done);
    free(m->units);
    free(m->slots);
    free(m->unpacked);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cv);
    free(m);
}

const mx_kvstore_ops mx_kv_dist_allreduce_ops = {
    .kind = MX_KV_DIST_ALLREDUCE,
    .create = allreduce_create,
    .nworkers = allreduce_nworkers,
    .follows = allreduce_follows,
    .ready = mx_kv_all_pushed,
    .init = allreduce_init,
    .process = allreduce_process,
    .pull = allreduce_pull,
    .destroy = allreduce_destroy,
};
