/* The page of `mxbench history` (history_page.h). */
#include "report/history_page.h"

#include "report/html.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const verdict_class[] = {
    [MX_VERDICT_SAME] = "", [MX_VERDICT_UNSURE] = "", [MX_VERDICT_REGRESSION] = "bad",
    [MX_VERDICT_IMPROVEMENT] = "win", [MX_VERDICT_NA] = "",
};

static int judged(const mx_history_page *pg, int m) { return (pg->metrics >> m) & 1u; }

/* "0.900 [0.871, 0.930]": a ratio and its interval, or the ratio alone (a count has none). */
static void fmt_ratio(char *buf, size_t n, const mx_comparison *c)
{
    if (isnan(c->ratio_lo) || isnan(c->ratio_hi) || c->ratio_lo == c->ratio_hi)
        snprintf(buf, n, "%.3f", c->ratio);
    else
        snprintf(buf, n, "%.3f [%.3f, %.3f]", c->ratio, c->ratio_lo, c->ratio_hi);
}

/* ---- the answer: the newest revision's verdict, then the regressions before it */

static void list_regressions(FILE *f, const mx_history *h, const mx_history_page *pg, int rev)
{
    fputs("<ul>\n", f);
    for (int c = 0; c < h->nconfigs; c++) {
        const mx_history_point *p = &h->configs[c].pt[rev];
        for (int m = 0; m < MX_HIST_NMETRICS; m++) {
            if (!judged(pg, m) || !p->run || p->vs[m].verdict != MX_VERDICT_REGRESSION) continue;
            char r[96];
            fmt_ratio(r, sizeof r, &p->vs[m]);
            fputs("<li>", f);
            mx_html_textf(f, "%s: %s ratio %s against %s", h->configs[c].label, mx_history_metric_name(m), r,
                          h->revs[p->prev].label);
            fputs("</li>\n", f);
        }
    }
    fputs("</ul>\n", f);
}

static void write_answer(FILE *f, const mx_history *h, const mx_history_page *pg)
{
    const int last = h->nrevs - 1;
    int reg_last = 0, cmp_last = 0, reg_before = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++) {
        if (!judged(pg, m)) continue;
        reg_last += mx_history_count(h, m, MX_VERDICT_REGRESSION, last);
        cmp_last += mx_history_ncompared(h, m, last);
        reg_before += mx_history_count(h, m, MX_VERDICT_REGRESSION, -1);
    }
    reg_before -= reg_last;
    fputs("<div class=\"answer\">\n<p>", f);
    if (reg_last) {
        mx_html_textf(f, "The newest revision, %s, regresses in %d comparison%s against the previous point:",
                      h->revs[last].label, reg_last, reg_last == 1 ? "" : "s");
        fputs("</p>\n", f);
        list_regressions(f, h, pg, last);
    } else if (cmp_last) {
        mx_html_textf(f, "The newest revision, %s, shows no regression: %d comparison%s against the previous "
                      "point.", h->revs[last].label, cmp_last, cmp_last == 1 ? "" : "s");
        fputs("</p>\n", f);
    } else {
        mx_html_textf(f, "The newest revision, %s, has no configuration in common with an earlier file: nothing "
                      "was judged.", h->revs[last].label);
        fputs("</p>\n", f);
    }
    if (reg_before) {
        fputs("<p>", f);
        mx_html_textf(f, "Earlier regressions (%d):", reg_before);
        fputs("</p>\n", f);
        for (int i = 0; i < last; i++)
            if (mx_history_count(h, MX_HIST_THROUGHPUT, MX_VERDICT_REGRESSION, i) * judged(pg, MX_HIST_THROUGHPUT) +
                    mx_history_count(h, MX_HIST_INSTRUCTIONS, MX_VERDICT_REGRESSION, i) *
                        judged(pg, MX_HIST_INSTRUCTIONS) > 0) {
                fputs("<p class=\"left-out\">", f);
                mx_html_textf(f, "at %s (%s):", h->revs[i].label, h->revs[i].start_time);
                fputs("</p>\n", f);
                list_regressions(f, h, pg, i);
            }
    }
    fputs("</div>\n", f);
}

/* ---- the tables */

static void write_revisions(FILE *f, const mx_history *h, const mx_history_page *pg)
{
    static const char *const heads[] = {"#", "revision", "git revision", "started (UTC)", "file", "host", "CPU",
                                        "runs"};
    static const int right[] = {1, 0, 0, 0, 0, 0, 0, 1};
    fputs("<h2>Revisions</h2>\n", f);
    mx_html_table_begin(f, heads, right, 8);
    for (int i = 0; i < h->nrevs; i++) {
        const mx_history_rev *r = &h->revs[i];
        char num[16], runs[16];
        snprintf(num, sizeof num, "%d", i + 1);
        snprintf(runs, sizeof runs, "%d", r->res->nruns);
        mx_html_row_begin(f, NULL);
        mx_html_cell(f, num, 1);
        mx_html_cell(f, r->label, 0);
        mx_html_cell(f, r->res->meta.git_revision, 0);
        mx_html_cell(f, r->start_time, 0);
        mx_html_cell(f, pg->paths ? pg->paths[r->file] : "", 0);
        mx_html_cell(f, r->res->meta.host, 0);
        mx_html_cell(f, r->res->meta.cpu_model, 0);
        mx_html_cell(f, runs, 1);
        mx_html_row_end(f);
    }
    mx_html_table_end(f);
}

/* A configuration per row, a revision per column: the value, and its verdict where one was
 * called (the cell coloured: red a regression, green an improvement). */
static void write_values(FILE *f, const mx_history *h, int m)
{
    fprintf(f, "<h2>%s</h2>\n", m == MX_HIST_THROUGHPUT ? "Throughput (samples/s)" : "Instructions per step");
    fputs("<p class=\"meta\">Each value against the configuration's previous point: a regression in red, an "
          "improvement in green, ~ where the ratio passes the threshold but its interval does not.</p>\n", f);
    fputs("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr><th>configuration</th>", f);
    for (int i = 0; i < h->nrevs; i++) {
        fputs("<th class=\"num\">", f);
        mx_html_text(f, h->revs[i].label);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int c = 0; c < h->nconfigs; c++) {
        const mx_history_config *cf = &h->configs[c];
        int any = 0, bad = 0;
        for (int i = 0; i < h->nrevs; i++) {
            any |= cf->pt[i].run && !isnan(cf->pt[i].value[m]);
            bad |= cf->pt[i].run && cf->pt[i].vs[m].verdict == MX_VERDICT_REGRESSION;
        }
        if (!any) continue;
        mx_html_row_begin(f, bad ? "bad" : NULL);
        mx_html_cell(f, cf->label, 0);
        for (int i = 0; i < h->nrevs; i++) {
            const mx_history_point *p = &cf->pt[i];
            char v[64];
            mx_history_fmt(v, sizeof v, m, p->run ? p->value[m] : NAN);
            const mx_verdict vd = p->run ? p->vs[m].verdict : MX_VERDICT_NA;
            if (vd == MX_VERDICT_REGRESSION || vd == MX_VERDICT_IMPROVEMENT || vd == MX_VERDICT_UNSURE) {
                const char *style = vd == MX_VERDICT_REGRESSION    ? "color:#c00;font-weight:bold"
                                    : vd == MX_VERDICT_IMPROVEMENT ? "color:#070;background:#e9f6ec"
                                                                   : "";
                fprintf(f, "<td class=\"r\" style=\"%s\">", style);
                mx_html_textf(f, "%s %s", v, vd == MX_VERDICT_UNSURE ? "~" : mx_compare_verdict_name(vd));
                fputs("</td>", f);
            } else {
                mx_html_cell(f, v, 1);
            }
        }
        mx_html_row_end(f);
    }
    mx_html_table_end(f);
}

/* Every change called or nearly called (~), one row each. */
static void write_changes(FILE *f, const mx_history *h, const mx_history_page *pg)
{
    static const char *const heads[] = {"configuration", "metric", "revision", "against", "before", "after",
                                        "ratio", "95% CI", "verdict"};
    static const int right[] = {0, 0, 0, 0, 1, 1, 1, 0, 0};
    fputs("<h2>Changes</h2>\n", f);
    int n = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++)
        if (judged(pg, m))
            n += mx_history_count(h, m, MX_VERDICT_REGRESSION, -1) +
                 mx_history_count(h, m, MX_VERDICT_IMPROVEMENT, -1) + mx_history_count(h, m, MX_VERDICT_UNSURE, -1);
    if (!n) {
        fputs("<p>", f);
        mx_html_textf(f, "No change beyond the threshold (%g%%) between consecutive points of a configuration.",
                      h->threshold * 100);
        fputs("</p>\n", f);
        return;
    }
    mx_html_table_begin(f, heads, right, 9);
    for (int c = 0; c < h->nconfigs; c++)
        for (int i = 0; i < h->nrevs; i++)
            for (int m = 0; m < MX_HIST_NMETRICS; m++) {
                const mx_history_point *p = &h->configs[c].pt[i];
                const mx_verdict vd = p->vs[m].verdict;
                if (!judged(pg, m) || !p->run || (vd != MX_VERDICT_REGRESSION && vd != MX_VERDICT_IMPROVEMENT &&
                                                   vd != MX_VERDICT_UNSURE))
                    continue;
                char before[64], after[64], ratio[32], ci[64];
                mx_history_fmt(before, sizeof before, m, p->vs[m].base);
                mx_history_fmt(after, sizeof after, m, p->vs[m].value);
                snprintf(ratio, sizeof ratio, "%.3f", p->vs[m].ratio);
                if (isnan(p->vs[m].ratio_lo) || p->vs[m].ratio_lo == p->vs[m].ratio_hi) snprintf(ci, sizeof ci, "-");
                else snprintf(ci, sizeof ci, "[%.3f, %.3f]", p->vs[m].ratio_lo, p->vs[m].ratio_hi);
                mx_html_row_begin(f, verdict_class[vd]);
                mx_html_cell(f, h->configs[c].label, 0);
                mx_html_cell(f, mx_history_metric_name(m), 0);
                mx_html_cell(f, h->revs[i].label, 0);
                mx_html_cell(f, h->revs[p->prev].label, 0);
                mx_html_cell(f, before, 1);
                mx_html_cell(f, after, 1);
                mx_html_cell(f, ratio, 1);
                mx_html_cell(f, ci, 0);
                mx_html_cell(f, mx_compare_verdict_name(vd), 0);
                mx_html_row_end(f);
            }
    mx_html_table_end(f);
}

static int write_figures(FILE *f, const mx_history_page *pg)
{
    int any = 0;
    for (int m = 0; m < MX_HIST_NMETRICS; m++) any |= pg->figures[m] != NULL;
    if (!any && !pg->no_figures) return MX_OK;
    fputs("<h2>Figures</h2>\n", f);
    if (pg->no_figures) {
        fputs("<p class=\"left-out\">", f);
        mx_html_text(f, pg->no_figures);
        fputs("</p>\n", f);
    }
    for (int m = 0; m < MX_HIST_NMETRICS; m++) {
        if (!pg->figures[m]) continue;
        fputs("<figure>", f);
        MX_TRY(mx_html_svg(f, pg->figures[m], m == MX_HIST_THROUGHPUT ? "throughput across revisions"
                                                                       : "instructions per step across revisions"));
        fputs("<figcaption>", f);
        mx_html_text(f, pg->captions[m]);
        fputs("</figcaption></figure>\n", f);
    }
    return MX_OK;
}

int mx_history_page_write(const mx_history *h, const mx_history_page *pg, const char *path)
{
    mx_html page;
    MX_TRY(mx_html_open(&page, path, "mxbench history"));
    FILE *f = page.f;
    fputs("<h1>Performance across revisions</h1>\n<p class=\"meta\">", f);
    mx_html_textf(f, "%d results files, oldest first (%s). Each point is judged against its configuration's "
                  "previous point: a change is called only when the whole 95%% interval of the ratio lies beyond "
                  "the threshold, %g%%; instruction counts are exact, their interval is the ratio.",
                  h->nrevs, h->unordered ? "in the order given: some file has no start time" : "by start time",
                  h->threshold * 100);
    if (h->skipped || h->repeated)
        mx_html_textf(f, " Left out: %d run%s not ok, %d repeated configuration%s (the first ok run of a file kept).",
                      h->skipped, h->skipped == 1 ? "" : "s", h->repeated, h->repeated == 1 ? "" : "s");
    fputs("</p>\n", f);
    write_answer(f, h, pg);
    int rc = write_figures(f, pg);
    if (rc != MX_OK) {
        mx_html_abort(&page);
        return rc;
    }
    for (int m = 0; m < MX_HIST_NMETRICS; m++)
        if (judged(pg, m) && (m == MX_HIST_THROUGHPUT || h->counted)) write_values(f, h, m);
    write_changes(f, h, pg);
    write_revisions(f, h, pg);
    return mx_html_close(&page);
}
