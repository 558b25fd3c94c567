/* The training loop shared by `mxbench train` and every sweep run: data, strategy steps,
 * per-step timings, per-epoch evaluation, and the run record the results store keeps. */
#ifndef MX_TRAINER_H
#define MX_TRAINER_H

#include "results/record.h"
#include "strategies/strategy.h"
#include "engine/core/backends.h"

#include <stdio.h>

typedef struct {
    const char *workload;
    const char *dataset;    /* "fashion-mnist" (the default directory), "idx" (data_dir), "synthetic" */
    const char *data_dir;
    /* the vocabularies' words, parsed once by the CLI (base/config.h) */
    mx_strategy_kind strategy;
    mx_kv_mode kvstore;     /* the mode asked for; a run with no store records none */
    const char *backend;    /* a backend kind (mx_backend_names()); NULL = cpu */
    int devices, threads_per_device;
    int batch;              /* global batch per step; a dist_* worker's own batch */
    int epochs, steps;      /* exactly one is > 0 */
    int warmup_steps, repeats, seed;
    double lr, momentum, wd;
    /* the optimizer (engine/core/optim.h): SGD (momentum) or AdamW (beta1, beta2, eps), and
     * clipping of the summed gradient by its global norm (0: off) */
    mx_optim_kind optimizer;
    double beta1, beta2, eps, clip_norm;
    double warmup_epochs, warmup_start_lr;
    const char *lr_schedule; /* after the warmup: "constant" or "cosine" (engine/core/optim.h) */
    double target_acc;
    double target_loss;     /* language models: time to this validation loss (0: none) */
    double work_load[MX_MAX_DEVICES];
    int nwork_load;         /* 0 = even split */
    const char *init;       /* xavier | normal; NULL: the workload's (mx_train_init) */
    FILE *log;              /* progress lines; NULL = silent */
    int log_interval;       /* batches between Speedometer lines (speed, train accuracy); 0 = none */
    double *flops_out;      /* if set, receives the model's forward FLOPs per sample */
    /* dist_* kvstores: the MPI job this worker belongs to (NULL otherwise). The global batch
     * is then workers x batch: every worker shuffles alike and trains its own slice of each
     * global batch (as `local` with workers x batch), so all run the same number of steps */
    mx_cluster *cluster;
    double bucket_mb;       /* bucket size in MiB: dist_allreduce (0: 25), device (0: each key alone) */
    /* if set, the trained weights of the last repeat are written there (worker 0 of a dist_*
     * job): raw little-endian f32, in the model's parameter order, crash-safe */
    const char *save_params;
    /* if set, the initial weights, as the first step finds them, are written there in the
     * same form (first repeat; every repeat starts from them); and the model's tensor table,
     * which float of those files is which tensor (harness/param_table.h): what another
     * framework needs to start from the same weights (bench/torch_gpt.py) */
    const char *save_init, *param_table;
    /* model (pipeline) only: the stage cut ("auto" or NULL: balanced; "6,3,3"), micro-batches
     * per batch (0: the pipeline's default, 4 per stage) and the schedule (NULL: 1f1b; "gpipe") */
    const char *partition;
    int micro_batches;
    const char *schedule;
    /* data with a kvstore that exchanges gradients: the compressor of pushes (kvstore/compressor.h)
     * and its settings (2bit's threshold, topk's ratio) */
    mx_gc_kind compression;
    double gc_threshold, gc_topk_ratio;
    /* mixed precision (engine/core/amp.h; data strategy, mx_amp_check) */
    mx_amp amp;
    /* if set, a timeline of trace_steps steps from the first timed one (first repeat) is
     * written there as a Chrome trace (engine/core/trace.h; a dist_* job's: worker 0's) */
    const char *trace;
    int trace_steps;
} mx_train_config;

void mx_train_config_defaults(mx_train_config *c);
/* The initialiser c runs: --init, else normal for language models (GPT-2's, sigma 0.02) and
 * xavier for the image models. */
const char *mx_train_init(const mx_train_config *c);

/* Checks every field against what mxbench accepts (base/limits.h): MX_EINVAL with a
 * message naming the value and the accepted range. Shared by `train` and `sweep`, so both
 * accept the same things; what depends on the data set is checked once it is loaded. */
int mx_train_config_check(const mx_train_config *c);

/* Runs the training described by c and fills rec (configuration, series, derived
 * figures). Returns a negative status on bad input or failure (with mx_last_error).
 * A run whose loss diverged is not a failure of the harness: it returns MX_OK with
 * rec->status "diverged" and rec->reason naming the step, the loss and the rule (see
 * MX_DIVERGE_* in trainer.c); its series up to there and its derived figures are kept. */
int mx_train_run(const mx_train_config *c, mx_run_record *rec);


#endif
