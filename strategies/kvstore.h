/* The kvstore: MXNet's verbs (init, push, pull, an updater run on the store) over the
 * parameter tensors of a replicated network. Keys are tensors; each device pushes its
 * gradient for a key as soon as backward produces it, and comm workers reduce and update
 * keys by priority while earlier layers still compute. Modes (local, device) are tables of
 * functions in kv_<mode>.c; all data movement goes through the backends' copy functions. */
#ifndef MX_KVSTORE_H
#define MX_KVSTORE_H

#include "engine/backend.h"

#include <pthread.h>
#include <stddef.h>

typedef struct mx_kvstore mx_kvstore;

/* Applies one update to elements [lo, hi) of key: w and mom are the store's buffers for
 * the key (host for local, the owning device's for device), g the summed gradient. */
typedef void (*mx_kv_updater)(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, float *mom,
                              const float *g);

typedef struct {
    const char *name;
    /* Comm worker threads the mode runs for ndev devices. */
    int (*nworkers)(int ndev);
    int (*create)(mx_kvstore *kv);
    /* Stores the initial value of every key (the devices' weights are already equal). */
    int (*init)(mx_kvstore *kv, const float *value_dev0);
    /* Worker `worker` does its share of reducing and updating a key all devices pushed. */
    void (*process)(mx_kvstore *kv, int worker, int key);
    /* Brings the updated key into device dev's weight buffer. */
    void (*pull)(mx_kvstore *kv, int key, int dev, float *out);
    void (*destroy)(mx_kvstore *kv);
} mx_kvstore_ops;

typedef struct {
    size_t offset, count; /* floats, within each device's contiguous buffers */
} mx_kv_key;

typedef struct {
    double start, end;     /* wall clock of one piece of kvstore work (a reduce+update or a pull) */
} mx_kv_span;

typedef struct {
    double bytes;          /* bytes copied between devices and host since the last reset */
    mx_kv_span *spans;     /* work done since the last reset, for the overlap figure */
    int nspans, capspans;
} mx_kv_stats;

struct mx_kvstore {
    const mx_kvstore_ops *ops;
    int ndev, nkeys;
    mx_kv_key *keys;
    size_t total;            /* floats over all keys (buffer size) */
    mx_backend **be;         /* [ndev] device backends */
    float **grad;            /* [ndev] each device's gradient buffer, registered by push */
    float **weight;          /* [ndev] each device's weight buffer */
    mx_kv_updater updater;
    void *updater_user;
    void *mode;              /* mode-private state */
    mx_kv_stats stats;

    /* ---- scheduling, guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    int *pushed;             /* [ndev][nkeys] rounds pushed by each device */
    int *completed;          /* [nkeys] rounds fully reduced and updated */
    int *queued;             /* [nkeys] rounds handed to workers */
    int *shards_left;        /* [nkeys] workers still on the queued round */
    int *taken;              /* [nworkers][nkeys] rounds each worker has processed */
    int *priority;           /* [nkeys] of the latest push */
    int nworkers, stopping;
    pthread_t *threads;
    int first_error;
};

/* Creates a store of the named mode ("local", "device") for ndev devices whose weight
 * and gradient buffers share the key layout. Starts its comm workers. */
int mx_kv_create(mx_kvstore **out, const char *mode, int ndev, mx_backend **be, float **weight, float **grad,
                 const mx_kv_key *keys, int nkeys);
void mx_kv_destroy(mx_kvstore *kv);
const char *mx_kv_modes(void); /* "local|device" */

/* init(key, value) for all keys at once: value is device 0's weight buffer. */
int mx_kv_init(mx_kvstore *kv, const float *value_dev0);
void mx_kv_set_updater(mx_kvstore *kv, mx_kv_updater fn, void *user);

/* push(key, value, priority) from one device: the gradient in that device's registered
 * buffer; count must equal the key's size. A device may have one round in flight per key:
 * a second push of the same key waits until the first is reduced. Higher priority keys
 * are processed first among those ready. */
int mx_kv_push(mx_kvstore *kv, int key, int dev, size_t count, int priority);
/* pull(key, out) into device dev's weight buffer; waits for every round dev pushed. */
int mx_kv_pull(mx_kvstore *kv, int key, int dev, size_t count);

void mx_kv_stats_reset(mx_kvstore *kv);
/* Thread-seconds of kvstore work since the last reset, and how much of it ran before the
 * wall-clock time cut (the end of the last device's backward: what overlap hid). */
void mx_kv_work_before(mx_kvstore *kv, double cut, double *work, double *hidden);

/* ---- for modes */
/* Elements [lo, hi) of a key that worker w of n handles (contiguous, 16-float aligned). */
void mx_kv_shard(size_t count, int w, int n, size_t *lo, size_t *hi);
void mx_kv_count_bytes(mx_kvstore *kv, double bytes);

#endif
