/* Worker side of the parameter-server kvstores (kvstore/ps.h), MXNet's KVStoreDist over MPI:
 * - dist_sync: the local devices' gradients are summed on the host (as `local`), the sum is
 *   pushed to the servers holding the key's parts, and the pull brings back the new weights
 *   the servers computed once every worker pushed the round;
 * - dist_device_sync: the same, but the local devices first all-reduce among themselves over
 *   the store's comm (as `device`), and device 0's sum goes to the host to be pushed;
 * - dist_async: as dist_sync, but each server applies this worker's push at once (with the
 *   worker's own momentum) and answers with the latest weights plus the other workers' next
 *   momentum steps, where this worker's next gradient will land (kvstore/ps_server.c).
 * The receive of a pull is posted before its push is sent, straight into the host copy of
 * the weights; mx_kv_pull waits for it and copies to the device.
 * With compression (kvstore/compress.c), as MXNet's KVStoreDist: the worker's summed gradient of
 * each server part is compressed (the residual kept here, per part) and the payload is what
 * is sent; the server decompresses it. Pulls come back uncompressed. */
#include "cluster/mpi.h"
#include "compressor.h"
#include "mode.h"
#include "ps.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/core/backends.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int device_reduce; /* dist_device_sync */
    int async;
    mx_cluster *c;
    MPI_Comm comm;
    mx_backend *host;
    float *w, *merge, *tmp; /* host copies laid out by the key table */
    int pinned[2];          /* w and merge pinned by device 0's backend (host_pin), which the devices copy */
    float **dmerge;         /* [ndev] dist_device_sync: each device's all-reduced gradient */
    float *stage;           /* one part and its lr, per part: the push's send buffer */
    int *nparts;            /* [nkeys] */
    mx_ps_part *parts;      /* [nkeys][nservers] */
    size_t *stage_at;       /* [nkeys][nservers] offset in stage */
    MPI_Request *req;       /* [nkeys][nservers] pull receives in flight */
    mx_kv_key *units;       /* compression: every key's parts, in key and part order */
    int *unit_at;           /* [nkeys][nservers] a part's unit */
    float *cstage;          /* compression: per part its payload and lr, the push's send buffer */
    size_t *cstage_at;      /* [nkeys][nservers] offset in cstage */
    pthread_mutex_t pull_lock;
} kv_dist;

/* Servers that hold no key would wait for pushes that never come: refused, naming the
 * largest server count at which every server holds some key. */
static int servers_holding(const mx_kvstore *kv, int S, size_t bound)
{
    unsigned char used[MX_COMM_MAX] = {0};
    mx_ps_part parts[MX_COMM_MAX];
    int n = 0;
    for (int k = 0; k < kv->nkeys; k++) {
        const int np = mx_ps_place(k, kv->keys[k].count, S, bound, parts);
        for (int p = 0; p < np; p++) n += !used[parts[p].server], used[parts[p].server] = 1;
    }
    return n;
}

static int check_servers_used(const mx_kvstore *kv, int S, size_t bound)
{
    if (servers_holding(kv, S, bound) == S) return MX_OK;
    int ok = S - 1;
    while (ok > 1 && servers_holding(kv, ok, bound) < ok) ok--;
    return mx_error(MX_EINVAL, "%d servers: the model's %d keys (none of %zu values or more, the big-array bound, "
                    "which would be split over every server) leave %d of them with no key to serve; accepted "
                    "1..%d servers (--servers)", S, kv->nkeys, bound, S - servers_holding(kv, S, bound), ok);
}

static int dist_create_mode(mx_kvstore *kv, int device_reduce, int async)
{
    mx_cluster *c = kv->opt.cluster;
    if (!c || c->role != MX_ROLE_WORKER || c->nservers < 1)
        return mx_error(MX_EINVAL, "kvstore %s: needs the MPI job's worker ranks and at least one server (run under "
                        "mpirun: see `mxbench train --help`)", mx_kv_name(kv));
    if (device_reduce && (kv->comm->nlocal != kv->ndev || kv->comm->n != kv->ndev))
        return mx_error(MX_EINVAL, "kvstore %s: one local comm member per device is needed (comm of %d, %d devices)",
                        mx_kv_name(kv), kv->comm->n, kv->ndev);
    if (!kv->opt.opt && kv->updater)
        return mx_error(MX_EINVAL, "kvstore %s: the servers' optimizer (options .opt) is missing", mx_kv_name(kv));
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && mx_ps_tag(kv->nkeys, 0) > *ub)
        return mx_error(MX_EUNSUPPORTED, "kvstore %s: %d keys need MPI tags up to %d; this MPI allows %d",
                        mx_kv_name(kv), kv->nkeys, mx_ps_tag(kv->nkeys, 0), *ub);
    for (int k = 0; k < kv->nkeys; k++)
        if (kv->keys[k].dtype != MX_F32)
            return mx_error(MX_EINVAL, "kvstore %s: key %d is %s; accepted: f32", mx_kv_name(kv), k,
                            mx_dtype_name(kv->keys[k].dtype));
    kv_dist *m = calloc(1, sizeof *m);
    if (!m) return mx_error(MX_ENOMEM, "out of memory creating kvstore %s", mx_kv_name(kv));
    kv->mode = m;
    m->device_reduce = device_reduce;
    m->async = async;
    m->c = c;
    m->comm = MPI_COMM_NULL;
    pthread_mutex_init(&m->pull_lock, NULL);
    MX_TRY(mx_backend_create(&m->host, "cpu", -1, 1));
    const size_t S = (size_t)c->nservers, nk = (size_t)kv->nkeys;
    m->nparts = calloc(nk, sizeof(int));
    m->parts = calloc(nk * S, sizeof(mx_ps_part));
    m->stage_at = calloc(nk * S, sizeof(size_t));
    m->req = malloc(sizeof(MPI_Request) * nk * S);
    m->dmerge = calloc(kv->ndev, sizeof(float *));
    if (!m->nparts || !m->parts || !m->stage_at || !m->req || !m->dmerge)
        return mx_error(MX_ENOMEM, "out of memory creating kvstore %s", mx_kv_name(kv));
    for (size_t i = 0; i < nk * S; i++) m->req[i] = MPI_REQUEST_NULL;
    const size_t bound = mx_ps_bigarray_bound();
    MX_TRY(check_servers_used(kv, (int)S, bound));
    size_t staged = 0;
    int nunits = 0;
    const int gc = mx_kv_compression_asked(kv);
    m->units = gc ? malloc(sizeof *m->units * nk * S) : NULL;
    m->unit_at = gc ? malloc(sizeof(int) * nk * S) : NULL;
    m->cstage_at = gc ? malloc(sizeof(size_t) * nk * S) : NULL;
    if (gc && (!m->units || !m->unit_at || !m->cstage_at))
        return mx_error(MX_ENOMEM, "out of memory creating kvstore %s", mx_kv_name(kv));
    for (int k = 0; k < kv->nkeys; k++) {
        m->nparts[k] = mx_ps_place(k, kv->keys[k].count, c->nservers, bound, &m->parts[k * S]);
        for (int p = 0; p < m->nparts[k]; p++) {
            const mx_ps_part *pt = &m->parts[k * S + p];
            m->stage_at[k * S + p] = staged;
            staged += pt->hi - pt->lo + 1;
            if (gc) {
                m->unit_at[k * S + p] = nunits;
                m->units[nunits++] = (mx_kv_key){kv->keys[k].offset + pt->lo, pt->hi - pt->lo, MX_F32};
            }
        }
    }
    /* the store's compressor then works on parts, each with its own residual */
    if (gc) kv->gc_keys = m->units, kv->gc_nkeys = nunits;
    const size_t bytes = sizeof(float) * kv->total;
    m->w = m->host->ops->alloc(m->host, bytes);
    m->merge = m->host->ops->alloc(m->host, bytes);
    m->tmp = m->host->ops->alloc(m->host, bytes);
    m->stage = m->host->ops->alloc(m->host, sizeof(float) * (staged ? staged : 1));
    if (!m->w || !m->merge || !m->tmp || !m->stage)
        return mx_error(MX_ENOMEM, "out of memory for kvstore %s host buffers (%zu floats)", mx_kv_name(kv), kv->total);
    return MX_OK;
}

static int dist_sync_create(mx_kvstore *kv) { return dist_create_mode(kv, 0, 0); }
static int dist_device_sync_create(mx_kvstore *kv) { return dist_create_mode(kv, 1, 0); }
static int dist_async_create(mx_kvstore *kv) { return dist_create_mode(kv, 0, 1); }

/* dist_device_sync runs one worker per device (each a member of the local all-reduce);
 * the others one worker that sums on the host. */
static int dist_nworkers(const mx_kvstore *kv) { return ((const kv_dist *)kv->mode)->device_reduce ? kv->ndev : 1; }
static int dist_follows(const mx_kvstore *kv, int worker) { return worker; }

/* Worker 0 sends every server the key table and its parts' initial values (the replicas of
 * every worker start equal: the same seed). */
static int dist_init(mx_kvstore *kv)
{
    kv_dist *m = kv->mode;
    mx_cluster *c = m->c;
    m->comm = mx_cluster_session_comm(c, c->sessions++);
    for (int d = 0; d < kv->ndev && m->device_reduce; d++) {
        mx_backend *be = kv->dev[d].be;
        m->dmerge[d] = be->ops->alloc(be, sizeof(float) * kv->total);
        if (!m->dmerge[d]) return mx_error(MX_ENOMEM, "out of memory on device %d for kvstore %s", d, mx_kv_name(kv));
    }
    mx_backend *be0 = kv->dev[0].be;
    m->pinned[0] = be0->ops->host_pin(be0, m->w, sizeof(float) * kv->total);
    m->pinned[1] = be0->ops->host_pin(be0, m->merge, sizeof(float) * kv->total);
    be0->ops->copy(be0, m->w, kv->dev[0].w, sizeof(float) * kv->total, MX_COPY_D2H);
    if (kv->gc) { /* the compressor exists once the mode's create returned */
        const size_t S = (size_t)c->nservers;
        size_t at = 0;
        for (int k = 0; k < kv->nkeys; k++)
            for (int p = 0; p < m->nparts[k]; p++) {
                m->cstage_at[k * S + p] = at;
                at += mx_kv_gc_slot_floats(kv, m->unit_at[k * S + p]) + 2; /* lr, prescale */
            }
        if (!(m->cstage = m->host->ops->alloc(m->host, sizeof(float) * (at ? at : 1))))
            return mx_error(MX_ENOMEM, "out of memory for compressed pushes (%zu floats)", at);
    }
    if (c->index != 0) return MX_OK;
    const size_t desc_bytes = sizeof(mx_ps_setup) + sizeof(mx_ps_key_desc) * kv->nkeys;
    char *msg = calloc(1, desc_bytes);
    if (!msg) return mx_error(MX_ENOMEM, "out of memory for the key table");
    /* the optimizer's kind and settings (its lr travels with each push, and each server counts
     * its own updates, AdamW's t, part by part) */
    const mx_optim none = {.kind = MX_OPTIM_SGD}, *o = kv->opt.opt ? kv->opt.opt : &none;
    mx_ps_setup setup = {.nkeys = kv->nkeys, .nworkers = c->nworkers, .async = m->async,
                         .update = kv->updater != NULL, .optimizer = o->kind, .momentum = o->momentum, .wd = o->wd,
                         .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
                         .bound = (int64_t)mx_ps_bigarray_bound(), .compression = mx_kv_compression(kv)};
    setup.gc_threshold = kv->opt.gc_threshold;
    setup.gc_topk_ratio = kv->opt.gc_topk_ratio;
    memcpy(msg, &setup, sizeof setup);
    mx_ps_key_desc *desc = (mx_ps_key_desc *)(msg + sizeof setup);
    for (int k = 0; k < kv->nkeys; k++)
        desc[k] = (mx_ps_key_desc){(int64_t)kv->keys[k].count, kv->opt.decay ? kv->opt.decay[k] : 0, 0};
    int rc = MPI_SUCCESS;
    for (int s = 0; s < c->nservers && rc == MPI_SUCCESS; s++)
        rc = MPI_Send(msg, (int)desc_bytes, MPI_BYTE, c->server_rank[s], MX_PS_TAG_SETUP, m->comm);
    free(msg);
    const size_t S = (size_t)c->nservers;
    for (int k = 0; k < kv->nkeys && rc == MPI_SUCCESS; k++)
        for (int p = 0; p < m->nparts[k] && rc == MPI_SUCCESS; p++) {
            const mx_ps_part *pt = &m->parts[k * S + p];
            rc = MPI_Send(m->w + kv->keys[k].offset + pt->lo, (int)(pt->hi - pt->lo), MPI_FLOAT,
                          c->server_rank[pt->server], MX_PS_TAG_INIT, m->comm);
        }
    return rc == MPI_SUCCESS ? MX_OK : mx_cluster_fail("sending the servers the key table", rc);
}

/* The local devices' sum of key into m->merge (host). */
static int reduce_local(mx_kvstore *kv, kv_dist *m, int worker, int key)
{
    const mx_kv_key *k = &kv->keys[key];
    const size_t bytes = sizeof(float) * k->count;
    float *merge = m->merge + k->offset;
    if (m->device_reduce) {
        mx_comm *lc = kv->comm;
        const mx_kv_device *dv = &kv->dev[worker];
        float *dm = m->dmerge[worker] + k->offset;
        if (kv->ndev > 1)
            MX_TRY(mx_comm_allreduce(lc, lc->local_first + worker, (const float *)dv->g + k->offset, dm, k->count,
                                     MX_F32));
        if (worker == 0)
            dv->be->ops->copy(dv->be, merge, kv->ndev > 1 ? dm : (const float *)dv->g + k->offset, bytes, MX_COPY_D2H);
        mx_kv_count_bytes(kv, (double)bytes * (worker == 0 ? 2 : 1));
        return MX_OK;
    }
    mx_kv_sum_on_host(kv, m->host, key, m->merge, m->tmp);
    return MX_OK;
}

static int dist_process(mx_kvstore *kv, int worker, int key)
{
    kv_dist *m = kv->mode;
    MX_TRY(reduce_local(kv, m, worker, key));
    if (worker != 0) return MX_OK;
    const mx_kv_key *k = &kv->keys[key];
    const size_t S = (size_t)m->c->nservers;
    const float lr = kv->opt.opt ? kv->opt.opt->lr : 0;
    const double t0 = mx_now();
    double sent = 0;
    int rc = MPI_SUCCESS;
    for (int p = 0; p < m->nparts[key] && rc == MPI_SUCCESS; p++) {
        const mx_ps_part *pt = &m->parts[key * S + p];
        const size_t len = pt->hi - pt->lo;
        const int server = m->c->server_rank[pt->server], tag = mx_ps_tag(key, p);
        rc = MPI_Irecv(m->w + k->offset + pt->lo, (int)len, MPI_FLOAT, server, tag, m->comm, &m->req[key * S + p]);
        if (rc != MPI_SUCCESS) break;
        float *st = m->stage + m->stage_at[key * S + p];
        size_t nsend = len;
        if (kv->gc) { /* the payload, whole floats of it, then the lr */
            const int u = m->unit_at[key * S + p];
            st = m->cstage + m->cstage_at[key * S + p];
            mx_kv_gc_compress(kv, 0, u, m->merge + k->offset + pt->lo, st);
            nsend = (mx_kv_gc_packed_bytes(kv, u) + sizeof(float) - 1) / sizeof(float);
        } else {
            memcpy(st, m->merge + k->offset + pt->lo, sizeof(float) * len);
        }
        st[nsend] = lr;
        if (kv->gc) st[++nsend] = kv->gc->prescale; /* the server decodes at the worker's scale */
        MPI_Request sr;
        rc = MPI_Isend(st, (int)nsend + 1, MPI_FLOAT, server, tag, m->comm, &sr);
        if (rc == MPI_SUCCESS) rc = mx_mpi_wait(&sr);
        sent += sizeof(float) * (double)(nsend + 1);
    }
    const double t1 = mx_now();
    mx_trace_event_bytes(mx_trace_track(), "comm", "ps push key", key, t0, t1, sent); /* the worker's track */
    pthread_mutex_lock(&kv->lock);
    kv->stats.net_bytes += sent;
    kv->stats.push_seconds += t1 - t0;
    pthread_mutex_unlock(&kv->lock);
    return rc == MPI_SUCCESS ? MX_OK : mx_cluster_fail("kvstore push to a server", rc);
}

static int dist_pull(mx_kvstore *kv, int key, int dev)
{
    kv_dist *m = kv->mode;
    const mx_kv_key *k = &kv->keys[key];
    const size_t S = (size_t)m->c->nservers;
    /* the first device to pull a round waits for the servers; the others find it done */
    pthread_mutex_lock(&m->pull_lock);
    int pending = 0;
    for (int p = 0; p < m->nparts[key]; p++) pending += m->req[key * S + p] != MPI_REQUEST_NULL;
    const double t0 = mx_now();
    const int rc = mx_mpi_waitall(m->nparts[key], &m->req[key * S]);
    const double t1 = mx_now();
    pthread_mutex_unlock(&m->pull_lock);
    if (rc != MPI_SUCCESS) return mx_cluster_fail("kvstore pull from a server", rc);
    if (pending) { /* the device that waited for the servers' answer */
        mx_trace_event_bytes(MX_TRACK_DEVICE(kv->dev[dev].be->device), "comm", "ps pull key", key, t0, t1,
                             sizeof(float) * (double)k->count);
        pthread_mutex_lock(&kv->lock);
        kv->stats.net_bytes += sizeof(float) * (double)k->count;
        kv->stats.pull_seconds += t1 - t0;
        pthread_mutex_unlock(&kv->lock);
    }
    mx_backend *be = kv->dev[dev].be;
    /* without an updater the servers answer the summed gradient */
    float *dst = (float *)(kv->updater ? kv->dev[dev].w : kv->dev[dev].g) + k->offset;
    be->ops->copy(be, dst, m->w + k->offset, sizeof(float) * k->count, MX_COPY_H2D);
    mx_kv_count_bytes(kv, sizeof(float) * (double)k->count);
    return MX_OK;
}

/* Ends this worker's session: what is still in flight completes, then every server hears
 * stop (the machinery joined the comm workers before this runs). */
static void dist_destroy(mx_kvstore *kv)
{
    kv_dist *m = kv->mode;
    if (m->comm != MPI_COMM_NULL && m->c && m->req) {
        const int n = kv->nkeys * m->c->nservers;
        MPI_Waitall(n, m->req, MPI_STATUSES_IGNORE);
        for (int s = 0; s < m->c->nservers; s++)
            MPI_Send(NULL, 0, MPI_BYTE, m->c->server_rank[s], MX_PS_TAG_STOP, m->comm);
    }
    for (int d = 0; d < kv->ndev && m->dmerge; d++)
        if (m->dmerge[d]) kv->dev[d].be->ops->free(kv->dev[d].be, m->dmerge[d]);
    mx_backend *be0 = kv->ndev > 0 ? kv->dev[0].be : NULL;
    if (m->pinned[0]) be0->ops->host_release(be0, m->w);
    if (m->pinned[1]) be0->ops->host_release(be0, m->merge);
    if (m->host) {
        mx_backend *h = m->host;
        if (m->w) h->ops->free(h, m->w);
        if (m->merge) h->ops->free(h, m->merge);
        if (m->tmp) h->ops->free(h, m->tmp);
        if (m->stage) h->ops->free(h, m->stage);
        if (m->cstage) h->ops->free(h, m->cstage);
        mx_backend_destroy(h);
    }
    pthread_mutex_destroy(&m->pull_lock);
    free(m->nparts), free(m->parts), free(m->stage_at), free(m->req), free(m->dmerge);
    free(m->units), free(m->unit_at), free(m->cstage_at);
    free(m);
}

#define DIST_MODE(var, mode, create_fn) \
    const mx_kvstore_ops var = {.kind = mode, .create = create_fn, .nworkers = dist_nworkers, \
                                .follows = dist_follows, .ready = mx_kv_all_pushed, .init = dist_init, \
                                .process = dist_process, .pull = dist_pull, .destroy = dist_destroy};
DIST_MODE(mx_kv_dist_sync_ops, MX_KV_DIST_SYNC, dist_sync_create)
DIST_MODE(mx_kv_dist_device_sync_ops, MX_KV_DIST_DEVICE_SYNC, dist_device_sync_create)
DIST_MODE(mx_kv_dist_async_ops, MX_KV_DIST_ASYNC, dist_async_create)
