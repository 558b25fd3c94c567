/* AMP bf16 GEMMs on oneDNN's matmul (builds with MXBENCH_HAVE_DNNL), for CPUs with AMX tiles:
 * where oneDNN's kernels run on them (its effective ISA avx512_core_amx: amx_bf16 in cpuid and
 * ONEDNN_MAX_CPU_ISA not capping it), mx_cpu_gemm sends its bf16 products here, since one tile
 * multiply (TDPBF16PS, 16 x 16 x 32) does 8192 of the products one vdpbf16ps does 32 of, and on
 * an Intel Xeon with AMX mxbench's own avx512_bf16 kernels made bf16 slower than f32.
 * Elsewhere the own kernels run (engine/cpu/gemm.c): on the AMD EPYC without tiles they ran the
 * GEMMs of gpt-bench and resnet18 as fast as oneDNN's brgemm matmul on operands converted first
 * (bench/gemm_bench; docs/performance.md, "Choices in the code"). MXBENCH_BF16=own keeps the own
 * kernels on an AMX CPU (to measure what the tiles bring), MXBENCH_BF16=dnnl sends the GEMMs
 * here on any CPU with bf16 units (oneDNN's avx512_bf16 kernels where it has no tiles), which is
 * how the path is tested on CPUs without AMX.
 *
 * Numbers: op(A) and op(B) are rounded to bf16 (nearest even, as the own kernels' packing
 * rounds; under AMP they are bf16 values already) into this thread's buffers, each in its own
 * orientation (a transposed operand is described to oneDNN by its strides), and oneDNN sums the
 * exact products in f32 into the f32 C: the own kernels' results up to the order of the sums.
 * C = op(A) op(B) (beta 0) or C + op(A) op(B) (beta 1, a sum post-op); other alpha or beta
 * (mxbench's layers ask for none) run on the own kernel.
 *
 * Primitives: one per (m, n, k, ta, tb, ldc, beta, threads), made on first use (JIT-compiled, a few
 * milliseconds) and kept for the process in one table under a lock, since a device's threads
 * run products at once (engine/cpu/conv.c's sample-parallel chunks, each on one thread); each
 * thread runs them on its own stream, its scratchpad in a thread buffer (user mode), with the
 * calling device's thread count as oneDNN's. A shape oneDNN cannot take, or one past the
 * table's room, is left to the own kernel (the call returns 0, nothing written). */
#include "kernels.h"

#if defined(MXBENCH_HAVE_DNNL) && MX_CPU_AVX512_KERNELS
#include "dnnl_common.h"
#include "base/status.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES 256 /* shapes x thread counts of one process; beyond, the own kernel */

typedef struct {
    int m, n, k, ta, tb, ldc, sum, threads;
    int failed; /* oneDNN did not make it: the own kernel runs this shape */
    dnnl_primitive_t p;
    /* the operands' descriptions: each call makes its own memory objects on its buffers, since
     * threads run one primitive at once */
    dnnl_memory_desc_t a, b, c, scratch;
    size_t scratch_bytes;
} shape;

static shape table[MAX_SHAPES];
static int nshapes;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* Each thread's stream, destroyed with the thread. */
static pthread_key_t stream_key;
static pthread_once_t stream_once = PTHREAD_ONCE_INIT;
static void stream_free(void *s) { dnnl_stream_destroy(s); }
static void stream_key_init(void) { (void)pthread_key_create(&stream_key, stream_free); }

static dnnl_stream_t thread_stream(void)
{
    pthread_once(&stream_once, stream_key_init);
    dnnl_stream_t s = pthread_getspecific(stream_key);
    if (!s) {
        if (dnnl_stream_create(&s, mx_dnnl_engine(), dnnl_stream_default_flags) != dnnl_success) return NULL;
        if (pthread_setspecific(stream_key, s) != 0) {
            dnnl_stream_destroy(s);
            return NULL;
        }
    }
    return s;
}

/* A rows x cols matrix, row-major with rows ld apart (t 0) or its transpose stored as cols rows
 * of ld (t 1). */
static int matrix(dnnl_memory_desc_t *d, int64_t rows, int64_t cols, int64_t ld, dnnl_data_type_t type, int t)
{
    const dnnl_dims_t dims = {rows, cols}, strides = {t ? 1 : ld, t ? ld : 1};
    return dnnl_memory_desc_init_by_strides(d, 2, dims, type, strides) == dnnl_success;
}

static int make(shape *s)
{
    if (!matrix(&s->a, s->m, s->k, s->ta ? s->m : s->k, dnnl_bf16, s->ta) ||
        !matrix(&s->b, s->k, s->n, s->tb ? s->k : s->n, dnnl_bf16, s->tb) ||
        !matrix(&s->c, s->m, s->n, s->ldc, dnnl_f32, 0))
        return 0;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &s->a, &s->b, NULL, &s->c) != dnnl_success) return 0;
    dnnl_primitive_attr_t attr = mx_dnnl_user_scratch_attr(s->sum);
    dnnl_primitive_desc_t pd = NULL;
    const int ok = attr && dnnl_primitive_desc_create(&pd, &md, attr, mx_dnnl_engine(), NULL) == dnnl_success;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) return 0;
    const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    s->scratch_bytes = sm ? dnnl_memory_desc_get_size(sm) : 0;
    if (s->scratch_bytes) s->scratch = *sm;
    const int made = dnnl_primitive_create(&s->p, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return made;
}

static void unmake(shape *s)
{
    if (s->p) dnnl_primitive_destroy(s->p);
    const shape failed = {.m = s->m, .n = s->n, .k = s->k, .ta = s->ta, .tb = s->tb, .ldc = s->ldc, .sum = s->sum,
                          .threads = s->threads, .failed = 1};
    *s = failed;
}

/* The shape's entry, made on first use; NULL where oneDNN does not run it. Entries are never
 * moved or freed while the process runs, so a pointer stays good after the lock. */
static shape *lookup(const shape *want)
{
    if (!mx_dnnl_engine()) return NULL;
    pthread_mutex_lock(&table_lock);
    shape *s = NULL;
    for (int i = 0; i < nshapes && !s; i++) {
        const shape *e = &table[i];
        if (e->m == want->m && e->n == want->n && e->k == want->k && e->ta == want->ta && e->tb == want->tb &&
            e->ldc == want->ldc && e->sum == want->sum && e->threads == want->threads)
            s = &table[i];
    }
    if (!s && nshapes < MAX_SHAPES) {
        s = &table[nshapes++];
        *s = *want;
        if (!make(s)) unmake(s);
    }
    pthread_mutex_unlock(&table_lock);
    return s && !s->failed ? s : NULL;
}

/* rows x cols values, ld apart, to a compact bf16 matrix (threads: the device's). */
static void to_bf16(const mx_backend *be, uint16_t *dst, const float *src, int rows, int cols, int ld)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)rows * cols)) schedule(static)
    for (int r = 0; r < rows; r++) mx_cpu_to_bf16(dst + (size_t)r * cols, src + (size_t)r * ld, cols);
}

int mx_cpu_gemm_dnnl(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0 || k <= 0 || alpha != 1.0f || (beta != 0.0f && beta != 1.0f) || ldc < n) return 0;
    const shape want = {
        .m = m, .n = n, .k = k, .ta = ta, .tb = tb, .ldc = ldc, .sum = beta == 1.0f, .threads = be->nthreads};
    shape *s = lookup(&want);
    dnnl_stream_t stream = s ? thread_stream() : NULL;
    if (!stream) return 0;
    const size_t abytes = ((size_t)m * k * 2 + 63) / 64 * 64, bbytes = ((size_t)k * n * 2 + 63) / 64 * 64;
    char *ops = mx_cpu_thread_buffer(MX_THREAD_BUF_DNNL, abytes + bbytes + s->scratch_bytes);
    if (!ops) {
        mx_backend_fail(be, MX_ENOMEM, "gemm (bf16, oneDNN): no memory for the %dx%dx%d product's operands", m, n, k);
        return 1;
    }
    uint16_t *a16 = (uint16_t *)ops, *b16 = (uint16_t *)(ops + abytes);
    /* each operand as it is stored: op(A) = A^T is A's k x m rows */
    to_bf16(be, a16, a, ta ? k : m, ta ? m : k, lda);
    to_bf16(be, b16, b, tb ? n : k, tb ? k : n, ldb);
    void *const ptr[4] = {a16, b16, c, ops + abytes + bbytes};
    const dnnl_memory_desc_t *const desc[4] = {&s->a, &s->b, &s->c, &s->scratch};
    static const int arg[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    dnnl_exec_arg_t args[4];
    const int nargs = s->scratch_bytes ? 4 : 3;
    int ok = 1, made = 0;
    for (; made < nargs && ok; made++) {
        args[made].arg = arg[made];
        ok = dnnl_memory_create(&args[made].memory, desc[made], mx_dnnl_engine(), ptr[made]) == dnnl_success;
    }
    if (!ok) made--; /* the one that failed was not made */
    const int prev = omp_get_max_threads();
    omp_set_num_threads(be->nthreads);
    ok = ok && dnnl_primitive_execute(s->p, stream, nargs, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
    omp_set_num_threads(prev);
    for (int i = 0; i < made; i++) dnnl_memory_destroy(args[i].memory);
    if (!ok) mx_backend_fail(be, MX_ERUNTIME, "gemm (bf16, oneDNN): the %dx%dx%d matmul failed", m, n, k);
    return 1;
}

#else /* no oneDNN, or no AVX-512 kernels to round with: the own kernels take every product */

int mx_cpu_gemm_dnnl(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    return 0;
}

#endif
