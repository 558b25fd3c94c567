/* The kvstore: MXNet's verbs (init, push, pull, an optional updater run on the store) over
 * the parameter tensors of a replicated network, built on a communicator. Keys are tensors;
 * each device binds its own buffers, pushes a key's gradient as soon as backward produces
 * it (through a per-device push hook), and comm workers reduce (and update) keys while
 * earlier layers still compute. Modes are tables of functions in kv_<mode>.c (kvstore/mode.h). */
#ifndef MX_KVSTORE_H
#define MX_KVSTORE_H

#include "base/config.h"
#include "comm/comm.h"
#include "engine/backend/backend.h"
#include "engine/backend/dtype.h"
#include "engine/core/optim.h"

#include <stddef.h>

typedef struct mx_kvstore mx_kvstore;

/* A key: a tensor at offset within each device's contiguous weight and gradient buffers.
 * offset and count are in elements of dtype. */
typedef struct {
    size_t offset, count;
    mx_dtype dtype;
} mx_kv_key;

typedef struct mx_cluster mx_cluster;

#define MX_KV_BUCKET_MB 25.0 /* the default bucket, PyTorch DDP's */

typedef struct {
    int devices; /* devices of this process that push (0: the comm's local member count) */
    /* dist_* modes only (the store's comm then joins this process's own devices):
     * cluster: the MPI job's ranks and roles (cluster/cluster.h; sessions are counted in it);
     * world: dist_allreduce's mpi comm of every worker rank; decay: per key, whether weight
     * decay applies, for the parameter servers' updates */
    mx_cluster *cluster;
    mx_comm *world;
    /* device and dist_allreduce: keys are exchanged in buckets of at most this many MiB,
     * filled in backward order; every device then pushes every key of a bucket each round.
     * 0: dist_allreduce MX_KV_BUCKET_MB, device each key alone (a key may be pushed alone) */
    double bucket_mb;
    /* the optimizer the updater runs (every mode sizes its state by its kind: SGD's momentum,
     * AdamW's two moments; NULL: SGD's) and that the parameter servers run (read at each push,
     * so its lr may change per step) */
    const mx_optim *opt;
    const int *decay;
    /* gradient compression of pushes (kvstore/compressor.h): MX_GC_NONE, or a compressor the
     * mode supports, with 2bit's threshold and topk's ratio (0: the defaults) */
    mx_gc_kind compression;
    double gc_threshold, gc_topk_ratio;
} mx_kv_options;

/* Applies one update to elements [lo, hi) of key: w and st (the optimizer's state) point at
 * the key's start in the store's buffers (host for local, the owning device's for device), g
 * at its summed gradient. Keys are f32 (master weights) wherever an updater runs. */
typedef void (*mx_kv_updater)(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, mx_optim_state st,
                              const float *g);

/* Called by push on the pushing device's thread before the gradient enters the reduction:
 * where a compressor sits (it may rewrite data in place). *wire_bytes arrives as count x
 * element size (the key sent as is) and the hook may lower it to what it puts on the wire.
 * A negative return fails the push with the hook's message; the gradient still enters its
 * round (no other device waits forever for it) and every later pull reports the failure. */
typedef int (*mx_kv_push_hook)(void *user, int dev, int key, void *data, size_t count, mx_dtype dtype,
                               double *wire_bytes);

typedef struct {
    double bytes;      /* copied between devices and host by reductions, gathers and pulls */
    double wire_bytes; /* pushed, as the push hook left them or the compressor packed them */
    double raw_bytes;  /* what the same pushes hold uncompressed (f32) */
    long pushes;
    /* dist_* modes: bytes this process sent to and received from other ranks, and the
     * thread-seconds spent sending pushes and waiting for pulls (all-reduces, for
     * dist_allreduce, count as push) */
    double net_bytes, push_seconds, pull_seconds;
} mx_kv_stats;

/* Creates a store of mode (one this build has: mx_kv_modes()) over comm (borrowed: it must
 * outlive the store) for the key table. Starts the mode's comm workers. Each device then
 * binds its buffers, and mx_kv_init runs once all are bound. */
int mx_kv_create(mx_kvstore **out, mx_kv_mode mode, mx_comm *comm, const mx_kv_key *keys, int nkeys,
                 const mx_kv_options *opt);
void mx_kv_destroy(mx_kvstore *kv);
/* The modes this build has: "local|device", and the dist_* modes where built with MPI (every
 * mode mxbench knows is base/config.h's mx_kv_mode_names()). */
const char *mx_kv_modes(void);
int mx_kv_mode_built(mx_kv_mode mode);
/* Whether mode compresses pushes with compression (MX_GC_NONE always does, and so does a run
 * without a kvstore): MX_EINVAL saying why not (local sums in host memory: nothing on a wire,
 * and MXNet refuses it too). */
int mx_kv_compression_check(mx_kv_mode mode, mx_gc_kind compression);

/* Device dev registers its own backend and weight and gradient buffers (device memory laid
 * out by the key table). The store moves another device's data only through the comm. */
int mx_kv_bind(mx_kvstore *kv, int dev, mx_backend *be, void *weight, void *grad);
/* init(key, value) for all keys at once: the value is device 0's bound weights (the
 * replicas start equal). */
int mx_kv_init(mx_kvstore *kv);
/* Set before the first push. Without an updater (the default, or fn NULL) pull writes the
 * summed gradient into the device's gradient buffer, so that the caller can check it (AMP's
 * inf/NaN skip) and update its weights itself. */
void mx_kv_set_updater(mx_kvstore *kv, mx_kv_updater fn, void *user);
void mx_kv_set_push_hook(mx_kvstore *kv, mx_kv_push_hook fn, void *user);

/* push(key) from one device: the gradient in its bound buffer; count must equal the key's.
 * A device may have one round in flight per key: a second push of the same key waits until
 * the first is reduced. Every device pushes its keys in the same order (backward order,
 * last key first): collective modes process them in that order on every member. */
int mx_kv_push(mx_kvstore *kv, int key, int dev, size_t count);
/* pull(key) into device dev's weight buffer (gradient buffer without an updater); waits for
 * every round dev pushed. */
int mx_kv_pull(mx_kvstore *kv, int key, int dev, size_t count);

/* Compression: its kind (MX_GC_NONE without), the thread-seconds of compress and decompress work
 * since the last reset and how much of it ran after cut (the end of backward), and the L2
 * norm of every residual (what error feedback still owes; 0 without). */
mx_gc_kind mx_kv_compression(const mx_kvstore *kv);
/* The step's gradients are means over n samples: compress them as their sums (n x), as
 * MXNet's kvstore sees them, so that thresholds and half-precision ranges mean the same.
 * Set between steps (no push in flight). */
void mx_kv_set_grad_scale(mx_kvstore *kv, float n);
void mx_kv_compression_time(mx_kvstore *kv, double cut, double *work, double *after);
double mx_kv_residual_norm(const mx_kvstore *kv);
/* After a step skipped for an inf/NaN gradient (AMP): error feedback kept the overflow in
 * the residuals, where it would be sent at every later step; such values become 0, the rest
 * of what the residuals owe stays. Between steps (no push in flight). */
void mx_kv_residual_drop_nonfinite(mx_kvstore *kv);

mx_kv_stats mx_kv_stats_get(mx_kvstore *kv);
/* Also empties the log of communicator calls (mx_kv_comm_figures). */
void mx_kv_stats_reset(mx_kvstore *kv);

/* The communicator calls a mode made since the last reset (kvstore/calls.c), per comm member,
 * each timed from the last member's arrival (threads: the member that waited least; mpi: the
 * call less its measured arrival wait), in the terms of an alpha-beta-gamma cost: a
 * reduce-scatter or all-gather of S bytes over p members sends (p-1)/p S bytes, an all-reduce
 * twice that, as a ring does; a reduce-scatter and an all-reduce sum (p-1)/p S bytes; rounds
 * (latencies in sequence) are p-1 messages per reduce-scatter or all-gather and 2(p-1) per
 * all-reduce on a ring (mpi), one rendezvous per call on the threads communicator, where
 * every member reads the others' buffers at once. alpha, beta, gamma: the least-squares fit
 * of the calls' times to
 * rounds x alpha + bus bytes x beta + reduced bytes x gamma; NaN where the calls cannot tell
 * them apart (no reduce-scatter beside an all-gather: gamma, its cost left in beta; one call
 * size: alpha too) or where there were no calls. */
typedef struct {
    double calls;        /* collectives made */
    double rounds;       /* latencies in sequence: 1, p-1 or 2(p-1) per call */
    double bus_bytes;    /* bytes sent as a ring sends them */
    double reduce_bytes; /* bytes summed */
    double seconds;      /* in the calls, from the last arrival */
    double alpha, beta, gamma; /* s per message, s per bus byte, s per byte summed */
} mx_kv_comm_fig;
/* Fills f; returns the number of calls (0: none, f's fit NaN), or a negative MX_E* if the
 * workers' logs disagree (a mode broke the one-order rule of collectives). */
int mx_kv_comm_figures(mx_kvstore *kv, mx_kv_comm_fig *f);
/* Thread-seconds of kvstore work since the last reset, and how much of it ran before the
 * wall-clock time cut (the end of the last device's backward: what overlap hid). */
void mx_kv_work_before(mx_kvstore *kv, double cut, double *work, double *hidden);

#endif
