/* Sweep planning (see sweep_plan.h). What this build cannot run is decided here, once, so
 * the results file says why a row is missing instead of silently dropping it. */
#include "sweep_plan.h"
#include "engine/status.h"
#include "strategies/kvstore.h"
#include "strategies/strategy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double mx_sweep_scaled_lr(double base_lr, const char *rule, int global_batch, int first_global_batch)
{
    const double k = (double)global_batch / first_global_batch;
    if (strcmp(rule, "linear") == 0) return base_lr * k;
    if (strcmp(rule, "sqrt") == 0) return base_lr * sqrt(k);
    return base_lr;
}

static int global_batch(const mx_sweep_axes *ax, int batch, int gpus)
{
    return strcmp(ax->batch_mode, "global") == 0 ? batch : batch * gpus;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == '|') && (p[n] == '|' || p[n] == 0)) return 1;
    return 0;
}

/* Why this combination cannot run in this build, or NULL. */
static const char *skip_reason(const mx_run_record *r, char *buf, size_t n)
{
    if (!mx_strategy_find(r->strategy))
        snprintf(buf, n, "strategy '%s' is not implemented in this build (available: %s)", r->strategy,
                 mx_strategy_names());
    else if (r->gpus > 1 && !in_list(mx_kv_modes(), r->kvstore))
        snprintf(buf, n, "kvstore '%s' is not implemented in this build (available: %s)", r->kvstore, mx_kv_modes());
    else if (strcmp(r->compression, "none") != 0)
        snprintf(buf, n, "gradient compression '%s' is not implemented in this build (available: none)",
                 r->compression);
    else if (strcmp(r->amp, "off") != 0)
        snprintf(buf, n, "mixed precision '%s' is not implemented in this build (available: off)", r->amp);
    else if (r->global_batch < r->gpus)
        snprintf(buf, n, "global batch %d is smaller than the device count %d", r->global_batch, r->gpus);
    else
        return NULL;
    return buf;
}

/* 1 when runs[0..n) already holds r's configuration (one-device rows of several kvstores). */
static int planned_before(const mx_run_record *runs, int n, const mx_run_record *r)
{
    char a[1024], b[1024];
    mx_record_config_key(r, a, sizeof a);
    for (int i = 0; i < n; i++) {
        mx_record_config_key(&runs[i], b, sizeof b);
        if (strcmp(a, b) == 0) return 1;
    }
    return 0;
}

static void fill_common(const mx_sweep_axes *ax, mx_run_record *r)
{
    snprintf(r->dataset, sizeof r->dataset, "%s", ax->dataset);
    snprintf(r->device_type, sizeof r->device_type, "cpu");
    snprintf(r->lr_scaling, sizeof r->lr_scaling, "%s", ax->lr_scaling);
    snprintf(r->batch_mode, sizeof r->batch_mode, "%s", ax->batch_mode);
    r->momentum = ax->momentum;
    r->wd = ax->wd;
    r->warmup_epochs = ax->warmup_epochs;
    r->epochs = ax->epochs;
    r->steps = ax->steps;
    r->warmup_steps = ax->warmup_steps;
    r->repeats = ax->repeats;
    r->seed = ax->seed;
    r->threads_per_device = ax->threads_per_device;
    r->target_acc = ax->target_acc;
}

int mx_sweep_plan(const mx_sweep_axes *ax, mx_run_record **runs, int *n)
{
    const int total = ax->nworkloads * ax->nstrategies * ax->nkvstores * ax->ncompressions * ax->namps * ax->nbatch *
                      ax->nlr * ax->ngpus;
    mx_run_record *out = calloc(total ? total : 1, sizeof *out);
    if (!out) return mx_error(MX_ENOMEM, "out of memory planning %d runs", total);
    int k = 0;
    char why[256];
    for (int w = 0; w < ax->nworkloads; w++)
    for (int s = 0; s < ax->nstrategies; s++)
    for (int kv = 0; kv < ax->nkvstores; kv++)
    for (int c = 0; c < ax->ncompressions; c++)
    for (int a = 0; a < ax->namps; a++)
    for (int b = 0; b < ax->nbatch; b++)
    for (int l = 0; l < ax->nlr; l++)
    for (int g = 0; g < ax->ngpus; g++) {
        mx_run_record *r = &out[k++];
        mx_record_init(r);
        fill_common(ax, r);
        snprintf(r->workload, sizeof r->workload, "%s", ax->workloads[w]);
        snprintf(r->strategy, sizeof r->strategy, "%s", ax->strategies[s]);
        /* one device uses no kvstore (as MXNet): the row is the first point of every
         * kvstore's series, planned once */
        snprintf(r->kvstore, sizeof r->kvstore, "%s", ax->gpus[g] > 1 ? ax->kvstores[kv] : "none");
        snprintf(r->compression, sizeof r->compression, "%s", ax->compressions[c]);
        snprintf(r->amp, sizeof r->amp, "%s", ax->amps[a]);
        r->gpus = ax->gpus[g];
        r->batch = ax->batch[b];
        r->global_batch = global_batch(ax, ax->batch[b], ax->gpus[g]);
        r->base_lr = ax->lr[l];
        r->lr = mx_sweep_scaled_lr(ax->lr[l], ax->lr_scaling, r->global_batch,
                                   global_batch(ax, ax->batch[b], ax->gpus[0]));
        if (skip_reason(r, why, sizeof why)) {
            snprintf(r->status, sizeof r->status, "skipped");
            snprintf(r->reason, sizeof r->reason, "%s", why);
        }
        if (planned_before(out, k - 1, r)) mx_record_free(r), k--;
    }
    *runs = out;
    *n = k;
    return MX_OK;
}
