/* The reader refuses what no mxbench writes (SCHEMA.md, "What a reader checks"): each case
 * damages a copy of a good two-run file with the HDF5 API, as a hand edit or another tool
 * could, and mx_results_load must give MX_EFORMAT with a message naming the file, the run
 * and the attribute or link, and leave no partial result. The writer refuses the same
 * values. A run with status `diverged` is read back as such. */
#include "engine/status.h"
#include "results/results.h"
#include "tests/check.h"
#include "tests/results_fixture.h"

#include <hdf5.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], good[128], bad[128], other[128];

/* ---- damage, done with plain HDF5 on the copy */

typedef struct {
    const char *obj;  /* group or dataset path, e.g. "/runs/r0001" */
    const char *name; /* attribute or link name */
    int value;
    const char *text;
} edit;

typedef int (*damage_fn)(hid_t fid, const edit *e);

static int del_attr(hid_t fid, const edit *e) { return H5Adelete_by_name(fid, e->obj, e->name, H5P_DEFAULT) < 0 ? -1 : 0; }

static int put_attr(hid_t fid, const edit *e, hid_t type, hsize_t count, const void *v)
{
    if (H5Aexists_by_name(fid, e->obj, e->name, H5P_DEFAULT) > 0) H5Adelete_by_name(fid, e->obj, e->name, H5P_DEFAULT);
    hid_t sp = count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, NULL);
    hid_t a = H5Acreate_by_name(fid, e->obj, e->name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, type, v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

static int set_int(hid_t fid, const edit *e) { return put_attr(fid, e, H5T_NATIVE_INT, 1, &e->value); }

static int set_int_pair(hid_t fid, const edit *e)
{
    int v[2] = {e->value, e->value};
    return put_attr(fid, e, H5T_NATIVE_INT, 2, v);
}

static int set_str(hid_t fid, const edit *e)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(e->text) + 1);
    int rc = put_attr(fid, e, t, 1, e->text);
    H5Tclose(t);
    return rc;
}

/* e->name under e->obj becomes a soft link to e->text (removing what was there). */
static int soft_link(hid_t fid, const edit *e)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", e->obj, e->name);
    if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
    return H5Lcreate_soft(e->text, fid, at, H5P_DEFAULT, H5P_DEFAULT) < 0 ? -1 : 0;
}

static int external_link(hid_t fid, const edit *e)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", e->obj, e->name);
    H5Ldelete(fid, at, H5P_DEFAULT);
    return H5Lcreate_external(other, e->text, fid, at, H5P_DEFAULT, H5P_DEFAULT) < 0 ? -1 : 0;
}

static int delete_link(hid_t fid, const edit *e)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", e->obj, e->name);
    return H5Ldelete(fid, at, H5P_DEFAULT) < 0 ? -1 : 0;
}

/* e->name under e->obj becomes a float64 dataset of e->value rows (x5 columns when text is
 * "2d"), replacing what was there. */
static int put_dataset(hid_t fid, const edit *e)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", e->obj, e->name);
    if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
    hsize_t dims[2] = {(hsize_t)e->value, 5};
    const int rank = e->text && strcmp(e->text, "2d") == 0 ? 2 : 1;
    double zero[64 * 5] = {0};
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t ds = H5Dcreate2(fid, at, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds >= 0 && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero) >= 0 ? 0 : -1;
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    return rc;
}

/* Row e->value of /summary gets the id e->text. */
static int summary_id(hid_t fid, const edit *e)
{
    hid_t ds = H5Dopen2(fid, "/summary", H5P_DEFAULT);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 32);
    hid_t mt = H5Tcreate(H5T_COMPOUND, 32);
    H5Tinsert(mt, "id", 0, st);
    char ids[8][32] = {{0}};
    int rc = H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) < 0 ? -1 : 0;
    snprintf(ids[e->value], sizeof ids[0], "%s", e->text);
    if (rc == 0) rc = H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) < 0 ? -1 : 0;
    H5Tclose(mt);
    H5Tclose(st);
    H5Dclose(ds);
    return rc;
}

/* ---- the check */

static int ncases;

/* Damages a fresh copy of the good file and expects the load to fail naming every needle. */
static void expect_refused(const char *what, damage_fn fn, edit e, const char *n1, const char *n2, const char *n3)
{
    ncases++;
    CHECK(copy_file(good, bad) == 0, "%s: cannot copy %s", what, good);
    hid_t fid = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    int damaged = fid >= 0 && fn(fid, &e) == 0;
    if (fid >= 0) H5Fclose(fid);
    CHECK(damaged, "%s: the test could not damage the copy", what);
    mx_results r;
    int rc = mx_results_load(bad, &r);
    const char *msg = mx_last_error();
    CHECK(rc == MX_EFORMAT, "%s: load gave %d (%s), want MX_EFORMAT", what, rc, rc == MX_OK ? "accepted" : msg);
    const char *needles[] = {bad, n1, n2, n3};
    for (int i = 0; rc != MX_OK && i < 4; i++)
        if (needles[i]) CHECK(strstr(msg, needles[i]) != NULL, "%s: message lacks '%s': %s", what, needles[i], msg);
    CHECK(r.nruns == 0 && r.runs == NULL, "%s: a partial result was left", what);
    if (rc == MX_OK) mx_results_free(&r);
}

/* Every attribute a run must have (SCHEMA.md, "What a reader checks"). */
static const char *const required[] = {
    "workload", "dataset", "strategy", "kvstore", "compression", "amp", "device_type", "lr_scaling",
    "batch_mode", "gpus", "batch", "global_batch", "base_lr", "lr", "momentum", "wd", "warmup_epochs",
    "epochs", "steps", "warmup_steps", "repeats", "seed", "threads_per_device", "target_acc",
    "test_samples", "status", "reason", "exit_status", "throughput", "throughput_ci_low",
    "throughput_ci_high", "throughput_iqr", "step_time_median", "speedup", "efficiency",
    "final_test_acc", "time_to_acc", "bytes_per_step", "comm_overlap", "wall_time",
};

static void test_missing_attributes(void)
{
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "run without '%s'", required[i]);
        expect_refused(what, del_attr, (edit){"/runs/r0001", required[i], 0, NULL}, "r0001", required[i], "missing");
    }
}

static void test_wrong_types(void)
{
    expect_refused("status stored as a number", set_int, (edit){"/runs/r0001", "status", 1, NULL}, "r0001",
                   "'status'", "not a string");
    expect_refused("gpus stored as text", set_str, (edit){"/runs/r0001", "gpus", 0, "two"}, "r0001", "'gpus'",
                   "not a number");
    expect_refused("gpus stored as an array", set_int_pair, (edit){"/runs/r0001", "gpus", 2, NULL}, "r0001",
                   "'gpus'", "single value");
    expect_refused("schema_version as text", set_str, (edit){"/", "schema_version", 0, "1"}, "schema_version",
                   "not a number", NULL);
}

static void test_impossible_values(void)
{
    static const struct {
        const char *name;
        int value;
        const char *accepted;
    } cases[] = {
        {"gpus", 0, "1 or more"},          {"gpus", -2, "1 or more"},       {"batch", -1, "0 or more"},
        {"global_batch", -64, "0 or more"}, {"epochs", -1, "0 or more"},    {"steps", -5, "0 or more"},
        {"warmup_steps", -2, "0 or more"}, {"repeats", -1, "0 or more"},    {"threads_per_device", -1, "0 or more"},
        {"test_samples", -7, "0 or more"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[96], value[64];
        snprintf(what, sizeof what, "%s = %d", cases[i].name, cases[i].value);
        snprintf(value, sizeof value, "%s = %d", cases[i].name, cases[i].value);
        expect_refused(what, set_int, (edit){"/runs/r0001", cases[i].name, cases[i].value, NULL}, "r0001", value,
                       cases[i].accepted);
    }
    expect_refused("unknown status", set_str, (edit){"/runs/r0001", "status", 0, "bogus"}, "'bogus'", "r0001",
                   "ok|failed|skipped|diverged");
    expect_refused("empty status", set_str, (edit){"/runs/r0001", "status", 0, ""}, "r0001", "status",
                   "ok|failed|skipped|diverged");
}

static void test_links(void)
{
    expect_refused("a run that is a soft link to another", soft_link, (edit){"/runs", "r0001", 0, "/runs/r0000"},
                   "/runs/r0001", "soft link", NULL);
    expect_refused("an extra soft link in /runs", soft_link, (edit){"/runs", "r0009", 0, "/runs/r0000"},
                   "/runs/r0009", "soft link", NULL);
    expect_refused("a dangling soft link in /runs", soft_link, (edit){"/runs", "r0001", 0, "/nowhere"},
                   "/runs/r0001", "soft link", NULL);
    expect_refused("a run that is an external link", external_link, (edit){"/runs", "r0001", 0, "/runs/r0000"},
                   "/runs/r0001", "external link", NULL);
    expect_refused("a run that is a dataset", put_dataset, (edit){"/runs", "r0001", 3, NULL}, "/runs/r0001",
                   "is a dataset", "expected a group");
    expect_refused("/runs a soft link", soft_link, (edit){"", "runs", 0, "/runs/r0000"}, "/runs", "soft link", NULL);
    expect_refused("/summary a soft link", soft_link, (edit){"", "summary", 0, "/runs/r0000/step_time"}, "/summary",
                   "soft link", NULL);
    expect_refused("a series that is a soft link", soft_link,
                   (edit){"/runs/r0001", "step_time", 0, "/runs/r0000/step_time"}, "/runs/r0001/step_time",
                   "soft link", NULL);
    expect_refused("a run group removed", delete_link, (edit){"/runs", "r0001", 0, NULL}, "/summary lists 2 runs",
                   "/runs holds 1", NULL);
}

static void test_series_and_summary(void)
{
    expect_refused("phase_time shorter than step_time", put_dataset, (edit){"/runs/r0001", "phase_time", 3, "2d"},
                   "r0001", "phase_time has 3 rows", "step_time 20");
    expect_refused("epoch_time longer than test_acc", put_dataset, (edit){"/runs/r0001", "epoch_time", 5, NULL},
                   "r0001", "epoch_time has 5", "test_acc 2");
    expect_refused("step_time of the wrong rank", put_dataset, (edit){"/runs/r0001", "step_time", 20, "2d"},
                   "/runs/r0001/step_time", "wrong shape", NULL);
    expect_refused("/summary disagrees with the run (gpus)", set_int, (edit){"/runs/r0001", "gpus", 4, NULL},
                   "/summary row 1", "gpus", "r0001");
    expect_refused("/summary disagrees with the run (workload)", set_str,
                   (edit){"/runs/r0000", "workload", 0, "lenet"}, "/summary row 0", "workload", "'lenet'");
    expect_refused("/summary lists a run twice", summary_id, (edit){NULL, NULL, 1, "r0000"}, "'r0000' twice", NULL,
                   NULL);
    expect_refused("/summary id with a slash", summary_id, (edit){NULL, NULL, 1, "r0000/step_time"},
                   "'r0000/step_time'", "not a valid group name", NULL);
    expect_refused("/summary id empty", summary_id, (edit){NULL, NULL, 0, ""}, "run id ''", NULL, NULL);
}

/* The writer refuses the values the reader would, and leaves the file as it was. */
static void test_writer_refuses(void)
{
    CHECK(copy_file(good, bad) == 0, "copy");
    mx_run_record r;
    fixture_record(&r, 7, 2, 10);
    r.gpus = 0;
    CHECK(mx_results_append(bad, &r) == MX_EINVAL && strstr(mx_last_error(), "gpus = 0"), "append gpus 0: %s",
          mx_last_error());
    r.gpus = 2;
    snprintf(r.status, sizeof r.status, "fine");
    CHECK(mx_results_append(bad, &r) == MX_EINVAL && strstr(mx_last_error(), "'fine'"), "append status 'fine': %s",
          mx_last_error());
    ncases += 2;
    /* diverged is a status like the others: written, read back, with its reason */
    snprintf(r.status, sizeof r.status, "diverged");
    snprintf(r.reason, sizeof r.reason, "loss inf at step 7");
    CHECK(mx_results_append(bad, &r) == MX_OK, "append diverged: %s", mx_last_error());
    mx_results got;
    CHECK(mx_results_load(bad, &got) == MX_OK && got.nruns == 3, "load after diverged: %s", mx_last_error());
    if (got.nruns == 3)
        CHECK(strcmp(got.runs[2].status, "diverged") == 0 && strcmp(got.runs[2].reason, "loss inf at step 7") == 0,
              "diverged read back as '%s' '%s'", got.runs[2].status, got.runs[2].reason);
    mx_results_free(&got);
    mx_record_free(&r);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/mx-test-reader-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(good, sizeof good, "%s/good.h5", dir);
    snprintf(bad, sizeof bad, "%s/bad.h5", dir);
    snprintf(other, sizeof other, "%s/other.h5", dir);
    int rc = fixture_file(good, 2, 20);
    CHECK(rc == MX_OK, "writing %s: %s", good, mx_last_error());
    CHECK(copy_file(good, other) == 0, "copy to %s", other);
    mx_results r;
    CHECK(mx_results_load(good, &r) == MX_OK && r.nruns == 2, "the good file: %s", mx_last_error());
    mx_results_free(&r);
    if (rc == MX_OK) {
        test_missing_attributes();
        test_wrong_types();
        test_impossible_values();
        test_links();
        test_series_and_summary();
        test_writer_refuses();
    }
    printf("test_results_reader: %d damaged files and refused records tried\n", ncases);
    unlink(good);
    unlink(bad);
    unlink(other);
    rmdir(dir);
    return check_summary("test_results_reader");
}
