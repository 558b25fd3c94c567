/* What `mxbench ab` prints: its decision and every round, as text, Markdown or the JSON that
 * github-action-benchmark reads (customBiggerIsBetter). */
#ifndef MX_AB_REPORT_H
#define MX_AB_REPORT_H

#include "results/compare.h"

typedef struct {
    int rounds;
    double ratio, lo, hi; /* new/base: Hodges-Lehmann estimate and 95% interval (NaN: none) */
    double threshold;
    mx_verdict verdict;
    int noisy;            /* runs whose host readings said another program competed */
} mx_ab_result;

/* thr[2r] and thr[2r+1]: round r's base and new throughput (samples/s). format: text|md|json. */
void mx_ab_print(const char *format, const char *const bin[2], const char *config, const double *thr,
                 const mx_ab_result *res);

#endif
