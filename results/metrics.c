/* The phase and counter tables (metrics.def) and the one accumulation every counter shares,
 * so that a new counter needs no code here, in the trainer or in the results store. */
#include "metrics.h"

#include <math.h>

const mx_phase_info mx_phases[MX_NPHASES] = {
#define MX_PHASE(ID, name, help) [MX_PHASE_##ID] = {name, "s", help},
#include "metrics.def"
};

const char *const mx_phase_names[MX_NPHASES] = {
#define MX_PHASE(ID, name, help) [MX_PHASE_##ID] = name,
#include "metrics.def"
};

const mx_counter_info mx_counters[MX_NCOUNTERS] = {
#define MX_COUNTER(ID, figure, unit, reduce, over, in_v1, head, scale, fmt, help) \
    [MX_COUNTER_##ID] = {figure, unit, MX_REDUCE_##reduce, MX_COUNTER_##over, in_v1, head, scale, fmt, help},
#include "metrics.def"
};

const char *mx_reduce_name(mx_reduce r)
{
    switch (r) {
    case MX_REDUCE_MEAN: return "mean";
    case MX_REDUCE_RATIO: return "ratio";
    case MX_REDUCE_MAX: return "max";
    case MX_REDUCE_LAST: return "last";
    case MX_REDUCE_SUM: return "sum";
    }
    return "?";
}

void mx_counter_acc_init(mx_counter_acc *a)
{
    for (int i = 0; i < MX_NCOUNTERS; i++) {
        a->sum[i] = a->ratio_num[i] = a->ratio_den[i] = 0;
        a->max[i] = a->last[i] = NAN;
        a->n[i] = 0;
    }
}

void mx_counter_acc_add(mx_counter_acc *a, const double counter[MX_NCOUNTERS])
{
    for (int i = 0; i < MX_NCOUNTERS; i++) {
        const double v = counter[i];
        if (isnan(v)) continue; /* not measured in this step */
        a->sum[i] += v;
        a->n[i]++;
        a->max[i] = isnan(a->max[i]) || v > a->max[i] ? v : a->max[i];
        a->last[i] = v;
        /* a ratio pairs the two sums over the same steps, or a step measuring only one of
         * them would bias it */
        const double d = counter[mx_counters[i].over];
        if (mx_counters[i].reduce == MX_REDUCE_RATIO && !isnan(d)) a->ratio_num[i] += v, a->ratio_den[i] += d;
    }
}

void mx_counter_acc_reduce(const mx_counter_acc *a, double figure[MX_NCOUNTERS])
{
    for (int i = 0; i < MX_NCOUNTERS; i++) {
        figure[i] = NAN;
        if (a->n[i] == 0) continue;
        switch (mx_counters[i].reduce) {
        case MX_REDUCE_MEAN: figure[i] = a->sum[i] / (double)a->n[i]; break;
        case MX_REDUCE_RATIO: figure[i] = a->ratio_den[i] > 0 ? a->ratio_num[i] / a->ratio_den[i] : NAN; break;
        case MX_REDUCE_MAX: figure[i] = a->max[i]; break;
        case MX_REDUCE_LAST: figure[i] = a->last[i]; break;
        case MX_REDUCE_SUM: figure[i] = a->sum[i]; break;
        }
    }
}
