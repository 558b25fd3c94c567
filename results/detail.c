/* The device and layer tables of a run (store.h): /runs/<id>/devices, one row per device as
 * its strategy measured it (the pipeline's cut and bubble, memory, bytes sent), and
 * /runs/<id>/layers, one row per top-level layer (its stage, the bytes moved for it). Written
 * when the run has them and read tolerant of files without them (table.c). */
#include "store.h"

#include "base/status.h"

#include <stdio.h>
#include <string.h>

#define DSIZE(m) sizeof(((mx_device_row *)0)->m)
#define D(m, kind, req) {#m, kind, offsetof(mx_device_row, m), DSIZE(m), req}
static const mx_field device_cols[] = {
    D(device, F_INT, 1),   D(first_layer, F_INT, 0), D(last_layer, F_INT, 0), D(bubble, F_DBL, 0),
    D(mem_params, F_DBL, 0), D(mem_optim, F_DBL, 0), D(mem_peak, F_DBL, 0),   D(bytes_per_step, F_DBL, 0),
    D(inflight_max, F_INT, 0), D(busy_time, F_DBL, 0),
};
#undef D
#define LSIZE(m) sizeof(((mx_layer_row *)0)->m)
#define L(m, kind, req) {#m, kind, offsetof(mx_layer_row, m), LSIZE(m), req}
static const mx_field layer_cols[] = {
    L(layer, F_INT, 1), L(kind, F_STR, 0), L(device, F_INT, 0), L(bytes_per_step, F_DBL, 0),
};
#undef L

static const mx_table_def devices_table = {
    "devices",
    "device",
    device_cols,
    (int)(sizeof device_cols / sizeof device_cols[0]),
    sizeof(mx_device_row),
    MX_DEVICE_ROWS_MAX,
    "bubble: fraction; mem_params, mem_optim, mem_peak: bytes; bytes_per_step: bytes; busy_time: s"};
static const mx_table_def layers_table = {
    "layers", "layer", layer_cols, (int)(sizeof layer_cols / sizeof layer_cols[0]), sizeof(mx_layer_row),
    MX_LAYER_ROWS_MAX, "bytes_per_step: bytes"};

int mx_detail_write(hid_t g, const mx_run_record *r)
{
    return mx_table_write(g, &devices_table, r->devices, r->ndevices) == 0 &&
           mx_table_write(g, &layers_table, r->layers, r->nlayers) == 0 ? 0 : -1;
}

int mx_detail_read(hid_t g, const char *where, mx_run_record *r)
{
    void *rows;
    int rc = mx_table_read(g, where, &devices_table, &rows, &r->ndevices);
    r->devices = rows;
    if (rc == MX_OK) rc = mx_table_read(g, where, &layers_table, &rows, &r->nlayers);
    if (rc == MX_OK) r->layers = rows;
    return rc;
}

int mx_detail_check(const mx_run_record *r, const char *path, int code)
{
    if (r->ndevices < 0 || r->ndevices > MX_DEVICE_ROWS_MAX || (r->ndevices && !r->devices) || r->nlayers < 0 ||
        r->nlayers > MX_LAYER_ROWS_MAX || (r->nlayers && !r->layers))
        return mx_error(code, "%s: run '%s': %d device rows and %d layer rows (accepted: up to %d and %d, with "
                        "their rows)", path, r->id, r->ndevices, r->nlayers, MX_DEVICE_ROWS_MAX, MX_LAYER_ROWS_MAX);
    for (int i = 0; i < r->ndevices; i++) {
        const mx_device_row *d = &r->devices[i];
        if (d->device != i)
            return mx_error(code, "%s: run '%s': device row %d says device %d (accepted: rows in device order, "
                            "0..%d)", path, r->id, i, d->device, r->ndevices - 1);
        if (d->first_layer < 0 || d->last_layer < d->first_layer || d->last_layer > MX_LAYER_ROWS_MAX ||
            d->inflight_max < 0)
            return mx_error(code, "%s: run '%s': device %d: layers [%d, %d) and %d micro-batches in flight "
                            "(accepted: 0 <= first <= last <= %d, in flight 0 or more)", path, r->id, i,
                            d->first_layer, d->last_layer, d->inflight_max, MX_LAYER_ROWS_MAX);
    }
    for (int i = 0; i < r->nlayers; i++) {
        const mx_layer_row *l = &r->layers[i];
        if (l->layer != i || !memchr(l->kind, 0, sizeof l->kind) || l->device < -1 || l->device >= MX_DEVICE_ROWS_MAX)
            return mx_error(code, "%s: run '%s': layer row %d: layer %d on device %d (accepted: rows in layer "
                            "order, a NUL-terminated kind, device -1..%d)", path, r->id, i, l->layer, l->device,
                            MX_DEVICE_ROWS_MAX - 1);
    }
    return MX_OK;
}
