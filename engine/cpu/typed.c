/* The CPU backend's typed ops: casts, the non-finite count, gemm with half operands and
 * peer copies. Half operands are honest emulation of a tensor core: widened exactly into
 * f32 panels, multiplied by the f32 GEMM, and the result rounded to its type once. */
#include "kernels.h"
#include "base/status.h"

#include <omp.h>
#ifdef __F16C__
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

static int team(int nthreads, size_t work) { return work < 32768 ? 1 : nthreads; }

/* f16 through the CPU's F16C conversions (8 values an instruction, rounding to nearest
 * even, overflow to inf, NaN kept quiet: what mx_f32_to_f16 does bit by bit) where the
 * build targets a CPU that has them (-march=native), the scalar conversions elsewhere. */
#ifdef __F16C__
static void to_f16(uint16_t *d, const float *s, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < hi; i++) d[i] = mx_f32_to_f16(s[i]);
}

static void from_f16(float *d, const uint16_t *s, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < hi; i++) d[i] = mx_f16_to_f32(s[i]);
}
#else
static void to_f16(uint16_t *d, const float *s, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) d[i] = mx_f32_to_f16(s[i]);
}

static void from_f16(float *d, const uint16_t *s, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) d[i] = mx_f16_to_f32(s[i]);
}
#endif

/* Elements [lo, hi): the pairs AMP uses every step get their own loops; the rest go
 * through f32, which is exact for a half source, so f16 <-> bf16 is still rounded once. */
static void cast_range(void *dst, mx_dtype dt, const void *src, mx_dtype st, size_t lo, size_t hi)
{
    if (st == MX_F32 && dt == MX_F16) {
        to_f16(dst, src, lo, hi);
    } else if (st == MX_F32 && dt == MX_BF16) {
        const float *s = src;
        uint16_t *d = dst;
        for (size_t i = lo; i < hi; i++) d[i] = mx_f32_to_bf16(s[i]);
    } else if (st == MX_F16 && dt == MX_F32) {
        from_f16(dst, src, lo, hi);
    } else if (st == MX_BF16 && dt == MX_F32) {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = lo; i < hi; i++) d[i] = mx_bf16_to_f32(s[i]);
    } else {
        for (size_t i = lo; i < hi; i++) mx_dtype_store(dt, dst, i, mx_dtype_load(st, src, i));
    }
}

void mx_cpu_cast_host(int nthreads, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    if (dt == st) {
        if (dst != src && n) memcpy(dst, src, n * mx_dtype_size(st));
        return;
    }
    const int T = team(nthreads, n);
    if (T == 1) { /* no parallel region at all: gemm_ex calls this once per panel row */
        cast_range(dst, dt, src, st, 0, n);
        return;
    }
#pragma omp parallel num_threads(T)
    {
        const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        cast_range(dst, dt, src, st, n * t / nt, n * (t + 1) / nt);
    }
}

/* Elements [lo, hi) of x rounded to t in place, the t values stored to h: one pass. */
static void round_range(float *x, mx_dtype t, uint16_t *h, size_t lo, size_t hi)
{
    size_t i = lo;
    if (t == MX_BF16) {
        for (; i < hi; i++) {
            h[i] = mx_f32_to_bf16(x[i]);
            x[i] = mx_bf16_to_f32(h[i]);
        }
        return;
    }
#ifdef __F16C__
    for (; i + 8 <= hi; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(h + i), v);
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(v));
    }
#endif
    for (; i < hi; i++) {
        h[i] = mx_f32_to_f16(x[i]);
        x[i] = mx_f16_to_f32(h[i]);
    }
}

void mx_cpu_round_half(mx_backend *be, size_t n, float *x, mx_dtype t, void *half)
{
    if (mx_backend_check_half(be, t, "round_half") < 0) return;
    const int T = team(be->nthreads, n);
    if (T == 1) {
        round_range(x, t, half, 0, n);
        return;
    }
#pragma omp parallel num_threads(T)
    {
        const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        round_range(x, t, half, n * i / nt, n * (i + 1) / nt);
    }
}

/* Elements per piece of the AMP update: its master, momentum, gradient, half and compute
 * values (18 bytes an element) stay in L1 between the update and the two roundings. */
#define UPDATE_PIECE 2048

void mx_cpu_sgd_update_amp(mx_backend *be, size_t n, float *master, float *mom, const float *g, float lr,
                           float momentum, float wd, float rescale, mx_dtype t, void *half, float *w)
{
    if (mx_backend_check_half(be, t, "sgd_update_amp") < 0) return;
#pragma omp parallel num_threads(mx_cpu_team(be, n))
    {
        const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        const size_t hi = n * (i + 1) / nt;
        for (size_t lo = n * i / nt; lo < hi; lo += UPDATE_PIECE) {
            const size_t e = hi - lo < UPDATE_PIECE ? hi : lo + UPDATE_PIECE;
            mx_cpu_sgd_range(master, mom, g, lr, momentum, wd, rescale, lo, e);
            cast_range(half, t, master, MX_F32, lo, e);
            cast_range(w, MX_F32, half, t, lo, e);
        }
    }
}

void mx_cpu_adamw_update_amp(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                             const mx_adamw_step *a, mx_dtype t, void *half, float *w)
{
    if (mx_backend_check_half(be, t, "adamw_update_amp") < 0) return;
#pragma omp parallel num_threads(mx_cpu_team(be, n))
    {
        const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        const size_t hi = n * (i + 1) / nt;
        for (size_t lo = n * i / nt; lo < hi; lo += UPDATE_PIECE) {
            const size_t e = hi - lo < UPDATE_PIECE ? hi : lo + UPDATE_PIECE;
            mx_cpu_adamw_range(master, m, v, g, a, lo, e);
            cast_range(half, t, master, MX_F32, lo, e);
            cast_range(w, MX_F32, half, t, lo, e);
        }
    }
}

/* Elements [lo, hi) that are inf or NaN, by the scalar rule every backend shares (engine/backend/dtype.c). */
static size_t count_range(const void *x, mx_dtype t, size_t lo, size_t hi)
{
    return mx_dtype_count_nonfinite(hi - lo, (const char *)x + lo * mx_dtype_size(t), t);
}

size_t mx_cpu_count_nonfinite_host(int nthreads, size_t n, const void *x, mx_dtype t)
{
    const int T = team(nthreads, n);
    if (T == 1) return count_range(x, t, 0, n);
    size_t bad = 0;
#pragma omp parallel num_threads(T) reduction(+ : bad)
    {
        const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        bad += count_range(x, t, n * i / nt, n * (i + 1) / nt);
    }
    return bad;
}

static int dtype_ok(mx_backend *be, const char *op, mx_dtype t)
{
    if ((unsigned)t < MX_NDTYPES) return 1;
    mx_backend_fail(be, MX_EINVAL, "%s: dtype %d; accepted 0..%d (f32, f16, bf16)", op, (int)t, MX_NDTYPES - 1);
    return 0;
}

void mx_cpu_cast(mx_backend *be, size_t n, void *dst, mx_dtype dst_type, const void *src, mx_dtype src_type)
{
    if (dtype_ok(be, "cast", dst_type) && dtype_ok(be, "cast", src_type))
        mx_cpu_cast_host(be->nthreads, n, dst, dst_type, src, src_type);
}

size_t mx_cpu_count_nonfinite(mx_backend *be, size_t n, const void *x, mx_dtype type)
{
    /* Unable to look: every element suspect, so AMP skips rather than applies. */
    if (!dtype_ok(be, "count_nonfinite", type)) return n;
    return mx_cpu_count_nonfinite_host(be->nthreads, n, x, type);
}

void mx_cpu_copy_peer(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes)
{
    /* dst is host memory, so the source's own device-to-host copy reaches it, whatever
     * kind the source is. */
    src_be->ops->copy(src_be, dst, src, bytes, MX_COPY_D2H);
}

/* ---- gemm_ex: the f32 panels live in a per-thread buffer (engine/cpu/thread_buf.c). */

static float *panels(size_t floats) { return mx_cpu_thread_buffer(MX_THREAD_BUF_PANELS, floats * sizeof(float)); }

/* rows x cols of type t (leading dimension ld) to a packed f32 panel, and back. */
static void widen(int nthreads, int rows, int cols, float *panel, const void *src, mx_dtype t, int ld)
{
    const size_t es = mx_dtype_size(t);
#pragma omp parallel for num_threads(team(nthreads, (size_t)rows * cols)) schedule(static)
    for (int r = 0; r < rows; r++)
        cast_range(panel + (size_t)r * cols, MX_F32, (const char *)src + (size_t)r * ld * es, t, 0, (size_t)cols);
}

static void narrow(int nthreads, int rows, int cols, void *dst, mx_dtype t, int ld, const float *panel)
{
    const size_t es = mx_dtype_size(t);
#pragma omp parallel for num_threads(team(nthreads, (size_t)rows * cols)) schedule(static)
    for (int r = 0; r < rows; r++)
        cast_range((char *)dst + (size_t)r * ld * es, t, panel + (size_t)r * cols, MX_F32, 0, (size_t)cols);
}

void mx_cpu_gemm_ex(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const void *a, mx_dtype at,
                    int lda, const void *b, mx_dtype bt, int ldb, float beta, void *c, mx_dtype ct, int ldc,
                    mx_dtype compute)
{
    if (mx_backend_check_gemm_types(be, at, bt, ct, compute) < 0) return;
    if (at == MX_F32 && bt == MX_F32 && ct == MX_F32) {
        mx_cpu_gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (m <= 0 || n <= 0) return;
    /* Stored shapes of A (m x k, or k x m transposed) and B (k x n, or n x k). */
    const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    const int ha = at != MX_F32, hb = bt != MX_F32, hc = ct != MX_F32;
    const size_t na = ha ? (size_t)ar * ac : 0, nb = hb ? (size_t)br * bc : 0, nc = hc ? (size_t)m * n : 0;
    float *p = panels(na + nb + nc + 1);
    if (!p) {
        mx_backend_fail(be, MX_ENOMEM, "gemm_ex: no memory for the f32 panels of a %dx%dx%d product (%zu floats)", m,
                        n, k, na + nb + nc);
        return;
    }
    float *pa = p, *pb = p + na, *pc = p + na + nb;
    const int T = be->nthreads;
    if (ha) widen(T, ar, ac, pa, a, at, lda);
    if (hb) widen(T, br, bc, pb, b, bt, ldb);
    /* With beta = 0 BLAS does not read C, so the panel's stale contents never matter. */
    if (hc && beta != 0) widen(T, m, n, pc, c, ct, ldc);
    mx_cpu_gemm(be, ta, tb, m, n, k, alpha, ha ? pa : a, ha ? (ac > 1 ? ac : 1) : lda, hb ? pb : b,
                hb ? (bc > 1 ? bc : 1) : ldb, beta, hc ? pc : c, hc ? n : ldc);
    if (hc) narrow(T, m, n, c, ct, ldc, pc);
}
