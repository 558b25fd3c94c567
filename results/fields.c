/* The attribute tables of the results store (store.h): which attributes a run group, the
 * /summary table and the file carry, how each is written and read, which a reader requires,
 * and the values it refuses. SCHEMA.md lists the same names in the same order. */
#include "store.h"

#include "axes.h"
#include "base/status.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMBER_SIZE(T, m) sizeof(((T *)0)->m)
#define FIELD(T, m, kind, size, req) {#m, kind, offsetof(T, m), size, req}
/* R*: required of every run (every mxbench of schema version 1 writes it); O*: optional,
 * added later within version 1, so that older files lack it (read as undefined, NaN). */
#define RSTR(m) FIELD(mx_run_record, m, F_STR, MEMBER_SIZE(mx_run_record, m), 1)
#define RINT(m) FIELD(mx_run_record, m, F_INT, sizeof(int), 1)
#define OSTR(m) FIELD(mx_run_record, m, F_STR, MEMBER_SIZE(mx_run_record, m), 0)
#define RDBL(m) FIELD(mx_run_record, m, F_DBL, sizeof(double), 1)
#define ODBL(m) FIELD(mx_run_record, m, F_DBL, sizeof(double), 0)
#define OINT(m) FIELD(mx_run_record, m, F_INT, sizeof(int), 0)
/* /summary columns other than id are optional: present ones are checked against the runs */
#define SSTR(m) FIELD(mx_run_record, m, F_STR, MEMBER_SIZE(mx_run_record, m), 0)
#define SINT(m) FIELD(mx_run_record, m, F_INT, sizeof(int), 0)
#define SDBL(m) FIELD(mx_run_record, m, F_DBL, sizeof(double), 0)
/* file attributes: empty when the build or machine has nothing to say, so none is required */
#define MSTR(m) FIELD(mx_results_meta, m, F_STR, MEMBER_SIZE(mx_results_meta, m), 0)
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The run attributes and /summary columns come from three tables: the configuration
 * (axes.c), the outcome and derived figures listed here, and the counters' figures
 * (metrics.def). Built once, on first use, because C cannot initialise one array from
 * another. Fields that every schema-1 file has are required of a run; the rest optional. */
static const mx_field outcome_fields[] = {
    RINT(test_samples),   RSTR(status),            RSTR(reason),             RINT(exit_status),
    RDBL(throughput),     RDBL(throughput_ci_low), RDBL(throughput_ci_high), RDBL(throughput_iqr),
    ODBL(throughput_agg), RDBL(step_time_median),  RDBL(speedup),            RDBL(efficiency),
    RDBL(final_test_acc), RDBL(time_to_acc),      OINT(oversubscribed),
    OINT(noisy),          ODBL(host_others),       ODBL(host_load),          ODBL(host_steal),
    OSTR(counted_by),     OSTR(amp_kernels),      OINT(tf32),
    /* language models (record.h) */
    OINT(tokens_per_sample), ODBL(flops_per_token), ODBL(peak_flops),  OSTR(peak_source),
    ODBL(tokens_per_s),   ODBL(final_val_loss),    ODBL(perplexity),       ODBL(time_to_loss),
    ODBL(mfu),
};
/* after the counters' figures, as before the table (file readers go by name anyway) */
static const mx_field tail_fields[] = {RDBL(wall_time)};

/* A column's name differs from the record field only for test_acc, which holds the final
 * accuracy (the per-epoch series is the run group's test_acc dataset). */
static const mx_field summary_outcome[] = {
    SSTR(status),      SDBL(throughput),     SDBL(throughput_ci_low), SDBL(throughput_ci_high),
    SDBL(step_time_median), SDBL(throughput_agg), SDBL(speedup),  SDBL(efficiency),
    {"test_acc", F_DBL, offsetof(mx_run_record, final_test_acc), sizeof(double), 0},
    SDBL(time_to_acc), SINT(oversubscribed), SINT(noisy), SDBL(host_others),
    SDBL(tokens_per_s), {"val_loss", F_DBL, offsetof(mx_run_record, final_val_loss), sizeof(double), 0},
    SDBL(perplexity),  SDBL(mfu),
};

static void add(mx_field_table *t, mx_field f)
{
    /* MX_MAX_FIELDS bounds the tables; tests/test_tables.c walks them, so an overflow shows there */
    if (t->n < MX_MAX_FIELDS) t->f[t->n++] = f;
}

static void add_axes(mx_field_table *t, int summary)
{
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *a = &mx_axes[i];
        const mx_field_kind k = a->type == MX_AXIS_STR ? F_STR : a->type == MX_AXIS_INT ? F_INT : F_DBL;
        add(t, (mx_field){a->name, k, a->off, a->size, !summary && a->in_v1});
    }
}

static void add_counters(mx_field_table *t, int summary)
{
    for (int i = 0; i < MX_NCOUNTERS; i++)
        add(t, (mx_field){mx_counters[i].name, F_DBL, offsetof(mx_run_record, metrics) + (size_t)i * sizeof(double),
                          sizeof(double), !summary && mx_counters[i].in_v1});
}

const mx_field_table *mx_run_field_table(void)
{
    static mx_field_table t;
    if (t.n) return &t;
    add_axes(&t, 0);
    for (int i = 0; i < COUNT(outcome_fields); i++) add(&t, outcome_fields[i]);
    add_counters(&t, 0);
    for (int i = 0; i < COUNT(tail_fields); i++) add(&t, tail_fields[i]);
    return &t;
}

const mx_field_table *mx_summary_field_table(void)
{
    static mx_field_table t;
    if (t.n) return &t;
    add(&t, (mx_field)RSTR(id));
    add_axes(&t, 1);
    for (int i = 0; i < COUNT(summary_outcome); i++) add(&t, summary_outcome[i]);
    add_counters(&t, 1);
    add(&t, (mx_field)SDBL(wall_time));
    return &t;
}

const mx_field mx_meta_fields[] = {
    MSTR(mxbench_version), MSTR(git_revision), MSTR(host),   MSTR(cpu_model),  MSTR(cpu_features),
    MSTR(gpu_model),       MSTR(gpu_driver),   MSTR(blas),   MSTR(onednn),     MSTR(cuda),
    MSTR(cudnn),           MSTR(nccl),         MSTR(mpi),    MSTR(hdf5),       MSTR(start_time),
    MSTR(command_line),
};
const int mx_nmeta_fields = COUNT(mx_meta_fields);

/* ---- writing */

hid_t mx_store_string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

int mx_attr_write_str(hid_t obj, const char *name, const char *s)
{
    /* sized to the text so h5dump shows it without padding; deleted first because a
     * rewrite may need a different size */
    htri_t there = H5Aexists(obj, name);
    if (there < 0 || (there > 0 && H5Adelete(obj, name) < 0)) return -1;
    hid_t t = mx_store_string_type(strlen(s) + 1), sp = H5Screate(H5S_SCALAR), a = -1;
    int rc = -1;
    if (t >= 0 && sp >= 0) a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) rc = H5Awrite(a, t, s) < 0 ? -1 : 0;
    if (a >= 0 && H5Aclose(a) < 0) rc = -1;
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    if (t >= 0 && H5Tclose(t) < 0) rc = -1;
    return rc;
}

int mx_attr_write_num(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *v)
{
    htri_t there = H5Aexists(obj, name);
    hid_t a = -1;
    if (there > 0) {
        a = H5Aopen(obj, name, H5P_DEFAULT);
    } else if (there == 0) {
        hid_t sp = H5Screate(H5S_SCALAR);
        if (sp >= 0) a = H5Acreate2(obj, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT);
        if (sp >= 0 && H5Sclose(sp) < 0 && a >= 0) {
            H5Aclose(a);
            a = -1;
        }
    }
    if (a < 0) return -1;
    int rc = H5Awrite(a, mem_type, v) < 0 ? -1 : 0;
    if (H5Aclose(a) < 0) rc = -1;
    return rc;
}

int mx_fields_write(hid_t obj, const mx_field *f, int nf, const void *base)
{
    for (int i = 0; i < nf; i++) {
        const char *p = (const char *)base + f[i].off;
        int rc = f[i].kind == F_STR   ? mx_attr_write_str(obj, f[i].name, p)
                 : f[i].kind == F_INT ? mx_attr_write_num(obj, f[i].name, H5T_STD_I32LE, H5T_NATIVE_INT, p)
                                      : mx_attr_write_num(obj, f[i].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, p);
        if (rc < 0) return -1;
    }
    return 0;
}

/* ---- reading */

const char *mx_attr_problem(int code)
{
    switch (code) {
    case MX_ATTR_NOT_SCALAR: return "is not a single value (an array or empty)";
    case MX_ATTR_NOT_STRING: return "is not a string";
    case MX_ATTR_NOT_NUMBER: return "is not a number";
    case 0: return "is missing (required by schema version 1; see SCHEMA.md)";
    default: return "cannot be read (file corrupt?)";
    }
}

/* Opens attribute name of obj and checks that it holds exactly one value: an array would
 * be read into the single value's storage, past its end. Returns the attribute, 0 when
 * absent, or a negative MX_ATTR_* code. */
static hid_t attr_open_scalar(hid_t obj, const char *name)
{
    htri_t there = H5Aexists(obj, name);
    if (there == 0) return 0;
    hid_t a = there > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
    if (a < 0) return MX_ATTR_UNREADABLE;
    hid_t sp = H5Aget_space(a);
    hssize_t npoints = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (sp >= 0) H5Sclose(sp);
    if (npoints == 1) return a;
    H5Aclose(a);
    return npoints < 0 ? MX_ATTR_UNREADABLE : MX_ATTR_NOT_SCALAR;
}

/* Reads a string attribute (fixed or variable length) into dst[n], truncating. */
static int attr_read_str(hid_t obj, const char *name, char *dst, size_t n)
{
    hid_t a = attr_open_scalar(obj, name);
    if (a <= 0) return (int)a;
    hid_t ft = H5Aget_type(a), mt = -1;
    const int is_string = ft >= 0 && H5Tget_class(ft) == H5T_STRING;
    int rc = ft >= 0 && !is_string ? MX_ATTR_NOT_STRING : MX_ATTR_UNREADABLE; /* until read */
    if (is_string) {
        htri_t vlen = H5Tis_variable_str(ft);
        if (vlen > 0) {
            char *s = NULL;
            mt = H5Tcopy(H5T_C_S1);
            if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &s) >= 0) {
                snprintf(dst, n, "%s", s ? s : "");
                rc = 1;
            }
            if (s) H5free_memory(s);
        } else if (vlen == 0) {
            size_t size = H5Tget_size(ft);
            char *buf = size > 0 ? calloc(size + 1, 1) : NULL;
            mt = buf ? mx_store_string_type(size + 1) : -1;
            if (mt >= 0 && H5Aread(a, mt, buf) >= 0) {
                snprintf(dst, n, "%s", buf);
                rc = 1;
            }
            free(buf);
        }
    }
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

int mx_attr_read_num(hid_t obj, const char *name, hid_t mem_type, void *dst)
{
    hid_t a = attr_open_scalar(obj, name);
    if (a <= 0) return (int)a;
    hid_t ft = H5Aget_type(a);
    H5T_class_t c = ft >= 0 ? H5Tget_class(ft) : H5T_NO_CLASS;
    int rc = c == H5T_INTEGER || c == H5T_FLOAT ? (H5Aread(a, mem_type, dst) < 0 ? MX_ATTR_UNREADABLE : 1)
             : ft < 0                           ? MX_ATTR_UNREADABLE
                                                : MX_ATTR_NOT_NUMBER;
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

int mx_fields_read(hid_t obj, const mx_field *f, int nf, void *base, const char *where)
{
    for (int i = 0; i < nf; i++) {
        char *p = (char *)base + f[i].off;
        int rc = f[i].kind == F_STR   ? attr_read_str(obj, f[i].name, p, f[i].size)
                 : f[i].kind == F_INT ? mx_attr_read_num(obj, f[i].name, H5T_NATIVE_INT, p)
                                      : mx_attr_read_num(obj, f[i].name, H5T_NATIVE_DOUBLE, p);
        if (rc < 0 || (rc == 0 && f[i].required))
            return mx_error(MX_EFORMAT, "%s: attribute '%s' %s", where, f[i].name, mx_attr_problem(rc));
    }
    return MX_OK;
}

/* ---- values no run can have */

typedef struct {
    const char *name;
    size_t off;
    int min;
} int_rule;

#define MIN(m, v) {#m, offsetof(mx_run_record, m), v}
static const int_rule int_rules[] = {
    MIN(gpus, 1),         MIN(batch, 0),   MIN(global_batch, 0),       MIN(epochs, 0),       MIN(steps, 0),
    MIN(warmup_steps, 0), MIN(repeats, 0), MIN(threads_per_device, 0), MIN(test_samples, 0),
    MIN(workers, 1),      MIN(servers, 0), MIN(oversubscribed, 0),    MIN(noisy, 0),
    MIN(tf32, 0),
};

int mx_run_check_values(const mx_run_record *r, const char *path, int code)
{
    for (int i = 0; i < COUNT(int_rules); i++) {
        int v = *(const int *)((const char *)r + int_rules[i].off);
        if (v < int_rules[i].min)
            return mx_error(code, "%s: run '%s': %s = %d is impossible (accepted: %d or more)", path, r->id,
                            int_rules[i].name, v, int_rules[i].min);
    }
    if (r->oversubscribed > 1 || r->noisy > 1 || r->tf32 > 1)
        return mx_error(code, "%s: run '%s': %s = %d is impossible (accepted: 0 or 1)", path, r->id,
                        r->noisy > 1 ? "noisy" : r->tf32 > 1 ? "tf32" : "oversubscribed",
                        r->noisy > 1 ? r->noisy : r->tf32 > 1 ? r->tf32 : r->oversubscribed);
    if (!mx_record_status_known(r->status))
        return mx_error(code, "%s: run '%s': status '%s' is not one mxbench knows (accepted: %s)", path, r->id,
                        r->status, MX_RECORD_STATUSES);
    return MX_OK;
}

/* ---- links */

static const char *object_kind(H5I_type_t t)
{
    switch (t) {
    case H5I_GROUP: return "a group";
    case H5I_DATASET: return "a dataset";
    case H5I_DATATYPE: return "a named datatype";
    default: return "an unreadable object";
    }
}

int mx_link_check(hid_t loc, const char *name, H5I_type_t want, const char *where)
{
    htri_t there = H5Lexists(loc, name, H5P_DEFAULT);
    if (there == 0) return 0;
    H5L_info_t li;
    if (there < 0 || H5Lget_info(loc, name, &li, H5P_DEFAULT) < 0)
        return mx_error(MX_EFORMAT, "%s/%s: the link cannot be read (file corrupt?)", where, name);
    if (li.type != H5L_TYPE_HARD)
        return mx_error(MX_EFORMAT, "%s/%s is a %s link; mxbench reads only objects stored in the file itself "
                        "(hard links)", where, name,
                        li.type == H5L_TYPE_SOFT ? "soft" : li.type == H5L_TYPE_EXTERNAL ? "external" : "user-defined");
    hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
    H5I_type_t t = o >= 0 ? H5Iget_type(o) : H5I_BADID;
    if (o >= 0) H5Oclose(o);
    if (t != want)
        return mx_error(MX_EFORMAT, "%s/%s is %s, expected %s", where, name, object_kind(t), object_kind(want));
    return 1;
}
