/* kvstore `device`: reduce-scatter then all-gather among the devices over the comm, with no
 * host round trip. Worker w is comm member w and works for device w only: it reduce-scatters
 * its device's gradient into a merge buffer on that device (pushed values are never
 * modified, as MXNet's push copies), updates its own shard of the device's weights (its
 * momentum lives there), and all-gathers the weights, so that a pull has nothing left to
 * copy. Without an updater it all-gathers the summed gradient instead, and pull copies it
 * into the device's gradient buffer.
 * With bucket_mb > 0 keys are exchanged in buckets, each one range: a worker waits until
 * every device pushed the whole bucket, then runs one reduce-scatter and one all-gather for
 * it. That needs DDP's contract (every device pushes every key of a bucket each round), which
 * the data strategy keeps (`--bucket-mb`); 0, the default, keeps MXNet's, where a key may be
 * pushed alone. Two lenet devices had spent part of each step on the rendezvous of its 8
 * keys and train a little faster in one bucket, while resnet18 measured the same with buckets
 * as with none. Not the default, because calls of one size leave a projection (mxbench
 * project) unable to tell a call's latency from its bandwidth: mlp's 4-device projection from
 * 1 and 2 erred far more in one bucket than key by key (docs/performance.md, "Choices in the
 * code"). The sums are those of each key alone, element by element in member order.
 * With a compressor (kvstore/compress.c), the reduce-scatter becomes what MXNet's device store
 * does with compression: each device packs its own gradient (its residual kept on it), the
 * packed payloads are all-gathered, and each device decompresses every payload and sums its
 * own shard; the update and the all-gather of weights are as without (pulls are not
 * compressed, as in MXNet). */
#include "mode.h"
#include "base/limits.h"
#include "base/status.h"

#include <stdlib.h>

typedef struct {
    float **mom;   /* [ndev] the optimizer's state, used on each device's own shards (mx_kv_state_at) */
    float **merge; /* [ndev] summed gradient: the own shard, or all of it without an updater */
    /* compression only: [ndev] n payload slots of the largest key, and one decompressed key */
    float **slots, **unpacked;
    size_t slot_floats, largest;
    /* keys exchanged together (mx_kv_plan_buckets); with compression, each key alone */
    mx_kv_bucket *b;
    int *bucket_of; /* [nkeys] */
    int *bdone;     /* [ndev][nb] the last round each worker exchanged the bucket in */
    int nb;
} kv_device;

static int device_create(mx_kvstore *kv)
{
    if (kv->comm->n != kv->ndev || kv->comm->nlocal != kv->ndev)
        return mx_error(
            MX_EINVAL, "kvstore device: one comm member per device is needed (comm of %d members, %d here; %d devices)",
            kv->comm->n, kv->comm->nlocal, kv->ndev);
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL,
                            "kvstore device: key %d is %s; accepted: f32 (the updater runs on f32 master values)", k,
                            mx_dtype_name(kv->keys[k].dtype));
    kv_device *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    kv->mode = m;
    m->mom = calloc(kv->ndev, sizeof *m->mom);
    m->merge = calloc(kv->ndev, sizeof *m->merge);
    m->slots = calloc(kv->ndev, sizeof *m->slots);
    m->unpacked = calloc(kv->ndev, sizeof *m->unpacked);
    if (!m->mom || !m->merge || !m->slots || !m->unpacked)
        return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    const double mb = kv->opt.bucket_mb;
    if (!(mb >= 0 && mb <= MX_MAX_BUCKET_MB))
        return mx_error(MX_EINVAL, "kvstore device: bucket size %g MiB; accepted: 0 (each key alone) up to %d", mb,
                        MX_MAX_BUCKET_MB);
    m->b = calloc(kv->nkeys, sizeof *m->b);
    m->bucket_of = calloc(kv->nkeys, sizeof *m->bucket_of);
    m->bdone = calloc((size_t)kv->ndev * kv->nkeys, sizeof *m->bdone);
    if (!m->b || !m->bucket_of || !m->bdone) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    /* A compressor packs each key with its own residual, as MXNet's device store */
    m->nb = mx_kv_plan_buckets(kv, mx_kv_compression_asked(kv) ? 0 : mb * 1048576.0, m->b, m->bucket_of);
    return MX_OK;
}

/* Round `round` of key may run: every key of its bucket pushed that often by every device */
static int device_ready(const mx_kvstore *kv, int key, int round)
{
    const kv_device *m = kv->mode;
    const mx_kv_bucket *b = &m->b[m->bucket_of[key]];
    for (int k = b->lo; k < b->hi; k++)
        if (!mx_kv_all_pushed(kv, k, round)) return 0;
    return 1;
}

static int device_nworkers(const mx_kvstore *kv) { return kv->ndev; }
static int device_follows(const mx_kvstore *kv, int worker) { return worker; }

/* Buffers live on each device, so they wait until the devices bound their backends. */
static int device_init(mx_kvstore *kv)
{
    kv_device *m = kv->mode;
    for (int d = 0; d < kv->ndev; d++) {
        mx_backend *be = kv->dev[d].be;
        if (!m->mom[d]) m->mom[d] = be->ops->alloc(be, sizeof(float) * mx_kv_state_floats(kv));
        if (!m->merge[d]) m->merge[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        if (!m->mom[d] || !m->merge[d])
            return mx_error(MX_ENOMEM, "out of memory on device %d for kvstore device (%zu floats)", d,
                            kv->total + mx_kv_state_floats(kv));
    }
    if (!kv->gc) return MX_OK; /* replicas start equal: nothing to store */
    for (int k = 0; k < kv->nkeys; k++) {
        if (mx_kv_gc_slot_floats(kv, k) > m->slot_floats) m->slot_floats = mx_kv_gc_slot_floats(kv, k);
        if (kv->keys[k].count > m->largest) m->largest = kv->keys[k].count;
    }
    for (int d = 0; d < kv->ndev; d++) {
        mx_backend *be = kv->dev[d].be;
        if (!m->slots[d]) m->slots[d] = be->ops->alloc(be, sizeof(float) * m->slot_floats * kv->ndev);
        if (!m->unpacked[d]) m->unpacked[d] = be->ops->alloc(be, sizeof(float) * m->largest);
        if (!m->slots[d] || !m->unpacked[d])
            return mx_error(MX_ENOMEM, "out of memory on device %d for compressed pushes (%zu + %zu floats)", d,
                            m->slot_floats * kv->ndev, m->largest);
    }
    return MX_OK;
}

/* The compressed reduce-scatter: this member's shard [lo, hi) of every device's gradient,
 * decompressed and summed in member order (the same sum on every run). */
static int compressed_reduce(mx_kvstore *kv, int worker, int key, size_t lo, size_t hi, float *merge)
{
    kv_device *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_comm *c = kv->comm;
    const int member = c->local_first + worker;
    const size_t slot = mx_kv_gc_slot_floats(kv, key);
    float *slots = m->slots[worker], *un = m->unpacked[worker];
    mx_kv_gc_compress(kv, worker, key, (const float *)kv->dev[worker].g + k->offset, slots + slot * member);
    MX_TRY(mx_kv_allgather(kv, worker, c, member, slots, slot * c->n, MX_F32));
    for (int j = 0; j < c->n; j++) {
        mx_kv_gc_decompress(kv, key, slots + slot * j, un);
        for (size_t i = lo; i < hi; i++) merge[i] = j ? merge[i] + un[i] : un[i];
    }
    return MX_OK;
}

/* The round of key's bucket, when key is the first of it this worker takes (in push order);
 * the bucket's other keys then have nothing left to do. */
static int device_process(mx_kvstore *kv, int worker, int key)
{
    kv_device *m = kv->mode;
    const mx_kv_bucket *bk = &m->b[m->bucket_of[key]];
    const int round = kv->seen[worker * kv->nkeys + key];
    int *done = &m->bdone[worker * m->nb + m->bucket_of[key]];
    if (*done >= round) return MX_OK;
    *done = round;
    const size_t off = bk->off, count = bk->count;
    mx_comm *c = kv->comm;
    const int member = c->local_first + worker;
    const mx_kv_device *dv = &kv->dev[worker];
    float *merge = m->merge[worker] + off;
    size_t lo, hi;
    mx_comm_shard(count, member, c->n, &lo, &hi);
    if (kv->gc) MX_TRY(compressed_reduce(kv, worker, key, lo, hi, merge));
    else MX_TRY(mx_kv_reduce_scatter(kv, worker, c, member, (const float *)dv->g + off, merge, count, MX_F32));
    float *gathered = merge;
    if (kv->updater) {
        gathered = (float *)dv->w + off;
        for (int j = bk->hi - 1; j >= bk->lo; j--) { /* each key's part of the shard, in push order */
            const size_t at = kv->keys[j].offset - off, end = at + kv->keys[j].count;
            const size_t klo = lo > at ? lo : at, khi = hi < end ? hi : end;
            if (khi > klo)
                kv->updater(kv->updater_user, dv->be, j, klo - at, khi - at, gathered + at,
                            mx_kv_state_at(kv, m->mom[worker], off + at), merge + at);
        }
    }
    MX_TRY(mx_kv_allgather(kv, worker, c, member, gathered, count, MX_F32));
    /* What crossed between devices: the other members' shards of ours (compressed: our
     * payload to each of them), then theirs. */
    const double own = (double)(hi - lo), sz = sizeof(float);
    const double pushed = kv->gc ? (double)mx_kv_gc_packed_bytes(kv, key) * (c->n - 1) : sz * own * (c->n - 1);
    mx_kv_count_bytes(kv, pushed + sz * ((double)count - own));
    return MX_OK;
}

static int device_pull(mx_kvstore *kv, int key, int dev)
{
    if (kv->updater) return MX_OK; /* the all-gather already wrote the weights */
    kv_device *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_backend *be = kv->dev[dev].be;
    be->ops->copy(be, (float *)kv->dev[dev].g + k->offset, m->merge[dev] + k->offset, sizeof(float) * k->count,
                  MX_COPY_D2D);
    return MX_OK;
}

static void device_destroy(mx_kvstore *kv)
{
    kv_device *m = kv->mode;
    for (int d = 0; d < kv->ndev && m->mom && m->merge && m->slots && m->unpacked; d++) {
        mx_backend *be = kv->dev[d].be;
        if (m->mom[d]) be->ops->free(be, m->mom[d]);
        if (m->merge[d]) be->ops->free(be, m->merge[d]);
        if (m->slots[d]) be->ops->free(be, m->slots[d]);
        if (m->unpacked[d]) be->ops->free(be, m->unpacked[d]);
    }
    free(m->mom);
    free(m->merge);
    free(m->slots);
    free(m->unpacked);
    free(m->b);
    free(m->bucket_of);
    free(m->bdone);
    free(m);
}

const mx_kvstore_ops mx_kv_device_ops = {
    .kind = MX_KV_DEVICE,
    .create = device_create,
    .nworkers = device_nworkers,
    .follows = device_follows,
    .ready = device_ready,
    .init = device_init,
    .process = device_process,
    .pull = device_pull,
    .destroy = device_destroy,
};
