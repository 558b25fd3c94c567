/* `mxbench train`: one configuration, progress per epoch, a summary line; with --record,
 * the run is also written as a results file (how sweep children report back). */
#include "buildinfo.h"
#include "commands.h"
#include "engine/status.h"
#include "opts.h"
#include "results/results.h"
#include "engine/limits.h"
#include "trainer.h"
#include "strategies/kvstore.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    mx_train_config c;
    const char *work_load, *data, *record, *device;
    int quiet, threads_given;
} train_args;

static const char *summary_text =
    "Trains one configuration and prints, per epoch, the training loss, test accuracy,\n"
    "samples/s and seconds; with --steps, runs that many steps for throughput only.\n"
    "Without a GPU, devices are CPU workers (threads), each with its own replica.";

static int record_force; /* --force: --record may overwrite an existing file (create_record) */

static int parse(train_args *a, int argc, char **argv)
{
    mx_train_config *c = &a->c;
    const mx_opt opts[] = {
        {"workload", MX_OPT_STRING, &c->workload, "NAME", "model: mlp, lenet, resnet18 (default lenet)", mx_workload_names()},
        {"dataset", MX_OPT_STRING, &c->dataset, "NAME", "fashion-mnist or synthetic (default fashion-mnist)", "fashion-mnist|synthetic"},
        {"data", MX_OPT_STRING, &a->data, "DIR", "read an IDX (MNIST-format) dataset from DIR instead", NULL},
        {"epochs", MX_OPT_INT, &c->epochs, "N", "epochs to train (default 1)", NULL, 1, MX_MAX_EPOCHS},
        {"steps", MX_OPT_INT, &c->steps, "N", "run N steps instead of epochs (throughput only, no evaluation)", NULL, 1, MX_MAX_STEPS},
        {"batch", MX_OPT_INT, &c->batch, "N", "global batch per step, split over the devices (default 128)", NULL, 1, MX_MAX_BATCH},
        {"lr", MX_OPT_DOUBLE, &c->lr, "X", "learning rate, > 0 (default 0.05)", NULL, 0, MX_MAX_LR},
        {"momentum", MX_OPT_DOUBLE, &c->momentum, "X", "SGD momentum, below 1 (default 0.9)", NULL, 0, 1},
        {"wd", MX_OPT_DOUBLE, &c->wd, "X", "weight decay on weights, not biases or norms, below 1 (default 1e-4)", NULL, 0, 1},
        {"seed", MX_OPT_INT, &c->seed, "N", "seed for initialisation and shuffling (default 1)", NULL, 0, MX_MAX_SEED},
        {"init", MX_OPT_STRING, &c->init, "NAME", "weight initialiser: xavier or normal (default xavier)", "xavier|normal"},
        {"strategy", MX_OPT_STRING, &c->strategy, "NAME", "parallel strategy (default data)", mx_strategy_planned()},
        {"gpus", MX_OPT_INT, &c->devices, "N", "device count (CPU workers without a GPU; default 1)", NULL, 1, MX_MAX_DEVICES},
        {"device", MX_OPT_STRING, &a->device, "KIND", "cpu, cuda or auto (default auto: cuda where present)", "cpu|cuda|auto"},
        {"kvstore", MX_OPT_STRING, &c->kvstore, "MODE", "gradient aggregation: local or device (default device)", mx_kv_modes()},
        {"work-load", MX_OPT_STRING, &a->work_load, "LIST", "relative batch share per device, e.g. 3,1 (default even)", NULL},
        {"threads-per-device", MX_OPT_INT, &c->threads_per_device, "N", "CPU threads per device (default cores/devices)", NULL, 1, MX_MAX_THREADS_PER_DEVICE},
        {"warmup-epochs", MX_OPT_DOUBLE, &c->warmup_epochs, "X", "ramp the lr linearly over X epochs (default 0)", NULL, 0, MX_MAX_EPOCHS},
        {"warmup-from", MX_OPT_DOUBLE, &c->warmup_start_lr, "LR", "lr at the start of the ramp, > 0 (default lr/10)", NULL, 0, MX_MAX_LR},
        {"warmup-steps", MX_OPT_INT, &c->warmup_steps, "N", "leading steps left out of the timings (default 0)", NULL, 0, MX_MAX_WARMUP_STEPS},
        {"repeat", MX_OPT_INT, &c->repeats, "N", "repeat the whole training N times for the timings (default 1)", NULL, 1, MX_MAX_REPEATS},
        {"target-acc", MX_OPT_DOUBLE, &c->target_acc, "X", "report time to reach this test accuracy, above 0", NULL, 0, 1},
        {"record", MX_OPT_STRING, &a->record, "FILE", "also write the run to FILE as an HDF5 results file", NULL},
        {"force", MX_OPT_FLAG, &record_force, NULL, "with --record: overwrite FILE if it exists (refused otherwise)", NULL},
        {"log-interval", MX_OPT_INT, &c->log_interval, "N", "every N batches print speed, training accuracy and loss, as MXNet's Speedometer (default 0: off)", NULL, 0, MX_MAX_LOG_INTERVAL},
        {"quiet", MX_OPT_FLAG, &a->quiet, NULL, "print only the summary line", NULL},
        {0},
    };
    unsigned char seen[sizeof opts / sizeof *opts];
    const mx_cmd_spec spec = {"mxbench train", "[options]", summary_text, opts, 0, 0, seen};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc;
    if (a->data) c->dataset = "idx", c->data_dir = a->data;
    if (mx_opts_seen(&spec, "steps")) {
        if (mx_opts_seen(&spec, "epochs"))
            return mx_usage_error(spec.cmd, "--epochs %d and --steps %d: give one of them, not both", c->epochs,
                                  c->steps);
        c->epochs = 0; /* --steps replaces the default epoch */
    }
    if (mx_opts_seen(&spec, "target-acc") && !(c->target_acc > 0))
        return mx_usage_error(spec.cmd, "--target-acc %g: accepted above 0 and at most 1", c->target_acc);
    if (mx_opts_seen(&spec, "warmup-from") && !mx_opts_seen(&spec, "warmup-epochs"))
        return mx_usage_error(spec.cmd, "--warmup-from %g needs --warmup-epochs X (the length of the ramp)",
                              c->warmup_start_lr);
    if (mx_opts_seen(&spec, "warmup-epochs") && c->warmup_epochs > 0 && !mx_opts_seen(&spec, "warmup-from"))
        c->warmup_start_lr = c->lr / 10;
    a->threads_given = mx_opts_seen(&spec, "threads-per-device");
    if (a->work_load) {
        c->nwork_load = mx_parse_double_list(spec.cmd, "work-load", a->work_load, c->work_load, MX_MAX_DEVICES,
                                             1e-6, MX_MAX_WORK_LOAD);
        if (c->nwork_load < 0) return MX_OPTS_BAD;
    }
    return MX_OPTS_OK;
}

/* Devices and threads, then the validation shared with the sweep (mx_train_config_check).
 * Returns 0 or the exit status 2 after printing why. */
static int check_config(train_args *a)
{
    mx_train_config *c = &a->c;
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    const int want_cuda = a->device && strcmp(a->device, "cuda") == 0;
    const int have_cuda = mx_backend_find("cuda") != NULL;
    if (want_cuda && !have_cuda) {
        fprintf(stderr, "mxbench train: --device cuda: the CUDA backend is not in this build yet (%s); use --device cpu\n",
                cu.count ? "GPU present" : cu.driver);
        return 2;
    }
    if (want_cuda && cu.count == 0) {
        fprintf(stderr, "mxbench train: --device cuda: no CUDA device present (%s); use --device cpu\n", cu.driver);
        return 2;
    }
    /* auto: CUDA where this build has it and a GPU is present, else the CPU */
    c->backend = want_cuda || (!(a->device && strcmp(a->device, "cpu") == 0) && have_cuda && cu.count > 0) ? "cuda" : "cpu";
    const int cores = mx_cpu_cores();
    if (!a->threads_given) c->threads_per_device = cores / c->devices > 1 ? cores / c->devices : 1;
    if (mx_train_config_check(c) < 0) {
        fprintf(stderr, "mxbench train: %s\n(see 'mxbench train --help')\n", mx_last_error());
        return 2;
    }
    return 0;
}

static void say_devices(const train_args *a)
{
    const mx_train_config *c = &a->c;
    const int cores = mx_cpu_cores();
    if (!a->quiet) fprintf(stderr, "mxbench: no CUDA device in use: %d device(s) are CPU workers with %d thread(s) each\n",
                           c->devices, c->threads_per_device);
    if (c->devices * c->threads_per_device > cores)
        fprintf(stderr, "mxbench: warning: %d devices x %d threads on %d cores: timings are not meaningful "
                "(use such runs for correctness only)\n", c->devices, c->threads_per_device, cores);
}

int mx_train_validate_argv(int argc, char **argv)
{
    train_args a = {0};
    mx_train_config_defaults(&a.c);
    int rc = parse(&a, argc, argv);
    if (rc != MX_OPTS_OK) return 2;
    return check_config(&a);
}

static void print_summary(const train_args *a, const mx_run_record *r, double flops)
{
    const mx_train_config *c = &a->c;
    printf("%s on %s, %s x%d (%s kvstore, %d thread(s)/device), batch %d:", c->workload, r->dataset, c->strategy,
           c->devices, c->devices > 1 ? c->kvstore : "no", c->threads_per_device, c->batch);
    if (c->steps) printf(" %d steps (%d warmup)", c->steps, c->warmup_steps);
    else printf(" %d epoch(s), test acc %.4f", c->epochs, r->final_test_acc);
    /* the median describes a typical step; the aggregate (samples over the time of all timed
     * steps) is what the run delivered, slow steps included: both, as they can differ a lot */
    printf(", %.1f samples/s median (step %.2f ms, 95%% CI %.1f-%.1f), %.1f aggregate", r->throughput,
           1e3 * r->step_time_median, r->throughput_ci_low, r->throughput_ci_high, r->throughput_agg);
    if (flops > 0) printf(", %.1f GFLOP/s", 3 * flops * r->throughput * 1e-9);
    if (isfinite(r->time_to_acc)) printf(", %.1f s to acc %.3f", r->time_to_acc, c->target_acc);
    printf(", %.1f s%s\n", r->wall_time, strcmp(r->status, "diverged") == 0 ? ", DIVERGED" : "");
}

/* Creates the --record file before training, so that a bad path fails at once and not
 * after the run. An existing file is refused unless --force: a mistyped path must not
 * destroy a file (results or not); sweep children get a path the sweep has just cleared. */
static int create_record(const char *path, int argc, char **argv)
{
    if (!record_force && access(path, F_OK) == 0) {
        fprintf(stderr, "mxbench train: --record %s: the file exists; pass --force to overwrite it, or name a new "
                "file\n", path);
        return MX_EINVAL;
    }
    mx_results_meta meta;
    /* argv starts at the subcommand; main's argv[0] sits just before it. */
    mx_buildinfo_meta(&meta, argc + 1, argv - 1);
    int rc = mx_results_create(path, &meta, 1);
    if (rc < 0) fprintf(stderr, "mxbench train: --record %s: %s\n", path, mx_last_error());
    return rc;
}

int mx_cmd_train(int argc, char **argv)
{
    train_args a = {0};
    mx_train_config_defaults(&a.c);
    int rc = parse(&a, argc, argv);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if ((rc = check_config(&a)) != 0) return rc;
    say_devices(&a);
    a.c.log = a.quiet ? NULL : stdout;
    double flops = 0;
    a.c.flops_out = &flops;
    if (a.record && (rc = create_record(a.record, argc, argv)) < 0) return mx_exit_status(rc);
    mx_run_record rec;
    mx_record_init(&rec);
    snprintf(rec.id, sizeof rec.id, "r0000");
    rc = mx_train_run(&a.c, &rec);
    if (rc < 0) {
        fprintf(stderr, "mxbench train: %s\n", mx_last_error());
        if (a.record) unlink(a.record);
    } else {
        print_summary(&a, &rec, flops);
        /* A diverged run is recorded like any other (status diverged, series up to there) and
         * exits 1: a sweep adopts the record it finds after an exit 1. */
        const int diverged = strcmp(rec.status, "diverged") == 0;
        if (diverged) {
            rec.exit_status = 1;
            fprintf(stderr, "mxbench train: training diverged: %s\n  %s%s%stry a lower --lr than %g\n", rec.reason,
                    a.record ? "recorded with status diverged in " : "", a.record ? a.record : "",
                    a.record ? "; " : "", a.c.lr);
        }
        if (a.record && mx_results_append(a.record, &rec) < 0) {
            fprintf(stderr, "mxbench train: --record %s: %s\n", a.record, mx_last_error());
            rc = MX_ERUNTIME;
        } else if (diverged) {
            rc = MX_ERUNTIME;
        }
    }
    mx_record_free(&rec);
    return rc < 0 ? mx_exit_status(rc) : 0;
}
