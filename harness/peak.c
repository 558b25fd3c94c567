/* Peak FLOP/s for model FLOPs utilisation (see peak.h). */
#include "peak.h"
#include "buildinfo.h"
#include "base/timer.h"
#include "engine/core/amp.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { PEAK_N = 512, PEAK_REPS = 4 };

/* The best of PEAK_REPS square GEMMs after one warm-up. 512 is large enough that the CPU's
 * GEMM reaches its blocked steady state (within a few percent of n = 1024 on the machines
 * measured) and small enough to cost well under a second. */
static double gemm_peak(mx_backend *be)
{
    const size_t nn = (size_t)PEAK_N * PEAK_N, bytes = nn * sizeof(float);
    float *a = be->ops->alloc(be, bytes), *b = be->ops->alloc(be, bytes), *c = be->ops->alloc(be, bytes);
    double best = NAN;
    if (a && b && c) {
        be->ops->zero(be, a, bytes), be->ops->zero(be, b, bytes);
        best = 0;
        for (int r = -1; r < PEAK_REPS; r++) {
            be->ops->sync(be);
            const double t0 = mx_now();
            be->ops->gemm(be, 0, 0, PEAK_N, PEAK_N, PEAK_N, 1.0f, a, PEAK_N, b, PEAK_N, 0.0f, c, PEAK_N);
            be->ops->sync(be);
            const double f = 2.0 * PEAK_N * (double)PEAK_N * PEAK_N / (mx_now() - t0);
            if (r >= 0 && f > best) best = f;
        }
    }
    if (a) be->ops->free(be, a);
    if (b) be->ops->free(be, b);
    if (c) be->ops->free(be, c);
    return best > 0 ? best : NAN;
}

double mx_peak_flops(const char *backend, int devices, int threads_per_device, mx_amp amp, char *source, size_t n)
{
    snprintf(source, n, "unknown");
    const char *kind = backend ? backend : "cpu";
    if (strcmp(kind, "cpu") != 0) return NAN; /* a GPU's peak is its datasheet's: not tabled yet */
    mx_backend *be = NULL;
    if (mx_backend_create(&be, kind, 0, threads_per_device) < 0) return NAN;
    be->ops->bind_thread(be);
    /* as AMP's forward and backward set it (engine/core/exec.c): the arithmetic the run multiplies in */
    be->math = amp == MX_AMP_OFF ? MX_F32 : mx_amp_dtype(amp);
    const double one = gemm_peak(be);
    mx_backend_destroy(be);
    /* CPU workers share the cores: more devices than the cores hold add no peak */
    const int cores = mx_cpu_cores(), fit = cores / (threads_per_device > 0 ? threads_per_device : 1);
    const int k = devices < fit ? devices : fit > 0 ? fit : 1;
    snprintf(source, n, "measured gemm %d, %s, x%d", PEAK_N, amp == MX_AMP_OFF ? "f32" : mx_amp_name(amp), k);
    return one * k;
}
