/* MPI_Wait, MPI_Waitall and MPI_Probe without holding a core. Open MPI's blocking calls spin:
 * a parameter server idling between rounds, a worker waiting for its pull, or a kvstore
 * thread waiting in a collective for a rank still in its backward pass would take the core
 * a worker computes on (measured on 2 cores: ...). These poll with a short back-off
 * instead (a few yields, then sleeps of up to MX_MPI_MAX_NAP_US, progressing MPI at each
 * poll), as a ps-lite server blocks in epoll. */
#ifndef MX_MPI_WAIT_H
#define MX_MPI_WAIT_H

#include <mpi.h>

#define MX_MPI_MAX_NAP_US 50

int mx_mpi_wait(MPI_Request *req);
int mx_mpi_wait_status(MPI_Request *req, MPI_Status *st);
int mx_mpi_waitall(int n, MPI_Request *req);
int mx_mpi_probe(int source, int tag, MPI_Comm comm, MPI_Status *st);

#endif
