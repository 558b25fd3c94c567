/* Walks the tables: every counter (results/metrics.def) reaches the trainer's
 * reduction, the record, the HDF5 file (run attribute and /summary column), `mxbench report`
 * in every format and SCHEMA.md; every axis (results/axes.c) reaches the planned record, the
 * child's `train` command line, the configuration and series keys, the file and SCHEMA.md;
 * every word of the configuration's vocabularies (base/config.h) parses back to its entry, and
 * their lists are the ones users have always been shown. A table entry missing its wiring
 * fails here, naming the entry.
 * Usage: test_tables SOURCE_DIR WORK_DIR */
#include "check.h"
#include "base/config.h"
#include "base/status.h"
#include "harness/commands.h"
#include "kvstore/compressor.h"
#include "kvstore/kvstore.h"
#include "strategies/strategy.h"
#include "harness/sweep_plan.h"
#include "harness/sweep_run.h"
#include "results/axes.h"
#include "results/results.h"
#include "results/store.h"

#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* `mxbench report FILE --format fmt` into out; its return value. */
static int report_to(const char *file, const char *fmt, const char *out)
{
    fflush(stdout);
    int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    char *argv[] = {"report", (char *)file, "--format", (char *)fmt, NULL};
    int rc = mx_cmd_report(4, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static double counter_value(int k) { return 1000.0 * (k + 1) + 0.25; } /* distinct, exact in %.6g */

/* ---- the reduction of each kind, as the trainer applies it to every counter */
static void test_reductions(void)
{
    mx_counter_acc acc;
    mx_counter_acc_init(&acc);
    const double steps[3] = {2, 4, NAN}; /* the third step did not measure */
    for (int s = 0; s < 3; s++) {
        double c[MX_NCOUNTERS];
        for (int k = 0; k < MX_NCOUNTERS; k++) c[k] = steps[s] * (k + 1);
        mx_counter_acc_add(&acc, c);
    }
    double fig[MX_NCOUNTERS];
    mx_counter_acc_reduce(&acc, fig);
    for (int k = 0; k < MX_NCOUNTERS; k++) {
        const mx_counter_info *c = &mx_counters[k];
        const double a = 2.0 * (k + 1), b = 4.0 * (k + 1), o = mx_counters[k].over;
        const double want = c->reduce == MX_REDUCE_MEAN    ? (a + b) / 2
                            : c->reduce == MX_REDUCE_RATIO ? (a + b) / (6.0 * (o + 1))
                            : c->reduce == MX_REDUCE_MAX   ? b
                            : c->reduce == MX_REDUCE_LAST  ? b
                                                           : a + b;
        CHECK(fabs(fig[k] - want) <= 1e-12 * fabs(want), "counter %s (%s): figure %g, expected %g", c->name,
              mx_reduce_name(c->reduce), fig[k], want);
    }
    mx_counter_acc_init(&acc);
    mx_counter_acc_reduce(&acc, fig);
    for (int k = 0; k < MX_NCOUNTERS; k++)
        CHECK(isnan(fig[k]), "counter %s: no step measured it, yet its figure is %g", mx_counters[k].name, fig[k]);
}

static void fill_run(mx_run_record *r, int i, int gpus)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "r%04d", i);
    snprintf(r->workload, sizeof r->workload, "mlp");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->kvstore, sizeof r->kvstore, "%s", gpus > 1 ? "device" : "none");
    r->gpus = gpus, r->batch = 32, r->global_batch = 32 * gpus, r->base_lr = r->lr = 0.05, r->steps = 4;
    r->repeats = r->seed = r->threads_per_device = 1;
    r->nsteps = 4;
    r->step_time = malloc(4 * sizeof(double));
    for (int s = 0; s < 4; s++) r->step_time[s] = 0.01;
    mx_record_derive(r);
    for (int k = 0; gpus > 1 && k < MX_NCOUNTERS; k++) r->metrics[k] = counter_value(k);
}

static int summary_has_column(const char *file, const char *name)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT), d = f >= 0 ? H5Dopen2(f, "summary", H5P_DEFAULT) : -1;
    hid_t t = d >= 0 ? H5Dget_type(d) : -1;
    int has = t >= 0 && H5Tget_member_index(t, name) >= 0;
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    return has;
}

static int run_has_attribute(const char *file, const char *run, const char *name)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT), g = f >= 0 ? H5Gopen2(f, run, H5P_DEFAULT) : -1;
    int has = g >= 0 && H5Aexists(g, name) > 0;
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    return has;
}

static void test_counters(const char *schema, const char *work)
{
    char file[4096], out[4200];
    snprintf(file, sizeof file, "%s/tables.h5", work);
    mx_results_meta meta;
    memset(&meta, 0, sizeof meta);
    CHECK(mx_results_create(file, &meta, 1) == MX_OK, "create %s: %s", file, mx_last_error());
    for (int i = 0; i < 2; i++) {
        mx_run_record r;
        fill_run(&r, i, i + 1);
        CHECK(mx_results_append(file, &r) == MX_OK, "append: %s", mx_last_error());
        mx_record_free(&r);
    }
    mx_results res;
    CHECK(mx_results_load(file, &res) == MX_OK, "load: %s", mx_last_error());
    const char *fmts[] = {"text", "md", "csv", "json"};
    char *rep[4] = {NULL};
    for (int f = 0; f < 4; f++) {
        snprintf(out, sizeof out, "%s/tables.%s", work, fmts[f]);
        CHECK(report_to(file, fmts[f], out) == 0, "report --format %s failed", fmts[f]);
        rep[f] = slurp_text(out);
    }
    for (int k = 0; k < MX_NCOUNTERS; k++) {
        const mx_counter_info *c = &mx_counters[k];
        char want[128];
        CHECK(res.nruns == 2 && res.runs[1].metrics[k] == counter_value(k) && isnan(res.runs[0].metrics[k]),
              "counter %s: the record read back holds %g, expected %g", c->name,
              res.nruns == 2 ? res.runs[1].metrics[k] : NAN, counter_value(k));
        CHECK(run_has_attribute(file, "/runs/r0001", c->name), "counter %s: no attribute in /runs/r0001", c->name);
        CHECK(summary_has_column(file, c->name), "counter %s: no /summary column", c->name);
        snprintf(want, sizeof want, "%s", c->head);
        CHECK(rep[0] && strstr(rep[0], want), "counter %s: report text has no column '%s'", c->name, want);
        snprintf(want, sizeof want, "| %s |", c->head);
        CHECK(rep[1] && strstr(rep[1], want), "counter %s: report md has no column '%s'", c->name, want);
        snprintf(want, sizeof want, ",%s,", c->name);
        CHECK(rep[2] && strstr(rep[2], want), "counter %s: report csv header has no column", c->name);
        snprintf(want, sizeof want, ",%.6g,", counter_value(k));
        CHECK(rep[2] && strstr(rep[2], want), "counter %s: report csv has no value %s", c->name, want);
        snprintf(want, sizeof want, "\"%s\": %.15g", c->name, counter_value(k));
        CHECK(rep[3] && strstr(rep[3], want), "counter %s: report json has no '%s'", c->name, want);
        snprintf(want, sizeof want, "| `%s` |", c->name);
        CHECK(schema && strstr(schema, want), "counter %s: results/SCHEMA.md does not document it ('%s')", c->name,
              want);
        CHECK(c->help && c->help[0] && c->unit && c->head && c->fmt, "counter %s: entry incomplete", c->name);
    }
    for (int p = 0; p < MX_NPHASES; p++) {
        char want[64];
        snprintf(want, sizeof want, "`%s`", mx_phases[p].name);
        CHECK(schema && strstr(schema, want), "phase %s: results/SCHEMA.md does not name it", mx_phases[p].name);
    }
    for (int f = 0; f < 4; f++) free(rep[f]);
    mx_results_free(&res);
}

/* ---- axes: a value other than the default, through plan, child argv, keys */

/* A value of axis a that differs from its default and is "set" (so IF_SET passes it on). */
static void other_value(const mx_axis *a, char *buf, size_t n)
{
    char def[128];
    snprintf(def, sizeof def, "%s", a->def);
    def[strcspn(def, ",")] = '\0';
    if (a->type == MX_AXIS_STR && mx_axis_choices(a)) {
        /* the last choice that is set and not the default */
        char list[256];
        snprintf(list, sizeof list, "%s", mx_axis_choices(a));
        buf[0] = '\0';
        for (char *t = strtok(list, "|"); t; t = strtok(NULL, "|"))
            if (strcmp(t, def) != 0 && strcmp(t, "none") != 0 && strcmp(t, "off") != 0) snprintf(buf, n, "%s", t);
    } else if (a->type == MX_AXIS_STR) {
        snprintf(buf, n, "other");
    } else if (a->type == MX_AXIS_INT) {
        const int v = atoi(def) + 2 <= a->hi ? atoi(def) + 2 : (int)a->lo;
        snprintf(buf, n, "%d", v > 0 ? v : 2);
    } else {
        snprintf(buf, n, "%.17g", a->hi > 0 ? a->lo + (a->hi - a->lo) * 0.375 : 0.375);
    }
}

static void base_axes(mx_sweep_axes *ax)
{
    memset(ax, 0, sizeof *ax);
    for (int i = 0; i < mx_naxes; i++) {
        if (!mx_axes[i].option) continue;
        snprintf(ax->store[i], sizeof ax->store[i], "%s", mx_axes[i].def);
        ax->store[i][strcspn(ax->store[i], ",")] = '\0'; /* the first of a list */
        ax->text[i][0] = ax->store[i];
        ax->n[i] = 1;
    }
    /* two devices, so that the kvstore is used and every field is in play */
    snprintf(ax->store[mx_sweep_axis_index("gpus")], 512, "2");
}

/* 1 when "k=v" is one of the ;-separated pairs of key (not a tail of another: lr in base_lr) */
static int key_has(const char *key, const char *item)
{
    const size_t n = strlen(item);
    for (const char *p = key; (p = strstr(p, item)); p += n)
        if ((p == key || p[-1] == ';') && (p[n] == ';' || p[n] == '\0')) return 1;
    return 0;
}

static int argv_has(char **argv, const char *opt, const char *value)
{
    for (int i = 0; argv[i] && argv[i + 1]; i++)
        if (strcmp(argv[i], opt) == 0 && strcmp(argv[i + 1], value) == 0) return 1;
    return 0;
}

static void test_axes(const char *schema)
{
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *a = &mx_axes[i];
        static mx_sweep_axes ax;
        base_axes(&ax);
        char v[256] = "";
        if (a->option) {
            other_value(a, v, sizeof v);
            snprintf(ax.store[i], sizeof ax.store[i], "%s", v);
        }
        /* an option of one strategy (the pipeline's) is planned on that strategy's rows */
        /* a compressor's setting on that compressor's rows (data, 2 devices) */
        if (strncmp(a->name, "gc_", 3) == 0) {
            snprintf(ax.store[mx_sweep_axis_index("gpus")], sizeof ax.store[0], "2");
            snprintf(ax.store[mx_sweep_axis_index("compression")], sizeof ax.store[0], "%s",
                     strcmp(a->name, "gc_threshold") == 0 ? "2bit" : "topk");
        } else if (a->child == MX_CHILD_IF_DIFFERS) {
            snprintf(ax.store[mx_sweep_axis_index("strategy")], sizeof ax.store[0], "model");
        }
        mx_run_record *runs = NULL;
        int n = 0;
        CHECK(mx_sweep_plan(&ax, &runs, &n) == MX_OK && n == 1, "axis %s: planning one run gave %d", a->name, n);
        if (n != 1) continue;
        /* a field the run records itself (workers of a dist_* run) stays at its default in
         * the plan; a later field at its default is left out of the keys, so give it another */
        if (!a->option && !a->in_v1) {
            other_value(a, v, sizeof v);
            mx_axis_set(a, &runs[0], v);
        }
        const mx_run_record *r = &runs[0];
        char have[256], key[2048], series[2048], item[320], store[4096], *argv[64], opt[64];
        mx_axis_text(a, r, have, sizeof have);
        if (a->option) {
            char want[256];
            mx_run_record tmp;
            memset(&tmp, 0, sizeof tmp);
            mx_axis_set(a, &tmp, v);
            mx_axis_text(a, &tmp, want, sizeof want);
            CHECK(strcmp(have, want) == 0, "axis %s: --%s %s planned as %s", a->name, a->option, v, have);
        }
        mx_record_config_key(r, key, sizeof key);
        mx_record_series_key(r, series, sizeof series);
        if (a->type == MX_AXIS_DBL) snprintf(item, sizeof item, "%s=%.6g", a->name, strtod(have, NULL));
        else snprintf(item, sizeof item, "%s=%s", a->name, have);
        const int in_key = key_has(key, item), in_series = key_has(series, item);
        /* a field added later stays out of the keys at what a file without it means */
        char absent[256];
        mx_run_record tmp_absent;
        memset(&tmp_absent, 0, sizeof tmp_absent);
        mx_axis_set(a, &tmp_absent, mx_axis_absent(a));
        mx_axis_text(a, &tmp_absent, absent, sizeof absent);
        const int keyed = a->in_key && (a->in_v1 || strcmp(have, absent) != 0);
        CHECK(in_key == keyed, "axis %s: '%s' %s the configuration key %s", a->name, item,
              in_key ? "is in" : "is missing from", key);
        CHECK(in_series == (keyed && a->in_series), "axis %s: '%s' %s the series key", a->name, item,
              in_series ? "is in" : "is missing from");
        mx_sweep_child_argv(r, "x.h5", store, sizeof store, argv);
        if (a->train_opt && a->child != MX_CHILD_NO) {
            snprintf(opt, sizeof opt, "--%s", a->train_opt);
            CHECK(argv_has(argv, opt, have), "axis %s: the child's command line lacks %s %s", a->name, opt, have);
        }
        char want[128];
        snprintf(want, sizeof want, "| `%s` |", a->name);
        CHECK(schema && strstr(schema, want), "axis %s: results/SCHEMA.md does not document it", a->name);
        if (!a->in_v1) {
            /* older files lack it: a record read from one must hold what such a run meant */
            static mx_run_record init, want_rec;
            char got[256], def[256];
            mx_record_init(&init);
            memset(&want_rec, 0, sizeof want_rec);
            mx_axis_set(a, &want_rec, mx_axis_absent(a));
            mx_axis_text(a, &init, got, sizeof got);
            mx_axis_text(a, &want_rec, def, sizeof def);
            CHECK(strcmp(got, def) == 0, "axis %s: added after schema 1, a new record holds %s, not %s",
                  a->name, got, def);
            /* the default enters the keys where older files meant something else */
            if (a->absent && a->in_key) {
                mx_axis_set(a, &want_rec, a->def);
                char dkey[2048], ditem[320];
                mx_record_config_key(&want_rec, dkey, sizeof dkey);
                mx_axis_text(a, &want_rec, def, sizeof def);
                snprintf(ditem, sizeof ditem, "%s=%s", a->name, def);
                CHECK(key_has(dkey, ditem), "axis %s: its default %s is not in the key %s", a->name, def, dkey);
            }
        }
        for (int k = 0; k < n; k++) mx_record_free(&runs[k]);
        free(runs);
    }
    /* a dataset outside its choices is a directory: --data, not --dataset */
    static mx_sweep_axes ax;
    base_axes(&ax);
    snprintf(ax.store[mx_sweep_axis_index("dataset")], 512, "/some/idx");
    mx_run_record *runs = NULL;
    int n = 0;
    char store[4096], *argv[64];
    CHECK(mx_sweep_plan(&ax, &runs, &n) == MX_OK && n == 1, "--data planning");
    if (n == 1) {
        mx_sweep_child_argv(&runs[0], "x.h5", store, sizeof store, argv);
        CHECK(argv_has(argv, "--data", "/some/idx"), "a dataset directory must reach the child as --data");
        mx_record_free(&runs[0]);
    }
    free(runs);
}

/* The field tables hold every field (a full table drops the ones past MX_MAX_FIELDS without
 * a word), and SCHEMA.md documents each run attribute, some in a row of several names. */
static void test_fields(const char *schema)
{
    const mx_field_table *t[2] = {mx_run_field_table(), mx_summary_field_table()};
    for (int i = 0; i < 2; i++)
        CHECK(t[i]->n < MX_MAX_FIELDS, "field table %d is full (%d): raise MX_MAX_FIELDS", i, t[i]->n);
    char want[128];
    for (int f = 0; f < t[0]->n; f++) {
        snprintf(want, sizeof want, "`%s`", t[0]->f[f].name);
        CHECK(schema && strstr(schema, want), "run attribute %s: results/SCHEMA.md does not document it", want);
    }
}

/* ---- the vocabularies: names, lists, properties */

/* 1 when the "a|b|c" lists hold the same names, in any order. */
static int same_names(const char *x, const char *y)
{
    char a[256], b[256];
    snprintf(a, sizeof a, "|%s|", x);
    snprintf(b, sizeof b, "|%s|", y);
    if (strlen(a) != strlen(b)) return 0;
    for (char *t = strtok(a, "|"); t; t = strtok(NULL, "|")) {
        char item[64];
        snprintf(item, sizeof item, "|%s|", t);
        if (!strstr(b, item)) return 0;
    }
    return 1;
}

static void test_vocabularies(void)
{
    for (int m = 0; m < MX_KV_NMODES; m++) {
        mx_kv_mode back = MX_KV_UNKNOWN;
        const char *name = mx_kv_mode_name((mx_kv_mode)m);
        CHECK(mx_kv_mode_parse(name, &back) == MX_OK && back == m && mx_kv_mode_of(name) == m, "kvstore %s", name);
        /* the properties the code asks for hang together */
        const int dist = mx_kv_mode_has((mx_kv_mode)m, MX_KV_DIST);
        CHECK(dist == (mx_kv_mode_has((mx_kv_mode)m, MX_KV_SERVERS) || mx_kv_mode_has((mx_kv_mode)m, MX_KV_COLLECTIVE)),
              "kvstore %s: an MPI job has servers or all-reduces, and only an MPI job does", name);
        CHECK(!mx_kv_mode_has((mx_kv_mode)m, MX_KV_ASYNC | MX_KV_AMP_OK), "kvstore %s: async and AMP", name);
        CHECK(m == MX_KV_NONE || mx_kv_mode_has((mx_kv_mode)m, MX_KV_COMPRESSES) == (m != MX_KV_LOCAL),
              "kvstore %s: every store with a wire compresses", name);
    }
    CHECK(strcmp(mx_kv_mode_names(), "local|device|dist_sync|dist_device_sync|dist_async|dist_allreduce") == 0,
          "kvstore list: %s", mx_kv_mode_names());
    CHECK(strcmp(mx_amp_names(), "off|fp16|bf16") == 0, "amp list: %s", mx_amp_names());
    CHECK(strcmp(mx_gc_names(), "none|fp16|2bit|topk") == 0, "compression list: %s", mx_gc_names());
    CHECK(same_names(MX_GC_CHOICES, mx_gc_names()), "MX_GC_CHOICES %s names the table's %s", MX_GC_CHOICES,
          mx_gc_names());
    CHECK(strcmp(mx_strategy_kind_names(), "data|model|layer") == 0, "strategy list: %s", mx_strategy_kind_names());
    /* what this build runs is the table's (every strategy and compressor; the dist_* modes with MPI) */
    CHECK(same_names(mx_strategy_names(), mx_strategy_kind_names()), "strategies built: %s", mx_strategy_names());
    CHECK(same_names(mx_compressor_names(), mx_gc_names()), "compressors built: %s", mx_compressor_names());
    for (int m = MX_KV_NONE + 1; m < MX_KV_NMODES; m++)
        CHECK(mx_kv_mode_built((mx_kv_mode)m) == (!mx_kv_mode_has((mx_kv_mode)m, MX_KV_DIST) ||
                                                  strcmp(mx_kv_modes(), "local|device") != 0),
              "kvstore %s built: %s", mx_kv_mode_name((mx_kv_mode)m), mx_kv_modes());
    CHECK(!mx_kv_mode_built(MX_KV_NONE), "none is no store");
    /* a word outside a table: refused once, naming it and the accepted words; classified as unknown */
    mx_amp a;
    mx_gc_kind g;
    mx_strategy_kind s;
    CHECK(mx_amp_parse("fp8", &a) == MX_EINVAL && strstr(mx_last_error(), "'fp8': accepted off|fp16|bf16"), "%s",
          mx_last_error());
    CHECK(mx_gc_parse("3bit", &g) == MX_EINVAL && strstr(mx_last_error(), "'3bit'"), "%s", mx_last_error());
    CHECK(mx_strategy_parse("hybrid", &s) == MX_EINVAL && strstr(mx_last_error(), "data|model|layer"), "%s",
          mx_last_error());
    CHECK(mx_kv_mode_of("nccl") == MX_KV_UNKNOWN && !mx_kv_name_has("nccl", 0) && !mx_kv_name_has(NULL, 0) &&
              mx_amp_of("") == MX_AMP_UNKNOWN && mx_gc_of(NULL) == MX_GC_UNKNOWN,
          "names outside the tables");
    CHECK(strcmp(mx_kv_mode_name(MX_KV_UNKNOWN), "?") == 0 && strcmp(mx_gc_name(MX_NGC), "?") == 0,
          "names of no entry");
    CHECK(mx_config_unset("none") && mx_config_unset("off") && !mx_config_unset("fp16") && !mx_config_unset("device"),
          "unset words");
    CHECK(mx_kv_name_has("dist_async", MX_KV_DIST | MX_KV_ASYNC) && mx_kv_name_has("dist_allreduce", MX_KV_BUCKETS) &&
              !mx_kv_name_has("dist_allreduce", MX_KV_SERVERS),
          "the properties of stored names");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_tables SOURCE_DIR WORK_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/results/SCHEMA.md", argv[1]);
    char *schema = slurp_text(path);
    CHECK(schema != NULL, "cannot read %s", path);
    test_vocabularies();
    test_reductions();
    test_counters(schema, argv[2]);
    test_axes(schema);
    test_fields(schema);
    free(schema);
    return check_summary("test_tables");
}
