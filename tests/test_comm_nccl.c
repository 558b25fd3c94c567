/* The nccl communicator against the threads communicator on the same data: every verb at one
 * member (and at two where two GPUs exist), f32, f16 and bf16, in place and not, even and
 * uneven mx_comm_shard splits; then failures that must come back as errors naming the call
 * rather than hang: a NULL buffer, and (two GPUs) a member that never arrives, which the
 * timeout must end; run as the one rank of an MPI job, kind nccl_mpi instead. Tolerance: at
 * one member NCCL copies, so the bits must be equal; at several it sums in ring or tree order
 * in the element type, so an element may differ from
 * the f32 member-order sum by tol x n x max(1, |value|), tol 2^-20 for f32, 2^-10 for f16 and
 * 2^-7 for bf16 (the inputs here are small multiples of 1/8, whose sums are exact anyway).
 * Exits 77 where there is no GPU. */
#include "comm/comm.h"
#include "comm/comm_nccl.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                            \
    do {                                            \
        if (!(cond)) {                              \
            printf("FAIL %s:%d: ", __func__, __LINE__); \
            printf(__VA_ARGS__);                    \
            printf("\n");                           \
            failures++;                             \
        }                                           \
    } while (0)

#define MAXN 2
static mx_backend *gpu[MAXN];

/* One case: the verb, its size and type, and whether send is recv. */
typedef struct {
    mx_comm_verb verb;
    size_t count;
    mx_dtype t;
    int root, in_place, n;
    mx_comm *ref, *nc;
} job;

typedef struct {
    const job *j;
    int m, rc_ref, rc_nc;
    char err[512];
    void *ref_out, *nc_out; /* host copies of each result, count elements */
} member;

static float input(int m, size_t i) { return (float)((int)((i * 7 + (size_t)m * 13) % 97) - 48) / 8.0f; }

static int call(mx_comm *c, const job *j, int m, const void *send, void *recv)
{
    switch (j->verb) {
    case MX_COMM_ALLREDUCE: return mx_comm_allreduce(c, m, send, recv, j->count, j->t);
    case MX_COMM_REDUCE_SCATTER: return mx_comm_reduce_scatter(c, m, send, recv, j->count, j->t);
    case MX_COMM_ALLGATHER: return mx_comm_allgather(c, m, recv, j->count, j->t);
    case MX_COMM_BROADCAST: return mx_comm_broadcast(c, m, recv, j->count, j->t, j->root);
    case MX_COMM_SEND:
        /* member 0 sends to 1, which receives */
        return m == 0 ? mx_comm_send(c, 0, send, j->count, j->t, 1) : mx_comm_recv(c, 1, recv, j->count, j->t, 0);
    default: return mx_comm_barrier(c, m);
    }
}

/* Member m: the same call on host buffers through threads, then on its GPU through nccl. */
static void *run_member(void *arg)
{
    member *p = arg;
    const job *j = p->j;
    const int m = p->m;
    const size_t bytes = j->count * mx_dtype_size(j->t);
    char *hs = malloc(bytes + 1), *hr = malloc(bytes + 1);
    for (size_t i = 0; i < j->count; i++) {
        mx_dtype_store(j->t, hs, i, input(m, i));
        mx_dtype_store(j->t, hr, i, input(m + 5, i)); /* what a verb leaves alone must stay */
    }
    if (j->in_place) memcpy(hr, hs, bytes);
    memcpy(p->ref_out, hr, bytes);
    p->rc_ref = call(j->ref, j, m, j->in_place ? p->ref_out : hs, p->ref_out);

    mx_backend *be = gpu[m];
    if (be->ops->bind_thread) be->ops->bind_thread(be);
    void *ds = be->ops->alloc(be, bytes + 1), *dr = j->in_place ? ds : be->ops->alloc(be, bytes + 1);
    be->ops->copy(be, ds, hs, bytes, MX_COPY_H2D);
    be->ops->copy(be, dr, hr, bytes, MX_COPY_H2D);
    p->rc_nc = call(j->nc, j, m, ds, dr);
    /* the barrier waits with the timeout: were the call to fail on one member, the others
     * end here (aborted) instead of in the backend's sync below, which cannot time out */
    if (p->rc_nc == MX_OK && j->verb != MX_COMM_BARRIER) p->rc_nc = mx_comm_barrier(j->nc, m);
    if (p->rc_nc < 0) snprintf(p->err, sizeof p->err, "%s", mx_last_error());
    be->ops->copy(be, p->nc_out, dr, bytes, MX_COPY_D2H);
    if (be->ops->sync(be) < 0 && p->rc_nc == MX_OK) {
        p->rc_nc = -1;
        snprintf(p->err, sizeof p->err, "sync: %s", mx_last_error());
    }
    be->ops->free(be, ds);
    if (dr != ds) be->ops->free(be, dr);
    free(hs), free(hr);
    return NULL;
}

static double tolerance(mx_dtype t, int n)
{
    if (n == 1) return 0;
    return n * (t == MX_F32 ? ldexp(1, -20) : t == MX_F16 ? ldexp(1, -10) : ldexp(1, -7));
}

static void run_case(const job *j0)
{
    job j = *j0;
    member p[MAXN];
    pthread_t th[MAXN];
    const size_t bytes = j.count * mx_dtype_size(j.t) + 1;
    for (int m = 0; m < j.n; m++) {
        p[m] = (member){.j = &j, .m = m, .ref_out = calloc(1, bytes), .nc_out = calloc(1, bytes)};
        pthread_create(&th[m], NULL, run_member, &p[m]);
    }
    for (int m = 0; m < j.n; m++) pthread_join(th[m], NULL);
    const double tol = tolerance(j.t, j.n);
    for (int m = 0; m < j.n; m++) {
        CHECK(p[m].rc_ref == MX_OK, "threads %s: %d", mx_comm_verb_name(j.verb), p[m].rc_ref);
        CHECK(p[m].rc_nc == MX_OK, "nccl %s x%d %zu %s member %d: %s", mx_comm_verb_name(j.verb), j.n, j.count,
              mx_dtype_name(j.t), m, p[m].err);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < j.count; i++) {
            const double a = mx_dtype_load(j.t, p[m].nc_out, i), b = mx_dtype_load(j.t, p[m].ref_out, i);
            if (!(fabs(a - b) <= tol * fmax(1.0, fabs(b)))) first = bad++ ? first : i;
        }
        CHECK(bad == 0, "nccl %s x%d %zu %s%s member %d: %zu elements differ from threads, first [%zu] %g vs %g",
              mx_comm_verb_name(j.verb), j.n, j.count, mx_dtype_name(j.t), j.in_place ? " in place" : "", m, bad,
              first, (double)mx_dtype_load(j.t, p[m].nc_out, first), (double)mx_dtype_load(j.t, p[m].ref_out, first));
        free(p[m].ref_out), free(p[m].nc_out);
    }
}

/* The kind under test: nccl (this process's GPUs), or nccl_mpi when the test runs as the one
 * rank of an MPI job (mpirun -np 1: test_comm_nccl_mpi). */
static const char *kind = "nccl";

static int make_pair(int n, mx_comm **ref, mx_comm **nc)
{
    if (mx_comm_create(ref, "threads", n) < 0 || mx_comm_create(nc, kind, n) < 0) {
        printf("FAIL: create x%d: %s\n", n, mx_last_error());
        failures++;
        return -1;
    }
    if (mx_comm_set_devices(*nc, gpu) < 0) {
        printf("FAIL: nccl x%d starting on its GPUs: %s\n", n, mx_last_error());
        failures++;
        return -1;
    }
    return 0;
}

static void test_verbs(int n)
{
    mx_comm *ref = NULL, *nc = NULL;
    if (make_pair(n, &ref, &nc) == 0) {
        /* 1024: an even split (multiples of 16 per member); 1000 and 37: uneven, the grouped
         * calls; 5: late members' shards empty */
        const size_t counts[] = {1024, 1000, 37, 5};
        const mx_dtype types[] = {MX_F32, MX_F16, MX_BF16};
        for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
            for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
                for (int v = MX_COMM_ALLREDUCE; v <= MX_COMM_SEND; v++)
                    for (int in_place = 0; in_place < 2; in_place++) {
                        if (v == MX_COMM_SEND && n < 2) continue; /* a member cannot send to itself */
                        if (in_place && v != MX_COMM_ALLREDUCE && v != MX_COMM_REDUCE_SCATTER) continue;
                        for (int root = 0; root < (v == MX_COMM_BROADCAST ? n : 1); root++)
                            run_case(&(job){.verb = (mx_comm_verb)v, .count = counts[ci], .t = types[ti],
                                            .root = root, .in_place = in_place, .n = n, .ref = ref, .nc = nc});
                    }
        run_case(&(job){.verb = MX_COMM_BARRIER, .count = 0, .t = MX_F32, .n = n, .ref = ref, .nc = nc});
        mx_comm_count k = mx_comm_counts(nc, 0, MX_COMM_ALLREDUCE);
        CHECK(k.calls == 4 * 3 * 2, "nccl x%d counted %ld all-reduces (expected 24)", n, k.calls);
    }
    mx_comm_destroy(nc);
    mx_comm_destroy(ref);
}

/* Member 0 passes a NULL buffer: NCCL refuses it when queued; the error names the call, and
 * the communicator is stopped for every member (the others' barrier ends, naming why). */
typedef struct {
    mx_comm *nc;
    int m, rc;
    char err[512];
} fail_arg;

static void *fail_member(void *arg)
{
    fail_arg *a = arg;
    mx_backend *be = gpu[a->m];
    void *buf = be->ops->alloc(be, 4096);
    a->rc = mx_comm_allreduce(a->nc, a->m, a->m == 0 ? NULL : buf, buf, 1024, MX_F32);
    if (a->rc == MX_OK) a->rc = mx_comm_barrier(a->nc, a->m);
    snprintf(a->err, sizeof a->err, "%s", a->rc < 0 ? mx_last_error() : "");
    be->ops->sync(be);
    be->ops->free(be, buf);
    return NULL;
}

static void test_null_buffer(int n)
{
    mx_comm *ref = NULL, *nc = NULL;
    if (make_pair(n, &ref, &nc) == 0) {
        fail_arg a[MAXN];
        pthread_t th[MAXN];
        for (int m = 0; m < n; m++) {
            a[m] = (fail_arg){.nc = nc, .m = m};
            pthread_create(&th[m], NULL, fail_member, &a[m]);
        }
        for (int m = 0; m < n; m++) pthread_join(th[m], NULL);
        CHECK(a[0].rc < 0 && strstr(a[0].err, "ncclAllReduce"), "a NULL send buffer x%d: %d '%s'", n, a[0].rc,
              a[0].err);
        for (int m = 1; m < n; m++)
            CHECK(a[m].rc < 0 && strstr(a[m].err, "ncclAllReduce"), "member %d after member 0 failed: %d '%s'", m,
                  a[m].rc, a[m].err);
        CHECK(mx_comm_barrier(nc, 0) < 0 && strstr(mx_last_error(), "stopped"), "a barrier after the failure: %s",
              mx_last_error());
    }
    mx_comm_destroy(nc);
    mx_comm_destroy(ref);
}

/* Two GPUs: member 1 never arrives at the barrier; member 0 must return after the timeout
 * with the abort named, not hang. */
static void test_timeout(void)
{
    setenv("MXBENCH_NCCL_TIMEOUT", "2", 1);
    mx_comm *ref = NULL, *nc = NULL;
    if (make_pair(2, &ref, &nc) == 0) {
        const int rc = mx_comm_barrier(nc, 0);
        CHECK(rc < 0 && strstr(mx_last_error(), "ncclCommAbort") && strstr(mx_last_error(), "barrier"),
              "a barrier member 1 never joins: %d '%s'", rc, mx_last_error());
    }
    mx_comm_destroy(nc);
    mx_comm_destroy(ref);
    unsetenv("MXBENCH_NCCL_TIMEOUT");
}

/* What needs no GPU's work: the kind is listed once registered, and misuse is refused. */
static void test_setup(int gpus)
{
    CHECK(strstr(mx_comm_kinds(), "nccl") != NULL, "kinds after registering: %s", mx_comm_kinds());
    CHECK(mx_comm_register(&mx_comm_nccl_ops) < 0 && strstr(mx_last_error(), "already"), "registered twice: %s",
          mx_last_error());
    mx_comm *nc = NULL;
    CHECK(mx_comm_create(&nc, "nccl", 1) == MX_OK, "create: %s", mx_last_error());
    float *buf = gpu[0]->ops->alloc(gpu[0], 64);
    CHECK(mx_comm_allreduce(nc, 0, buf, buf, 16, MX_F32) < 0 && strstr(mx_last_error(), "mx_comm_set_devices"),
          "a verb before the devices are set: %s", mx_last_error());
    gpu[0]->ops->free(gpu[0], buf);
    mx_comm_destroy(nc);
    setenv("MXBENCH_NCCL_TIMEOUT", "soon", 1);
    CHECK(mx_comm_create(&nc, "nccl", 1) < 0 && strstr(mx_last_error(), "'soon'"), "a bad timeout: %s",
          mx_last_error());
    unsetenv("MXBENCH_NCCL_TIMEOUT");
    mx_backend *cpu = NULL;
    if (mx_backend_create(&cpu, "cpu", 0, 1) == MX_OK && mx_comm_create(&nc, "nccl", 1) == MX_OK) {
        CHECK(mx_comm_set_devices(nc, &cpu) < 0 && strstr(mx_last_error(), "'cpu'"), "a cpu member: %s",
              mx_last_error());
        mx_comm_destroy(nc);
    }
    /* the kind a kvstore's devices get (mx_comm_kind_for_devices): nccl for a GPU of its own,
     * threads for a CPU device */
    CHECK(strcmp(mx_comm_kind_for_devices(gpu, 1), "nccl") == 0, "one GPU's device: kind %s",
          mx_comm_kind_for_devices(gpu, 1));
    if (cpu) CHECK(strcmp(mx_comm_kind_for_devices(&cpu, 1), "threads") == 0, "a CPU device: kind %s",
                   mx_comm_kind_for_devices(&cpu, 1));
    mx_backend_destroy(cpu);
    /* two logical devices on one GPU: NCCL takes one GPU per member, so they get threads */
    mx_backend *same[2] = {gpu[0], NULL};
    if (mx_backend_create(&same[1], "cuda", gpus, 1) == MX_OK && mx_comm_create(&nc, "nccl", 2) == MX_OK) {
        CHECK(mx_comm_set_devices(nc, same) < 0 && strstr(mx_last_error(), "both on GPU"), "a shared GPU: %s",
              mx_last_error());
        mx_comm_destroy(nc);
        CHECK(strcmp(mx_comm_kind_for_devices(same, 2), "threads") == 0, "a shared GPU: kind %s",
              mx_comm_kind_for_devices(same, 2));
    }
    mx_backend_destroy(same[1]);
}

#ifdef MXBENCH_HAVE_MPI
#include <mpi.h>

/* As the one rank of an MPI job: kind nccl_mpi (its ncclUniqueId over MPI_Bcast, then
 * ncclCommInitRank) on every verb at one member against threads, and a second start refused. */
static int mpi_rank_test(void)
{
    int provided = 0, size = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        printf("FAIL: MPI_Init_thread\n");
        return 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) {
        printf("FAIL: run this test as one rank (mpirun -np 1), not %d\n", size);
        MPI_Finalize();
        return 1;
    }
    if (mx_backend_register(&mx_cuda_backend_ops) < 0 || !mx_comm_nccl_mpi_ops() ||
        mx_comm_register(mx_comm_nccl_mpi_ops()) < 0 || mx_backend_create(&gpu[0], "cuda", 0, 1) < 0) {
        printf("FAIL: registering nccl_mpi or opening GPU 0: %s\n", mx_last_error());
        MPI_Finalize();
        return 1;
    }
    kind = "nccl_mpi";
    mx_comm *nc = NULL;
    CHECK(mx_comm_create(&nc, kind, 2) < 0 && strstr(mx_last_error(), "job has 1 ranks"),
          "2 members in a job of 1 rank: %s", mx_last_error());
    test_verbs(1);
    if (mx_comm_create(&nc, kind, 1) == MX_OK) {
        CHECK(mx_comm_set_devices(nc, gpu) == MX_OK && mx_comm_set_devices(nc, gpu) < 0 &&
                  strstr(mx_last_error(), "already"),
              "started once, a second start refused: %s", mx_last_error());
        mx_comm_destroy(nc);
    }
    mx_backend_destroy(gpu[0]);
    MPI_Finalize();
    printf("test_comm_nccl (nccl_mpi at one rank): %d failures\n", failures);
    return failures ? 1 : 0;
}
#endif

int main(void)
{
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
        printf("skip: no GPU\n");
        return 77;
    }
#ifdef MXBENCH_HAVE_MPI
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK")) return mpi_rank_test();
#endif
    if (mx_backend_register(&mx_cuda_backend_ops) < 0 || mx_comm_register(&mx_comm_nccl_ops) < 0) {
        printf("FAIL: registering: %s\n", mx_last_error());
        return 1;
    }
    const int n = gpus >= 2 ? 2 : 1;
    for (int m = 0; m < n; m++)
        if (mx_backend_create(&gpu[m], "cuda", m, 1) < 0) {
            printf("FAIL: cuda device %d: %s\n", m, mx_last_error());
            return 1;
        }
    test_setup(gpus);
    test_verbs(1);
    test_null_buffer(1);
    if (n == 2) {
        test_verbs(2);
        test_null_buffer(2);
        test_timeout();
    } else {
        printf("one GPU: the two-member cases (send/recv, sums across GPUs, the timeout) not run\n");
    }
    for (int m = 0; m < n; m++) mx_backend_destroy(gpu[m]);
    printf("test_comm_nccl: %d failures\n", failures);
    return failures ? 1 : 0;
}
