/* Tests of the results module: HDF5 round trip, scaling figures, error handling of foreign
 * files, crash safety of append, and the compare verdicts that CI gates on. The statistics
 * are in test_stats.c, the reader's checks in test_results_reader.c, write failures (a full
 * disk) in test_results_disk.c. */
#include "base/status.h"
#include "results/compare.h"
#include "results/results.h"
#include "results/stats.h"
#include "tests/check.h"

#include <hdf5.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static const char *in_dir(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* ---- synthetic runs */

static uint64_t rng_state;

static double uniform(void) { return check_uniform(&rng_state); }

/* Step times around `mean` with +-noise uniform jitter and a linear drift of `drift`
 * (fraction) from first to last step: a shared machine that slowly warms up or gets busier. */
static void fill_steps(double *st, int n, double mean, double noise, double drift)
{
    for (int i = 0; i < n; i++)
        st[i] = mean * (1 + drift * i / n) * (1 + noise * (2 * uniform() - 1));
}

static void make_record(mx_run_record *r, const char *id, int gpus, int batch, int nsteps, uint64_t seed)
{
    mx_record_init(r);
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->workload, sizeof r->workload, "lenet");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->kvstore, sizeof r->kvstore, "device");
    snprintf(r->lr_scaling, sizeof r->lr_scaling, "linear");
    r->gpus = gpus;
    r->batch = batch;
    r->global_batch = batch * gpus;
    r->base_lr = 0.05;
    r->lr = 0.05 * gpus;
    r->momentum = 0.9;
    r->wd = 1e-4;
    r->epochs = 3;
    r->warmup_steps = 5;
    r->repeats = 2;
    r->seed = 42;
    r->threads_per_device = 2;
    r->target_acc = 0.8;
    r->test_samples = 10000;
    r->bytes_per_step = 4.0 * 61706 * gpus;
    r->comm_overlap = 0.25;
    r->wall_time = 12.5;
    /* scaling below linear: each doubling costs 10% efficiency */
    double per_step = 0.010 * pow(1.1, log2(gpus));
    r->nsteps = nsteps;
    r->step_time = malloc((size_t)nsteps * sizeof *r->step_time);
    r->phase_time = malloc((size_t)nsteps * MX_NPHASES * sizeof *r->phase_time);
    fill_steps(r->step_time, nsteps, per_step, 0.1, 0.02);
    for (int i = 0; i < nsteps * MX_NPHASES; i++) r->phase_time[i] = r->step_time[i / MX_NPHASES] / MX_NPHASES;
    r->nloss = nsteps / 2;
    r->loss = malloc((size_t)r->nloss * sizeof *r->loss);
    for (int i = 0; i < r->nloss; i++) r->loss[i] = (float)(2.3 * exp(-i / 50.0));
    r->nepochs = 3;
    r->test_acc = malloc(3 * sizeof *r->test_acc);
    r->epoch_time = malloc(3 * sizeof *r->epoch_time);
    for (int e = 0; e < 3; e++) {
        r->test_acc[e] = 0.7 + 0.06 * e;
        r->epoch_time[e] = 4.0 * (e + 1);
    }
    mx_record_derive(r);
}

static void make_failed(mx_run_record *r, const char *id, int gpus)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->workload, sizeof r->workload, "lenet");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->kvstore, sizeof r->kvstore, "device");
    snprintf(r->lr_scaling, sizeof r->lr_scaling, "linear");
    snprintf(r->status, sizeof r->status, "failed");
    snprintf(r->reason, sizeof r->reason, "exit status 134 (SIGABRT)\nstderr: out of memory allocating 1.2 GB");
    r->exit_status = 134;
    r->gpus = gpus;
    r->batch = 64;
    r->global_batch = 64 * gpus;
}

static mx_results_meta test_meta(void)
{
    mx_results_meta m;
    memset(&m, 0, sizeof m);
    snprintf(m.mxbench_version, sizeof m.mxbench_version, "0.1.0");
    snprintf(m.git_revision, sizeof m.git_revision, "abc1234");
    snprintf(m.host, sizeof m.host, "testhost");
    snprintf(m.hdf5, sizeof m.hdf5, "1.10");
    snprintf(m.start_time, sizeof m.start_time, "2024-01-02T03:04:05Z");
    snprintf(m.command_line, sizeof m.command_line, "mxbench sweep --gpus 1,2,4 --out \"x y.h5\"");
    return m;
}

/* ---- field-by-field comparison */

static int same_double(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

#define EQ_STR(f) CHECK(strcmp(a->f, b->f) == 0, "%s: " #f " '%s' != '%s'", a->id, a->f, b->f)
#define EQ_INT(f) CHECK(a->f == b->f, "%s: " #f " %d != %d", a->id, a->f, b->f)
#define EQ_DBL(f) CHECK(same_double(a->f, b->f), "%s: " #f " %.17g != %.17g", a->id, a->f, b->f)

static void check_same_record(const mx_run_record *a, const mx_run_record *b)
{
    EQ_STR(id); EQ_STR(workload); EQ_STR(dataset); EQ_STR(strategy); EQ_STR(kvstore);
    EQ_STR(compression); EQ_STR(amp); EQ_STR(device_type); EQ_STR(lr_scaling); EQ_STR(batch_mode);
    EQ_INT(gpus); EQ_INT(batch); EQ_INT(global_batch);
    EQ_DBL(base_lr); EQ_DBL(lr); EQ_DBL(momentum); EQ_DBL(wd); EQ_DBL(warmup_epochs);
    EQ_INT(epochs); EQ_INT(steps); EQ_INT(warmup_steps); EQ_INT(repeats); EQ_INT(seed);
    EQ_INT(threads_per_device); EQ_DBL(target_acc); EQ_INT(test_samples);
    EQ_STR(status); EQ_STR(reason); EQ_INT(exit_status);
    EQ_DBL(throughput); EQ_DBL(throughput_ci_low); EQ_DBL(throughput_ci_high); EQ_DBL(throughput_iqr);
    EQ_DBL(step_time_median); EQ_DBL(speedup); EQ_DBL(efficiency); EQ_DBL(final_test_acc);
    EQ_DBL(time_to_acc); EQ_DBL(bytes_per_step); EQ_DBL(comm_overlap); EQ_DBL(wall_time);
    EQ_INT(nsteps); EQ_INT(nloss); EQ_INT(nepochs);
    int diff = 0;
    for (int i = 0; a->step_time && b->step_time && i < a->nsteps; i++) diff += a->step_time[i] != b->step_time[i];
    for (int i = 0; a->phase_time && b->phase_time && i < a->nsteps * MX_NPHASES; i++)
        diff += a->phase_time[i] != b->phase_time[i];
    for (int i = 0; a->loss && b->loss && i < a->nloss; i++) diff += a->loss[i] != b->loss[i];
    for (int i = 0; a->test_acc && b->test_acc && i < a->nepochs; i++)
        diff += a->test_acc[i] != b->test_acc[i] || a->epoch_time[i] != b->epoch_time[i];
    CHECK(diff == 0, "%s: %d series values differ", a->id, diff);
    CHECK(!a->step_time == !b->step_time && !a->phase_time == !b->phase_time && !a->loss == !b->loss &&
              !a->test_acc == !b->test_acc && !a->epoch_time == !b->epoch_time,
          "%s: a series is present on one side only", a->id);
}

/* ---- store tests */

enum { NREC = 5 };

static void test_round_trip(void)
{
    const char *path = in_dir("study.h5");
    mx_results_meta meta = test_meta();
    CHECK(mx_results_create(path, &meta, 0) == MX_OK, "create: %s", mx_last_error());

    mx_run_record recs[NREC];
    make_record(&recs[0], "r0000", 1, 64, 300, 1);
    make_record(&recs[1], "r0001", 2, 64, 300, 2);
    make_record(&recs[2], "r0002", 4, 64, 300, 3);
    make_record(&recs[3], "r0003", 2, 128, 50, 4); /* alone in its series, without one device */
    free(recs[3].phase_time);                      /* and without a phase breakdown */
    recs[3].phase_time = NULL;
    make_failed(&recs[4], "r0004", 8);
    for (int i = 0; i < NREC; i++)
        CHECK(mx_results_append(path, &recs[i]) == MX_OK, "append %d: %s", i, mx_last_error());
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0, "working copy %s left behind", tmp);

    mx_records_derive_scaling(recs, NREC);
    mx_results got;
    int rc = mx_results_load(path, &got);
    CHECK(rc == MX_OK, "load: %s", mx_last_error());
    CHECK(got.schema_version == MX_RESULTS_SCHEMA_VERSION, "schema %d", got.schema_version);
    CHECK(strcmp(got.meta.command_line, meta.command_line) == 0, "command_line '%s'", got.meta.command_line);
    CHECK(strcmp(got.meta.host, "testhost") == 0 && got.meta.gpu_model[0] == '\0', "host/gpu_model");
    CHECK(got.nruns == NREC, "nruns %d", got.nruns);
    for (int i = 0; rc == MX_OK && i < got.nruns && i < NREC; i++) check_same_record(&recs[i], &got.runs[i]);

    /* speedup/efficiency against gpus=1 of the same series, recomputed on every append */
    const mx_run_record *g = got.runs;
    if (got.nruns == NREC) {
        CHECK(fabs(g[0].speedup - 1) < 1e-12 && fabs(g[0].efficiency - 1) < 1e-12, "g1 speedup %g", g[0].speedup);
        CHECK(fabs(g[2].speedup - g[2].throughput / g[0].throughput) < 1e-9, "g4 speedup %g", g[2].speedup);
        CHECK(fabs(g[2].efficiency - g[2].speedup / 4) < 1e-9, "g4 efficiency %g", g[2].efficiency);
        /* the generator loses 10% per doubling: 4 gpus run at ~0.83 efficiency */
        CHECK(fabs(g[2].efficiency - 1 / 1.21) < 0.03, "g4 efficiency %g, expected ~0.83", g[2].efficiency);
        /* no one-device run to compare with: blank, not 1.0 on the ideal line */
        CHECK(isnan(g[3].speedup) && isnan(g[3].efficiency), "lone 2-device series speedup %g", g[3].speedup);
        CHECK(isnan(g[4].speedup) && isnan(g[4].throughput), "failed run has figures");
        CHECK(g[4].nsteps == 0 && !g[4].step_time && !g[4].loss, "failed run has series");
    }

    /* a duplicate id is refused and leaves the file as it was */
    CHECK(mx_results_append(path, &recs[1]) == MX_EINVAL, "duplicate id accepted");
    CHECK(strstr(mx_last_error(), "r0001") != NULL, "message: %s", mx_last_error());
    CHECK(access(tmp, F_OK) != 0, "working copy left after a failed append");
    mx_results again;
    CHECK(mx_results_load(path, &again) == MX_OK && again.nruns == NREC, "file changed by a refused append");
    mx_results_free(&again);

    /* create refuses an existing file unless forced */
    CHECK(mx_results_create(path, &meta, 0) == MX_EIO, "create over an existing file");
    CHECK(strstr(mx_last_error(), "--force") != NULL, "message: %s", mx_last_error());
    CHECK(mx_results_load(path, &again) == MX_OK && again.nruns == NREC, "refused create changed the file");
    mx_results_free(&again);

    mx_results_free(&got);
    for (int i = 0; i < NREC; i++) mx_record_free(&recs[i]);
}

static void test_force_and_copy(void)
{
    const char *path = in_dir("forced.h5");
    mx_results_meta meta = test_meta();
    mx_run_record r, c;
    make_record(&r, "r0000", 1, 32, 40, 9);
    CHECK(mx_results_create(path, &meta, 0) == MX_OK, "create: %s", mx_last_error());
    CHECK(mx_results_append(path, &r) == MX_OK, "append: %s", mx_last_error());
    CHECK(mx_results_create(path, &meta, 1) == MX_OK, "forced create: %s", mx_last_error());
    mx_results got;
    CHECK(mx_results_load(path, &got) == MX_OK && got.nruns == 0, "forced create kept %d runs", got.nruns);
    mx_results_free(&got);

    CHECK(mx_record_copy(&c, &r) == MX_OK, "copy");
    CHECK(c.step_time != r.step_time && c.loss != r.loss, "copy shares series");
    check_same_record(&r, &c);
    mx_record_free(&c);
    mx_record_free(&r);
}

static int count_runs(const char *path);

/* --retry-failed: a failed run is replaced in place (same id, same row), and the scaling
 * figures follow the new outcome. */
static void test_replace(void)
{
    const char *path = in_dir("replaced.h5");
    mx_results_meta meta = test_meta();
    mx_run_record ok1, failed2, ok2;
    make_record(&ok1, "r0000", 1, 64, 60, 21);
    make_failed(&failed2, "r0001", 2);
    make_record(&ok2, "r0001", 2, 64, 60, 22);
    CHECK(mx_results_create(path, &meta, 0) == MX_OK && mx_results_append(path, &ok1) == MX_OK &&
              mx_results_append(path, &failed2) == MX_OK, "setup: %s", mx_last_error());
    CHECK(mx_results_replace(path, &ok2) == MX_OK, "replace: %s", mx_last_error());
    mx_results got;
    CHECK(mx_results_load(path, &got) == MX_OK && got.nruns == 2, "after replace: %s", mx_last_error());
    if (got.nruns == 2) {
        CHECK(strcmp(got.runs[1].id, "r0001") == 0 && strcmp(got.runs[1].status, "ok") == 0 && got.runs[1].nsteps == 60,
              "row 1 is %s %s with %d steps", got.runs[1].id, got.runs[1].status, got.runs[1].nsteps);
        CHECK(fabs(got.runs[1].speedup - got.runs[1].throughput / got.runs[0].throughput) < 1e-9, "speedup %g",
              got.runs[1].speedup);
    }
    mx_results_free(&got);
    snprintf(ok2.id, sizeof ok2.id, "r0009");
    CHECK(mx_results_replace(path, &ok2) == MX_EINVAL && strstr(mx_last_error(), "r0009"),
          "replacing a missing run: %s", mx_last_error());
    CHECK(count_runs(path) == 2, "a refused replace changed the file");
    mx_record_free(&ok1);
    mx_record_free(&failed2);
    mx_record_free(&ok2);
    unlink(path);
}

static void set_schema_version(const char *path, int v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT, &v);
    H5Aclose(a);
    H5Fclose(f);
}

/* Other tools (h5py by default) write variable-length strings; the reader takes both kinds. */
static void test_varlen_string(void)
{
    const char *path = in_dir("forced.h5");
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "host");
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    H5Tset_size(t, H5T_VARIABLE);
    hid_t a = H5Acreate2(f, "host", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    const char *host = "written-by-h5py";
    H5Awrite(a, t, &host);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    H5Fclose(f);
    mx_results got;
    CHECK(mx_results_load(path, &got) == MX_OK, "load: %s", mx_last_error());
    CHECK(strcmp(got.meta.host, host) == 0, "variable-length host '%s'", got.meta.host);
    mx_results_free(&got);
}

static void check_load_fails(const char *path, int code, const char *what, const char *needle)
{
    mx_results r;
    int rc = mx_results_load(path, &r);
    CHECK(rc == code, "%s: got %d (%s), want %d", what, rc, mx_last_error(), code);
    CHECK(strstr(mx_last_error(), path) != NULL, "%s: message does not name the file: %s", what, mx_last_error());
    CHECK(strstr(mx_last_error(), needle) != NULL, "%s: message lacks '%s': %s", what, needle, mx_last_error());
    CHECK(r.nruns == 0 && r.runs == NULL, "%s: partial result left", what);
}

static void test_bad_files(void)
{
    check_load_fails(in_dir("missing.h5"), MX_EIO, "missing file", "No such file");

    const char *garbage = in_dir("garbage.h5");
    FILE *f = fopen(garbage, "wb");
    for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
    fclose(f);
    check_load_fails(garbage, MX_EFORMAT, "garbage", "not an HDF5 file");

    const char *foreign = in_dir("foreign.h5");
    hid_t fid = H5Fcreate(foreign, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 3;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t ds = H5Dcreate2(fid, "data", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(fid);
    check_load_fails(foreign, MX_EFORMAT, "foreign HDF5", "schema_version");
    mx_run_record r;
    make_failed(&r, "r0000", 1);
    CHECK(mx_results_append(foreign, &r) == MX_EFORMAT, "append to a foreign file: %s", mx_last_error());

    const char *newer = in_dir("newer.h5");
    mx_results_meta meta = test_meta();
    mx_results_create(newer, &meta, 0);
    set_schema_version(newer, MX_RESULTS_SCHEMA_VERSION + 1);
    check_load_fails(newer, MX_EFORMAT, "newer schema", "newer");

    CHECK(mx_results_create(in_dir("no/such/dir.h5"), &meta, 0) == MX_EIO, "create in a missing directory");
    snprintf(r.id, sizeof r.id, "a/b");
    CHECK(mx_results_append(newer, &r) == MX_EINVAL, "id with a slash accepted");
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The record is made once, so that the child spends its time appending, where the kills
 * are meant to land. */
static void append_stream(const char *path, int round)
{
    mx_run_record r;
    make_record(&r, "", 2, 64, 400, (uint64_t)round);
    for (int i = 0; i < 100000; i++) {
        snprintf(r.id, sizeof r.id, "k%d-%05d", round, i);
        mx_results_append(path, &r);
    }
    mx_record_free(&r);
}

static int count_runs(const char *path)
{
    mx_results got;
    int rc = mx_results_load(path, &got), n = got.nruns;
    mx_results_free(&got);
    return rc == MX_OK ? n : -1;
}

/* Kills a child in the middle of a stream of appends, at moments spread over the length of
 * one append (measured here, so the test means the same under valgrind): whatever the
 * moment, the file must load, and hold no fewer runs than before. */
static void test_kill_during_append(void)
{
    const char *path = in_dir("killed.h5");
    mx_results_meta meta = test_meta();
    mx_results_create(path, &meta, 0);
    mx_run_record r;
    make_record(&r, "warm", 1, 64, 400, 7);
    double t0 = now();
    CHECK(mx_results_append(path, &r) == MX_OK, "append: %s", mx_last_error());
    double one = now() - t0;
    mx_record_free(&r);
    static const double at[] = {0.2, 0.5, 0.9, 1.4, 2.2, 3.5, 6, 10, -1};
    int before = 1, mid = 0;
    for (int round = 0; round < (int)(sizeof at / sizeof at[0]); round++) {
        pid_t pid = fork();
        if (pid == 0) {
            append_stream(path, round);
            _exit(0);
        }
        if (at[round] > 0) {
            double wait = at[round] * one;
            struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        } else { /* the last round waits for a finished append, so the test cannot pass idly */
            for (double end = now() + 30; count_runs(path) <= before && now() < end;) usleep(1000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)pid);
        mid += unlink(tmp) == 0; /* what a killed writer leaves behind: harmless, removed by hand */
        int n = count_runs(path);
        CHECK(n >= before, "round %d: after a kill the file %s (%d runs before): %s", round,
              n < 0 ? "is unreadable" : "lost runs", before, n < 0 ? mx_last_error() : "");
        if (n > before) before = n;
    }
    CHECK(before > 1, "no append finished in the last round");
    printf("kill during append: %d of %d kills hit a working copy, file intact each time (%d runs)\n", mid,
           (int)(sizeof at / sizeof at[0]), before);
}


/* ---- compare verdicts */

static void test_verdicts(void)
{
    CHECK(mx_compare_verdict(0.80, 0.75, 0.85, 0.05) == MX_VERDICT_REGRESSION, "clear regression");
    CHECK(mx_compare_verdict(0.94, 0.90, 0.98, 0.05) == MX_VERDICT_UNSURE, "interval straddles threshold");
    CHECK(mx_compare_verdict(0.97, 0.90, 1.04, 0.05) == MX_VERDICT_SAME, "within threshold");
    CHECK(mx_compare_verdict(1.20, 1.10, 1.30, 0.05) == MX_VERDICT_IMPROVEMENT, "clear improvement");
    CHECK(mx_compare_verdict(0.80, NAN, NAN, 0.05) == MX_VERDICT_UNSURE, "no interval: at most ~");
    CHECK(mx_compare_verdict(NAN, NAN, NAN, 0.05) == MX_VERDICT_NA, "no ratio");
    double lo, hi;
    mx_compare_ratio_ci(100, 90, 110, 100, 90, 110, &lo, &hi);
    CHECK(lo < 1 && hi > 1 && lo > 0.85 && hi < 1.17, "ratio CI [%g, %g]", lo, hi);
    CHECK(mx_compare_metric_parse("test_acc") == MX_METRIC_TEST_ACC && mx_compare_metric_parse("x") == -1, "parse");
}

static void rederive(mx_run_record *r, int repeats)
{
    r->repeats = repeats;
    mx_record_derive(r);
}

/* A 20% slowdown is called a regression, and (the other way round) an improvement. */
static void check_slowdown(int repeats)
{
    mx_run_record base, slow;
    make_record(&base, "r0000", 2, 64, 400, 100);
    rederive(&base, repeats);
    CHECK(mx_record_copy(&slow, &base) == MX_OK, "copy");
    for (int i = 0; i < slow.nsteps; i++) slow.step_time[i] *= 1.25; /* 20% less throughput */
    mx_record_derive(&slow);
    mx_comparison c;
    mx_compare_runs(&base, &slow, MX_METRIC_THROUGHPUT, 0.05, &c);
    CHECK(c.verdict == MX_VERDICT_REGRESSION, "repeats %d, 20%% slowdown: %s, ratio %g [%g, %g]", repeats,
          mx_compare_verdict_name(c.verdict), c.ratio, c.ratio_lo, c.ratio_hi);
    CHECK(fabs(c.ratio - 0.8) < 1e-9, "ratio %g", c.ratio);
    printf("repeats %d: 20%% slowdown -> ratio %.3f [%.3f, %.3f] %s\n", repeats, c.ratio, c.ratio_lo, c.ratio_hi,
           mx_compare_verdict_name(c.verdict));
    mx_compare_runs(&slow, &base, MX_METRIC_THROUGHPUT, 0.05, &c);
    CHECK(c.verdict == MX_VERDICT_IMPROVEMENT, "repeats %d, reverse: %s", repeats, mx_compare_verdict_name(c.verdict));
    mx_record_free(&base);
    mx_record_free(&slow);
}

/* A/A: the same configuration run twice, independent +-10% noise and 2% drift each time. */
static void check_aa(int repeats)
{
    enum { PAIRS = 40 };
    int same = 0, covers = 0;
    for (int k = 0; k < PAIRS; k++) {
        mx_run_record a, b;
        mx_comparison c;
        make_record(&a, "a", 2, 64, 400, 1000 + 2 * k);
        make_record(&b, "b", 2, 64, 400, 1001 + 2 * k);
        rederive(&a, repeats);
        rederive(&b, repeats);
        mx_compare_runs(&a, &b, MX_METRIC_THROUGHPUT, 0.05, &c);
        same += c.verdict == MX_VERDICT_SAME;
        covers += c.ratio_lo <= 1 && 1 <= c.ratio_hi;
        mx_record_free(&a);
        mx_record_free(&b);
    }
    CHECK(same == PAIRS, "repeats %d, A/A: %d of %d pairs judged same", repeats, same, PAIRS);
    /* the ratio interval should hold 1 for ~95% of A/A pairs; 34/40 allows for 40 trials */
    CHECK(covers >= 34, "repeats %d, A/A: ratio interval holds 1 in only %d of %d pairs", repeats, covers, PAIRS);
    printf("repeats %d: A/A throughput %d/%d same, ratio interval holds 1 in %d/%d\n", repeats, same, PAIRS,
           covers, PAIRS);
}

static void test_compare_runs(void)
{
    for (int repeats = 1; repeats <= 3; repeats++) {
        check_slowdown(repeats);
        check_aa(repeats);
    }
    mx_run_record base, twin;
    mx_comparison c;
    make_record(&base, "r0000", 2, 64, 50, 100);
    twin = base;
    twin.final_test_acc = 0.80; /* from 0.82 on 10000 samples: 2.4% lower, well resolved */
    base.final_test_acc = 0.82;
    mx_compare_runs(&base, &twin, MX_METRIC_TEST_ACC, 0.01, &c);
    CHECK(c.verdict == MX_VERDICT_REGRESSION, "accuracy drop: %s [%g, %g]", mx_compare_verdict_name(c.verdict),
          c.ratio_lo, c.ratio_hi);
    twin.final_test_acc = 0.818;
    mx_compare_runs(&base, &twin, MX_METRIC_TEST_ACC, 0.01, &c);
    CHECK(c.verdict == MX_VERDICT_SAME, "accuracy noise: %s", mx_compare_verdict_name(c.verdict));
    twin.test_samples = 100; /* a 5-point drop on 100 samples is within binomial noise */
    twin.final_test_acc = 0.77;
    mx_compare_runs(&base, &twin, MX_METRIC_TEST_ACC, 0.01, &c);
    CHECK(c.verdict == MX_VERDICT_UNSURE, "small test set: %s [%g, %g]", mx_compare_verdict_name(c.verdict),
          c.ratio_lo, c.ratio_hi);
    mx_record_free(&base);
}

static void test_keys_and_derive(void)
{
    mx_run_record a, b;
    make_record(&a, "x", 2, 64, 50, 1);
    make_record(&b, "y", 4, 64, 50, 2);
    char ka[1024], kb[1024], sa[1024], sb[1024];
    mx_record_config_key(&a, ka, sizeof ka);
    mx_record_config_key(&b, kb, sizeof kb);
    mx_record_series_key(&a, sa, sizeof sa);
    mx_record_series_key(&b, sb, sizeof sb);
    CHECK(strcmp(ka, kb) != 0 && strcmp(sa, sb) == 0, "keys: %s / %s", ka, sa);
    CHECK(strstr(ka, "gpus=2;") && strstr(ka, "global_batch=128;") && !strstr(sa, "gpus="), "key: %s", ka);
    CHECK(strstr(ka, "workload=lenet;dataset=synthetic;") == ka && strstr(ka, "base_lr=0.05;"), "key: %s", ka);
    CHECK(strstr(ka, "id=") == NULL, "id in key: %s", ka);
    char small[16];
    mx_record_config_key(&a, small, sizeof small);
    CHECK(strlen(small) == 15, "truncated key '%s'", small);

    /* time to accuracy: first epoch end at or above the target (0.7, 0.76, 0.82 vs 0.8) */
    CHECK(a.time_to_acc == 12.0 && a.final_test_acc == 0.82, "time_to_acc %g, final %g", a.time_to_acc,
          a.final_test_acc);
    a.target_acc = 0.9;
    mx_record_derive(&a);
    CHECK(isnan(a.time_to_acc), "unreached target gives %g", a.time_to_acc);
    CHECK(fabs(a.throughput - a.global_batch / a.step_time_median) < 0.01 * a.throughput, "throughput %g vs %g",
          a.throughput, a.global_batch / a.step_time_median);
    CHECK(a.throughput_ci_low < a.throughput && a.throughput < a.throughput_ci_high && a.throughput_iqr > 0, "CI");

    /* model rows at the pipeline's default (1 micro-batch on one device, 4 per stage beyond)
     * are one series; a chosen count is a series of its own */
    snprintf(a.strategy, sizeof a.strategy, "model"), snprintf(b.strategy, sizeof b.strategy, "model");
    a.gpus = 1, a.global_batch = 128, a.micro_batches = 1;
    b.gpus = 2, b.global_batch = 128, b.micro_batches = 8;
    mx_record_series_key(&a, sa, sizeof sa);
    mx_record_series_key(&b, sb, sizeof sb);
    CHECK(strcmp(sa, sb) == 0 && strstr(sa, "micro_batches=auto"), "model series at the default: %s / %s", sa, sb);
    b.micro_batches = 2;
    mx_record_series_key(&b, sb, sizeof sb);
    CHECK(strcmp(sa, sb) != 0 && strstr(sb, "micro_batches=2"), "model series of 2 micro-batches: %s", sb);
    mx_record_free(&a);
    mx_record_free(&b);
}

static void remove_dir(void)
{
    static const char *const files[] = {"study.h5", "forced.h5", "garbage.h5", "foreign.h5", "newer.h5", "killed.h5"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(in_dir(files[i]));
    rmdir(dir);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "/tmp/mx-test-results-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    test_keys_and_derive();
    test_verdicts();
    test_compare_runs();
    test_round_trip();
    test_force_and_copy();
    test_replace();
    test_varlen_string();
    test_bad_files();
    test_kill_during_append();
    /* "--keep" leaves the files for a look with h5dump or mxbench report */
    if (argc > 1 && strcmp(argv[1], "--keep") == 0)
        printf("files kept in %s\n", dir);
    else
        remove_dir();
    return check_summary("test_results");
}
