/* `mxbench train` as one rank of a dist_* MPI job (dist_mpi.c; dist_none.c in a build
 * without MPI): the job's start, a server rank's whole life, and the end of a worker's run,
 * where worker 0 gathers every rank's figures into its record. */
#ifndef MX_DIST_H
#define MX_DIST_H

#include "results/record.h"
#include "cluster/cluster.h"

/* Starts this rank's part of the job for kvstore `mode` (servers < 0: not given). On failure
 * prints why (rank 0 only: every rank fails alike) and returns the exit status (2 for a bad
 * count or environment), with *out NULL and MPI finalised. */
int mx_dist_start(mx_kv_mode mode, int servers, mx_cluster **out);

/* A server rank: serves every session until worker 0 ends the job, then joins the gather.
 * Returns 0, or 1 after printing why (the job is then aborted: nobody waits forever). */
int mx_dist_serve(mx_cluster *c);

/* A worker after training (rc its outcome): worker 0 ends the servers' loop; every rank
 * gathers; worker 0 fills rec's rank table, staleness and worker spread. A failed rank
 * aborts the job (with a message naming it) instead: the others would wait for it. */
int mx_dist_finish_worker(mx_cluster *c, int rc, mx_run_record *rec);

/* Ends MPI use; frees c (NULL: nothing). */
void mx_dist_end(mx_cluster *c);
/* Ends the whole job at once with exit status code (c NULL: nothing), for a failure on one
 * rank that the others would wait for. */
void mx_dist_abort(mx_cluster *c, int code);

/* Worker processes started on this host by the launcher (1 when unknown). */
int mx_dist_local_ranks(void);

#endif
