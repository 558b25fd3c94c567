/* The mpi communicator's all-reduce against a raw MPI_Allreduce of the same bytes, side by
 * side in one run (figures, never pass/fail). Run under mpirun, e.g.
 *   mpirun -np 2 --mca btl self,tcp out/ab/new/bench/comm_bench [ROUNDS]
 * For each size, ROUNDS rounds alternate the two (which goes first alternates too); a round
 * times a burst of calls, takes the slowest rank's time (nccl-tests' convention), and the
 * table gives the median over rounds of each one's bus bandwidth (2(n-1)/n x bytes / time)
 * and their ratio. */
#include "engine/status.h"
#include "engine/timer.h"
#include "strategies/comm.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds per call of `calls` calls, the slowest rank's. */
static double burst(mx_comm *c, int raw, float *buf, size_t count, int calls, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = mx_now();
    for (int i = 0; i < calls; i++) {
        if (raw)
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (mx_comm_allreduce(c, rank, buf, buf, count, MX_F32) < 0) {
            fprintf(stderr, "comm_bench: %s\n", mx_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    double t = (mx_now() - t0) / calls, slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv)
{
    int provided, rank, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 1000) {
        if (rank == 0) fprintf(stderr, "comm_bench: ROUNDS '%s': accepted 1..1000\n", argv[1]);
        MPI_Finalize();
        return 2;
    }
    mx_comm *c;
    if (mx_comm_create(&c, "mpi", n) < 0) {
        fprintf(stderr, "comm_bench: %s\n", mx_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("all-reduce of f32 over %d ranks, %d rounds; busbw = 2(n-1)/n x bytes / time (GB/s), slowest rank\n", n,
               rounds);
        printf("%12s %14s %14s %10s %12s\n", "bytes", "mxbench GB/s", "MPI GB/s", "mx/MPI", "mx us/call");
    }
    const double factor = 2.0 * (n - 1) / n;
    for (size_t bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
        const size_t count = bytes / sizeof(float);
        float *buf = malloc(bytes);
        for (size_t i = 0; i < count; i++) buf[i] = 1e-3f * (float)(i % 1000);
        /* about 0.2 s per burst at the bandwidths seen here, at least 3 calls */
        const int calls = bytes < (1 << 20) ? 200 : bytes < (16 << 20) ? 20 : 3;
        double mx[1000], raw[1000], ratio[1000], lat[1000];
        burst(c, 0, buf, count, 1, rank), burst(c, 1, buf, count, 1, rank); /* warm up */
        for (int r = 0; r < rounds; r++) {
            double t_mx, t_raw;
            if (r % 2) {
                t_raw = burst(c, 1, buf, count, calls, rank);
                t_mx = burst(c, 0, buf, count, calls, rank);
            } else {
                t_mx = burst(c, 0, buf, count, calls, rank);
                t_raw = burst(c, 1, buf, count, calls, rank);
            }
            mx[r] = factor * (double)bytes / t_mx * 1e-9;
            raw[r] = factor * (double)bytes / t_raw * 1e-9;
            ratio[r] = mx[r] / raw[r];
            lat[r] = t_mx * 1e6;
        }
        if (rank == 0)
            printf("%12zu %14.3f %14.3f %10.3f %12.1f\n", bytes, median(mx, rounds), median(raw, rounds),
                   median(ratio, rounds), median(lat, rounds));
        free(buf);
    }
    mx_comm_destroy(c);
    MPI_Finalize();
    return 0;
}
