/* The plot driver: selects the ok runs of a results file, writes one gnuplot data file per
 * figure into outdir/data/ (plus replot.sh to redraw them by hand) and runs the scripts
 * plots/<name>.gp under gnuplot for each terminal, checking its exit status and its output. */
#include "plot_internal.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const mx_plot_names[MX_NPLOTS] = {"throughput", "speedup", "efficiency", "accuracy", "breakdown", "loss",
                                                  "staleness", "memory", "moved", "bubble", "compression",
                                              "loss_scale", "ranking"};

/* ---- setup: directories, title, the axis wording ---- */

/* Appends each distinct value of field(run) to buf as "a, b". */
static void join_distinct(const run_set *s, const char *(*field)(const mx_run_record *), char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n; i++) {
        const char *v = field(s->runs[i]);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(field(s->runs[j]), v) == 0;
        if (seen || !*v) continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", v);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
}

static const char *get_workload(const mx_run_record *r) { return r->workload; }
static const char *get_device(const mx_run_record *r) { return r->device_type; }
static const char *get_strategy(const mx_run_record *r) { return r->strategy; }

/* The title names what every line shares (the labels leave it out): the workloads, the
 * strategy where the study has one, the device type and its model. */
static void describe_study(plot_ctx *c)
{
    char workloads[256], devices[64], strategies[64];
    join_distinct(&c->set, get_workload, workloads, sizeof workloads);
    join_distinct(&c->set, get_device, devices, sizeof devices);
    join_distinct(&c->set, get_strategy, strategies, sizeof strategies);
    const int one_strategy = strategies[0] && !strchr(strategies, ',');
    const mx_results_meta *m = &c->res->meta;
    const char *model = strcmp(devices, "cuda") == 0 ? m->gpu_model : strcmp(devices, "cpu") == 0 ? m->cpu_model : "";
    snprintf(c->title, sizeof c->title, "%s%s%s%s on %s%s%.60s%s", workloads[0] ? workloads : "(no runs)",
             one_strategy ? ", " : "", one_strategy ? strategies : "", one_strategy ? "-parallel" : "",
             devices[0] ? devices : "?", model[0] ? " (" : "", model, model[0] ? ")" : "");
    for (char *p = c->title; *p; p++)
        if (*p == '"' || *p == '\n') *p = '\'';
    c->devname = strcmp(devices, "cuda") == 0 ? "GPUs" : strcmp(devices, "cpu") == 0 ? "CPU workers" : "devices";
}

int mx_plot_setup_dirs(plot_ctx *c, const char *outdir, const char *scripts_dir, const char *const *scripts,
                       int nscripts, int verbose)
{
    memset(c, 0, sizeof *c);
    c->verbose = verbose;
    MX_TRY(mx_plot_find_gnuplot(c->gnuplot, sizeof c->gnuplot));
    if (!realpath(scripts_dir, c->scripts))
        return mx_error(MX_EIO, "gnuplot scripts directory '%s' not found: %s (set MXBENCH_PLOTS_DIR or "
                        "--scripts to the source tree's plots/)", scripts_dir, strerror(errno));
    for (int i = 0; i < nscripts; i++) {
        char script[PATH_MAX + 64];
        snprintf(script, sizeof script, "%s/%s.gp", c->scripts, scripts[i]);
        if (access(script, R_OK) != 0)
            return mx_error(MX_EIO, "gnuplot script '%s' missing or unreadable: %s", script, strerror(errno));
    }
    char data[PATH_MAX + 8];
    snprintf(data, sizeof data, "%s/data", outdir);
    MX_TRY(mx_mkdir_p(data));
    if (!realpath(outdir, c->outdir)) return mx_error(MX_EIO, "cannot resolve '%s': %s", outdir, strerror(errno));
    snprintf(c->datadir, sizeof c->datadir, "%s/data", c->outdir);
    snprintf(c->logpath, sizeof c->logpath, "%s/gnuplot.log", c->datadir);
    FILE *log = fopen(c->logpath, "w"); /* one log per call: a failure's output is its own */
    if (!log) return mx_error(MX_EIO, "cannot write '%s': %s", c->logpath, strerror(errno));
    fclose(log);
    return 0;
}

/* The runs as plotted: shallow copies (their series stay the caller's) whose speedup and
 * efficiency are derived again, so that a file written under an older rule is drawn as the
 * current one reads it (results/SCHEMA.md, Scaling). */
static int rederive(plot_ctx *c, const mx_results *res)
{
    c->view = *res;
    c->view.runs = calloc((size_t)(res->nruns > 0 ? res->nruns : 0) + 1, sizeof *c->view.runs);
    if (!c->view.runs) return mx_error(MX_ENOMEM, "out of memory while plotting %d runs", res->nruns);
    for (int i = 0; i < res->nruns; i++) c->view.runs[i] = res->runs[i];
    mx_records_derive_scaling(c->view.runs, res->nruns);
    c->res = &c->view;
    return 0;
}

static int setup(plot_ctx *c, const mx_results *res, const char *outdir, const char *scripts_dir, int verbose)
{
    MX_TRY(mx_plot_setup_dirs(c, outdir, scripts_dir, mx_plot_names, MX_NPLOTS, verbose));
    MX_TRY(rederive(c, res));
    MX_TRY(mx_plot_series_build(&c->set, c->res));
    describe_study(c);
    return 0;
}

/* A skipped figure must not leave last study's figure and data behind. */
static void remove_stale(plot_ctx *c, int plot)
{
    char path[PATH_MAX + 64];
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "%s/%s.%s", c->outdir, mx_plot_names[plot], t ? "svg" : "png");
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s", c->datadir, mx_plot_data_file(plot));
    unlink(path);
}

static int draw(plot_ctx *c, int plot, mx_plot_report *rep)
{
    gp_vars v = {.len = 0};
    mx_vars_str(&v, "title", c->title);
    mx_vars_str(&v, "devname", c->devname);
    int rc = mx_plot_write_data(c, plot, &v, rep->skipped[plot], sizeof rep->skipped[plot]);
    if (rc < 0) return rc;
    if (rc == 0) {
        remove_stale(c, plot);
        return 0;
    }
    if (v.overflow) return mx_error(MX_EINVAL, "gnuplot variables for %s too long", mx_plot_names[plot]);
    static const char *const terms[2] = {"png", "svg"};
    for (int t = 0; t < 2; t++)
        MX_TRY(mx_plot_run_gnuplot(c, plot, terms[t], v.text, rep->files[plot][t], sizeof rep->files[plot][t]));
    rep->drawn[plot] = 1;
    rep->ndrawn++;
    return 0;
}

int mx_plot_results_report(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose,
                           mx_plot_report *rep)
{
    mx_plot_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    if (!res || !outdir || !*outdir || !scripts_dir)
        return mx_error(MX_EINVAL, "plotting needs results, an output directory and the scripts directory");
    plot_ctx *c = malloc(sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = setup(c, res, outdir, scripts_dir, verbose);
    if (rc == 0) rc = mx_plot_open_replot(c);
    for (int p = 0; rc == 0 && p < MX_NPLOTS; p++) {
        rc = draw(c, p, rep);
        if (rc == 0 && verbose && rep->drawn[p])
            fprintf(stderr, "mxbench plot: wrote %s and %s\n", rep->files[p][0], rep->files[p][1]);
    }
    if (rc == 0) rc = mx_plot_write_counters(c);
    if (c->replot && fclose(c->replot) != 0 && rc == 0) rc = mx_error(MX_EIO, "error writing %s/replot.sh", c->datadir);
    mx_plot_series_free(&c->set);
    free(c->view.runs); /* the copies only: their series belong to res */
    free(c);
    return rc < 0 ? rc : rep->ndrawn;
}

int mx_plot_results(const mx_results *res, const char *outdir, const char *scripts_dir, int verbose)
{
    mx_plot_report *rep = malloc(sizeof *rep);
    if (!rep) return mx_error(MX_ENOMEM, "out of memory while plotting");
    int rc = mx_plot_results_report(res, outdir, scripts_dir, verbose, rep);
    for (int p = 0; rc >= 0 && p < MX_NPLOTS; p++)
        if (!rep->drawn[p] && rep->skipped[p][0])
            fprintf(stderr, "mxbench plot: skipped %s: %s\n", mx_plot_names[p], rep->skipped[p]);
    free(rep);
    return rc;
}

const char *mx_plot_default_scripts_dir(void)
{
    const char *env = getenv("MXBENCH_PLOTS_DIR");
    return env && *env ? env : MXBENCH_PLOTS_DIR;
}
