/* Upper bounds on every count mxbench accepts, stated once for every module: the option
 * tables, --help, the sweep's axes and the shared validation of `train` and `sweep`
 * (harness/trainer.c mx_train_config_check) use these.
 * Each bound keeps the arithmetic built on it (steps x epochs x repeats, batch x sample
 * size, threads) far from overflow and the memory it sizes finite. */
#ifndef MX_LIMITS_H
#define MX_LIMITS_H

#define MX_MAX_DEVICES 64             /* devices of one run (threads of one process, or ranks) */
#define MX_MAX_BATCH 65536            /* samples per step */
#define MX_MAX_EPOCHS 10000
#define MX_MAX_STEPS 4000000          /* --steps */
#define MX_MAX_REPEATS 1000
#define MX_MAX_TOTAL_STEPS 4000000    /* steps of all epochs and repeats: the series' memory */
#define MX_MAX_WARMUP_STEPS 4000000
#define MX_MAX_THREADS_PER_DEVICE 256
#define MX_MAX_THREADS_TOTAL 1024     /* devices x threads per device */
#define MX_MAX_SEED 2147483647
#define MX_MAX_LR 1e6
#define MX_MAX_WORK_LOAD 1e6          /* one device's relative share of a batch */
#define MX_MAX_TIMEOUT_S 1e7          /* sweep --timeout, seconds (about 115 days) */
#define MX_MAX_LOG_INTERVAL 1000000   /* batches */
#define MX_MAX_TRACE_STEPS 1000       /* steps of a --trace timeline (a few thousand events each) */
#define MX_MAX_BUCKET_MB 2047         /* dist_allreduce --bucket-mb (MPI counts are ints: below 2 GiB) */
#define MX_MAX_SERVERS 64             /* --servers: parameter-server ranks */
#define MX_MAX_MICRO_BATCHES 4096     /* --micro-batches: each holds its activations */
#define MX_MAX_CLIP_NORM 1e6          /* --clip-norm: the gradient's global L2 norm */

/* The pipeline's default micro-batches (strategies/strategy.h says why): 4 per stage on 2 or
 * more stages, at most the batch's samples, 1 on one stage. Here, below strategies/, so that
 * results/ can tell a default from a chosen count (a series of the default spans device
 * counts whose counts differ). */
#define MX_PIPELINE_MICRO_PER_STAGE 4
static inline int mx_pipeline_default_micro_batches(int stages, int batch)
{
    if (stages <= 1) return 1;
    const int m = MX_PIPELINE_MICRO_PER_STAGE * stages;
    return batch >= 1 && m > batch ? batch : m;
}
#define MX_MAX_GC_THRESHOLD 1e6       /* --threshold of 2bit compression */
/* gradient compression's defaults: MXNet's 2bit threshold, Deep Gradient Compression's 1% */
#define MX_GC_THRESHOLD_DEFAULT 0.5
#define MX_GC_TOPK_RATIO_DEFAULT 0.01

#endif
