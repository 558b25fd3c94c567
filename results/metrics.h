/* Step statistics as tables (the entries are in metrics.def): the phases of a training step
 * and the named per-step counters, with how each counter is reduced over a run into the
 * derived figure the record, the results file, the report and the plots carry. */
#ifndef MX_METRICS_H
#define MX_METRICS_H

#include <math.h>

enum {
#define MX_PHASE(ID, name, help) MX_PHASE_##ID,
#include "metrics.def"
    MX_NPHASES
};

enum {
#define MX_COUNTER(ID, figure, unit, reduce, over, in_v1, head, scale, fmt, help) MX_COUNTER_##ID,
#include "metrics.def"
    MX_NCOUNTERS
};

/* How the values of the timed steps become a run's figure. Steps whose value is NaN did not
 * measure the counter (one device has no kvstore) and are left out; no such step: NaN. */
typedef enum {
    MX_REDUCE_MEAN,  /* sum / steps that measured it */
    MX_REDUCE_RATIO, /* sum / sum of the `over` counter, over the steps that measured both */
    MX_REDUCE_MAX,   /* largest value (peak memory) */
    MX_REDUCE_LAST,  /* value of the last step that measured it (loss scale) */
    MX_REDUCE_SUM,   /* total over the run (skipped steps) */
} mx_reduce;

typedef struct {
    const char *name, *unit, *help;
} mx_phase_info;

typedef struct {
    const char *name;  /* the derived figure's name in the record, file, report and plots */
    const char *unit;
    mx_reduce reduce;
    int over;          /* MX_REDUCE_RATIO: the denominator counter */
    int in_v1;         /* required of schema-1 files; 0: optional (older files lack it) */
    const char *head;  /* text/md report column head */
    double scale;      /* text/md report shows value * scale ... */
    const char *fmt;   /* ... with this printf format */
    const char *help;
} mx_counter_info;

extern const mx_phase_info mx_phases[MX_NPHASES];
extern const char *const mx_phase_names[MX_NPHASES]; /* "data", "forward", ... */
extern const mx_counter_info mx_counters[MX_NCOUNTERS];
const char *mx_reduce_name(mx_reduce r); /* "mean", "ratio", ... */

/* One step's counters, cleared to NaN ("not measured") before a strategy fills them. Inline:
 * strategies use it without linking the results library. */
static inline void mx_counters_clear(double counter[MX_NCOUNTERS])
{
    for (int i = 0; i < MX_NCOUNTERS; i++) counter[i] = NAN;
}

/* Running sums over the timed steps of a run, for every counter alike. */
typedef struct {
    double sum[MX_NCOUNTERS], max[MX_NCOUNTERS], last[MX_NCOUNTERS];
    double ratio_num[MX_NCOUNTERS], ratio_den[MX_NCOUNTERS]; /* over steps measuring both */
    long n[MX_NCOUNTERS];
} mx_counter_acc;

void mx_counter_acc_init(mx_counter_acc *a);
void mx_counter_acc_add(mx_counter_acc *a, const double counter[MX_NCOUNTERS]);
/* The derived figures, per each counter's reduction (NaN where no step measured it). */
void mx_counter_acc_reduce(const mx_counter_acc *a, double figure[MX_NCOUNTERS]);

#endif
