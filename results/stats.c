/* Median, quartiles and an autocorrelation-aware confidence interval for the median of
 * per-step timings (see stats.h; the method is argued in results/SCHEMA.md), and the paired
 * estimate behind `mxbench ab`. */
#include "stats.h"

#include "base/status.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    BOOT_RESAMPLES = 1000,        /* enough for stable 2.5%/97.5% percentiles */
    BOOT_MIN_RESAMPLES = 200,
    BATCH_MIN_STEPS = 20,         /* a batch median needs this many steps to mean anything */
    BATCH_MAX = 10,
};
/* Caps the bootstrap's work (resamples x steps) so that a run of a million steps costs
 * about a second, not minutes. */
#define BOOT_MAX_WORK 2e8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile_sorted(const double *s, int n, double p)
{
    double h = (n - 1) * p;
    int i = (int)floor(h);
    if (i >= n - 1) return s[n - 1];
    return s[i] + (h - i) * (s[i + 1] - s[i]);
}

static double *sorted_copy(const double *x, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return NULL;
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return s;
}

double mx_stats_quantile(const double *x, int n, double p)
{
    if (n <= 0) return NAN;
    double *s = sorted_copy(x, n);
    if (!s) return NAN;
    double q = quantile_sorted(s, n, p);
    free(s);
    return q;
}

void mx_stats_quartiles(const double *x, int n, double *q1, double *median, double *q3)
{
    *q1 = *median = *q3 = NAN;
    double *s = n > 0 ? sorted_copy(x, n) : NULL;
    if (!s) return;
    *q1 = quantile_sorted(s, n, 0.25);
    *median = quantile_sorted(s, n, 0.5);
    *q3 = quantile_sorted(s, n, 0.75);
    free(s);
}

static double median3(double a, double b, double c)
{
    if ((a <= b) == (b <= c)) return b;
    if ((b <= a) == (a <= c)) return a;
    return c;
}

/* Partially orders a[0..n) so that a[k] holds the k-th smallest value, everything before it
 * is <= a[k] and everything after is >= a[k] (Hoare's selection, median-of-three pivot).
 * Linear on average, which is what makes a thousand bootstrap medians affordable. */
static void select_kth(double *a, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (hi > lo) {
        int mid = lo + (hi - lo) / 2;
        double p = median3(a[lo], a[mid], a[hi]);
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p) i++;
            while (a[j] > p) j--;
            if (i <= j) {
                double t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

/* Median of a[0..n), reordering a. */
static double median_inplace(double *a, int n)
{
    int k = n / 2;
    select_kth(a, n, k);
    if (n % 2) return a[k];
    double below = a[0];
    for (int i = 1; i < k; i++)
        if (a[i] > below) below = a[i];
    return 0.5 * (below + a[k]);
}

double mx_stats_median(const double *x, int n)
{
    if (n <= 0) return NAN;
    double *a = malloc((size_t)n * sizeof *a);
    if (!a) return NAN;
    memcpy(a, x, (size_t)n * sizeof *a);
    double m = median_inplace(a, n);
    free(a);
    return m;
}

double mx_stats_t975(int df)
{
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) return NAN;
    if (df <= 30) return t[df - 1];
    return 1.959964 + 2.37 / df; /* first term of the Cornish-Fisher expansion; < 0.002 off */
}

void mx_stats_wilson_ci95(double p, int n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n <= 0 || !(p >= 0 && p <= 1)) return;
    const double z = 1.959964, z2 = z * z;
    double denom = 1 + z2 / n;
    double centre = (p + z2 / (2.0 * n)) / denom;
    double half = z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / denom;
    *lo = fmax(0.0, centre - half);
    *hi = fmin(1.0, centre + half);
}

/* ---- confidence interval for the median */

/* splitmix64: tiny, seedable, and good enough to pick block starts. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct {
    int start, len;
} segment;

/* One circular moving-block resample of x, drawn within each segment so that a repeat's own
 * level stays in its own stratum; out receives n values. */
static void block_resample(const double *x, const segment *seg, int nseg, double *out, uint64_t *rng)
{
    int pos = 0;
    for (int k = 0; k < nseg; k++) {
        int m = seg[k].len;
        int block = (int)lround(sqrt((double)m));
        if (block < 1) block = 1;
        for (int filled = 0; filled < m;) {
            int from = (int)(next_random(rng) % (uint64_t)m);
            int take = m - filled < block ? m - filled : block;
            for (int j = 0; j < take; j++) out[pos + filled + j] = x[seg[k].start + (from + j) % m];
            filled += take;
        }
        pos += m;
    }
}

static int bootstrap_ci(const double *x, int n, const segment *seg, int nseg, double *lo, double *hi)
{
    int nboot = BOOT_RESAMPLES;
    if ((double)nboot * n > BOOT_MAX_WORK) nboot = (int)(BOOT_MAX_WORK / n);
    if (nboot < BOOT_MIN_RESAMPLES) nboot = BOOT_MIN_RESAMPLES;
    double *buf = malloc((size_t)n * sizeof *buf);
    double *med = malloc((size_t)nboot * sizeof *med);
    if (!buf || !med) {
        free(buf);
        free(med);
        return mx_error(MX_ENOMEM, "median confidence interval: out of memory for %d steps", n);
    }
    /* A fixed seed: the interval is a property of the data, so recomputing it (or deriving
     * the same record twice) must give the same numbers. */
    uint64_t rng = 0x6d78626e63680001ull ^ (uint64_t)n;
    for (int b = 0; b < nboot; b++) {
        block_resample(x, seg, nseg, buf, &rng);
        med[b] = median_inplace(buf, n);
    }
    qsort(med, (size_t)nboot, sizeof *med, cmp_double);
    *lo = quantile_sorted(med, nboot, 0.025);
    *hi = quantile_sorted(med, nboot, 0.975);
    free(buf);
    free(med);
    return MX_OK;
}

/* Half-width of a t interval for the mean of the segment medians: what separate repeats (or
 * separate stretches of one run) actually disagree by, which no resampling inside them sees.
 * When every median is positive (throughputs always are) the spread is taken on the log
 * scale, so the interval is est / exp(hw) .. est * exp(hw): a t interval on the linear scale
 * is symmetric, and with few, widely spread repeats (t(2) = 4.3) its lower end fell below
 * zero, a throughput no run can have. *logscale says which scale hw is on. */
static int between_halfwidth(const double *x, const segment *seg, int nseg, double *hw, int *logscale)
{
    *hw = 0;
    *logscale = 0;
    if (nseg < 2) return MX_OK;
    double m[64], *med = nseg <= 64 ? m : malloc((size_t)nseg * sizeof *med);
    if (!med) return mx_error(MX_ENOMEM, "median confidence interval: out of memory for %d repeats", nseg);
    int positive = 1;
    for (int k = 0; k < nseg; k++) {
        med[k] = mx_stats_median(x + seg[k].start, seg[k].len);
        positive &= med[k] > 0 && isfinite(med[k]);
    }
    double mean = 0, ss = 0;
    for (int k = 0; k < nseg; k++) mean += (positive ? log(med[k]) : med[k]) / nseg;
    for (int k = 0; k < nseg; k++) {
        double d = (positive ? log(med[k]) : med[k]) - mean;
        ss += d * d;
    }
    *hw = mx_stats_t975(nseg - 1) * sqrt(ss / (nseg - 1)) / sqrt((double)nseg);
    *logscale = positive;
    if (med != m) free(med);
    return MX_OK;
}

static segment *split(int n, int parts)
{
    segment *s = malloc((size_t)parts * sizeof *s);
    for (int k = 0; s && k < parts; k++) {
        s[k].start = (int)((long long)k * n / parts);
        s[k].len = (int)((long long)(k + 1) * n / parts) - s[k].start;
    }
    return s;
}

int mx_stats_median_ci(const double *x, int n, int groups, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n < 2) return MX_OK;
    if (groups > n) groups = n;
    int repeats = groups > 1 ? groups : 1;
    /* With one run there is no second run to disagree with, so its batches stand in for
     * repeats: the classic batch-means guard against slow drift within the run. */
    int batches = n / BATCH_MIN_STEPS < BATCH_MAX ? n / BATCH_MIN_STEPS : BATCH_MAX;
    int between = repeats > 1 ? repeats : (batches >= 3 ? batches : 1);
    segment *strata = split(n, repeats), *parts = split(n, between);
    int rc = MX_OK;
    double blo = NAN, bhi = NAN, hw = 0;
    int logscale = 0;
    if (!strata || !parts) rc = mx_error(MX_ENOMEM, "median confidence interval: out of memory");
    if (rc == MX_OK) rc = bootstrap_ci(x, n, strata, repeats, &blo, &bhi);
    if (rc == MX_OK) rc = between_halfwidth(x, parts, between, &hw, &logscale);
    free(strata);
    free(parts);
    if (rc != MX_OK) return rc;
    double est = mx_stats_median(x, n);
    double wlo = est - hw, whi = est + hw;
    if (logscale && est > 0) wlo = est * exp(-hw), whi = est * exp(hw);
    /* Either source of uncertainty alone can be the larger one; the interval honours the
     * wider on each side and always contains the estimate. The bootstrap's bounds are
     * resampled medians, so within the observed values: for positive data, both bounds
     * stay positive. */
    *lo = fmin(fmin(blo, wlo), est);
    *hi = fmax(fmax(bhi, whi), est);
    return MX_OK;
}

/* ---- paired differences: Hodges-Lehmann with the signed-rank interval (`mxbench ab`) */

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
    if (n > MX_STATS_PAIRED_MAX)
        return mx_error(MX_EINVAL, "%d paired differences: at most %d", n, MX_STATS_PAIRED_MAX);
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
