/* The per-run series datasets of the results store (store.h): step_time, phase_time, loss,
 * test_acc, epoch_time, (fp16 AMP) loss_scale and (language models) val_loss under
 * /runs/<id>, each with a units attribute (SCHEMA.md). */
#include "store.h"

#include "base/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name, *units;
    int cols;          /* 0: one-dimensional [rows]; else [rows][cols] */
    int min_cols;      /* older files may have fewer columns, the first ones (phases are appended) */
    hid_t file_type;   /* filled at run time: HDF5's predefined types are not constants */
    hid_t mem_type;
    size_t elem_size;
} series_desc;

enum { S_STEP, S_PHASE, S_LOSS, S_ACC, S_EPOCH, S_SCALE, S_VLOSS, NSERIES };

static void series_table(series_desc s[NSERIES])
{
    s[S_STEP] = (series_desc){"step_time", "s", 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    /* 5 phases before compression's */
    s[S_PHASE] = (series_desc){"phase_time", "s", MX_NPHASES, 5, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_LOSS] = (series_desc){"loss", "1", 0, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, sizeof(float)};
    s[S_ACC] = (series_desc){"test_acc", "fraction", 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_EPOCH] = (series_desc){"epoch_time", "s", 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_SCALE] = (series_desc){"loss_scale", "1", 0, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, sizeof(float)};
    s[S_VLOSS] = (series_desc){"val_loss", "1", 0, 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
}

/* Names the columns of phase_time, so the file explains itself without SCHEMA.md. */
static int write_phase_names(hid_t ds)
{
    char names[MX_NPHASES][16] = {{0}}; /* all bytes go to the file, padding included */
    hsize_t n = MX_NPHASES;
    for (int i = 0; i < MX_NPHASES; i++) snprintf(names[i], sizeof names[i], "%s", mx_phase_names[i]);
    hid_t t = mx_store_string_type(sizeof names[0]), sp = H5Screate_simple(1, &n, NULL), a = -1;
    if (t >= 0 && sp >= 0) a = H5Acreate2(ds, "phases", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, t, names) >= 0 ? 0 : -1;
    if (a >= 0 && H5Aclose(a) < 0) rc = -1;
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    if (t >= 0 && H5Tclose(t) < 0) rc = -1;
    return rc;
}

static int write_series(hid_t g, const series_desc *d, const void *data, int rows)
{
    hsize_t dims[2] = {(hsize_t)(data && rows > 0 ? rows : 0), (hsize_t)d->cols};
    hid_t sp = H5Screate_simple(d->cols ? 2 : 1, dims, NULL), ds = -1;
    int rc = -1;
    if (sp >= 0) ds = H5Dcreate2(g, d->name, d->file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
        rc = dims[0] > 0 && H5Dwrite(ds, d->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0;
        if (rc == 0) rc = mx_attr_write_str(ds, "units", d->units);
        if (rc == 0 && d->cols == MX_NPHASES) rc = write_phase_names(ds);
        if (H5Dclose(ds) < 0) rc = -1;
    }
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    return rc;
}

int mx_series_write(hid_t g, const mx_run_record *r)
{
    series_desc s[NSERIES];
    series_table(s);
    if (write_series(g, &s[S_STEP], r->step_time, r->nsteps) < 0) return -1;
    if (write_series(g, &s[S_PHASE], r->phase_time, r->nsteps) < 0) return -1;
    if (write_series(g, &s[S_LOSS], r->loss, r->nloss) < 0) return -1;
    if (write_series(g, &s[S_ACC], r->test_acc, r->nepochs) < 0) return -1;
    if (write_series(g, &s[S_EPOCH], r->epoch_time, r->nepochs) < 0) return -1;
    /* only where it exists: files of runs without fp16 AMP stay as they were */
    if (r->loss_scale && write_series(g, &s[S_SCALE], r->loss_scale, r->nloss) < 0) return -1;
    /* language models only, likewise */
    if (r->val_loss && write_series(g, &s[S_VLOSS], r->val_loss, r->nepochs) < 0) return -1;
    return 0;
}

/* Rows of `have` columns into rows of `want`, the columns a file lacks zero (a phase added
 * later took no time in runs before it). */
static int widen(void **data, size_t rows, size_t have, size_t want, size_t esize, const char *where,
                 const char *name)
{
    char *wide = calloc(rows * want, esize);
    if (!wide) return mx_error(MX_ENOMEM, "%s/%s: out of memory for %zu rows", where, name, rows);
    for (size_t r = 0; r < rows; r++) memcpy(wide + r * want * esize, (char *)*data + r * have * esize, have * esize);
    free(*data);
    *data = wide;
    return MX_OK;
}

/* Reads one series; an absent dataset reads as empty, like a zero-length one. */
static int read_series(hid_t g, const series_desc *d, const char *where, void **out, int *rows)
{
    *out = NULL;
    *rows = 0;
    int rc = mx_link_check(g, d->name, H5I_DATASET, where);
    if (rc <= 0) return rc;
    hid_t ds = H5Dopen2(g, d->name, H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hsize_t dims[2] = {0, 0};
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    rc = MX_OK;
    if (rank < 0)
        rc = mx_error(MX_EFORMAT, "%s/%s: cannot be read (file corrupt?)", where, d->name);
    else if (rank != (d->cols ? 2 : 1) || H5Sget_simple_extent_dims(sp, dims, NULL) < 0 ||
             (d->cols && (dims[1] > (hsize_t)d->cols || dims[1] < (hsize_t)(d->min_cols ? d->min_cols : d->cols))) ||
             dims[0] > INT32_MAX) {
        if (d->min_cols && d->min_cols < d->cols)
            rc = mx_error(MX_EFORMAT, "%s/%s: has the wrong shape (expected [n][%d..%d], n < 2^31)", where, d->name,
                          d->min_cols, d->cols);
        else
            rc = mx_error(MX_EFORMAT, "%s/%s: has the wrong shape (expected [n]%s%.0d%s, n < 2^31)", where, d->name,
                          d->cols ? "[" : "", d->cols, d->cols ? "]" : "");
    }
    const size_t cols = d->cols ? (size_t)dims[1] : 1; /* as stored */
    if (rc == MX_OK && dims[0] > 0) {
        /* the shape is only a claim: a file of a few bytes may declare 2^31 rows. Believe it
         * only as far as the bytes the dataset really holds (mxbench writes no filters), so
         * that a damaged file cannot make the reader allocate gigabytes */
        hid_t ft = H5Dget_type(ds);
        const size_t esize = ft >= 0 ? H5Tget_size(ft) : 0;
        if (ft >= 0) H5Tclose(ft);
        const hsize_t stored = H5Dget_storage_size(ds);
        if (esize == 0 || stored / esize / cols < dims[0])
            rc = mx_error(MX_EFORMAT, "%s/%s: declares %llu rows but holds %llu bytes (file damaged?)", where, d->name,
                          (unsigned long long)dims[0], (unsigned long long)stored);
    }
    if (rc == MX_OK && dims[0] > 0) {
        *out = malloc((size_t)dims[0] * cols * d->elem_size);
        if (!*out)
            rc = mx_error(MX_ENOMEM, "%s/%s: out of memory for %llu rows", where, d->name, (unsigned long long)dims[0]);
        else if (H5Dread(ds, d->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
            rc = mx_error(MX_EFORMAT, "%s/%s: cannot be read as numbers (file corrupt?)", where, d->name);
        else if (d->cols && cols < (size_t)d->cols)
            rc = widen(out, (size_t)dims[0], cols, (size_t)d->cols, d->elem_size, where, d->name);
        if (rc == MX_OK) *rows = (int)dims[0];
    }
    if (rc != MX_OK) {
        free(*out);
        *out = NULL;
    }
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

int mx_series_read(hid_t g, const char *where, mx_run_record *r)
{
    series_desc s[NSERIES];
    series_table(s);
    void *p[NSERIES] = {NULL};
    int n[NSERIES] = {0}, rc = MX_OK;
    for (int i = 0; i < NSERIES && rc == MX_OK; i++) rc = read_series(g, &s[i], where, &p[i], &n[i]);
    /* handed to the record even on failure, so that mx_record_free releases them */
    r->step_time = p[S_STEP], r->nsteps = n[S_STEP];
    r->phase_time = p[S_PHASE];
    r->loss = p[S_LOSS], r->nloss = n[S_LOSS];
    r->test_acc = p[S_ACC], r->nepochs = n[S_ACC];
    r->epoch_time = p[S_EPOCH];
    r->loss_scale = p[S_SCALE];
    r->val_loss = p[S_VLOSS];
    if (rc != MX_OK) return rc;
    if (r->val_loss && n[S_VLOSS] != r->nepochs)
        return mx_error(MX_EFORMAT, "%s: val_loss has %d entries but test_acc %d epochs (accepted: %d entries, or "
                        "none)", where, n[S_VLOSS], r->nepochs, r->nepochs);
    if (r->loss_scale && n[S_SCALE] != r->nloss)
        return mx_error(MX_EFORMAT, "%s: loss_scale has %d entries but loss %d steps (accepted: %d entries, or none)",
                        where, n[S_SCALE], r->nloss, r->nloss);
    /* companions of a series are either complete or empty */
    if (r->phase_time && n[S_PHASE] != r->nsteps)
        return mx_error(MX_EFORMAT, "%s: phase_time has %d rows but step_time %d steps (accepted: %d rows, or none)",
                        where, n[S_PHASE], r->nsteps, r->nsteps);
    if (r->epoch_time && n[S_EPOCH] != r->nepochs)
        return mx_error(MX_EFORMAT, "%s: epoch_time has %d entries but test_acc %d epochs (accepted: %d entries, "
                        "or none)", where, n[S_EPOCH], r->nepochs, r->nepochs);
    return MX_OK;
}
