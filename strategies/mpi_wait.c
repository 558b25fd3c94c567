/* Waiting for MPI without holding a core (mpi_wait.h). */
#include "mpi_wait.h"

#include <sched.h>
#include <time.h>

/* The i-th idle poll's pause: a few yields (a message due at once costs nothing), then
 * growing sleeps, capped so that a message waits at most that long to be noticed. */
static void nap(int i)
{
    if (i < 16) {
        sched_yield();
        return;
    }
    long us = 1L << (i - 16 < 6 ? i - 16 : 6);
    if (us > MX_MPI_MAX_NAP_US) us = MX_MPI_MAX_NAP_US;
    const struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

int mx_mpi_waitall(int n, MPI_Request *req)
{
    for (int i = 0;; i++) {
        int done = 0;
        const int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) return rc;
        nap(i);
    }
}

int mx_mpi_probe(int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    for (int i = 0;; i++) {
        int found = 0;
        const int rc = MPI_Iprobe(source, tag, comm, &found, st);
        if (rc != MPI_SUCCESS || found) return rc;
        nap(i);
    }
}

int mx_mpi_wait(MPI_Request *req) { return mx_mpi_waitall(1, req); }

int mx_mpi_wait_status(MPI_Request *req, MPI_Status *st)
{
    for (int i = 0;; i++) {
        int done = 0;
        const int rc = MPI_Test(req, &done, st);
        if (rc != MPI_SUCCESS || done) return rc;
        nap(i);
    }
}
