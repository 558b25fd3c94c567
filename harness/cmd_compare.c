/* `mxbench compare BASE NEW`: matches the runs of two results files by configuration and
 * judges each metric with its confidence interval, for regression gates in CI (exit 1 on a
 * regression). The decision rule lives in results/compare.c. */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "harness/report_table.h"
#include "results/compare.h"
#include "results/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEY = 1024, NCOLS = 8 }; /* CELL: report_table.h */

typedef struct {
    int base, cur; /* run indices; -1 when the configuration is on one side only */
} match;

typedef struct {
    const mx_results *base, *cur;
    match *pairs;
    int npairs;
    int *base_only, nbase_only, *cur_only, ncur_only;
} matching;

/* Pairs runs one-to-one by configuration key, in base order; a configuration repeated in a
 * file pairs with its repeats on the other side in order. */
static int match_runs(const mx_results *b, const mx_results *n, matching *m)
{
    memset(m, 0, sizeof *m);
    m->base = b;
    m->cur = n;
    char (*kb)[KEY] = malloc((size_t)(b->nruns + 1) * KEY), (*kn)[KEY] = malloc((size_t)(n->nruns + 1) * KEY);
    int *used = calloc((size_t)n->nruns + 1, sizeof *used);
    m->pairs = malloc((size_t)(b->nruns + 1) * sizeof *m->pairs);
    m->base_only = malloc((size_t)(b->nruns + 1) * sizeof *m->base_only);
    m->cur_only = malloc((size_t)(n->nruns + 1) * sizeof *m->cur_only);
    int rc = kb && kn && used && m->pairs && m->base_only && m->cur_only ? MX_OK
                                                                       : mx_error(MX_ENOMEM, "out of memory");
    for (int i = 0; rc == MX_OK && i < b->nruns; i++) mx_record_config_key(&b->runs[i], kb[i], KEY);
    for (int j = 0; rc == MX_OK && j < n->nruns; j++) mx_record_config_key(&n->runs[j], kn[j], KEY);
    for (int i = 0; rc == MX_OK && i < b->nruns; i++) {
        int found = -1;
        for (int j = 0; j < n->nruns && found < 0; j++)
            if (!used[j] && strcmp(kb[i], kn[j]) == 0) found = j;
        if (found < 0) {
            m->base_only[m->nbase_only++] = i;
            continue;
        }
        used[found] = 1;
        m->pairs[m->npairs++] = (match){i, found};
    }
    for (int j = 0; rc == MX_OK && j < n->nruns; j++)
        if (!used[j]) m->cur_only[m->ncur_only++] = j;
    free(kb);
    free(kn);
    free(used);
    return rc;
}

static void matching_free(matching *m)
{
    free(m->pairs);
    free(m->base_only);
    free(m->cur_only);
}

static int is_ok(const mx_run_record *r) { return strcmp(r->status, "ok") == 0; }

/* ---- the comparison rows */

typedef struct {
    char cell[NCOLS][CELL];
    mx_verdict verdict;
    mx_metric metric;
    double value; /* the new run's figure (what github-action-benchmark tracks) */
} row;

static const char *const heads[NCOLS] = {"config", "runs", "metric", "base", "new", "ratio", "95% CI", "verdict"};
static const int right[NCOLS] = {0, 0, 0, 1, 1, 1, 1, 0};

static void fmt_value(char *buf, mx_metric m, double x)
{
    if (isnan(x)) snprintf(buf, CELL, "-");
    else if (m == MX_METRIC_TEST_ACC) snprintf(buf, CELL, "%.4f", x);
    else if (m == MX_METRIC_INSTRUCTIONS) snprintf(buf, CELL, "%.0f", x);
    else snprintf(buf, CELL, fabs(x) >= 100 ? "%.0f" : "%.3g", x);
}

static void fill_row(row *w, const mx_run_record *b, const mx_run_record *n, mx_metric m, const mx_comparison *c)
{
    mx_compare_describe(b, w->cell[0], CELL);
    snprintf(w->cell[1], CELL, "%s/%s", b->id, n->id);
    snprintf(w->cell[2], CELL, "%s", mx_compare_metric_name(m));
    fmt_value(w->cell[3], m, c->base);
    fmt_value(w->cell[4], m, c->value);
    if (isnan(c->ratio)) snprintf(w->cell[5], CELL, "-");
    else snprintf(w->cell[5], CELL, "%.3f", c->ratio);
    if (isnan(c->ratio_lo) || isnan(c->ratio_hi)) snprintf(w->cell[6], CELL, "-");
    else snprintf(w->cell[6], CELL, "[%.3f, %.3f]", c->ratio_lo, c->ratio_hi);
    snprintf(w->cell[7], CELL, "%s", mx_compare_verdict_name(c->verdict));
    w->verdict = c->verdict;
    w->metric = m;
    w->value = c->value;
}

static int build_rows(const matching *mt, const int *metrics, int nmetrics, const double *threshold, row **out,
                      int *nrows)
{
    *nrows = 0;
    *out = malloc((size_t)(mt->npairs * nmetrics + 1) * sizeof **out);
    if (!*out) return mx_error(MX_ENOMEM, "out of memory for %d comparisons", mt->npairs * nmetrics);
    for (int p = 0; p < mt->npairs; p++) {
        const mx_run_record *b = &mt->base->runs[mt->pairs[p].base], *n = &mt->cur->runs[mt->pairs[p].cur];
        if (!is_ok(b) || !is_ok(n)) continue;
        for (int k = 0; k < nmetrics; k++) {
            /* a metric that neither run measured (test_acc of a steps-only run) is no comparison */
            if (!mx_compare_measured(b, metrics[k]) && !mx_compare_measured(n, metrics[k])) continue;
            mx_comparison c;
            mx_compare_runs(b, n, metrics[k], threshold[metrics[k] == MX_METRIC_INSTRUCTIONS], &c);
            fill_row(&(*out)[(*nrows)++], b, n, metrics[k], &c);
        }
    }
    return MX_OK;
}

/* ---- output */

static void print_text_rows(const row *rows, int n)
{
    int w[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        w[c] = (int)strlen(heads[c]);
        for (int r = 0; r < n; r++)
            if ((int)strlen(rows[r].cell[c]) > w[c]) w[c] = (int)strlen(rows[r].cell[c]);
    }
    for (int r = -1; r < n; r++) {
        for (int c = 0; c < NCOLS; c++) {
            const char *s = r < 0 ? heads[c] : rows[r].cell[c];
            if (c == NCOLS - 1) printf("%s\n", s);
            else printf(right[c] ? "%*s  " : "%-*s  ", w[c], s);
        }
    }
}

static void print_md_rows(const row *rows, int n)
{
    printf("|");
    for (int c = 0; c < NCOLS; c++) printf(" %s |", heads[c]);
    printf("\n|");
    for (int c = 0; c < NCOLS; c++) printf(right[c] ? " ---: |" : " --- |");
    printf("\n");
    for (int r = 0; r < n; r++) {
        printf("|");
        for (int c = 0; c < NCOLS - 1; c++) printf(" %s |", rows[r].cell[c]);
        /* the cells hold no '|': names, numbers and intervals only */
        if (rows[r].verdict == MX_VERDICT_REGRESSION) printf(" **regression** |\n");
        else printf(" %s |\n", rows[r].cell[NCOLS - 1]);
    }
}

static void print_one_side(const char *title, const mx_results *res, const int *idx, int n, int md)
{
    if (n == 0) return;
    printf(md ? "\n**%s** (%d, not compared):\n\n" : "\n%s (%d, not compared):\n", title, n);
    for (int i = 0; i < n; i++) {
        char d[256];
        mx_compare_describe(&res->runs[idx[i]], d, sizeof d);
        printf(md ? "- `%s` %s\n" : "  %-8s %s\n", res->runs[idx[i]].id, d);
    }
}

static void print_reason(const char *side, const mx_run_record *r, int md)
{
    if (is_ok(r)) return;
    int len = (int)strcspn(r->reason, "\n");
    printf(md ? "  - %s `%s` %s: %.*s\n" : "    %s %s %s: %.*s\n", side, r->id, r->status, len > 80 ? 80 : len,
           r->reason);
}

static void print_not_ok(const matching *mt, int md)
{
    int n = 0;
    for (int p = 0; p < mt->npairs; p++) {
        const mx_run_record *b = &mt->base->runs[mt->pairs[p].base], *c = &mt->cur->runs[mt->pairs[p].cur];
        if (is_ok(b) && is_ok(c)) continue;
        if (n++ == 0) printf(md ? "\n**runs not ok** (not compared):\n\n" : "\nruns not ok (not compared):\n");
        char d[256];
        mx_compare_describe(b, d, sizeof d);
        printf(md ? "- %s (base `%s` %s, new `%s` %s)\n" : "  %s: base %s %s, new %s %s\n", d, b->id, b->status,
               c->id, c->status);
        print_reason("base", b, md);
        print_reason("new", c, md);
    }
}

static const char *const units[MX_NMETRICS] = {"samples/s", "fraction", "instructions/step"};

/* github-action-benchmark's custom format: [{name, unit, value, range, extra}], one entry per
 * compared figure, the new run's value; the tool keeps the history and draws it. */
static void print_json_rows(const row *rows, int n)
{
    printf("[");
    for (int r = 0; r < n; r++) {
        char name[2 * CELL + 8], extra[6 * CELL];
        snprintf(name, sizeof name, "%s %s", rows[r].cell[0], rows[r].cell[2]);
        snprintf(extra, sizeof extra, "base %s, ratio %s %s, %s (runs %s)", rows[r].cell[3], rows[r].cell[5],
                 rows[r].cell[6], rows[r].cell[7], rows[r].cell[1]);
        printf("%s\n  {\"name\": ", r ? "," : "");
        mx_json_string(name);
        printf(", \"unit\": \"%s\", \"value\": ", units[rows[r].metric]);
        mx_json_number(rows[r].value);
        printf(", \"range\": ");
        mx_json_string(rows[r].cell[6]);
        printf(", \"extra\": ");
        mx_json_string(extra);
        printf("}");
    }
    printf("\n]\n");
}

/* github-action-benchmark takes one direction per file: instructions are smaller-is-better,
 * throughput and accuracy bigger-is-better. */
static int json_mixes_directions(const row *rows, int n)
{
    int smaller = 0, bigger = 0;
    for (int r = 0; r < n; r++) rows[r].metric == MX_METRIC_INSTRUCTIONS ? smaller++ : bigger++;
    return smaller && bigger;
}

static int count(const row *rows, int n, mx_verdict v)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += rows[i].verdict == v;
    return k;
}

static void print_report(const char *bpath, const char *npath, const matching *mt, const row *rows, int nrows,
                         const double *threshold, int md)
{
    char th[96];
    int counted = 0;
    for (int r = 0; r < nrows; r++) counted |= rows[r].metric == MX_METRIC_INSTRUCTIONS;
    snprintf(th, sizeof th, counted ? "%g%% (counts: %g%%)" : "%g%%", threshold[0] * 100, threshold[1] * 100);
    int reg = count(rows, nrows, MX_VERDICT_REGRESSION), imp = count(rows, nrows, MX_VERDICT_IMPROVEMENT);
    int uns = count(rows, nrows, MX_VERDICT_UNSURE), same = count(rows, nrows, MX_VERDICT_SAME);
    int na = count(rows, nrows, MX_VERDICT_NA);
    if (md)
        printf("### mxbench compare\n\nbase `%s`, new `%s`, threshold %s\n\n", bpath, npath, th);
    else
        printf("base %s\nnew  %s\nthreshold %s\n\n", bpath, npath, th);
    if (nrows > 0) {
        if (md) print_md_rows(rows, nrows);
        else print_text_rows(rows, nrows);
    } else {
        printf("nothing compared: no configuration ran ok in both files with a chosen metric measured in both "
               "(test_acc needs runs with --epochs)\n");
    }
    print_one_side("only in base", mt->base, mt->base_only, mt->nbase_only, md);
    print_one_side("only in new", mt->cur, mt->cur_only, mt->ncur_only, md);
    print_not_ok(mt, md);
    printf("\n%s%d compared: %d regression%s, %d improvement%s, %d unsure (~), %d same", md ? "**" : "", nrows, reg,
           reg == 1 ? "" : "s", imp, imp == 1 ? "" : "s", uns, same);
    if (na) printf(", %d n/a", na);
    printf("%s\n", md ? "**" : "");
    if (!md)
        printf("ratio = new/base with a 95%% interval; a change is called only when the whole interval lies\n"
               "beyond the threshold; '~' = the ratio passes the threshold but the interval does not.%s\n",
               counted ? "\ninstructions: lower is better, and a count has no noise: its interval is the ratio." : "");
}

/* ---- the command */

static int parse_metrics(const char *list, int *metrics)
{
    char buf[256];
    const char *names[MX_NMETRICS];
    int n = mx_parse_choice_list("mxbench compare", "metrics", list, "throughput|test_acc|instructions", buf,
                                 sizeof buf, names, MX_NMETRICS);
    for (int i = 0; i < n; i++) metrics[i] = mx_compare_metric_parse(names[i]);
    return n;
}

static int load_both(const char *bpath, const char *npath, mx_results *b, mx_results *n)
{
    if (mx_results_load(bpath, b) != MX_OK) return -1;
    if (mx_results_load(npath, n) == MX_OK) return 0;
    mx_results_free(b);
    return -1;
}

/* A gate that compared nothing would pass anything: unless --allow-empty, that is bad input
 * (exit 2), said on stderr with what each side holds. */
static int nothing_compared(const char *bpath, const char *npath, const matching *mt)
{
    if (mt->npairs == 0)
        fprintf(stderr, "mxbench compare: no run in common between %s (%d runs) and %s (%d runs): nothing compared; "
                "compare files of the same study, or pass --allow-empty to accept this\n", bpath, mt->base->nruns,
                npath, mt->cur->nruns);
    else
        fprintf(stderr, "mxbench compare: %s (%d runs) and %s (%d runs) have %d configuration(s) in common, but none "
                "ran ok in both with a chosen metric measured in both (test_acc needs runs with --epochs): nothing "
                "compared; pass --allow-empty to accept this\n", bpath, mt->base->nruns, npath, mt->cur->nruns,
                mt->npairs);
    return MX_OPTS_BAD;
}

int mx_cmd_compare(int argc, char **argv)
{
    const char *threshold_s = "5%", *count_threshold_s = "1%", *metrics_s = "throughput,test_acc,instructions";
    const char *format = "text";
    int allow_empty = 0;
    const mx_opt opts[] = {
        {"threshold", MX_OPT_STRING, &threshold_s, "PCT",
         "smallest change of a timed figure that counts, as 5% or 0.05 (default 5%)", NULL},
        {"count-threshold", MX_OPT_STRING, &count_threshold_s, "PCT",
         "smallest change of a counted figure (instructions, from mxbench count) that counts (default 1%)", NULL},
        {"metrics", MX_OPT_STRING, &metrics_s, "LIST",
         "metrics to compare: throughput, test_acc, instructions (default all three, where measured)", NULL},
        {"format", MX_OPT_STRING, &format, "FMT",
         "text (default), md (a table for a pull request) or json (github-action-benchmark's custom format)",
         "text|md|json"},
        {"allow-empty", MX_OPT_FLAG, &allow_empty, NULL,
         "exit 0 when nothing could be compared (no run in common); without it that is exit 2", NULL},
        {0},
    };
    const mx_cmd_spec spec = {
        "mxbench compare", "BASE NEW [options]",
        "Compares two results files run by run, matching runs by configuration. For each metric it\n"
        "prints base, new, the ratio new/base with a 95% interval and a verdict: 'regression' or\n"
        "'improvement' only when the whole interval lies beyond the threshold, '~' when only the\n"
        "ratio does, else 'same'. Instruction counts (mxbench count) are exact: their interval is\n"
        "the ratio, judged at --count-threshold, lower being better. json prints one entry per\n"
        "figure, the new value, for github-action-benchmark (tool customBiggerIsBetter for\n"
        "throughput and test_acc, customSmallerIsBetter for instructions: one direction per file).\n"
        "Exit status: 1 if any regression, 0 otherwise, 2 on bad input, including two files with\n"
        "nothing to compare (unless --allow-empty).",
        opts, 2, 2,
    };
    const char *pos[2];
    int npos, metrics[MX_NMETRICS];
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    const double threshold[2] = {mx_parse_fraction("mxbench compare", "threshold", threshold_s),
                                 mx_parse_fraction("mxbench compare", "count-threshold", count_threshold_s)};
    int nmetrics = parse_metrics(metrics_s, metrics);
    if (threshold[0] < 0 || threshold[1] < 0 || nmetrics < 0) return MX_OPTS_BAD;

    mx_results base, cur;
    if (load_both(pos[0], pos[1], &base, &cur) != 0) {
        fprintf(stderr, "mxbench compare: %s\n", mx_last_error());
        return MX_OPTS_BAD;
    }
    matching mt;
    row *rows = NULL;
    int nrows = 0;
    rc = match_runs(&base, &cur, &mt);
    if (rc == MX_OK) rc = build_rows(&mt, metrics, nmetrics, threshold, &rows, &nrows);
    const int json = strcmp(format, "json") == 0;
    if (rc == MX_OK && json && json_mixes_directions(rows, nrows)) {
        fprintf(stderr, "mxbench compare: --format json: these files give instruction counts (smaller is better) and "
                "timed or accuracy figures (bigger is better), which github-action-benchmark cannot keep in one "
                "file; run compare twice, with --metrics instructions and with --metrics throughput,test_acc\n");
        rc = MX_EINVAL;
    } else if (rc == MX_OK && json) {
        print_json_rows(rows, nrows);
    } else if (rc == MX_OK) {
        print_report(pos[0], pos[1], &mt, rows, nrows, threshold, strcmp(format, "md") == 0);
    } else {
        fprintf(stderr, "mxbench compare: %s\n", mx_last_error());
    }
    int status = rc != MX_OK ? MX_OPTS_BAD : count(rows, nrows, MX_VERDICT_REGRESSION) ? 1 : 0;
    if (rc == MX_OK && nrows == 0 && !allow_empty) status = nothing_compared(pos[0], pos[1], &mt);
    free(rows);
    matching_free(&mt);
    mx_results_free(&base);
    mx_results_free(&cur);
    return status;
}
