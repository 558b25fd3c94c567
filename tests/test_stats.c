/* Tests of the statistics behind the results: median, quartiles, quantiles, Student's t,
 * Wilson intervals, and the confidence interval of the median throughput (its width, its
 * coverage on autocorrelated steps, and that it never leaves the positive numbers). */
#include "base/status.h"
#include "results/record.h"
#include "results/stats.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static double uniform(void) { return check_uniform(&rng_state); }

static void test_stats_basic(void)
{
    double a[] = {5, 1, 3}, b[] = {4, 1, 3, 2}, c[] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
    CHECK(mx_stats_median(a, 3) == 3, "median odd %g", mx_stats_median(a, 3));
    CHECK(mx_stats_median(b, 4) == 2.5, "median even %g", mx_stats_median(b, 4));
    CHECK(isnan(mx_stats_median(a, 0)), "median of nothing");
    double q1, m, q3;
    mx_stats_quartiles(c, 9, &q1, &m, &q3);
    CHECK(q1 == 3 && m == 5 && q3 == 7, "quartiles %g %g %g", q1, m, q3);
    mx_stats_quartiles(b, 4, &q1, &m, &q3); /* type 7: 1.75, 2.5, 3.25 */
    CHECK(fabs(q1 - 1.75) < 1e-12 && fabs(q3 - 3.25) < 1e-12, "quartiles even %g %g", q1, q3);
    CHECK(c[0] == 9 && b[0] == 4, "input reordered");
    CHECK(mx_stats_quantile(c, 9, 0) == 1 && mx_stats_quantile(c, 9, 1) == 9, "extreme quantiles");
    CHECK(fabs(mx_stats_t975(1) - 12.706) < 1e-3 && fabs(mx_stats_t975(1000) - 1.962) < 2e-3, "t quantiles");
    double lo, hi;
    mx_stats_wilson_ci95(0.9, 10000, &lo, &hi);
    CHECK(fabs(lo - 0.8940) < 5e-4 && fabs(hi - 0.9058) < 5e-4, "wilson [%g, %g]", lo, hi);
    mx_stats_median_ci(a, 1, 1, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi), "CI from one sample");
}

static void test_stats_ci(void)
{
    enum { BIG = 10000 };
    static double x[BIG];
    rng_state = 77;
    for (int i = 0; i < BIG; i++) x[i] = 100 + 10 * (2 * uniform() - 1);
    double lo1, hi1, lo2, hi2, lo3, hi3;
    mx_stats_median_ci(x, 100, 1, &lo1, &hi1);
    mx_stats_median_ci(x, BIG, 1, &lo2, &hi2);
    double m1 = mx_stats_median(x, 100), m2 = mx_stats_median(x, BIG);
    CHECK(lo1 <= m1 && m1 <= hi1 && lo2 <= m2 && m2 <= hi2, "CI misses its median");
    CHECK(hi2 - lo2 < 0.25 * (hi1 - lo1), "CI does not narrow: %g (n=100) vs %g (n=%d)", hi1 - lo1, hi2 - lo2, BIG);
    mx_stats_median_ci(x, BIG, 1, &lo3, &hi3);
    CHECK(lo3 == lo2 && hi3 == hi2, "CI not deterministic");
    mx_stats_median_ci(x, BIG, 4, &lo3, &hi3);
    CHECK(lo3 <= m2 && m2 <= hi3, "CI with repeats misses its median");

    /* Honesty on autocorrelated steps: AR(1) with phi = 0.8 around 100. Over independent
     * series the interval must cover the true median (100) about 95% of the time; a plain
     * order-statistic interval covers it far less often. 200 trials: the estimate has a
     * standard error of 1.5 points, so >= 88% is a safe floor. */
    enum { TRIALS = 200, N = 500 };
    int covered = 0, naive_covered = 0;
    for (int t = 0; t < TRIALS; t++) {
        double e = 0, s[N];
        for (int i = 0; i < N; i++) {
            e = 0.8 * e + 2 * (2 * uniform() - 1);
            s[i] = 100 + e;
        }
        double lo, hi;
        mx_stats_median_ci(s, N, 1, &lo, &hi);
        covered += lo <= 100 && 100 <= hi;
        /* order statistics n/2 -+ 0.98 sqrt(n): the iid interval */
        int k = (int)(0.98 * sqrt((double)N));
        double lo_n = mx_stats_quantile(s, N, (N / 2.0 - k) / (N - 1)),
               hi_n = mx_stats_quantile(s, N, (N / 2.0 + k) / (N - 1));
        naive_covered += lo_n <= 100 && 100 <= hi_n;
    }
    printf("median CI coverage on AR(1) phi=0.8, n=%d: %d/%d (iid order-statistic interval: %d/%d)\n", N,
           covered, TRIALS, naive_covered, TRIALS);
    CHECK(covered >= TRIALS * 88 / 100, "coverage %d/%d below 88%%", covered, TRIALS);
}

/* `train --steps 3 --warmup-steps 2 --repeat 3` times one step per repeat; three widely
 * spread steps made the t interval of the repeat medians reach below zero. A median of
 * positive values has a positive interval, whatever the data. */
static void test_ci_stays_positive(void)
{
    mx_run_record r;
    mx_record_init(&r);
    snprintf(r.id, sizeof r.id, "r0000");
    double st[3] = {0.001, 0.004, 0.0005}; /* 128000, 32000, 256000 samples/s */
    r.step_time = st;
    r.nsteps = 3;
    r.repeats = 3;
    r.gpus = 1;
    r.global_batch = r.batch = 128;
    mx_record_derive(&r);
    CHECK(r.throughput_ci_low > 0 && r.throughput_ci_low <= r.throughput && r.throughput <= r.throughput_ci_high,
          "3 repeats of 1 step: throughput %g, interval [%g, %g]", r.throughput, r.throughput_ci_low,
          r.throughput_ci_high);
    printf("3 repeats of one step (128000, 32000, 256000 samples/s): median %.0f [%.0f, %.0f]\n", r.throughput,
           r.throughput_ci_low, r.throughput_ci_high);

    /* the same over many small, widely spread series: every repeat count, 2..12 steps */
    rng_state = 4242;
    int bad = 0, cases = 0;
    for (int trial = 0; trial < 3000; trial++) {
        double x[12];
        int n = 2 + trial % 11, groups = 1 + (trial / 11) % n;
        for (int i = 0; i < n; i++) x[i] = 100 * exp(4 * (2 * uniform() - 1)); /* spread e^8 = 3000x */
        double lo, hi, med = mx_stats_median(x, n);
        mx_stats_median_ci(x, n, groups, &lo, &hi);
        cases++;
        if (!(lo > 0 && lo <= med && med <= hi && isfinite(hi))) {
            if (bad++ < 5)
                fprintf(stderr, "n=%d groups=%d: median %g, interval [%g, %g]\n", n, groups, med, lo, hi);
        }
    }
    CHECK(bad == 0, "%d of %d intervals of positive data were not positive or missed the median", bad, cases);
}

/* Brute force: the signed-rank statistic's exact null distribution by enumerating every sign
 * pattern, and the cut c = how many Walsh averages each end of the 95% interval drops. */
static int brute_cut(int n)
{
    const int max = n * (n + 1) / 2;
    long count[64 * 65 / 2 + 1] = {0};
    for (long s = 0; s < 1L << n; s++) {
        int t = 0;
        for (int k = 0; k < n; k++)
            if (s >> k & 1) t += k + 1;
        count[t]++;
    }
    int c = 0;
    long cum = 0;
    while (c < max && (double)(cum + count[c]) / (double)(1L << n) <= 0.025) cum += count[c++];
    return c;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Hodges-Lehmann and its signed-rank interval: the published critical values (n = 6, 8, 10,
 * 20: T = 0, 3, 8, 52 two-sided at 5%, so cuts of 1, 4, 9, 53), the brute-force cut for
 * every n up to 16, and the interval's bounds as the c-th Walsh averages from each end. */
static void test_hodges_lehmann(void)
{
    double d[20], est, lo, hi;
    for (int i = 0; i < 20; i++) d[i] = i + 1;
    CHECK(mx_stats_hodges_lehmann(d, 10, &est, &lo, &hi) == MX_OK && est == 5.5, "HL of 1..10: %g", est);
    /* Walsh averages of 1..10 sorted: 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3 (9th) ... by symmetry */
    CHECK(lo == 3 && hi == 8, "1..10: interval [%g, %g], expected [3, 8] (9th from each end)", lo, hi);
    for (int n = 1; n <= 20; n++) {
        mx_stats_hodges_lehmann(d, n, &est, &lo, &hi);
        int m = n * (n + 1) / 2, c = n <= 16 ? brute_cut(n) : n == 20 ? 53 : -1;
        if (c < 0) continue;
        double w[210];
        int k = 0;
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) w[k++] = (d[i] + d[j]) / 2;
        qsort(w, (size_t)m, sizeof *w, cmp_d);
        if (c == 0) CHECK(isnan(lo) && isnan(hi), "n=%d: no 95%% interval exists, saw [%g, %g]", n, lo, hi);
        else
            CHECK(lo == w[c - 1] && hi == w[m - c], "n=%d cut %d: [%g, %g], expected [%g, %g]", n, c, lo, hi, w[c - 1],
                  w[m - c]);
        CHECK(fabs(est - (n + 1) / 2.0) < 1e-12, "n=%d: HL of 1..n %g", n, est);
    }
    CHECK(brute_cut(6) == 1 && brute_cut(8) == 4 && brute_cut(10) == 9 && brute_cut(5) == 0, "table cuts");
    /* one wild round barely moves the estimate (the interval does widen: 9 of the 55 Walsh
     * averages from the top hold it): 9 differences near 0.1 and one of 5 */
    double e[10] = {0.09, 0.1, 0.11, 0.1, 0.095, 0.105, 0.1, 0.098, 0.102, 5};
    mx_stats_hodges_lehmann(e, 10, &est, &lo, &hi);
    CHECK(fabs(est - 0.1) < 0.01 && lo > 0.09, "an outlier moved HL to %g [%g, %g]", est, lo, hi);
    CHECK(mx_stats_hodges_lehmann(d, 0, &est, &lo, &hi) == MX_OK && isnan(est), "no differences");
    CHECK(mx_stats_hodges_lehmann(d, MX_STATS_PAIRED_MAX + 1, &est, &lo, &hi) == MX_EINVAL, "too many");
}

int main(void)
{
    test_hodges_lehmann();
    test_stats_basic();
    test_stats_ci();
    test_ci_stays_positive();
    return check_summary("test_stats");
}
