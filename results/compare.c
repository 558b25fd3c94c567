/* Ratio, ratio interval and verdict for one metric of a run against its baseline (compare.h);
 * kept apart from the CLI so that the decision rule is unit-tested. */
#include "compare.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const metric_names[MX_NMETRICS] = {"throughput", "test_acc", "instructions"};

const char *mx_compare_metric_name(mx_metric m)
{
    return (unsigned)m < MX_NMETRICS ? metric_names[m] : "?";
}

int mx_compare_metric_parse(const char *name)
{
    for (int m = 0; m < MX_NMETRICS; m++)
        if (strcmp(name, metric_names[m]) == 0) return m;
    return -1;
}

const char *mx_compare_verdict_name(mx_verdict v)
{
    switch (v) {
    case MX_VERDICT_SAME: return "same";
    case MX_VERDICT_UNSURE: return "~";
    case MX_VERDICT_REGRESSION: return "regression";
    case MX_VERDICT_IMPROVEMENT: return "improvement";
    case MX_VERDICT_NA: return "n/a";
    }
    return "?";
}

static int positive(double x) { return x > 0 && isfinite(x); }

void mx_compare_ratio_ci(double b, double b_lo, double b_hi, double n, double n_lo, double n_hi,
                         double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!positive(b) || !positive(b_lo) || !positive(b_hi) || !positive(n) || !positive(n_lo) ||
        !positive(n_hi))
        return;
    /* The ratio is low when the new run is low and the base is high, so the lower bound
     * takes the new run's lower distance and the base's upper one (and vice versa). */
    double down = hypot(log(n) - log(n_lo), log(b_hi) - log(b));
    double up = hypot(log(n_hi) - log(n), log(b) - log(b_lo));
    *lo = n / b * exp(-down);
    *hi = n / b * exp(up);
}

mx_verdict mx_compare_verdict(double ratio, double lo, double hi, double threshold)
{
    if (!isfinite(ratio)) return MX_VERDICT_NA;
    double bad = 1 - threshold, good = 1 + threshold;
    if (ratio >= bad && ratio <= good) return MX_VERDICT_SAME;
    if (ratio < bad && hi < bad) return MX_VERDICT_REGRESSION; /* false when hi is NaN */
    if (ratio > good && lo > good) return MX_VERDICT_IMPROVEMENT;
    return MX_VERDICT_UNSURE;
}

static void throughput_ratio(const mx_run_record *b, const mx_run_record *n, mx_comparison *out)
{
    out->base = b->throughput;
    out->value = n->throughput;
    mx_compare_ratio_ci(b->throughput, b->throughput_ci_low, b->throughput_ci_high, n->throughput,
                        n->throughput_ci_low, n->throughput_ci_high, &out->ratio_lo, &out->ratio_hi);
}

static void accuracy_ratio(const mx_run_record *b, const mx_run_record *n, mx_comparison *out)
{
    out->base = b->final_test_acc;
    out->value = n->final_test_acc;
    double blo, bhi, nlo, nhi;
    mx_stats_wilson_ci95(b->final_test_acc, b->test_samples, &blo, &bhi);
    mx_stats_wilson_ci95(n->final_test_acc, n->test_samples, &nlo, &nhi);
    if (n->final_test_acc == 0 && positive(b->final_test_acc) && positive(blo)) {
        /* a model that classifies nothing right has no log; bound the ratio directly */
        out->ratio_lo = 0;
        out->ratio_hi = nhi / blo;
        return;
    }
    mx_compare_ratio_ci(b->final_test_acc, blo, bhi, n->final_test_acc, nlo, nhi, &out->ratio_lo,
                        &out->ratio_hi);
}

int mx_compare_measured(const mx_run_record *r, mx_metric m)
{
    if (m == MX_METRIC_TEST_ACC) return !isnan(r->final_test_acc);
    if (m == MX_METRIC_INSTRUCTIONS) return !isnan(r->metrics[MX_COUNTER_INSTRUCTIONS]);
    return !isnan(r->throughput);
}

void mx_compare_runs(const mx_run_record *base, const mx_run_record *cur, mx_metric m, double threshold,
                     mx_comparison *out)
{
    out->ratio_lo = out->ratio_hi = NAN;
    if (m == MX_METRIC_INSTRUCTIONS) {
        out->base = base->metrics[MX_COUNTER_INSTRUCTIONS];
        out->value = cur->metrics[MX_COUNTER_INSTRUCTIONS];
        out->ratio = positive(out->base) && positive(out->value) ? out->value / out->base : NAN;
        out->ratio_lo = out->ratio_hi = out->ratio;
        const double inv = 1 / out->ratio;
        out->verdict = mx_compare_verdict(inv, inv, inv, threshold);
        return;
    }
    if (m == MX_METRIC_TEST_ACC)
        accuracy_ratio(base, cur, out);
    else
        throughput_ratio(base, cur, out);
    out->ratio = positive(out->base) && isfinite(out->value) ? out->value / out->base : NAN;
    out->verdict = mx_compare_verdict(out->ratio, out->ratio_lo, out->ratio_hi, threshold);
}

/* Short human description; the full key is what matched, this is what a reader scans. */
void mx_compare_describe(const mx_run_record *r, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s %s/%s gpus=%d batch=%d", r->workload, r->strategy, r->kvstore, r->gpus, r->batch);
    if (len > 0 && (size_t)len < n && mx_gc_of(r->compression) != MX_GC_NONE)
        len += snprintf(buf + len, n - (size_t)len, " %s", r->compression);
    if (len > 0 && (size_t)len < n && mx_amp_of(r->amp) != MX_AMP_OFF)
        snprintf(buf + len, n - (size_t)len, " amp=%s", r->amp);
}
