/* Tests that the plot driver draws what ran: every ok run in the series of every figure it
 * belongs to (a compressor at its defaults included), speedup only against one device, the
 * breakdown's step column where breakdown.gp reads it, accuracy per configuration,
 * oversubscribed runs marked, and no half-written figure when gnuplot fails. Exits 77 where
 * gnuplot is absent. */
#include "check.h"
#include "base/status.h"
#include "plots/plot.h"
#include "plot_fixture.h"

#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

/* res of n runs from make_run, their scaling derived as a results file would hold it */
static void study(mx_results *res, int n)
{
    memset(res, 0, sizeof *res);
    res->schema_version = MX_RESULTS_SCHEMA_VERSION;
    res->runs = calloc((size_t)n, sizeof *res->runs);
}

static mx_run_record *add(mx_results *res, const char *strategy, int gpus, const char *kvstore, const char *gc)
{
    mx_run_record *r = &res->runs[res->nruns];
    make_run(r, res->nruns++, strategy, "none", gpus);
    snprintf(r->kvstore, sizeof r->kvstore, "%s", gpus == 1 && strcmp(strategy, "data") == 0 ? "none" : kvstore);
    snprintf(r->compression, sizeof r->compression, "%s", gc);
    return r;
}

/* The value of a "name=N" gnuplot variable on the line of replot.sh that draws script.png,
 * or -1. */
static long replot_var(const char *outdir, const char *script, const char *name)
{
    char path[4300], needle[64], png[64];
    snprintf(path, sizeof path, "%s/data/replot.sh", outdir);
    snprintf(needle, sizeof needle, "; %s=", name);
    snprintf(png, sizeof png, "/%s.gp'", script);
    char *text = slurp(path);
    long v = -1;
    for (char *line = text ? strtok(text, "\n") : NULL; line && v < 0; line = strtok(NULL, "\n")) {
        const char *at = strstr(line, png) ? strstr(line, needle) : NULL;
        if (at) v = strtol(at + strlen(needle), NULL, 10);
    }
    free(text);
    return v;
}

/* Points (data rows) of data/<file>: lines that start with a digit. */
static int points(const char *outdir, const char *file)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/%s", outdir, file);
    int n = 0;
    for (char c = '0'; c <= '9'; c++) n += count_lines(path, (char[]){c, '\0'});
    return n;
}

/* A compressor at its defaults (fp16 has no setting) is a series of its own beside none:
 * one device, then 2 devices of none and of fp16 give two series of two points each, and
 * the fp16 row is in every figure of device counts. */
static void test_default_compressor(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 3);
    add(&res, "data", 1, "none", "none");
    add(&res, "data", 2, "device", "none");
    mx_run_record *fp16 = add(&res, "data", 2, "device", "fp16");
    fp16->throughput *= 0.5; /* told apart from the uncompressed row */
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], path[4300], want[128];
    snprintf(outdir, sizeof outdir, "%s/fp16", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0, "fp16 study: %d %s", rc, mx_last_error());
    snprintf(path, sizeof path, "%s/data/throughput.dat", outdir);
    char *text = slurp(path);
    snprintf(want, sizeof want, "\n2 %.9g ", fp16->throughput);
    CHECK(text && count_lines(path, "\"") == 2 && strstr(text, "\"compr fp16\"\n1 ") && strstr(text, want),
          "%s: expected a series each for none and fp16, from one device:\n%s", path, text ? text : "");
    free(text);
    static const char *const files[] = {"throughput.dat", "scaling.dat", "memory.dat"};
    for (int i = 0; i < 3; i++)
        CHECK(points(outdir, files[i]) == 4, "%s: %d points, expected 4 (the one-device run in each series)",
              files[i], points(outdir, files[i]));
    CHECK(points(outdir, "moved.dat") == 2, "moved.dat: %d points, expected the two 2-device runs",
          points(outdir, "moved.dat"));
    mx_results_free(&res);
}

/* A series of 2-device rows alone has no speedup: not drawn, while the series with a
 * one-device run is. */
static void test_no_reference(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 3);
    add(&res, "data", 1, "none", "none");
    add(&res, "data", 2, "device", "none");
    mx_run_record *lone = add(&res, "data", 2, "device", "none");
    snprintf(lone->amp, sizeof lone->amp, "bf16"); /* no one-device bf16 run */
    /* as a file written before the rule holds it: plot derives the figures again */
    mx_records_derive_scaling(res.runs, res.nruns);
    lone->speedup = lone->efficiency = 1;
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/noref", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_SPEEDUP], "no-reference study: %d %s", rc, mx_last_error());
    snprintf(path, sizeof path, "%s/data/scaling.dat", outdir);
    char *text = slurp(path);
    CHECK(text && count_lines(path, "\"") == 1 && !strstr(text, "bf16") && points(outdir, "scaling.dat") == 2,
          "%s: expected only the series with a one-device run:\n%s", path, text ? text : "");
    free(text);
    CHECK(points(outdir, "throughput.dat") == 3, "throughput.dat: %d points, expected all 3 runs",
          points(outdir, "throughput.dat"));
    CHECK(replot_var(outdir, "speedup", "nseries") == 1, "speedup.gp drew %ld series",
          replot_var(outdir, "speedup", "nseries"));
    mx_results_free(&res);
}

/* breakdown.gp reads the whole step from the column plot names (stepcol): the header says
 * step_s there, and every row holds the run's median step time in it. */
static void test_breakdown_column(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 2);
    add(&res, "data", 1, "none", "none");
    add(&res, "data", 2, "device", "none");
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/breakdown", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_BREAKDOWN], "breakdown: %d %s", rc, mx_last_error());
    const long col = replot_var(outdir, "breakdown", "stepcol");
    CHECK(col > 2, "breakdown.gp gets no step column (stepcol=%ld)", col);
    snprintf(path, sizeof path, "%s/data/breakdown.dat", outdir);
    int rows = 0;
    /* the label is quoted and holds spaces: the numbers start after its closing quote */
    char *text = slurp(path);
    for (char *line = text ? strtok(text, "\n") : NULL; line && col > 2; line = strtok(NULL, "\n")) {
        const int header = strncmp(line, "# columns: ", 11) == 0;
        if (line[0] == '#' && !header) continue;
        char *p = header ? line + 11 + strlen("label") : strrchr(line, '"') + 1; /* past column 1 */
        long k = 1;
        char field[64] = "";
        while (*p && k < col) {
            while (*p == ' ') p++;
            if (++k == col) sscanf(p, "%63s", field);
            while (*p && *p != ' ') p++;
        }
        if (header) {
            CHECK(strcmp(field, "step_s") == 0, "column %ld of breakdown.dat is '%s', not step_s", col, field);
        } else {
            const mx_run_record *r = &res.runs[rows++];
            CHECK(fabs(strtod(field, NULL) - r->step_time_median) <= 1e-8 * r->step_time_median,
                  "row %d: column %ld holds %s, the step median is %.9g", rows, col, field, r->step_time_median);
        }
    }
    free(text);
    CHECK(rows == 2, "breakdown.dat: %d rows, expected 2", rows);
    mx_results_free(&res);
}

/* Runs of one global batch that differ in kvstore and compressor are lines of their own in
 * the accuracy figure, against the device count: never one point averaging them all. */
static void test_accuracy_configurations(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 4);
    static const char *const kv[3] = {"local", "device", "device"}, *const gc[3] = {"none", "none", "fp16"};
    add(&res, "data", 1, "none", "none");
    for (int i = 0; i < 3; i++) add(&res, "data", 2, kv[i], gc[i]);
    for (int i = 0; i < res.nruns; i++) { /* one global batch, as --batch-mode global runs */
        res.runs[i].global_batch = 128;
        res.runs[i].test_acc[res.runs[i].nepochs - 1] = 0.80 + 0.01 * i;
        mx_record_derive(&res.runs[i]);
    }
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/accuracy", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_ACCURACY], "accuracy study: %d %s", rc, mx_last_error());
    snprintf(path, sizeof path, "%s/data/accuracy.dat", outdir);
    char *text = slurp(path);
    CHECK(text && count_lines(path, "\"") == 3 && count_lines(path, "2 ") == 3 && count_lines(path, "1 ") == 3 &&
              strstr(text, "\n2 0.83 ") && strstr(text, "# columns: devices "),
          "%s: expected a line per configuration against the device count:\n%s", path, text ? text : "");
    free(text);
    mx_results_free(&res);
}

/* A CPU run with more devices x threads than cores (recorded, or from the cores it saw) is
 * marked in the timing figures, as a noisy one is. */
static void test_oversubscribed(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 3);
    add(&res, "data", 1, "none", "none");
    add(&res, "data", 2, "device", "none")->oversubscribed = 1;
    mx_run_record *seen = add(&res, "data", 4, "device", "none");
    seen->metrics[MX_COUNTER_HOST_CORES] = 2; /* 4 devices of one thread on 2 cores */
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/oversub", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0, "oversubscribed study: %d %s", rc, mx_last_error());
    static const char *const files[2] = {"throughput.dat", "scaling.dat"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/data/%s", outdir, files[i]);
        char *text = slurp(path);
        CHECK(text && strstr(text, " oversubscribed\n") && count_lines(path, "1 ") == 1 &&
                  strstr(strstr(text, "\n1 ") ? strstr(text, "\n1 ") : "", " 0 0\n") &&
                  strstr(strstr(text, "\n2 ") ? strstr(text, "\n2 ") : "", " 0 1\n") &&
                  strstr(strstr(text, "\n4 ") ? strstr(text, "\n4 ") : "", " 0 1\n"),
              "%s: expected the 2- and 4-device runs marked oversubscribed:\n%s", path, text ? text : "");
        free(text);
    }
    CHECK(replot_var(outdir, "throughput", "hasoversub") == 1 && replot_var(outdir, "speedup", "hasoversub") == 1,
          "the key does not explain the mark");
    mx_results_free(&res);
}

/* No figure from a gnuplot run that failed: a script that draws, then fails, leaves neither
 * the figure nor its temporary file; a run of --steps (no accuracy) with a compressor still
 * draws its compression figure. */
static void test_failed_run(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 2);
    add(&res, "data", 1, "none", "none");
    mx_run_record *r = add(&res, "data", 2, "device", "fp16");
    r->metrics[MX_COUNTER_WIRE_BYTES] = 1e6, r->metrics[MX_COUNTER_WIRE_RATIO] = 0.5;
    for (int i = 0; i < res.nruns; i++) res.runs[i].final_test_acc = NAN; /* runs of --steps */
    mx_records_derive_scaling(res.runs, res.nruns);
    char outdir[4200], scripts[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/half", dir);
    int rc = mx_plot_results_report(&res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0 && rep->drawn[MX_PLOT_COMPRESSION] && !rep->drawn[MX_PLOT_ACCURACY] &&
              strstr(rep->skipped[MX_PLOT_ACCURACY], "accuracy"),
          "steps study: %d (%s), compression drawn %d, accuracy skipped '%s'", rc, mx_last_error(),
          rep->drawn[MX_PLOT_COMPRESSION], rep->skipped[MX_PLOT_ACCURACY]);

    snprintf(scripts, sizeof scripts, "%s/halfscripts", dir);
    mkdir(scripts, 0755);
    for (int p = 0; p < MX_NPLOTS; p++) {
        snprintf(path, sizeof path, "%s/%s.gp", scripts, mx_plot_names[p]);
        FILE *f = fopen(path, "w");
        if (f)
            fputs("set terminal svg\nset output outbase.'.'.term\nplot x\nplot no_such_function_xyz(x)\n", f),
                fclose(f);
    }
    snprintf(outdir, sizeof outdir, "%s/failed", dir);
    rc = mx_plot_results(&res, outdir, scripts, 0);
    CHECK(rc == MX_ERUNTIME, "a script that fails half way: %d %s", rc, mx_last_error());
    DIR *d = opendir(outdir);
    int left = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        if (strstr(e->d_name, ".png") || strstr(e->d_name, ".svg") || strstr(e->d_name, ".tmp")) {
            fprintf(stderr, "left behind: %s/%s\n", outdir, e->d_name);
            left++;
        }
    if (d) closedir(d);
    CHECK(left == 0, "%d figures or temporary files left by a failed gnuplot run", left);
    mx_results_free(&res);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    char dir[] = "/tmp/test_plot_series.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char gnuplot[4096];
    const char *path = getenv("PATH");
    int found = 0;
    for (const char *p = path ? path : ""; *p && !found;) { /* as plot finds it */
        size_t len = strcspn(p, ":");
        snprintf(gnuplot, sizeof gnuplot, "%.*s/gnuplot", (int)len, p);
        found = access(gnuplot, X_OK) == 0;
        p += len + (p[len] == ':');
    }
    if (!found) {
        printf("test_plot_series: skipped: no gnuplot\n");
        rmdir(dir);
        return CHECK_SKIP;
    }
    mx_plot_report *rep = calloc(1, sizeof *rep);
    test_default_compressor(dir, rep);
    test_no_reference(dir, rep);
    test_breakdown_column(dir, rep);
    test_accuracy_configurations(dir, rep);
    test_oversubscribed(dir, rep);
    test_failed_run(dir, rep);
    free(rep);
    const char *keep = getenv("MXBENCH_TEST_KEEP"); /* MXBENCH_TEST_KEEP=1 keeps the figures */
    if (keep && *keep)
        printf("test_plot_series: figures kept in %s\n", dir);
    else
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_summary("test_plot_series");
}
