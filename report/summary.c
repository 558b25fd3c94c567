/* The summary's columns and rows, and the rank table of a dist_* run (summary.h): moved out of
 * `mxbench report` so that its text and Markdown tables and the HTML page fill the same rows
 * from the same code. */
#include "report/summary.h"

#include "base/status.h"
#include "results/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Three significant digits at least, no exponent for ordinary throughputs. */
static void fmt_rate_n(char *buf, size_t n, double x) { mx_fmt_num_n(buf, n, x, fabs(x) >= 100 ? "%.0f" : "%.3g"); }
static void fmt_rate(char *buf, double x) { fmt_rate_n(buf, CELL, x); }

static void fmt_ci(char *buf, double lo, double hi)
{
    char a[48], b[48];
    if (isnan(lo) || isnan(hi)) {
        snprintf(buf, CELL, "-");
        return;
    }
    fmt_rate_n(a, sizeof a, lo);
    fmt_rate_n(b, sizeof b, hi);
    snprintf(buf, CELL, "[%s, %s]", a, b);
}

/* First line of the reason, shortened: the table gives the gist, the file keeps it all. */
static void fmt_reason(char *buf, const char *reason, size_t max)
{
    size_t n = strcspn(reason, "\n");
    if (n > max) {
        snprintf(buf, CELL, "%.*s...", (int)(max - 3), reason);
        return;
    }
    snprintf(buf, CELL, "%.*s", (int)n, reason);
}

/* One device uses no kvstore; files written before one-device runs recorded "none" hold the
 * kvstore named on the command line, which was never used. A dist_* kvstore links processes,
 * so it is used on one device per worker too. */
const char *mx_summary_kvstore(const mx_run_record *r)
{
    return r->gpus == 1 && !mx_kv_name_has(r->kvstore, MX_KV_DIST) ? mx_kv_mode_name(MX_KV_NONE) : r->kvstore;
}

/* The samples each device computes on per step: a data-parallel replica its slice (the
 * --batch value in per-device mode, the global batch split evenly otherwise: an uneven
 * --work-load split has the same mean); a pipeline stage or a layer-parallel shard the whole
 * global batch. */
double mx_summary_batch_per_device(const mx_run_record *r)
{
    const mx_strategy_kind s = mx_strategy_of(r->strategy);
    if (s == MX_STRATEGY_MODEL || s == MX_STRATEGY_LAYER)
        return r->global_batch > 0 ? r->global_batch : NAN;
    if (strcmp(r->batch_mode, "per-device") == 0 && r->batch > 0) return r->batch;
    return r->gpus > 0 && r->global_batch > 0 ? (double)r->global_batch / r->gpus : NAN;
}

int mx_summary_not_ok(const mx_run_record *r) { return strcmp(r->status, "ok") != 0; }

static const struct {
    const char *head;
    int right; /* numbers align right */
} text_cols[] = {
    {"id", 0},          {"workload", 0},  {"strategy", 0}, {"gpus", 1},        {"batch/dev", 1}, {"global", 1},
    {"kvstore", 0},     {"compression", 0}, {"amp", 0},    {"status", 0},      {"samples/s", 1}, {"95% CI", 1},
    {"step ms", 1},     {"speedup", 1},   {"efficiency", 1}, {"test_acc", 1},  {"note", 0},
};
enum { TEXT_COLS = sizeof text_cols / sizeof text_cols[0] };
/* the counters' figures (results/metrics.def) go before the note, each only when some run of
 * the file has it: a study of one-device runs has no communication to show; the worker and
 * server counts follow the kvstore when some run has processes other than one worker;
 * language models add their figures after test_acc (their test_acc is token accuracy) */
static const char *const lm_heads[] = {"tokens/s", "val loss", "ppl", "MFU"};
enum { LM_COLS = sizeof lm_heads / sizeof lm_heads[0] };
_Static_assert((int)TEXT_COLS + MX_NCOUNTERS + 2 + LM_COLS <= (int)MAXCOLS, "MAXCOLS too small for the text columns");

void mx_summary_columns(const mx_results *res, mx_summary_cols *shown)
{
    for (int k = 0; k < MX_NCOUNTERS; k++) {
        shown->counter[k] = 0;
        for (int i = 0; i < res->nruns && !shown->counter[k]; i++)
            shown->counter[k] = isfinite(res->runs[i].metrics[k]);
    }
    shown->procs = shown->lm = 0;
    for (int i = 0; i < res->nruns; i++) shown->procs |= res->runs[i].workers != 1 || res->runs[i].servers != 0;
    for (int i = 0; i < res->nruns; i++) shown->lm |= res->runs[i].tokens_per_sample > 0;
}

static void summary_heads(const mx_summary_cols *shown, table *t)
{
    t->ncols = 0;
    for (int c = 0; c < TEXT_COLS; c++) {
        if (c == TEXT_COLS - 1) /* the note stays last */
            for (int k = 0; k < MX_NCOUNTERS; k++)
                if (shown->counter[k]) t->head[t->ncols] = mx_counters[k].head, t->right[t->ncols++] = 1;
        t->head[t->ncols] = text_cols[c].head;
        t->right[t->ncols++] = text_cols[c].right;
        if (shown->procs && strcmp(text_cols[c].head, "kvstore") == 0) {
            t->head[t->ncols] = "workers", t->right[t->ncols++] = 1;
            t->head[t->ncols] = "servers", t->right[t->ncols++] = 1;
        }
        if (shown->lm && strcmp(text_cols[c].head, "test_acc") == 0)
            for (int k = 0; k < LM_COLS; k++) t->head[t->ncols] = lm_heads[k], t->right[t->ncols++] = 1;
    }
}

static void fill_row(char (*row)[CELL], const mx_run_record *r, const mx_summary_cols *shown)
{
    int c = 0;
    snprintf(row[c++], CELL, "%s", r->id);
    snprintf(row[c++], CELL, "%s", r->workload);
    snprintf(row[c++], CELL, "%s", r->strategy);
    snprintf(row[c++], CELL, "%d", r->gpus);
    mx_fmt_num(row[c++], mx_summary_batch_per_device(r), "%.4g");
    snprintf(row[c++], CELL, "%d", r->global_batch);
    snprintf(row[c++], CELL, "%s", mx_summary_kvstore(r));
    if (shown->procs) {
        snprintf(row[c++], CELL, "%d", r->workers);
        snprintf(row[c++], CELL, "%d", r->servers);
    }
    snprintf(row[c++], CELL, "%s", r->compression);
    snprintf(row[c++], CELL, "%s", r->amp);
    snprintf(row[c++], CELL, "%s", r->status);
    fmt_rate(row[c++], r->throughput);
    fmt_ci(row[c++], r->throughput_ci_low, r->throughput_ci_high);
    mx_fmt_num(row[c++], r->step_time_median * 1e3, "%.2f");
    mx_fmt_num(row[c++], r->speedup, "%.2f");
    mx_fmt_num(row[c++], r->efficiency * 100, "%.0f%%");
    mx_fmt_num(row[c++], r->final_test_acc, "%.4f");
    if (shown->lm) {
        fmt_rate(row[c++], r->tokens_per_s);
        mx_fmt_num(row[c++], r->final_val_loss, "%.4f");
        mx_fmt_num(row[c++], r->perplexity, "%.2f");
        mx_fmt_num(row[c++], r->mfu * 100, "%.1f%%");
    }
    for (int k = 0; k < MX_NCOUNTERS; k++)
        if (shown->counter[k]) mx_fmt_num(row[c++], r->metrics[k] * mx_counters[k].scale, mx_counters[k].fmt);
    if (mx_summary_not_ok(r))
        fmt_reason(row[c++], r->reason, 60);
    else { /* an ok run's notes: where its devices were, if not where asked; then its timings' caveats */
        char *note = row[c++];
        fmt_reason(note, r->reason, 60);
        const char *const caveat[2] = {r->oversubscribed ? "oversubscribed: timings not meaningful" : NULL,
                                       r->noisy ? "noisy: other programs competed for the cores" : NULL};
        for (int k = 0; k < 2; k++) {
            if (!caveat[k]) continue;
            if (note[0]) strncat(note, "; ", CELL - strlen(note) - 1);
            strncat(note, caveat[k], CELL - strlen(note) - 1);
        }
    }
}

int mx_summary_table(const mx_results *res, const mx_summary_cols *shown, table *t)
{
    memset(t, 0, sizeof *t);
    summary_heads(shown, t);
    t->nrows = res->nruns;
    t->cell = calloc((size_t)(res->nruns ? res->nruns : 1), sizeof *t->cell);
    if (!t->cell) return mx_error(MX_ENOMEM, "out of memory for %d rows", res->nruns);
    for (int i = 0; i < res->nruns; i++) fill_row(t->cell[i], &res->runs[i], shown);
    return MX_OK;
}

int mx_summary_legend_items(const mx_summary_cols *shown, mx_legend_item *items)
{
    int n = 0;
    items[n++] = (mx_legend_item){
        NULL, "batch/dev and global: samples per device and per step; samples/s: median over timed steps and\n"
              "repeats, with its 95% confidence interval; speedup and efficiency: against the one-device run\n"
              "of the same configuration, blank (-) where there is none (results/SCHEMA.md); note: why a run\n"
              "is not ok, or of an ok one, why its devices are CPU workers (--device auto) and its timings'\n"
              "caveats.\n"};
    if (shown->procs)
        items[n++] = (mx_legend_item){NULL, "workers, servers: the processes of a dist_* run's MPI job.\n"};
    if (shown->lm)
        items[n++] = (mx_legend_item){
            NULL,
            "language models: test_acc is token accuracy on the held-out split; tokens/s: samples/s x context;\n"
            "val loss: held-out loss after the last epoch, ppl its perplexity (e^loss); MFU: model FLOPs (6N + 12\n"
            "L C T per token) per second over the peak of the run's devices (a measured GEMM on CPU workers).\n"};
    for (int k = 0; k < MX_NCOUNTERS; k++)
        if (shown->counter[k]) items[n++] = (mx_legend_item){mx_counters[k].head, mx_counters[k].help};
    return n;
}

void mx_summary_legend(FILE *f, const mx_summary_cols *shown)
{
    mx_legend_item items[MX_LEGEND_ITEMS];
    const int n = mx_summary_legend_items(shown, items);
    for (int i = 0; i < n; i++)
        if (items[i].head) fprintf(f, "%s: %s.\n", items[i].head, items[i].text);
        else fputs(items[i].text, f);
}

/* ---- the rank table of a dist_* run: one row per rank of its MPI job, so that a straggler
 * shows (its median step time against the median of all workers') */

static const char *const rank_heads[] = {"rank",    "host",    "role",    "steps",   "step ms", "p90 ms",
                                         "max ms",  "vs median", "MB/step", "push ms", "pull ms", "busy ms"};
enum { RANK_COLS = sizeof rank_heads / sizeof rank_heads[0] };

/* The median over the workers of their median step times (NaN when none has one). */
static double workers_median(const mx_run_record *r)
{
    double *x = malloc((size_t)r->nranks * sizeof *x);
    int n = 0;
    for (int i = 0; x && i < r->nranks; i++)
        if (strcmp(r->ranks[i].role, "worker") == 0 && isfinite(r->ranks[i].step_median))
            x[n++] = r->ranks[i].step_median;
    const double m = n > 0 ? mx_stats_median(x, n) : NAN;
    free(x);
    return m;
}

int mx_summary_rank_table(const mx_run_record *r, int with_min, table *t)
{
    memset(t, 0, sizeof *t);
    t->nrows = r->nranks;
    for (int c = 0; c < RANK_COLS; c++) {
        if (with_min && c == 4) t->head[t->ncols] = "min ms", t->right[t->ncols++] = 1; /* before the median */
        t->head[t->ncols] = rank_heads[c], t->right[t->ncols++] = c != 1 && c != 2;
    }
    t->cell = calloc((size_t)(r->nranks ? r->nranks : 1), sizeof *t->cell);
    if (!t->cell) return mx_error(MX_ENOMEM, "out of memory for %d ranks", r->nranks);
    const double med = workers_median(r);
    for (int i = 0; i < r->nranks; i++) {
        const mx_rank_row *x = &r->ranks[i];
        char(*row)[CELL] = t->cell[i];
        int c = 0;
        snprintf(row[c++], CELL, "%d", x->rank);
        snprintf(row[c++], CELL, "%.*s", (int)sizeof x->host, x->host);
        snprintf(row[c++], CELL, "%.*s", (int)sizeof x->role, x->role);
        snprintf(row[c++], CELL, "%d", x->steps);
        if (with_min) mx_fmt_num(row[c++], x->step_min * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->step_median * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->step_p90 * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->step_max * 1e3, "%.2f");
        mx_fmt_num(row[c++], med > 0 ? x->step_median / med : NAN, "%.2fx");
        mx_fmt_num(row[c++], x->bytes_per_step * 1e-6, "%.3g");
        mx_fmt_num(row[c++], x->push_time * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->pull_time * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->busy_time * 1e3, "%.2f");
    }
    return MX_OK;
}

void mx_summary_rank_about(const mx_run_record *r, char *buf, size_t n)
{
    snprintf(buf, n, "kvstore %s, %d worker%s, %d server%s%s", r->kvstore, r->workers, r->workers == 1 ? "" : "s",
             r->servers, r->servers == 1 ? "" : "s",
             r->oversubscribed ? "; oversubscribed: timings not meaningful" : "");
}

void mx_summary_rank_legend(FILE *f)
{
    fprintf(f, "step ms, p90 ms, max ms: the rank's median, 90th percentile and largest step time; vs median: its\n"
               "median step time over the median of every worker's (a straggler shows above 1); MB/step: bytes it\n"
               "sent and received per step; push, pull ms: per step sending pushes and waiting for pulls\n"
               "(workers); busy ms: per step summing and updating (servers).\n");
}

static const char *const device_heads[] = {"device",  "layers",       "bubble",   "param MB", "optim MB",
                                           "peak MB", "sent MB/step", "inflight", "busy ms"};
enum { DEVICE_COLS = sizeof device_heads / sizeof device_heads[0] };

int mx_summary_device_table(const mx_run_record *r, table *t)
{
    *t = (table){.ncols = DEVICE_COLS, .nrows = r->ndevices};
    for (int c = 0; c < DEVICE_COLS; c++) t->head[c] = device_heads[c], t->right[c] = 1;
    t->cell = calloc((size_t)(r->ndevices > 0 ? r->ndevices : 1), sizeof *t->cell);
    if (!t->cell) return mx_error(MX_ENOMEM, "out of memory for %d devices", r->ndevices);
    for (int i = 0; i < r->ndevices; i++) {
        const mx_device_row *x = &r->devices[i];
        char(*row)[CELL] = t->cell[i];
        int c = 0;
        snprintf(row[c++], CELL, "%d", x->device);
        snprintf(row[c++], CELL, "%d-%d", x->first_layer, x->last_layer - 1);
        mx_fmt_num(row[c++], x->bubble * 100, "%.1f%%");
        mx_fmt_num(row[c++], x->mem_params * 1e-6, "%.4g");
        mx_fmt_num(row[c++], x->mem_optim * 1e-6, "%.4g");
        mx_fmt_num(row[c++], x->mem_peak * 1e-6, "%.4g");
        mx_fmt_num(row[c++], x->bytes_per_step * 1e-6, "%.3g");
        snprintf(row[c++], CELL, "%d", x->inflight_max);
        mx_fmt_num(row[c++], x->busy_time * 1e3, "%.2f");
    }
    return MX_OK;
}
