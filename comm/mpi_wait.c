/* Waiting for MPI without holding a core (comm/mpi_wait.h). */
#include "mpi_wait.h"

#include <sched.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The pause before the next poll of a wait that began at t0 (seconds): for the first
 * MX_MPI_SPIN_US only a yield (free when nothing else is runnable; a collective whose members
 * all arrived completes within it), then sleeps of MX_MPI_MAX_NAP_US. Sleeping from the first
 * poll cost the all-reduce half its bandwidth: a Linux sleep lasts at least the timer slack
 * (50 us), and a collective polls several times. */
static void nap(double t0)
{
    if (now() - t0 < 1e-6 * MX_MPI_SPIN_US) {
        sched_yield();
        return;
    }
    const struct timespec ts = {0, MX_MPI_MAX_NAP_US * 1000L};
    nanosleep(&ts, NULL);
}

int mx_mpi_waitall(int n, MPI_Request *req)
{
    const double t0 = now();
    for (;;) {
        int done = 0;
        const int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) return rc;
        nap(t0);
    }
}

int mx_mpi_probe(int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    const double t0 = now();
    for (;;) {
        int found = 0;
        const int rc = MPI_Iprobe(source, tag, comm, &found, st);
        if (rc != MPI_SUCCESS || found) return rc;
        nap(t0);
    }
}

int mx_mpi_wait(MPI_Request *req) { return mx_mpi_waitall(1, req); }

int mx_mpi_wait_status(MPI_Request *req, MPI_Status *st)
{
    const double t0 = now();
    for (;;) {
        int done = 0;
        const int rc = MPI_Test(req, &done, st);
        if (rc != MPI_SUCCESS || done) return rc;
        nap(t0);
    }
}
