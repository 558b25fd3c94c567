/* `mxbench train`: one configuration, progress per epoch, a summary line; with --record,
 * the run is also written as a results file (how sweep children report back). */
#include "buildinfo.h"
#include "commands.h"
#include "base/paths.h"
#include "base/status.h"
#include "opts.h"
#include "results/results.h"
#include "base/limits.h"
#include "train_launch.h"
#include "trainer.h"
#include "train_summary.h"
#include "train_device.h"
#include "dist.h"
#include "kvstore/kvstore.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"
#include "engine/backend/switches.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    mx_train_config c;
    const char *work_load, *data, *record, *device;
    /* the words given, parsed into c (NULL: defaults) */
    const char *strategy, *kvstore, *compression, *amp, *optimizer;
    int quiet, threads_given;
    int oversubscribe, tf32; /* --oversubscribe, --tf32 */
    int oversubscribe_env;   /* MXBENCH_OVERSUBSCRIBE=1: a sweep's --oversubscribe (CUDA rows only) */
    int servers; /* --servers; -1: not given */
    int np;      /* --np: ranks to launch through mpirun; 0: none */
    int dry_run; /* --dry-run: check the configuration, run nothing */
    /* --device auto on a GPU machine with a combination GPUs do not run: why this run's devices
     * are CPU workers instead (the record's reason of an ok run); "" otherwise */
    char device_note[256];
} train_args;

static const char *summary_text =
    "Trains one configuration and prints, per epoch, the training loss, test accuracy,\n"
    "samples/s and seconds; with --steps, runs that many steps for throughput only.\n"
    "Without a GPU, devices are CPU workers (threads), each with its own replica.\n"
    "The dist_* kvstores run as an MPI job, every rank this command; --np N starts it here:\n"
    "  mxbench train --np 4 --kvstore dist_sync --batch 64   (2 workers, 2 servers)\n"
    "(or mpirun -np 4 ... yourself, across machines with --hostfile).\n"
    "Each worker trains --gpus devices on its own --batch (the global batch is workers x\n"
    "batch); parameter-server modes start as many servers as workers unless --servers S\n"
    "(or DMLC_NUM_SERVER) says otherwise; DMLC_ROLE set per rank assigns roles instead.";

static int record_force; /* --force: --record may overwrite an existing file (create_record) */

static int parse(train_args *a, int argc, char **argv)
{
    mx_train_config *c = &a->c;
    const mx_opt opts[] = {
        {"workload", MX_OPT_STRING, &c->workload, "NAME",
         "model: mlp (784-256-128-10), lenet (conv 20 5x5, pool, conv 50 5x5, pool, dense 128, dense 10), resnet18 "
         "(small-image variant: 3x3 stem, no max-pool, 4 stages of 2 basic blocks, 64-512 channels), or a GPT-2-style "
         "language model: gpt-mini (4 layers, 128 wide, 4 heads, context 64), gpt-bench (6 layers, 384 wide, 6 "
         "heads, context 256) or gpt2-124m (12 layers, 768 wide, 12 heads, context 1024) (default lenet)",
         mx_workload_names()},
        {"dataset", MX_OPT_STRING, &c->dataset, "NAME",
         "fashion-mnist (Debian package dataset-fashion-mnist) or synthetic (random data of the workload's shape, for "
         "throughput) (default fashion-mnist)",
         "fashion-mnist|synthetic"},
        {"data", MX_OPT_STRING, &a->data, "PATH",
         "image workloads: read an IDX (MNIST-format) dataset from directory PATH instead: "
         "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]; gpt-*: train on the tokens of file PATH, an llm.c token "
         "file, a headerless uint16 .bin (nanoGPT) or any other file as bytes, the last 10% held out for validation "
         "(default: /usr/share/games/fortunes/cookie, Debian package fortunes)",
         NULL},
        {"epochs", MX_OPT_INT, &c->epochs, "N", "epochs to train; give --epochs or --steps, not both (default 1)", NULL,
         1, MX_MAX_EPOCHS},
        {"steps", MX_OPT_INT, &c->steps, "N", "run N steps instead of epochs, for throughput only: no evaluation", NULL,
         1, MX_MAX_STEPS},
        {"batch", MX_OPT_INT, &c->batch, "N",
         "batch per step, split over the devices (default 128); under a dist_* kvstore each worker's own, the global "
         "batch being workers x N",
         NULL, 1, MX_MAX_BATCH},
        {"lr", MX_OPT_DOUBLE, &c->lr, "X", "SGD learning rate, above 0 (default 0.05)", NULL, 0, MX_MAX_LR},
        {"momentum", MX_OPT_DOUBLE, &c->momentum, "X", "SGD momentum, below 1 (default 0.9)", NULL, 0, 1},
        {"wd", MX_OPT_DOUBLE, &c->wd, "X",
         "SGD weight decay, below 1; applies to weights, not biases or batch-norm parameters (default 1e-4)", NULL, 0,
         1},
        {"optimizer", MX_OPT_STRING, &a->optimizer, "NAME",
         "sgd (momentum and weight decay, MXNet's form) or adamw (PyTorch's torch.optim.AdamW: --beta1, --beta2, "
         "--eps, decoupled weight decay --wd on weights only; --momentum unused); every strategy and kvstore runs "
         "either, on CPU workers and CUDA devices alike (default sgd)",
         mx_optim_names()},
        {"beta1", MX_OPT_DOUBLE, &c->beta1, "X", "adamw: decay of the first moment, below 1 (default 0.9)", NULL, 0, 1},
        {"beta2", MX_OPT_DOUBLE, &c->beta2, "X", "adamw: decay of the second moment, below 1 (default 0.999)", NULL,
         0, 1},
        {"eps", MX_OPT_DOUBLE, &c->eps, "X", "adamw: added to the second moment's root, above 0 (default 1e-8)",
         NULL, 0, 1},
        {"clip-norm", MX_OPT_DOUBLE, &c->clip_norm, "X",
         "clip the step's summed gradient to this global L2 norm as PyTorch's clip_grad_norm_ (scaled by X/(norm+1e-6) "
         "where that is below 1), the norm taken over the whole model on every device and rank; refused with "
         "dist_async, whose servers never hold a whole step's gradient; see docs/parallelism.md (default 0: off)",
         NULL, 0, MX_MAX_CLIP_NORM},
        {"seed", MX_OPT_INT, &c->seed, "N",
         "seed for initialisation and shuffling; the same seed gives bit-identical results on CPU (default 1)", NULL, 0,
         MX_MAX_SEED},
        {"init", MX_OPT_STRING, &c->init, "NAME",
         "weight initialiser: xavier (uniform, bound sqrt(6/(fan_in+fan_out))) or normal (sigma 0.01; 0.02 for gpt-*, "
         "GPT-2's) (default xavier; normal for gpt-*)",
         "xavier|normal"},
        {"strategy", MX_OPT_STRING, &a->strategy, "NAME",
         "parallel strategy: data (replicas, batch split), model (pipeline: contiguous stages of layers, one per "
         "device) or layer (every layer's channels split over the devices); see docs/parallelism.md (default data)",
         mx_strategy_kind_names()},
        {"gpus", MX_OPT_INT, &c->devices, "N", "device count (CPU workers without a GPU; default 1)", NULL, 1,
         MX_MAX_DEVICES},
        {"device", MX_OPT_STRING, &a->device, "KIND",
         "cpu, cuda or auto; cuda without a GPU exits 2 saying why; MXBENCH_DEVICE sets the default (default auto: "
         "CUDA where this build has it and a GPU is present)",
         "cpu|cuda|auto"},
        {"oversubscribe", MX_OPT_FLAG, &a->oversubscribe, NULL,
         "cuda: allow more devices than GPUs, several logical devices per GPU (separate streams), to test code paths; "
         "recorded oversubscribed, never plotted as scaling (without it, --gpus above the GPU count exits 2)",
         NULL},
        {"tf32", MX_OPT_FLAG, &a->tf32, NULL,
         "cuda: let f32 GEMMs and convolutions run as TF32 on the tensor cores; recorded as tf32 (default off: strict "
         "f32, as PyTorch's matmuls by default)",
         NULL},
        {"kvstore", MX_OPT_STRING, &a->kvstore, "MODE",
         "gradient aggregation: local or device in one process, or dist_sync, dist_device_sync, dist_async, "
         "dist_allreduce: an MPI job, every rank started by mpirun (see --np and docs/parallelism.md); with one device "
         "no kvstore is used, as MXNet does, and the run records none (default device)",
         mx_kv_mode_names()},
        {"np", MX_OPT_INT, &a->np, "N",
         "dist_*: start this command as an MPI job of N ranks on this machine, as the sweep starts its rows: mpirun "
         "--oversubscribe --bind-to none -np N (Open MPI counts slots in cores and refuses more ranks than slots), "
         "Open MPI's allow-run-as-root switches when root, each rank cores/N threads unless --threads-per-device; the "
         "mpirun line is printed. Across machines, run mpirun yourself",
         NULL, 1, MX_MAX_DEVICES + MX_MAX_SERVERS},
        {"servers", MX_OPT_INT, &a->servers, "S",
         "parameter-server ranks of dist_sync, dist_device_sync and dist_async; DMLC_NUM_SERVER also sets it (default: "
         "as many as workers, as MXNet's launcher starts)",
         NULL, 1, MX_MAX_SERVERS},
        {"bucket-mb", MX_OPT_DOUBLE, &c->bucket_mb, "X",
         "dist_allreduce: gradients are all-reduced in buckets of X MiB, filled in backward order (default 25, as "
         "PyTorch DDP); device: reduce-scattered and all-gathered in such buckets when given (else each key alone, as "
         "MXNet; with --compression, each key alone always)",
         NULL, 0, MX_MAX_BUCKET_MB},
        {"partition", MX_OPT_STRING, &c->partition, "CUT",
         "model: auto (stages balanced by a short per-layer profile, by FLOPs where none can run) or top-level layers "
         "per stage, e.g. 6,3,3 (a residual or transformer block is one layer) (default auto)",
         NULL},
        {"micro-batches", MX_OPT_INT, &c->micro_batches, "M",
         "model: split each batch into M micro-batches; gradients accumulate over them and each stage updates once per "
         "batch (default 4 per device, at most the batch's samples, as GPipe advises m >= 4k; 1 on one device)",
         NULL, 1, MX_MAX_MICRO_BATCHES},
        {"compression", MX_OPT_STRING, &a->compression, "NAME",
         "data with the device or a dist_* kvstore: what each push puts on the wire: none, 2bit (MXNet's: 2 bits a "
         "value, error feedback), topk (the largest values with their indices, error feedback) or fp16 (half "
         "precision); refused with local (nothing on a wire; MXNet refuses it too), on one device and with the model "
         "and layer strategies; see docs/parallelism.md (default none)",
         MX_GC_CHOICES},
        {"amp", MX_OPT_STRING, &a->amp, "MODE",
         "data: mixed precision off, fp16 (dynamic loss scaling) or bf16: f32 master weights and momentum, a 16-bit "
         "compute copy of the weights, 16-bit saved activations; refused with the model and layer strategies and with "
         "dist_async; see docs/parallelism.md (default off)",
         mx_amp_names()},
        {"threshold", MX_OPT_DOUBLE, &c->gc_threshold, "X",
         "2bit: a residual reaching +-X is sent as +-X and keeps the rest (default 0.5, as MXNet)", NULL, 0,
         MX_MAX_GC_THRESHOLD},
        {"topk-ratio", MX_OPT_DOUBLE, &c->gc_topk_ratio, "X",
         "topk: share of each key's values sent per push, above 0 (default 0.01)", NULL, 0, 1},
        {"schedule", MX_OPT_STRING, &c->schedule, "NAME",
         "model: gpipe (all forwards, then all backwards) or 1f1b (after a warm-up, one forward and one backward "
         "alternate, so stage r holds at most k-r micro-batches) (default 1f1b: the schedule that saves memory)",
         "gpipe|1f1b"},
        {"work-load", MX_OPT_STRING, &a->work_load, "LIST",
         "data: relative share of each batch per device, e.g. 3,1 (default even)", NULL},
        {"threads-per-device", MX_OPT_INT, &c->threads_per_device, "N",
         "CPU threads per device (default cores/devices)", NULL, 1, MX_MAX_THREADS_PER_DEVICE},
        {"lr-schedule", MX_OPT_STRING, &c->lr_schedule, "NAME",
         "the lr after the warmup: cosine (half a cosine from --lr down to 0 at the end of the run, so that the final "
         "weights settle) or constant (default cosine)",
         "constant|cosine"},
        {"warmup-epochs", MX_OPT_DOUBLE, &c->warmup_epochs, "X",
         "gradual warmup: ramp the lr linearly from --warmup-from over X epochs, at most the epochs trained (default "
         "0)",
         NULL, 0, MX_MAX_EPOCHS},
        {"warmup-from", MX_OPT_DOUBLE, &c->warmup_start_lr, "LR",
         "lr at the start of the ramp, above 0; needs --warmup-epochs (default lr/10)", NULL, 0, MX_MAX_LR},
        {"warmup-steps", MX_OPT_INT, &c->warmup_steps, "N", "leading steps left out of the timings (default 0)", NULL,
         0, MX_MAX_WARMUP_STEPS},
        {"repeat", MX_OPT_INT, &c->repeats, "N",
         "repeat the whole training N times for the timing statistics (default 1)", NULL, 1, MX_MAX_REPEATS},
        {"target-acc", MX_OPT_DOUBLE, &c->target_acc, "X",
         "also report the training time until test accuracy reached X, above 0", NULL, 0, 1},
        {"target-loss", MX_OPT_DOUBLE, &c->target_loss, "X",
         "language models: also report the training time until the validation loss reached X, above 0", NULL, 0,
         1000},
        {"record", MX_OPT_STRING, &a->record, "FILE",
         "also write the run to FILE as an HDF5 results file; an existing FILE is refused (exit 2) unless --force",
         NULL},
        {"trace", MX_OPT_STRING, &c->trace, "FILE",
         "write a timeline of --trace-steps steps from the first timed one as a Chrome trace (JSON traceEvents; opens "
         "in Perfetto or chrome://tracing): every device's phases, layers, pushes and pulls, the kvstore workers' "
         "reductions, every communicator call; a dist_* job's ranks (servers too) in one file, a process each; see "
         "docs/results.md",
         NULL},
        {"trace-steps", MX_OPT_INT, &c->trace_steps, "N", "steps the --trace timeline covers (default 5)", NULL, 1,
         MX_MAX_TRACE_STEPS},
        {"save-params", MX_OPT_STRING, &c->save_params, "FILE",
         "write the trained weights to FILE: raw little-endian f32 in the model's parameter order (worker 0's under "
         "MPI), written crash-safe",
         NULL},
        {"save-init", MX_OPT_STRING, &c->save_init, "FILE",
         "write the weights before the first step to FILE as --save-params does (bench/torch_gpt.py reads it)", NULL},
        {"param-table", MX_OPT_STRING, &c->param_table, "FILE",
         "write the tensor table to FILE: a line 'index name offset count decay' per tensor (floats into a --save-init "
         "or --save-params file; decay 1: weight decay applies) after two comment lines starting with #", NULL},
        {"force", MX_OPT_FLAG, &record_force, NULL, "with --record: overwrite FILE if it exists (refused otherwise)",
         NULL},
        {"log-interval", MX_OPT_INT, &c->log_interval, "N",
         "every N batches print a line as MXNet's Speedometer, Epoch[0] Batch [100-200]  Speed: 5123.4 samples/sec  "
         "accuracy=0.8123  loss=0.5120 (speed over the interval's step times; training accuracy and loss over its "
         "samples; epochs counted from 0 as MXNet does), and Epoch[0] Train-accuracy=0.8400 at each epoch's end "
         "(default 0: off)",
         NULL, 0, MX_MAX_LOG_INTERVAL},
        {"quiet", MX_OPT_FLAG, &a->quiet, NULL, "print only the summary line", NULL},
        {"dry-run", MX_OPT_FLAG, &a->dry_run, NULL,
         "check the options and the configuration as a run would (a dist_* one as its ranks would), say what would "
         "run, and exit 0 (nothing trained, launched or written; a refusal exits 2 as the run would)",
         NULL},
        {0},
    };
    unsigned char seen[sizeof opts / sizeof *opts];
    const mx_cmd_spec spec = {"mxbench train", "[options]", summary_text, opts, 0, 0, seen};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc;
    /* the words into the configuration's enums, once (the choices above let only their names through) */
    if ((a->strategy && mx_strategy_parse(a->strategy, &c->strategy) < 0) ||
        (a->kvstore && mx_kv_mode_parse(a->kvstore, &c->kvstore) < 0) ||
        (a->compression && mx_gc_parse(a->compression, &c->compression) < 0) ||
        (a->amp && mx_amp_parse(a->amp, &c->amp) < 0) ||
        (a->optimizer && mx_optim_parse(a->optimizer, &c->optimizer) < 0))
        return mx_usage_error(spec.cmd, "%s", mx_last_error());
    if (a->data) c->dataset = "idx", c->data_dir = a->data;
    if (mx_opts_seen(&spec, "steps")) {
        if (mx_opts_seen(&spec, "epochs"))
            return mx_usage_error(spec.cmd, "--epochs %d and --steps %d: give one of them, not both", c->epochs,
                                  c->steps);
        c->epochs = 0; /* --steps replaces the default epoch */
    }
    if (mx_opts_seen(&spec, "target-loss") && !(c->target_loss > 0))
        return mx_usage_error(spec.cmd, "--target-loss %g: accepted above 0 and at most 1000", c->target_loss);
    if (mx_opts_seen(&spec, "target-acc") && !(c->target_acc > 0))
        return mx_usage_error(spec.cmd, "--target-acc %g: accepted above 0 and at most 1", c->target_acc);
    if (mx_opts_seen(&spec, "warmup-from") && !mx_opts_seen(&spec, "warmup-epochs"))
        return mx_usage_error(spec.cmd, "--warmup-from %g needs --warmup-epochs X (the length of the ramp)",
                              c->warmup_start_lr);
    if (mx_opts_seen(&spec, "warmup-epochs") && c->warmup_epochs > 0 && !mx_opts_seen(&spec, "warmup-from"))
        c->warmup_start_lr = c->lr / 10;
    const char *adamw_only[] = {"beta1", "beta2", "eps"};
    for (int i = 0; i < 3; i++)
        if (mx_opts_seen(&spec, adamw_only[i]) && c->optimizer != MX_OPTIM_ADAMW)
            return mx_usage_error(spec.cmd, "--%s applies to --optimizer adamw, not %s", adamw_only[i],
                                  mx_optim_name(c->optimizer));
    if (mx_opts_seen(&spec, "threshold") && c->compression != MX_GC_2BIT)
        return mx_usage_error(spec.cmd, "--threshold %g applies to --compression 2bit, not %s", c->gc_threshold,
                              mx_gc_name(c->compression));
    if (mx_opts_seen(&spec, "topk-ratio") && c->compression != MX_GC_TOPK)
        return mx_usage_error(spec.cmd, "--topk-ratio %g applies to --compression topk, not %s", c->gc_topk_ratio,
                              mx_gc_name(c->compression));
    a->threads_given = mx_opts_seen(&spec, "threads-per-device");
    /* a sweep's --oversubscribe reaches its runs so */
    const char *over = getenv("MXBENCH_OVERSUBSCRIBE");
    a->oversubscribe_env = over && strcmp(over, "1") == 0;
    /* the default --device: a sweep's --device, or the user's environment */
    const char *dev = getenv("MXBENCH_DEVICE");
    if (!a->device && dev && *dev) {
        if (!mx_choice_ok("cpu|cuda|auto", dev))
            return mx_usage_error(spec.cmd, "MXBENCH_DEVICE '%s' (the default --device): accepted cpu, cuda or auto",
                                  dev);
        a->device = dev;
    }
    if (a->work_load) {
        c->nwork_load = mx_parse_double_list(spec.cmd, "work-load", a->work_load, c->work_load, MX_MAX_DEVICES,
                                             1e-6, MX_MAX_WORK_LOAD);
        if (c->nwork_load < 0) return MX_OPTS_BAD;
    }
    return MX_OPTS_OK;
}

/* Devices and threads, then the validation shared with the sweep (mx_train_config_check).
 * launching: the sweep checking a row it will start under mpirun itself. Returns 0 or the
 * exit status 2 after printing why. */
static int check_config(train_args *a, int launching)
{
    mx_train_config *c = &a->c;
    const char *kvstore = mx_kv_mode_name(c->kvstore);
    const int dist = mx_kv_mode_has(c->kvstore, MX_KV_DIST);
    if (dist && !launching && !mx_cluster_launched() && mx_kv_mode_built(c->kvstore)) {
        fprintf(stderr, "mxbench train: --kvstore %s runs as an MPI job: start its ranks with --np, e.g.\n"
                "  mxbench train --np 4 --kvstore %s ...   (%s)\n"
                "(or under mpirun yourself, across machines)\n"
                "or let `mxbench sweep --kvstore %s` launch it\n", kvstore, kvstore,
                mx_kv_mode_has(c->kvstore, MX_KV_SERVERS) ? "2 workers and 2 servers; --servers S sets the servers"
                                                          : "4 workers",
                kvstore);
        return 2;
    }
    if (!dist && mx_cluster_launched() && !launching && getenv("OMPI_COMM_WORLD_SIZE") &&
        atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
        fprintf(stderr, "mxbench train: started by mpirun with %s ranks, but --kvstore %s is one process; accepted "
                "under mpirun: dist_sync, dist_device_sync, dist_async, dist_allreduce\n",
                getenv("OMPI_COMM_WORLD_SIZE"), kvstore);
        return 2;
    }
    if (!dist && a->servers >= 0) {
        fprintf(stderr, "mxbench train: --servers %d applies to the parameter-server kvstores (dist_sync, "
                "dist_device_sync, dist_async), not %s\n", a->servers, kvstore);
        return 2;
    }
    const mx_train_device_opts dev = {a->device, a->oversubscribe, a->oversubscribe_env, a->tf32, a->quiet};
    if (mx_train_choose_device(c, &dev, a->device_note, sizeof a->device_note)) return 2;
    mx_backend_set_tf32_default(a->tf32);
    /* a dist_* worker's default is set again once it knows the workers of its host (join_job) */
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
    const int cores = mx_cpu_cores(), ranks = c->cluster ? mx_dist_local_ranks() : 1;
    if (!a->quiet) {
        if (c->cluster)
            fprintf(stderr, "mxbench: %s job of %d workers and %d servers; each worker trains %d device(s) with "
                    "%d thread(s) each, batch %d (global batch %d)\n", mx_kv_mode_name(c->kvstore),
                    c->cluster->nworkers, c->cluster->nservers, c->devices, c->threads_per_device, c->batch,
                    c->batch * c->cluster->nworkers);
        else if (strcmp(c->backend, "cuda") == 0) {
            mx_cuda_info cu;
            mx_cuda_probe(&cu);
            fprintf(stderr, "mxbench: %d CUDA device(s) on %d x %s%s%s\n", c->devices, cu.count, cu.model,
                    c->devices > cu.count ? " (oversubscribed: timings are not a scaling result)" : "",
                    a->tf32 ? ", TF32 allowed" : "");
        } else
            fprintf(stderr, "mxbench: no CUDA device in use: %d device(s) are CPU workers with %d thread(s) each\n",
                    c->devices, c->threads_per_device);
    }
    if (strcmp(c->backend, "cuda") == 0) return; /* GPUs: the cores' warning is not theirs */
    if (ranks * c->devices * c->threads_per_device > cores && !(c->cluster && c->cluster->index != 0))
        fprintf(stderr, "mxbench: warning: %d rank(s) x %d devices x %d threads on %d cores: timings are not "
                "meaningful (use such runs for correctness only)\n", ranks, c->devices, c->threads_per_device, cores);
}

int mx_train_validate_argv(int argc, char **argv)
{
    train_args a = {.servers = -1};
    mx_train_config_defaults(&a.c);
    int rc = parse(&a, argc, argv);
    if (rc != MX_OPTS_OK) return 2;
    a.quiet = 1; /* the sweep's check of its rows: the run says where its devices are */
    return check_config(&a, 1);
}

/* Creates the --record file before training, so that a bad path fails at once and not
 * after the run. An existing file is refused unless --force: a mistyped path must not
 * destroy a file (results or not); sweep children get a path the sweep has just cleared. */
static mx_results_lock record_lock = {-1, NULL}; /* held from creating the file to the run's write */

static int create_record(const char *path, int argc, char **argv)
{
    /* an empty path, or a device or FIFO (--force included: as root, replacing /dev/full
     * would destroy the device node) */
    if (mx_path_check_output(path, "--record") < 0 || mx_results_lock_take(&record_lock, path) < 0) {
        fprintf(stderr, "mxbench train: %s\n", mx_last_error());
        return MX_EINVAL;
    }
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

/* The --trace file is written at the end (a temporary file in its directory, renamed): a path
 * that cannot be written must fail before the training, not after it. */
static int check_trace_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "mxbench train: --trace %s: is a directory; name a file (e.g. %s/trace.json)\n", path, path);
        return MX_EINVAL;
    }
    char *dir = mx_path_fmt("%s", strchr(path, '/') ? path : "."); /* its own length: never another folder */
    if (!dir) return mx_error(MX_ENOMEM, "--trace: out of memory");
    char *slash = strrchr(dir, '/');
    if (slash == dir) dir[1] = 0;
    else if (slash) *slash = 0;
    int rc = MX_OK;
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "mxbench train: --trace %s: cannot write in directory %s: %s\n", path, dir, strerror(errno));
        rc = MX_EIO;
    }
    free(dir);
    return rc;
}

/* A dist_* rank: servers serve and end here (*done set, the exit status returned); workers
 * other than worker 0 train quietly and record nothing. */
static int join_job(train_args *a, mx_cluster **cl, int *done)
{
    *done = 0;
    if (!mx_kv_mode_has(a->c.kvstore, MX_KV_DIST)) return 0;
    const int rc = mx_dist_start(a->c.kvstore, a->servers, cl);
    if (rc != 0) {
        *done = 1;
        return rc;
    }
    /* the timeline: worker 0 writes every rank's part; a server records the first rounds,
     * which hold the workers' window (one round a step, and slack for dist_async's laggards) */
    (*cl)->trace = a->c.trace;
    (*cl)->trace_rounds = a->c.trace ? a->c.warmup_steps + a->c.trace_steps + 2 : 0;
    if ((*cl)->role == MX_ROLE_SERVER) {
        *done = 1;
        const int st = mx_dist_serve(*cl);
        mx_dist_end(*cl);
        return st;
    }
    a->c.cluster = *cl;
    if ((*cl)->index != 0) a->quiet = 1, a->record = NULL;
    /* the host's cores go to its workers' devices (servers mostly wait, politely) */
    const int share = (*cl)->local_workers * a->c.devices, cores = mx_cpu_cores();
    if (!a->threads_given) a->c.threads_per_device = cores / share > 1 ? cores / share : 1;
    return 0;
}

int mx_cmd_train(int argc, char **argv)
{
    train_args a = {.servers = -1};
    mx_train_config_defaults(&a.c);
    int rc = parse(&a, argc, argv);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (mx_switches_check() < 0) return fprintf(stderr, "mxbench train: %s\n", mx_last_error()), 2;
    if (a.np > 0) {
        if (!mx_kv_mode_has(a.c.kvstore, MX_KV_DIST)) {
            fprintf(stderr, "mxbench train: --np %d starts an MPI job, for the dist_* kvstores; --kvstore %s is one "
                    "process (accepted with --np: dist_sync, dist_device_sync, dist_async, dist_allreduce)\n", a.np,
                    mx_kv_mode_name(a.c.kvstore));
            return 2;
        }
        if (!a.dry_run) return mx_train_launch(a.np, a.threads_given, argc, argv);
    }
    if (a.dry_run) {
        /* as a rank launched by mpirun would check it: the job's ranks are not started */
        if ((rc = check_config(&a, mx_kv_mode_has(a.c.kvstore, MX_KV_DIST))) != 0) return rc;
        printf("mxbench train: --dry-run: accepted: %s on %s, %s x%d (%s kvstore), batch %d%s%s\n", a.c.workload,
               a.c.dataset, mx_strategy_name(a.c.strategy), a.c.devices, mx_kv_mode_name(a.c.kvstore), a.c.batch,
               a.np ? ", launched as an MPI job of --np ranks" : "", a.record ? ", recorded" : "");
        return 0;
    }
    if ((rc = check_config(&a, 0)) != 0) return rc;
    mx_cluster *cl = NULL;
    int done;
    if ((rc = join_job(&a, &cl, &done)) != 0 || done) return rc;
    say_devices(&a);
    a.c.log = a.quiet ? NULL : stdout;
    double flops = 0;
    a.c.flops_out = &flops;
    if ((a.c.trace && (!cl || cl->index == 0) && (rc = check_trace_path(a.c.trace)) < 0) ||
        (a.record && (rc = create_record(a.record, argc, argv)) < 0)) {
        mx_results_lock_release(&record_lock);
        mx_dist_abort(cl, mx_exit_status(rc)); /* the other ranks would wait for this one */
        return mx_exit_status(rc);
    }
    mx_run_record rec;
    mx_record_init(&rec);
    snprintf(rec.id, sizeof rec.id, "r0000");
    rc = mx_train_run(&a.c, &rec);
    if (cl) rc = mx_dist_finish_worker(cl, rc, &rec); /* a failure ends the whole job there */
    if (rc >= 0 && strcmp(rec.status, "ok") == 0 && a.device_note[0])
        snprintf(rec.reason, sizeof rec.reason, "%s", a.device_note); /* why the devices are CPU workers */
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    if (strcmp(a.c.backend, "cuda") == 0)
        rec.oversubscribed = (cl ? mx_dist_local_ranks() : 1) * a.c.devices > cu.count;
    else rec.oversubscribed = (cl ? mx_dist_local_ranks() : 1) * a.c.devices * a.c.threads_per_device > mx_cpu_cores();
    rec.tf32 = a.tf32;
    if (rc < 0) {
        fprintf(stderr, "mxbench train: %s\n", mx_last_error());
        if (a.record) unlink(a.record);
    } else {
        if (!(cl && cl->index != 0)) mx_train_print_summary(&a.c, &rec, flops); /* one line per job */
        /* A diverged run is recorded like any other (status diverged, series up to there) and
         * exits 1: a sweep adopts the record it finds after an exit 1. */
        const int diverged = strcmp(rec.status, "diverged") == 0 && !(cl && cl->index != 0);
        if (diverged) {
            rec.exit_status = 1;
            /* what works, as measured (docs/parallelism.md, Gradient compression): 2bit with momentum
             * diverges at every lr and threshold tried; without momentum, lr 0.5 trains */
            char hint[160];
            if (a.c.compression == MX_GC_2BIT && a.c.momentum > 0)
                snprintf(hint, sizeof hint, "2bit's bursts of quanta overshoot under momentum %g: try --lr 0.5 "
                         "--momentum 0 (the same long-run step as lr 0.05 with momentum 0.9)", a.c.momentum);
            else
                snprintf(hint, sizeof hint, "try a lower --lr than %g, or --warmup-epochs 1", a.c.lr);
            fprintf(stderr, "mxbench train: training diverged: %s\n  %s%s%s%s\n", rec.reason,
                    a.record ? "recorded with status diverged in " : "", a.record ? a.record : "",
                    a.record ? "; " : "", hint);
        }
        if (a.record && mx_results_append(a.record, &rec) < 0) {
            fprintf(stderr, "mxbench train: --record %s: %s\n", a.record, mx_last_error());
            /* the file holds no run, only what create_record wrote: left, it would make the
             * next run with this --record refuse an existing file */
            if (unlink(a.record) == 0)
                fprintf(stderr, "mxbench train: --record %s: removed the file this run created, which holds no run\n",
                        a.record);
            rc = MX_ERUNTIME;
        } else if (diverged) {
            rc = MX_ERUNTIME;
        }
    }
    mx_record_free(&rec);
    mx_results_lock_release(&record_lock);
    mx_dist_end(cl);
    return rc < 0 ? mx_exit_status(rc) : 0;
}
