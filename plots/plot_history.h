/* The figures of `mxbench history`: a metric against revision, one line per configuration,
 * each point's verdict against the configuration's previous point marked (regressions red,
 * improvements green). Throughput always; instructions per step where some file counted them. */
#ifndef MX_PLOT_HISTORY_H
#define MX_PLOT_HISTORY_H

#include "results/history.h"

/* Lines one figure draws at most: past eight the colours repeat and the lines cannot be told
 * apart. A history of more configurations draws those with a regression or improvement
 * first, then those whose metric spreads widest across revisions (max/min); the report says
 * how many were drawn of how many. */
#define MX_PLOT_HISTORY_LINES 8

extern const char *const mx_plot_history_names[MX_HIST_NMETRICS]; /* "history", "history_instructions" */

typedef struct {
    int drawn[MX_HIST_NMETRICS];
    int shown[MX_HIST_NMETRICS], of[MX_HIST_NMETRICS]; /* configurations drawn / with the metric */
    char files[MX_HIST_NMETRICS][2][4096];             /* [metric][0: png, 1: svg] when drawn */
} mx_plot_history_report;

/* Draws, for each metric m whose bit (1 << m) is set in metrics and that some point has,
 * outdir/<name>.png and .svg, with data in outdir/data/<name>.dat and a replot.sh; a figure
 * not drawn has its stale files removed. Returns the number of figures drawn, or a negative
 * MX_E* as mx_plot_results (MX_EUNSUPPORTED without gnuplot, MX_EIO, MX_ERUNTIME). */
int mx_plot_history(const mx_history *h, unsigned metrics, const char *outdir, const char *scripts_dir, int verbose,
                    mx_plot_history_report *rep);

#endif
