/* The end-of-run line (see train_summary.h). */
#include "train_summary.h"
#include "cluster/cluster.h"
#include "kvstore/kvstore.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Decimals for a rate of x a second: at least four significant digits, so that the slow rates of
 * large models (10 samples/s) are not rounded by a percent. */
static int rate_decimals(double x) { return x < 10 ? 3 : x < 100 ? 2 : 1; }

void mx_train_print_summary(const mx_train_config *c, const mx_run_record *r, double flops)
{
    const int lm = r->tokens_per_sample > 0;
    printf("%s on %s, %s x%d (%s kvstore, %d thread(s)/device), batch %d:", c->workload, r->dataset,
           mx_strategy_name(c->strategy), r->gpus, mx_kv_mode_of(r->kvstore) != MX_KV_NONE ? r->kvstore : "no",
           c->threads_per_device, r->global_batch);
    if (c->cluster) printf(" %d workers, %d servers,", c->cluster->nworkers, c->cluster->nservers);
    if (c->strategy == MX_STRATEGY_MODEL) printf(" %d micro-batches (%s),", r->micro_batches, r->schedule);
    if (c->steps) printf(" %d steps (%d warmup)", c->steps, c->warmup_steps);
    else if (lm) printf(" %d epoch(s), val loss %.4f (perplexity %.2f)", c->epochs, r->final_val_loss, r->perplexity);
    else printf(" %d epoch(s), test acc %.4f", c->epochs, r->final_test_acc);
    /* the median describes a typical step; the aggregate (samples over the time of all timed
     * steps) is what the run delivered, slow steps included: both, as they can differ a lot */
    /* an interval needs two timed steps or more: with fewer it is undefined, and says so */
    char ci[96];
    if (isfinite(r->throughput_ci_low) && isfinite(r->throughput_ci_high))
        snprintf(ci, sizeof ci, "%.*f-%.*f", rate_decimals(r->throughput_ci_low), r->throughput_ci_low,
                 rate_decimals(r->throughput_ci_high), r->throughput_ci_high);
    else
        snprintf(ci, sizeof ci, "n/a (%d timed step%s)", r->nsteps, r->nsteps == 1 ? "" : "s");
    printf(", %.*f samples/s median (step %.2f ms, 95%% CI %s), %.*f aggregate", rate_decimals(r->throughput),
           r->throughput, 1e3 * r->step_time_median, ci, rate_decimals(r->throughput_agg), r->throughput_agg);
    if (lm) printf(", %.0f tokens/s", r->tokens_per_s);
    if (flops > 0) printf(", %.1f GFLOP/s", 3 * flops * r->throughput * 1e-9);
    if (isfinite(r->mfu))
        printf(", MFU %.1f%% (of %.1f GFLOP/s, %s)", 100 * r->mfu, r->peak_flops * 1e-9, r->peak_source);
    if (isfinite(r->time_to_acc)) printf(", %.1f s to acc %.3f", r->time_to_acc, c->target_acc);
    if (isfinite(r->time_to_loss)) printf(", %.1f s to val loss %.3f", r->time_to_loss, c->target_loss);
    printf(", %.1f s%s", r->wall_time, strcmp(r->status, "diverged") == 0 ? ", DIVERGED" : "");
    if (r->noisy) /* the timings measured the other programs too */
        printf(", NOISY host (on average %.1f thread(s) of other programs ready to run, load up to %.1f, %.0f%% "
               "stolen)", r->host_others, r->host_load, isfinite(r->host_steal) ? 100 * r->host_steal : 0.0);
    putchar('\n');
}
