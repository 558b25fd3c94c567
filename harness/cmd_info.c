/* `mxbench info`: library versions and devices. */
#include "buildinfo.h"
#include "commands.h"
#include "opts.h"
#include "base/status.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/switches.h"
#include "engine/core/exec.h"
#include "kvstore/kvstore.h"
#include "strategies/strategy.h"

#include <stdio.h>

/* The kernel switches (engine/backend/switches.h): each variable, its value here, and what each
 * of its values runs, so that a user sees what can be set and what is set. */
static void print_switches(void)
{
    printf("\nkernel switches (environment variables; the first value is the default, * what runs now):\n");
    for (int s = 0; s < MX_NSWITCHES; s++) {
        const mx_switch_info *w = &mx_switches[s];
        const int now = mx_switch_value((mx_switch)s);
        printf("  %s=%s\n", w->var, w->values[now]);
        for (int v = 0; v < MX_SWITCH_MAX_VALUES && w->values[v]; v++)
            printf("   %c%-11s %s\n", v == now ? '*' : ' ', w->values[v], w->meaning[v]);
    }
}

int mx_cmd_info(int argc, char **argv)
{
    static const mx_opt opts[] = {{0}};
    const mx_cmd_spec spec = {"mxbench info",
                              "",
                              "Prints the versions of the libraries mxbench was built with and the\n"
                              "devices it sees (GPUs where CUDA is built and a driver is present).",
                              opts,
                              0,
                              0};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (mx_switches_check() < 0) return fprintf(stderr, "mxbench info: %s\n", mx_last_error()), 2;
    mx_buildinfo_print(stdout);
    printf("\nbuilt:\n  %-10s %s\n  %-10s %s\n  %-10s %s\n", "strategies", mx_strategy_names(), "kvstores",
           mx_kv_modes(), "backends", mx_backend_names());
    printf("\nCPU kernels:\n  %-10s %s\n", "conv2d", mx_cpu_conv_paths());
    /* decided by this CPU's cpuid, so the lines can differ between machines running one binary */
    printf("  %-10s f32: %s\n", "gemm",
           mx_cpu_gemm_own() ? "own AVX-512 kernel (MXBENCH_GEMM=blas: the BLAS's sgemm)"
                             : "the BLAS's sgemm (this CPU lacks avx512f, or MXBENCH_GEMM=blas)");
    const int dnnl = mx_cpu_dnnl_available();
    /* "--amp bf16: " is followed by the record's amp_kernels */
    if (mx_cpu_bf16_native() && mx_cpu_gemm_bf16_dnnl())
        printf("  %-10s --amp bf16: %s (the GEMMs on oneDNN's matmul, its %s kernels, f32 sums; MXBENCH_BF16=own: "
               "mxbench's avx512_bf16 kernels; the one-channel direct convolution on avx512_bf16 and oneDNN's "
               "convolutions; MXBENCH_BF16=emulate: emulated)",
               "", mx_cpu_amp_kernels(MX_BF16), mx_cpu_dnnl_isa());
    else if (mx_cpu_bf16_native())
        printf(
            "  %-10s --amp bf16: avx512_bf16 (vdpbf16ps, f32 sums: the GEMMs%s the one-channel direct convolution%s; "
            "MXBENCH_BF16=emulate: emulated%s)",
            "", dnnl ? "," : " and", dnnl ? " and oneDNN's convolutions" : "",
            dnnl ? ", dnnl: the GEMMs on oneDNN's matmul" : "");
    else
        printf("  %-10s --amp bf16: emulated (f32 GEMM on bf16 values: this CPU lacks avx512_bf16, or "
               "MXBENCH_BF16=emulate)", "");
    printf("; --amp fp16: emulated (f32 GEMM on fp16 values)\n");
    if (mx_exec_fusion_off())
        printf("  %-10s off (MXBENCH_FUSE=off: every layer apart, AMP rounding every tensor)\n", "fusion");
    else
        printf("  %-10s a relu before a max pooling runs in the pooling's pass, a residual block's inner batch norm "
               "and relu in one pass%s; AMP skips roundings and expansions that change nothing (MXBENCH_FUSE=off: "
               "every layer apart)\n",
               "fusion",
               mx_cpu_conv_dnnl_on() ? ", and under AMP bf16 its main branch (conv, batch norm, relu, conv, batch "
                                       "norm) in oneDNN's nChw16c layout where oneDNN's kernels take it"
                                     : "");
    if (mx_cpu_conv_dnnl_on()) {
        /* oneDNN picks its kernels from cpuid (ONEDNN_MAX_CPU_ISA caps them); the layouts they
         * take follow, so which path the residual branch runs is asked, not assumed */
        const int c16 = mx_cpu_residual_branch_c16_probe();
        printf("  %-10s oneDNN's kernels: %s (ONEDNN_MAX_CPU_ISA caps them); resnet18's residual branch under AMP "
               "bf16: %s\n",
               "dnnl", mx_cpu_dnnl_isa(),
               c16 > 0    ? "in nChw16c"
               : c16 == 0 ? "layer by layer (oneDNN's kernels here keep layouts of their own)"
                          : "unknown (no CPU device)");
    }
    print_switches();
    return 0;
}
