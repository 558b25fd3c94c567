/* The plot driver: turns a loaded results file into gnuplot data files (outdir/data/) and,
 * through the scripts plots/<name>.gp, PNG and SVG figures (outdir/<name>.png|svg). */
#ifndef MX_PLOT_H
#define MX_PLOT_H

#include "results/results.h"

/* The figures, in the order they are drawn; each is plots/<name>.gp -> outdir/<name>.*. */
enum {
    MX_PLOT_THROUGHPUT,
    MX_PLOT_SPEEDUP,
    MX_PLOT_EFFICIENCY,
    MX_PLOT_ACCURACY,
    MX_PLOT_BREAKDOWN,
    MX_PLOT_LOSS,
    MX_PLOT_STALENESS, /* dist_async only: drawn when some ok run measured staleness */
    MX_PLOT_MEMORY,    /* memory per device: drawn when some ok run counted it */
    MX_PLOT_MOVED,     /* bytes moved per step: drawn when some ok run moved any */
    MX_PLOT_BUBBLE,    /* model only: measured bubble against theory */
    /* wire bytes and accuracy per compression and precision: drawn when some ok run compressed or ran AMP */
    MX_PLOT_COMPRESSION,
    /* fp16 AMP's loss scale per step and the skipped steps: drawn when some ok run has the series */
    MX_PLOT_LOSS_SCALE,
    /* the answer (results/answer.h): configurations ranked by throughput per workload and
     * device count; drawn when some device count has two ranked rows */
    MX_PLOT_RANKING,
    MX_NPLOTS
};
extern const char *const mx_plot_names[MX_NPLOTS];

/* What a call drew: files[i] holds outdir/<name>.png and .svg when drawn[i]; otherwise
 * skipped[i] says why (no ok run has the data), or is empty for a figure that does not apply
 * to the study (staleness without a dist_async run): nothing to tell. */
typedef struct {
    int drawn[MX_NPLOTS];
    char skipped[MX_NPLOTS][160];
    char files[MX_NPLOTS][2][4096];
    int ndrawn;
} mx_plot_report;

/* Draws every figure for which some ok run has data; skipped ones have their stale output
 * files removed so the directory never mixes studies. Creates outdir (and outdir/data)
 * as needed. scripts_dir holds the *.gp files. Returns the number of figures drawn (>= 0),
 * or a negative MX_E* status with mx_last_error() set: MX_EUNSUPPORTED without gnuplot,
 * MX_EIO for unwritable output, MX_ERUNTIME when gnuplot fails (with its error output).
 * verbose prints each gnuplot command and its warnings on stderr. rep may be NULL. */
int mx_plot_results_report(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose,
                           mx_plot_report *rep);

/* mx_plot_results_report that prints why each skipped figure was skipped on stderr. */
int mx_plot_results(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose);

/* Where the gnuplot scripts are: $MXBENCH_PLOTS_DIR, else the source tree's plots/ as built. */
const char *mx_plot_default_scripts_dir(void);

#endif
