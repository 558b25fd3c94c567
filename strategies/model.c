/* Model parallelism (a pipeline, as GPipe and PipeDream): the top-level layers are cut into k
 * contiguous stages, one per device (partition.h); each step's batch is split into m
 * micro-batches that flow forward through the stages and back, activations and their
 * gradients sent between neighbours over the communicator, in the order of the schedule
 * (pipeline_schedule.h). Gradients accumulate over the micro-batches and every stage updates
 * its own parameters once per batch: no kvstore. A tensor tied across stages (a GPT's head
 * reading its token embedding) is held by both, its copies' gradients added before the
 * update (model_tied.c). Batch norm normalises each micro-batch (as GPipe does). The bubble,
 * memory per device and bytes between stages are measured. */
#include "model.h"
#include "device_threads.h"
#include "partition.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mx_strategy {
    mx_strategy_config cfg;
    int k, m;
    mx_pp_schedule sched;
    int cut[MX_MAX_DEVICES + 1]; /* stage r holds layers [cut[r], cut[r+1]) */
    model_stage st[MX_MAX_DEVICES];
    mx_comm *comm;
    double sumsq[MX_MAX_DEVICES]; /* clipping: each stage's squared gradient norm (model_stage.c) */
    size_t nweights;             /* the whole model's floats, in the one-device layout */
    model_tie *ties;             /* [nties]: tensors held by several stages (model_tied.c) */
    int nties;
    /* ---- over the steps, for detail */
    double idle_sum[MX_MAX_DEVICES], window_sum, mem_peak[MX_MAX_DEVICES];
    double act_sum[MX_MAX_DEVICES], grad_sum[MX_MAX_DEVICES]; /* bytes each stage sent forward, back */
    double tied_sum[MX_MAX_DEVICES]; /* bytes each stage sent adding tied tensors' gradients */
    long steps;
    /* ---- the step in flight, handed to the stage threads */
    model_step sp;
    int *count, *off;            /* [m] */
    mx_device_threads threads;   /* a thread per stage */
};

static void bind_stage(void *user, int r)
{
    mx_strategy *s = user;
    s->st[r].be->ops->bind_thread(s->st[r].be);
    mx_trace_set_track(MX_TRACK_DEVICE(s->st[r].be->device)); /* its sends and receives on its track */
}

static void run_stage(void *user, int r)
{
    mx_strategy *s = user;
    mx_model_stage_run(&s->st[r], &s->sp);
}

static void model_destroy(mx_strategy *s);

/* The cut: as the user wrote it, or balanced by each layer's measured time at the micro-batch
 * size (its FLOPs where the profile cannot run), on the first stage's kind of device. */
static int choose_cut(mx_strategy *s, int micro_cap)
{
    const mx_strategy_config *c = &s->cfg;
    if (c->partition && strcmp(c->partition, "auto") != 0)
        return mx_partition_parse(c->partition, c->nspecs, s->k, s->cut);
    if (s->k == 1) {
        s->cut[0] = 0, s->cut[1] = c->nspecs;
        return MX_OK;
    }
    double cost[MX_MAX_LAYERS];
    mx_backend *be;
    MX_TRY(mx_backend_create(&be, c->backend ? c->backend : "cpu", 0, c->threads_per_device));
    be->ops->bind_thread(be);
    int rc = mx_partition_costs(be, c->specs, c->nspecs, c->in, micro_cap, 3, cost);
    if (rc < 0) rc = mx_partition_costs(be, c->specs, c->nspecs, c->in, micro_cap, 0, cost);
    mx_backend_destroy(be);
    MX_TRY(rc);
    return mx_partition_balance(cost, c->nspecs, s->k, s->cut);
}

/* The largest micro-batch of any batch of up to max_batch samples split into m by
 * mx_split_batch (round(n/m) each, the last the rest): every context is built for it, and
 * no larger, since each of the micro-batches a stage holds keeps that much. */
static int micro_cap(int max_batch, int m)
{
    int cap = 1;
    for (int n = m; n <= max_batch; n++) {
        const long each = lround((double)n / m), last = n - (m - 1) * each;
        const long big = each > last ? each : last;
        if (big > cap) cap = (int)big;
    }
    return cap;
}

static int model_create(mx_strategy **out, const mx_strategy_config *cfg)
{
    *out = NULL;
    if (cfg->devices < 1 || cfg->devices > MX_MAX_DEVICES)
        return mx_error(MX_EINVAL, "device count %d: accepted 1..%d", cfg->devices, MX_MAX_DEVICES);
    MX_TRY(mx_model_check(cfg));
    mx_strategy *s = calloc(1, sizeof *s);
    if (!s) return mx_error(MX_ENOMEM, "out of memory creating the model strategy");
    s->cfg = *cfg;
    s->k = cfg->devices;
    s->m = mx_pipeline_micro_batches(cfg->micro_batches, s->k, cfg->max_batch);
    const int cap = micro_cap(cfg->max_batch, s->m);
    int rc = mx_pp_schedule_parse(mx_pipeline_schedule(cfg->schedule), &s->sched);
    if (rc == MX_OK && !((s->count = calloc(s->m, sizeof(int))) && (s->off = calloc(s->m, sizeof(int)))))
        rc = mx_error(MX_ENOMEM, "out of memory for %d micro-batches", s->m);
    if (rc == MX_OK) rc = choose_cut(s, cap);
    for (int r = 0; rc == MX_OK && r < s->k; r++)
        rc = mx_model_stage_create(&s->st[r], cfg, r, s->k, s->cut[r], s->cut[r + 1], cap, s->m, s->sched, r);
    if (rc == MX_OK) rc = mx_model_ties_plan(s->st, s->k, &s->ties, &s->nties);
    if (rc == MX_OK) rc = mx_comm_create(&s->comm, "threads", s->k);
    if (rc == MX_OK) rc = mx_device_threads_start(&s->threads, s->k, bind_stage, run_stage, s);
    if (rc < 0) {
        model_destroy(s);
        return rc;
    }
    const mx_params *last = s->st[s->k - 1].ps;
    s->nweights = 0;
    for (int p = 0; p < last->nparams; p++) s->nweights += (last->params[p].count + 15) / 16 * 16;
    *out = s;
    return MX_OK;
}

/* Stage r's idle share of the step window (from dispatch to the last backward anywhere),
 * bytes it sent, and the memory it held; the step's counters from all of them. */
static void step_counters(mx_strategy *s, double t0, double bwd_end, int m, mx_step_stats *st)
{
    const double window = bwd_end - t0;
    double bubble = 0, peak = 0, params = 0, optim = 0, sent = 0;
    int held = 0;
    for (int r = 0; r < s->k; r++) {
        model_stage *g = &s->st[r];
        const double idle = window > g->busy ? window - g->busy : 0;
        bubble += window > 0 ? idle / window : 0;
        s->idle_sum[r] += idle;
        s->act_sum[r] += g->sent_act;
        s->grad_sum[r] += g->sent_grad;
        s->tied_sum[r] += g->sent_tied;
        sent += g->sent_act + g->sent_grad + g->sent_tied;
        const mx_backend_mem mem = mx_backend_mem_get(g->be);
        if ((double)mem.peak > s->mem_peak[r]) s->mem_peak[r] = (double)mem.peak;
        mx_backend_mem_reset_peak(g->be);
        peak = fmax(peak, (double)mem.peak);
        params = fmax(params, g->mem_params);
        optim = fmax(optim, g->mem_optim);
        if (g->held_max > held) held = g->held_max;
    }
    s->window_sum += window;
    s->steps++;
    st->counter[MX_COUNTER_BUBBLE] = bubble / s->k;
    st->counter[MX_COUNTER_BUBBLE_THEORY] = (s->k - 1.0) / (m + s->k - 1.0);
    st->counter[MX_COUNTER_STAGE_BYTES] = sent;
    st->counter[MX_COUNTER_INFLIGHT_MAX] = held;
    st->counter[MX_COUNTER_MEM_PEAK] = peak;
    st->counter[MX_COUNTER_MEM_PARAMS] = params;
    st->counter[MX_COUNTER_MEM_OPTIM] = optim;
}

static int model_step_run(mx_strategy *s, const float *x, const int32_t *y, int n, float lr, mx_step_stats *st)
{
    if (n < 1) return mx_error(MX_EINVAL, "a batch of %d samples: accepted 1 or more", n);
    /* a batch smaller than the micro-batch count (an epoch's last) runs as micro-batches of one */
    const int m = n < s->m ? n : s->m;
    MX_TRY(mx_split_batch(n, m, NULL, s->count));
    for (int i = 0, at = 0; i < m; at += s->count[i], i++) {
        s->off[i] = at;
        if (s->count[i] > s->st[0].micro_cap)
            return mx_error(MX_EINVAL, "micro-batch of %d exceeds the %d the stages were built for", s->count[i],
                            s->st[0].micro_cap);
    }
    s->sp = (model_step){.comm = s->comm, .x = x, .y = y, .count = s->count, .off = s->off,
                         .grad_scale = 1.0f / n, .opt = s->cfg.opt, .sumsq = s->sumsq};
    s->sp.opt.lr = lr;
    s->sp.ties = s->ties, s->sp.nties = s->nties, s->sp.m = m;
    const double t0 = mx_now();
    mx_device_threads_run(&s->threads);
    for (int r = 0; r < s->k; r++)
        if (s->st[r].error)
            return mx_error(MX_ERUNTIME, "the step failed on pipeline stage %d (layers [%d, %d)): %s", r,
                            s->st[r].first, s->st[r].last, s->st[r].errmsg);

    /* Phases on the step's wall clock: forward until the last forward on any stage, backward
     * until the last backward, update the rest (each stage updates as soon as it is done). */
    mx_step_stats_clear(st);
    double fwd_end = t0, bwd_end = t0, end = t0;
    for (int r = 0; r < s->k; r++) {
        fwd_end = fmax(fwd_end, s->st[r].t_fwd_end);
        bwd_end = fmax(bwd_end, s->st[r].t_bwd_end);
        end = fmax(end, s->st[r].t_end);
    }
    st->phase[MX_PHASE_FORWARD] = fwd_end - t0;
    st->phase[MX_PHASE_BACKWARD] = bwd_end - fwd_end;
    st->phase[MX_PHASE_UPDATE] = end - bwd_end;
    st->loss_sum = s->st[s->k - 1].loss;
    st->correct = s->st[s->k - 1].correct;
    st->samples = n;
    step_counters(s, t0, bwd_end, m, st);
    return MX_OK;
}

/* Evaluation mode through the stages in turn on the caller's thread, each micro-batch-sized
 * piece handed from stage to stage by a peer copy (a memory copy between CPU workers). */
static int model_evaluate(mx_strategy *s, const float *x, const int32_t *y, int n, double *loss_sum, int *correct)
{
    const size_t per = mx_shape_size(s->cfg.in), L = (size_t)s->st[s->k - 1].ctx[0]->label_len;
    const int cap = s->st[0].micro_cap;
    *loss_sum = 0;
    *correct = 0;
    for (size_t i = 0; i < (size_t)n * L; i++)
        if (y[i] < 0 || y[i] >= s->cfg.nclasses)
            return mx_error(MX_EFORMAT, "evaluation: label %d of sample %zu is out of range; accepted 0..%d",
                            (int)y[i], i / L, s->cfg.nclasses - 1);
    for (int at = 0; at < n; at += cap) {
        const int nb = n - at < cap ? n - at : cap;
        const float *h = NULL;
        for (int r = 0; r < s->k; r++) {
            model_stage *g = &s->st[r];
            mx_exec *e = g->ctx[0];
            if (r == 0) mx_exec_set_batch(e, x + (size_t)at * per, NULL, nb);
            else g->be->ops->copy_peer(g->be, g->inbuf[0], s->st[r - 1].be, h, sizeof(float) * nb * g->in_size);
            h = mx_exec_forward(e, r == 0 ? NULL : g->inbuf[0], nb, 0);
        }
        model_stage *l = &s->st[s->k - 1];
        mx_exec_set_batch(l->ctx[0], NULL, y + (size_t)at * L, nb);
        int hits = 0;
        /* a sample's loss is the mean over its rows, as in training (mx_exec_loss) */
        *loss_sum += l->be->ops->softmax_eval(l->be, nb * (int)L, s->cfg.nclasses, &hits, h, l->ctx[0]->labels) /
                     (double)L;
        *correct += hits;
    }
    for (int r = 0; r < s->k; r++) MX_TRY(s->st[r].be->ops->sync(s->st[r].be));
    return MX_OK;
}

int mx_model_tied_diff(mx_strategy *s, int *copies, double *diff)
{
    return mx_model_ties_compare(s->st, s->ties, s->nties, copies, diff);
}

static size_t model_param_count(mx_strategy *s) { return s->nweights; }

/* Every stage's tensors are contiguous and 16-float aligned as in the one-device layout, so a
 * stage's held tensors are the slice of that layout from its first tensor's offset (its
 * replicas, after them, are copies of other stages' tensors). */
static int model_get_params(mx_strategy *s, float *host)
{
    size_t at = 0;
    for (int r = 0; r < s->k; r++) {
        const mx_params *ps = s->st[r].ps;
        s->st[r].be->ops->copy(s->st[r].be, host + at, ps->w, sizeof(float) * ps->nheld, MX_COPY_D2H);
        at += ps->nheld;
    }
    return at == s->nweights ? MX_OK : mx_error(MX_ERUNTIME, "the stages hold %zu weights, the model %zu", at,
                                                 s->nweights);
}

static double model_flops(mx_strategy *s) { return mx_params_flops(s->st[0].ps, 0, s->cfg.nspecs); }

static int model_detail(mx_strategy *s, mx_strategy_detail *out)
{
    out->ndevices = s->k;
    out->nlayers = s->cfg.nspecs;
    const double steps = s->steps > 0 ? (double)s->steps : NAN;
    for (int i = 0; i < out->nlayers; i++) out->layer_bytes[i] = 0;
    for (int r = 0; r < s->k; r++) {
        const model_stage *g = &s->st[r];
        out->dev[r] = (mx_device_detail){.first = g->first, .last = g->last,
                                         .bubble = s->window_sum > 0 ? s->idle_sum[r] / s->window_sum : NAN,
                                         .mem_params = g->mem_params, .mem_optim = g->mem_optim,
                                         .mem_peak = s->mem_peak[r],
                                         .bytes_sent = (s->act_sum[r] + s->grad_sum[r] + s->tied_sum[r]) / steps,
                                         .held_max = g->held_max,
                                         .busy = (s->window_sum - s->idle_sum[r]) / steps};
        /* what crosses the boundary after a stage: its activations forward, their gradients
         * sent back by the next stage */
        if (r < s->k - 1) out->layer_bytes[g->last - 1] = (s->act_sum[r] + s->grad_sum[r + 1]) / steps;
    }
    return MX_OK;
}

static void model_destroy(mx_strategy *s)
{
    if (!s) return;
    mx_device_threads_stop(&s->threads);
    mx_comm_destroy(s->comm);
    mx_model_ties_destroy(s->st, s->k, s->ties);
    for (int r = 0; r < s->k; r++) mx_model_stage_destroy(&s->st[r]);
    free(s->count);
    free(s->off);
    free(s);
}

const mx_strategy_ops mx_strategy_model = {
    .kind = MX_STRATEGY_MODEL,
    .summary = "pipeline: contiguous stages of layers, one per device, micro-batches under gpipe or 1f1b",
    .check = mx_model_check,
    .create = model_create,
    .step = model_step_run,
    .evaluate = model_evaluate,
    .param_count = model_param_count,
    .get_params = model_get_params,
    .flops_per_sample = model_flops,
    .detail = model_detail,
    .destroy = model_destroy,
};
