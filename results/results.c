/* The HDF5 results store (results.h): file attributes, one group per run, the /summary table,
 * and the copy-modify-rename update that keeps the file whole across a kill at any moment.
 * The layout written here is documented field by field in results/SCHEMA.md. */
#include "results.h"

#include "engine/status.h"

#include <hdf5.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- field tables: one entry per attribute or /summary column, so writer, reader and
 * SCHEMA.md list the same names in the same order */

typedef enum { F_STR, F_INT, F_DBL } field_kind;

typedef struct {
    const char *name; /* attribute or column name in the file */
    field_kind kind;
    size_t off, size; /* where the value lives in the C struct */
} field;

#define MEMBER_SIZE(T, m) sizeof(((T *)0)->m)
#define RSTR(m) {#m, F_STR, offsetof(mx_run_record, m), MEMBER_SIZE(mx_run_record, m)}
#define RINT(m) {#m, F_INT, offsetof(mx_run_record, m), sizeof(int)}
#define RDBL(m) {#m, F_DBL, offsetof(mx_run_record, m), sizeof(double)}
#define MSTR(m) {#m, F_STR, offsetof(mx_results_meta, m), MEMBER_SIZE(mx_results_meta, m)}

static const field run_fields[] = {
    RSTR(workload),       RSTR(dataset),           RSTR(strategy),           RSTR(kvstore),
    RSTR(compression),    RSTR(amp),               RSTR(device_type),        RSTR(lr_scaling),
    RSTR(batch_mode),     RINT(gpus),              RINT(batch),              RINT(global_batch),
    RDBL(base_lr),        RDBL(lr),                RDBL(momentum),           RDBL(wd),
    RDBL(warmup_epochs),  RINT(epochs),            RINT(steps),              RINT(warmup_steps),
    RINT(repeats),        RINT(seed),              RINT(threads_per_device), RDBL(target_acc),
    RINT(test_samples),   RSTR(status),            RSTR(reason),             RINT(exit_status),
    RDBL(throughput),     RDBL(throughput_ci_low), RDBL(throughput_ci_high), RDBL(throughput_iqr),
    RDBL(throughput_agg), RDBL(step_time_median), RDBL(speedup),         RDBL(efficiency),         RDBL(final_test_acc),
    RDBL(time_to_acc),    RDBL(bytes_per_step),    RDBL(comm_overlap),       RDBL(wall_time),
};

/* /summary: a column's name differs from the record field only for test_acc, which holds the
 * final accuracy (the per-epoch series is the run group's test_acc dataset). */
static const field summary_fields[] = {
    RSTR(id),          RSTR(workload),       RSTR(dataset),           RSTR(strategy),
    RSTR(kvstore),     RSTR(compression),    RSTR(amp),               RSTR(device_type),
    RSTR(batch_mode),  RSTR(lr_scaling),     RSTR(status),            RINT(gpus),
    RINT(batch),       RINT(global_batch),   RDBL(base_lr),           RDBL(lr),
    RDBL(throughput),  RDBL(throughput_ci_low), RDBL(throughput_ci_high), RDBL(step_time_median),
    RDBL(throughput_agg), RDBL(speedup),     RDBL(efficiency),
    {"test_acc", F_DBL, offsetof(mx_run_record, final_test_acc), sizeof(double)},
    RDBL(time_to_acc), RDBL(bytes_per_step), RDBL(comm_overlap),      RDBL(wall_time),
};

static const field meta_fields[] = {
    MSTR(mxbench_version), MSTR(git_revision), MSTR(host),   MSTR(cpu_model),  MSTR(gpu_model),
    MSTR(gpu_driver),      MSTR(blas),         MSTR(onednn), MSTR(cuda),       MSTR(cudnn),
    MSTR(nccl),            MSTR(mpi),          MSTR(hdf5),   MSTR(start_time), MSTR(command_line),
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
enum { SUMMARY_CHUNK_ROWS = 64 };

/* HDF5 prints its own error stack to stderr by default; our messages replace it. */
static void quiet_hdf5(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* ---- attributes */

static hid_t string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

static int attr_write_str(hid_t obj, const char *name, const char *s)
{
    /* sized to the text so h5dump shows it without padding; deleted first because a
     * rewrite may need a different size */
    if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0) return -1;
    hid_t t = string_type(strlen(s) + 1), sp = H5Screate(H5S_SCALAR), a = -1;
    int rc = -1;
    if (t >= 0 && sp >= 0) a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) rc = H5Awrite(a, t, s) < 0 ? -1 : 0;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int attr_write_num(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *v)
{
    hid_t a = -1;
    if (H5Aexists(obj, name) > 0) {
        a = H5Aopen(obj, name, H5P_DEFAULT);
    } else {
        hid_t sp = H5Screate(H5S_SCALAR);
        if (sp >= 0) a = H5Acreate2(obj, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT);
        if (sp >= 0) H5Sclose(sp);
    }
    if (a < 0) return -1;
    int rc = H5Awrite(a, mem_type, v) < 0 ? -1 : 0;
    H5Aclose(a);
    return rc;
}

/* Reads a string attribute (fixed or variable length) into dst[n], truncating.
 * Returns 1 when read, 0 when absent, -1 on error. */
static int attr_read_str(hid_t obj, const char *name, char *dst, size_t n)
{
    if (H5Aexists(obj, name) <= 0) return 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ft = a >= 0 ? H5Aget_type(a) : -1, mt = -1;
    int rc = -1;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            char *s = NULL;
            mt = H5Tcopy(H5T_C_S1);
            if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &s) >= 0) {
                snprintf(dst, n, "%s", s ? s : "");
                H5free_memory(s);
                rc = 1;
            }
        } else {
            size_t size = H5Tget_size(ft);
            char *buf = calloc(size + 1, 1);
            mt = string_type(size + 1);
            if (buf && mt >= 0 && H5Aread(a, mt, buf) >= 0) {
                snprintf(dst, n, "%s", buf);
                rc = 1;
            }
            free(buf);
        }
    }
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int attr_read_num(hid_t obj, const char *name, hid_t mem_type, void *dst)
{
    if (H5Aexists(obj, name) <= 0) return 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    int rc = H5Aread(a, mem_type, dst) < 0 ? -1 : 1;
    H5Aclose(a);
    return rc;
}

static int write_fields(hid_t obj, const field *f, int nf, const void *base)
{
    for (int i = 0; i < nf; i++) {
        const char *p = (const char *)base + f[i].off;
        int rc = f[i].kind == F_STR   ? attr_write_str(obj, f[i].name, p)
                 : f[i].kind == F_INT ? attr_write_num(obj, f[i].name, H5T_STD_I32LE, H5T_NATIVE_INT, p)
                                      : attr_write_num(obj, f[i].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, p);
        if (rc < 0) return -1;
    }
    return 0;
}

/* Fields absent from the file keep the values the caller initialised (a reader tolerates
 * attributes it does not know and ones an older writer did not have). */
static int read_fields(hid_t obj, const field *f, int nf, void *base)
{
    for (int i = 0; i < nf; i++) {
        char *p = (char *)base + f[i].off;
        int rc = f[i].kind == F_STR   ? attr_read_str(obj, f[i].name, p, f[i].size)
                 : f[i].kind == F_INT ? attr_read_num(obj, f[i].name, H5T_NATIVE_INT, p)
                                      : attr_read_num(obj, f[i].name, H5T_NATIVE_DOUBLE, p);
        if (rc < 0) return -1;
    }
    return 0;
}

/* ---- series datasets */

typedef struct {
    const char *name, *units;
    int cols;          /* 0: one-dimensional [rows]; else [rows][cols] */
    hid_t file_type;   /* filled at run time: HDF5's predefined types are not constants */
    hid_t mem_type;
    size_t elem_size;
} series_desc;

static int write_series(hid_t g, const series_desc *d, const void *data, int rows)
{
    hsize_t dims[2] = {(hsize_t)(data && rows > 0 ? rows : 0), (hsize_t)d->cols};
    hid_t sp = H5Screate_simple(d->cols ? 2 : 1, dims, NULL), ds = -1;
    int rc = -1;
    if (sp >= 0) ds = H5Dcreate2(g, d->name, d->file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
        rc = dims[0] > 0 && H5Dwrite(ds, d->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0;
        if (rc == 0) rc = attr_write_str(ds, "units", d->units);
        if (rc == 0 && d->cols == MX_NPHASES) {
            /* names the columns, so the file explains itself without SCHEMA.md */
            char names[MX_NPHASES][16] = {{0}}; /* all bytes go to the file, padding included */
            hsize_t n = MX_NPHASES;
            for (int i = 0; i < MX_NPHASES; i++) snprintf(names[i], sizeof names[i], "%s", mx_phase_names[i]);
            hid_t t = string_type(sizeof names[0]), asp = H5Screate_simple(1, &n, NULL), a = -1;
            if (t >= 0 && asp >= 0) a = H5Acreate2(ds, "phases", t, asp, H5P_DEFAULT, H5P_DEFAULT);
            rc = a >= 0 && H5Awrite(a, t, names) >= 0 ? 0 : -1;
            if (a >= 0) H5Aclose(a);
            if (asp >= 0) H5Sclose(asp);
            if (t >= 0) H5Tclose(t);
        }
        H5Dclose(ds);
    }
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

/* Reads a series; an absent dataset reads as empty, like a zero-length one.
 * Returns 0, -1 on an HDF5 error, -2 on a wrong shape, -3 out of memory. */
static int read_series(hid_t g, const series_desc *d, void **out, int *rows)
{
    *out = NULL;
    *rows = 0;
    if (H5Lexists(g, d->name, H5P_DEFAULT) <= 0) return 0;
    hid_t ds = H5Dopen2(g, d->name, H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hsize_t dims[2] = {0, 0};
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1, rc = 0;
    if (rank < 0)
        rc = -1;
    else if (rank != (d->cols ? 2 : 1) || H5Sget_simple_extent_dims(sp, dims, NULL) < 0 ||
             (d->cols && dims[1] != (hsize_t)d->cols) || dims[0] > 0x7fffffff)
        rc = -2;
    if (rc == 0 && dims[0] > 0) {
        size_t cols = d->cols ? (size_t)d->cols : 1;
        *out = malloc((size_t)dims[0] * cols * d->elem_size);
        if (!*out)
            rc = -3;
        else if (H5Dread(ds, d->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
            rc = -1;
        if (rc == 0) *rows = (int)dims[0];
    }
    if (rc != 0) {
        free(*out);
        *out = NULL;
    }
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

enum { S_STEP, S_PHASE, S_LOSS, S_ACC, S_EPOCH, NSERIES };

static void series_table(series_desc s[NSERIES])
{
    s[S_STEP] = (series_desc){"step_time", "s", 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_PHASE] = (series_desc){"phase_time", "s", MX_NPHASES, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_LOSS] = (series_desc){"loss", "1", 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, sizeof(float)};
    s[S_ACC] = (series_desc){"test_acc", "fraction", 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
    s[S_EPOCH] = (series_desc){"epoch_time", "s", 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
}

static int write_run_series(hid_t g, const mx_run_record *r)
{
    series_desc s[NSERIES];
    series_table(s);
    if (write_series(g, &s[S_STEP], r->step_time, r->nsteps) < 0) return -1;
    if (write_series(g, &s[S_PHASE], r->phase_time, r->nsteps) < 0) return -1;
    if (write_series(g, &s[S_LOSS], r->loss, r->nloss) < 0) return -1;
    if (write_series(g, &s[S_ACC], r->test_acc, r->nepochs) < 0) return -1;
    if (write_series(g, &s[S_EPOCH], r->epoch_time, r->nepochs) < 0) return -1;
    return 0;
}

static int series_error(int rc, const char *path, const mx_run_record *r, const char *name)
{
    if (rc == -3) return mx_error(MX_ENOMEM, "%s: run '%s': out of memory reading %s", path, r->id, name);
    return mx_error(MX_EFORMAT, "%s: run '%s': dataset %s %s", path, r->id, name,
                    rc == -2 ? "has the wrong shape" : "cannot be read (file corrupt?)");
}

static int read_run_series(hid_t g, const char *path, mx_run_record *r)
{
    series_desc s[NSERIES];
    series_table(s);
    void *p[NSERIES] = {NULL};
    int n[NSERIES] = {0}, rc = 0, i;
    for (i = 0; i < NSERIES && rc == 0; i++) rc = read_series(g, &s[i], &p[i], &n[i]);
    /* handed to the record even on failure, so that mx_record_free releases them */
    r->step_time = p[S_STEP], r->nsteps = n[S_STEP];
    r->phase_time = p[S_PHASE];
    r->loss = p[S_LOSS], r->nloss = n[S_LOSS];
    r->test_acc = p[S_ACC], r->nepochs = n[S_ACC];
    r->epoch_time = p[S_EPOCH];
    if (rc != 0) return series_error(rc, path, r, s[i - 1].name);
    /* companions of a series are either complete or empty */
    if ((r->phase_time && n[S_PHASE] != r->nsteps) || (r->epoch_time && n[S_EPOCH] != r->nepochs))
        return mx_error(MX_EFORMAT, "%s: run '%s': phase_time/epoch_time lengths do not match "
                        "step_time/test_acc (%d/%d steps, %d/%d epochs)", path, r->id, n[S_PHASE],
                        r->nsteps, n[S_EPOCH], r->nepochs);
    return MX_OK;
}

/* ---- /summary */

/* The memory type describes mx_run_record itself, so rows are written straight from the
 * records with no intermediate struct to keep in step. The file type holds the same
 * columns packed, in table order, with explicit little-endian numbers. */
static hid_t summary_type(int in_file)
{
    size_t size = in_file ? 0 : sizeof(mx_run_record);
    for (int i = 0; in_file && i < COUNT(summary_fields); i++) size += summary_fields[i].size;
    hid_t t = H5Tcreate(H5T_COMPOUND, size);
    size_t off = 0;
    for (int i = 0; t >= 0 && i < COUNT(summary_fields); i++) {
        const field *f = &summary_fields[i];
        hid_t num = f->kind == F_INT ? (in_file ? H5T_STD_I32LE : H5T_NATIVE_INT)
                                     : (in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        hid_t m = f->kind == F_STR ? string_type(f->size) : H5Tcopy(num);
        herr_t e = m >= 0 ? H5Tinsert(t, f->name, in_file ? off : f->off, m) : -1;
        off += f->size;
        if (m >= 0) H5Tclose(m);
        if (e < 0) {
            H5Tclose(t);
            return -1;
        }
    }
    return t;
}

static int create_summary(hid_t fid)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = SUMMARY_CHUNK_ROWS;
    hid_t ft = summary_type(1);
    hid_t sp = H5Screate_simple(1, &dims, &maxdims), pl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
    if (ft >= 0 && sp >= 0 && pl >= 0 && H5Pset_chunk(pl, 1, &chunk) >= 0)
        ds = H5Dcreate2(fid, "summary", ft, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    int rc = ds >= 0 ? 0 : -1;
    if (ds >= 0) H5Dclose(ds);
    if (pl >= 0) H5Pclose(pl);
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    return rc;
}

/* Rewrites every row: speedup and efficiency of earlier rows change when a run is added. */
static int write_summary(hid_t fid, const mx_run_record *recs, int n)
{
    hsize_t dims = (hsize_t)n;
    hid_t ds = H5Dopen2(fid, "summary", H5P_DEFAULT), mt = summary_type(0);
    int rc = ds >= 0 && mt >= 0 && H5Dset_extent(ds, &dims) >= 0 ? 0 : -1;
    if (rc == 0 && n > 0) rc = H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, recs) < 0 ? -1 : 0;
    if (mt >= 0) H5Tclose(mt);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

/* Run ids in /summary order; *ids is an array of n names. */
static int read_summary_ids(hid_t fid, const char *path, char (**ids)[MEMBER_SIZE(mx_run_record, id)], int *n)
{
    enum { ID = MEMBER_SIZE(mx_run_record, id) };
    *ids = NULL;
    *n = 0;
    if (H5Lexists(fid, "summary", H5P_DEFAULT) <= 0)
        return mx_error(MX_EFORMAT, "%s: no /summary table (file damaged or not written by mxbench)", path);
    hid_t ds = H5Dopen2(fid, "summary", H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hid_t st = string_type(ID), mt = H5Tcreate(H5T_COMPOUND, ID);
    hsize_t rows = 0;
    int rc = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, &rows, NULL) >= 0 &&
                     st >= 0 && mt >= 0 && H5Tinsert(mt, "id", 0, st) >= 0 && rows < 0x7fffffff
                 ? MX_OK
                 : mx_error(MX_EFORMAT, "%s: /summary is not a one-dimensional table", path);
    if (rc == MX_OK && rows > 0) {
        *ids = calloc((size_t)rows, ID);
        if (!*ids)
            rc = mx_error(MX_ENOMEM, "%s: out of memory for %llu runs", path, (unsigned long long)rows);
        else if (H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *ids) < 0)
            rc = mx_error(MX_EFORMAT, "%s: /summary has no readable 'id' column", path);
    }
    if (rc == MX_OK) *n = (int)rows;
    for (int i = 0; rc == MX_OK && i < *n; i++) (*ids)[i][ID - 1] = '\0';
    if (rc != MX_OK) {
        free(*ids);
        *ids = NULL;
    }
    if (mt >= 0) H5Tclose(mt);
    if (st >= 0) H5Tclose(st);
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

/* ---- runs */

static int check_id(const char *id)
{
    if (!id[0] || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return mx_error(MX_EINVAL, "run id '%s' is not a valid group name (non-empty, no '/')", id);
    return MX_OK;
}

static int write_run(hid_t runs, const char *path, const mx_run_record *r)
{
    if (H5Lexists(runs, r->id, H5P_DEFAULT) > 0)
        return mx_error(MX_EINVAL, "%s: run id '%s' is already in the file; ids must be unique", path, r->id);
    hid_t g = H5Gcreate2(runs, r->id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = g >= 0 && write_fields(g, run_fields, COUNT(run_fields), r) == 0 && write_run_series(g, r) == 0;
    if (g >= 0) H5Gclose(g);
    return rc ? MX_OK : mx_error(MX_EIO, "%s: cannot write run '%s' (disk full?)", path, r->id);
}

static int read_run(hid_t runs, const char *path, const char *id, int with_series, mx_run_record *r)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "%s", id);
    if (H5Lexists(runs, id, H5P_DEFAULT) <= 0)
        return mx_error(MX_EFORMAT, "%s: /summary lists run '%s' but /runs/%s is missing", path, id, id);
    hid_t g = H5Gopen2(runs, id, H5P_DEFAULT);
    int rc = g >= 0 && read_fields(g, run_fields, COUNT(run_fields), r) == 0
                 ? MX_OK
                 : mx_error(MX_EFORMAT, "%s: cannot read the attributes of /runs/%s", path, id);
    if (rc == MX_OK && with_series) rc = read_run_series(g, path, r);
    if (g >= 0) H5Gclose(g);
    return rc;
}

/* Rewrites the figures that depend on other runs of the same series. */
static int write_scaling(hid_t runs, const char *path, const mx_run_record *r)
{
    hid_t g = H5Gopen2(runs, r->id, H5P_DEFAULT);
    int ok = g >= 0 && attr_write_num(g, "speedup", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &r->speedup) == 0 &&
             attr_write_num(g, "efficiency", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &r->efficiency) == 0;
    if (g >= 0) H5Gclose(g);
    return ok ? MX_OK : mx_error(MX_EIO, "%s: cannot update speedup/efficiency of run '%s'", path, r->id);
}

/* ---- whole files */

static int read_header(hid_t fid, const char *path, mx_results *out)
{
    int version = 0;
    int rc = attr_read_num(fid, "schema_version", H5T_NATIVE_INT, &version);
    if (rc <= 0)
        return mx_error(MX_EFORMAT, "%s: an HDF5 file but not an mxbench results file (no schema_version "
                        "attribute)", path);
    if (version > MX_RESULTS_SCHEMA_VERSION)
        return mx_error(MX_EFORMAT, "%s: schema version %d is newer than this mxbench reads (up to %d); "
                        "use a newer mxbench", path, version, MX_RESULTS_SCHEMA_VERSION);
    if (version < 1)
        return mx_error(MX_EFORMAT, "%s: invalid schema_version %d (expected 1..%d)", path, version,
                        MX_RESULTS_SCHEMA_VERSION);
    out->schema_version = version;
    if (read_fields(fid, meta_fields, COUNT(meta_fields), &out->meta) < 0)
        return mx_error(MX_EFORMAT, "%s: unreadable file attributes", path);
    return MX_OK;
}

static int read_runs(hid_t fid, const char *path, int with_series, mx_results *out)
{
    char(*ids)[MEMBER_SIZE(mx_run_record, id)];
    int n, rc = read_summary_ids(fid, path, &ids, &n);
    if (rc != MX_OK) return rc;
    hid_t runs = H5Lexists(fid, "runs", H5P_DEFAULT) > 0 ? H5Gopen2(fid, "runs", H5P_DEFAULT) : -1;
    if (runs < 0) rc = mx_error(MX_EFORMAT, "%s: no /runs group (file damaged or not written by mxbench)", path);
    /* one spare slot: append adds its record without reallocating */
    out->runs = rc == MX_OK ? calloc((size_t)n + 1, sizeof *out->runs) : NULL;
    if (rc == MX_OK && !out->runs) rc = mx_error(MX_ENOMEM, "%s: out of memory for %d runs", path, n);
    for (int i = 0; rc == MX_OK && i < n; i++) {
        rc = read_run(runs, path, ids[i], with_series, &out->runs[i]);
        out->nruns = i + 1; /* the failed one too: its partial series are freed with the rest */
    }
    if (runs >= 0) H5Gclose(runs);
    free(ids);
    return rc;
}

static int file_check(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return mx_error(MX_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return mx_error(MX_EIO, "%s: not a regular file", path);
    if (access(path, R_OK) != 0) return mx_error(MX_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (H5Fis_hdf5(path) <= 0)
        return mx_error(MX_EFORMAT, "%s: not an HDF5 file, so not an mxbench results file", path);
    return MX_OK;
}

static hid_t open_file(const char *path, const char *shown_as, unsigned flags)
{
    hid_t fid = H5Fopen(path, flags, H5P_DEFAULT);
    if (fid < 0) mx_error(MX_EFORMAT, "%s: cannot be opened as HDF5 (truncated or corrupt?)", shown_as);
    return fid;
}

static void close_file(hid_t fid)
{
    /* every object opened here must be closed, or HDF5 would keep the file open */
    assert(H5Fget_obj_count(fid, H5F_OBJ_ALL) == 1);
    H5Fclose(fid);
}

int mx_results_load(const char *path, mx_results *out)
{
    memset(out, 0, sizeof *out);
    quiet_hdf5();
    MX_TRY(file_check(path));
    hid_t fid = open_file(path, path, H5F_ACC_RDONLY);
    if (fid < 0) return MX_EFORMAT;
    int rc = read_header(fid, path, out);
    if (rc == MX_OK) rc = read_runs(fid, path, 1, out);
    close_file(fid);
    if (rc != MX_OK) mx_results_free(out);
    return rc;
}

void mx_results_free(mx_results *r)
{
    for (int i = 0; i < r->nruns; i++) mx_record_free(&r->runs[i]);
    free(r->runs);
    r->runs = NULL;
    r->nruns = 0;
}

/* ---- crash-safe replacement: work on <path>.tmp-<pid>, then rename over path */

static void tmp_name(const char *path, char *buf, size_t n) { snprintf(buf, n, "%s.tmp-%ld", path, (long)getpid()); }

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Makes the tmp file durable and puts it in place; rename() is atomic, so a reader (or a
 * crash) sees either the old file or the new one, never a mix. */
static int commit_file(const char *tmp, const char *path)
{
    if (fsync_path(tmp, O_RDWR) != 0)
        return mx_error(MX_EIO, "%s: cannot flush the update to disk: %s", path, strerror(errno));
    if (rename(tmp, path) != 0)
        return mx_error(MX_EIO, "%s: cannot replace it with the updated copy: %s", path, strerror(errno));
    /* the rename itself is durable only once the directory is synced */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    fsync_path(slash ? dir : ".", O_RDONLY); /* best effort: some filesystems refuse */
    return MX_OK;
}

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

static int copy_fd(int in, int out)
{
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    for (;;) {
        ssize_t got = read(in, buf, BUF);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0 || write_all(out, buf, (size_t)got) != 0) {
            rc = got == 0 ? 0 : -1;
            break;
        }
    }
    free(buf);
    return rc;
}

static int copy_file(const char *src, const char *dst, const char *shown_as)
{
    int in = open(src, O_RDONLY);
    if (in < 0) return mx_error(MX_EIO, "%s: cannot open: %s", shown_as, strerror(errno));
    struct stat st;
    int out = fstat(in, &st) == 0 ? open(dst, O_WRONLY | O_CREAT | O_TRUNC, st.st_mode & 0777) : -1;
    int rc = MX_OK;
    if (out < 0)
        rc = mx_error(MX_EIO, "%s: cannot create the working copy %s: %s", shown_as, dst, strerror(errno));
    else if (copy_fd(in, out) != 0)
        rc = mx_error(MX_EIO, "%s: cannot copy to %s: %s", shown_as, dst, strerror(errno));
    if (out >= 0 && close(out) != 0 && rc == MX_OK)
        rc = mx_error(MX_EIO, "%s: cannot write %s: %s", shown_as, dst, strerror(errno));
    close(in);
    return rc;
}

static int create_layout(hid_t fid, const mx_results_meta *meta)
{
    int version = MX_RESULTS_SCHEMA_VERSION;
    if (attr_write_num(fid, "schema_version", H5T_STD_I32LE, H5T_NATIVE_INT, &version) < 0) return -1;
    if (write_fields(fid, meta_fields, COUNT(meta_fields), meta) < 0) return -1;
    hid_t g = H5Gcreate2(fid, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return -1;
    H5Gclose(g);
    return create_summary(fid);
}

int mx_results_create(const char *path, const mx_results_meta *meta, int force)
{
    quiet_hdf5();
    if (!force && access(path, F_OK) == 0)
        return mx_error(MX_EIO, "%s: already exists; pass --force to overwrite it or --resume to continue it",
                        path);
    char tmp[4200];
    tmp_name(path, tmp, sizeof tmp);
    /* opened first with plain open(2), whose errno says why a path is unusable */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) return mx_error(MX_EIO, "%s: cannot create: %s", path, strerror(errno));
    close(fd);
    hid_t fid = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    int rc = fid >= 0 ? MX_OK : mx_error(MX_EIO, "%s: HDF5 cannot create %s", path, tmp);
    if (rc == MX_OK && create_layout(fid, meta) < 0) rc = mx_error(MX_EIO, "%s: cannot write the layout (disk full?)", path);
    if (fid >= 0) close_file(fid);
    if (rc == MX_OK) rc = commit_file(tmp, path);
    if (rc != MX_OK) unlink(tmp);
    return rc;
}

/* The update proper, on the open working copy: new group, scaling figures, summary. */
static int append_to(hid_t fid, const char *path, const mx_run_record *rec)
{
    mx_results cur;
    memset(&cur, 0, sizeof cur);
    int rc = read_header(fid, path, &cur);
    if (rc == MX_OK) rc = read_runs(fid, path, 0, &cur);
    hid_t runs = rc == MX_OK ? H5Gopen2(fid, "runs", H5P_DEFAULT) : -1;
    if (rc == MX_OK) rc = write_run(runs, path, rec);
    if (rc == MX_OK) {
        mx_run_record *slot = &cur.runs[cur.nruns++];
        *slot = *rec;
        /* the scalar fields are what the summary and scaling need; the series stay the caller's */
        slot->step_time = slot->phase_time = slot->test_acc = slot->epoch_time = NULL;
        slot->loss = NULL;
        slot->nsteps = slot->nloss = slot->nepochs = 0;
        mx_records_derive_scaling(cur.runs, cur.nruns);
    }
    for (int i = 0; rc == MX_OK && i < cur.nruns; i++) rc = write_scaling(runs, path, &cur.runs[i]);
    if (rc == MX_OK && write_summary(fid, cur.runs, cur.nruns) < 0)
        rc = mx_error(MX_EIO, "%s: cannot rewrite /summary (disk full?)", path);
    if (runs >= 0) H5Gclose(runs);
    mx_results_free(&cur);
    return rc;
}

int mx_results_append(const char *path, const mx_run_record *rec)
{
    quiet_hdf5();
    MX_TRY(check_id(rec->id));
    MX_TRY(file_check(path));
    char tmp[4200];
    tmp_name(path, tmp, sizeof tmp);
    int rc = copy_file(path, tmp, path);
    hid_t fid = rc == MX_OK ? open_file(tmp, path, H5F_ACC_RDWR) : -1;
    if (rc == MX_OK && fid < 0) rc = MX_EFORMAT;
    if (rc == MX_OK) rc = append_to(fid, path, rec);
    if (fid >= 0) close_file(fid);
    if (rc == MX_OK) rc = commit_file(tmp, path);
    if (rc != MX_OK) unlink(tmp);
    return rc;
}
