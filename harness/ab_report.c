/* Printing `mxbench ab`'s decision (ab_report.h). */
#include "harness/ab_report.h"
#include "harness/report_table.h"
#include "results/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double side_median(const double *thr, int rounds, int s)
{
    double *x = malloc((size_t)rounds * sizeof *x);
    if (!x) return NAN;
    for (int r = 0; r < rounds; r++) x[r] = thr[2 * r + s];
    double m = mx_stats_median(x, rounds);
    free(x);
    return m;
}

static void interval(char *buf, size_t n, const mx_ab_result *res)
{
    if (isnan(res->lo)) snprintf(buf, n, "none (fewer than 6 rounds)");
    else snprintf(buf, n, "[%.3f, %.3f]", res->lo, res->hi);
}

static void print_text(const char *const bin[2], const char *config, const double *thr, const mx_ab_result *res)
{
    char ci[64];
    interval(ci, sizeof ci, res);
    printf("base %s\nnew  %s\nconfig %s, %d rounds (ABBA order)\n\n", bin[0], bin[1], config, res->rounds);
    printf("round  base samples/s  new samples/s  new/base\n");
    for (int r = 0; r < res->rounds; r++)
        printf("%5d  %14.1f  %13.1f  %8.3f\n", r + 1, thr[2 * r], thr[2 * r + 1], thr[2 * r + 1] / thr[2 * r]);
    printf("\nnew/base throughput %.3f, 95%% interval %s: %s (threshold %g%%)\n", res->ratio, ci,
           mx_compare_verdict_name(res->verdict), res->threshold * 100);
    printf("Hodges-Lehmann estimate of the per-round ratios with the interval of Wilcoxon's signed-rank test;\n"
           "a change is called only when the estimate and the whole interval lie beyond the threshold,\n"
           "'~' when only the estimate does.\n");
}

static void print_md(const char *const bin[2], const char *config, const double *thr, const mx_ab_result *res)
{
    char ci[64];
    interval(ci, sizeof ci, res);
    const char *v = mx_compare_verdict_name(res->verdict);
    printf("### mxbench ab\n\nbase `%s`, new `%s`, %d rounds (ABBA), threshold %g%%\n\n", bin[0], bin[1], res->rounds,
           res->threshold * 100);
    printf("| config | base samples/s | new samples/s | new/base | 95%% CI | verdict |\n");
    printf("| --- | ---: | ---: | ---: | ---: | --- |\n");
    printf("| %s | %.1f | %.1f | %.3f | %s | %s%s%s |\n", config, side_median(thr, res->rounds, 0),
           side_median(thr, res->rounds, 1), res->ratio, ci, res->verdict == MX_VERDICT_REGRESSION ? "**" : "", v,
           res->verdict == MX_VERDICT_REGRESSION ? "**" : "");
    printf("\nsamples/s: the median over the rounds; new/base: Hodges-Lehmann estimate of the per-round ratios.\n");
}

/* github-action-benchmark's custom format: an array of {name, unit, value, range, extra}. */
static void print_json(const char *const bin[2], const char *config, const double *thr, const mx_ab_result *res)
{
    char name[320], ci[64], extra[256];
    interval(ci, sizeof ci, res);
    snprintf(name, sizeof name, "%s throughput", config);
    printf("[\n  {\"name\": ");
    mx_json_string(name);
    printf(", \"unit\": \"samples/s\", \"value\": %.6g, \"extra\": ", side_median(thr, res->rounds, 1));
    snprintf(extra, sizeof extra, "median of %d runs; base %.6g", res->rounds, side_median(thr, res->rounds, 0));
    mx_json_string(extra);
    snprintf(name, sizeof name, "%s new/base", config);
    printf("},\n  {\"name\": ");
    mx_json_string(name);
    printf(", \"unit\": \"ratio\", \"value\": %.6g, \"range\": ", res->ratio);
    mx_json_string(ci);
    snprintf(extra, sizeof extra, "%s at threshold %g%%; base %s, new %s", mx_compare_verdict_name(res->verdict),
             res->threshold * 100, bin[0], bin[1]);
    printf(", \"extra\": ");
    mx_json_string(extra);
    printf("}\n]\n");
}

void mx_ab_print(const char *format, const char *const bin[2], const char *config, const double *thr,
                 const mx_ab_result *res)
{
    if (strcmp(format, "md") == 0) print_md(bin, config, thr, res);
    else if (strcmp(format, "json") == 0) print_json(bin, config, thr, res);
    else print_text(bin, config, thr, res);
    if (res->noisy) /* on stderr: the json on stdout stays clean */
        fprintf(stderr, "mxbench ab: warning: %d of %d runs saw a busy host (another program ready to run): the "
                "pairing absorbs a steady load, not one that comes and goes\n", res->noisy, 2 * res->rounds);
}
