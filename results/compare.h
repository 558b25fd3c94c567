/* Comparing one run against a baseline run of the same configuration: the ratio new/base of
 * a metric, a 95% interval for that ratio, and a verdict that calls a change only when the
 * whole interval lies beyond the threshold. Used by `mxbench compare` (CI regression gate). */
#ifndef MX_COMPARE_H
#define MX_COMPARE_H

#include "record.h"

typedef enum {
    MX_METRIC_THROUGHPUT, /* samples/s, higher is better; interval from the stored 95% CIs */
    MX_METRIC_TEST_ACC,   /* final test accuracy, higher is better; binomial (Wilson) error */
    MX_METRIC_INSTRUCTIONS, /* instructions per step (mxbench count), lower is better; a count
                             * has no noise, so its interval is the ratio itself */
    MX_NMETRICS
} mx_metric;

typedef enum {
    MX_VERDICT_SAME,        /* point estimate within the threshold */
    MX_VERDICT_UNSURE,      /* "~": point estimate beyond the threshold, interval not wholly */
    MX_VERDICT_REGRESSION,  /* whole interval beyond the threshold in the bad direction */
    MX_VERDICT_IMPROVEMENT, /* whole interval beyond the threshold in the good direction */
    MX_VERDICT_NA,          /* metric undefined on one side (not measured, zero baseline) */
} mx_verdict;

typedef struct {
    double base, value;        /* the metric in the baseline and in the new run */
    double ratio;              /* value / base */
    double ratio_lo, ratio_hi; /* 95% interval of the ratio; NaN when a side has none */
    mx_verdict verdict;
} mx_comparison;

const char *mx_compare_metric_name(mx_metric m);
/* Metric by name ("throughput", "test_acc", "instructions"); -1 when unknown. */
int mx_compare_metric_parse(const char *name);
const char *mx_compare_verdict_name(mx_verdict v);

/* Interval of the ratio n/b from the 95% intervals of each side, combined on the log scale
 * (MOVER: the distances to each side's bounds add in quadrature). NaN bounds when a bound
 * is missing or not positive. */
void mx_compare_ratio_ci(double b, double b_lo, double b_hi, double n, double n_lo, double n_hi,
                         double *lo, double *hi);

/* Verdict for a higher-is-better ratio with interval [lo, hi] and threshold (a fraction:
 * 0.05 flags changes beyond 5%). A NaN interval can only give "same" or "~". */
mx_verdict mx_compare_verdict(double ratio, double lo, double hi, double threshold);

/* 1 when the record holds metric m (a steps-only run has no test_acc, a timed one no counts). */
int mx_compare_measured(const mx_run_record *r, mx_metric m);
/* Compares metric m of cur against base (both ok records of the same configuration). The
 * ratio is new/base for every metric; for instructions, where lower is better, the verdict
 * judges base/new, so that 10% more instructions is a regression at a 5% threshold. */
void mx_compare_runs(const mx_run_record *base, const mx_run_record *cur, mx_metric m, double threshold,
                     mx_comparison *out);

/* "lenet data/device gpus=2 batch=128" (+ compression, amp): what a reader scans to find a
 * configuration (the full key, mx_record_config_key, is what matches runs). */
void mx_compare_describe(const mx_run_record *r, char *buf, size_t n);

#endif
