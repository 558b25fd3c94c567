/* The mpi communicator's all-reduce against a raw MPI_Allreduce of the same bytes, side by
 * side in one run (figures, never pass/fail). Run under mpirun, e.g.
 *   mpirun -np 2 --mca btl self,tcp out/ab/new/bench/comm_bench [ROUNDS] [options]
 * Without options it sweeps sizes 4 KiB..64 MiB, one all-reduce per call. A "step" of
 * several all-reduces instead, as a training step of kvstore dist_allreduce makes them:
 *   --bytes N[,N...]   one all-reduce of each of these sizes (bytes, multiples of 4)
 *   --workload NAME    the workload's gradient buckets, built as kvstore dist_allreduce
 *                      builds them (tensors greedily in backward order up to the cap, the
 *                      padding between tensors included), on synthetic data's 1x28x28 input
 *   --bucket-mb X      that cap in MiB (default 25, mxbench train's default)
 * and prints, besides the row, a line "COMM_STEP key=value ..." for scripts.
 * For each size (or step), ROUNDS rounds alternate the two (which goes first alternates
 * too); a round times a burst of calls, takes the slowest rank's time (nccl-tests'
 * convention), and the table gives the median over rounds of each one's bus bandwidth
 * (2(n-1)/n x bytes / time) and their ratio. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/core/net.h"
#include "base/status.h"
#include "base/timer.h"
#include "comm/comm.h"
#include "workloads/workloads.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CALLS 256 /* all-reduces in one step */

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

/* A step: nb all-reduces, call i over floats [off[i], off[i] + cnt[i]) of one buffer. */
typedef struct {
    int nb;
    size_t off[MAX_CALLS], cnt[MAX_CALLS];
} step;

static size_t step_floats(const step *s)
{
    size_t t = 0;
    for (int i = 0; i < s->nb; i++) t += s->cnt[i];
    return t;
}

/* Seconds per step of `calls` steps, the slowest rank's. */
static double burst(mx_comm *c, int raw, float *buf, const step *s, int calls, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = mx_now();
    for (int i = 0; i < calls; i++)
        for (int b = 0; b < s->nb; b++) {
            float *p = buf + s->off[b];
            if (raw)
                MPI_Allreduce(MPI_IN_PLACE, p, (int)s->cnt[b], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (mx_comm_allreduce(c, rank, p, p, s->cnt[b], MX_F32) < 0) {
                fprintf(stderr, "comm_bench: %s\n", mx_last_error());
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    double t = (mx_now() - t0) / calls, slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* Measures one step shape over `rounds` rounds and prints its row (rank 0). */
static void measure(mx_comm *c, const step *s, int rounds, int rank, int n, const char *tag)
{
    size_t nfloats = 0;
    for (int b = 0; b < s->nb; b++)
        if (s->off[b] + s->cnt[b] > nfloats) nfloats = s->off[b] + s->cnt[b];
    const size_t bytes = sizeof(float) * step_floats(s);
    float *buf = malloc(sizeof(float) * (nfloats ? nfloats : 1));
    if (!buf) {
        fprintf(stderr, "comm_bench: out of memory for %zu floats\n", nfloats);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < nfloats; i++) buf[i] = 1e-3f * (float)(i % 1000);
    /* about 0.2 s per burst at the bandwidths seen here, at least 3 calls */
    const int calls = bytes < (1 << 20) ? 200 : bytes < (16 << 20) ? 20 : 3;
    const double factor = 2.0 * (n - 1) / n;
    double mx[1000], raw[1000], ratio[1000], lat[1000];
    burst(c, 0, buf, s, 1, rank), burst(c, 1, buf, s, 1, rank); /* warm up */
    for (int r = 0; r < rounds; r++) {
        double t_mx, t_raw;
        if (r % 2) {
            t_raw = burst(c, 1, buf, s, calls, rank);
            t_mx = burst(c, 0, buf, s, calls, rank);
        } else {
            t_mx = burst(c, 0, buf, s, calls, rank);
            t_raw = burst(c, 1, buf, s, calls, rank);
        }
        mx[r] = factor * (double)bytes / t_mx * 1e-9;
        raw[r] = factor * (double)bytes / t_raw * 1e-9;
        ratio[r] = mx[r] / raw[r];
        lat[r] = t_mx * 1e6;
    }
    const double m_mx = median(mx, rounds), m_raw = median(raw, rounds), m_ratio = median(ratio, rounds),
                 m_lat = median(lat, rounds);
    if (rank == 0) {
        printf("%12zu %14.3f %14.3f %10.3f %12.1f\n", bytes, m_mx, m_raw, m_ratio, m_lat);
        if (tag)
            printf("COMM_STEP %s ranks=%d calls=%d bytes=%zu mx_busbw=%.6g mpi_busbw=%.6g ratio=%.6g mx_us=%.6g\n", tag,
                   n, s->nb, bytes, m_mx * 1e9, m_raw * 1e9, m_ratio, m_lat);
    }
    free(buf);
}

/* The buckets of kvstore dist_allreduce for the workload (as kvstore/allreduce.c). */
static int workload_step(step *s, const char *name, double bucket_mb)
{
    const mx_workload *wl = mx_workload_find(name);
    if (!wl) return mx_error(MX_EINVAL, "unknown workload '%s' (known: %s)", name, mx_workload_names());
    mx_backend *be;
    MX_TRY(mx_backend_create(&be, "cpu", 0, 1));
    mx_layer_spec specs[MX_MAX_LAYERS];
    const mx_shape in = {1, 28, 28};
    mx_net *net;
    int rc = mx_net_create(&net, be, specs, wl->build(specs, in, 10), in, 1);
    if (rc < 0) {
        mx_backend_destroy(be);
        return rc;
    }
    const double cap = (bucket_mb > 0 ? bucket_mb : 25.0) * 1048576.0;
    s->nb = 0;
    for (int k = net->nparams - 1; k >= 0 && rc == MX_OK; k--) {
        const mx_param *p = &net->params[k];
        const size_t end = s->nb ? s->off[s->nb - 1] + s->cnt[s->nb - 1] : 0;
        if (!s->nb || sizeof(float) * (double)(end - p->offset) > cap) {
            if (s->nb == MAX_CALLS) rc = mx_error(MX_EINVAL, "%s: more than %d buckets", name, MAX_CALLS);
            else s->off[s->nb] = p->offset, s->cnt[s->nb++] = p->count;
        } else {
            s->cnt[s->nb - 1] = end - p->offset;
            s->off[s->nb - 1] = p->offset;
        }
    }
    mx_net_destroy(net);
    mx_backend_destroy(be);
    return rc;
}

/* "N[,N...]" bytes, each a positive multiple of 4, into consecutive ranges. */
static int bytes_step(step *s, const char *list)
{
    s->nb = 0;
    size_t at = 0;
    for (const char *p = list; *p;) {
        char *end;
        const unsigned long long v = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ',') || v == 0 || v % 4 || v > (1ull << 31) - 4 || s->nb == MAX_CALLS)
            return mx_error(MX_EINVAL, "--bytes '%s': expected up to %d sizes, each a multiple of 4 in 4..2^31-4",
                            list, MAX_CALLS);
        s->off[s->nb] = at, s->cnt[s->nb++] = v / 4;
        at += v / 4;
        p = *end ? end + 1 : end;
    }
    return s->nb ? MX_OK : mx_error(MX_EINVAL, "--bytes: empty list");
}

int main(int argc, char **argv)
{
    int provided, rank, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int rounds = 5, rc = MX_OK;
    const char *bytes = NULL, *workload = NULL;
    double bucket_mb = 25;
    for (int i = 1; i < argc && rc == MX_OK; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--bytes") && v) bytes = v, i++;
        else if (!strcmp(a, "--workload") && v) workload = v, i++;
        else if (!strcmp(a, "--bucket-mb") && v && (bucket_mb = strtod(v, &end), *end == 0) && bucket_mb >= 0 &&
                 bucket_mb < 2048)
            i++;
        else if (a[0] != '-' && (rounds = (int)strtol(a, &end, 10), *end == 0) && rounds >= 1 && rounds <= 1000)
            ;
        else
            rc = mx_error(MX_EINVAL, "argument '%s'%s; usage: comm_bench [ROUNDS 1..1000] [--bytes N[,N...] | "
                          "--workload NAME [--bucket-mb X (0..2048)]]", a,
                          !v && (!strcmp(a, "--bytes") || !strcmp(a, "--workload") || !strcmp(a, "--bucket-mb"))
                              ? " needs a value" : " not accepted");
    }
    if (rc == MX_OK && bytes && workload) rc = mx_error(MX_EINVAL, "--bytes and --workload exclude each other");
    step s = {0};
    if (rc == MX_OK && bytes) rc = bytes_step(&s, bytes);
    if (rc == MX_OK && workload) rc = workload_step(&s, workload, bucket_mb);
    if (rc < 0) {
        if (rank == 0) fprintf(stderr, "comm_bench: %s\n", mx_last_error());
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
        if (s.nb) {
            printf("a step: %d all-reduce(s) of", s.nb);
            for (int b = 0; b < s.nb; b++) printf(" %zu", sizeof(float) * s.cnt[b]);
            printf(" bytes%s%s%s; a row's bytes and time are the step's\n", workload ? " (the buckets of " : "",
                   workload ? workload : "", workload ? ")" : "");
        }
        printf("%12s %14s %14s %10s %12s\n", "bytes", "mxbench GB/s", "MPI GB/s", "mx/MPI", "mx us/call");
    }
    if (s.nb) {
        char tag[160];
        if (workload) snprintf(tag, sizeof tag, "workload=%s bucket_mb=%g", workload, bucket_mb);
        else snprintf(tag, sizeof tag, "workload=-");
        measure(c, &s, rounds, rank, n, tag);
    } else
        for (size_t b = 4096; b <= ((size_t)64 << 20); b *= 4) {
            const step one = {1, {0}, {b / sizeof(float)}};
            measure(c, &one, rounds, rank, n, NULL);
        }
    mx_comm_destroy(c);
    MPI_Finalize();
    return 0;
}
