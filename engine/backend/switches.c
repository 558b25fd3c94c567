/* The kernel switches' table (engine/backend/switches.h). */
#include "switches.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

const mx_switch_info mx_switches[MX_NSWITCHES] = {
    [MX_SWITCH_CONV] =
        {"MXBENCH_CONV",
         {"auto", "gemm", "nodnnl", "nowinograd"},
         {"each convolution on the fastest kernel that applies (direct, oneDNN, Winograd, im2col + GEMM)",
          "every convolution on im2col + GEMM (the reference)",
          "oneDNN's bf16 convolutions kept out (mxbench's own kernels alone)",
          "3x3 convolutions kept off Winograd (to measure what it brings)"}},
    [MX_SWITCH_GEMM] = {"MXBENCH_GEMM",
                        {"own", "blas"},
                        {"f32 GEMMs on mxbench's own AVX-512 kernel where the CPU has avx512f",
                         "f32 GEMMs on the BLAS's sgemm"}},
    [MX_SWITCH_BF16] =
        {"MXBENCH_BF16",
         {"native", "emulate", "own", "dnnl"},
         {"AMP bf16 products on the CPU's bf16 units where it has them: the GEMMs on AMX tiles through "
          "oneDNN's matmul where oneDNN runs them, else on mxbench's avx512_bf16 kernels",
          "AMP bf16 emulated: operands rounded to bf16, products in f32",
          "AMP bf16 GEMMs on mxbench's avx512_bf16 kernels, AMX tiles or not (to measure what they bring)",
          "AMP bf16 GEMMs on oneDNN's matmul on any CPU with bf16 units (its avx512_bf16 kernels where "
          "there are no tiles)"}},
    [MX_SWITCH_FUSE] = {"MXBENCH_FUSE",
                        {"on", "off"},
                        {"a relu run inside its neighbour's pass, AMP skipping roundings that change nothing",
                         "every layer apart, AMP rounding every tensor"}},
    /* not a kernel family but the same kind of choice: what runs on CUDA devices before a GPU
     * machine has run it (harness/cmd_train.c, mx_train_gpu_untested) */
    [MX_SWITCH_GPU] = {"MXBENCH_GPU",
                       {"tested", "preview"},
                       {"on CUDA devices only what has run on a GPU: the data strategy over the local and device "
                        "kvstores (the rest refused on --device cuda, on CPU workers under auto)",
                        "also the dist_* kvstores with CUDA workers, which have not yet run on a GPU (each "
                        "worker copies its gradients to the host and the weights back; the servers on the CPU): "
                        "for the GPU tests (tests/test_cuda_train.sh)"}},
};

/* -1: set to a value not in the table */
static int lookup(mx_switch s)
{
    const char *e = getenv(mx_switches[s].var);
    if (!e || !e[0]) return 0;
    for (int v = 0; v < MX_SWITCH_MAX_VALUES && mx_switches[s].values[v]; v++)
        if (strcmp(e, mx_switches[s].values[v]) == 0) return v;
    return -1;
}

int mx_switch_value(mx_switch s)
{
    const int v = lookup(s);
    return v < 0 ? 0 : v;
}

int mx_switches_check(void)
{
    for (int s = 0; s < MX_NSWITCHES; s++) {
        if (lookup((mx_switch)s) >= 0) continue;
        char accepted[128] = "";
        for (int v = 0; v < MX_SWITCH_MAX_VALUES && mx_switches[s].values[v]; v++) {
            strncat(accepted, v > 0 ? ", " : "", sizeof accepted - strlen(accepted) - 1);
            strncat(accepted, mx_switches[s].values[v], sizeof accepted - strlen(accepted) - 1);
        }
        return mx_error(MX_EINVAL, "%s='%s': accepted %s (or unset: %s)", mx_switches[s].var,
                        getenv(mx_switches[s].var), accepted, mx_switches[s].values[0]);
    }
    return MX_OK;
}
