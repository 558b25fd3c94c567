/* What the MPI code of the dist_* kvstores needs of the cluster beyond cluster.h. */
#ifndef MX_CLUSTER_MPI_H
#define MX_CLUSTER_MPI_H

#include "cluster.h"

#include <mpi.h>

/* The communicator of parameter-server session `session` (two duplicates of
 * MPI_COMM_WORLD, alternating: ps.h); errors return (MPI_ERRORS_RETURN). */
MPI_Comm mx_cluster_session_comm(const mx_cluster *c, int session);
/* MPI_Waitall and MPI_Probe without holding a core: Open MPI's blocking calls spin, and a
 * parameter server idling between rounds (or a worker waiting for its pull) would take the
 * core a worker computes on. These poll with a short back-off instead (yield, then sleeps
 * of up to MX_MPI_MAX_NAP_US): a ps-lite server blocks in epoll the same way. */
#define MX_MPI_MAX_NAP_US 50
int mx_mpi_waitall(int n, MPI_Request *req);
int mx_mpi_probe(int source, int tag, MPI_Comm comm, MPI_Status *st);
/* mx_error(MX_ERUNTIME) with `what` and MPI's text for code. */
int mx_cluster_fail(const char *what, int code);

#endif
