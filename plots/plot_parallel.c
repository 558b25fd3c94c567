/* The figures that compare the ways of splitting training over devices (data, model, layer):
 * memory per device and bytes moved per step against device count, one line per series (a
 * strategy, schedule, micro-batch count...), and the pipeline's measured bubble against the
 * theory (k-1)/(m+k-1) for model rows. Drawn by plots/memory.gp, moved.gp and bubble.gp. */
#include "plot_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int keep_memory(const mx_run_record *r) { return r->gpus > 0 && isfinite(r->metrics[MX_COUNTER_MEM_PEAK]); }

static void row_memory(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    mx_plot_put_num(f, r->metrics[MX_COUNTER_MEM_PEAK] * 1e-6);
    mx_plot_put_num(f, r->metrics[MX_COUNTER_MEM_PARAMS] * 1e-6);
    fputc('\n', f);
}

int mx_plot_write_memory(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(c, v, "memory.dat",
                                    "memory per device against device count (the device holding most; allocator "
                                    "count, MB)", "devices peak_MB params_and_grads_MB", keep_memory, row_memory,
                                    2 /* memory.gp's key of the line styles */, 0);
    (void)why, (void)nwhy; /* runs from before memory was counted have nothing to draw: no message */
    return rc;
}

/* What the strategy moved per step: its own traffic (shards' collectives, stages' sends), or
 * the kvstore's (dist_*: what worker 0 sent and received). */
static double moved(const mx_run_record *r)
{
    static const int order[] = {MX_COUNTER_TP_BYTES, MX_COUNTER_STAGE_BYTES, MX_COUNTER_BYTES, MX_COUNTER_NET_BYTES};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (isfinite(r->metrics[order[i]]) && r->metrics[order[i]] > 0) return r->metrics[order[i]];
    return NAN;
}

static int keep_moved(const mx_run_record *r) { return r->gpus > 0 && isfinite(moved(r)); }

static void row_moved(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    mx_plot_put_num(f, moved(r) * 1e-6);
    fputc('\n', f);
}

int mx_plot_write_moved(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(c, v, "moved.dat",
                                       "bytes moved per step against device count (layer: collectives; model: between "
                                       "stages; data: the kvstore), MB",
                                       "devices MB_per_step", keep_moved, row_moved, 0, 0);
    (void)why, (void)nwhy; /* one device moves nothing: no message */
    return rc;
}

static int keep_bubble(const mx_run_record *r)
{
    return r->gpus > 0 && mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL && isfinite(r->metrics[MX_COUNTER_BUBBLE]);
}

static void row_bubble(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    mx_plot_put_num(f, r->metrics[MX_COUNTER_BUBBLE]);
    mx_plot_put_num(f, r->metrics[MX_COUNTER_BUBBLE_THEORY]);
    fprintf(f, " %d\n", r->micro_batches);
}

int mx_plot_write_bubble(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(
        c, v, "bubble.dat", "pipeline bubble of model runs against device count: measured and (k-1)/(m+k-1)",
        "devices bubble_measured bubble_theory micro_batches", keep_bubble, row_bubble, 0, 0);
    if (rc != 0) return rc;
    int model = 0;
    for (int i = 0; i < c->set.nuniq && !model; i++)
        model = mx_strategy_of(c->set.uniq[i]->strategy) == MX_STRATEGY_MODEL;
    snprintf(why, nwhy, "%s", model ? "no ok model run has a measured bubble" : "");
    return 0;
}
