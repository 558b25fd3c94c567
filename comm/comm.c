/* The communicator's registry and the checking, timing and counting that every
 * implementation shares, so that comm_<kind>.c holds only how data moves. */
#include "comm.h"
#include "engine/backend/backend.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const mx_comm_ops mx_comm_threads_ops;
#ifdef MXBENCH_HAVE_MPI
extern const mx_comm_ops mx_comm_mpi_ops;
#define BUILTINS {&mx_comm_threads_ops, &mx_comm_mpi_ops}
#define NBUILTINS 2
#else
#define BUILTINS {&mx_comm_threads_ops}
#define NBUILTINS 1
#endif

/* The built-in kinds first, then those registered by the program (mx_comm_register, at
 * start-up, before any thread asks), and the list of their names as mx_comm_kinds gives it. */
static struct {
    pthread_mutex_t lock;
    const mx_comm_ops *ops[MX_COMM_MAX_KINDS];
    int n;
    char names[MX_COMM_MAX_KINDS * 24];
} reg = {PTHREAD_MUTEX_INITIALIZER, BUILTINS, NBUILTINS, ""};

static void names_locked(void)
{
    size_t at = 0;
    for (int i = 0; i < reg.n && at < sizeof reg.names; i++)
        at += (size_t)snprintf(reg.names + at, sizeof reg.names - at, "%s%s", i ? "|" : "", reg.ops[i]->name);
}

const char *mx_comm_kinds(void)
{
    pthread_mutex_lock(&reg.lock);
    if (!reg.names[0]) names_locked();
    pthread_mutex_unlock(&reg.lock);
    return reg.names;
}

const char *mx_comm_kind_for_devices(struct mx_backend *const *be, int n)
{
    const char *kind = "threads";
    pthread_mutex_lock(&reg.lock);
    for (int i = NBUILTINS; i < reg.n; i++)
        if (reg.ops[i]->takes && reg.ops[i]->takes(be, n)) {
            kind = reg.ops[i]->name;
            break;
        }
    pthread_mutex_unlock(&reg.lock);
    return kind;
}

int mx_comm_register(const mx_comm_ops *ops)
{
    if (!ops || !ops->name || !ops->create || !ops->destroy || !ops->allreduce || !ops->reduce_scatter ||
        !ops->allgather || !ops->broadcast || !ops->send || !ops->recv || !ops->barrier)
        return mx_error(MX_EINVAL, "communicator '%s': its table lacks a function (every verb, create and destroy "
                        "are required)", ops && ops->name ? ops->name : "(null)");
    int rc = MX_OK;
    pthread_mutex_lock(&reg.lock);
    for (int i = 0; i < reg.n && rc == MX_OK; i++)
        if (strcmp(reg.ops[i]->name, ops->name) == 0)
            rc = mx_error(MX_EINVAL, "communicator '%s' is already registered", ops->name);
    if (rc == MX_OK && reg.n == MX_COMM_MAX_KINDS)
        rc = mx_error(MX_EINVAL, "communicator '%s': the registry holds %d kinds", ops->name, MX_COMM_MAX_KINDS);
    if (rc == MX_OK) {
        reg.ops[reg.n++] = ops;
        names_locked();
    }
    pthread_mutex_unlock(&reg.lock);
    return rc;
}

/* Each member's row of counts padded to 192 bytes (3 cache lines, 64-byte aligned), so
 * members counting their calls at once do not share a line. */
#define ROW 8
_Static_assert(MX_COMM_NVERBS <= ROW, "a member's counts must fit its padded row");

int mx_comm_create(mx_comm **out, const char *kind, int n)
{
    *out = NULL;
    const mx_comm_ops *ops = NULL;
    pthread_mutex_lock(&reg.lock);
    for (int i = 0; i < reg.n; i++)
        if (kind && strcmp(reg.ops[i]->name, kind) == 0) ops = reg.ops[i];
    pthread_mutex_unlock(&reg.lock);
    if (!ops)
        return mx_error(MX_EINVAL, "communicator '%s' is not available (available: %s)", kind ? kind : "(null)",
                        mx_comm_kinds());
    if (n < 1 || n > MX_COMM_MAX)
        return mx_error(MX_EINVAL, "communicator of %d members: accepted 1..%d", n, MX_COMM_MAX);
    mx_comm *c = calloc(1, sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory creating a communicator");
    c->ops = ops;
    c->n = n;
    c->nlocal = n; /* an implementation over processes narrows this in create */
    const size_t bytes = (size_t)n * ROW * sizeof *c->counts;
    c->counts = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (c->counts) memset(c->counts, 0, bytes);
    c->arrival = calloc((size_t)n, sizeof *c->arrival);
    if (!c->counts || !c->arrival) {
        free(c->counts);
        free(c->arrival);
        free(c);
        return mx_error(MX_ENOMEM, "out of memory creating a communicator");
    }
    int rc = ops->create(c);
    if (rc < 0) {
        free(c->counts);
        free(c->arrival);
        free(c);
        return rc;
    }
    *out = c;
    return MX_OK;
}

int mx_comm_set_devices(mx_comm *c, mx_backend **be)
{
    if (!c || !be) return MX_OK;
    if (c->ops->set_devices) {
        c->be = be;
        return c->ops->set_devices(c);
    }
    if (strcmp(c->ops->name, "threads") != 0) return MX_OK;
    for (int m = 0; m < c->n; m++)
        if (!mx_backend_host_memory(be[m]->ops)) c->be = be;
    return MX_OK;
}

void mx_comm_destroy(mx_comm *c)
{
    if (!c) return;
    c->ops->destroy(c);
    free(c->counts);
    free(c->arrival);
    free(c);
}

void mx_comm_shard(size_t count, int m, int n, size_t *lo, size_t *hi)
{
    /* Boundaries rounded to 16 elements so shards start on cache lines. */
    size_t per = (count + (size_t)n - 1) / (size_t)n;
    per = (per + 15) / 16 * 16;
    *lo = per * (size_t)m < count ? per * (size_t)m : count;
    *hi = per * (size_t)(m + 1) < count ? per * (size_t)(m + 1) : count;
}

/* ---- argument checks: a bad member would leave the others waiting forever, so it is
 * refused before any rendezvous */

static const char *const verb_names[MX_COMM_NVERBS] = {"allreduce", "reduce_scatter", "allgather", "broadcast",
                                                      "send",      "recv",           "barrier"};

const char *mx_comm_verb_name(mx_comm_verb v) { return (unsigned)v < MX_COMM_NVERBS ? verb_names[v] : "?"; }

static int check(const mx_comm *c, mx_comm_verb v, int member, mx_dtype t, int other, const char *other_name)
{
    if (member < c->local_first || member >= c->local_first + c->nlocal)
        return mx_error(MX_EINVAL, "comm %s: member %d is not one of this process's members %d..%d", verb_names[v],
                        member, c->local_first, c->local_first + c->nlocal - 1);
    if ((unsigned)t >= MX_NDTYPES)
        return mx_error(MX_EINVAL, "comm %s: dtype %d unknown (accepted: f32, f16, bf16)", verb_names[v], (int)t);
    if (other_name && (other < 0 || other >= c->n))
        return mx_error(MX_EINVAL, "comm %s: %s %d out of range 0..%d", verb_names[v], other_name, other, c->n - 1);
    if (other_name && v != MX_COMM_BROADCAST && other == member)
        return mx_error(MX_EINVAL, "comm %s: member %d names itself as peer (accepted: another member)", verb_names[v],
                        member);
    return MX_OK;
}

/* Counts the call and, while the timeline records, puts it on the calling thread's track
 * (set by whoever owns the thread: a device thread, a kvstore worker), so that the comm
 * needs to know nothing of strategies. */
static void count_call(mx_comm *c, int member, mx_comm_verb v, size_t count, mx_dtype t, double t0)
{
    mx_comm_count *k = &c->counts[(size_t)member * ROW + v];
    const double t1 = mx_now(), bytes = (double)count * (double)mx_dtype_size(t);
    k->calls++;
    k->bytes += bytes;
    k->seconds += t1 - t0;
    if (mx_trace_on()) mx_trace_event_bytes(mx_trace_track(), "comm", verb_names[v], -1, t0, t1, bytes);
    k->wait += c->arrival[member];
    c->arrival[member] = 0;
}

int mx_comm_allreduce(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t)
{
    MX_TRY(check(c, MX_COMM_ALLREDUCE, member, t, 0, NULL));
    const double t0 = mx_now();
    int rc = c->ops->allreduce(c, member, send, recv, count, t);
    count_call(c, member, MX_COMM_ALLREDUCE, count, t, t0);
    return rc;
}

int mx_comm_reduce_scatter(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t)
{
    MX_TRY(check(c, MX_COMM_REDUCE_SCATTER, member, t, 0, NULL));
    const double t0 = mx_now();
    int rc = c->ops->reduce_scatter(c, member, send, recv, count, t);
    count_call(c, member, MX_COMM_REDUCE_SCATTER, count, t, t0);
    return rc;
}

int mx_comm_allgather(mx_comm *c, int member, void *buf, size_t count, mx_dtype t)
{
    MX_TRY(check(c, MX_COMM_ALLGATHER, member, t, 0, NULL));
    const double t0 = mx_now();
    int rc = c->ops->allgather(c, member, buf, count, t);
    count_call(c, member, MX_COMM_ALLGATHER, count, t, t0);
    return rc;
}

int mx_comm_broadcast(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int root)
{
    MX_TRY(check(c, MX_COMM_BROADCAST, member, t, root, "root"));
    const double t0 = mx_now();
    int rc = c->ops->broadcast(c, member, buf, count, t, root);
    count_call(c, member, MX_COMM_BROADCAST, count, t, t0);
    return rc;
}

int mx_comm_send(mx_comm *c, int member, const void *buf, size_t count, mx_dtype t, int peer)
{
    MX_TRY(check(c, MX_COMM_SEND, member, t, peer, "peer"));
    const double t0 = mx_now();
    int rc = c->ops->send(c, member, buf, count, t, peer);
    count_call(c, member, MX_COMM_SEND, count, t, t0);
    return rc;
}

int mx_comm_recv(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int peer)
{
    MX_TRY(check(c, MX_COMM_RECV, member, t, peer, "peer"));
    const double t0 = mx_now();
    int rc = c->ops->recv(c, member, buf, count, t, peer);
    count_call(c, member, MX_COMM_RECV, count, t, t0);
    return rc;
}

int mx_comm_barrier(mx_comm *c, int member)
{
    MX_TRY(check(c, MX_COMM_BARRIER, member, MX_F32, 0, NULL));
    const double t0 = mx_now();
    int rc = c->ops->barrier(c, member);
    count_call(c, member, MX_COMM_BARRIER, 0, MX_F32, t0);
    return rc;
}

/* ---- statistics */

mx_comm_count mx_comm_counts(const mx_comm *c, int member, mx_comm_verb v)
{
    if (member < 0 || member >= c->n || (unsigned)v >= MX_COMM_NVERBS) return (mx_comm_count){0, 0, 0};
    return c->counts[(size_t)member * ROW + v];
}

void mx_comm_counts_reset(mx_comm *c, int member)
{
    if (member >= 0 && member < c->n) memset(&c->counts[(size_t)member * ROW], 0, sizeof *c->counts * MX_COMM_NVERBS);
}

double mx_comm_busbw_factor(mx_comm_verb v, int n)
{
    switch (v) {
    case MX_COMM_ALLREDUCE: return 2.0 * (n - 1) / n;
    case MX_COMM_REDUCE_SCATTER:
    case MX_COMM_ALLGATHER: return (double)(n - 1) / n;
    case MX_COMM_BROADCAST:
    case MX_COMM_SEND:
    case MX_COMM_RECV: return 1.0;
    default: return 0.0;
    }
}

double mx_comm_algbw(const mx_comm_count *k) { return k->seconds > 0 ? k->bytes / k->seconds : 0.0; }

double mx_comm_busbw(const mx_comm_count *k, mx_comm_verb v, int n)
{
    return mx_comm_algbw(k) * mx_comm_busbw_factor(v, n);
}
