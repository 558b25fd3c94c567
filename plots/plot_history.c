/* `mxbench history`'s figures (plot_history.h): per metric one data file, a block per
 * configuration drawn, and plots/history.gp (history_instructions.gp for the counts) run for
 * PNG and SVG through the plot driver's gnuplot runner. */
#include "plot_history.h"
#include "plot_internal.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const mx_plot_history_names[MX_HIST_NMETRICS] = {"history", "history_instructions"};

static const char *const whats[MX_HIST_NMETRICS] = {"Throughput", "Instructions per step"};
static const char *const ylabels[MX_HIST_NMETRICS] = {"throughput (samples/s)", "instructions per step"};

/* ---- which configurations a figure draws */

typedef struct {
    int config;
    int changed;   /* some point a regression or improvement */
    double spread; /* max / min of the metric across revisions */
} candidate;

static int by_interest(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->changed != y->changed) return y->changed - x->changed;
    if (x->spread != y->spread) return y->spread > x->spread ? 1 : -1;
    return x->config - y->config;
}

static int by_config(const void *a, const void *b)
{
    return ((const candidate *)a)->config - ((const candidate *)b)->config;
}

/* The configurations with metric m at some revision: all when they fit one figure, else the
 * MX_PLOT_HISTORY_LINES most telling (changed first, then widest spread), drawn in the
 * history's order so that a configuration keeps its colour from one history to the next.
 * Returns how many are drawn (at most MX_PLOT_HISTORY_LINES) and sets *of to how many had data. */
static int choose(const mx_history *h, int m, int *out, int *of)
{
    candidate *cand = malloc(((size_t)h->nconfigs + 1) * sizeof *cand);
    if (!cand) return mx_error(MX_ENOMEM, "out of memory choosing the lines of the history");
    int n = 0;
    for (int c = 0; c < h->nconfigs; c++) {
        double lo = INFINITY, hi = -INFINITY;
        int changed = 0;
        for (int i = 0; i < h->nrevs; i++) {
            const mx_history_point *p = &h->configs[c].pt[i];
            if (!p->run || !isfinite(p->value[m])) continue;
            lo = fmin(lo, p->value[m]), hi = fmax(hi, p->value[m]);
            changed |= p->vs[m].verdict == MX_VERDICT_REGRESSION || p->vs[m].verdict == MX_VERDICT_IMPROVEMENT;
        }
        if (hi < lo) continue;
        cand[n++] = (candidate){c, changed, lo > 0 ? hi / lo : INFINITY};
    }
    *of = n;
    if (n > MX_PLOT_HISTORY_LINES) {
        qsort(cand, (size_t)n, sizeof *cand, by_interest);
        n = MX_PLOT_HISTORY_LINES;
        qsort(cand, (size_t)n, sizeof *cand, by_config);
    }
    for (int k = 0; k < n; k++) out[k] = cand[k].config;
    free(cand);
    return n;
}

/* ---- data and variables */

/* One block per configuration drawn; a revision where it did not run ok (or did not measure
 * the metric) leaves a blank line, which breaks the line there. */
static int write_data(plot_ctx *c, const mx_history *h, int m, const int *cfg, int n, gp_vars *v)
{
    char name[64];
    snprintf(name, sizeof name, "%s.dat", mx_plot_history_names[m]);
    FILE *f = mx_plot_open_data(c, name, "mxbench history: a metric across revisions");
    if (!f) return MX_EIO;
    fputs(plot_block_doc, f);
    fprintf(f, "# %s; columns: revision (0 = oldest) value low high verdict revision-label\n"
               "# verdict against the configuration's previous point: 0 same, 1 unsure, 2 regression, "
               "3 improvement, 4 none\n", ylabels[m]);
    double lo = INFINITY, hi = -INFINITY;
    int nreg = 0, nimp = 0;
    size_t maxlabel = 0;
    for (int k = 0; k < n; k++) {
        const mx_history_config *cf = &h->configs[cfg[k]];
        fprintf(f, "%s\"%s\"\n", k ? "\n\n" : "", cf->label);
        maxlabel = strlen(cf->label) > maxlabel ? strlen(cf->label) : maxlabel;
        int written = 0, gap = 0;
        for (int i = 0; i < h->nrevs; i++) {
            const mx_history_point *p = &cf->pt[i];
            if (!p->run || !isfinite(p->value[m])) {
                gap = written;
                continue;
            }
            if (gap) fputc('\n', f);
            gap = 0;
            written = 1;
            /* a point without an interval (too few steps; a count) gets a zero-width bar */
            const double y = p->value[m];
            const double ylo = isfinite(p->lo[m]) ? p->lo[m] : y, yhi = isfinite(p->hi[m]) ? p->hi[m] : y;
            fprintf(f, "%d", i);
            mx_plot_put_num(f, y);
            mx_plot_put_num(f, ylo);
            mx_plot_put_num(f, yhi);
            fprintf(f, " %d %s\n", (int)p->vs[m].verdict, h->revs[i].label);
            lo = fmin(lo, ylo), hi = fmax(hi, yhi);
            nreg += p->vs[m].verdict == MX_VERDICT_REGRESSION;
            nimp += p->vs[m].verdict == MX_VERDICT_IMPROVEMENT;
        }
    }
    const int rc = mx_plot_close_data(c, f, name);
    char revs[VARS_MAX / 2] = "";
    size_t len = 0;
    for (int i = 0; i < h->nrevs && len < sizeof revs; i++)
        len += (size_t)snprintf(revs + len, sizeof revs - len, "%s%s", i ? " " : "", h->revs[i].label);
    if (len >= sizeof revs) return mx_error(MX_EINVAL, "too many revisions to label (%d)", h->nrevs);
    mx_vars_int(v, "nseries", n);
    mx_vars_str(v, "revs", revs);
    mx_vars_str(v, "what", whats[m]);
    mx_vars_str(v, "ylab", ylabels[m]);
    mx_vars_int(v, "nreg", nreg);
    mx_vars_int(v, "nimp", nimp);
    mx_vars_int(v, "si", m == MX_HIST_INSTRUCTIONS); /* y tics with SI prefixes */
    /* configurations an order of magnitude apart share the figure on a log scale */
    mx_vars_int(v, "logy", lo > 0 && hi / lo > 20);
    mx_plot_canvas_vars(v, n + (nreg > 0) + (nimp > 0), maxlabel);
    if (h->nrevs > 12) mx_vars_int(v, "width", 200 + 60 * (h->nrevs < 36 ? h->nrevs : 36));
    return rc;
}

static void set_title(plot_ctx *c, const mx_history *h, int shown, int of)
{
    const char *first = h->revs[0].start_time, *last = h->revs[h->nrevs - 1].start_time;
    int len = snprintf(c->title, sizeof c->title, "%d files", h->nrevs);
    if (!h->unordered && first[0])
        len += snprintf(c->title + len, sizeof c->title - (size_t)len, ", %.10s to %.10s", first, last);
    else
        len += snprintf(c->title + len, sizeof c->title - (size_t)len, " in the order given");
    if (shown < of && len > 0 && (size_t)len < sizeof c->title)
        snprintf(c->title + len, sizeof c->title - (size_t)len,
                 "; %d of %d configurations: the changed ones, then the widest spread", shown, of);
}

static void remove_stale(plot_ctx *c, int m)
{
    char path[PATH_MAX + 96];
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "%s/%s.%s", c->outdir, mx_plot_history_names[m], t ? "svg" : "png");
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s.dat", c->datadir, mx_plot_history_names[m]);
    unlink(path);
}

static int draw(plot_ctx *c, const mx_history *h, int m, mx_plot_history_report *rep)
{
    int *cfg = malloc(((size_t)h->nconfigs + 1) * sizeof *cfg);
    if (!cfg) return mx_error(MX_ENOMEM, "out of memory drawing the history");
    int n = choose(h, m, cfg, &rep->of[m]);
    if (n <= 0) {
        free(cfg);
        if (n == 0) remove_stale(c, m);
        return n;
    }
    rep->shown[m] = n;
    set_title(c, h, n, rep->of[m]);
    gp_vars v = {.len = 0};
    mx_vars_str(&v, "title", c->title);
    int rc = write_data(c, h, m, cfg, n, &v);
    free(cfg);
    if (rc == 0 && v.overflow) rc = mx_error(MX_EINVAL, "gnuplot variables for %s too long", mx_plot_history_names[m]);
    char data[64];
    snprintf(data, sizeof data, "%s.dat", mx_plot_history_names[m]);
    static const char *const terms[2] = {"png", "svg"};
    for (int t = 0; rc == 0 && t < 2; t++)
        rc = mx_plot_run_script(c, mx_plot_history_names[m], data, terms[t], v.text, rep->files[m][t],
                                sizeof rep->files[m][t]);
    if (rc < 0) return rc;
    rep->drawn[m] = 1;
    return 1;
}

int mx_plot_history(const mx_history *h, unsigned metrics, const char *outdir, const char *scripts_dir, int verbose,
                    mx_plot_history_report *rep)
{
    mx_plot_history_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    if (!h || h->nrevs < 1 || !outdir || !*outdir || !scripts_dir)
        return mx_error(MX_EINVAL, "plotting a history needs one, an output directory and the scripts directory");
    plot_ctx *c = malloc(sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = mx_plot_setup_dirs(c, outdir, scripts_dir, mx_plot_history_names, MX_HIST_NMETRICS, verbose);
    if (rc == 0) rc = mx_plot_open_replot(c);
    int drawn = 0;
    for (int m = 0; rc >= 0 && m < MX_HIST_NMETRICS; m++) {
        if (!(metrics & 1u << m)) {
            remove_stale(c, m);
            continue;
        }
        rc = draw(c, h, m, rep);
        if (rc > 0) drawn++;
        if (rc > 0 && verbose)
            fprintf(stderr, "mxbench history: wrote %s and %s\n", rep->files[m][0], rep->files[m][1]);
    }
    if (c->replot && fclose(c->replot) != 0 && rc >= 0) rc = mx_error(MX_EIO, "error writing %s/replot.sh", c->datadir);
    free(c);
    return rc < 0 ? rc : drawn;
}
