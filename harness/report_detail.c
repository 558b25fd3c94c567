/* The device and layer tables of a run in `mxbench report` (report_table.h): where a
 * pipeline is cut, how idle each stage was, what each device holds and how long it computed
 * a step, and what moves per layer; and the straggler, the device that computed longest,
 * named where it took MX_DEVICE_STRAGGLER_RATIO of the devices' median or more. A data run shows its
 * devices where it has several (its summary row has its memory). */
#include "report_table.h"
#include "report/summary.h"
#include "results/answer.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layer_heads[] = {"layer", "kind", "device", "MB/step"};
enum { LAYER_COLS = sizeof layer_heads / sizeof layer_heads[0] };

static void print_one(const table *t, int md, const char *title_md, const char *title_text)
{
    if (md) {
        printf("\n#### %s\n\n", title_md);
        mx_table_print_md(t, stdout);
    } else {
        printf("\n%s:\n", title_text);
        mx_table_print_text(t, stdout);
    }
}

static int print_devices(const mx_run_record *r, int md)
{
    table t;
    MX_TRY(mx_summary_device_table(r, &t));
    char about[96], md_title[160], text_title[160];
    if (mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL)
        snprintf(about, sizeof about, "model, %d micro-batch%s, %s", r->micro_batches,
                 r->micro_batches == 1 ? "" : "es", r->schedule);
    else
        snprintf(about, sizeof about, "%s", r->strategy);
    snprintf(md_title, sizeof md_title, "Devices of `%s` (%s)", r->id, about);
    snprintf(text_title, sizeof text_title, "devices of %s (%s)", r->id, about);
    print_one(&t, md, md_title, text_title);
    free(t.cell);
    char who[160];
    if (mx_report_straggler(r, who, sizeof who)) printf("%s%s\n", md ? "\n" : "", who);
    return MX_OK;
}

int mx_report_straggler(const mx_run_record *r, char *buf, size_t n)
{
    mx_straggler s; /* the rule is the answer's (results/answer.h), so both name one device */
    if (!mx_device_straggler(r, &s)) return 0;
    snprintf(buf, n, "straggler: device %d computed %.2f ms a step, %.2fx the median of the %d devices (%.2f ms)",
             s.who, s.time * 1e3, s.ratio, s.n, s.median * 1e3);
    return 1;
}

static int print_layers(const mx_run_record *r, int md)
{
    table t = {.ncols = LAYER_COLS, .nrows = r->nlayers};
    for (int c = 0; c < LAYER_COLS; c++) t.head[c] = layer_heads[c], t.right[c] = c != 1;
    t.cell = calloc((size_t)r->nlayers, sizeof *t.cell);
    if (!t.cell) return mx_error(MX_ENOMEM, "out of memory for %d layers", r->nlayers);
    for (int i = 0; i < r->nlayers; i++) {
        const mx_layer_row *x = &r->layers[i];
        char(*row)[CELL] = t.cell[i];
        snprintf(row[0], CELL, "%d", x->layer);
        snprintf(row[1], CELL, "%.*s", (int)sizeof x->kind, x->kind);
        if (x->device >= 0) snprintf(row[2], CELL, "%d", x->device);
        else snprintf(row[2], CELL, "all");
        mx_fmt_num(row[3], x->bytes_per_step * 1e-6, "%.3g");
    }
    char md_title[96], text_title[96];
    snprintf(md_title, sizeof md_title, "Layers of `%s`", r->id);
    snprintf(text_title, sizeof text_title, "layers of %s", r->id);
    print_one(&t, md, md_title, text_title);
    free(t.cell);
    return MX_OK;
}

int mx_report_print_detail(const mx_run_record *r, int md)
{
    if (r->ndevices > 1 || (r->ndevices > 0 && r->nlayers > 0)) MX_TRY(print_devices(r, md));
    return r->nlayers > 0 ? print_layers(r, md) : MX_OK;
}

void mx_report_json_detail(const mx_run_record *r)
{
    printf(", \"devices\": [");
    for (int i = 0; i < r->ndevices; i++) {
        const mx_device_row *x = &r->devices[i];
        printf("%s{\"device\": %d, \"first_layer\": %d, \"last_layer\": %d, \"bubble\": ", i ? ", " : "", x->device,
               x->first_layer, x->last_layer);
        mx_json_number(x->bubble);
        printf(", \"mem_params\": ");
        mx_json_number(x->mem_params);
        printf(", \"mem_optim\": ");
        mx_json_number(x->mem_optim);
        printf(", \"mem_peak\": ");
        mx_json_number(x->mem_peak);
        printf(", \"bytes_per_step\": ");
        mx_json_number(x->bytes_per_step);
        printf(", \"inflight_max\": %d, \"busy_time\": ", x->inflight_max);
        mx_json_number(x->busy_time);
        printf("}");
    }
    printf("], \"layers\": [");
    for (int i = 0; i < r->nlayers; i++) {
        const mx_layer_row *x = &r->layers[i];
        printf("%s{\"layer\": %d, \"kind\": ", i ? ", " : "", x->layer);
        mx_json_string(x->kind);
        printf(", \"device\": %d, \"bytes_per_step\": ", x->device);
        mx_json_number(x->bytes_per_step);
        printf("}");
    }
    printf("]");
}
