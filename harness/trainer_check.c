/* What `train` and `sweep` accept (trainer.h, mx_train_config_check): every field against
 * the bounds of base/limits.h and the rules between fields and strategies, with messages
 * naming the value and what is accepted. */
#include "trainer.h"
#include "base/limits.h"
#include "engine/core/optim.h"
#include "base/status.h"
#include "kvstore/compressor.h"
#include "kvstore/kvstore.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"

#include <string.h>

/* Compression acts on what a kvstore exchanges: data-parallel gradients between devices or
 * ranks. MXNet refuses it on `local`, which sums on the host with nothing on a wire. */
static int check_compression(const mx_train_config *c)
{
    const char *gc = mx_gc_name(c->compression), *strategy = mx_strategy_name(c->strategy);
    if (!mx_compressor_built(c->compression))
        return mx_error(MX_EINVAL, "compression '%s': accepted %s", gc, mx_compressor_names());
    if (!(c->gc_threshold > 0 && c->gc_threshold <= MX_MAX_GC_THRESHOLD))
        return mx_error(MX_EINVAL, "2bit threshold %g: accepted above 0 and at most %g", c->gc_threshold,
                        MX_MAX_GC_THRESHOLD);
    if (!(c->gc_topk_ratio > 0 && c->gc_topk_ratio <= 1))
        return mx_error(MX_EINVAL, "topk ratio %g: accepted above 0 and at most 1", c->gc_topk_ratio);
    if (c->compression == MX_GC_NONE) return MX_OK;
    if (c->strategy != MX_STRATEGY_DATA)
        return mx_error(MX_EINVAL, "--compression %s with --strategy %s: compression acts on the gradients a "
                        "data-parallel kvstore exchanges; the %s strategy has none", gc, strategy, strategy);
    if (c->devices < 2 && !mx_kv_mode_has(c->kvstore, MX_KV_DIST))
        return mx_error(MX_EINVAL, "--compression %s on one device: nothing is exchanged; accepted with --gpus 2 "
                        "or more, or a dist_* kvstore", gc);
    return mx_kv_compression_check(c->kvstore, c->compression);
}

int mx_train_config_check(const mx_train_config *c)
{
    if (!mx_workload_find(c->workload))
        return mx_error(MX_EINVAL, "unknown workload '%s' (known: %s)", c->workload, mx_workload_names());
    const char *strategy = mx_strategy_name(c->strategy), *kvstore = mx_kv_mode_name(c->kvstore);
    if (!mx_strategy_find(c->strategy))
        return mx_error(MX_EINVAL, "strategy '%s' is %s (available: %s)", strategy,
                        c->strategy >= 0 && c->strategy < MX_NSTRATEGIES ? "planned but not in this build yet"
                                                                         : "unknown",
                        mx_strategy_names());
    if (c->backend && !mx_backend_find(c->backend))
        return mx_error(MX_EINVAL, "backend '%s' is not in this build (available: %s)", c->backend, mx_backend_names());
    if (c->devices < 1 || c->devices > MX_MAX_DEVICES)
        return mx_error(MX_EINVAL, "device count %d: accepted 1..%d", c->devices, MX_MAX_DEVICES);
    const int dist = mx_kv_mode_has(c->kvstore, MX_KV_DIST);
    if ((c->devices > 1 || dist) && !mx_kv_mode_built(c->kvstore))
        return mx_error(MX_EINVAL, "kvstore '%s' is not in this build (available: %s)%s", kvstore, mx_kv_modes(),
                        dist ? "; the dist_* modes need a build with Open MPI "
                        "(apt-get install libopenmpi-dev openmpi-bin, then scripts/build.sh)" : "");
    if (c->cluster && c->nwork_load)
        return mx_error(MX_EINVAL, "--work-load with --kvstore %s: accepted only in one process (every worker's "
                        "devices take even shares)", kvstore);
    if (!(c->bucket_mb >= 0 && c->bucket_mb <= MX_MAX_BUCKET_MB))
        return mx_error(
            MX_EINVAL,
            "bucket size %g MiB: accepted 0 (the default: 25 for dist_allreduce, each key alone for device) up to %d",
            c->bucket_mb, MX_MAX_BUCKET_MB);
    if ((c->epochs > 0) == (c->steps > 0) || c->epochs < 0 || c->steps < 0)
        return mx_error(MX_EINVAL, "epochs %d, steps %d: give exactly one of them, as a positive number", c->epochs,
                        c->steps);
    if (c->epochs > MX_MAX_EPOCHS || c->steps > MX_MAX_STEPS)
        return mx_error(MX_EINVAL, "epochs %d, steps %d: accepted at most %d epochs or %d steps", c->epochs,
                        c->steps, MX_MAX_EPOCHS, MX_MAX_STEPS);
    if (c->batch < 1 || c->batch > MX_MAX_BATCH)
        return mx_error(MX_EINVAL, "batch %d: accepted 1..%d", c->batch, MX_MAX_BATCH);
    if (c->batch < c->devices)
        return mx_error(MX_EINVAL, "batch %d is smaller than the device count %d", c->batch, c->devices);
    if (c->repeats < 1 || c->repeats > MX_MAX_REPEATS)
        return mx_error(MX_EINVAL, "repeats %d: accepted 1..%d", c->repeats, MX_MAX_REPEATS);
    if ((long long)c->steps * c->repeats > MX_MAX_TOTAL_STEPS)
        return mx_error(MX_EINVAL, "%d steps x %d repeats: accepted at most %d steps in all", c->steps, c->repeats,
                        MX_MAX_TOTAL_STEPS);
    if (c->warmup_steps < 0 || c->warmup_steps > MX_MAX_WARMUP_STEPS || (c->steps && c->warmup_steps >= c->steps))
        return mx_error(MX_EINVAL, "--warmup-steps %d leaves no timed step of --steps %d (accepted: 0..%d)",
                        c->warmup_steps, c->steps, c->steps ? c->steps - 1 : MX_MAX_WARMUP_STEPS);
    if (!(c->lr > 0 && c->lr <= MX_MAX_LR))
        return mx_error(MX_EINVAL, "learning rate %g: accepted above 0 and at most %g", c->lr, MX_MAX_LR);
    if (!(c->momentum >= 0 && c->momentum < 1))
        return mx_error(MX_EINVAL, "momentum %g: accepted 0 <= momentum < 1", c->momentum);
    if (!(c->wd >= 0 && c->wd < 1)) return mx_error(MX_EINVAL, "weight decay %g: accepted 0 <= wd < 1", c->wd);
    if (c->optimizer < 0 || c->optimizer >= MX_NOPTIMS)
        return mx_error(MX_EINVAL, "optimizer %d: accepted %s", (int)c->optimizer, mx_optim_names());
    if (!(c->beta1 >= 0 && c->beta1 < 1)) return mx_error(MX_EINVAL, "beta1 %g: accepted 0 <= beta1 < 1", c->beta1);
    if (!(c->beta2 >= 0 && c->beta2 < 1)) return mx_error(MX_EINVAL, "beta2 %g: accepted 0 <= beta2 < 1", c->beta2);
    if (!(c->eps > 0 && c->eps <= 1)) return mx_error(MX_EINVAL, "eps %g: accepted above 0 and at most 1", c->eps);
    if (!(c->clip_norm >= 0 && c->clip_norm <= MX_MAX_CLIP_NORM))
        return mx_error(MX_EINVAL, "clip norm %g: accepted 0 (off) up to %g", c->clip_norm, MX_MAX_CLIP_NORM);
    if (!(c->warmup_epochs >= 0 && c->warmup_epochs <= (c->epochs ? c->epochs : MX_MAX_EPOCHS)))
        return mx_error(MX_EINVAL, "warmup epochs %g: accepted 0..%d (the epochs trained)", c->warmup_epochs,
                        c->epochs ? c->epochs : MX_MAX_EPOCHS);
    if (!mx_lr_schedule_find(c->lr_schedule))
        return mx_error(MX_EINVAL, "lr schedule '%s': accepted %s", c->lr_schedule ? c->lr_schedule : "",
                        mx_lr_schedule_names());
    /* a sweep may ramp down as well as up (base lr above a scaled lr) */
    if (c->warmup_epochs > 0 && !(c->warmup_start_lr > 0 && c->warmup_start_lr <= MX_MAX_LR))
        return mx_error(MX_EINVAL, "warmup start lr %g: accepted above 0 and at most %g", c->warmup_start_lr,
                        MX_MAX_LR);
    if (!(c->target_acc == 0 || (c->target_acc > 0 && c->target_acc <= 1)))
        return mx_error(MX_EINVAL, "target accuracy %g: accepted above 0 and at most 1", c->target_acc);
    if (c->seed < 0) return mx_error(MX_EINVAL, "seed %d: accepted 0..%d", c->seed, MX_MAX_SEED);
    if (c->threads_per_device < 1 || c->threads_per_device > MX_MAX_THREADS_PER_DEVICE)
        return mx_error(MX_EINVAL, "threads per device %d: accepted 1..%d", c->threads_per_device,
                        MX_MAX_THREADS_PER_DEVICE);
    if (c->devices * c->threads_per_device > MX_MAX_THREADS_TOTAL)
        return mx_error(MX_EINVAL, "%d devices x %d threads: accepted at most %d threads in all", c->devices,
                        c->threads_per_device, MX_MAX_THREADS_TOTAL);
    if (c->nwork_load && c->nwork_load != c->devices)
        return mx_error(MX_EINVAL, "work-load list has %d entries for %d devices", c->nwork_load, c->devices);
    for (int i = 0; i < c->nwork_load; i++)
        if (!(c->work_load[i] > 0 && c->work_load[i] <= MX_MAX_WORK_LOAD))
            return mx_error(MX_EINVAL, "work-load %g for device %d: accepted above 0 and at most %g", c->work_load[i],
                            i, MX_MAX_WORK_LOAD);
    const int model = c->strategy == MX_STRATEGY_MODEL, data = c->strategy == MX_STRATEGY_DATA;
    if (!model && (c->micro_batches > 1 || c->schedule || (c->partition && strcmp(c->partition, "auto") != 0)))
        return mx_error(MX_EINVAL, "--%s applies to the pipeline of --strategy model, not %s", c->micro_batches > 1
                        ? "micro-batches" : c->schedule ? "schedule" : "partition", strategy);
    if (c->micro_batches < 0 || c->micro_batches > MX_MAX_MICRO_BATCHES)
        return mx_error(MX_EINVAL, "micro-batches %d: accepted 1..%d", c->micro_batches, MX_MAX_MICRO_BATCHES);
    if (!data && c->nwork_load)
        return mx_error(MX_EINVAL, "--work-load with --strategy %s: a work-load list splits the batch of data "
                        "parallelism; the %s strategy gives every device %s", strategy, strategy,
                        model ? "a stage of layers" : "a share of every layer");
    if (!data && (c->cluster || dist))
        return mx_error(MX_EINVAL, "--kvstore %s with --strategy %s: the dist_* kvstores aggregate data-parallel "
                        "gradients; the %s strategy runs in one process and needs no kvstore", kvstore, strategy,
                        strategy);
    MX_TRY(check_compression(c));
    /* one device has no kvstore: what it is called does not matter */
    MX_TRY(mx_amp_check(c->strategy, c->devices > 1 || c->cluster ? c->kvstore : MX_KV_NONE, c->amp));
    MX_TRY(mx_clip_check(c->strategy, c->devices > 1 || c->cluster ? c->kvstore : MX_KV_NONE, c->clip_norm));
    if (c->init && strcmp(c->init, "xavier") != 0 && strcmp(c->init, "normal") != 0)
        return mx_error(MX_EINVAL, "initialiser '%s': accepted xavier or normal", c->init);
    return MX_OK;
}
