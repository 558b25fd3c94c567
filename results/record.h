/* One run of a study as the harness records it: its configuration, its outcome, the raw
 * per-step series and the figures derived from them. This is what a child run hands to the
 * sweep and what the HDF5 store (results.h) writes and reads back; SCHEMA.md maps each
 * field to its place in the file. */
#ifndef MX_RECORD_H
#define MX_RECORD_H

#include "base/config.h" /* the vocabularies the string fields name: classify them through it */
#include "metrics.h"

#include <stddef.h>

/* One rank of a dist_* run (MPI job), as worker 0 gathered it at the end. */
typedef struct {
    int rank;                /* in MPI_COMM_WORLD */
    char host[64];
    char role[8];            /* worker | server */
    int steps;               /* timed steps this worker ran (servers: 0) */
    double step_min, step_median, step_p90, step_max; /* seconds, over its own timed steps (servers: NaN) */
    double bytes_per_step;   /* sent to and received from other ranks, per timed step of worker 0 */
    double push_time, pull_time; /* seconds per step in pushes and in waiting for pulls (servers: NaN) */
    double busy_time;        /* servers: seconds per step summing and updating (workers: NaN) */
} mx_rank_row;

/* One device of a run, as its strategy measured it over the timed and untimed steps. */
typedef struct {
    int device;              /* 0..gpus-1 */
    int first_layer, last_layer; /* model: the stage's top-level layers [first, last) (the cut); else all */
    double bubble;           /* model: idle share of its step windows; NaN otherwise */
    double mem_params, mem_optim, mem_peak; /* bytes, as the allocator counted them (NaN: not measured) */
    double bytes_per_step;   /* sent to the other devices per step */
    int inflight_max;        /* model: most micro-batches held at once; 0 otherwise */
    double busy_time;        /* seconds per step it computed (data, model; NaN for layer): a straggler's is longest */
} mx_device_row;

/* One top-level layer of a run's model (a residual block is one). */
typedef struct {
    int layer;               /* its index */
    char kind[16];           /* conv2d, dense, residual, ... */
    int device;              /* model: the stage (device) holding it; -1 otherwise */
    double bytes_per_step;   /* layer: its collectives, all devices; model: what crosses the stage
                              * boundary after it (0 inside a stage); NaN where nothing moves per layer */
} mx_layer_row;

typedef struct {
    /* ---- configuration: attributes of /runs/<id>; axes.c lists these fields as a table */
    char id[32];           /* group name under /runs, e.g. "r0007" */
    char workload[32];     /* mlp, lenet, resnet18 */
    char dataset[64];      /* "fashion-mnist", "synthetic", or the --data directory */
    char strategy[16];     /* data, model, layer */
    char kvstore[24];      /* local, device, dist_sync, ... ("none" for one device without kvstore) */
    char compression[16];  /* none, 2bit, topk, fp16 */
    char amp[8];           /* off, fp16, bf16 */
    char device_type[8];   /* cpu or cuda */
    char lr_scaling[8];    /* none, linear, sqrt */
    char batch_mode[12];   /* per-device or global */
    int gpus;              /* device count */
    int batch;             /* the --batch axis value, read per batch_mode */
    int global_batch;      /* samples per step over all devices */
    double base_lr;        /* --lr axis value, before scaling */
    double lr;             /* learning rate after lr scaling */
    double momentum, wd;
    double warmup_epochs;  /* gradual lr warmup (Goyal et al.), 0 = none */
    int epochs;            /* 0 when the length is given by steps */
    int steps;             /* 0 when the length is given by epochs */
    int warmup_steps;      /* leading steps excluded from the timings */
    int repeats;           /* repeats of the whole training, each from the same seed */
    int seed;
    int threads_per_device;
    double target_acc;     /* time-to-accuracy target; 0 = none */
    double target_loss;    /* language models: time-to-loss target (validation loss); 0 = none */
    int test_samples;      /* size of the test set behind test_acc (for its binomial error) */
    int workers;           /* processes that train (1 without MPI) */
    int servers;           /* parameter-server processes (0 without) */
    int micro_batches;     /* model: micro-batches per batch (1 on every other strategy) */
    char schedule[8];      /* model: gpipe | 1f1b (gpipe on every other strategy) */
    char partition[64];    /* model: "auto" or top-level layers per stage as asked, "6,3,3" */
    double gc_threshold;   /* 2bit compression's threshold (0.5 on every other row) */
    double gc_topk_ratio;  /* topk compression's share of values sent (0.01 on every other row) */
    char lr_schedule[12];  /* the lr after warmup: constant or cosine (engine/core/optim.h) */
    char optimizer[8];     /* sgd or adamw (base/config.h's optimizers) */
    double beta1, beta2, eps; /* adamw's (0.9, 0.999, 1e-8 on sgd rows) */
    double clip_norm;      /* the global norm gradients were clipped to; 0 = no clipping */

    /* ---- outcome */
    char status[12];       /* one of mx_record_statuses: ok, failed, skipped, diverged */
    char reason[2048];     /* failed: exit status and stderr tail; skipped: why it cannot run;
                            * diverged: the step and the loss that showed it */
    int exit_status;       /* child's exit status (0 ok; 128+signal when killed) */

    /* ---- series (datasets under /runs/<id>); owned by the record, freed by mx_record_free */
    int nsteps;            /* timed steps over all repeats, warmup excluded */
    double *step_time;     /* [nsteps] seconds, wall clock of the whole step */
    double *phase_time;    /* [nsteps][MX_NPHASES] seconds */
    int nloss;
    float *loss;           /* [nloss] training loss of every step of the first repeat */
    float *loss_scale;     /* [nloss] fp16 AMP: the loss scale each of those steps ran with; NULL otherwise */
    int nepochs;
    double *test_acc;      /* [nepochs] test accuracy after each epoch (first repeat) */
    double *epoch_time;    /* [nepochs] cumulative training seconds at each epoch's end */
    double *val_loss;      /* [nepochs] language models: held-out loss after each epoch; NULL for images */
    int nranks;            /* dist_* runs: every rank of the MPI job (0 otherwise) */
    mx_rank_row *ranks;    /* [nranks] */
    int oversubscribed;    /* 1: more ranks x threads than a host has cores (timings not meaningful) */
    /* the host beside the run (harness/hostload.h): mean threads of other programs ready to
     * run, the largest 1-minute load average, the CPU share stolen by a hypervisor (NaN
     * where not read), and noisy: 1 when those say another program competed for the cores */
    double host_others, host_load, host_steal;
    int noisy;
    char counted_by[16];   /* "cachegrind" or "perf": a run of `mxbench count` (counts, no timings); else "" */
    char amp_kernels[16];  /* how AMP's GEMMs ran: "amx_bf16" (oneDNN's on AMX tiles), "avx512_bf16"
                            * on the CPU's bf16 units, "emulated" (f32 arithmetic on half values),
                            * "tensor_cores" (CUDA); "" with amp off (engine/backend/backend.h) */
    int ndevices;          /* strategies that report per device (model, layer, data): one row each */
    mx_device_row *devices;/* [ndevices] */
    int nlayers;           /* the model's top-level layers, where the strategy reports them */
    mx_layer_row *layers;  /* [nlayers] */

    /* ---- derived (mx_record_derive, mx_records_derive_scaling); NaN where undefined */
    double throughput;          /* samples/s, median over timed steps and repeats */
    double throughput_ci_low;   /* 95% confidence interval of that median */
    double throughput_ci_high;
    double throughput_iqr;      /* inter-quartile range of per-step samples/s */
    double throughput_agg;      /* samples trained / seconds of training, all steps and repeats
                                 * (what MXNet's "Time cost" and epoch-level logs report) */
    double step_time_median;    /* seconds */
    double speedup;             /* throughput / throughput of the same config on one device (NaN: none) */
    double efficiency;          /* speedup / gpus */
    double final_test_acc;      /* last entry of test_acc */
    double time_to_acc;         /* seconds of training until test_acc >= target_acc */
    /* language models (NaN for images): tokens per sample (the context; 0 for images), training
     * FLOPs per token (6N + 12 L C T, workloads/gpt.h) and the peak FLOP/s the run's devices
     * offer (peak_source says whence); derived from those: tokens/s (throughput x tokens),
     * the last held-out loss and its perplexity, time to target_loss, and the model FLOPs
     * utilisation, tokens/s x FLOPs per token / peak */
    int tokens_per_sample;
    double flops_per_token, peak_flops;
    char peak_source[48];
    double tokens_per_s, final_val_loss, perplexity, time_to_loss, mfu;
    double wall_time;           /* seconds for the whole run, all repeats */
    /* the figures of the per-step counters (metrics.def), measured by the run itself. The
     * first two keep their names, which code and files had before the table */
    union {
        double metrics[MX_NCOUNTERS];
        struct {
            double bytes_per_step;  /* metrics[MX_COUNTER_BYTES] */
            double comm_overlap;    /* metrics[MX_COUNTER_COMM_HIDDEN] */
        };
    };
    int tf32;              /* 1: CUDA f32 GEMMs and convolutions were allowed TF32 (--tf32); the last
                            * field, so that adding it moved no other */
} mx_run_record;

/* The values a record's status may take, '|'-separated: "ok|failed|skipped|diverged".
 * ok: trained to the end; failed: did not finish (crash, kill, timeout, error); skipped:
 * cannot run in this build; diverged: the loss turned non-finite or grew far beyond its
 * start (its timings are kept, but it is not a normal point of a scaling plot). */
#define MX_RECORD_STATUSES "ok|failed|skipped|diverged"
/* 1 when s is one of MX_RECORD_STATUSES. */
int mx_record_status_known(const char *s);

/* Zeroes the record and sets the derived fields to NaN and the strings to defaults; fields
 * added to axes.c after schema 1 take their default (what a file without them meant). */
void mx_record_init(mx_run_record *r);
void mx_record_free(mx_run_record *r);
/* Drops the record's series and per-rank, per-device and per-layer tables without freeing
 * them (another record owns them now), keeping its scalars. */
void mx_record_forget_series(mx_run_record *r);
/* Deep copy (series duplicated). */
int mx_record_copy(mx_run_record *dst, const mx_run_record *src);

/* Canonical text of the configuration (everything that defines the experiment, not its
 * outcome nor its id) used to match runs across result files and for --resume. */
void mx_record_config_key(const mx_run_record *r, char *buf, size_t n);
/* Same key without the device, worker and server counts, the kvstore and the compression:
 * runs with equal series keys whose exchanges match (mx_record_exchange_matches) form one
 * scaling series. */
void mx_record_series_key(const mx_run_record *r, char *buf, size_t n);
/* Equal kvstores and compressions, or one of them a run with no kvstore (kvstore "none",
 * nothing compressed): a one-device run is the first point of the series of every kvstore
 * and every compressor. */
int mx_record_exchange_matches(const mx_run_record *a, const mx_run_record *b);
/* Equal kvstores and compressions, strictly (the exchange of two runs that both have one). */
int mx_record_same_exchange(const mx_run_record *a, const mx_run_record *b);

/* Fills throughput*, step_time_median, final_test_acc, time_to_acc from the series. */
void mx_record_derive(mx_run_record *r);
/* Fills speedup and efficiency of every ok record against the ok one-device record of the
 * same series (of its own kvstore, where one without kvstore is there too); NaN in a series
 * without a one-device run. */
void mx_records_derive_scaling(mx_run_record *recs, int n);

#endif
