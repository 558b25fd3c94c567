/* The accuracy figure: the final test accuracy of each series (the scaling series of
 * plot_series.c, so that runs of different strategies, kvstores, compressors, precisions or
 * lr-scaling rules are never averaged together), against the global batch or the device
 * count, whichever gives the lines more points: a study of the lr-scaling rules grows the
 * global batch with the devices (per-device batches), a study at one global batch compares
 * device counts. Written to data/accuracy.dat, drawn by plots/accuracy.gp. */
#include "plot_internal.h"

#include "base/status.h"
#include "results/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int keep_accuracy(const mx_run_record *r) { return isfinite(r->final_test_acc) && r->global_batch > 0; }

/* The x axes the figure can have: what a run's point is placed at, and how the axis reads. */
typedef struct {
    const char *name; /* accuracy.gp's xaxis */
    int (*x)(const mx_run_record *);
} acc_axis;

static int x_batch(const mx_run_record *r) { return r->global_batch; }
static int x_devices(const mx_run_record *r) { return r->gpus; }

static const acc_axis axes[] = {{"batch", x_batch}, {"devices", x_devices}};
enum { NAXES = sizeof axes / sizeof axes[0] };

/* Distinct (series, x) points of the kept runs along axis a: the axis that separates the
 * most runs is drawn (the first of equals, the global batch). */
static int count_points(const run_set *s, const acc_axis *a)
{
    int points = 0;
    for (int si = 0; si < s->nseries; si++)
        for (int i = s->start[si]; i < s->start[si + 1]; i++) {
            if (!keep_accuracy(s->runs[i])) continue;
            int seen = 0;
            for (int j = s->start[si]; j < i && !seen; j++)
                seen = keep_accuracy(s->runs[j]) && a->x(s->runs[j]) == a->x(s->runs[i]);
            points += !seen;
        }
    return points;
}

/* The 95% interval of an accuracy measured on n test samples: Wilson's score interval, as
 * compare uses (results/stats.h); unlike the normal approximation it stays inside [0, 1] and
 * is not zero-width at 0 or 1. No samples: the point itself. */
static void accuracy_interval(double p, int n, double *lo, double *hi)
{
    mx_stats_wilson_ci95(p, n, lo, hi);
    if (!isfinite(*lo) || !isfinite(*hi)) *lo = *hi = p;
}

/* One row: the runs of series si at x (several only where a series has runs that differ in
 * nothing but what the other axis shows), their mean, and the lowest and highest of them
 * each widened by its interval. */
static void put_row(FILE *f, const run_set *s, int si, const acc_axis *a, int x)
{
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int m = 0;
    for (int i = s->start[si]; i < s->start[si + 1]; i++) {
        const mx_run_record *r = s->runs[i];
        if (!keep_accuracy(r) || a->x(r) != x) continue;
        double l, h;
        accuracy_interval(r->final_test_acc, r->test_samples, &l, &h);
        sum += r->final_test_acc, m++;
        lo = fmin(lo, l), hi = fmax(hi, h);
    }
    if (!m) return;
    fprintf(f, "%d", x);
    mx_plot_put_num(f, sum / m), mx_plot_put_num(f, fmax(lo, 0)), mx_plot_put_num(f, fmin(hi, 1));
    fprintf(f, " %d\n", m);
}

int mx_plot_write_accuracy(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    char(*labels)[LABEL_MAX] = mx_plot_series_labels(s);
    int *xs = calloc((size_t)s->n + 1, sizeof *xs), *batches = calloc((size_t)s->n + 1, sizeof *batches);
    const mx_run_record **reps = calloc((size_t)s->nseries + 1, sizeof *reps); /* of each block: its colour */
    int rc = 0;
    if (!labels || !xs || !batches || !reps) {
        rc = mx_error(MX_ENOMEM, "out of memory while plotting");
        goto done;
    }
    const acc_axis *a = &axes[0];
    for (int k = 1; k < NAXES; k++)
        if (count_points(s, &axes[k]) > count_points(s, a)) a = &axes[k];
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (keep_accuracy(s->runs[i])) xs[n] = a->x(s->runs[i]), batches[n++] = s->runs[i]->global_batch;
    if (n == 0) {
        snprintf(why, nwhy, "no ok run has a test accuracy");
        goto done;
    }
    char list[2048], blist[2048];
    mx_plot_distinct_ints(xs, n, list, sizeof list);
    mx_plot_distinct_ints(batches, n, blist, sizeof blist);
    FILE *f = mx_plot_open_data(c, "accuracy.dat", "final test accuracy per series");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs(plot_block_doc, f);
    fprintf(f, "# columns: %s test_acc_mean low high runs\n"
               "# (accuracy as a fraction; low/high: lowest/highest run of the series at that x, widened by\n"
               "#  its 95%% Wilson interval on test_samples)\n",
            strcmp(a->name, "batch") == 0 ? "global_batch" : "devices");
    int blocks = 0;
    size_t maxlabel = 0;
    for (int si = 0; si < s->nseries; si++) {
        int any = 0;
        for (int i = s->start[si]; i < s->start[si + 1] && !any; i++) any = keep_accuracy(s->runs[i]);
        if (!any) continue;
        reps[blocks] = s->runs[s->start[si + 1] - 1];
        fprintf(f, "%s\"%s\"\n", blocks++ ? "\n\n" : "", labels[si]);
        maxlabel = strlen(labels[si]) > maxlabel ? strlen(labels[si]) : maxlabel;
        for (const char *p = list; *p;) { /* ascending x */
            char *end;
            const int x = (int)strtol(p, &end, 10);
            put_row(f, s, si, a, x);
            p = *end ? end + 1 : end;
        }
    }
    rc = mx_plot_close_data(c, f, "accuracy.dat");
    if (rc == 0) {
        rc = 1;
        mx_vars_int(v, "nseries", blocks);
        mx_vars_str(v, "xaxis", a->name);
        mx_vars_str(v, "xvals", list);
        /* on the device axis, the global batch every point trained at, when they share one */
        if (!strchr(blist, ' ')) mx_vars_str(v, "batchnote", blist);
        mx_plot_canvas_vars(v, blocks, maxlabel);
        mx_plot_family_vars(v, reps, blocks);
    }
done:
    free(labels), free(xs), free(batches), free(reps);
    return rc;
}
