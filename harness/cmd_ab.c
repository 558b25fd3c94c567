/* `mxbench ab BASE NEW -- TRAIN OPTIONS`: relative benchmarking of two builds. The same
 * training configuration runs with each binary in turn, round after round in one job, so that
 * both meet the same host; the per-round throughput ratios new/base decide (Hodges-Lehmann
 * estimate with Wilcoxon's signed-rank interval, results/stats.c), with exit 1 on a
 * regression beyond the threshold. Two sweeps minutes apart on a shared 2-core machine differ
 * far more than adjacent runs of one job, which is what makes a 5% gate possible there
 * (docs/regression.md; docs/performance.md, "Choices in the code"). */
#include "base/paths.h"
#include "base/status.h"
#include "harness/ab_report.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "harness/sweep_child.h"
#include "harness/train_args.h"
#include "results/compare.h"
#include "results/results.h"
#include "results/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const default_train[] = {"--workload", "lenet", "--dataset", "synthetic", "--batch", "64",
                                            "--steps", "80", "--warmup-steps", "5", NULL};

typedef struct {
    const char *bin[2]; /* base, new */
    mx_train_args train;     /* the user's train options (argv of the child from index 2) */
    char *record;            /* the child's --record file: the temporary directory + "/run.h5" */
    const char *keep;        /* directory for base.h5 and new.h5, or NULL */
    char *keep_path[2];      /* DIR/base.h5 and DIR/new.h5 (malloc'd) */
    int kept;                /* the keep files exist (created at the first ok run) */
    int kept_runs[2];
    double timeout;
} ab_job;

/* One run of side s: `BIN train OPTIONS --record FILE --force --quiet`, its record loaded.
 * MX_ERUNTIME with the child's last words when it fails, and when it exits 0 without
 * writing a record. round: for messages ("warm-up round 1", "round 3"). */
static int run_one(ab_job *j, int s, const char *round, mx_results *res)
{
    /* the previous run's record is removed first: a binary that exits 0 without writing one
     * (not mxbench, or one that lost its --record) would otherwise be scored with it */
    if (unlink(j->record) != 0 && errno != ENOENT)
        return mx_error(MX_ERUNTIME, "%s: cannot remove the previous run's record before the %s run of %s: %s",
                        j->record, round, j->bin[s], strerror(errno));
    char *argv[MX_TRAIN_ARGS_MAX + 16];
    int n = 0;
    argv[n++] = (char *)j->bin[s];
    argv[n++] = "train";
    for (int i = 0; i < j->train.n; i++) argv[n++] = j->train.v[i];
    argv[n++] = "--record";
    argv[n++] = j->record;
    argv[n++] = "--force";
    argv[n++] = "--quiet";
    argv[n] = NULL;
    mx_child_opts o = {.timeout_s = j->timeout};
    mx_child_result cr;
    MX_TRY(mx_child_run(argv, &o, NULL, NULL, &cr));
    if (mx_child_interrupted())
        return mx_error(MX_ERUNTIME, "interrupted (%s): no decision", strsignal(mx_child_interrupted()));
    if (cr.exit_status != 0)
        return mx_error(MX_ERUNTIME, "%s train exited with %d%s; its last words:\n%s", j->bin[s], cr.exit_status,
                        cr.timed_out ? " (timed out: see --timeout)" : "", cr.stderr_tail);
    if (access(j->record, F_OK) != 0)
        return mx_error(MX_ERUNTIME, "%s (%s) exited 0 in %s but wrote no record (its --record %s is missing): "
                        "is it an mxbench binary, or a script that passes its arguments to one?", j->bin[s],
                        s ? "NEW" : "BASE", round, j->record);
    MX_TRY(mx_results_load(j->record, res));
    if (res->nruns != 1 || strcmp(res->runs[0].status, "ok") != 0 || !(res->runs[0].throughput > 0)) {
        int rc = mx_error(MX_ERUNTIME, "%s train recorded %s: %s", j->bin[s],
                          res->nruns == 1 ? res->runs[0].status : "no run",
                          res->nruns == 1 ? res->runs[0].reason : "");
        mx_results_free(res);
        return rc;
    }
    return MX_OK;
}

/* Appends the run to DIR/base.h5 or DIR/new.h5 (both created at the first run), so that the
 * rounds can be read again with `mxbench report` or `compare`. */
static int keep_run(ab_job *j, int s, mx_results *res)
{
    if (!j->keep) return MX_OK;
    if (!j->kept) {
        for (int k = 0; k < 2; k++) MX_TRY(mx_results_create(j->keep_path[k], &res->meta, 0));
        j->kept = 1;
    }
    mx_run_record *r = &res->runs[0];
    snprintf(r->id, sizeof r->id, "r%04d", j->kept_runs[s]++); /* unique in its file: one per round */
    return mx_results_append(j->keep_path[s], r);
}

/* Round r runs base then new when r is even, new then base when odd (ABBA): a drift of the
 * host in time then favours neither side. */
/* One round of both sides, left out: the first runs of a job can be far slower than the rest
 * (docs/performance.md, "Choices in the code"), which would make round 1 an outlier on one
 * side. */
static int warmup_round(ab_job *j, int w, int quiet)
{
    char round[48];
    snprintf(round, sizeof round, "warm-up round %d", w + 1);
    for (int s = 0; s < 2; s++) {
        mx_results res;
        MX_TRY(run_one(j, s, round, &res));
        mx_results_free(&res);
    }
    if (!quiet) fprintf(stderr, "mxbench ab: warm-up round done (left out)\n");
    return MX_OK;
}

static int run_rounds(ab_job *j, int rounds, double *thr, int *noisy, char *config, size_t nconfig, int quiet)
{
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            const int s = r % 2 == 0 ? k : 1 - k;
            mx_results res;
            char round[48];
            snprintf(round, sizeof round, "round %d/%d", r + 1, rounds);
            MX_TRY(run_one(j, s, round, &res));
            thr[2 * r + s] = res.runs[0].throughput;
            noisy[2 * r + s] = res.runs[0].noisy;
            if (r == 0 && s == 0) mx_compare_describe(&res.runs[0], config, nconfig);
            int rc = keep_run(j, s, &res);
            mx_results_free(&res);
            MX_TRY(rc);
        }
        if (!quiet) {
            fprintf(stderr, "mxbench ab: round %d/%d: base %.1f, new %.1f samples/s, new/base %.3f%s\n", r + 1, rounds,
                    thr[2 * r], thr[2 * r + 1], thr[2 * r + 1] / thr[2 * r],
                    noisy[2 * r] || noisy[2 * r + 1] ? " (host busy)" : "");
            fflush(stderr);
        }
    }
    return MX_OK;
}

static int decide(const double *thr, int rounds, double threshold, mx_ab_result *out)
{
    double *d = malloc((size_t)rounds * sizeof *d), est, lo, hi;
    if (!d) return mx_error(MX_ENOMEM, "out of memory");
    for (int r = 0; r < rounds; r++) d[r] = log(thr[2 * r + 1] / thr[2 * r]);
    int rc = mx_stats_hodges_lehmann(d, rounds, &est, &lo, &hi);
    free(d);
    MX_TRY(rc);
    out->ratio = exp(est), out->lo = exp(lo), out->hi = exp(hi);
    out->verdict = mx_compare_verdict(out->ratio, out->lo, out->hi, threshold);
    out->threshold = threshold;
    return MX_OK;
}

/* The train options, checked as this mxbench parses them before anything runs. */
static int check_train(ab_job *j)
{
    if (!mx_train_args_has(&j->train, "--steps")) mx_train_args_add(&j->train, "--steps", "80");
    return mx_train_args_validate(&j->train, NULL) == 0 ? MX_OPTS_OK : MX_OPTS_BAD;
}

static int check_bins(ab_job *j)
{
    for (int s = 0; s < 2; s++)
        if (access(j->bin[s], X_OK) != 0) {
            fprintf(stderr, "mxbench ab: %s '%s' is not an executable file (give the path of an mxbench binary, or "
                    "of a script that runs one)\n", s ? "NEW" : "BASE", j->bin[s]);
            return MX_OPTS_BAD;
        }
    if (!j->keep) return MX_OPTS_OK;
    for (int s = 0; s < 2; s++) {
        /* built to its own length: a name cut to fit would be another file */
        j->keep_path[s] = mx_path_fmt("%s/%s.h5", j->keep, s ? "new" : "base");
        if (!j->keep_path[s]) {
            fprintf(stderr, "mxbench ab: out of memory\n");
            return MX_OPTS_BAD;
        }
        if (access(j->keep_path[s], F_OK) == 0) {
            fprintf(stderr, "mxbench ab: --keep: %s exists; give a directory without base.h5 and new.h5\n",
                    j->keep_path[s]);
            return MX_OPTS_BAD;
        }
    }
    return MX_OPTS_OK;
}

int mx_cmd_ab(int argc, char **argv)
{
    ab_job j = {.timeout = 3600};
    int rounds = 10, warmup_rounds = 1, quiet = 0;
    const char *threshold_s = "5%", *format = "text";
    const mx_opt opts[] = {
        {"rounds", MX_OPT_INT, &rounds, "N",
         "rounds, each one run of BASE and one of NEW; 6 or more give a 95% interval (default 10)", NULL, 2, 200},
        {"warmup-rounds", MX_OPT_INT, &warmup_rounds, "N", "rounds run first and left out (default 1)", NULL, 0, 100},
        {"threshold", MX_OPT_STRING, &threshold_s, "PCT", "smallest change that counts, as 5% or 0.05 (default 5%)",
         NULL},
        {"format", MX_OPT_STRING, &format, "FMT",
         "text (default), md (a pull-request comment) or json (github-action-benchmark, customBiggerIsBetter)",
         "text|md|json"},
        {"keep", MX_OPT_STRING, &j.keep, "DIR", "also keep every run, in DIR/base.h5 and DIR/new.h5", NULL},
        {"timeout", MX_OPT_DOUBLE, &j.timeout, "S", "end a run after S seconds (default 3600)", NULL, 1, 1e6},
        {"quiet", MX_OPT_FLAG, &quiet, NULL, "no line per round on stderr", NULL},
        {0},
    };
    const mx_cmd_spec spec = {
        "mxbench ab", "BASE NEW [options] [-- TRAIN OPTIONS]",
        "Runs `train TRAIN OPTIONS` with two mxbench binaries in turn, --rounds times each\n"
        "(ABBA order), and decides on the per-round throughput ratios new/base: the Hodges-\n"
        "Lehmann estimate with the 95% interval of Wilcoxon's signed-rank test. 'regression'\n"
        "when the estimate and the whole interval lie below 1 - threshold, 'improvement'\n"
        "likewise above 1 + threshold, '~' when only the estimate does, else 'same'.\n"
        "Without TRAIN OPTIONS: --workload lenet --dataset synthetic --batch 64 --steps 80\n"
        "--warmup-steps 5; --steps 80 is added when none is given. BASE and NEW may be scripts\n"
        "that run mxbench. Exit status: 1 on a regression, 0 otherwise, 2 on bad usage or a\n"
        "run that failed, 128 + the signal when interrupted.",
        opts, 2, 2,
    };
    static const char *const refused[] = {"--record", "--epochs", NULL};
    if (mx_train_args_split("mxbench ab", &argc, argv, default_train, refused,
                            "ab records every run itself (see --keep), and compares throughput of --steps runs "
                            "(default --steps 80 when none given)", &j.train) != MX_OPTS_OK)
        return MX_OPTS_BAD;
    const char *pos[2];
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    j.bin[0] = pos[0], j.bin[1] = pos[1];
    const double threshold = mx_parse_fraction("mxbench ab", "threshold", threshold_s);
    const int bad = threshold < 0 || check_bins(&j) != MX_OPTS_OK || check_train(&j) != MX_OPTS_OK;
    char tdir[4096];
    if (bad || mx_make_temp_dir("ab", tdir, sizeof tdir) != 0) {
        free(j.keep_path[0]);
        free(j.keep_path[1]);
        return bad ? MX_OPTS_BAD : 1;
    }
    j.record = mx_path_fmt("%s/run.h5", tdir);
    double *thr = malloc((size_t)rounds * 2 * sizeof *thr);
    int *noisy = calloc((size_t)rounds * 2, sizeof *noisy);
    char config[256] = "";
    mx_ab_result res = {.rounds = rounds};
    rc = thr && noisy && j.record ? MX_OK : mx_error(MX_ENOMEM, "out of memory");
    mx_child_trap_signals();
    for (int w = 0; rc == MX_OK && w < warmup_rounds; w++) rc = warmup_round(&j, w, quiet);
    if (rc == MX_OK) rc = run_rounds(&j, rounds, thr, noisy, config, sizeof config, quiet);
    if (rc == MX_OK) rc = decide(thr, rounds, threshold, &res);
    if (j.record) unlink(j.record);
    rmdir(tdir);
    free(j.record);
    free(j.keep_path[0]);
    free(j.keep_path[1]);
    if (rc == MX_OK) {
        for (int i = 0; i < 2 * rounds; i++) res.noisy += noisy[i];
        mx_ab_print(format, j.bin, config, thr, &res);
    } else {
        fprintf(stderr, "mxbench ab: %s\n", mx_last_error());
    }
    free(thr);
    free(noisy);
    if (mx_child_interrupted()) return 128 + mx_child_interrupted();
    if (rc != MX_OK) return 2;
    return res.verdict == MX_VERDICT_REGRESSION ? 1 : 0;
}
