/* `mxbench train` as a rank of a dist_* MPI job (dist.h). */
#include "dist.h"
#include "commands.h"
#include "base/status.h"
#include "results/stats.h"
#include "cluster/slurm.h"
#include "kvstore/ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mx_dist_local_ranks(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!v) v = getenv("MPI_LOCALNRANKS");
    /* ranks started by srun (Open MPI's direct launch) have Slurm's count instead */
    const int n = v ? atoi(v) : mx_slurm_step_local_tasks();
    return n > 0 ? n : 1;
}

int mx_dist_start(mx_kv_mode mode, int servers, mx_cluster **out)
{
    *out = NULL;
    mx_cluster *c = NULL;
    const int rc = mx_cluster_init(&c, mode, servers);
    if (rc == MX_OK) {
        *out = c;
        return 0;
    }
    if (!c || c->rank == 0) fprintf(stderr, "mxbench train: %s\n", mx_last_error());
    mx_cluster_end(c);
    return mx_exit_status(rc);
}

/* ---- the end of the job: one row per rank */

/* What every row starts with: which rank, where, in which role. */
static void row_head(const mx_cluster *c, mx_rank_row *r)
{
    memset(r, 0, sizeof *r);
    r->rank = c->rank;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    snprintf(r->role, sizeof r->role, "%s", mx_role_name(c->role));
}

static void worker_row(const mx_cluster *c, const mx_run_record *rec, mx_rank_row *r)
{
    row_head(c, r);
    r->steps = rec->nsteps;
    r->step_min = r->step_max = NAN;
    for (int i = 0; i < rec->nsteps; i++) {
        if (!(rec->step_time[i] >= r->step_min)) r->step_min = rec->step_time[i];
        if (!(rec->step_time[i] <= r->step_max)) r->step_max = rec->step_time[i];
    }
    r->step_median = mx_stats_median(rec->step_time, rec->nsteps);
    r->step_p90 = mx_stats_quantile(rec->step_time, rec->nsteps, 0.9);
    r->bytes_per_step = rec->metrics[MX_COUNTER_NET_BYTES];
    r->push_time = rec->metrics[MX_COUNTER_PUSH_TIME];
    r->pull_time = rec->metrics[MX_COUNTER_PULL_TIME];
    r->busy_time = NAN;
}

static void server_row(const mx_cluster *c, const mx_ps_stats *st, mx_rank_row *r)
{
    row_head(c, r);
    r->step_min = r->step_median = r->step_p90 = r->step_max = NAN;
    r->push_time = r->pull_time = NAN;
    const double rounds = st->rounds > 0 ? (double)st->rounds : NAN;
    r->bytes_per_step = st->bytes / rounds;
    r->busy_time = st->busy / rounds;
}

/* Staleness figures from the summed histogram; NaN when no push was counted. */
static void staleness(const long *hist, long max, double *fig)
{
    long n = 0;
    double sum = 0;
    for (int b = 0; b < MX_PS_STALE_BINS; b++) n += hist[b], sum += (double)b * hist[b];
    double *mean = &fig[MX_COUNTER_STALENESS_MEAN], *p50 = &fig[MX_COUNTER_STALENESS_P50],
           *p99 = &fig[MX_COUNTER_STALENESS_P99], *mx = &fig[MX_COUNTER_STALENESS_MAX];
    if (n == 0) {
        *mean = *p50 = *p99 = *mx = NAN;
        return;
    }
    /* the last bin holds everything beyond it: the mean is then a lower bound */
    *mean = sum / n;
    long seen = 0;
    *p50 = *p99 = NAN;
    for (int b = 0; b < MX_PS_STALE_BINS; b++) {
        seen += hist[b];
        if (isnan(*p50) && seen * 2 >= n) *p50 = b;
        if (isnan(*p99) && seen * 100 >= n * 99) *p99 = b;
    }
    *mx = (double)max;
}

/* Every rank's row and the servers' staleness to worker 0, which puts them in rec. A
 * server's largest staleness travels in its row's `steps` (servers run no steps): the
 * histograms are summed, and a sum of maxima would mean nothing. */
static int gather(mx_cluster *c, const mx_rank_row *mine, const mx_ps_stats *ps, mx_run_record *rec)
{
    mx_rank_row w = *mine; /* travels as bytes: the same struct on every rank of one build */
    if (ps) w.steps = (int)(ps->stale_max < 2147483647L ? ps->stale_max : 2147483647L);
    static long hist[MX_PS_STALE_BINS], hist_sum[MX_PS_STALE_BINS];
    if (ps) memcpy(hist, ps->stale, sizeof hist);
    else memset(hist, 0, sizeof hist);
    const int root = c->rank == c->worker_rank[0];
    mx_rank_row *rows = root ? calloc(c->size, sizeof *rows) : NULL;
    double *med = root ? calloc(c->size, sizeof *med) : NULL;
    int rc = root && (!rows || !med) ? mx_error(MX_ENOMEM, "out of memory for %d ranks' figures", c->size) : MX_OK;
    /* collective: a rank that failed to allocate still takes part, and fails after */
    const int grc = mx_cluster_gather(c, &w, sizeof w, rows, hist, hist_sum, MX_PS_STALE_BINS);
    if (rc == MX_OK) rc = grc;
    if (rc == MX_OK && root) {
        rec->ranks = calloc(c->size, sizeof *rec->ranks);
        if (!rec->ranks) rc = mx_error(MX_ENOMEM, "out of memory for %d ranks' figures", c->size);
    }
    if (rc == MX_OK && root) {
        rec->nranks = c->size;
        long stale_max = 0;
        int nmed = 0;
        for (int r = 0; r < c->size; r++) {
            rec->ranks[r] = rows[r];
            if (strcmp(rows[r].role, mx_role_name(MX_ROLE_SERVER)) == 0) {
                if (rows[r].steps > stale_max) stale_max = rows[r].steps;
                rec->ranks[r].steps = 0;
            } else if (!isnan(rows[r].step_median)) {
                med[nmed++] = rows[r].step_median;
            }
        }
        if (c->nservers > 0 && mx_kv_mode_has(mx_kv_mode_of(rec->kvstore), MX_KV_ASYNC))
            staleness(hist_sum, stale_max, rec->metrics);
        if (nmed > 0) {
            double lo = med[0], hi = med[0];
            for (int i = 1; i < nmed; i++) lo = med[i] < lo ? med[i] : lo, hi = med[i] > hi ? med[i] : hi;
            rec->metrics[MX_COUNTER_WORKER_STEP_MIN] = lo;
            rec->metrics[MX_COUNTER_WORKER_STEP_MEDIAN] = mx_stats_median(med, nmed);
            rec->metrics[MX_COUNTER_WORKER_STEP_MAX] = hi;
        }
    }
    /* collective as well: the job's timeline, which worker 0 writes */
    if (grc == MX_OK) {
        const int trc = mx_cluster_trace_merge(c);
        if (rc == MX_OK) rc = trc;
    }
    free(rows);
    free(med);
    return rc;
}

int mx_dist_serve(mx_cluster *c)
{
    mx_ps_stats *st = calloc(1, sizeof *st);
    int rc = st ? mx_ps_serve(c, st) : mx_error(MX_ENOMEM, "out of memory for the server's figures");
    if (rc == MX_OK) {
        mx_rank_row row;
        server_row(c, st, &row);
        rc = gather(c, &row, st, NULL);
    }
    free(st);
    if (rc == MX_OK) return 0;
    fprintf(stderr, "mxbench train: rank %d (server %d on %s): %s\n", c->rank, c->index, c->host, mx_last_error());
    fflush(stderr);
    mx_cluster_abort(c, 1);
    return 1;
}

int mx_dist_finish_worker(mx_cluster *c, int rc, mx_run_record *rec)
{
    if (rc == MX_OK && c->index == 0 && c->nservers > 0) rc = mx_ps_end_job(c);
    if (rc == MX_OK) {
        mx_rank_row row;
        worker_row(c, rec, &row);
        rc = gather(c, &row, NULL, rec);
    }
    if (rc == MX_OK) return MX_OK;
    fprintf(stderr, "mxbench train: rank %d (worker %d on %s): %s\n", c->rank, c->index, c->host, mx_last_error());
    fflush(stderr);
    mx_cluster_abort(c, mx_exit_status(rc)); /* 2 for a bad value (mpirun passes it on) */
    return rc;
}

void mx_dist_end(mx_cluster *c) { mx_cluster_end(c); }

void mx_dist_abort(mx_cluster *c, int code)
{
    if (c) mx_cluster_abort(c, code);
}
