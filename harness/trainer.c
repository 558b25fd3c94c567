/* The training loop (see trainer.h). Timing: a step is timed from batch assembly to the
 * last device's pull; leading warmup steps of each repeat are left out of the series. */
#include "trainer.h"
#include "engine/rng.h"
#include "engine/status.h"
#include "engine/timer.h"
#include "workloads/dataset.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SYNTHETIC_TRAIN 4096 /* samples: enough distinct batches that caches do not flatter */
#define SYNTHETIC_TEST 1024

void mx_train_config_defaults(mx_train_config *c)
{
    memset(c, 0, sizeof *c);
    c->workload = "lenet";
    c->dataset = "fashion-mnist";
    c->strategy = "data";
    c->kvstore = "device";
    c->devices = 1;
    c->threads_per_device = 1;
    c->batch = 128;
    c->epochs = 1;
    c->repeats = 1;
    c->seed = 1;
    c->lr = 0.05;
    c->momentum = 0.9;
    c->wd = 0.0001;
    c->init = "xavier";
}

typedef struct {
    mx_dataset train, test;
} datasets;

static int load_data(const mx_train_config *c, datasets *ds)
{
    memset(ds, 0, sizeof *ds);
    if (strcmp(c->dataset, "synthetic") == 0) {
        MX_TRY(mx_dataset_synthetic(&ds->train, SYNTHETIC_TRAIN, 1, 28, 28, 10, (uint64_t)c->seed));
        return mx_dataset_synthetic(&ds->test, SYNTHETIC_TEST, 1, 28, 28, 10, (uint64_t)c->seed + 1);
    }
    const char *dir = strcmp(c->dataset, "idx") == 0 && c->data_dir ? c->data_dir : mx_dataset_default_dir();
    int rc = mx_idx_load_dir(&ds->train, &ds->test, dir);
    if (rc < 0 && !c->data_dir && strcmp(dir, MX_FASHION_MNIST_DIR) == 0) {
        char why[768];
        snprintf(why, sizeof why, "%s", mx_last_error());
        return mx_error(rc, "%s\n  Fashion-MNIST comes from the Debian package dataset-fashion-mnist "
                        "(apt-get install dataset-fashion-mnist), or point --data at an IDX directory", why);
    }
    return rc;
}

/* Standardises both splits with the training split's pixel mean and deviation, so every
 * dataset reaches the first layer centred and scaled alike (what users of these datasets
 * do by habit; it also makes the default learning rates transfer between datasets). */
static void standardise(datasets *ds)
{
    const size_t n = (size_t)ds->train.n * ds->train.c * ds->train.h * ds->train.w;
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += ds->train.images[i], ss += (double)ds->train.images[i] * ds->train.images[i];
    const double mean = s / n, sd = sqrt(ss / n - mean * mean);
    const float inv = sd > 1e-12 ? (float)(1.0 / sd) : 1.0f;
    mx_dataset *both[2] = {&ds->train, &ds->test};
    for (int k = 0; k < 2; k++) {
        const size_t m = (size_t)both[k]->n * both[k]->c * both[k]->h * both[k]->w;
        for (size_t i = 0; i < m; i++) both[k]->images[i] = (both[k]->images[i] - (float)mean) * inv;
    }
}

static void fill_record_config(const mx_train_config *c, const datasets *ds, mx_run_record *rec)
{
    snprintf(rec->workload, sizeof rec->workload, "%s", c->workload);
    snprintf(rec->dataset, sizeof rec->dataset, "%s",
             strcmp(c->dataset, "idx") == 0 && c->data_dir ? c->data_dir : c->dataset);
    snprintf(rec->strategy, sizeof rec->strategy, "%s", c->strategy);
    snprintf(rec->kvstore, sizeof rec->kvstore, "%s", c->kvstore);
    snprintf(rec->device_type, sizeof rec->device_type, "cpu");
    rec->gpus = c->devices;
    rec->global_batch = c->batch;
    rec->lr = c->lr;
    rec->momentum = c->momentum;
    rec->wd = c->wd;
    rec->warmup_epochs = c->warmup_epochs;
    rec->epochs = c->epochs;
    rec->steps = c->steps;
    rec->warmup_steps = c->warmup_steps;
    rec->repeats = c->repeats;
    rec->seed = c->seed;
    rec->threads_per_device = c->threads_per_device;
    rec->target_acc = c->target_acc;
    rec->test_samples = ds->test.n;
}

/* Growable series of the record. */
static int reserve(mx_run_record *rec, int steps_total, int epochs_total)
{
    rec->step_time = calloc(steps_total ? steps_total : 1, sizeof(double));
    rec->phase_time = calloc((size_t)(steps_total ? steps_total : 1) * MX_NPHASES, sizeof(double));
    rec->loss = calloc(steps_total ? steps_total : 1, sizeof(float));
    rec->test_acc = calloc(epochs_total ? epochs_total : 1, sizeof(double));
    rec->epoch_time = calloc(epochs_total ? epochs_total : 1, sizeof(double));
    if (!rec->step_time || !rec->phase_time || !rec->loss || !rec->test_acc || !rec->epoch_time)
        return mx_error(MX_ENOMEM, "out of memory for the run's series");
    return MX_OK;
}

typedef struct {
    const mx_train_config *c;
    const datasets *ds;
    const mx_strategy_ops *ops;
    mx_strategy *s;
    float *bx;
    uint8_t *by;
    int32_t *order;
    mx_run_record *rec;
    int repeat;
    double bytes_sum, work_sum, hidden_sum;
    int comm_steps;
} run_state;

static void gather_batch(run_state *st, int from, int n)
{
    const mx_dataset *d = &st->ds->train;
    const size_t per = (size_t)d->c * d->h * d->w;
    for (int i = 0; i < n; i++) {
        const int j = st->order[from + i];
        memcpy(st->bx + (size_t)i * per, d->images + (size_t)j * per, sizeof(float) * per);
        st->by[i] = d->labels[j];
    }
}

static double evaluate(run_state *st)
{
    double loss;
    int correct;
    st->ops->evaluate(st->s, st->ds->test.images, st->ds->test.labels, st->ds->test.n, &loss, &correct);
    return (double)correct / st->ds->test.n;
}

/* One step at global position `step`; records it unless it is a warmup step. */
static int run_step(run_state *st, int step, int from, int n, double epoch_pos, double *train_time, double *loss_out)
{
    const mx_train_config *c = st->c;
    mx_run_record *rec = st->rec;
    const double t0 = mx_now();
    gather_batch(st, from, n);
    const double t_data = mx_now() - t0;
    const float lr = mx_lr_at((float)c->lr, (float)c->warmup_start_lr, epoch_pos, c->warmup_epochs);
    mx_step_stats ss;
    MX_TRY(st->ops->step(st->s, st->bx, st->by, n, lr, &ss));
    const double dt = mx_now() - t0;
    *train_time += dt;
    const double loss = ss.loss_sum / n;
    *loss_out = loss;
    if (!isfinite(loss))
        return mx_error(MX_ERUNTIME, "training diverged at step %d (loss %g); try a lower --lr than %g", step, loss,
                        c->lr);
    if (st->repeat == 0) rec->loss[rec->nloss++] = (float)loss;
    if (step < c->warmup_steps) return MX_OK;
    ss.phase[MX_PHASE_DATA] = t_data;
    rec->step_time[rec->nsteps] = dt;
    memcpy(rec->phase_time + (size_t)rec->nsteps * MX_NPHASES, ss.phase, sizeof ss.phase);
    rec->nsteps++;
    if (ss.comm_work > 0) {
        st->bytes_sum += ss.bytes;
        st->work_sum += ss.comm_work;
        st->hidden_sum += ss.comm_hidden;
        st->comm_steps++;
    }
    return MX_OK;
}

static void log_epoch(run_state *st, int epoch, double loss, double acc, double secs, int samples)
{
    if (!st->c->log) return;
    fprintf(st->c->log, "epoch %d/%d  train loss %.4f  test acc %.4f  %.0f samples/s  %.1f s\n", epoch + 1,
            st->c->epochs, loss, acc, samples / secs, secs);
    fflush(st->c->log);
}

/* Long epochs (resnet18 on CPU) say how they are doing every PROGRESS_EVERY seconds. */
#define PROGRESS_EVERY 10.0

static void log_progress(run_state *st, int epoch, int step_in_epoch, int per_epoch, double loss, double *last)
{
    const double now = mx_now();
    if (!st->c->log || now - *last < PROGRESS_EVERY) return;
    *last = now;
    const mx_run_record *rec = st->rec;
    const double dt = rec->nsteps ? rec->step_time[rec->nsteps - 1] : 0;
    fprintf(st->c->log, "  epoch %d step %d/%d  loss %.4f  %.0f samples/s\n", epoch + 1, step_in_epoch, per_epoch,
            loss, dt > 0 ? st->c->batch / dt : 0.0);
    fflush(st->c->log);
}

static int run_repeat(run_state *st)
{
    const mx_train_config *c = st->c;
    mx_run_record *rec = st->rec;
    const int n_train = st->ds->train.n;
    const int per_epoch = (n_train + c->batch - 1) / c->batch;
    const int total = c->steps ? c->steps : per_epoch * c->epochs;
    mx_rng rng;
    mx_rng_seed(&rng, (uint64_t)c->seed * 7919 + 17);
    double train_time = 0, last_progress = mx_now();
    int step = 0;
    for (int epoch = 0; step < total; epoch++) {
        for (int i = 0; i < n_train; i++) st->order[i] = i;
        mx_rng_shuffle(&rng, st->order, n_train);
        const double t_epoch = train_time;
        double loss_sum = 0;
        int samples = 0;
        for (int from = 0; from < n_train && step < total; from += c->batch, step++) {
            const int n = n_train - from < c->batch ? n_train - from : c->batch;
            double loss;
            MX_TRY(run_step(st, step, from, n, epoch + (double)from / n_train, &train_time, &loss));
            loss_sum += loss * n;
            samples += n;
            log_progress(st, epoch, from / c->batch + 1, per_epoch, loss, &last_progress);
        }
        if (c->steps) continue; /* throughput runs: no per-epoch evaluation */
        const double acc = evaluate(st);
        if (st->repeat == 0) {
            rec->test_acc[rec->nepochs] = acc;
            rec->epoch_time[rec->nepochs] = train_time;
            rec->nepochs++;
        }
        log_epoch(st, epoch, loss_sum / samples, acc, train_time - t_epoch, samples);
    }
    return MX_OK;
}

static int check_config(const mx_train_config *c)
{
    if (!mx_workload_find(c->workload))
        return mx_error(MX_EINVAL, "unknown workload '%s' (known: %s)", c->workload, mx_workload_names());
    if (c->epochs < 0 || c->steps < 0)
        return mx_error(MX_EINVAL, "epochs %d, steps %d: must not be negative", c->epochs, c->steps);
    if ((c->epochs > 0) == (c->steps > 0))
        return mx_error(MX_EINVAL, "give exactly one of epochs (%d) and steps (%d) as a positive number", c->epochs, c->steps);
    if (c->batch < c->devices)
        return mx_error(MX_EINVAL, "batch %d is smaller than the device count %d", c->batch, c->devices);
    if (!(c->lr > 0)) return mx_error(MX_EINVAL, "learning rate %g: must be > 0", c->lr);
    if (c->repeats < 1) return mx_error(MX_EINVAL, "repeats %d: must be >= 1", c->repeats);
    if (c->warmup_steps < 0 || (c->steps && c->warmup_steps >= c->steps))
        return mx_error(MX_EINVAL, "--warmup-steps %d leaves no timed step of --steps %d (accepted: 0..%d)",
                        c->warmup_steps, c->steps, c->steps - 1);
    if (!(c->momentum >= 0 && c->momentum < 1))
        return mx_error(MX_EINVAL, "momentum %g: accepted 0 <= momentum < 1", c->momentum);
    if (!(c->wd >= 0)) return mx_error(MX_EINVAL, "weight decay %g: must be >= 0", c->wd);
    if (c->threads_per_device < 1)
        return mx_error(MX_EINVAL, "threads per device %d: must be >= 1", c->threads_per_device);
    if (c->nwork_load && c->nwork_load != c->devices)
        return mx_error(MX_EINVAL, "work-load list has %d entries for %d devices", c->nwork_load, c->devices);
    return MX_OK;
}

static int run_all(run_state *st, const mx_train_config *c, const mx_strategy_config *sc)
{
    const int per_epoch = (st->ds->train.n + c->batch - 1) / c->batch;
    const int total = c->steps ? c->steps : per_epoch * c->epochs;
    MX_TRY(reserve(st->rec, total * c->repeats, c->epochs));
    for (st->repeat = 0; st->repeat < c->repeats; st->repeat++) {
        MX_TRY(st->ops->create(&st->s, sc));
        if (c->flops_out) *c->flops_out = st->ops->flops_per_sample(st->s);
        int rc = run_repeat(st);
        st->ops->destroy(st->s);
        st->s = NULL;
        MX_TRY(rc);
    }
    return MX_OK;
}

int mx_train_run(const mx_train_config *c, mx_run_record *rec)
{
    MX_TRY(check_config(c));
    const mx_strategy_ops *ops = mx_strategy_find(c->strategy);
    if (!ops)
        return mx_error(MX_EUNSUPPORTED, "strategy '%s' is not available in this build (available: %s)", c->strategy,
                        mx_strategy_names());
    datasets ds;
    MX_TRY(load_data(c, &ds));
    standardise(&ds);
    mx_strategy_config sc = {
        .workload = c->workload, .in = {ds.train.c, ds.train.h, ds.train.w}, .nclasses = ds.train.nclasses,
        .devices = c->devices, .threads_per_device = c->threads_per_device, .kvstore = c->kvstore,
        .max_batch = c->batch, .work_load = c->nwork_load ? c->work_load : NULL,
        .opt = {(float)c->lr, (float)c->momentum, (float)c->wd}, .seed = (uint64_t)c->seed,
        .init = strcmp(c->init, "normal") == 0 ? MX_WEIGHT_INIT_NORMAL : MX_WEIGHT_INIT_XAVIER};
    run_state st = {.c = c, .ds = &ds, .ops = ops, .rec = rec};
    st.bx = malloc(sizeof(float) * c->batch * ds.train.c * ds.train.h * ds.train.w);
    st.by = malloc((size_t)c->batch);
    st.order = malloc(sizeof(int32_t) * ds.train.n);
    fill_record_config(c, &ds, rec);
    const double t0 = mx_now();
    int rc = st.bx && st.by && st.order ? run_all(&st, c, &sc) : mx_error(MX_ENOMEM, "out of memory for batches");
    rec->wall_time = mx_now() - t0;
    if (st.comm_steps) {
        rec->bytes_per_step = st.bytes_sum / st.comm_steps;
        rec->comm_overlap = st.work_sum > 0 ? st.hidden_sum / st.work_sum : NAN;
    }
    free(st.bx);
    free(st.by);
    free(st.order);
    mx_dataset_free(&ds.train);
    mx_dataset_free(&ds.test);
    if (rc < 0) return rc;
    snprintf(rec->status, sizeof rec->status, "ok");
    mx_record_derive(rec);
    return MX_OK;
}

