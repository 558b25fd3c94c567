/* The figures of trading precision: compression.png, what it buys and costs: for each data-parallel run
 * with a kvstore, the gradient bytes its pushes put on the wire per step (as sent: compressed
 * payloads) and its final test accuracy, one bar and one point per run, labelled by what
 * varies (compression, precision, kvstore, device count). Drawn by plots/compression.gp
 * when some ok run compressed its gradients or ran mixed precision. And loss_scale.png: the
 * loss scale of every step of each fp16 AMP run, a skipped step where the scale fell. */
#include "plot_internal.h"
#include "base/status.h"
#include "results/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs that exchanged gradients between devices or workers (a dist_* run of one worker
 * pushes to its server, but is a series' first point, not a comparison of compressors). */
static int keep(const mx_run_record *r)
{
    return isfinite(r->metrics[MX_COUNTER_WIRE_BYTES]) && (r->gpus > 1 || r->workers > 1);
}

/* A short label: kvstore, compressor with its setting, precision, and the device count when
 * the kept runs differ in it. */
static void label(const mx_run_record *r, int with_gpus, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s %s", r->kvstore, r->compression);
    const mx_gc_kind gc = mx_gc_of(r->compression);
    if (gc == MX_GC_2BIT) len += snprintf(buf + len, n - (size_t)len, " %g", r->gc_threshold);
    if (gc == MX_GC_TOPK) len += snprintf(buf + len, n - (size_t)len, " %g", r->gc_topk_ratio);
    if (mx_amp_of(r->amp) != MX_AMP_OFF) len += snprintf(buf + len, n - (size_t)len, " amp %s", r->amp);
    if (with_gpus) snprintf(buf + len, n - (size_t)len, " x%d", r->gpus);
}

static int trades_precision(const mx_run_record *r)
{
    return mx_gc_of(r->compression) != MX_GC_NONE || mx_amp_of(r->amp) != MX_AMP_OFF;
}

int mx_plot_write_compression(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    const mx_run_record **runs = calloc((size_t)s->nuniq + 1, sizeof *runs);
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nuniq + 1, sizeof *labels);
    int n = 0, any = 0, hasacc = 0, rc = 0;
    if (!runs || !labels) {
        rc = mx_error(MX_ENOMEM, "out of memory while plotting");
        goto done;
    }
    for (int i = 0; i < s->nuniq; i++)
        if (keep(s->uniq[i])) {
            runs[n++] = s->uniq[i];
            any |= trades_precision(s->uniq[i]);
            hasacc |= isfinite(s->uniq[i]->final_test_acc);
        }
    if (!any) { /* a study without compression or AMP has nothing to compare: no message */
        why[0] = '\0';
        (void)nwhy;
        goto done;
    }
    int with_gpus = 0;
    for (int i = 1; i < n; i++) with_gpus |= runs[i]->gpus != runs[0]->gpus;
    for (int i = 0; i < n; i++) label(runs[i], with_gpus, labels[i], LABEL_MAX);
    FILE *f = mx_plot_open_data(c, "compression.dat",
                                "gradient bytes on the wire per step and final test accuracy, one "
                                "row per run with a kvstore");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs("# columns: index \"label\" wire_MB_per_step wire_ratio test_acc acc_low acc_high (95% Wilson interval)\n"
          "#          rgb (the run's family colour, 0xRRGGBB as an integer: plot_family.c)\n",
          f);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        double lo = r->final_test_acc, hi = lo;
        if (isfinite(lo)) mx_stats_wilson_ci95(r->final_test_acc, r->test_samples, &lo, &hi);
        if (!isfinite(lo) || !isfinite(hi)) lo = hi = r->final_test_acc;
        fprintf(f, "%d \"%s\"", i, labels[i]);
        mx_plot_put_num(f, r->metrics[MX_COUNTER_WIRE_BYTES] * 1e-6);
        mx_plot_put_num(f, r->metrics[MX_COUNTER_WIRE_RATIO]);
        mx_plot_put_num(f, r->final_test_acc), mx_plot_put_num(f, lo), mx_plot_put_num(f, hi);
        fprintf(f, " %ld\n", strtol(mx_plot_family_rgb(mx_plot_family(r)), NULL, 16));
    }
    rc = mx_plot_close_data(c, f, "compression.dat");
    if (rc == 0) {
        rc = 1;
        mx_vars_int(v, "nruns", n);
        mx_vars_int(v, "hasacc", hasacc);
        mx_vars_int(v, "width", n > 8 ? 1150 : 900);
        mx_vars_int(v, "height", hasacc ? 760 : 560); /* compression.gp: one panel without accuracy */
    }
done:
    free(runs), free(labels);
    return rc;
}

static int keep_scale(const mx_run_record *r) { return r->loss_scale && r->nloss > 0; }

int mx_plot_write_loss_scale(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    const mx_run_record **runs = calloc((size_t)s->nuniq + 1, sizeof *runs);
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nuniq + 1, sizeof *labels);
    int n = 0, rc = 0;
    if (!runs || !labels) {
        rc = mx_error(MX_ENOMEM, "out of memory while plotting");
        goto done;
    }
    for (int i = 0; i < s->nuniq; i++)
        if (keep_scale(s->uniq[i])) runs[n++] = s->uniq[i];
    if (n == 0) { /* no fp16 AMP run: nothing to say */
        why[0] = '\0';
        (void)nwhy;
        goto done;
    }
    mx_plot_unique_labels(runs, n, 1, labels);
    FILE *f = mx_plot_open_data(c, "loss_scale.dat", "fp16 AMP: the loss scale of every step, one block per run "
                                                  "(first repeat)");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs("# blocks separated by two blank lines, each opened by the run's title in double quotes\n"
          "# columns: step loss_scale skipped (the scale where the step was skipped: the next step's is lower; "
          "else NaN)\n", f);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        fprintf(f, "%s\"%s\"\n", i ? "\n\n" : "", labels[i]);
        for (int k = 0; k < r->nloss; k++) {
            const int skipped = k + 1 < r->nloss && r->loss_scale[k + 1] < r->loss_scale[k];
            fprintf(f, "%d", k + 1);
            mx_plot_put_num(f, r->loss_scale[k]), mx_plot_put_num(f, skipped ? r->loss_scale[k] : NAN);
            fputc('\n', f);
        }
    }
    rc = mx_plot_close_data(c, f, "loss_scale.dat");
    if (rc == 0) {
        rc = 1;
        mx_vars_int(v, "nseries", n);
        mx_plot_family_vars(v, runs, n);
        mx_plot_canvas_vars(v, n, mx_plot_max_label((const char(*)[LABEL_MAX])labels, n));
    }
done:
    free(runs), free(labels);
    return rc;
}
