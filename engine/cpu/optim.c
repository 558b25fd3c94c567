/* The CPU's AdamW update and the sum of squares that clipping by the global norm adds up
 * (mx_backend_ops.adamw_update, sumsq). */
#include "kernels.h"

#include <omp.h>

void mx_cpu_adamw_update(mx_backend *be, size_t n, float *w, float *m, float *v, const float *g,
                         const mx_adamw_step *a)
{
    const int T = mx_cpu_team(be, n);
#pragma omp parallel num_threads(T)
    {
        const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        mx_cpu_adamw_range(w, m, v, g, a, n * t / nt, n * (t + 1) / nt);
    }
}

/* Fixed chunks, whatever the thread count: every device and rank that sums the same values
 * gets the same bits (a replica's clipping factor must not depend on its threads, or the
 * replicas would drift apart). */
#define SUMSQ_CHUNKS 64

double mx_cpu_sumsq(mx_backend *be, size_t n, const float *x)
{
    double part[SUMSQ_CHUNKS];
    const int T = mx_cpu_team(be, n);
#pragma omp parallel for num_threads(T) schedule(static)
    for (int c = 0; c < SUMSQ_CHUNKS; c++) {
        double s = 0;
        for (size_t i = n * (size_t)c / SUMSQ_CHUNKS; i < n * (size_t)(c + 1) / SUMSQ_CHUNKS; i++)
            s += (double)x[i] * x[i];
        part[c] = s;
    }
    double sum = 0;
    for (int c = 0; c < SUMSQ_CHUNKS; c++) sum += part[c];
    return sum;
}
