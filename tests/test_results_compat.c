/* A results file written before step statistics and sweep axes became tables (mxbench at
 * 92d8450: `mxbench sweep --workload mlp --dataset synthetic --steps 6 --gpus 1,2`) is still
 * read with the same values, matches by the same configuration keys (--resume, compare), lacks
 * the figures added since (NaN) and the processes of dist_* runs (one worker, no server, no
 * rank table), and takes new runs: one of a dist_* kvstore with its rank table too, which
 * comes back as written. A record's copy owns its own rank table.
 * Usage: test_results_compat FIXTURE WORK_DIR */
#include "check.h"
#include "base/status.h"
#include "results/results.h"
#include "tests/results_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys the mxbench of the fixture computed for its two runs (its record_key, run on the
 * file), config then series. The series key has left out the compression since compression
 * was built (a one-device run starts every compressor's series, matched apart as the
 * kvstore is): keys are computed when a file is read, so old and new runs group alike. */
static const char *const old_keys[2][2] = {
    {"workload=mlp;dataset=synthetic;strategy=data;kvstore=none;compression=none;amp=off;device_type=cpu;gpus=1;"
     "batch=128;batch_mode=per-device;global_batch=128;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;"
     "warmup_epochs=0;epochs=0;steps=6;warmup_steps=5;repeats=1;seed=1;threads_per_device=1",
     "workload=mlp;dataset=synthetic;strategy=data;amp=off;device_type=cpu;batch=128;"
     "batch_mode=per-device;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;warmup_epochs=0;epochs=0;steps=6;"
     "warmup_steps=5;repeats=1;seed=1;threads_per_device=1"},
    {"workload=mlp;dataset=synthetic;strategy=data;kvstore=device;compression=none;amp=off;device_type=cpu;gpus=2;"
     "batch=128;batch_mode=per-device;global_batch=256;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;"
     "warmup_epochs=0;epochs=0;steps=6;warmup_steps=5;repeats=1;seed=1;threads_per_device=1",
     "workload=mlp;dataset=synthetic;strategy=data;amp=off;device_type=cpu;batch=128;"
     "batch_mode=per-device;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;warmup_epochs=0;epochs=0;steps=6;"
     "warmup_steps=5;repeats=1;seed=1;threads_per_device=1"},
};

static int same_num(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static int same_rank(const mx_rank_row *a, const mx_rank_row *b)
{
    return a->rank == b->rank && strcmp(a->host, b->host) == 0 && strcmp(a->role, b->role) == 0 &&
           a->steps == b->steps && same_num(a->step_min, b->step_min) && same_num(a->step_median, b->step_median) &&
           same_num(a->step_p90, b->step_p90) && same_num(a->step_max, b->step_max) &&
           same_num(a->bytes_per_step, b->bytes_per_step) && same_num(a->push_time, b->push_time) &&
           same_num(a->pull_time, b->pull_time) && same_num(a->busy_time, b->busy_time);
}

/* mx_record_copy duplicates the rank table; mx_record_free releases it and says so. */
static void test_copy_free(void)
{
    mx_run_record a, b;
    fixture_dist_record(&a, 5, 2, 1);
    CHECK(mx_record_copy(&b, &a) == MX_OK, "copy: %s", mx_last_error());
    CHECK(b.nranks == 3 && b.ranks && b.ranks != a.ranks && same_rank(&a.ranks[2], &b.ranks[2]) &&
              b.workers == 2 && b.servers == 1,
          "the copy's rank table: %d rows at %p (original %p)", b.nranks, (void *)b.ranks, (void *)a.ranks);
    mx_record_free(&a);
    CHECK(a.ranks == NULL && a.nranks == 0, "free left %d ranks", a.nranks);
    CHECK(b.ranks && strcmp(b.ranks[1].role, "worker") == 0, "the copy lost its rows with the original");
    mx_record_free(&b);
    mx_record_free(&b); /* twice is harmless */
    mx_record_init(&a);
    CHECK(a.workers == 1 && a.servers == 0 && a.nranks == 0 && !a.ranks && !a.oversubscribed, "init: %d %d %d",
          a.workers, a.servers, a.nranks);
    CHECK(mx_record_copy(&b, &a) == MX_OK && b.ranks == NULL, "copy of a record without ranks");
    mx_record_free(&b);
}

static void check_old_runs(const mx_results *res, const char *what)
{
    CHECK(res->nruns >= 2, "%s: %d runs, expected the fixture's 2", what, res->nruns);
    if (res->nruns < 2) return;
    const mx_run_record *a = &res->runs[0], *b = &res->runs[1];
    CHECK(strcmp(a->id, "r0000") == 0 && strcmp(b->id, "r0001") == 0, "%s: ids %s %s", what, a->id, b->id);
    CHECK(strcmp(a->kvstore, "none") == 0 && strcmp(b->kvstore, "device") == 0, "%s: kvstores %s %s", what,
          a->kvstore, b->kvstore);
    /* values exactly as the old writer stored them (its report --format json printed these) */
    CHECK(b->bytes_per_step == 1881168 && b->metrics[MX_COUNTER_BYTES] == 1881168, "%s: bytes_per_step %.17g", what,
          b->bytes_per_step);
    CHECK(b->comm_overlap == 0.013707446960658669 && b->metrics[MX_COUNTER_COMM_HIDDEN] == b->comm_overlap,
          "%s: comm_overlap %.17g", what, b->comm_overlap);
    CHECK(isnan(a->bytes_per_step) && isnan(a->comm_overlap), "%s: the one-device run has no communication", what);
    CHECK(b->throughput == 65106.650288749472 && b->speedup == 1.1016818371533359, "%s: throughput %.17g speedup %.17g",
          what, b->throughput, b->speedup);
    /* figures added since the fixture was written read as undefined */
    for (int k = 0; k < MX_NCOUNTERS; k++)
        if (!mx_counters[k].in_v1)
            CHECK(isnan(a->metrics[k]) && isnan(b->metrics[k]), "%s: %s should be NaN in an old file", what,
                  mx_counters[k].name);
    CHECK(a->nsteps == 1 && b->nsteps == 1 && a->phase_time && b->phase_time, "%s: series (%d, %d steps)", what,
          a->nsteps, b->nsteps);
    for (int i = 0; i < 2; i++) {
        const mx_run_record *x = &res->runs[i];
        CHECK(x->workers == 1 && x->servers == 0 && x->oversubscribed == 0 && x->nranks == 0 && !x->ranks,
              "%s: run %d reads workers %d, servers %d, oversubscribed %d, %d ranks (expected 1, 0, 0, none)", what, i,
              x->workers, x->servers, x->oversubscribed, x->nranks);
    }
    for (int i = 0; i < 2; i++) {
        char key[1024];
        mx_record_config_key(&res->runs[i], key, sizeof key);
        CHECK(strcmp(key, old_keys[i][0]) == 0, "%s: run %d's configuration key changed:\n  %s\nwas\n  %s", what, i,
              key, old_keys[i][0]);
        mx_record_series_key(&res->runs[i], key, sizeof key);
        CHECK(strcmp(key, old_keys[i][1]) == 0, "%s: run %d's series key changed:\n  %s\nwas\n  %s", what, i, key,
              old_keys[i][1]);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_results_compat FIXTURE WORK_DIR\n");
        return 2;
    }
    mx_results res;
    CHECK(mx_results_load(argv[1], &res) == MX_OK, "%s: %s", argv[1], mx_last_error());
    check_old_runs(&res, "old file");

    /* an old file takes a run of this format (as --resume appends), and stays readable */
    char copy[4096];
    snprintf(copy, sizeof copy, "%s/results_compat.h5", argv[2]);
    FILE *in = fopen(argv[1], "rb"), *out = fopen(copy, "wb");
    CHECK(in && out, "cannot copy %s to %s", argv[1], copy);
    char buf[8192];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
    mx_run_record r;
    CHECK(res.nruns == 2 && mx_record_copy(&r, &res.runs[1]) == MX_OK, "copying a run");
    if (res.nruns == 2) {
        snprintf(r.id, sizeof r.id, "r0002");
        r.gpus = 4, r.global_batch = 512;
        for (int k = 0; k < MX_NCOUNTERS; k++) r.metrics[k] = 1 + k;
        CHECK(mx_results_append(copy, &r) == MX_OK, "append to an old file: %s", mx_last_error());
        mx_record_free(&r);
        mx_results mixed;
        CHECK(mx_results_load(copy, &mixed) == MX_OK, "reload the old file with a new run: %s", mx_last_error());
        check_old_runs(&mixed, "old file + new run");
        CHECK(mixed.nruns == 3 && mixed.runs[2].metrics[MX_NCOUNTERS - 1] == MX_NCOUNTERS,
              "the new run's counters did not come back");
        mx_results_free(&mixed);

        /* a dist_* run with its processes, oversubscription and rank table, through the file */
        mx_run_record d;
        fixture_dist_record(&d, 3, 4, 2);
        d.oversubscribed = 1;
        d.metrics[MX_COUNTER_STALENESS_P99] = 7;
        CHECK(mx_results_append(copy, &d) == MX_OK, "append a dist_* run: %s", mx_last_error());
        CHECK(mx_results_load(copy, &mixed) == MX_OK, "reload with a dist_* run: %s", mx_last_error());
        check_old_runs(&mixed, "old file + dist_* run");
        const mx_run_record *e = mixed.nruns == 4 ? &mixed.runs[3] : NULL;
        CHECK(e && e->workers == 4 && e->servers == 2 && e->oversubscribed == 1 && e->nranks == 6 &&
                  e->metrics[MX_COUNTER_STALENESS_P99] == 7 && strcmp(e->kvstore, "dist_sync") == 0,
              "the dist_* run read back: workers %d servers %d oversubscribed %d, %d ranks", e ? e->workers : -1,
              e ? e->servers : -1, e ? e->oversubscribed : -1, e ? e->nranks : -1);
        for (int i = 0; e && i < e->nranks && i < d.nranks; i++)
            CHECK(same_rank(&e->ranks[i], &d.ranks[i]), "rank row %d differs after the round trip (host '%s')", i,
                  e->ranks[i].host);
        /* workers and servers are part of the configuration key */
        char kd[1024], ke[1024];
        mx_record_config_key(&d, kd, sizeof kd);
        mx_record_config_key(e ? e : &d, ke, sizeof ke);
        CHECK(strcmp(kd, ke) == 0 && strstr(kd, ";workers=4;servers=2"), "the dist_* run's key: %s", ke);
        mx_record_free(&d);
        mx_results_free(&mixed);
    }
    mx_results_free(&res);
    test_copy_free();
    return check_summary("test_results_compat");
}
