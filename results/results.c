/* The HDF5 results store (results.h), file by file: create, append and load. A file is
 * never modified in place: the new version is built in memory and replaced atomically
 * (image.c); the attributes, series and /summary are in fields.c, series.c and summary.c.
 * The layout is documented field by field in results/SCHEMA.md. */
#include "results.h"

#include "base/paths.h"
#include "base/status.h"
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* HDF5 prints its own error stack to stderr by default; our messages replace it. */
static void quiet_hdf5(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* ---- runs */

static int write_run(hid_t runs, const char *path, const mx_run_record *r)
{
    htri_t there = H5Lexists(runs, r->id, H5P_DEFAULT);
    if (there > 0)
        return mx_error(MX_EINVAL, "%s: run id '%s' is already in the file; ids must be unique", path, r->id);
    hid_t g = there == 0 ? H5Gcreate2(runs, r->id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int ok = g >= 0 && mx_fields_write(g, mx_run_fields, mx_nrun_fields, r) == 0 && mx_series_write(g, r) == 0 &&
             mx_ranks_write(g, r) == 0 && mx_detail_write(g, r) == 0;
    if (g >= 0 && H5Gclose(g) < 0) ok = 0;
    return ok ? MX_OK : mx_error(MX_EIO, "%s: HDF5 cannot add run '%s' to the file (out of memory?)", path, r->id);
}

static int read_run(hid_t runs, const char *path, const char *id, int with_series, mx_run_record *r)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "%s", id);
    char where[4200];
    snprintf(where, sizeof where, "%s: /runs/%s", path, id);
    char parent[4200];
    snprintf(parent, sizeof parent, "%s: /runs", path);
    int rc = mx_link_check(runs, id, H5I_GROUP, parent);
    if (rc == 0) return mx_error(MX_EFORMAT, "%s: /summary lists run '%s' but /runs/%s is missing", path, id, id);
    if (rc < 0) return rc;
    hid_t g = H5Gopen2(runs, id, H5P_DEFAULT);
    if (g < 0) return mx_error(MX_EFORMAT, "%s: cannot be opened (file corrupt?)", where);
    rc = mx_fields_read(g, mx_run_fields, mx_nrun_fields, r, where);
    if (rc == MX_OK) rc = mx_run_check_values(r, path, MX_EFORMAT);
    if (rc == MX_OK && with_series) rc = mx_series_read(g, where, r);
    if (rc == MX_OK && with_series) rc = mx_ranks_read(g, where, r);
    if (rc == MX_OK && with_series) rc = mx_ranks_check(r, path, MX_EFORMAT);
    if (rc == MX_OK && with_series) rc = mx_detail_read(g, where, r);
    if (rc == MX_OK && with_series) rc = mx_detail_check(r, path, MX_EFORMAT);
    H5Gclose(g);
    return rc;
}

/* Rewrites the figures that depend on other runs of the same series. */
static int write_scaling(hid_t runs, const char *path, const mx_run_record *r)
{
    hid_t g = H5Gopen2(runs, r->id, H5P_DEFAULT);
    int ok = g >= 0 && mx_attr_write_num(g, "speedup", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &r->speedup) == 0 &&
             mx_attr_write_num(g, "efficiency", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &r->efficiency) == 0;
    if (g >= 0 && H5Gclose(g) < 0) ok = 0;
    return ok ? MX_OK : mx_error(MX_EIO, "%s: HDF5 cannot update speedup/efficiency of run '%s'", path, r->id);
}

/* ---- whole files */

static int read_header(hid_t fid, const char *path, mx_results *out)
{
    int version = 0;
    int rc = mx_attr_read_num(fid, "schema_version", H5T_NATIVE_INT, &version);
    if (rc == 0)
        return mx_error(MX_EFORMAT, "%s: an HDF5 file but not an mxbench results file (no schema_version "
                        "attribute)", path);
    if (rc < 0) return mx_error(MX_EFORMAT, "%s: attribute 'schema_version' %s", path, mx_attr_problem(rc));
    if (version > MX_RESULTS_SCHEMA_VERSION)
        return mx_error(MX_EFORMAT, "%s: schema version %d is newer than this mxbench reads (up to %d); "
                        "use a newer mxbench", path, version, MX_RESULTS_SCHEMA_VERSION);
    if (version < 1)
        return mx_error(MX_EFORMAT, "%s: invalid schema_version %d (expected 1..%d)", path, version,
                        MX_RESULTS_SCHEMA_VERSION);
    out->schema_version = version;
    char where[4200];
    snprintf(where, sizeof where, "%s: file", path);
    return mx_fields_read(fid, mx_meta_fields, mx_nmeta_fields, &out->meta, where);
}

typedef struct {
    const char *parent; /* "<path>: /runs", for messages */
    int rc;
} entry_check;

/* Every entry of /runs must be a run group stored in the file: a soft link would show a run
 * twice, an external one read another file. */
static herr_t check_entry(hid_t runs, const char *name, const H5L_info_t *info, void *data)
{
    entry_check *c = data;
    (void)info; /* mx_link_check reads the same and names the kind of link */
    int rc = mx_link_check(runs, name, H5I_GROUP, c->parent);
    if (rc > 0) return 0;
    c->rc = rc < 0 ? rc : mx_error(MX_EFORMAT, "%s/%s cannot be read (file corrupt?)", c->parent, name);
    return 1; /* stops the iteration */
}

/* Reads the runs in /summary order and checks the table against them. */
static int read_runs(hid_t fid, const char *path, int with_series, mx_results *out)
{
    char top[4200];
    snprintf(top, sizeof top, "%s: ", path); /* links are named "<path>: /runs" */
    int rc = mx_link_check(fid, "runs", H5I_GROUP, top);
    if (rc == 0) return mx_error(MX_EFORMAT, "%s: no /runs group (file damaged or not written by mxbench)", path);
    if (rc < 0) return rc;
    hid_t runs = H5Gopen2(fid, "runs", H5P_DEFAULT);
    H5G_info_t gi;
    if (runs < 0 || H5Gget_info(runs, &gi) < 0) {
        if (runs >= 0) H5Gclose(runs);
        return mx_error(MX_EFORMAT, "%s: /runs cannot be read (file corrupt?)", path);
    }
    char parent[4200];
    snprintf(parent, sizeof parent, "%s: /runs", path);
    entry_check ec = {parent, MX_OK};
    if (H5Literate(runs, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, check_entry, &ec) < 0 && ec.rc == MX_OK)
        ec.rc = mx_error(MX_EFORMAT, "%s: the entries of /runs cannot be listed (file corrupt?)", path);
    mx_run_record *rows = NULL;
    unsigned char present[MX_SUMMARY_MAX_COLS];
    int n = 0;
    rc = ec.rc != MX_OK ? ec.rc : mx_summary_read(fid, path, (unsigned long long)gi.nlinks, &rows, &n, present);
    /* one spare slot: append adds its record without reallocating */
    out->runs = rc == MX_OK ? calloc((size_t)n + 1, sizeof *out->runs) : NULL;
    if (rc == MX_OK && !out->runs) rc = mx_error(MX_ENOMEM, "%s: out of memory for %d runs", path, n);
    for (int i = 0; rc == MX_OK && i < n; i++) {
        rc = read_run(runs, path, rows[i].id, with_series, &out->runs[i]);
        out->nruns = i + 1; /* the failed one too: its partial series are freed with the rest */
    }
    if (rc == MX_OK) rc = mx_summary_check(path, rows, out->runs, n, present);
    free(rows);
    H5Gclose(runs);
    return rc;
}

static int file_check(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return mx_error(MX_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* a FIFO or a device would block the reader or feed it endless bytes */
    if (!S_ISREG(st.st_mode))
        return mx_error(MX_EIO, "%s: not a regular file (it is %s); accepted: an mxbench results file", path,
                        mx_file_kind(st.st_mode));
    if (access(path, R_OK) != 0) return mx_error(MX_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (H5Fis_hdf5(path) <= 0)
        return mx_error(MX_EFORMAT, "%s: not an HDF5 file, so not an mxbench results file", path);
    return MX_OK;
}

static int load_direct(const char *path, mx_results *out)
{
    memset(out, 0, sizeof *out);
    hid_t fapl = mx_fapl_read();
    hid_t fid = fapl >= 0 ? H5Fopen(path, H5F_ACC_RDONLY, fapl) : -1;
    if (fapl >= 0) H5Pclose(fapl);
    if (fid < 0) return mx_error(MX_EFORMAT, "%s: cannot be opened as HDF5 (truncated or corrupt?)", path);
    int rc = read_header(fid, path, out);
    if (rc == MX_OK) rc = read_runs(fid, path, 1, out);
    /* H5F_CLOSE_STRONG: closing the file also closes anything an error path left open */
    if (H5Fclose(fid) < 0 && rc == MX_OK) rc = mx_error(MX_EIO, "%s: HDF5 cannot close it", path);
    if (rc != MX_OK) mx_results_free(out);
    return rc;
}

/* libhdf5 1.10 itself can crash on a damaged file (fuzzing found a SIGSEGV inside H5Aexists
 * on a results file with 267 bytes changed): no check of ours can run before its parser. So
 * the file is first read in a child process; if that child dies of a signal, the file is
 * refused instead of taking the command down. The read is done twice, which for files of
 * kilobytes to megabytes costs milliseconds. */
static int isolate = 1;

void mx_results_set_isolation(int on) { isolate = on; }

static int probe_in_child(const char *path)
{
    if (!isolate) return MX_OK;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) return MX_OK; /* cannot probe: read directly, as without this guard */
    if (pid == 0) {
        mx_results r;
        _exit(load_direct(path, &r) == MX_OK ? 0 : 1);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return MX_OK;
    if (WIFSIGNALED(status))
        return mx_error(MX_EFORMAT, "%s: damaged beyond reading: the HDF5 library crashed on it (signal %d, %s)", path,
                        WTERMSIG(status), strsignal(WTERMSIG(status)));
    return MX_OK;
}

int mx_results_load(const char *path, mx_results *out)
{
    memset(out, 0, sizeof *out);
    quiet_hdf5();
    MX_TRY(file_check(path));
    MX_TRY(probe_in_child(path));
    return load_direct(path, out);
}

void mx_results_free(mx_results *r)
{
    for (int i = 0; i < r->nruns; i++) mx_record_free(&r->runs[i]);
    free(r->runs);
    r->runs = NULL;
    r->nruns = 0;
}

/* ---- writing: build in memory, then replace the file (image.c) */

static int create_layout(hid_t fid, const mx_results_meta *meta)
{
    int version = MX_RESULTS_SCHEMA_VERSION;
    if (mx_attr_write_num(fid, "schema_version", H5T_STD_I32LE, H5T_NATIVE_INT, &version) < 0) return -1;
    if (mx_fields_write(fid, mx_meta_fields, mx_nmeta_fields, meta) < 0) return -1;
    hid_t g = H5Gcreate2(fid, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0 || H5Gclose(g) < 0) return -1;
    return mx_summary_create(fid);
}

/* Closes the in-memory file fid (always) and, when rc is MX_OK, puts its bytes in place. */
static int finish(hid_t fid, const char *path, int rc)
{
    void *image = NULL;
    size_t size = 0;
    int closed = mx_mem_close(fid, path, &image, &size);
    if (rc == MX_OK) rc = closed;
    if (rc == MX_OK) rc = mx_image_commit(path, image, size);
    free(image);
    return rc;
}

int mx_results_create(const char *path, const mx_results_meta *meta, int force)
{
    quiet_hdf5();
    MX_TRY(mx_path_check_output(path, "output"));
    if (!force && access(path, F_OK) == 0)
        return mx_error(MX_EIO, "%s: already exists; pass --force to overwrite it or --resume to continue it",
                        path);
    hid_t fid = mx_mem_open(path, NULL, 0);
    if (fid < 0) return (int)fid;
    int rc = create_layout(fid, meta) < 0 ? mx_error(MX_EIO, "%s: HDF5 cannot write the layout (out of memory?)", path)
                                          : MX_OK;
    return finish(fid, path, rc);
}

/* The update proper, on the open in-memory copy: the run's group (new, or in place of the
 * one with its id), the scaling figures of every run, the summary. */
static int update(hid_t fid, const char *path, const mx_run_record *rec, int replace)
{
    mx_results cur;
    memset(&cur, 0, sizeof cur);
    int rc = read_header(fid, path, &cur);
    if (rc == MX_OK) rc = read_runs(fid, path, 0, &cur);
    int slot = cur.nruns;
    if (rc == MX_OK && replace) {
        for (slot = 0; slot < cur.nruns && strcmp(cur.runs[slot].id, rec->id) != 0;) slot++;
        if (slot == cur.nruns) rc = mx_error(MX_EINVAL, "%s: no run '%s' to replace", path, rec->id);
    }
    hid_t runs = rc == MX_OK ? H5Gopen2(fid, "runs", H5P_DEFAULT) : -1;
    if (rc == MX_OK && runs < 0) rc = mx_error(MX_EFORMAT, "%s: /runs cannot be opened", path);
    if (rc == MX_OK && replace && H5Ldelete(runs, rec->id, H5P_DEFAULT) < 0)
        rc = mx_error(MX_EIO, "%s: HDF5 cannot remove run '%s' to replace it", path, rec->id);
    if (rc == MX_OK) rc = write_run(runs, path, rec);
    if (rc == MX_OK) {
        mx_run_record *r = &cur.runs[slot];
        mx_record_free(r);
        *r = *rec;
        /* the scalar fields are what the summary and scaling need; the series and the rank
         * table stay the caller's */
        mx_record_forget_series(r);
        if (slot == cur.nruns) cur.nruns++;
        mx_records_derive_scaling(cur.runs, cur.nruns);
    }
    for (int i = 0; rc == MX_OK && i < cur.nruns; i++) rc = write_scaling(runs, path, &cur.runs[i]);
    if (rc == MX_OK && mx_summary_write(fid, cur.runs, cur.nruns) < 0)
        rc = mx_error(MX_EIO, "%s: HDF5 cannot rewrite /summary (out of memory?)", path);
    if (runs >= 0 && H5Gclose(runs) < 0 && rc == MX_OK) rc = mx_error(MX_EIO, "%s: HDF5 cannot close /runs", path);
    mx_results_free(&cur);
    return rc;
}

/* The file as an in-memory copy open for writing (finish commits it), or a negative MX_E*. */
static hid_t open_copy(const char *path)
{
    quiet_hdf5();
    MX_TRY(file_check(path));
    void *data = NULL;
    size_t size = 0;
    MX_TRY(mx_file_read_all(path, &data, &size));
    hid_t fid = mx_mem_open(path, data, size);
    free(data); /* HDF5 keeps its own copy */
    return fid;
}

static int update_file(const char *path, const mx_run_record *rec, int replace)
{
    quiet_hdf5();
    MX_TRY(mx_check_id(rec->id, path, MX_EINVAL));
    /* never write what a reader would refuse */
    MX_TRY(mx_run_check_values(rec, path, MX_EINVAL));
    MX_TRY(mx_ranks_check(rec, path, MX_EINVAL));
    MX_TRY(mx_detail_check(rec, path, MX_EINVAL));
    hid_t fid = open_copy(path);
    if (fid < 0) return (int)fid;
    return finish(fid, path, update(fid, path, rec, replace));
}

int mx_results_add_command(const char *path, const char *command_line)
{
    hid_t fid = open_copy(path);
    if (fid < 0) return (int)fid;
    mx_results cur;
    memset(&cur, 0, sizeof cur);
    int rc = read_header(fid, path, &cur);
    char *all = NULL;
    /* one line per command; past the meta's room the later ones are cut, never the first */
    if (rc == MX_OK && asprintf(&all, "%s\n%s", cur.meta.command_line, command_line) < 0)
        rc = mx_error(MX_ENOMEM, "%s: out of memory for the command line", path);
    if (rc == MX_OK && strlen(all) >= sizeof cur.meta.command_line)
        snprintf(all + sizeof cur.meta.command_line - 5, 5, " ...");
    if (rc == MX_OK && mx_attr_write_str(fid, "command_line", all) < 0)
        rc = mx_error(MX_EIO, "%s: HDF5 cannot rewrite the command_line attribute", path);
    free(all);
    mx_results_free(&cur);
    return finish(fid, path, rc);
}

int mx_results_append(const char *path, const mx_run_record *rec) { return update_file(path, rec, 0); }

int mx_results_replace(const char *path, const mx_run_record *rec) { return update_file(path, rec, 1); }
