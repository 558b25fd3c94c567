/* kvstore `local`: every device's gradient is copied to host memory and summed there, one
 * host thread runs the update on the host copy of the weights, and each device pulls the
 * new weights back (MXNet's CommCPU + update on the kvstore). */
#include "kvstore.h"
#include "engine/status.h"

#include <stdlib.h>

typedef struct {
    mx_backend *host;       /* one-thread CPU backend for the host-side sums and update */
    float *w, *mom, *merge, *tmp;
} kv_local;

static int local_nworkers(int ndev) { return 1; }

static int local_create(mx_kvstore *kv)
{
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

static int local_init(mx_kvstore *kv, const float *value_dev0)
{
    kv_local *m = kv->mode;
    kv->be[0]->ops->copy(kv->be[0], m->w, value_dev0, sizeof(float) * kv->total, MX_COPY_D2H);
    return MX_OK;
}

static void local_process(mx_kvstore *kv, int worker, int key)
{
    kv_local *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    const size_t bytes = sizeof(float) * k->count;
    float *merge = m->merge + k->offset, *tmp = m->tmp + k->offset;
    kv->be[0]->ops->copy(kv->be[0], merge, kv->grad[0] + k->offset, bytes, MX_COPY_D2H);
    for (int d = 1; d < kv->ndev; d++) {
        kv->be[d]->ops->copy(kv->be[d], tmp, kv->grad[d] + k->offset, bytes, MX_COPY_D2H);
        m->host->ops->add(m->host, k->count, merge, tmp);
    }
    kv->updater(kv->updater_user, m->host, key, 0, k->count, m->w + k->offset, m->mom + k->offset, merge);
    mx_kv_count_bytes(kv, (double)bytes * kv->ndev);
}

static void local_pull(mx_kvstore *kv, int key, int dev, float *out)
{
    kv_local *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    kv->be[dev]->ops->copy(kv->be[dev], out, m->w + k->offset, sizeof(float) * k->count, MX_COPY_H2D);
    mx_kv_count_bytes(kv, sizeof(float) * (double)k->count);
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
    .nworkers = local_nworkers,
    .create = local_create,
    .init = local_init,
    .process = local_process,
    .pull = local_pull,
    .destroy = local_destroy,
};
