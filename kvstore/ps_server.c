/* A parameter-server rank (kvstore/ps.h): per session, it learns the key table from worker 0, takes
 * the initial values of the parts placed on it, then answers pushes until every worker said
 * stop. dist_sync sums a round's pushes in worker order (so the bits do not depend on who
 * came first: those of `local` with the same devices) and updates once; dist_async updates
 * with each push as it comes and counts how stale it was. One thread: MPI messages are
 * handled one at a time, as ps-lite's server handles requests.
 *
 * dist_async keeps one momentum per worker and answers a push with a look-ahead (DANA:
 * Hakimi et al., "Taming Momentum in a Distributed Asynchronous Environment", 2019), where
 * MXNet's server keeps one momentum per key. A push carries 1/W of a global batch (data.c);
 * with one shared momentum, W pushes of a round decay it W times, and a worker's gradient,
 * computed on weights that missed the others' pushes since its pull (staleness about W-1),
 * is fed back through a momentum of 0.9: the delay, amplified tenfold, restricts the stable
 * lr far below dist_sync's (on f = h x^2 / 2, 2 workers, staleness 1: lr h < 0.2 per round
 * against 3.8) and lenet lost 3 points at lr 0.05. With a momentum per worker, each decays
 * once a round and their sum moves as dist_sync's momentum (exactly so without staleness,
 * weight decay split over the W pushes as the gradient is); the answer is the weights plus
 * the others' next momentum steps, mu x (their momenta), which is where the gradient the
 * worker computes next will be applied, but for the gradients those steps bring. One worker:
 * no others, the plain update and the weights, as dist_sync.
 *
 * AdamW (the workers' --optimizer, in the session's setup) keeps one pair of moments per part
 * and counts its updates (t) per part: dist_sync updates once a round, so its t is the
 * workers' step; dist_async takes an AdamW step with every push, as MXNet's server runs its
 * optimizer on each, with 1/W of the weight decay as SGD's, and answers the weights (the
 * look-ahead is a momentum's: AdamW's step is not a linear function of the moments). */
#include "cluster/mpi.h"
#include "compressor.h"
#include "ps.h"
#include "comm/comm.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/core/optim.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int key;
    size_t len;
    mx_param param;  /* for the update: its decay flag and length */
    float *w, *mom;  /* the optimizer's state. SGD: [len]; async: [nworkers][len], one momentum per
                      * worker. AdamW: [2][len], its moments m and v */
    float *mom_sum;  /* async SGD: [len] the sum of the workers' momenta, for the look-ahead */
    float *slots;    /* [nworkers][stride]: each worker's push of the round, then its lr */
    size_t stride;   /* len + 1, or payload floats + 1 where that is more (compressed pushes) */
    size_t payload;  /* floats of a compressed push's payload (0: pushes are f32 values) */
    int unit;        /* its unit in the session's compressor */
    float *sum;      /* [len] */
    int arrived;
    long version;    /* updates applied */
    long *last_pull; /* [nworkers] the version each worker last received */
} server_part;

typedef struct {
    mx_cluster *c;
    MPI_Comm comm;
    mx_ps_setup setup;
    mx_ps_key_desc *keys;
    server_part *parts;
    int nparts;
    int *part_of_tag; /* local part index by tag - MX_PS_TAG_PART0, -1: not here */
    int ntags;
    mx_backend *be;
    mx_ps_stats *st;
    mx_compressor *gc; /* decompresses the pushes (NULL: uncompressed) */
    float *unpacked;   /* one part's values, decompressed */
} session;

static void session_free(session *s)
{
    for (int i = 0; i < s->nparts; i++) {
        free(s->parts[i].w), free(s->parts[i].mom), free(s->parts[i].slots), free(s->parts[i].sum);
        free(s->parts[i].mom_sum);
        free(s->parts[i].last_pull);
    }
    free(s->parts);
    free(s->keys);
    free(s->part_of_tag);
    mx_compressor_destroy(s->gc);
    free(s->unpacked);
}

/* The compressor of the session's pushes over this server's parts, each a unit of its own
 * (as the workers compress them). */
static int setup_compression(session *s)
{
    const mx_gc_kind kind = (mx_gc_kind)s->setup.compression;
    if (kind == MX_GC_NONE || !s->nparts) return MX_OK;
    mx_kv_key *units = malloc(sizeof *units * s->nparts);
    if (!units) return mx_error(MX_ENOMEM, "server: out of memory for %d parts", s->nparts);
    size_t at = 0, largest = 0;
    for (int i = 0; i < s->nparts; i++) {
        units[i] = (mx_kv_key){at, s->parts[i].len, MX_F32};
        at += s->parts[i].len;
        if (s->parts[i].len > largest) largest = s->parts[i].len;
    }
    const mx_compressor_opts o = {s->setup.gc_threshold, s->setup.gc_topk_ratio};
    int rc = mx_compressor_create(&s->gc, kind, 1, units, s->nparts, &o);
    free(units);
    MX_TRY(rc);
    if (!(s->unpacked = malloc(sizeof(float) * (largest ? largest : 1))))
        return mx_error(MX_ENOMEM, "server: out of memory for decompression");
    for (int i = 0; i < s->nparts; i++) {
        server_part *sp = &s->parts[i];
        sp->unit = i;
        sp->payload = (s->gc->ops->packed_bytes(s->gc, sp->len) + sizeof(float) - 1) / sizeof(float);
        if (sp->payload + 2 > sp->stride) { /* a compressed push: payload, lr, prescale */
            sp->stride = sp->payload + 2;
            float *grown = realloc(sp->slots, sizeof(float) * sp->stride * (s->setup.async ? 1 : s->c->nworkers));
            if (!grown) return mx_error(MX_ENOMEM, "server: out of memory for compressed pushes");
            sp->slots = grown;
        }
    }
    return MX_OK;
}

/* Takes the key table and this server's share of the initial values. Returns 1 when worker
 * 0 ended the job instead. */
static int session_begin(session *s)
{
    mx_cluster *c = s->c;
    const int w0 = c->worker_rank[0];
    MPI_Status ms;
    int rc = mx_mpi_probe(w0, MX_PS_TAG_SETUP, s->comm, &ms);
    int bytes = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&ms, MPI_BYTE, &bytes);
    if (rc != MPI_SUCCESS) return mx_cluster_fail("server: waiting for worker 0's key table", rc);
    char *buf = malloc(bytes ? bytes : 1);
    if (!buf) return mx_error(MX_ENOMEM, "server: out of memory for the key table (%d bytes)", bytes);
    rc = MPI_Recv(buf, bytes, MPI_BYTE, w0, MX_PS_TAG_SETUP, s->comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return mx_cluster_fail("server: receiving the key table", rc);
    }
    memcpy(&s->setup, buf, sizeof s->setup);
    const int nkeys = s->setup.nkeys;
    if (nkeys == 0) {
        free(buf);
        return 1;
    }
    if (nkeys < 0 || (size_t)bytes != sizeof s->setup + (size_t)nkeys * sizeof(mx_ps_key_desc) ||
        s->setup.nworkers != c->nworkers || (unsigned)s->setup.optimizer >= MX_NOPTIMS) {
        free(buf);
        return mx_error(MX_EFORMAT, "server %d: malformed key table from worker 0 (%d bytes, %d keys, %d workers, "
                        "optimizer %d)", c->index, bytes, nkeys, s->setup.nworkers, s->setup.optimizer);
    }
    s->keys = malloc(sizeof *s->keys * nkeys);
    s->ntags = nkeys * MX_COMM_MAX;
    s->part_of_tag = malloc(sizeof(int) * s->ntags);
    s->parts = calloc((size_t)nkeys * c->nservers, sizeof *s->parts);
    if (!s->keys || !s->part_of_tag || !s->parts) {
        free(buf);
        return mx_error(MX_ENOMEM, "server: out of memory for %d keys", nkeys);
    }
    memcpy(s->keys, buf + sizeof s->setup, sizeof *s->keys * nkeys);
    free(buf);
    for (int t = 0; t < s->ntags; t++) s->part_of_tag[t] = -1;
    mx_ps_part pl[MX_COMM_MAX];
    const int W = c->nworkers;
    for (int k = 0; k < nkeys; k++) {
        const int np = mx_ps_place(k, (size_t)s->keys[k].count, c->nservers, (size_t)s->setup.bound, pl);
        for (int p = 0; p < np; p++) {
            if (pl[p].server != c->index) continue;
            server_part *sp = &s->parts[s->nparts];
            sp->key = k;
            sp->len = pl[p].hi - pl[p].lo;
            sp->param = (mx_param){.count = sp->len, .dtype = MX_F32, .decay = s->keys[k].decay};
            sp->w = malloc(sizeof(float) * (sp->len + 1));
            const int A = s->setup.async, adamw = s->setup.optimizer == MX_OPTIM_ADAMW;
            sp->mom = calloc((sp->len + 1) * (adamw ? 2 : A ? W : 1), sizeof(float));
            sp->mom_sum = A && !adamw ? calloc(sp->len + 1, sizeof(float)) : NULL;
            sp->stride = sp->len + 1;
            sp->slots = malloc(sizeof(float) * sp->stride * (s->setup.async ? 1 : W));
            sp->sum = malloc(sizeof(float) * (sp->len + 1));
            sp->last_pull = calloc(W, sizeof(long));
            if (!sp->w || !sp->mom || !sp->slots || !sp->sum || !sp->last_pull || (A && !adamw && !sp->mom_sum))
                return mx_error(MX_ENOMEM, "server: out of memory for key %d (%zu values)", k, sp->len);
            s->part_of_tag[mx_ps_tag(k, p) - MX_PS_TAG_PART0] = s->nparts++;
            rc = MPI_Recv(sp->w, (int)sp->len, MPI_FLOAT, w0, MX_PS_TAG_INIT, s->comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) return mx_cluster_fail("server: receiving initial values", rc);
            s->st->bytes += sizeof(float) * (double)sp->len;
        }
    }
    return setup_compression(s);
}

static int worker_of(const mx_cluster *c, int rank)
{
    for (int w = 0; w < c->nworkers; w++)
        if (c->worker_rank[w] == rank) return w;
    return -1;
}

/* Answers workers [w0, w1) with data, the sends in flight together (each worker has
 * posted its receive before pushing). */
static int reply(session *s, server_part *sp, int w0, int w1, int tag, const float *data)
{
    MPI_Request req[MX_COMM_MAX];
    const double t0 = mx_now();
    int rc = MPI_SUCCESS, n = 0;
    for (int w = w0; w < w1 && rc == MPI_SUCCESS; w++, n++)
        rc = MPI_Isend(data, (int)sp->len, MPI_FLOAT, s->c->worker_rank[w], tag, s->comm, &req[n]);
    const int wrc = mx_mpi_waitall(n, req);
    if (rc == MPI_SUCCESS) rc = wrc;
    if (rc != MPI_SUCCESS) return mx_cluster_fail("server: answering a pull", rc);
    for (int w = w0; w < w1; w++) sp->last_pull[w] = sp->version;
    const double bytes = sizeof(float) * (double)sp->len * (w1 - w0);
    s->st->bytes += bytes;
    mx_trace_event_bytes(MX_TRACK_SERVER, "comm", "reply key", sp->key, t0, mx_now(), bytes);
    return MX_OK;
}

/* The workers' optimizer at lr with weight decay wd, as update number version + 1 of sp. */
static mx_optim server_optim(const session *s, const server_part *sp, float lr, float wd)
{
    const mx_ps_setup *u = &s->setup;
    return (mx_optim){.kind = (mx_optim_kind)u->optimizer, .lr = lr, .wd = wd, .momentum = u->momentum,
                      .beta1 = u->beta1, .beta2 = u->beta2, .eps = u->eps, .step = sp->version + 1};
}

static int is_adamw(const session *s) { return s->setup.optimizer == MX_OPTIM_ADAMW; }

static void update(session *s, server_part *sp, const float *g, float lr, float wd)
{
    const mx_optim o = server_optim(s, sp, lr, wd);
    mx_optim_update_slice(s->be, &o, &sp->param, 0, sp->len, sp->w, mx_optim_state_of(&o, sp->mom, sp->len), g,
                          1.0f);
    sp->version++;
}

/* dist_async: worker w's push, with 1/W of the weight decay (the push's share of the global
 * batch's objective). SGD: with the worker's own momentum; mom_sum follows, minus the old
 * momentum, plus the new. AdamW: the part's moments. */
static void update_async(session *s, server_part *sp, int w, const float *g, float lr)
{
    const int W = s->c->nworkers;
    if (is_adamw(s)) {
        update(s, sp, g, lr, s->setup.wd / (float)W);
        return;
    }
    const mx_optim o = server_optim(s, sp, lr, s->setup.wd / (float)W);
    float *mom = sp->mom + (size_t)w * sp->len, *sum = sp->mom_sum;
    for (size_t i = 0; i < sp->len; i++) sum[i] -= mom[i];
    mx_optim_update_slice(s->be, &o, &sp->param, 0, sp->len, sp->w, (mx_optim_state){mom, NULL}, g, 1.0f);
    s->be->ops->add(s->be, sp->len, sum, mom);
    sp->version++;
}

/* dist_async's answer to worker w: the weights plus the other workers' next momentum steps,
 * into sp->sum; the weights themselves with one worker, or under AdamW. */
static const float *look_ahead(session *s, server_part *sp, int w)
{
    if (s->c->nworkers == 1 || is_adamw(s)) return sp->w;
    const float mu = s->setup.momentum, *mom = sp->mom + (size_t)w * sp->len;
    for (size_t i = 0; i < sp->len; i++) sp->sum[i] = sp->w[i] + mu * (sp->mom_sum[i] - mom[i]);
    return sp->sum;
}

static void note_staleness(mx_ps_stats *st, long stale)
{
    st->stale[stale < MX_PS_STALE_BINS - 1 ? stale : MX_PS_STALE_BINS - 1]++;
    if (stale > st->stale_max) st->stale_max = stale;
}

/* One push from worker w, already received into its slot. */
static int handle_push(session *s, server_part *sp, int w, int tag, int first_part)
{
    const int W = s->c->nworkers;
    const size_t stride = sp->stride;
    if (s->setup.async) {
        note_staleness(s->st, sp->version - sp->last_pull[w]);
        if (s->setup.update) update_async(s, sp, w, sp->slots, sp->slots[sp->len]);
        if (first_part && w == 0) s->st->rounds++;
        return reply(s, sp, w, w + 1, tag, s->setup.update ? look_ahead(s, sp, w) : sp->slots);
    }
    if (++sp->arrived < W) return MX_OK;
    sp->arrived = 0;
    /* in worker order, whatever the order of arrival */
    memcpy(sp->sum, sp->slots, sizeof(float) * sp->len);
    for (int v = 1; v < W; v++) s->be->ops->add(s->be, sp->len, sp->sum, sp->slots + (size_t)v * stride);
    if (s->setup.update) update(s, sp, sp->sum, sp->slots[sp->len], s->setup.wd);
    if (first_part) s->st->rounds++;
    return reply(s, sp, 0, W, tag, s->setup.update ? sp->w : sp->sum);
}

static int session_run(session *s)
{
    mx_cluster *c = s->c;
    int stopped = 0;
    while (stopped < c->nworkers) {
        MPI_Status ms;
        int rc = mx_mpi_probe(MPI_ANY_SOURCE, MPI_ANY_TAG, s->comm, &ms);
        if (rc != MPI_SUCCESS) return mx_cluster_fail("server: waiting for a push", rc);
        const int w = worker_of(c, ms.MPI_SOURCE), tag = ms.MPI_TAG, t = tag - MX_PS_TAG_PART0;
        if (w < 0)
            return mx_error(MX_EFORMAT, "server %d: message from rank %d, which is no worker", c->index, ms.MPI_SOURCE);
        if (tag == MX_PS_TAG_STOP) {
            MPI_Recv(NULL, 0, MPI_BYTE, ms.MPI_SOURCE, tag, s->comm, MPI_STATUS_IGNORE);
            stopped++;
            continue;
        }
        const int i = t >= 0 && t < s->ntags ? s->part_of_tag[t] : -1;
        int count = 0;
        MPI_Get_count(&ms, MPI_FLOAT, &count);
        if (i < 0 || (size_t)count != (s->gc ? s->parts[i].payload + 2 : s->parts[i].len + 1))
            return mx_error(MX_EFORMAT, "server %d: unexpected message (tag %d, %d floats) from worker %d", c->index,
                            tag, count, w);
        server_part *sp = &s->parts[i];
        float *slot = sp->slots + (s->setup.async ? 0 : (size_t)w * sp->stride);
        const double t_recv = mx_now();
        rc = MPI_Recv(slot, count, MPI_FLOAT, ms.MPI_SOURCE, tag, s->comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mx_cluster_fail("server: receiving a push", rc);
        const double t0 = mx_now();
        mx_trace_event_bytes(MX_TRACK_SERVER, "comm", "recv push key", sp->key, t_recv, t0,
                             sizeof(float) * (double)count);
        s->st->bytes += sizeof(float) * (double)count;
        if (s->gc) { /* payload, lr, prescale: the values take the slot's front, as uncompressed */
            const float lr = slot[sp->payload];
            s->gc->prescale = slot[sp->payload + 1] > 0 ? slot[sp->payload + 1] : 1;
            s->gc->ops->decompress(s->gc, slot, sp->len, s->unpacked);
            memcpy(slot, s->unpacked, sizeof(float) * sp->len);
            slot[sp->len] = lr;
        }
        rc = handle_push(s, sp, w, tag, i == 0);
        const double t1 = mx_now();
        s->st->busy += t1 - t0;
        mx_trace_event(MX_TRACK_SERVER, "ps", "handle push key", sp->key, t0, t1);
        /* the workers' traced window lies within the first rounds (cluster/cluster.h) */
        if (mx_trace_on() && s->st->rounds >= c->trace_rounds) mx_trace_stop();
        MX_TRY(rc);
    }
    return MX_OK;
}

int mx_ps_serve(mx_cluster *c, mx_ps_stats *st)
{
    memset(st, 0, sizeof *st);
    mx_backend *be;
    MX_TRY(mx_backend_create(&be, "cpu", -1, 1));
    int rc = MX_OK;
    for (;;) {
        session s = {.c = c, .comm = mx_cluster_session_comm(c, c->sessions), .be = be, .st = st};
        /* the timeline: the first session is the workers' first repeat, the traced one */
        if (c->sessions == 0 && c->trace_rounds > 0) mx_trace_start(mx_now());
        rc = session_begin(&s);
        c->sessions++;
        if (rc == MX_OK) rc = session_run(&s);
        mx_trace_stop();
        session_free(&s);
        if (rc != MX_OK) break;
    }
    mx_backend_destroy(be);
    return rc == 1 ? MX_OK : rc;
}

int mx_ps_end_job(mx_cluster *c)
{
    const mx_ps_setup end = {0};
    MPI_Comm comm = mx_cluster_session_comm(c, c->sessions);
    for (int s = 0; s < c->nservers; s++) {
        const int rc = MPI_Send(&end, sizeof end, MPI_BYTE, c->server_rank[s], MX_PS_TAG_SETUP, comm);
        if (rc != MPI_SUCCESS) return mx_cluster_fail("ending the servers' loop", rc);
    }
    return MX_OK;
}
