/* kvstore `local`: every device's gradient is copied to host memory and summed there, one
 * host thread runs the update on the host copy of the weights, and each device pulls the
 * new weights back (MXNet's CommCPU + update on the kvstore). The host is not a comm
 * member: each copy is made by the owning device's backend (its D2H or H2D), so no
 * collective is involved and the comm only sizes the store. */
#include "mode.h"
#include "base/status.h"

#include <stdlib.h>

typedef mx_kv_host kv_local;

static int local_create(mx_kvstore *kv)
{
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL,
                            "kvstore local: key %d is %s; accepted: f32 (host sums and updates f32 master values)", k,
                            mx_dtype_name(kv->keys[k].dtype));
    kv_local *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore local");
    kv->mode = m;
    return mx_kv_host_create(kv, m);
}

static int local_nworkers(const mx_kvstore *kv) { return 1; }
static int local_follows(const mx_kvstore *kv, int worker) { return 0; }

static int local_init(mx_kvstore *kv)
{
    mx_kv_host_init(kv, kv->mode);
    return MX_OK;
}

static int local_process(mx_kvstore *kv, int worker, int key)
{
    kv_local *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    mx_kv_sum_on_host(kv, m->host, key, m->merge, m->tmp);
    if (kv->updater)
        kv->updater(kv->updater_user, m->host, key, 0, k->count, m->w + k->offset,
                    mx_kv_state_at(kv, m->mom, k->offset), m->merge + k->offset);
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
    mx_kv_host_destroy(kv->mode);
    free(kv->mode);
}

const mx_kvstore_ops mx_kv_local_ops = {
    .kind = MX_KV_LOCAL,
    .create = local_create,
    .nworkers = local_nworkers,
    .follows = local_follows,
    .ready = mx_kv_all_pushed,
    .init = local_init,
    .process = local_process,
    .pull = local_pull,
    .destroy = local_destroy,
};
