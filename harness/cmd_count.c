/* `mxbench count [options] [-- TRAIN OPTIONS]`: the work of a training step counted, not
 * timed. Two runs of the same configuration, one with W steps and one with W + N, are
 * counted whole; the difference over N is the work of a step, with start-up, data loading and
 * the record's writing cancelled out. Under cachegrind the count is the same on every run of
 * the same binary and inputs, whatever else the host runs, so a CI job can gate on a 1%
 * change where timings on a shared runner move far more (docs/regression.md). */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/count_run.h"
#include "harness/opts.h"
#include "harness/sweep_child.h"
#include "harness/train_args.h"
#include "results/compare.h"
#include "results/results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

static const char *const default_train[] = {"--workload", "lenet", "--dataset", "synthetic", "--batch", "32", NULL};

typedef struct {
    const char *via;        /* perf or valgrind (auto resolved) */
    char valgrind[4096];
    char self[4096];        /* this binary: the children run it */
    char dir[4096];         /* temporary files */
    char record[4200];
    mx_train_args train;
} count_job;

/* Which counter to use; "auto" takes hardware counters where the kernel gives them. */
static int choose_via(count_job *j, const char *via)
{
    char why[256] = "";
    const int perf = strcmp(via, "valgrind") != 0 && mx_count_perf_available(why, sizeof why);
    if (strcmp(via, "perf") == 0 && !perf) {
        fprintf(stderr, "mxbench count: --via perf: hardware counters are not available here: %s; --via valgrind "
                "counts under cachegrind instead\n", why);
        return MX_OPTS_BAD;
    }
    j->via = perf ? "perf" : "cachegrind";
    if (perf) return MX_OPTS_OK;
    if (mx_find_program("valgrind", j->valgrind, sizeof j->valgrind) != 0) {
        fprintf(stderr, "mxbench count: valgrind not found on PATH%s%s (apt-get install valgrind)\n",
                why[0] ? ", and " : "", why);
        return MX_OPTS_BAD;
    }
#ifdef __AVX512F__
    /* valgrind (3.19, Debian 12) stops at the first AVX-512 instruction with SIGILL */
    fprintf(stderr,
            "mxbench count: this mxbench was compiled for AVX-512 (-march=native on this CPU), which valgrind "
            "cannot run%s%s; build one without it (cmake -DMXBENCH_NATIVE=OFF: scripts/ci-regress.sh builds "
            "build-count/ so) "
            "and count with that\n",
            why[0] ? "; and " : "", why);
    return MX_OPTS_BAD;
#else
    return MX_OPTS_OK;
#endif
}

/* The counts of one child run of `steps` steps. */
static int count_steps(count_job *j, int steps, mx_counts *c)
{
    char nsteps[16];
    snprintf(nsteps, sizeof nsteps, "%d", steps);
    char *argv[MX_TRAIN_ARGS_MAX + 16];
    int n = 0;
    argv[n++] = j->self;
    argv[n++] = "train";
    for (int i = 0; i < j->train.n; i++) argv[n++] = j->train.v[i];
    argv[n++] = "--steps", argv[n++] = nsteps;
    argv[n++] = "--record", argv[n++] = j->record;
    argv[n++] = "--force", argv[n++] = "--quiet";
    argv[n] = NULL;
    return strcmp(j->via, "perf") == 0 ? mx_count_perf(argv, c) : mx_count_cachegrind(j->valgrind, argv, j->dir, c);
}

/* A count per step from the two runs. Misses are first touches in good part, and the longer
 * run lays its buffers out a little differently: where a step adds almost none, the
 * difference can come out a few misses below zero, which is read as none. */
static double per_step(double a, double b, int steps)
{
    if (!isfinite(a) || !isfinite(b)) return NAN;
    return b > a ? (b - a) / steps : 0;
}

/* A run id not yet in the file ("r0000" in a new one), so that several counted configurations
 * can share one file, as a sweep's rows do. */
static int next_id(const char *path, char *id, size_t n)
{
    snprintf(id, n, "r0000");
    if (access(path, F_OK) != 0) return MX_OK;
    mx_results have;
    MX_TRY(mx_results_load(path, &have));
    for (int k = have.nruns;; k++) {
        snprintf(id, n, "r%04d", k);
        int used = 0;
        for (int i = 0; i < have.nruns; i++) used |= strcmp(have.runs[i].id, id) == 0;
        if (!used) break;
    }
    mx_results_free(&have);
    return MX_OK;
}

/* The longer run's record, holding counts instead of timings, appended to out (created when
 * missing). */
static int write_record(count_job *j, const mx_counts *c, const char *out, char *desc, size_t ndesc)
{
    mx_results res;
    MX_TRY(mx_results_load(j->record, &res));
    mx_run_record *r = &res.runs[0];
    snprintf(r->counted_by, sizeof r->counted_by, "%s", j->via);
    r->metrics[MX_COUNTER_INSTRUCTIONS] = c->instructions;
    r->metrics[MX_COUNTER_D1_MISSES] = c->d1_misses;
    r->metrics[MX_COUNTER_LL_MISSES] = c->ll_misses;
    /* steps under valgrind run many times slower (docs/performance.md, "Choices in the code"):
     * they are no timings to keep (the host figures are NaN already: MXBENCH_COUNTED turns the
     * readings off) */
    r->nsteps = 0;
    mx_record_derive(r);
    r->throughput_agg = r->speedup = r->efficiency = NAN;
    mx_compare_describe(r, desc, ndesc);
    /* one writer at a time: the id chosen below must still be free when the run is added */
    mx_results_lock lock = {-1, NULL};
    int rc = out ? mx_results_lock_take(&lock, out) : MX_OK;
    if (rc == MX_OK && out) rc = next_id(out, r->id, sizeof r->id);
    if (rc == MX_OK && out && access(out, F_OK) != 0) rc = mx_results_create(out, &res.meta, 0);
    if (rc == MX_OK && out) rc = mx_results_append(out, r);
    mx_results_lock_release(&lock);
    mx_results_free(&res);
    return rc;
}

static void fmt_count(char *buf, size_t n, double x)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.0f", x);
}

int mx_cmd_count(int argc, char **argv)
{
    count_job j = {0};
    int steps = 2, warmup = 1;
    const char *via = "auto", *out = NULL;
    const mx_opt opts[] = {
        {"via", MX_OPT_STRING, &via, "HOW",
         "auto (hardware counters where the kernel gives them, else valgrind), perf or valgrind (default auto)",
         "auto|perf|valgrind"},
        {"steps", MX_OPT_INT, &steps, "N", "steps counted (default 2)", NULL, 1, 1000},
        {"warmup", MX_OPT_INT, &warmup, "N", "steps before them, in both runs, so cancelled (default 1)", NULL, 1,
         1000},
        {"record", MX_OPT_STRING, &out, "FILE",
         "append the counted run to FILE (an HDF5 results file, created when "
         "missing) for mxbench compare",
         NULL},
        {0},
    };
    const mx_cmd_spec spec = {
        "mxbench count", "[options] [-- TRAIN OPTIONS]",
        "Counts the work of a training step instead of timing it: instructions per step (every\n"
        "thread), and data cache misses per step. `train TRAIN OPTIONS` runs twice, with --warmup\n"
        "and with --warmup + --steps steps; the difference over --steps is one step's work.\n"
        "valgrind (cachegrind) gives the same count on every run of the same binary and inputs,\n"
        "whatever else the host runs; it needs a build without AVX-512 (cmake -DMXBENCH_NATIVE=OFF)\n"
        "and runs 50-100x slower than the program. The children run with MXBENCH_COUNTED=1 (no host\n"
        "readings: their cost depends on the host) and OPENBLAS_CORETYPE=Haswell (one BLAS kernel\n"
        "on every x86 CPU with AVX2, so counts compare across machines). Without TRAIN OPTIONS:\n"
        "--workload lenet --dataset synthetic --batch 32; --threads-per-device 1 is added when not\n"
        "given (threads that wait for each other spin for as long as the host decides, which no\n"
        "count can repeat). Exit status: 0, 1 when a run failed, 2 on bad usage, 128 + the signal\n"
        "when interrupted.",
        opts, 0, 0,
    };
    static const char *const refused[] = {"--steps", "--epochs", "--record", "--repeat", "--trace", NULL};
    if (mx_train_args_split("mxbench count", &argc, argv, default_train, refused,
                            "count chooses the steps (--steps, --warmup) and records the run itself (--record)",
                            &j.train) != MX_OPTS_OK)
        return MX_OPTS_BAD;
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, NULL, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    if (!mx_train_args_has(&j.train, "--threads-per-device")) mx_train_args_add(&j.train, "--threads-per-device", "1");
    static const char *const one_step[] = {"--steps", "1", NULL};
    if (mx_train_args_validate(&j.train, one_step) != 0) return MX_OPTS_BAD;
    if (out && access(out, F_OK) != 0 && errno != ENOENT) {
        fprintf(stderr, "mxbench count: --record %s: %s\n", out, strerror(errno));
        return MX_OPTS_BAD;
    }
    if (choose_via(&j, via) != MX_OPTS_OK) return MX_OPTS_BAD;
    const ssize_t len = readlink("/proc/self/exe", j.self, sizeof j.self - 1);
    if (len <= 0) {
        fprintf(stderr, "mxbench count: cannot find this program's path (/proc/self/exe): %s\n", strerror(errno));
        return 1;
    }
    j.self[len] = 0;
    if (mx_make_temp_dir("count", j.dir, sizeof j.dir) != 0) return 1;
    snprintf(j.record, sizeof j.record, "%s/run.h5", j.dir);
    /* the same addresses in every run: simulated cache misses depend on them (and so, a little,
     * do instruction counts: allocators and hash tables); children inherit it */
    if (personality(0xffffffff) != -1) personality((unsigned long)personality(0xffffffff) | ADDR_NO_RANDOMIZE);
    setenv("MXBENCH_COUNTED", "1", 1);
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);

    mx_child_trap_signals();
    mx_counts a, b, per;
    char desc[256] = "";
    rc = count_steps(&j, warmup, &a);
    if (rc == MX_OK) rc = count_steps(&j, warmup + steps, &b);
    if (rc == MX_OK) {
        per.instructions = per_step(a.instructions, b.instructions, steps);
        per.d1_misses = per_step(a.d1_misses, b.d1_misses, steps);
        per.ll_misses = per_step(a.ll_misses, b.ll_misses, steps);
        rc = write_record(&j, &per, out, desc, sizeof desc);
    }
    unlink(j.record);
    rmdir(j.dir);
    if (mx_child_interrupted()) {
        fprintf(stderr, "mxbench count: interrupted (%s)\n", strsignal(mx_child_interrupted()));
        return 128 + mx_child_interrupted();
    }
    if (rc != MX_OK) {
        fprintf(stderr, "mxbench count: %s\n", mx_last_error());
        return mx_exit_status(rc);
    }
    char in[32], d1[32], ll[32];
    fmt_count(in, sizeof in, per.instructions);
    fmt_count(d1, sizeof d1, per.d1_misses);
    fmt_count(ll, sizeof ll, per.ll_misses);
    printf("%s: %s instructions/step, %s D1 misses/step, %s LL misses/step (%s; runs of %d and %d steps)\n", desc, in,
           d1, ll, j.via, warmup, warmup + steps);
    return 0;
}
