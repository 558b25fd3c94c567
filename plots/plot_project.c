/* `mxbench project`'s figures (plot_project.h): one data file, data/project.dat, with two
 * blocks per projected configuration (its measured points; the model at the counts drawn),
 * and the scripts plots/project_throughput.gp and project_efficiency.gp run for PNG and SVG
 * through the plot driver's gnuplot runner. */
#include "plot_project.h"
#include "plot_internal.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const mx_plot_project_names[MX_PLOT_PROJECT_FIGURES] = {"project_throughput", "project_efficiency"};

static const char data_name[] = "project.dat";

static int setup(plot_ctx *c, const mx_projection *pr, int n, const mx_results_meta *meta, const char *outdir,
                 const char *scripts_dir, int verbose)
{
    MX_TRY(mx_plot_setup_dirs(c, outdir, scripts_dir, mx_plot_project_names, MX_PLOT_PROJECT_FIGURES, verbose));
    /* the title: the workloads, and the machine of CPU workers (GPUs' names are not recorded
     * per run) */
    const mx_projection *first = NULL;
    for (int i = 0; i < n && !first; i++)
        if (!pr[i].skipped[0]) first = &pr[i];
    const int cpu = first && first->cpu;
    snprintf(c->title, sizeof c->title, "%s on %s%s%.60s%s, model: data + compute + exposed alpha-beta-gamma comm",
             first ? first->workload : "?", first ? first->device_type : "?", cpu && meta->cpu_model[0] ? " (" : "",
             cpu ? meta->cpu_model : "", cpu && meta->cpu_model[0] ? ")" : "");
    for (char *p = c->title; *p; p++)
        if (*p == '"' || *p == '\n') *p = '\'';
    c->devname = cpu ? "CPU workers" : first && strcmp(first->device_type, "cuda") == 0 ? "GPUs" : "devices";
    return mx_plot_open_replot(c);
}

/* The model's line: the counts of the points and 8 more per octave between, so that a log2
 * axis shows a curve, not a polygon through the few points. */
static void write_model_block(FILE *f, const mx_projection *pr, int lo, int hi)
{
    fprintf(f, "\n\n\"%s: model\"\n", pr->label);
    int last = 0;
    for (double x = lo; x <= hi * 1.0001; x *= pow(2, 1.0 / 8)) {
        int p = (int)lround(x);
        for (int j = 0; j < pr->npoints; j++) /* a point's own count between two steps */
            if (pr->pt[j].gpus > last && pr->pt[j].gpus < p) p = pr->pt[j].gpus, x = p;
        if (p <= last) continue;
        mx_proj_point pt = {0};
        mx_project_predict(pr, p, &pt);
        fprintf(f, "%d", p);
        mx_plot_put_num(f, pt.m_throughput);
        mx_plot_put_num(f, pt.m_efficiency);
        fprintf(f, " -1\n");
        last = p;
    }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* data/project.dat and the scripts' variables; the number of configurations written. */
static int write_data(plot_ctx *c, const mx_projection *pr, int n, gp_vars *v)
{
    FILE *f = mx_plot_open_data(c, data_name, "mxbench project: measured and modelled throughput and efficiency");
    if (!f) return MX_EIO;
    fputs("# two blocks per configuration, separated by two blank lines (gnuplot 'index'), each opened by its\n"
          "# title in double quotes: block 2i its measured points, 2i+1 the model at the counts drawn\n"
          "# columns: devices samples/s efficiency fitted(1: fitted, 0: held out, -1: the model)\n", f);
    int blocks = 0, xs[MX_PROJ_MAX_POINTS * 8], nx = 0;
    size_t maxlabel = 0;
    double ytop = 1;
    for (int i = 0; i < n; i++) {
        const mx_projection *p = &pr[i];
        if (p->skipped[0] || p->npoints == 0) continue;
        fprintf(f, "%s\"%s\"\n", blocks ? "\n\n" : "", p->label);
        maxlabel = strlen(p->label) > maxlabel ? strlen(p->label) : maxlabel;
        for (int j = 0; j < p->npoints; j++) {
            const mx_proj_point *pt = &p->pt[j];
            if (nx < (int)(sizeof xs / sizeof *xs)) xs[nx++] = pt->gpus;
            if (isfinite(pt->m_efficiency) && pt->m_efficiency > ytop) ytop = pt->m_efficiency;
            if (!pt->measured) continue;
            if (isfinite(pt->efficiency) && pt->efficiency > ytop) ytop = pt->efficiency;
            fprintf(f, "%d", pt->gpus);
            mx_plot_put_num(f, pt->throughput);
            mx_plot_put_num(f, pt->efficiency);
            fprintf(f, " %d\n", pt->fitted);
        }
        write_model_block(f, p, p->pt[0].gpus, p->pt[p->npoints - 1].gpus);
        blocks++;
    }
    int rc = mx_plot_close_data(c, f, data_name);
    qsort(xs, (size_t)nx, sizeof *xs, cmp_int);
    char list[2048] = "";
    size_t len = 0;
    for (int i = 0; i < nx; i++) { /* ascending distinct counts, for the x tics */
        if (i && xs[i] == xs[i - 1]) continue;
        const int w = snprintf(list + len, sizeof list - len, "%s%d", len ? " " : "", xs[i]);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    mx_vars_int(v, "nseries", blocks);
    mx_vars_str(v, "gpus", list);
    mx_vars_add(v, "; ytop=%.3g", ytop * 1.1 > 1.15 ? ytop * 1.1 : 1.15);
    mx_plot_canvas_vars(v, blocks + 2, maxlabel);
    return rc < 0 ? rc : blocks;
}

int mx_plot_projection(const mx_projection *pr, int n, const mx_results_meta *meta, const char *outdir,
                       const char *scripts_dir, int verbose, char files[MX_PLOT_PROJECT_FIGURES][2][4096])
{
    if (!pr || !outdir || !*outdir || !scripts_dir)
        return mx_error(MX_EINVAL, "plotting a projection needs it, an output directory and the scripts directory");
    plot_ctx *c = malloc(sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = setup(c, pr, n, meta, outdir, scripts_dir, verbose), drawn = 0;
    gp_vars v = {.len = 0};
    if (rc == 0) {
        mx_vars_str(&v, "title", c->title);
        mx_vars_str(&v, "devname", c->devname);
        rc = write_data(c, pr, n, &v);
    }
    if (rc > 0 && v.overflow) rc = mx_error(MX_EINVAL, "gnuplot variables for the projection too long");
    static const char *const terms[2] = {"png", "svg"};
    for (int fig = 0; rc > 0 && fig < MX_PLOT_PROJECT_FIGURES; fig++) {
        for (int t = 0; rc > 0 && t < 2; t++) {
            const int r = mx_plot_run_script(c, mx_plot_project_names[fig], data_name, terms[t], v.text, files[fig][t],
                                          sizeof files[fig][t]);
            if (r < 0) rc = r;
        }
        if (rc > 0) drawn++;
        if (rc > 0 && verbose) fprintf(stderr, "mxbench project: wrote %s and %s\n", files[fig][0], files[fig][1]);
    }
    if (c->replot && fclose(c->replot) != 0 && rc >= 0) rc = mx_error(MX_EIO, "error writing %s/replot.sh", c->datadir);
    free(c);
    return rc < 0 ? rc : drawn;
}
