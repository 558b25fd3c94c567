/* The run record: lifetime (init/free/copy), the canonical configuration keys that match runs
 * across files, and the figures derived from a run's series (see record.h, SCHEMA.md). */
#include "record.h"
#include "base/limits.h"

#include "axes.h"
#include "base/status.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the two figures that kept their names alias their table entries */
_Static_assert(offsetof(mx_run_record, bytes_per_step) ==
                   offsetof(mx_run_record, metrics) + MX_COUNTER_BYTES * sizeof(double),
               "bytes_per_step must alias metrics[MX_COUNTER_BYTES]");
_Static_assert(offsetof(mx_run_record, comm_overlap) ==
                   offsetof(mx_run_record, metrics) + MX_COUNTER_COMM_HIDDEN * sizeof(double),
               "comm_overlap must alias metrics[MX_COUNTER_COMM_HIDDEN]");

#define COPY_STR(dst, s) snprintf((dst), sizeof(dst), "%s", (s))

void mx_record_init(mx_run_record *r)
{
    memset(r, 0, sizeof *r);
    /* Defaults are the CLI's defaults, so a record that a caller fills only partly still
     * produces a meaningful configuration key. */
    COPY_STR(r->strategy, mx_strategy_name(MX_STRATEGY_DATA));
    COPY_STR(r->kvstore, mx_kv_mode_name(MX_KV_NONE));
    COPY_STR(r->compression, mx_gc_name(MX_GC_NONE));
    COPY_STR(r->amp, mx_amp_name(MX_AMP_OFF));
    COPY_STR(r->device_type, "cpu");
    COPY_STR(r->lr_scaling, "none");
    COPY_STR(r->batch_mode, "per-device");
    COPY_STR(r->status, "ok");
    r->throughput = r->throughput_ci_low = r->throughput_ci_high = NAN;
    r->throughput_iqr = r->step_time_median = r->throughput_agg = NAN;
    r->speedup = r->efficiency = NAN;
    r->final_test_acc = r->time_to_acc = NAN;
    r->flops_per_token = r->peak_flops = NAN;
    r->tokens_per_s = r->final_val_loss = r->perplexity = r->time_to_loss = r->mfu = NAN;
    r->wall_time = NAN;
    r->host_others = r->host_load = r->host_steal = NAN;
    for (int i = 0; i < MX_NCOUNTERS; i++) r->metrics[i] = NAN;
    /* the fields added after schema 1 (workers 1, servers 0, ...) take what a file without
     * them meant; nranks 0, ranks NULL and oversubscribed 0 come from the memset */
    for (int i = 0; i < mx_naxes; i++)
        if (!mx_axes[i].in_v1) mx_axis_set(&mx_axes[i], r, mx_axis_absent(&mx_axes[i]));
}

int mx_record_status_known(const char *s)
{
    const size_t n = strlen(s);
    for (const char *p = MX_RECORD_STATUSES; *p;) {
        const char *bar = strchr(p, '|');
        const size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (n && len == n && strncmp(p, s, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

void mx_record_forget_series(mx_run_record *r)
{
    r->step_time = r->phase_time = r->test_acc = r->epoch_time = r->val_loss = NULL;
    r->loss = r->loss_scale = NULL;
    r->ranks = NULL;
    r->devices = NULL;
    r->layers = NULL;
    r->nsteps = r->nloss = r->nepochs = r->nranks = r->ndevices = r->nlayers = 0;
}

void mx_record_free(mx_run_record *r)
{
    free(r->step_time);
    free(r->phase_time);
    free(r->loss);
    free(r->loss_scale);
    free(r->test_acc);
    free(r->epoch_time);
    free(r->val_loss);
    free(r->ranks);
    free(r->devices);
    free(r->layers);
    r->devices = NULL;
    r->layers = NULL;
    r->ndevices = r->nlayers = 0;
    r->step_time = r->phase_time = r->test_acc = r->epoch_time = r->val_loss = NULL;
    r->loss = r->loss_scale = NULL;
    r->ranks = NULL;
    r->nsteps = r->nloss = r->nepochs = r->nranks = 0;
}

/* Duplicates n elements of size sz; NULL stays NULL. Returns 0, or -1 when out of memory. */
static int dup_array(void **dst, const void *src, size_t n, size_t sz)
{
    *dst = NULL;
    if (!src || n == 0) return 0;
    *dst = malloc(n * sz);
    if (!*dst) return -1;
    memcpy(*dst, src, n * sz);
    return 0;
}

int mx_record_copy(mx_run_record *dst, const mx_run_record *src)
{
    *dst = *src;
    int bad = 0;
    bad |= dup_array((void **)&dst->step_time, src->step_time, (size_t)src->nsteps, sizeof(double));
    bad |= dup_array((void **)&dst->phase_time, src->phase_time, (size_t)src->nsteps * MX_NPHASES,
                     sizeof(double));
    bad |= dup_array((void **)&dst->loss, src->loss, (size_t)src->nloss, sizeof(float));
    bad |= dup_array((void **)&dst->loss_scale, src->loss_scale, (size_t)src->nloss, sizeof(float));
    bad |= dup_array((void **)&dst->test_acc, src->test_acc, (size_t)src->nepochs, sizeof(double));
    bad |= dup_array((void **)&dst->epoch_time, src->epoch_time, (size_t)src->nepochs, sizeof(double));
    bad |= dup_array((void **)&dst->val_loss, src->val_loss, (size_t)src->nepochs, sizeof(double));
    bad |=
        dup_array((void **)&dst->ranks, src->ranks, (size_t)(src->nranks > 0 ? src->nranks : 0), sizeof(mx_rank_row));
    bad |= dup_array((void **)&dst->devices, src->devices, (size_t)(src->ndevices > 0 ? src->ndevices : 0),
                     sizeof(mx_device_row));
    bad |= dup_array((void **)&dst->layers, src->layers, (size_t)(src->nlayers > 0 ? src->nlayers : 0),
                     sizeof(mx_layer_row));
    if (bad) {
        mx_record_free(dst);
        return mx_error(MX_ENOMEM, "copying run record '%s': out of memory (%d steps)", src->id,
                        src->nsteps);
    }
    return MX_OK;
}

/* ---- configuration keys */

/* Appends to buf while tracking the position, so a long key is truncated, never overrun. */
typedef struct {
    char *buf;
    size_t n, len;
} key_writer;

static void key_put(key_writer *w, const char *name, const char *val)
{
    if (w->len >= w->n) return;
    int k = snprintf(w->buf + w->len, w->n - w->len, "%s%s=%s", w->len ? ";" : "", name, val);
    if (k > 0) w->len += (size_t)k;
}

/* The fields of the axes table marked for the key, in table order. Numbers as %d and %.6g
 * (%.6g keeps the key stable against the last bits of a double's round trip through text).
 * A field added after schema 1 enters only when it differs from its default, so that the
 * key of every older run, which lacks it, stays what it was. */
static void record_key(const mx_run_record *r, char *buf, size_t n, int series)
{
    if (n == 0) return;
    buf[0] = '\0';
    key_writer w = {buf, n, 0};
    mx_run_record defaults;
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *a = &mx_axes[i];
        if (!a->in_key || (series && !a->in_series)) continue;
        const char *p = (const char *)r + a->off;
        char val[128];
        if (a->type == MX_AXIS_STR) snprintf(val, sizeof val, "%.*s", (int)a->size, p);
        else if (a->type == MX_AXIS_INT) snprintf(val, sizeof val, "%d", *(const int *)p);
        else snprintf(val, sizeof val, "%.6g", *(const double *)p);
        /* a model series at the pipeline's default spans device counts whose micro-batch
         * counts differ (1 on one device, 4 per stage beyond): one series, "auto" */
        if (series && p == (const char *)&r->micro_batches && mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL &&
            r->micro_batches == mx_pipeline_default_micro_batches(r->gpus, r->global_batch))
            snprintf(val, sizeof val, "auto");
        if (!a->in_v1) {
            char def[128];
            mx_axis_set(a, &defaults, mx_axis_absent(a));
            const char *q = (const char *)&defaults + a->off;
            if (a->type == MX_AXIS_STR) snprintf(def, sizeof def, "%.*s", (int)a->size, q);
            else if (a->type == MX_AXIS_INT) snprintf(def, sizeof def, "%d", *(const int *)q);
            else snprintf(def, sizeof def, "%.6g", *(const double *)q);
            if (strcmp(val, def) == 0) continue;
        }
        key_put(&w, a->name, val);
    }
}

/* the series key leaves out gpus, global_batch, workers and servers (they vary along a series:
 * a dist_* row runs a worker per device, and by default as many servers), the kvstore and
 * the compression: a series' one-device member uses neither, so they are matched apart
 * (mx_record_exchange_matches) */
void mx_record_config_key(const mx_run_record *r, char *buf, size_t n) { record_key(r, buf, n, 0); }

void mx_record_series_key(const mx_run_record *r, char *buf, size_t n) { record_key(r, buf, n, 1); }
int mx_record_same_exchange(const mx_run_record *a, const mx_run_record *b)
{
    return strcmp(a->kvstore, b->kvstore) == 0 && strcmp(a->compression, b->compression) == 0;
}

int mx_record_exchange_matches(const mx_run_record *a, const mx_run_record *b)
{
    if (mx_kv_mode_of(a->kvstore) == MX_KV_NONE || mx_kv_mode_of(b->kvstore) == MX_KV_NONE) return 1;
    return mx_record_same_exchange(a, b);
}

/* ---- derived figures */

static void derive_throughput(mx_run_record *r)
{
    r->throughput = r->throughput_ci_low = r->throughput_ci_high = NAN;
    r->throughput_iqr = r->step_time_median = NAN;
    if (r->nsteps <= 0 || !r->step_time) return;
    double *st = malloc((size_t)r->nsteps * sizeof *st);
    double *tp = malloc((size_t)r->nsteps * sizeof *tp);
    int n = 0;
    /* A non-positive or non-finite step time is a timer fault, not a fast step: drop it
     * rather than let it turn into an infinite throughput. */
    for (int i = 0; st && tp && i < r->nsteps; i++) {
        double t = r->step_time[i];
        if (!(t > 0) || !isfinite(t)) continue;
        st[n] = t;
        tp[n++] = r->global_batch > 0 ? r->global_batch / t : NAN;
    }
    if (n > 0) {
        r->step_time_median = mx_stats_median(st, n);
        if (r->global_batch > 0) {
            double q1, q3;
            mx_stats_quartiles(tp, n, &q1, &r->throughput, &q3);
            r->throughput_iqr = q3 - q1;
            mx_stats_median_ci(tp, n, r->repeats, &r->throughput_ci_low, &r->throughput_ci_high);
        }
    }
    free(st);
    free(tp);
}

/* The language model's figures (record.h); NaN where a figure does not apply. */
static void derive_tokens(mx_run_record *r)
{
    r->tokens_per_s = r->final_val_loss = r->perplexity = r->time_to_loss = r->mfu = NAN;
    if (r->tokens_per_sample <= 0) return;
    r->tokens_per_s = r->throughput * r->tokens_per_sample;
    if (r->flops_per_token > 0 && r->peak_flops > 0) r->mfu = r->tokens_per_s * r->flops_per_token / r->peak_flops;
    if (r->nepochs <= 0 || !r->val_loss) return;
    r->final_val_loss = r->val_loss[r->nepochs - 1];
    r->perplexity = exp(r->final_val_loss);
    if (!(r->target_loss > 0) || !r->epoch_time) return;
    for (int e = 0; e < r->nepochs; e++) /* measured at epoch ends, as time_to_acc */
        if (r->val_loss[e] <= r->target_loss) {
            r->time_to_loss = r->epoch_time[e];
            return;
        }
}

static void derive_accuracy(mx_run_record *r)
{
    r->final_test_acc = r->time_to_acc = NAN;
    if (r->nepochs <= 0 || !r->test_acc) return;
    r->final_test_acc = r->test_acc[r->nepochs - 1];
    if (!(r->target_acc > 0) || !r->epoch_time) return;
    /* Accuracy is measured only at epoch ends, so time_to_acc is the end of the first epoch
     * that reaches the target (an upper bound on the true crossing time). */
    for (int e = 0; e < r->nepochs; e++) {
        if (r->test_acc[e] >= r->target_acc) {
            r->time_to_acc = r->epoch_time[e];
            return;
        }
    }
}

void mx_record_derive(mx_run_record *r)
{
    derive_throughput(r);
    derive_accuracy(r);
    derive_tokens(r);
}

static int scalable(const mx_run_record *r)
{
    return strcmp(r->status, "ok") == 0 && r->gpus > 0 && r->throughput > 0 && isfinite(r->throughput);
}

void mx_records_derive_scaling(mx_run_record *recs, int n)
{
    enum { KEY = 1024 };
    char (*keys)[KEY] = n > 0 ? malloc((size_t)n * KEY) : NULL;
    for (int i = 0; i < n; i++) {
        recs[i].speedup = recs[i].efficiency = NAN;
        if (keys) mx_record_series_key(&recs[i], keys[i], KEY);
    }
    if (!keys) return; /* out of memory: the figures stay undefined (NaN) rather than wrong */
    for (int i = 0; i < n; i++) {
        if (!scalable(&recs[i])) continue;
        int ref = -1;
        for (int j = 0; j < n; j++) {
            if (!scalable(&recs[j]) || strcmp(keys[i], keys[j]) != 0 || !mx_record_exchange_matches(&recs[i], &recs[j]))
                continue;
            /* at equal device counts, the run's own kvstore: a dist_* series has a one-device
             * run of its own (one worker) beside the one without kvstore */
            if (ref < 0 || recs[j].gpus < recs[ref].gpus ||
                (recs[j].gpus == recs[ref].gpus && strcmp(recs[j].kvstore, recs[i].kvstore) == 0 &&
                 strcmp(recs[ref].kvstore, recs[i].kvstore) != 0))
                ref = j;
        }
        /* against one device only: a series that starts at more would be its own reference,
         * at 1.0 and 100% on the ideal line, as if it scaled perfectly. Blank instead */
        if (recs[ref].gpus != 1) continue;
        recs[i].speedup = recs[i].throughput / recs[ref].throughput;
        recs[i].efficiency = recs[i].speedup / ((double)recs[i].gpus / recs[ref].gpus);
    }
    free(keys);
}
