/* The training loop (see trainer.h). Timing: a step is timed from batch assembly to the
 * last device's pull; leading warmup steps of each repeat are left out of the series. */
#include "trainer.h"
#include "loss_watch.h"
#include "train_data.h"
#include "peak.h"
#include "workloads/gpt.h"
#include "param_table.h"
#include "hostload.h"
#include "engine/core/trace.h"
#include "harness/trainer_hook.h"
#include "base/limits.h"
#include "opts.h"
#include "cluster/cluster.h"
#include "kvstore/kvstore.h"
#include "engine/core/rng.h"
#include "base/status.h"
#include "base/timer.h"
#include "results/store.h"
#include "workloads/dataset.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *mx_train_init(const mx_train_config *c)
{
    const mx_workload *w = mx_workload_find(c->workload);
    return c->init ? c->init : w && w->lm ? "normal" : "xavier";
}

void mx_train_config_defaults(mx_train_config *c)
{
    memset(c, 0, sizeof *c);
    c->workload = "lenet";
    c->dataset = "fashion-mnist";
    c->strategy = MX_STRATEGY_DATA;
    c->kvstore = MX_KV_DEVICE;
    c->devices = 1;
    c->threads_per_device = 1;
    c->batch = 128;
    c->epochs = 1;
    c->repeats = 1;
    c->seed = 1;
    c->lr = 0.05;
    c->momentum = 0.9;
    c->wd = 0.0001;
    c->optimizer = MX_OPTIM_SGD;
    c->beta1 = 0.9; /* PyTorch's AdamW defaults */
    c->beta2 = 0.999;
    c->eps = 1e-8;
    c->init = NULL; /* the workload's: mx_train_init */
    c->lr_schedule = "cosine";
    c->compression = MX_GC_NONE;
    c->amp = MX_AMP_OFF;
    c->trace_steps = 5;
    c->gc_threshold = MX_GC_THRESHOLD_DEFAULT;
    c->gc_topk_ratio = MX_GC_TOPK_RATIO_DEFAULT;
}

/* Samples per step over every worker: a dist_* worker's --batch is its own share. */
static int global_batch(const mx_train_config *c) { return c->cluster ? c->batch * c->cluster->nworkers : c->batch; }
static int workers(const mx_train_config *c) { return c->cluster ? c->cluster->nworkers : 1; }

/* Batches per epoch: a trailing batch too small to give every device (of every worker) a
 * sample is left out, as such a slice could not be trained. */
static int steps_per_epoch(const mx_train_config *c, int n_train)
{
    const int B = global_batch(c), rem = n_train % B;
    return n_train / B + (rem >= c->devices * workers(c) ? 1 : 0);
}

static void fill_record_config(const mx_train_config *c, const mx_train_data *ds, mx_run_record *rec)
{
    snprintf(rec->workload, sizeof rec->workload, "%s", c->workload);
    const mx_workload *wl = mx_workload_find(c->workload);
    const int synthetic = strcmp(c->dataset, "synthetic") == 0;
    snprintf(rec->dataset, sizeof rec->dataset, "%s",
             wl && wl->lm && !synthetic ? mx_train_text_path(c)
             : strcmp(c->dataset, "idx") == 0 && c->data_dir ? c->data_dir : c->dataset);
    snprintf(rec->strategy, sizeof rec->strategy, "%s", mx_strategy_name(c->strategy));
    /* one device uses no kvstore (as MXNet): recorded as such, so that `--kvstore local,device`
     * cannot make two different-looking one-device rows of one configuration */
    const int kv = c->strategy == MX_STRATEGY_DATA && (c->devices > 1 || c->cluster); /* model, layer: none */
    snprintf(rec->kvstore, sizeof rec->kvstore, "%s", mx_kv_mode_name(kv ? c->kvstore : MX_KV_NONE));
    /* a pipeline's resolved defaults; other strategies hold one micro-batch, gpipe (a step) */
    const int pipe = c->strategy == MX_STRATEGY_MODEL;
    rec->micro_batches = pipe ? mx_pipeline_micro_batches(c->micro_batches, c->devices, global_batch(c)) : 1;
    snprintf(rec->schedule, sizeof rec->schedule, "%s", pipe ? mx_pipeline_schedule(c->schedule) : "gpipe");
    snprintf(rec->partition, sizeof rec->partition, "%s", c->partition ? c->partition : "auto");
    /* what a one-device run or a strategy without a kvstore compresses: nothing */
    snprintf(rec->compression, sizeof rec->compression, "%s", mx_gc_name(kv ? c->compression : MX_GC_NONE));
    rec->gc_threshold = kv && c->compression == MX_GC_2BIT ? c->gc_threshold : MX_GC_THRESHOLD_DEFAULT;
    rec->gc_topk_ratio = kv && c->compression == MX_GC_TOPK ? c->gc_topk_ratio : MX_GC_TOPK_RATIO_DEFAULT;
    snprintf(rec->amp, sizeof rec->amp, "%s", mx_amp_name(c->amp));
    /* what the backend says it is, not what was asked for (auto) */
    const mx_backend_ops *be = mx_backend_find(c->backend ? c->backend : "cpu");
    snprintf(rec->device_type, sizeof rec->device_type, "%s", be ? be->device_type : "?");
    /* asked of the machine that trains, at run time: the same binary may emulate elsewhere */
    if (c->amp != MX_AMP_OFF)
        snprintf(rec->amp_kernels, sizeof rec->amp_kernels, "%s", be ? be->amp_kernels(mx_amp_dtype(c->amp)) : "?");
    rec->gpus = c->devices * workers(c);
    rec->workers = workers(c);
    rec->servers = c->cluster ? c->cluster->nservers : 0;
    rec->global_batch = global_batch(c);
    rec->batch = global_batch(c); /* read as the global batch (batch_mode) */
    snprintf(rec->batch_mode, sizeof rec->batch_mode, "global");
    rec->base_lr = c->lr;
    rec->lr = c->lr;
    rec->momentum = c->momentum;
    rec->wd = c->wd;
    /* AdamW's settings on AdamW rows; an SGD row holds their defaults (it has no such choice) */
    snprintf(rec->optimizer, sizeof rec->optimizer, "%s", mx_optim_name(c->optimizer));
    const int adamw = c->optimizer == MX_OPTIM_ADAMW;
    rec->beta1 = adamw ? c->beta1 : 0.9;
    rec->beta2 = adamw ? c->beta2 : 0.999;
    rec->eps = adamw ? c->eps : 1e-8;
    rec->clip_norm = c->clip_norm;
    rec->warmup_epochs = c->warmup_epochs;
    snprintf(rec->lr_schedule, sizeof rec->lr_schedule, "%s", c->lr_schedule);
    rec->epochs = c->epochs;
    rec->steps = c->steps;
    rec->warmup_steps = c->warmup_steps;
    rec->repeats = c->repeats;
    rec->seed = c->seed;
    rec->threads_per_device = c->threads_per_device;
    rec->target_acc = c->target_acc;
    rec->target_loss = c->target_loss;
    rec->test_samples = ds->test.n;
    /* a language model's tokens, FLOPs per token and the peak its devices offer (for MFU) */
    if (wl && wl->lm) {
        rec->tokens_per_sample = ds->train.label_len;
        rec->flops_per_token = mx_gpt_train_flops_per_token(wl->lm, ds->train.nclasses);
        rec->peak_flops = mx_peak_flops(c->backend, c->devices, c->threads_per_device, c->amp, rec->peak_source,
                                        sizeof rec->peak_source);
    }
}

/* Growable series of the record. */
static int reserve(mx_run_record *rec, mx_amp amp, int steps_total, int epochs_total)
{
    /* a language model's held-out loss after every epoch */
    if (rec->tokens_per_sample > 0 && !(rec->val_loss = calloc(epochs_total ? epochs_total : 1, sizeof(double))))
        return mx_error(MX_ENOMEM, "out of memory for the run's series");
    rec->step_time = calloc(steps_total ? steps_total : 1, sizeof(double));
    rec->phase_time = calloc((size_t)(steps_total ? steps_total : 1) * MX_NPHASES, sizeof(double));
    rec->loss = calloc(steps_total ? steps_total : 1, sizeof(float));
    rec->test_acc = calloc(epochs_total ? epochs_total : 1, sizeof(double));
    rec->epoch_time = calloc(epochs_total ? epochs_total : 1, sizeof(double));
    /* fp16 AMP: the loss scale of every step, beside its loss */
    if (amp == MX_AMP_FP16 && !(rec->loss_scale = calloc(steps_total ? steps_total : 1, sizeof(float))))
        return mx_error(MX_ENOMEM, "out of memory for the run's series");
    if (!rec->step_time || !rec->phase_time || !rec->loss || !rec->test_acc || !rec->epoch_time)
        return mx_error(MX_ENOMEM, "out of memory for the run's series");
    return MX_OK;
}


typedef struct {
    const mx_train_config *c;
    const mx_train_data *ds;
    const mx_strategy_ops *ops;
    mx_strategy *s;
    float *bx;
    int32_t *by; /* [batch][label_len] */
    int32_t *order;
    mx_run_record *rec;
    int repeat;
    mx_counter_acc counters;           /* every counter of the timed steps (results/metrics.h) */
    long skipped;                      /* AMP: steps skipped for inf/NaN gradients, every step counted */
    double timed_samples, timed_time; /* for throughput_agg: real batch sizes, same times as step_time */
    mx_loss_watch watch;
    int diverged;                      /* the growth rule or a non-finite loss fired (reason set) */
    int loss_noted;                    /* synthetic data: a rising loss said once, as a note */
    double progress_every;             /* seconds between progress lines */
    mx_host_watch host;                /* the host beside the run: read about once a second */
    mx_lr_plan lr_plan;                /* the lr at each step: warmup, then the schedule */
} run_state;

static mx_trainer_step_hook step_hook; /* NULL in mxbench (trainer_hook.h) */

void mx_trainer_set_step_hook(mx_trainer_step_hook fn) { step_hook = fn; }

/* What run_step returns when the loss turned non-finite: the run stops there. */
#define STEP_NONFINITE 1

static void gather_batch(run_state *st, int from, int n)
{
    const mx_dataset *d = &st->ds->train;
    const size_t per = (size_t)d->c * d->h * d->w;
    for (int i = 0; i < n; i++) {
        const int j = st->order[from + i];
        const size_t L = (size_t)d->label_len;
        memcpy(st->bx + (size_t)i * per, d->images + (size_t)j * per, sizeof(float) * per);
        memcpy(st->by + i * L, d->labels + (size_t)j * L, sizeof(int32_t) * L);
    }
}

/* Test accuracy into *acc; a failed evaluation (bad labels, a device error) fails the run. */
static int evaluate(run_state *st, double *acc, double *mean_loss)
{
    double loss;
    int correct;
    MX_TRY(st->ops->evaluate(st->s, st->ds->test.images, st->ds->test.labels, st->ds->test.n, &loss, &correct));
    *acc = (double)correct / ((double)st->ds->test.n * st->ds->test.label_len); /* of the rows (tokens) */
    *mean_loss = loss / st->ds->test.n;
    return MX_OK;
}

/* Marks the run diverged (the first time only: the first sign is the one to report) and,
 * when the run goes on, says so on stderr at once. step is 0-based; messages count from 1 like the progress. */
static void mark_diverged(run_state *st, int step, double loss, const char *why)
{
    if (st->diverged) return;
    st->diverged = 1;
    mx_run_record *rec = st->rec;
    char where[64] = "";
    if (st->repeat) snprintf(where, sizeof where, " of repeat %d", st->repeat + 1);
    snprintf(rec->reason, sizeof rec->reason, "loss %.4g at step %d%s: %s", loss, step + 1, where, why);
    if (!isfinite(loss)) return; /* the run stops now, and the caller reports why */
    if (st->c->cluster && st->c->cluster->index != 0) return; /* worker 0 speaks for the job */
    fprintf(stderr, "mxbench: warning: training diverged: %s; the run goes on and will be recorded as diverged\n",
            rec->reason);
    fflush(stderr);
}

/* One step at global position `step`; records it unless it is a warmup step. Returns
 * STEP_NONFINITE (after recording the step) when the loss is NaN or inf. */
static int run_step(run_state *st, int step, int from, int n, double epoch_pos, double *train_time,
                    mx_step_stats *ss)
{
    const mx_train_config *c = st->c;
    mx_run_record *rec = st->rec;
    const int traced =
        c->trace && st->repeat == 0 && step >= c->warmup_steps && step < c->warmup_steps + c->trace_steps;
    if (traced && step == c->warmup_steps) mx_trace_start(mx_now());
    const double t0 = mx_now();
    gather_batch(st, from, n);
    const double t_data = mx_now() - t0;
    const float lr = mx_lr_at(&st->lr_plan, epoch_pos);
    mx_step_stats_clear(ss); /* what a strategy does not measure stays "not measured" */
    MX_TRY(st->ops->step(st->s, st->bx, st->by, n, lr, ss));
    if (step_hook) step_hook(t0);
    const double dt = mx_now() - t0;
    *train_time += dt;
    if (traced) { /* the trainer's track: the batch, then the whole step */
        mx_trace_event(MX_TRACK_TRAINER, "step", "data", -1, t0, t0 + t_data);
        mx_trace_event(MX_TRACK_TRAINER, "step", "step", step, t0, t0 + dt);
    }
    if (traced && step == c->warmup_steps + c->trace_steps - 1) mx_trace_stop();
    /* a dist_* worker knows the loss of its own slice only */
    const double loss = ss->loss_sum / (ss->samples > 0 ? ss->samples : n);
    if (st->repeat == 0) {
        if (rec->loss_scale) rec->loss_scale[rec->nloss] = (float)ss->counter[MX_COUNTER_LOSS_SCALE];
        rec->loss[rec->nloss++] = (float)loss; /* a non-finite one too: the evidence */
    }
    if (ss->counter[MX_COUNTER_SKIPPED] > 0) st->skipped++;
    if (step >= c->warmup_steps) {
        ss->phase[MX_PHASE_DATA] = t_data;
        rec->step_time[rec->nsteps] = dt;
        memcpy(rec->phase_time + (size_t)rec->nsteps * MX_NPHASES, ss->phase, sizeof ss->phase);
        rec->nsteps++;
        st->timed_samples += n;
        st->timed_time += dt;
        mx_counter_acc_add(&st->counters, ss->counter);
    }
    if (!isfinite(loss)) {
        /* A dist_* worker sees its own slice only: one that stopped alone would leave the
         * others waiting for its pushes, so every worker runs to the end (worker 0 records) */
        mark_diverged(st, step, loss, c->cluster ? "the loss is not finite (rule: a NaN or inf loss stops the run; an "
                      "MPI job's workers run on to the end together)" : "the loss is not finite (rule: a NaN or inf "
                      "loss stops the run)");
        return c->cluster ? MX_OK : STEP_NONFINITE;
    }
    double first, last;
    if (!st->diverged && mx_loss_watch_add(&st->watch, loss, &first, &last)) {
        char why[320];
        if (mx_loss_watch_judge(&st->watch, first, last, strcmp(st->c->dataset, "synthetic") == 0, step + 1, why,
                                sizeof why))
            mark_diverged(st, step, loss, why);
        else if (!st->loss_noted++ && !(st->c->cluster && st->c->cluster->index != 0))
            fprintf(stderr, "mxbench: note: %s\n", why);
    }
    return MX_OK;
}

/* samples: the whole job's (every dist_* worker's), as the summary's aggregate counts them */
static void log_epoch(run_state *st, int epoch, double loss, double acc, double vloss, double secs, long samples)
{
    if (!st->c->log) return;
    if (st->rec->tokens_per_sample > 0) /* a language model: the held-out loss says more than token accuracy */
        fprintf(st->c->log, "epoch %d/%d  train loss %.4f  val loss %.4f (perplexity %.2f)  token acc %.4f  %.0f "
                "tokens/s  %.1f s\n", epoch + 1, st->c->epochs, loss, vloss, exp(vloss), acc,
                samples * (double)st->rec->tokens_per_sample / secs, secs);
    else
        fprintf(st->c->log, "epoch %d/%d  train loss %.4f  test acc %.4f  %.0f samples/s  %.1f s\n", epoch + 1,
                st->c->epochs, loss, acc, samples / secs, secs);
    fflush(st->c->log);
}

/* Long epochs (resnet18 on CPU) say how they are doing every PROGRESS_EVERY seconds
 * (MXBENCH_PROGRESS_SECONDS overrides it: the tests use 0, a line per step), unless
 * --log-interval asked for lines at a chosen rhythm instead. Against the length asked for:
 * with --steps the steps run so far of those asked (an epoch of synthetic data is longer). */
#define PROGRESS_EVERY 10.0

static double progress_every(void)
{
    const char *e = getenv("MXBENCH_PROGRESS_SECONDS");
    char *end;
    const double v = e ? strtod(e, &end) : 0;
    return e && end != e && *end == '\0' && v >= 0 ? v : PROGRESS_EVERY;
}

static void log_progress(run_state *st, int epoch, int step, int step_in_epoch, int per_epoch, double loss,
                         double speed, double *last)
{
    const mx_train_config *c = st->c;
    const double now = mx_now();
    if (!c->log || c->log_interval > 0 || now - *last < st->progress_every) return;
    *last = now;
    if (c->steps) fprintf(c->log, "  step %d/%d", step + 1, c->steps);
    else fprintf(c->log, "  epoch %d step %d/%d", epoch + 1, step_in_epoch, per_epoch);
    fprintf(c->log, "  loss %.4f  %.0f samples/s", loss, speed);
    if (st->host.others_last > 0) /* said as it happens: the figures so far are already suspect */
        fprintf(c->log, "  host busy: %d thread(s) of other programs ready to run", st->host.others_last);
    fputc('\n', c->log);
    fflush(c->log);
}

/* Training figures over a span of batches (an interval of --log-interval, or an epoch). */
typedef struct {
    int batches, samples, correct;
    long job_samples; /* the whole job's: a dist_* worker's samples are its share of each step */
    double loss_sum, time;
} span;

static void span_add(span *s, const mx_step_stats *ss, int n, double dt)
{
    s->batches++;
    s->samples += ss->samples > 0 ? ss->samples : n;
    s->job_samples += n;
    s->correct += ss->correct;
    s->loss_sum += ss->loss_sum;
    s->time += dt;
}

/* MXNet's Speedometer line (Epoch[e] is 0-based there, and so here, so that scripts that
 * read MXNet logs read these): speed over the interval's step times, training accuracy and
 * loss over its samples. */
static void log_interval(const run_state *st, int epoch, int batch_end, const span *s)
{
    fprintf(st->c->log, "Epoch[%d] Batch [%d-%d]  Speed: %.1f samples/sec  accuracy=%.4f  loss=%.4f\n", epoch,
            batch_end - s->batches, batch_end, s->time > 0 ? s->job_samples / s->time : 0.0,
            (double)s->correct / ((double)s->samples * st->ds->train.label_len), s->loss_sum / s->samples);
    fflush(st->c->log);
}

/* Returns MX_OK, STEP_NONFINITE or a negative status. */
static int run_repeat(run_state *st)
{
    const mx_train_config *c = st->c;
    mx_run_record *rec = st->rec;
    const int n_train = st->ds->train.n, B = global_batch(c);
    const int per_epoch = steps_per_epoch(c, n_train);
    const int total = c->steps ? c->steps : per_epoch * c->epochs;
    /* the run ends where the step after its last would begin: a --steps run ends inside an epoch */
    const double total_epochs = total / per_epoch + (double)(total % per_epoch) * B / n_train;
    st->lr_plan = (mx_lr_plan){(float)c->lr, (float)c->warmup_start_lr, c->warmup_epochs, total_epochs,
                               mx_lr_schedule_find(c->lr_schedule)};
    mx_rng rng;
    mx_rng_seed(&rng, (uint64_t)c->seed * 7919 + 17);
    double train_time = 0, last_progress = mx_now();
    mx_loss_watch_start(&st->watch, B, st->ds->train.nclasses);
    int step = 0;
    for (int epoch = 0; step < total; epoch++) {
        for (int i = 0; i < n_train; i++) st->order[i] = i;
        mx_rng_shuffle(&rng, st->order, n_train);
        span ep = {0}, iv = {0};
        for (int from = 0, in_epoch = 0; in_epoch < per_epoch && step < total; from += B, step++, in_epoch++) {
            const int n = n_train - from < B ? n_train - from : B;
            mx_step_stats ss;
            const double before = train_time;
            const int rc = run_step(st, step, from, n, epoch + (double)from / n_train, &train_time, &ss);
            if (rc != MX_OK) return rc;
            const double dt = train_time - before;
            span_add(&ep, &ss, n, dt);
            span_add(&iv, &ss, n, dt);
            const int batch = in_epoch + 1; /* batches done in this epoch */
            if (c->log && c->log_interval > 0 && batch % c->log_interval == 0) {
                log_interval(st, epoch, batch, &iv);
                iv = (span){0};
            }
            mx_host_watch_tick(&st->host);
            log_progress(st, epoch, step, batch, per_epoch, ss.loss_sum / n, dt > 0 ? n / dt : 0.0, &last_progress);
        }
        if (c->log && c->log_interval > 0)
            fprintf(c->log, "Epoch[%d] Train-accuracy=%.4f\n", epoch,
                    (double)ep.correct / ((double)ep.samples * st->ds->train.label_len));
        if (c->steps) continue; /* throughput runs: no per-epoch evaluation */
        if (c->cluster && c->cluster->index != 0) continue; /* worker 0 evaluates and records */
        double acc, vloss;
        MX_TRY(evaluate(st, &acc, &vloss));
        if (st->repeat == 0) {
            rec->test_acc[rec->nepochs] = acc;
            if (rec->val_loss) rec->val_loss[rec->nepochs] = vloss;
            rec->epoch_time[rec->nepochs] = train_time;
            rec->nepochs++;
        }
        log_epoch(st, epoch, ep.loss_sum / ep.samples, acc, vloss, ep.time, ep.job_samples);
    }
    return MX_OK;
}

/* What only the data set decides: the steps an epoch run takes in all. */
static int check_length(const mx_train_config *c, int n_train)
{
    /* a batch beyond the training set would train one partial batch per "epoch", and its
     * samples/s would count samples that were never there */
    if (global_batch(c) > n_train)
        return mx_error(MX_EINVAL, "a global batch of %d samples%s is larger than the %d training samples of %s: "
                        "accepted a --batch of at most %d", global_batch(c), c->cluster ? " (all workers)" : "",
                        n_train, c->data_dir ? c->data_dir : c->dataset, n_train / workers(c));
    const long long per_epoch = steps_per_epoch(c, n_train);
    if (per_epoch < 1)
        return mx_error(MX_EINVAL, "a global batch of %d samples over %d device(s) does not fit the %d training "
                        "samples: use a smaller --batch", global_batch(c), c->devices * workers(c), n_train);
    const long long total = (c->steps ? c->steps : per_epoch * c->epochs) * c->repeats;
    if (total > MX_MAX_TOTAL_STEPS)
        return mx_error(MX_EINVAL, "%d epoch(s) of %d samples at batch %d x %d repeat(s) make %lld steps: accepted "
                        "at most %d; use fewer epochs or repeats or a larger batch", c->epochs, n_train, c->batch,
                        c->repeats, total, MX_MAX_TOTAL_STEPS);
    if (!c->steps && c->warmup_steps >= per_epoch * c->epochs)
        return mx_error(MX_EINVAL, "--warmup-steps %d leaves no timed step of the %lld steps trained",
                        c->warmup_steps, per_epoch * c->epochs);
    return MX_OK;
}

/* The weights as they are now to path, if set (worker 0 only: the replicas agree). */
static int save_params(run_state *st, const mx_train_config *c, const char *path)
{
    if (!path || (c->cluster && c->cluster->index != 0)) return MX_OK;
    const size_t n = st->ops->param_count(st->s);
    float *w = malloc(sizeof(float) * (n ? n : 1));
    if (!w) return mx_error(MX_ENOMEM, "out of memory for %zu weights", n);
    int rc = st->ops->get_params(st->s, w);
    if (rc == MX_OK) rc = mx_image_commit(path, w, sizeof(float) * n);
    free(w);
    return rc;
}

/* The strategy's per-device and per-layer figures into the record's tables (the last repeat). */
static int record_detail(run_state *st, const mx_strategy_config *sc)
{
    if (!st->ops->detail) return MX_OK;
    mx_strategy_detail *d = calloc(1, sizeof *d);
    if (!d) return mx_error(MX_ENOMEM, "out of memory for the strategy's figures");
    int rc = st->ops->detail(st->s, d);
    mx_run_record *rec = st->rec;
    free(rec->devices);
    free(rec->layers);
    rec->devices = NULL, rec->layers = NULL, rec->ndevices = rec->nlayers = 0;
    if (rc == MX_OK && d->ndevices > 0 && !(rec->devices = calloc((size_t)d->ndevices, sizeof *rec->devices)))
        rc = mx_error(MX_ENOMEM, "out of memory for %d device rows", d->ndevices);
    const int nl = d->nlayers < sc->nspecs ? d->nlayers : sc->nspecs;
    if (rc == MX_OK && nl > 0 && !(rec->layers = calloc((size_t)nl, sizeof *rec->layers)))
        rc = mx_error(MX_ENOMEM, "out of memory for %d layer rows", nl);
    for (int i = 0; rc == MX_OK && i < d->ndevices; i++) {
        const mx_device_detail *x = &d->dev[i];
        rec->devices[i] = (mx_device_row){i, x->first, x->last, x->bubble, x->mem_params, x->mem_optim, x->mem_peak,
                                          x->bytes_sent, x->held_max, x->busy};
    }
    if (rc == MX_OK) rec->ndevices = d->ndevices;
    for (int i = 0; rc == MX_OK && i < nl; i++) {
        mx_layer_row *l = &rec->layers[i];
        *l = (mx_layer_row){.layer = i, .device = -1, .bytes_per_step = d->layer_bytes[i]};
        snprintf(l->kind, sizeof l->kind, "%s", sc->specs[i].kind);
        /* a pipeline stage holds the layers of its cut */
        for (int s = 0; st->c->strategy == MX_STRATEGY_MODEL && s < d->ndevices; s++)
            if (i >= d->dev[s].first && i < d->dev[s].last) l->device = s;
    }
    if (rc == MX_OK) rec->nlayers = nl;
    free(d);
    return rc;
}

/* The first repeat's timeline, once its window is over. A dist_* worker keeps its events:
 * at the job's end every rank's are merged into worker 0's file (mx_cluster_trace_merge). */
static int write_trace(const mx_train_config *c)
{
    mx_trace_stop(); /* a run shorter than its window */
    if (c->cluster) return MX_OK;
    int rc = MX_OK;
    if (c->trace) {
        char name[64];
        snprintf(name, sizeof name, "mxbench %s %s x%d", c->workload, mx_strategy_name(c->strategy), c->devices);
        rc = mx_trace_write(c->trace, 0, name);
    }
    mx_trace_reset();
    return rc;
}

static int run_all(run_state *st, const mx_train_config *c, const mx_strategy_config *sc)
{
    const int per_epoch = steps_per_epoch(c, st->ds->train.n);
    const int total = c->steps ? c->steps : per_epoch * c->epochs;
    MX_TRY(reserve(st->rec, c->amp, total * c->repeats, c->epochs));
    for (st->repeat = 0; st->repeat < c->repeats; st->repeat++) {
        MX_TRY(st->ops->create(&st->s, sc));
        if (c->flops_out) *c->flops_out = st->ops->flops_per_sample(st->s);
        int rc = st->repeat == 0 ? save_params(st, c, c->save_init) : MX_OK;
        if (rc == MX_OK) rc = run_repeat(st);
        if (rc == MX_OK && st->repeat == c->repeats - 1) rc = save_params(st, c, c->save_params);
        if (rc == MX_OK && st->repeat == c->repeats - 1) rc = record_detail(st, sc);
        if (rc >= 0 && st->repeat == 0) { /* a diverged repeat's timeline too: it shows how */
            const int wrote = write_trace(c);
            if (wrote < 0) rc = wrote;
        }
        st->ops->destroy(st->s);
        st->s = NULL;
        MX_TRY(rc);
        if (rc == STEP_NONFINITE) break; /* a repeat from the same seed would diverge alike */
    }
    return MX_OK;
}

int mx_train_run(const mx_train_config *c, mx_run_record *rec)
{
    MX_TRY(mx_train_config_check(c));
    const mx_strategy_ops *ops = mx_strategy_find(c->strategy);
    if (!ops)
        return mx_error(MX_EUNSUPPORTED, "strategy '%s' is not available in this build (available: %s)",
                        mx_strategy_name(c->strategy), mx_strategy_names());
    mx_train_data ds;
    MX_TRY(mx_train_data_load(c, global_batch(c), &ds));
    int rc = check_length(c, ds.train.n);
    if (rc < 0) {
        mx_train_data_free(&ds);
        return rc;
    }
    /* the model is built once, here, and handed to the strategy */
    mx_layer_spec specs[MX_MAX_LAYERS];
    const mx_shape in = {ds.train.c, ds.train.h, ds.train.w};
    const mx_workload *wl = mx_workload_find(c->workload);
    const int nspecs = wl->build(specs, in, ds.train.nclasses);
    /* a language model scores the padded vocabulary it holds (mx_lm_padded_vocab) */
    const int nclasses = wl->lm ? mx_lm_padded_vocab(ds.train.nclasses) : ds.train.nclasses;
    mx_strategy_config sc = {
        .workload = c->workload, .specs = specs, .nspecs = nspecs, .backend = c->backend,
        .in = in, .nclasses = nclasses,
        .devices = c->devices, .threads_per_device = c->threads_per_device, .kvstore = c->kvstore,
        .max_batch = global_batch(c), .work_load = c->nwork_load ? c->work_load : NULL,
        .cluster = c->cluster, .bucket_mb = c->bucket_mb,
        .opt = {.kind = c->optimizer, .lr = (float)c->lr, .wd = (float)c->wd, .momentum = (float)c->momentum,
                .beta1 = (float)c->beta1, .beta2 = (float)c->beta2, .eps = (float)c->eps,
                .clip_norm = (float)c->clip_norm},
        .seed = (uint64_t)c->seed,
        .init = strcmp(mx_train_init(c), "normal") == 0 ? MX_WEIGHT_INIT_NORMAL : MX_WEIGHT_INIT_XAVIER,
        .init_sigma = wl->lm ? 0.02f : 0.01f, /* GPT-2's recipe for its weights */
        .partition = c->partition, .micro_batches = c->micro_batches, .schedule = c->schedule,
        .compression = c->compression, .gc_threshold = c->gc_threshold, .gc_topk_ratio = c->gc_topk_ratio,
        .amp = c->amp};
    rc = mx_strategy_check(c->strategy, &sc);
    if (rc == MX_OK && c->param_table && !(c->cluster && c->cluster->index != 0))
        rc = mx_param_table_write(c->param_table, c->workload, specs, nspecs, in);
    if (rc < 0) {
        mx_train_data_free(&ds);
        return rc;
    }
    run_state st = {.c = c, .ds = &ds, .ops = ops, .rec = rec, .progress_every = progress_every()};
    mx_counter_acc_init(&st.counters);
    st.bx = malloc(sizeof(float) * global_batch(c) * ds.train.c * ds.train.h * ds.train.w);
    st.by = malloc(sizeof(int32_t) * global_batch(c) * ds.train.label_len);
    st.order = malloc(sizeof(int32_t) * ds.train.n);
    fill_record_config(c, &ds, rec);
    const double t0 = mx_now();
    mx_host_watch_start(&st.host);
    rc = st.bx && st.by && st.order ? run_all(&st, c, &sc) : mx_error(MX_ENOMEM, "out of memory for batches");
    rec->wall_time = mx_now() - t0;
    mx_host_watch_add(&st.host);
    mx_host_watch_figures(&st.host, &rec->host_others, &rec->host_load, &rec->host_steal, &rec->noisy);
    mx_counter_acc_reduce(&st.counters, rec->metrics);
    /* every step's skip, warmup included: where fp16's first scales overflow */
    if (c->amp != MX_AMP_OFF) rec->metrics[MX_COUNTER_SKIPPED] = (double)st.skipped;
    free(st.bx);
    free(st.by);
    free(st.order);
    mx_train_data_free(&ds);
    if (rc < 0) return rc;
    snprintf(rec->status, sizeof rec->status, "%s", st.diverged ? "diverged" : "ok");
    mx_record_derive(rec);
    /* Samples over their time, not batch over the median step: slow steps count in full, and
     * so do the real sizes of partial last batches (global_batch / step_time would not). */
    rec->throughput_agg = st.timed_time > 0 ? st.timed_samples / st.timed_time : NAN;
    return MX_OK;
}

