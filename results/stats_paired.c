/* The paired-sample estimate behind `mxbench ab`: Hodges-Lehmann's estimate of the centre of
 * paired differences with the interval that inverts Wilcoxon's signed-rank test (stats.h). */
#include "stats.h"

#include "engine/status.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The number of Walsh averages to cut from each end for a two-sided 95% interval: the largest
 * c with P(T <= c - 1) <= 2.5%, T the signed-rank statistic of n differences under the null
 * (each rank's sign a fair coin). Its distribution is built exactly by adding one rank at a
 * time: P_k(t) = (P_{k-1}(t) + P_{k-1}(t - k)) / 2. */
static int signed_rank_cut(int n)
{
    const int max = n * (n + 1) / 2;
    double *p = calloc((size_t)max + 1, sizeof *p);
    if (!p) return -1;
    p[0] = 1;
    for (int k = 1; k <= n; k++)
        for (int t = k * (k + 1) / 2; t >= 0; t--) p[t] = (p[t] + (t >= k ? p[t - k] : 0)) / 2;
    int c = 0;
    double cum = 0;
    /* the 1e-12 keeps a tail that is exactly 2.5% (none for n <= 50) from flipping on rounding */
    while (c < max && cum + p[c] <= 0.025 + 1e-12) cum += p[c++];
    free(p);
    return c;
}

int mx_stats_hodges_lehmann(const double *d, int n, double *est, double *lo, double *hi)
{
    *est = *lo = *hi = NAN;
    if (n <= 0) return MX_OK;
    if (n > MX_STATS_PAIRED_MAX) return mx_error(MX_EINVAL, "%d paired differences: at most %d", n, MX_STATS_PAIRED_MAX);
    const int m = n * (n + 1) / 2;
    double *w = malloc((size_t)m * sizeof *w);
    if (!w) return mx_error(MX_ENOMEM, "out of memory for %d Walsh averages", m);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) w[k++] = (d[i] + d[j]) / 2;
    qsort(w, (size_t)m, sizeof *w, cmp_double);
    *est = m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2;
    int c = signed_rank_cut(n);
    if (c < 0) {
        free(w);
        return mx_error(MX_ENOMEM, "out of memory for the signed-rank distribution of %d", n);
    }
    if (c > 0) { /* with fewer than 6 differences no interval reaches 95% */
        *lo = w[c - 1];
        *hi = w[m - c];
    }
    free(w);
    return MX_OK;
}
