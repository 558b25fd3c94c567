/* The ranking figure: the answer of the study (results/answer.h) drawn. For each workload a
 * panel, in it for each device count a block of horizontal bars, the configurations fastest
 * first (top), bar length their throughput (tokens/s for language models), bar colour their
 * family (plot_family.c: the same colour as their lines in every other figure); the bars of
 * rows that missed the target are hatched, the winner's bar is outlined and labelled.
 * Written to data/ranking.dat, drawn by plots/ranking.gp. */
#include "plot_internal.h"

#include "base/status.h"
#include "results/answer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Labels longer than this are cut ("...") so that the bars keep the canvas' width. */
enum { RANK_LABEL = 72 };
/* Pixels: a bar's row, the gap above a block's heading, the room of a panel's x axis and
 * title, the figure's title and the key's rows. */
enum { ROW_PX = 22, GAP_ROWS_X10 = 5, AXIS_PX = 80, TITLE_PX = 70, KEYROW_PX = 20 };

/* "2 CPU workers", "1 GPU" */
static void heading_of(const mx_answer_group *g, char *b, size_t n)
{
    const int cuda = strcmp(g->device_type, "cuda") == 0;
    snprintf(b, n, "on %d %s%s", g->gpus, cuda ? "GPU" : strcmp(g->device_type, "cpu") == 0 ? "CPU worker" : "device",
             g->gpus == 1 ? "" : "s");
}

/* A label as a data-file string: no '"' or newline, cut at RANK_LABEL characters. */
static void clean_label(const char *in, char *out, size_t n)
{
    snprintf(out, n, "%s", in);
    for (char *p = out; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\\') *p = '\'';
    if (strlen(out) > RANK_LABEL && n > RANK_LABEL) memcpy(out + RANK_LABEL - 3, "...", 4);
}

/* 1 when every entry of workload w's groups has a tokens/s figure: its axis counts tokens */
static int tokens_axis(const mx_answer *a, const char *w)
{
    int any = 0;
    for (int g = 0; g < a->ngroups; g++) {
        if (strcmp(a->groups[g].workload, w) != 0) continue;
        for (int i = 0; i < a->groups[g].nentries; i++) {
            if (!isfinite(a->groups[g].entries[i].tokens_per_s)) return 0;
            any = 1;
        }
    }
    return any;
}

static double bar_value(const mx_answer_entry *e, int tokens) { return tokens ? e->tokens_per_s : e->throughput; }

/* The panels: one per workload with ranked rows (groups come by workload, then devices). */
typedef struct {
    int first, last; /* groups */
    int tokens;
    int rows10;      /* height in tenths of a row */
    double xmax;
} rank_panel;

static int write_file(plot_ctx *c, const mx_answer *a, rank_panel *panels, int np, size_t *maxlabel,
                      unsigned *families, int *hatched)
{
    FILE *f = mx_plot_open_data(c, "ranking.dat", "configurations ranked by throughput per workload and device count");
    if (!f) return MX_EIO;
    fputs("# one block per workload (a panel), blocks separated by two blank lines; rows top down:\n"
          "# columns: kind (0 heading of a device count, 1 bar) y value reached (1 yes, 0 no, -1 no target)\n"
          "#          winner (1) rgb (0xRRGGBB as an integer) \"label\" \"text at the bar's end or the heading\"\n",
          f);
    if (a->target_rule[0]) fprintf(f, "# target: %s\n", a->target_rule);
    for (int p = 0; p < np; p++) {
        rank_panel *P = &panels[p];
        int y10 = 0; /* tenths of a row below the panel's top */
        fprintf(f, "%s\"%s\"\n", p ? "\n\n" : "", a->groups[P->first].workload);
        for (int g = P->first; g <= P->last; g++) {
            const mx_answer_group *G = &a->groups[g];
            if (G->nentries == 0) continue;
            char head[64];
            heading_of(G, head, sizeof head);
            if (y10) y10 += GAP_ROWS_X10;
            fprintf(f, "0 %g NaN 0 0 0 \"\" \"%s\"\n", -y10 / 10.0, head);
            y10 += 10;
            for (int i = 0; i < G->nentries; i++, y10 += 10) {
                const mx_answer_entry *e = &G->entries[i];
                const int fam = mx_plot_family(e->run);
                char label[LABEL_MAX], text[96];
                clean_label(e->label, label, sizeof label);
                const double x = bar_value(e, P->tokens);
                /* whole samples (tokens) a second where they are that many: no exponents */
                snprintf(text, sizeof text, x >= 100 ? "%.0f%s" : "%.3g%s", x, i == G->winner ? ", winner" : "");
                fprintf(f, "1 %g", -y10 / 10.0);
                mx_plot_put_num(f, x);
                fprintf(f, " %d %d %ld \"%s\" \"%s\"\n", e->reached, i == G->winner,
                        strtol(mx_plot_family_rgb(fam), NULL, 16), label, text);
                if (isfinite(x) && x > P->xmax) P->xmax = x;
                if (strlen(label) > *maxlabel) *maxlabel = strlen(label);
                *families |= 1u << fam;
                *hatched |= e->reached == 0;
            }
        }
        P->rows10 = y10;
    }
    return mx_plot_close_data(c, f, "ranking.dat");
}

/* The variables of ranking.gp: per panel its title, axis, x range and place on the canvas;
 * the families present for the key; the target rule. */
static void rank_vars(gp_vars *v, const mx_answer *a, const rank_panel *panels, int np, size_t maxlabel,
                      unsigned families, int hatched)
{
    int nfam = 0;
    size_t keylen = 0; /* the longest key entry */
    for (int k = 0; k < MX_PLOT_NFAMILIES; k++)
        if (families & (1u << k)) {
            char name[24];
            nfam++;
            snprintf(name, sizeof name, "famname%d", nfam);
            mx_vars_str(v, name, mx_plot_family_name(k));
            snprintf(name, sizeof name, "famrgb%d", nfam);
            mx_vars_str(v, name, mx_plot_family_rgb(k));
            /* the same as a number: hatched bars are drawn a family at a time (gnuplot takes
             * no variable colour for a pattern fill) */
            snprintf(name, sizeof name, "famint%d", nfam);
            mx_vars_int(v, name, strtol(mx_plot_family_rgb(k), NULL, 16));
            if (strlen(mx_plot_family_name(k)) > keylen) keylen = strlen(mx_plot_family_name(k));
        }
    mx_vars_int(v, "nfam", nfam);
    if (a->target_rule[0] && strlen(a->target_rule) + 16 > keylen) keylen = strlen(a->target_rule) + 16;
    int width = 7 * (int)maxlabel + 640;
    width = width < 900 ? 900 : width > 1400 ? 1400 : width;
    /* the key below the last panel in as many columns (up to three) as the canvas holds:
     * about 7 px a character, the sample and the gap */
    const int keyentries = nfam + (a->target_rule[0] ? 2 : 0);
    int keycols = (width - 60) / (7 * (int)keylen + 80);
    keycols = keycols < 1 ? 1 : keycols > 3 ? 3 : keycols;
    const int keyrows = (keyentries + keycols - 1) / keycols;
    mx_vars_str(v, "target", a->target_rule);
    mx_vars_int(v, "hatched", hatched);
    mx_vars_int(v, "keyrows", keyrows > 0 ? keyrows : 1);
    int rows10 = 0;
    for (int p = 0; p < np; p++) rows10 += panels[p].rows10;
    const int keypx = KEYROW_PX * keyrows + 16;
    const int height = TITLE_PX + keypx + np * AXIS_PX + (rows10 * ROW_PX + 9) / 10 + np * ROW_PX / 2;
    mx_vars_int(v, "width", width);
    mx_vars_int(v, "height", height);
    mx_vars_int(v, "maxlabel", (long)maxlabel);
    mx_vars_int(v, "npanels", np);
    mx_vars_add(v, "; keybottom=%.4f", 4.0 / height);
    /* top down: each panel's plot area, then its x axis */
    double top = 1.0 - (double)TITLE_PX / height;
    for (int p = 0; p < np; p++) {
        const rank_panel *P = &panels[p];
        const double h = (P->rows10 * ROW_PX / 10.0 + ROW_PX / 2.0) / height;
        mx_vars_add(v, "; ptop%d=%.4f; pbot%d=%.4f; pxmax%d=%.6g; prows%d=%g", p + 1, top, p + 1, top - h, p + 1,
                    P->xmax > 0 ? P->xmax : 1, p + 1, P->rows10 / 10.0);
        char name[24], unit[64];
        snprintf(name, sizeof name, "punit%d", p + 1);
        snprintf(unit, sizeof unit, "%s", P->tokens ? "tokens/s" : "samples/s");
        mx_vars_str(v, name, unit);
        snprintf(name, sizeof name, "pname%d", p + 1);
        mx_vars_str(v, name, np > 1 ? a->groups[P->first].workload : "");
        top -= h + (double)AXIS_PX / height;
    }
}

int mx_plot_write_ranking(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    mx_answer a;
    int rc = mx_answer_build(c->res, &a);
    if (rc < 0) return rc;
    int ranked = 0, compared = 0;
    for (int g = 0; g < a.ngroups; g++) {
        ranked += a.groups[g].nentries;
        compared |= a.groups[g].nentries >= 2;
    }
    if (!compared) {
        if (ranked == 0)
            snprintf(why, nwhy, "no row to rank (ok, timed, on an idle host, not oversubscribed); %d left out",
                     a.nleft);
        else
            snprintf(why, nwhy, "no device count has two ranked configurations to compare (%d ranked, %d left out)",
                     ranked, a.nleft);
        mx_answer_free(&a);
        return 0;
    }
    rank_panel *panels = calloc((size_t)a.ngroups + 1, sizeof *panels);
    if (!panels) {
        mx_answer_free(&a);
        return mx_error(MX_ENOMEM, "out of memory while plotting the ranking");
    }
    int np = 0;
    for (int g = 0; g < a.ngroups; g++) {
        if (a.groups[g].nentries == 0) continue;
        if (np && strcmp(a.groups[panels[np - 1].first].workload, a.groups[g].workload) == 0) {
            panels[np - 1].last = g;
            continue;
        }
        panels[np].first = panels[np].last = g;
        panels[np].tokens = tokens_axis(&a, a.groups[g].workload);
        np++;
    }
    size_t maxlabel = 0;
    unsigned families = 0;
    int hatched = 0;
    rc = write_file(c, &a, panels, np, &maxlabel, &families, &hatched);
    if (rc == 0) {
        rank_vars(v, &a, panels, np, maxlabel, families, hatched);
        rc = 1;
    }
    free(panels);
    mx_answer_free(&a);
    return rc;
}
