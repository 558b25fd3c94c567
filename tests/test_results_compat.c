/* A results file written before step statistics and sweep axes became tables (mxbench at
 * 92d8450: `mxbench sweep --workload mlp --dataset synthetic --steps 6 --gpus 1,2`) is still
 * read with the same values, matches by the same configuration keys (--resume, compare), lacks
 * the figures added since (NaN), and takes new runs.
 * Usage: test_results_compat FIXTURE WORK_DIR */
#include "check.h"
#include "engine/status.h"
#include "results/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys the mxbench of the fixture computed for its two runs (its record_key, run on the
 * file), config then series. */
static const char *const old_keys[2][2] = {
    {"workload=mlp;dataset=synthetic;strategy=data;kvstore=none;compression=none;amp=off;device_type=cpu;gpus=1;"
     "batch=128;batch_mode=per-device;global_batch=128;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;"
     "warmup_epochs=0;epochs=0;steps=6;warmup_steps=5;repeats=1;seed=1;threads_per_device=1",
     "workload=mlp;dataset=synthetic;strategy=data;compression=none;amp=off;device_type=cpu;batch=128;"
     "batch_mode=per-device;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;warmup_epochs=0;epochs=0;steps=6;"
     "warmup_steps=5;repeats=1;seed=1;threads_per_device=1"},
    {"workload=mlp;dataset=synthetic;strategy=data;kvstore=device;compression=none;amp=off;device_type=cpu;gpus=2;"
     "batch=128;batch_mode=per-device;global_batch=256;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;"
     "warmup_epochs=0;epochs=0;steps=6;warmup_steps=5;repeats=1;seed=1;threads_per_device=1",
     "workload=mlp;dataset=synthetic;strategy=data;compression=none;amp=off;device_type=cpu;batch=128;"
     "batch_mode=per-device;base_lr=0.05;lr_scaling=none;momentum=0.9;wd=0.0001;warmup_epochs=0;epochs=0;steps=6;"
     "warmup_steps=5;repeats=1;seed=1;threads_per_device=1"},
};

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
        char key[1024];
        mx_record_config_key(&res->runs[i], key, sizeof key);
        CHECK(strcmp(key, old_keys[i][0]) == 0, "%s: run %d's configuration key changed:\n  %s\nwas\n  %s", what, i, key,
              old_keys[i][0]);
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
    }
    mx_results_free(&res);
    return check_summary("test_results_compat");
}
