/* The communicator: a group of n members that every member calls in the same order, with
 * the collectives of NCCL and MPI (all-reduce, reduce-scatter, all-gather, broadcast,
 * send/recv, barrier), typed by mx_dtype and counted per member as nccl-tests counts them.
 * Kvstores, pipeline stages and tensor-parallel layers move data only through it. */
#ifndef MX_COMM_H
#define MX_COMM_H

#include "engine/backend/dtype.h"

#include <stddef.h>

typedef struct mx_comm mx_comm;
struct mx_backend;

/* What one member of each kind is, and what its buffers are:
 * - threads: a thread of this process (a CPU device's comm worker); buffers are host or CPU
 *   device memory, read directly by the other members during the call.
 * - mpi (comm/mpi.c, where the build has MPI): one rank per process (member == rank,
 *   nlocal 1); buffers are host memory. A reduce-scatter is an all-to-all that brings
 *   member m every member's shard m, summed by m in f32 in member order, so the bits are
 *   those of `threads`; all-reduce is that plus an all-gather (MPI_Allgatherv in place);
 *   broadcast, send (synchronous) and recv, barrier map to MPI's. Each collective first
 *   agrees on (verb, count, dtype, root) with one small all-reduce.
 * - nccl: one member per GPU (several per process through ncclCommInitAll; kind nccl_mpi:
 *   one per rank of an MPI job, bootstrapped over MPI); buffers are device memory; verbs are the nccl calls of
 *   the same name enqueued on the member's stream, and "done" means done on that stream.
 *   ncclReduceScatter and ncclAllGather want equal shards, so uneven mx_comm_shard splits
 *   go through a buffer padded to n x shard (or grouped ncclReduce/ncclBroadcast calls);
 *   send/recv are ncclSend/ncclRecv in a group. NCCL sums in its ring or tree order, not
 *   member order: results stay equal across members and runs for a fixed NCCL_ALGO and
 *   NCCL_PROTO, but may differ from `threads` in the last bit. */
typedef enum {
    MX_COMM_ALLREDUCE,
    MX_COMM_REDUCE_SCATTER,
    MX_COMM_ALLGATHER,
    MX_COMM_BROADCAST,
    MX_COMM_SEND,
    MX_COMM_RECV,
    MX_COMM_BARRIER,
    MX_COMM_NVERBS
} mx_comm_verb;

/* One implementation. Arguments reach it checked (member, peer and root in range, dtype
 * known); it returns 0 or a negative MX_E* status with a message, and when one member fails
 * a collective every member of that call fails (none is left waiting). */
typedef struct {
    const char *name;
    int (*create)(mx_comm *c);
    void (*destroy)(mx_comm *c);
    /* recv = sum over members of send (in place when send == recv). */
    int (*allreduce)(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t);
    /* Full-length buffers; shard `member` of recv = sum over members of their shard of send. */
    int (*reduce_scatter)(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t);
    /* Shard m of buf comes from member m; in place. */
    int (*allgather)(mx_comm *c, int member, void *buf, size_t count, mx_dtype t);
    int (*broadcast)(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int root);
    int (*send)(mx_comm *c, int member, const void *buf, size_t count, mx_dtype t, int peer);
    int (*recv)(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int peer);
    int (*barrier)(mx_comm *c, int member);
    /* Optional: called by mx_comm_set_devices with c->be set, for kinds that can start only
     * once they know each member's device (nccl opens its NCCL communicators there). */
    int (*set_devices)(mx_comm *c);
    /* Optional: 1 where this kind, in one process, serves n members on the devices be (nccl:
     * cuda backends on GPUs of their own), for mx_comm_kind_for_devices; NULL: never chosen so. */
    int (*takes)(struct mx_backend *const *be, int n);
} mx_comm_ops;

typedef struct {
    long calls;
    double bytes;   /* sum of S = count x element size over the calls */
    double seconds; /* wall clock inside the calls, waiting for the others included */
    double wait;    /* of seconds, waiting for the other members to arrive, where the
                     * implementation can tell (mpi: its agreement); the rest moved data */
} mx_comm_count;

struct mx_comm {
    const mx_comm_ops *ops;
    int n;                   /* members in the group */
    int local_first, nlocal; /* members hosted by this process: threads all, mpi its rank */
    mx_comm_count *counts;   /* a row per member, written only by it: read with mx_comm_counts */
    double *arrival;         /* [n] an implementation's arrival wait in the call in progress */
    void *impl;              /* implementation-private state */
    /* threads: where the buffers live when the host cannot read them (a GPU's memory):
     * member m's backend, whose copies and adds then move and sum the data on its queue
     * (NULL: host or CPU-device memory, read directly). nccl: member m's CUDA backend, whose
     * GPU and stream it uses. Set with mx_comm_set_devices. */
    struct mx_backend **be;
};

/* Tells a communicator that member m's buffers are memory of be[m] (n entries, kept by the
 * caller for the communicator's life): for threads, a no-op for CPU backends; nccl needs it
 * before its first verb (each be[m] a cuda backend, one GPU per member) and starts there;
 * a no-op for mpi. 0 or a negative MX_E* status with a message. */
int mx_comm_set_devices(mx_comm *c, struct mx_backend **be);

/* Creates a communicator of the named kind ("threads", "mpi", a registered kind such as
 * "nccl") with n members (1..MX_COMM_MAX); for mpi, n must be the number of processes mpirun
 * started (MPI is initialised here when the caller has not done it, and finalised with the
 * communicator then). */
#define MX_COMM_MAX 64
int mx_comm_create(mx_comm **out, const char *kind, int n);
void mx_comm_destroy(mx_comm *c);
/* "threads", "threads|mpi" where built with MPI, then the registered kinds ("...|nccl"). */
const char *mx_comm_kinds(void);
/* The kind for n members of one process on the devices be (the local devices of a kvstore
 * that reduces among them): the first registered kind that takes them (nccl for GPUs of their
 * own, as MXNet's device store and DDP reduce over NCCL), else "threads" (CPU devices, and
 * logical devices sharing a GPU, over the members' own copies). */
const char *mx_comm_kind_for_devices(struct mx_backend *const *be, int n);
/* Adds a kind that lives in a library linked only into some programs (nccl: CUDA builds,
 * registered by mxbench at start-up beside the CUDA backend), so that the others carry none
 * of it. The table is kept, not copied; a name already listed, or a table missing a verb, is
 * refused. At most MX_COMM_MAX_KINDS kinds in all. */
#define MX_COMM_MAX_KINDS 8
int mx_comm_register(const mx_comm_ops *ops);

/* The verbs. Every member calls them in the same order with the same count, dtype and root
 * (a mismatch is an error on every member of the call, naming both values); counts are in
 * elements; sums are accumulated in f32 over members 0..n-1 in that order, then rounded to t
 * (round to nearest even), so every member gets the same bits on every run. */
int mx_comm_allreduce(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t);
int mx_comm_reduce_scatter(mx_comm *c, int member, const void *send, void *recv, size_t count, mx_dtype t);
int mx_comm_allgather(mx_comm *c, int member, void *buf, size_t count, mx_dtype t);
int mx_comm_broadcast(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int root);
/* Blocking and paired: send returns once peer has received the data. */
int mx_comm_send(mx_comm *c, int member, const void *buf, size_t count, mx_dtype t, int peer);
int mx_comm_recv(mx_comm *c, int member, void *buf, size_t count, mx_dtype t, int peer);
int mx_comm_barrier(mx_comm *c, int member);

/* Member m's shard [lo, hi) of count elements split over n: contiguous, boundaries on
 * multiples of 16 elements (cache lines for f32), so late members may get empty shards. */
void mx_comm_shard(size_t count, int m, int n, size_t *lo, size_t *hi);

/* ---- statistics, per member and verb since creation or the last reset */
const char *mx_comm_verb_name(mx_comm_verb v); /* "allreduce", "reduce_scatter", ... */
mx_comm_count mx_comm_counts(const mx_comm *c, int member, mx_comm_verb v);
void mx_comm_counts_reset(mx_comm *c, int member);
/* nccl-tests' bus bandwidth factor for n members: allreduce 2(n-1)/n, reduce-scatter and
 * all-gather (n-1)/n, broadcast, send and recv 1, barrier 0. */
double mx_comm_busbw_factor(mx_comm_verb v, int n);
/* algbw = S / t and busbw = algbw x factor, in bytes per second (0 when no time counted);
 * t is the whole time in the calls (seconds), arrival waits included. */
double mx_comm_algbw(const mx_comm_count *k);
double mx_comm_busbw(const mx_comm_count *k, mx_comm_verb v, int n);

#endif
