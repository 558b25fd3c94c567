/* `mxbench sweep`: plans the product of the axes, runs each configuration as a child
 * `mxbench train`, and appends every outcome (ok, failed, skipped) to one HDF5 file as it
 * finishes, so an interrupted sweep keeps what it finished and --resume completes it. */
#include "buildinfo.h"
#include "engine/backend/backend.h"
#include "engine/backend/switches.h"
#include "engine/core/backends.h"
#include "commands.h"
#include "base/limits.h"
#include "base/paths.h"
#include "base/status.h"
#include "opts.h"
#include "progress.h"
#include "results/results.h"
#include "sweep_child.h"
#include "sweep_cores.h"
#include "sweep_mpi.h"
#include "sweep_plan.h"
#include "sweep_run.h"
#include "kvstore/kvstore.h"
#include "strategies/strategy.h"
#include "workloads/dataset.h"
#include "workloads/tokens.h"
#include "workloads/workloads.h"
#include "train_data.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The options of the axes table (results/axes.h), one slot per entry by its type, plus the
 * options that are the sweep's own. */
typedef struct {
    const char *text[MX_AXES_MAX]; /* list axes and string options */
    int ival[MX_AXES_MAX];
    double dval[MX_AXES_MAX];
    const char *data, *out;
    const char *device;            /* the rows' devices (train --device); NULL: auto */
    const char *trace;             /* a directory for each row's timeline, <id>.json; NULL: none */
    double timeout;
    int force, resume, retry_failed, dry_run, oversubscribe;
    int threads_per_device;        /* resolved: cores / largest device count unless given */
    /* dist_* rows */
    const char *launcher, *mpirun, *hostfile, *mpirun_args, *srun_args;
    int servers;                   /* 0: as many as the row's workers */
    double bucket_mb;              /* 0: the child's default */
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
    "A dist_* row of G devices is its own MPI job: G worker ranks of one device each, each\n"
    "training global batch / G samples per step, plus S server ranks for dist_sync,\n"
    "dist_device_sync and dist_async (S = --servers, else G, as MXNet; dist_allreduce has none);\n"
    "1 thread per device unless --threads-per-device. On one machine (no --hostfile) mpirun gets\n"
    "--oversubscribe --bind-to none --mca btl self,tcp (TCP, as between hosts); rows whose ranks\n"
    "x threads exceed the cores are warned of once and recorded oversubscribed. Inside a Slurm\n"
    "allocation (salloc, sbatch) each such row is an srun step instead (--launcher), its ranks\n"
    "on the allocation's nodes, counted against its tasks and CPUs.\n"
    "A sweep plans at most 10000 rows (the product of the lists' lengths); more is refused.\n"
    "Example: mxbench sweep --strategies data --gpus 1,2 --workload lenet --epochs 1";
_Static_assert(MX_SWEEP_MAX_ROWS == 10000, "the help text states the bound on a sweep's rows");

enum { MAX_OPTS = MX_AXES_MAX + 24 };

/* The sweep's options: one per entry of the axes table that has one (in table order, with
 * --data beside --dataset), then the sweep's own. Defaults come from the table. */
static int build_opts(sweep_args *a, mx_opt *opts)
{
    int k = 0;
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *ax = &mx_axes[i];
        if (!ax->option) continue;
        mx_opt o = {ax->option, MX_OPT_STRING, &a->text[i], ax->metavar, ax->help, NULL, 0, 0};
        if (ax->loop > 0 || ax->type == MX_AXIS_STR) {
            a->text[i] = ax->def;
            if (ax->loop == 0) o.choices = mx_axis_choices(ax);
        } else if (ax->type == MX_AXIS_INT) {
            a->ival[i] = atoi(ax->def);
            o = (mx_opt){ax->option, MX_OPT_INT, &a->ival[i], ax->metavar, ax->help, NULL, ax->lo, ax->hi};
        } else {
            a->dval[i] = strtod(ax->def, NULL);
            o = (mx_opt){ax->option, MX_OPT_DOUBLE, &a->dval[i], ax->metavar, ax->help, NULL, ax->lo, ax->hi};
        }
        opts[k++] = o;
        if (strcmp(ax->name, "dataset") == 0)
            opts[k++] = (mx_opt){
                "data", MX_OPT_STRING, &a->data, "PATH",
                "an IDX (MNIST-format) dataset directory instead; for gpt-* workloads a text or token file (as train's "
                "--data)", NULL, 0, 0};
    }
    const mx_opt own[] = {
        {"timeout", MX_OPT_DOUBLE, &a->timeout, "SECONDS",
         "kill a run after this long and record it failed, > 0 (default 3600)", NULL, 0, MX_MAX_TIMEOUT_S},
        {"out", MX_OPT_STRING, &a->out, "FILE", "results file (default out/sweep.h5)", NULL, 0, 0},
        {"trace", MX_OPT_STRING, &a->trace, "DIR",
         "keep each row's timeline (train --trace: 5 steps from the first timed one) as DIR/<run id>.json", NULL, 0, 0},
        {"force", MX_OPT_FLAG, &a->force, NULL, "overwrite an existing results file", NULL, 0, 0},
        {"resume", MX_OPT_FLAG, &a->resume, NULL, "keep an existing file and run only configurations it lacks", NULL, 0,
         0},
        {"retry-failed", MX_OPT_FLAG, &a->retry_failed, NULL,
         "with --resume: run the configurations recorded failed again, each replacing its row (same id)", NULL, 0, 0},
        {"dry-run", MX_OPT_FLAG, &a->dry_run, NULL,
         "print the planned runs and exit (a dist_* row with its mpirun -np or srun --ntasks, workers and servers)",
         NULL, 0, 0},
        {"device", MX_OPT_STRING, &a->device, "KIND",
         "cpu, cuda or auto: the rows' devices, as train --device; the runs read it as their default --device through "
         "MXBENCH_DEVICE, which a user may also set for train (default auto: CUDA where present)",
         "cpu|cuda|auto", 0, 0},
        {"oversubscribe", MX_OPT_FLAG, &a->oversubscribe, NULL,
         "CUDA: let rows have more devices than GPUs, several logical devices per GPU, to test code paths (train "
         "--oversubscribe); such rows are recorded oversubscribed and left out of the scaling and throughput plots",
         NULL, 0, 0},
        {"servers", MX_OPT_INT, &a->servers, "S",
         "dist_sync/dist_device_sync/dist_async rows: server ranks (default: as many as the row's workers, as MXNet)",
         NULL, 1, MX_MAX_SERVERS},
        {"bucket-mb", MX_OPT_DOUBLE, &a->bucket_mb, "X",
         "dist_allreduce rows: bucket size in MiB, > 0, passed to each rank as train --bucket-mb X (default 25)", NULL,
         0, MX_MAX_BUCKET_MB},
        {"launcher", MX_OPT_STRING, &a->launcher, "L",
         "dist_* rows: how their ranks start: mpirun (Open MPI's), srun (a Slurm job step; inside an allocation "
         "only), or auto: srun inside a Slurm allocation where srun is on PATH and no mpirun option is given, else "
         "mpirun (default auto)",
         "auto|mpirun|srun", 0, 0},
        {"srun-args", MX_OPT_STRING, &a->srun_args, "ARGS",
         "dist_* rows under srun: more srun options, split on spaces (--ntasks and --nodes are the sweep's; "
         "--mpi=PLUGIN replaces the default --mpi=pmix)",
         NULL, 0, 0},
        {"hostfile", MX_OPT_STRING, &a->hostfile, "FILE",
         "dist_* rows: Open MPI host file, ranks across machines (default: all on this one)", NULL, 0, 0},
        {"mpirun-args", MX_OPT_STRING, &a->mpirun_args, "ARGS",
         "dist_* rows: more mpirun options, split on spaces, before the program (-np and host files are the sweep's)",
         NULL, 0, 0},
        {"mpirun", MX_OPT_STRING, &a->mpirun, "PATH", "dist_* rows: Open MPI's mpirun (default: mpirun on PATH)", NULL,
         0, 0},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) opts[k++] = own[i];
    opts[k] = (mx_opt){0};
    return k;
}

#define IVAL(a, name) ((a)->ival[mx_sweep_axis_index(name)])
#define DVAL(a, name) ((a)->dval[mx_sweep_axis_index(name)])

/* The rules between options (the table checks each one alone). */
static int parse_args(sweep_args *a, int argc, char **argv)
{
    mx_opt opts[MAX_OPTS];
    build_opts(a, opts);
    unsigned char seen[MAX_OPTS];
    const mx_cmd_spec spec = {"mxbench sweep", "[options]", help_text, opts, 0, 0, seen};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc;
    /* the runs inherit these (train reads MXBENCH_OVERSUBSCRIBE as its --oversubscribe and
     * MXBENCH_DEVICE as its default --device), and so does this process's check of every row */
    if (a->oversubscribe) setenv("MXBENCH_OVERSUBSCRIBE", "1", 1);
    if (a->device) setenv("MXBENCH_DEVICE", a->device, 1); /* train's default --device, likewise */
    if (mx_opts_seen(&spec, "steps")) {
        if (mx_opts_seen(&spec, "epochs"))
            return mx_usage_error(spec.cmd, "--epochs %d and --steps %d: give one of them, not both", IVAL(a, "epochs"),
                                  IVAL(a, "steps"));
        IVAL(a, "epochs") = 0;
    }
    const double target = DVAL(a, "target_acc");
    if (mx_opts_seen(&spec, "target-acc") && !(target > 0))
        return mx_usage_error(spec.cmd, "--target-acc %g: accepted above 0 and at most 1", target);
    if (!(a->timeout > 0)) return mx_usage_error(spec.cmd, "--timeout %g: accepted above 0 seconds", a->timeout);
    if (mx_opts_seen(&spec, "bucket-mb") && !(a->bucket_mb > 0))
        return mx_usage_error(spec.cmd, "--bucket-mb %g: accepted above 0 MiB", a->bucket_mb);
    if (a->force && a->resume) return mx_usage_error(spec.cmd, "--force and --resume contradict each other; give one");
    if (a->retry_failed && !a->resume) return mx_usage_error(spec.cmd, "--retry-failed goes with --resume");
    if (!mx_opts_seen(&spec, "warmup-steps")) IVAL(a, "warmup_steps") = IVAL(a, "steps") ? 5 : 0;
    if (!mx_opts_seen(&spec, "threads-per-device")) IVAL(a, "threads_per_device") = 0; /* auto, once gpus are known */
    /* the pipeline's axes, when not given, take the pipeline's own defaults per row (which
     * depend on the row's devices and batch): no list, so the plan resolves them (derive) */
    if (!mx_opts_seen(&spec, "micro-batches")) a->text[mx_sweep_axis_index("micro_batches")] = NULL;
    if (!mx_opts_seen(&spec, "schedule")) a->text[mx_sweep_axis_index("schedule")] = NULL;
    return MX_OPTS_OK;
}

/* One list axis: its items checked and kept as text. */
static int fill_list(const mx_axis *x, const char *value, mx_sweep_axes *ax, int i)
{
    const char *cmd = "mxbench sweep";
    if (x->type == MX_AXIS_STR)
        return ax->n[i] = mx_parse_choice_list(cmd, x->option, value, mx_axis_choices(x), ax->store[i],
                                               sizeof ax->store[i], ax->text[i], MX_AXIS_MAX);
    int iv[MX_AXIS_MAX];
    double dv[MX_AXIS_MAX];
    const int n = x->type == MX_AXIS_INT
                      ? mx_parse_int_list(cmd, x->option, value, iv, MX_AXIS_MAX, (int)x->lo, (int)x->hi)
                      : mx_parse_double_list(cmd, x->option, value, dv, MX_AXIS_MAX, x->lo, x->hi);
    if (n < 0) return -1;
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        if (x->type == MX_AXIS_DBL && x->above_lo && !(dv[k] > x->lo)) {
            fprintf(stderr, "%s: --%s %g: accepted above %g\n", cmd, x->option, dv[k], x->lo);
            return -1;
        }
        ax->text[i][k] = ax->store[i] + at;
        const int w = x->type == MX_AXIS_INT ? snprintf(ax->store[i] + at, sizeof ax->store[i] - at, "%d", iv[k])
                                             : snprintf(ax->store[i] + at, sizeof ax->store[i] - at, "%.17g", dv[k]);
        at += (size_t)w + 1;
    }
    return ax->n[i] = n;
}


/* The whole data set, read and checked once here, so that bad content is refused (exit 2)
 * before any run starts rather than failing every run (exit 1): an IDX directory for the
 * image workloads, a text or token file for the language models (at the longest context
 * any of them reads). */
static int validate_data(const sweep_args *a, const mx_sweep_axes *ax)
{
    const int w = mx_sweep_axis_index("workload");
    int images = 0, context = 0;
    for (int i = 0; i < ax->n[w]; i++) {
        const mx_workload *wl = mx_workload_find(ax->text[w][i]);
        if (wl && wl->lm) context = wl->lm->context > context ? wl->lm->context : context;
        else images = 1;
    }
    if (images && context && a->data) {
        fprintf(stderr, "mxbench sweep: --data %s: image workloads read an IDX directory and language models a "
                "text or token file; sweep them separately\n", a->data);
        return MX_EINVAL;
    }
    if (context && mx_tokens_validate(a->data ? a->data : MX_TEXT_DEFAULT, context, MX_TOKENS_VAL_SHARE) < 0) {
        fprintf(stderr, "mxbench sweep: %s%s\n", mx_last_error(),
                a->data ? "" : "\n  the default text comes from the Debian package fortunes");
        return MX_EFORMAT;
    }
    if (images && mx_idx_dir_validate(a->data ? a->data : mx_dataset_default_dir()) < 0) {
        fprintf(stderr, "mxbench sweep: %s%s\n", mx_last_error(),
                a->data ? "" : "\n  Fashion-MNIST comes from the Debian package dataset-fashion-mnist");
        return MX_EFORMAT;
    }
    return MX_OK;
}
static int fill_axes(sweep_args *a, mx_sweep_axes *ax)
{
    memset(ax, 0, sizeof *ax);
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *x = &mx_axes[i];
        if (!x->option) continue;
        if (x->loop > 0) {
            if (a->text[i] && fill_list(x, a->text[i], ax, i) < 0) return MX_OPTS_BAD;
            continue;
        }
        ax->n[i] = 1;
        ax->text[i][0] = ax->store[i];
        if (x->type == MX_AXIS_STR) snprintf(ax->store[i], sizeof ax->store[i], "%s", a->text[i]);
        else if (x->type == MX_AXIS_INT) snprintf(ax->store[i], sizeof ax->store[i], "%d", a->ival[i]);
        else snprintf(ax->store[i], sizeof ax->store[i], "%.17g", a->dval[i]);
    }
    const int ds = mx_sweep_axis_index("dataset");
    if (a->data) snprintf(ax->store[ds], sizeof ax->store[ds], "%s", a->data);
    const int g = mx_sweep_axis_index("gpus"), t = mx_sweep_axis_index("threads_per_device");
    int widest = 1;
    for (int i = 0; i < ax->n[g]; i++) widest = atoi(ax->text[g][i]) > widest ? atoi(ax->text[g][i]) : widest;
    a->threads_per_device = a->ival[t] > 0 ? a->ival[t] : (mx_cpu_cores() / widest > 1 ? mx_cpu_cores() / widest : 1);
    snprintf(ax->store[t], sizeof ax->store[t], "%d", a->threads_per_device);
    /* a dist_* row's ranks share the cores: 1 thread per device unless given */
    ax->dist_threads = a->ival[t] > 0 ? a->ival[t] : 1;
    ax->servers = a->servers;
    if (strcmp(ax->store[ds], "synthetic") != 0 && validate_data(a, ax) < 0) return MX_OPTS_BAD;
    return MX_OPTS_OK;
}

/* One sweep at a time writes a file: two would each replace it with their own version. */
static mx_results_lock out_lock = {-1, NULL};
/* this sweep created --out (it holds no run of an earlier process): removed again when not
 * even its first run can be written (a full disk), so no empty file is left behind */
static int out_created;
/* --resume: this sweep's command line, added to the file's after its first recorded run */
static mx_results_meta resume_meta;

static int prepare_file(const sweep_args *a, int argc, char **argv, mx_results *existing)
{
    memset(existing, 0, sizeof *existing);
    /* the runs' record, <out>.run-<pid>.h5 made absolute (run_sweep), must be a name the
     * system takes: refused here, before anything is written, rather than every run failing */
    char *cwd = a->out[0] != '/' ? getcwd(NULL, 0) : NULL;
    const size_t longest = (cwd ? strlen(cwd) + 1 : 0) + strlen(a->out) + sizeof ".run-2147483647.h5";
    free(cwd);
    if (longest > PATH_MAX) {
        fprintf(stderr, "mxbench sweep: --out %s: %zu characters with the directory and the suffix of its runs' "
                "record (.run-<pid>.h5); accepted: at most %d\n", a->out, longest - 1, PATH_MAX - 1);
        return 2;
    }
    if (mx_mkdir_parent(a->out) < 0) { /* the lock file goes beside the file */
        fprintf(stderr, "mxbench sweep: --out %s: %s\n", a->out, mx_last_error());
        return 2;
    }
    if (mx_path_check_output(a->out, "--out") < 0 || mx_results_lock_take(&out_lock, a->out) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return 2;
    }
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
        /* the file will say every sweep that wrote it, one command line each: added with
         * this sweep's first run (run_sweep), so a sweep that records nothing changes nothing */
        mx_buildinfo_meta(&resume_meta, argc + 1, argv - 1);
        mx_results_remove_leftovers(a->out, leftovers, 2, "mxbench sweep");
        return 0;
    }
    if (exists && !a->force) {
        fprintf(stderr, "mxbench sweep: %s exists; use --force to overwrite it or --resume to complete it\n", a->out);
        return 2;
    }
    mx_results_remove_leftovers(a->out, leftovers, 2, "mxbench sweep");
    if (mx_mkdir_parent(a->out) < 0) {
        fprintf(stderr, "mxbench sweep: --out %s: %s\n", a->out, mx_last_error());
        return 2;
    }
    if (a->trace && mx_mkdir_p(a->trace) < 0) {
        fprintf(stderr, "mxbench sweep: --trace %s: %s\n", a->trace, mx_last_error());
        return 2;
    }
    mx_results_meta meta;
    /* argv starts at the subcommand; main's argv[0] sits just before it. */
    mx_buildinfo_meta(&meta, argc + 1, argv - 1);
    if (mx_results_create(a->out, &meta, 1) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return 2;
    }
    out_created = 1;
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

static void print_plan(const mx_sweep_mpi *mpi, mx_run_record *runs, int n)
{
    for (int i = 0; i < n; i++) {
        char label[256];
        mx_sweep_run_label(&runs[i], label, sizeof label);
        if (strcmp(runs[i].status, "skipped") == 0)
            printf("%3d  %s  [skipped: %s]\n", i + 1, label, runs[i].reason);
        else if (mx_kv_name_has(runs[i].kvstore, MX_KV_DIST)) {
            char ranks[64];
            snprintf(ranks, sizeof ranks, mpi->launcher->ranks, mx_sweep_mpi_ranks(&runs[i]));
            printf("%3d  %s  [%s: %d worker(s) + %d server(s), %d thread(s) each%s]\n", i + 1, label, ranks,
                   runs[i].workers, runs[i].servers, runs[i].threads_per_device,
                   runs[i].oversubscribed ? ", oversubscribed" : "");
        }
        else
            printf("%3d  %s%s\n", i + 1, label, runs[i].oversubscribed ? "  [oversubscribed]" : "");
    }
}

static int run_sweep(const sweep_args *a, const mx_sweep_mpi *mpi, mx_run_record *runs, int n,
                     const mx_results *existing)
{
    /* absolute: a dist_* row's rank 0 may run in another directory (another machine). Built
     * to its own length: cut to fit, it could come back as the name of --out itself, which
     * each run removes first */
    char *cwd = a->out[0] != '/' ? getcwd(NULL, 0) : NULL;
    char *tmp_path = mx_path_fmt("%s%s%s.run-%d.h5", cwd ? cwd : "", cwd ? "/" : "", a->out, (int)getpid());
    free(cwd);
    if (!tmp_path) {
        fprintf(stderr, "mxbench sweep: out of memory for the runs' record name\n");
        return 1;
    }
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
        char *trace = NULL; /* named by the id the row gets below */
        if (a->trace && retry) trace = mx_path_fmt("%s/%s.json", a->trace, existing->runs[row].id);
        else if (a->trace) trace = mx_path_fmt("%s/r%04d.json", a->trace, next_id);
        if (!skipped)
            mx_sweep_execute(r, mpi, tmp_path, trace, a->timeout, on_tick, &pg, &interrupted);
        free(trace);
        if (interrupted) break;
        /* a retried run takes the place (and id) of its failed row */
        if (retry)
            snprintf(r->id, sizeof r->id, "%s", existing->runs[row].id);
        else
            snprintf(r->id, sizeof r->id, "r%04d", next_id++);
        if ((retry ? mx_results_replace(a->out, r) : mx_results_append(a->out, r)) < 0) {
            fprintf(stderr, "mxbench sweep: cannot record run %s in %s: %s\n", r->id, a->out, mx_last_error());
            if (out_created && next_id - 1 == 0 && !retry && unlink(a->out) == 0)
                fprintf(stderr, "mxbench sweep: removed %s, which this sweep created and holds no run\n", a->out);
            unlink(tmp_path);
            free(tmp_path);
            return 1;
        }
        if (resume_meta.command_line[0] && mx_results_add_command(a->out, resume_meta.command_line) < 0)
            fprintf(stderr, "mxbench sweep: note: %s keeps its runs but not this sweep's command line: %s\n", a->out,
                    mx_last_error());
        resume_meta.command_line[0] = 0; /* once */
        failed += strcmp(r->status, "failed") == 0 || strcmp(r->status, "diverged") == 0;
        mx_sweep_outcome_text(r, outcome, sizeof outcome);
        mx_progress_end(&pg, outcome, !skipped);
    }
    unlink(tmp_path);
    free(tmp_path);
    if (interrupted) {
        fprintf(stderr, "\nmxbench sweep: interrupted by SIG%s; %s keeps every finished run (complete it with "
                "--resume)\n", sigabbrev_np(interrupted) ? sigabbrev_np(interrupted) : "?", a->out);
        return 128 + interrupted; /* the shell's convention: 130 for SIGINT, 143 for SIGTERM */
    }
    mx_progress_finish(&pg);
    return failed ? 1 : 0;
}

/* The sweep's dist_* options apply only where --kvstore lists a mode they serve. */
static int check_dist_options(const sweep_args *a, const mx_sweep_axes *ax)
{
    const int kv = mx_sweep_axis_index("kvstore");
    int dist = 0, ps = 0, allreduce = 0;
    for (int i = 0; i < ax->n[kv]; i++) {
        const char *m = ax->text[kv][i];
        dist |= mx_kv_name_has(m, MX_KV_DIST);
        allreduce |= mx_kv_name_has(m, MX_KV_DIST | MX_KV_BUCKETS);
        ps |= mx_kv_name_has(m, MX_KV_DIST | MX_KV_SERVERS);
    }
    const char *list = a->text[kv];
    const char *cmd = "mxbench sweep";
    if (a->servers && !ps)
        return mx_usage_error(cmd, "--servers %d applies to dist_sync, dist_device_sync and dist_async rows, and "
                              "--kvstore %s has none", a->servers, list);
    if (a->bucket_mb > 0 && !allreduce)
        return mx_usage_error(cmd, "--bucket-mb %g applies to dist_allreduce rows, and --kvstore %s has none",
                              a->bucket_mb, list);
    const char *given = a->hostfile      ? "--hostfile"
                        : a->mpirun_args ? "--mpirun-args"
                        : a->mpirun      ? "--mpirun"
                        : a->srun_args   ? "--srun-args"
                        : a->launcher    ? "--launcher"
                                         : NULL;
    if (given && !dist)
        return mx_usage_error(cmd, "%s applies to the dist_* rows (MPI jobs), and --kvstore %s has none", given,
                              list);
    return MX_OPTS_OK;
}

/* The GPUs the rows run on, 0 when they are CPU workers: the runs choose as `train --device
 * auto` does, CUDA where built and present (MXBENCH_DEVICE=cpu: a sweep's --device cpu). */
static int gpus_in_use(const mx_cuda_info *cu)
{
    const char *dev = getenv("MXBENCH_DEVICE");
    return cu->count > 0 && mx_backend_find("cuda") && !(dev && strcmp(dev, "cpu") == 0) ? cu->count : 0;
}

/* Before the first row: every row's devices (on a GPU machine CUDA, unless the combination
 * does not run on GPUs yet: then CPU workers, as `train --device auto` takes them), its
 * oversubscribed flag (more threads than cores, or devices than GPUs: sweep_cores.h) and Open
 * MPI's switches when root, each said once. */
static void prepare_rows(const mx_sweep_mpi *mpi, mx_run_record *runs, int n, int gpus, int say)
{
    int ndist = 0;
    for (int i = 0; i < n; i++) {
        mx_run_record *r = &runs[i];
        ndist += mx_kv_name_has(r->kvstore, MX_KV_DIST) && strcmp(r->status, "skipped") != 0;
        const int cuda = gpus > 0 && !mx_train_gpu_untested(r->strategy, r->compression, r->kvstore);
        snprintf(r->device_type, sizeof r->device_type, "%s", cuda ? "cuda" : "cpu");
    }
    mx_sweep_mark_oversubscribed(mpi, runs, n, gpus);
    if (!say) return;
    if (ndist && geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        fprintf(stderr, "mxbench sweep: running as root: Open MPI's allow-run-as-root switches are set for the "
                "dist_* rows\n");
    }
    mx_sweep_warn_oversubscribed(mpi, runs, n, gpus);
}

int mx_cmd_sweep(int argc, char **argv)
{
    static sweep_args a; /* defaults: the axes table's (build_opts) and these */
    memset(&a, 0, sizeof a);
    a.out = "out/sweep.h5";
    a.timeout = 3600;
    int rc = parse_args(&a, argc, argv);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (mx_switches_check() < 0) return fprintf(stderr, "mxbench sweep: %s\n", mx_last_error()), 2;
    static mx_sweep_axes ax;
    if (fill_axes(&a, &ax) != MX_OPTS_OK || check_dist_options(&a, &ax) != MX_OPTS_OK) return 2;
    mx_run_record *runs;
    int n;
    if ((rc = mx_sweep_plan(&ax, &runs, &n)) < 0) {
        fprintf(stderr, "mxbench sweep: %s\n", mx_last_error());
        return rc == MX_EINVAL ? 2 : 1; /* too many rows is bad usage; out of memory is not */
    }
    int ndist = 0;
    for (int i = 0; i < n; i++)
        ndist += mx_kv_name_has(runs[i].kvstore, MX_KV_DIST) && strcmp(runs[i].status, "skipped") != 0;
    static mx_sweep_mpi mpi;
    const mx_sweep_mpi_opts mopts = {a.launcher, a.mpirun, a.hostfile, a.mpirun_args, a.srun_args, a.bucket_mb};
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    if ((rc = mx_sweep_check_runs(runs, n)) != 0) {
    } else if ((rc = mx_sweep_mpi_setup(&mpi, &mopts, ndist > 0)) != 0) {
    } else if (a.dry_run) {
        prepare_rows(&mpi, runs, n, gpus_in_use(&cu), 1);
        print_plan(&mpi, runs, n);
    } else {
        mx_results existing;
        rc = prepare_file(&a, argc, argv, &existing);
        if (rc == 0) {
            if (gpus_in_use(&cu) > 0)
                fprintf(stderr, "mxbench sweep: %d runs into %s; devices are GPUs: %d x %s%s\n", n, a.out, cu.count,
                        cu.model,
                        a.oversubscribe ? " (rows with more devices than GPUs share them: --oversubscribe)" : "");
            else
                fprintf(stderr, "mxbench sweep: %d runs into %s; no CUDA device in use (%s): devices are CPU workers, "
                        "%d thread(s) each\n", n, a.out, cu.driver, a.threads_per_device);
            if (ndist) {
                char where[400];
                if (mpi.launcher == &mx_launcher_srun || mpi.slurm.inside) {
                    char job[300];
                    mx_slurm_describe(&mpi.slurm, job, sizeof job);
                    snprintf(where, sizeof where, "on the nodes of Slurm %s", job);
                } else {
                    snprintf(where, sizeof where, "%s",
                             mpi.hostfile ? "on the hosts of --hostfile" : "on this machine over TCP");
                }
                fprintf(stderr, "mxbench sweep: %d dist_* row(s), each its own %s job of one worker rank per device "
                        "(%d thread(s) each) and its servers, %s\n", ndist, mpi.prog, ax.dist_threads, where);
            }
            prepare_rows(&mpi, runs, n, gpus_in_use(&cu), 1);
            signal(SIGINT, on_signal);
            signal(SIGTERM, on_signal);
            rc = run_sweep(&a, &mpi, runs, n, &existing);
            mx_results_free(&existing);
            if (!interrupted) {
                char *report_argv[] = {"report", (char *)a.out, NULL};
                mx_cmd_report(2, report_argv);
                printf("\nresults: %s\nplots:   mxbench plot %s --out out/plots\n", a.out, a.out);
            }
        }
        mx_results_lock_release(&out_lock);
    }
    for (int i = 0; i < n; i++) mx_record_free(&runs[i]);
    free(runs);
    return rc;
}
