/* A small results file for tests of the store: fixture_record() makes a complete, valid run
 * (the configuration of a sweep row, a few steps and epochs), fixture_dist_record() one of a
 * dist_* kvstore with its rank table; fixture_file() writes a file of n such runs;
 * copy_file() duplicates one so each bad case starts from the good file. */
#ifndef MX_TESTS_RESULTS_FIXTURE_H
#define MX_TESTS_RESULTS_FIXTURE_H

#include "base/status.h"
#include "results/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void fixture_record(mx_run_record *r, int index, int gpus, int nsteps)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "r%04d", index);
    snprintf(r->workload, sizeof r->workload, "mlp");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->kvstore, sizeof r->kvstore, "%s", gpus > 1 ? "device" : "none");
    r->gpus = gpus;
    r->batch = 32;
    r->global_batch = 32 * gpus;
    r->base_lr = r->lr = 0.05;
    r->momentum = 0.9;
    r->wd = 1e-4;
    r->epochs = 2;
    r->repeats = 1;
    r->seed = 1;
    r->threads_per_device = 1;
    r->test_samples = 1000;
    r->nsteps = nsteps;
    r->step_time = malloc((size_t)nsteps * sizeof *r->step_time);
    r->phase_time = malloc((size_t)nsteps * MX_NPHASES * sizeof *r->phase_time);
    r->nloss = nsteps;
    r->loss = malloc((size_t)nsteps * sizeof *r->loss);
    for (int i = 0; i < nsteps; i++) {
        r->step_time[i] = 0.01 * (1 + 0.1 * ((i * 7919 + index) % 13) / 13.0) / gpus;
        r->loss[i] = (float)(2.3 / (1 + i));
        for (int p = 0; p < MX_NPHASES; p++) r->phase_time[i * MX_NPHASES + p] = r->step_time[i] / MX_NPHASES;
    }
    r->nepochs = 2;
    r->test_acc = malloc(2 * sizeof *r->test_acc);
    r->epoch_time = malloc(2 * sizeof *r->epoch_time);
    r->test_acc[0] = 0.7, r->test_acc[1] = 0.8;
    r->epoch_time[0] = 1, r->epoch_time[1] = 2;
    r->wall_time = 2.5;
    mx_record_derive(r);
}

/* A dist_sync run of `workers` worker processes (one device each) and `servers` servers,
 * with its rank table: workers first (rank 0 first), then the servers; worker 1 is a
 * straggler, its median step 2.5 times worker 0's. */
static inline void fixture_dist_record(mx_run_record *r, int index, int workers, int servers)
{
    fixture_record(r, index, workers, 12);
    snprintf(r->kvstore, sizeof r->kvstore, "dist_sync");
    r->workers = workers;
    r->servers = servers;
    r->nranks = workers + servers;
    r->ranks = calloc((size_t)r->nranks, sizeof *r->ranks);
    for (int i = 0; r->ranks && i < r->nranks; i++) {
        mx_rank_row *x = &r->ranks[i];
        const int worker = i < workers;
        const double slow = i == 1 ? 2.5 : 1;
        x->rank = i;
        snprintf(x->host, sizeof x->host, "node-%c", 'a' + i % 2);
        snprintf(x->role, sizeof x->role, "%s", worker ? "worker" : "server");
        x->steps = worker ? 12 : 0;
        x->step_min = worker ? 0.008 * slow : NAN;
        x->step_median = worker ? 0.010 * slow : NAN;
        x->step_p90 = worker ? 0.012 * slow : NAN;
        x->step_max = worker ? 0.020 * slow : NAN;
        x->bytes_per_step = 1e6 * (worker ? 2 : workers * 2);
        x->push_time = worker ? 0.001 : NAN;
        x->pull_time = worker ? 0.002 * slow : NAN;
        x->busy_time = worker ? NAN : 0.003;
    }
    for (int k = MX_COUNTER_NET_BYTES; k <= MX_COUNTER_PULL_TIME; k++) r->metrics[k] = 0.5 + k;
    r->metrics[MX_COUNTER_WORKER_STEP_MIN] = 0.010;
    r->metrics[MX_COUNTER_WORKER_STEP_MEDIAN] = 0.0175;
    r->metrics[MX_COUNTER_WORKER_STEP_MAX] = 0.025;
}

/* n runs on 1, 2, 1, 2, ... devices. 0, or a negative MX_E* (message in mx_last_error). */
static inline int fixture_file(const char *path, int n, int nsteps)
{
    mx_results_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.mxbench_version, sizeof meta.mxbench_version, "test");
    MX_TRY(mx_results_create(path, &meta, 1));
    for (int i = 0; i < n; i++) {
        mx_run_record r;
        fixture_record(&r, i, 1 + i % 2, nsteps);
        int rc = mx_results_append(path, &r);
        mx_record_free(&r);
        MX_TRY(rc);
    }
    return MX_OK;
}

/* The bytes of a file (malloc'd, *n set), or NULL. */
static inline char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    if (buf) *n = (size_t)len;
    return buf;
}

static inline int copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *buf = slurp(from, &n);
    FILE *f = buf ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    free(buf);
    return ok ? 0 : -1;
}

#endif
