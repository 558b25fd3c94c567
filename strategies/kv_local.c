/* kvstore `local`: every device's gradient is copied to host memory and summed there, one
 * host thread runs the update on the host copy of the weights, and each device pulls the
 * new weights back (MXNet's CommCPU + update on the kvstore). The host is not a comm
 * member: each copy is made by the owning device's backend (its D2H or H2D), so no
 * collective is involved and the comm only sizes the store. */
#include "kv_mode.h"
#include "engine/status.h"

#include <stdlib.h>

typedef struct {
    mx_backend *host;       /* one-thread CPU backend for the host-side sums and update */
    float *w, *mom, *merge, *tmp;
} kv_local;

static int local_create(mx_kvstore *kv)
{
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL, "kvstore local: key %d is %s; accepted: f32 (host sums and updates f32 master values)",
                            k, mx_dtype_name(kv->keys[k].dtype));
    kv_local *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore local");
    kv->mode = m;
    MX_TRY(mx_backend_create(&m->host, "cpu", -1, 1));
    const size_t bytes = sizeof(float) * kv->total;
    m->w = m->host->ops->alloc(m->host, bytes);
    m->mom = m->host->ops->alloc(m->host, bytes);
    m->merge = m->host->ops->alloc(m->host, bytes);
    m->tmp = m->host->ops->alloc(m->host, bytes);
    if (!m->w || !m->mom || !m->merge || !m->tmp)
        return mx_error(MX_ENOMEM, "out of memory for kvstore local host buffers (%zu floats)", kv->total);
    return MX_OK;
}

static int local_nworkers(const mx_kvstore *kv) { return 1; }
static int local_follows(const mx_kvstore *kv, int worker) { return 0; }

static int local_init(mx_kvstore *kv)
{
    kv_local *m = kv->mode;
    mx_backend *be = kv->dev[0].be;
    be->ops->copy(be, m->w, kv->dev[0].w, sizeof(float) * kv->total, MX_COPY_D2H);
    return MX_OK;
}

static int local_process(mx_kvstore *kv, int worker, int key)
{
    kv_local *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_kv_sum_on_host(kv, m->host, key, m->merge, m->tmp);
    if (kv->updater)
        kv->updater(kv->updater_user, m->host, key, 0, k->count, m->w + k->offset, m->mom + k->offset,
                    m->merge + k->offset);
    return MX_OK;
}

static int local_pull(mx_kvstore *kv, int key, int dev)
{
    kv_local *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_backend *be = kv->dev[dev].be;
    /* Without an updater the store holds the summed gradient, and it lands where the
     * device's gradient was. */
    float *dst = (float *)(kv->updater ? kv->dev[dev].w : kv->dev[dev].g) + k->offset;
    const float *src = (kv->updater ? m->w : m->merge) + k->offset;
    be->ops->copy(be, dst, src, sizeof(float) * k->count, MX_COPY_H2D);
    mx_kv_count_bytes(kv, sizeof(float) * (double)k->count);
    return MX_OK;
}

static void local_destroy(mx_kvstore *kv)
{
    kv_local *m = kv->mode;
    if (m->host) {
        m->host->ops->free(m->host, m->w);
        m->host->ops->free(m->host, m->mom);
        m->host->ops->free(m->host, m->merge);
        m->host->ops->free(m->host, m->tmp);
        mx_backend_destroy(m->host);
    }
    free(m);
}

const mx_kvstore_ops mx_kv_local_ops = {
    .name = "local",
    .create = local_create,
    .nworkers = local_nworkers,
    .follows = local_follows,
    .ready = mx_kv_all_pushed,
    .init = local_init,
    .process = local_process,
    .pull = local_pull,
    .destroy = local_destroy,
};
