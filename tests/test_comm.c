/* The communicator's verbs on the `threads` implementation: every verb on 1 to 8 members,
 * uneven counts (0, fewer elements than members, not multiples of the 16-element shard
 * grain), every dtype; sums equal to an f32 sum in member order rounded once, the same bits
 * on every member and on a second run; counts and bytes per verb, nccl-tests' busbw
 * factors; mismatched calls and bad arguments refused; every call an event of the timeline
 * on its thread's track, with its bytes, only while it records; buffers of a non-CPU backend
 * moved and summed through the members' backends (f32 only); the rendezvous cost printed. */
#include "check.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/trace.h"
#include "engine/cpu/cpu.h"
#include "comm/comm.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {0, 1, 3, 7, 16, 17, 100, 1000, 4099};
#define NCOUNTS (sizeof counts / sizeof *counts)
#define MAXC 4099
#define NVERIFIED 6 /* verbs checked per (dtype, count): hashed for run-to-run and cross-member */
#define NCASES ((int)(MX_NDTYPES * NCOUNTS * NVERIFIED))
#define SENTINEL -12288.0f /* exact in every dtype */

/* Member m's value at i: varied signs and magnitudes so that f16 and bf16 round in sums. */
static float value(int m, size_t i) { return (float)((int)((m * 131 + i * 7) % 23) - 11) * 0.37f + (float)m * 1e-3f; }

/* The value as stored in type t (what the member actually contributes). */
static float stored(mx_dtype t, int m, size_t i)
{
    uint32_t tmp;
    mx_dtype_store(t, &tmp, 0, value(m, i));
    return mx_dtype_load(t, &tmp, 0);
}

typedef struct {
    mx_comm *c;
    int m, n;
    uint64_t hash[NCASES];
    double calls[MX_COMM_NVERBS], bytes[MX_COMM_NVERBS];
    int bad;
    char first[256];
} member;

#define EXPECT(me, cond, ...)                                                          \
    do {                                                                               \
        if (!(cond) && (me)->bad++ == 0) snprintf((me)->first, sizeof (me)->first, __VA_ARGS__); \
    } while (0)

/* Is element i of a (type t) exactly v rounded to t? */
static int same(mx_dtype t, const void *a, size_t i, float v)
{
    uint32_t tmp = 0;
    mx_dtype_store(t, &tmp, 0, v);
    return memcmp((const char *)a + i * mx_dtype_size(t), &tmp, mx_dtype_size(t)) == 0;
}

static float expected_sum(mx_dtype t, int n, size_t i)
{
    float acc = 0;
    for (int d = 0; d < n; d++) acc += stored(t, d, i);
    return acc;
}

static void fill(mx_dtype t, void *p, int m, size_t count)
{
    for (size_t i = 0; i < count; i++) mx_dtype_store(t, p, i, value(m, i));
}

static void fill_sentinel(mx_dtype t, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++) mx_dtype_store(t, p, i, SENTINEL);
}

static uint64_t hash(const void *p, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

static void tally(member *me, mx_comm_verb v, size_t count, mx_dtype t)
{
    me->calls[v]++;
    me->bytes[v] += (double)(count * mx_dtype_size(t));
}

static void *member_main(void *p)
{
    member *me = p;
    const int m = me->m, n = me->n;
    char *send = malloc(4 * MAXC), *recv = malloc(4 * MAXC), *keep = malloc(4 * MAXC);
    int cs = 0;
    for (int ti = 0; ti < MX_NDTYPES; ti++) {
        const mx_dtype t = (mx_dtype)ti;
        const char *tn = mx_dtype_name(t);
        const size_t sz = mx_dtype_size(t);
        for (size_t ci = 0; ci < NCOUNTS; ci++) {
            const size_t count = counts[ci];
            size_t lo, hi;
            mx_comm_shard(count, m, n, &lo, &hi);
            int rc;

            /* allreduce, out of place: send untouched */
            fill(t, send, m, count);
            memcpy(keep, send, count * sz);
            fill_sentinel(t, recv, count);
            rc = mx_comm_allreduce(me->c, m, send, recv, count, t);
            tally(me, MX_COMM_ALLREDUCE, count, t);
            EXPECT(me, rc == MX_OK, "allreduce %s %zu: %s", tn, count, mx_last_error());
            for (size_t i = 0; i < count; i++)
                EXPECT(me, same(t, recv, i, expected_sum(t, n, i)), "allreduce %s %zu x%d: element %zu", tn, count, n,
                       i);
            EXPECT(me, memcmp(keep, send, count * sz) == 0, "allreduce %s %zu: send modified", tn, count);
            me->hash[cs++] = hash(recv, count * sz);

            /* allreduce, in place */
            fill(t, recv, m, count);
            rc = mx_comm_allreduce(me->c, m, recv, recv, count, t);
            tally(me, MX_COMM_ALLREDUCE, count, t);
            EXPECT(me, rc == MX_OK, "allreduce in place %s %zu: %s", tn, count, mx_last_error());
            for (size_t i = 0; i < count; i++)
                EXPECT(me, same(t, recv, i, expected_sum(t, n, i)), "allreduce in place %s %zu x%d: element %zu", tn,
                       count, n, i);
            me->hash[cs++] = hash(recv, count * sz);

            /* reduce-scatter: only the own shard written, send untouched */
            fill(t, send, m, count);
            fill_sentinel(t, recv, count);
            rc = mx_comm_reduce_scatter(me->c, m, send, recv, count, t);
            tally(me, MX_COMM_REDUCE_SCATTER, count, t);
            EXPECT(me, rc == MX_OK, "reduce_scatter %s %zu: %s", tn, count, mx_last_error());
            for (size_t i = 0; i < count; i++)
                EXPECT(me, same(t, recv, i, i >= lo && i < hi ? expected_sum(t, n, i) : SENTINEL),
                       "reduce_scatter %s %zu x%d member %d: element %zu (shard %zu..%zu)", tn, count, n, m, i, lo, hi);
            EXPECT(me, memcmp(keep, send, count * sz) == 0, "reduce_scatter %s %zu: send modified", tn, count);
            me->hash[cs++] = hash((char *)recv + lo * sz, (hi - lo) * sz);

            /* all-gather: shard j from member j */
            fill_sentinel(t, recv, count);
            for (size_t i = lo; i < hi; i++) mx_dtype_store(t, recv, i, value(m, i));
            rc = mx_comm_allgather(me->c, m, recv, count, t);
            tally(me, MX_COMM_ALLGATHER, count, t);
            EXPECT(me, rc == MX_OK, "allgather %s %zu: %s", tn, count, mx_last_error());
            for (int j = 0; j < n; j++) {
                size_t jl, jh;
                mx_comm_shard(count, j, n, &jl, &jh);
                for (size_t i = jl; i < jh; i++)
                    EXPECT(me, same(t, recv, i, value(j, i)), "allgather %s %zu x%d: element %zu of member %d", tn,
                           count, n, i, j);
            }
            me->hash[cs++] = hash(recv, count * sz);

            /* broadcast from a root that moves with the case */
            const int root = (int)(ci % (size_t)n);
            if (m == root)
                fill(t, recv, m, count);
            else
                fill_sentinel(t, recv, count);
            rc = mx_comm_broadcast(me->c, m, recv, count, t, root);
            tally(me, MX_COMM_BROADCAST, count, t);
            EXPECT(me, rc == MX_OK, "broadcast %s %zu: %s", tn, count, mx_last_error());
            for (size_t i = 0; i < count; i++)
                EXPECT(me, same(t, recv, i, value(root, i)), "broadcast %s %zu x%d root %d: element %zu", tn, count, n,
                       root, i);
            me->hash[cs++] = hash(recv, count * sz);

            /* send/recv around a ring: even members send first, odd ones receive first, so
             * that synchronous sends cannot all wait at once */
            const int next = (m + 1) % n, prev = (m + n - 1) % n;
            fill_sentinel(t, recv, count);
            if (n > 1) {
                fill(t, send, m, count);
                for (int phase = 0; phase < 2; phase++) {
                    if ((phase == 0) == (m % 2 == 0)) {
                        rc = mx_comm_send(me->c, m, send, count, t, next);
                        tally(me, MX_COMM_SEND, count, t);
                    } else {
                        rc = mx_comm_recv(me->c, m, recv, count, t, prev);
                        tally(me, MX_COMM_RECV, count, t);
                    }
                    EXPECT(me, rc == MX_OK, "send/recv %s %zu: %s", tn, count, mx_last_error());
                }
                for (size_t i = 0; i < count; i++)
                    EXPECT(me, same(t, recv, i, value(prev, i)), "recv %s %zu x%d from %d: element %zu", tn, count, n,
                           prev, i);
            }
            me->hash[cs++] = hash(recv, count * sz);

            rc = mx_comm_barrier(me->c, m);
            tally(me, MX_COMM_BARRIER, 0, t);
            EXPECT(me, rc == MX_OK, "barrier: %s", mx_last_error());
        }
    }
    free(send);
    free(recv);
    free(keep);
    return NULL;
}

/* Runs every member on its own thread; results in members[0..n). */
static void run_members(int n, member *members)
{
    mx_comm *c;
    CHECK(mx_comm_create(&c, "threads", n) == MX_OK, "create x%d: %s", n, mx_last_error());
    pthread_t th[8];
    for (int m = 0; m < n; m++) {
        memset(&members[m], 0, sizeof members[m]);
        members[m] = (member){.c = c, .m = m, .n = n};
        pthread_create(&th[m], NULL, member_main, &members[m]);
    }
    for (int m = 0; m < n; m++) pthread_join(th[m], NULL);
    for (int m = 0; m < n; m++) {
        CHECK(members[m].bad == 0, "x%d member %d: %d wrong, first: %s", n, m, members[m].bad, members[m].first);
        for (int v = 0; v < MX_COMM_NVERBS; v++) {
            const mx_comm_count k = mx_comm_counts(c, m, (mx_comm_verb)v);
            CHECK(k.calls == (long)members[m].calls[v] && k.bytes == members[m].bytes[v],
                  "x%d member %d %s: counted %ld calls %.0f bytes, made %.0f calls %.0f bytes", n, m,
                  mx_comm_verb_name((mx_comm_verb)v), k.calls, k.bytes, members[m].calls[v], members[m].bytes[v]);
            CHECK(k.seconds >= 0, "seconds");
        }
    }
    mx_comm_destroy(c);
}

static void check_verbs(void)
{
    static member first[8], second[8];
    for (int n = 1; n <= 8; n++) {
        run_members(n, first);
        run_members(n, second);
        int differ_members = 0, differ_runs = 0;
        for (int m = 0; m < n; m++)
            for (int cs = 0; cs < NCASES; cs++) {
                differ_runs += first[m].hash[cs] != second[m].hash[cs];
                /* Reduce-scatter shards and received ring data are per member; the rest ends equal. */
                if (cs % NVERIFIED != 2 && cs % NVERIFIED != 5)
                    differ_members += first[m].hash[cs] != first[0].hash[cs];
            }
        CHECK(differ_members == 0, "x%d: %d results differ between members", n, differ_members);
        CHECK(differ_runs == 0, "x%d: %d results differ between two runs", n, differ_runs);
        printf("x%d: %d cases per member ok\n", n, NCASES);
    }
}

static void check_shards(void)
{
    size_t lo, hi, covered = 0;
    for (int m = 0; m < 3; m++) {
        mx_comm_shard(100, m, 3, &lo, &hi);
        CHECK(lo == covered && lo % 16 == 0, "shard %d of 100/3 starts at %zu", m, lo);
        covered = hi;
    }
    CHECK(covered == 100, "shards of 100 over 3 cover %zu", covered);
    mx_comm_shard(5, 3, 8, &lo, &hi);
    CHECK(lo == 5 && hi == 5, "5 over 8: member 3 gets %zu..%zu, expected empty", lo, hi);
}

static void check_stats(void)
{
    CHECK(mx_comm_busbw_factor(MX_COMM_ALLREDUCE, 4) == 1.5, "allreduce factor at 4");
    CHECK(mx_comm_busbw_factor(MX_COMM_REDUCE_SCATTER, 4) == 0.75, "reduce-scatter factor at 4");
    CHECK(mx_comm_busbw_factor(MX_COMM_ALLGATHER, 8) == 0.875, "all-gather factor at 8");
    CHECK(mx_comm_busbw_factor(MX_COMM_BROADCAST, 8) == 1.0, "broadcast factor");
    CHECK(mx_comm_busbw_factor(MX_COMM_ALLREDUCE, 1) == 0.0, "one member moves nothing");
    const mx_comm_count k = {.calls = 2, .bytes = 4e6, .seconds = 2e-3};
    CHECK(mx_comm_algbw(&k) == 2e9, "algbw = S / t: %g", mx_comm_algbw(&k));
    CHECK(mx_comm_busbw(&k, MX_COMM_ALLREDUCE, 2) == 2e9, "busbw at 2 = algbw: %g",
          mx_comm_busbw(&k, MX_COMM_ALLREDUCE, 2));
    CHECK(mx_comm_busbw(&k, MX_COMM_ALLREDUCE, 4) == 3e9, "busbw at 4 = 1.5 algbw");
}

/* Member 1 calls with another count than member 0: both fail, naming both calls. */
typedef struct {
    mx_comm *c;
    int m, rc;
    char msg[256];
} mis;

static void *mismatch_main(void *p)
{
    mis *a = p;
    float buf[32] = {0};
    a->rc = mx_comm_allreduce(a->c, a->m, buf, buf, a->m ? 32 : 16, MX_F32);
    snprintf(a->msg, sizeof a->msg, "%s", mx_last_error());
    return NULL;
}

static void check_errors(void)
{
    mx_comm *c;
    CHECK(mx_comm_create(&c, "nccl", 2) == MX_EINVAL && strstr(mx_last_error(), "'nccl'") &&
              strstr(mx_last_error(), "threads"),
          "unknown kind: %s", mx_last_error());
    CHECK(mx_comm_create(&c, "threads", 0) == MX_EINVAL && strstr(mx_last_error(), "0 members"), "0 members: %s",
          mx_last_error());
    CHECK(mx_comm_create(&c, "threads", 65) == MX_EINVAL && strstr(mx_last_error(), "1..64"), "65 members: %s",
          mx_last_error());
    CHECK(mx_comm_create(&c, "threads", 2) == MX_OK, "%s", mx_last_error());
    float x[4] = {0};
    CHECK(mx_comm_allreduce(c, 2, x, x, 4, MX_F32) == MX_EINVAL && strstr(mx_last_error(), "member 2"), "member: %s",
          mx_last_error());
    CHECK(mx_comm_allgather(c, 0, x, 4, (mx_dtype)7) == MX_EINVAL && strstr(mx_last_error(), "dtype 7"), "dtype: %s",
          mx_last_error());
    CHECK(mx_comm_broadcast(c, 0, x, 4, MX_F32, 3) == MX_EINVAL && strstr(mx_last_error(), "root 3"), "root: %s",
          mx_last_error());
    CHECK(mx_comm_send(c, 1, x, 4, MX_F32, 1) == MX_EINVAL && strstr(mx_last_error(), "itself"), "self send: %s",
          mx_last_error());
    mis a[2] = {{c, 0, 0, ""}, {c, 1, 0, ""}};
    pthread_t th[2];
    for (int m = 0; m < 2; m++) pthread_create(&th[m], NULL, mismatch_main, &a[m]);
    for (int m = 0; m < 2; m++) pthread_join(th[m], NULL);
    for (int m = 0; m < 2; m++)
        CHECK(a[m].rc == MX_EINVAL && strstr(a[m].msg, "32 f32") && strstr(a[m].msg, "16 f32"),
              "mismatch on member %d: %s", m, a[m].msg);
    mx_comm_destroy(c);
}

/* Member m on kvstore worker m's track: an all-reduce of 100 f32, then a barrier. */
typedef struct {
    mx_comm *c;
    int m;
} traced;

static void *traced_main(void *p)
{
    traced *t = p;
    float x[100] = {0};
    mx_trace_set_track(MX_TRACK_KV_WORKER(t->m));
    mx_comm_allreduce(t->c, t->m, x, x, 100, MX_F32);
    mx_comm_barrier(t->c, t->m);
    return NULL;
}

static void run_traced(mx_comm *c)
{
    traced t[2] = {{c, 0}, {c, 1}};
    pthread_t th[2];
    for (int m = 0; m < 2; m++) pthread_create(&th[m], NULL, traced_main, &t[m]);
    for (int m = 0; m < 2; m++) pthread_join(th[m], NULL);
}

static void check_trace(void)
{
    mx_comm *c;
    CHECK(mx_comm_create(&c, "threads", 2) == MX_OK, "create x2: %s", mx_last_error());
    run_traced(c);
    CHECK(mx_trace_count() == 0, "%d events recorded while the timeline was off", mx_trace_count());
    mx_trace_start(mx_now());
    run_traced(c);
    mx_trace_stop();
    CHECK(mx_trace_count() == 4, "2 members x 2 calls recorded as %d events", mx_trace_count());
    size_t len;
    char *js = mx_trace_json(3, "rank 3 \"x\"", 0, -1e300, 1e300, &len);
    CHECK(js && strlen(js) == len, "the events as JSON");
    const char *want[] = {"\"tid\": 100, \"cat\": \"comm\", \"name\": \"allreduce\"",
                          "\"tid\": 101, \"cat\": \"comm\", \"name\": \"barrier\"", "\"args\": {\"bytes\": 400}",
                          "\"thread_name\", \"pid\": 3, \"tid\": 101, \"args\": {\"name\": \"kvstore worker 1\"}",
                          "{\"name\": \"rank 3 \\\"x\\\"\"}"};
    for (size_t i = 0; js && i < sizeof want / sizeof *want; i++)
        CHECK(strstr(js, want[i]), "JSON without %s", want[i]);
    free(js);
    /* a window that holds none of them: the names only */
    js = mx_trace_json(3, "r", 0, -2, -1, &len);
    CHECK(js && !strstr(js, "\"ph\": \"X\""), "events outside the window kept");
    free(js);
    mx_trace_reset();
    mx_comm_destroy(c);
}

/* Not a timed test: prints what one rendezvous costs when members arrive together. */
typedef struct {
    mx_comm *c;
    int m, iters;
} bench;

static void *bench_main(void *p)
{
    bench *b = p;
    float x[16] = {0};
    for (int i = 0; i < b->iters; i++) mx_comm_allreduce(b->c, b->m, x, x, 16, MX_F32);
    return NULL;
}

static void print_rendezvous_cost(void)
{
    for (int n = 2; n <= 4; n += 2) {
        mx_comm *c;
        if (mx_comm_create(&c, "threads", n) < 0) return;
        bench b[4];
        pthread_t th[4];
        const int iters = 20000;
        const double t0 = mx_now();
        for (int m = 0; m < n; m++) {
            b[m] = (bench){c, m, iters};
            pthread_create(&th[m], NULL, bench_main, &b[m]);
        }
        for (int m = 0; m < n; m++) pthread_join(th[m], NULL);
        const double us = (mx_now() - t0) / iters * 1e6;
        printf("allreduce of 16 f32 on %d threads: %.2f us per call (3 rendezvous)\n", n, us);
        mx_comm_destroy(c);
    }
}

/* ---- buffers a host thread does not read: the threads communicator with mx_comm_set_devices
 * moves and sums them through each member's backend. A CPU table registered under another
 * device type ("devmem") takes that path here, so it is checked where no GPU is. */

typedef struct {
    mx_comm *c;
    mx_backend *be;
    int m, n, bad;
    char first[256];
} dev_member;

static void *dev_member_main(void *p)
{
    dev_member *me = p;
    const int m = me->m, n = me->n;
    const size_t count = 4099;
    float *send = me->be->ops->alloc(me->be, 4 * count), *recv = me->be->ops->alloc(me->be, 4 * count);
    size_t lo, hi;
    mx_comm_shard(count, m, n, &lo, &hi);
    /* the sums: exact in member order, and within 1 ulp-ish where an in-place member's own
     * buffer is summed first (the device path's order) */
#define NEAR(i) (fabsf(recv[i] - expected_sum(MX_F32, n, i)) <= 1e-5f * (1 + fabsf(expected_sum(MX_F32, n, i))))
    fill(MX_F32, send, m, count);
    fill_sentinel(MX_F32, recv, count);
    int rc = mx_comm_allreduce(me->c, m, send, recv, count, MX_F32);
    for (size_t i = 0; i < count; i++) EXPECT(me, rc == MX_OK && NEAR(i), "device allreduce x%d: element %zu", n, i);
    fill(MX_F32, recv, m, count);
    rc = mx_comm_allreduce(me->c, m, recv, recv, count, MX_F32);
    for (size_t i = 0; i < count; i++)
        EXPECT(me, rc == MX_OK && NEAR(i), "device allreduce in place x%d: element %zu", n, i);
    fill_sentinel(MX_F32, recv, count);
    rc = mx_comm_reduce_scatter(me->c, m, send, recv, count, MX_F32);
    for (size_t i = 0; i < count; i++)
        EXPECT(me, rc == MX_OK && (i >= lo && i < hi ? NEAR(i) : recv[i] == SENTINEL), "device reduce_scatter x%d: %zu",
               n, i);
    for (size_t i = lo; i < hi; i++) recv[i] = value(m, i);
    rc = mx_comm_allgather(me->c, m, recv, count, MX_F32);
    for (size_t i = 0; i < count; i++) {
        int owner = 0;
        for (int j = 0; j < n; j++) {
            size_t jl, jh;
            mx_comm_shard(count, j, n, &jl, &jh);
            if (i >= jl && i < jh) owner = j;
        }
        EXPECT(me, rc == MX_OK && recv[i] == value(owner, i), "device allgather x%d: element %zu", n, i);
    }
    if (m == n - 1) fill(MX_F32, recv, m, count);
    rc = mx_comm_broadcast(me->c, m, recv, count, MX_F32, n - 1);
    for (size_t i = 0; i < count; i++)
        EXPECT(me, rc == MX_OK && recv[i] == value(n - 1, i), "device broadcast: %zu", i);
    if (n > 1) {
        fill_sentinel(MX_F32, recv, count);
        if (m == 0) rc = mx_comm_send(me->c, m, send, count, MX_F32, 1);
        if (m == 1) rc = mx_comm_recv(me->c, m, recv, count, MX_F32, 0);
        for (size_t i = 0; m == 1 && i < count; i++)
            EXPECT(me, rc == MX_OK && recv[i] == value(0, i), "device recv: %zu", i);
        /* sums of half types are the host path's alone: refused on every member, naming it */
        rc = mx_comm_allreduce(me->c, m, send, recv, count / 2, MX_BF16);
        EXPECT(me, rc == MX_EUNSUPPORTED && strstr(mx_last_error(), "f32"), "device bf16 allreduce refused: %d", rc);
    }
#undef NEAR
    me->be->ops->free(me->be, send);
    me->be->ops->free(me->be, recv);
    return NULL;
}

static void check_device_buffers(void)
{
    mx_backend_ops devmem = mx_cpu_backend_ops;
    devmem.name = devmem.device_type = "devmem";
    CHECK(mx_backend_register(&devmem) == MX_OK, "register devmem: %s", mx_last_error());
    for (int n = 1; n <= 3; n++) {
        mx_comm *c;
        mx_backend *be[3];
        dev_member members[3];
        pthread_t th[3];
        CHECK(mx_comm_create(&c, "threads", n) == MX_OK, "create x%d: %s", n, mx_last_error());
        for (int m = 0; m < n; m++) CHECK(mx_backend_create(&be[m], "devmem", m, 1) == MX_OK, "%s", mx_last_error());
        mx_comm_set_devices(c, be);
        CHECK(c->be == be, "x%d: a non-CPU device type sets the device path", n);
        for (int m = 0; m < n; m++) {
            members[m] = (dev_member){.c = c, .be = be[m], .m = m, .n = n};
            pthread_create(&th[m], NULL, dev_member_main, &members[m]);
        }
        for (int m = 0; m < n; m++) pthread_join(th[m], NULL);
        for (int m = 0; m < n; m++) CHECK(members[m].bad == 0, "x%d member %d: %s", n, m, members[m].first);
        mx_comm_destroy(c);
        for (int m = 0; m < n; m++) mx_backend_destroy(be[m]);
    }
    /* CPU backends keep the direct path */
    mx_comm *c;
    mx_backend *cpu[2];
    CHECK(mx_comm_create(&c, "threads", 2) == MX_OK, "%s", mx_last_error());
    for (int m = 0; m < 2; m++) CHECK(mx_backend_create(&cpu[m], "cpu", m, 1) == MX_OK, "%s", mx_last_error());
    mx_comm_set_devices(c, cpu);
    CHECK(c->be == NULL, "CPU backends: buffers read directly");
    mx_comm_destroy(c);
    for (int m = 0; m < 2; m++) mx_backend_destroy(cpu[m]);
    printf("device buffers through the members' backends: 1 to 3 members ok\n");
}

/* The registry: a kind that a program adds (as mxbench adds nccl) is listed and created by
 * name; a second table of the same name, or one missing a verb, is refused. */
static void check_register(void)
{
    extern const mx_comm_ops mx_comm_threads_ops;
    static mx_comm_ops other;
    other = mx_comm_threads_ops;
    other.name = "threads2";
    CHECK(mx_comm_register(&other) == MX_OK && strstr(mx_comm_kinds(), "|threads2"), "register: %s (kinds %s)",
          mx_last_error(), mx_comm_kinds());
    CHECK(mx_comm_register(&other) == MX_EINVAL && strstr(mx_last_error(), "already"), "twice: %s", mx_last_error());
    static mx_comm_ops partial = {.name = "partial"};
    CHECK(mx_comm_register(&partial) == MX_EINVAL && strstr(mx_last_error(), "'partial'"), "partial: %s",
          mx_last_error());
    mx_comm *c = NULL;
    CHECK(mx_comm_create(&c, "threads2", 1) == MX_OK, "create a registered kind: %s", mx_last_error());
    mx_comm_destroy(c);
}

/* mx_comm_kind_for_devices: the first registered kind whose `takes` accepts the devices, else
 * threads (a kind without `takes` is never chosen so). Here a kind that takes members on
 * devices of distinct indices, as nccl takes GPUs of their own. */
static int distinct_devices(mx_backend *const *be, int n)
{
    for (int m = 0; m < n; m++)
        for (int j = 0; j < m; j++)
            if (be[j]->device == be[m]->device) return 0;
    return 1;
}

static void check_kind_for_devices(void)
{
    mx_backend *be[3];
    for (int m = 0; m < 3; m++)
        CHECK(mx_backend_create(&be[m], "cpu", m < 2 ? m : 0, 1) == MX_OK, "%s", mx_last_error());
    CHECK(strcmp(mx_comm_kind_for_devices(be, 2), "threads") == 0, "no kind takes devices: %s",
          mx_comm_kind_for_devices(be, 2));
    extern const mx_comm_ops mx_comm_threads_ops;
    static mx_comm_ops own;
    own = mx_comm_threads_ops;
    own.name = "own_devices";
    own.takes = distinct_devices;
    CHECK(mx_comm_register(&own) == MX_OK, "register: %s", mx_last_error());
    CHECK(strcmp(mx_comm_kind_for_devices(be, 2), "own_devices") == 0, "devices 0 and 1: %s",
          mx_comm_kind_for_devices(be, 2));
    CHECK(strcmp(mx_comm_kind_for_devices((mx_backend *const[]){be[0], be[2]}, 2), "threads") == 0,
          "two members on device 0: %s", mx_comm_kind_for_devices((mx_backend *const[]){be[0], be[2]}, 2));
    for (int m = 0; m < 3; m++) mx_backend_destroy(be[m]);
    printf("the kind for a kvstore's devices: the registered kind that takes them, else threads\n");
}

int main(void)
{
    check_shards();
    check_stats();
    check_verbs();
    check_errors();
    check_register();
    check_trace();
    check_device_buffers();
    check_kind_for_devices();
    print_rendezvous_cost();
    return check_summary("test_comm");
}
