/* The figures of `mxbench project`: per configuration, its measured points (filled where the
 * model was fitted to them, hollow where they were held out to check it) and the model's line
 * past them, throughput and scaling efficiency against device count. */
#ifndef MX_PLOT_PROJECT_H
#define MX_PLOT_PROJECT_H

#include "results/project.h"

#define MX_PLOT_PROJECT_FIGURES 2 /* project_throughput, project_efficiency */
extern const char *const mx_plot_project_names[MX_PLOT_PROJECT_FIGURES];

/* Draws the projected configurations of pr[0..n) (those not skipped) as outdir/<name>.png and
 * .svg, with their data file and a replot.sh in outdir/data; meta names the machine in the
 * title. files receives the paths written ([figure][0: png, 1: svg]). Returns the number of
 * figures drawn, 0 when no configuration was projected, or a negative MX_E* as
 * mx_plot_results (MX_EUNSUPPORTED without gnuplot, MX_EIO, MX_ERUNTIME). */
int mx_plot_projection(const mx_projection *pr, int n, const mx_results_meta *meta, const char *outdir,
                       const char *scripts_dir, int verbose, char files[MX_PLOT_PROJECT_FIGURES][2][4096]);

#endif
