/* kvstore `dist_allreduce`, run by CTest under mpirun (2 and 3 ranks over TCP): each rank's
 * device threads push every key in backward order and pull it back, over several rounds,
 * with 1, 2 or (ranks differing) 1 or 2 devices per rank and buckets of several sizes (keys
 * larger than a bucket, padding between keys). Without an updater every device of every
 * rank pulls exactly the sum over all devices (integer gradients: exact in any order); with
 * one (SGD with host momentum) the weights equal a reference computed here, bit for bit, on
 * every rank. Also: statistics, bad options refused, a pull that could never complete
 * refused, and a failing all-reduce failing every pull on every rank instead of hanging.
 * The exit status is non-zero when any rank saw a failure. */
#include "check.h"
#include "base/status.h"
#include "kvstore/kvstore.h"
#include "engine/core/backends.h"

#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define NKEYS 10
#define ROUNDS 4
#define MAXDEV 2
/* 1-element keys, keys larger than a 0.0005 MiB bucket (131 floats), and even keys aligned
 * to 16 floats, so that buckets hold padding */
static const size_t counts[NKEYS] = {1, 5, 100, 1, 300, 17, 1000, 3, 64, 1};
static mx_kv_key keys[NKEYS];
static size_t total, key_floats;
static float *sum[ROUNDS], *ref_w[ROUNDS]; /* per round: the summed gradient, the reference weights */

static void make_keys(void)
{
    size_t off = 0;
    for (int k = 0; k < NKEYS; k++) {
        if (k % 2 == 0) off = (off + 15) / 16 * 16;
        keys[k] = (mx_kv_key){off, counts[k], MX_F32};
        off += counts[k];
        key_floats += counts[k];
    }
    total = off;
}

/* Buckets as DDP fills them (backward order, a new one when the range would pass the cap). */
static int expected_buckets(double mb)
{
    const double cap = (mb > 0 ? mb : 25) * 1048576;
    int nb = 0;
    size_t end = 0;
    for (int k = NKEYS - 1; k >= 0; k--)
        if (nb == 0 || 4.0 * (double)(end - keys[k].offset) > cap) nb++, end = keys[k].offset + keys[k].count;
    return nb;
}

/* Phase 0: one device per rank; 1: two; 2: rank r has 1 + r % 2. */
static int ndev_of(int phase, int r) { return phase == 2 ? 1 + r % 2 : phase + 1; }

/* Device d of rank r, round t: small integers, so that every sum is exact. */
static float grad(int r, int d, int t, size_t i)
{
    return (float)((int)((i * 7 + (size_t)r * 3 + (size_t)d * 5 + (size_t)t * 11) % 13) - 6);
}
static float init_w(size_t i) { return 0.25f * (float)(i % 10); }
/* what device d holds before init: device 0 the initial weights, the others something else
 * (the store must start from device 0's) */
static float first_w(int d, size_t i) { return d ? 1000.0f + (float)i : init_w(i); }

/* One SGD step with momentum: shared by the updater and the reference, so both run the same
 * code (and rounding) */
static __attribute__((noinline)) void sgd(float *w, float *mom, float g)
{
    *mom = 0.9f * *mom + g;
    *w -= 0.1f * *mom;
}

typedef struct {
    int calls[NKEYS], bad; /* written by the store's single comm worker only */
} update_log;

static void updater(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, mx_optim_state st,
                    const float *g)
{
    float *mom = st.m;
    update_log *u = user;
    u->calls[key]++;
    u->bad += lo != 0 || hi != keys[key].count;
    for (size_t i = lo; i < hi; i++) sgd(&w[i], &mom[i], g[i]);
}

static void make_reference(int phase)
{
    float *mom = calloc(total, sizeof(float));
    for (int t = 0; t < ROUNDS; t++)
        for (size_t i = 0; i < total; i++) {
            float s = 0;
            for (int r = 0; r < size; r++)
                for (int d = 0; d < ndev_of(phase, r); d++) s += grad(r, d, t, i);
            sum[t][i] = s;
            ref_w[t][i] = t ? ref_w[t - 1][i] : init_w(i);
            sgd(&ref_w[t][i], &mom[i], s);
        }
    free(mom);
}

typedef struct {
    mx_kvstore *kv;
    int d, updater, quiet, bad, failed;
    float *w, *g;
} device_arg;

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* A device's training loop: gradients, push last key first, pull every key, check. */
static void *device_main(void *p)
{
    device_arg *a = p;
    for (int t = 0; t < ROUNDS; t++) {
        for (int k = 0; k < NKEYS; k++)
            for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++) a->g[i] = grad(rank, a->d, t, i);
        for (int k = NKEYS - 1; k >= 0; k--) a->failed += mx_kv_push(a->kv, k, a->d, keys[k].count) != MX_OK;
        /* pulls in push order (a key's bucket may not be all-reduced yet when its own sum is
         * done) or in forward order, alternately */
        for (int j = 0; j < NKEYS; j++) {
            const int k = t % 2 ? j : NKEYS - 1 - j;
            if (mx_kv_pull(a->kv, k, a->d, keys[k].count) != MX_OK && a->failed++ == 0 && !a->quiet)
                fprintf(stderr, "rank %d device %d round %d pull %d: %s\n", rank, a->d, t, k, mx_last_error());
            for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++)
                a->bad +=
                    a->updater ? !same(a->w[i], ref_w[t][i]) : a->g[i] != sum[t][i] || a->w[i] != first_w(a->d, i);
        }
    }
    return NULL;
}

typedef struct {
    mx_comm *comm;
    mx_backend *be[MAXDEV];
    float *w[MAXDEV], *g[MAXDEV];
    int ndev;
} devices;

/* ndev CPU devices with a threads comm, weights first_w, gradients NaN outside the keys
 * (the store never reads padding). */
static void devices_open(devices *v, int ndev)
{
    memset(v, 0, sizeof *v);
    v->ndev = ndev;
    CHECK(mx_comm_create(&v->comm, "threads", ndev) == MX_OK, "%s", mx_last_error());
    for (int d = 0; d < ndev; d++) {
        mx_backend_create(&v->be[d], "cpu", d, 1);
        v->w[d] = v->be[d]->ops->alloc(v->be[d], sizeof(float) * total);
        v->g[d] = v->be[d]->ops->alloc(v->be[d], sizeof(float) * total);
        for (size_t i = 0; i < total; i++) v->w[d][i] = first_w(d, i), v->g[d][i] = NAN;
    }
}

static void devices_close(devices *v)
{
    for (int d = 0; d < v->ndev; d++) {
        v->be[d]->ops->free(v->be[d], v->w[d]);
        v->be[d]->ops->free(v->be[d], v->g[d]);
        mx_backend_destroy(v->be[d]);
    }
    mx_comm_destroy(v->comm);
}

static int open_store(mx_kvstore **kv, devices *v, mx_comm *world, double mb, update_log *u)
{
    const mx_kv_options opt = {.world = world, .bucket_mb = mb};
    MX_TRY(mx_kv_create(kv, MX_KV_DIST_ALLREDUCE, v->comm, keys, NKEYS, &opt));
    for (int d = 0; d < v->ndev; d++) MX_TRY(mx_kv_bind(*kv, d, v->be[d], v->w[d], v->g[d]));
    if (u) mx_kv_set_updater(*kv, updater, u);
    return mx_kv_init(*kv);
}

static void run_phase(mx_comm *world, int phase, double mb, int with_updater)
{
    devices v;
    const int ndev = ndev_of(phase, rank);
    devices_open(&v, ndev);
    update_log u = {{0}, 0};
    mx_kvstore *kv = NULL;
    char what[96];
    snprintf(what, sizeof what, "rank %d/%d, %d devices, bucket %g MiB, %s", rank, size, ndev, mb,
             with_updater ? "updater" : "no updater");
    if (open_store(&kv, &v, world, mb, with_updater ? &u : NULL) != MX_OK) {
        CHECK(0, "%s: %s", what, mx_last_error());
        mx_kv_destroy(kv);
        devices_close(&v);
        return;
    }
    mx_comm_counts_reset(world, rank);
    pthread_t th[MAXDEV];
    device_arg a[MAXDEV];
    for (int d = 0; d < ndev; d++) {
        a[d] = (device_arg){kv, d, with_updater, 0, 0, 0, v.w[d], v.g[d]};
        pthread_create(&th[d], NULL, device_main, &a[d]);
    }
    int bad = 0, failed = 0;
    for (int d = 0; d < ndev; d++) {
        pthread_join(th[d], NULL);
        bad += a[d].bad, failed += a[d].failed;
    }
    CHECK(failed == 0, "%s: %d pushes or pulls failed", what, failed);
    CHECK(bad == 0, "%s: %d pulled values differ from the %s", what, bad,
          with_updater ? "reference weights" : "sum over every device of every rank");
    const mx_kv_stats st = mx_kv_stats_get(kv);
    const mx_comm_count c = mx_comm_counts(world, rank, MX_COMM_ALLREDUCE);
    const int nb = expected_buckets(mb);
    CHECK(c.calls == (long)nb * ROUNDS, "%s: %ld all-reduces, expected %d buckets x %d rounds", what, c.calls, nb,
          ROUNDS);
    CHECK(c.bytes >= 4.0 * key_floats * ROUNDS && c.bytes <= 4.0 * total * ROUNDS,
          "%s: all-reduced %.0f bytes, expected the keys (%zu floats) and padding, %d rounds", what, c.bytes,
          key_floats, ROUNDS);
    const double net = 4.0 * (size - 1) / size * c.bytes; /* sent and received, 2(n-1)/n each */
    CHECK(fabs(st.net_bytes - net) <= 1e-9 * net, "%s: net bytes %.1f, expected 4(n-1)/n x %.0f = %.1f", what,
          st.net_bytes, c.bytes, net);
    CHECK(st.push_seconds > 0 && st.pushes == (long)ndev * NKEYS * ROUNDS, "%s: %g s pushing, %ld pushes", what,
          st.push_seconds, st.pushes);
    CHECK(st.bytes == 4.0 * key_floats * ROUNDS * 2 * ndev, "%s: %.0f bytes between devices and host, expected %.0f",
          what, st.bytes, 4.0 * key_floats * ROUNDS * 2 * ndev);
    if (with_updater) {
        int calls = 0;
        for (int k = 0; k < NKEYS; k++) calls += u.calls[k] != ROUNDS;
        CHECK(calls == 0 && u.bad == 0, "%s: %d keys not updated once a round, %d updates with a wrong range", what,
              calls, u.bad);
        /* bit-equal across ranks: rank 0's weights against ours */
        float *w0 = malloc(sizeof(float) * total);
        memcpy(w0, v.w[0], sizeof(float) * total);
        MPI_Bcast(w0, (int)total, MPI_FLOAT, 0, MPI_COMM_WORLD);
        int diff = 0;
        for (int k = 0; k < NKEYS; k++)
            diff += memcmp(w0 + keys[k].offset, v.w[0] + keys[k].offset, sizeof(float) * keys[k].count) != 0;
        CHECK(diff == 0, "%s: %d keys' weights differ from rank 0's", what, diff);
        free(w0);
    }
    static const char *const per_rank[] = {"1 device", "2 devices", "1 or 2 devices"};
    if (rank == 0)
        printf("%s per rank, bucket %g MiB, %s: %s, %ld all-reduces\n", per_rank[phase], mb,
               with_updater ? "updater" : "no updater", bad || failed ? "NOT OK" : "ok", c.calls);
    mx_kv_destroy(kv);
    devices_close(&v);
}

static void check_options(mx_comm *world)
{
    devices v;
    devices_open(&v, 1);
    mx_kvstore *kv = NULL;
    mx_kv_options opt = {.world = NULL};
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, keys, NKEYS, &opt) == MX_EINVAL &&
              strstr(mx_last_error(), "mpi comm"),
          "no world comm: %s", mx_last_error());
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, keys, NKEYS, NULL) == MX_EINVAL &&
              strstr(mx_last_error(), "none"),
          "no options: %s", mx_last_error());
    opt.world = v.comm;
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, keys, NKEYS, &opt) == MX_EINVAL &&
              strstr(mx_last_error(), "threads"),
          "a threads comm as world: %s", mx_last_error());
    opt.world = world;
    opt.bucket_mb = -1;
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, keys, NKEYS, &opt) == MX_EINVAL &&
              strstr(mx_last_error(), "-1 MiB"),
          "bucket -1 MiB: %s", mx_last_error());
    opt.bucket_mb = NAN;
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, keys, NKEYS, &opt) == MX_EINVAL &&
              strstr(mx_last_error(), "nan MiB"),
          "bucket NaN: %s", mx_last_error());
    opt.bucket_mb = 0;
    const mx_kv_key half[1] = {{0, 8, MX_F16}}, swapped[2] = {{16, 4, MX_F32}, {0, 4, MX_F32}};
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, half, 1, &opt) == MX_EINVAL && strstr(mx_last_error(), "f16"),
          "f16 key: %s", mx_last_error());
    CHECK(mx_kv_create(&kv, MX_KV_DIST_ALLREDUCE, v.comm, swapped, 2, &opt) == MX_EINVAL &&
              strstr(mx_last_error(), "offset order"),
          "keys out of offset order: %s", mx_last_error());
    CHECK(kv == NULL, "no store is handed back on failure");

    /* A pull before the device pushed the rest of the bucket could never complete: refused.
     * Pushing the rest then completes the round (no rank has called a collective before). */
    CHECK(open_store(&kv, &v, world, 25, NULL) == MX_OK, "%s", mx_last_error());
    for (size_t i = 0; i < total; i++) v.g[0][i] = 1;
    mx_kv_push(kv, NKEYS - 1, 0, keys[NKEYS - 1].count);
    CHECK(mx_kv_pull(kv, NKEYS - 1, 0, keys[NKEYS - 1].count) == MX_EINVAL &&
              strstr(mx_last_error(), "before it pushed key 8"),
          "a pull that would wait forever: %s", mx_last_error());
    for (int k = NKEYS - 2; k >= 0; k--) mx_kv_push(kv, k, 0, keys[k].count);
    int bad = 0;
    for (int k = 0; k < NKEYS; k++) {
        CHECK(mx_kv_pull(kv, k, 0, keys[k].count) == MX_OK, "pull after the whole round: %s", mx_last_error());
        bad += v.g[0][keys[k].offset] != (float)size;
    }
    CHECK(bad == 0, "%d keys are not the sum after a refused pull", bad);
    mx_kv_destroy(kv);

    /* A key pushed again before its bucket was all-reduced: an error, not a wrong sum. */
    CHECK(open_store(&kv, &v, world, 25, NULL) == MX_OK, "%s", mx_last_error());
    mx_kv_push(kv, NKEYS - 1, 0, keys[NKEYS - 1].count);
    mx_kv_push(kv, NKEYS - 1, 0, keys[NKEYS - 1].count);
    CHECK(mx_kv_pull(kv, NKEYS - 1, 0, keys[NKEYS - 1].count) == MX_EINVAL &&
              strstr(mx_last_error(), "pushed for round 2"),
          "a key pushed twice in a bucket's round: %s", mx_last_error());
    mx_kv_destroy(kv);
    devices_close(&v);
}

/* Ranks disagreeing on the bucket size call all-reduces of different sizes: the comm fails
 * the call on every rank, and every pull of every device reports it (none hangs). */
static void check_failure(mx_comm *world)
{
    devices v;
    devices_open(&v, 2);
    mx_kvstore *kv = NULL;
    CHECK(open_store(&kv, &v, world, rank == 0 ? 25 : 0.0005, NULL) == MX_OK, "%s", mx_last_error());
    for (size_t i = 0; i < total; i++) v.g[0][i] = v.g[1][i] = 1;
    pthread_t th[2];
    device_arg a[2];
    for (int d = 0; d < 2; d++) {
        a[d] = (device_arg){kv, d, 0, 1, 0, 0, v.w[d], v.g[d]};
        pthread_create(&th[d], NULL, device_main, &a[d]);
    }
    int failed = 0;
    for (int d = 0; d < 2; d++) {
        pthread_join(th[d], NULL);
        failed += a[d].failed;
    }
    /* every pull of every round fails; pushes still enter their rounds */
    CHECK(failed == 2 * NKEYS * ROUNDS, "rank %d: %d of %d pulls failed after a failed all-reduce", rank, failed,
          2 * NKEYS * ROUNDS);
    CHECK(mx_kv_pull(kv, 0, 0, keys[0].count) < 0 && strstr(mx_last_error(), "did not all make this call"),
          "rank %d: the failure names the comm's error: %s", rank, mx_last_error());
    mx_kv_destroy(kv);
    devices_close(&v);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    make_keys();
    for (int t = 0; t < ROUNDS; t++) sum[t] = malloc(sizeof(float) * total), ref_w[t] = malloc(sizeof(float) * total);
    mx_comm *world = NULL;
    CHECK(mx_comm_create(&world, "mpi", size) == MX_OK, "%s", mx_last_error());
    if (!world) {
        MPI_Finalize();
        return 1;
    }
    CHECK(expected_buckets(0.0005) == 5 && expected_buckets(25) == 1 && expected_buckets(1e-9) == NKEYS,
          "the test's key table gives %d, %d, %d buckets", expected_buckets(0.0005), expected_buckets(25),
          expected_buckets(1e-9));
    static const double mbs[] = {0.0005, 25, 0, 1e-9};
    for (int phase = 0; phase < 3; phase++) {
        make_reference(phase);
        for (int b = 0; b < (phase == 0 ? 4 : 2); b++)
            for (int upd = 0; upd < 2; upd++) run_phase(world, phase, mbs[b], upd);
    }
    check_options(world);
    check_failure(world);
    mx_comm_destroy(world);
    for (int t = 0; t < ROUNDS; t++) free(sum[t]), free(ref_w[t]);

    int failed = check_failed_ > 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    char name[40];
    snprintf(name, sizeof name, "test_kv_allreduce rank %d/%d", rank, size);
    const int status = check_summary(name);
    MPI_Finalize();
    return any ? 1 : status;
}
