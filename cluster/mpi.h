/* What the MPI code of the dist_* kvstores needs of the cluster beyond cluster/cluster.h. */
#ifndef MX_CLUSTER_MPI_H
#define MX_CLUSTER_MPI_H

#include "cluster.h"

#include "comm/mpi_wait.h"

#include <mpi.h>

/* The communicator of parameter-server session `session` (two duplicates of
 * MPI_COMM_WORLD, alternating: kvstore/ps.h); errors return (MPI_ERRORS_RETURN). */
MPI_Comm mx_cluster_session_comm(const mx_cluster *c, int session);
/* This rank's clock0 and clock_error (cluster/cluster.h), measured against rank 0's clock.
 * Collective over MPI_COMM_WORLD. */
void mx_cluster_align_clocks(mx_cluster *c);
/* mx_error(MX_ERUNTIME) with `what` and MPI's text for code. */
int mx_cluster_fail(const char *what, int code);

#endif
