/* The plot driver: selects the ok runs of a results file, writes one gnuplot data file per
 * figure into outdir/data/ (plus replot.sh to redraw them by hand) and runs the scripts
 * plots/<name>.gp under gnuplot for each terminal, checking its exit status and its output. */
#include "plot.h"

#include "engine/status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const mx_plot_names[MX_NPLOTS] = {"throughput", "speedup", "efficiency", "accuracy", "breakdown", "loss"};

#define LABEL_MAX 200
#define KEY_MAX 2048
#define VARS_MAX 16384

/* ---- ok runs grouped into scaling series ---- */

typedef struct {
    int nuniq;                  /* ok runs, each once, in file order (per-run plots) */
    const mx_run_record **uniq;
    int n;                      /* series memberships: a one-device run belongs to several */
    const mx_run_record **runs; /* grouped by series (first-seen order), each sorted by gpus */
    int nseries;
    int *start;                 /* series s is runs[start[s] .. start[s + 1]) */
} run_set;

static void run_set_free(run_set *s)
{
    free(s->runs);
    free(s->uniq);
    free(s->start);
    memset(s, 0, sizeof *s);
}

static int cmp_gpus(const void *a, const void *b)
{
    const mx_run_record *x = *(const mx_run_record *const *)a, *y = *(const mx_run_record *const *)b;
    return (x->gpus > y->gpus) - (x->gpus < y->gpus);
}

static int is_none_kv(const mx_run_record *r) { return strcmp(r->kvstore, "none") == 0; }

/* Series: runs with one series key and matching kvstores (mx_record_kvstore_matches). A
 * one-device run uses no kvstore, so it starts the series of every kvstore it shares a key
 * with, and is listed in each of them. */
static int run_set_build(run_set *s, const mx_results *res)
{
    memset(s, 0, sizeof *s);
    int nruns = res->nruns > 0 ? res->nruns : 0;
    int *rep = calloc((size_t)nruns + 1, sizeof *rep);
    char (*keys)[KEY_MAX] = calloc((size_t)nruns + 1, sizeof *keys);
    const mx_run_record **ok = calloc((size_t)nruns + 1, sizeof *ok);
    s->runs = calloc((size_t)nruns * nruns + 1, sizeof *s->runs);
    s->start = calloc((size_t)nruns + 2, sizeof *s->start);
    if (!rep || !keys || !ok || !s->runs || !s->start) {
        free(rep), free(keys), free(ok), run_set_free(s);
        return mx_error(MX_ENOMEM, "out of memory while plotting grouping %d runs", nruns);
    }
    int nok = 0, nrep = 0;
    for (int i = 0; i < nruns; i++)
        if (strcmp(res->runs[i].status, "ok") == 0) ok[nok++] = &res->runs[i];
    for (int i = 0; i < nok; i++) mx_record_series_key(ok[i], keys[i], KEY_MAX);
    /* a series is named by its first member; quadratic, but studies have few runs. Runs with
     * a kvstore found the series first, then one-device runs that joined none of them. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nok; i++) {
            if (is_none_kv(ok[i]) != pass) continue;
            int found = 0;
            for (int k = 0; k < nrep && !found; k++)
                found = strcmp(keys[i], keys[rep[k]]) == 0 && (pass ? 1 : !strcmp(ok[i]->kvstore, ok[rep[k]]->kvstore));
            if (!found) rep[nrep++] = i;
        }
    for (int k = 0; k < nrep; k++) {
        s->start[s->nseries++] = s->n;
        for (int j = 0; j < nok; j++)
            if (strcmp(keys[j], keys[rep[k]]) == 0 && mx_record_kvstore_matches(ok[j], ok[rep[k]])) s->runs[s->n++] = ok[j];
        qsort(&s->runs[s->start[s->nseries - 1]], (size_t)(s->n - s->start[s->nseries - 1]), sizeof *s->runs,
              cmp_gpus);
    }
    s->start[s->nseries] = s->n;
    free(rep), free(keys);
    s->uniq = ok, s->nuniq = nok;
    return 0;
}

/* ---- labels: name a run or series by the configuration fields that vary in the plot ---- */

enum {
    F_WORKLOAD, F_DATASET, F_DEVICE, F_STRATEGY, F_KVSTORE, F_COMPRESSION, F_AMP, F_BATCH, F_LR,
    F_LRSCALING, F_LENGTH, F_THREADS, F_SEED, F_GPUS, F_NFIELDS
};

static void field_text(int f, const mx_run_record *r, char *b, size_t n)
{
    const char *slash;
    switch (f) {
    case F_WORKLOAD: snprintf(b, n, "%s", r->workload); break;
    case F_DATASET:
        slash = strrchr(r->dataset, '/');
        snprintf(b, n, "%s", slash && slash[1] ? slash + 1 : r->dataset);
        break;
    case F_DEVICE: snprintf(b, n, "%s", r->device_type); break;
    case F_STRATEGY: snprintf(b, n, "%s-parallel", r->strategy); break;
    case F_KVSTORE: snprintf(b, n, "kv %s", r->kvstore); break;
    case F_COMPRESSION: snprintf(b, n, "compr %s", r->compression); break;
    case F_AMP: snprintf(b, n, "amp %s", r->amp); break;
    case F_BATCH:
        if (strcmp(r->batch_mode, "global") == 0)
            snprintf(b, n, "bs %d global", r->batch);
        else
            snprintf(b, n, "bs %d/dev", r->batch);
        break;
    case F_LR: snprintf(b, n, "lr %g", r->base_lr); break;
    case F_LRSCALING: snprintf(b, n, "lr scaling %s", r->lr_scaling); break;
    case F_LENGTH:
        if (r->epochs > 0)
            snprintf(b, n, "%d epochs", r->epochs);
        else
            snprintf(b, n, "%d steps", r->steps);
        break;
    case F_THREADS: snprintf(b, n, "%d thr/dev", r->threads_per_device); break;
    case F_SEED: snprintf(b, n, "seed %d", r->seed); break;
    case F_GPUS: snprintf(b, n, "%d dev", r->gpus); break;
    default: b[0] = '\0';
    }
}

/* Bit f set when field f differs among runs[0..n); the strategy is always named because
 * every figure compares strategies. */
static unsigned varying_fields(const mx_run_record *const *runs, int n, int with_gpus)
{
    unsigned mask = 1u << F_STRATEGY;
    for (int f = 0; f < F_NFIELDS; f++) {
        if (f == F_GPUS && !with_gpus) continue;
        char first[LABEL_MAX], other[LABEL_MAX];
        field_text(f, runs[0], first, sizeof first);
        for (int i = 1; i < n; i++) {
            field_text(f, runs[i], other, sizeof other);
            if (strcmp(first, other) != 0) {
                mask |= 1u << f;
                break;
            }
        }
    }
    return mask;
}

/* Data-file labels are double-quoted gnuplot strings: a '"' would end one early. */
static void label_of(const mx_run_record *r, unsigned mask, char *b, size_t n)
{
    size_t len = 0;
    b[0] = '\0';
    for (int f = 0; f < F_NFIELDS; f++) {
        if (!(mask & (1u << f))) continue;
        char t[LABEL_MAX];
        field_text(f, r, t, sizeof t);
        int w = snprintf(b + len, n - len, "%s%s", len ? ", " : "", t);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
    for (char *p = b; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\\') *p = '\'';
}

/* Labels for items whose representative runs are reps[0..n), made unique: a clash (runs
 * differing only in a field not named, e.g. momentum) gets the run id appended. */
static void unique_labels(const mx_run_record *const *reps, int n, int with_gpus, char (*labels)[LABEL_MAX])
{
    if (n <= 0) return;
    unsigned mask = varying_fields(reps, n, with_gpus);
    for (int i = 0; i < n; i++) label_of(reps[i], mask, labels[i], LABEL_MAX);
    for (int i = 0; i < n; i++) {
        int clash = 0;
        for (int j = 0; j < n; j++)
            if (j != i && strcmp(labels[i], labels[j]) == 0) clash = 1;
        if (!clash) continue;
        size_t len = strlen(labels[i]);
        snprintf(labels[i] + len, LABEL_MAX - len, " [%s]", reps[i]->id);
    }
}

/* ---- small numeric helpers ---- */

static void put_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, " %.9g", x);
    else
        fputs(" NaN", f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of x[0], x[stride], ... (n values), skipping non-finite ones; NaN when none. */
static double median_strided(const double *x, int n, int stride, double *scratch)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[(size_t)i * (size_t)stride])) scratch[m++] = x[(size_t)i * (size_t)stride];
    if (m == 0) return NAN;
    qsort(scratch, (size_t)m, sizeof *scratch, cmp_double);
    return m % 2 ? scratch[m / 2] : 0.5 * (scratch[m / 2 - 1] + scratch[m / 2]);
}

/* ---- the plotting context ---- */

typedef struct {
    const mx_results *res;
    run_set set;
    char outdir[PATH_MAX];
    char datadir[PATH_MAX + 8];
    char scripts[PATH_MAX];
    char gnuplot[PATH_MAX];
    char logpath[PATH_MAX + 32];
    char title[512];
    const char *devname;
    int verbose;
    FILE *replot; /* data/replot.sh: every gnuplot command, for redrawing by hand */
} plot_ctx;

/* gnuplot variable assignments passed with -e; values are quoted as gnuplot strings. */
typedef struct {
    char text[VARS_MAX];
    size_t len;
    int overflow;
} gp_vars;

static void vars_add(gp_vars *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vars_add(gp_vars *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(v->text + v->len, sizeof v->text - v->len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof v->text - v->len)
        v->overflow = 1;
    else
        v->len += (size_t)w;
}

/* Appends value as the inside of a gnuplot single-quoted string ('' stands for ';
 * newlines would end the -e command). */
static void vars_quoted(gp_vars *v, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            vars_add(v, "''");
        else
            vars_add(v, "%c", *p == '\n' || *p == '\r' ? ' ' : *p);
    }
}

static void vars_str(gp_vars *v, const char *name, const char *value)
{
    vars_add(v, "%s%s='", v->len ? "; " : "", name);
    vars_quoted(v, value);
    vars_add(v, "'");
}

static void vars_int(gp_vars *v, const char *name, long value)
{
    vars_add(v, "%s%s=%ld", v->len ? "; " : "", name, value);
}

/* Opens data/<name> and writes the comment header lines common to every data file. */
static FILE *open_data(plot_ctx *c, const char *name, const char *what)
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

static int close_data(plot_ctx *c, FILE *f, const char *name)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return mx_error(MX_EIO, "error writing '%s/%s' (disk full?)", c->datadir, name);
    return 0;
}

static const char block_doc[] =
    "# one block per line of the plot, blocks separated by two blank lines (gnuplot 'index'),\n"
    "# each opened by its title in double quotes (gnuplot 'columnheader(1)')\n";

/* Space-separated ascending distinct values, for the x tics of integer axes. */
static void distinct_ints(const int *x, int n, char *buf, size_t size)
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

/* Series representatives (first run of each) -> unique series labels. */
static char (*series_labels(const run_set *s))[LABEL_MAX]
{
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nseries + 1, sizeof *labels);
    const mx_run_record **reps = calloc((size_t)s->nseries + 1, sizeof *reps);
    if (labels && reps) {
        /* named by its last (largest) member: the first may be a one-device run, whose
         * kvstore "none" says nothing of the series */
        for (int i = 0; i < s->nseries; i++) reps[i] = s->runs[s->start[i + 1] - 1];
        unique_labels(reps, s->nseries, 0, labels);
    }
    free(reps);
    if (!labels) mx_error(MX_ENOMEM, "out of memory while plotting");
    return labels;
}

/* Canvas size: wider with the key on the right, taller when it holds many lines. */
static void canvas_vars(gp_vars *v, int nlines)
{
    int width = nlines > 6 ? 1150 : 900;
    int height = nlines > 6 && 18 * nlines + 160 > 560 ? 18 * nlines + 160 : 560;
    vars_int(v, "width", width);
    vars_int(v, "height", height);
}

/* ---- one writer per data file: 1 = written, 0 = nothing to plot (why says so) ---- */

typedef int (*data_writer)(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);

/* Writes one series-blocked file of the ok runs that keep() accepts, row() formatting each;
 * sets the x tics (gpus), the fewest devices (gbase) and the line count for the script. */
static int write_series_file(plot_ctx *c, gp_vars *v, const char *name, const char *what, const char *columns,
                             int (*keep)(const mx_run_record *), void (*row)(FILE *, const mx_run_record *))
{
    const run_set *s = &c->set;
    char(*labels)[LABEL_MAX] = series_labels(s);
    int *gpus = calloc((size_t)s->n + 1, sizeof *gpus);
    if (!labels || !gpus) {
        free(labels), free(gpus);
        return mx_error(MX_ENOMEM, "out of memory while plotting");
    }
    FILE *f = open_data(c, name, what);
    if (!f) {
        free(labels), free(gpus);
        return MX_EIO;
    }
    fputs(block_doc, f);
    fprintf(f, "# columns: %s\n", columns);
    int blocks = 0, ngpus = 0, gbase = INT_MAX;
    for (int si = 0; si < s->nseries; si++) {
        int rows = 0;
        for (int i = s->start[si]; i < s->start[si + 1]; i++) {
            const mx_run_record *r = s->runs[i];
            if (!keep(r)) continue;
            if (rows++ == 0) fprintf(f, "%s\"%s\"\n", blocks++ ? "\n\n" : "", labels[si]);
            row(f, r);
            gpus[ngpus++] = r->gpus;
            if (r->gpus < gbase) gbase = r->gpus;
        }
    }
    int rc = close_data(c, f, name);
    char list[1024];
    distinct_ints(gpus, ngpus, list, sizeof list);
    vars_int(v, "nseries", blocks);
    vars_str(v, "gpus", list);
    if (blocks) vars_int(v, "gbase", gbase);
    canvas_vars(v, blocks);
    free(labels), free(gpus);
    return rc < 0 ? rc : blocks > 0;
}

static int keep_throughput(const mx_run_record *r) { return isfinite(r->throughput) && r->gpus > 0; }

static void row_throughput(FILE *f, const mx_run_record *r)
{
    /* A run without a confidence interval (too few steps) gets a zero-width bar. */
    double lo = isfinite(r->throughput_ci_low) ? r->throughput_ci_low : r->throughput;
    double hi = isfinite(r->throughput_ci_high) ? r->throughput_ci_high : r->throughput;
    fprintf(f, "%d", r->gpus);
    put_num(f, r->throughput), put_num(f, lo), put_num(f, hi);
    fputc('\n', f);
}

static int write_throughput(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = write_series_file(c, v, "throughput.dat", "throughput against device count",
                               "devices throughput_samples_per_s ci95_low ci95_high", keep_throughput,
                               row_throughput);
    if (rc == 0) snprintf(why, nwhy, "no ok run has a throughput");
    return rc;
}

static int keep_scaling(const mx_run_record *r)
{
    return isfinite(r->speedup) && isfinite(r->efficiency) && r->gpus > 0 && r->speedup > 0;
}

static void row_scaling(FILE *f, const mx_run_record *r)
{
    fprintf(f, "%d", r->gpus);
    put_num(f, r->speedup), put_num(f, r->efficiency);
    fputc('\n', f);
}

static int write_scaling(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    int rc = write_series_file(c, v, "scaling.dat",
                               "speedup and scaling efficiency against device count (relative to the "
                               "fewest devices of each series)",
                               "devices speedup efficiency", keep_scaling, row_scaling);
    if (rc == 0) snprintf(why, nwhy, "no ok run has a speedup (derived against the fewest devices of its series)");
    return rc;
}

/* Accuracy lines: one per lr-scaling rule, and per workload when the study has several. */
static int keep_accuracy(const mx_run_record *r) { return isfinite(r->final_test_acc) && r->global_batch > 0; }

static void accuracy_group(const mx_run_record *r, int by_workload, char *b, size_t n)
{
    if (by_workload)
        snprintf(b, n, "%s, lr scaling %s", r->workload, r->lr_scaling);
    else
        snprintf(b, n, "lr scaling %s", r->lr_scaling);
}

/* 95% binomial (normal approximation) half-width of an accuracy measured on n samples. */
static double binomial_err(double p, int n)
{
    if (n <= 0 || !(p >= 0 && p <= 1)) return 0;
    return 1.96 * sqrt(p * (1 - p) / n);
}

static void accuracy_row(FILE *f, const run_set *s, const char *group, int by_workload, int batch)
{
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int m = 0;
    char g[LABEL_MAX];
    for (int i = 0; i < s->nuniq; i++) {
        const mx_run_record *r = s->uniq[i];
        if (!keep_accuracy(r) || r->global_batch != batch) continue;
        accuracy_group(r, by_workload, g, sizeof g);
        if (strcmp(g, group) != 0) continue;
        double e = binomial_err(r->final_test_acc, r->test_samples);
        sum += r->final_test_acc, m++;
        lo = fmin(lo, r->final_test_acc - e), hi = fmax(hi, r->final_test_acc + e);
    }
    if (!m) return;
    fprintf(f, "%d", batch);
    put_num(f, sum / m), put_num(f, fmax(lo, 0)), put_num(f, fmin(hi, 1));
    fprintf(f, " %d\n", m);
}

static int write_accuracy(plot_ctx *c, gp_vars *v, char *why, size_t nwhy)
{
    const run_set *s = &c->set;
    const mx_run_record **acc = calloc((size_t)s->nuniq + 1, sizeof *acc);
    int *batches = calloc((size_t)s->nuniq + 1, sizeof *batches);
    char(*groups)[LABEL_MAX] = calloc((size_t)s->nuniq + 1, sizeof *groups);
    if (!acc || !batches || !groups) {
        free(acc), free(batches), free(groups);
        return mx_error(MX_ENOMEM, "out of memory while plotting");
    }
    int n = 0;
    for (int i = 0; i < s->nuniq; i++)
        if (keep_accuracy(s->uniq[i])) batches[n] = s->uniq[i]->global_batch, acc[n++] = s->uniq[i];
    int rc = 0;
    if (n == 0) {
        snprintf(why, nwhy, "no ok run has a test accuracy");
        goto done;
    }
    int by_workload = (varying_fields(acc, n, 0) >> F_WORKLOAD) & 1;
    int ngroups = 0;
    for (int i = 0; i < n; i++) {
        char g[LABEL_MAX];
        accuracy_group(acc[i], by_workload, g, sizeof g);
        int seen = 0;
        for (int j = 0; j < ngroups && !seen; j++) seen = strcmp(groups[j], g) == 0;
        if (!seen) snprintf(groups[ngroups++], LABEL_MAX, "%s", g);
    }
    char list[2048];
    distinct_ints(batches, n, list, sizeof list);
    FILE *f = open_data(c, "accuracy.dat", "final test accuracy against global batch size");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs(block_doc, f);
    fputs("# columns: global_batch test_acc_mean low high runs\n"
          "# (accuracy as a fraction; low/high: lowest/highest run at that batch, widened by its 95%\n"
          "#  binomial error on test_samples)\n",
          f);
    for (int gi = 0; gi < ngroups; gi++) {
        fprintf(f, "%s\"%s\"\n", gi ? "\n\n" : "", groups[gi]);
        for (const char *p = list; *p;) {
            char *end;
            int b = (int)strtol(p, &end, 10);
            accuracy_row(f, s, groups[gi], by_workload, b);
            p = *end ? end + 1 : end;
        }
    }
    rc = close_data(c, f, "accuracy.dat");
    if (rc == 0) {
        rc = 1;
        vars_int(v, "nseries", ngroups);
        vars_str(v, "batches", list);
        canvas_vars(v, ngroups);
    }
done:
    free(acc), free(batches), free(groups);
    return rc;
}

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
    unique_labels(runs, n, 1, labels);
    FILE *f = open_data(c, "breakdown.dat", "median time per step in each phase, one row per run");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs("# columns: label", f);
    for (int p = 0; p < MX_NPHASES; p++) fprintf(f, " %s_s", mx_phase_names[p]);
    fputs(" step_s\n# (seconds, medians over the timed steps of all repeats; a phase never timed is 0;\n"
          "#  step_s is the median of whole steps, or the sum of the phases where it is missing)\n",
          f);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        fprintf(f, "\"%s\"", labels[i]);
        double sum = 0;
        for (int p = 0; p < MX_NPHASES; p++) {
            double t = median_strided(r->phase_time + p, r->nsteps, MX_NPHASES, scratch);
            t = isfinite(t) ? t : 0;
            sum += t;
            put_num(f, t);
        }
        double step = isfinite(r->step_time_median) || !r->step_time
                          ? r->step_time_median
                          : median_strided(r->step_time, r->nsteps, 1, scratch);
        /* breakdown.gp scales its axis from this column, so it must be a number */
        put_num(f, isfinite(step) ? step : sum);
        fputc('\n', f);
    }
    rc = close_data(c, f, "breakdown.dat");
    if (rc == 0) {
        rc = 1;
        size_t maxlabel = 0;
        for (int i = 0; i < n; i++) maxlabel = strlen(labels[i]) > maxlabel ? strlen(labels[i]) : maxlabel;
        vars_int(v, "nbars", n);
        vars_int(v, "maxlabel", (long)maxlabel);
        /* One bar needs about 80 px for its slanted label to stay readable. */
        int width = 80 * n + 260;
        vars_int(v, "width", width < 900 ? 900 : width > 8000 ? 8000 : width);
        vars_int(v, "height", 620);
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
    unique_labels(runs, n, 1, labels);
    /* About 50 smoothed points per curve: enough for the trend, not the batch noise. */
    int w = maxloss / 50;
    w = w < 3 ? 1 : (w > 500 ? 501 : w | 1);
    FILE *f = open_data(c, "loss.dat", "training loss per step, one block per run (first repeat)");
    if (!f) {
        rc = MX_EIO;
        goto done;
    }
    fputs(block_doc, f);
    fprintf(f, "# columns: step loss loss_moving_average (centred window of %d steps)\n", w);
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = runs[i];
        fprintf(f, "%s\"%s\"\n", i ? "\n\n" : "", labels[i]);
        for (int k = 0; k < r->nloss; k++) {
            fprintf(f, "%d", k + 1);
            put_num(f, r->loss[k]), put_num(f, moving_average(r->loss, r->nloss, k, w));
            fputc('\n', f);
        }
    }
    rc = close_data(c, f, "loss.dat");
    if (rc == 0) {
        rc = 1;
        vars_int(v, "nseries", n);
        vars_int(v, "smooth", w);
        canvas_vars(v, n);
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
    [MX_PLOT_ACCURACY] = {"accuracy.dat", write_accuracy},
    [MX_PLOT_BREAKDOWN] = {"breakdown.dat", write_breakdown},
    [MX_PLOT_LOSS] = {"loss.dat", write_loss},
};

/* ---- running gnuplot ---- */

static const char no_gnuplot[] =
    "gnuplot not found: install the Debian package gnuplot-nox (apt-get install gnuplot-nox)";

static int find_gnuplot(char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        struct stat st;
        snprintf(out, n, "%.*s/gnuplot", (int)len, len ? p : ".");
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
        p += len + (colon ? 1 : 0);
    }
    return mx_error(MX_EUNSUPPORTED, "%s", no_gnuplot);
}

/* Single-quotes s for sh, for the replot.sh transcript. */
static void put_shell_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* The last ~600 bytes gnuplot wrote to the log since offset, for an error message. */
static void log_tail(const char *path, long from, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long end = ftell(f), start = end - (long)n + 1 > from ? end - (long)n + 1 : from;
    if (start >= 0 && fseek(f, start, SEEK_SET) == 0) {
        size_t got = fread(buf, 1, n - 1, f);
        buf[got] = '\0';
    }
    fclose(f);
    for (size_t len = strlen(buf); len && (buf[len - 1] == '\n' || buf[len - 1] == ' '); len--) buf[len - 1] = '\0';
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int spawn_wait(plot_ctx *c, char *const argv[], int *status)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return mx_error(MX_ENOMEM, "cannot set up gnuplot's process");
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, c->logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawn(&pid, c->gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) return mx_error(MX_ERUNTIME, "cannot run '%s': %s", c->gnuplot, strerror(err));
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR) return mx_error(MX_ERUNTIME, "waiting for gnuplot: %s", strerror(errno));
    return 0;
}

static int run_gnuplot(plot_ctx *c, int plot, const char *term, const char *vars, char *outfile, size_t noutfile)
{
    const char *name = mx_plot_names[plot];
    char script[PATH_MAX + 64];
    snprintf(script, sizeof script, "%s/%s.gp", c->scripts, name);
    int w = snprintf(outfile, noutfile, "%s/%s.%s", c->outdir, name, term);
    if (w < 0 || (size_t)w >= noutfile) return mx_error(MX_EINVAL, "output path too long: '%s'", c->outdir);
    gp_vars e = {.len = 0};
    vars_add(&e, "set loadpath '"); /* style.gp and intaxis.gp are loaded from here */
    vars_quoted(&e, c->scripts);
    vars_add(&e, "'");
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", c->datadir, plot_table[plot].data);
    vars_str(&e, "datafile", path);
    snprintf(path, sizeof path, "%s/%s", c->outdir, name);
    vars_str(&e, "outbase", path);
    vars_str(&e, "term", term);
    vars_add(&e, "; %s", vars);
    if (e.overflow) return mx_error(MX_EINVAL, "gnuplot variables for %s too long", name);

    char *argv[] = {"gnuplot", "-e", e.text, script, NULL};
    fprintf(c->replot, "gnuplot -e ");
    put_shell_quoted(c->replot, e.text);
    fputc(' ', c->replot);
    put_shell_quoted(c->replot, script);
    fputc('\n', c->replot);
    if (c->verbose) fprintf(stderr, "mxbench plot: gnuplot -e \"%s\" %s\n", e.text, script);

    long before = file_size(c->logpath);
    unlink(outfile); /* so a stale figure cannot pass for a fresh one */
    int status;
    MX_TRY(spawn_wait(c, argv, &status));
    char tail[600];
    log_tail(c->logpath, before < 0 ? 0 : before, tail, sizeof tail);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            return mx_error(MX_EUNSUPPORTED, "%s", no_gnuplot);
        return mx_error(MX_ERUNTIME, "gnuplot failed on %s for %s (%s %d): %s", script, outfile,
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail[0] ? tail : "(no output)");
    }
    if (file_size(outfile) <= 0)
        return mx_error(MX_ERUNTIME, "gnuplot ran %s but wrote no %s (is the %s terminal built in?): %s", script,
                        outfile, strcmp(term, "png") == 0 ? "pngcairo" : term, tail[0] ? tail : "(no output)");
    if (c->verbose && tail[0]) fprintf(stderr, "%s\n", tail);
    return 0;
}

/* ---- setup: directories, title, the axis wording ---- */

static int mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return mx_error(MX_EINVAL, "path too long: '%s'", dir);
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p != '\0') continue;
        char was = *p;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return mx_error(MX_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
        *p = was;
        if (!was) break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mx_error(MX_EIO, "'%s' is not a directory", dir);
    return 0;
}

/* Appends each distinct value of field(run) to buf as "a, b". */
static void join_distinct(const run_set *s, const char *(*field)(const mx_run_record *), char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n; i++) {
        const char *v = field(s->runs[i]);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(field(s->runs[j]), v) == 0;
        if (seen || !*v) continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", v);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
}

static const char *get_workload(const mx_run_record *r) { return r->workload; }
static const char *get_device(const mx_run_record *r) { return r->device_type; }

static void describe_study(plot_ctx *c)
{
    char workloads[256], devices[64];
    join_distinct(&c->set, get_workload, workloads, sizeof workloads);
    join_distinct(&c->set, get_device, devices, sizeof devices);
    const mx_results_meta *m = &c->res->meta;
    const char *model = strcmp(devices, "cuda") == 0 ? m->gpu_model : strcmp(devices, "cpu") == 0 ? m->cpu_model : "";
    snprintf(c->title, sizeof c->title, "%s on %s%s%.60s%s", workloads[0] ? workloads : "(no runs)",
             devices[0] ? devices : "?", model[0] ? " (" : "", model, model[0] ? ")" : "");
    for (char *p = c->title; *p; p++)
        if (*p == '"' || *p == '\n') *p = '\'';
    c->devname = strcmp(devices, "cuda") == 0 ? "GPUs" : strcmp(devices, "cpu") == 0 ? "CPU workers" : "devices";
}

static int setup(plot_ctx *c, const mx_results *res, const char *outdir, const char *scripts_dir, int verbose)
{
    memset(c, 0, sizeof *c);
    c->res = res, c->verbose = verbose;
    MX_TRY(find_gnuplot(c->gnuplot, sizeof c->gnuplot));
    if (!realpath(scripts_dir, c->scripts))
        return mx_error(MX_EIO, "gnuplot scripts directory '%s' not found: %s (set MXBENCH_PLOTS_DIR or "
                        "--scripts to the source tree's plots/)", scripts_dir, strerror(errno));
    for (int i = 0; i < MX_NPLOTS; i++) {
        char script[PATH_MAX + 64];
        snprintf(script, sizeof script, "%s/%s.gp", c->scripts, mx_plot_names[i]);
        if (access(script, R_OK) != 0)
            return mx_error(MX_EIO, "gnuplot script '%s' missing or unreadable: %s", script, strerror(errno));
    }
    char data[PATH_MAX + 8];
    snprintf(data, sizeof data, "%s/data", outdir);
    MX_TRY(mkdir_p(data));
    if (!realpath(outdir, c->outdir)) return mx_error(MX_EIO, "cannot resolve '%s': %s", outdir, strerror(errno));
    snprintf(c->datadir, sizeof c->datadir, "%s/data", c->outdir);
    snprintf(c->logpath, sizeof c->logpath, "%s/gnuplot.log", c->datadir);
    FILE *log = fopen(c->logpath, "w"); /* one log per call: a failure's output is its own */
    if (!log) return mx_error(MX_EIO, "cannot write '%s': %s", c->logpath, strerror(errno));
    fclose(log);
    MX_TRY(run_set_build(&c->set, res));
    describe_study(c);
    return 0;
}

static int open_replot(plot_ctx *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/replot.sh", c->datadir);
    c->replot = fopen(path, "w");
    if (!c->replot) return mx_error(MX_EIO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(c->replot, "#!/bin/sh\n# Redraws the mxbench figures from the data files in this directory "
                       "(edit the scripts or these variables, then run it).\nset -e\n");
    chmod(path, 0755);
    return 0;
}

/* A skipped figure must not leave last study's figure and data behind. */
static void remove_stale(plot_ctx *c, int plot)
{
    char path[PATH_MAX + 64];
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "%s/%s.%s", c->outdir, mx_plot_names[plot], t ? "svg" : "png");
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s", c->datadir, plot_table[plot].data);
    unlink(path);
}

static int draw(plot_ctx *c, int plot, mx_plot_report *rep)
{
    gp_vars v = {.len = 0};
    vars_str(&v, "title", c->title);
    vars_str(&v, "devname", c->devname);
    int rc = plot_table[plot].write(c, &v, rep->skipped[plot], sizeof rep->skipped[plot]);
    if (rc < 0) return rc;
    if (rc == 0) {
        remove_stale(c, plot);
        return 0;
    }
    if (v.overflow) return mx_error(MX_EINVAL, "gnuplot variables for %s too long", mx_plot_names[plot]);
    static const char *const terms[2] = {"png", "svg"};
    for (int t = 0; t < 2; t++)
        MX_TRY(run_gnuplot(c, plot, terms[t], v.text, rep->files[plot][t], sizeof rep->files[plot][t]));
    rep->drawn[plot] = 1;
    rep->ndrawn++;
    return 0;
}

int mx_plot_results_report(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose,
                           mx_plot_report *rep)
{
    mx_plot_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    if (!res || !outdir || !*outdir || !scripts_dir)
        return mx_error(MX_EINVAL, "plotting needs results, an output directory and the scripts directory");
    plot_ctx *c = malloc(sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = setup(c, res, outdir, scripts_dir, verbose);
    if (rc == 0) rc = open_replot(c);
    for (int p = 0; rc == 0 && p < MX_NPLOTS; p++) {
        rc = draw(c, p, rep);
        if (rc == 0 && verbose && rep->drawn[p])
            fprintf(stderr, "mxbench plot: wrote %s and %s\n", rep->files[p][0], rep->files[p][1]);
    }
    if (c->replot && fclose(c->replot) != 0 && rc == 0) rc = mx_error(MX_EIO, "error writing %s/replot.sh", c->datadir);
    run_set_free(&c->set);
    free(c);
    return rc < 0 ? rc : rep->ndrawn;
}

int mx_plot_results(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose)
{
    mx_plot_report *rep = malloc(sizeof *rep);
    if (!rep) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = mx_plot_results_report(res, outdir, scripts_dir, verbose, rep);
    for (int p = 0; rc >= 0 && p < MX_NPLOTS; p++)
        if (!rep->drawn[p]) fprintf(stderr, "mxbench plot: skipped %s: %s\n", mx_plot_names[p], rep->skipped[p]);
    free(rep);
    return rc;
}

const char *mx_plot_default_scripts_dir(void)
{
    const char *env = getenv("MXBENCH_PLOTS_DIR");
    return env && *env ? env : MXBENCH_PLOTS_DIR;
}
