/* The projection model's fit and evaluation (project.h): one configuration's runs in, the
 * model's parameters and its step at any device count out. Grouping a file's runs into
 * configurations is project_group.c. */
#include "project.h"

#include "lsq.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The measured median step split by the phases' mean shares: the median is what a typical
 * step took and the phases say where its time went (a sum of per-phase medians would not add
 * up to any step). -1 when the run has no phases or no step time. */
typedef struct {
    double data, compute, comm, update;
} parts;

static int run_parts(const mx_run_record *r, parts *out)
{
    double sum[MX_NPHASES] = {0}, total = 0;
    if (r->nsteps <= 0 || !r->phase_time || !(r->step_time_median > 0)) return -1;
    for (int i = 0; i < r->nsteps; i++)
        for (int k = 0; k < MX_NPHASES; k++) {
            const double v = r->phase_time[(size_t)i * MX_NPHASES + k];
            if (isfinite(v) && v > 0) sum[k] += v;
        }
    for (int k = 0; k < MX_NPHASES; k++) total += sum[k];
    if (!(total > 0)) return -1;
    const double t = r->step_time_median / total;
    out->data = sum[MX_PHASE_DATA] * t;
    out->compute = (sum[MX_PHASE_FORWARD] + sum[MX_PHASE_BACKWARD]) * t;
    out->comm = (sum[MX_PHASE_COMM] + sum[MX_PHASE_COMPRESS]) * t;
    out->update = sum[MX_PHASE_UPDATE] * t;
    return 0;
}

/* Devices of a run on worker 0's host: all of them in one process; for an MPI job, those of
 * the worker ranks on rank 0's host (the rank table), every rank on one host without one. */
static int devices_on_host(const mx_run_record *r, int *all_on_one)
{
    *all_on_one = 1;
    if (r->workers <= 1 || r->nranks <= 0 || !r->ranks) return r->gpus;
    int here = 0, workers = 0;
    for (int i = 0; i < r->nranks; i++) {
        if (strcmp(r->ranks[i].role, "worker") != 0) continue;
        workers++;
        here += strcmp(r->ranks[i].host, r->ranks[0].host) == 0;
    }
    if (workers == 0) return r->gpus;
    *all_on_one = here == workers;
    return here * (r->gpus / r->workers > 0 ? r->gpus / r->workers : 1);
}

/* Turns on the cores: threads over cores where there are more threads, else 1 (and 1 on
 * GPUs, or where the cores are not known). */
static double turns(const mx_projection *pr, double threads)
{
    if (!pr->cpu || !(pr->cores > 0) || threads <= pr->cores) return 1;
    return threads / pr->cores;
}

/* Least-squares line y = a + b x; with fewer than two distinct x, the mean and slope 0 (what
 * does not vary cannot be told from a constant). */
static void line(const double *x, const double *y, int n, double *a, double *b)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= n, my /= n;
    for (int i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    *b = sxx > 1e-12 * (mx * mx + 1) ? sxy / sxx : 0;
    *a = my - *b * mx;
}

static void note(mx_projection *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(mx_projection *pr, const char *fmt, ...)
{
    size_t len = strlen(pr->notes);
    if (len && len + 2 < sizeof pr->notes) len += (size_t)snprintf(pr->notes + len, sizeof pr->notes - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (len < sizeof pr->notes) vsnprintf(pr->notes + len, sizeof pr->notes - len, fmt, ap);
    va_end(ap);
}

static int in_list(int v, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v) return 1;
    return 0;
}

/* Mean of the finite values of metric k over the runs; NaN if none. */
static double mean_metric(const mx_run_record *const *runs, int n, int k)
{
    double s = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(runs[i]->metrics[k])) s += runs[i]->metrics[k], m++;
    return m ? s / m : NAN;
}

/* A fitted parameter that came out negative (noise around a cost near zero) is a cost of 0. */
static double clamp_cost(mx_projection *pr, const char *name, double v, double unit, const char *uname)
{
    if (!(v < 0)) return v;
    note(pr, "%s fitted %.3g %s, taken as 0", name, v * unit, uname);
    return 0;
}

/* The communication's part: alpha, beta and gamma over the fitted runs that made collective
 * calls on 2 or more devices, the call figures of the largest such count, and the exposed
 * share of the modelled time. 0, or -1 with skipped set. */
static int fit_comm(mx_projection *pr, const mx_run_record *const *comm, const parts *cp, int n)
{
    if (n == 0) {
        snprintf(pr->skipped, sizeof pr->skipped,
                 "no fitted run on 2 or more devices recorded communicator calls (the kvstore local sums on the host "
                 "and the parameter servers send point to point; files from before comm_rounds lack them)");
        return -1;
    }
    pr->alpha = mean_metric(comm, n, MX_COUNTER_COMM_ALPHA);
    pr->beta = mean_metric(comm, n, MX_COUNTER_COMM_BETA);
    pr->gamma = mean_metric(comm, n, MX_COUNTER_COMM_GAMMA);
    if (isnan(pr->beta) && isnan(pr->alpha)) {
        snprintf(pr->skipped, sizeof pr->skipped, "the communicator calls did not determine alpha or beta");
        return -1;
    }
    if (isnan(pr->alpha))
        note(pr, "alpha not separable (calls of one size): its cost is in beta, which grows as (p-1)/p where alpha "
                 "would grow as p-1 on a ring (for dist_allreduce, a smaller --bucket-mb makes calls of several "
                 "sizes)"),
            pr->alpha = 0;
    if (isnan(pr->gamma))
        note(pr, "gamma not separable (no reduce-scatter beside an all-gather): beta holds beta + gamma/2"),
            pr->gamma = 0;
    if (isnan(pr->beta)) pr->beta = 0;
    pr->alpha = clamp_cost(pr, "alpha", pr->alpha, 1e6, "us");
    pr->beta = clamp_cost(pr, "beta", pr->beta, 1e9, "ns/B");
    pr->gamma = clamp_cost(pr, "gamma", pr->gamma, 1e9, "ns/B");
    pr->p_ref = 0;
    for (int i = 0; i < n; i++)
        if (comm[i]->gpus > pr->p_ref) pr->p_ref = comm[i]->gpus;
    const mx_run_record *at[MX_PROJ_MAX_POINTS * 4];
    int nat = 0;
    for (int i = 0; i < n && nat < (int)(sizeof at / sizeof *at); i++)
        if (comm[i]->gpus == pr->p_ref) at[nat++] = comm[i];
    pr->rounds = mean_metric(at, nat, MX_COUNTER_COMM_ROUNDS);
    pr->bus_bytes = mean_metric(at, nat, MX_COUNTER_COMM_BUS_BYTES);
    pr->reduce_bytes = mean_metric(at, nat, MX_COUNTER_COMM_REDUCE_BYTES);
    double e = 0;
    int ne = 0;
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = comm[i];
        const double m = pr->alpha * r->metrics[MX_COUNTER_COMM_ROUNDS] +
                         pr->beta * r->metrics[MX_COUNTER_COMM_BUS_BYTES] +
                         pr->gamma * r->metrics[MX_COUNTER_COMM_REDUCE_BYTES];
        int one;
        const double dev = devices_on_host(r, &one);
        if (m > 0) e += cp[i].comm / (turns(pr, dev) * m), ne++;
    }
    pr->exposed = ne ? e / ne : 0;
    if (!ne) note(pr, "the calls' modelled time is 0: no communication projected");
    return 0;
}

/* One member's modelled communication in a run (its own calls, p and fitted costs). */
static double run_comm(const mx_projection *pr, const mx_run_record *r)
{
    if (r->gpus < 2 || !isfinite(r->metrics[MX_COUNTER_COMM_ROUNDS])) return 0;
    return pr->alpha * r->metrics[MX_COUNTER_COMM_ROUNDS] + pr->beta * r->metrics[MX_COUNTER_COMM_BUS_BYTES] +
           pr->gamma * r->metrics[MX_COUNTER_COMM_REDUCE_BYTES];
}

/* Compute, the forward and backward phases: s_c (c0 + c1 b) on the device's share b of the
 * batch, plus what the communication overlapped with backward takes from it, k s_m M (on CPU
 * workers the comm workers' copies and sums run on the cores backward needs; k is 0 where
 * overlap is free). Least squares over the fitted runs, keeping the columns they determine:
 * with one share of the batch (weak scaling) c0 and c1 are one constant; with two counts and
 * two shares (strong scaling) c0 is taken as 0 (compute in proportion to the samples). */
static void fit_compute(mx_projection *pr, const mx_run_record *const *use, const parts *p, int n)
{
    enum { MAXR = MX_PROJ_MAX_POINTS * 4 };
    static const int sets[6][MX_LSQ_MAXK] = {{0, 1, 2}, {1, 2}, {0, 2}, {0, 1}, {1}, {0}};
    static const int sizes[6] = {3, 2, 2, 2, 1, 1};
    double x[MAXR][3], y[MAXR], c[3];
    for (int i = 0; i < n; i++) {
        int one;
        const double here = devices_on_host(use[i], &one);
        const double sc = turns(pr, here * pr->threads), b = (double)use[i]->global_batch / use[i]->gpus;
        x[i][0] = sc, x[i][1] = sc * b, x[i][2] = turns(pr, here) * run_comm(pr, use[i]);
        y[i] = p[i].compute;
    }
    int s = mx_lsq_first(&x[0][0], n, 3, y, sets, sizes, 6, c);
    if (s >= 0 && c[2] < 0) { /* overlap cannot speed compute up: noise, refit without it */
        note(pr, "overlap cost fitted %.3g, taken as 0", c[2]);
        s = mx_lsq_first(&x[0][0], n, 3, y, sets + 3, sizes + 3, 3, c);
    }
    pr->c0 = isfinite(c[0]) ? c[0] : 0;
    pr->c1 = isfinite(c[1]) ? c[1] : 0;
    pr->overlap = isfinite(c[2]) ? c[2] : 0;
    if (s < 0) snprintf(pr->skipped, sizeof pr->skipped, "the compute phases of the fitted runs determine no model");
}

/* The configuration's fields from its runs: those of exchange from the run with the most
 * devices (a one-device run has no kvstore), the rest are equal in every run. */
static void configure(mx_projection *pr, const mx_run_record *const *runs, int n)
{
    const mx_run_record *r = runs[0];
    pr->dist = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i]->gpus > r->gpus) r = runs[i];
        pr->dist |= runs[i]->workers > 1 || mx_kv_name_has(runs[i]->kvstore, MX_KV_DIST);
    }
    snprintf(pr->kvstore, sizeof pr->kvstore, "%s", r->kvstore);
    snprintf(pr->compression, sizeof pr->compression, "%s", r->compression);
    snprintf(pr->workload, sizeof pr->workload, "%s", r->workload);
    snprintf(pr->device_type, sizeof pr->device_type, "%s", r->device_type);
    snprintf(pr->batch_mode, sizeof pr->batch_mode, "%s", r->batch_mode);
    pr->batch = r->batch;
    pr->threads = r->threads_per_device > 0 ? r->threads_per_device : 1;
}

void mx_project_fit(mx_projection *pr, const mx_run_record *const *runs, int n, const int *fit, int nfit,
                    double cores)
{
    enum { MAXR = MX_PROJ_MAX_POINTS * 4 };
    const mx_run_record *use[MAXR], *comm[MAXR];
    parts p[MAXR], cp[MAXR];
    double x[MAXR], y[MAXR];
    int nuse = 0, ncomm = 0, distinct = 0, one_host = 1, per_host = 0;
    pr->skipped[0] = pr->notes[0] = '\0';
    pr->nfit = 0;
    if (n < 1) {
        snprintf(pr->skipped, sizeof pr->skipped, "no run");
        return;
    }
    configure(pr, runs, n);
    pr->update = pr->alpha = pr->beta = pr->gamma = NAN;
    pr->cpu = strcmp(pr->device_type, "cpu") == 0;
    /* the communicators: threads between the CPU workers of one process, else mpi between
     * ranks or NCCL between GPUs, rings both */
    pr->ring = pr->dist || !pr->cpu;
    pr->cores = cores > 0 ? cores : NAN;
    for (int i = 0; i < n && nuse < MAXR; i++) {
        const mx_run_record *r = runs[i];
        if (nfit > 0 && !in_list(r->gpus, fit, nfit)) continue;
        if (run_parts(r, &p[nuse]) < 0) {
            note(pr, "run %s has no phases: not fitted", r->id);
            continue;
        }
        const double rc = r->metrics[MX_COUNTER_HOST_CORES];
        if (!(pr->cores > 0) && isfinite(rc)) pr->cores = rc;
        else if (cores > 0 && isfinite(rc) && rc != cores && !strstr(pr->notes, "cores asked"))
            note(pr, "%g cores asked where run %s had %g: its turns are modelled on the cores asked, and a check "
                     "against its measurement compares two hosts", cores, r->id, rc);
        if (!in_list(r->gpus, pr->fit_gpus, pr->nfit) && pr->nfit < MX_PROJ_MAX_POINTS)
            pr->fit_gpus[pr->nfit++] = r->gpus;
        if (r->noisy) /* a fit to disturbed timings predicts disturbed ones */
            note(pr, "fitted run %s (%d device%s) ran on a busy host (noisy): its timings, and the fit, are suspect",
                 r->id, r->gpus, r->gpus == 1 ? "" : "s");
        int one;
        const int here = devices_on_host(r, &one);
        one_host &= one;
        if (here > per_host) per_host = here;
        use[nuse++] = r;
    }
    for (int i = 1; i < pr->nfit; i++) /* ascending, as they are shown */
        for (int j = i; j > 0 && pr->fit_gpus[j - 1] > pr->fit_gpus[j]; j--) {
            const int t = pr->fit_gpus[j];
            pr->fit_gpus[j] = pr->fit_gpus[j - 1], pr->fit_gpus[j - 1] = t;
        }
    pr->per_host = pr->dist && !one_host ? per_host : 0;
    for (int i = 0; i < pr->nfit; i++) distinct += pr->fit_gpus[i] >= 2;
    if (pr->nfit < 2 || distinct == 0) {
        char list[256] = "";
        for (int i = 0, len = 0; i < pr->nfit && len < (int)sizeof list - 16; i++)
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", i ? "," : "", pr->fit_gpus[i]);
        snprintf(pr->skipped, sizeof pr->skipped,
                 "fitted on %s device count%s (%s): the model needs two, one of them 2 or more devices (where the "
                 "communication is)", pr->nfit ? (pr->nfit == 1 ? "one" : "no") : "no", pr->nfit == 1 ? "" : "s",
                 pr->nfit ? list : "none ok with phases");
        return;
    }
    if (pr->cpu && !(pr->cores > 0)) note(pr, "the host's cores were not recorded: no turns on cores modelled");
    /* the host's batch assembly against the global batch */
    for (int i = 0; i < nuse; i++) x[i] = use[i]->global_batch, y[i] = p[i].data;
    line(x, y, nuse, &pr->d0, &pr->d1);
    double upd = 0;
    int nupd = 0;
    for (int i = 0; i < nuse; i++) {
        if (use[i]->gpus == 1 && p[i].update > 0) upd += p[i].update, nupd++;
        if (use[i]->gpus >= 2 && isfinite(use[i]->metrics[MX_COUNTER_COMM_ROUNDS]))
            cp[ncomm] = p[i], comm[ncomm++] = use[i];
    }
    pr->update = nupd ? upd / nupd : NAN;
    if (fit_comm(pr, comm, cp, ncomm) < 0) return;
    fit_compute(pr, use, p, nuse);
}

/* The model's parts at p devices. */
static void model(const mx_projection *pr, int p, mx_proj_point *pt)
{
    const double global = strcmp(pr->batch_mode, "global") == 0 ? pr->batch : (double)pr->batch * p;
    const double here = pr->per_host > 0 && p > pr->per_host ? pr->per_host : p;
    pt->share_compute = turns(pr, here * pr->threads);
    pt->share_comm = turns(pr, here);
    pt->data = fmax(0, pr->d0 + pr->d1 * global);
    double m = 0; /* one member's communication */
    if (p >= 2 && pr->p_ref >= 2) {
        const double q = pr->p_ref, rounds = pr->ring ? pr->rounds * (p - 1) / (q - 1) : pr->rounds;
        const double bytes = ((p - 1.0) / p) / ((q - 1) / q);
        m = pr->alpha * rounds + (pr->beta * pr->bus_bytes + pr->gamma * pr->reduce_bytes) * bytes;
    }
    pt->compute = pt->share_compute * fmax(0, pr->c0 + pr->c1 * global / p) + pr->overlap * pt->share_comm * m;
    pt->comm = pr->exposed * pt->share_comm * m;
    pt->update = 0;
    if (p == 1 && isfinite(pr->update)) {
        pt->update = pr->update;
    }
    pt->m_step = pt->data + pt->compute + pt->comm + pt->update;
    pt->m_throughput = pt->m_step > 0 ? global / pt->m_step : NAN;
}

void mx_project_predict(const mx_projection *pr, int p, mx_proj_point *pt)
{
    pt->gpus = p;
    model(pr, p, pt);
    /* efficiency against the model's own throughput at the smallest fitted count, so that the
     * line starts at 1 there as the measured points do at the file's smallest count */
    int p0 = 0;
    for (int i = 0; i < pr->nfit; i++)
        if (p0 == 0 || pr->fit_gpus[i] < p0) p0 = pr->fit_gpus[i];
    mx_proj_point ref;
    model(pr, p0, &ref);
    pt->m_efficiency = p0 > 0 && ref.m_throughput > 0 ? pt->m_throughput / (ref.m_throughput * p / p0) : NAN;
    pt->error = pt->measured && pt->throughput > 0 ? pt->m_throughput / pt->throughput - 1 : NAN;
}
