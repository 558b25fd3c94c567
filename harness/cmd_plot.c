/* `mxbench plot FILE`: draws the figures of a results file (throughput, speedup, efficiency,
 * accuracy, phase breakdown, loss, dist_async staleness) as PNG and SVG through gnuplot; see
 * plots/plot.h. */
#include "base/status.h"
#include "harness/commands.h"
#include "harness/opts.h"
#include "plots/plot.h"
#include "results/results.h"

#include <stdio.h>
#include <stdlib.h>

static int report(const char *file, const mx_results *res, const mx_plot_report *rep, const char *out)
{
    for (int p = 0; p < MX_NPLOTS; p++)
        if (!rep->drawn[p] && rep->skipped[p][0]) /* empty: the figure does not apply */
            fprintf(stderr, "mxbench plot: skipped %s: %s\n", mx_plot_names[p], rep->skipped[p]);
    if (rep->ndrawn == 0) {
        fprintf(stderr, "mxbench plot: nothing to plot: %s has no ok run with data (%d runs in all)\n", file,
                res->nruns);
        return 1;
    }
    for (int p = 0; p < MX_NPLOTS; p++)
        if (rep->drawn[p]) printf("%s\n%s\n", rep->files[p][0], rep->files[p][1]);
    fprintf(stderr, "mxbench plot: data files and replot.sh (to redraw by hand) in %s/data\n", out);
    return 0;
}

int mx_cmd_plot(int argc, char **argv)
{
    const char *out = "out/plots", *scripts = NULL;
    int verbose = 0;
    const mx_opt opts[] = {
        {"out", MX_OPT_STRING, &out, "DIR", "directory for the figures (default out/plots); data files go to DIR/data",
         NULL},
        {"scripts", MX_OPT_STRING, &scripts, "DIR",
         "directory of the gnuplot scripts (default $MXBENCH_PLOTS_DIR, else the source tree's plots/)", NULL},
        {"verbose", MX_OPT_FLAG, &verbose, NULL, "print each gnuplot command and its warnings", NULL},
        {NULL, MX_OPT_FLAG, NULL, NULL, NULL, NULL},
    };
    const mx_cmd_spec spec = {
        .cmd = "mxbench plot",
        .usage = "FILE [options]",
        .summary = "Draws the figures of a results file as PNG and SVG with gnuplot: throughput, speedup and\n"
                   "scaling efficiency against device count (a panel per strategy or kvstore family where one\n"
                   "key would be too long), the ranking of the configurations at each device count (the\n"
                   "answer of mxbench report, drawn), test accuracy against global batch, the phase\n"
                   "breakdown of a step, loss curves, and the staleness of dist_async runs; a strategy or\n"
                   "kvstore keeps its colour in every figure. Only ok runs are plotted; a figure without data\n"
                   "is skipped with a message. Exit status: 0 ok, 1 plotting failed, 2 bad usage or input.",
        .opts = opts,
        .min_positional = 1,
        .max_positional = 1,
    };
    const char *pos[1];
    int npos;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (!scripts) scripts = mx_plot_default_scripts_dir();

    mx_results res;
    if (mx_results_load(pos[0], &res) < 0) {
        fprintf(stderr, "mxbench plot: %s\n", mx_last_error());
        return 2;
    }
    mx_plot_report *rep = malloc(sizeof *rep);
    if (!rep) {
        fprintf(stderr, "mxbench plot: out of memory\n");
        mx_results_free(&res);
        return 1;
    }
    rc = mx_plot_results_report(&res, out, scripts, verbose, rep);
    int status;
    if (rc < 0) {
        fprintf(stderr, "mxbench plot: %s\n", mx_last_error());
        status = mx_exit_status(rc); /* a bad --out or --scripts is bad usage: 2 */
    } else {
        status = report(pos[0], &res, rep, out);
    }
    free(rep);
    mx_results_free(&res);
    return status;
}
