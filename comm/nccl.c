/* Communicator `nccl`, one process driving several GPUs: member m is the GPU of its cuda
 * backend c->be[m] (mx_comm_set_devices, which opens the NCCL communicators with
 * ncclCommInitAll, since only then are the GPUs known), and each verb is the NCCL call of
 * the same name queued on that backend's stream, after the member's own queued work and
 * before its next. A verb returns once queued ("done" means done on the stream), so only
 * barrier waits on the host; it polls the stream and NCCL's asynchronous error, and after
 * the timeout aborts the member's communicator (ncclCommAbort) rather than hang. NCCL
 * cannot check that members made the same call, so the first member that fails or times
 * out marks the communicator broken: the others stop at their next wait, abort theirs,
 * and every later verb fails with the first reason. The counts (mx_comm_counts) see only the
 * queueing, so the bandwidths computed from them mean nothing for this kind until its calls
 * are timed with events on the stream.
 * Kind `nccl_mpi` (where the build has MPI): one member per rank of an MPI job (member ==
 * rank in MPI_COMM_WORLD, as `mpi`), across machines too: rank 0's ncclUniqueId reaches every
 * rank over MPI_Bcast, and each opens its communicator on its own GPU with ncclCommInitRank;
 * the verbs are the same. Two ranks on one GPU are named before NCCL refuses them ("Duplicate
 * GPU detected"): every rank's host and GPU are gathered first. A rank that dies before or
 * during the start ends the job through its launcher (mpirun ends the others; the sweep's srun
 * steps run with --kill-on-bad-exit); after it, the barrier's timeout aborts as above. */
#include "comm_nccl.h"
#include "engine/backend/backend.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"
#include "base/timer.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    ncclComm_t *comms;    /* [nlocal]; NULL once aborted (ncclCommAbort frees it) */
    int *gpus;            /* [nlocal] */
    float **scratch;      /* [nlocal] one zero float on each GPU: the barrier's all-reduce */
    int started;          /* ncclCommInitAll done */
    double timeout;       /* seconds a wait lets the stream run */
    _Atomic int broken;   /* a member failed or timed out: see why */
    pthread_mutex_t lock; /* guards why, written once */
    char why[512];
} nccl_state;

static int local_of(const mx_comm *c, int m) { return m - c->local_first; }

static ncclDataType_t nccl_type(mx_dtype t)
{
    switch (t) {
    case MX_F16: return ncclFloat16;
    case MX_BF16: return ncclBfloat16;
    default: return ncclFloat32;
    }
}

/* The first reason wins: later failures are mostly consequences of it. */
static void mark_broken(nccl_state *S, const char *why)
{
    pthread_mutex_lock(&S->lock);
    if (!atomic_load(&S->broken)) {
        snprintf(S->why, sizeof S->why, "%s", why);
        atomic_store(&S->broken, 1);
    }
    pthread_mutex_unlock(&S->lock);
}

static int broken_error(nccl_state *S, int m, const char *verb)
{
    char why[sizeof S->why];
    pthread_mutex_lock(&S->lock);
    snprintf(why, sizeof why, "%s", S->why);
    pthread_mutex_unlock(&S->lock);
    return mx_error(MX_ERUNTIME, "comm nccl %s on member %d: the communicator was stopped: %s", verb, m, why);
}

/* A failed NCCL status as the comm's error, with the call, NCCL's name for the status and
 * its last message; the communicator is broken from then on (the other members may already
 * be queued on a call this member never made). */
static int nccl_failed(mx_comm *c, int m, ncclResult_t r, const char *call)
{
    if (r == ncclSuccess || r == ncclInProgress) return MX_OK;
    nccl_state *S = c->impl;
    const int l = local_of(c, m);
    const char *last = ncclGetLastError(S->comms ? S->comms[l] : NULL);
    const int rc = mx_error(MX_ERUNTIME, "comm nccl: %s failed on member %d (GPU %d): %s%s%s", call, m, S->gpus[l],
                            ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
    mark_broken(S, mx_last_error());
    return rc;
}

static int cuda_failed(mx_comm *c, int m, cudaError_t e, const char *call)
{
    if (e == cudaSuccess) return MX_OK;
    nccl_state *S = c->impl;
    const int rc = mx_error(MX_ERUNTIME, "comm nccl: %s failed on member %d (GPU %d): %s (%s)", call, m,
                            S->gpus[local_of(c, m)], cudaGetErrorString(e), cudaGetErrorName(e));
    mark_broken(S, mx_last_error());
    return rc;
}

/* ---- setup */

static int nccl_create(mx_comm *c)
{
    double timeout = MX_COMM_NCCL_TIMEOUT_S;
    const char *env = getenv("MXBENCH_NCCL_TIMEOUT");
    if (env && *env) {
        char *end = NULL;
        timeout = strtod(env, &end);
        if (*end || !isfinite(timeout) || timeout <= 0)
            return mx_error(MX_EINVAL, "MXBENCH_NCCL_TIMEOUT='%s': accepted a number of seconds > 0", env);
    }
    nccl_state *S = calloc(1, sizeof *S);
    if (!S) return mx_error(MX_ENOMEM, "out of memory creating an nccl communicator");
    S->comms = calloc((size_t)c->nlocal, sizeof *S->comms);
    S->gpus = calloc((size_t)c->nlocal, sizeof *S->gpus);
    S->scratch = calloc((size_t)c->nlocal, sizeof *S->scratch);
    if (!S->comms || !S->gpus || !S->scratch) {
        free(S->comms), free(S->gpus), free(S->scratch), free(S);
        return mx_error(MX_ENOMEM, "out of memory creating an nccl communicator of %d members", c->n);
    }
    S->timeout = timeout;
    pthread_mutex_init(&S->lock, NULL);
    c->impl = S;
    return MX_OK;
}

/* Each local member's one zero float for the barrier. */
static int scratch_floats(mx_comm *c)
{
    nccl_state *S = c->impl;
    for (int l = 0; l < c->nlocal; l++) {
        const int m = c->local_first + l;
        MX_TRY(cuda_failed(c, m, cudaSetDevice(S->gpus[l]), "cudaSetDevice"));
        MX_TRY(cuda_failed(c, m, cudaMalloc((void **)&S->scratch[l], sizeof(float)), "cudaMalloc"));
        MX_TRY(cuda_failed(c, m, cudaMemset(S->scratch[l], 0, sizeof(float)), "cudaMemset"));
    }
    return MX_OK;
}

/* Kind nccl serves members that are cuda backends, each on a GPU of its own. */
static int nccl_takes(mx_backend *const *be, int n)
{
    int gpus[MX_COMM_MAX];
    if (n < 1 || n > MX_COMM_MAX) return 0;
    for (int m = 0; m < n; m++) {
        gpus[m] = mx_cuda_backend_gpu(be[m]);
        if (gpus[m] < 0) return 0;
        for (int j = 0; j < m; j++)
            if (gpus[j] == gpus[m]) return 0;
    }
    return 1;
}

/* Opens the NCCL communicators once each member's GPU is known. One GPU per member: NCCL
 * refuses two ranks on one GPU, so logical devices sharing one (--oversubscribe) are named
 * here rather than left to NCCL's message. */
static int nccl_start(mx_comm *c)
{
    nccl_state *S = c->impl;
    if (S->started)
        return mx_error(MX_EINVAL, "comm nccl: the members' devices are already set (once per communicator)");
    if (c->nlocal != c->n) /* mx_comm_create makes every member local for this kind */
        return mx_error(MX_EINVAL, "comm nccl: members %d..%d of %d in this process: across processes, kind "
                        "nccl_mpi (one rank a member)", c->local_first, c->local_first + c->nlocal - 1, c->n);
    for (int m = 0; m < c->n; m++) {
        const mx_backend *be = c->be[m];
        S->gpus[m] = mx_cuda_backend_gpu(be);
        if (S->gpus[m] < 0)
            return mx_error(MX_EINVAL, "comm nccl: member %d's device is a '%s' backend, not an open cuda one: NCCL "
                            "moves GPU memory only (use the threads communicator)",
                            m, be && be->ops && be->ops->name ? be->ops->name : "(null)");
        for (int j = 0; j < m; j++)
            if (S->gpus[j] == S->gpus[m])
                return mx_error(MX_EINVAL, "comm nccl: members %d and %d are both on GPU %d (logical devices sharing a "
                                "GPU): NCCL takes one GPU per member; the threads communicator serves shared GPUs",
                                j, m, S->gpus[m]);
    }
    const ncclResult_t r = ncclCommInitAll(S->comms, c->n, S->gpus);
    if (r != ncclSuccess) {
        memset(S->comms, 0, sizeof *S->comms * (size_t)c->n);
        const char *last = ncclGetLastError(NULL);
        return mx_error(MX_ERUNTIME, "comm nccl: ncclCommInitAll over %d GPUs (first %d) failed: %s%s%s", c->n,
                        S->gpus[0], ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
    }
    S->started = 1; /* from here destroy releases the communicators */
    return scratch_floats(c);
}

static void nccl_destroy(mx_comm *c)
{
    nccl_state *S = c->impl;
    if (!S) return;
    for (int l = 0; S->started && l < c->nlocal; l++) {
        cudaSetDevice(S->gpus[l]);
        if (S->scratch[l]) cudaFree(S->scratch[l]);
        if (!S->comms[l]) continue;
        /* a broken communicator may still have kernels waiting for a member that never came:
         * ncclCommDestroy would wait for them, ncclCommAbort stops them */
        if (atomic_load(&S->broken)) ncclCommAbort(S->comms[l]);
        else ncclCommDestroy(S->comms[l]);
    }
    pthread_mutex_destroy(&S->lock);
    free(S->comms), free(S->gpus), free(S->scratch), free(S);
    c->impl = NULL;
}

/* ---- the calls */

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
} lane;

static void abort_member(mx_comm *c, int m)
{
    nccl_state *S = c->impl;
    const int l = local_of(c, m);
    if (S->comms[l]) ncclCommAbort(S->comms[l]);
    S->comms[l] = NULL;
}

/* Member m's NCCL communicator and stream, its GPU made current (a kvstore's comm worker
 * may never have bound to it). On a broken communicator the member aborts its own NCCL
 * communicator first: its stream may hold a call a failed member never joined, which would
 * otherwise hang the backend's next sync. */
static int enter(mx_comm *c, int m, const char *verb, lane *L)
{
    nccl_state *S = c->impl;
    if (!S->started)
        return mx_error(MX_EINVAL, "comm nccl %s: the communicator has not started: give it each member's cuda "
                        "backend first (mx_comm_set_devices)", verb);
    if (atomic_load(&S->broken)) {
        abort_member(c, m);
        return broken_error(S, m, verb);
    }
    const int l = local_of(c, m);
    MX_TRY(cuda_failed(c, m, cudaSetDevice(S->gpus[l]), "cudaSetDevice"));
    L->comm = S->comms[l];
    L->stream = mx_cuda_backend_stream(c->be[m]);
    return MX_OK;
}

/* An error NCCL found while the GPUs ran (a peer gone, a network failure), without waiting. */
static int async_check(mx_comm *c, int m, const char *call)
{
    nccl_state *S = c->impl;
    const int l = local_of(c, m);
    if (!S->comms[l]) return broken_error(S, m, call);
    ncclResult_t a = ncclSuccess;
    MX_TRY(nccl_failed(c, m, ncclCommGetAsyncError(S->comms[l], &a), "ncclCommGetAsyncError"));
    char what[96];
    snprintf(what, sizeof what, "%s (an asynchronous error)", call);
    return nccl_failed(c, m, a, what);
}

static int queued(mx_comm *c, int m, ncclResult_t r, const char *call)
{
    MX_TRY(nccl_failed(c, m, r, call));
    return async_check(c, m, call);
}

/* Waits for member m's stream: polled (a blocking synchronize could not be interrupted), with
 * NCCL's asynchronous error and the other members' failures looked at between polls, and the
 * member's communicator aborted after the timeout. */
static int wait_stream(mx_comm *c, int m, const char *call, cudaStream_t stream)
{
    nccl_state *S = c->impl;
    const double t0 = mx_now();
    long nap_ns = 20000;
    for (;;) {
        const cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess) return async_check(c, m, call);
        int rc = e == cudaErrorNotReady ? async_check(c, m, call) : cuda_failed(c, m, e, "cudaStreamQuery");
        if (rc < 0) {
            abort_member(c, m);
            return rc;
        }
        if (atomic_load(&S->broken)) {
            abort_member(c, m);
            return broken_error(S, m, call);
        }
        const double waited = mx_now() - t0;
        if (waited > S->timeout) {
            mx_error(MX_ERUNTIME, "comm nccl %s: member %d (GPU %d) waited %.0f s (MXBENCH_NCCL_TIMEOUT) for its "
                     "queued calls: a member did not make the same call; its communicator is aborted (ncclCommAbort)",
                     call, m, S->gpus[local_of(c, m)], waited);
            mark_broken(S, mx_last_error());
            abort_member(c, m);
            return MX_ERUNTIME;
        }
        /* from 20 us up to 1 ms: quick when the GPUs are about done, cheap when a member is late */
        nanosleep(&(struct timespec){0, nap_ns}, NULL);
        nap_ns = nap_ns < 1000000 ? nap_ns * 2 : 1000000;
    }
}

/* The shard size of mx_comm_shard's even split, or 0 when the split is uneven (the last
 * shards shorter or empty) and NCCL's equal-shard calls do not fit. */
static size_t even_shard(size_t count, int n)
{
    size_t lo, hi;
    mx_comm_shard(count, 0, n, &lo, &hi);
    return hi * (size_t)n == count ? hi : 0;
}

static int nccl_allreduce(mx_comm *c, int m, const void *send, void *recv, size_t count, mx_dtype t)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, "allreduce", &L));
    if (!count) return MX_OK;
    return queued(c, m, ncclAllReduce(send, recv, count, nccl_type(t), ncclSum, L.comm, L.stream), "ncclAllReduce");
}

/* Uneven splits: one ncclReduce (root j) or ncclBroadcast (root j) per non-empty shard j, in
 * one group, so that NCCL runs them as one launch; every member issues the same list. */
static int grouped(mx_comm *c, int m, const lane *L, int reduce, const void *send, void *recv, size_t count,
                   mx_dtype t)
{
    const size_t sz = mx_dtype_size(t);
    const char *call = reduce ? "ncclReduce" : "ncclBroadcast";
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return nccl_failed(c, m, r, "ncclGroupStart");
    for (int j = 0; j < c->n && r == ncclSuccess; j++) {
        size_t lo, hi;
        mx_comm_shard(count, j, c->n, &lo, &hi);
        if (hi == lo) continue;
        const char *s = (const char *)send + lo * sz;
        char *d = (char *)recv + lo * sz;
        r = reduce ? ncclReduce(s, d, hi - lo, nccl_type(t), ncclSum, j, L->comm, L->stream)
                   : ncclBroadcast(s, d, hi - lo, nccl_type(t), j, L->comm, L->stream);
    }
    const ncclResult_t end = ncclGroupEnd(); /* closed even after a failed call, or the thread's group stays open */
    MX_TRY(nccl_failed(c, m, r, call));
    return queued(c, m, end, "ncclGroupEnd");
}

static int nccl_reduce_scatter(mx_comm *c, int m, const void *send, void *recv, size_t count, mx_dtype t)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, "reduce_scatter", &L));
    if (!count) return MX_OK;
    const size_t per = even_shard(count, c->n);
    if (!per) return grouped(c, m, &L, 1, send, recv, count, t);
    /* recv + m x per is where NCCL's in-place form wants it when send == recv */
    void *mine = (char *)recv + (size_t)m * per * mx_dtype_size(t);
    return queued(c, m, ncclReduceScatter(send, mine, per, nccl_type(t), ncclSum, L.comm, L.stream),
                  "ncclReduceScatter");
}

static int nccl_allgather(mx_comm *c, int m, void *buf, size_t count, mx_dtype t)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, "allgather", &L));
    if (!count) return MX_OK;
    const size_t per = even_shard(count, c->n);
    if (!per) return grouped(c, m, &L, 0, buf, buf, count, t);
    const void *mine = (const char *)buf + (size_t)m * per * mx_dtype_size(t);
    return queued(c, m, ncclAllGather(mine, buf, per, nccl_type(t), L.comm, L.stream), "ncclAllGather");
}

static int nccl_broadcast(mx_comm *c, int m, void *buf, size_t count, mx_dtype t, int root)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, "broadcast", &L));
    if (!count) return MX_OK;
    return queued(c, m, ncclBroadcast(buf, buf, count, nccl_type(t), root, L.comm, L.stream), "ncclBroadcast");
}

/* Send and recv each in a group of one: NCCL connects the pair at the group's end, and a
 * caller batching several (a pipeline's exchanges) would widen the group here. One of from
 * (a send) and to (a recv) is NULL. */
static int p2p(mx_comm *c, int m, const void *from, void *to, size_t count, mx_dtype t, int peer)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, to ? "recv" : "send", &L));
    if (!count) return MX_OK;
    const char *call = to ? "ncclRecv" : "ncclSend";
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return nccl_failed(c, m, r, "ncclGroupStart");
    r = to ? ncclRecv(to, count, nccl_type(t), peer, L.comm, L.stream)
           : ncclSend(from, count, nccl_type(t), peer, L.comm, L.stream);
    const ncclResult_t end = ncclGroupEnd();
    MX_TRY(nccl_failed(c, m, r, call));
    return queued(c, m, end, call);
}

static int nccl_send(mx_comm *c, int m, const void *buf, size_t count, mx_dtype t, int peer)
{
    return p2p(c, m, buf, NULL, count, t, peer);
}

static int nccl_recv(mx_comm *c, int m, void *buf, size_t count, mx_dtype t, int peer)
{
    return p2p(c, m, NULL, buf, count, t, peer);
}

/* A one-float all-reduce that every member's stream must pass, then waited for: all queued
 * work of every member is done when it returns. */
static int nccl_barrier(mx_comm *c, int m)
{
    lane L = {NULL, NULL};
    MX_TRY(enter(c, m, "barrier", &L));
    float *one = ((nccl_state *)c->impl)->scratch[local_of(c, m)];
    MX_TRY(queued(c, m, ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, L.comm, L.stream), "ncclAllReduce"));
    return wait_stream(c, m, "barrier", L.stream);
}

const mx_comm_ops mx_comm_nccl_ops = {
    .name = "nccl",
    .create = nccl_create,
    .destroy = nccl_destroy,
    .allreduce = nccl_allreduce,
    .reduce_scatter = nccl_reduce_scatter,
    .allgather = nccl_allgather,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .barrier = nccl_barrier,
    .set_devices = nccl_start,
    .takes = nccl_takes,
};

#ifdef MXBENCH_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

/* ---- nccl_mpi: one member per rank of an MPI job */

static int ranks_create(mx_comm *c)
{
    int init = 0, size = 0, rank = 0;
    MPI_Initialized(&init);
    if (!init)
        return mx_error(MX_EINVAL, "comm nccl_mpi: MPI is not initialised: every rank of an MPI job (mpirun, srun) "
                        "makes it once MPI is");
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != c->n)
        return mx_error(MX_EINVAL, "comm nccl_mpi: asked for %d members but the job has %d ranks", c->n, size);
    c->local_first = rank;
    c->nlocal = 1;
    return nccl_create(c);
}

/* Where each rank runs: its host's name and its GPU, gathered so that two ranks on one GPU are
 * named on every rank (each takes the same decision). */
typedef struct {
    char host[64];
    int gpu;
} placement;

static int check_placement(mx_comm *c, int gpu)
{
    placement mine = {.gpu = gpu}, *all = calloc((size_t)c->n, sizeof *all);
    if (!all) return mx_error(MX_ENOMEM, "comm nccl_mpi: out of memory for %d ranks' placements", c->n);
    gethostname(mine.host, sizeof mine.host - 1);
    int rc = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS
                 ? MX_OK
                 : mx_error(MX_ERUNTIME, "comm nccl_mpi: MPI_Allgather of the ranks' GPUs failed");
    for (int i = 0; i < c->n && rc == MX_OK; i++)
        for (int j = 0; j < i && rc == MX_OK; j++)
            if (all[i].gpu == all[j].gpu && strcmp(all[i].host, all[j].host) == 0)
                rc = mx_error(MX_EINVAL, "comm nccl_mpi: ranks %d and %d are both on GPU %d of %s: NCCL takes one "
                              "GPU per rank (the mpi communicator serves ranks sharing a GPU)",
                              j, i, all[i].gpu, all[i].host);
    free(all);
    return rc;
}

static int ranks_start(mx_comm *c)
{
    nccl_state *S = c->impl;
    const int me = c->local_first;
    if (S->started)
        return mx_error(MX_EINVAL, "comm nccl_mpi: the members' devices are already set (once per communicator)");
    S->gpus[0] = mx_cuda_backend_gpu(c->be[me]);
    if (S->gpus[0] < 0)
        return mx_error(MX_EINVAL, "comm nccl_mpi: rank %d's device is not an open cuda backend: NCCL moves GPU "
                        "memory only (use the mpi communicator)", me);
    MX_TRY(check_placement(c, S->gpus[0]));
    /* rank 0's id, or word that it has none: every rank learns the same */
    struct {
        int ok;
        ncclUniqueId id;
    } boot = {0};
    if (me == 0) boot.ok = ncclGetUniqueId(&boot.id) == ncclSuccess;
    if (MPI_Bcast(&boot, sizeof boot, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return mx_error(MX_ERUNTIME, "comm nccl_mpi: MPI_Bcast of rank 0's NCCL id failed on rank %d", me);
    if (!boot.ok) {
        const char *last = ncclGetLastError(NULL);
        return mx_error(MX_ERUNTIME, "comm nccl_mpi: ncclGetUniqueId failed on rank 0%s%s", last && *last ? ": " : "",
                        me == 0 && last ? last : "");
    }
    MX_TRY(cuda_failed(c, me, cudaSetDevice(S->gpus[0]), "cudaSetDevice"));
    const ncclResult_t r = ncclCommInitRank(&S->comms[0], c->n, boot.id, me);
    if (r != ncclSuccess) {
        S->comms[0] = NULL;
        const char *last = ncclGetLastError(NULL);
        return mx_error(MX_ERUNTIME, "comm nccl_mpi: ncclCommInitRank on rank %d of %d (GPU %d) failed: %s%s%s", me,
                        c->n, S->gpus[0], ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
    }
    S->started = 1;
    return scratch_floats(c);
}

static const mx_comm_ops nccl_mpi_ops = {
    .name = "nccl_mpi",
    .create = ranks_create,
    .destroy = nccl_destroy,
    .allreduce = nccl_allreduce,
    .reduce_scatter = nccl_reduce_scatter,
    .allgather = nccl_allgather,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .barrier = nccl_barrier,
    .set_devices = ranks_start,
};

const mx_comm_ops *mx_comm_nccl_mpi_ops(void) { return &nccl_mpi_ops; }
#else
const mx_comm_ops *mx_comm_nccl_mpi_ops(void) { return NULL; }
#endif
