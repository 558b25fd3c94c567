/* What the model and layer strategies refuse, decided from the layer list and the counts
 * alone, so that `train` says it before building anything and a sweep records the row as
 * skipped with the same words. */
#include "strategy.h"
#include "partition.h"
#include "base/status.h"

#include <stdio.h>
#include <string.h>

int mx_pipeline_micro_batches(int requested, int stages, int batch)
{
    /* one stage: no pipeline, and splitting the batch would only shrink the GEMMs */
    return requested > 0 ? requested : mx_pipeline_default_micro_batches(stages, batch);
}

const char *mx_pipeline_schedule(const char *requested) { return requested ? requested : "1f1b"; }

int mx_model_check(const mx_strategy_config *cfg)
{
    const int k = cfg->devices, n = cfg->nspecs;
    if (k > n)
        return mx_error(MX_EINVAL,
                        "model strategy on %d devices: %s has %d top-level layers (a residual or transformer "
                        "block is one), and each stage needs at least one; accepted 1..%d devices",
                        k, cfg->workload, n, n);
    if (cfg->partition && strcmp(cfg->partition, "auto") != 0) {
        int first[MX_MAX_DEVICES + 1];
        MX_TRY(mx_partition_parse(cfg->partition, n, k, first));
    }
    const int m = mx_pipeline_micro_batches(cfg->micro_batches, k, cfg->max_batch);
    if (m > cfg->max_batch)
        return mx_error(MX_EINVAL, "%d micro-batches of a batch of %d: each needs a sample; accepted 1..%d", m,
                        cfg->max_batch, cfg->max_batch);
    if (cfg->schedule && strcmp(cfg->schedule, "gpipe") != 0 && strcmp(cfg->schedule, "1f1b") != 0)
        return mx_error(MX_EINVAL, "pipeline schedule '%s': accepted gpipe or 1f1b", cfg->schedule);
    return MX_OK;
}

/* A GPT block splits its heads and its MLP's 4C units evenly over the devices (Megatron-LM:
 * each device takes whole heads, so attention needs no communication): the device counts
 * that divide both, listed as "1, 2, 4". */
static int gpt_block_check(const mx_strategy_config *cfg, int i, int width)
{
    const int k = cfg->devices, heads = cfg->specs[i].heads, units = 4 * width;
    if (heads >= 1 && heads % k == 0 && units % k == 0) return MX_OK;
    char accepted[256] = "";
    size_t at = 0;
    for (int d = 1; d <= MX_MAX_DEVICES && d <= heads && at < sizeof accepted - 16; d++)
        if (heads % d == 0 && units % d == 0)
            at += (size_t)snprintf(accepted + at, sizeof accepted - at, "%s%d", at ? ", " : "", d);
    return mx_error(MX_EINVAL, "layer strategy on %d devices: layer %d of %s (gpt_block) has heads %d over %d "
                    "devices and %d MLP units (each device takes whole heads and 4C/k units); accepted %s "
                    "devices", k, i, cfg->workload ? cfg->workload : "the model", heads, k, units,
                    at ? accepted : "no count of");
}

int mx_layer_check(const mx_strategy_config *cfg)
{
    /* every convolution's output channels and dense layer's units are split over the devices
     * (residual blocks' convolutions have the block's channels): each device needs one; a GPT
     * block's heads (its width C is the embedding's, which every block keeps) */
    int width = cfg->in.w;
    for (int i = 0; i < cfg->nspecs; i++) {
        const mx_layer_spec *l = &cfg->specs[i];
        if (strcmp(l->kind, "embedding") == 0 || strcmp(l->kind, "linear") == 0) width = l->units;
        if (strcmp(l->kind, "gpt_block") == 0) MX_TRY(gpt_block_check(cfg, i, width));
        const int split = strcmp(l->kind, "conv2d") == 0 || strcmp(l->kind, "dense") == 0 ||
                          strcmp(l->kind, "residual") == 0;
        if (split && l->units < cfg->devices)
            return mx_error(MX_EINVAL, "layer strategy on %d devices: layer %d of %s (%s) has %d %s to split; "
                            "accepted 1..%d devices", cfg->devices, i, cfg->workload, l->kind, l->units,
                            strcmp(l->kind, "dense") == 0 ? "units" : "channels", l->units);
    }
    return MX_OK;
}

int mx_amp_check(mx_strategy_kind strategy, mx_kv_mode kvstore, mx_amp amp)
{
    if (amp == MX_AMP_OFF) return MX_OK;
    if (strategy != MX_STRATEGY_DATA)
        return mx_error(MX_EINVAL, "--amp %s with --strategy %s: mixed precision runs in the data strategy's "
                        "replicas (master weights, loss scaling); accepted with --strategy data, or --amp off",
                        mx_amp_name(amp), mx_strategy_name(strategy));
    if (!mx_kv_mode_has(kvstore, MX_KV_AMP_OK))
        return mx_error(MX_EINVAL, "--amp %s with --kvstore %s: its servers update the weights at every "
                        "push, before the step's summed gradient could be checked for inf/NaN and skipped on "
                        "every worker; accepted with local, device, dist_sync, dist_device_sync, "
                        "dist_allreduce, or --amp off", mx_amp_name(amp), mx_kv_mode_name(kvstore));
    return MX_OK;
}

int mx_clip_check(mx_strategy_kind strategy, mx_kv_mode kvstore, double clip_norm)
{
    if (!(clip_norm > 0) || strategy != MX_STRATEGY_DATA) return MX_OK;
    /* the property AMP needs is the one clipping needs: the step's summed gradient reaches
     * every replica before any update */
    if (!mx_kv_mode_has(kvstore, MX_KV_AMP_OK))
        return mx_error(MX_EINVAL, "--clip-norm %g with --kvstore %s: its servers update the weights at every "
                        "push, so no rank ever holds the step's whole gradient to take its norm (a worker's own "
                        "norm would clip a different gradient on each); accepted with local, device, dist_sync, "
                        "dist_device_sync, dist_allreduce, or --clip-norm 0",
                        clip_norm, mx_kv_mode_name(kvstore));
    return MX_OK;
}
