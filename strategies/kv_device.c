/* kvstore `device`: reduce-scatter then all-gather among the devices over the comm, with no
 * host round trip. Worker w is comm member w and works for device w only: it reduce-scatters
 * its device's gradient into a merge buffer on that device (pushed values are never
 * modified, as MXNet's push copies), updates its own shard of the device's weights (its
 * momentum lives there), and all-gathers the weights, so that a pull has nothing left to
 * copy. Without an updater it all-gathers the summed gradient instead, and pull copies it
 * into the device's gradient buffer. */
#include "kv_mode.h"
#include "engine/status.h"

#include <stdlib.h>

typedef struct {
    float **mom;   /* [ndev] momentum, used on each device's own shards */
    float **merge; /* [ndev] summed gradient: the own shard, or all of it without an updater */
} kv_device;

static int device_create(mx_kvstore *kv)
{
    if (kv->comm->n != kv->ndev || kv->comm->nlocal != kv->ndev)
        return mx_error(MX_EINVAL, "kvstore device: one comm member per device is needed (comm of %d members, %d here; %d devices)",
                        kv->comm->n, kv->comm->nlocal, kv->ndev);
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL, "kvstore device: key %d is %s; accepted: f32 (the updater runs on f32 master values)",
                            k, mx_dtype_name(kv->keys[k].dtype));
    kv_device *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    kv->mode = m;
    m->mom = calloc(kv->ndev, sizeof *m->mom);
    m->merge = calloc(kv->ndev, sizeof *m->merge);
    if (!m->mom || !m->merge) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    return MX_OK;
}

static int device_nworkers(const mx_kvstore *kv) { return kv->ndev; }
static int device_follows(const mx_kvstore *kv, int worker) { return worker; }

/* Buffers live on each device, so they wait until the devices bound their backends. */
static int device_init(mx_kvstore *kv)
{
    kv_device *m = kv->mode;
    for (int d = 0; d < kv->ndev; d++) {
        mx_backend *be = kv->dev[d].be;
        if (!m->mom[d]) m->mom[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        if (!m->merge[d]) m->merge[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        if (!m->mom[d] || !m->merge[d])
            return mx_error(MX_ENOMEM, "out of memory on device %d for kvstore device (2 x %zu floats)", d, kv->total);
    }
    return MX_OK; /* replicas start equal: nothing to store */
}

static int device_process(mx_kvstore *kv, int worker, int key)
{
    kv_device *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_comm *c = kv->comm;
    const int member = c->local_first + worker;
    const mx_kv_device *dv = &kv->dev[worker];
    float *merge = m->merge[worker] + k->offset;
    MX_TRY(mx_comm_reduce_scatter(c, member, (const float *)dv->g + k->offset, merge, k->count, MX_F32));
    size_t lo, hi;
    mx_comm_shard(k->count, member, c->n, &lo, &hi);
    float *gathered = merge;
    if (kv->updater) {
        gathered = (float *)dv->w + k->offset;
        if (hi > lo) kv->updater(kv->updater_user, dv->be, key, lo, hi, gathered, m->mom[worker] + k->offset, merge);
    }
    MX_TRY(mx_comm_allgather(c, member, gathered, k->count, MX_F32));
    /* What crossed between devices: the other members' shards of ours, then theirs. */
    const double own = (double)(hi - lo), sz = sizeof(float);
    mx_kv_count_bytes(kv, sz * (own * (c->n - 1) + ((double)k->count - own)));
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
    for (int d = 0; d < kv->ndev && m->mom && m->merge; d++) {
        mx_backend *be = kv->dev[d].be;
        if (m->mom[d]) be->ops->free(be, m->mom[d]);
        if (m->merge[d]) be->ops->free(be, m->merge[d]);
    }
    free(m->mom);
    free(m->merge);
    free(m);
}

const mx_kvstore_ops mx_kv_device_ops = {
    .name = "device",
    .create = device_create,
    .nworkers = device_nworkers,
    .follows = device_follows,
    .ready = mx_kv_all_pushed,
    .init = device_init,
    .process = device_process,
    .pull = device_pull,
    .destroy = device_destroy,
};
