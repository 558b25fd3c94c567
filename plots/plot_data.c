/* The plot driver's data files: one per figure in outdir/data/, each a commented,
 * gnuplot-readable table (blocks per series or run), and the variables its script needs. */
#include "plot_internal.h"

#include "base/status.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "results/stats.h"

void mx_plot_put_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, " %.9g", x);
    else
        fputs(" NaN", f);
}

FILE *mx_plot_open_data(plot_ctx *c, const char *name, const char *what)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", c->datadir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        mx_error(MX_EIO, "cannot write '%s': %s", path, strerror(errno));
        return NULL;
    }
    fprintf(f, "# mxbench plot data: %s\n# study: %s\n", what, c->title);
    return f;
}

int mx_plot_close_data(plot_ctx *c, FILE *f, const char *name)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return mx_error(MX_EIO, "error writing '%s/%s' (disk full?)", c->datadir, name);
    return 0;
}

const char plot_block_doc[] =
    "# one block per line of the plot, blocks separated by two blank lines (gnuplot 'index'),\n"
    "# each opened by its title in double quotes (gnuplot 'columnheader(1)')\n";

/* Space-separated ascending distinct values, for the x tics of integer axes. */
void mx_plot_distinct_ints(const int *x, int n, char *buf, size_t size)
{
    int *v = malloc(((size_t)n + 1) * sizeof *v);
    size_t len = 0;
    buf[0] = '\0';
    if (!v) return;
    int m = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < m; j++) seen |= v[j] == x[i];
        if (!seen) v[m++] = x[i];
    }
    for (int i = 1; i < m; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    for (int i = 0; i < m; i++) {
        int w = snprintf(buf + len, size - len, "%s%d", i ? " " : "", v[i]);
        if (w < 0 || (size_t)w >= size - len) break;
        len += (size_t)w;
    }
    free(v);
}


/* Canvas size and the key's columns. The key sits below the plot, so the plot keeps the
 * canvas' width whatever the labels' length. gnuplot gives every column of the key room for
 * the longest label at about 8 px a character (png terminal, size 10) plus the sample line;
 * the canvas widens (up to 1400 px) for as many columns as keep the key within 8 rows, and
 * grows by a line of text for each row. */
void mx_plot_canvas_vars(gp_vars *v, int nlines, size_t maxlabel)
{
    enum { MIN_W = 900, MAX_W = 1400, MARGIN = 100, ROWS = 8, ROW_H = 18 };
    const int perlabel = 8 * (int)(maxlabel > 150 ? 150 : maxlabel) + 70;
    int cols = (MAX_W - MARGIN) / perlabel, need = (nlines + ROWS - 1) / ROWS;
    cols = cols < 1 ? 1 : cols > need ? (need > 0 ? need : 1) : cols;
    int width = cols * perlabel + MARGIN;
    width = width < MIN_W ? MIN_W : width > MAX_W ? MAX_W : width;
    const int rows = nlines > 0 ? (nlines + cols - 1) / cols : 0;
    mx_vars_int(v, "width", width);
    mx_vars_int(v, "height", 500 + ROW_H * rows);
    mx_vars_int(v, "keycols", cols);
}

size_t mx_plot_max_label(const char (*labels)[LABEL_MAX], int n)
{
    size_t m = 0;
    for (int i = 0; i < n; i++) m = strlen(labels[i]) > m ? strlen(labels[i]) : m;
    return m;
}

/* ---- one writer per data file: 1 = written, 0 = nothing to plot (why says so) ---- */

typedef int (*data_writer)(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);

/* plot_internal.h */
int mx_plot_write_series_file(plot_ctx *c, gp_vars *v, const char *name, const char *what, const char *columns,
                           int (*keep)(const mx_run_record *), void (*row)(FILE *, const mx_run_record *),
                           int extra_keys, int panels)
{
    const run_set *s = &c->set;
    char(*labels)[LABEL_MAX] = mx_plot_series_labels(s);
    int *gpus = calloc((size_t)s->n + 1, sizeof *gpus);
    const mx_run_record **reps = calloc((size_t)s->nseries + 1, sizeof *reps); /* of each block */
    if (!labels || !gpus || !reps) {
        free(labels), free(gpus), free(reps);
        return mx_error(MX_ENOMEM, "out of memory while plotting");
    }
    FILE *f = mx_plot_open_data(c, name, what);
    if (!f) {
        free(labels), free(gpus), free(reps);
        return MX_EIO;
    }
    fputs(plot_block_doc, f);
    fprintf(f, "# columns: %s\n", columns);
    int blocks = 0, ngpus = 0, gbase = INT_MAX;
    size_t maxlabel = 0;
    for (int si = 0; si < s->nseries; si++) {
        int rows = 0;
        for (int i = s->start[si]; i < s->start[si + 1]; i++) {
            const mx_run_record *r = s->runs[i];
            if (!keep(r)) continue;
            if (rows++ == 0) {
                reps[blocks] = s->runs[s->start[si + 1] - 1]; /* the run its label names */
                fprintf(f, "%s\"%s\"\n", blocks++ ? "\n\n" : "", labels[si]);
                maxlabel = strlen(labels[si]) > maxlabel ? strlen(labels[si]) : maxlabel;
            }
            row(f, r);
            gpus[ngpus++] = r->gpus;
            if (r->gpus < gbase) gbase = r->gpus;
        }
    }
    int rc = mx_plot_close_data(c, f, name);
    char list[1024];
    mx_plot_distinct_ints(gpus, ngpus, list, sizeof list);
    mx_vars_int(v, "nseries", blocks);
    mx_vars_str(v, "gpus", list);
    if (blocks) mx_vars_int(v, "gbase", gbase);
    mx_plot_family_vars(v, reps, blocks);
    if (panels)
        mx_plot_panel_vars(v, reps, blocks, extra_keys, maxlabel);
    else
        mx_plot_canvas_vars(v, blocks + extra_keys, maxlabel);
    free(labels), free(gpus), free(reps);
    return rc < 0 ? rc : blocks > 0;
}

/* GPUs shared by several logical devices (--oversubscribe) test code paths: their timings
 * are never drawn as scaling or throughput against devices. */
static int gpu_shared(const mx_run_record *r) { return r->oversubscribed && strcmp(r->device_type, "cuda") == 0; }

/* plot_internal.h. The record's flag is the child's own count (its ranks x devices x threads
 * against the cores it saw); a file whose rows predate the flag on CPU rows still has the
 * cores the run saw (host_cores) and its devices and threads. */
int mx_plot_oversubscribed(const mx_run_record *r)
{
    if (r->oversubscribed) return 1;
    const double cores = r->metrics[MX_COUNTER_HOST_CORES];
    return strcmp(r->device_type, "cpu") == 0 && isfinite(cores) && cores > 0 && r->threads_per_device > 0 &&
           (double)r->gpus * r->threads_per_device > cores;
}

static int keep_throughput(const mx_run_record *r) { return !gpu_shared(r) && isfinite(r->throughput) && r->gpus > 0; }

/* The marks of a timing's point: noisy (drawn hollow), oversubscribed (crossed out). */
static void put_marks(FILE *f, const mx_run_record *r) { fprintf(f, " %d %d\n", r->noisy, mx_plot_oversubscribed(r)); }

static void row_throughput(FILE *f, const mx_run_record *r)
{
    /* A run without a confidence interval (too few steps) gets a zero-width bar. */
    double lo = isfinite(r->throughput_ci_low) ? r->throughput_ci_low : r->throughput;
    double hi = isfinite(r->throughput_ci_high) ? r->throughput_ci_high : r->throughput;
    fprintf(f, "%d", r->gpus);
    mx_plot_put_num(f, r->throughput), mx_plot_put_num(f, lo), mx_plot_put_num(f, hi);
    put_marks(f, r);
}

/* Whether some run kept by keep ran on a busy host (drawn hollow) or oversubscribed its cores
 * (crossed out): each gets a key entry saying so. */
static void marks_vars(const plot_ctx *c, gp_vars *v, int (*keep)(const mx_run_record *))
{
    int noisy = 0, over = 0;
    for (int i = 0; i < c->set.nuniq; i++)
        if (keep(c->set.uniq[i])) noisy |= c->set.uniq[i]->noisy, over |= mx_plot_oversubscribed(c->set.uniq[i]);
    mx_vars_int(v, "hasnoisy", noisy);
    mx_vars_int(v, "hasoversub", over);
}

static int write_throughput(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(c, v, "throughput.dat", "throughput against device count",
                                    "devices throughput_samples_per_s ci95_low ci95_high noisy oversubscribed",
                                    keep_throughput, row_throughput, 2, 1);
    if (rc == 0) snprintf(why, nwhy, "no ok run has a throughput");
    if (rc > 0) marks_vars(c, v, keep_throughput);
    return rc;
}

/* results/record.c leaves both NaN where the series has no one-device run to compare with */
static int keep_scaling(const mx_run_record *r)
{
    return !gpu_shared(r) && isfinite(r->speedup) && isfinite(r->efficiency) && r->gpus > 0 && r->speedup > 0;
}

static void row_scaling(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    mx_plot_put_num(f, r->speedup), mx_plot_put_num(f, r->efficiency);
    put_marks(f, r);
}

static int write_scaling(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = mx_plot_write_series_file(c, v, "scaling.dat",
                                    "speedup and scaling efficiency against device count (relative to the "
                                    "one-device run of each series)",
                                    "devices speedup efficiency noisy oversubscribed", keep_scaling, row_scaling, 3, 1);
    if (rc == 0) snprintf(why, nwhy, "no ok run has a speedup (no series has a one-device run to compare with)");
    if (rc > 0) marks_vars(c, v, keep_scaling);
    return rc;
}

/* Median of x[0], x[stride], ... (n values), leaving out non-finite ones; NaN when none.
 * scratch holds n values. */
static double median_strided(const double *x, int n, int stride, double *scratch)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[(size_t)i * (size_t)stride])) scratch[m++] = x[(size_t)i * (size_t)stride];
    return m ? mx_stats_median(scratch, m) : NAN;
}

/* breakdown.dat: the label, a column per phase (metrics.def order), the whole step, then the
 * run's family colour */
enum { BREAKDOWN_STEP_COLUMN = 2 + MX_NPHASES };

static int keep_breakdown(const mx_run_record *r) { return r->nsteps > 0 && r->phase_time != NULL; }

static int write_breakdown(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    const mx_run_record **runs = calloc((size_t)s->nuniq + 1, sizeof *runs);
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nuniq + 1, sizeof *labels);
    int n = 0, maxsteps = 0, rc = 0;
    for (int i = 0; runs && i < s->nuniq; i++)
        if (keep_breakdown(s->uniq[i])) {
            runs[n++] = s->uniq[i];
            if (s->uniq[i]->nsteps > maxsteps) maxsteps = s->uniq[i]->nsteps;
        }
    double *scratch = malloc(((size_t)maxsteps + 1) * sizeof *scratch);
    if (!runs || !labels || !scratch) {
        rc = mx_error(MX_ENOMEM, "out of memory while plotting");
        goto done;
    }
    if (n == 0) {
        snprintf(why, nwhy, "no ok run has per-step phase times");
        goto done;
    }
    mx_plot_unique_labels(runs, n, 1, labels);
    FILE *f = mx_plot_open_data(c, "breakdown.dat", "median time per step in each phase, one row per run");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    /* the columns are named here and handed to breakdown.gp (phases, stepcol), so that a
     * phase added to metrics.def moves the script's step column with the file's */
    char phases[256] = "";
    size_t plen = 0;
    fputs("# columns: label", f);
    for (int p = 0; p < MX_NPHASES; p++) {
        fprintf(f, " %s_s", mx_phase_names[p]);
        int w = snprintf(phases + plen, sizeof phases - plen, "%s%s", p ? " " : "", mx_phase_names[p]);
        if (w > 0 && (size_t)w < sizeof phases - plen) plen += (size_t)w;
    }
    fprintf(f, " step_s rgb\n# (column %d: step_s; seconds, medians over the timed steps of all repeats; a phase "
               "never timed is 0;\n#  step_s is the median of whole steps, or the sum of the phases where it is "
               "missing; rgb: the run's\n#  family colour, 0xRRGGBB as an integer, the strip under its bar)\n",
            BREAKDOWN_STEP_COLUMN);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        fprintf(f, "\"%s\"", labels[i]);
        double sum = 0;
        for (int p = 0; p < MX_NPHASES; p++) {
            double t = median_strided(r->phase_time + p, r->nsteps, MX_NPHASES, scratch);
            t = isfinite(t) ? t : 0;
            sum += t;
            mx_plot_put_num(f, t);
        }
        double step = isfinite(r->step_time_median) || !r->step_time
                          ? r->step_time_median
                          : median_strided(r->step_time, r->nsteps, 1, scratch);
        /* breakdown.gp scales its axis from this column, so it must be a number */
        mx_plot_put_num(f, isfinite(step) ? step : sum);
        fprintf(f, " %ld\n", strtol(mx_plot_family_rgb(mx_plot_family(r)), NULL, 16));
    }
    rc = mx_plot_close_data(c, f, "breakdown.dat");
    if (rc == 0) {
        rc = 1;
        size_t maxlabel = 0;
        for (int i = 0; i < n; i++) maxlabel = strlen(labels[i]) > maxlabel ? strlen(labels[i]) : maxlabel;
        mx_vars_str(v, "phases", phases);
        mx_vars_int(v, "stepcol", BREAKDOWN_STEP_COLUMN);
        mx_vars_int(v, "nbars", n);
        mx_vars_int(v, "maxlabel", (long)maxlabel);
        /* One bar needs about 80 px for its slanted label to stay readable. */
        int width = 80 * n + 260;
        mx_vars_int(v, "width", width < 900 ? 900 : width > 8000 ? 8000 : width);
        /* the slanted labels take about 3.5 px of height a character: the bars keep theirs */
        const int height = 460 + (int)(3.5 * (double)(maxlabel > 150 ? 150 : maxlabel));
        mx_vars_int(v, "height", height > 620 ? height : 620);
    }
done:
    free(runs), free(labels), free(scratch);
    return rc;
}

static int keep_loss(const mx_run_record *r) { return r->nloss > 0 && r->loss != NULL; }

/* Centred moving average over w steps (shorter at the ends); non-finite losses ignored. */
static double moving_average(const float *x, int n, int i, int w)
{
    int a = i - w / 2, b = i + w / 2;
    double sum = 0;
    int m = 0;
    for (int j = a < 0 ? 0 : a; j <= b && j < n; j++)
        if (isfinite(x[j])) sum += x[j], m++;
    return m ? sum / m : NAN;
}

static int write_loss(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    const mx_run_record **runs = calloc((size_t)s->nuniq + 1, sizeof *runs);
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nuniq + 1, sizeof *labels);
    int n = 0, maxloss = 0, rc = 0;
    if (!runs || !labels) {
        rc = mx_error(MX_ENOMEM, "out of memory while plotting");
        goto done;
    }
    for (int i = 0; i < s->nuniq; i++)
        if (keep_loss(s->uniq[i])) {
            runs[n++] = s->uniq[i];
            if (s->uniq[i]->nloss > maxloss) maxloss = s->uniq[i]->nloss;
        }
    if (n == 0) {
        snprintf(why, nwhy, "no ok run has a training loss series");
        goto done;
    }
    mx_plot_unique_labels(runs, n, 1, labels);
    /* About 50 smoothed points per curve: enough for the trend, not the batch noise. */
    int w = maxloss / 50;
    w = w < 3 ? 1 : (w > 500 ? 501 : w | 1);
    FILE *f = mx_plot_open_data(c, "loss.dat", "training loss per step, one block per run (first repeat)");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs(plot_block_doc, f);
    fprintf(f, "# columns: step loss loss_moving_average (centred window of %d steps)\n", w);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        fprintf(f, "%s\"%s\"\n", i ? "\n\n" : "", labels[i]);
        for (int k = 0; k < r->nloss; k++) {
            fprintf(f, "%d", k + 1);
            mx_plot_put_num(f, r->loss[k]), mx_plot_put_num(f, moving_average(r->loss, r->nloss, k, w));
            fputc('\n', f);
        }
    }
    rc = mx_plot_close_data(c, f, "loss.dat");
    if (rc == 0) {
        rc = 1;
        mx_vars_int(v, "nseries", n);
        mx_vars_int(v, "smooth", w);
        mx_plot_family_vars(v, runs, n);
        mx_plot_canvas_vars(v, n, mx_plot_max_label((const char(*)[LABEL_MAX])labels, n));
    }
done:
    free(runs), free(labels);
    return rc;
}

static const struct {
    const char *data;
    data_writer write;
} plot_table[MX_NPLOTS] = {
    [MX_PLOT_THROUGHPUT] = {"throughput.dat", write_throughput},
    [MX_PLOT_SPEEDUP] = {"scaling.dat", write_scaling},
    [MX_PLOT_EFFICIENCY] = {"scaling.dat", write_scaling},
    [MX_PLOT_ACCURACY] = {"accuracy.dat", mx_plot_write_accuracy},
    [MX_PLOT_BREAKDOWN] = {"breakdown.dat", write_breakdown},
    [MX_PLOT_LOSS] = {"loss.dat", write_loss},
    [MX_PLOT_STALENESS] = {"staleness.dat", mx_plot_write_staleness},
    [MX_PLOT_MEMORY] = {"memory.dat", mx_plot_write_memory},
    [MX_PLOT_MOVED] = {"moved.dat", mx_plot_write_moved},
    [MX_PLOT_BUBBLE] = {"bubble.dat", mx_plot_write_bubble},
    [MX_PLOT_COMPRESSION] = {"compression.dat", mx_plot_write_compression},
    [MX_PLOT_LOSS_SCALE] = {"loss_scale.dat", mx_plot_write_loss_scale},
    [MX_PLOT_RANKING] = {"ranking.dat", mx_plot_write_ranking},
};


const char *mx_plot_data_file(int plot) { return plot_table[plot].data; }

static int has_counters(const mx_run_record *r)
{
    for (int k = 0; k < MX_NCOUNTERS; k++)
        if (isfinite(r->metrics[k])) return r->gpus > 0;
    return 0;
}

static void row_counters(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    for (int k = 0; k < MX_NCOUNTERS; k++) mx_plot_put_num(f, r->metrics[k]);
    fputc('\n', f);
}

int mx_plot_write_counters(plot_ctx *c)
{
    int any = 0;
    for (int i = 0; i < c->set.nuniq && !any; i++) any = has_counters(c->set.uniq[i]);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/counters.dat", c->datadir);
    unlink(path); /* never last study's */
    if (!any) return 0;
    char columns[1024] = "devices";
    for (int k = 0; k < MX_NCOUNTERS; k++) {
        size_t len = strlen(columns);
        snprintf(columns + len, sizeof columns - len, " %s(%s)", mx_counters[k].name, mx_counters[k].unit);
    }
    gp_vars unused = {.len = 0};
    const int rc =
        mx_plot_write_series_file(c, &unused, "counters.dat",
                               "the figures of the per-step counters (results/metrics.def) against device count",
                               columns, has_counters, row_counters, 0, 0);
    return rc < 0 ? rc : 0;
}

int mx_plot_write_data(plot_ctx *c, int plot, gp_vars *v, char *why, size_t nwhy)
{
    return plot_table[plot].write(c, v, why, nwhy);
}
