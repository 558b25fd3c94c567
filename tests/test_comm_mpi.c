/* The `mpi` communicator, run by CTest under mpirun (2 and 3 ranks over TCP): every verb,
 * every dtype, uneven and empty sizes, against the sums `threads` gives (f32 in member
 * order, rounded once: the same bits); a call that not every member makes fails on every
 * member instead of hanging; calls and bytes are counted. Each rank checks its own results;
 * the exit status is non-zero when any rank saw a failure. */
#include "check.h"
#include "base/status.h"
#include "comm/comm.h"

#include <mpi.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

/* Member m's element i: fractional, different per member, so that rounding shows. */
static float value(int m, size_t i) { return 0.01f * (float)((i * 7 + 3) % 101) * (float)(m + 1) + 1e-3f * (float)m; }

/* The sum threads gives: f32 over members 0..n-1 of the values as stored in type t, rounded
 * once to t. */
static float expected_sum(size_t i, mx_dtype t)
{
    float acc = 0;
    for (int m = 0; m < size; m++) {
        unsigned char v[4];
        mx_dtype_store(t, v, 0, value(m, i));
        acc += mx_dtype_load(t, v, 0);
    }
    unsigned char r[4];
    mx_dtype_store(t, r, 0, acc);
    return mx_dtype_load(t, r, 0);
}

static void fill(void *buf, size_t count, mx_dtype t, int m)
{
    for (size_t i = 0; i < count; i++) mx_dtype_store(t, buf, i, value(m, i));
}

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_verbs(mx_comm *c, size_t count, mx_dtype t)
{
    const size_t sz = mx_dtype_size(t);
    unsigned char *send = malloc(count * sz + 4), *recv = malloc(count * sz + 4);
    size_t lo, hi;
    mx_comm_shard(count, rank, size, &lo, &hi);
    int bad = 0;

    fill(send, count, t, rank);
    CHECK(mx_comm_allreduce(c, rank, send, recv, count, t) == MX_OK, "allreduce: %s", mx_last_error());
    for (size_t i = 0; i < count; i++) bad += !same(mx_dtype_load(t, recv, i), expected_sum(i, t));
    CHECK(bad == 0, "allreduce %zu %s: %d values differ from the member-order sum", count, mx_dtype_name(t), bad);

    /* in place */
    bad = 0;
    CHECK(mx_comm_allreduce(c, rank, send, send, count, t) == MX_OK, "allreduce in place: %s", mx_last_error());
    for (size_t i = 0; i < count; i++) bad += !same(mx_dtype_load(t, send, i), expected_sum(i, t));
    CHECK(bad == 0, "allreduce in place %zu %s: %d values differ", count, mx_dtype_name(t), bad);

    /* reduce-scatter: only the own shard is written */
    bad = 0;
    fill(send, count, t, rank);
    for (size_t i = 0; i < count; i++) mx_dtype_store(t, recv, i, -7.0f);
    CHECK(mx_comm_reduce_scatter(c, rank, send, recv, count, t) == MX_OK, "reduce_scatter: %s", mx_last_error());
    for (size_t i = 0; i < count; i++)
        bad += i >= lo && i < hi ? !same(mx_dtype_load(t, recv, i), expected_sum(i, t))
                                 : mx_dtype_load(t, recv, i) != -7.0f;
    CHECK(bad == 0, "reduce_scatter %zu %s: %d values wrong (own shard %zu..%zu)", count, mx_dtype_name(t), bad, lo,
          hi);

    /* all-gather: shard m from member m */
    bad = 0;
    for (size_t i = 0; i < count; i++) mx_dtype_store(t, recv, i, i >= lo && i < hi ? value(rank, i) : -1.0f);
    CHECK(mx_comm_allgather(c, rank, recv, count, t) == MX_OK, "allgather: %s", mx_last_error());
    for (int m = 0; m < size; m++) {
        size_t a, b;
        mx_comm_shard(count, m, size, &a, &b);
        for (size_t i = a; i < b; i++) {
            unsigned char v[4];
            mx_dtype_store(t, v, 0, value(m, i));
            bad += !same(mx_dtype_load(t, recv, i), mx_dtype_load(t, v, 0));
        }
    }
    CHECK(bad == 0, "allgather %zu %s: %d values wrong", count, mx_dtype_name(t), bad);

    /* broadcast from the last member */
    bad = 0;
    fill(recv, count, t, rank);
    CHECK(mx_comm_broadcast(c, rank, recv, count, t, size - 1) == MX_OK, "broadcast: %s", mx_last_error());
    for (size_t i = 0; i < count; i++) {
        unsigned char v[4];
        mx_dtype_store(t, v, 0, value(size - 1, i));
        bad += !same(mx_dtype_load(t, recv, i), mx_dtype_load(t, v, 0));
    }
    CHECK(bad == 0, "broadcast %zu %s: %d values wrong", count, mx_dtype_name(t), bad);

    /* send/recv between every pair, lower member sending first (sends are synchronous) */
    for (int a = 0; a < size; a++)
        for (int b = a + 1; b < size; b++) {
            if (rank != a && rank != b) continue;
            const int peer = rank == a ? b : a;
            fill(send, count, t, rank);
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (rank == a)) {
                    CHECK(mx_comm_send(c, rank, send, count, t, peer) == MX_OK, "send: %s", mx_last_error());
                } else {
                    CHECK(mx_comm_recv(c, rank, recv, count, t, peer) == MX_OK, "recv: %s", mx_last_error());
                    bad = 0;
                    for (size_t i = 0; i < count; i++) {
                        unsigned char v[4];
                        mx_dtype_store(t, v, 0, value(peer, i));
                        bad += !same(mx_dtype_load(t, recv, i), mx_dtype_load(t, v, 0));
                    }
                    CHECK(bad == 0, "recv %zu %s from %d: %d values wrong", count, mx_dtype_name(t), peer, bad);
                }
            }
        }
    CHECK(mx_comm_barrier(c, rank) == MX_OK, "barrier: %s", mx_last_error());
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mx_comm *c = NULL, *wrong = NULL;
    CHECK(mx_comm_create(&wrong, "mpi", size + 1) == MX_EINVAL && strstr(mx_last_error(), "processes were started"),
          "a member count other than the process count is refused: %s", mx_last_error());
    CHECK(mx_comm_create(&c, "mpi", size) == MX_OK, "%s", mx_last_error());
    if (!c) {
        MPI_Finalize();
        return 1;
    }
    CHECK(c->local_first == rank && c->nlocal == 1, "member %d of %d hosts %d..+%d", rank, size, c->local_first,
          c->nlocal);
    static const size_t counts[] = {0, 1, 3, 7, 16, 17, 100, 1000, 4099};
    for (int t = 0; t < MX_NDTYPES; t++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) check_verbs(c, counts[k], (mx_dtype)t);

    /* a call not every member makes fails on every member, naming what differed */
    float x[8] = {0};
    const int rc = mx_comm_allreduce(c, rank, x, x, rank == 0 ? 5 : 6, MX_F32);
    CHECK(rc == MX_EINVAL && strstr(mx_last_error(), "did not all make this call"),
          "member %d: a mismatched call gave %d: %s", rank, rc, mx_last_error());
    CHECK(mx_comm_allreduce(c, rank, x, x, 8, MX_F32) == MX_OK, "the comm works after a refused call: %s",
          mx_last_error());
    CHECK(mx_comm_broadcast(c, rank, x, 8, MX_F32, size) == MX_EINVAL, "root %d of %d is refused", size, size);

    /* counting: this member's allreduce calls and bytes, and nccl-tests' factor */
    const mx_comm_count k = mx_comm_counts(c, rank, MX_COMM_ALLREDUCE);
    double bytes = 0;
    for (int t = 0; t < MX_NDTYPES; t++)
        for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
            bytes += 2.0 * counts[i] * mx_dtype_size((mx_dtype)t);
    /* the refused call counts as made (with this member's own count), then the one after it */
    bytes += (rank == 0 ? 5 : 6) * 4 + 8 * 4;
    const long calls = 2 * MX_NDTYPES * (long)(sizeof counts / sizeof *counts) + 2;
    CHECK(k.calls == calls && k.bytes == bytes, "allreduce counted %ld calls, %.0f bytes; expected %ld, %.0f", k.calls,
          k.bytes, calls, bytes);
    mx_comm_destroy(c);

    /* every rank's verdict: the exit status fails if any rank failed */
    int failed = check_failed_ > 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    char name[32];
    snprintf(name, sizeof name, "test_comm_mpi rank %d/%d", rank, size);
    const int status = check_summary(name);
    MPI_Finalize();
    return any ? 1 : status;
}
