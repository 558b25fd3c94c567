/* The rank table of a dist_* run (store.h): the dataset /runs/<id>/ranks, one row per rank
 * of the MPI job (mx_rank_row), written when the run has one and read tolerant of files
 * without it (table.c), and the checks of its rows. */
#include "store.h"

#include "base/status.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_SIZE(m) sizeof(((mx_rank_row *)0)->m)
#define C(m, kind, req) {#m, kind, offsetof(mx_rank_row, m), ROW_SIZE(m), req}
/* rank and role: a row cannot be read without them */
static const mx_field cols[] = {
    C(rank, F_INT, 1),      C(host, F_STR, 0),        C(role, F_STR, 1),       C(steps, F_INT, 0),
    C(step_min, F_DBL, 0),  C(step_median, F_DBL, 0), C(step_p90, F_DBL, 0),   C(step_max, F_DBL, 0),
    C(bytes_per_step, F_DBL, 0), C(push_time, F_DBL, 0), C(pull_time, F_DBL, 0), C(busy_time, F_DBL, 0),
};
#undef C

static const mx_table_def ranks_table = {
    "ranks", "rank", cols, (int)(sizeof cols / sizeof cols[0]), sizeof(mx_rank_row), MX_RANKS_MAX,
    "step_min, step_median, step_p90, step_max, push_time, pull_time, busy_time: s (per step); bytes_per_step: bytes"};

int mx_ranks_write(hid_t g, const mx_run_record *r) { return mx_table_write(g, &ranks_table, r->ranks, r->nranks); }

int mx_ranks_read(hid_t g, const char *where, mx_run_record *r)
{
    void *rows;
    const int rc = mx_table_read(g, where, &ranks_table, &rows, &r->nranks);
    r->ranks = rows;
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
            rc = mx_error(code, "%s: run '%s': rank row %d: host or role is not a NUL-terminated string", path, r->id,
                          i);
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
