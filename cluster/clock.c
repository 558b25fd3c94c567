/* One clock for every rank of a dist_* job (cluster/cluster.h), measured when the job starts.
 * Ranks may run on different machines, whose clocks share no origin. At the job's
 * start rank 0 measures every other rank's clock as Cristian's algorithm does: it sends a
 * ping, the rank answers with its clock, and the answer's time lies within the round trip;
 * of CLOCK_PINGS round trips the shortest is kept (a rank descheduled mid-exchange, as ranks
 * outnumbering cores are, makes a long one), the rank's offset is its time less the trip's
 * midpoint, known to half the trip. Each rank then holds clock0, its own clock at rank 0's
 * instant clock0: event times less clock0 are on one clock. Measured once, at the start:
 * clocks that drift apart (a few parts per million between NTP-disciplined machines) add
 * that fraction of the time between the job's start and the traced window. On one host the
 * clock is the same, and the measured offsets are those of the round trips (microseconds). */
#include "mpi.h"
#include "base/timer.h"

#include <math.h>
#include <stdio.h>

#define CLOCK_PINGS 8
#define CLOCK_TAG 7

void mx_cluster_align_clocks(mx_cluster *c)
{
    MPI_Comm w = MPI_COMM_WORLD;
    if (c->rank != 0) {
        /* rank 0 measures the ranks one after another: the others wait politely, leaving
         * the cores to the two that exchange */
        MPI_Status st;
        mx_mpi_probe(0, CLOCK_TAG, w, &st);
        for (int i = 0; i < CLOCK_PINGS; i++) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, CLOCK_TAG, w, MPI_STATUS_IGNORE);
            const double t = mx_now();
            MPI_Send(&t, 1, MPI_DOUBLE, 0, CLOCK_TAG, w);
        }
        double got[2];
        MPI_Recv(got, 2, MPI_DOUBLE, 0, CLOCK_TAG, w, MPI_STATUS_IGNORE);
        c->clock0 = got[0], c->clock_error = got[1];
        return;
    }
    c->clock0 = mx_now();
    c->clock_error = 0;
    for (int r = 1; r < c->size; r++) {
        double best = HUGE_VAL, offset = 0;
        for (int i = 0; i < CLOCK_PINGS; i++) {
            double theirs;
            const double a = mx_now();
            MPI_Send(NULL, 0, MPI_BYTE, r, CLOCK_TAG, w);
            MPI_Recv(&theirs, 1, MPI_DOUBLE, r, CLOCK_TAG, w, MPI_STATUS_IGNORE);
            const double b = mx_now();
            if (b - a < best) best = b - a, offset = theirs - (a + b) / 2;
        }
        const double answer[2] = {c->clock0 + offset, best / 2};
        MPI_Send(answer, 2, MPI_DOUBLE, r, CLOCK_TAG, w);
    }
}
