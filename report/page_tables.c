/* The page's tables (page_tables.h): the step's parts per ranked configuration, the rank and
 * device views, the full summary. */
#include "report/page_tables.h"

#include "base/status.h"
#include "report/html.h"
#include "report/summary.h"
#include "report/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parts' short heads and colours (the plots' palette, plots/style.gp), in mx_answer_part's
 * order. */
static const char *const part_heads[] = {"compute", "data", "exposed comm", "bubble", "update", "stragglers"};
static const char *const part_colours[] = {"#0072B2", "#E69F00", "#D55E00", "#CC79A7", "#009E73", "#999999"};
_Static_assert(sizeof part_heads / sizeof part_heads[0] == MX_NPARTS, "a head per part of the step");
_Static_assert(sizeof part_colours / sizeof part_colours[0] == MX_NPARTS, "a colour per part of the step");

/* Plain text lines (a legend written for the terminal) as one escaped paragraph. */
static void legend_paragraph(FILE *f, void (*write)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (!m) return;
    write(m, arg);
    if (fclose(m) == 0 && buf) {
        fputs("<p class=\"meta\">", f);
        mx_html_text(f, buf);
        fputs("</p>\n", f);
    }
    free(buf);
}

/* ---- where the step goes */

/* A cell of stacked bars, one per part, as wide as its share of the step. */
static void share_bar(FILE *f, const mx_answer_entry *e)
{
    fputs("<td><div style=\"display:flex;width:180px;height:12px;background:#eee\">", f);
    for (int p = 0; p < MX_NPARTS; p++) {
        const double share = e->step > 0 && e->parts[p] > 0 ? e->parts[p] / e->step : 0;
        if (share <= 0) continue;
        fprintf(f, "<div title=\"%s %.0f%%\" style=\"width:%.1f%%;background:%s\"></div>", part_heads[p],
                100 * share, 100 * (share > 1 ? 1 : share), part_colours[p]);
    }
    fputs("</div></td>", f);
}

static void group_table(FILE *f, const mx_answer_group *g)
{
    int show[MX_NPARTS], lm = 0, target = 0;
    for (int p = 0; p < MX_NPARTS; p++) { /* a part no configuration has takes no column */
        show[p] = 0;
        for (int i = 0; i < g->nentries; i++) show[p] |= g->entries[i].parts[p] > 0;
    }
    for (int i = 0; i < g->nentries; i++) {
        lm |= isfinite(g->entries[i].tokens_per_s);
        target |= g->entries[i].reached >= 0;
    }
    const char *heads[8 + 2 * MX_NPARTS + 1];
    int right[8 + 2 * MX_NPARTS + 1], nc = 0;
    heads[nc] = "#", right[nc++] = 1;
    heads[nc] = "configuration", right[nc++] = 0;
    heads[nc] = "run", right[nc++] = 0;
    heads[nc] = "samples/s", right[nc++] = 1;
    if (lm) heads[nc] = "tokens/s", right[nc++] = 1;
    heads[nc] = "efficiency", right[nc++] = 1;
    if (target) heads[nc] = "target", right[nc++] = 0;
    heads[nc] = "step ms", right[nc++] = 1;
    heads[nc] = "share of the step", right[nc++] = 0; /* the bars before the figures: seen without scrolling */
    char part_ms[MX_NPARTS][32], part_pc[MX_NPARTS][32];
    for (int p = 0; p < MX_NPARTS; p++) {
        if (!show[p]) continue;
        snprintf(part_ms[p], sizeof part_ms[p], "%s ms", part_heads[p]);
        snprintf(part_pc[p], sizeof part_pc[p], "%s %%", part_heads[p]);
        heads[nc] = part_ms[p], right[nc++] = 1;
        heads[nc] = part_pc[p], right[nc++] = 1;
    }
    mx_html_table_begin(f, heads, right, nc);
    for (int i = 0; i < g->nentries; i++) {
        const mx_answer_entry *e = &g->entries[i];
        char cell[CELL];
        mx_html_row_begin(f, i == g->winner ? "win" : NULL);
        snprintf(cell, sizeof cell, "%d", i + 1);
        mx_html_cell(f, cell, 1);
        char label[sizeof e->label + 16];
        snprintf(label, sizeof label, "%s%s", e->label,
                 i == g->winner ? " (winner)" : i == g->runner_up ? " (runner-up)" : "");
        mx_html_cell(f, label, 0);
        mx_html_cell(f, e->run ? e->run->id : "-", 0);
        mx_fmt_num(cell, e->throughput, "%.1f");
        mx_html_cell(f, cell, 1);
        if (lm) {
            mx_fmt_num(cell, e->tokens_per_s, "%.0f");
            mx_html_cell(f, cell, 1);
        }
        mx_fmt_num(cell, e->efficiency * 100, "%.0f%%");
        mx_html_cell(f, cell, 1);
        if (target) {
            if (e->reached > 0 && isfinite(e->time_to_target))
                snprintf(cell, sizeof cell, "reached in %.1f s%s", e->time_to_target,
                         i == g->fastest_to_target ? " (fastest)" : "");
            else
                snprintf(cell, sizeof cell, "%s", e->reached == 0 ? "not reached" : "-");
            mx_html_cell(f, cell, 0);
        }
        mx_fmt_num(cell, e->step * 1e3, "%.2f");
        mx_html_cell(f, cell, 1);
        share_bar(f, e);
        for (int p = 0; p < MX_NPARTS; p++) {
            if (!show[p]) continue;
            mx_fmt_num(cell, e->parts[p] * 1e3, "%.2f");
            mx_html_cell(f, cell, 1);
            mx_fmt_num(cell, e->step > 0 ? 100 * e->parts[p] / e->step : NAN, "%.0f%%");
            mx_html_cell(f, cell, 1);
        }
        mx_html_row_end(f);
    }
    mx_html_table_end(f);
}

/* "2x: 1234 samples/s (efficiency 81%); 4x: ..." or the note saying why there is none. */
static void projection(FILE *f, const mx_answer_group *g)
{
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < 2; k++)
        if (isfinite(g->proj_throughput[k]) && len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d devices: %.0f samples/s (efficiency %.0f%%)",
                                    len ? "; " : "", g->gpus << (k + 1), g->proj_throughput[k],
                                    100 * g->proj_efficiency[k]);
    if (!len && !g->proj_note[0]) return;
    fputs("<p class=\"meta\">Projection of the winner: ", f);
    mx_html_text(f, len ? buf : g->proj_note);
    if (len && g->proj_note[0]) {
        fputs(" (", f);
        mx_html_text(f, g->proj_note);
        fputs(")", f);
    }
    fputs("</p>\n", f);
}

static void parts_legend(FILE *f)
{
    fputs("<p class=\"meta\">The parts of a median step: ", f);
    for (int p = 0; p < MX_NPARTS; p++) {
        fprintf(f, "%s<span style=\"display:inline-block;width:.9em;height:.9em;background:%s;"
                   "vertical-align:middle\"></span> ", p ? ", " : "", part_colours[p]);
        mx_html_text(f, mx_answer_part_name((mx_answer_part)p));
    }
    fputs(". Only the parts some configuration of a group has get columns; the winner's row is shaded.</p>\n", f);
}

void mx_page_breakdown(FILE *f, const mx_answer *a)
{
    fputs("<h2 id=\"breakdown\">Where the step goes</h2>\n", f);
    if (a->ngroups == 0) fputs("<p>No configuration could be ranked: every row is left out (below).</p>\n", f);
    else parts_legend(f);
    for (int i = 0; i < a->ngroups; i++) {
        const mx_answer_group *g = &a->groups[i];
        fputs("<h3>", f);
        mx_html_textf(f, "%s on %d %s device%s", g->workload, g->gpus, g->device_type, g->gpus == 1 ? "" : "s");
        fputs("</h3>\n", f);
        group_table(f, g);
        projection(f, g);
    }
    if (a->nleft == 0) return;
    fputs("<h3>Not ranked</h3>\n<ul>\n", f);
    for (int i = 0; i < a->nleft; i++) {
        const mx_run_record *r = a->left[i].run;
        fputs("<li><strong>", f);
        mx_html_text(f, r->id);
        fputs("</strong> ", f);
        mx_html_textf(f, "(%s, %s, %d device%s): %s", r->workload, r->strategy, r->gpus, r->gpus == 1 ? "" : "s",
                      a->left[i].why);
        fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
}

/* ---- the rank and device views */

static void html_table(FILE *f, const table *t, int marked_row, const char *const *row_class)
{
    mx_html_table_begin(f, t->head, t->right, t->ncols);
    for (int r = 0; r < t->nrows; r++) {
        mx_html_row_begin(f, row_class ? row_class[r] : r == marked_row ? "straggler" : NULL);
        for (int c = 0; c < t->ncols; c++)
            if (r == marked_row) { /* the straggler's row in bold */
                fputs(t->right[c] ? "<td class=\"r\"><strong>" : "<td><strong>", f);
                mx_html_text(f, t->cell[r][c]);
                fputs("</strong></td>", f);
            } else {
                mx_html_cell(f, t->cell[r][c], t->right[c]);
            }
        mx_html_row_end(f);
    }
    mx_html_table_end(f);
}

static void straggler_line(FILE *f, const char *what, const mx_straggler *s)
{
    fputs("<p class=\"meta\"><strong>straggler</strong>: ", f);
    mx_html_textf(f, "%s %d took %.2f ms a step, %.2fx the median of the %d (%.2f ms)", what, s->who, s->time * 1e3,
                  s->ratio, s->n, s->median * 1e3);
    fputs("</p>\n", f);
}

static int rank_view(FILE *f, const mx_run_record *r)
{
    table t;
    MX_TRY(mx_summary_rank_table(r, 1, &t));
    char about[160];
    mx_summary_rank_about(r, about, sizeof about);
    fputs("<h3>Ranks of ", f);
    mx_html_text(f, r->id);
    fputs("</h3>\n<p class=\"meta\">", f);
    mx_html_textf(f, "%s, %s on %d device%s: %s", r->workload, r->strategy, r->gpus, r->gpus == 1 ? "" : "s",
                  about);
    fputs("</p>\n", f);
    mx_straggler s;
    const int slow = mx_rank_straggler(r, &s);
    int marked = -1;
    for (int i = 0; slow && i < r->nranks; i++)
        if (r->ranks[i].rank == s.who) marked = i;
    html_table(f, &t, marked, NULL);
    if (slow) straggler_line(f, "worker (rank)", &s);
    free(t.cell);
    return MX_OK;
}

static int device_view(FILE *f, const mx_run_record *r)
{
    table t;
    MX_TRY(mx_summary_device_table(r, &t));
    fputs("<div style=\"display:inline-block;vertical-align:top;margin-right:2em\"><h3>Devices of ", f);
    mx_html_text(f, r->id);
    fputs("</h3>\n<p class=\"meta\">", f);
    if (mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL)
        mx_html_textf(f, "%s, model on %d device%s, %d micro-batch%s, %s", r->workload, r->gpus,
                      r->gpus == 1 ? "" : "s", r->micro_batches, r->micro_batches == 1 ? "" : "es", r->schedule);
    else
        mx_html_textf(f, "%s, %s on %d device%s, kvstore %s", r->workload, r->strategy, r->gpus,
                      r->gpus == 1 ? "" : "s", mx_summary_kvstore(r));
    fputs("</p>\n", f);
    mx_straggler s;
    const int slow = mx_device_straggler(r, &s);
    int marked = -1;
    for (int i = 0; slow && i < r->ndevices; i++)
        if (r->devices[i].device == s.who) marked = i;
    html_table(f, &t, marked, NULL);
    if (slow) straggler_line(f, "device", &s);
    fputs("</div>\n", f);
    free(t.cell);
    return MX_OK;
}

static void write_rank_legend(FILE *f, const void *arg)
{
    (void)arg;
    fputs("min ms: the rank's shortest step. ", f);
    mx_summary_rank_legend(f);
}

static void write_device_legend(FILE *f, const void *arg)
{
    (void)arg;
    fprintf(f, "layers: a device's top-level layers (model: its stage); bubble: the stage's idle share of its step\n"
               "windows; param, optim, peak MB: parameters and gradients, optimizer state, and the most the device\n"
               "held (allocator count); sent MB/step: to other devices; inflight: most micro-batches held at once;\n"
               "busy ms: per step computing; the straggler, in bold, computed %.1fx the devices' median or more.\n",
            MX_DEVICE_STRAGGLER_RATIO);
}

/* As the text report: the devices of a run with several, or with layers (a model or layer run). */
static int has_device_view(const mx_run_record *r) { return r->ndevices > 1 || (r->ndevices > 0 && r->nlayers > 0); }

int mx_page_ranks_devices(FILE *f, const mx_results *res)
{
    int nranked = 0, ndev = 0;
    for (int i = 0; i < res->nruns; i++) nranked += res->runs[i].nranks > 0, ndev += has_device_view(&res->runs[i]);
    if (nranked) {
        fputs("<h2 id=\"ranks\">Ranks of the dist_* runs</h2>\n", f);
        for (int i = 0; i < res->nruns; i++)
            if (res->runs[i].nranks > 0) MX_TRY(rank_view(f, &res->runs[i]));
        legend_paragraph(f, write_rank_legend, NULL);
    }
    if (ndev) {
        fputs("<h2 id=\"devices\">Devices</h2>\n<div>\n", f);
        for (int i = 0; i < res->nruns; i++)
            if (has_device_view(&res->runs[i])) MX_TRY(device_view(f, &res->runs[i]));
        fputs("</div>\n", f);
        legend_paragraph(f, write_device_legend, NULL);
    }
    return MX_OK;
}

/* ---- every run */

/* What the columns mean, one item a line, folded away under the table: the counters' help is
 * long, and a reader opens it for the column they wonder about. */
static void summary_legend(FILE *f, const mx_summary_cols *shown)
{
    mx_legend_item items[MX_LEGEND_ITEMS];
    const int n = mx_summary_legend_items(shown, items);
    fputs("<details class=\"meta\"><summary>What the columns mean</summary>\n<ul>\n", f);
    for (int i = 0; i < n; i++) {
        fputs("<li>", f);
        if (items[i].head) {
            fputs("<strong>", f);
            mx_html_text(f, items[i].head);
            fputs("</strong>: ", f);
            mx_html_textf(f, "%s.", items[i].text);
        } else {
            mx_html_text(f, items[i].text);
        }
        fputs("</li>\n", f);
    }
    fputs("</ul></details>\n", f);
}

int mx_page_summary(FILE *f, const mx_results *res)
{
    mx_summary_cols shown;
    mx_summary_columns(res, &shown);
    table t;
    MX_TRY(mx_summary_table(res, &shown, &t));
    const char **cls = calloc((size_t)(res->nruns ? res->nruns : 1), sizeof *cls);
    if (!cls) {
        free(t.cell);
        return mx_error(MX_ENOMEM, "out of memory for %d rows", res->nruns);
    }
    for (int i = 0; i < res->nruns; i++) cls[i] = mx_summary_not_ok(&res->runs[i]) ? "bad" : NULL;
    fputs("<h2 id=\"runs\">Every run</h2>\n<p class=\"meta\">As <code>mxbench report</code> prints them; "
          "click a column's head to sort by it. Rows not ok in red.</p>\n", f);
    html_table(f, &t, -1, cls);
    summary_legend(f, &shown);
    free(cls);
    free(t.cell);
    return MX_OK;
}
