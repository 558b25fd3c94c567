/* The plot driver's grouping of ok runs into scaling series, and the labels that name a run
 * or a series by the configuration fields that vary in the plot. */
#include "plot_internal.h"

#include "engine/status.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void plot_series_free(run_set *s)
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

/* 1 when the series of ok[rep] (key keys[rep], its kvstore) has a run of its own kvstore at
 * the device count of ok[j] */
static int has_own(const mx_run_record **ok, int nok, char (*keys)[KEY_MAX], int j, int rep)
{
    for (int m = 0; m < nok; m++)
        if (ok[m]->gpus == ok[j]->gpus && !strcmp(ok[m]->kvstore, ok[rep]->kvstore) && !strcmp(keys[m], keys[rep]))
            return 1;
    return 0;
}

/* Series: runs with one series key and matching kvstores (mx_record_exchange_matches: each
 * kvstore mode, dist_* ones included, is a series of its own). A one-device run uses no
 * kvstore, so it starts the series of every kvstore it shares a key with, and is listed in
 * each of them, but for a series that has a run of its own at that device count (a dist_*
 * series' one worker): one point per device count. */
int plot_series_build(run_set *s, const mx_results *res)
{
    memset(s, 0, sizeof *s);
    int nruns = res->nruns > 0 ? res->nruns : 0;
    int *rep = calloc((size_t)nruns + 1, sizeof *rep);
    char (*keys)[KEY_MAX] = calloc((size_t)nruns + 1, sizeof *keys);
    const mx_run_record **ok = calloc((size_t)nruns + 1, sizeof *ok);
    s->runs = calloc((size_t)nruns * nruns + 1, sizeof *s->runs);
    s->start = calloc((size_t)nruns + 2, sizeof *s->start);
    if (!rep || !keys || !ok || !s->runs || !s->start) {
        free(rep), free(keys), free(ok), plot_series_free(s);
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
    case F_KVSTORE: /* model and layer use none: nothing to say */
        if (strcmp(r->strategy, "data") == 0) snprintf(b, n, "kv %s", r->kvstore);
        else b[0] = '\0';
        break;
    case F_MICRO: /* the pipeline's settings name model series only */
        if (strcmp(r->strategy, "model") == 0) snprintf(b, n, "m=%d", r->micro_batches);
        else b[0] = '\0';
        break;
    case F_SCHEDULE:
        if (strcmp(r->strategy, "model") == 0) snprintf(b, n, "%s", r->schedule);
        else b[0] = '\0';
        break;
    case F_SERVERS: snprintf(b, n, "%d server%s", r->servers, r->servers == 1 ? "" : "s"); break;
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
    case F_WORKERS: snprintf(b, n, "%d worker%s", r->workers, r->workers == 1 ? "" : "s"); break;
    case F_GPUS: snprintf(b, n, "%d dev", r->gpus); break;
    default: b[0] = '\0';
    }
}

/* Bit f set when field f differs among runs[0..n); the strategy is always named because
 * every figure compares strategies. The device, worker and server counts vary along a series,
 * so they name only runs (with_gpus), never a series. */
unsigned plot_varying_fields(const mx_run_record *const *runs, int n, int with_gpus)
{
    unsigned mask = 1u << F_STRATEGY;
    for (int f = 0; f < F_NFIELDS; f++) {
        if ((f == F_GPUS || f == F_WORKERS || f == F_SERVERS) && !with_gpus) continue;
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
        if (!t[0]) continue; /* a field that does not apply to this run */
        int w = snprintf(b + len, n - len, "%s%s", len ? ", " : "", t);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
    for (char *p = b; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\\') *p = '\'';
}

/* Labels for items whose representative runs are reps[0..n), made unique: a clash (runs
 * differing only in a field not named, e.g. momentum) gets the run id appended. */
void plot_unique_labels(const mx_run_record *const *reps, int n, int with_gpus, char (*labels)[LABEL_MAX])
{
    if (n <= 0) return;
    unsigned mask = plot_varying_fields(reps, n, with_gpus);
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
char (*plot_series_labels(const run_set *s))[LABEL_MAX]
{
    char(*labels)[LABEL_MAX] = calloc((size_t)s->nseries + 1, sizeof *labels);
    const mx_run_record **reps = calloc((size_t)s->nseries + 1, sizeof *reps);
    if (labels && reps) {
        /* named by its last (largest) member: the first may be a one-device run, whose
         * kvstore "none" says nothing of the series */
        for (int i = 0; i < s->nseries; i++) reps[i] = s->runs[s->start[i + 1] - 1];
        plot_unique_labels(reps, s->nseries, 0, labels);
    }
    free(reps);
    if (!labels) mx_error(MX_ENOMEM, "out of memory while plotting");
    return labels;
}

