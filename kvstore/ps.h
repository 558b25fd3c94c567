/* The parameter server of the dist_sync, dist_device_sync and dist_async kvstores (MXNet's
 * protocol over MPI point-to-point messages): where each key lives, and the messages between
 * worker ranks (kvstore/dist.c) and server ranks (kvstore/ps_server.c).
 *
 * Placement, as MXNet's KVStoreDist: a key of fewer elements than the big-array bound (1e6,
 * or MXNET_KVSTORE_BIGARRAY_BOUND) goes whole to server (key x 9973) mod S; a larger key is
 * split over all S servers, part i being [round(n i / S), round(n (i+1) / S)).
 *
 * A session is one kvstore's life (one repeat of a run); sessions alternate between two
 * duplicates of MPI_COMM_WORLD, so that worker 0's first message of the next session cannot
 * be taken for one of the session a server is still finishing. Messages, in order:
 *   worker 0 -> every server  TAG_SETUP: ps_setup, then ps_key_desc[nkeys] (nkeys 0: the job
 *                             is over, the server leaves its loop)
 *   worker 0 -> every server  TAG_INIT: the initial values of each part it owns, key order
 *   worker   -> server        part tag: the part's summed gradient, then one float, the lr
 *   server   -> worker        part tag: the part's new values (the sum, without updater);
 *                             sync: once every worker pushed the round; async: at once,
 *                             plus the other workers' next momentum steps under SGD
 *                             (kvstore/ps_server.c)
 *   worker   -> every server  TAG_STOP: this worker's session is over */
#ifndef MX_PS_H
#define MX_PS_H

#include <stddef.h>
#include <stdint.h>

#define MX_PS_DEFAULT_BOUND 1000000
#define MX_PS_TAG_STOP 1
#define MX_PS_TAG_SETUP 2
#define MX_PS_TAG_INIT 3
#define MX_PS_TAG_PART0 16 /* + key x MX_COMM_MAX + part */
#define MX_PS_STALE_BINS 1024 /* staleness histogram: 0..1022, the last bin holds the rest */

typedef struct {
    int server;
    size_t lo, hi; /* elements of the key */
} mx_ps_part;

/* The big-array bound: MXNET_KVSTORE_BIGARRAY_BOUND when set to a positive number, else 1e6. */
size_t mx_ps_bigarray_bound(void);
/* Places key (count elements) over nservers: fills parts (room for nservers) and returns how
 * many there are (1, or nservers for a big array). */
int mx_ps_place(int key, size_t count, int nservers, size_t bound, mx_ps_part *parts);
int mx_ps_tag(int key, int part);

typedef struct {
    int32_t nkeys;       /* 0: end of the job */
    int32_t nworkers;
    int32_t async;       /* 1: dist_async (apply each push at once) */
    int32_t update;      /* 1: run the optimizer (else answer the summed gradient) */
    int32_t optimizer;   /* an mx_optim_kind (base/config.h): SGD or AdamW, with their settings */
    float momentum, wd;
    float beta1, beta2, eps;
    int64_t bound;
    /* compression of the workers' pushes (kvstore/compressor.h): an mx_gc_kind, MX_GC_NONE or the
     * compressor whose payloads arrive, with its settings; servers decompress, and answer
     * uncompressed (every rank runs the same binary: the enum means the same to all) */
    int32_t compression;
    double gc_threshold, gc_topk_ratio; /* as the worker has them: the payload sizes must agree */
} mx_ps_setup;

typedef struct {
    int64_t count;
    int32_t decay;       /* weight decay applies */
    int32_t pad;
} mx_ps_key_desc;

/* What a server measured over every session of the job. */
typedef struct {
    double bytes;        /* received and sent */
    double busy;         /* seconds summing, updating and answering */
    long rounds;         /* rounds of its first part (sync), or pushes / workers (async) */
    long stale[MX_PS_STALE_BINS];
    long stale_max;
} mx_ps_stats;

typedef struct mx_cluster mx_cluster;
/* A server rank's whole life: sessions until worker 0 ends the job. */
int mx_ps_serve(mx_cluster *c, mx_ps_stats *st);
/* Worker 0 ends the job: every server leaves its loop. */
int mx_ps_end_job(mx_cluster *c);

#endif
