/* Tests of the plot driver: a small study written to and loaded from an HDF5 results file
 * gives every figure as a valid PNG and SVG (the staleness figure where dist_async runs
 * measured it, each kvstore mode its own series); edge cases (one run, no ok run, no gnuplot,
 * a broken script) give a valid figure or a clear error. Exits 77 where gnuplot is absent. */
#include "check.h"
#include "base/status.h"
#include "plots/plot.h"
#include "results/results.h"
#include "plot_fixture.h"

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIT(p) (1u << (p))
/* The figures a study has nothing for (staleness without dist_async runs, the bubble without
 * model runs, bytes moved with one device), which are left out without a message. */
static int popcount(unsigned x) { return __builtin_popcount(x); }

/* Every figure of rep is a PNG with the PNG signature and an SVG holding "<svg"; every one is
 * drawn but those in absent, which are neither drawn, nor explained, nor left on disk, and
 * those in told, which are not drawn and say why (the ranking of a study with nothing to
 * compare). */
static void check_figures_told(const char *outdir, const mx_plot_report *rep, unsigned absent, unsigned told)
{
    for (int p = 0; p < MX_NPLOTS; p++) {
        if (!(told & BIT(p))) continue;
        char png[4300];
        snprintf(png, sizeof png, "%s/%s.png", outdir, mx_plot_names[p]);
        CHECK(!rep->drawn[p] && rep->skipped[p][0] && !file_exists(png), "%s: drawn %d, skip message '%s'",
              mx_plot_names[p], rep->drawn[p], rep->skipped[p]);
    }
    absent |= told;
    const int expect_drawn = MX_NPLOTS - popcount(absent);
    CHECK(rep->ndrawn == expect_drawn, "%d figures drawn in %s, expected %d", rep->ndrawn, outdir, expect_drawn);
    for (int p = 0; p < MX_NPLOTS; p++) {
        if (!(absent & BIT(p)) || (told & BIT(p))) continue;
        char png[4300];
        snprintf(png, sizeof png, "%s/%s.png", outdir, mx_plot_names[p]);
        CHECK(!rep->drawn[p] && rep->skipped[p][0] == '\0' && !file_exists(png),
              "%s: drawn %d, skip message '%s' (expected none: the study has nothing for it)", mx_plot_names[p],
              rep->drawn[p], rep->skipped[p]);
    }
    for (int p = 0; p < MX_NPLOTS; p++) {
        if (absent & BIT(p)) continue;
        CHECK(rep->drawn[p], "%s not drawn: %s", mx_plot_names[p], rep->skipped[p]);
        if (!rep->drawn[p]) continue;
        char png[4200], svg[4200];
        snprintf(png, sizeof png, "%s/%s.png", outdir, mx_plot_names[p]);
        snprintf(svg, sizeof svg, "%s/%s.svg", outdir, mx_plot_names[p]);
        CHECK(strstr(rep->files[p][0], "/") && strcmp(strrchr(rep->files[p][0], '/'), strrchr(png, '/')) == 0,
              "report names '%s' for %s", rep->files[p][0], png);
        CHECK(is_png(png), "%s is not a PNG", png);
        char *text = slurp(svg);
        CHECK(text && strstr(text, "<svg"), "%s is not an SVG", svg);
        free(text);
    }
}

static void check_figures(const char *outdir, const mx_plot_report *rep, unsigned absent)
{
    check_figures_told(outdir, rep, absent, 0);
}

static int build_study_file(const char *path)
{
    mx_results_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.cpu_model, sizeof meta.cpu_model, "Test CPU @ 3.0GHz");
    MX_TRY(mx_results_create(path, &meta, 1));
    int idx = 0;
    static const char *const strategies[2] = {"data", "model"}, *const rules[2] = {"linear", "none"};
    static const int gpus[3] = {1, 2, 4};
    for (int s = 0; s < 2; s++)
        for (int g = 0; g < 3; g++) {
            mx_run_record r;
            make_run(&r, idx++, strategies[s], rules[s], gpus[g]);
            int rc = mx_results_append(path, &r);
            mx_record_free(&r);
            MX_TRY(rc);
        }
    /* A failed run must not reach any figure: it would add an 8-device tic and a bar. */
    mx_run_record bad;
    make_run(&bad, idx, "data", "linear", 8);
    snprintf(bad.status, sizeof bad.status, "failed");
    snprintf(bad.reason, sizeof bad.reason, "exit status 1");
    int rc = mx_results_append(path, &bad);
    mx_record_free(&bad);
    return rc;
}

static void test_study(const char *dir, mx_plot_report *rep)
{
    char h5[4200], outdir[4200], path[4300];
    snprintf(h5, sizeof h5, "%s/study.h5", dir);
    snprintf(outdir, sizeof outdir, "%s/plots", dir);
    int rc = build_study_file(h5);
    CHECK(rc == 0, "writing %s: %s", h5, mx_last_error());
    mx_results res;
    memset(&res, 0, sizeof res);
    rc = mx_results_load(h5, &res);
    CHECK(rc == 0 && res.nruns == 7, "loading %s: %s (%d runs)", h5, mx_last_error(), res.nruns);
    if (rc != 0) return;
    rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    /* nothing compressed and no AMP: no compression or loss-scale figure */
    CHECK(rc == MX_NPLOTS - 3, "mx_plot_results_report returned %d: %s", rc, mx_last_error());
    check_figures(outdir, rep, BIT(MX_PLOT_STALENESS) | BIT(MX_PLOT_COMPRESSION) | BIT(MX_PLOT_LOSS_SCALE));

    snprintf(path, sizeof path, "%s/data/breakdown.dat", outdir);
    CHECK(count_lines(path, "\"") == 6, "%s: %d bars, expected the 6 ok runs", path, count_lines(path, "\""));
    snprintf(path, sizeof path, "%s/data/throughput.dat", outdir);
    char *text = slurp(path);
    CHECK(text && strstr(text, "\"data") && strstr(text, "\"model") && !strstr(text, "\n8 "),
          "%s: expected one series per strategy and no failed 8-device run", path);
    free(text);
    snprintf(path, sizeof path, "%s/data/accuracy.dat", outdir);
    text = slurp(path);
    /* a line per series (data with linear lr scaling, model at the default none), each with
     * its own points against the global batch, which grows with the devices */
    CHECK(text && count_lines(path, "\"") == 2 && strstr(text, "lr scaling linear\"\n64 ") &&
              strstr(text, "\"model-parallel, m=4, gpipe\"\n64 ") && count_lines(path, "256 ") == 2,
          "%s: expected one line per series against the global batch:\n%s", path, text ? text : "");
    free(text);
    /* the pipeline's figure has the model series only, measured above theory as made */
    snprintf(path, sizeof path, "%s/data/bubble.dat", outdir);
    text = slurp(path);
    CHECK(text && strstr(text, "\"model") && !strstr(text, "\"data") && strstr(text, "\n2 0.22 0.2 4\n"),
          "%s: expected the model series with its 2-stage bubble:\n%s", path, text ? text : "");
    free(text);
    snprintf(path, sizeof path, "%s/data/memory.dat", outdir);
    CHECK(count_lines(path, "\"") == 2, "%s: expected a line per strategy", path);
    snprintf(path, sizeof path, "%s/data/replot.sh", outdir);
    CHECK(count_lines(path, "gnuplot ") == 2 * (MX_NPLOTS - 3),
          "%s: expected one gnuplot command per figure and format", path);
    mx_results_free(&res);
}

/* One device count and one series: every figure is still drawn (a single point). */
static void test_single_run(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    memset(&res, 0, sizeof res);
    res.schema_version = MX_RESULTS_SCHEMA_VERSION;
    res.nruns = 1;
    res.runs = calloc(1, sizeof *res.runs);
    make_run(&res.runs[0], 0, "data", "none", 1);
    mx_records_derive_scaling(res.runs, 1);
    char outdir[4200];
    snprintf(outdir, sizeof outdir, "%s/single", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    const unsigned absent = BIT(MX_PLOT_STALENESS) | BIT(MX_PLOT_MOVED) | BIT(MX_PLOT_BUBBLE) |
                            BIT(MX_PLOT_COMPRESSION) | BIT(MX_PLOT_LOSS_SCALE);
    /* one configuration: nothing to rank, and the ranking says so */
    CHECK(rc == MX_NPLOTS - popcount(absent) - 1, "single run: returned %d: %s", rc, mx_last_error());
    check_figures_told(outdir, rep, absent, BIT(MX_PLOT_RANKING));
    CHECK(strstr(rep->skipped[MX_PLOT_RANKING], "two ranked"), "ranking skipped for '%s'",
          rep->skipped[MX_PLOT_RANKING]);
    mx_results_free(&res);
}

/* A study of the dist_* kvstores as the sweep plans them: one device without kvstore, then
 * dist_sync on 1, 2 and 4 devices and dist_async on 2 and 4 (a worker process per device, as
 * many servers); the dist_async runs have staleness figures. Each kvstore mode is a series of
 * its own; the one-device run without kvstore starts the dist_async one, while dist_sync has
 * its own one-worker run. The staleness figure has the dist_async series only. */
static void test_dist(const char *dir, mx_plot_report *rep)
{
    static const char *const kv[2] = {"dist_sync", "dist_async"};
    static const int gpus[3] = {1, 2, 4};
    mx_results res;
    memset(&res, 0, sizeof res);
    res.schema_version = MX_RESULTS_SCHEMA_VERSION;
    res.runs = calloc(6, sizeof *res.runs);
    make_run(&res.runs[res.nruns++], 0, "data", "none", 1);
    snprintf(res.runs[0].kvstore, sizeof res.runs[0].kvstore, "none");
    for (int k = 0; k < 2; k++)
        for (int g = k; g < 3; g++) {
            mx_run_record *r = &res.runs[res.nruns];
            make_run(r, res.nruns++, "data", "none", gpus[g]);
            snprintf(r->kvstore, sizeof r->kvstore, "%s", kv[k]);
            r->workers = r->servers = gpus[g];
            if (k == 1) {
                r->metrics[MX_COUNTER_STALENESS_MEAN] = 0.5 * gpus[g];
                r->metrics[MX_COUNTER_STALENESS_P50] = gpus[g] / 2;
                r->metrics[MX_COUNTER_STALENESS_P99] = 2 * gpus[g];
                r->metrics[MX_COUNTER_STALENESS_MAX] = 3 * gpus[g];
            }
        }
    mx_records_derive_scaling(res.runs, res.nruns);
    /* dist_sync on 2 devices against its own one worker; dist_async against no kvstore */
    CHECK(res.runs[2].speedup == res.runs[2].throughput / res.runs[1].throughput &&
              res.runs[4].speedup == res.runs[4].throughput / res.runs[0].throughput && res.runs[1].speedup == 1,
          "speedups %g %g %g", res.runs[1].speedup, res.runs[2].speedup, res.runs[4].speedup);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/dist", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc == MX_NPLOTS - 3, "dist study: returned %d: %s", rc, mx_last_error());
    check_figures(outdir, rep, BIT(MX_PLOT_BUBBLE) | BIT(MX_PLOT_COMPRESSION) | BIT(MX_PLOT_LOSS_SCALE));
    snprintf(path, sizeof path, "%s/data/staleness.dat", outdir);
    char *text = slurp(path);
    CHECK(text && strstr(text, "\"kv dist_async\"") && !strstr(text, "dist_sync") &&
              strstr(text, "\n4 2 2 8 12\n"),
          "%s: expected the dist_async series only, with its figures at 4 devices:\n%s", path, text ? text : "");
    free(text);
    snprintf(path, sizeof path, "%s/data/throughput.dat", outdir);
    text = slurp(path);
    /* two series, each from one device (rows sorted by device count), one point per count */
    const char *sync = text ? strstr(text, "\"kv dist_sync\"\n") : NULL;
    const char *async = text ? strstr(text, "\"kv dist_async\"\n") : NULL;
    CHECK(sync && async && strncmp(strchr(sync, '\n'), "\n1 ", 3) == 0 &&
              strncmp(strchr(async, '\n'), "\n1 ", 3) == 0 && count_lines(path, "1 ") == 2 && !strstr(text, "kv none"),
          "%s: expected a series per kvstore mode, each from the one-device run:\n%s", path, text ? text : "");
    free(text);

    /* dist_async runs without staleness figures: skipped, and said why */
    for (int i = 0; i < res.nruns; i++)
        for (int k = MX_COUNTER_STALENESS_MEAN; k <= MX_COUNTER_STALENESS_MAX; k++) res.runs[i].metrics[k] = NAN;
    rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    snprintf(path, sizeof path, "%s/staleness.png", outdir);
    CHECK(rc == MX_NPLOTS - 4 && !rep->drawn[MX_PLOT_STALENESS] &&
              strstr(rep->skipped[MX_PLOT_STALENESS], "dist_async") && !file_exists(path),
          "dist_async without staleness: returned %d, skip message '%s', stale figure %d", rc,
          rep->skipped[MX_PLOT_STALENESS], file_exists(path));
    mx_results_free(&res);
}

/* A study of compressors: one device (no kvstore, nothing on the wire), then 2 devices with
 * none, fp16 and 2bit. The compression figure has a bar and a point for each run with a
 * kvstore, labelled by its compressor, and the one-device run is left out. */
static void test_compression(const char *dir, mx_plot_report *rep)
{
    static const char *const gc[3] = {"none", "fp16", "2bit"};
    static const double ratio[3] = {1, 0.5, 0.0625};
    mx_results res;
    memset(&res, 0, sizeof res);
    res.schema_version = MX_RESULTS_SCHEMA_VERSION;
    res.runs = calloc(4, sizeof *res.runs);
    make_run(&res.runs[res.nruns++], 0, "data", "none", 1);
    snprintf(res.runs[0].kvstore, sizeof res.runs[0].kvstore, "none");
    for (int i = 0; i < 3; i++) {
        mx_run_record *r = &res.runs[res.nruns];
        make_run(r, res.nruns++, "data", "none", 2);
        snprintf(r->compression, sizeof r->compression, "%s", gc[i]);
        r->metrics[MX_COUNTER_WIRE_BYTES] = 1.7e6 * ratio[i];
        r->metrics[MX_COUNTER_WIRE_RATIO] = ratio[i];
    }
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/gc", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_COMPRESSION], "compression study: returned %d (%s), figure drawn %d", rc,
          mx_last_error(), rep->drawn[MX_PLOT_COMPRESSION]);
    snprintf(path, sizeof path, "%s/data/compression.dat", outdir);
    char *text = slurp(path);
    CHECK(text && count_lines(path, "0 \"") + count_lines(path, "1 \"") + count_lines(path, "2 \"") == 3 &&
              strstr(text, "fp16") && strstr(text, "2bit") && strstr(text, " 0.0625 ") && !strstr(text, "3 \""),
          "%s: expected the three 2-device runs, labelled by compressor:\n%s", path, text ? text : "");
    free(text);
    snprintf(path, sizeof path, "%s/compression.png", outdir);
    CHECK(file_exists(path), "%s missing", path);
    mx_results_free(&res);
}

/* Two fp16 AMP runs, one with a skipped step (the scale halves after it), and a bf16 run
 * (no series): loss_scale.dat has a block per fp16 run, the skip marked at its step. */
static void test_loss_scale(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    memset(&res, 0, sizeof res);
    res.schema_version = MX_RESULTS_SCHEMA_VERSION;
    res.runs = calloc(3, sizeof *res.runs);
    static const char *const amp[3] = {"fp16", "fp16", "bf16"};
    for (int i = 0; i < 3; i++) {
        mx_run_record *r = &res.runs[res.nruns];
        make_run(r, res.nruns++, "data", "none", i + 1);
        snprintf(r->amp, sizeof r->amp, "%s", amp[i]);
        if (i == 2 || r->nloss < 4) continue;
        r->loss_scale = malloc(sizeof(float) * (size_t)r->nloss);
        for (int k = 0; k < r->nloss; k++) r->loss_scale[k] = i == 1 && k > 2 ? 32768.0f : 65536.0f;
    }
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/ls", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_LOSS_SCALE], "loss-scale study: returned %d (%s), drawn %d", rc,
          mx_last_error(), rep->drawn[MX_PLOT_LOSS_SCALE]);
    snprintf(path, sizeof path, "%s/data/loss_scale.dat", outdir);
    char *text = slurp(path);
    CHECK(text && count_lines(path, "\"") == 2 && strstr(text, "\n3 65536 65536\n") && strstr(text, "\n4 32768 NaN\n"),
          "%s: expected two fp16 blocks, the skip at step 3:\n%s", path, text ? text : "");
    free(text);
    snprintf(path, sizeof path, "%s/loss_scale.png", outdir);
    CHECK(file_exists(path), "%s missing", path);
    mx_results_free(&res);
}

/* No ok run: nothing drawn, no error, and the figures of an earlier study in the same
 * directory are gone rather than passing for this one's. */
static void test_no_ok_runs(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    memset(&res, 0, sizeof res);
    res.nruns = 1;
    res.runs = calloc(1, sizeof *res.runs);
    make_run(&res.runs[0], 0, "data", "none", 2);
    snprintf(res.runs[0].status, sizeof res.runs[0].status, "skipped");
    char outdir[4200], png[4300];
    snprintf(outdir, sizeof outdir, "%s/single", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc == 0 && rep->ndrawn == 0, "no ok runs: returned %d (%s), %d drawn", rc, mx_last_error(), rep->ndrawn);
    CHECK(strstr(rep->skipped[MX_PLOT_LOSS], "no ok run"), "skip reason: '%s'", rep->skipped[MX_PLOT_LOSS]);
    snprintf(png, sizeof png, "%s/throughput.png", outdir);
    CHECK(!file_exists(png), "stale %s left behind", png);
    mx_results_free(&res);
}

static void test_errors(const char *dir, const mx_results *res)
{
    char outdir[4200], scripts[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/err", dir);
    int rc = mx_plot_results(res, outdir, "/nonexistent/plots", 0);
    CHECK(rc == MX_EIO && strstr(mx_last_error(), "/nonexistent/plots"), "bad scripts dir: %d %s", rc, mx_last_error());

    /* A script with an error: gnuplot's exit status must be seen and its message passed on. */
    snprintf(scripts, sizeof scripts, "%s/badscripts", dir);
    mkdir(scripts, 0755);
    for (int p = 0; p < MX_NPLOTS; p++) {
        snprintf(path, sizeof path, "%s/%s.gp", scripts, mx_plot_names[p]);
        FILE *f = fopen(path, "w");
        if (f) fputs("plot no_such_function_xyz(x)\n", f), fclose(f);
    }
    rc = mx_plot_results(res, outdir, scripts, 0);
    CHECK(rc == MX_ERUNTIME && strstr(mx_last_error(), "no_such_function_xyz"), "broken script: %d %s", rc,
          mx_last_error());

    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("PATH", "/nonexistent", 1);
    rc = mx_plot_results(res, outdir, mx_plot_default_scripts_dir(), 0);
    CHECK(rc == MX_EUNSUPPORTED && strstr(mx_last_error(), "gnuplot-nox"), "no gnuplot: %d %s", rc, mx_last_error());
    if (saved) setenv("PATH", saved, 1), free(saved);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

int main(void)
{
    char dir[] = "/tmp/test_plot.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    mx_plot_report *rep = calloc(1, sizeof *rep);
    mx_results probe;
    memset(&probe, 0, sizeof probe);
    probe.runs = calloc(1, sizeof *probe.runs);
    probe.nruns = 1;
    make_run(&probe.runs[0], 0, "data", "none", 1);
    char outdir[4200];
    snprintf(outdir, sizeof outdir, "%s/probe", dir);
    if (mx_plot_results_report(&probe, outdir, mx_plot_default_scripts_dir(), 0, rep) == MX_EUNSUPPORTED) {
        printf("test_plot: skipped: %s\n", mx_last_error());
        mx_results_free(&probe);
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return CHECK_SKIP;
    }

    test_study(dir, rep);
    test_single_run(dir, rep);
    test_dist(dir, rep);
    test_no_ok_runs(dir, rep);
    test_compression(dir, rep);
    test_loss_scale(dir, rep);
    test_errors(dir, &probe);
    mx_results_free(&probe);
    free(rep);

    /* MXBENCH_TEST_KEEP=1 keeps the figures for a look. */
    const char *keep = getenv("MXBENCH_TEST_KEEP");
    if (keep && *keep)
        printf("test_plot: figures kept in %s\n", dir);
    else
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_summary("test_plot");
}
