/* `mxbench sweep`: plans the product of the axes, runs each configuration as a child
 * `mxbench train`, and appends every outcome (ok, failed, skipped) to one HDF5 file as it
 * finishes, so an interrupted sweep keeps what it finished and --resume completes it. */
#include "buildinfo.h"
#include "commands.h"
#include "engine/status.h"
#include "opts.h"
#include "progress.h"
#include "results/results.h"
#include "sweep_child.h"
#include "sweep_plan.h"
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
    int epochs, steps, warmup_steps, repeats, seed, threads_per_device, force, resume, dry_run;
    char lists[6][512]; /* storage for the split string lists */
} sweep_args;

static volatile sig_atomic_t interrupted;

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
        {"warmup-epochs", MX_OPT_DOUBLE, &a->warmup_epochs, "X", "gradual warmup from the base lr over X epochs (default 0)", NULL},
        {"kvstore", MX_OPT_STRING, &a->kvstore, "LIST", "local, device, dist_sync, dist_device_sync, dist_async (default device)", NULL},
        {"compression", MX_OPT_STRING, &a->compression, "LIST", "none, 2bit, topk, fp16 (default none)", NULL},
        {"amp", MX_OPT_STRING, &a->amp, "LIST", "off, fp16, bf16 (default off)", NULL},
        {"dataset", MX_OPT_STRING, &a->dataset, "NAME", "fashion-mnist or synthetic (default fashion-mnist)", "fashion-mnist|synthetic"},
        {"data", MX_OPT_STRING, &a->data, "DIR", "an IDX (MNIST-format) dataset directory instead", NULL},
        {"epochs", MX_OPT_INT, &a->epochs, "N", "epochs per run (default 1)", NULL},
        {"steps", MX_OPT_INT, &a->steps, "N", "steps per run instead of epochs (throughput only)", NULL},
        {"warmup-steps", MX_OPT_INT, &a->warmup_steps, "N", "leading steps left out of the timings (default 0, 5 with --steps)", NULL},
        {"repeat", MX_OPT_INT, &a->repeats, "N", "repeats of each run for the timing statistics (default 1)", NULL},
        {"target-acc", MX_OPT_DOUBLE, &a->target_acc, "X", "record time to reach this test accuracy", NULL},
        {"seed", MX_OPT_INT, &a->seed, "N", "seed of every run (default 1)", NULL},
        {"momentum", MX_OPT_DOUBLE, &a->momentum, "X", "SGD momentum (default 0.9)", NULL},
        {"wd", MX_OPT_DOUBLE, &a->wd, "X", "weight decay (default 1e-4)", NULL},
        {"threads-per-device", MX_OPT_INT, &a->threads_per_device, "N", "CPU threads per device (default cores / largest device count)", NULL},
        {"timeout", MX_OPT_DOUBLE, &a->timeout, "SECONDS", "kill a run after this long and record it failed (default 3600)", NULL},
        {"out", MX_OPT_STRING, &a->out, "FILE", "results file (default out/sweep.h5)", NULL},
        {"force", MX_OPT_FLAG, &a->force, NULL, "overwrite an existing results file", NULL},
        {"resume", MX_OPT_FLAG, &a->resume, NULL, "keep an existing file and run only configurations it lacks", NULL},
        {"dry-run", MX_OPT_FLAG, &a->dry_run, NULL, "print the planned runs and exit", NULL},
        {0},
    };
    const mx_cmd_spec spec = {"mxbench sweep", "[options]", help_text, opts, 0, 0};
    const char *pos[1];
    int npos;
    return mx_opts_parse(&spec, argc, argv, pos, &npos);
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
    if ((ax->ngpus = mx_parse_int_list("mxbench sweep", "gpus", a->gpus, ax->gpus, MX_AXIS_MAX, 1)) < 0) return MX_OPTS_BAD;
    if ((ax->nbatch = mx_parse_int_list("mxbench sweep", "batch", a->batch, ax->batch, MX_AXIS_MAX, 1)) < 0) return MX_OPTS_BAD;
    if ((ax->nlr = mx_parse_double_list("mxbench sweep", "lr", a->lr, ax->lr, MX_AXIS_MAX)) < 0) return MX_OPTS_BAD;
    for (int i = 0; i < ax->nlr; i++)
        if (!(ax->lr[i] > 0)) {
            fprintf(stderr, "mxbench sweep: --lr %g: learning rates must be > 0\n", ax->lr[i]);
            return MX_OPTS_BAD;
        }
    for (int i = 0; i < ax->ngpus; i++)
        if (ax->gpus[i] > 64) {
            fprintf(stderr, "mxbench sweep: --gpus %d: accepted 1..64\n", ax->gpus[i]);
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
    ax->epochs = a->steps ? 0 : a->epochs;
    ax->warmup_steps = a->warmup_steps >= 0 ? a->warmup_steps : (a->steps ? 5 : 0);
    ax->repeats = a->repeats;
    ax->seed = a->seed;
    int widest = 1;
    for (int i = 0; i < ax->ngpus; i++) widest = ax->gpus[i] > widest ? ax->gpus[i] : widest;
    ax->threads_per_device = a->threads_per_device > 0 ? a->threads_per_device
                                                       : (mx_cpu_cores() / widest > 1 ? mx_cpu_cores() / widest : 1);
    if (ax->epochs < 0 || ax->steps < 0 || (ax->steps == 0 && ax->epochs == 0) || ax->repeats < 1) {
        fprintf(stderr, "mxbench sweep: need --epochs N or --steps N with N >= 1, and --repeat >= 1\n");
        return MX_OPTS_BAD;
    }
    if (!(a->timeout > 0)) {
        fprintf(stderr, "mxbench sweep: --timeout %g: must be > 0 seconds\n", a->timeout);
        return MX_OPTS_BAD;
    }
    if (strcmp(ax->dataset, "synthetic") != 0 &&
        mx_idx_dir_check(a->data ? a->data : mx_dataset_default_dir()) < 0) {
        fprintf(stderr, "mxbench sweep: %s%s\n", mx_last_error(),
                a->data ? "" : "\n  Fashion-MNIST comes from the Debian package dataset-fashion-mnist");
        return MX_OPTS_BAD;
    }
    if (ax->steps && ax->warmup_steps >= ax->steps) {
        fprintf(stderr, "mxbench sweep: --warmup-steps %d leaves no timed step of --steps %d\n", ax->warmup_steps, ax->steps);
        return MX_OPTS_BAD;
    }
    return MX_OPTS_OK;
}

static void run_label(const mx_run_record *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s x%d kv=%s batch=%d lr=%.4g%s%s%s%s", r->workload, r->strategy, r->gpus, r->kvstore,
             r->global_batch, r->lr, strcmp(r->compression, "none") ? " gc=" : "",
             strcmp(r->compression, "none") ? r->compression : "", strcmp(r->amp, "off") ? " amp=" : "",
             strcmp(r->amp, "off") ? r->amp : "");
}

/* The child's command line: `mxbench train` with this run's configuration. */
typedef struct {
    char *store;
    size_t size, used;
    char **argv;
    int argc;
} arg_list;

static void arg(arg_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(arg_list *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    l->argv[l->argc++] = l->store + l->used;
    l->used += (size_t)vsnprintf(l->store + l->used, l->size - l->used, fmt, ap) + 1;
    va_end(ap);
    l->argv[l->argc] = NULL;
}

static void child_argv(const mx_run_record *r, const char *record_path, char *store, size_t storesize, char **argv)
{
    arg_list l = {store, storesize, 0, argv, 0};
    arg(&l, "/proc/self/exe");
    arg(&l, "train");
    arg(&l, "--workload"), arg(&l, "%s", r->workload);
    arg(&l, "--strategy"), arg(&l, "%s", r->strategy);
    arg(&l, "--gpus"), arg(&l, "%d", r->gpus);
    arg(&l, "--kvstore"), arg(&l, "%s", r->gpus > 1 ? r->kvstore : "device");
    arg(&l, "--batch"), arg(&l, "%d", r->global_batch);
    arg(&l, "--lr"), arg(&l, "%.17g", r->lr);
    arg(&l, "--momentum"), arg(&l, "%.17g", r->momentum);
    arg(&l, "--wd"), arg(&l, "%.17g", r->wd);
    arg(&l, "--seed"), arg(&l, "%d", r->seed);
    arg(&l, "--threads-per-device"), arg(&l, "%d", r->threads_per_device);
    arg(&l, "--repeat"), arg(&l, "%d", r->repeats);
    arg(&l, "--warmup-steps"), arg(&l, "%d", r->warmup_steps);
    if (r->steps)
        arg(&l, "--steps"), arg(&l, "%d", r->steps);
    else
        arg(&l, "--epochs"), arg(&l, "%d", r->epochs);
    if (r->warmup_epochs > 0) {
        arg(&l, "--warmup-epochs"), arg(&l, "%.17g", r->warmup_epochs);
        arg(&l, "--warmup-from"), arg(&l, "%.17g", r->base_lr);
    }
    if (r->target_acc > 0) arg(&l, "--target-acc"), arg(&l, "%.17g", r->target_acc);
    if (strcmp(r->dataset, "fashion-mnist") == 0 || strcmp(r->dataset, "synthetic") == 0)
        arg(&l, "--dataset"), arg(&l, "%s", r->dataset);
    else
        arg(&l, "--data"), arg(&l, "%s", r->dataset);
    arg(&l, "--record"), arg(&l, "%s", record_path);
    arg(&l, "--quiet");
}

/* Moves the child's measurements into the planned record, whose configuration (with the
 * sweep's view of it: axis values, scaling rule, compression, amp) stays authoritative. */
static void adopt(mx_run_record *r, mx_run_record *got)
{
    r->nsteps = got->nsteps, r->step_time = got->step_time, r->phase_time = got->phase_time;
    r->nloss = got->nloss, r->loss = got->loss;
    r->nepochs = got->nepochs, r->test_acc = got->test_acc, r->epoch_time = got->epoch_time;
    got->step_time = got->phase_time = got->test_acc = got->epoch_time = NULL;
    got->loss = NULL;
    r->test_samples = got->test_samples;
    r->bytes_per_step = got->bytes_per_step;
    r->comm_overlap = got->comm_overlap;
    r->wall_time = got->wall_time;
    snprintf(r->status, sizeof r->status, "ok");
    mx_record_derive(r);
}

static void fail(mx_run_record *r, const mx_child_result *cr, const char *why)
{
    snprintf(r->status, sizeof r->status, "failed");
    r->exit_status = cr->exit_status;
    r->wall_time = cr->seconds;
    const char *tail = cr->stderr_tail;
    if (cr->timed_out)
        snprintf(r->reason, sizeof r->reason, "timed out after %.0f s (--timeout); stderr: %s", cr->seconds, tail);
    else
        snprintf(r->reason, sizeof r->reason, "%s (exit status %d); stderr: %s", why, cr->exit_status, tail);
}

typedef struct {
    mx_progress *progress;
} tick_ctx;

static void on_tick(void *user, double elapsed) { mx_progress_tick(((tick_ctx *)user)->progress, elapsed); }

/* Runs one planned configuration and fills its outcome. */
static void execute(mx_run_record *r, const char *tmp_path, mx_progress *pg, double timeout)
{
    char store[4096], *argv[64];
    child_argv(r, tmp_path, store, sizeof store, argv);
    unlink(tmp_path);
    mx_child_result cr;
    tick_ctx tc = {pg};
    if (mx_child_run(argv, timeout, on_tick, &tc, &cr) < 0) {
        cr.exit_status = -1;
        snprintf(cr.stderr_tail, sizeof cr.stderr_tail, "%s", mx_last_error());
        fail(r, &cr, "could not start the run");
        return;
    }
    if (cr.exit_status != 0 || cr.timed_out) {
        fail(r, &cr, interrupted ? "interrupted" : "the run failed");
        return;
    }
    mx_results got;
    if (mx_results_load(tmp_path, &got) < 0 || got.nruns != 1) {
        fail(r, &cr, "the run left no readable record");
        return;
    }
    adopt(r, &got.runs[0]);
    mx_results_free(&got);
    unlink(tmp_path);
}

static void outcome_text(const mx_run_record *r, char *buf, size_t n)
{
    if (strcmp(r->status, "ok") == 0) {
        if (isfinite(r->final_test_acc))
            snprintf(buf, n, "ok, %.1f samples/s, test acc %.4f", r->throughput, r->final_test_acc);
        else
            snprintf(buf, n, "ok, %.1f samples/s", r->throughput);
    } else {
        snprintf(buf, n, "%s: %.200s", r->status, r->reason);
        char *nl = strchr(buf, '\n');
        if (nl) *nl = 0;
    }
}

static int prepare_file(const sweep_args *a, int argc, char **argv, mx_results *existing)
{
    memset(existing, 0, sizeof *existing);
    struct stat st;
    const int exists = stat(a->out, &st) == 0;
    if (exists && a->resume) {
        if (mx_results_load(a->out, existing) < 0) {
            fprintf(stderr, "mxbench sweep: --resume %s: %s\n", a->out, mx_last_error());
            return 2;
        }
        return 0;
    }
    if (exists && !a->force) {
        fprintf(stderr, "mxbench sweep: %s exists; use --force to overwrite it or --resume to complete it\n", a->out);
        return 2;
    }
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

static int already_done(const mx_results *existing, const mx_run_record *r)
{
    char want[1024], have[1024];
    mx_record_config_key(r, want, sizeof want);
    for (int i = 0; i < existing->nruns; i++) {
        mx_record_config_key(&existing->runs[i], have, sizeof have);
        if (strcmp(want, have) == 0) return 1;
    }
    return 0;
}

static void print_plan(mx_run_record *runs, int n)
{
    for (int i = 0; i < n; i++) {
        char label[256];
        run_label(&runs[i], label, sizeof label);
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
        run_label(r, label, sizeof label);
        mx_progress_run(&pg, i, label);
        if (already_done(existing, r)) {
            mx_progress_end(&pg, "already in the file (--resume)", 0);
            continue;
        }
        const int skipped = strcmp(r->status, "skipped") == 0;
        if (!skipped) execute(r, tmp_path, &pg, a->timeout);
        if (interrupted) break;
        snprintf(r->id, sizeof r->id, "r%04d", next_id++);
        if (mx_results_append(a->out, r) < 0) {
            fprintf(stderr, "mxbench sweep: cannot record run %s in %s: %s\n", r->id, a->out, mx_last_error());
            unlink(tmp_path);
            return 1;
        }
        failed += strcmp(r->status, "failed") == 0;
        outcome_text(r, outcome, sizeof outcome);
        mx_progress_end(&pg, outcome, !skipped);
    }
    unlink(tmp_path);
    if (interrupted) {
        fprintf(stderr, "\nmxbench sweep: interrupted; %s keeps every finished run (complete it with --resume)\n", a->out);
        return 130;
    }
    mx_progress_finish(&pg);
    return failed ? 1 : 0;
}

int mx_cmd_sweep(int argc, char **argv)
{
    sweep_args a = {.strategies = "data", .gpus = "1,2", .batch = "128", .lr = "0.05", .kvstore = "device",
                    .compression = "none", .amp = "off", .workload = "lenet", .batch_mode = "per-device",
                    .lr_scaling = "none", .dataset = "fashion-mnist", .out = "out/sweep.h5", .momentum = 0.9,
                    .wd = 0.0001, .timeout = 3600, .epochs = 1, .warmup_steps = -1, .repeats = 1, .seed = 1};
    int rc = parse_args(&a, argc, argv);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (a.force && a.resume) {
        fprintf(stderr, "mxbench sweep: --force and --resume contradict each other; give one\n");
        return 2;
    }
    mx_sweep_axes ax;
    if (fill_axes(&a, &ax) != MX_OPTS_OK) return 2;
    mx_run_record *runs;
    int n;
    if (mx_sweep_plan(&ax, &runs, &n) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return 1;
    }
    if (a.dry_run) {
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
            if (rc != 130) {
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
