/* MPI_Wait, MPI_Waitall and MPI_Probe without holding a core. Open MPI's blocking calls spin:
 * a parameter server idling between rounds, or a worker waiting for its pull, takes CPU time
 * the workers compute with when ranks outnumber cores. These poll with a short back-off
 * instead (yields for MX_MPI_SPIN_US, then sleeps of MX_MPI_MAX_NAP_US, progressing MPI at
 * each poll), as a ps-lite server blocks in epoll. Measured against a build whose waits spin
 * (lenet on 2 cores, 2 workers + 2 servers, dist_sync, dist_async and dist_allreduce): an
 * earlier back-off and this one came out within this machine's noise either way, so the wait
 * that leaves the cores to the work is kept (docs/performance.md, "Choices in the code"). */
#ifndef MX_MPI_WAIT_H
#define MX_MPI_WAIT_H

#include <mpi.h>

#define MX_MPI_SPIN_US 500
#define MX_MPI_MAX_NAP_US 50

int mx_mpi_wait(MPI_Request *req);
int mx_mpi_wait_status(MPI_Request *req, MPI_Status *st);
int mx_mpi_waitall(int n, MPI_Request *req);
int mx_mpi_probe(int source, int tag, MPI_Comm comm, MPI_Status *st);

#endif
