/* Where a training step's time goes, layer by layer: each top-level layer's forward and
 * backward time (median over the timed steps, from the engine's own timeline events), its
 * FLOPs, the bytes a simple traffic model says it moves, the GFLOP/s it reaches and that as a
 * fraction of the sgemm ceiling measured in the same run, before and after the steps.
 * Traffic model: forward reads the input and the weights and writes the output (4 bytes a
 * value); a convolution also writes and reads its im2col buffer of K x M values a sample
 * (K x M = forward FLOPs / 2 / output channels: exact for a plain convolution, an estimate for
 * a residual block); backward moves twice the forward's bytes. Backward FLOPs are twice the
 * forward's (input and weight gradients), once for the first layer (no input gradient).
 * --expand-blocks runs each gpt_block as its eight children, top-level layers of their own, to
 * show where a block's time goes (its two residual adds left out: a pass over n*T*C floats each,
 * forward and backward; under AMP the children's outputs are rounded between them, which the
 * block does not do).
 * --cpu-time takes the step's time (the step_ms of the last line) as the process's CPU time over
 * the thread count: on a busy host the time a thread waits for a core then does not count (most
 * meaningful on one thread: a thread waiting for another at a barrier may spin or sleep). Layers
 * keep the wall clock.
 * Usage: layer_profile [--workload NAME (workloads.h; gpt-*: T ids in, T labels)] [--batch N] [--threads T]
 *                      [--steps S] [--expand-blocks] [--cpu-time]
 *                      [--amp off|fp16|bf16] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/core/exec.h"
#include "engine/core/net.h"
#include "engine/core/params.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "workloads/workloads.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STEPS 1000

static int cpu_threads; /* --cpu-time: the thread count, else 0 */

/* The step's clock: the wall's, or the process's CPU seconds over the threads (--cpu-time). */
static double step_clock(void)
{
    if (!cpu_threads) return mx_now();
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return ((double)t.tv_sec + 1e-9 * (double)t.tv_nsec) / cpu_threads;
}

typedef struct {
    int nlayers, step;
    double *fwd, *bwd; /* [step][layer] seconds */
} timings;

static void visit(void *user, int tid, const char *cat, const char *name, int index, double t0, double t1)
{
    timings *t = user;
    if (index < 0 || index >= t->nlayers) return;
    if (strcmp(cat, "forward") == 0) t->fwd[t->step * t->nlayers + index] += t1 - t0;
    else if (strcmp(cat, "backward") == 0) t->bwd[t->step * t->nlayers + index] += t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over steps of column k of a [steps][nlayers] table. */
static double median_of(const double *v, int steps, int nlayers, int k)
{
    double x[MAX_STEPS];
    for (int s = 0; s < steps; s++) x[s] = v[s * nlayers + k];
    qsort(x, (size_t)steps, sizeof *x, cmp_double);
    return steps % 2 ? x[steps / 2] : (x[steps / 2 - 1] + x[steps / 2]) / 2;
}

/* The best GFLOP/s of a square f32 GEMM of n on the current thread count, out of reps: the
 * faster of OpenBLAS's sgemm and the engine's own (mx_cpu_gemm), as scripts/bench.sh's
 * ceiling. */
static double sgemm_ceiling(mx_backend *be, int n, int reps)
{
    const size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    if (!a || !b || !c) return NAN;
    for (size_t i = 0; i < nn; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    double best = 0;
    for (int lib = 0; lib < 2; lib++)
        for (int r = -1; r < reps; r++) {
            const double t0 = mx_now();
            if (lib == 0) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            else mx_cpu_gemm(be, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            const double g = 2.0 * n * (double)n * n / (mx_now() - t0) * 1e-9;
            if (r >= 0 && g > best) best = g;
        }
    free(a), free(b), free(c);
    return best;
}

/* The layer list with each gpt_block replaced by its children as engine/layers/gpt_block.c sets
 * them up (width c): layernorm, linear 3c, attention, linear c, layernorm, linear 4c, gelu,
 * linear c. Returns the new count, or -1 when it would not fit. */
static int expand_blocks(mx_layer_spec *specs, int n, int c)
{
    mx_layer_spec out[MX_MAX_LAYERS];
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(specs[i].kind, "gpt_block") != 0) {
            if (m >= MX_MAX_LAYERS) return -1;
            out[m++] = specs[i];
            continue;
        }
        const mx_layer_spec sub[8] = {
            {.kind = "layernorm"},
            {.kind = "linear", .units = 3 * c, .bias = 1},
            {.kind = "attention", .heads = specs[i].heads},
            {.kind = "linear", .units = c, .bias = 1},
            {.kind = "layernorm"},
            {.kind = "linear", .units = 4 * c, .bias = 1},
            {.kind = "gelu"},
            {.kind = "linear", .units = c, .bias = 1},
        };
        if (m + 8 > MX_MAX_LAYERS) return -1;
        for (int j = 0; j < 8; j++) out[m++] = sub[j];
    }
    memcpy(specs, out, sizeof(mx_layer_spec) * (size_t)m);
    return m;
}

static int arg_int(int argc, char **argv, const char *name, int dflt, int lo, int hi)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            const int v = atoi(argv[i + 1]);
            if (v < lo || v > hi) {
                fprintf(stderr, "layer_profile: %s %s: expected %d..%d\n", name, argv[i + 1], lo, hi);
                exit(2);
            }
            return v;
        }
    return dflt;
}

int main(int argc, char **argv)
{
    const char *wname = "lenet", *amp_name = "off";
    int expand = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--workload") == 0) wname = argv[i + 1];
        if (i + 1 < argc && strcmp(argv[i], "--amp") == 0) amp_name = argv[i + 1];
        if (strcmp(argv[i], "--expand-blocks") == 0) expand = 1;
        if (strcmp(argv[i], "--cpu-time") == 0) cpu_threads = 1;
    }
    mx_amp amp;
    if (mx_amp_parse(amp_name, &amp) < 0) {
        fprintf(stderr, "layer_profile: %s\n", mx_last_error());
        return 2;
    }
    const int batch = arg_int(argc, argv, "--batch", 128, 1, 4096);
    const int threads = arg_int(argc, argv, "--threads", omp_get_num_procs(), 1, 256);
    const int steps = arg_int(argc, argv, "--steps", 20, 1, MAX_STEPS), warmup = 3;
    if (cpu_threads) cpu_threads = threads;
    const mx_workload *wl = mx_workload_find(wname);
    if (!wl) {
        fprintf(stderr, "layer_profile: unknown workload '%s' (known: %s)\n", wname, mx_workload_names());
        return 2;
    }
    mx_backend *be;
    mx_net *net;
    mx_layer_spec specs[MX_MAX_LAYERS];
    /* a language model reads T token ids and scores T next tokens (mx_loss_rows) */
    const mx_lm_size *lm = wl->lm;
    const mx_shape in = lm ? (mx_shape){1, 1, lm->context} : (mx_shape){1, 28, 28};
    const int classes = lm ? lm->vocab : 10, label_len = lm ? lm->context : 1;
    int nspecs = wl->build(specs, in, classes);
    if (expand && lm) nspecs = expand_blocks(specs, nspecs, lm->width);
    if (nspecs < 0) {
        fprintf(stderr, "layer_profile: %s with its blocks expanded has over %d layers\n", wname, MX_MAX_LAYERS);
        return 2;
    }
    if (mx_backend_create(&be, "cpu", 0, threads) < 0 ||
        mx_net_create_amp(&net, be, specs, nspecs, in, batch, amp) < 0 ||
        mx_net_init_params(net, 1, lm ? MX_WEIGHT_INIT_NORMAL : MX_WEIGHT_INIT_XAVIER, lm ? 0.02f : 0) < 0) {
        fprintf(stderr, "layer_profile: cannot build %s: %s\n", wname, mx_last_error());
        return 1;
    }
    be->ops->bind_thread(be);
    const double ceiling_before = sgemm_ceiling(be, 1024, 5);

    const size_t insz = mx_shape_size(in) * (size_t)batch;
    float *x = malloc(insz * sizeof *x);
    int32_t *y = malloc(sizeof *y * batch * label_len);
    for (size_t i = 0; i < insz; i++)
        x[i] = lm ? (float)((i * 2654435761u) % (unsigned)classes) : (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int i = 0; i < batch * label_len; i++) y[i] = (int32_t)(i % 10);
    mx_net_set_batch(net, x, y, batch);
    timings t = {.nlayers = net->nlayers};
    t.fwd = calloc((size_t)steps * net->nlayers, sizeof *t.fwd);
    t.bwd = calloc((size_t)steps * net->nlayers, sizeof *t.bwd);
    double *step_time = calloc((size_t)steps, sizeof *step_time);
    for (int s = -warmup; s < steps; s++) {
        if (s >= 0) mx_trace_start(mx_now());
        const double t0 = step_clock();
        mx_net_zero_grad(net);
        mx_net_forward(net, batch, 1);
        int correct;
        mx_net_loss(net, batch, 1.0f, &correct);
        mx_net_backward(net, batch, NULL, NULL);
        be->ops->sync(be);
        if (s < 0) continue;
        step_time[s] = step_clock() - t0;
        mx_trace_stop();
        t.step = s;
        mx_trace_visit(visit, &t);
        mx_trace_reset();
    }
    const double ceiling_after = sgemm_ceiling(be, 1024, 5);
    const double ceiling = fmax(ceiling_before, ceiling_after);

    printf("# %s, batch %d, %d thread(s), amp %s (%s), %d timed steps (median per layer); sgemm ceiling %.1f GFLOP/s "
           "(n=1024, best of 5, before %.1f / after %.1f)\n",
           wname, batch, threads, amp_name, amp == MX_AMP_OFF ? "f32" : be->ops->amp_kernels(mx_amp_dtype(amp)), steps,
           ceiling, ceiling_before, ceiling_after);
    printf("%-5s %-14s %-12s %9s %9s %10s %10s %9s %9s %8s %7s\n", "layer", "kind", "output", "fwd ms", "bwd ms",
           "fwd MFLOP", "MB moved", "fwd GF/s", "bwd GF/s", "ceiling", "share");
    double tf = 0, tb = 0, flops_all = 0, flops_fwd = 0, bytes_all = 0;
    double *fm = malloc(sizeof(double) * (size_t)net->nlayers), *bm = malloc(sizeof(double) * (size_t)net->nlayers);
    for (int k = 0; k < net->nlayers; k++) {
        fm[k] = median_of(t.fwd, steps, net->nlayers, k);
        bm[k] = median_of(t.bwd, steps, net->nlayers, k);
        tf += fm[k], tb += bm[k];
    }
    for (int k = 0; k < net->nlayers; k++) {
        const mx_layer *l = &net->layers[k];
        const double f = (l->ops->flops ? l->ops->flops(l) : 0) * batch, fb = f * (k == 0 ? 1 : 2);
        double weights = 0;
        for (int p = l->param_first; p < l->param_first + l->param_count; p++) weights += (double)net->params[p].count;
        const int conv = strcmp(l->ops->kind, "conv2d") == 0 || strcmp(l->ops->kind, "residual") == 0;
        const double col = conv && l->out.c > 0 ? f / batch / 2 / l->out.c : 0;
        const double bytes_f =
            4 * (batch * ((double)mx_shape_size(l->in) + (double)mx_shape_size(l->out) + 2 * col) + weights);
        /* a relu run inside the next layer's pass (engine/core/exec.c's fusion) moves nothing of its own */
        const int fused = net->exec->fused[k];
        const double bytes = fused ? 0 : 3 * bytes_f; /* forward, and backward's twice as much */
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%dx%d", l->out.c, l->out.h, l->out.w);
        /* layers without arithmetic to speak of (relu, pooling, flatten) show "-": their cost is bytes */
        char gf[16] = "-", gb[16] = "-", frac[16] = "-";
        if (f > 0 && fm[k] > 0) snprintf(gf, sizeof gf, "%.1f", f / fm[k] * 1e-9);
        if (f > 0 && bm[k] > 0) snprintf(gb, sizeof gb, "%.1f", fb / bm[k] * 1e-9);
        if (f > 0) snprintf(frac, sizeof frac, "%.0f%%", 100 * (f + fb) / (fm[k] + bm[k]) * 1e-9 / ceiling);
        printf("%-5d %-14s %-12s %9.3f %9.3f %10.2f %10.2f %9s %9s %8s %6.1f%%\n", k,
               fused ? "relu (in next)" : l->ops->kind, shape, 1e3 * fm[k], 1e3 * bm[k], f * 1e-6, bytes * 1e-6, gf, gb,
               frac, 100 * (fm[k] + bm[k]) / (tf + tb));
        flops_all += f + fb, flops_fwd += f, bytes_all += bytes;
    }
    if (expand) {
        /* the same child of every block, summed: one line per kind and output shape, first seen first */
        printf("# summed by kind and output (all layers of each)\n%-14s %-12s %5s %9s %9s %7s\n", "kind", "output",
               "count", "fwd ms", "bwd ms", "share");
        for (int k = 0; k < net->nlayers; k++) {
            const mx_layer *l = &net->layers[k];
            int seen = 0, count = 0;
            double f = 0, b = 0;
            for (int j = 0; j < net->nlayers && !seen; j++) {
                const mx_layer *o = &net->layers[j];
                const int same = strcmp(o->ops->kind, l->ops->kind) == 0 && o->out.c == l->out.c &&
                                 o->out.h == l->out.h && o->out.w == l->out.w;
                if (same && j < k) seen = 1;
                if (same) count++, f += fm[j], b += bm[j];
            }
            if (seen) continue;
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%dx%d", l->out.c, l->out.h, l->out.w);
            printf("%-14s %-12s %5d %9.3f %9.3f %6.1f%%\n", l->ops->kind, shape, count, 1e3 * f, 1e3 * b,
                   100 * (f + b) / (tf + tb));
        }
    }
    double st[MAX_STEPS];
    memcpy(st, step_time, sizeof(double) * (size_t)steps);
    qsort(st, (size_t)steps, sizeof *st, cmp_double);
    const double step_med = st[steps / 2];
    printf("%-5s %-14s %-12s %9.3f %9.3f %10.2f %10.2f %9s %9s %7.0f%% %6.1f%%\n", "all", "layers", "", 1e3 * tf,
           1e3 * tb, flops_fwd * 1e-6, bytes_all * 1e-6, "", "", 100 * flops_all / (tf + tb) * 1e-9 / ceiling,
           100.0);
    printf("step %.3f ms median%s (layers %.1f%% of it; the rest: loss, gradient zeroing, the timeline's own cost); "
           "%.1f GFLOP/s over the step = %.0f%% of the ceiling\n",
           1e3 * step_med, cpu_threads ? " of CPU time a thread" : "", 100 * (tf + tb) / step_med,
           flops_all / step_med * 1e-9, 100 * flops_all / step_med * 1e-9 / ceiling);
    printf("LAYER_PROFILE workload=%s batch=%d threads=%d step_ms=%.3f gflops=%.2f ceiling=%.1f fraction=%.3f\n", wname,
           batch, threads, 1e3 * step_med, flops_all / step_med * 1e-9, ceiling, flops_all / step_med * 1e-9 / ceiling);
    free(fm), free(bm), free(t.fwd), free(t.bwd), free(step_time), free(x), free(y);
    mx_net_destroy(net);
    mx_backend_destroy(be);
    return 0;
}
