/* Internal to the plot driver (plot.h): what its files share. plot_series.c groups the ok
 * runs into scaling series and names them; plot_data.c writes one gnuplot data file per
 * figure; plot_gnuplot.c runs the scripts; plot.c sets up and draws. */
#ifndef MX_PLOT_INTERNAL_H
#define MX_PLOT_INTERNAL_H

#include "plot.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define LABEL_MAX 200
#define KEY_MAX 2048
#define VARS_MAX 16384

/* ---- ok runs grouped into scaling series ---- */

typedef struct {
    int nuniq;                  /* ok runs, each once, in file order (per-run plots) */
    const mx_run_record **uniq;
    int n;                      /* series memberships: a one-device run belongs to several */
    const mx_run_record **runs; /* grouped by series (first-seen order), each sorted by gpus */
    int nseries;
    int *start;                 /* series s is runs[start[s] .. start[s + 1]) */
} run_set;

/* Groups the ok runs of res into series: runs with one series key and matching kvstores
 * (mx_record_exchange_matches); a one-device run starts the series of every kvstore it shares
 * a key with, unless the series has a run of its own on one device. */
int mx_plot_series_build(run_set *s, const mx_results *res);
void mx_plot_series_free(run_set *s);

/* ---- labels: a run or series named by the configuration fields that vary in the plot */
enum {
    F_WORKLOAD, F_DATASET, F_DEVICE, F_STRATEGY, F_KVSTORE, F_SERVERS, F_MICRO, F_SCHEDULE, F_PARTITION,
    F_COMPRESSION, F_AMP, F_BATCH, F_LR, F_LRSCALING, F_LRSCHEDULE, F_MOMENTUM, F_WD, F_WARMUP, F_LENGTH, F_THREADS,
    F_REPEATS, F_SEED, F_WORKERS, F_GPUS, F_NFIELDS
};
/* Bit f set when field f differs among runs[0..n) (the device, worker and server counts,
 * which vary along a series, only with_gpus); the strategy when nothing does. */
unsigned mx_plot_varying_fields(const mx_run_record *const *runs, int n, int with_gpus);
/* Labels for items whose representative runs are reps[0..n), made unique. */
void mx_plot_unique_labels(const mx_run_record *const *reps, int n, int with_gpus, char (*labels)[LABEL_MAX]);
/* Unique labels of the series of s (malloc'd, nseries entries), or NULL (out of memory). */
char (*mx_plot_series_labels(const run_set *s))[LABEL_MAX];

/* ---- the plotting context ---- */

typedef struct {
    const mx_results *res; /* &view in mx_plot_results_report */
    mx_results view;       /* the caller's runs, copied shallowly, their scaling derived again */
    run_set set;
    char outdir[PATH_MAX];
    char datadir[PATH_MAX + 8];
    char scripts[PATH_MAX];
    char gnuplot[PATH_MAX];
    char logpath[PATH_MAX + 32];
    char title[512];
    const char *devname;
    int verbose;
    FILE *replot; /* data/replot.sh: every gnuplot command, for redrawing by hand */
} plot_ctx;

/* gnuplot variable assignments passed with -e; values are quoted as gnuplot strings. */
typedef struct {
    char text[VARS_MAX];
    size_t len;
    int overflow;
} gp_vars;

/* ---- colour families (plot_family.c): a run's strategy, and for data parallelism its
 * kvstore, fixes its colour in every figure; series are sorted by family (plot_series.c) */
enum {
    MX_FAM_NONE, /* data-parallel on one device without a kvstore */
    MX_FAM_LOCAL,
    MX_FAM_DEVICE,
    MX_FAM_DIST_SYNC,
    MX_FAM_DIST_DEVICE_SYNC,
    MX_FAM_DIST_ASYNC,
    MX_FAM_DIST_ALLREDUCE,
    MX_FAM_MODEL,
    MX_FAM_LAYER,
    MX_FAM_OTHER, /* a strategy or kvstore outside the tables (a newer file) */
    MX_PLOT_NFAMILIES
};
int mx_plot_family(const mx_run_record *r);
const char *mx_plot_family_rgb(int fam);  /* "0072B2": hex, no '#' */
const char *mx_plot_family_name(int fam); /* "data-parallel, kv device" */
/* lcolors and lvariants (style.gp) for the lines whose representative runs are reps[0..n),
 * in drawing order. */
void mx_plot_family_vars(gp_vars *v, const mx_run_record *const *reps, int n);
/* npanels (and pfirst, plast, ptitle<p>, pcols, prows) and the canvas for a scaling figure of
 * the lines reps[0..n) sorted by family: a panel per family when one key would be too long;
 * extra_keys entries besides the lines, labels of at most maxlabel characters. */
void mx_plot_panel_vars(gp_vars *v, const mx_run_record *const *reps, int n, int extra_keys, size_t maxlabel);

/* ---- gnuplot variables and runs (plot_gnuplot.c) */
void mx_vars_add(gp_vars *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mx_vars_quoted(gp_vars *v, const char *value);
void mx_vars_str(gp_vars *v, const char *name, const char *value);
void mx_vars_int(gp_vars *v, const char *name, long value);
/* Where gnuplot is (PATH), or MX_EUNSUPPORTED naming the package to install. */
int mx_plot_find_gnuplot(char *out, size_t n);
/* Opens data/replot.sh, the transcript of every gnuplot command. */
int mx_plot_open_replot(plot_ctx *c);
/* Zeroes c and readies a plot call: gnuplot found, the scripts directory resolved and each
 * of scripts[] ("NAME" for NAME.gp) readable, outdir/data made, an empty gnuplot log. */
int mx_plot_setup_dirs(plot_ctx *c, const char *outdir, const char *scripts_dir, const char *const *scripts,
                       int nscripts, int verbose);
/* Runs plots/<name>.gp for one terminal with the figure's variables; outfile receives the
 * figure's path. */
int mx_plot_run_gnuplot(plot_ctx *c, int plot, const char *term, const char *vars, char *outfile, size_t noutfile);
/* The same for any script: plots/<name>.gp over data/<datafile> into outdir/<name>.<term>. */
int mx_plot_run_script(plot_ctx *c, const char *name, const char *datafile, const char *term, const char *vars,
                    char *outfile, size_t noutfile);

/* ---- data files (plot_data.c) */
/* Writes one series-blocked data file (name) of the ok runs that keep() accepts, row()
 * formatting each; sets nseries, the x tics (gpus), the fewest devices (gbase) and the canvas
 * for the script, whose key has extra_keys entries besides the series (the ideal line, the
 * marks of noisy and oversubscribed runs), and each line's colour (mx_plot_family_vars).
 * panels: the script draws a panel per family when the key would be too long
 * (mx_plot_panel_vars). 1 written, 0 no run kept, or a negative MX_E*. */
int mx_plot_write_series_file(plot_ctx *c, gp_vars *v, const char *name, const char *what, const char *columns,
                           int (*keep)(const mx_run_record *), void (*row)(FILE *, const mx_run_record *),
                           int extra_keys, int panels);
/* data/<name> opened for writing with its header (what it holds, the study), and closed
 * with a check for write errors (0 or MX_EIO); the canvas size and key columns for nlines
 * key entries of at most maxlabel characters (the key is below the plot). */
FILE *mx_plot_open_data(plot_ctx *c, const char *name, const char *what);
int mx_plot_close_data(plot_ctx *c, FILE *f, const char *name);
void mx_plot_canvas_vars(gp_vars *v, int nlines, size_t maxlabel);
/* The longest of labels[0..n), in characters. */
size_t mx_plot_max_label(const char (*labels)[LABEL_MAX], int n);
/* The header lines of a file of blocks (one per line of the plot, opened by its title). */
extern const char plot_block_doc[];
/* Space-separated ascending distinct values of x[0..n), for the x tics of integer axes. */
void mx_plot_distinct_ints(const int *x, int n, char *buf, size_t size);
/* 1 when the run had more devices x threads than its host's cores (recorded, or from the
 * cores it saw): its timings are drawn apart, crossed out, as noisy ones are drawn hollow. */
int mx_plot_oversubscribed(const mx_run_record *r);
/* data/accuracy.dat (plot_accuracy.c): final test accuracy per series, a data writer */
int mx_plot_write_accuracy(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* " %.9g", or " NaN" for a value that is not finite */
void mx_plot_put_num(FILE *f, double x);
/* data/staleness.dat (plot_dist.c): the staleness figures of dist_async runs per series
 * against device count; a data writer as mx_plot_write_data */
int mx_plot_write_staleness(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* plot_parallel.c: memory per device, bytes moved, the pipeline's bubble */
int mx_plot_write_memory(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
int mx_plot_write_moved(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
int mx_plot_write_bubble(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* plot_compress.c: bytes on the wire and accuracy of each compression and precision */
int mx_plot_write_compression(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* plot_compress.c: fp16 AMP's loss scale per step, the skipped steps marked */
int mx_plot_write_loss_scale(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* plot_rank.c: the answer's configurations ranked per workload and device count */
int mx_plot_write_ranking(plot_ctx *c, gp_vars *v, char *why, size_t nwhy);
/* data/<file> of a figure */
const char *mx_plot_data_file(int plot);
/* Writes the figure's data file and its variables: 1 written, 0 nothing to plot (why says
 * so), or a negative MX_E*. */
int mx_plot_write_data(plot_ctx *c, int plot, gp_vars *v, char *why, size_t nwhy);
/* data/counters.dat: every counter's figure (results/metrics.def) per series against the
 * device count, for the figures of the coming strategies and by hand; written when some ok
 * run has one, removed otherwise. 0 or a negative MX_E*. */
int mx_plot_write_counters(plot_ctx *c);

#endif
