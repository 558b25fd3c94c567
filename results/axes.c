/* The configuration table (axes.h). The entries are in the order of the configuration key,
 * which is what existing result files were matched by: keep that order, and append new
 * fields at the end (with in_v1 = 0, so that a file without them still matches). */
#include "axes.h"

#include "base/config.h"
#include "base/limits.h"
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AX(field, T) #field, MX_AXIS_##T, offsetof(mx_run_record, field), sizeof(((mx_run_record *)0)->field)

const mx_axis mx_axes[] = {
    {AX(workload, STR), "workload", 10, "mlp|lenet|resnet18|gpt-mini|gpt-bench|gpt2-124m", 0, 0, 0, "lenet", "LIST",
     "models: mlp, lenet, resnet18, gpt-mini, gpt-bench, gpt2-124m (default lenet)", "workload", NULL,
     MX_CHILD_ALWAYS, 1, 1, 1, 1, "%s", 0},
    {AX(dataset, STR), "dataset", 0, "fashion-mnist|synthetic", 0, 0, 0, "fashion-mnist", "NAME",
     "fashion-mnist or synthetic (default fashion-mnist)", "dataset", "data", MX_CHILD_ALWAYS, 1, 1, 1, 0, NULL, 0},
    {AX(strategy, STR),
     "strategies",
     20,
     NULL,
     0,
     0,
     0,
     "data",
     "LIST",
     "parallel strategies: data, model, layer (default data)",
     "strategy",
     NULL,
     MX_CHILD_ALWAYS,
     1,
     1,
     1,
     2,
     "%s",
     0,
     NULL,
     mx_strategy_kind_names},
    /* "none" on one device (no kvstore, as MXNet); matched apart from the series key */
    {AX(kvstore, STR),
     "kvstore",
     30,
     NULL,
     0,
     0,
     0,
     "device",
     "LIST",
     "local, device (one process); dist_sync, dist_device_sync, dist_async, dist_allreduce (MPI "
     "jobs, one worker per device; default device)",
     "kvstore",
     NULL,
     MX_CHILD_IF_SET,
     1,
     0,
     1,
     4,
     "kv=%s",
     0,
     NULL,
     mx_kv_mode_names},
    {AX(compression, STR), "compression", 40, MX_GC_CHOICES, 0, 0, 0, "none", "LIST",
     "none, 2bit, topk, fp16 (default none)", "compression", NULL, MX_CHILD_IF_SET, 1, 0, 1, 7, "gc=%s", 1},
    {AX(amp, STR),    "amp", 50, NULL, 0, 0,        0, "off", "LIST",      "off, fp16, bf16 (default off)", "amp", NULL,
     MX_CHILD_IF_SET, 1,     1,  1,    8, "amp=%s", 1, NULL,  mx_amp_names},
    {AX(device_type, STR), NULL, 0, NULL, 0, 0, 0, "cpu", NULL, NULL, NULL, NULL, MX_CHILD_NO, 1, 1, 1, 0, NULL, 0},
    {AX(gpus, INT), "gpus", 90, NULL, 1, MX_MAX_DEVICES, 0, "1,2", "LIST", "device counts (default 1,2)", "gpus", NULL,
     MX_CHILD_ALWAYS, 1, 0, 1, 3, "x%d", 0},
    /* the child trains the global batch (global_batch below) */
    {AX(batch, INT), "batch", 60, NULL, 1, MX_MAX_BATCH, 0, "128", "LIST",
     "batch sizes, read per --batch-mode (default 128)", NULL, NULL, MX_CHILD_NO, 1, 1, 1, 0, NULL, 0},
    {AX(batch_mode, STR), "batch-mode", 0, "per-device|global", 0, 0, 0, "per-device", "MODE",
     "per-device (as MXNet) or global (default per-device)", NULL, NULL, MX_CHILD_NO, 1, 1, 1, 0, NULL, 0},
    /* follows from gpus and batch_mode, so it belongs to the configuration key only */
    {AX(global_batch, INT), NULL, 0, NULL, 0, 0, 0, "0", NULL, NULL, "batch", NULL, MX_CHILD_ALWAYS, 1, 0, 1, 5,
     "batch=%d", 0},
    {AX(base_lr, DBL), "lr", 70, NULL, 0, MX_MAX_LR, 1, "0.05", "LIST", "base learning rates (default 0.05)", NULL,
     NULL, MX_CHILD_NO, 1, 1, 1, 0, NULL, 0},
    {AX(lr_scaling, STR), "lr-scaling", 0, "none|linear|sqrt", 0, 0, 0, "none", "RULE",
     "none, linear or sqrt in the global batch vs the first device count (default none)", NULL, NULL, MX_CHILD_NO, 1, 1,
     1, 0, NULL, 0},
    {AX(momentum, DBL), "momentum", 0, NULL, 0, 1, 0, "0.9", "X", "SGD momentum, below 1 (default 0.9)", "momentum",
     NULL, MX_CHILD_ALWAYS, 1, 1, 1, 0, NULL, 0},
    {AX(wd, DBL), "wd", 0, NULL, 0, 1, 0, "0.0001", "X", "weight decay, below 1 (default 1e-4)", "wd", NULL,
     MX_CHILD_ALWAYS, 1, 1, 1, 0, NULL, 0},
    /* with --warmup-from the base lr (sweep_run.c): the ramp goes from it to the scaled lr */
    {AX(warmup_epochs, DBL), "warmup-epochs", 0, NULL, 0, MX_MAX_EPOCHS, 0, "0", "X",
     "gradual warmup from the base lr over X epochs (default 0)", "warmup-epochs", NULL, MX_CHILD_IF_SET, 1, 1, 1, 0,
     NULL, 0},
    {AX(epochs, INT), "epochs", 0, NULL, 1, MX_MAX_EPOCHS, 0, "1", "N", "epochs per run (default 1)", "epochs", NULL,
     MX_CHILD_IF_SET, 1, 1, 1, 0, NULL, 0},
    {AX(steps, INT), "steps", 0, NULL, 1, MX_MAX_STEPS, 0, "0", "N",
     "steps per run instead of epochs (throughput only)", "steps", NULL, MX_CHILD_IF_SET, 1, 1, 1, 0, NULL, 0},
    {AX(warmup_steps, INT), "warmup-steps", 0, NULL, 0, MX_MAX_WARMUP_STEPS, 0, "0", "N",
     "leading steps left out of the timings (default 0, 5 with --steps)", "warmup-steps", NULL, MX_CHILD_ALWAYS, 1, 1,
     1, 0, NULL, 0},
    {AX(repeats, INT), "repeat", 0, NULL, 1, MX_MAX_REPEATS, 0, "1", "N",
     "repeats of each run for the timing statistics (default 1)", "repeat", NULL, MX_CHILD_ALWAYS, 1, 1, 1, 0, NULL, 0},
    {AX(seed, INT), "seed", 0, NULL, 0, MX_MAX_SEED, 0, "1", "N", "seed of every run (default 1)", "seed", NULL,
     MX_CHILD_ALWAYS, 1, 1, 1, 0, NULL, 0},
    /* 0 = cores / largest device count, resolved by the sweep before planning */
    {AX(threads_per_device, INT), "threads-per-device", 0, NULL, 1, MX_MAX_THREADS_PER_DEVICE, 0, "0", "N",
     "CPU threads per device (default cores / largest device count)", "threads-per-device", NULL, MX_CHILD_ALWAYS, 1, 1,
     1, 0, NULL, 0},
    /* not in the keys: the scaled lr follows from base_lr and lr_scaling, the target only
     * adds a figure */
    {AX(lr, DBL), NULL, 0, NULL, 0, 0, 0, "0", NULL, NULL, "lr", NULL, MX_CHILD_ALWAYS, 0, 0, 1, 6, "lr=%.4g", 0},
    {AX(target_acc, DBL), "target-acc", 0, NULL, 0, 1, 0, "0", "X", "record time to reach this test accuracy, above 0",
     "target-acc", NULL, MX_CHILD_IF_SET, 0, 0, 1, 0, NULL, 0},
    /* ---- added after schema 1 (in_v1 0: a file without them means their default) */
    /* dist_* runs: the processes of the MPI job (no sweep axis of their own: the planner
     * derives them, one worker per device and --servers or as many servers as workers). Both
     * are in the configuration key (two servers are a different experiment from one), not in
     * the series key: they grow along a series with the device count, as global_batch does */
    {AX(workers, INT), NULL, 0, NULL, 0, 0, 0, "1", NULL, NULL, NULL, NULL, MX_CHILD_NO, 1, 0, 0, 0, NULL, 0},
    {AX(servers, INT), NULL, 0, NULL, 0, 0, 0, "0", NULL, NULL, NULL, NULL, MX_CHILD_NO, 1, 0, 0, 9, "srv=%d", 1},
    /* the model strategy's pipeline. Every other row holds
     * the defaults (one micro-batch is what a data or layer step is), so that rows of the other
     * strategies keep the keys they had; the child gets them only when they differ */
    {AX(micro_batches, INT), "micro-batches", 35, NULL, 1, MX_MAX_MICRO_BATCHES, 0, "1", "LIST",
     "model rows: micro-batches each batch is split into (default 4 per device, at most the batch)", "micro-batches",
     NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 10, "m=%d", 2},
    {AX(schedule, STR), "schedule", 36, "gpipe|1f1b", 0, 0, 0, "gpipe", "LIST",
     "model rows: pipeline schedules, gpipe or 1f1b (default 1f1b)", "schedule", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 11,
     "%s", 2},
    {AX(partition, STR), "partition", 0, NULL, 0, 0, 0, "auto", "CUT",
     "model rows: auto (stages balanced by a short profile) or top-level layers per stage, e.g. 6,3,3 (default auto)",
     "partition", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 12, "cut=%s", 2},
    /* gradient compression's settings: rows of the other compressors hold the defaults */
    {AX(gc_threshold, DBL), "threshold", 0, NULL, 0, 1e6, 1, "0.5", "X",
     "2bit rows: the threshold a residual must reach to be sent, as MXNet (default 0.5)", "threshold", NULL,
     MX_CHILD_IF_DIFFERS, 1, 1, 0, 13, "thr=%g", 2},
    {AX(gc_topk_ratio, DBL), "topk-ratio", 0, NULL, 0, 1, 1, "0.01", "X",
     "topk rows: the share of each key's values sent (default 0.01)", "topk-ratio", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0,
     14, "k=%g", 2},
    /* before this field, every run trained at a constant lr after its warmup */
    {AX(lr_schedule, STR),
     "lr-schedule",
     72,
     "constant|cosine",
     0,
     0,
     0,
     "cosine",
     "LIST",
     "the lr after the warmup: cosine (half a cosine down to 0 at the end of the run) or constant "
     "(default cosine)",
     "lr-schedule",
     NULL,
     MX_CHILD_ALWAYS,
     1,
     1,
     0,
     15,
     "%s-lr",
     2,
     "constant"},
    /* the optimizer: before these fields every run was SGD without clipping, their defaults.
     * AdamW's settings hold their defaults on SGD rows and reach a child only when they differ */
    {AX(optimizer, STR), "optimizer", 0, NULL, 0, 0, 0, "sgd", "NAME",
     "sgd or adamw (AdamW: --beta1, --beta2, --eps, decoupled --wd) (default sgd)", "optimizer", NULL,
     MX_CHILD_IF_DIFFERS, 1, 1, 0, 16, "%s", 2, NULL, mx_optim_names},
    {AX(beta1, DBL), "beta1", 0, NULL, 0, 1, 0, "0.9", "X", "adamw: decay of the first moment, below 1 (default 0.9)",
     "beta1", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 17, "b1=%g", 2},
    {AX(beta2, DBL), "beta2", 0, NULL, 0, 1, 0, "0.999", "X",
     "adamw: decay of the second moment, below 1 (default 0.999)", "beta2", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 18,
     "b2=%g", 2},
    {AX(eps, DBL), "eps", 0, NULL, 0, 1, 1, "1e-08", "X", "adamw: added to the second moment's root (default 1e-8)",
     "eps", NULL, MX_CHILD_IF_DIFFERS, 1, 1, 0, 19, "eps=%g", 2},
    {AX(clip_norm, DBL), "clip-norm", 0, NULL, 0, MX_MAX_CLIP_NORM, 0, "0", "X",
     "clip each step's gradient to this global L2 norm (default 0: off)", "clip-norm", NULL, MX_CHILD_IF_SET, 1, 1,
     0, 20, "clip=%g", 1},
    /* language models: like target_acc, not in the keys (it only adds a figure) */
    {AX(target_loss, DBL), "target-loss", 0, NULL, 0, 1000, 1, "0", "X",
     "language models: record time to reach this validation loss, above 0", "target-loss", NULL, MX_CHILD_IF_SET, 0,
     0, 0, 0, NULL, 0},
};
const int mx_naxes = (int)(sizeof mx_axes / sizeof mx_axes[0]);

const mx_axis *mx_axis_find(const char *name)
{
    for (int i = 0; i < mx_naxes; i++)
        if (strcmp(mx_axes[i].name, name) == 0) return &mx_axes[i];
    return NULL;
}

const char *mx_axis_choices(const mx_axis *a) { return a->vocab ? a->vocab() : a->choices; }

void mx_axis_text(const mx_axis *a, const void *record, char *buf, size_t n)
{
    const char *p = (const char *)record + a->off;
    if (a->type == MX_AXIS_STR) snprintf(buf, n, "%.*s", (int)a->size, p);
    else if (a->type == MX_AXIS_INT) snprintf(buf, n, "%d", *(const int *)p);
    else snprintf(buf, n, "%.17g", *(const double *)p);
}

const char *mx_axis_absent(const mx_axis *a) { return a->absent ? a->absent : a->def; }

int mx_axis_is_set(const mx_axis *a, const void *record)
{
    const char *p = (const char *)record + a->off;
    if (a->type == MX_AXIS_INT) return *(const int *)p != 0;
    if (a->type == MX_AXIS_DBL) return *(const double *)p != 0;
    return p[0] && !mx_config_unset(p);
}

int mx_axis_is_default(const mx_axis *a, const void *record)
{
    /* the default as the field would hold it, so that 0.05 and "0.05" compare equal */
    mx_run_record def;
    mx_axis_set(a, &def, a->def);
    char v[256], d[256];
    mx_axis_text(a, record, v, sizeof v);
    mx_axis_text(a, &def, d, sizeof d);
    return strcmp(v, d) == 0;
}

int mx_axis_to_child(const mx_axis *a, const void *record)
{
    if (!a->train_opt || a->child == MX_CHILD_NO) return 0;
    if (a->child == MX_CHILD_IF_SET) return mx_axis_is_set(a, record);
    if (a->child == MX_CHILD_IF_DIFFERS) return !mx_axis_is_default(a, record);
    return 1;
}

int mx_axis_in_label(const mx_axis *a, const void *record)
{
    if (a->label_rank <= 0) return 0;
    if (a->label_if_set == 1) return mx_axis_is_set(a, record);
    if (a->label_if_set == 2) return !mx_axis_is_default(a, record);
    return 1;
}

void mx_axis_set(const mx_axis *a, void *record, const char *text)
{
    char *p = (char *)record + a->off;
    if (a->type == MX_AXIS_STR) snprintf(p, a->size, "%s", text);
    else if (a->type == MX_AXIS_INT) *(int *)p = (int)strtol(text, NULL, 10);
    else *(double *)p = strtod(text, NULL);
}
