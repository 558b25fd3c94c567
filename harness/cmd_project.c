/* `mxbench project FILE`: projection past the machine. Fits a model of a data-parallel step
 * (host data, compute per device, and the kvstore's communication as a ring's
 * alpha-beta-gamma cost, measured call by call) to the runs of a results file, per
 * configuration, and predicts throughput and efficiency at other device counts; --plot draws
 * the measured points and the model's lines. The model is results/project.[ch], its figures
 * plots/plot_project.c. */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "harness/project_print.h"
#include "plots/plot.h"
#include "plots/plot_project.h"
#include "results/project.h"
#include "results/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char summary[] =
    "Fits a model of each configuration's training step to the runs FILE measured (mxbench sweep), and\n"
    "predicts throughput and scaling efficiency at other device counts: past the machine.\n"
    "A configuration is the ok data-parallel runs that differ only in the device count (and what\n"
    "follows it: global batch, workers); a one-device run joins each kvstore's. Its step at p devices:\n"
    "\n"
    "  T(p) = D + s_c C + (k + e) s_m M      M = rounds alpha + bus bytes beta + summed bytes gamma\n"
    "\n"
    "  D     assembling the batch on the host: a line in the global batch\n"
    "  C     forward and backward on a device of its own: a line in the device's share of the batch\n"
    "  M     one member's communication, from the kvstore's collective calls: (p-1)/p of the bytes\n"
    "        sent (twice for an all-reduce) and summed by reductions, as a ring moves them; rounds\n"
    "        (latencies in sequence) p-1 per reduce-scatter or all-gather, 2(p-1) per all-reduce on\n"
    "        a ring (MPI ranks; GPUs' NCCL), one per call on the threads communicator of CPU workers\n"
    "        in one process. alpha, beta, gamma: least squares of every call's own size, verb and\n"
    "        time, as the runs recorded them (comm_alpha, comm_beta, comm_gamma)\n"
    "  e     exposed: the measured comm tail (after the last backward) over M at the fitted counts\n"
    "  k     overlap's cost: what communication hidden behind backward takes from forward and\n"
    "        backward (CPU workers' comm runs on their cores), fitted with C\n"
    "  s_c, s_m  turns: on CPU workers, threads (devices x threads per device; one comm worker per\n"
    "        device) over the host's cores where more, as the OS time-slices them; 1 on GPUs\n"
    "\n"
    "Assumed: the share of communication hidden behind backward and its cost stay as measured;\n"
    "the calls are those of the fitted runs (one per key or bucket); compute per device depends on\n"
    "its share of the batch only (memory bandwidth shared by more devices is not modelled); one\n"
    "host (an MPI job fitted on several hosts keeps its ranks per host); fitted costs below 0 are\n"
    "taken as 0; alpha needs calls of two sizes or more (else it is counted in beta). The\n"
    "model needs two fitted device counts, one of them 2 or more (where communication is), from a\n"
    "kvstore that makes collective calls (device, dist_allreduce; not local or the parameter\n"
    "servers) recorded by this version (comm_rounds). Model and layer runs are not projected.\n"
    "\n"
    "Output per configuration: the fitted parameters in words, then per device count (measured and\n"
    "asked): runs, fit (fitted) or check (measured, held out), measured and model samples/s, the\n"
    "error model / measured - 1, measured and model efficiency, step times and the model's parts\n"
    "(data, compute, comm ms) and turns (compute/comm threads per core). csv: one row per\n"
    "configuration and count with every figure; json: the same as objects. --plot DIR writes\n"
    "project_throughput and project_efficiency (.png, .svg): measured points (hollow: held out) and\n"
    "the model's dashed lines, and DIR/data (project.dat, replot.sh).\n"
    "\n"
    "Exit status: 0 ok; 1 plotting failed; 2 bad usage or input (an unreadable file, a count no run\n"
    "has in --fit, or no configuration that can be projected, each named with its reason).";

/* Default counts to predict: twice and four times the largest measured. */
static int default_gpus(const mx_results *res, int *gpus)
{
    int most = 0;
    for (int i = 0; i < res->nruns; i++)
        if (strcmp(res->runs[i].status, "ok") == 0 && res->runs[i].gpus > most) most = res->runs[i].gpus;
    if (most == 0) return 0;
    gpus[0] = 2 * most;
    gpus[1] = 4 * most;
    return 2;
}

/* Nothing projected is bad input: say for each configuration why. */
static int nothing_projected(const char *file, const mx_results *res, const mx_projection *pr, int n)
{
    if (n == 0) {
        fprintf(stderr, "mxbench project: %s has no ok run (%d runs in all): nothing to fit\n", file, res->nruns);
        return MX_OPTS_BAD;
    }
    fprintf(stderr, "mxbench project: no configuration of %s can be projected:\n", file);
    for (int i = 0; i < n; i++) fprintf(stderr, "  %s: %s\n", pr[i].label, pr[i].skipped);
    fprintf(stderr, "(a projection needs ok data-parallel runs on two device counts, one of them 2 or more, "
                    "with a collective kvstore; see 'mxbench project --help')\n");
    return MX_OPTS_BAD;
}

static int plot(const char *plot_dir, const char *scripts, int verbose, const mx_results *res,
                const mx_projection *pr, int n)
{
    char (*files)[2][4096] = malloc(sizeof(char[MX_PLOT_PROJECT_FIGURES][2][4096]));
    if (!files) {
        fprintf(stderr, "mxbench project: out of memory\n");
        return 1;
    }
    const int rc = mx_plot_projection(pr, n, &res->meta, plot_dir, scripts, verbose, files);
    if (rc < 0) fprintf(stderr, "mxbench project: --plot %s: %s\n", plot_dir, mx_last_error());
    for (int f = 0; f < rc; f++) fprintf(stderr, "mxbench project: wrote %s and %s\n", files[f][0], files[f][1]);
    free(files);
    return rc < 0 ? (rc == MX_EIO || rc == MX_EINVAL ? MX_OPTS_BAD : 1) : 0;
}

int mx_cmd_project(int argc, char **argv)
{
    const char *gpus_s = NULL, *fit_s = NULL, *format = "text", *plot_dir = NULL, *scripts = NULL;
    int verbose = 0;
    double cores = 0;
    const mx_opt opts[] = {
        {"gpus", MX_OPT_STRING, &gpus_s, "LIST",
         "device counts to predict, e.g. 8,16,64, each 1..65536 (default: 2 and 4 times the largest measured); "
         "every measured count is shown too", NULL},
        {"fit", MX_OPT_STRING, &fit_s, "LIST",
         "measured device counts to fit on, e.g. 1,2 (default: all); the others are held out and checked", NULL},
        {"cores", MX_OPT_DOUBLE, &cores, "N",
         "CPU workers: the host's cores for the turns (default: as the runs recorded, host_cores)", NULL, 1,
         1e6},
        {"format", MX_OPT_STRING, &format, "FMT", "text (default), md, csv or json", "text|md|csv|json"},
        {"plot", MX_OPT_STRING, &plot_dir, "DIR",
         "also draw DIR/project_throughput and DIR/project_efficiency (.png, .svg) with gnuplot; data in DIR/data",
         NULL},
        {"scripts", MX_OPT_STRING, &scripts, "DIR",
         "gnuplot scripts (default $MXBENCH_PLOTS_DIR, else the source tree's plots/)", NULL},
        {"verbose", MX_OPT_FLAG, &verbose, NULL, "print each gnuplot command and its warnings", NULL},
        {NULL, MX_OPT_FLAG, NULL, NULL, NULL, NULL},
    };
    const mx_cmd_spec spec = {
        .cmd = "mxbench project",
        .usage = "FILE [options]",
        .summary = summary,
        .opts = opts,
        .min_positional = 1,
        .max_positional = 1,
    };
    const char *pos[1];
    int npos, gpus[MX_PROJ_MAX_POINTS], fit[MX_PROJ_MAX_POINTS], ngpus = 0, nfit = 0;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : MX_OPTS_BAD;
    if (gpus_s && (ngpus = mx_parse_int_list(spec.cmd, "gpus", gpus_s, gpus, MX_PROJ_MAX_POINTS / 2, 1,
                                             MX_PROJ_MAX_GPUS)) < 0)
        return MX_OPTS_BAD;
    if (fit_s &&
        (nfit = mx_parse_int_list(spec.cmd, "fit", fit_s, fit, MX_PROJ_MAX_POINTS / 2, 1, MX_PROJ_MAX_GPUS)) < 0)
        return MX_OPTS_BAD;
    if (!scripts) scripts = mx_plot_default_scripts_dir();

    mx_results res;
    if (mx_results_load(pos[0], &res) < 0) {
        fprintf(stderr, "mxbench project: %s\n", mx_last_error());
        return MX_OPTS_BAD;
    }
    if (!gpus_s) ngpus = default_gpus(&res, gpus);
    const mx_proj_options po = {nfit ? fit : NULL, nfit, gpus, ngpus, cores};
    mx_projection *pr = NULL;
    int n = 0, status = 0;
    if ((rc = mx_project(&res, &po, &pr, &n)) < 0) {
        fprintf(stderr, "mxbench project: %s: %s\n", pos[0], mx_last_error());
        status = mx_exit_status(rc);
    }
    int projected = 0;
    for (int i = 0; i < n; i++) projected += !pr[i].skipped[0];
    if (status == 0 && projected == 0) status = nothing_projected(pos[0], &res, pr, n);
    if (status == 0) mx_project_print(format, pos[0], pr, n);
    if (status == 0 && plot_dir) {
        fflush(stdout);
        status = plot(plot_dir, scripts, verbose, &res, pr, n);
    }
    mx_projection_free(pr);
    mx_results_free(&res);
    return status;
}
