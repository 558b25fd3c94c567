/* `mxbench report FILE`: the summary of a results file, one row per run, as an aligned text
 * table, a Markdown table, CSV or JSON; and the rank table of each dist_* run (one row per
 * rank of its MPI job), where a straggler shows. */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "results/results.h"
#include "results/stats.h"
#include "harness/report_table.h"

#include <math.h>
#include <stddef.h>
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

/* ---- what a row shows, the same in every format */

/* One device uses no kvstore; files written before one-device runs recorded "none" hold the
 * kvstore named on the command line, which was never used. A dist_* kvstore links processes,
 * so it is used on one device per worker too. */
static const char *shown_kvstore(const mx_run_record *r)
{
    return r->gpus == 1 && !mx_kv_name_has(r->kvstore, MX_KV_DIST) ? mx_kv_mode_name(MX_KV_NONE) : r->kvstore;
}

/* Samples per device per step: the --batch value in per-device mode, the global batch split
 * evenly otherwise (an uneven --work-load split has the same mean). */
/* The samples each device computes on per step: a data-parallel replica its slice; a pipeline
 * stage or a layer-parallel shard the whole global batch. */
static double batch_per_device(const mx_run_record *r)
{
    const mx_strategy_kind s = mx_strategy_of(r->strategy);
    if (s == MX_STRATEGY_MODEL || s == MX_STRATEGY_LAYER)
        return r->global_batch > 0 ? r->global_batch : NAN;
    if (strcmp(r->batch_mode, "per-device") == 0 && r->batch > 0) return r->batch;
    return r->gpus > 0 && r->global_batch > 0 ? (double)r->global_batch / r->gpus : NAN;
}

static int not_ok(const mx_run_record *r) { return strcmp(r->status, "ok") != 0; } /* failed, skipped, diverged */

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
 * server counts follow the kvstore when some run has processes other than one worker */
/* language models add their figures after test_acc (their test_acc is token accuracy) */
static const char *const lm_heads[] = {"tokens/s", "val loss", "ppl", "MFU"};
enum { LM_COLS = sizeof lm_heads / sizeof lm_heads[0] };
_Static_assert((int)TEXT_COLS + MX_NCOUNTERS + 2 + LM_COLS <= (int)MAXCOLS, "MAXCOLS too small for the text columns");

typedef struct {
    int counter[MX_NCOUNTERS];
    int procs;
    int lm; /* some run is a language model's */
} shown_cols;

static void shown_columns(const mx_results *res, shown_cols *shown)
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

static void fill_row(char (*row)[CELL], const mx_run_record *r, const shown_cols *shown)
{
    int c = 0;
    snprintf(row[c++], CELL, "%s", r->id);
    snprintf(row[c++], CELL, "%s", r->workload);
    snprintf(row[c++], CELL, "%s", r->strategy);
    snprintf(row[c++], CELL, "%d", r->gpus);
    mx_fmt_num(row[c++], batch_per_device(r), "%.4g");
    snprintf(row[c++], CELL, "%d", r->global_batch);
    snprintf(row[c++], CELL, "%s", shown_kvstore(r));
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
    if (not_ok(r))
        fmt_reason(row[c++], r->reason, 60);
    else
        snprintf(row[c++], CELL, "%s%s%s", r->oversubscribed ? "oversubscribed: timings not meaningful" : "",
                 r->oversubscribed && r->noisy ? "; " : "",
                 r->noisy ? "noisy: other programs competed for the cores" : "");
}

/* "; mxbench 0.1.0 (abc1234) on host, started T", leaving out what the file does not say. */
static void describe_origin(const mx_results_meta *m, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    if (m->mxbench_version[0]) len += (size_t)snprintf(buf + len, n - len, "; mxbench %s", m->mxbench_version);
    if (m->git_revision[0] && len < n) len += (size_t)snprintf(buf + len, n - len, " (%s)", m->git_revision);
    if (m->host[0] && len < n) len += (size_t)snprintf(buf + len, n - len, "%s on %s", len ? "" : ";", m->host);
    if (m->start_time[0] && len < n) snprintf(buf + len, n - len, ", started %s", m->start_time);
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

static int print_ranks(const mx_run_record *r, int md)
{
    table t = {.ncols = RANK_COLS, .nrows = r->nranks};
    for (int c = 0; c < RANK_COLS; c++) t.head[c] = rank_heads[c], t.right[c] = c != 1 && c != 2;
    t.cell = calloc((size_t)r->nranks, sizeof *t.cell);
    if (!t.cell) return mx_error(MX_ENOMEM, "out of memory for %d ranks", r->nranks);
    const double med = workers_median(r);
    for (int i = 0; i < r->nranks; i++) {
        const mx_rank_row *x = &r->ranks[i];
        char(*row)[CELL] = t.cell[i];
        int c = 0;
        snprintf(row[c++], CELL, "%d", x->rank);
        snprintf(row[c++], CELL, "%.*s", (int)sizeof x->host, x->host);
        snprintf(row[c++], CELL, "%.*s", (int)sizeof x->role, x->role);
        snprintf(row[c++], CELL, "%d", x->steps);
        mx_fmt_num(row[c++], x->step_median * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->step_p90 * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->step_max * 1e3, "%.2f");
        mx_fmt_num(row[c++], med > 0 ? x->step_median / med : NAN, "%.2fx");
        mx_fmt_num(row[c++], x->bytes_per_step * 1e-6, "%.3g");
        mx_fmt_num(row[c++], x->push_time * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->pull_time * 1e3, "%.2f");
        mx_fmt_num(row[c++], x->busy_time * 1e3, "%.2f");
    }
    char about[160];
    snprintf(about, sizeof about, "kvstore %s, %d worker%s, %d server%s%s", r->kvstore, r->workers,
             r->workers == 1 ? "" : "s", r->servers, r->servers == 1 ? "" : "s",
             r->oversubscribed ? "; oversubscribed: timings not meaningful" : "");
    if (md) {
        printf("\n#### Ranks of `%s` (%s)\n\n", r->id, about);
        mx_table_print_md(&t, stdout);
    } else {
        printf("\nranks of %s (%s):\n", r->id, about);
        mx_table_print_text(&t, stdout);
    }
    free(t.cell);
    return MX_OK;
}

static int print_table(const char *path, const mx_results *res, int md)
{
    shown_cols shown;
    shown_columns(res, &shown);
    table t = {.nrows = res->nruns};
    for (int c = 0; c < TEXT_COLS; c++) {
        if (c == TEXT_COLS - 1) /* the note stays last */
            for (int k = 0; k < MX_NCOUNTERS; k++)
                if (shown.counter[k]) t.head[t.ncols] = mx_counters[k].head, t.right[t.ncols++] = 1;
        t.head[t.ncols] = text_cols[c].head;
        t.right[t.ncols++] = text_cols[c].right;
        if (shown.procs && strcmp(text_cols[c].head, "kvstore") == 0) {
            t.head[t.ncols] = "workers", t.right[t.ncols++] = 1;
            t.head[t.ncols] = "servers", t.right[t.ncols++] = 1;
        }
        if (shown.lm && strcmp(text_cols[c].head, "test_acc") == 0)
            for (int k = 0; k < LM_COLS; k++) t.head[t.ncols] = lm_heads[k], t.right[t.ncols++] = 1;
    }
    t.cell = calloc((size_t)(res->nruns ? res->nruns : 1), sizeof *t.cell);
    if (!t.cell) return mx_error(MX_ENOMEM, "out of memory for %d rows", res->nruns);
    for (int i = 0; i < res->nruns; i++) fill_row(t.cell[i], &res->runs[i], &shown);
    char about[512];
    describe_origin(&res->meta, about, sizeof about);
    if (md)
        printf("### mxbench report: `%s`\n\n%d runs%s\n\n", path, res->nruns, about);
    else
        printf("%s: %d runs (schema %d)%s\n\n", path, res->nruns, res->schema_version, about);
    if (md)
        mx_table_print_md(&t, stdout);
    else
        mx_table_print_text(&t, stdout);
    printf("\n");
    printf("batch/dev and global: samples per device and per step; samples/s: median over timed steps and\n"
           "repeats, with its 95%% confidence interval; speedup and efficiency: against the one-device run\n"
           "of the same configuration, blank (-) where there is none (results/SCHEMA.md); note: why a run\n"
           "is not ok.\n");
    if (shown.procs) printf("workers, servers: the processes of a dist_* run's MPI job.\n");
    if (shown.lm)
        printf("language models: test_acc is token accuracy on the held-out split; tokens/s: samples/s x context;\n"
               "val loss: held-out loss after the last epoch, ppl its perplexity (e^loss); MFU: model FLOPs (6N + 12\n"
               "L C T per token) per second over the peak of the run's devices (a measured GEMM on CPU workers).\n");
    for (int k = 0; k < MX_NCOUNTERS; k++)
        if (shown.counter[k]) printf("%s: %s.\n", mx_counters[k].head, mx_counters[k].help);
    free(t.cell);
    int nranked = 0, rc = MX_OK;
    for (int i = 0; i < res->nruns && rc == MX_OK; i++)
        if (res->runs[i].nranks > 0) rc = print_ranks(&res->runs[i], md), nranked++;
    if (nranked && rc == MX_OK)
        printf("\nstep ms, p90 ms, max ms: the rank's median, 90th percentile and largest step time; vs median: its\n"
               "median step time over the median of every worker's (a straggler shows above 1); MB/step: bytes it\n"
               "sent and received per step; push, pull ms: per step sending pushes and waiting for pulls\n"
               "(workers); busy ms: per step summing and updating (servers).\n");
    int ndetailed = 0;
    for (int i = 0; i < res->nruns && rc == MX_OK; i++)
        if (res->runs[i].nlayers > 0 || res->runs[i].ndevices > 1)
            rc = mx_report_print_detail(&res->runs[i], md), ndetailed++;
    if (ndetailed && rc == MX_OK)
        printf("\nlayers: a device's top-level layers (model: its stage); bubble: the stage's idle share of its step\n"
               "windows; param, optim, peak MB: parameters and gradients, momentum, and the most the device held\n"
               "(allocator count); sent MB/step: to other devices; inflight: most micro-batches held at once; busy\n"
               "ms: per step computing (data: forward and backward of its slice; model: its stage's work), the\n"
               "straggler named at %.1fx the devices' median or more. A layer's MB/step: its collectives (layer)\n"
               "or what crosses the stage boundary after it (model).\n", MX_STRAGGLER_RATIO);
    return rc;
}

/* ---- machine-readable output: every summary column, full precision */

/* C_KV and C_PERDEV are shown as in the text table (shown_kvstore, batch_per_device) */
typedef enum { C_STR, C_INT, C_DBL, C_KV, C_PERDEV } col_kind;

typedef struct {
    const char *name;
    col_kind kind;
    size_t off;
} column;

#define CS(m) {#m, C_STR, offsetof(mx_run_record, m)}
#define CI(m) {#m, C_INT, offsetof(mx_run_record, m)}
#define CD(m) {#m, C_DBL, offsetof(mx_run_record, m)}

static const column head_cols[] = {
    CS(id),           CS(workload),           CS(dataset),            CS(strategy),       {"kvstore", C_KV, 0},
    CS(compression),  CS(amp),                CS(device_type),        CI(gpus),           CI(batch),
    CS(batch_mode),   CI(global_batch),       CD(base_lr),            CS(lr_scaling),     CD(lr),
    CI(repeats),      CS(status),             CI(exit_status),        CD(throughput),     CD(throughput_ci_low),
    CD(throughput_ci_high), CD(throughput_iqr), CD(step_time_median), CD(speedup),        CD(efficiency),
    {"test_acc", C_DBL, offsetof(mx_run_record, final_test_acc)},     CD(time_to_acc),
};
static const column mid_cols[] = {CD(wall_time), {"batch_per_device", C_PERDEV, 0}, CD(throughput_agg)};
/* dist_* runs: the processes of the MPI job, and how many rows its rank table has */
static const column proc_cols[] = {CI(workers), CI(servers), CI(oversubscribed), CI(nranks)};
/* the host beside the run (harness/hostload.h) */
static const column host_cols[] = {CI(noisy), CD(host_others), CD(host_load), CD(host_steal)};
/* language models (NaN, 0 for images) */
static const column lm_cols[] = {CI(tokens_per_sample), CD(tokens_per_s), CD(final_val_loss), CD(perplexity),
                                 CD(time_to_loss),      CD(target_loss),  CD(flops_per_token), CD(peak_flops),
                                 CD(mfu)};
static const column reason_col = CS(reason); /* last: free text, the only column that may hold commas */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
enum {
    MAX_DATA_COLS =
        COUNT(head_cols) + COUNT(mid_cols) + MX_NCOUNTERS + COUNT(proc_cols) + COUNT(host_cols) + COUNT(lm_cols) + 1
};

/* Every summary column, the counters' figures from their table. Columns never move: scripts
 * read the CSV by position (column 30 is wall_time), so the figures of schema 1 keep their
 * place after time_to_acc, and those added since come after the others, then the processes
 * of dist_* runs, the host's figures and the language models', before the reason. */
static int data_columns(column *out)
{
    int n = 0;
    for (size_t i = 0; i < sizeof head_cols / sizeof head_cols[0]; i++) out[n++] = head_cols[i];
    for (int pass = 1; pass >= 0; pass--) {
        for (int k = 0; k < MX_NCOUNTERS; k++)
            if (mx_counters[k].in_v1 == pass)
                out[n++] =
                    (column){mx_counters[k].name, C_DBL, offsetof(mx_run_record, metrics) + (size_t)k * sizeof(double)};
        if (pass)
            for (size_t i = 0; i < sizeof mid_cols / sizeof mid_cols[0]; i++) out[n++] = mid_cols[i];
    }
    for (size_t i = 0; i < COUNT(proc_cols); i++) out[n++] = proc_cols[i];
    for (size_t i = 0; i < COUNT(host_cols); i++) out[n++] = host_cols[i];
    for (size_t i = 0; i < COUNT(lm_cols); i++) out[n++] = lm_cols[i];
    out[n++] = reason_col;
    return n;
}

static const char *col_str(const mx_run_record *r, const column *c)
{
    return c->kind == C_KV ? shown_kvstore(r) : (const char *)r + c->off;
}
static int col_int(const mx_run_record *r, const column *c) { return *(const int *)((const char *)r + c->off); }
static double col_dbl(const mx_run_record *r, const column *c)
{
    return c->kind == C_PERDEV ? batch_per_device(r) : *(const double *)((const char *)r + c->off);
}


static void print_csv(const mx_results *res)
{
    column data_cols[MAX_DATA_COLS];
    const int DATA_COLS = data_columns(data_cols);
    for (int c = 0; c < DATA_COLS; c++) printf("%s%s", c ? "," : "", data_cols[c].name);
    putchar('\n');
    for (int i = 0; i < res->nruns; i++) {
        const mx_run_record *r = &res->runs[i];
        for (int c = 0; c < DATA_COLS; c++) {
            const column *k = &data_cols[c];
            if (c) putchar(',');
            if (k->kind == C_STR || k->kind == C_KV) mx_csv_string(col_str(r, k));
            else if (k->kind == C_INT) printf("%d", col_int(r, k));
            else if (!isnan(col_dbl(r, k))) printf("%.6g", col_dbl(r, k)); /* NaN: empty */
        }
        putchar('\n');
    }
}

/* The rank table's columns in csv and json, as the file names them (SCHEMA.md) */
static const char *const rank_names[] = {"rank",     "host",           "role",      "steps",     "step_min",
                                         "step_median", "step_p90",    "step_max",  "bytes_per_step",
                                         "push_time", "pull_time",     "busy_time"};
enum { RANK_NAMES = COUNT(rank_names) };

static double rank_figure(const mx_rank_row *x, int c)
{
    const double v[RANK_NAMES] = {0, 0, 0, 0, x->step_min, x->step_median, x->step_p90, x->step_max,
                                  x->bytes_per_step, x->push_time, x->pull_time, x->busy_time};
    return v[c];
}

/* csv --ranks: one row per rank of every dist_* run, led by the run's id */
static void print_csv_ranks(const mx_results *res)
{
    printf("id");
    for (int c = 0; c < RANK_NAMES; c++) printf(",%s", rank_names[c]);
    putchar('\n');
    for (int i = 0; i < res->nruns; i++)
        for (int k = 0; k < res->runs[i].nranks; k++) {
            const mx_rank_row *x = &res->runs[i].ranks[k];
            mx_csv_string(res->runs[i].id);
            printf(",%d,", x->rank);
            mx_csv_string(x->host);
            putchar(',');
            mx_csv_string(x->role);
            printf(",%d", x->steps);
            for (int c = 4; c < RANK_NAMES; c++) {
                putchar(',');
                if (!isnan(rank_figure(x, c))) printf("%.6g", rank_figure(x, c)); /* NaN: empty */
            }
            putchar('\n');
        }
}

static void print_json(const char *path, const mx_results *res)
{
    const mx_results_meta *m = &res->meta;
    const struct { const char *name, *value; } meta[] = {
        {"mxbench_version", m->mxbench_version}, {"git_revision", m->git_revision}, {"host", m->host},
        {"cpu_model", m->cpu_model},             {"gpu_model", m->gpu_model},       {"gpu_driver", m->gpu_driver},
        {"blas", m->blas},                       {"onednn", m->onednn},             {"cuda", m->cuda},
        {"cudnn", m->cudnn},                     {"nccl", m->nccl},                 {"mpi", m->mpi},
        {"hdf5", m->hdf5},                       {"start_time", m->start_time},     {"command_line", m->command_line},
    };
    printf("{\n  \"file\": ");
    mx_json_string(path);
    printf(",\n  \"schema_version\": %d,\n  \"meta\": {", res->schema_version);
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        printf("%s\n    \"%s\": ", i ? "," : "", meta[i].name);
        mx_json_string(meta[i].value);
    }
    printf("\n  },\n  \"runs\": [");
    column data_cols[MAX_DATA_COLS];
    const int DATA_COLS = data_columns(data_cols);
    for (int i = 0; i < res->nruns; i++) {
        const mx_run_record *r = &res->runs[i];
        printf("%s\n    {", i ? "," : "");
        for (int c = 0; c < DATA_COLS; c++) {
            const column *k = &data_cols[c];
            printf("%s\"%s\": ", c ? ", " : "", k->name);
            if (k->kind == C_STR || k->kind == C_KV) mx_json_string(col_str(r, k));
            else if (k->kind == C_INT) printf("%d", col_int(r, k));
            else mx_json_number(col_dbl(r, k));
        }
        printf(", \"ranks\": [");
        for (int k = 0; k < r->nranks; k++) {
            const mx_rank_row *x = &r->ranks[k];
            printf("%s{\"rank\": %d, \"host\": ", k ? ", " : "", x->rank);
            mx_json_string(x->host);
            printf(", \"role\": ");
            mx_json_string(x->role);
            printf(", \"steps\": %d", x->steps);
            for (int c = 4; c < RANK_NAMES; c++) {
                printf(", \"%s\": ", rank_names[c]);
                mx_json_number(rank_figure(x, c));
            }
            printf("}");
        }
        printf("]");
        mx_report_json_detail(r);
        printf("}");
    }
    printf("%s]\n}\n", res->nruns ? "\n  " : "");
}

/* ---- the command */

int mx_cmd_report(int argc, char **argv)
{
    const char *format = "text";
    int ranks = 0;
    const mx_opt opts[] = {
        {"format", MX_OPT_STRING, &format, "FMT", "output format: text (default), md, csv or json",
         "text|md|csv|json"},
        {"ranks", MX_OPT_FLAG, &ranks, NULL,
         "csv: one row per rank of every dist_* run instead of one per run (text, md and json always show them)",
         NULL},
        {0},
    };
    const mx_cmd_spec spec = {
        "mxbench report", "FILE [options]",
        "Prints the summary of a results file written by 'mxbench sweep': one row per run with its\n"
        "batch per device and global batch, throughput (median samples/s and 95% confidence\n"
        "interval), step time, speedup, efficiency and test accuracy; failed, skipped and diverged\n"
        "runs show why. A dist_* run also shows its rank table: each rank's step times, traffic and\n"
        "time in pushes and pulls, so that a straggler shows.",
        opts, 1, 1,
    };
    const char *pos[1];
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;

    mx_results res;
    if (mx_results_load(pos[0], &res) != MX_OK) {
        fprintf(stderr, "mxbench report: %s\n", mx_last_error());
        return MX_OPTS_BAD;
    }
    rc = MX_OK;
    if (strcmp(format, "csv") == 0 && ranks) print_csv_ranks(&res);
    else if (strcmp(format, "csv") == 0) print_csv(&res);
    else if (strcmp(format, "json") == 0) print_json(pos[0], &res);
    else rc = print_table(pos[0], &res, strcmp(format, "md") == 0);
    mx_results_free(&res);
    if (rc != MX_OK) {
        fprintf(stderr, "mxbench report: %s\n", mx_last_error());
        return MX_OPTS_BAD;
    }
    return 0;
}
