/* Tests of the figures that show the answer: the ranking figure lists each device count's
 * configurations fastest first with whether each reached the target and the winner marked;
 * a family (strategy, kvstore) has one colour whatever the order of the lines and in every
 * figure; a scaling study of twelve lines draws a panel per family, one of few lines a single
 * panel. Exits 77 where gnuplot is absent. */
#include "check.h"
#include "base/status.h"
#include "plots/plot.h"
#include "plot_fixture.h"

#include <ftw.h>
#include <unistd.h>

static void study(mx_results *res, int n)
{
    memset(res, 0, sizeof *res);
    res->schema_version = MX_RESULTS_SCHEMA_VERSION;
    res->runs = calloc((size_t)n, sizeof *res->runs);
}

/* A run of the fixture, slowed by factor (its step times stretched), with a final test
 * accuracy acc and a target of 0.85 when target. */
static mx_run_record *add(mx_results *res, const char *strategy, const char *kvstore, int gpus, double factor,
                          double acc, int target)
{
    mx_run_record *r = &res->runs[res->nruns];
    make_run(r, res->nruns++, strategy, "none", gpus);
    snprintf(r->kvstore, sizeof r->kvstore, "%s", kvstore);
    for (int i = 0; i < r->nsteps; i++) {
        r->step_time[i] *= factor;
        for (int p = 0; p < MX_NPHASES; p++) r->phase_time[i * MX_NPHASES + p] *= factor;
    }
    for (int e = 0; e < r->nepochs; e++) r->test_acc[e] = acc - 0.02 * (r->nepochs - 1 - e);
    r->target_acc = target ? 0.85 : 0;
    mx_record_derive(r);
    return r;
}

static int plot(mx_results *res, const char *outdir, mx_plot_report *rep)
{
    mx_records_derive_scaling(res->runs, res->nruns);
    int rc = mx_plot_results_report(res, outdir, mx_plot_default_scripts_dir(), 0, rep);
    CHECK(rc > 0, "plotting into %s: %d (%s)", outdir, rc, mx_last_error());
    return rc;
}

/* The value of gnuplot variable name on the replot.sh line that draws script.png, quotes
 * removed, into buf ("" when absent). */
static void replot_str(const char *outdir, const char *script, const char *name, char *buf, size_t n)
{
    char path[4300], needle[64], gp[64];
    snprintf(path, sizeof path, "%s/data/replot.sh", outdir);
    snprintf(needle, sizeof needle, "; %s=", name);
    snprintf(gp, sizeof gp, "/%s.gp'", script);
    buf[0] = '\0';
    char *text = slurp(path);
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        const char *at = strstr(line, gp) ? strstr(line, needle) : NULL;
        if (!at) continue;
        at += strlen(needle);
        while (*at == '\'' || *at == '\\') at++; /* a string: '\'' opens it in the shell's quoting */
        size_t len = 0;
        while (at[len] && at[len] != ';' && at[len] != '\'' && len + 1 < n) len++;
        memcpy(buf, at, len);
        buf[len] = '\0';
        break;
    }
    free(text);
}

/* Word k (from 0) of a space-separated list, into out */
static void word_of(const char *list, int k, char *out, size_t n)
{
    out[0] = '\0';
    for (int i = 0; *list; i++) {
        size_t len = strcspn(list, " ");
        if (i == k) {
            snprintf(out, n, "%.*s", (int)len, list);
            return;
        }
        list += len + (list[len] == ' ');
    }
}

/* The block (from 0) of data/<file> whose title starts with prefix, or -1 */
static int block_of(const char *outdir, const char *file, const char *prefix)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/%s", outdir, file);
    char *text = slurp(path);
    int block = -1, k = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line && block < 0; line = strtok(NULL, "\n")) {
        if (line[0] != '"') continue;
        if (strncmp(line + 1, prefix, strlen(prefix)) == 0) block = k;
        k++;
    }
    free(text);
    return block;
}

/* The colour (RRGGBB) script draws the line titled prefix... in, from its data file */
static void colour_of(const char *outdir, const char *script, const char *file, const char *prefix, char *out,
                      size_t n)
{
    char colours[1024];
    replot_str(outdir, script, "lcolors", colours, sizeof colours);
    word_of(colours, block_of(outdir, file, prefix), out, n);
}

/* Two device counts, three and four configurations at different speeds; the model and
 * layer rows miss the target. ranking.dat lists each count's bars fastest first, with the reached flag,
 * the winner the fastest that reached it, coloured by family. */
static void test_ranking(const char *dir, mx_plot_report *rep)
{
    mx_results res;
    study(&res, 8);
    /* one device: a data-parallel run without kvstore, as a sweep plans it */
    add(&res, "model", "device", 1, 0.50, 0.80, 1); /* fastest, misses the target */
    add(&res, "data", "none", 1, 0.70, 0.87, 1);    /* fastest to reach it: the winner */
    add(&res, "layer", "device", 1, 1.30, 0.70, 1);
    add(&res, "model", "device", 2, 0.50, 0.80, 1);
    add(&res, "data", "local", 2, 0.90, 0.88, 1);
    add(&res, "data", "device", 2, 0.70, 0.87, 1); /* the winner on two */
    add(&res, "layer", "device", 2, 1.30, 0.70, 1);
    char outdir[4200], path[4300];
    snprintf(outdir, sizeof outdir, "%s/rank", dir);
    if (plot(&res, outdir, rep) <= 0) return;
    CHECK(rep->drawn[MX_PLOT_RANKING], "ranking not drawn: %s", rep->skipped[MX_PLOT_RANKING]);
    snprintf(path, sizeof path, "%s/data/ranking.dat", outdir);
    char *text = slurp(path);
    CHECK(text != NULL, "%s missing", path);
    /* per heading, the bars: strategy order, reached flags, the winner, the colours */
    int heads = 0, bars = 0, order_ok = 1, winner_ok = 1, flags_ok = 1, colour_ok = 1;
    double last = INFINITY;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        int kind, reached, winner;
        long rgb;
        double y, value;
        if (sscanf(line, "%d %lf %lf %d %d %ld", &kind, &y, &value, &reached, &winner, &rgb) != 6) continue;
        if (kind == 0) { /* a device count's heading: its bars follow */
            heads += strstr(line, "\"on ") != NULL;
            last = INFINITY;
            continue;
        }
        bars++;
        order_ok &= value < last;
        last = value;
        const int model = strstr(line, "\"model") != NULL, layer = strstr(line, "\"layer") != NULL;
        const int device = strstr(line, "kvstore device") != NULL, none = strstr(line, "no kvstore") != NULL;
        flags_ok &= reached == !(model || layer);
        winner_ok &= winner == (device || none);
        colour_ok &= rgb == (model ? 0xD55E00 : layer ? 0x000000 : device ? 0x0072B2 : none ? 0x7F7F7F : 0x56B4E9);
    }
    free(text);
    CHECK(heads == 2 && bars == 7, "%s: %d headings and %d bars, expected 2 and 7", path, heads, bars);
    CHECK(order_ok, "%s: bars not fastest first within a device count", path);
    CHECK(flags_ok, "%s: model and layer rows should be marked as missing the target, the others reaching it", path);
    CHECK(winner_ok, "%s: the winner should be the device-kvstore row (fastest among those that reached)", path);
    CHECK(colour_ok, "%s: bars not in their family's colour", path);
    char target[256];
    replot_str(outdir, "ranking", "target", target, sizeof target);
    CHECK(strstr(target, "0.85") != NULL, "ranking's target rule '%s' should name 0.85", target);

    /* the family's colour: the same in the ranking, the throughput and the accuracy figures */
    char tput[16], acc[16];
    colour_of(outdir, "throughput", "throughput.dat", "data-parallel, kv device", tput, sizeof tput);
    colour_of(outdir, "accuracy", "accuracy.dat", "data-parallel, kv device", acc, sizeof acc);
    CHECK(strcmp(tput, "0072B2") == 0 && strcmp(acc, "0072B2") == 0, "kv device drawn %s (throughput), %s (accuracy)",
          tput, acc);
    mx_results_free(&res);
}

/* The same families in another order, and one more: each keeps its colour. */
static void test_colour_order(const char *dir, mx_plot_report *rep)
{
    static const char *const fams[4] = {"data-parallel, kv device", "data-parallel, kv local", "model", "layer"};
    char colours[2][4][16], outdir[2][4200];
    for (int k = 0; k < 2; k++) {
        mx_results res;
        study(&res, 12);
        for (int g = 1; g <= 2; g++) {
            if (k == 1) {
                add(&res, "data", "dist_sync", g, 1, 0.86, 0);
                add(&res, "layer", "device", g, 1, 0.86, 0);
                add(&res, "model", "device", g, 1, 0.86, 0);
            }
            add(&res, "data", k ? "local" : "device", g, 1, 0.86, 0);
            add(&res, "data", k ? "device" : "local", g, 1, 0.86, 0);
            if (k == 0) {
                add(&res, "model", "device", g, 1, 0.86, 0);
                add(&res, "layer", "device", g, 1, 0.86, 0);
            }
        }
        snprintf(outdir[k], sizeof outdir[k], "%s/colours%d", dir, k);
        if (plot(&res, outdir[k], rep) > 0)
            for (int f = 0; f < 4; f++)
                colour_of(outdir[k], "speedup", "scaling.dat", fams[f], colours[k][f], sizeof colours[k][f]);
        mx_results_free(&res);
    }
    for (int f = 0; f < 4; f++)
        CHECK(colours[0][f][0] && strcmp(colours[0][f], colours[1][f]) == 0,
              "'%s' drawn %s in one study, %s in another", fams[f], colours[0][f], colours[1][f]);
    CHECK(strcmp(colours[0][0], colours[0][1]) != 0 && strcmp(colours[0][2], colours[0][3]) != 0,
          "families share a colour: %s %s %s %s", colours[0][0], colours[0][1], colours[0][2], colours[0][3]);
}

/* Twelve lines (the device kvstore with four compressors and two precisions, local in two
 * precisions, model, layer): a panel per family in the scaling figures, each key its own
 * lines; the memory figure keeps one panel. Four lines: one panel. */
static void test_panels(const char *dir, mx_plot_report *rep)
{
    static const char *const gc[4] = {"none", "fp16", "2bit", "topk"}, *const amp[2] = {"off", "bf16"};
    mx_results res;
    study(&res, 32);
    for (int g = 1; g <= 2; g++) {
        for (int c = 0; c < 4; c++)
            for (int a = 0; a < 2; a++) {
                mx_run_record *r = add(&res, "data", "device", g, 1, 0.86, 0);
                snprintf(r->compression, sizeof r->compression, "%s", gc[c]);
                snprintf(r->amp, sizeof r->amp, "%s", amp[a]);
            }
        for (int a = 0; a < 2; a++)
            snprintf(add(&res, "data", "local", g, 1, 0.86, 0)->amp, sizeof res.runs[0].amp, "%s", amp[a]);
        add(&res, "model", "device", g, 1, 0.86, 0);
        add(&res, "layer", "device", g, 1, 0.86, 0);
    }
    char outdir[4200], path[4300], v[256];
    snprintf(outdir, sizeof outdir, "%s/panels", dir);
    if (plot(&res, outdir, rep) <= 0) return;
    snprintf(path, sizeof path, "%s/data/throughput.dat", outdir);
    CHECK(count_lines(path, "\"") == 12, "%s: %d lines, expected 12", path, count_lines(path, "\""));
    static const char *const scaling[3] = {"throughput", "speedup", "efficiency"};
    for (int s = 0; s < 3; s++) {
        replot_str(outdir, scaling[s], "npanels", v, sizeof v);
        CHECK(strcmp(v, "4") == 0, "%s: npanels '%s', expected 4 (local, device, model, layer)", scaling[s], v);
        replot_str(outdir, scaling[s], "pfirst", v, sizeof v);
        CHECK(strcmp(v, "0 2 10 11") == 0, "%s: pfirst '%s', expected the families' first lines 0 2 10 11",
              scaling[s], v);
        replot_str(outdir, scaling[s], "plast", v, sizeof v);
        CHECK(strcmp(v, "1 9 10 11") == 0, "%s: plast '%s', expected 1 9 10 11", scaling[s], v);
        replot_str(outdir, scaling[s], "ptitle2", v, sizeof v);
        CHECK(strcmp(v, "data-parallel, kv device") == 0, "%s: the second panel's title '%s'", scaling[s], v);
        /* the figure itself: a title per panel */
        snprintf(path, sizeof path, "%s/%s.svg", outdir, scaling[s]);
        char *svg = slurp(path);
        CHECK(svg && strstr(svg, ">data-parallel, kv local<") && strstr(svg, ">layer-parallel<") &&
                  strstr(svg, ">model-parallel<"),
              "%s: expected a panel titled per family", path);
        free(svg);
    }
    replot_str(outdir, "memory", "npanels", v, sizeof v);
    CHECK(v[0] == '\0', "memory: npanels '%s', expected none (one panel)", v);
    /* within the device family, twelve lines take one colour and tell themselves apart by
     * their variant (dash pattern and marker) */
    char colours[1024], variants[1024];
    replot_str(outdir, "throughput", "lcolors", colours, sizeof colours);
    replot_str(outdir, "throughput", "lvariants", variants, sizeof variants);
    CHECK(strcmp(colours, "56B4E9 56B4E9 0072B2 0072B2 0072B2 0072B2 0072B2 0072B2 0072B2 0072B2 D55E00 000000") == 0 &&
              strcmp(variants, "0 1 0 1 2 3 4 5 6 7 0 0") == 0,
          "throughput: lcolors '%s', lvariants '%s'", colours, variants);
    mx_results_free(&res);

    study(&res, 8);
    for (int g = 1; g <= 2; g++) {
        add(&res, "data", "device", g, 1, 0.86, 0), add(&res, "data", "local", g, 1, 0.86, 0);
        add(&res, "model", "device", g, 1, 0.86, 0), add(&res, "layer", "device", g, 1, 0.86, 0);
    }
    snprintf(outdir, sizeof outdir, "%s/onepanel", dir);
    if (plot(&res, outdir, rep) > 0) {
        replot_str(outdir, "throughput", "npanels", v, sizeof v);
        CHECK(strcmp(v, "1") == 0, "four lines: npanels '%s', expected 1", v);
    }
    mx_results_free(&res);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    char dir[] = "/tmp/test_plot_rank.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("test_plot_rank: skipped: gnuplot not found\n");
        rmdir(dir);
        return CHECK_SKIP;
    }
    mx_plot_report *rep = calloc(1, sizeof *rep);
    test_ranking(dir, rep);
    test_colour_order(dir, rep);
    test_panels(dir, rep);
    free(rep);
    const char *keep = getenv("MXBENCH_TEST_KEEP");
    if (keep && *keep)
        printf("test_plot_rank: figures kept in %s\n", dir);
    else
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_summary("test_plot_rank");
}
