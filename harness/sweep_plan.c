/* Sweep planning (see sweep_plan.h). What this build cannot run is decided here, once, so
 * the results file says why a row is missing instead of silently dropping it. */
#include "sweep_plan.h"
#include "base/status.h"
#include "kvstore/compressor.h"
#include "kvstore/kvstore.h"
#include "strategies/strategy.h"
#include "workloads/workloads.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double mx_sweep_scaled_lr(double base_lr, const char *rule, int global_batch, int first_global_batch)
{
    const double k = (double)global_batch / first_global_batch;
    if (strcmp(rule, "linear") == 0) return base_lr * k;
    if (strcmp(rule, "sqrt") == 0) return base_lr * sqrt(k);
    return base_lr;
}

int mx_sweep_axis_index(const char *name)
{
    const mx_axis *a = mx_axis_find(name);
    assert(a && "mx_sweep_axis_index: no such entry in mx_axes");
    return (int)(a - mx_axes);
}

static int global_batch(const char *batch_mode, int batch, int gpus)
{
    return strcmp(batch_mode, "global") == 0 ? batch : batch * gpus;
}

/* For the axes whose every value the CLI knows but not every one is built yet: NULL where this
 * build runs the row's value, else the values it runs (for the message). An axis with values
 * still to come gets a line here. */
static const char *built_strategies(const mx_run_record *r)
{
    return mx_strategy_find(mx_strategy_of(r->strategy)) ? NULL : mx_strategy_names();
}
static const char *built_kvstores(const mx_run_record *r)
{
    const mx_kv_mode m = mx_kv_mode_of(r->kvstore);
    /* model and layer rows, and one-device rows of one process, use none */
    if (mx_strategy_of(r->strategy) != MX_STRATEGY_DATA || (r->gpus <= 1 && !mx_kv_mode_has(m, MX_KV_DIST)))
        return NULL;
    return mx_kv_mode_built(m) ? NULL : mx_kv_modes();
}
static const char *built_compressions(const mx_run_record *r)
{
    return mx_compressor_built(mx_gc_of(r->compression)) ? NULL : mx_compressor_names();
}

static const struct {
    const char *field, *noun;
    const char *(*built)(const mx_run_record *r);
} builds[] = {
    {"strategy", "strategy", built_strategies},
    {"kvstore", "kvstore", built_kvstores},
    {"compression", "gradient compression", built_compressions},
};

/* What the strategy itself refuses (more stages than layers, more shards than channels, a
 * partition that does not cover the model), in its own words. The layer list does not depend
 * on the data set's image size, and every data set mxbench reads has 10 classes. */
static const char *strategy_refuses(const mx_run_record *r, char *buf, size_t n)
{
    const mx_workload *w = mx_workload_find(r->workload);
    if (!w) return NULL;
    mx_layer_spec specs[MX_MAX_LAYERS];
    const mx_shape in = {1, 28, 28};
    const mx_strategy_config sc = {
        .workload = r->workload, .specs = specs, .nspecs = w->build(specs, in, 10), .in = in, .nclasses = 10,
        .devices = r->gpus, .max_batch = r->global_batch, .partition = r->partition,
        .micro_batches = r->micro_batches, .schedule = r->schedule};
    if (mx_strategy_check(mx_strategy_of(r->strategy), &sc) == MX_OK) return NULL;
    snprintf(buf, n, "%s", mx_last_error());
    return buf;
}

/* Why this combination cannot run in this build, or NULL. */
static const char *skip_reason(const mx_run_record *r, char *buf, size_t n)
{
    const mx_kv_mode kv = mx_kv_mode_of(r->kvstore);
    for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++) {
        const mx_axis *a = mx_axis_find(builds[i].field);
        const char *v = (const char *)r + a->off, *ok = builds[i].built(r);
        if (ok && builds[i].built == built_kvstores && mx_kv_mode_has(kv, MX_KV_DIST)) {
            snprintf(buf, n, "kvstore '%s' needs MPI, and this build has none (available: %s; apt-get install "
                     "libopenmpi-dev openmpi-bin and rebuild)", v, ok);
            return buf;
        }
        if (ok) {
            snprintf(buf, n, "%s '%s' is not implemented in this build (available: %s)", builds[i].noun, v, ok);
            return buf;
        }
    }
    if (mx_amp_check(mx_strategy_of(r->strategy), kv, mx_amp_of(r->amp)) < 0 ||
        mx_clip_check(mx_strategy_of(r->strategy), kv, r->clip_norm) < 0) {
        snprintf(buf, n, "%s", mx_last_error());
        return buf;
    }
    if (mx_kv_compression_check(kv, mx_gc_of(r->compression)) < 0) {
        snprintf(buf, n, "%s", mx_last_error());
        return buf;
    }
    if (r->global_batch < r->gpus) {
        snprintf(buf, n, "global batch %d is smaller than the device count %d", r->global_batch, r->gpus);
        return buf;
    }
    if (mx_kv_mode_has(kv, MX_KV_DIST) && r->global_batch % r->gpus != 0) {
        snprintf(buf, n, "global batch %d does not split evenly over %d workers (a dist_* row runs one worker per "
                 "device, each on global batch / workers)", r->global_batch, r->gpus);
        return buf;
    }
    return strategy_refuses(r, buf, n);
}

/* The configuration keys of the rows planned so far, in an open-addressing hash table: a
 * plan of MX_SWEEP_MAX_ROWS rows would take minutes comparing every row with every earlier
 * one key by key. */
enum { KEY = 1024 };
typedef struct {
    char (*keys)[KEY];
    int *slot;   /* index into keys, -1 empty */
    size_t nslots;
    int n;
} key_set;

static unsigned long long key_hash(const char *s)
{
    unsigned long long h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* 1 when the set already holds r's configuration (one-device rows of several kvstores), else
 * adds it and returns 0. */
static int planned_before(key_set *ks, const mx_run_record *r)
{
    char *key = ks->keys[ks->n];
    mx_record_config_key(r, key, KEY);
    size_t i = (size_t)(key_hash(key) % ks->nslots);
    for (; ks->slot[i] >= 0; i = (i + 1) % ks->nslots)
        if (strcmp(ks->keys[ks->slot[i]], key) == 0) return 1;
    ks->slot[i] = ks->n++;
    return 0;
}

/* The fields that follow from others: the rules of a sweep, not of any one axis. */
static void derive(const mx_sweep_axes *ax, mx_run_record *r)
{
    /* one device uses no kvstore (as MXNet): the row is the first point of every kvstore's
     * series, planned once. A dist_* row is an MPI job of one worker per device, one device
     * included, plus its servers */
    /* the pipeline's settings belong to model rows, and a kvstore to data rows: the other
     * strategies' rows hold the defaults, so that each such configuration is planned once */
    const mx_strategy_kind strategy = mx_strategy_of(r->strategy);
    const mx_kv_mode kv = mx_kv_mode_of(r->kvstore);
    if (strategy != MX_STRATEGY_MODEL) {
        r->micro_batches = 1;
        snprintf(r->schedule, sizeof r->schedule, "gpipe");
        snprintf(r->partition, sizeof r->partition, "auto");
    }
    if (strategy != MX_STRATEGY_DATA) {
        snprintf(r->kvstore, sizeof r->kvstore, "%s", mx_kv_mode_name(MX_KV_NONE));
    } else if (mx_kv_mode_has(kv, MX_KV_DIST)) {
        r->workers = r->gpus;
        r->servers = !mx_kv_mode_has(kv, MX_KV_SERVERS) ? 0 : ax->servers > 0 ? ax->servers : r->gpus;
        if (ax->dist_threads > 0) r->threads_per_device = ax->dist_threads;
    } else if (r->gpus <= 1) {
        snprintf(r->kvstore, sizeof r->kvstore, "%s", mx_kv_mode_name(MX_KV_NONE));
    }
    /* a row with no kvstore compresses nothing (one device: the first point of every
     * compressor's series); a compressor's settings belong to its own rows */
    if (mx_kv_mode_of(r->kvstore) == MX_KV_NONE)
        snprintf(r->compression, sizeof r->compression, "%s", mx_gc_name(MX_GC_NONE));
    const mx_gc_kind gc = mx_gc_of(r->compression);
    if (gc != MX_GC_2BIT) r->gc_threshold = MX_GC_THRESHOLD_DEFAULT;
    if (gc != MX_GC_TOPK) r->gc_topk_ratio = MX_GC_TOPK_RATIO_DEFAULT;
    r->global_batch = global_batch(r->batch_mode, r->batch, r->gpus);
    /* a model row without the pipeline's axes gets the pipeline's own defaults (4
     * micro-batches per stage, 1f1b), resolved here so that the row says what it runs */
    if (strategy == MX_STRATEGY_MODEL) {
        if (ax->n[mx_sweep_axis_index("micro_batches")] <= 0)
            r->micro_batches = mx_pipeline_micro_batches(0, r->gpus, r->global_batch);
        if (ax->n[mx_sweep_axis_index("schedule")] <= 0)
            snprintf(r->schedule, sizeof r->schedule, "%s", mx_pipeline_schedule(NULL));
    }
    const int first_gpus = atoi(ax->text[mx_sweep_axis_index("gpus")][0]);
    r->lr = mx_sweep_scaled_lr(r->base_lr, r->lr_scaling, r->global_batch,
                               global_batch(r->batch_mode, r->batch, first_gpus));
}

int mx_sweep_plan(const mx_sweep_axes *ax, mx_run_record **runs, int *n)
{
    /* the list axes by rank: outer loops first, the last one varies fastest */
    int order[MX_AXES_MAX], nloop = 0;
    long total = 1;
    double product = 1; /* for the message: the exact count may not fit a long */
    char lists[512] = "";
    for (int i = 0; i < mx_naxes; i++) {
        if (mx_axes[i].loop <= 0 || ax->n[i] <= 0) continue;
        int j = nloop++;
        for (; j > 0 && mx_axes[order[j - 1]].loop > mx_axes[i].loop; j--) order[j] = order[j - 1];
        order[j] = i;
        product *= ax->n[i];
        if (ax->n[i] > 1) {
            const size_t len = strlen(lists);
            snprintf(lists + len, sizeof lists - len, "%s%d %s", len ? " x " : "", ax->n[i],
                     mx_axes[i].option ? mx_axes[i].option : mx_axes[i].name);
        }
        /* checked before multiplying: the bound, not the arithmetic, ends a huge plan */
        if (total <= MX_SWEEP_MAX_ROWS) total = total > MX_SWEEP_MAX_ROWS / ax->n[i] ? MX_SWEEP_MAX_ROWS + 1L
                                                                                      : total * ax->n[i];
    }
    /* refused before anything is allocated or planned (a product of long axes reaches
     * billions of rows: gigabytes, and minutes even for --dry-run) */
    if (total > MX_SWEEP_MAX_ROWS)
        return mx_error(MX_EINVAL, "the axes make %.0f rows (%s); a sweep plans at most %d rows: shorten the lists, "
                        "or split the study into several sweeps (--resume adds to one file)", product, lists,
                        MX_SWEEP_MAX_ROWS);
    const size_t cap = (size_t)(total ? total : 1);
    mx_run_record *out = calloc(cap, sizeof *out);
    key_set ks = {malloc(cap * KEY), malloc(2 * cap * sizeof(int)), 2 * cap, 0};
    if (!out || !ks.keys || !ks.slot) {
        free(out), free(ks.keys), free(ks.slot);
        return mx_error(MX_ENOMEM, "out of memory planning %ld runs", total);
    }
    for (size_t i = 0; i < ks.nslots; i++) ks.slot[i] = -1;
    int idx[MX_AXES_MAX] = {0}, k = 0;
    char why[256];
    for (long row = 0; row < total; row++) {
        mx_run_record *r = &out[k++];
        mx_record_init(r);
        for (int i = 0; i < mx_naxes; i++) {
            const mx_axis *a = &mx_axes[i];
            if (ax->n[i] > 0) mx_axis_set(a, r, ax->text[i][a->loop > 0 ? idx[i] : 0]);
            else if (!a->option) mx_axis_set(a, r, a->def); /* derived; set below */
        }
        derive(ax, r);
        if (skip_reason(r, why, sizeof why)) {
            snprintf(r->status, sizeof r->status, "skipped");
            snprintf(r->reason, sizeof r->reason, "%s", why);
        }
        if (planned_before(&ks, r)) mx_record_free(r), k--;
        for (int j = nloop - 1; j >= 0; j--) {
            if (++idx[order[j]] < ax->n[order[j]]) break;
            idx[order[j]] = 0;
        }
    }
    free(ks.keys);
    free(ks.slot);
    *runs = out;
    *n = k;
    return MX_OK;
}
