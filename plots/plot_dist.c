/* The figures of the dist_* kvstores: the staleness of dist_async's pushes, per series
 * against device count (data/staleness.dat, drawn by plots/staleness.gp). The other dist_*
 * kvstores need no figure of their own: each kvstore mode is a series of the scaling figures
 * (plot_series.c), and their counters go to data/counters.dat. */
#include "plot_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int staleness[4] = {MX_COUNTER_STALENESS_MEAN, MX_COUNTER_STALENESS_P50, MX_COUNTER_STALENESS_P99,
                                 MX_COUNTER_STALENESS_MAX};

static int keep_staleness(const mx_run_record *r)
{
    if (r->gpus <= 0) return 0;
    for (int k = 0; k < 4; k++)
        if (isfinite(r->metrics[staleness[k]])) return 1;
    return 0;
}

static void row_staleness(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    for (int k = 0; k < 4; k++) mx_plot_put_num(f, r->metrics[staleness[k]]);
    fputc('\n', f);
}

int mx_plot_write_staleness(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(c, v, "staleness.dat",
                                    "staleness of the pushes of dist_async runs against device count (updates a key "
                                    "received between the pusher's last pull and its push)",
                                    "devices staleness_mean staleness_p50 staleness_p99 staleness_max", keep_staleness,
                                    row_staleness, 0, 0);
    if (rc != 0) return rc;
    /* only dist_async measures staleness: a study without it has nothing to say here */
    int async = 0;
    for (int i = 0; i < c->set.nuniq && !async; i++) async = mx_kv_name_has(c->set.uniq[i]->kvstore, MX_KV_ASYNC);
    snprintf(why, nwhy, "%s", async ? "no ok dist_async run has staleness figures" : "");
    /* the empty file written above is not last study's figure: remove_stale takes it away */
    return 0;
}
