/* The MPI job of a dist_* run (cluster/cluster.h): initialisation, roles and host names. */
#include "mpi.h"
#include "comm/comm.h"
#include "base/status.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An environment count: -1 when unset, -2 when not a number in 0..max. */
static int env_count(const char *name, int max)
{
    const char *v = getenv(name);
    if (!v) return -1;
    char *end;
    const long n = strtol(v, &end, 10);
    return end != v && *end == '\0' && n >= 0 && n <= max ? (int)n : -2;
}

/* This rank's DMLC_ROLE: 0 worker, 1 server, -1 unset, -2 not accepted. */
static int env_role(void)
{
    const char *v = getenv("DMLC_ROLE");
    if (!v) return -1;
    if (strcmp(v, "worker") == 0) return 0;
    if (strcmp(v, "server") == 0) return 1;
    return -2;
}

/* Decides the counts from --servers and the environment; every rank decides alike from the
 * same inputs (roles gathered from all). */
static int decide(mx_cluster *c, mx_kv_mode mode, int servers, const int *roles)
{
    const int ps = mx_kv_mode_has(mode, MX_KV_SERVERS);
    int set = 0, nserv = 0;
    for (int r = 0; r < c->size; r++) {
        if (roles[r] == -2)
            return mx_error(MX_EINVAL, "DMLC_ROLE='%s' on rank %d: accepted worker or server (mpirun takes the "
                            "scheduler's part)", r == c->rank ? getenv("DMLC_ROLE") : "?", r);
        set += roles[r] >= 0;
        nserv += roles[r] == 1;
    }
    if (set && set != c->size)
        return mx_error(MX_EINVAL,
                        "DMLC_ROLE is set on %d of %d ranks: set it on every rank (mpirun -x DMLC_ROLE=... in "
                        "each part of an MPMD command line) or on none",
                        set, c->size);
    const int env_servers = env_count("DMLC_NUM_SERVER", c->size), env_workers = env_count("DMLC_NUM_WORKER", c->size);
    if (env_servers == -2 || env_workers == -2)
        return mx_error(MX_EINVAL,
                        "DMLC_NUM_SERVER='%s', DMLC_NUM_WORKER='%s': accepted whole numbers 0..%d (the ranks "
                        "started)",
                        getenv("DMLC_NUM_SERVER") ? getenv("DMLC_NUM_SERVER") : "",
                        getenv("DMLC_NUM_WORKER") ? getenv("DMLC_NUM_WORKER") : "", c->size);
    int S;
    const char *from;
    if (set) S = nserv, from = "DMLC_ROLE";
    else if (servers >= 0) S = servers, from = "--servers";
    else if (env_servers >= 0) S = env_servers, from = "DMLC_NUM_SERVER";
    else if (!ps) S = 0, from = "dist_allreduce (no servers)";
    else {
        /* MXNet's launcher starts as many servers as workers */
        if (c->size % 2)
            return mx_error(MX_EINVAL, "%s with %d ranks: by default half the ranks are servers (as MXNet's launcher "
                            "starts as many servers as workers), which needs an even count; give --servers S "
                            "(1..%d)", mx_kv_mode_name(mode), c->size, c->size - 1);
        S = c->size / 2, from = "the default (as many servers as workers)";
    }
    if (!ps && S > 0)
        return mx_error(MX_EINVAL, "dist_allreduce has no servers, but %s gives %d: accepted 0", from, S);
    if (ps && (S < 1 || S >= c->size))
        return mx_error(MX_EINVAL, "%s: %d servers of %d ranks; accepted 1..%d (at least one worker and one server)",
                        from, S, c->size, c->size - 1);
    if (env_workers >= 0 && env_workers != c->size - S)
        return mx_error(MX_EINVAL, "DMLC_NUM_WORKER=%d, but %d ranks with %d servers leave %d workers", env_workers,
                        c->size, S, c->size - S);
    /* the bounds of the comm (members) and of the server protocol (parts per key: kvstore/ps.h) */
    if (c->size - S > MX_COMM_MAX || S > MX_COMM_MAX)
        return mx_error(MX_EINVAL, "%d ranks as %d workers and %d servers: accepted at most %d of each", c->size,
                        c->size - S, S, MX_COMM_MAX);
    c->nservers = S;
    c->nworkers = c->size - S;
    return MX_OK;
}

static int assign(mx_cluster *c, const int *roles)
{
    c->worker_rank = calloc(c->nworkers, sizeof(int));
    c->server_rank = calloc(c->nservers ? c->nservers : 1, sizeof(int));
    if (!c->worker_rank || !c->server_rank) return mx_error(MX_ENOMEM, "out of memory for the rank table");
    int w = 0, s = 0;
    for (int r = 0; r < c->size; r++) {
        const int server = roles[0] >= 0 ? roles[r] == 1 : r >= c->nworkers;
        if (r == c->rank) c->role = server ? MX_ROLE_SERVER : MX_ROLE_WORKER, c->index = server ? s : w;
        if (server) c->server_rank[s++] = r;
        else c->worker_rank[w++] = r;
    }
    return MX_OK;
}

/* The workers on this host (ranks sharing its memory), in rank order. */
static int find_local_workers(mx_cluster *c)
{
    MPI_Comm host;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &host) != MPI_SUCCESS)
        return mx_error(MX_ERUNTIME, "cannot tell which ranks share this host (MPI_Comm_split_type)");
    int n = 0, me = 0;
    MPI_Comm_size(host, &n);
    MPI_Comm_rank(host, &me);
    int *roles = malloc(sizeof(int) * n);
    const int mine = c->role == MX_ROLE_WORKER;
    int rc = roles ? MX_OK : mx_error(MX_ENOMEM, "out of memory for the ranks of this host");
    if (rc == MX_OK && MPI_Allgather(&mine, 1, MPI_INT, roles, 1, MPI_INT, host) != MPI_SUCCESS)
        rc = mx_error(MX_ERUNTIME, "cannot gather the roles of this host's ranks");
    for (int i = 0; rc == MX_OK && i < n; i++) {
        c->local_workers += roles[i];
        if (i < me) c->local_worker += roles[i];
    }
    free(roles);
    MPI_Comm_free(&host);
    return rc;
}

int mx_cluster_init(mx_cluster **out, mx_kv_mode mode, int servers)
{
    *out = NULL;
    mx_cluster *c = calloc(1, sizeof *c);
    if (!c) return mx_error(MX_ENOMEM, "out of memory for the MPI job's description");
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    if (!init) {
        /* MULTIPLE: a worker's device threads, its kvstore thread and the trainer all call MPI */
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            free(c);
            return mx_error(MX_ERUNTIME, "MPI_Init_thread failed (is this process started by mpirun?)");
        }
        c->we_initialised = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    *out = c;
    if (provided < MPI_THREAD_MULTIPLE)
        return mx_error(MX_EUNSUPPORTED, "this MPI gives thread level %d; the dist_* kvstores need MPI_THREAD_MULTIPLE",
                        provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    memcpy(c->host, name,
           len < (int)sizeof c->host ? (size_t)len : sizeof c->host - 1); /* long names keep their start */
    int *roles = calloc(c->size, sizeof(int));
    if (!roles) return mx_error(MX_ENOMEM, "out of memory for the rank table");
    const int mine = env_role();
    MPI_Allgather(&mine, 1, MPI_INT, roles, 1, MPI_INT, MPI_COMM_WORLD);
    int rc = decide(c, mode, servers, roles);
    if (rc == MX_OK) rc = assign(c, roles);
    free(roles);
    if (rc == MX_OK) rc = find_local_workers(c);
    MPI_Comm *comms = calloc(2, sizeof(MPI_Comm));
    if (!comms) return rc < 0 ? rc : mx_error(MX_ENOMEM, "out of memory for the rank table");
    c->impl = comms;
    /* collective on every rank, whatever rc: a rank that skipped it would leave the others waiting */
    for (int i = 0; i < 2; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
    }
    mx_cluster_align_clocks(c);
    return rc;
}

MPI_Comm mx_cluster_session_comm(const mx_cluster *c, int session) { return ((MPI_Comm *)c->impl)[session & 1]; }

int mx_cluster_fail(const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, text, &len);
    return mx_error(MX_ERUNTIME, "%s: %s", what, text);
}

void mx_cluster_abort(mx_cluster *c, int code)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Abort(MPI_COMM_WORLD, code);
}

int mx_cluster_gather(mx_cluster *c, const void *row, size_t row_bytes, void *rows, const long *hist,
                      long *hist_sum, int nhist)
{
    const int root = c->worker_rank[0];
    MPI_Comm comm = mx_cluster_session_comm(c, 0);
    int rc = MPI_Gather(row, (int)row_bytes, MPI_BYTE, rows, (int)row_bytes, MPI_BYTE, root, comm);
    if (rc != MPI_SUCCESS) return mx_cluster_fail("gathering the ranks' figures", rc);
    rc = MPI_Reduce(hist, hist_sum, nhist, MPI_LONG, MPI_SUM, root, comm);
    if (rc != MPI_SUCCESS) return mx_cluster_fail("summing the servers' staleness", rc);
    return MX_OK;
}

void mx_cluster_end(mx_cluster *c)
{
    if (!c) return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (c->impl && !fin)
        for (int i = 0; i < 2; i++) MPI_Comm_free(&((MPI_Comm *)c->impl)[i]);
    if (c->we_initialised && !fin) MPI_Finalize();
    free(c->impl);
    free(c->worker_rank);
    free(c->server_rank);
    free(c);
}
