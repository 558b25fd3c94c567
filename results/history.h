/* A study's results files taken as a history: the files ordered by the time they were started,
 * one series per configuration (mx_record_config_key) across them, and each point judged
 * against the configuration's previous point with compare.h's rule (ratio, 95% interval,
 * threshold). `mxbench history` prints it, draws it (plots/plot_history.h) and writes its
 * page (report/history_page.h). */
#ifndef MX_HISTORY_H
#define MX_HISTORY_H

#include "compare.h"
#include "results.h"

#define MX_HISTORY_REV 13 /* a revision as shown: its first 12 characters */

/* The two metrics a history judges; index into mx_history_point.vs and the figures. */
enum { MX_HIST_THROUGHPUT, MX_HIST_INSTRUCTIONS, MX_HIST_NMETRICS };

/* One file of the history, in time order. */
typedef struct {
    int file;                   /* its index among the files given */
    const mx_results *res;      /* the caller's, loaded */
    char revision[MX_HISTORY_REV]; /* meta git_revision, at most 12 characters ("" when none) */
    char label[48];             /* what the figures and tables call it: the revision, made unique
                                 * ("#2" after a repeated one), or "file-N" for a file without one */
    char start_time[40];        /* meta start_time, ISO 8601 UTC; "" when none */
} mx_history_rev;

/* A configuration at one revision. */
typedef struct {
    const mx_run_record *run;   /* the first ok run of the configuration in that file; NULL: a gap */
    double value[MX_HIST_NMETRICS], lo[MX_HIST_NMETRICS], hi[MX_HIST_NMETRICS];
                                /* throughput (samples/s) with its 95% interval; instructions per
                                 * step (an exact count: lo = hi = value); NaN where not measured */
    int prev;                   /* the revision of the configuration's previous point; -1: none */
    mx_comparison vs[MX_HIST_NMETRICS]; /* this point against that one (verdict NA without one) */
} mx_history_point;

typedef struct {
    char key[1024];             /* mx_record_config_key */
    char label[256];            /* mx_compare_describe: what a reader scans */
    mx_history_point *pt;       /* [nrevs], by revision in time order */
    int npoints;                /* revisions where it ran ok */
} mx_history_config;

typedef struct {
    int nrevs;
    mx_history_rev *revs;       /* in time order */
    int nconfigs;
    mx_history_config *configs; /* in order of first appearance (oldest file first) */
    double threshold;
    int unordered;              /* 1: some file had no start_time, so the order given was kept */
    int skipped;                /* runs not ok (failed, skipped, diverged): no point */
    int repeated;               /* ok runs of a configuration already seen in the same file: ignored */
    int counted;                /* some point has an instruction count */
} mx_history;

/* Builds the history of files[0..n) (loaded; they must outlive h), with names[i] naming file i
 * where it has no revision. Files are ordered by start_time, files with equal times in the
 * order given; where some file has none, the order given is kept (h->unordered). threshold: a
 * fraction, as compare's. MX_EINVAL for n < 1, MX_ENOMEM. */
int mx_history_build(const mx_results *files, const char *const *names, int n, double threshold, mx_history *h);
void mx_history_free(mx_history *h);

/* Number of points with verdict v for metric m (MX_HIST_*), all revisions (rev < 0) or one. */
int mx_history_count(const mx_history *h, int m, mx_verdict v, int rev);
/* Number of points judged against a previous one (verdict not NA) for metric m, all
 * revisions (rev < 0) or one. */
int mx_history_ncompared(const mx_history *h, int m, int rev);

/* x as the tables show metric m: throughput whole from 100 up, else to 3 figures;
 * instructions whole; "-" for NaN. */
void mx_history_fmt(char *buf, size_t n, int m, double x);
/* The name of metric m: "throughput", "instructions". */
const char *mx_history_metric_name(int m);

/* The compare metric of a history metric (MX_METRIC_THROUGHPUT, MX_METRIC_INSTRUCTIONS). */
mx_metric mx_history_metric(int m);

#endif
