/* `mxbench report FILE`: the summary of a results file, one row per run, as an aligned text
 * table, a Markdown table, CSV or JSON; and the rank table of each dist_* run (one row per
 * rank of its MPI job), where a straggler shows. --format html writes the study's page
 * instead (report/page.h). The summary's columns and rows are report/summary.c's, shared
 * with the page. */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "results/answer.h"
#include "results/results.h"
#include "results/store.h"
#include "results/stats.h"
#include "harness/report_table.h"
#include "base/paths.h"
#include "plots/plot.h"
#include "report/page.h"
#include "report/summary.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int print_ranks(const mx_run_record *r, int md)
{
    table t;
    MX_TRY(mx_summary_rank_table(r, 0, &t));
    char about[160];
    mx_summary_rank_about(r, about, sizeof about);
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
    /* the answer first (results/answer.h): which configuration to run, what holds it back */
    mx_answer ans;
    MX_TRY(mx_answer_build(res, &ans));
    printf(md ? "### Answer\n\n" : "Answer\n\n");
    mx_answer_write(&ans, stdout, md);
    printf("\n");
    mx_answer_free(&ans);
    mx_summary_cols shown;
    mx_summary_columns(res, &shown);
    table t;
    MX_TRY(mx_summary_table(res, &shown, &t));
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
    mx_summary_legend(stdout, &shown);
    free(t.cell);
    int nranked = 0, rc = MX_OK;
    for (int i = 0; i < res->nruns && rc == MX_OK; i++)
        if (res->runs[i].nranks > 0) rc = print_ranks(&res->runs[i], md), nranked++;
    if (nranked && rc == MX_OK) {
        printf("\n");
        mx_summary_rank_legend(stdout);
    }
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
               "or what crosses the stage boundary after it (model).\n", MX_DEVICE_STRAGGLER_RATIO);
    return rc;
}

/* ---- machine-readable output: every summary column, full precision */

/* C_KV and C_PERDEV are shown as in the text table (mx_summary_kvstore, mx_summary_batch_per_device) */
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
    return c->kind == C_KV ? mx_summary_kvstore(r) : (const char *)r + c->off;
}
static int col_int(const mx_run_record *r, const column *c) { return *(const int *)((const char *)r + c->off); }
static double col_dbl(const mx_run_record *r, const column *c)
{
    return c->kind == C_PERDEV ? mx_summary_batch_per_device(r) : *(const double *)((const char *)r + c->off);
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
    /* every file attribute, by the fields table the file is written from (all strings) */
    const char *m = (const char *)&res->meta;
    printf("{\n  \"file\": ");
    mx_json_string(path);
    printf(",\n  \"schema_version\": %d,\n  \"meta\": {", res->schema_version);
    for (int i = 0; i < mx_nmeta_fields; i++) {
        printf("%s\n    \"%s\": ", i ? "," : "", mx_meta_fields[i].name);
        mx_json_string(m + mx_meta_fields[i].off);
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
    printf("%s]", res->nruns ? "\n  " : "");
    /* the answer (results/answer.h): per workload and device count the ranking, then the
     * paragraphs; null where it could not be built */
    mx_answer ans;
    printf(",\n  \"answer\": ");
    if (mx_answer_build(res, &ans) == MX_OK) {
        if (mx_answer_write_json(&ans, stdout) != MX_OK) printf("null");
        mx_answer_free(&ans);
    } else
        printf("null");
    printf("\n}\n");
}

/* ---- the command */

int mx_cmd_report(int argc, char **argv)
{
    const char *format = "text", *out = NULL;
    int ranks = 0;
    const mx_opt opts[] = {
        {"format", MX_OPT_STRING, &format, "FMT",
         "output format: text (default), md, csv, json, or html (a self-contained page written to --out)",
         "text|md|csv|json|html"},
        {"ranks", MX_OPT_FLAG, &ranks, NULL,
         "csv: one row per rank of every dist_* run instead of one per run (text, md and json always show them)",
         NULL},
        {"out", MX_OPT_STRING, &out, "PAGE",
         "html: where the page goes (default: FILE with .h5 replaced by .html, beside it); replaced atomically",
         NULL},
        {0},
    };
    const mx_cmd_spec spec = {
        "mxbench report", "FILE [options]",
        "Prints the answer of a results file written by 'mxbench sweep': per workload and device\n"
        "count, the configuration to run, where its step goes, the runner-up, each strategy's and\n"
        "kvstore's efficiency, and the rows left out and why (docs/results.md, \"The answer\"; json:\n"
        "an \"answer\" member). Then its summary: one row per run with its batch per device and\n"
        "global batch, throughput (median samples/s and 95% confidence interval), step time,\n"
        "speedup, efficiency and test accuracy; failed, skipped and diverged runs show why. A dist_*\n"
        "run also shows its rank table: each rank's step times, traffic and time in pushes and\n"
        "pulls, so that a straggler shows. --format html writes one self-contained page instead\n"
        "(the answer first, the figures inline, where each configuration's step goes, the rank and\n"
        "device tables, every run in a sortable table) and prints \"report: PAGE\".",
        opts, 1, 1,
    };
    const char *pos[1];
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    const int html = strcmp(format, "html") == 0;
    if (out && !html)
        return mx_usage_error("mxbench report", "--out is for --format html (the page's path); --format %s prints "
                              "to stdout", format);
    char *page = html ? (out ? strdup(out) : mx_report_page_path(pos[0])) : NULL;
    if (html && !page) return mx_usage_error("mxbench report", "out of memory for the page's path");
    /* checked before loading the file: a directory or a device there is bad usage, and the
     * page there before (a regular file) stays until the new one is complete */
    if (html && mx_path_check_output(page, out ? "--out" : "the page") != MX_OK) {
        fprintf(stderr, "mxbench report: %s\n", mx_last_error());
        free(page);
        return MX_OPTS_BAD;
    }

    mx_results res;
    if (mx_results_load(pos[0], &res) != MX_OK) {
        free(page);
        fprintf(stderr, "mxbench report: %s\n", mx_last_error());
        return MX_OPTS_BAD;
    }
    rc = MX_OK;
    if (html) {
        rc = mx_report_page(pos[0], &res, page, mx_plot_default_scripts_dir(), 0);
        if (rc == MX_OK) printf("report: %s\n", page);
    } else if (strcmp(format, "csv") == 0 && ranks) print_csv_ranks(&res);
    else if (strcmp(format, "csv") == 0) print_csv(&res);
    else if (strcmp(format, "json") == 0) print_json(pos[0], &res);
    else rc = print_table(pos[0], &res, strcmp(format, "md") == 0);
    mx_results_free(&res);
    free(page);
    if (rc != MX_OK) {
        fprintf(stderr, "mxbench report: %s\n", mx_last_error());
        return html ? mx_exit_status(rc) : MX_OPTS_BAD;
    }
    return 0;
}
