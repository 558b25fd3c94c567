/* The MPI job of a dist_* run: which ranks are workers and which are servers (MXNet's roles),
 * how many of each, and the host each runs on. Every rank is an `mxbench train` process
 * started by mpirun; workers train, servers run the parameter-server loop (kvstore/ps_server.c).
 *
 * Roles: by default ranks 0..W-1 are workers and W..W+S-1 servers, so that rank 0 is worker
 * 0, which writes the record. S comes from --servers, else DMLC_NUM_SERVER, else (parameter
 * server modes) as many servers as workers, as MXNet's launcher starts; dist_allreduce has no
 * servers. DMLC_NUM_WORKER, when set, must agree with the ranks left for workers, and
 * DMLC_ROLE=worker|server, when set on every rank (mpirun's MPMD form), assigns roles
 * instead of rank order. */
#ifndef MX_CLUSTER_H
#define MX_CLUSTER_H

#include "base/config.h"

#include <stddef.h>

typedef enum { MX_ROLE_WORKER, MX_ROLE_SERVER } mx_role;

#define MX_CLUSTER_HOST 64

typedef struct mx_cluster {
    int rank, size;          /* in MPI_COMM_WORLD */
    int nworkers, nservers;
    mx_role role;
    int index;               /* worker w or server s, by rank order within the role */
    int *worker_rank;        /* [nworkers] MPI rank of each worker */
    int *server_rank;        /* [nservers] MPI rank of each server */
    char host[MX_CLUSTER_HOST];
    /* this host's workers: how many, and which of them this one is (rank order). A worker's
     * devices are numbered after those of the workers before it on the host, so that CPU
     * devices bind to cores (and GPUs are chosen) without two ranks taking the same one */
    int local_workers, local_worker;
    int we_initialised;      /* MPI_Init_thread was called here: finalise in mx_cluster_end */
    int sessions;            /* parameter-server sessions begun (kvstore/ps.h): kvstores created */
    /* The timeline (engine/core/trace.h): this rank's mx_now() at one instant common to every rank
     * (measured in mx_cluster_init), within clock_error seconds; the file worker 0 writes
     * the job's trace to (NULL: none) and the rounds of its first session a server records
     * (0: none), both set by the caller before the job runs */
    double clock0, clock_error;
    const char *trace;
    int trace_rounds;
    void *impl;              /* the MPI communicators (cluster/mpi.h) */
} mx_cluster;

/* 1 when this process was started by mpirun (or another MPI launcher: the environment
 * says so), without initialising MPI. */
int mx_cluster_launched(void);

/* Initialises MPI (thread level multiple) and assigns roles for kvstore mode `mode`
 * (MX_KV_DIST_SYNC, ...); servers < 0: not given. MX_EINVAL naming the value for counts that
 * cannot work (no worker left, servers for dist_allreduce, DMLC_* disagreeing with the
 * ranks). Collective over every rank. On failure *out may still be set (MPI initialised):
 * pass it to mx_cluster_abort or mx_cluster_end. */
int mx_cluster_init(mx_cluster **out, mx_kv_mode mode, int servers);
/* Ends the whole job at once (MPI_Abort): for a failure on one rank, which would otherwise
 * leave the others waiting for it. mpirun then stops every rank. */
void mx_cluster_abort(mx_cluster *c, int code);

/* Gathers every rank's row (row_bytes each) into rows (on worker 0: size x row_bytes, in
 * rank order) and sums every rank's nhist counts into hist_sum (worker 0). Collective. */
int mx_cluster_gather(mx_cluster *c, const void *row, size_t row_bytes, void *rows, const long *hist,
                      long *hist_sum, int nhist);
/* The job's timeline, collective over every rank at its end: every rank's recorded events
 * (engine/core/trace.h), their times moved onto the common clock, go to worker 0, which writes
 * them to c->trace as one file, a process per rank (pid = rank, named by rank, role and
 * host). A server keeps the events that lie within the workers' window. Every rank's
 * recording is reset. Nothing moves unless worker 0 has a c->trace. */
int mx_cluster_trace_merge(mx_cluster *c);
/* Ends the job's MPI use (finalises when mx_cluster_init initialised it) and frees c. */
void mx_cluster_end(mx_cluster *c);

/* "worker" or "server" */
const char *mx_role_name(mx_role r);

#endif
