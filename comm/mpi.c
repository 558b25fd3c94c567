/* Communicator `mpi`: one member per process (member == rank in MPI_COMM_WORLD), buffers in
 * host memory. The sums are made so that they give the bits `threads` gives: a reduce-scatter
 * is an all-to-all that brings member m every member's shard m (MPI_Alltoallv), which m then
 * sums in f32 in member order 0..n-1; an all-reduce is that reduce-scatter followed by an
 * all-gather (MPI_Allgatherv, in place). MPI's own reductions would sum in an order of its
 * algorithm's choosing. The bytes each member sends are those of a ring reduce-scatter,
 * (n-1)/n of the buffer.
 *
 * Every call first agrees on what it is (verb, count, dtype, root) with one small
 * all-reduce, so a member that calls something else fails on every member instead of
 * hanging in mismatched collectives; and MPI reports errors to us (MPI_ERRORS_RETURN), which
 * become messages naming the verb and MPI's own text. The agreement, a barrier and
 * point-to-point calls are MPI's nonblocking forms waited for politely (comm/mpi_wait.h): that is
 * where a member waits for late ones, and it must not spin on the core they compute on. Once
 * every member agreed, the data moves through MPI's blocking collectives: Open MPI's
 * nonblocking ones (libnbc) moved 0.5-1 MiB at 0.5-0.75 of MPI_Allreduce's bandwidth here. */
#include "comm.h"
#include "mpi_wait.h"
#include "base/status.h"

#include <mpi.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    MPI_Comm world;
    int we_initialised;
    int *counts, *displs;   /* [n] element counts and offsets of the shards, per call */
    int *scounts, *sdispls; /* [n] all-to-all send counts/offsets (bytes) */
    int *rcounts, *rdispls; /* [n] all-to-all receive counts/offsets (bytes) */
    unsigned char *stage;   /* n shards received, before they are summed */
    size_t stage_bytes;
} mpi_comm;

static int mpi_fail(const char *verb, int code)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, text, &len);
    return mx_error(MX_ERUNTIME, "comm mpi %s: %s", verb, text);
}

/* MPI counts are ints: a buffer beyond 2^31 - 1 bytes is refused rather than truncated. */
static int fits(const char *verb, size_t count, mx_dtype t)
{
    if (count * mx_dtype_size(t) > (size_t)INT32_MAX)
        return mx_error(MX_EINVAL, "comm mpi %s: %zu %s elements exceed MPI's 2^31-1 bytes per call", verb, count,
                        mx_dtype_name(t));
    return MX_OK;
}

static int mpi_create(mx_comm *c)
{
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    mpi_comm *M = calloc(1, sizeof *M);
    if (!M) return mx_error(MX_ENOMEM, "out of memory creating an mpi communicator");
    if (!init) {
        /* MULTIPLE: a process's comm worker and its device threads may both call MPI */
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            free(M);
            return mx_error(MX_ERUNTIME, "comm mpi: MPI_Init_thread failed (is this process started by mpirun?)");
        }
        M->we_initialised = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    int size = 0, rank = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &M->world);
    MPI_Comm_set_errhandler(M->world, MPI_ERRORS_RETURN);
    MPI_Comm_size(M->world, &size);
    MPI_Comm_rank(M->world, &rank);
    int rc = MX_OK;
    if (provided < MPI_THREAD_SERIALIZED)
        rc = mx_error(MX_EUNSUPPORTED, "comm mpi: this MPI gives thread level %d; accepted: serialized or multiple",
                      provided);
    else if (size != c->n)
        rc = mx_error(MX_EINVAL, "comm mpi: asked for %d members but %d processes were started (mpirun -np %d)", c->n,
                      size, c->n);
    const size_t n = (size_t)size;
    if (rc == MX_OK) {
        M->counts = calloc(n, sizeof(int)), M->displs = calloc(n, sizeof(int));
        M->scounts = calloc(n, sizeof(int)), M->sdispls = calloc(n, sizeof(int));
        M->rcounts = calloc(n, sizeof(int)), M->rdispls = calloc(n, sizeof(int));
        if (!M->counts || !M->displs || !M->scounts || !M->sdispls || !M->rcounts || !M->rdispls)
            rc = mx_error(MX_ENOMEM, "out of memory creating an mpi communicator of %d members", size);
    }
    if (rc != MX_OK) {
        /* mx_comm_create frees c but does not call destroy on a failed create */
        free(M->counts), free(M->displs), free(M->scounts), free(M->sdispls), free(M->rcounts), free(M->rdispls);
        MPI_Comm_free(&M->world);
        free(M);
        return rc;
    }
    c->impl = M;
    c->local_first = rank;
    c->nlocal = 1;
    return MX_OK;
}

static void mpi_destroy(mx_comm *c)
{
    mpi_comm *M = c->impl;
    if (!M) return;
    MPI_Comm_free(&M->world);
    free(M->counts), free(M->displs), free(M->scounts), free(M->sdispls), free(M->rcounts), free(M->rdispls);
    free(M->stage);
    if (M->we_initialised) MPI_Finalize();
    free(M);
}

/* Every member's (verb, count, dtype, root) must be the same: max and -min of each agree. */
static int agree(mx_comm *c, mx_comm_verb v, size_t count, mx_dtype t, int root)
{
    mpi_comm *M = c->impl;
    const long long mine[4] = {v, (long long)count, t, root};
    long long both[8], got[8];
    for (int i = 0; i < 4; i++) both[i] = mine[i], both[4 + i] = -mine[i];
    MPI_Request r;
    const double t0 = MPI_Wtime();
    int e = MPI_Iallreduce(both, got, 8, MPI_LONG_LONG, MPI_MAX, M->world, &r);
    if (e == MPI_SUCCESS) e = mx_mpi_wait(&r);
    c->arrival[c->local_first] = MPI_Wtime() - t0; /* every member is here once it completes */
    if (e != MPI_SUCCESS) return mpi_fail(mx_comm_verb_name(v), e);
    for (int i = 0; i < 4; i++)
        if (got[i] != -got[4 + i])
            return mx_error(MX_EINVAL, "comm mpi %s(%zu %s, root %d): the members did not all make this call (one "
                            "called with verb %lld..%lld, count %lld..%lld): every member must make the same calls "
                            "in the same order", mx_comm_verb_name(v), count, mx_dtype_name(t), root, -got[4], got[0],
                            -got[5], got[1]);
    return MX_OK;
}

/* Shard counts and offsets of count elements (mx_comm_shard), in elements. */
static void shard_table(mx_comm *c, size_t count)
{
    mpi_comm *M = c->impl;
    for (int m = 0; m < c->n; m++) {
        size_t lo, hi;
        mx_comm_shard(count, m, c->n, &lo, &hi);
        M->counts[m] = (int)(hi - lo);
        M->displs[m] = (int)lo;
    }
}

/* Member `me` receives every member's shard me of send into stage, then sums them in member
 * order into its shard of recv. */
static int reduce_scatter_into(mx_comm *c, int me, const void *send, void *recv, size_t count, mx_dtype t)
{
    mpi_comm *M = c->impl;
    const int sz = (int)mx_dtype_size(t);
    shard_table(c, count);
    const size_t mine = (size_t)M->counts[me], need = mine * (size_t)c->n * (size_t)sz;
    if (need > M->stage_bytes && need > 0) {
        unsigned char *s = realloc(M->stage, need);
        if (!s) return mx_error(MX_ENOMEM, "comm mpi reduce_scatter: out of memory for %zu bytes of shards", need);
        M->stage = s, M->stage_bytes = need;
    }
    for (int m = 0; m < c->n; m++) {
        M->scounts[m] = M->counts[m] * sz, M->sdispls[m] = M->displs[m] * sz;
        M->rcounts[m] = (int)mine * sz, M->rdispls[m] = m * (int)mine * sz;
    }
    int e = MPI_Alltoallv(send, M->scounts, M->sdispls, MPI_BYTE, M->stage, M->rcounts, M->rdispls, MPI_BYTE, M->world);
    if (e != MPI_SUCCESS) return mpi_fail("reduce_scatter", e);
    const size_t lo = (size_t)M->displs[me];
    if (t == MX_F32) { /* the common case, vectorised: member 0's shard, then each other added in order */
        float *dst = (float *)recv + lo;
        const float *src = (const float *)M->stage;
        memcpy(dst, src, mine * sizeof(float));
        for (int m = 1; m < c->n; m++)
            for (size_t i = 0; i < mine; i++) dst[i] += src[(size_t)m * mine + i];
        return MX_OK;
    }
    for (size_t i = 0; i < mine; i++) {
        float acc = mx_dtype_load(t, M->stage, i);
        for (int m = 1; m < c->n; m++) acc += mx_dtype_load(t, M->stage + (size_t)m * mine * (size_t)sz, i);
        mx_dtype_store(t, recv, lo + i, acc);
    }
    return MX_OK;
}

static int gather_into(mx_comm *c, void *buf, size_t count, mx_dtype t)
{
    mpi_comm *M = c->impl;
    const int sz = (int)mx_dtype_size(t);
    shard_table(c, count);
    for (int m = 0; m < c->n; m++) M->rcounts[m] = M->counts[m] * sz, M->rdispls[m] = M->displs[m] * sz;
    int e = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, M->rcounts, M->rdispls, MPI_BYTE, M->world);
    return e == MPI_SUCCESS ? MX_OK : mpi_fail("allgather", e);
}

static int mpi_reduce_scatter(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t)
{
    MX_TRY(fits("reduce_scatter", count, t));
    MX_TRY(agree(c, MX_COMM_REDUCE_SCATTER, count, t, 0));
    return reduce_scatter_into(c, member, send, recv, count, t);
}

static int mpi_allgather(mx_comm *c, int member, void *buf, size_t count, mx_dtype t)
{
    MX_TRY(fits("allgather", count, t));
    MX_TRY(agree(c, MX_COMM_ALLGATHER, count, t, 0));
    return gather_into(c, buf, count, t);
}

static int mpi_allreduce(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t)
{
    MX_TRY(fits("allreduce", count, t));
    MX_TRY(agree(c, MX_COMM_ALLREDUCE, count, t, 0));
    /* in place works: the all-to-all copies send's shards out before recv's shard is written */
    MX_TRY(reduce_scatter_into(c, member, send, recv, count, t));
    return gather_into(c, recv, count, t);
}

static int mpi_broadcast(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int root)
{
    mpi_comm *M = c->impl;
    MX_TRY(fits("broadcast", count, t));
    MX_TRY(agree(c, MX_COMM_BROADCAST, count, t, root));
    int e = MPI_Bcast(buf, (int)(count * mx_dtype_size(t)), MPI_BYTE, root, M->world);
    return e == MPI_SUCCESS ? MX_OK : mpi_fail("broadcast", e);
}

/* Point to point: no agreement call (only the two members take part); MPI matches the pair
 * by source and tag, and a receive of another size fails with MPI's truncation error. */
static int mpi_send(mx_comm *c, int member, const void *buf, size_t count, mx_dtype t, int peer)
{
    mpi_comm *M = c->impl;
    MX_TRY(fits("send", count, t));
    /* synchronous, as the threads implementation: on return the peer has the data */
    MPI_Request r;
    int e = MPI_Issend(buf, (int)(count * mx_dtype_size(t)), MPI_BYTE, peer, 0, M->world, &r);
    if (e == MPI_SUCCESS) e = mx_mpi_wait(&r);
    return e == MPI_SUCCESS ? MX_OK : mpi_fail("send", e);
}

static int mpi_recv(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int peer)
{
    mpi_comm *M = c->impl;
    MX_TRY(fits("recv", count, t));
    MPI_Status st;
    MPI_Request r;
    int e = MPI_Irecv(buf, (int)(count * mx_dtype_size(t)), MPI_BYTE, peer, 0, M->world, &r);
    if (e == MPI_SUCCESS) e = mx_mpi_wait_status(&r, &st);
    if (e != MPI_SUCCESS) return mpi_fail("recv", e);
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != count * mx_dtype_size(t))
        return mx_error(MX_EINVAL, "comm mpi recv: member %d expected %zu %s from member %d, which sent %d bytes",
                        member, count, mx_dtype_name(t), peer, got);
    return MX_OK;
}

static int mpi_barrier(mx_comm *c, int member)
{
    mpi_comm *M = c->impl;
    MPI_Request r;
    int e = MPI_Ibarrier(M->world, &r);
    if (e == MPI_SUCCESS) e = mx_mpi_wait(&r);
    return e == MPI_SUCCESS ? MX_OK : mpi_fail("barrier", e);
}

const mx_comm_ops mx_comm_mpi_ops = {
    .name = "mpi",
    .create = mpi_create,
    .destroy = mpi_destroy,
    .allreduce = mpi_allreduce,
    .reduce_scatter = mpi_reduce_scatter,
    .allgather = mpi_allgather,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
};
