/* The timeline of a dist_* job (cluster/cluster.h): every rank's events merged into worker 0's
 * file, on the one clock that cluster/clock.c measured. */
#include "mpi.h"
#include "comm/comm.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* This rank's part of the trace as text: a server keeps what lies within the workers'
 * window [lo, hi] (common clock; it recorded whole rounds around it), a worker all of its
 * own; times from the window's start. */
static char *my_part(const mx_cluster *c, double lo, double hi, size_t *len)
{
    char name[160];
    if (c->rank == 0)
        snprintf(name, sizeof name, "rank %d (%s %d on %s)", c->rank, mx_role_name(c->role), c->index, c->host);
    else
        snprintf(name, sizeof name, "rank %d (%s %d on %s; clock within %.0f us of rank 0)", c->rank,
                 mx_role_name(c->role), c->index, c->host, c->clock_error * 1e6);
    const int server = c->role == MX_ROLE_SERVER;
    return mx_trace_json(c->rank, name, c->clock0 + (isfinite(lo) ? lo : 0), server ? c->clock0 + lo : -HUGE_VAL,
                         server ? c->clock0 + hi : HUGE_VAL, len);
}

/* Every rank's part (n bytes at mine) to the writer, which writes the file: returns the
 * write's status there, MX_OK or an MPI failure elsewhere. A job has at most MAX_RANKS. */
#define MAX_RANKS (2 * MX_COMM_MAX)
static int gather_parts(mx_cluster *c, MPI_Comm comm, const char *mine, int n, int writer)
{
    const int me_writes = c->rank == writer;
    int counts[MAX_RANKS] = {0}, displs[MAX_RANKS] = {0};
    int rc = MX_OK, e = MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, writer, comm);
    long long total = 0;
    for (int r = 0; me_writes && r < c->size; r++) displs[r] = (int)total, total += counts[r];
    char *all = NULL;
    if (me_writes && e == MPI_SUCCESS && total > INT_MAX)
        rc = mx_error(MX_EINVAL, "the job's trace would be %lld bytes; accepted: less than 2 GiB (fewer --trace-steps)",
                      total);
    else if (me_writes && e == MPI_SUCCESS && !(all = malloc(total ? (size_t)total : 1)))
        rc = mx_error(MX_ENOMEM, "out of memory for the job's trace (%lld bytes)", total);
    /* the senders learn whether the writer can take their parts: else nobody sends */
    int ok = rc == MX_OK;
    if (e == MPI_SUCCESS) e = MPI_Bcast(&ok, 1, MPI_INT, writer, comm);
    if (e == MPI_SUCCESS && ok) e = MPI_Gatherv(mine, n, MPI_BYTE, all, counts, displs, MPI_BYTE, writer, comm);
    if (e != MPI_SUCCESS && rc == MX_OK) rc = mx_cluster_fail("gathering the ranks' traces", e);
    if (me_writes && rc == MX_OK) {
        const char *parts[MAX_RANKS];
        size_t lens[MAX_RANKS];
        for (int r = 0; r < c->size; r++) parts[r] = all + displs[r], lens[r] = (size_t)counts[r];
        rc = mx_trace_write_parts(c->trace, parts, lens, c->size);
    }
    free(all);
    return rc;
}

int mx_cluster_trace_merge(mx_cluster *c)
{
    MPI_Comm comm = mx_cluster_session_comm(c, 0);
    const int writer = c->worker_rank[0];
    /* the window: from the workers' earliest event to their latest, on the common clock; and
     * whether the writer wants a file at all */
    double lo, hi;
    const int any = c->role == MX_ROLE_WORKER && mx_trace_span(&lo, &hi);
    double v[3] = {any ? c->clock0 - lo : -HUGE_VAL, any ? hi - c->clock0 : -HUGE_VAL, c->rank == writer && c->trace};
    int e = MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_MAX, comm);
    if (e != MPI_SUCCESS || !(v[2] > 0)) {
        mx_trace_reset();
        return e == MPI_SUCCESS ? MX_OK : mx_cluster_fail("agreeing on the trace's window", e);
    }
    size_t len = 0;
    char *mine = my_part(c, -v[0], v[1], &len);
    mx_trace_reset();
    int rc = mine ? MX_OK : MX_ENOMEM;
    /* a part that failed, or too long to count in an int (4M events are far less), is sent
     * empty: the others' still reach the file */
    const int n = mine && len <= INT_MAX ? (int)len : 0;
    const int grc = gather_parts(c, comm, mine, n, writer);
    free(mine);
    return rc < 0 ? rc : grc;
}
