/* The rank table of a dist_* run (store.h): the dataset /runs/<id>/ranks, one row per rank
 * of the MPI job (mx_rank_row), written when the run has one and read tolerant of files
 * without it. The reader believes no size the file declares beyond the bytes it holds, and
 * ends every string it reads (SCHEMA.md, "What a reader checks"). */
#include "store.h"

#include "engine/status.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_SIZE(m) sizeof(((mx_rank_row *)0)->m)

typedef enum { K_INT, K_STR, K_DBL } member_kind;

static const struct {
    const char *name;
    member_kind kind;
    size_t off, size;
} members[] = {
#define M(m, kind) {#m, kind, offsetof(mx_rank_row, m), ROW_SIZE(m)}
    M(rank, K_INT),      M(host, K_STR),        M(role, K_STR),          M(steps, K_INT),
    M(step_min, K_DBL),  M(step_median, K_DBL), M(step_p90, K_DBL),      M(step_max, K_DBL),
    M(bytes_per_step, K_DBL), M(push_time, K_DBL), M(pull_time, K_DBL),  M(busy_time, K_DBL),
#undef M
};
enum { NMEMBERS = sizeof members / sizeof members[0] };
/* members a row cannot be read without */
static int required(int m) { return m == 0 || m == 2; } /* rank, role */

/* The file type (packed, little-endian, in table order) or the memory type (mx_rank_row);
 * with only >= 0 (a file's own type), the memory type has just the members that file has. */
static hid_t row_type(int in_file, hid_t only)
{
    size_t size = in_file ? 0 : sizeof(mx_rank_row);
    for (int i = 0; in_file && i < NMEMBERS; i++) size += members[i].size;
    hid_t t = H5Tcreate(H5T_COMPOUND, size);
    size_t off = 0;
    for (int i = 0; t >= 0 && i < NMEMBERS; i++) {
        const int skip = only >= 0 && H5Tget_member_index(only, members[i].name) < 0;
        hid_t num = members[i].kind == K_INT ? (in_file ? H5T_STD_I32LE : H5T_NATIVE_INT)
                                             : (in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        hid_t m = skip ? 0 : members[i].kind == K_STR ? mx_store_string_type(members[i].size) : H5Tcopy(num);
        herr_t e = skip ? 0 : m >= 0 ? H5Tinsert(t, members[i].name, in_file ? off : members[i].off, m) : -1;
        off += members[i].size;
        if (!skip && m >= 0 && H5Tclose(m) < 0) e = -1;
        if (e < 0) {
            H5Tclose(t);
            return -1;
        }
    }
    return t;
}

static const char units[] = "step_min, step_median, step_p90, step_max, push_time, pull_time, busy_time: s "
                            "(per step); bytes_per_step: bytes";

int mx_ranks_write(hid_t g, const mx_run_record *r)
{
    if (r->nranks <= 0 || !r->ranks) return 0; /* not a dist_* run: no dataset */
    hsize_t n = (hsize_t)r->nranks;
    hid_t ft = row_type(1, -1), mt = row_type(0, -1), sp = H5Screate_simple(1, &n, NULL), ds = -1;
    if (ft >= 0 && sp >= 0) ds = H5Dcreate2(g, "ranks", ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds >= 0 && mt >= 0 && H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->ranks) >= 0 ? 0 : -1;
    if (rc == 0) rc = mx_attr_write_str(ds, "units", units);
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    if (sp >= 0 && H5Sclose(sp) < 0) rc = -1;
    if (mt >= 0 && H5Tclose(mt) < 0) rc = -1;
    if (ft >= 0 && H5Tclose(ft) < 0) rc = -1;
    return rc;
}

/* MX_OK when the file's row type ft is a table mxbench can read: a compound whose members
 * named like ours are numbers or fixed-length strings where ours are, with rank and role. */
static int check_row_type(hid_t ft, const char *where, unsigned char present[NMEMBERS])
{
    if (H5Tget_class(ft) != H5T_COMPOUND || H5Tget_size(ft) == 0)
        return mx_error(MX_EFORMAT, "%s/ranks: is not a table (expected a compound dataset, see SCHEMA.md)", where);
    for (int i = 0; i < NMEMBERS; i++) {
        int idx = H5Tget_member_index(ft, members[i].name);
        present[i] = idx >= 0;
        if (idx < 0) {
            if (required(i))
                return mx_error(MX_EFORMAT, "%s/ranks: has no '%s' column (required)", where, members[i].name);
            continue;
        }
        hid_t mt = H5Tget_member_type(ft, (unsigned)idx);
        H5T_class_t c = mt >= 0 ? H5Tget_class(mt) : H5T_NO_CLASS;
        int ok = members[i].kind == K_STR ? c == H5T_STRING && H5Tis_variable_str(mt) == 0
                                          : c == H5T_INTEGER || c == H5T_FLOAT;
        if (mt >= 0) H5Tclose(mt);
        if (!ok)
            return mx_error(MX_EFORMAT, "%s/ranks: column '%s' is not %s", where, members[i].name,
                            members[i].kind == K_STR ? "a fixed-length string" : "a number");
    }
    return MX_OK;
}

/* What a row lacks when the file has no such column: NaN figures, no steps, no host. */
static void fill_absent(mx_rank_row *row, const unsigned char present[NMEMBERS])
{
    for (int i = 0; i < NMEMBERS; i++) {
        if (present[i]) continue;
        char *p = (char *)row + members[i].off;
        if (members[i].kind == K_DBL) *(double *)p = NAN;
        else memset(p, 0, members[i].size);
    }
}

int mx_ranks_read(hid_t g, const char *where, mx_run_record *r)
{
    r->ranks = NULL;
    r->nranks = 0;
    int rc = mx_link_check(g, "ranks", H5I_DATASET, where);
    if (rc <= 0) return rc; /* absent: not a dist_* run, or a file from before rank tables */
    hid_t ds = H5Dopen2(g, "ranks", H5P_DEFAULT), sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hid_t ft = ds >= 0 ? H5Dget_type(ds) : -1, mt = -1;
    hsize_t n = 0;
    unsigned char present[NMEMBERS] = {0};
    rc = sp >= 0 && ft >= 0 ? MX_OK : mx_error(MX_EFORMAT, "%s/ranks: cannot be read (file corrupt?)", where);
    if (rc == MX_OK && (H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &n, NULL) < 0))
        rc = mx_error(MX_EFORMAT, "%s/ranks: has the wrong shape (expected [nranks])", where);
    if (rc == MX_OK && n > MX_RANKS_MAX)
        rc = mx_error(MX_EFORMAT, "%s/ranks: has %llu rows (accepted: up to %d ranks)", where, (unsigned long long)n,
                      MX_RANKS_MAX);
    if (rc == MX_OK) rc = check_row_type(ft, where, present);
    if (rc == MX_OK && n > 0) {
        /* the shape is only a claim: believe it as far as the bytes the dataset holds */
        const size_t esize = H5Tget_size(ft);
        const hsize_t stored = H5Dget_storage_size(ds);
        if (esize == 0 || stored / esize < n)
            rc = mx_error(MX_EFORMAT, "%s/ranks: declares %llu rows but holds %llu bytes (file damaged?)", where,
                          (unsigned long long)n, (unsigned long long)stored);
    }
    if (rc == MX_OK && n > 0) {
        mt = row_type(0, ft);
        r->ranks = calloc((size_t)n, sizeof *r->ranks);
        if (mt < 0) rc = mx_error(MX_EFORMAT, "%s/ranks: cannot describe its columns", where);
        else if (!r->ranks)
            rc = mx_error(MX_ENOMEM, "%s/ranks: out of memory for %llu rows", where, (unsigned long long)n);
        else if (H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->ranks) < 0)
            rc = mx_error(MX_EFORMAT, "%s/ranks: cannot be read (a column of the wrong type, or file corrupt)", where);
    }
    if (rc == MX_OK) {
        r->nranks = (int)n;
        for (int i = 0; i < r->nranks; i++) {
            fill_absent(&r->ranks[i], present);
            r->ranks[i].host[sizeof r->ranks[i].host - 1] = '\0';
            r->ranks[i].role[sizeof r->ranks[i].role - 1] = '\0';
        }
    } else {
        free(r->ranks);
        r->ranks = NULL;
    }
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

int mx_ranks_check(const mx_run_record *r, const char *path, int code)
{
    if (r->nranks == 0) return MX_OK;
    if (r->nranks < 0 || r->nranks > MX_RANKS_MAX || !r->ranks)
        return mx_error(code, "%s: run '%s': %d ranks%s (accepted: 1 to %d, with their rows)", path, r->id, r->nranks,
                        r->ranks ? "" : " without rows", MX_RANKS_MAX);
    unsigned char *seen = calloc((size_t)r->nranks, 1);
    if (!seen) return mx_error(MX_ENOMEM, "%s: run '%s': out of memory for %d ranks", path, r->id, r->nranks);
    int rc = MX_OK, nworkers = 0, nservers = 0;
    for (int i = 0; i < r->nranks && rc == MX_OK; i++) {
        const mx_rank_row *x = &r->ranks[i];
        const int ended = memchr(x->host, 0, sizeof x->host) && memchr(x->role, 0, sizeof x->role);
        const int worker = ended && strcmp(x->role, "worker") == 0, server = ended && strcmp(x->role, "server") == 0;
        nworkers += worker, nservers += server;
        if (!ended)
            rc = mx_error(code, "%s: run '%s': rank row %d: host or role is not a NUL-terminated string", path, r->id, i);
        else if (!worker && !server)
            rc = mx_error(code, "%s: run '%s': rank row %d: role '%s' (accepted: worker, server)", path, r->id, i,
                          x->role);
        else if (x->rank < 0 || x->rank >= r->nranks || seen[x->rank])
            rc = mx_error(code, "%s: run '%s': rank row %d: rank %d %s (accepted: each of 0..%d once)", path, r->id, i,
                          x->rank, x->rank >= 0 && x->rank < r->nranks ? "listed twice" : "out of range",
                          r->nranks - 1);
        else if (x->steps < 0)
            rc = mx_error(code, "%s: run '%s': rank %d: steps = %d is impossible (accepted: 0 or more)", path, r->id,
                          x->rank, x->steps);
        else
            seen[x->rank] = 1;
    }
    free(seen);
    if (rc == MX_OK && (nworkers != r->workers || nservers != r->servers))
        rc = mx_error(code, "%s: run '%s': the rank table has %d workers and %d servers, but the run says "
                      "workers = %d, servers = %d (accepted: the same counts)", path, r->id, nworkers, nservers,
                      r->workers, r->servers);
    return rc;
}
