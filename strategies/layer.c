/* Layer (tensor, Megatron-style) parallelism: every convolution's output channels and every
 * dense layer's units are split over the devices, and every device sees the whole batch.
 * How the model is cut and where the collectives go is the plan (layer_plan.c); each device
 * runs its part of it (layer_run.c) on its own thread (device 0 on the caller's), computes
 * the loss on the gathered logits (the same on every device), and updates its own shards.
 * Each device is a backend of its own with its own threads, as in the data strategy. */
#include "strategy.h"
#include "comm/comm.h"
#include "layer_plan.h"
#include "device_threads.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/core/backends.h"
#include "engine/core/exec.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JOB_STEP, JOB_EVAL };

typedef struct {
    double loss;
    int correct;
    double t_fwd_end, t_bwd_end, t_end;
} device_result;

struct mx_strategy {
    mx_strategy_config cfg;
    int k, nclasses;
    int label_len; /* rows scored per sample: 1, or a sequence's T (mx_loss_rows) */
    mx_backend *be[MX_MAX_DEVICES];
    mx_comm *comm;
    mx_tp_plan *plan;
    mx_tp_dev *dev[MX_MAX_DEVICES];
    int32_t *labels[MX_MAX_DEVICES]; /* device: the batch's labels [max_batch][label_len] */
    float *dlogits[MX_MAX_DEVICES];  /* device: the loss's gradient [max_batch][label_len][classes] */

    /* what the steps measured so far, for detail */
    long steps;
    double mem_peak[MX_MAX_DEVICES];
    double bytes_sent[MX_MAX_DEVICES];     /* summed over the steps */
    double layer_bytes[MX_MAX_LAYERS];     /* summed over devices and steps */

    /* ---- the job in flight, handed to device threads */
    int job;
    const float *x;
    const int32_t *y;
    int n;
    mx_optim opt;
    double sumsq[MX_MAX_DEVICES]; /* clipping: each device's share of the squared norm (mx_tp_update) */
    device_result res[MX_MAX_DEVICES];
    int error;
    char errmsg[512]; /* the failing thread's message: mx_last_error is per thread */

    pthread_mutex_t errlock; /* guards error and errmsg */
    mx_device_threads threads;
};

/* ---- the work of one device */

static void record_error(mx_strategy *s, int d)
{
    pthread_mutex_lock(&s->errlock);
    if (!s->error) {
        s->error = MX_ERUNTIME;
        snprintf(s->errmsg, sizeof s->errmsg, "device %d: %s", d, mx_last_error());
    }
    pthread_mutex_unlock(&s->errlock);
}

static void set_batch(mx_strategy *s, int d, const float *x, const int32_t *y, int n)
{
    mx_backend *be = s->be[d];
    be->ops->copy(be, mx_tp_input(s->dev[d]), x, sizeof(float) * n * mx_shape_size(s->cfg.in), MX_COPY_H2D);
    be->ops->copy(be, s->labels[d], y, sizeof(int32_t) * n * s->label_len, MX_COPY_H2D);
}

/* One training step: the whole batch on every device; every device computes the loss on
 * the whole logits (replicated), over each sample's rows (a sequence's positions), its
 * gradient scaled by 1/(n rows) for the batch's mean of the samples' mean over their rows, as
 * mx_exec_loss does; backward takes each device's shard of it. A collective that fails
 * fails on every member, so every device stops at the same step of the plan. */
static void run_step(mx_strategy *s, int d)
{
    mx_tp_dev *dev = s->dev[d];
    mx_backend *be = s->be[d];
    device_result *r = &s->res[d];
    const float *logits;
    set_batch(s, d, s->x, s->y, s->n);
    mx_tp_zero_grad(dev);
    if (mx_tp_forward(dev, s->n, 1, &logits) < 0) {
        record_error(s, d);
        return;
    }
    const int L = s->label_len;
    r->loss = be->ops->softmax_xent(be, s->n * L, s->nclasses, s->dlogits[d], &r->correct, logits, s->labels[d],
                                    1.0f / s->n / L) /
              L;
    r->t_fwd_end = mx_now();
    if (mx_tp_backward(dev, s->n, s->dlogits[d], NULL) < 0) {
        record_error(s, d);
        return;
    }
    if (be->ops->sync(be) < 0) record_error(s, d);
    r->t_bwd_end = mx_now();
    if (mx_tp_update(dev, &s->opt, s->sumsq) < 0) record_error(s, d);
    if (be->ops->sync(be) < 0) record_error(s, d);
    r->t_end = mx_now();
}

/* Evaluation over n samples in batches of the built capacity; device 0 scores the logits. */
static void run_eval(mx_strategy *s, int d)
{
    mx_backend *be = s->be[d];
    device_result *r = &s->res[d];
    r->loss = 0;
    r->correct = 0;
    for (int at = 0; at < s->n; at += s->cfg.max_batch) {
        const int m = s->n - at < s->cfg.max_batch ? s->n - at : s->cfg.max_batch;
        const float *logits;
        set_batch(s, d, s->x + (size_t)at * mx_shape_size(s->cfg.in), s->y + (size_t)at * s->label_len, m);
        if (mx_tp_forward(s->dev[d], m, 0, &logits) < 0) {
            record_error(s, d);
            return;
        }
        if (d == 0) {
            int c = 0;
            r->loss += be->ops->softmax_eval(be, m * s->label_len, s->nclasses, &c, logits, s->labels[d]) /
                       s->label_len;
            r->correct += c;
        }
    }
    if (be->ops->sync(be) < 0) record_error(s, d);
}

static void run_device(mx_strategy *s, int d)
{
    if (s->job == JOB_STEP)
        run_step(s, d);
    else
        run_eval(s, d);
}

static void bind_device(void *user, int d)
{
    mx_strategy *s = user;
    s->be[d]->ops->bind_thread(s->be[d]); /* its own cores and BLAS threads */
    mx_trace_set_track(MX_TRACK_DEVICE(s->be[d]->device)); /* its collectives on its track */
}

static void run_device_cb(void *user, int d) { run_device(user, d); }

/* Runs the job on every device (device 0 here) and waits for all. */
static int run_all(mx_strategy *s, int job)
{
    s->job = job;
    s->error = 0;
    mx_device_threads_run(&s->threads);
    if (s->error) return mx_error(MX_ERUNTIME, "the step failed on %s", s->errmsg);
    return MX_OK;
}

/* ---- strategy ops */

static int layer_check(const mx_strategy_config *cfg)
{
    if (cfg->devices < 1 || cfg->devices > MX_MAX_DEVICES)
        return mx_error(MX_EINVAL, "layer strategy: device count %d; accepted 1..%d", cfg->devices, MX_MAX_DEVICES);
    if (cfg->max_batch < 1)
        return mx_error(MX_EINVAL, "layer strategy: batch %d; accepted 1..%d", cfg->max_batch, MX_MAX_BATCH);
    if (!cfg->specs || cfg->nspecs < 1)
        return mx_error(MX_EINVAL, "layer strategy: no model given (%d layer specs for workload '%s')", cfg->nspecs,
                        cfg->workload ? cfg->workload : "?");
    return mx_layer_check(cfg);
}

static void layer_destroy(mx_strategy *s);

static int create_devices(mx_strategy *s)
{
    const mx_strategy_config *c = &s->cfg;
    for (int d = 0; d < s->k; d++)
        MX_TRY(mx_backend_create(&s->be[d], c->backend ? c->backend : "cpu", d, c->threads_per_device));
    MX_TRY(mx_comm_create(&s->comm, "threads", s->k));
    mx_comm_set_devices(s->comm, s->be);
    MX_TRY(mx_tp_plan_create(&s->plan, s->be[0], c->specs, c->nspecs, c->in, s->k, 1, 0));
    s->plan->init_sigma = mx_init_sigma(c);
    MX_TRY(mx_loss_rows(s->plan->tensors[s->plan->out].shape, &s->nclasses, &s->label_len));
    if (s->nclasses != c->nclasses)
        return mx_error(MX_EINVAL, "layer strategy: %s scores %d classes, the data set has %d",
                        c->workload ? c->workload : "the model", s->nclasses, c->nclasses);
    for (int d = 0; d < s->k; d++) {
        MX_TRY(mx_tp_dev_create(&s->dev[d], s->plan, d, s->be[d], s->comm, c->max_batch, c->seed, c->init,
                                &c->opt));
        const size_t rows = (size_t)c->max_batch * s->label_len;
        s->labels[d] = s->be[d]->ops->alloc(s->be[d], sizeof(int32_t) * rows);
        s->dlogits[d] = s->be[d]->ops->alloc(s->be[d], sizeof(float) * rows * s->nclasses);
        if (!s->labels[d] || !s->dlogits[d]) return mx_error(MX_ENOMEM, "out of device memory for the loss");
    }
    return MX_OK;
}

static int layer_create(mx_strategy **out, const mx_strategy_config *cfg)
{
    *out = NULL;
    MX_TRY(layer_check(cfg));
    mx_strategy *s = calloc(1, sizeof *s);
    if (!s) return mx_error(MX_ENOMEM, "out of memory creating the layer strategy");
    s->cfg = *cfg;
    s->k = cfg->devices;
    pthread_mutex_init(&s->errlock, NULL);
    int rc = create_devices(s);
    for (int d = 0; rc == MX_OK && d < s->k; d++) mx_backend_mem_reset_peak(s->be[d]);
    if (rc == MX_OK) rc = mx_device_threads_start(&s->threads, s->k, bind_device, run_device_cb, s);
    if (rc < 0) {
        layer_destroy(s);
        return rc;
    }
    *out = s;
    return MX_OK;
}

/* Bytes the collectives moved this step: count x element size per call and member, as the
 * comm counts them (TP_BYTES, the sum over devices), and per device what a ring sends of
 * it (nccl-tests' bus factor: all-gather and reduce-scatter (k-1)/k, all-reduce 2(k-1)/k). */
static void comm_counters(mx_strategy *s, mx_step_stats *st)
{
    double total = 0;
    /* one device: the plan's collectives are copies within the device; nothing moves */
    const int moves = s->k > 1;
    for (int d = 0; moves && d < s->k; d++) {
        for (int v = 0; v < MX_COMM_NVERBS; v++) {
            const mx_comm_count c = mx_comm_counts(s->comm, d, (mx_comm_verb)v);
            total += c.bytes;
            s->bytes_sent[d] += c.bytes * mx_comm_busbw_factor((mx_comm_verb)v, s->k);
        }
        const mx_tp_dev_stats *ds = mx_tp_stats(s->dev[d]);
        for (int l = 0; l < s->plan->nlayers && l < MX_MAX_LAYERS; l++) s->layer_bytes[l] += ds->layer_bytes[l];
    }
    st->counter[MX_COUNTER_TP_BYTES] = total;
}

/* Memory per device as the allocator counted it (the device holding most): its shards and
 * their gradients, the optimizer's state, and the most held during the step. */
static void memory_counters(mx_strategy *s, mx_step_stats *st)
{
    double peak = 0, params = 0, optim = 0;
    for (int d = 0; d < s->k; d++) {
        const mx_backend_mem m = mx_backend_mem_get(s->be[d]);
        const mx_tp_dev_stats *ds = mx_tp_stats(s->dev[d]);
        if ((double)m.peak > peak) peak = (double)m.peak;
        if ((double)m.peak > s->mem_peak[d]) s->mem_peak[d] = (double)m.peak;
        if (ds->mem_params > params) params = ds->mem_params;
        if (ds->mem_optim > optim) optim = ds->mem_optim;
        mx_backend_mem_reset_peak(s->be[d]);
    }
    st->counter[MX_COUNTER_MEM_PEAK] = peak;
    st->counter[MX_COUNTER_MEM_PARAMS] = params;
    st->counter[MX_COUNTER_MEM_OPTIM] = optim;
}

static int layer_step(mx_strategy *s, const float *x, const int32_t *y, int n, float lr, mx_step_stats *st)
{
    if (n < 1 || n > s->cfg.max_batch)
        return mx_error(MX_EINVAL, "layer strategy: batch %d; accepted 1..%d (the batch it was built for)", n,
                        s->cfg.max_batch);
    s->x = x;
    s->y = y;
    s->n = n;
    s->opt = s->cfg.opt;
    s->opt.lr = lr;
    for (int d = 0; d < s->k; d++) {
        mx_comm_counts_reset(s->comm, d);
        mx_tp_stats_reset(s->dev[d]);
    }
    const double t_dispatch = mx_now();
    MX_TRY(run_all(s, JOB_STEP));

    /* Phases on the step's wall clock, so that they add up to it: until the last device
     * finished its forward (and loss), its backward, its update. */
    mx_step_stats_clear(st);
    st->samples = n;
    st->loss_sum = s->res[0].loss; /* every device computed the same loss: count it once */
    st->correct = s->res[0].correct;
    double fwd_end = 0, bwd_end = 0, end = 0;
    for (int d = 0; d < s->k; d++) {
        const device_result *r = &s->res[d];
        if (r->t_fwd_end > fwd_end) fwd_end = r->t_fwd_end;
        if (r->t_bwd_end > bwd_end) bwd_end = r->t_bwd_end;
        if (r->t_end > end) end = r->t_end;
    }
    st->phase[MX_PHASE_FORWARD] = fwd_end - t_dispatch;
    st->phase[MX_PHASE_BACKWARD] = bwd_end - fwd_end;
    st->phase[MX_PHASE_UPDATE] = end - bwd_end;
    comm_counters(s, st);
    memory_counters(s, st);
    s->steps++;
    return MX_OK;
}

static int layer_evaluate(mx_strategy *s, const float *x, const int32_t *y, int n, double *loss_sum, int *correct)
{
    s->x = x;
    s->y = y;
    s->n = n;
    MX_TRY(run_all(s, JOB_EVAL));
    *loss_sum = s->res[0].loss;
    *correct = s->res[0].correct;
    return MX_OK;
}

static size_t layer_param_count(mx_strategy *s) { return s->plan->nweights; }

/* The whole model in the one-device layout, assembled from every device's shards; the
 * replicated tensors (device 0's) checked against every other device's copy, which the same
 * gradients must have kept bit for bit the same. */
static int layer_get_params(mx_strategy *s, float *host)
{
    memset(host, 0, sizeof(float) * s->plan->nweights); /* the alignment gaps, as a net's zeros */
    for (int d = 0; d < s->k; d++) MX_TRY(mx_tp_get_params(s->dev[d], host, 0));
    for (int d = 1; d < s->k; d++) MX_TRY(mx_tp_check_replicas(s->dev[d], host));
    return MX_OK;
}

static double layer_flops(mx_strategy *s) { return s->plan->flops; }

static int layer_detail(mx_strategy *s, mx_strategy_detail *out)
{
    out->ndevices = s->k;
    out->nlayers = s->plan->nlayers < MX_MAX_LAYERS ? s->plan->nlayers : MX_MAX_LAYERS;
    for (int d = 0; d < s->k; d++) {
        const mx_tp_dev_stats *ds = mx_tp_stats(s->dev[d]);
        out->dev[d] = (mx_device_detail){.first = 0, .last = s->plan->nlayers, .bubble = NAN,
                                         .mem_params = ds->mem_params, .mem_optim = ds->mem_optim,
                                         .mem_peak = s->steps ? s->mem_peak[d] : NAN,
                                         .bytes_sent = s->steps ? s->bytes_sent[d] / s->steps : NAN, .busy = NAN};
    }
    for (int l = 0; l < out->nlayers; l++) out->layer_bytes[l] = s->steps ? s->layer_bytes[l] / s->steps : NAN;
    return MX_OK;
}

static void layer_destroy(mx_strategy *s)
{
    if (!s) return;
    mx_device_threads_stop(&s->threads);
    for (int d = 0; d < s->k; d++) {
        mx_tp_dev_destroy(s->dev[d]);
        if (s->be[d] && s->labels[d]) s->be[d]->ops->free(s->be[d], s->labels[d]);
        if (s->be[d] && s->dlogits[d]) s->be[d]->ops->free(s->be[d], s->dlogits[d]);
    }
    mx_tp_plan_destroy(s->plan);
    mx_comm_destroy(s->comm);
    for (int d = 0; d < s->k; d++) mx_backend_destroy(s->be[d]);
    pthread_mutex_destroy(&s->errlock);
    free(s);
}

const mx_strategy_ops mx_strategy_layer = {
    .kind = MX_STRATEGY_LAYER,
    .summary = "tensor parallelism: channels and units split over the devices (Megatron pairs for dense layers), "
               "the whole batch on every device",
    .check = layer_check,
    .create = layer_create,
    .step = layer_step,
    .evaluate = layer_evaluate,
    .param_count = layer_param_count,
    .get_params = layer_get_params,
    .flops_per_sample = layer_flops,
    .detail = layer_detail,
    .destroy = layer_destroy,
};
