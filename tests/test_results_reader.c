/* The reader refuses what no mxbench writes (SCHEMA.md, "What a reader checks"): each case
 * damages a copy of a good two-run file with the HDF5 API, as a hand edit or another tool
 * could, and mx_results_load must give MX_EFORMAT with a message naming the file, the run
 * and the attribute or link, and leave no partial result. The writer refuses the same
 * values. A run with status `diverged` is read back as such. */
#include "base/status.h"
#include "results/results.h"
#include "tests/check.h"
#include "tests/results_fixture.h"

#include <hdf5.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], good[128], bad[128], other[128], good_dist[128];
static const char *source; /* the good file each case damages a copy of */

/* ---- damage, done with plain HDF5 on the copy */

typedef struct {
    const char *obj;  /* group or dataset path, e.g. "/runs/r0001" */
    const char *name; /* attribute or link name */
    int value;
    const char *text;
} edit;

typedef int (*damage_fn)(hid_t fid, const edit *e);

static int del_attr(hid_t fid, const edit *e)
{
    return H5Adelete_by_name(fid, e->obj, e->name, H5P_DEFAULT) < 0 ? -1 : 0;
}

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
    CHECK(copy_file(source, bad) == 0, "%s: cannot copy %s", what, source);
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

/* ---- the rank table of a dist_* run (good_dist: run r0002 of 2 workers and 1 server) */

/* A rank table written by hand: rows {rank, host, role, steps, step_median}, with the columns
 * as `shape` says: 0 ours, 1 without role, 2 host as a number, 3 an extra column; rows
 * declared but never written when `rows` exceeds what is given. */
typedef struct {
    int rank;
    char host[64];
    char role[8];
    int steps;
    double step_median;
    double extra;
} hand_row;

static int write_ranks(hid_t fid, const hand_row *rows, hsize_t n, int shape, hsize_t declared)
{
    const char *at = "/runs/r0002/ranks";
    if (H5Lexists(fid, at, H5P_DEFAULT) > 0) H5Ldelete(fid, at, H5P_DEFAULT);
    hid_t host = H5Tcopy(H5T_C_S1), role = H5Tcopy(H5T_C_S1), t = H5Tcreate(H5T_COMPOUND, sizeof(hand_row));
    H5Tset_size(host, 64);
    H5Tset_size(role, 8);
    H5Tinsert(t, "rank", HOFFSET(hand_row, rank), H5T_NATIVE_INT);
    H5Tinsert(t, "host", HOFFSET(hand_row, host), shape == 2 ? H5T_NATIVE_DOUBLE : host);
    if (shape != 1) H5Tinsert(t, "role", HOFFSET(hand_row, role), role);
    H5Tinsert(t, "steps", HOFFSET(hand_row, steps), H5T_NATIVE_INT);
    H5Tinsert(t, "step_median", HOFFSET(hand_row, step_median), H5T_NATIVE_DOUBLE);
    if (shape == 3) H5Tinsert(t, "gpu_temperature", HOFFSET(hand_row, extra), H5T_NATIVE_DOUBLE);
    hid_t sp = H5Screate_simple(1, &declared, NULL);
    hid_t ds = H5Dcreate2(fid, at, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds >= 0 ? 0 : -1;
    if (ds >= 0 && n == declared && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) rc = -1;
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp), H5Tclose(t), H5Tclose(role), H5Tclose(host);
    return rc;
}

/* e->value picks the damage; e->text, where given, is row 1's role */
static int damage_ranks(hid_t fid, const edit *e)
{
    hand_row rows[3] = {{0, "node-a", "worker", 12, 0.01, 0}, {1, "node-b", "worker", 12, 0.025, 0},
                        {2, "node-a", "server", 0, NAN, 0}};
    if (e->text) snprintf(rows[1].role, sizeof rows[1].role, "%s", e->text);
    switch (e->value) {
    case 1: rows[1].rank = 0; break;            /* rank 0 twice */
    case 2: rows[2].rank = 7; break;            /* past the last rank */
    case 3: return write_ranks(fid, rows, 3, 1, 3);
    case 4: return write_ranks(fid, rows, 3, 2, 3);
    case 5: return write_ranks(fid, rows, 0, 0, 3);       /* declared, never written */
    case 6: return write_ranks(fid, rows, 0, 0, 70000);   /* more ranks than any job */
    case 7: rows[0].steps = -1; break;
    case 8: rows[0].host[63] = 'x', memset(rows[0].host, 'h', 63); break; /* a host that fills its column */
    }
    return write_ranks(fid, rows, 3, e->value == 9 ? 3 : 0, 3);
}

static void test_ranks(void)
{
    source = good_dist;
    expect_refused("a rank of an unknown role", damage_ranks, (edit){NULL, NULL, 0, "boss"}, "r0002", "role 'boss'",
                   "worker, server");
    expect_refused("a rank listed twice", damage_ranks, (edit){NULL, NULL, 1, NULL}, "r0002", "rank 0 listed twice",
                   NULL);
    expect_refused("a rank past the last", damage_ranks, (edit){NULL, NULL, 2, NULL}, "r0002", "rank 7 out of range",
                   "0..2");
    expect_refused("a rank table without roles", damage_ranks, (edit){NULL, NULL, 3, NULL}, "/runs/r0002/ranks",
                   "'role'", NULL);
    expect_refused("a rank table whose host is a number", damage_ranks, (edit){NULL, NULL, 4, NULL},
                   "/runs/r0002/ranks", "'host'", "fixed-length string");
    expect_refused("a rank table declaring rows it does not hold", damage_ranks, (edit){NULL, NULL, 5, NULL},
                   "/runs/r0002/ranks", "declares 3 rows", NULL);
    expect_refused("a rank table of 70000 rows", damage_ranks, (edit){NULL, NULL, 6, NULL}, "/runs/r0002/ranks",
                   "70000 rows", "up to 65536");
    expect_refused("negative steps of a rank", damage_ranks, (edit){NULL, NULL, 7, NULL}, "r0002", "steps = -1", NULL);
    expect_refused("a rank table that is not a table", put_dataset, (edit){"/runs/r0002", "ranks", 3, NULL},
                   "/runs/r0002/ranks", "not a table", NULL);
    expect_refused("a rank table that is a soft link", soft_link,
                   (edit){"/runs/r0002", "ranks", 0, "/runs/r0002/step_time"}, "/runs/r0002/ranks", "soft link", NULL);
    expect_refused("more workers than the run says", set_int, (edit){"/runs/r0002", "workers", 3, NULL}, "r0002",
                   "2 workers and 1 servers", "workers = 3");
    expect_refused("oversubscribed = 2", set_int, (edit){"/runs/r0002", "oversubscribed", 2, NULL}, "r0002",
                   "oversubscribed = 2", "0 or 1");
    expect_refused("servers = -1", set_int, (edit){"/runs/r0001", "servers", -1, NULL}, "r0001", "servers = -1",
                   "0 or more");
    expect_refused("workers = 0", set_int, (edit){"/runs/r0001", "workers", 0, NULL}, "r0001", "workers = 0",
                   "1 or more");

    /* tolerated: columns missing (NaN) or unknown (ignored), a host filling its column (ended),
     * and no workers, servers or oversubscribed attributes where there is no rank table */
    static const edit ok_edits[] = {{NULL, NULL, 8, NULL}, {NULL, NULL, 9, NULL}};
    for (int k = 0; k < 2; k++) {
        CHECK(copy_file(good_dist, bad) == 0, "copy");
        hid_t fid = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(fid >= 0 && damage_ranks(fid, &ok_edits[k]) == 0, "hand-written rank table %d", k);
        if (fid >= 0) H5Fclose(fid);
        mx_results r;
        CHECK(mx_results_load(bad, &r) == MX_OK, "hand-written rank table %d refused: %s", k, mx_last_error());
        const mx_run_record *d = r.nruns == 3 ? &r.runs[2] : NULL;
        CHECK(d && d->nranks == 3 && d->ranks[1].step_median == 0.025 && isnan(d->ranks[1].push_time) &&
                  strlen(d->ranks[0].host) == 63 - (k == 1 ? 57 : 0),
              "hand-written rank table %d read back wrong", k);
        if (r.nruns) mx_results_free(&r);
    }
    CHECK(copy_file(good_dist, bad) == 0, "copy");
    hid_t fid = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    static const char *const added[] = {"workers", "servers", "oversubscribed"};
    for (int i = 0; fid >= 0 && i < 3; i++) H5Adelete_by_name(fid, "/runs/r0001", added[i], H5P_DEFAULT);
    if (fid >= 0) H5Fclose(fid);
    mx_results r;
    CHECK(mx_results_load(bad, &r) == MX_OK && r.nruns == 3 && r.runs[1].workers == 1 && r.runs[1].servers == 0 &&
              r.runs[1].oversubscribed == 0 && r.runs[1].nranks == 0,
          "a run without workers, servers, oversubscribed: %s", mx_last_error());
    if (r.nruns) mx_results_free(&r);
    ncases += 3;

    /* the writer refuses a rank table that disagrees with the run */
    mx_run_record d;
    fixture_dist_record(&d, 8, 2, 1);
    d.servers = 2;
    CHECK(mx_results_append(bad, &d) == MX_EINVAL && strstr(mx_last_error(), "servers = 2"),
          "append a rank table of 1 server for 2: %s", mx_last_error());
    d.servers = 1;
    snprintf(d.ranks[2].role, sizeof d.ranks[2].role, "chief");
    CHECK(mx_results_append(bad, &d) == MX_EINVAL && strstr(mx_last_error(), "'chief'"), "append role 'chief': %s",
          mx_last_error());
    d.nranks = -1;
    CHECK(mx_results_append(bad, &d) == MX_EINVAL, "append -1 ranks: %s", mx_last_error());
    d.nranks = 3;
    ncases += 3;
    mx_record_free(&d);
    source = good;
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
    snprintf(good_dist, sizeof good_dist, "%s/good_dist.h5", dir);
    source = good;
    int rc = fixture_file(good, 2, 20);
    mx_run_record d;
    fixture_dist_record(&d, 2, 2, 1);
    if (rc == MX_OK && copy_file(good, good_dist) == 0) rc = mx_results_append(good_dist, &d);
    mx_record_free(&d);
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
        test_ranks();
        test_writer_refuses();
    }
    printf("test_results_reader: %d damaged files and refused records tried\n", ncases);
    unlink(good);
    unlink(bad);
    unlink(other);
    unlink(good_dist);
    rmdir(dir);
    return check_summary("test_results_reader");
}
