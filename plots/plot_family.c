/* The colour of a configuration, fixed across every figure: a run's family (its strategy,
 * and for data parallelism its kvstore) picks the colour, so that data-parallel with the
 * device kvstore is the same blue in the throughput, the accuracy and the ranking figures
 * whatever the order of their lines. What else varies within a family (compression,
 * precision, batch, ...) changes the dash pattern and the marker (style.gp), never the
 * colour. And the panels of a scaling figure whose one key would be too long. */
#include "plot_internal.h"

#include "base/config.h"

#include <stdio.h>
#include <string.h>

/* Okabe-Ito (readable by colour-blind readers) for the families a study compares most, the
 * brown that style.gp already used for an eighth line, and grey for one device without a
 * kvstore (the baseline, not a contender). Yellow is left out: unreadable on white. */
static const struct {
    const char *name; /* a panel's title and the ranking figure's key */
    const char *rgb;
} families[MX_PLOT_NFAMILIES] = {
    [MX_FAM_NONE] = {"one device, no kvstore", "7F7F7F"},
    [MX_FAM_LOCAL] = {"data-parallel, kv local", "56B4E9"},
    [MX_FAM_DEVICE] = {"data-parallel, kv device", "0072B2"},
    [MX_FAM_DIST_SYNC] = {"data-parallel, kv dist_sync", "009E73"},
    [MX_FAM_DIST_DEVICE_SYNC] = {"data-parallel, kv dist_device_sync", "8C6D1F"},
    [MX_FAM_DIST_ASYNC] = {"data-parallel, kv dist_async", "E69F00"},
    [MX_FAM_DIST_ALLREDUCE] = {"data-parallel, kv dist_allreduce", "CC79A7"},
    [MX_FAM_MODEL] = {"model-parallel", "D55E00"},
    [MX_FAM_LAYER] = {"layer-parallel", "000000"},
    [MX_FAM_OTHER] = {"other", "5F4B8B"},
};

int mx_plot_family(const mx_run_record *r)
{
    switch (mx_strategy_of(r->strategy)) {
    case MX_STRATEGY_MODEL: return MX_FAM_MODEL;
    case MX_STRATEGY_LAYER: return MX_FAM_LAYER;
    case MX_STRATEGY_DATA: break;
    default: return MX_FAM_OTHER;
    }
    switch (mx_kv_mode_of(r->kvstore)) {
    case MX_KV_NONE: return MX_FAM_NONE;
    case MX_KV_LOCAL: return MX_FAM_LOCAL;
    case MX_KV_DEVICE: return MX_FAM_DEVICE;
    case MX_KV_DIST_SYNC: return MX_FAM_DIST_SYNC;
    case MX_KV_DIST_DEVICE_SYNC: return MX_FAM_DIST_DEVICE_SYNC;
    case MX_KV_DIST_ASYNC: return MX_FAM_DIST_ASYNC;
    case MX_KV_DIST_ALLREDUCE: return MX_FAM_DIST_ALLREDUCE;
    default: return MX_FAM_OTHER;
    }
}

const char *mx_plot_family_rgb(int fam)
{
    return families[fam >= 0 && fam < MX_PLOT_NFAMILIES ? fam : MX_FAM_OTHER].rgb;
}

const char *mx_plot_family_name(int fam)
{
    return families[fam >= 0 && fam < MX_PLOT_NFAMILIES ? fam : MX_FAM_OTHER].name;
}

/* lcolors: each line's family colour; lvariants: its rank among the lines of its family
 * before it (0 for the first), which picks its dash pattern and marker (style.gp). */
void mx_plot_family_vars(gp_vars *v, const mx_run_record *const *reps, int n)
{
    int seen[MX_PLOT_NFAMILIES] = {0};
    mx_vars_add(v, "%slcolors='", v->len ? "; " : "");
    for (int i = 0; i < n; i++) mx_vars_add(v, "%s%s", i ? " " : "", mx_plot_family_rgb(mx_plot_family(reps[i])));
    mx_vars_add(v, "'; lvariants='");
    for (int i = 0; i < n; i++) mx_vars_add(v, "%s%d", i ? " " : "", seen[mx_plot_family(reps[i])]++);
    mx_vars_add(v, "'");
}

/* Panels: the lines of reps[0..n) (sorted by family, plot_series.c) in one panel per family
 * once the key would pass PANEL_LINES entries; each panel is about as tall as a figure of
 * its own and its key lists only its lines. Fewer lines, or a single family: one panel, the
 * canvas of mx_plot_canvas_vars. */
enum { PANEL_LINES = 8 };

void mx_plot_panel_vars(gp_vars *v, const mx_run_record *const *reps, int n, int extra_keys, size_t maxlabel)
{
    int first[MX_PLOT_NFAMILIES], last[MX_PLOT_NFAMILIES], fam[MX_PLOT_NFAMILIES], np = 0;
    for (int i = 0; i < n; i++) {
        const int f = mx_plot_family(reps[i]);
        if (np == 0 || fam[np - 1] != f) {
            if (np == MX_PLOT_NFAMILIES) break; /* not sorted: cannot happen, keep one panel */
            fam[np] = f, first[np] = last[np] = i, np++;
        } else {
            last[np - 1] = i;
        }
    }
    if (n <= PANEL_LINES || np < 2 || np > MX_PLOT_NFAMILIES) {
        mx_vars_int(v, "npanels", 1);
        mx_plot_canvas_vars(v, n + extra_keys, maxlabel);
        return;
    }
    int most = 0;
    mx_vars_int(v, "npanels", np);
    mx_vars_add(v, "; pfirst='");
    for (int p = 0; p < np; p++) mx_vars_add(v, "%s%d", p ? " " : "", first[p]);
    mx_vars_add(v, "'; plast='");
    for (int p = 0; p < np; p++) {
        mx_vars_add(v, "%s%d", p ? " " : "", last[p]);
        most = last[p] - first[p] + 1 > most ? last[p] - first[p] + 1 : most;
    }
    mx_vars_add(v, "'");
    for (int p = 0; p < np; p++) {
        char name[24]; /* "ptitle" and any int */
        snprintf(name, sizeof name, "ptitle%d", p + 1);
        mx_vars_str(v, name, mx_plot_family_name(fam[p]));
    }
    /* two or three panels a row; each wide enough for its key's labels in one column (about
     * 7 px a character and the sample), tall enough for a plot and its key */
    const int cols = np <= 2 ? np : np <= 4 ? 2 : 3, rows = (np + cols - 1) / cols;
    int pw = 7 * (int)(maxlabel > 80 ? 80 : maxlabel) + 110;
    pw = pw < 460 ? 460 : pw > 680 ? 680 : pw;
    const int ph = 330 + 18 * (most + extra_keys);
    mx_vars_int(v, "pkeyrows", most + extra_keys);
    mx_vars_int(v, "pcols", cols);
    mx_vars_int(v, "prows", rows);
    mx_vars_int(v, "width", cols * pw);
    mx_vars_int(v, "height", rows * ph + 60);
    mx_vars_int(v, "keycols", 1);
}
