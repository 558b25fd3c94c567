/* GEMM with bf16 operands and f32 accumulation on the CPU's bf16 dot products (AVX512_BF16's
 * vdpbf16ps), for AMP bf16: what autocast does on a GPU, where the emulation multiplies the
 * same bf16 values in f32 (cpu_typed.c). The operands arrive as f32 and are rounded to bf16
 * (nearest even) while packed, so under AMP, whose operands are bf16 values already, the
 * products are the emulation's exactly and only the order of the f32 additions differs.
 *
 * Blocking as BLIS and OpenBLAS do it: op(B) in blocks of KC x NC packed into panels of NR
 * columns (L2/L3), op(A) in blocks of MC x KC packed into panels of MR rows (L2), and an
 * MR x NR micro-kernel whose accumulators stay in registers. A packed panel holds pairs: the
 * dword of pair p and row (or column) x is (value at k = 2p, value at k = 2p + 1), low half
 * first, which is the operand vdpbf16ps multiplies pairwise; an odd k pads with a zero.
 *
 * The kernels are compiled for AVX-512 with function attributes whatever the build's -march,
 * and run only where cpuid reports avx512_bf16 (mx_cpu_bf16_native). */
#include "cpu_kernels.h"
#include "status.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_BF16_KERNELS 1
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#else
#define HAVE_BF16_KERNELS 0
#endif

#define MR 8            /* rows of the micro-kernel: 8 x 3 accumulators of 16 lanes */
#define NR 48           /* columns: three vectors */
#define KC MX_BF16_KC   /* k per block: the accumulators restart from 0 at each (the test's rounding) */
#define MC 96           /* rows of A per packed block: 96 x 128 pairs = 48 KiB, in L2 */
#define NC 1536         /* columns of B per packed block: 768 KiB */

static int forced_off = -1; /* -1: not read yet; MXBENCH_BF16=emulate sets 1 */

void mx_cpu_bf16_force_emulation(int on) { forced_off = on != 0; }

int mx_cpu_bf16_native(void)
{
    if (forced_off < 0) {
        const char *e = getenv("MXBENCH_BF16");
        forced_off = e && strcmp(e, "emulate") == 0;
    }
#if HAVE_BF16_KERNELS
    return !forced_off && __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

const char *mx_cpu_amp_kernels(mx_dtype t) { return t == MX_BF16 && mx_cpu_bf16_native() ? "avx512_bf16" : "emulated"; }

#if HAVE_BF16_KERNELS

/* ---- packing. A panel is kp pairs x W dwords; columns (or rows) x >= width are zeros. */

/* 16 f32 pairs (lo at k = 2p, hi at 2p + 1) to 16 dwords of two bf16. */
TARGET static inline __m512i pair16(__m512 lo, __m512 hi)
{
    const __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
    const __m512i h = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
    return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

static inline __mmask16 first(int n) { return n >= 16 ? 0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* Element (k, x) at src[k * ld + x]: x is contiguous, so each pair interleaves two rows. */
TARGET static void pack_rows(uint32_t *dst, int W, const float *src, int ld, int kc, int width)
{
    const int kp = (kc + 1) / 2;
    for (int p = 0; p < kp; p++) {
        const float *r0 = src + (size_t)2 * p * ld, *r1 = r0 + ld;
        const int odd_end = 2 * p + 1 >= kc; /* the pair's second row is past k: zeros */
        for (int g = 0; g < W; g += 16) {
            const __mmask16 in = first(width - g), out = first(W - g);
            const __m512 lo = _mm512_maskz_loadu_ps(in, r0 + g);
            const __m512 hi = odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(in, r1 + g);
            _mm512_mask_storeu_epi32(dst + (size_t)p * W + g, out, pair16(lo, hi));
        }
    }
}

/* out[j] = dword j of every r[i]: a 16 x 16 transpose in three rounds of shuffles. */
TARGET static void transpose16(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + c], lane L: rows 4i..4i+3 of column 4L + c */
    for (int i = 0; i < 4; i++) {
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* column 4L + c gathers lane L of u[c], u[4 + c], u[8 + c], u[12 + c] */
    for (int c = 0; c < 4; c++) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
        const __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        const __m512i w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
    }
}

/* Element (k, x) at src[x * ld + k]: k is contiguous, so a row of 32 values is 16 pairs and
 * a block of 16 rows x 16 pairs is transposed in registers. */
TARGET static void pack_kcontig(uint32_t *dst, int W, const float *src, int ld, int kc, int width)
{
    const int kp = (kc + 1) / 2;
    for (int g = 0; g < W; g += 16) {
        const __mmask16 out = first(W - g);
        for (int p0 = 0; p0 < kp; p0 += 16) {
            const int k0 = 2 * p0;
            const __mmask16 m0 = first(kc - k0), m1 = first(kc - k0 - 16);
            __m512i r[16];
            for (int i = 0; i < 16; i++) {
                if (g + i >= width) {
                    r[i] = _mm512_setzero_si512();
                    continue;
                }
                const float *row = src + (size_t)(g + i) * ld + k0;
                const __m512 a = _mm512_maskz_loadu_ps(m0, row), b = _mm512_maskz_loadu_ps(m1, row + 16);
                r[i] = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* bf16 of k0 .. k0+31 in order */
            }
            transpose16(r);
            const int np = kp - p0 < 16 ? kp - p0 : 16;
            for (int q = 0; q < np; q++) _mm512_mask_storeu_epi32(dst + (size_t)(p0 + q) * W + g, out, r[q]);
        }
    }
}

/* ---- the micro-kernel: C[mr x nr] (ldc) = alpha * A panel . B panel + beta * C, or += when
 * acc_c (a later k block); beta == 0 does not read C. */

#define ROW(i)                                                                                                  \
    do {                                                                                                        \
        const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);                                             \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, ai, b0);                                                            \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, ai, b1);                                                            \
        c##i##2 = _mm512_dpbf16_ps(c##i##2, ai, b2);                                                            \
    } while (0)
#define ZERO(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0
#define SAVE(i)                                                                                                 \
    do {                                                                                                        \
        _mm512_storeu_ps(acc + (i) * NR, c##i##0);                                                              \
        _mm512_storeu_ps(acc + (i) * NR + 16, c##i##1);                                                         \
        _mm512_storeu_ps(acc + (i) * NR + 32, c##i##2);                                                         \
    } while (0)

TARGET static void kernel(int kp, const uint32_t *a, const uint32_t *b, float *acc)
{
    ZERO(0); ZERO(1); ZERO(2); ZERO(3); ZERO(4); ZERO(5); ZERO(6); ZERO(7);
    for (int p = 0; p < kp; p++, a += MR, b += NR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16),
                       b2 = (__m512bh)_mm512_loadu_si512(b + 32);
        ROW(0); ROW(1); ROW(2); ROW(3); ROW(4); ROW(5); ROW(6); ROW(7);
    }
    SAVE(0); SAVE(1); SAVE(2); SAVE(3); SAVE(4); SAVE(5); SAVE(6); SAVE(7);
}

/* C from the tile's sums: the same fused operations as the test's scalar reference. */
TARGET static void store_tile(const float *acc, int mr, int nr, float *c, int ldc, float alpha, float beta, int acc_c)
{
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int i = 0; i < mr; i++)
        for (int g = 0; g < nr; g += 16) {
            const __mmask16 m = first(nr - g);
            float *ci = c + (size_t)i * ldc + g;
            const __m512 s = _mm512_loadu_ps(acc + i * NR + g);
            __m512 v;
            if (acc_c) v = _mm512_fmadd_ps(va, s, _mm512_maskz_loadu_ps(m, ci));
            else if (beta == 0) v = _mm512_mul_ps(va, s);
            else v = _mm512_fmadd_ps(va, s, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, ci)));
            _mm512_mask_storeu_ps(ci, m, v);
        }
}

typedef struct {
    int ta, tb;
    float alpha, beta;
    const float *a, *b;
    int lda, ldb, ldc;
    float *c;
} gemm_args;

/* The [i0, i0 + m) x [j0, j0 + n) part of C, on this thread's packing buffers. */
TARGET static int gemm_part(const gemm_args *g, int i0, int m, int j0, int n, int k)
{
    uint32_t *ap = mx_cpu_thread_buffer(MX_THREAD_BUF_BF16_A, sizeof(uint32_t) * MC * (KC / 2));
    uint32_t *bp = mx_cpu_thread_buffer(MX_THREAD_BUF_BF16_B, sizeof(uint32_t) * NC * (KC / 2));
    if (!ap || !bp) return MX_ENOMEM;
    float acc[MR * NR] __attribute__((aligned(64)));
    for (int jc = j0; jc < j0 + n; jc += NC) {
        const int nc = j0 + n - jc < NC ? j0 + n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = k - pc < KC ? k - pc : KC, kp = (kc + 1) / 2;
            for (int jr = 0; jr < nc; jr += NR) {
                uint32_t *dst = bp + (size_t)(jr / NR) * kp * NR;
                const int w = nc - jr < NR ? nc - jr : NR;
                if (g->tb) pack_kcontig(dst, NR, g->b + (size_t)(jc + jr) * g->ldb + pc, g->ldb, kc, w);
                else pack_rows(dst, NR, g->b + (size_t)pc * g->ldb + jc + jr, g->ldb, kc, w);
            }
            for (int ic = i0; ic < i0 + m; ic += MC) {
                const int mc = i0 + m - ic < MC ? i0 + m - ic : MC;
                for (int ir = 0; ir < mc; ir += MR) {
                    uint32_t *dst = ap + (size_t)(ir / MR) * kp * MR;
                    const int h = mc - ir < MR ? mc - ir : MR;
                    if (g->ta) pack_rows(dst, MR, g->a + (size_t)pc * g->lda + ic + ir, g->lda, kc, h);
                    else pack_kcontig(dst, MR, g->a + (size_t)(ic + ir) * g->lda + pc, g->lda, kc, h);
                }
                for (int jr = 0; jr < nc; jr += NR)
                    for (int ir = 0; ir < mc; ir += MR) {
                        kernel(kp, ap + (size_t)(ir / MR) * kp * MR, bp + (size_t)(jr / NR) * kp * NR, acc);
                        store_tile(acc, mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR,
                                   g->c + (size_t)(ic + ir) * g->ldc + jc + jr, g->ldc, g->alpha, g->beta, pc > 0);
                    }
            }
        }
    }
    return MX_OK;
}

#endif /* HAVE_BF16_KERNELS */

/* k = 0: C = beta * C, as BLAS defines it (no product to accumulate). */
static void scale_c(int m, int n, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) c[(size_t)i * ldc + j] = beta == 0 ? 0.0f : beta * c[(size_t)i * ldc + j];
}

void mx_cpu_gemm_bf16(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
#if HAVE_BF16_KERNELS
    const gemm_args g = {ta, tb, alpha, beta, a, b, lda, ldb, ldc, c};
    /* Threads take column ranges of whole panels where C is wide enough, else row ranges;
     * each packs its own operands (A again per thread: small beside its share of the work). */
    int T = be->nthreads > 1 && (double)m * n * k >= 1e6 ? be->nthreads : 1;
    const int by_cols = n >= T * NR * 2;
    if (!by_cols && m < T * MR) T = 1;
    int rc = MX_OK;
#pragma omp parallel num_threads(T) reduction(min : rc)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int units = by_cols ? (n + NR - 1) / NR : (m + MR - 1) / MR, w = by_cols ? NR : MR;
        const int lo = units * t / nt * w, hi0 = units * (t + 1) / nt * w, len = by_cols ? n : m;
        const int hi = hi0 < len ? hi0 : len;
        if (lo < hi) rc = by_cols ? gemm_part(&g, 0, m, lo, hi - lo, k) : gemm_part(&g, lo, hi - lo, 0, n, k);
    }
    if (rc != MX_OK)
        mx_backend_fail(be, rc, "gemm (bf16): no memory for the packing buffers of a %dx%dx%d product", m, n, k);
#else
    mx_backend_fail(be, MX_EUNSUPPORTED, "gemm (bf16): no bf16 kernels in this build");
#endif
}
