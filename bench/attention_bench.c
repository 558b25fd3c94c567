/* The CPU's causal attention kernels (engine/cpu/attention.c) alone, forward and backward, on
 * gpt-bench's shape at batch 8 by default (8 sequences of 256 positions, 6 heads of 64), in f32
 * and (where the CPU has avx512_bf16) under AMP bf16's math, each timed in turn, best of --reps.
 * GFLOP/s counts the causal products only (2 t (t+1) hs per head and sequence for forward's two,
 * twice that for backward's four), as docs/workloads.md counts the model's FLOPs.
 * --cpu-time times by the process's CPU time over the thread count instead of the wall clock
 * (as gemm_bench does), so that on a busy host the time a thread waits for a core does not count.
 * Usage: attention_bench [--threads T] [--reps N] [--n N] [--t T] [--heads H] [--hs D] [--cpu-time] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "bench_args.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cpu_time; /* --cpu-time: the thread count, else 0 */

int main(int argc, char **argv)
{
    const int threads = bench_arg(argc, argv, "--threads", omp_get_num_procs()),
              reps = bench_arg(argc, argv, "--reps", 10);
    const int n = bench_arg(argc, argv, "--n", 8), t = bench_arg(argc, argv, "--t", 256),
              heads = bench_arg(argc, argv, "--heads", 6);
    const int hs = bench_arg(argc, argv, "--hs", 64);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--cpu-time") == 0) cpu_time = threads;
    if (threads < 1 || reps < 1 || n < 1 || t < 1 || heads < 1 || hs < 1) {
        fprintf(stderr, "usage: attention_bench [--threads T>=1] [--reps N>=1] [--n N] [--t T] [--heads H] [--hs D] "
                        "[--cpu-time]\n");
        return 2;
    }
    mx_backend *be = NULL;
    if (mx_backend_create(&be, "cpu", 0, threads) < 0) return 1;
    const size_t c = (size_t)heads * hs, in = (size_t)n * t * 3 * c, out = (size_t)n * t * c;
    float *qkv = malloc(sizeof(float) * in), *dqkv = malloc(sizeof(float) * in), *o = malloc(sizeof(float) * out);
    float *dout = malloc(sizeof(float) * out), *lse = malloc(sizeof(float) * (size_t)n * heads * t);
    if (!qkv || !dqkv || !o || !dout || !lse) return 1;
    for (size_t i = 0; i < in; i++) qkv[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < out; i++) dout[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
    const double flop = 2.0 * t * (t + 1.0) * hs * n * heads; /* forward's causal products */
    printf("# attention n %d, t %d, %d heads of %d; %d thread(s), best of %d%s\n", n, t, heads, hs, threads, reps,
           cpu_time ? ", CPU time" : "");
    printf("%-6s %10s %10s %10s %10s\n", "math", "fwd ms", "bwd ms", "fwd GF/s", "bwd GF/s");
    const mx_dtype maths[2] = {MX_F32, MX_BF16};
    const int nmath = mx_cpu_bf16_native() ? 2 : 1;
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < nmath; m++) {
            be->math = maths[m];
            double t0 = bench_clock(cpu_time);
            mx_cpu_attention_forward(be, n, t, heads, hs, o, lse, qkv);
            double t1 = bench_clock(cpu_time);
            if (t1 - t0 < best[m][0]) best[m][0] = t1 - t0;
            mx_cpu_attention_backward(be, n, t, heads, hs, dqkv, dout, qkv, o, lse);
            t0 = bench_clock(cpu_time);
            if (t0 - t1 < best[m][1]) best[m][1] = t0 - t1;
        }
    for (int m = 0; m < nmath; m++)
        printf("%-6s %10.3f %10.3f %10.1f %10.1f\n", m ? "bf16" : "f32", 1e3 * best[m][0], 1e3 * best[m][1],
               flop / best[m][0] * 1e-9, 2 * flop / best[m][1] * 1e-9);
    free(qkv), free(dqkv), free(o), free(dout), free(lse);
    mx_backend_destroy(be);
    return 0;
}
