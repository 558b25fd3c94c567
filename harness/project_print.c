/* `mxbench project`'s output (project_print.h). Text and md: per configuration the fitted
 * parameters in words, then one row per device count; csv: one row per configuration and
 * device count with every figure; json: the same as objects. */
#include "project_print.h"

#include "report_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text and md */

enum { NCOLS = 14 };
static const char *const heads[NCOLS] = {"gpus",    "runs",       "fit",       "samples/s", "model",
                                         "error",   "efficiency", "model eff", "step ms",   "model ms",
                                         "data ms", "compute ms", "comm ms",   "turns"};

static void fit_list(const mx_projection *p, char *buf, size_t n)
{
    int sorted[MX_PROJ_MAX_POINTS], m = p->nfit;
    memcpy(sorted, p->fit_gpus, sizeof(int) * (size_t)m);
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            const int t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < m && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", sorted[i]);
}

static void fill_row(char (*cell)[CELL], const mx_proj_point *pt, int skipped)
{
    snprintf(cell[0], CELL, "%d", pt->gpus);
    snprintf(cell[1], CELL, "%d", pt->measured);
    snprintf(cell[2], CELL, "%s", pt->fitted ? "fit" : pt->measured ? "check" : "-");
    mx_fmt_num(cell[3], pt->throughput, "%.0f");
    mx_fmt_num(cell[4], skipped ? NAN : pt->m_throughput, "%.0f");
    mx_fmt_num(cell[5], 100 * pt->error, "%+.1f%%");
    mx_fmt_num(cell[6], pt->efficiency, "%.2f");
    mx_fmt_num(cell[7], pt->m_efficiency, "%.2f");
    mx_fmt_num(cell[8], 1e3 * pt->step, "%.3g");
    mx_fmt_num(cell[9], 1e3 * pt->m_step, "%.3g");
    mx_fmt_num(cell[10], 1e3 * pt->data, "%.3g");
    mx_fmt_num(cell[11], 1e3 * pt->compute, "%.3g");
    mx_fmt_num(cell[12], 1e3 * (pt->comm + pt->update), "%.3g");
    if (skipped || isnan(pt->share_compute)) snprintf(cell[13], CELL, "-");
    else snprintf(cell[13], CELL, "%.2g/%.2g", pt->share_compute, pt->share_comm);
}

static void print_fit(const mx_projection *p, int md)
{
    char fits[256];
    fit_list(p, fits, sizeof fits);
    const char *li = md ? "- " : "  ";
    printf("%sfitted on %s device%s: data %.3g ms + %.3g us per sample of the global batch; compute %.3g ms + %.3g us "
           "per sample of a device's share, on a device of its own",
           li, fits, p->nfit == 1 ? "" : "s", 1e3 * p->d0, 1e6 * p->d1, 1e3 * p->c0, 1e6 * p->c1);
    if (isfinite(p->update)) printf("; update %.3g ms (one device)", 1e3 * p->update);
    printf("\n%scommunication M per member at %d devices: %.0f rounds, %.4g MB bus, %.4g MB summed; alpha %.3g us, "
           "beta %.3g ns/B, gamma %.3g ns/B; the step holds %.3g M after backward (exposed) and %.3g M inside it "
           "(overlap's cost to compute)\n",
           li, p->p_ref, p->rounds, 1e-6 * p->bus_bytes, 1e-6 * p->reduce_bytes, 1e6 * p->alpha, 1e9 * p->beta,
           1e9 * p->gamma, p->exposed, p->overlap);
    if (p->cpu && p->cores > 0)
        printf("%shost: %.0f cores, %d thread%s per device: beyond the cores, CPU workers take turns (turns = "
               "compute/comm threads per core)%s\n",
               li, p->cores, p->threads, p->threads == 1 ? "" : "s",
               p->per_host ? "; ranks per host as measured" : "");
    else if (!p->cpu)
        printf("%s%s devices: each has its own silicon, no turns\n", li, p->device_type);
    if (p->notes[0]) printf("%snotes: %s\n", li, p->notes);
}

static void print_table(const char *file, const mx_projection *pr, int n, int md)
{
    if (md) printf("### mxbench project\n\n`%s`: %d configuration%s\n", file, n, n == 1 ? "" : "s");
    else printf("%s: %d configuration%s\n", file, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        const mx_projection *p = &pr[i];
        printf(md ? "\n#### %s\n\n" : "\n%s\n", p->label);
        if (p->skipped[0]) printf(md ? "- not projected: %s\n" : "  not projected: %s\n", p->skipped);
        else print_fit(p, md);
        table t = {.ncols = NCOLS, .nrows = p->npoints};
        for (int c = 0; c < NCOLS; c++) t.head[c] = heads[c], t.right[c] = c != 2;
        t.cell = calloc((size_t)p->npoints + 1, sizeof *t.cell);
        if (!t.cell) continue;
        for (int r = 0; r < p->npoints; r++) fill_row(t.cell[r], &p->pt[r], p->skipped[0] != 0);
        if (md) putchar('\n');
        if (md) mx_table_print_md(&t, stdout);
        else mx_table_print_text(&t, stdout);
        free(t.cell);
    }
    printf(
        "\n%sfit: the point's runs were fitted; check: measured, held out (error = model / measured - 1); model eff:\n"
        "the model's throughput over (gpus / smallest fitted) x its own there; data, compute, comm ms: the model's\n"
        "step (comm: the exposed communication, or one device's update); turns: compute/comm threads per core.\n",
        md ? "\n" : "");
}

/* ---- csv and json */

/* A point's figures, in the order of the csv columns and the json keys that carry them. */
enum { NPOINT_FIGS = 13 };
static const char *const point_names[NPOINT_FIGS] = {
    "throughput", "model_throughput", "error", "efficiency", "model_efficiency", "step_time", "model_step_time",
    "data",       "compute",          "comm",  "update",     "turns_compute",    "turns_comm"};

static void point_values(const mx_proj_point *pt, double v[NPOINT_FIGS])
{
    const double x[NPOINT_FIGS] = {pt->throughput, pt->m_throughput, pt->error, pt->efficiency, pt->m_efficiency,
                                   pt->step,       pt->m_step,       pt->data,  pt->compute,    pt->comm,
                                   pt->update,     pt->share_compute, pt->share_comm};
    memcpy(v, x, sizeof x);
}

static void csv_num(double x)
{
    putchar(',');
    if (isfinite(x)) printf("%.9g", x);
}

static void print_csv(const mx_projection *pr, int n)
{
    printf("configuration,gpus,runs,fitted");
    for (int k = 0; k < NPOINT_FIGS; k++) printf(",%s", point_names[k]);
    printf(",fit_gpus,d0,d1,c0,c1,alpha,beta,gamma,p_ref,rounds,bus_bytes,reduce_bytes,exposed,overlap,cores,"
           "threads_per_device,notes,skipped\n");
    for (int i = 0; i < n; i++) {
        const mx_projection *p = &pr[i];
        char fits[256];
        fit_list(p, fits, sizeof fits);
        for (int j = 0; j < p->npoints; j++) {
            const mx_proj_point *pt = &p->pt[j];
            mx_csv_string(p->label);
            printf(",%d,%d,%d", pt->gpus, pt->measured, pt->fitted);
            double v[NPOINT_FIGS];
            point_values(pt, v);
            for (int k = 0; k < NPOINT_FIGS; k++) csv_num(v[k]);
            putchar(',');
            mx_csv_string(fits);
            const int sk = p->skipped[0] != 0;
            /* a configuration not projected has no fit: its cores and threads only */
            const double f[] = {p->d0, p->d1, p->c0, p->c1, p->alpha, p->beta, p->gamma, p->p_ref, p->rounds,
                                p->bus_bytes, p->reduce_bytes, p->exposed, p->overlap, p->cores, p->threads};
            const size_t nf = sizeof f / sizeof *f;
            for (size_t k = 0; k < nf; k++) csv_num(sk && k < nf - 2 ? NAN : f[k]);
            putchar(',');
            mx_csv_string(p->notes);
            putchar(',');
            mx_csv_string(p->skipped);
            putchar('\n');
        }
    }
}

static void json_field(const char *name, double x, int first)
{
    printf("%s\"%s\": ", first ? "" : ", ", name);
    mx_json_number(x);
}

static void print_json(const char *file, const mx_projection *pr, int n)
{
    printf("{\"file\": ");
    mx_json_string(file);
    printf(", \"configurations\": [");
    for (int i = 0; i < n; i++) {
        const mx_projection *p = &pr[i];
        const int sk = p->skipped[0] != 0;
        printf("%s\n  {\"configuration\": ", i ? "," : "");
        mx_json_string(p->label);
        printf(", \"skipped\": ");
        mx_json_string(p->skipped);
        printf(", \"notes\": ");
        mx_json_string(p->notes);
        printf(", \"fit_gpus\": [");
        for (int k = 0; k < p->nfit; k++) printf("%s%d", k ? ", " : "", p->fit_gpus[k]);
        printf("],\n   \"fit\": {");
        const char *names[] = {"d0", "d1", "c0", "c1", "update", "alpha", "beta", "gamma", "p_ref", "rounds",
                               "bus_bytes", "reduce_bytes", "exposed", "overlap", "cores", "threads_per_device"};
        const double f[] = {p->d0, p->d1, p->c0, p->c1, p->update, p->alpha, p->beta, p->gamma, p->p_ref,
                            p->rounds, p->bus_bytes, p->reduce_bytes, p->exposed, p->overlap, p->cores, p->threads};
        const size_t nf = sizeof f / sizeof *f;
        for (size_t k = 0; k < nf; k++) json_field(names[k], sk && k < nf - 2 ? NAN : f[k], k == 0);
        printf("},\n   \"points\": [");
        for (int j = 0; j < p->npoints; j++) {
            const mx_proj_point *pt = &p->pt[j];
            printf("%s\n    {\"gpus\": %d, \"runs\": %d, \"fitted\": %d", j ? "," : "", pt->gpus, pt->measured,
                   pt->fitted);
            double v[NPOINT_FIGS];
            point_values(pt, v);
            for (int k = 0; k < NPOINT_FIGS; k++) json_field(point_names[k], v[k], 0);
            printf("}");
        }
        printf("]}");
    }
    printf("\n]}\n");
}

void mx_project_print(const char *fmt, const char *file, const mx_projection *pr, int n)
{
    if (strcmp(fmt, "csv") == 0) print_csv(pr, n);
    else if (strcmp(fmt, "json") == 0) print_json(file, pr, n);
    else print_table(file, pr, n, strcmp(fmt, "md") == 0);
}
