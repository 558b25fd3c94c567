/* `mxbench history FILE...`: a study's results files from successive revisions, ordered by
 * when they ran, each configuration's figures across them and every point judged against the
 * configuration's previous one (results/history.h); a table, the figures (plots/plot_history.h)
 * and a page (report/history_page.h). Exit 1 when the newest revision regressed, for CI. */
#include "base/paths.h"
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "plots/plot.h"
#include "plots/plot_history.h"
#include "report/history_page.h"
#include "results/history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FILES = 512 };

static const char cmd[] = "mxbench history";

/* ---- the text table */

static const char *mark(mx_verdict v)
{
    return v == MX_VERDICT_REGRESSION    ? " (R)"
           : v == MX_VERDICT_IMPROVEMENT ? " (I)"
           : v == MX_VERDICT_UNSURE      ? " (~)"
                                         : "";
}

static void print_revisions(const mx_history *h, const char *const *paths)
{
    printf("history of %d results files, oldest first (%s); threshold %g%%\n\n", h->nrevs,
           h->unordered ? "in the order given: some file has no start_time" : "by start time", h->threshold * 100);
    printf("  %3s  %-14s %-21s %s\n", "#", "revision", "started (UTC)", "file");
    for (int i = 0; i < h->nrevs; i++)
        printf("  %3d  %-14s %-21s %s\n", i + 1, h->revs[i].label,
               h->revs[i].start_time[0] ? h->revs[i].start_time : "-", paths[h->revs[i].file]);
}

/* A configuration per row, a revision per column, each value followed by its verdict. */
static void print_values(const mx_history *h, int m)
{
    int wl = (int)strlen("configuration"), *w = malloc((size_t)h->nrevs * sizeof *w);
    if (!w) return;
    for (int c = 0; c < h->nconfigs; c++)
        if ((int)strlen(h->configs[c].label) > wl) wl = (int)strlen(h->configs[c].label);
    for (int i = 0; i < h->nrevs; i++) {
        w[i] = (int)strlen(h->revs[i].label);
        for (int c = 0; c < h->nconfigs; c++) {
            const mx_history_point *p = &h->configs[c].pt[i];
            char v[64];
            mx_history_fmt(v, sizeof v, m, p->run ? p->value[m] : NAN);
            const int len = (int)strlen(v) + (int)strlen(mark(p->vs[m].verdict));
            if (len > w[i]) w[i] = len;
        }
    }
    printf("\n%s, each value's verdict against the configuration's previous point:\n"
           "(R) regression, (I) improvement, (~) unsure; '-': no ok run in that file\n",
           m == MX_HIST_THROUGHPUT ? "throughput (samples/s)" : "instructions per step");
    printf("%-*s", wl, "configuration");
    for (int i = 0; i < h->nrevs; i++) printf("  %*s", w[i], h->revs[i].label);
    printf("\n");
    for (int c = 0; c < h->nconfigs; c++) {
        int any = 0;
        for (int i = 0; i < h->nrevs; i++) any |= h->configs[c].pt[i].run && !isnan(h->configs[c].pt[i].value[m]);
        if (!any) continue;
        printf("%-*s", wl, h->configs[c].label);
        for (int i = 0; i < h->nrevs; i++) {
            const mx_history_point *p = &h->configs[c].pt[i];
            char v[96];
            mx_history_fmt(v, sizeof v, m, p->run ? p->value[m] : NAN);
            strcat(v, mark(p->vs[m].verdict));
            printf("  %*s", w[i], v);
        }
        printf("\n");
    }
    free(w);
}

/* Each regression (then improvement) named: configuration, metric, revisions, ratio, interval. */
static void print_changes(const mx_history *h, unsigned metrics, mx_verdict which)
{
    int n = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++)
        if (metrics & 1u << m) n += mx_history_count(h, m, which, -1);
    if (!n) return;
    printf("\n%ss:\n", mx_compare_verdict_name(which));
    for (int i = 0; i < h->nrevs; i++)
        for (int c = 0; c < h->nconfigs; c++)
            for (int m = 0; m < MX_HIST_NMETRICS; m++) {
                const mx_history_point *p = &h->configs[c].pt[i];
                if (!(metrics & 1u << m) || !p->run || p->vs[m].verdict != which) continue;
                const mx_comparison *k = &p->vs[m];
                printf("  %s: %s at %s against %s: ratio %.3f", h->configs[c].label, mx_history_metric_name(m),
                       h->revs[i].label, h->revs[p->prev].label, k->ratio);
                if (!isnan(k->ratio_lo) && k->ratio_lo != k->ratio_hi)
                    printf(" [%.3f, %.3f]", k->ratio_lo, k->ratio_hi);
                char b[64], a[64];
                mx_history_fmt(b, sizeof b, m, k->base);
                mx_history_fmt(a, sizeof a, m, k->value);
                printf(" (%s -> %s)\n", b, a);
            }
}

static void print_summary(const mx_history *h, unsigned metrics)
{
    int n[5] = {0}, last_reg = 0, last_cmp = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++) {
        if (!(metrics & 1u << m)) continue;
        for (int v = 0; v < 5; v++) n[v] += mx_history_count(h, m, (mx_verdict)v, -1);
        last_reg += mx_history_count(h, m, MX_VERDICT_REGRESSION, h->nrevs - 1);
        last_cmp += mx_history_ncompared(h, m, h->nrevs - 1);
    }
    printf("\n%d configurations, %d points judged: %d regression%s, %d improvement%s, %d unsure (~), %d same\n",
           h->nconfigs, n[0] + n[1] + n[2] + n[3], n[MX_VERDICT_REGRESSION], n[MX_VERDICT_REGRESSION] == 1 ? "" : "s",
           n[MX_VERDICT_IMPROVEMENT], n[MX_VERDICT_IMPROVEMENT] == 1 ? "" : "s", n[MX_VERDICT_UNSURE],
           n[MX_VERDICT_SAME]);
    if (h->skipped || h->repeated)
        printf("left out: %d run%s not ok, %d repeated configuration%s (the first ok run of a file kept)\n",
               h->skipped, h->skipped == 1 ? "" : "s", h->repeated, h->repeated == 1 ? "" : "s");
    if (last_reg)
        printf("newest revision %s: %d regression%s against the previous point\n", h->revs[h->nrevs - 1].label,
               last_reg, last_reg == 1 ? "" : "s");
    else
        printf("newest revision %s: no regression (%d point%s judged)\n", h->revs[h->nrevs - 1].label, last_cmp,
               last_cmp == 1 ? "" : "s");
}

/* ---- figures and page */

/* The folder "history" beside the first file given. */
static char *default_out(const char *first)
{
    const char *slash = strrchr(first, '/');
    if (!slash) return mx_path_fmt("history");
    return mx_path_fmt("%.*s/history", (int)(slash - first) + (slash == first), first);
}

/* Draws the figures (without gnuplot: said, and the page goes without them) and writes the
 * page. 0, or an exit status (2 for a bad output folder, 1 when gnuplot failed). */
static int draw_and_page(const mx_history *h, unsigned metrics, const char *const *paths, const char *out)
{
    mx_plot_history_report rep;
    mx_history_page pg = {.paths = paths, .metrics = metrics};
    const int rc = mx_plot_history(h, metrics, out, mx_plot_default_scripts_dir(), 0, &rep);
    char why[600];
    if (rc == MX_EUNSUPPORTED) {
        snprintf(why, sizeof why, "No figures: %s.", mx_last_error());
        pg.no_figures = why;
        fprintf(stderr, "%s: no figures: %s\n", cmd, mx_last_error());
    } else if (rc < 0) {
        fprintf(stderr, "%s: --out %s: %s\n", cmd, out, mx_last_error());
        return mx_exit_status(rc);
    }
    for (int m = 0; rc > 0 && m < MX_HIST_NMETRICS; m++) {
        if (!rep.drawn[m]) continue;
        pg.figures[m] = rep.files[m][1];
        const char *what = m == MX_HIST_THROUGHPUT ? "Throughput" : "Instructions per step";
        const int part = rep.shown[m] < rep.of[m];
        if (part)
            snprintf(pg.captions[m], sizeof pg.captions[m], "%s across revisions: %d of %d configurations, those "
                     "with a change first, then the widest spread (all are in the tables)", what, rep.shown[m],
                     rep.of[m]);
        else
            snprintf(pg.captions[m], sizeof pg.captions[m], "%s across revisions: %d configuration%s", what,
                     rep.shown[m], rep.shown[m] == 1 ? "" : "s");
        printf("%s %s and %s\n", m ? "        " : "figures:", rep.files[m][0], rep.files[m][1]);
        if (part)
            printf("         %s: %d of %d configurations drawn, those with a regression or improvement first, "
                   "then the widest spread across revisions\n", what, rep.shown[m], rep.of[m]);
    }
    char *page = mx_path_fmt("%s/history.html", out);
    const int prc = page ? mx_history_page_write(h, &pg, page) : mx_error(MX_ENOMEM, "out of memory");
    if (prc == MX_OK) printf("page: %s\n", page);
    else fprintf(stderr, "%s: %s\n", cmd, mx_last_error());
    free(page);
    return prc == MX_OK ? 0 : mx_exit_status(prc);
}

/* ---- the command */

static const char summary[] =
    "Reads results files of one study run at successive revisions (a CI job's results kept from\n"
    "run to run), orders them by start time (the order given for equal times, or where a file has\n"
    "none) and follows each configuration across them: every point is judged against the\n"
    "configuration's previous point as `mxbench compare` judges two files (ratio with a 95%\n"
    "interval; a regression only when the whole interval lies beyond the threshold). Prints the\n"
    "table and the changes, draws DIR/history.png and .svg (throughput against revision, regressions\n"
    "ringed red, improvements green; at most 8 configurations, those that changed first) and\n"
    "DIR/history_instructions where files have counts (mxbench count), and writes DIR/history.html,\n"
    "a self-contained page. Without gnuplot the figures are left out (said on stderr).\n"
    "Exit status: 1 when the newest revision has a regression against the previous point of some\n"
    "configuration (a gate for CI), 0 otherwise; 2 on bad input: an unreadable file, fewer than two\n"
    "files, a bad option, or files in which no configuration (or none of the newest file) ran ok\n"
    "in two of them, so that nothing could be judged.";

static int parse_metric(const char *s, unsigned *metrics)
{
    if (strcmp(s, "throughput") == 0) *metrics = 1u << MX_HIST_THROUGHPUT;
    else if (strcmp(s, "instructions") == 0) *metrics = 1u << MX_HIST_INSTRUCTIONS;
    else *metrics = 1u << MX_HIST_THROUGHPUT | 1u << MX_HIST_INSTRUCTIONS;
    return 0;
}

static int load_all(const char *const *paths, int n, mx_results *res)
{
    for (int i = 0; i < n; i++)
        if (mx_results_load(paths[i], &res[i]) != MX_OK) {
            fprintf(stderr, "%s: %s\n", cmd, mx_last_error());
            for (int j = 0; j < i; j++) mx_results_free(&res[j]);
            return -1;
        }
    return 0;
}

/* Nothing judged (anywhere, or at the newest revision) passes no gate: said, exit 2. */
static int nothing_judged(const mx_history *h, unsigned metrics, const char *const *paths)
{
    int all = 0, last = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++)
        if (metrics & 1u << m) all += mx_history_ncompared(h, m, -1), last += mx_history_ncompared(h, m, h->nrevs - 1);
    if (last) return 0;
    const char *what = metrics == 1u << MX_HIST_INSTRUCTIONS ? " with instruction counts (mxbench count)" : "";
    if (!all)
        fprintf(stderr, "%s: no configuration ran ok%s in two of the %d files: nothing judged; give results files "
                "of the same study\n", cmd, what, h->nrevs);
    else
        fprintf(stderr, "%s: the newest file (%s, revision %s) has no configuration that ran ok%s in an earlier "
                "file: nothing judged at the newest revision\n", cmd, paths[h->revs[h->nrevs - 1].file],
                h->revs[h->nrevs - 1].label, what);
    return MX_OPTS_BAD;
}

int mx_cmd_history(int argc, char **argv)
{
    const char *out = NULL, *threshold_s = "5%", *metric_s = "both";
    const mx_opt opts[] = {
        {"out", MX_OPT_STRING, &out, "DIR",
         "where the figures (history.png, .svg; data in DIR/data) and history.html go (default: history/ in the "
         "folder of the first FILE)", NULL},
        {"threshold", MX_OPT_STRING, &threshold_s, "PCT",
         "smallest change that counts, as 5% or 0.05, for throughput and instruction counts alike (default 5%)",
         NULL},
        {"metric", MX_OPT_STRING, &metric_s, "M",
         "what is judged and drawn: throughput, instructions (per step, from mxbench count) or both (default "
         "both: instructions where counted)", "throughput|instructions|both"},
        {0},
    };
    const mx_cmd_spec spec = {cmd, "FILE FILE... [options]", summary, opts, 1, MAX_FILES, NULL};
    const char *pos[MAX_FILES];
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    if (npos < 2)
        return mx_usage_error(cmd, "needs at least two results files to follow across revisions (given %d: %s)", npos,
                              pos[0]);
    const double threshold = mx_parse_fraction(cmd, "threshold", threshold_s);
    if (threshold < 0) return MX_OPTS_BAD;
    unsigned metrics;
    parse_metric(metric_s, &metrics);

    mx_results *res = calloc((size_t)npos, sizeof *res);
    if (!res || load_all(pos, npos, res) != 0) {
        if (!res) fprintf(stderr, "%s: out of memory for %d files\n", cmd, npos);
        free(res);
        return MX_OPTS_BAD;
    }
    mx_history h;
    int status = 0;
    if ((rc = mx_history_build(res, pos, npos, threshold, &h)) != MX_OK) {
        fprintf(stderr, "%s: %s\n", cmd, mx_last_error());
        status = mx_exit_status(rc);
    } else if (metrics == 1u << MX_HIST_INSTRUCTIONS && !h.counted) {
        fprintf(stderr, "%s: --metric instructions: none of the %d files has instruction counts (they come from "
                "mxbench count)\n", cmd, npos);
        status = MX_OPTS_BAD;
    }
    if (status == 0) {
        if (!h.counted) metrics &= ~(1u << MX_HIST_INSTRUCTIONS);
        print_revisions(&h, pos);
        for (int m = 0; m < MX_HIST_NMETRICS; m++)
            if (metrics & 1u << m) print_values(&h, m);
        print_changes(&h, metrics, MX_VERDICT_REGRESSION);
        print_changes(&h, metrics, MX_VERDICT_IMPROVEMENT);
        print_summary(&h, metrics);
        fflush(stdout);
        char *dir = out ? NULL : default_out(pos[0]);
        status = draw_and_page(&h, metrics, pos, out ? out : dir);
        free(dir);
        fflush(stdout);
        if (status == 0) status = nothing_judged(&h, metrics, pos);
        int reg = 0;
        for (int m = 0; m < MX_HIST_NMETRICS; m++)
            if (metrics & 1u << m) reg += mx_history_count(&h, m, MX_VERDICT_REGRESSION, h.nrevs - 1);
        if (status == 0 && reg) status = 1;
    }
    if (rc == MX_OK) mx_history_free(&h);
    for (int i = 0; i < npos; i++) mx_results_free(&res[i]);
    free(res);
    return status;
}
