/* Robust summary statistics for per-step timings: median, quartiles and a 95% confidence
 * interval for the median that stays honest when steps are autocorrelated and drift
 * (method and reasons: results/SCHEMA.md, "Confidence intervals"). */
#ifndef MX_STATS_H
#define MX_STATS_H

/* Quantile p in [0,1] of x[0..n) by linear interpolation between order statistics (the
 * "type 7" definition of R and NumPy). NaN when n <= 0. x is not modified. */
double mx_stats_quantile(const double *x, int n, double p);
double mx_stats_median(const double *x, int n);
/* First quartile, median and third quartile in one sort. NaN when n <= 0. */
void mx_stats_quartiles(const double *x, int n, double *q1, double *median, double *q3);

/* 95% confidence interval for the median of x[0..n), a series in time order made of
 * `groups` contiguous, equally long independent repeats (groups <= 1: one run).
 * Combines a circular moving-block bootstrap (blocks of ~sqrt(len) steps, resampled within
 * each repeat, fixed seed so that the same data give the same interval) with the spread
 * between repeat medians, or between batch medians of one run, taking the wider of the two
 * on each side. NaN bounds when n < 2. Returns 0, or MX_ENOMEM. */
int mx_stats_median_ci(const double *x, int n, int groups, double *lo, double *hi);

/* 97.5% quantile of Student's t with df degrees of freedom (df >= 1). */
double mx_stats_t975(int df);

/* Wilson score 95% interval for a proportion p observed on n trials. NaN bounds when n <= 0
 * or p is outside [0,1]. */
void mx_stats_wilson_ci95(double p, int n, double *lo, double *hi);

/* Paired differences (log ratios of A/B rounds): the Hodges-Lehmann estimate of their centre,
 * the median of the Walsh averages (d_i + d_j) / 2 for i <= j, and the 95% interval that
 * inverts Wilcoxon's signed-rank test, exact for n differences (the c-th smallest and c-th
 * largest Walsh averages). Distribution-free: it assumes only that the differences are
 * independent and symmetric about their centre, and one wild round moves it little. NaN
 * bounds when n < 6 (no interval reaches 95% then); NaN estimate when n == 0. Returns 0,
 * MX_EINVAL beyond MX_STATS_PAIRED_MAX, or MX_ENOMEM. */
#define MX_STATS_PAIRED_MAX 1000
int mx_stats_hodges_lehmann(const double *d, int n, double *est, double *lo, double *hi);

#endif
