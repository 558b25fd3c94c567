/* The projection's fits, without timing anything real:
 * - results/lsq.c recovers alpha, beta and gamma from calls made with known costs (the
 *   kvstore's per-step fit), and leaves NaN what the calls cannot tell apart;
 * - a device kvstore's call log over a threads comm of 2 and 3 members: two calls per key,
 *   one rendezvous each, the bytes a ring moves, emptied by the stats reset;
 * - results/project.c on synthetic records made by the model itself with known data, compute,
 *   overlap, exposed share, alpha, beta and gamma: the fit recovers them (within rounding) and
 *   the prediction at 8 devices is the model's own (CPU workers on 2 cores, weak and strong
 *   scaling, a ring of MPI ranks, GPUs);
 * - the grouping: a one-device run joins the kvstore's configuration, local (no collective
 *   calls) and model runs are not projected, with their reasons; a --fit count no run has is
 *   refused. */
#include "check.h"
#include "base/status.h"
#include "results/lsq.h"
#include "results/project.h"
#include "kvstore/kvstore.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int close_to(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(fabs(b), 1e-30); }

/* ---- the per-call least squares */

static void test_lsq(void)
{
    const double alpha = 4e-6, beta = 3e-10, gamma = 1.5e-10;
    const double sizes[] = {40, 1024, 5120, 131072, 802816};
    double x[40][3], y[40], out[3];
    int n = 0;
    for (int p = 2; p <= 3; p++)
        for (int s = 0; s < 5; s++)
            for (int verb = 0; verb < 2; verb++) { /* a reduce-scatter and an all-gather of each size */
                const double share = (p - 1.0) / p * sizes[s];
                x[n][0] = 1, x[n][1] = share, x[n][2] = verb == 0 ? share : 0;
                y[n] = alpha * x[n][0] + beta * x[n][1] + gamma * x[n][2];
                n++;
            }
    static const int sets[4][MX_LSQ_MAXK] = {{0, 1, 2}, {0, 1}, {1}, {0}};
    static const int sizes_[4] = {3, 2, 1, 1};
    CHECK(mx_lsq_first(&x[0][0], n, 3, y, sets, sizes_, 4, out) == 0, "all three determined");
    CHECK(close_to(out[0], alpha, 1e-9) && close_to(out[1], beta, 1e-9) && close_to(out[2], gamma, 1e-9),
          "alpha %g beta %g gamma %g, expected %g %g %g", out[0], out[1], out[2], alpha, beta, gamma);
    /* all-reduces only: gamma's column is half beta's, so beta holds beta + gamma / 2 */
    n = 0;
    for (int s = 0; s < 5; s++) {
        const double share = 0.5 * sizes[s];
        x[n][0] = 2, x[n][1] = 2 * share, x[n][2] = share;
        y[n] = alpha * 2 + beta * 2 * share + gamma * share;
        n++;
    }
    CHECK(mx_lsq_first(&x[0][0], n, 3, y, sets, sizes_, 4, out) == 1, "all-reduces: alpha and beta only");
    CHECK(close_to(out[0], alpha, 1e-9) && close_to(out[1], beta + gamma / 2, 1e-9) && isnan(out[2]),
          "all-reduces: alpha %g beta %g gamma %g", out[0], out[1], out[2]);
    /* one size: nothing but the time per byte */
    for (int i = 0; i < 3; i++) x[i][0] = 2, x[i][1] = 1e6, x[i][2] = 5e5, y[i] = 1e-3;
    CHECK(mx_lsq_first(&x[0][0], 3, 3, y, sets, sizes_, 4, out) == 2 && isnan(out[0]) && close_to(out[1], 1e-9, 1e-9),
          "one size: alpha %g beta %g", out[0], out[1]);
    CHECK(mx_lsq(&x[0][0], 1, 3, y, sets[0], 3, out) == -1 && isnan(out[0]), "fewer rows than columns");
}

/* ---- the kvstore's call log over a real threads comm */

#define NK 3
static const mx_kv_key kv_keys[NK] = {{0, 10, MX_F32}, {16, 1000, MX_F32}, {1024, 20000, MX_F32}};
#define KV_TOTAL 21024

static void test_call_log(int ndev)
{
    mx_comm *comm = NULL;
    mx_backend *be[3] = {NULL};
    float *w[3] = {NULL}, *g[3] = {NULL};
    mx_kvstore *kv = NULL;
    int rc = mx_comm_create(&comm, "threads", ndev);
    for (int d = 0; rc == MX_OK && d < ndev; d++) {
        rc = mx_backend_create(&be[d], "cpu", d, 1);
        if (rc < 0) break;
        w[d] = be[d]->ops->alloc(be[d], sizeof(float) * KV_TOTAL);
        g[d] = be[d]->ops->alloc(be[d], sizeof(float) * KV_TOTAL);
        for (int i = 0; i < KV_TOTAL; i++) w[d][i] = 0, g[d][i] = 1;
    }
    if (rc == MX_OK) rc = mx_kv_create(&kv, MX_KV_DEVICE, comm, kv_keys, NK, NULL);
    for (int d = 0; rc == MX_OK && d < ndev; d++) rc = mx_kv_bind(kv, d, be[d], w[d], g[d]);
    if (rc == MX_OK) rc = mx_kv_init(kv);
    CHECK(rc == MX_OK, "set-up on %d devices: %s", ndev, mx_last_error());
    if (rc == MX_OK) {
        mx_kv_stats_reset(kv);
        for (int d = 0; d < ndev; d++)
            for (int k = NK - 1; k >= 0; k--) mx_kv_push(kv, k, d, kv_keys[k].count);
        for (int d = 0; d < ndev; d++)
            for (int k = 0; k < NK; k++) mx_kv_pull(kv, k, d, kv_keys[k].count);
        mx_kv_comm_fig f;
        const int calls = mx_kv_comm_figures(kv, &f);
        double bus = 0, red = 0;
        for (int k = 0; k < NK; k++) {
            const double s = 4.0 * kv_keys[k].count * (ndev - 1) / ndev;
            bus += 2 * s; /* its reduce-scatter and the weights' all-gather */
            red += s;
        }
        CHECK(calls == 2 * NK && f.calls == 2 * NK, "%d devices: %d calls, expected %d", ndev, calls, 2 * NK);
        CHECK(f.rounds == 2 * NK, "%d devices: %g rounds: one rendezvous a call on threads", ndev, f.rounds);
        CHECK(close_to(f.bus_bytes, bus, 1e-12) && close_to(f.reduce_bytes, red, 1e-12),
              "%d devices: bus %g summed %g bytes, expected %g %g", ndev, f.bus_bytes, f.reduce_bytes, bus, red);
        CHECK(f.seconds > 0 && isfinite(f.alpha) && isfinite(f.beta) && isfinite(f.gamma),
              "%d devices: %g s, alpha %g beta %g gamma %g", ndev, f.seconds, f.alpha, f.beta, f.gamma);
        mx_kv_stats_reset(kv);
        CHECK(mx_kv_comm_figures(kv, &f) == 0 && f.calls == 0 && isnan(f.alpha), "the reset empties the log");
    }
    mx_kv_destroy(kv);
    for (int d = 0; d < ndev; d++)
        if (be[d]) {
            be[d]->ops->free(be[d], w[d]);
            be[d]->ops->free(be[d], g[d]);
            mx_backend_destroy(be[d]);
        }
    mx_comm_destroy(comm);
}

/* ---- the projection on records the model made */

typedef struct {
    double d0, d1, c0, c1, update, alpha, beta, gamma, exposed, overlap, cores;
    int threads, cpu, global;       /* global: strong scaling (--batch-mode global) */
    int ring, dist;                 /* ring: p-1 rounds a call (mpi, NCCL); dist: all-reduces of an MPI job */
    double key_bytes[4];            /* the calls' buffers: a reduce-scatter and all-gather each (threads, mpi) */
    int batch;
} truth;

/* One member's calls at p: rounds, bus bytes, summed bytes (as kvstore/calls.c counts them). */
static void calls_at(const truth *t, int p, double *rounds, double *bus, double *red)
{
    *rounds = *bus = *red = 0;
    for (int k = 0; k < 4; k++) {
        const double s = (p - 1.0) / p * t->key_bytes[k];
        /* an all-reduce per key (dist), or a reduce-scatter and an all-gather: the same bytes */
        *rounds += t->ring ? 2.0 * (p - 1) : t->dist ? 1 : 2;
        *bus += 2 * s, *red += s;
    }
}

static double turns(const truth *t, double threads) { return t->cpu && threads > t->cores ? threads / t->cores : 1; }

/* The model, written out again here rather than called: a step at p and its parts. */
static double model_step(const truth *t, int p, double *data, double *compute, double *comm, double *upd)
{
    const double global = t->global ? t->batch : (double)t->batch * p, b = global / p;
    double rounds, bus, red;
    calls_at(t, p, &rounds, &bus, &red);
    const double m = p >= 2 ? t->alpha * rounds + t->beta * bus + t->gamma * red : 0;
    *data = t->d0 + t->d1 * global;
    *compute = turns(t, (double)p * t->threads) * (t->c0 + t->c1 * b) + t->overlap * turns(t, p) * m;
    *comm = t->exposed * turns(t, p) * m;
    *upd = p == 1 ? t->update : 0;
    return *data + *compute + *comm + *upd;
}

static void make_run(mx_run_record *r, const truth *t, int p, int index)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "r%04d", index);
    snprintf(r->workload, sizeof r->workload, "mlp");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->device_type, sizeof r->device_type, "%s", t->cpu ? "cpu" : "cuda");
    snprintf(r->kvstore, sizeof r->kvstore, "%s", t->dist ? "dist_allreduce" : p > 1 ? "device" : "none");
    snprintf(r->batch_mode, sizeof r->batch_mode, "%s", t->global ? "global" : "per-device");
    r->gpus = p;
    r->workers = t->dist ? p : 1;
    r->batch = t->batch;
    r->global_batch = t->global ? t->batch : t->batch * p;
    r->base_lr = r->lr = 0.05;
    r->steps = 20, r->repeats = 1, r->seed = 1, r->threads_per_device = t->threads;
    double data, compute, comm, upd;
    const double step = model_step(t, p, &data, &compute, &comm, &upd);
    r->nsteps = 20;
    r->step_time = malloc(sizeof(double) * 20);
    r->phase_time = calloc(20 * MX_NPHASES, sizeof(double));
    for (int i = 0; i < 20; i++) {
        double *ph = &r->phase_time[i * MX_NPHASES];
        r->step_time[i] = step;
        ph[MX_PHASE_DATA] = data, ph[MX_PHASE_FORWARD] = compute / 3, ph[MX_PHASE_BACKWARD] = 2 * compute / 3;
        ph[MX_PHASE_COMM] = comm, ph[MX_PHASE_UPDATE] = upd;
    }
    r->metrics[MX_COUNTER_HOST_CORES] = t->cores;
    if (p >= 2 || t->dist) {
        double rounds, bus, red;
        calls_at(t, p, &rounds, &bus, &red);
        r->metrics[MX_COUNTER_COMM_ROUNDS] = rounds;
        r->metrics[MX_COUNTER_COMM_BUS_BYTES] = bus;
        r->metrics[MX_COUNTER_COMM_REDUCE_BYTES] = red;
        r->metrics[MX_COUNTER_COMM_CALL_TIME] = t->alpha * rounds + t->beta * bus + t->gamma * red;
        r->metrics[MX_COUNTER_COMM_ALPHA] = p >= 2 ? t->alpha : NAN;
        r->metrics[MX_COUNTER_COMM_BETA] = p >= 2 ? (t->dist ? t->beta + t->gamma / 2 : t->beta) : NAN;
        r->metrics[MX_COUNTER_COMM_GAMMA] = p >= 2 && !t->dist ? t->gamma : NAN;
    }
    mx_record_derive(r);
}

static void check_projection(const char *what, truth t, const int *gpus, int ngpus)
{
    mx_results res = {.schema_version = 1};
    res.runs = calloc((size_t)ngpus, sizeof *res.runs);
    for (int i = 0; i < ngpus; i++) make_run(&res.runs[res.nruns++], &t, gpus[i], i);
    mx_records_derive_scaling(res.runs, res.nruns);
    const int want[] = {8};
    const mx_proj_options opt = {NULL, 0, want, 1, 0};
    mx_projection *pr = NULL;
    int n = 0;
    CHECK(mx_project(&res, &opt, &pr, &n) == MX_OK && n == 1, "%s: %d configurations: %s", what, n, mx_last_error());
    if (n == 1) {
        const mx_projection *p = &pr[0];
        CHECK(!p->skipped[0], "%s: skipped: %s", what, p->skipped);
        /* all-reduces cannot tell gamma from beta: their combination is what was recorded */
        const double beta = t.dist ? t.beta + t.gamma / 2 : t.beta, gamma = t.dist ? 0 : t.gamma;
        CHECK(close_to(p->alpha, t.alpha, 1e-9) && close_to(p->beta, beta, 1e-9) &&
                  (gamma == 0 ? p->gamma == 0 : close_to(p->gamma, gamma, 1e-9)),
              "%s: alpha %g beta %g gamma %g, expected %g %g %g", what, p->alpha, p->beta, p->gamma, t.alpha, beta,
              gamma);
        CHECK(close_to(p->exposed, t.exposed, 1e-9) && close_to(p->overlap, t.overlap, 1e-6),
              "%s: exposed %g overlap %g, expected %g %g", what, p->exposed, p->overlap, t.exposed, t.overlap);
        const double b = t.global ? (double)t.batch / gpus[0] : t.batch;
        CHECK(close_to(p->c0 + p->c1 * b, t.c0 + t.c1 * b, 1e-9) &&
                  close_to(p->d0 + p->d1 * t.batch, t.d0 + t.d1 * t.batch, 1e-9),
              "%s: compute %g + %g b, data %g + %g B; expected %g + %g b, %g + %g B", what, p->c0, p->c1, p->d0, p->d1,
              t.c0, t.c1, t.d0, t.d1);
        CHECK(p->cpu == t.cpu && p->ring == t.ring && (t.cpu ? p->cores == t.cores : 1), "%s: cpu %d ring %d cores %g",
              what, p->cpu, p->ring, p->cores);
        int found = 0;
        for (int j = 0; j < p->npoints; j++) {
            const mx_proj_point *pt = &p->pt[j];
            double data, compute, comm, upd;
            const double step = model_step(&t, pt->gpus, &data, &compute, &comm, &upd);
            found += pt->gpus == 8;
            CHECK(close_to(pt->m_step, step, 1e-9), "%s: %d devices: model step %.9g s, the model's own %.9g", what,
                  pt->gpus, pt->m_step, step);
            CHECK(close_to(pt->compute, compute, 1e-9) && close_to(pt->comm + pt->update, comm + upd, 1e-9),
                  "%s: %d devices: compute %g comm %g, expected %g %g", what, pt->gpus, pt->compute, pt->comm, compute,
                  comm + upd);
            if (pt->measured)
                CHECK(fabs(pt->error) < 1e-9, "%s: %d devices: error %g on the model's own runs", what, pt->gpus,
                      pt->error);
        }
        CHECK(found == 1, "%s: no point at 8 devices", what);
    }
    mx_projection_free(pr);
    for (int i = 0; i < res.nruns; i++) mx_record_free(&res.runs[i]);
    free(res.runs);
}

static truth base_truth(void)
{
    return (truth){.d0 = 2e-5, .d1 = 3e-7, .c0 = 1e-4, .c1 = 1.2e-5, .update = 3e-5, .alpha = 2e-5, .beta = 3e-11,
                   .gamma = 6e-11, .exposed = 0.9, .overlap = 0.7, .cores = 2, .threads = 1, .ring = 0, .cpu = 1,
                   .global = 0, .key_bytes = {40, 1024, 131072, 802816}, .batch = 128};
}

static void test_fits(void)
{
    const int g12[] = {1, 2}, g124[] = {1, 2, 4}, g24[] = {2, 4};
    truth t = base_truth();
    check_projection("CPU weak, fit 1,2", t, g12, 2);
    check_projection("CPU weak, fit 1,2,4 (4 past the cores)", t, g124, 3);
    t.threads = 2; /* 2 threads per device: 1 device fills the 2 cores, 2 devices take turns */
    check_projection("CPU weak, 2 threads per device", t, g124, 3);
    t = base_truth();
    t.global = 1, t.batch = 512, t.c0 = 0; /* strong scaling on two counts: compute in proportion to the share */
    check_projection("CPU strong, fit 1,2", t, g12, 2);
    t.c0 = 2e-4; /* three counts tell the per-step part from the per-sample one */
    check_projection("CPU strong, fit 1,2,4", t, g124, 3);
    t = base_truth();
    t.ring = t.dist = 1; /* an MPI job of one-device workers: all-reduces on a ring */
    check_projection("MPI ring, fit 2,4", t, g24, 2);
    t = base_truth();
    t.cpu = 0, t.ring = 1, t.overlap = 0.1; /* GPUs: no turns, NCCL's rings */
    check_projection("GPUs, fit 1,2", t, g12, 2);
}

/* ---- the grouping and what is not projected */

static void test_groups(void)
{
    truth t = base_truth();
    mx_results res = {.schema_version = 1};
    res.runs = calloc(8, sizeof *res.runs);
    make_run(&res.runs[res.nruns++], &t, 1, 0);
    make_run(&res.runs[res.nruns++], &t, 2, 1);
    make_run(&res.runs[res.nruns++], &t, 4, 2);
    mx_run_record *local = &res.runs[res.nruns++];
    make_run(local, &t, 2, 3); /* kvstore local: no collective calls */
    snprintf(local->kvstore, sizeof local->kvstore, "local");
    for (int k = MX_COUNTER_COMM_ROUNDS; k <= MX_COUNTER_COMM_GAMMA; k++) local->metrics[k] = NAN;
    mx_run_record *model = &res.runs[res.nruns++];
    make_run(model, &t, 2, 4);
    snprintf(model->strategy, sizeof model->strategy, "model");
    snprintf(model->kvstore, sizeof model->kvstore, "none");
    mx_records_derive_scaling(res.runs, res.nruns);
    const int fit[] = {1, 2}, gpus[] = {16};
    mx_proj_options opt = {fit, 2, gpus, 1, 0};
    mx_projection *pr = NULL;
    int n = 0;
    CHECK(mx_project(&res, &opt, &pr, &n) == MX_OK && n == 3, "three configurations, got %d: %s", n, mx_last_error());
    int device = -1, loc = -1, mod = -1;
    for (int i = 0; i < n; i++) {
        if (strstr(pr[i].label, "kv=device")) device = i;
        if (strstr(pr[i].label, "kv=local")) loc = i;
        if (strstr(pr[i].label, " model ")) mod = i;
    }
    CHECK(device >= 0 && !pr[device].skipped[0] && pr[device].npoints == 4,
          "device: projected over 1, 2, 4, 16 (%d points) %s", device >= 0 ? pr[device].npoints : -1,
          device >= 0 ? pr[device].skipped : "");
    if (device >= 0 && pr[device].npoints == 4) {
        const mx_proj_point *p4 = &pr[device].pt[2];
        CHECK(p4->gpus == 4 && p4->measured == 1 && !p4->fitted && fabs(p4->error) < 1e-9,
              "4 devices held out and predicted: gpus %d measured %d fitted %d error %g", p4->gpus, p4->measured,
              p4->fitted, p4->error);
        CHECK(pr[device].pt[0].fitted && pr[device].pt[1].fitted && pr[device].pt[3].measured == 0,
              "1 and 2 fitted, 16 asked");
    }
    CHECK(loc >= 0 && strstr(pr[loc].skipped, "communicator calls"), "local: not projected, says why: %s",
          loc >= 0 ? pr[loc].skipped : "(missing)");
    CHECK(mod >= 0 && strstr(pr[mod].skipped, "data parallelism"), "model: not projected, says why: %s",
          mod >= 0 ? pr[mod].skipped : "(missing)");
    mx_projection_free(pr);
    /* one device count fitted: no model */
    const int one[] = {2};
    opt.fit = one, opt.nfit = 1;
    CHECK(mx_project(&res, &opt, &pr, &n) == MX_OK && n == 3 && strstr(pr[device >= 0 ? device : 0].skipped, "two"),
          "fit on 2 alone: %s", n ? pr[0].skipped : mx_last_error());
    mx_projection_free(pr);
    const int none[] = {3};
    opt.fit = none;
    CHECK(mx_project(&res, &opt, &pr, &n) == MX_EINVAL && strstr(mx_last_error(), "--fit 3") &&
              strstr(mx_last_error(), "1, 2, 4"),
          "a fit count no run has: %s", mx_last_error());
    for (int i = 0; i < res.nruns; i++) mx_record_free(&res.runs[i]);
    free(res.runs);
}

int main(void)
{
    test_lsq();
    test_call_log(2);
    test_call_log(3);
    test_fits();
    test_groups();
    return check_summary("test_project_model");
}
