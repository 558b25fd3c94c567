/* The HTML report of a results file (page.h): the header, the answer, the figures; the
 * tables come from page_tables.c. */
#include "report/page.h"

#include "base/paths.h"
#include "base/status.h"
#include "plots/plot.h"
#include "report/html.h"
#include "report/page_tables.h"
#include "results/answer.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *mx_report_page_path(const char *results_path)
{
    const size_t n = strlen(results_path);
    const int h5 = n > 3 && strcmp(results_path + n - 3, ".h5") == 0;
    char *p = malloc(n + 6);
    if (!p) return NULL;
    snprintf(p, n + 6, "%.*s.html", (int)(h5 ? n - 3 : n), results_path);
    return p;
}

/* s[0..n) escaped. */
static void text_n(FILE *f, const char *s, size_t n)
{
    char *t = strndup(s, n);
    if (t) mx_html_text(f, t);
    free(t);
}

/* ---- the header: what was measured where, and by which commands */

static void meta_row(FILE *f, const char *key, const char *value)
{
    if (!value || !*value) return; /* what the file does not say is left out */
    fputs("<tr><th style=\"text-align:left\">", f);
    mx_html_text(f, key);
    fputs("</th><td style=\"white-space:normal\">", f);
    mx_html_text(f, value);
    fputs("</td></tr>\n", f);
}

static void write_header(FILE *f, const char *results_path, const mx_results *res)
{
    const mx_results_meta *m = &res->meta;
    fputs("<h1>mxbench report: ", f);
    mx_html_text(f, results_path);
    fputs("</h1>\n<table class=\"meta\">\n", f);
    meta_row(f, "file", results_path);
    /* the workloads, each once, in the order of the runs */
    char workloads[512] = "";
    size_t len = 0;
    int nok = 0;
    for (int i = 0; i < res->nruns; i++) {
        nok += strcmp(res->runs[i].status, "ok") == 0;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(res->runs[j].workload, res->runs[i].workload) == 0;
        if (!seen && len < sizeof workloads)
            len += (size_t)snprintf(workloads + len, sizeof workloads - len, "%s%s", len ? ", " : "",
                                    res->runs[i].workload);
    }
    meta_row(f, "workloads", workloads);
    char runs[64];
    snprintf(runs, sizeof runs, "%d (%d ok)", res->nruns, nok);
    meta_row(f, "runs", runs);
    meta_row(f, "host", m->host);
    meta_row(f, "CPU", m->cpu_model);
    meta_row(f, "CPU features", m->cpu_features);
    meta_row(f, "GPU", m->gpu_model);
    char version[128] = "";
    if (m->mxbench_version[0] || m->git_revision[0])
        snprintf(version, sizeof version, "%s%s%s%s", m->mxbench_version, m->git_revision[0] ? " (" : "",
                 m->git_revision, m->git_revision[0] ? ")" : "");
    meta_row(f, "mxbench", version);
    meta_row(f, "started", m->start_time);
    if (m->command_line[0]) { /* one line per command that wrote the file (a sweep, its --resume) */
        fputs("<tr><th style=\"text-align:left\">command</th><td style=\"white-space:normal\">", f);
        for (const char *s = m->command_line; *s;) {
            const size_t n = strcspn(s, "\n");
            if (n) {
                fputs("<code>", f);
                text_n(f, s, n);
                fputs("</code><br>", f);
            }
            s += n + (s[n] == '\n');
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* ---- the answer, first: one paragraph per workload and device count (the winner named in
 * it marked), then the rows left out */

static void write_answer(FILE *f, const mx_answer *a)
{
    fputs("<h2 id=\"answer\">The answer</h2>\n<div class=\"answer\">\n", f);
    if (a->target_rule[0]) {
        fputs("<p class=\"left-out\">Target: ", f);
        mx_html_text(f, a->target_rule);
        fputs("</p>\n", f);
    }
    char **paras = NULL;
    int n = 0;
    if (mx_answer_paragraphs(a, &paras, &n) != MX_OK) {
        fputs("<p>(out of memory for the answer's text: see the tables below)</p>\n", f);
        n = 0;
    }
    if (n == 0 && a->ngroups == 0) fputs("<p>No run could be ranked: none ended ok with timings.</p>\n", f);
    for (int i = 0; i < n; i++) {
        const mx_answer_group *g = i < a->ngroups ? &a->groups[i] : NULL;
        const char *win = g && g->winner >= 0 ? g->entries[g->winner].label : NULL;
        const char *at = win && *win ? strstr(paras[i], win) : NULL;
        fputs(g ? "<p>" : "<p class=\"left-out\">", f);
        if (at) { /* the winner's configuration stands out where the paragraph names it */
            text_n(f, paras[i], (size_t)(at - paras[i]));
            fputs("<mark class=\"winner\"><strong>", f);
            mx_html_text(f, win);
            fputs("</strong></mark>", f);
            mx_html_text(f, at + strlen(win));
        } else {
            mx_html_text(f, paras[i]);
        }
        fputs("</p>\n", f);
    }
    if (paras) mx_answer_paragraphs_free(paras, n);
    fputs("</div>\n", f);
}

/* ---- the figures: drawn into a temporary directory, inlined, the directory removed */

/* What each figure shows, by its name (mx_plot_names): a figure added without a caption here
 * is still inlined, captioned by its name alone. */
static const struct {
    const char *name, *caption;
} captions[] = {
    {"throughput", "Samples per second against device count, one line per configuration (95% CI bars)."},
    {"speedup", "Speedup over one device of the same configuration; the dashed diagonal is linear scaling."},
    {"efficiency", "Scaling efficiency: speedup over the device count (1 = linear scaling)."},
    {"accuracy", "Final test accuracy per configuration, against the global batch or the device count."},
    {"breakdown", "Where a step goes: median time per phase, one stacked bar per run."},
    {"loss", "Training loss per step (first repeat), smoothed over the raw loss."},
    {"staleness", "dist_async: how many updates a pushed gradient's weights were behind."},
    {"memory", "Memory per device: the most a device held in a step, and its parameters and gradients."},
    {"moved", "Bytes moved between devices per step, per strategy."},
    {"bubble", "The pipeline bubble: each stage's measured idle share against the theory of equal stages."},
    {"compression", "Gradient bytes on the wire per step and final accuracy, per compressor and precision."},
    {"loss_scale", "fp16 mixed precision: the dynamic loss scale per step and the skipped steps."},
    {"ranking", "The answer drawn: the ranked configurations of each workload and device count by throughput."},
};

static const char *caption_of(const char *name)
{
    for (size_t i = 0; i < sizeof captions / sizeof captions[0]; i++)
        if (strcmp(captions[i].name, name) == 0) return captions[i].caption;
    return "";
}

/* The width of the SVG's canvas (gnuplot writes viewBox="0 0 W H" near its top); 0 when not
 * found. */
static int svg_width(const char *path)
{
    char head[2048];
    FILE *in = fopen(path, "r");
    if (!in) return 0;
    const size_t n = fread(head, 1, sizeof head - 1, in);
    fclose(in);
    head[n] = '\0';
    const char *v = strstr(head, "viewBox=\"");
    double x, y, w;
    if (!v || sscanf(v + 9, "%lf %lf %lf", &x, &y, &w) != 3 || !(w > 0 && w < 100000)) return 0;
    return (int)(w + 0.5);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0; /* go on: remove what can be removed */
}

/* A fresh directory for the figures: under $TMPDIR (else /tmp), or beside the page where that
 * cannot be made. NULL (and a message) when neither can. */
static char *make_figure_dir(const char *out_html)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = mx_path_fmt("%s/mxbench-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (dir && mkdtemp(dir)) return dir;
    free(dir);
    const char *slash = strrchr(out_html, '/');
    dir = slash ? mx_path_fmt("%.*s/.mxbench-report-XXXXXX", (int)(slash - out_html + 1), out_html)
                : mx_path_fmt(".mxbench-report-XXXXXX");
    if (dir && mkdtemp(dir)) return dir;
    free(dir);
    return NULL;
}

static int write_figures(FILE *f, const mx_results *res, const char *out_html, const char *scripts, int verbose)
{
    fputs("<h2 id=\"figures\">Figures</h2>\n", f);
    mx_plot_report *rep = calloc(1, sizeof *rep);
    if (!rep) return mx_error(MX_ENOMEM, "out of memory for the figures");
    char *dir = make_figure_dir(out_html);
    int rc = dir ? mx_plot_results_report(res, dir, scripts, verbose, rep)
                 : mx_error(MX_EIO, "no temporary directory for the figures under $TMPDIR, /tmp or beside the page");
    if (rc < 0) { /* the page goes on without figures, saying why */
        fprintf(stderr, "mxbench report: the page has no figures: %s\n", mx_last_error());
        fputs("<p><strong>No figures:</strong> ", f);
        mx_html_text(f, mx_last_error());
        fputs("</p>\n", f);
    }
    for (int p = 0; rc >= 0 && p < MX_NPLOTS; p++) {
        if (!rep->drawn[p]) continue;
        /* a block, not the style sheet's inline-block: gnuplot's SVGs have no size of their own
         * (an inline-block shrinks them to a thumbnail); as wide as gnuplot drew the canvas, so
         * that its print is at the size it was drawn for, or the page's width where that is less */
        const int width = svg_width(rep->files[p][1]);
        fprintf(f, "<figure id=\"fig-%s\" style=\"display:block;margin:1em 0", mx_plot_names[p]);
        if (width > 0) fprintf(f, ";max-width:%dpx", width);
        fputs("\">", f);
        const char *caption = caption_of(mx_plot_names[p]);
        if (mx_html_svg(f, rep->files[p][1], *caption ? caption : mx_plot_names[p]) != MX_OK) {
            fputs("(the figure could not be read back: ", f);
            mx_html_text(f, mx_last_error());
            fputs(")", f);
        }
        fputs("<figcaption><strong>", f);
        mx_html_text(f, mx_plot_names[p]);
        fputs(*caption ? "</strong>: " : "</strong>", f);
        mx_html_text(f, caption);
        fputs("</figcaption></figure>\n", f);
    }
    int nskipped = 0;
    for (int p = 0; rc >= 0 && p < MX_NPLOTS; p++)
        if (!rep->drawn[p] && rep->skipped[p][0]) {
            if (nskipped++ == 0) fputs("<p class=\"meta\">Not drawn:</p>\n<ul class=\"meta\">\n", f);
            fprintf(f, "<li><strong>%s</strong>: ", mx_plot_names[p]);
            mx_html_text(f, rep->skipped[p]);
            fputs("</li>\n", f);
        }
    if (nskipped) fputs("</ul>\n", f);
    if (dir) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
    free(rep);
    return MX_OK;
}

int mx_report_page(const char *results_path, const mx_results *res, const char *out_html,
                   const char *plot_scripts_dir, int verbose)
{
    mx_answer ans;
    MX_TRY(mx_answer_build(res, &ans));
    const char *base = strrchr(results_path, '/');
    char title[512];
    snprintf(title, sizeof title, "mxbench report: %s", base ? base + 1 : results_path);
    mx_html h;
    int rc = mx_html_open(&h, out_html, title);
    if (rc == MX_OK) {
        write_header(h.f, results_path, res);
        write_answer(h.f, &ans);
        rc = write_figures(h.f, res, out_html, plot_scripts_dir, verbose);
    }
    if (rc == MX_OK) mx_page_breakdown(h.f, &ans);
    if (rc == MX_OK) rc = mx_page_ranks_devices(h.f, res);
    if (rc == MX_OK) rc = mx_page_summary(h.f, res);
    if (rc == MX_OK) rc = mx_html_close(&h);
    else if (h.f) mx_html_abort(&h);
    mx_answer_free(&ans);
    return rc;
}
