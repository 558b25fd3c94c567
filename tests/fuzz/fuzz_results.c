/* Fuzz target: the results-file reader (results/results.c mx_results_load) and, on files it
 * accepts, `mxbench report` and `mxbench compare`.
 *
 * Structure-aware: libhdf5 is not ours (raw corrupt bytes mostly exercise its own parser),
 * what we own is the logic on top of it, so the fuzz bytes are a program that builds an HDF5
 * file through the HDF5 API. It starts from a template (an empty HDF5 file, or a results
 * file with 0, 1 or 3 runs written by mxbench itself, the second of the 3 a dist_* run with
 * its rank table) and applies up to 16 edits: attributes
 * of fuzzed names, types, shapes and values; deleted links; soft, hard and external links;
 * groups; datasets of fuzzed type and shape in place of /summary or a run's series.
 * Input: byte 0 selects the template (bits 0-1), the report format (bits 2-3), whether to run
 * report (bit 4) and compare (bit 5); byte 1 the number of edits; then the edits. */
#include "base/status.h"
#include "harness/commands.h"
#include "results/results.h"
#include "tests/fuzz/fuzz.h"
#include "tests/results_fixture.h"

#include <hdf5.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FZ_CHECK(c)                                                                        \
    do {                                                                                   \
        if (!(c)) {                                                                        \
            fprintf(stderr, "fuzz_results: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

enum { NTEMPLATES = 4, MAX_ELEMS = 4096 };

static struct {
    uint8_t *bytes;
    size_t size;
} templates[NTEMPLATES];
static char work[256];

/* ---- templates, made once per process by mxbench's own writer */

static void fill_record(mx_run_record *r, const char *id, int gpus, const char *status, int nsteps)
{
    mx_record_init(r);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->workload, sizeof r->workload, "lenet");
    snprintf(r->dataset, sizeof r->dataset, "synthetic");
    snprintf(r->kvstore, sizeof r->kvstore, "%s", gpus > 1 ? "device" : "none");
    snprintf(r->status, sizeof r->status, "%s", status);
    r->gpus = gpus;
    r->batch = 32;
    r->global_batch = 32 * gpus;
    r->base_lr = r->lr = 0.05;
    r->momentum = 0.9;
    r->epochs = 1;
    r->repeats = 1;
    r->seed = 1;
    r->threads_per_device = 1;
    r->test_samples = 100;
    if (strcmp(status, "ok") != 0) {
        snprintf(r->reason, sizeof r->reason, "exit status 1: boom");
        r->exit_status = 1;
        return;
    }
    r->nsteps = r->nloss = nsteps;
    r->nepochs = 1;
    r->step_time = calloc((size_t)nsteps, sizeof *r->step_time);
    r->phase_time = calloc((size_t)nsteps * MX_NPHASES, sizeof *r->phase_time);
    r->loss = calloc((size_t)nsteps, sizeof *r->loss);
    r->test_acc = calloc(1, sizeof *r->test_acc);
    r->epoch_time = calloc(1, sizeof *r->epoch_time);
    if (!r->step_time || !r->phase_time || !r->loss || !r->test_acc || !r->epoch_time) abort();
    for (int i = 0; i < nsteps; i++) {
        r->step_time[i] = 0.01 * (1 + 0.1 * (i % 3)) / gpus;
        for (int p = 0; p < MX_NPHASES; p++) r->phase_time[i * MX_NPHASES + p] = r->step_time[i] / MX_NPHASES;
        r->loss[i] = 2.3f - 0.1f * (float)i;
    }
    r->test_acc[0] = 0.5;
    r->epoch_time[0] = 0.01 * nsteps;
    mx_record_derive(r);
}

static int make_template(int k, const char *path)
{
    if (k == 0) { /* an HDF5 file with nothing in it */
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        return f >= 0 && H5Fclose(f) >= 0 ? 0 : -1;
    }
    mx_results_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.mxbench_version, sizeof meta.mxbench_version, "0.1.0");
    snprintf(meta.host, sizeof meta.host, "fuzz");
    if (mx_results_create(path, &meta, 1) != MX_OK) return -1;
    static const char *const status[3] = {"ok", "ok", "failed"};
    int nruns = k == 1 ? 0 : k == 2 ? 1 : 3;
    for (int i = 0; i < nruns; i++) {
        mx_run_record r;
        char id[16];
        snprintf(id, sizeof id, "r%04d", i + 1);
        /* the second of 3: a dist_sync MPI job of 2 workers and 1 server, with its rank table */
        if (i == 1) fixture_dist_record(&r, i + 1, 2, 1);
        else fill_record(&r, id, 1 << i, status[i], 4);
        int rc = mx_results_append(path, &r);
        mx_record_free(&r);
        if (rc != MX_OK) return -1;
    }
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* report's table goes to stdout: nobody reads it here */
    FILE *null = fopen("/dev/null", "w");
    if (null) dup2(fileno(null), 1);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* every file here is made through HDF5's API: the faults sought are mxbench's, and the
     * child-process guard against libhdf5's own crashes would cost a fork per input */
    mx_results_set_isolation(0);
    fz_path(work, sizeof work, "work.h5");
    for (int k = 0; k < NTEMPLATES; k++) {
        char path[256], name[32];
        snprintf(name, sizeof name, "template%d.h5", k);
        fz_path(path, sizeof path, name);
        FILE *f = NULL;
        if (make_template(k, path) == 0) f = fopen(path, "rb");
        if (f && fseek(f, 0, SEEK_END) == 0) {
            long size = ftell(f);
            templates[k].bytes = size > 0 ? malloc((size_t)size) : NULL;
            templates[k].size = (size_t)size;
            rewind(f);
            if (!templates[k].bytes || fread(templates[k].bytes, 1, (size_t)size, f) != (size_t)size) f = NULL;
        }
        if (!f) {
            fprintf(stderr, "fuzz_results: cannot make template %d: %s\n", k, mx_last_error());
            abort();
        }
        fclose(f);
        unlink(path);
    }
    return 0;
}

/* ---- names the edits pick from: the schema's, and a few made up from the input */

static const char *const attr_names[] = {
    "schema_version", "status", "gpus", "batch", "global_batch", "workload", "kvstore", "strategy",
    "reason", "exit_status", "epochs", "steps", "repeats", "throughput", "throughput_ci_low",
    "throughput_ci_high", "speedup", "efficiency", "test_samples", "final_test_acc", "lr", "units",
    "phases", "host", "command_line", "dataset", "batch_mode", "lr_scaling", "threads_per_device",
    "workers", "servers", "oversubscribed", "staleness_max", "worker_step_max", "busbw",
};
static const char *const run_names[] = {"r0001", "r0002", "r0003", "r0004", "x"};
static const char *const series_names[] = {"step_time", "phase_time", "loss", "test_acc", "epoch_time", "ranks"};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *pick_name(fz_reader *r, const char *const *table, size_t n, char *buf)
{
    unsigned k = fz_u8(r);
    if (k < 0xf0) return table[k % n];
    fz_str(r, buf, 24);
    return buf[0] ? buf : "e";
}

/* An object path: /, /runs, /summary, /runs/<run>, /runs/<run>/<series> */
static const char *pick_path(fz_reader *r, char *buf, size_t n)
{
    char a[32], b[32];
    unsigned k = fz_u8(r) % 6;
    const char *run = pick_name(r, run_names, NELEM(run_names), a);
    switch (k) {
    case 0: return "/";
    case 1: return "/runs";
    case 2: return "/summary";
    case 3: snprintf(buf, n, "/runs/%s", run); return buf;
    case 4: snprintf(buf, n, "/runs/%s/%s", run, pick_name(r, series_names, NELEM(series_names), b)); return buf;
    default: snprintf(buf, n, "/%s", run); return buf;
    }
}

/* ---- values */

static hid_t fixed_string(size_t size, unsigned pad)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size ? size : 1);
    H5Tset_strpad(t, pad % 3 == 0 ? H5T_STR_NULLTERM : pad % 3 == 1 ? H5T_STR_NULLPAD : H5T_STR_SPACEPAD);
    return t;
}

/* Fills buf with n bytes of the input (zeros when it runs dry). */
static void fill(fz_reader *r, void *buf, size_t n)
{
    size_t got;
    const uint8_t *p = fz_bytes(r, n, &got);
    memcpy(buf, p, got);
    memset((char *)buf + got, 0, n - got);
}

/* A dataspace: scalar, null, or simple of rank 1..3 with small dims (or, rarely, a huge
 * first dimension with no data behind it). *elems is the element count. */
static hid_t make_space(fz_reader *r, unsigned kind, hsize_t *elems, int allow_huge)
{
    *elems = kind % 8 == 0 ? 0 : 1;
    if (kind % 8 == 0) return H5Screate(H5S_NULL);
    if (kind % 8 < 4) return H5Screate(H5S_SCALAR);
    hsize_t dims[3];
    int rank = 1 + (int)(kind % 8 - 4) % 3;
    for (int i = 0; i < rank; i++) {
        unsigned d = fz_u8(r);
        dims[i] = allow_huge && i == 0 && d == 0xff ? (hsize_t)fz_u32(r) : d % 9;
        *elems *= dims[i];
    }
    return H5Screate_simple(rank, dims, NULL);
}

static hid_t make_type(fz_reader *r, unsigned kind)
{
    switch (kind % 12) {
    case 0: return H5Tcopy(H5T_STD_I32LE);
    case 1: return H5Tcopy(H5T_STD_I64BE);
    case 2: return H5Tcopy(H5T_STD_I8LE);
    case 3: return H5Tcopy(H5T_STD_U32LE);
    case 4: return H5Tcopy(H5T_IEEE_F64LE);
    case 5: return H5Tcopy(H5T_IEEE_F32BE);
    case 6: return fixed_string(fz_u8(r) % 70, fz_u8(r));
    case 7: {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        return t;
    }
    case 8: { /* a compound that has an "id" field, like /summary */
        size_t idsize = 1 + fz_u8(r) % 64;
        hid_t s = fixed_string(idsize, fz_u8(r)), t = H5Tcreate(H5T_COMPOUND, idsize + 8);
        H5Tinsert(t, fz_u8(r) & 1 ? "id" : "status", 0, s);
        H5Tinsert(t, "gpus", idsize, H5T_STD_I64LE);
        H5Tclose(s);
        return t;
    }
    case 9: {
        hid_t t = H5Tcreate(H5T_COMPOUND, 16);
        H5Tinsert(t, "x", 0, H5T_IEEE_F64LE);
        H5Tinsert(t, "y", 8, H5T_STD_I32LE);
        return t;
    }
    case 10: {
        hsize_t n = 1 + fz_u8(r) % 4;
        return H5Tarray_create2(H5T_STD_I32LE, 1, &n);
    }
    default: return H5Tcreate(H5T_OPAQUE, 1 + fz_u8(r) % 8);
    }
}

/* The data for elems elements of t: variable strings get char pointers into strs; an "id"
 * compound gets run names, so that /summary rows can name existing groups. */
static void *make_data(fz_reader *r, hid_t t, hsize_t elems, char (*strs)[32])
{
    if (elems == 0 || elems > MAX_ELEMS) return NULL;
    size_t size = H5Tget_size(t);
    if (H5Tis_variable_str(t) > 0) {
        const char **p = calloc(elems, sizeof *p);
        for (hsize_t i = 0; p && i < elems && i < 8; i++) p[i] = fz_str(r, strs[i], 31);
        for (hsize_t i = 8; p && i < elems; i++) p[i] = "";
        return p;
    }
    char *buf = calloc(elems, size);
    if (!buf) return NULL;
    fill(r, buf, (size_t)elems * size);
    if (H5Tget_class(t) == H5T_COMPOUND && H5Tget_member_index(t, "id") >= 0 && size > 8) {
        char tmp[32];
        for (hsize_t i = 0; i < elems; i++) {
            const char *name = pick_name(r, run_names, NELEM(run_names), tmp);
            memcpy(buf + i * size, name, strlen(name) < size - 8 ? strlen(name) + 1 : size - 8);
        }
    }
    return buf;
}

/* ---- edits */

static void edit_attr(fz_reader *r, hid_t fid)
{
    char pbuf[96], nbuf[32], strs[8][32];
    const char *path = pick_path(r, pbuf, sizeof pbuf);
    const char *name = pick_name(r, attr_names, NELEM(attr_names), nbuf);
    unsigned tk = fz_u8(r), sk = fz_u8(r);
    hid_t obj = H5Oopen(fid, path, H5P_DEFAULT);
    if (obj < 0) return;
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hsize_t elems;
    hid_t t = make_type(r, tk), sp = make_space(r, sk, &elems, 0);
    hid_t a = t >= 0 && sp >= 0 ? H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    void *data = a >= 0 ? make_data(r, t, elems, strs) : NULL;
    if (data) H5Awrite(a, t, data);
    free(data);
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    H5Oclose(obj);
}

static void edit_dataset(fz_reader *r, hid_t fid)
{
    char pbuf[96], strs[8][32];
    const char *path = pick_path(r, pbuf, sizeof pbuf);
    unsigned tk = fz_u8(r), sk = fz_u8(r);
    if (strcmp(path, "/") == 0) return;
    if (H5Lexists(fid, path, H5P_DEFAULT) > 0) H5Ldelete(fid, path, H5P_DEFAULT);
    hsize_t elems;
    hid_t t = make_type(r, tk), sp = make_space(r, sk | 4, &elems, 1);
    hid_t d = t >= 0 && sp >= 0 ? H5Dcreate2(fid, path, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    void *data = d >= 0 ? make_data(r, t, elems, strs) : NULL;
    if (data) H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    free(data);
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
}

static void edit(fz_reader *r, hid_t fid)
{
    char a[96], b[96];
    switch (fz_u8(r) % 8) {
    case 0: edit_attr(r, fid); break;
    case 1: { /* delete an attribute */
        const char *path = pick_path(r, a, sizeof a);
        hid_t obj = H5Oopen(fid, path, H5P_DEFAULT);
        const char *name = pick_name(r, attr_names, NELEM(attr_names), b);
        if (obj >= 0 && H5Aexists(obj, name) > 0) H5Adelete(obj, name);
        if (obj >= 0) H5Oclose(obj);
        break;
    }
    case 2: { /* delete a link */
        const char *path = pick_path(r, a, sizeof a);
        if (H5Lexists(fid, path, H5P_DEFAULT) > 0) H5Ldelete(fid, path, H5P_DEFAULT);
        break;
    }
    case 3: { /* a soft link, possibly dangling or pointing at its own group */
        const char *at = pick_path(r, a, sizeof a), *to = pick_path(r, b, sizeof b);
        if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
        H5Lcreate_soft(fz_u8(r) % 4 ? to : "/nowhere", fid, at, H5P_DEFAULT, H5P_DEFAULT);
        break;
    }
    case 4: { /* a hard link: one object under two names */
        const char *at = pick_path(r, a, sizeof a), *to = pick_path(r, b, sizeof b);
        if (H5Lexists(fid, to, H5P_DEFAULT) > 0 && H5Lexists(fid, at, H5P_DEFAULT) <= 0)
            H5Lcreate_hard(fid, to, fid, at, H5P_DEFAULT, H5P_DEFAULT);
        break;
    }
    case 5: { /* a group, e.g. in place of /summary or a series */
        const char *at = pick_path(r, a, sizeof a);
        if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
        hid_t g = H5Gcreate2(fid, at, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g >= 0) H5Gclose(g);
        break;
    }
    case 6: edit_dataset(r, fid); break;
    default: { /* an external link: to a missing file, or back into this very file */
        const char *at = pick_path(r, a, sizeof a), *to = pick_path(r, b, sizeof b);
        if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
        H5Lcreate_external(fz_u8(r) & 1 ? work : "/nonexistent.h5", to, fid, at, H5P_DEFAULT, H5P_DEFAULT);
        break;
    }
    }
}

/* What a loaded file promises its users: counts and series agree, strings end. */
static double check_loaded(const mx_results *res)
{
    double sum = 0;
    FZ_CHECK(res->nruns >= 0 && (res->nruns == 0 || res->runs));
    for (int i = 0; i < res->nruns; i++) {
        const mx_run_record *x = &res->runs[i];
        FZ_CHECK(memchr(x->id, 0, sizeof x->id) && memchr(x->status, 0, sizeof x->status));
        FZ_CHECK(memchr(x->reason, 0, sizeof x->reason) && memchr(x->workload, 0, sizeof x->workload));
        FZ_CHECK(x->nsteps >= 0 && x->nloss >= 0 && x->nepochs >= 0);
        FZ_CHECK((x->nsteps > 0) == (x->step_time != NULL));
        /* read every element, so ASan sees a series shorter than its count */
        for (int k = 0; k < x->nsteps; k++) sum += x->step_time[k];
        for (int k = 0; x->phase_time && k < x->nsteps * MX_NPHASES; k++) sum += x->phase_time[k];
        for (int k = 0; k < x->nloss; k++) sum += x->loss[k];
        for (int k = 0; k < x->nepochs; k++) sum += x->test_acc[k] + (x->epoch_time ? x->epoch_time[k] : 0);
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    unsigned sel = fz_u8(&r), nedits = fz_u8(&r) % 17;
    FILE *f = fopen(work, "wb");
    if (!f) return 0;
    size_t wrote = fwrite(templates[sel % NTEMPLATES].bytes, 1, templates[sel % NTEMPLATES].size, f);
    if (fclose(f) != 0 || wrote != templates[sel % NTEMPLATES].size) return 0;

    hid_t fid = H5Fopen(work, H5F_ACC_RDWR, H5P_DEFAULT);
    if (fid < 0) abort(); /* the template itself did not open */
    for (unsigned i = 0; i < nedits; i++) edit(&r, fid);
    /* every handle of the builder is closed: what stays open is the reader's to explain */
    FZ_CHECK(H5Fget_obj_count(fid, H5F_OBJ_ALL) == 1);
    H5Fclose(fid);

    mx_results res;
    int rc = mx_results_load(work, &res);
    fz_outcome("mx_results_load", rc, mx_last_error());
    FZ_CHECK(rc == MX_OK || (rc < 0 && mx_last_error()[0]));
    if (rc == MX_OK) {
        volatile double sink = check_loaded(&res);
        (void)sink;
        mx_results_free(&res);
        static char *const formats[4] = {"text", "md", "csv", "json"};
        if (sel & 0x10) {
            char *argv[] = {"report", work, "--format", formats[sel >> 2 & 3], NULL};
            FZ_CHECK(mx_cmd_report(4, argv) == 0);
        }
        if (sel & 0x20) {
            char *argv[] = {"compare", work, work, NULL};
            int st = mx_cmd_compare(3, argv);
            FZ_CHECK(st == 0 || st == 1 || st == 2);
        }
    }
    /* whatever the reader did, it left no HDF5 object open */
    FZ_CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);
    unlink(work);
    return 0;
}
