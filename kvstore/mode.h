/* What a kvstore mode sees: the store's state and the table of functions a mode fills in.
 * Shared code (kvstore/kvstore.c) keeps the push log, rounds and comm workers; a mode says which
 * rounds may run (its policy), what a worker does for a key and what a pull brings back.
 * A new mode is one kv_<mode>.c plus its line in base/kv_modes.def and in the registry of
 * kvstore/kvstore.c. */
#ifndef MX_KV_MODE_H
#define MX_KV_MODE_H

#include "kvstore.h"

#include <pthread.h>

typedef struct {
    mx_kv_mode kind; /* its line in base/kv_modes.def: name and properties (MX_KV_COMPRESSES...) */
    /* Checks the store as created (keys, devices, comm) and allocates mode state. */
    int (*create)(mx_kvstore *kv);
    /* Comm worker threads the mode runs in this process. */
    int (*nworkers)(const mx_kvstore *kv);
    /* The device whose push order worker w follows: a collective mode's worker for member m
     * follows m's own device, as an MPI rank or NCCL stream follows its own backward. */
    int (*follows)(const mx_kvstore *kv, int worker);
    /* Policy: may round `round` (1, 2, ...) of key be processed now? Called with the lock
     * held. Every mode so far waits for every local device (mx_kv_all_pushed): dist_async's
     * asynchrony is between workers, at the servers. */
    int (*ready)(const mx_kvstore *kv, int key, int round);
    /* After every device bound its buffers: stores the initial values. */
    int (*init)(mx_kvstore *kv);
    /* Worker w's share of reducing (and updating, with an updater) one round of key. */
    int (*process)(mx_kvstore *kv, int worker, int key);
    /* Brings the processed key into device dev's weights (gradients without an updater). */
    int (*pull)(mx_kvstore *kv, int key, int dev);
    void (*destroy)(mx_kvstore *kv);
} mx_kvstore_ops;

typedef struct {
    mx_backend *be;
    void *w, *g; /* the device's own buffers, laid out by the key table */
} mx_kv_device;

typedef struct {
    double start, end; /* wall clock of one piece of kvstore work (a process or a pull) */
} mx_kv_span;

/* Keys exchanged as one range (device, dist_allreduce: PyTorch DDP's and Horovod's fusion) */
typedef struct {
    int lo, hi;        /* keys lo..hi-1 (consecutive indices) */
    size_t off, count; /* their contiguous range, padding between keys included */
} mx_kv_bucket;

struct mx_kvstore {
    const mx_kvstore_ops *ops;
    mx_comm *comm;
    mx_kv_options opt;     /* as created (devices resolved) */
    int ndev, nkeys;
    mx_kv_key *keys;
    size_t total;          /* elements over all keys (buffer size) */
    mx_kv_device *dev;     /* [ndev] what each device bound */
    mx_kv_updater updater; /* NULL: pull returns the summed gradient */
    void *updater_user;
    mx_kv_push_hook hook;
    void *hook_user;
    void *mode;            /* mode-private state */
    struct mx_compressor *gc; /* the pushes' compressor (NULL: none), residuals per device */
    /* the units it compresses, each with its own residual: the key table (set by
     * mx_kv_gc_create), or what the mode's create set (dist_*: each key's server parts) */
    const mx_kv_key *gc_keys;
    int gc_nkeys;

    /* ---- guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    mx_kv_stats stats;
    mx_kv_span *spans;     /* work since the last reset, for the overlap figure */
    int nspans, capspans;
    mx_kv_span *gc_spans;  /* compress and decompress work since the last reset */
    double *gc_sumsq;      /* [ndev][nkeys] squared norm of each residual after its last push */
    int ngc, capgc;
    int *pushed;           /* [ndev][nkeys] rounds pushed by each device */
    int *log;              /* [ndev][nkeys] ring of each device's pushes, in its order */
    long *logged;          /* [ndev] pushes appended to the ring */
    long *taken;           /* [nworkers] entries of its device's ring a worker consumed */
    int *seen;             /* [nworkers][nkeys] rounds a worker took */
    int *finished;         /* [nworkers][nkeys] rounds a worker processed */
    int *completed;        /* [nkeys] rounds every worker processed */
    int nworkers, stopping, started;
    pthread_t *threads;
    int first_error;
    char errmsg[256];      /* the failing worker's message: mx_last_error is per thread */
    /* the communicator calls of the step, logged by each comm worker in its own row
     * (kvstore/calls.c): [nworkers][capcalls], ncalls[w] made since the last stats reset */
    struct mx_kv_call *calls;
    int *ncalls, capcalls;
};

/* The store's mode name, for messages. */
static inline const char *mx_kv_name(const mx_kvstore *kv) { return mx_kv_mode_name(kv->ops->kind); }

/* ---- a mode's collectives, through the comm and logged call by call for the step's
 * communication figures (kvstore/calls.c, mx_kv_comm_figures): worker is the comm worker
 * making the call (its row of the log), the other arguments those of mx_comm_<verb> */
int mx_kv_allreduce(mx_kvstore *kv, int worker, mx_comm *c, int member, const void *send, void *recv, size_t count,
                    mx_dtype t);
int mx_kv_reduce_scatter(mx_kvstore *kv, int worker, mx_comm *c, int member, const void *send, void *recv,
                         size_t count, mx_dtype t);
int mx_kv_allgather(mx_kvstore *kv, int worker, mx_comm *c, int member, void *buf, size_t count, mx_dtype t);
/* The log's life: created once the workers are counted, emptied by mx_kv_stats_reset. */
int mx_kv_calls_create(mx_kvstore *kv);
void mx_kv_calls_destroy(mx_kvstore *kv);
void mx_kv_calls_reset(mx_kvstore *kv);

/* ---- compression (kvstore/compress.c), for modes with MX_KV_COMPRESSES */
/* Creates kv->gc from kv->opt.compression (MX_GC_NONE: stays NULL) over kv->gc_keys, the units
 * compressed one at a time (the key table unless the mode's create set its own; the mode
 * owns that table's memory). Called after the mode's create. */
int mx_kv_gc_create(mx_kvstore *kv);
/* 1 when the store was asked to compress its pushes (opt.compression, not MX_GC_NONE); a mode's
 * create may ask before mx_kv_gc_create made kv->gc. */
int mx_kv_compression_asked(const mx_kvstore *kv);
void mx_kv_gc_destroy(mx_kvstore *kv);
/* Bytes of unit's packed payload, and the floats of a comm slot that holds it (padded to the
 * comm's 16-element shard boundaries, so that n payloads all-gather as n equal shards). */
size_t mx_kv_gc_packed_bytes(const mx_kvstore *kv, int unit);
size_t mx_kv_gc_slot_floats(const mx_kvstore *kv, int unit);
/* g (unit's values) into packed with party's residual (a device's, or 0 for a process's
 * sum), timed; counts the unit's f32 bytes as raw and the payload as wire bytes. */
void mx_kv_gc_compress(mx_kvstore *kv, int party, int unit, const float *g, void *packed);
/* packed into out (unit's count values), timed. */
void mx_kv_gc_decompress(mx_kvstore *kv, int unit, const void *packed, float *out);

/* Buckets of at most cap bytes, greedy in backward order as DDP's (from the last key down,
 * the order devices push): a key joins the bucket of the keys after it where it lies wholly
 * before that bucket's range and the range grown to take it stays within cap, else it starts
 * one; so a key larger than cap, or one out of offset order, is a bucket of its own. b and
 * bucket_of hold nkeys entries; returns the buckets' count. */
int mx_kv_plan_buckets(const mx_kvstore *kv, double cap, mx_kv_bucket *b, int *bucket_of);
/* The synchronous policy: every device pushed round `round` of key. */
int mx_kv_all_pushed(const mx_kvstore *kv, int key, int round);
/* Adds to the bytes statistic (takes the lock). */
void mx_kv_count_bytes(mx_kvstore *kv, double bytes);
/* The optimizer's state a mode keeps for its updater (kv->opt.opt's kind): the floats of one
 * allocation (mx_optim_nstate x kv->total), and within such an allocation buf the state of the
 * weights from element off of the key table's layout. */
size_t mx_kv_state_floats(const mx_kvstore *kv);
mx_optim_state mx_kv_state_at(const mx_kvstore *kv, float *buf, size_t off);
/* The host side of a mode that sums and updates on the host (local, dist_allreduce): a
 * one-thread CPU backend, and weights, the optimizer's state (mx_kv_state_floats), summed
 * gradients and a scratch buffer laid out by the key table (zero-filled by the CPU backend). */
typedef struct {
    mx_backend *host;
    float *w, *mom, *merge, *tmp;
    /* the buffers the devices copy to and from (w, merge, tmp) as pinned by device 0's backend
     * (host_pin: page-locked on a GPU), released before they are freed */
    mx_backend *pinned_by;
    int pinned[3];
} mx_kv_host;
int mx_kv_host_create(mx_kvstore *kv, mx_kv_host *h);
void mx_kv_host_destroy(mx_kv_host *h);
/* The replicas start equal (the same seed): device 0's weights become the host copy. The
 * buffers the devices copy to and from are pinned first (host_pin), where the devices can. */
void mx_kv_host_init(mx_kvstore *kv, mx_kv_host *h);

/* Sums every device's gradient of key into merge on the host, in device order (so the result
 * does not depend on who pushed first), each copy made by the owning device's backend;
 * merge and tmp are host buffers laid out by the key table; counts the bytes copied. */
void mx_kv_sum_on_host(mx_kvstore *kv, mx_backend *host, int key, float *merge, float *tmp);

#endif
