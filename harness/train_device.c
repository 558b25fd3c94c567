/* The devices a `train` run takes (train_device.h). */
#include "train_device.h"
#include "buildinfo.h"
#include "commands.h"
#include "base/config.h"
#include "engine/backend/switches.h"
#include "engine/core/backends.h"

#include <stdio.h>
#include <string.h>

const char *mx_train_gpu_untested(const char *strategy, const char *compression, const char *kvstore)
{
    if (strcmp(strategy, "data") != 0) return "the model and layer strategies";
    if (strcmp(compression, "none") != 0) return "gradient compression";
    /* MXBENCH_GPU=preview: the dist_* workers move gradients and weights through their
     * backend's copies only (kvstore/dist.c, allreduce.c), so they may run on CUDA devices for
     * the GPU tests to try them */
    if (mx_switch_value(MX_SWITCH_GPU) == MX_SW_GPU_PREVIEW) return NULL;
    return mx_kv_name_has(kvstore, MX_KV_DIST) ? "the dist_* kvstores" : NULL;
}

int mx_train_choose_device(mx_train_config *c, const mx_train_device_opts *o, char *note, size_t note_size)
{
    const char *kvstore = mx_kv_mode_name(c->kvstore);
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    const int want_cuda = o->device && strcmp(o->device, "cuda") == 0;
    const int have_cuda = mx_backend_find("cuda") != NULL;
    if (want_cuda && !have_cuda) {
        fprintf(stderr, "mxbench train: --device cuda: the CUDA backend is not in this build (%s); use --device cpu\n",
                cu.count ? "GPU present" : cu.driver);
        return 2;
    }
    if (want_cuda && cu.count == 0) {
        fprintf(stderr, "mxbench train: --device cuda: no CUDA device present (%s); use --device cpu\n", cu.driver);
        return 2;
    }
    /* auto: CUDA where this build has it and a GPU is present, else the CPU */
    c->backend =
        want_cuda || (!(o->device && strcmp(o->device, "cpu") == 0) && have_cuda && cu.count > 0) ? "cuda" : "cpu";
    /* What has run on a GPU: the data strategy over local or device kvstores. The others read
     * gradients or activations in host memory (model stages' hand-offs, compressors, the MPI
     * ranks' buffers) and wait for the nccl communicator: refused on --device cuda, not
     * crashed; under auto the run takes CPU workers and says why (a sweep's rows on a GPU
     * machine: the GPU rows where they run, the others still run) */
    const char *untested = strcmp(c->backend, "cuda") != 0 ? NULL
                                                           : mx_train_gpu_untested(mx_strategy_name(c->strategy),
                                                                                   mx_gc_name(c->compression), kvstore);
    if (untested && want_cuda) {
        fprintf(stderr,
                "mxbench train: --device cuda: %s do not run on GPUs yet (they move data through host memory, "
                "and await the nccl communicator); accepted on GPUs: --strategy data, --kvstore local or device, "
                "--compression none; or --device cpu (or auto: CPU workers, saying why)%s\n",
                untested,
                strcmp(untested, "the dist_* kvstores") == 0
                    ? "; MXBENCH_GPU=preview lets the dist_* kvstores run on GPUs before a GPU machine has run them"
                    : "");
        return 2;
    }
    if (untested) {
        snprintf(note, note_size,
                 "on CPU workers (--device auto on a machine with %d GPU(s)): "
                 "%s do not run on GPUs yet",
                 cu.count, untested);
        c->backend = "cpu";
        if (!o->quiet) fprintf(stderr, "mxbench train: %s\n", note);
    }
    const int gpu = strcmp(c->backend, "cuda") == 0;
    if (gpu && c->devices > cu.count && !o->oversubscribe && !o->oversubscribe_env) {
        fprintf(stderr,
                "mxbench train: --gpus %d: this machine has %d GPU(s) (%s); accepted: 1 to %d, or add "
                "--oversubscribe to place several logical devices on a GPU (to test code paths: not a scaling "
                "result)\n",
                c->devices, cu.count, cu.model, cu.count);
        return 2;
    }
    if (!gpu && (o->oversubscribe || o->tf32)) {
        fprintf(stderr,
                "mxbench train: --%s applies to CUDA devices, and this run's devices are CPU workers "
                "(--device %s); CPU devices beyond the cores are always allowed\n",
                o->tf32 ? "tf32" : "oversubscribe", o->device ? o->device : "auto");
        return 2;
    }
    return 0;
}
