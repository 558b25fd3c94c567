/* The plot driver's grouping of ok runs into scaling series, and the labels that name a run
 * or a series by the configuration fields that vary in the plot. */
#include "plot_internal.h"

#include "base/status.h"
#include "results/axes.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mx_plot_series_free(run_set *s)
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

static int is_none_kv(const mx_run_record *r) { return mx_kv_mode_of(r->kvstore) == MX_KV_NONE; }

/* 1 when the series of ok[rep] (key keys[rep], its exchange) has a run of its own exchange at
 * the device count of ok[j] */
static int has_own(const mx_run_record **ok, int nok, char (*keys)[KEY_MAX], int j, int rep)
{
    for (int m = 0; m < nok; m++)
        if (ok[m]->gpus == ok[j]->gpus && mx_record_same_exchange(ok[m], ok[rep]) && !strcmp(keys[m], keys[rep]))
            return 1;
    return 0;
}

/* Series: runs with one series key and matching exchanges (mx_record_exchange_matches: each
 * kvstore mode, dist_* ones included, and each compressor is a series of its own; every other
 * setting that tells rows apart is in the series key). A one-device run uses no
 * kvstore, so it starts the series of every kvstore it shares a key with, and is listed in
 * each of them, but for a series that has a run of its own at that device count (a dist_*
 * series' one worker): one point per device count. */
int mx_plot_series_build(run_set *s, const mx_results *res)
{
    memset(s, 0, sizeof *s);
    int nruns = res->nruns > 0 ? res->nruns : 0;
    int *rep = calloc((size_t)nruns + 1, sizeof *rep);
    char (*keys)[KEY_MAX] = calloc((size_t)nruns + 1, sizeof *keys);
    const mx_run_record **ok = calloc((size_t)nruns + 1, sizeof *ok);
    s->runs = calloc((size_t)nruns * nruns + 1, sizeof *s->runs);
    s->start = calloc((size_t)nruns + 2, sizeof *s->start);
    if (!rep || !keys || !ok || !s->runs || !s->start) {
        free(rep), free(keys), free(ok), mx_plot_series_free(s);
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
                found = strcmp(keys[i], keys[rep[k]]) == 0 && (pass ? 1 : mx_record_same_exchange(ok[i], ok[rep[k]]));
            if (!found) rep[nrep++] = i;
        }
    /* Series of one family (strategy, kvstore: plot_family.c) side by side, in the order of
     * the family table, first-seen within one: a key then reads by family, and a figure too
     * busy for one key has a panel per family. Insertion sort keeps the order of equals. */
    for (int k = 1; k < nrep; k++)
        for (int j = k; j > 0 && mx_plot_family(ok[rep[j - 1]]) > mx_plot_family(ok[rep[j]]); j--) {
            int t = rep[j];
            rep[j] = rep[j - 1], rep[j - 1] = t;
        }
    for (int k = 0; k < nrep; k++) {
        s->start[s->nseries++] = s->n;
        for (int j = 0; j < nok; j++)
            if (strcmp(keys[j], keys[rep[k]]) == 0 && mx_record_exchange_matches(ok[j], ok[rep[k]]) &&
                !(is_none_kv(ok[j]) && !is_none_kv(ok[rep[k]]) && has_own(ok, nok, keys, j, rep[k])))
                s->runs[s->n++] = ok[j];
        qsort(&s->runs[s->start[s->nseries - 1]], (size_t)(s->n - s->start[s->nseries - 1]), sizeof *s->runs,
              cmp_gpus);
    }
    s->start[s->nseries] = s->n;
    free(rep), free(keys);
    s->uniq = ok, s->nuniq = nok;
    return 0;
}


/* ---- the fields a label may name: one text function each. A field's text is "" where it
 * does not apply to the run (the pipeline's settings on a data run): it then names nothing. */

static int is_model(const mx_run_record *r) { return mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL; }

static void t_workload(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "%s", r->workload); }
static void t_dataset(const mx_run_record *r, char *b, size_t n)
{
    const char *slash = strrchr(r->dataset, '/');
    snprintf(b, n, "%s", slash && slash[1] ? slash + 1 : r->dataset);
}
static void t_device(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "%s", r->device_type); }
static void t_strategy(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "%s-parallel", r->strategy); }
static void t_kvstore(const mx_run_record *r, char *b, size_t n) /* model and layer use none */
{
    if (mx_strategy_of(r->strategy) == MX_STRATEGY_DATA) snprintf(b, n, "kv %s", r->kvstore);
    else b[0] = '\0';
}
static void t_servers(const mx_run_record *r, char *b, size_t n) /* dist_* runs with parameter servers */
{
    if (r->servers > 0) snprintf(b, n, "%d server%s", r->servers, r->servers == 1 ? "" : "s");
    else b[0] = '\0';
}
static void t_micro(const mx_run_record *r, char *b, size_t n)
{
    if (is_model(r)) snprintf(b, n, "m=%d", r->micro_batches);
    else b[0] = '\0';
}
static void t_schedule(const mx_run_record *r, char *b, size_t n)
{
    snprintf(b, n, "%s", is_model(r) ? r->schedule : "");
}
static void t_partition(const mx_run_record *r, char *b, size_t n)
{
    if (is_model(r)) snprintf(b, n, "cut %s", r->partition);
    else b[0] = '\0';
}
static void t_compression(const mx_run_record *r, char *b, size_t n) /* with the compressor's setting */
{
    const mx_gc_kind gc = mx_gc_of(r->compression);
    if (gc == MX_GC_2BIT) snprintf(b, n, "compr 2bit thr %g", r->gc_threshold);
    else if (gc == MX_GC_TOPK) snprintf(b, n, "compr topk %g", r->gc_topk_ratio);
    else snprintf(b, n, "compr %s", r->compression);
}
static void t_amp(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "amp %s", r->amp); }
static void t_batch(const mx_run_record *r, char *b, size_t n)
{
    snprintf(b, n, "bs %d%s", r->batch, strcmp(r->batch_mode, "global") == 0 ? " global" : "/dev");
}
static void t_lr(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "lr %g", r->base_lr); }
static void t_lrscaling(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "lr scaling %s", r->lr_scaling); }
static void t_lrschedule(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "%s lr", r->lr_schedule); }
static void t_momentum(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "momentum %g", r->momentum); }
static void t_wd(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "wd %g", r->wd); }
static void t_warmup(const mx_run_record *r, char *b, size_t n)
{
    snprintf(b, n, "warmup %g epochs", r->warmup_epochs);
}
static void t_length(const mx_run_record *r, char *b, size_t n)
{
    if (r->epochs > 0) snprintf(b, n, "%d epochs", r->epochs);
    else snprintf(b, n, "%d steps", r->steps);
}
static void t_threads(const mx_run_record *r, char *b, size_t n)
{
    snprintf(b, n, "%d thr/dev", r->threads_per_device);
}
static void t_repeats(const mx_run_record *r, char *b, size_t n)
{
    snprintf(b, n, "%d repeat%s", r->repeats, r->repeats == 1 ? "" : "s");
}
static void t_seed(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "seed %d", r->seed); }
static void t_workers(const mx_run_record *r, char *b, size_t n) /* one per device says nothing more */
{
    if (r->workers > 1 && r->workers != r->gpus) snprintf(b, n, "%d workers", r->workers);
    else b[0] = '\0';
}
static void t_gpus(const mx_run_record *r, char *b, size_t n) { snprintf(b, n, "%d dev", r->gpus); }

/* In label order. quiet: the axis (axes.c) whose default a label leaves unsaid: a series
 * differs from the others in what it names, and one that names nothing for the field ran
 * the default ("kv device, compr fp16" beside "kv device"). Labels stay distinct: two series
 * that differ in such a field cannot both hold its default. NULL: named whenever it varies. */
static const struct {
    void (*text)(const mx_run_record *, char *, size_t);
    const char *quiet;
} fields[F_NFIELDS] = {
    [F_WORKLOAD] = {t_workload, NULL},       [F_DATASET] = {t_dataset, NULL},
    [F_DEVICE] = {t_device, NULL},           [F_STRATEGY] = {t_strategy, NULL},
    [F_KVSTORE] = {t_kvstore, NULL},         [F_SERVERS] = {t_servers, NULL},
    [F_MICRO] = {t_micro, NULL},             [F_SCHEDULE] = {t_schedule, NULL},
    [F_PARTITION] = {t_partition, "partition"}, [F_COMPRESSION] = {t_compression, "compression"},
    [F_AMP] = {t_amp, "amp"},                [F_BATCH] = {t_batch, NULL},
    [F_LR] = {t_lr, "base_lr"},              [F_LRSCALING] = {t_lrscaling, "lr_scaling"},
    [F_LRSCHEDULE] = {t_lrschedule, "lr_schedule"}, [F_MOMENTUM] = {t_momentum, "momentum"},
    [F_WD] = {t_wd, "wd"},                   [F_WARMUP] = {t_warmup, "warmup_epochs"},
    [F_LENGTH] = {t_length, NULL},           [F_THREADS] = {t_threads, NULL},
    [F_REPEATS] = {t_repeats, "repeats"},    [F_SEED] = {t_seed, "seed"},
    [F_WORKERS] = {t_workers, NULL},         [F_GPUS] = {t_gpus, NULL},
};

/* 1 when run r holds the default of field f that its label leaves unsaid */
static int quiet_default(int f, const mx_run_record *r)
{
    const mx_axis *a = fields[f].quiet ? mx_axis_find(fields[f].quiet) : NULL;
    if (!a) return 0;
    mx_run_record def = *r; /* the run with only this field at its default */
    mx_axis_set(a, &def, a->def);
    char mine[LABEL_MAX], dflt[LABEL_MAX];
    fields[f].text(r, mine, sizeof mine);
    fields[f].text(&def, dflt, sizeof dflt);
    return strcmp(mine, dflt) == 0;
}

/* Bit f set when field f differs among runs[0..n): a label says only what tells its line
 * from the others (the title names the study's workload, device and, when there is one,
 * strategy). The strategy alone names a lone line. The device, worker and server counts vary
 * along a series, so they name only runs (with_gpus), never a series. */
unsigned mx_plot_varying_fields(const mx_run_record *const *runs, int n, int with_gpus)
{
    unsigned mask = 0;
    for (int f = 0; f < F_NFIELDS; f++) {
        if ((f == F_GPUS || f == F_WORKERS || f == F_SERVERS) && !with_gpus) continue;
        char first[LABEL_MAX], other[LABEL_MAX];
        fields[f].text(runs[0], first, sizeof first);
        for (int i = 1; i < n; i++) {
            fields[f].text(runs[i], other, sizeof other);
            if (strcmp(first, other) != 0) {
                mask |= 1u << f;
                break;
            }
        }
    }
    return mask ? mask : 1u << F_STRATEGY;
}

/* Data-file labels are double-quoted gnuplot strings: a '"' would end one early. */
static void label_of(const mx_run_record *r, unsigned mask, char *b, size_t n)
{
    size_t len = 0;
    b[0] = '\0';
    /* a run at every quiet default (the baseline of a study of compressors) names them all */
    for (int quiet = 1; quiet >= 0 && len == 0; quiet--)
        for (int f = 0; f < F_NFIELDS; f++) {
            if (!(mask & (1u << f))) continue;
            char t[LABEL_MAX];
            fields[f].text(r, t, sizeof t);
            if (!t[0] || (quiet && quiet_default(f, r))) continue; /* does not apply, or the default */
            int w = snprintf(b + len, n - len, "%s%s", len ? ", " : "", t);
            if (w < 0 || (size_t)w >= n - len) break;
            len += (size_t)w;
        }
    if (len == 0) t_strategy(r, b, n); /* nothing that varies applies to this run */
    for (char *p = b; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\\') *p = '\'';
}

/* Labels for items whose representative runs are reps[0..n), made unique: a clash (runs
 * differing only in a field not named, e.g. momentum) gets the run id appended. */
void mx_plot_unique_labels(const mx_run_record *const *reps, int n, int with_gpus, char (*labels)[LABEL_MAX])
{
    if (n <= 0) return;
    unsigned mask = mx_plot_varying_fields(reps, n, with_gpus);
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


/* Series representatives (first run of each) -> unique series labels. */
char (*mx_plot_series_labels(const run_set *s))[LABEL_MAX]
{
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nseries + 1, sizeof *labels);
    const mx_run_record **reps = calloc((size_t)s->nseries + 1, sizeof *reps);
    if (labels && reps) {
        /* named by its last (largest) member: the first may be a one-device run, whose
         * kvstore "none" says nothing of the series */
        for (int i = 0; i < s->nseries; i++) reps[i] = s->runs[s->start[i + 1] - 1];
        mx_plot_unique_labels(reps, s->nseries, 0, labels);
    }
    free(reps);
    if (!labels) mx_error(MX_ENOMEM, "out of memory while plotting");
    return labels;
}

