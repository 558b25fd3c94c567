/* Data parallelism (MXNet's default): every device holds a full replica, each batch is
 * split over the devices by a work-load list, each device runs forward and backward on its
 * slice and pushes each layer's gradients to the kvstore as soon as backward produces
 * them, then pulls the updated weights. With one device there is no kvstore: the update
 * runs on the device, as MXNet does. Batch norm normalises with each device's own slice.
 *
 * Mixed precision (--amp, engine/core/amp.h) updates on the devices as MXNet's AMP asks
 * (update_on_kvstore off): the store has no updater and pull returns the summed gradient,
 * which every device then checks for inf/NaN, skipping the step or unscaling it and updating
 * its own f32 master weights and momentum. Every device and rank sees the same sum, so
 * their loss scalers take the same decisions without a further exchange.
 *
 * Clipping by the global norm (--clip-norm) runs the same way: the norm is the whole summed
 * gradient's, which only exists once every device's and rank's gradients are reduced, so the
 * store has no updater, and every device sums the squares of the same pulled sum in the same
 * order, takes the same factor and updates its own replica (no exchange of the norm). */
#include "strategy.h"
#include "engine/core/device_marks.h"
#include "cluster/cluster.h"
#include "kvstore/kvstore.h"
#include "device_threads.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/core/backends.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    mx_optim opt;
    const mx_param *params;
} optim_ctx;

typedef struct {
    double loss;
    int correct;
    double t_start, t_fwd_end, t_bwd_end, t_end;
    double dev_phase[3]; /* forward, backward, tail on the device's own clock (GPU events) */
    double loss_scale; /* the scale this step's loss gradient had (1 without fp16 AMP) */
    int skipped;       /* AMP: the summed gradient held inf or NaN, the update was skipped */
} device_result;

struct mx_strategy {
    mx_strategy_config cfg;
    int k;
    mx_backend *be[MX_MAX_DEVICES];
    mx_phase_clock clock[MX_MAX_DEVICES]; /* the phases on each device's queue (GPUs) */
    long steps;                           /* steps run, for the ranges' names */
    mx_net *net[MX_MAX_DEVICES];
    /* optimizer state (momentum, AdamW's moments) next to the weights, where a device updates
     * its own (one device without a kvstore, AMP, or clipping); NULL where the kvstore updates */
    float *mom[MX_MAX_DEVICES];
    int local_update;
    long updates; /* updates applied (AMP's skipped steps not counted): AdamW's t is the next */
    mx_loss_scaler scaler[MX_MAX_DEVICES]; /* AMP: one per device, moved by the same sums */
    mx_kvstore *kv;
    double mem_peak[MX_MAX_DEVICES]; /* the most each device held in any step so far */
    double busy_sum[MX_MAX_DEVICES]; /* seconds each device computed, over busy_steps steps */
    long busy_steps;
    mx_comm *comm; /* the devices' group, which the kvstore moves gradients through */
    mx_comm *world; /* dist_allreduce: every worker rank */
    int *decay;    /* [nparams] dist_*: the servers' weight decay flags */
    optim_ctx upd;
    int workers, worker; /* dist_*: worker ranks, and which this process is (1 and 0 otherwise) */

    /* ---- the step in flight, handed to device threads */
    const float *x;
    const int32_t *y;
    int count[MX_MAX_DEVICES], first[MX_MAX_DEVICES];
    float grad_scale;
    device_result res[MX_MAX_DEVICES];
    int error;
    char errmsg[512]; /* the failing thread's message: mx_last_error is per thread */

    pthread_mutex_t errlock; /* guards error and errmsg */
    mx_device_threads threads;
};

typedef struct {
    mx_strategy *s;
    int dev;
} push_ctx;

/* ---- the work of one device in one step */

static void record_error(mx_strategy *s)
{
    pthread_mutex_lock(&s->errlock);
    if (!s->error) {
        s->error = MX_ERUNTIME;
        snprintf(s->errmsg, sizeof s->errmsg, "%s", mx_last_error());
    }
    pthread_mutex_unlock(&s->errlock);
}

static void push_ready(void *user, int first, int count)
{
    push_ctx *c = user;
    mx_strategy *s = c->s;
    /* Later tensors first (backward order): every device pushes in this one order, which
     * the kvstore's collectives follow on every member. */
    for (int p = first + count - 1; p >= first; p--)
        if (mx_kv_push(s->kv, p, c->dev, s->net[c->dev]->params[p].count) < 0) record_error(s);
}

/* The clipping factor of the summed gradient in g (1 without clipping). Every device holds
 * the same sum (the store's reduction, or one device's own) and sums its squares in the same
 * order, so every replica and rank takes the same factor without an exchange. */
static float clip_factor(mx_strategy *s, mx_net *net)
{
    if (!(s->upd.opt.clip_norm > 0)) return 1.0f;
    return mx_optim_clip_factor(&s->upd.opt, mx_optim_sumsq(net->be, net->params, 0, net->nparams, net->g));
}

/* The device's own update of its weights from the summed gradient in g, clipped to the
 * global norm when asked. AMP: skipped when the sum holds inf or NaN (the scaler halves an
 * fp16 scale), else g is unscaled (then clipped) and the f32 master weights updated, then
 * rounded into the compute copy the layers read. */
static void update_device(mx_strategy *s, int d)
{
    mx_net *net = s->net[d];
    const mx_optim_state st = mx_optim_state_of(&s->upd.opt, s->mom[d], net->nweights);
    if (net->amp == MX_AMP_OFF) {
        mx_optim_update(net->be, &s->upd.opt, net->params, 0, net->nparams, net->w, st, net->g, clip_factor(s, net));
        return;
    }
    const double scale = s->scaler[d].scale;
    s->res[d].skipped = mx_loss_scaler_update(&s->scaler[d], mx_net_grad_nonfinite(net) > 0);
    if (s->res[d].skipped) return;
    if (scale != 1) net->be->ops->scale(net->be, net->nweights, net->g, (float)(1 / scale));
    mx_optim_update_amp(net->be, &s->upd.opt, net->params, 0, net->nparams, net->w_master, st, net->g,
                        clip_factor(s, net), mx_amp_dtype(net->amp), net->w_half, net->w);
}

static void run_device(mx_strategy *s, int d)
{
    mx_net *net = s->net[d];
    mx_backend *be = net->be;
    mx_phase_clock *clock = &s->clock[d];
    device_result *r = &s->res[d];
    const char *tail = s->kv ? (s->local_update ? "pull and update" : "pull") : "update";
    mx_range_set_tag(be, "data d%d step %ld", d, s->steps);
    r->t_start = mx_now();
    mx_phase_clock_mark(clock, 0);
    mx_range_begin(be, "forward");
    const size_t per = mx_shape_size(net->in);
    mx_net_set_batch(net, s->x + (size_t)s->first[d] * per, s->y + (size_t)s->first[d] * net->label_len, s->count[d]);
    mx_net_zero_grad(net);
    mx_net_forward(net, s->count[d], 1);
    r->loss_scale = s->scaler[d].scale;
    r->skipped = 0;
    r->loss = mx_net_loss(net, s->count[d], s->grad_scale * (float)r->loss_scale, &r->correct);
    mx_range_end(be);
    r->t_fwd_end = mx_now();
    mx_phase_clock_mark(clock, 1);
    mx_range_begin(be, "backward");
    push_ctx ctx = {s, d};
    mx_net_backward(net, s->count[d], s->kv ? push_ready : NULL, &ctx);
    mx_phase_clock_mark(clock, 2);
    /* A failed op leaves the backend's sticky error; the step goes on (the kvstore waits for
     * every device's pushes and pulls) and returns it. */
    if (be->ops->sync(be) < 0) record_error(s);
    mx_range_end(be);
    r->t_bwd_end = mx_now();
    mx_range_begin(be, "%s", tail);
    if (s->kv)
        for (int p = 0; p < net->nparams; p++)
            if (mx_kv_pull(s->kv, p, d, net->params[p].count) < 0) record_error(s);
    if (s->local_update) update_device(s, d);
    mx_phase_clock_mark(clock, 3);
    if (be->ops->sync(be) < 0) record_error(s);
    mx_range_end(be);
    r->t_end = mx_now();
    for (int i = 0; i < 3; i++) r->dev_phase[i] = mx_phase_clock_between(clock, i, i + 1);
    /* the timeline's step phases on the device's track (its layers and pushes lie inside) */
    const int track = MX_TRACK_DEVICE(net->be->device);
    mx_trace_event(track, "step", "forward", -1, r->t_start, r->t_fwd_end);
    mx_trace_event(track, "step", "backward", -1, r->t_fwd_end, r->t_bwd_end);
    mx_trace_event(track, "step", tail, -1, r->t_bwd_end, r->t_end);
}

/* Without this, BLAS on this device would use every core and the devices would fight over
 * them. */
static void bind_device(void *user, int d)
{
    mx_strategy *s = user;
    s->be[d]->ops->bind_thread(s->be[d]);
    mx_trace_set_track(MX_TRACK_DEVICE(s->be[d]->device)); /* its comm calls on its track */
}

static void run_device_cb(void *user, int d) { run_device(user, d); }

/* ---- strategy ops */

static void optim_updater(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, mx_optim_state st,
                          const float *g)
{
    const optim_ctx *u = user;
    mx_optim_update_slice(be, &u->opt, &u->params[key], lo, hi, w, st, g, 1.0f);
}

static void data_destroy(mx_strategy *s);

/* This process's devices' slices of a global batch of n: the split of one process with
 * every worker's devices (by the work-load list, or even), of which a dist_* worker takes
 * its own devices' part. */
static int split(const mx_strategy *s, int n, int *count, int *first)
{
    const int all = s->workers * s->k;
    int *counts = malloc(sizeof(int) * all);
    if (!counts) return mx_error(MX_ENOMEM, "out of memory splitting the batch");
    int rc = mx_split_batch(n, all, s->workers > 1 ? NULL : s->cfg.work_load, counts);
    for (int g = 0, at = 0; rc == MX_OK && g < all; at += counts[g], g++) {
        const int d = g - s->worker * s->k;
        if (d >= 0 && d < s->k) count[d] = counts[g], first[d] = at;
    }
    free(counts);
    return rc;
}

static int create_replicas(mx_strategy *s)
{
    const mx_strategy_config *c = &s->cfg;
    const mx_layer_spec *specs = c->specs;
    const int nspecs = c->nspecs;
    if (!specs || nspecs < 1)
        return mx_error(MX_EINVAL, "data strategy: no model given (%d layer specs for workload '%s')", nspecs,
                        c->workload ? c->workload : "?");
    int counts[MX_MAX_DEVICES], first[MX_MAX_DEVICES];
    MX_TRY(split(s, c->max_batch, counts, first));
    for (int d = 0; d < s->k; d++) {
        /* a dist_* worker's devices come after those of the workers before it on its host */
        const int id = (c->cluster ? c->cluster->local_worker * s->k : 0) + d;
        MX_TRY(mx_backend_create(&s->be[d], c->backend ? c->backend : "cpu", id, c->threads_per_device));
        MX_TRY(mx_phase_clock_init(&s->clock[d], s->be[d]));
        /* Room for k more than the even share: a smaller last batch rounds differently. */
        MX_TRY(mx_net_create_amp(&s->net[d], s->be[d], specs, nspecs, c->in, counts[d] + s->k, c->amp));
        mx_loss_scaler_init(&s->scaler[d], c->amp);
        /* The same seed on every replica gives identical initial weights. */
        MX_TRY(mx_net_init_params(s->net[d], c->seed, c->init, mx_init_sigma(c)));
    }
    return MX_OK;
}

static int create_store(mx_strategy *s)
{
    mx_net *n0 = s->net[0];
    s->upd.params = n0->params;
    const int store = s->k > 1 || s->cfg.cluster;
    /* clipping, as AMP, needs the step's whole summed gradient before any update: the store
     * then has no updater and every device updates its own replica */
    s->local_update = !store || s->cfg.amp != MX_AMP_OFF || s->cfg.opt.clip_norm > 0;
    /* the devices run the update where they update (the device kvstore's updater runs on them too) */
    for (int d = 0; d < s->k; d++)
        if (s->local_update || s->cfg.kvstore == MX_KV_DEVICE) MX_TRY(mx_optim_check_backend(&s->cfg.opt, s->be[d]));
    const size_t nstate = (size_t)mx_optim_nstate(&s->cfg.opt) * (n0->nweights ? n0->nweights : 1);
    for (int d = 0; s->local_update && d < s->k; d++)
        if (!(s->mom[d] = s->be[d]->ops->alloc(s->be[d], sizeof(float) * nstate)))
            return mx_error(MX_ENOMEM, "out of memory for the optimizer's state (%zu floats)", nstate);
    if (!store) return MX_OK;
    mx_kv_key *keys = malloc(sizeof *keys * n0->nparams);
    if (!keys) return mx_error(MX_ENOMEM, "out of memory for kvstore keys");
    for (int p = 0; p < n0->nparams; p++) keys[p] = (mx_kv_key){n0->params[p].offset, n0->params[p].count, MX_F32};
    mx_kv_options opt = {.cluster = s->cfg.cluster, .bucket_mb = s->cfg.bucket_mb, .opt = &s->upd.opt,
                         .compression = s->cfg.compression, .gc_threshold = s->cfg.gc_threshold,
                         .gc_topk_ratio = s->cfg.gc_topk_ratio};
    /* device and dist_device_sync reduce among the devices over the communicator: over NCCL
     * where they are GPUs of their own (mx_comm_kind_for_devices), else over the threads
     * communicator's copies (CPU workers, logical devices sharing a GPU); the other modes sum
     * on the host through the backends' copies */
    const char *kind = s->k > 1 && mx_kv_mode_has(s->cfg.kvstore, MX_KV_DEVICE_REDUCE)
                           ? mx_comm_kind_for_devices(s->be, s->k)
                           : "threads";
    int rc = mx_comm_create(&s->comm, kind, s->k);
    if (rc == MX_OK) rc = mx_comm_set_devices(s->comm, s->be);
    if (rc == MX_OK && s->cfg.cluster) {
        s->decay = malloc(sizeof(int) * n0->nparams);
        if (!s->decay) rc = mx_error(MX_ENOMEM, "out of memory for kvstore keys");
        for (int p = 0; rc == MX_OK && p < n0->nparams; p++) s->decay[p] = n0->params[p].decay;
        opt.decay = s->decay;
        if (rc == MX_OK && mx_kv_mode_has(s->cfg.kvstore, MX_KV_COLLECTIVE))
            rc = mx_comm_create(&s->world, "mpi", s->workers);
        opt.world = s->world;
    }
    if (rc == MX_OK) rc = mx_kv_create(&s->kv, s->cfg.kvstore, s->comm, keys, n0->nparams, &opt);
    free(keys);
    MX_TRY(rc);
    for (int d = 0; d < s->k; d++) MX_TRY(mx_kv_bind(s->kv, d, s->be[d], s->net[d]->w, s->net[d]->g));
    /* without an updater pull returns the summed gradient (AMP updates on the devices) */
    if (!s->local_update) mx_kv_set_updater(s->kv, optim_updater, &s->upd);
    return mx_kv_init(s->kv);
}

static int data_create(mx_strategy **out, const mx_strategy_config *cfg)
{
    *out = NULL;
    if (cfg->devices < 1 || cfg->devices > MX_MAX_DEVICES)
        return mx_error(MX_EINVAL, "device count %d: accepted 1..%d", cfg->devices, MX_MAX_DEVICES);
    MX_TRY(mx_amp_check(MX_STRATEGY_DATA, cfg->devices > 1 || cfg->cluster ? cfg->kvstore : MX_KV_NONE, cfg->amp));
    MX_TRY(mx_clip_check(MX_STRATEGY_DATA, cfg->devices > 1 || cfg->cluster ? cfg->kvstore : MX_KV_NONE,
                         cfg->opt.clip_norm));
    mx_strategy *s = calloc(1, sizeof *s);
    if (!s) return mx_error(MX_ENOMEM, "out of memory creating the data strategy");
    s->cfg = *cfg;
    s->k = cfg->devices;
    s->workers = cfg->cluster ? cfg->cluster->nworkers : 1;
    s->worker = cfg->cluster ? cfg->cluster->index : 0;
    s->upd.opt = cfg->opt;
    pthread_mutex_init(&s->errlock, NULL);
    int rc = create_replicas(s);
    if (rc == MX_OK) rc = create_store(s);
    for (int d = 0; rc == MX_OK && d < s->k; d++) mx_backend_mem_reset_peak(s->be[d]);
    if (rc == MX_OK) rc = mx_device_threads_start(&s->threads, s->k, bind_device, run_device_cb, s);
    if (rc < 0) {
        data_destroy(s);
        return rc;
    }
    *out = s;
    return MX_OK;
}

static double momentum_bytes(const mx_strategy *s)
{
    const size_t n = s->net[0]->nweights ? s->net[0]->nweights : 1;
    return sizeof(float) * (double)mx_optim_nstate(&s->cfg.opt) * (double)n;
}

/* Memory per device as the allocator counted it: the replica's parameters and gradients
 * (AMP: with the master and half copies), the optimizer's state where the device updates (one
 * device, AMP or clipping; a kvstore keeps its own in host memory), the saved activations, and the most the
 * device held during the step (activations and workspace on top). */
static void memory_counters(mx_strategy *s, mx_step_stats *st)
{
    double peak = 0, params = 0;
    for (int d = 0; d < s->k; d++) {
        const mx_backend_mem m = mx_backend_mem_get(s->be[d]);
        if (m.peak > peak) peak = (double)m.peak;
        if ((double)m.peak > s->mem_peak[d]) s->mem_peak[d] = (double)m.peak;
        if ((double)mx_net_weight_bytes(s->net[d]) > params) params = (double)mx_net_weight_bytes(s->net[d]);
        mx_backend_mem_reset_peak(s->be[d]);
    }
    st->counter[MX_COUNTER_MEM_PEAK] = peak;
    st->counter[MX_COUNTER_MEM_PARAMS] = params;
    st->counter[MX_COUNTER_MEM_ACT] = (double)s->net[0]->exec->act_bytes; /* the replicas are alike */
    if (s->local_update) st->counter[MX_COUNTER_MEM_OPTIM] = momentum_bytes(s);
}

/* The loss scale and the skip, which every device decided alike from the same summed
 * gradient (a disagreement would part the replicas: it is an error). After a skipped step
 * the error-feedback residuals may hold the overflow: the kvstore drops it. */
static int amp_counters(mx_strategy *s, mx_step_stats *st)
{
    for (int d = 1; d < s->k; d++)
        if (s->res[d].skipped != s->res[0].skipped)
            return mx_error(MX_ERUNTIME, "AMP: device %d %s the step but device 0 %s it: the replicas no longer "
                            "hold the same weights", d, s->res[d].skipped ? "skipped" : "took",
                            s->res[0].skipped ? "skipped" : "took");
    st->counter[MX_COUNTER_LOSS_SCALE] = s->res[0].loss_scale;
    st->counter[MX_COUNTER_SKIPPED] = s->res[0].skipped;
    if (s->res[0].skipped && s->kv) mx_kv_residual_drop_nonfinite(s->kv);
    return MX_OK;
}

/* What crossed between ranks this step, and the all-reduce path's bus bytes (nccl-tests'
 * busbw numerator: the bytes x 2(n-1)/n, over the time moving them). */
static void dist_counters(mx_strategy *s, mx_step_stats *st)
{
    const mx_kv_stats ks = mx_kv_stats_get(s->kv);
    st->counter[MX_COUNTER_NET_BYTES] = ks.net_bytes;
    st->counter[MX_COUNTER_PUSH_TIME] = ks.push_seconds;
    if (!s->world) {
        st->counter[MX_COUNTER_PULL_TIME] = ks.pull_seconds;
        return;
    }
    /* the bus bandwidth of moving the data, once every rank arrived: the wait for a rank
     * still in its backward pass is skew, shown on its own */
    const mx_comm_count k = mx_comm_counts(s->world, s->world->local_first, MX_COMM_ALLREDUCE);
    st->counter[MX_COUNTER_BUS_BYTES] = k.bytes * mx_comm_busbw_factor(MX_COMM_ALLREDUCE, s->world->n);
    st->counter[MX_COUNTER_ALLREDUCE_TIME] = k.seconds - k.wait;
    st->counter[MX_COUNTER_ALLREDUCE_WAIT] = k.wait;
}

/* What the pushes put on the wire, and compression's share of the step: its work after
 * backward, per comm worker (they run side by side), is carved out of the comm tail. */
static void compression_counters(mx_strategy *s, double bwd_end, double end, mx_step_stats *st)
{
    const mx_kv_stats ks = mx_kv_stats_get(s->kv);
    st->counter[MX_COUNTER_WIRE_BYTES] = ks.wire_bytes;
    st->counter[MX_COUNTER_WIRE_RATIO] = ks.wire_bytes;
    st->counter[MX_COUNTER_RAW_BYTES] = ks.raw_bytes;
    if (mx_kv_compression(s->kv) == MX_GC_NONE) return;
    double work, after;
    mx_kv_compression_time(s->kv, bwd_end, &work, &after);
    const double tail = end - bwd_end, mine = after / s->k;
    st->phase[MX_PHASE_COMPRESS] = mine < tail ? mine : tail;
    st->phase[MX_PHASE_COMM] = tail - st->phase[MX_PHASE_COMPRESS];
    st->counter[MX_COUNTER_COMPRESS_WORK] = work;
    st->counter[MX_COUNTER_RESIDUAL_NORM] = mx_kv_residual_norm(s->kv);
}

/* The step's communicator calls in the terms of a ring's alpha-beta-gamma cost (kvstore/calls.c)
 * and the cores the devices ran on, which `mxbench project` fits its model to: CPU workers
 * beyond the cores take turns on them, as devices with their own silicon would not. */
static int comm_call_counters(mx_strategy *s, mx_step_stats *st)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0) st->counter[MX_COUNTER_HOST_CORES] = (double)cores;
    mx_kv_comm_fig f;
    const int calls = s->kv ? mx_kv_comm_figures(s->kv, &f) : 0;
    if (calls <= 0) return calls; /* local and the parameter servers make no collectives */
    st->counter[MX_COUNTER_COMM_ROUNDS] = f.rounds;
    st->counter[MX_COUNTER_COMM_BUS_BYTES] = f.bus_bytes;
    st->counter[MX_COUNTER_COMM_REDUCE_BYTES] = f.reduce_bytes;
    st->counter[MX_COUNTER_COMM_CALL_TIME] = f.seconds;
    st->counter[MX_COUNTER_COMM_ALPHA] = f.alpha;
    st->counter[MX_COUNTER_COMM_BETA] = f.beta;
    st->counter[MX_COUNTER_COMM_GAMMA] = f.gamma;
    return MX_OK;
}

static int data_step(mx_strategy *s, const float *x, const int32_t *y, int n, float lr, mx_step_stats *st)
{
    MX_TRY(split(s, n, s->count, s->first));
    int mine = 0;
    for (int d = 0; d < s->k; d++) {
        mine += s->count[d];
        if (s->count[d] > s->net[d]->max_batch)
            return mx_error(MX_EINVAL, "batch slice %d exceeds the %d the replica was built for", s->count[d],
                            s->net[d]->max_batch);
    }
    s->x = x;
    s->y = y;
    /* the mean over the global batch (summed over every device by the store). dist_async
     * too: a round of every worker's pushes then moves the weights as one dist_sync update
     * would, so the two differ only by staleness at the same lr (MXNet's Module scales an
     * async worker by its own batch instead, making the lr in effect workers times larger) */
    s->grad_scale = 1.0f / n;
    s->upd.opt.lr = lr;
    s->upd.opt.step = s->updates + 1;
    s->error = 0;
    if (s->kv) mx_kv_stats_reset(s->kv);
    /* the pushed gradient is the mean times the loss scale: compressors see the sum */
    if (s->kv) mx_kv_set_grad_scale(s->kv, (float)(n / s->scaler[0].scale));
    if (s->world) mx_comm_counts_reset(s->world, s->world->local_first);
    const double t_dispatch = mx_now();
    mx_device_threads_run(&s->threads);
    if (s->error) return mx_error(MX_ERUNTIME, "the step failed on a device: %s", s->errmsg);

    /* Phases on the wall clock of the step, so that they add up to it: forward until the
     * last device finished its forward (thread hand-off included), backward until the last
     * finished backward, then the exposed tail of communication (or the update with one
     * device, where there is no kvstore). */
    mx_step_stats_clear(st);
    st->samples = mine;
    double fwd_end = 0, bwd_end = 0, end = 0;
    for (int d = 0; d < s->k; d++) {
        const device_result *r = &s->res[d];
        st->loss_sum += r->loss;
        st->correct += r->correct;
        if (r->t_fwd_end > fwd_end) fwd_end = r->t_fwd_end;
        if (r->t_bwd_end > bwd_end) bwd_end = r->t_bwd_end;
        if (r->t_end > end) end = r->t_end;
        s->busy_sum[d] += r->t_bwd_end - r->t_start;
    }
    s->busy_steps++;
    s->steps++;
    const double fwd = fwd_end - t_dispatch, bwd = bwd_end - fwd_end;
    st->phase[MX_PHASE_FORWARD] = fwd;
    st->phase[MX_PHASE_BACKWARD] = bwd;
    st->phase[s->kv ? MX_PHASE_COMM : MX_PHASE_UPDATE] = end - bwd_end;
    /* On GPUs the phases are the device's own times between events on its queue (the
     * slowest device's); the step's wall clock still brackets them. */
    if (s->clock[0].on)
        for (int i = 0; i < 3; i++) {
            double worst = 0;
            for (int d = 0; d < s->k; d++)
                if (s->res[d].dev_phase[i] > worst) worst = s->res[d].dev_phase[i];
            st->phase[i == 0   ? MX_PHASE_FORWARD
                      : i == 1 ? MX_PHASE_BACKWARD
                      : s->kv  ? MX_PHASE_COMM
                               : MX_PHASE_UPDATE] = worst;
        }
    if (s->kv) {
        st->counter[MX_COUNTER_BYTES] = mx_kv_stats_get(s->kv).bytes;
        mx_kv_work_before(s->kv, bwd_end, &st->counter[MX_COUNTER_COMM_WORK], &st->counter[MX_COUNTER_COMM_HIDDEN]);
        compression_counters(s, bwd_end, end, st);
    }
    if (s->cfg.cluster) dist_counters(s, st);
    MX_TRY(comm_call_counters(s, st));
    memory_counters(s, st);
    if (!s->res[0].skipped) s->updates++;
    return s->cfg.amp != MX_AMP_OFF ? amp_counters(s, st) : MX_OK;
}

static int data_evaluate(mx_strategy *s, const float *x, const int32_t *y, int n, double *loss_sum, int *correct)
{
    return mx_net_evaluate(s->net[0], x, y, n, loss_sum, correct);
}

static size_t data_param_count(mx_strategy *s) { return s->net[0]->nweights; }

static int data_get_params(mx_strategy *s, float *host)
{
    mx_net *n0 = s->net[0];
    /* AMP: the master weights, which the rounded compute copy only approximates */
    n0->be->ops->copy(n0->be, host, n0->w_master ? n0->w_master : n0->w, sizeof(float) * n0->nweights, MX_COPY_D2H);
    return MX_OK;
}

static double data_flops(mx_strategy *s) { return mx_net_flops(s->net[0]); }

/* Each replica's memory (the peak since the last step's reading is what the step counters
 * already took; this is the whole run's, so the allocator is read again, not reset). */
static int data_detail(mx_strategy *s, mx_strategy_detail *out)
{
    const mx_net *n0 = s->net[0];
    out->ndevices = s->k;
    out->nlayers = 0; /* a replica moves whole gradients, not per layer: the kvstore's figures say it */
    for (int d = 0; d < s->k; d++) {
        mx_device_detail *x = &out->dev[d];
        *x = (mx_device_detail){.first = 0, .last = n0->nlayers, .bubble = NAN, .mem_optim = NAN,
                                .bytes_sent = NAN};
        x->mem_params = (double)mx_net_weight_bytes(s->net[d]);
        x->mem_peak = s->mem_peak[d];
        x->busy = s->busy_steps ? s->busy_sum[d] / (double)s->busy_steps : NAN;
        if (s->mom[d]) x->mem_optim = momentum_bytes(s);
    }
    return MX_OK;
}

static void data_destroy(mx_strategy *s)
{
    if (!s) return;
    mx_device_threads_stop(&s->threads);
    mx_kv_destroy(s->kv);
    mx_comm_destroy(s->comm);
    mx_comm_destroy(s->world);
    free(s->decay);
    for (int d = 0; d < s->k; d++) {
        if (s->mom[d]) s->be[d]->ops->free(s->be[d], s->mom[d]);
        mx_net_destroy(s->net[d]);
        if (s->be[d]) mx_phase_clock_free(&s->clock[d]);
        mx_backend_destroy(s->be[d]);
    }
    pthread_mutex_destroy(&s->errlock);
    free(s);
}

const mx_strategy_ops mx_strategy_data = {
    .kind = MX_STRATEGY_DATA,
    .summary = "replicas on every device, batch split by a work-load list, gradients through a kvstore",
    .create = data_create,
    .step = data_step,
    .evaluate = data_evaluate,
    .param_count = data_param_count,
    .get_params = data_get_params,
    .flops_per_sample = data_flops,
    .detail = data_detail,
    .destroy = data_destroy,
};
