/* Internal to the results module: what its files share. fields.c (the attribute tables and
 * the checks of their values), series.c (the per-run datasets), summary.c (the /summary
 * table), image.c (in-memory HDF5 files and the crash-safe replacement on disk) and
 * results.c (whole files: create, append, load). Not part of the public API (results.h). */
#ifndef MX_RESULTS_STORE_H
#define MX_RESULTS_STORE_H

#include "results.h"

#include <hdf5.h>
#include <stddef.h>

/* ---- field tables: one entry per attribute or /summary column, so that writer, reader,
 * checks and SCHEMA.md list the same names in the same order */

typedef enum { F_STR, F_INT, F_DBL } mx_field_kind;

typedef struct {
    const char *name;  /* attribute or column name in the file */
    mx_field_kind kind;
    size_t off, size;  /* where the value lives in the C struct */
    int required;      /* a reader refuses a run without it (SCHEMA.md, "What a reader checks") */
} mx_field;

enum { MX_MAX_FIELDS = 128 };
typedef struct {
    mx_field f[MX_MAX_FIELDS];
    int n;
} mx_field_table;
/* Run attributes and /summary columns, from the axes, the outcome and the counters (fields.c). */
const mx_field_table *mx_run_field_table(void);
const mx_field_table *mx_summary_field_table(void);
#define mx_run_fields (mx_run_field_table()->f)
#define mx_nrun_fields (mx_run_field_table()->n)
#define mx_summary_fields (mx_summary_field_table()->f)
#define mx_nsummary_fields (mx_summary_field_table()->n)
extern const mx_field mx_meta_fields[];
extern const int mx_nmeta_fields;

#define MX_ID_SIZE sizeof(((mx_run_record *)0)->id)
typedef char mx_run_id[MX_ID_SIZE];

/* A fixed-length, NUL-terminated string type of size bytes; -1 on failure. */
hid_t mx_store_string_type(size_t size);

/* Attribute writers: 0, or -1 on any HDF5 failure (every handle closed either way). */
int mx_attr_write_str(hid_t obj, const char *name, const char *s);
int mx_attr_write_num(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *v);

/* Attribute readers: 1 read, 0 absent, or a negative MX_ATTR_* saying what is wrong. */
enum { MX_ATTR_UNREADABLE = -1, MX_ATTR_NOT_SCALAR = -2, MX_ATTR_NOT_STRING = -3, MX_ATTR_NOT_NUMBER = -4 };
int mx_attr_read_num(hid_t obj, const char *name, hid_t mem_type, void *dst);
/* Text for a negative MX_ATTR_* code, e.g. "is not a string". */
const char *mx_attr_problem(int code);

/* Writes every field of base as an attribute of obj: 0 or -1. */
int mx_fields_write(hid_t obj, const mx_field *f, int nf, const void *base);
/* Reads the fields of obj into base; absent optional fields keep the caller's value. Returns
 * 0, or MX_EFORMAT with a message "<where>: attribute '<name>' <what is wrong>", where is
 * e.g. "study.h5: /runs/r0001". */
int mx_fields_read(hid_t obj, const mx_field *f, int nf, void *base, const char *where);

/* Refuses values no mxbench run can have (SCHEMA.md, "What a reader checks"): MX_EFORMAT
 * (or code) naming path, run, attribute, value and what is accepted. */
int mx_run_check_values(const mx_run_record *r, const char *path, int code);

/* ---- links: every object mxbench reads is a hard link; soft and external links are refused
 * (a soft link in /runs would make one run appear twice, an external one read another file) */

/* 1 when loc/name is a hard link to an object of type want (H5I_GROUP or H5I_DATASET),
 * 0 when there is no such link, MX_EFORMAT naming "<where>/<name>" otherwise. */
int mx_link_check(hid_t loc, const char *name, H5I_type_t want, const char *where);

/* ---- series datasets of a run */
int mx_series_write(hid_t group, const mx_run_record *r);
/* Reads every series of a run group into r (which then owns them, even on failure). */
int mx_series_read(hid_t group, const char *where, mx_run_record *r);

/* ---- tables of a run (table.c): /runs/<id>/<name>, a compound dataset of rows of a struct */
typedef struct {
    const char *name;     /* the dataset's name in the run group */
    const char *row_noun; /* what a row is, for messages: "rank" */
    const mx_field *cols; /* the columns, in file order; required ones must be in a file */
    int ncols;
    size_t row_size;      /* sizeof the C struct of a row */
    int max_rows;         /* a reader refuses more */
    const char *units;    /* the dataset's units attribute (NULL: none) */
} mx_table_def;
/* Writes n rows (nothing when n is 0): 0 or -1 on an HDF5 failure. */
int mx_table_write(hid_t group, const mx_table_def *t, const void *rows, int n);
/* Reads the table into *rows (malloc'd, *n rows); absent: none and MX_OK; MX_EFORMAT naming
 * "<where>/<name>" for a table mxbench cannot have written. */
int mx_table_read(hid_t group, const char *where, const mx_table_def *t, void **rows, int *n);

/* ---- the device and layer tables of a run (detail.c): /runs/<id>/devices and
 * /runs/<id>/layers, only when the run has rows */
enum { MX_DEVICE_ROWS_MAX = 1 << 12, MX_LAYER_ROWS_MAX = 1 << 12 };
int mx_detail_write(hid_t group, const mx_run_record *r);
/* Reads both tables into r (owned by r); absent: none, MX_OK. */
int mx_detail_read(hid_t group, const char *where, mx_run_record *r);
/* Refuses rows no run can have (devices and layers in order, ranges in bounds). */
int mx_detail_check(const mx_run_record *r, const char *path, int code);

/* ---- the rank table of a dist_* run (ranks.c): /runs/<id>/ranks, only when nranks > 0 */
enum { MX_RANKS_MAX = 1 << 16 }; /* ranks of one MPI job a file may hold */
int mx_ranks_write(hid_t group, const mx_run_record *r);
/* Reads the table into r->ranks, r->nranks (owned by r); absent: none, MX_OK. MX_EFORMAT
 * naming "<where>/ranks" for a table mxbench cannot have written. */
int mx_ranks_read(hid_t group, const char *where, mx_run_record *r);
/* Refuses a rank table no run can have (roles, ranks 0..nranks-1 once each, the counts of
 * workers and servers as the run says): MX_EFORMAT (or code) naming path, run and row. */
int mx_ranks_check(const mx_run_record *r, const char *path, int code);

/* ---- /summary */
int mx_summary_create(hid_t fid);
/* Rewrites every row from recs: 0 or -1. */
int mx_summary_write(hid_t fid, const mx_run_record *recs, int n);
enum { MX_SUMMARY_MAX_COLS = MX_MAX_FIELDS };
/* Reads the rows into *rows (n records with only the summary fields set; present[c] says
 * whether the file has column c of mx_summary_fields). The table must have one row per
 * entry of /runs (nruns), with valid, unique ids. */
int mx_summary_read(hid_t fid, const char *path, unsigned long long nruns, mx_run_record **rows, int *n,
                    unsigned char present[MX_SUMMARY_MAX_COLS]);
/* Checks every present column of rows[i] against the values of run group runs[i]. */
int mx_summary_check(const char *path, const mx_run_record *rows, const mx_run_record *runs, int n,
                     const unsigned char present[MX_SUMMARY_MAX_COLS]);
/* MX_EFORMAT unless id can be a group name under /runs (non-empty, no '/', not . or ..). */
int mx_check_id(const char *id, const char *path, int code);

/* ---- in-memory files and the crash-safe replacement (image.c) */

/* A file access property list for reading: closing the file closes whatever is still open
 * in it (H5F_CLOSE_STRONG), so no error path can keep a file open. -1 on failure. */
hid_t mx_fapl_read(void);
/* Opens an in-memory HDF5 file for writing: a new one (image NULL), or a copy of image.
 * Nothing is written to disk by HDF5: the file is only ever written by mx_image_commit.
 * Returns the file id, or a negative MX_E* with a message naming path. */
hid_t mx_mem_open(const char *path, const void *image, size_t size);
/* Flushes and closes an in-memory file, handing its bytes to *image (malloc'd). The file id
 * is closed in every case (never twice: HDF5 1.10 crashes on closing a failed close again).
 * 0, or a negative MX_E* naming path. */
int mx_mem_close(hid_t fid, const char *path, void **image, size_t *size);
/* Reads a whole file into memory (malloc'd). */
int mx_file_read_all(const char *path, void **data, size_t *size);
/* Writes image to <path>.tmp-<pid>, flushes it to disk, renames it over path and flushes
 * the directory. On any failure the working copy is removed, path is untouched, and the
 * error (MX_EIO) names path and the system's reason (e.g. "No space left on device"). */
int mx_image_commit(const char *path, const void *image, size_t size);

#endif
