/* kvstore `device`: reduce-scatter then all-gather among the devices, with no host round
 * trip. Each key is cut into one shard per device; device d's worker sums shard d of every
 * device's gradient into a merge buffer on d (pushed values are never modified, as MXNet's
 * push copies), updates shard d of its own weights (its momentum lives on it), and every
 * device pulls the shards it does not own from their owners. */
#include "kvstore.h"
#include "engine/status.h"

#include <stdlib.h>

typedef struct {
    float **mom;     /* [ndev] momentum, used on each device's own shards */
    float **merge;   /* [ndev] summed gradient, used on each device's own shards */
    float **staging; /* [ndev] receive buffer for a remote shard */
} kv_device;

static int device_nworkers(int ndev) { return ndev; }

static int device_create(mx_kvstore *kv)
{
    kv_device *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    kv->mode = m;
    m->mom = calloc(kv->ndev, sizeof *m->mom);
    m->merge = calloc(kv->ndev, sizeof *m->merge);
    m->staging = calloc(kv->ndev, sizeof *m->staging);
    if (!m->mom || !m->merge || !m->staging) return mx_error(MX_ENOMEM, "out of memory creating kvstore device");
    size_t largest = 0;
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].count > largest) largest = kv->keys[k].count;
    for (int d = 0; d < kv->ndev; d++) {
        mx_backend *be = kv->be[d];
        m->mom[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        m->merge[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        m->staging[d] = be->ops->alloc(be, sizeof(float) * largest);
        if (!m->mom[d] || !m->merge[d] || !m->staging[d]) return mx_error(MX_ENOMEM, "out of device memory for kvstore device");
    }
    return MX_OK;
}

static int device_init(mx_kvstore *kv, const float *value_dev0) { return MX_OK; /* replicas start equal */ }

static void device_process(mx_kvstore *kv, int worker, int key)
{
    kv_device *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_backend *be = kv->be[worker];
    size_t lo, hi;
    mx_kv_shard(k->count, worker, kv->ndev, &lo, &hi);
    if (hi <= lo) return;
    float *merge = m->merge[worker] + k->offset;
    be->ops->copy(be, merge + lo, kv->grad[worker] + k->offset + lo, sizeof(float) * (hi - lo), MX_COPY_D2D);
    for (int d = 0; d < kv->ndev; d++) {
        if (d == worker) continue;
        be->ops->copy(be, m->staging[worker], kv->grad[d] + k->offset + lo, sizeof(float) * (hi - lo), MX_COPY_D2D);
        be->ops->add(be, hi - lo, merge + lo, m->staging[worker]);
    }
    kv->updater(kv->updater_user, be, key, lo, hi, kv->weight[worker] + k->offset, m->mom[worker] + k->offset, merge);
    mx_kv_count_bytes(kv, sizeof(float) * (double)(hi - lo) * (kv->ndev - 1));
}

static void device_pull(mx_kvstore *kv, int key, int dev, float *out)
{
    const mx_kv_key *k = &kv->keys[key];
    mx_backend *be = kv->be[dev];
    double bytes = 0;
    for (int owner = 0; owner < kv->ndev; owner++) {
        size_t lo, hi;
        mx_kv_shard(k->count, owner, kv->ndev, &lo, &hi);
        if (owner == dev || hi <= lo) continue;
        be->ops->copy(be, out + lo, kv->weight[owner] + k->offset + lo, sizeof(float) * (hi - lo), MX_COPY_D2D);
        bytes += sizeof(float) * (double)(hi - lo);
    }
    if (bytes) mx_kv_count_bytes(kv, bytes);
}

static void device_destroy(mx_kvstore *kv)
{
    kv_device *m = kv->mode;
    for (int d = 0; d < kv->ndev && m->mom; d++) {
        mx_backend *be = kv->be[d];
        if (m->mom[d]) be->ops->free(be, m->mom[d]);
        if (m->merge && m->merge[d]) be->ops->free(be, m->merge[d]);
        if (m->staging && m->staging[d]) be->ops->free(be, m->staging[d]);
    }
    free(m->mom);
    free(m->merge);
    free(m->staging);
    free(m);
}

const mx_kvstore_ops mx_kv_device_ops = {
    .name = "device",
    .nworkers = device_nworkers,
    .create = device_create,
    .init = device_init,
    .process = device_process,
    .pull = device_pull,
    .destroy = device_destroy,
};
