/* The kvstore's communicator calls, logged one by one, and the step's communication figures
 * made from them (kvstore/kvstore.h: mx_kv_comm_figures), which `mxbench project` fits its
 * alpha-beta-gamma model to. The comm already counts calls, bytes and seconds per verb
 * (comm/comm.h), but a sum per verb cannot tell latency from bandwidth: every key of a step is
 * reduce-scattered and all-gathered alike, so the two verbs have the same calls and bytes.
 * Each call's own size and verb can: small calls show the latency (alpha), large ones the
 * cost per byte (beta), and a reduce-scatter against the all-gather of the same size the
 * cost of summing (gamma).
 *
 * Each comm worker logs its own calls in its own row (no lock on the hot path). Every member
 * makes the same collectives in the same order, so call i of every worker of this process
 * is one collective; its time is that of the member that waited least for the others, i.e.
 * from the last arrival (threads), or the comm's own time less its measured arrival wait
 * (mpi), so that a device still in backward (skew) does not pass for communication. */
#include "mode.h"
#include "base/status.h"
#include "results/lsq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mx_kv_call {
    mx_comm_verb verb;
    int members;          /* the comm's n: the p of the cost model */
    int shared;           /* 1: the members read each other's buffers (threads), 0: messages (mpi) */
    double bytes;         /* S: count x element size, the full-length buffer */
    double seconds, wait; /* as the comm counted this call */
};

int mx_kv_calls_create(mx_kvstore *kv)
{
    /* a step makes at most two collectives per key and worker (device: reduce-scatter or a
     * payload all-gather, then the weights' all-gather; dist_allreduce: one per bucket) */
    kv->capcalls = 2 * kv->nkeys + 2;
    kv->calls = calloc((size_t)kv->nworkers * (size_t)kv->capcalls, sizeof *kv->calls);
    kv->ncalls = calloc((size_t)kv->nworkers, sizeof *kv->ncalls);
    if (!kv->calls || !kv->ncalls) return mx_error(MX_ENOMEM, "out of memory for the kvstore's call log");
    return MX_OK;
}

void mx_kv_calls_destroy(mx_kvstore *kv)
{
    free(kv->calls);
    free(kv->ncalls);
    kv->calls = NULL;
    kv->ncalls = NULL;
}

void mx_kv_calls_reset(mx_kvstore *kv)
{
    if (kv->ncalls) memset(kv->ncalls, 0, sizeof *kv->ncalls * (size_t)kv->nworkers);
}

/* A row beyond the capacity is counted but not kept: the figures of that step are then NaN
 * rather than made from a part of its calls. */
static void log_call(mx_kvstore *kv, int worker, const mx_comm *c, int member, mx_comm_verb v, mx_comm_count before)
{
    if (!kv->ncalls || worker < 0 || worker >= kv->nworkers) return;
    const mx_comm_count after = mx_comm_counts(c, member, v);
    const int i = kv->ncalls[worker]++;
    if (i >= kv->capcalls) return;
    kv->calls[(size_t)worker * kv->capcalls + i] =
        (struct mx_kv_call){v, c->n, strcmp(c->ops->name, "threads") == 0, after.bytes - before.bytes,
                            after.seconds - before.seconds, after.wait - before.wait};
}

int mx_kv_allreduce(mx_kvstore *kv, int worker, mx_comm *c, int member, const void *send, void *recv, size_t count,
                    mx_dtype t)
{
    const mx_comm_count before = mx_comm_counts(c, member, MX_COMM_ALLREDUCE);
    const int rc = mx_comm_allreduce(c, member, send, recv, count, t);
    log_call(kv, worker, c, member, MX_COMM_ALLREDUCE, before);
    return rc;
}

int mx_kv_reduce_scatter(mx_kvstore *kv, int worker, mx_comm *c, int member, const void *send, void *recv,
                         size_t count, mx_dtype t)
{
    const mx_comm_count before = mx_comm_counts(c, member, MX_COMM_REDUCE_SCATTER);
    const int rc = mx_comm_reduce_scatter(c, member, send, recv, count, t);
    log_call(kv, worker, c, member, MX_COMM_REDUCE_SCATTER, before);
    return rc;
}

int mx_kv_allgather(mx_kvstore *kv, int worker, mx_comm *c, int member, void *buf, size_t count, mx_dtype t)
{
    const mx_comm_count before = mx_comm_counts(c, member, MX_COMM_ALLGATHER);
    const int rc = mx_comm_allgather(c, member, buf, count, t);
    log_call(kv, worker, c, member, MX_COMM_ALLGATHER, before);
    return rc;
}

/* ---- the step's figures */

/* The cost model's coefficients of one call: a(p) rounds (latencies paid one after another),
 * f(p) S bytes sent, g(p) S bytes summed. Bytes as a ring moves them (nccl-tests' counts):
 * reduce-scatter (p-1)/p S sent and summed, all-gather (p-1)/p S sent, all-reduce both, twice
 * the bytes sent. Rounds as the communicator meets: a ring (mpi, and NCCL's) sends p-1
 * messages in sequence per reduce-scatter or all-gather and 2(p-1) per all-reduce; the threads
 * communicator meets once per call, every member reading the others' buffers at once (its
 * rendezvous wakes the members together: a call on 4 members, in their turns, measured far
 * below p-1 times a call on 2; docs/performance.md, "Choices in the code"). */
static void coefficients(const struct mx_kv_call *k, double x[3])
{
    const double p = k->members, share = (p - 1) / p * k->bytes;
    const int ar = k->verb == MX_COMM_ALLREDUCE;
    x[0] = k->shared ? (p > 1) : (ar ? 2 : 1) * (p - 1);
    x[1] = (ar ? 2 : 1) * share;
    x[2] = k->verb == MX_COMM_ALLGATHER ? 0 : share;
}

/* alpha, beta, gamma from the calls (results/lsq.h). What the calls cannot tell apart is left
 * NaN and its cost falls to what they can: without a reduce-scatter beside an all-gather of
 * equal sizes (dist_allreduce: all-reduces only) gamma is not separable from beta, whose
 * figure then holds beta + gamma/2 per bus byte (the combination an all-reduce costs); with
 * one call size alpha is not separable either, and beta holds the whole time per bus byte. */
static void fit(const double (*x)[3], const double *y, int n, double out[3])
{
    static const int sets[4][MX_LSQ_MAXK] = {{0, 1, 2}, {0, 1}, {1}, {0}};
    static const int sizes[4] = {3, 2, 1, 1};
    mx_lsq_first(&x[0][0], n, 3, y, sets, sizes, 4, out);
}

int mx_kv_comm_figures(mx_kvstore *kv, mx_kv_comm_fig *f)
{
    *f = (mx_kv_comm_fig){0, 0, 0, 0, 0, NAN, NAN, NAN};
    if (!kv->ncalls) return 0;
    const int n = kv->ncalls[0];
    for (int w = 1; w < kv->nworkers; w++)
        if (kv->ncalls[w] != n) return mx_error(MX_ERUNTIME, "kvstore call log: worker %d made %d calls, worker 0 %d",
                                                w, kv->ncalls[w], n);
    if (n == 0) return 0;
    if (n > kv->capcalls) { /* cannot happen with the modes as built; say so rather than guess */
        f->calls = n;
        f->rounds = f->bus_bytes = f->reduce_bytes = f->seconds = NAN;
        return n;
    }
    double (*x)[3] = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    if (!x || !y) {
        free(x);
        free(y);
        return mx_error(MX_ENOMEM, "out of memory for %d calls' figures", n);
    }
    for (int i = 0; i < n; i++) {
        const struct mx_kv_call *k0 = &kv->calls[i];
        double t = k0->seconds - k0->wait;
        for (int w = 1; w < kv->nworkers; w++) {
            const struct mx_kv_call *k = &kv->calls[(size_t)w * kv->capcalls + i];
            if (k->seconds - k->wait < t) t = k->seconds - k->wait;
        }
        coefficients(k0, x[i]);
        y[i] = t;
        f->calls++;
        f->rounds += x[i][0];
        f->bus_bytes += x[i][1];
        f->reduce_bytes += x[i][2];
        f->seconds += t;
    }
    double abg[3];
    fit((const double(*)[3])x, y, n, abg);
    f->alpha = abg[0], f->beta = abg[1], f->gamma = abg[2];
    free(x);
    free(y);
    return n;
}
