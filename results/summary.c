/* The /summary table of the results store (store.h): one row per run, in the order the runs
 * were recorded, its columns repeating attributes of the run groups. Written from the
 * records in full on every append; read for the run order and checked against the runs. */
#include "store.h"

#include "base/status.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUMMARY_CHUNK_ROWS = 64 };


int mx_check_id(const char *id, const char *path, int code)
{
    if (!id[0] || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return mx_error(code, "%s: run id '%s' is not a valid group name (accepted: non-empty, no '/', not . "
                        "or ..)", path, id);
    return MX_OK;
}

/* The memory type describes mx_run_record itself, so rows are written straight from the
 * records with no intermediate struct to keep in step. The file type holds the same
 * columns packed, in table order, with explicit little-endian numbers. With only set (a
 * file's own type), the memory type has just the columns that file has. */
static hid_t summary_type(int in_file, hid_t only)
{
    size_t size = in_file ? 0 : sizeof(mx_run_record);
    for (int i = 0; in_file && i < mx_nsummary_fields; i++) size += mx_summary_fields[i].size;
    hid_t t = H5Tcreate(H5T_COMPOUND, size);
    size_t off = 0;
    for (int i = 0; t >= 0 && i < mx_nsummary_fields; i++) {
        const mx_field *f = &mx_summary_fields[i];
        if (only >= 0 && H5Tget_member_index(only, f->name) < 0) continue;
        hid_t num = f->kind == F_INT ? (in_file ? H5T_STD_I32LE : H5T_NATIVE_INT)
                                     : (in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        hid_t m = f->kind == F_STR ? mx_store_string_type(f->size) : H5Tcopy(num);
        herr_t e = m >= 0 ? H5Tinsert(t, f->name, in_file ? off : f->off, m) : -1;
        off += f->size;
        if (m >= 0 && H5Tclose(m) < 0) e = -1;
        if (e < 0) {
            H5Tclose(t);
            return -1;
        }
    }
    return t;
}

int mx_summary_create(hid_t fid)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = SUMMARY_CHUNK_ROWS;
    hid_t ft = summary_type(1, -1);
    hid_t sp = H5Screate_simple(1, &dims, &maxdims), pl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
    if (ft >= 0 && sp >= 0 && pl >= 0 && H5Pset_chunk(pl, 1, &chunk) >= 0)
        ds = H5Dcreate2(fid, "summary", ft, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    int rc = ds >= 0 ? 0 : -1;
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    if (pl >= 0 && H5Pclose(pl) < 0) rc = -1;
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    if (ft >= 0 && H5Tclose(ft) < 0) rc = -1;
    return rc;
}

/* Rewrites every row: speedup and efficiency of earlier rows change when a run is added. */
int mx_summary_write(hid_t fid, const mx_run_record *recs, int n)
{
    hsize_t dims = (hsize_t)n;
    hid_t ds = H5Dopen2(fid, "summary", H5P_DEFAULT), mt = summary_type(0, -1);
    int rc = ds >= 0 && mt >= 0 && H5Dset_extent(ds, &dims) >= 0 ? 0 : -1;
    if (rc == 0 && n > 0) rc = H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, recs) < 0 ? -1 : 0;
    if (mt >= 0 && H5Tclose(mt) < 0) rc = -1;
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    return rc;
}

static int cmp_id(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Ids must name distinct groups: with as many rows as /runs has entries, that makes every
 * entry of /runs a listed run. */
static int check_ids(const char *path, const mx_run_record *rows, int n)
{
    for (int i = 0; i < n; i++) MX_TRY(mx_check_id(rows[i].id, path, MX_EFORMAT));
    const char **sorted = malloc((n > 0 ? (size_t)n : 1) * sizeof *sorted);
    if (!sorted) return mx_error(MX_ENOMEM, "%s: out of memory for %d run ids", path, n);
    for (int i = 0; i < n; i++) sorted[i] = rows[i].id;
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_id);
    int rc = MX_OK;
    for (int i = 1; i < n && rc == MX_OK; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            rc = mx_error(MX_EFORMAT, "%s: /summary lists run '%s' twice (accepted: each run once)", path, sorted[i]);
    free(sorted);
    return rc;
}

static int read_rows(hid_t ds, hid_t ft, const char *path, hsize_t nrows, mx_run_record **rows,
                     unsigned char present[MX_SUMMARY_MAX_COLS])
{
    if (H5Tget_class(ft) != H5T_COMPOUND || H5Tget_member_index(ft, "id") < 0)
        return mx_error(MX_EFORMAT, "%s: /summary is not a table with an 'id' column", path);
    for (int c = 0; c < mx_nsummary_fields; c++) present[c] = H5Tget_member_index(ft, mx_summary_fields[c].name) >= 0;
    hid_t mt = summary_type(0, ft);
    if (mt < 0) return mx_error(MX_EFORMAT, "%s: /summary: cannot describe its columns", path);
    *rows = calloc((size_t)(nrows ? nrows : 1), sizeof **rows);
    int rc = *rows ? MX_OK : mx_error(MX_ENOMEM, "%s: out of memory for %llu runs", path, (unsigned long long)nrows);
    if (rc == MX_OK && nrows > 0 && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) < 0)
        rc = mx_error(MX_EFORMAT, "%s: /summary cannot be read (a column of the wrong type, or file corrupt)", path);
    H5Tclose(mt);
    return rc;
}

int mx_summary_read(hid_t fid, const char *path, unsigned long long nruns, mx_run_record **rows, int *n,
                    unsigned char present[MX_SUMMARY_MAX_COLS])
{
    *rows = NULL;
    *n = 0;
    char top[4200];
    snprintf(top, sizeof top, "%s: ", path); /* links are named "<path>: /summary" */
    int rc = mx_link_check(fid, "summary", H5I_DATASET, top);
    if (rc == 0) return mx_error(MX_EFORMAT, "%s: no /summary table (file damaged or not written by mxbench)", path);
    if (rc < 0) return rc;
    hid_t ds = H5Dopen2(fid, "summary", H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hid_t ft = ds >= 0 ? H5Dget_type(ds) : -1;
    hsize_t nrows = 0;
    rc = sp >= 0 && ft >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, &nrows, NULL) >= 0
             ? MX_OK
             : mx_error(MX_EFORMAT, "%s: /summary is not a one-dimensional table", path);
    /* checked before allocating: a damaged extent must not ask for gigabytes */
    if (rc == MX_OK && nrows != nruns)
        rc = mx_error(MX_EFORMAT, "%s: /summary lists %llu runs but /runs holds %llu (accepted: one row per run)", path,
                      (unsigned long long)nrows, nruns);
    if (rc == MX_OK && nrows > INT32_MAX - 1)
        rc = mx_error(MX_EFORMAT, "%s: /summary has %llu rows (accepted: fewer than 2^31)", path,
                      (unsigned long long)nrows);
    if (rc == MX_OK) rc = read_rows(ds, ft, path, nrows, rows, present);
    if (rc == MX_OK) {
        *n = (int)nrows;
        for (int i = 0; i < *n; i++) (*rows)[i].id[MX_ID_SIZE - 1] = '\0';
        rc = check_ids(path, *rows, *n);
    }
    if (rc != MX_OK) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

static void field_text(const mx_field *f, const mx_run_record *r, char *buf, size_t n)
{
    const char *p = (const char *)r + f->off;
    if (f->kind == F_STR) snprintf(buf, n, "'%.*s'", (int)f->size, p);
    else if (f->kind == F_INT) snprintf(buf, n, "%d", *(const int *)p);
    else snprintf(buf, n, "%.17g", *(const double *)p);
}

static int field_equal(const mx_field *f, const mx_run_record *a, const mx_run_record *b)
{
    const char *p = (const char *)a + f->off, *q = (const char *)b + f->off;
    if (f->kind == F_STR) return strncmp(p, q, f->size) == 0;
    if (f->kind == F_INT) return *(const int *)p == *(const int *)q;
    double x = *(const double *)p, y = *(const double *)q;
    return x == y || (isnan(x) && isnan(y));
}

int mx_summary_check(const char *path, const mx_run_record *rows, const mx_run_record *runs, int n,
                     const unsigned char present[MX_SUMMARY_MAX_COLS])
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < mx_nsummary_fields; c++) {
            const mx_field *f = &mx_summary_fields[c];
            if (!present[c] || field_equal(f, &rows[i], &runs[i])) continue;
            char said[64], has[64];
            field_text(f, &rows[i], said, sizeof said);
            field_text(f, &runs[i], has, sizeof has);
            /* the two are written together in one atomic update: a difference is damage */
            return mx_error(MX_EFORMAT, "%s: /summary row %d says %s = %s for run '%s', but /runs/%s has %s (the "
                            "file was edited or damaged)", path, i, f->name, said, rows[i].id, rows[i].id, has);
        }
    return MX_OK;
}
