/* Parallel strategies: how a model is placed on devices and how one training step runs
 * there. Each strategy is a table of functions in its own file, listed in registry.c. */
#ifndef MX_STRATEGY_H
#define MX_STRATEGY_H

#include "base/config.h"
#include "base/limits.h"
#include "engine/core/net.h"
#include "engine/core/optim.h"
#include "workloads/workloads.h"
#include "results/metrics.h"
#include "engine/core/backends.h"

#include <stdint.h>

typedef struct mx_cluster mx_cluster;


typedef struct {
    const char *workload;      /* a name from workloads.h, for messages */
    const mx_layer_spec *specs;/* the model, built once by the caller (the trainer) */
    int nspecs;
    mx_shape in;
    int nclasses;
    int devices;
    int threads_per_device;
    mx_kv_mode kvstore;        /* a kvstore mode (kvstore/kvstore.h; ignored with one device: no store, as MXNet) */
    const char *backend;       /* a kind from mx_backend_names(): cpu, cuda; NULL = cpu */
    int max_batch;             /* global batch */
    const double *work_load;   /* [devices] relative shares of each batch; NULL = even */
    /* the optimizer and its settings (its lr and step are set per step by the strategy) */
    mx_optim opt;
    uint64_t seed;
    mx_weight_init init;
    float init_sigma;          /* normal init's deviation; 0: 0.01 (GPT-2's recipe: 0.02) */
    /* dist_* kvstores (NULL otherwise): this process is worker `cluster->index` of
     * cluster->nworkers, each driving `devices` devices; the batch a step gets is the global
     * batch of every worker, split over all workers' devices, of which this worker trains
     * its own devices' slices (the same split as one process with all the devices) */
    mx_cluster *cluster;
    double bucket_mb;          /* bucket size in MiB: dist_allreduce (0: 25), device (0: each key alone) */
    /* model (pipeline): how the top-level layers are cut into `devices` stages, "auto" or
     * NULL (balanced by a short profile, FLOPs where none can run) or counts per stage
     * "6,3,3" (partition.h); micro-batches per batch (0: automatic, see
     * mx_pipeline_micro_batches); schedule "gpipe" or "1f1b" (NULL: 1f1b) */
    const char *partition;
    int micro_batches;
    const char *schedule;
    /* data with a kvstore: the compressor of pushes (MX_GC_NONE: none) and its settings
     * (kvstore/compressor.h; 0: the defaults) */
    mx_gc_kind compression;
    double gc_threshold, gc_topk_ratio;
    /* mixed precision (engine/core/amp.h): data only (mx_amp_check) */
    mx_amp amp;
} mx_strategy_config;

/* What a strategy measured over the steps since it was created, per device and per
 * top-level layer, for the run record and plots (mx_strategy_ops.detail). NaN where a
 * figure does not apply. */
typedef struct {
    int first, last;        /* model: the stage's top-level layers [first, last); else 0, nlayers */
    double bubble;          /* model: idle share of the step windows (sum of idle / sum of windows) */
    double mem_params;      /* bytes of parameters and their gradients on the device (allocator count) */
    double mem_optim;       /* bytes of optimizer state (SGD's momentum, AdamW's two moments) */
    double mem_peak;        /* the most bytes the device held during any step (allocator count) */
    double bytes_sent;      /* bytes per step this device sent to others (stages, shards, kvstore) */
    int held_max;           /* model: most micro-batches in flight on the stage at once (0: n/a) */
    /* seconds per step the device computed, mean over the steps so far: data, its forward and
     * backward on its slice; model, its stage's work (the step window less its idle time);
     * NaN where the devices run in lockstep (layer). A straggler shows here. */
    double busy;
} mx_device_detail;

typedef struct {
    int ndevices;
    mx_device_detail dev[MX_MAX_DEVICES];
    int nlayers;
    /* bytes per step moved for each top-level layer: layer strategy, its collectives summed
     * over devices; model, the activations and gradients crossing the stage boundary after it
     * (0 inside a stage); NaN where the strategy moves nothing per layer (data) */
    double layer_bytes[MX_MAX_LAYERS];
} mx_strategy_detail;

typedef struct {
    double loss_sum;           /* summed over the samples this process trained */
    int correct;
    int samples;               /* samples this process trained (a dist_* worker: its slice) */
    double phase[MX_NPHASES];  /* seconds, indexed by MX_PHASE_* (results/metrics.def); data is the caller's */
    /* indexed by MX_COUNTER_* (results/metrics.def): what the strategy measured this step;
     * NaN for what it did not (mx_step_stats_clear), which the run's figure leaves out */
    double counter[MX_NCOUNTERS];
} mx_step_stats;

/* Zero loss, count and phases; every counter NaN ("not measured"). */
static inline void mx_step_stats_clear(mx_step_stats *st)
{
    st->loss_sum = 0;
    st->correct = 0;
    st->samples = 0;
    for (int i = 0; i < MX_NPHASES; i++) st->phase[i] = 0;
    mx_counters_clear(st->counter);
}

typedef struct mx_strategy mx_strategy;

typedef struct {
    mx_strategy_kind kind; /* its name is base/config.h's (mx_strategy_name) */
    const char *summary;
    /* OPTIONAL: whether cfg makes sense for this strategy, decided from the model and the
     * counts alone (no devices touched): MX_EINVAL naming the value and what is accepted.
     * The trainer and the sweep's planner (a skipped row with that reason) ask before create;
     * create asks too. */
    int (*check)(const mx_strategy_config *cfg);
    int (*create)(mx_strategy **out, const mx_strategy_config *cfg);
    /* One step on a global batch of n samples (host memory) at learning rate lr. */
    int (*step)(mx_strategy *s, const float *x, const int32_t *y, int n, float lr, mx_step_stats *st);
    /* Loss sum and correct count over n samples in evaluation mode. */
    int (*evaluate)(mx_strategy *s, const float *x, const int32_t *y, int n, double *loss_sum, int *correct);
    /* The trained parameters in the network's layout (host copy), and their count. */
    size_t (*param_count)(mx_strategy *s);
    int (*get_params)(mx_strategy *s, float *host);
    /* Forward FLOPs per sample of the whole model. */
    double (*flops_per_sample)(mx_strategy *s);
    /* OPTIONAL (NULL: nothing beyond the step counters): per device and per layer figures
     * over the steps so far. */
    int (*detail)(mx_strategy *s, mx_strategy_detail *out);
    void (*destroy)(mx_strategy *s);
} mx_strategy_ops;

/* The strategy's table, NULL where this build lacks it. */
const mx_strategy_ops *mx_strategy_find(mx_strategy_kind kind);
/* The strategy's check of cfg (MX_OK where it has none; MX_EINVAL if not in this build). */
int mx_strategy_check(mx_strategy_kind kind, const mx_strategy_config *cfg);
/* The checks of the model and layer strategies (strategy_check.c). */
int mx_model_check(const mx_strategy_config *cfg);
/* The pipeline's defaults, resolved where a run is configured so that the record holds what
 * ran. Micro-batches: requested if > 0, else 4 per stage on 2 or more stages (GPipe's
 * advice, m >= 4k, keeps the bubble (k-1)/(m+k-1) near 0.1 or below), at most the batch's
 * samples, and 1 on one stage (nothing to overlap). Schedule:
 * requested, else 1f1b (stage r holds at most k-r micro-batches: the memory a pipeline is
 * for; GPipe holds all m). */
int mx_pipeline_micro_batches(int requested, int stages, int batch);
const char *mx_pipeline_schedule(const char *requested);
int mx_layer_check(const mx_strategy_config *cfg);
/* Whether mixed precision amp runs with the strategy and kvstore (MX_KV_NONE: no store):
 * MX_EINVAL saying why not. AMP runs in the data strategy, whose replicas update their own f32
 * master weights once the summed gradient is known to be finite; a dist_async server updates
 * at every push instead, before any such check could run (MX_KV_AMP_OK). */
int mx_amp_check(mx_strategy_kind strategy, mx_kv_mode kvstore, mx_amp amp);

/* The deviation of normal initialisation a configuration asks for (0.01 unless set). */
static inline float mx_init_sigma(const mx_strategy_config *c) { return c->init_sigma > 0 ? c->init_sigma : 0.01f; }
/* Whether clipping by the global norm (clip_norm > 0) runs with the strategy and kvstore
 * (MX_KV_NONE: no store): MX_EINVAL saying why not. The norm is the whole model's over every
 * device and rank: data clips the summed gradient every replica pulls (the store then has no
 * updater, as under AMP), which a dist_async server never holds; model adds the stages' sums,
 * layer the shards' (docs/parallelism.md, Optimizers). */
int mx_clip_check(mx_strategy_kind strategy, mx_kv_mode kvstore, double clip_norm);
/* Those built: "data|model|layer" (every strategy the CLI knows is base/config.h's
 * mx_strategy_kind_names()). */
const char *mx_strategy_names(void);

/* Splits a batch of n over k devices by relative weights (NULL = even), as MXNet's
 * work_load_list: round(w_i * n / sum w), the last device takes the remainder. Fails if a
 * device would get no sample. */
int mx_split_batch(int n, int k, const double *weights, int *counts);

#endif
