/* Tables of a run (store.h): a one-dimensional compound dataset of rows of a C struct whose
 * columns an mx_field list names (the rank table of a dist_* run, the device and layer
 * tables of every run). The reader believes no size the file declares beyond the bytes it
 * holds, reads only the columns it knows, fills the absent ones (NaN, 0, "") and ends every
 * string it reads (SCHEMA.md, "What a reader checks"). */
#include "store.h"

#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The file type (packed, little-endian, in list order) or the memory type (the struct);
 * with only >= 0 (a file's own type), the memory type has just the columns that file has. */
static hid_t row_type(const mx_table_def *t, int in_file, hid_t only)
{
    size_t size = in_file ? 0 : t->row_size;
    for (int i = 0; in_file && i < t->ncols; i++) size += t->cols[i].size;
    hid_t ty = H5Tcreate(H5T_COMPOUND, size);
    size_t off = 0;
    for (int i = 0; ty >= 0 && i < t->ncols; i++) {
        const mx_field *c = &t->cols[i];
        const int skip = only >= 0 && H5Tget_member_index(only, c->name) < 0;
        hid_t num = c->kind == F_INT ? (in_file ? H5T_STD_I32LE : H5T_NATIVE_INT)
                                     : (in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        hid_t m = skip ? 0 : c->kind == F_STR ? mx_store_string_type(c->size) : H5Tcopy(num);
        herr_t e = skip ? 0 : m >= 0 ? H5Tinsert(ty, c->name, in_file ? off : c->off, m) : -1;
        off += c->size;
        if (!skip && m >= 0 && H5Tclose(m) < 0) e = -1;
        if (e < 0) {
            H5Tclose(ty);
            return -1;
        }
    }
    return ty;
}

int mx_table_write(hid_t g, const mx_table_def *t, const void *rows, int n)
{
    if (n <= 0 || !rows) return 0; /* nothing measured: no dataset */
    hsize_t dims = (hsize_t)n;
    hid_t ft = row_type(t, 1, -1), mt = row_type(t, 0, -1), sp = H5Screate_simple(1, &dims, NULL), ds = -1;
    if (ft >= 0 && sp >= 0) ds = H5Dcreate2(g, t->name, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds >= 0 && mt >= 0 && H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0 ? 0 : -1;
    if (rc == 0 && t->units) rc = mx_attr_write_str(ds, "units", t->units);
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    if (mt >= 0 && H5Tclose(mt) < 0) rc = -1;
    if (ft >= 0 && H5Tclose(ft) < 0) rc = -1;
    return rc;
}

/* MX_OK when the file's row type ft is a table mxbench can read: a compound whose columns
 * named like ours are numbers or fixed-length strings where ours are, with the required ones. */
static int check_row_type(const mx_table_def *t, hid_t ft, const char *where, unsigned char *present)
{
    if (H5Tget_class(ft) != H5T_COMPOUND || H5Tget_size(ft) == 0)
        return mx_error(MX_EFORMAT, "%s/%s: is not a table (expected a compound dataset, see SCHEMA.md)", where,
                        t->name);
    for (int i = 0; i < t->ncols; i++) {
        const mx_field *c = &t->cols[i];
        int idx = H5Tget_member_index(ft, c->name);
        present[i] = idx >= 0;
        if (idx < 0) {
            if (c->required)
                return mx_error(MX_EFORMAT, "%s/%s: has no '%s' column (required)", where, t->name, c->name);
            continue;
        }
        hid_t mt = H5Tget_member_type(ft, (unsigned)idx);
        H5T_class_t k = mt >= 0 ? H5Tget_class(mt) : H5T_NO_CLASS;
        int ok = c->kind == F_STR ? k == H5T_STRING && H5Tis_variable_str(mt) == 0 : k == H5T_INTEGER || k == H5T_FLOAT;
        if (mt >= 0) H5Tclose(mt);
        if (!ok)
            return mx_error(MX_EFORMAT, "%s/%s: column '%s' is not %s", where, t->name, c->name,
                            c->kind == F_STR ? "a fixed-length string" : "a number");
    }
    return MX_OK;
}

/* What a row holds for the columns the file lacks (NaN, 0, ""), and every string ended. */
static void finish_row(const mx_table_def *t, char *row, const unsigned char *present)
{
    for (int i = 0; i < t->ncols; i++) {
        const mx_field *c = &t->cols[i];
        char *p = row + c->off;
        if (!present[i]) {
            if (c->kind == F_DBL) *(double *)p = NAN;
            else memset(p, 0, c->size);
        }
        if (c->kind == F_STR) p[c->size - 1] = '\0';
    }
}

int mx_table_read(hid_t g, const char *where, const mx_table_def *t, void **rows, int *n_out)
{
    *rows = NULL;
    *n_out = 0;
    int rc = mx_link_check(g, t->name, H5I_DATASET, where);
    if (rc <= 0) return rc; /* absent: a run without such a table, or a file from before it */
    hid_t ds = H5Dopen2(g, t->name, H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hid_t ft = ds >= 0 ? H5Dget_type(ds) : -1, mt = -1;
    hsize_t n = 0;
    unsigned char present[MX_MAX_FIELDS] = {0};
    char *buf = NULL;
    rc = sp >= 0 && ft >= 0 ? MX_OK : mx_error(MX_EFORMAT, "%s/%s: cannot be read (file corrupt?)", where, t->name);
    if (rc == MX_OK && (H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &n, NULL) < 0))
        rc = mx_error(MX_EFORMAT, "%s/%s: has the wrong shape (expected one row per %s)", where, t->name, t->row_noun);
    if (rc == MX_OK && n > (hsize_t)t->max_rows)
        rc = mx_error(MX_EFORMAT, "%s/%s: has %llu rows (accepted: up to %d)", where, t->name, (unsigned long long)n,
                      t->max_rows);
    if (rc == MX_OK) rc = check_row_type(t, ft, where, present);
    if (rc == MX_OK && n > 0) {
        /* the shape is only a claim: believe it as far as the bytes the dataset holds */
        const size_t esize = H5Tget_size(ft);
        const hsize_t stored = H5Dget_storage_size(ds);
        if (esize == 0 || stored / esize < n)
            rc = mx_error(MX_EFORMAT, "%s/%s: declares %llu rows but holds %llu bytes (file damaged?)", where, t->name,
                          (unsigned long long)n, (unsigned long long)stored);
    }
    if (rc == MX_OK && n > 0) {
        mt = row_type(t, 0, ft);
        buf = calloc((size_t)n, t->row_size);
        if (mt < 0) rc = mx_error(MX_EFORMAT, "%s/%s: cannot describe its columns", where, t->name);
        else if (!buf)
            rc = mx_error(MX_ENOMEM, "%s/%s: out of memory for %llu rows", where, t->name, (unsigned long long)n);
        else if (H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
            rc = mx_error(MX_EFORMAT, "%s/%s: cannot be read (a column of the wrong type, or file corrupt)", where,
                          t->name);
    }
    if (rc == MX_OK) {
        for (hsize_t i = 0; i < n; i++) finish_row(t, buf + i * t->row_size, present);
        *rows = buf;
        *n_out = (int)n;
    } else {
        free(buf);
    }
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}
