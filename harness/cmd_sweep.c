/* `mxbench sweep`: plans the product of the axes, runs each configuration as a child
 * `mxbench train`, and appends every outcome (ok, failed, skipped) to one HDF5 file as it
 * finishes, so an interrupted sweep keeps what it finished and --resume completes it. */
#include "buildinfo.h"
#include "commands.h"
#include "limits.h"
#include "engine/status.h"
#include "opts.h"
#include "progress.h"
#include "results/results.h"
#include "sweep_child.h"
#include "sweep_plan.h"
#include "sweep_run.h"
#include "strategies/strategy.h"
#include "workloads/dataset.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *strategies, *gpus, *batch, *lr, *kvstore, *compression, *amp, *workload;
    const char *batch_mode, *lr_scaling, *dataset, *data, *out;
    double warmup_epochs, momentum, wd, target_acc, timeout;
    int epochs, steps, warmup_steps, repeats, seed, threads_per_device, force, resume, retry_failed, dry_run;
    char lists[6][512]; /* storage for the split string lists */
} sweep_args;

static volatile sig_atomic_t interrupted;

static void on_tick(void *user, double elapsed) { mx_progress_tick(user, elapsed); }

static void on_signal(int sig)
{
    interrupted = sig;
    mx_child_kill_current();
}

static const char *help_text =
    "Runs a scaling study: every combination of the comma-list axes below, each as its own\n"
    "child process, every outcome appended to one HDF5 results file as soon as it ends.\n"
    "Combinations this build cannot run are recorded as skipped with the reason.\n"
    "Example: mxbench sweep --strategies data --gpus 1,2 --workload lenet --epochs 1";

static int parse_args(sweep_args *a, int argc, char **argv)
{
    const mx_opt opts[] = {
        {"strategies", MX_OPT_STRING, &a->strategies, "LIST", "parallel strategies: data, model, layer (default data)", NULL},
        {"gpus", MX_OPT_STRING, &a->gpus, "LIST", "device counts (default 1,2)", NULL},
        {"workload", MX_OPT_STRING, &a->workload, "LIST", "models: mlp, lenet, resnet18 (default lenet)", NULL},
        {"batch", MX_OPT_STRING, &a->batch, "LIST", "batch sizes, read per --batch-mode (default 128)", NULL},
        {"batch-mode", MX_OPT_STRING, &a->batch_mode, "MODE", "per-device (as MXNet) or global (default per-device)", "per-device|global"},
        {"lr", MX_OPT_STRING, &a->lr, "LIST", "base learning rates (default 0.05)", NULL},
        {"lr-scaling", MX_OPT_STRING, &a->lr_scaling, "RULE", "none, linear or sqrt in the global batch vs the first device count (default none)", "none|linear|sqrt"},
        {"warmup-epochs", MX_OPT_DOUBLE, &a->warmup_epochs, "X", "gradual warmup from the base lr over X epochs (default 0)", NULL, 0, MX_MAX_EPOCHS},
        {"kvstore", MX_OPT_STRING, &a->kvstore, "LIST", "local, device, dist_sync, dist_device_sync, dist_async (default device)", NULL},
        {"compression", MX_OPT_STRING, &a->compression, "LIST", "none, 2bit, topk, fp16 (default none)", NULL},
        {"amp", MX_OPT_STRING, &a->amp, "LIST", "off, fp16, bf16 (default off)", NULL},
        {"dataset", MX_OPT_STRING, &a->dataset, "NAME", "fashion-mnist or synthetic (default fashion-mnist)", "fashion-mnist|synthetic"},
        {"data", MX_OPT_STRING, &a->data, "DIR", "an IDX (MNIST-format) dataset directory instead", NULL},
        {"epochs", MX_OPT_INT, &a->epochs, "N", "epochs per run (default 1)", NULL, 1, MX_MAX_EPOCHS},
        {"steps", MX_OPT_INT, &a->steps, "N", "steps per run instead of epochs (throughput only)", NULL, 1, MX_MAX_STEPS},
        {"warmup-steps", MX_OPT_INT, &a->warmup_steps, "N", "leading steps left out of the timings (default 0, 5 with --steps)", NULL, 0, MX_MAX_WARMUP_STEPS},
        {"repeat", MX_OPT_INT, &a->repeats, "N", "repeats of each run for the timing statistics (default 1)", NULL, 1, MX_MAX_REPEATS},
        {"target-acc", MX_OPT_DOUBLE, &a->target_acc, "X", "record time to reach this test accuracy, above 0", NULL, 0, 1},
        {"seed", MX_OPT_INT, &a->seed, "N", "seed of every run (default 1)", NULL, 0, MX_MAX_SEED},
        {"momentum", MX_OPT_DOUBLE, &a->momentum, "X", "SGD momentum, below 1 (default 0.9)", NULL, 0, 1},
        {"wd", MX_OPT_DOUBLE, &a->wd, "X", "weight decay, below 1 (default 1e-4)", NULL, 0, 1},
        {"threads-per-device", MX_OPT_INT, &a->threads_per_device, "N", "CPU threads per device (default cores / largest device count)", NULL, 1, MX_MAX_THREADS_PER_DEVICE},
        {"timeout", MX_OPT_DOUBLE, &a->timeout, "SECONDS", "kill a run after this long and record it failed, > 0 (default 3600)", NULL, 0, MX_MAX_TIMEOUT_S},
        {"out", MX_OPT_STRING, &a->out, "FILE", "results file (default out/sweep.h5)", NULL},
        {"force", MX_OPT_FLAG, &a->force, NULL, "overwrite an existing results file", NULL},
        {"resume", MX_OPT_FLAG, &a->resume, NULL, "keep an existing file and run only configurations it lacks", NULL},
        {"retry-failed", MX_OPT_FLAG, &a->retry_failed, NULL, "with --resume: run failed configurations again, replacing their rows", NULL},
        {"dry-run", MX_OPT_FLAG, &a->dry_run, NULL, "print the planned runs and exit", NULL},
        {0},
    };
    unsigned char seen[sizeof opts / sizeof *opts];
    const mx_cmd_spec spec = {"mxbench sweep", "[options]", help_text, opts, 0, 0, seen};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc;
    if (mx_opts_seen(&spec, "steps")) {
        if (mx_opts_seen(&spec, "epochs"))
            return mx_usage_error(spec.cmd, "--epochs %d and --steps %d: give one of them, not both", a->epochs,
                                  a->steps);
        a->epochs = 0;
    }
    if (mx_opts_seen(&spec, "target-acc") && !(a->target_acc > 0))
        return mx_usage_error(spec.cmd, "--target-acc %g: accepted above 0 and at most 1", a->target_acc);
    if (!(a->timeout > 0)) return mx_usage_error(spec.cmd, "--timeout %g: accepted above 0 seconds", a->timeout);
    if (a->force && a->resume) return mx_usage_error(spec.cmd, "--force and --resume contradict each other; give one");
    if (a->retry_failed && !a->resume) return mx_usage_error(spec.cmd, "--retry-failed goes with --resume");
    if (!mx_opts_seen(&spec, "warmup-steps")) a->warmup_steps = a->steps ? 5 : 0;
    if (!mx_opts_seen(&spec, "threads-per-device")) a->threads_per_device = 0; /* auto */
    return MX_OPTS_OK;
}

static int fill_axes(sweep_args *a, mx_sweep_axes *ax)
{
    memset(ax, 0, sizeof *ax);
    struct {
        const char *opt, *value, *choices;
        const char **out;
        int *n;
    } lists[] = {
        {"strategies", a->strategies, "data|model|layer", ax->strategies, &ax->nstrategies},
        {"kvstore", a->kvstore, "local|device|dist_sync|dist_device_sync|dist_async", ax->kvstores, &ax->nkvstores},
        {"compression", a->compression, "none|2bit|topk|fp16", ax->compressions, &ax->ncompressions},
        {"amp", a->amp, "off|fp16|bf16", ax->amps, &ax->namps},
        {"workload", a->workload, "mlp|lenet|resnet18", ax->workloads, &ax->nworkloads},
    };
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        if ((*lists[i].n = mx_parse_choice_list("mxbench sweep", lists[i].opt, lists[i].value, lists[i].choices, a->lists[i],
                                                sizeof a->lists[i], lists[i].out, MX_AXIS_MAX)) < 0)
            return MX_OPTS_BAD;
    if ((ax->ngpus = mx_parse_int_list("mxbench sweep", "gpus", a->gpus, ax->gpus, MX_AXIS_MAX, 1, MX_MAX_DEVICES)) < 0)
        return MX_OPTS_BAD;
    if ((ax->nbatch = mx_parse_int_list("mxbench sweep", "batch", a->batch, ax->batch, MX_AXIS_MAX, 1, MX_MAX_BATCH)) < 0)
        return MX_OPTS_BAD;
    if ((ax->nlr = mx_parse_double_list("mxbench sweep", "lr", a->lr, ax->lr, MX_AXIS_MAX, 0, MX_MAX_LR)) < 0)
        return MX_OPTS_BAD;
    for (int i = 0; i < ax->nlr; i++)
        if (!(ax->lr[i] > 0)) {
            fprintf(stderr, "mxbench sweep: --lr %g: learning rates must be > 0\n", ax->lr[i]);
            return MX_OPTS_BAD;
        }
    ax->batch_mode = a->batch_mode;
    ax->lr_scaling = a->lr_scaling;
    ax->dataset = a->data ? a->data : a->dataset;
    ax->warmup_epochs = a->warmup_epochs;
    ax->momentum = a->momentum;
    ax->wd = a->wd;
    ax->target_acc = a->target_acc;
    ax->steps = a->steps;
    ax->epochs = a->epochs;
    ax->warmup_steps = a->warmup_steps;
    ax->repeats = a->repeats;
    ax->seed = a->seed;
    int widest = 1;
    for (int i = 0; i < ax->ngpus; i++) widest = ax->gpus[i] > widest ? ax->gpus[i] : widest;
    ax->threads_per_device = a->threads_per_device > 0 ? a->threads_per_device
                                                       : (mx_cpu_cores() / widest > 1 ? mx_cpu_cores() / widest : 1);
    /* the whole data set, read and checked once here, so that bad content is refused (exit 2)
     * before any run starts rather than failing every run (exit 1) */
    if (strcmp(ax->dataset, "synthetic") != 0 &&
        mx_idx_dir_validate(a->data ? a->data : mx_dataset_default_dir()) < 0) {
        fprintf(stderr, "mxbench sweep: %s%s\n", mx_last_error(),
                a->data ? "" : "\n  Fashion-MNIST comes from the Debian package dataset-fashion-mnist");
        return MX_OPTS_BAD;
    }
    return MX_OPTS_OK;
}

static int prepare_file(const sweep_args *a, int argc, char **argv, mx_results *existing)
{
    memset(existing, 0, sizeof *existing);
    struct stat st;
    const int exists = stat(a->out, &st) == 0;
    /* A sweep killed with SIGKILL leaves its per-run record (<out>.run-<pid>.h5) and maybe a
     * working copy (<out>.tmp-<pid>); once their process is gone they are only clutter. */
    static const char *const leftovers[] = {"run", "tmp"};
    if (exists && a->resume) {
        if (mx_results_load(a->out, existing) < 0) {
            fprintf(stderr, "mxbench sweep: --resume %s: %s\n", a->out, mx_last_error());
            return 2;
        }
        mx_results_remove_leftovers(a->out, leftovers, 2, "mxbench sweep");
        return 0;
    }
    if (exists && !a->force) {
        fprintf(stderr, "mxbench sweep: %s exists; use --force to overwrite it or --resume to complete it\n", a->out);
        return 2;
    }
    mx_results_remove_leftovers(a->out, leftovers, 2, "mxbench sweep");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", a->out);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        for (char *p = dir + 1; *p; p++)
            if (*p == '/') *p = 0, mkdir(dir, 0777), *p = '/';
        mkdir(dir, 0777);
    }
    mx_results_meta meta;
    /* argv starts at the subcommand; main's argv[0] sits just before it. */
    mx_buildinfo_meta(&meta, argc + 1, argv - 1);
    if (mx_results_create(a->out, &meta, 1) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return 2;
    }
    return 0;
}

/* The row of the existing file with r's configuration, or -1. */
static int existing_row(const mx_results *existing, const mx_run_record *r)
{
    char want[1024], have[1024];
    mx_record_config_key(r, want, sizeof want);
    for (int i = 0; i < existing->nruns; i++) {
        mx_record_config_key(&existing->runs[i], have, sizeof have);
        if (strcmp(want, have) == 0) return i;
    }
    return -1;
}

static void print_plan(mx_run_record *runs, int n)
{
    for (int i = 0; i < n; i++) {
        char label[256];
        mx_sweep_run_label(&runs[i], label, sizeof label);
        if (strcmp(runs[i].status, "skipped") == 0)
            printf("%3d  %s  [skipped: %s]\n", i + 1, label, runs[i].reason);
        else
            printf("%3d  %s\n", i + 1, label);
    }
}

static int run_sweep(const sweep_args *a, mx_run_record *runs, int n, const mx_results *existing)
{
    char tmp_path[1100];
    snprintf(tmp_path, sizeof tmp_path, "%s.run-%d.h5", a->out, (int)getpid());
    mx_progress pg;
    mx_progress_start(&pg, n);
    int failed = 0, next_id = existing->nruns;
    for (int i = 0; i < n && !interrupted; i++) {
        mx_run_record *r = &runs[i];
        char label[256], outcome[320];
        mx_sweep_run_label(r, label, sizeof label);
        mx_progress_run(&pg, i, label);
        const int row = existing_row(existing, r);
        const int retry = row >= 0 && a->retry_failed && strcmp(existing->runs[row].status, "failed") == 0;
        if (row >= 0 && !retry) {
            mx_progress_end(&pg, "already in the file (--resume)", 0);
            continue;
        }
        const int skipped = strcmp(r->status, "skipped") == 0;
        if (!skipped) mx_sweep_execute(r, tmp_path, a->timeout, on_tick, &pg, &interrupted);
        if (interrupted) break;
        /* a retried run takes the place (and id) of its failed row */
        if (retry)
            snprintf(r->id, sizeof r->id, "%s", existing->runs[row].id);
        else
            snprintf(r->id, sizeof r->id, "r%04d", next_id++);
        if ((retry ? mx_results_replace(a->out, r) : mx_results_append(a->out, r)) < 0) {
            fprintf(stderr, "mxbench sweep: cannot record run %s in %s: %s\n", r->id, a->out, mx_last_error());
            unlink(tmp_path);
            return 1;
        }
        failed += strcmp(r->status, "failed") == 0 || strcmp(r->status, "diverged") == 0;
        mx_sweep_outcome_text(r, outcome, sizeof outcome);
        mx_progress_end(&pg, outcome, !skipped);
    }
    unlink(tmp_path);
    if (interrupted) {
        fprintf(stderr, "\nmxbench sweep: interrupted by SIG%s; %s keeps every finished run (complete it with "
                "--resume)\n", sigabbrev_np(interrupted) ? sigabbrev_np(interrupted) : "?", a->out);
        return 128 + interrupted; /* the shell's convention: 130 for SIGINT, 143 for SIGTERM */
    }
    mx_progress_finish(&pg);
    return failed ? 1 : 0;
}

int mx_cmd_sweep(int argc, char **argv)
{
    sweep_args a = {.strategies = "data", .gpus = "1,2", .batch = "128", .lr = "0.05", .kvstore = "device",
                    .compression = "none", .amp = "off", .workload = "lenet", .batch_mode = "per-device",
                    .lr_scaling = "none", .dataset = "fashion-mnist", .out = "out/sweep.h5", .momentum = 0.9,
                    .wd = 0.0001, .timeout = 3600, .epochs = 1, .repeats = 1, .seed = 1};
    int rc = parse_args(&a, argc, argv);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    mx_sweep_axes ax;
    if (fill_axes(&a, &ax) != MX_OPTS_OK) return 2;
    mx_run_record *runs;
    int n;
    if (mx_sweep_plan(&ax, &runs, &n) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return 1;
    }
    if ((rc = mx_sweep_check_runs(runs, n)) != 0) {
    } else if (a.dry_run) {
        print_plan(runs, n);
    } else {
        mx_results existing;
        rc = prepare_file(&a, argc, argv, &existing);
        if (rc == 0) {
            mx_cuda_info cu;
            mx_cuda_probe(&cu);
            fprintf(stderr, "mxbench sweep: %d runs into %s; no CUDA device in use (%s): devices are CPU workers, "
                    "%d thread(s) each\n", n, a.out, cu.driver, ax.threads_per_device);
            signal(SIGINT, on_signal);
            signal(SIGTERM, on_signal);
            rc = run_sweep(&a, runs, n, &existing);
            mx_results_free(&existing);
            if (!interrupted) {
                char *report_argv[] = {"report", (char *)a.out, NULL};
                mx_cmd_report(2, report_argv);
                printf("\nresults: %s\nplots:   mxbench plot %s --out out/plots\n", a.out, a.out);
            }
        }
    }
    for (int i = 0; i < n; i++) mx_record_free(&runs[i]);
    free(runs);
    return rc;
}
