/* The GEMMs mxbench trains with, side by side on the shapes its convolutions and dense layers
 * run (lenet batch 128, resnet18 batch 32, per sample-parallel chunk): OpenBLAS's sgemm, the
 * own f32 kernel, the own bf16 kernel (engine/cpu/gemm.c) and oneDNN's bf16 matmul with its
 * operands rounded to bf16 first (engine/cpu/gemm_dnnl.c: its AMX tiles where the CPU has
 * them), each shape's four timed in turn, best of --reps. Kernels the CPU or the build lacks
 * are left out with a message.
 * --cpu-time times by the process's CPU time over the thread count instead of the wall clock, so
 * that on a busy host the time a thread waits for a core does not count (a thread that waits for
 * another at a barrier spins, and counts).
 * Usage: gemm_bench [--threads T] [--reps N] [--only TEXT: the shapes whose name holds TEXT] [--cpu-time] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "bench_args.h"

#include <cblas.h>
#include <omp.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void openblas_set_num_threads(int num_threads);

typedef struct {
    const char *name;
    int ta, tb, m, n, k;
} shape;

static const shape shapes[] = {
    {"lenet conv2 forward", 0, 0, 50, 960, 500},
    {"lenet conv2 weight grad", 0, 1, 50, 500, 960},
    {"lenet conv2 input grad", 1, 0, 500, 960, 50},
    {"lenet dense1 forward", 0, 1, 128, 128, 800},
    {"resnet18 64ch forward", 0, 0, 64, 2048, 576},
    {"resnet18 64ch weight grad", 0, 1, 64, 576, 2048},
    {"resnet18 64ch input grad", 1, 0, 576, 2048, 64},
    {"resnet18 512ch forward", 0, 0, 512, 96, 4608},
    /* the last stages' weight gradients: dout (oc x pixels) times im2col's columns transposed,
     * over a thread's chunk of samples and over the whole batch */
    {"resnet18 512ch weight grad", 0, 1, 512, 4608, 256},
    {"resnet18 512ch/2 weight grad", 0, 1, 512, 2304, 192},
    {"resnet18 512ch/2 weight grad batch", 0, 1, 512, 2304, 512},
    {"resnet18 256ch/2 weight grad", 0, 1, 256, 1152, 784},
    {"square 1024", 0, 0, 1024, 1024, 1024},
    /* gpt-bench at batch 8 (2048 rows of width 384): each linear's forward, weight and input gradients */
    {"gpt qkv forward", 0, 1, 2048, 1152, 384},
    {"gpt qkv weight grad", 1, 0, 1152, 384, 2048},
    {"gpt qkv input grad", 0, 0, 2048, 384, 1152},
    {"gpt proj forward", 0, 1, 2048, 384, 384},
    {"gpt proj weight grad", 1, 0, 384, 384, 2048},
    {"gpt proj input grad", 0, 0, 2048, 384, 384},
    {"gpt fc forward", 0, 1, 2048, 1536, 384},
    {"gpt fc weight grad", 1, 0, 1536, 384, 2048},
    {"gpt fc input grad", 0, 0, 2048, 384, 1536},
    {"gpt fcp forward", 0, 1, 2048, 384, 1536},
    {"gpt fcp weight grad", 1, 0, 384, 1536, 2048},
    {"gpt fcp input grad", 0, 0, 2048, 1536, 384},
};

static int cpu_time; /* --cpu-time: the thread count, else 0 */

int main(int argc, char **argv)
{
    const int threads = bench_arg(argc, argv, "--threads", omp_get_num_procs()),
              reps = bench_arg(argc, argv, "--reps", 20);
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--only") == 0) only = argv[i + 1];
        if (strcmp(argv[i], "--cpu-time") == 0) cpu_time = 1;
    }
    if (cpu_time) cpu_time = threads;
    if (threads < 1 || reps < 1) {
        fprintf(stderr, "usage: gemm_bench [--threads T>=1] [--reps N>=1]\n");
        return 2;
    }
    mx_backend *be = NULL;
    if (mx_backend_create(&be, "cpu", 0, threads) < 0) return 1;
    openblas_set_num_threads(threads);
    const int own[3] = {mx_cpu_gemm_own(), mx_cpu_bf16_native(), mx_cpu_bf16_native() && mx_cpu_dnnl_available()};
    if (!own[0]) printf("# own f32 kernel left out: this CPU lacks AVX-512 (or MXBENCH_GEMM=blas)\n");
    if (!own[1]) printf("# own bf16 kernel left out: this CPU lacks avx512_bf16 (or MXBENCH_BF16=emulate)\n");
    if (!own[2]) printf("# oneDNN's bf16 matmul left out: no oneDNN in this build, or no avx512_bf16\n");
    else printf("# oneDNN's bf16 matmul on %s\n", mx_cpu_dnnl_isa());
    be->math = MX_BF16; /* oneDNN's path is taken under bf16 math; the own kernels are called directly */
    const size_t big = (size_t)1 << 22;
    float *a = malloc(big * sizeof(float)), *b = malloc(big * sizeof(float)), *c = malloc(big * sizeof(float));
    if (!a || !b || !c) return 1;
    for (size_t i = 0; i < big; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    printf("# %d thread(s), best of %d; GFLOP/s, and each kernel's speed over OpenBLAS's\n", threads, reps);
    printf("%-26s %5s %5s %5s %9s %9s %9s %9s %7s %7s %7s\n", "shape", "m", "n", "k", "openblas", "own f32",
           "own bf16", "dnnl bf16", "f32 x", "bf16 x", "dnnl x");
    for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
        const shape *s = &shapes[q];
        if (only && !strstr(s->name, only)) continue;
        const int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
        double best[4] = {1e30, 1e30, 1e30, 1e30};
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < 4; v++) {
                if (v > 0 && !own[v - 1]) continue;
                const double t0 = bench_clock(cpu_time);
                if (v == 0)
                    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans,
                                s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c, s->n);
                else if (v == 3)
                    mx_cpu_gemm_dnnl(be, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c, s->n);
                else
                    (v == 1 ? mx_cpu_gemm_f32 : mx_cpu_gemm_bf16)(be, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b,
                                                                  ldb, 0.0f, c, s->n);
                const double t = bench_clock(cpu_time) - t0;
                if (t < best[v]) best[v] = t;
            }
        const double f = 2.0 * s->m * s->n * s->k * 1e-9;
        char g[4][16], x[3][16];
        for (int v = 0; v < 4; v++) {
            if (v && !own[v - 1])
                strcpy(g[v], "-");
            else
                snprintf(g[v], sizeof g[v], "%.1f", f / best[v]);
            if (v && !own[v - 1])
                strcpy(x[v - 1], "-");
            else if (v)
                snprintf(x[v - 1], sizeof x[v - 1], "%.2f", best[0] / best[v]);
        }
        printf("%-26s %5d %5d %5d %9s %9s %9s %9s %7s %7s %7s\n", s->name, s->m, s->n, s->k, g[0], g[1], g[2], g[3],
               x[0], x[1], x[2]);
    }
    free(a), free(b), free(c);
    mx_backend_destroy(be);
    return 0;
}
