/* mxbench's own packed GEMMs on AVX-512, chosen at run time by cpuid:
 *  - f32 on FMA, in place of the BLAS's sgemm: Debian's OpenBLAS 0.3.21 runs its Haswell
 *    AVX2 kernels on CPUs newer than it knows, and this kernel is much faster on mxbench's
 *    GEMM shapes on the AVX-512 development machine (docs/performance.md, "Choices in the
 *    code");
 *  - bf16 operands with f32 sums on the CPU's bf16 dot products (AVX512_BF16's vdpbf16ps),
 *    for AMP bf16: what autocast does on a GPU, where the emulation multiplies the same bf16
 *    values in f32. The operands arrive as f32 and are rounded to bf16 (nearest even) while
 *    packed, so under AMP, whose operands are bf16 values already, the products are the
 *    emulation's exactly and only the order of the f32 additions differs.
 *
 * Blocking as BLIS and OpenBLAS do it: op(B) in blocks of KU x NC packed into panels of NR
 * columns (L2/L3), op(A) in blocks of MC x KU packed into panels of MR rows (L2), and an
 * MR x NR micro-kernel whose accumulators stay in registers. A packed element is 32 bits: an
 * f32 value, or for bf16 a pair (values at k = 2p and 2p + 1, low half first), which is the
 * operand vdpbf16ps multiplies pairwise; an odd k pads with a zero. Each element of C is
 * computed by one thread in a fixed order whatever the thread count.
 *
 * The kernels are compiled for AVX-512 with function attributes whatever the build's -march.
 * The kinds differ only in what a packed element holds and in the micro-kernel: one table
 * (gemm_kind) per kind. */
#include "kernels.h"
#include "engine/backend/switches.h"
#include "base/status.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HAVE_KERNELS MX_CPU_AVX512_KERNELS
#if HAVE_KERNELS
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#endif

#define MR 8     /* rows of the micro-kernel: 8 x 3 accumulators of 16 lanes */
#define NR 48    /* columns: three vectors */
#define KU 128   /* packed elements of k per block (MX_F32_KC, MX_BF16_KC values): the
                  * accumulators restart from 0 at each, as the tests' references do */
#define MC 96    /* rows of A per packed block: 96 x 128 elements = 48 KiB, in L2 */
#define NC 1536  /* columns of B per packed block: 768 KiB */

/* ---- which kernels run: cpuid, unless an environment variable or a test forces the
 * reference; cpuid and the variables are read once, not on every GEMM */
static int f32_off, bf16_off, bf16_mode, has_base, has_bf16, force_dnnl = -1;
static int dnnl_amx; /* oneDNN is built in and its kernels are AMX's (its ISA from cpuid, read once) */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    f32_off = mx_switch_value(MX_SWITCH_GEMM) == MX_SW_GEMM_BLAS;
    bf16_mode = mx_switch_value(MX_SWITCH_BF16);
    bf16_off = bf16_mode == MX_SW_BF16_EMULATE;
    dnnl_amx = mx_cpu_dnnl_available() && strcmp(mx_cpu_dnnl_isa(), "avx512_core_amx") == 0;
#if HAVE_KERNELS
    /* What both kinds' kernels are compiled for (TARGET), bf16 aside: every AVX-512 CPU from
     * Skylake-SP on has it; the f32 kernels hold no bf16 instruction. */
    has_base = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    has_bf16 = has_base && __builtin_cpu_supports("avx512bf16");
#endif
}

void mx_cpu_bf16_force_emulation(int on)
{
    pthread_once(&env_once, read_env);
    bf16_off = on != 0;
}

void mx_cpu_gemm_force_blas(int on)
{
    pthread_once(&env_once, read_env);
    f32_off = on != 0;
}

int mx_cpu_bf16_native(void)
{
    pthread_once(&env_once, read_env);
    return !bf16_off && has_bf16;
}

int mx_cpu_gemm_own(void)
{
    pthread_once(&env_once, read_env);
    return !f32_off && has_base;
}

void mx_cpu_gemm_force_dnnl(int on)
{
    pthread_once(&env_once, read_env);
    force_dnnl = on < 0 ? -1 : on != 0;
}

/* oneDNN's matmul where its kernels are AMX's (gemm_dnnl.c says why), unless the switch or a
 * test says otherwise; asked on every bf16 GEMM, so only flags read once (read_env). */
int mx_cpu_gemm_bf16_dnnl(void)
{
    if (!mx_cpu_bf16_native() || !mx_cpu_dnnl_available()) return 0;
    if (force_dnnl >= 0) return force_dnnl;
    if (bf16_mode == MX_SW_BF16_DNNL) return 1;
    return bf16_mode == MX_SW_BF16_NATIVE && dnnl_amx;
}

const char *mx_cpu_amp_kernels(mx_dtype t)
{
    if (t != MX_BF16 || !mx_cpu_bf16_native()) return "emulated";
    return mx_cpu_gemm_bf16_dnnl() && dnnl_amx ? "amx_bf16" : "avx512_bf16";
}

#if HAVE_KERNELS

/* ---- packing. A panel is ku elements of k x W columns (or rows); those >= width are zero.
 * pairs: bf16 pairs of k (ku = ceil(kc / 2)), else f32 values (ku = kc). */

/* 16 f32 pairs (lo at k = 2p, hi at 2p + 1) to 16 dwords of two bf16. */
TARGET static inline __m512i pair16(__m512 lo, __m512 hi)
{
    const __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
    const __m512i h = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
    return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

static inline __mmask16 first(int n) { return n >= 16 ? 0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* Element (k, x) at src[k * ld + x]: x is contiguous; a bf16 pair interleaves two rows. */
TARGET static void pack_rows(uint32_t *dst, int W, const float *src, int ld, int kc, int width, int pairs)
{
    const int ku = pairs ? (kc + 1) / 2 : kc;
    for (int p = 0; p < ku; p++) {
        const float *r0 = src + (size_t)(pairs ? 2 * p : p) * ld, *r1 = r0 + ld;
        const int odd_end = 2 * p + 1 >= kc; /* the pair's second row is past k: zeros */
        for (int g = 0; g < W; g += 16) {
            const __mmask16 in = first(width - g), out = first(W - g);
            const __m512 lo = _mm512_maskz_loadu_ps(in, r0 + g);
            __m512i v = _mm512_castps_si512(lo);
            if (pairs) v = pair16(lo, odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(in, r1 + g));
            _mm512_mask_storeu_epi32(dst + (size_t)p * W + g, out, v);
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

TARGET void mx_cpu_transpose16(const float *const rows[16], int ncols, const float *end, float out[16][16])
{
    /* whole rows where they may be read: masked loads are slow on this project's CPUs
     * (Winograd's 512-channel layers are faster without them: docs/performance.md, "Choices in
     * the code") */
    const __mmask16 m = first(ncols);
    __m512i r[16];
    for (int i = 0; i < 16; i++) {
        const int whole = ncols >= 16 || (end && rows[i] && end - rows[i] >= 16);
        r[i] = !rows[i] ? _mm512_setzero_si512()
               : whole  ? _mm512_castps_si512(_mm512_loadu_ps(rows[i]))
                        : _mm512_castps_si512(_mm512_maskz_loadu_ps(m, rows[i]));
    }
    transpose16(r);
    for (int j = 0; j < 16; j++) _mm512_storeu_si512(out[j], r[j]);
}

/* Element (k, x) at src[x * ld + k]: k is contiguous, so blocks of 16 rows x 16 elements (16
 * values, or 32 as bf16 pairs) are transposed in registers. */
TARGET static void pack_kcontig(uint32_t *dst, int W, const float *src, int ld, int kc, int width, int pairs)
{
    const int ku = pairs ? (kc + 1) / 2 : kc, per = pairs ? 2 : 1;
    for (int g = 0; g < W; g += 16) {
        const __mmask16 out = first(W - g);
        for (int p0 = 0; p0 < ku; p0 += 16) {
            const int k0 = per * p0;
            const __mmask16 m0 = first(kc - k0), m1 = first(kc - k0 - 16);
            __m512i r[16];
            for (int i = 0; i < 16; i++) {
                if (g + i >= width) {
                    r[i] = _mm512_setzero_si512();
                    continue;
                }
                const float *row = src + (size_t)(g + i) * ld + k0;
                const __m512 a = _mm512_maskz_loadu_ps(m0, row);
                /* bf16: the values k0 .. k0 + 31 in order, i.e. 16 pairs */
                r[i] = pairs ? (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, row + 16), a)
                             : _mm512_castps_si512(a);
            }
            transpose16(r);
            const int np = ku - p0 < 16 ? ku - p0 : 16;
            for (int q = 0; q < np; q++) _mm512_mask_storeu_epi32(dst + (size_t)(p0 + q) * W + g, out, r[q]);
        }
    }
}

/* ---- the micro-kernels: acc[MR][NR] = A panel . B panel over ku packed elements of k */

/* The kernels come in widths of NV = 1, 2 or 3 vectors of columns (16, 32, 48): a panel's
 * last columns take the narrowest that covers them. Small products have few columns (a
 * Winograd point's tiles: 16 for resnet18's 4x4 maps at batch 16), on which the 48-wide kernel
 * had spent two thirds of its multiplies on padding. NV is a constant in each kernel, so the
 * vectors it does not use compile away. */
#define ZERO(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0
#define SAVE(i)                                                                                                 \
    do {                                                                                                        \
        _mm512_storeu_ps(acc + (i) * NR, c##i##0);                                                              \
        if (NV > 1) _mm512_storeu_ps(acc + (i) * NR + 16, c##i##1);                                             \
        if (NV > 2) _mm512_storeu_ps(acc + (i) * NR + 32, c##i##2);                                             \
    } while (0)
#define ALL(X) X(0); X(1); X(2); X(3); X(4); X(5); X(6); X(7)

#define BF16_ROW(i)                                                                                             \
    do {                                                                                                        \
        const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);                                             \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, ai, (__m512bh)b0);                                                 \
        if (NV > 1) c##i##1 = _mm512_dpbf16_ps(c##i##1, ai, (__m512bh)b1);                                      \
        if (NV > 2) c##i##2 = _mm512_dpbf16_ps(c##i##2, ai, (__m512bh)b2);                                      \
    } while (0)

#define F32_ROW(i)                                                                                              \
    do {                                                                                                        \
        const __m512 ai = _mm512_castsi512_ps(_mm512_set1_epi32((int)a[i]));                                    \
        c##i##0 = _mm512_fmadd_ps(ai, _mm512_castsi512_ps(b0), c##i##0);                                        \
        if (NV > 1) c##i##1 = _mm512_fmadd_ps(ai, _mm512_castsi512_ps(b1), c##i##1);                            \
        if (NV > 2) c##i##2 = _mm512_fmadd_ps(ai, _mm512_castsi512_ps(b2), c##i##2);                            \
    } while (0)

/* A whole tile with alpha 1 goes straight to C: C = sums, or C + sums (add), the same
 * operations as store_tile's for alpha 1, without the round trip through acc (which had cost
 * a visible share of resnet18's step on the Winograd products, whose k is 64 to 512:
 * docs/performance.md, "Choices in the code"). */
#define DIRECT_VEC(i, v)                                                                                        \
    do {                                                                                                        \
        float *cv = c + (size_t)(i) * ldc + 16 * (v);                                                           \
        if (add) c##i##v = _mm512_add_ps(c##i##v, _mm512_loadu_ps(cv));                                         \
        _mm512_storeu_ps(cv, c##i##v);                                                                          \
    } while (0)
#define DIRECT(i)                                                                                               \
    do {                                                                                                        \
        DIRECT_VEC(i, 0);                                                                                       \
        if (NV > 1) DIRECT_VEC(i, 1);                                                                           \
        if (NV > 2) DIRECT_VEC(i, 2);                                                                           \
    } while (0)

/* The micro-kernel's sums: into acc (c NULL), or straight into a whole tile of C */
#define KERNEL(name, ROWOP, NVEC)                                                                               \
    TARGET static void name(int ku, const uint32_t *a, const uint32_t *b, size_t ldb, float *acc, float *c,    \
                            int ldc, int add)                                                                   \
    {                                                                                                           \
        const int NV = NVEC;                                                                                    \
        ALL(ZERO);                                                                                              \
        for (int p = 0; p < ku; p++, a += MR, b += ldb) {                                                       \
            const __m512i zero = _mm512_setzero_si512(), b0 = _mm512_loadu_si512(b);                            \
            const __m512i b1 = NV > 1 ? _mm512_loadu_si512(b + 16) : zero;                                      \
            const __m512i b2 = NV > 2 ? _mm512_loadu_si512(b + 32) : zero;                                      \
            ALL(ROWOP);                                                                                         \
        }                                                                                                       \
        if (c) {                                                                                                \
            ALL(DIRECT);                                                                                        \
        } else {                                                                                                \
            ALL(SAVE);                                                                                          \
        }                                                                                                       \
    }
KERNEL(kernel_bf16_1, BF16_ROW, 1)
KERNEL(kernel_bf16_2, BF16_ROW, 2)
KERNEL(kernel_bf16, BF16_ROW, 3)
KERNEL(kernel_f32_1, F32_ROW, 1)
KERNEL(kernel_f32_2, F32_ROW, 2)
KERNEL(kernel_f32, F32_ROW, 3)

typedef void (*micro_kernel)(int ku, const uint32_t *a, const uint32_t *b, size_t ldb, float *acc, float *c, int ldc,
                             int add);
typedef struct {
    int pairs; /* a packed element holds two bf16 values of k, else one f32 */
    /* by width: kernel[nv - 1] computes 16 * nv columns. B's rows ldb elements apart: NR in a
     * packed panel, or B's own for f32 read in place */
    micro_kernel kernel[3];
} gemm_kind;

static const gemm_kind kind_f32 = {0, {kernel_f32_1, kernel_f32_2, kernel_f32}},
                       kind_bf16 = {1, {kernel_bf16_1, kernel_bf16_2, kernel_bf16}};

/* C from the tile's sums: the same fused operations as the tests' scalar references. */
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
    const gemm_kind *kind;
    int ta, tb;
    float alpha, beta;
    const float *a, *b;
    int lda, ldb, ldc;
    float *c;
    const uint32_t *packed_a; /* all of op(A) packed ahead (pack_a_all), or NULL: packed per block */
    int m;                    /* rows of all of C, for packed_a's layout */
} gemm_args;

/* Packed elements in k values: a block of KC values holds KU, the last one what remains. */
static size_t units(int k, int pairs)
{
    return pairs ? (size_t)(k / (2 * KU)) * KU + (size_t)(k % (2 * KU) + 1) / 2 : (size_t)k;
}

static int mr_pad(int m) { return (m + MR - 1) / MR * MR; }

/* op(A)'s rows [r0, r1) (multiples of MR), block of k after block, each block's panels of MR
 * rows in order: the panel of rows [R, R + MR) in block b (ku elements of k) starts at
 * b * mr_pad(m) * KU + R * ku. */
TARGET static void pack_a_all(uint32_t *dst, int pairs, int ta, int m, int k, const float *a, int lda, int r0, int r1)
{
    const int KC = pairs ? 2 * KU : KU;
    for (int pc = 0; pc < k; pc += KC) {
        const int kc = k - pc < KC ? k - pc : KC, ku = pairs ? (kc + 1) / 2 : kc;
        uint32_t *block = dst + (size_t)(pc / KC) * mr_pad(m) * KU;
        for (int r = r0; r < r1 && r < m; r += MR) {
            const int h = m - r < MR ? m - r : MR;
            if (ta) pack_rows(block + (size_t)r * ku, MR, a + (size_t)pc * lda + r, lda, kc, h, pairs);
            else pack_kcontig(block + (size_t)r * ku, MR, a + (size_t)r * lda + pc, lda, kc, h, pairs);
        }
    }
}

/* The [i0, i0 + m) x [j0, j0 + n) part of C, on this thread's packing buffers. */
TARGET static int gemm_part(const gemm_args *g, int i0, int m, int j0, int n, int k)
{
    uint32_t *ap = g->packed_a ? NULL : mx_cpu_thread_buffer(MX_THREAD_BUF_GEMM_A, sizeof(uint32_t) * MC * KU);
    uint32_t *bp = mx_cpu_thread_buffer(MX_THREAD_BUF_GEMM_B, sizeof(uint32_t) * NC * KU);
    if ((!ap && !g->packed_a) || !bp) return MX_ENOMEM;
    const int pairs = g->kind->pairs, KC = pairs ? 2 * KU : KU;
    float acc[MR * NR] __attribute__((aligned(64)));
    for (int jc = j0; jc < j0 + n; jc += NC) {
        const int nc = j0 + n - jc < NC ? j0 + n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = k - pc < KC ? k - pc : KC, ku = pairs ? (kc + 1) / 2 : kc;
            /* f32 B with rows of columns (a convolution's im2col columns) is read where it lies,
             * panels of whole vectors at least: packing it was a copy as long as the product's
             * read of it */
            const int in_place = !pairs && !g->tb;
            for (int jr = 0; jr < nc; jr += NR) {
                uint32_t *dst = bp + (size_t)(jr / NR) * ku * NR;
                const int w = nc - jr < NR ? nc - jr : NR;
                if (in_place && w % 16 == 0) continue;
                if (g->tb) pack_kcontig(dst, NR, g->b + (size_t)(jc + jr) * g->ldb + pc, g->ldb, kc, w, pairs);
                else pack_rows(dst, NR, g->b + (size_t)pc * g->ldb + jc + jr, g->ldb, kc, w, pairs);
            }
            for (int ic = i0; ic < i0 + m; ic += MC) {
                const int mc = i0 + m - ic < MC ? i0 + m - ic : MC;
                /* the block's panels: packed ahead (rows from ic on), or packed now */
                const uint32_t *apan =
                    g->packed_a ? g->packed_a + (size_t)(pc / KC) * mr_pad(g->m) * KU + (size_t)ic * ku : ap;
                for (int ir = 0; ir < mc && !g->packed_a; ir += MR) {
                    uint32_t *dst = ap + (size_t)(ir / MR) * ku * MR;
                    const int h = mc - ir < MR ? mc - ir : MR;
                    if (g->ta) pack_rows(dst, MR, g->a + (size_t)pc * g->lda + ic + ir, g->lda, kc, h, pairs);
                    else pack_kcontig(dst, MR, g->a + (size_t)(ic + ir) * g->lda + pc, g->lda, kc, h, pairs);
                }
                for (int jr = 0; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR, nv = (nr + 15) / 16, direct = in_place && nr % 16 == 0;
                    const micro_kernel kernel = g->kind->kernel[nv - 1];
                    const uint32_t *bpan = direct ? (const uint32_t *)(g->b + (size_t)pc * g->ldb + jc + jr)
                                                  : bp + (size_t)(jr / NR) * ku * NR;
                    const size_t ldb = direct ? (size_t)g->ldb : NR;
                    for (int ir = 0; ir < mc; ir += MR) {
                        const int mr = mc - ir < MR ? mc - ir : MR;
                        float *ct = g->c + (size_t)(ic + ir) * g->ldc + jc + jr;
                        const uint32_t *at = apan + (size_t)(ir / MR) * ku * MR;
                        /* store_tile's C = alpha s + beta C, or alpha s + C after the first block */
                        const int add = pc > 0 || g->beta == 1.0f;
                        if (mr == MR && nr == 16 * nv && g->alpha == 1.0f && (add || g->beta == 0.0f)) {
                            kernel(ku, at, bpan, ldb, NULL, ct, g->ldc, add);
                            continue;
                        }
                        kernel(ku, at, bpan, ldb, acc, NULL, 0, 0);
                        store_tile(acc, mr, nr, ct, g->ldc, g->alpha, g->beta, pc > 0);
                    }
                }
            }
        }
    }
    return MX_OK;
}

#endif /* HAVE_KERNELS */

/* k = 0: C = beta * C, as BLAS defines it (no product to accumulate). */
static void scale_c(int m, int n, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) c[(size_t)i * ldc + j] = beta == 0 ? 0.0f : beta * c[(size_t)i * ldc + j];
}

static void gemm(mx_backend *be, int bf16, const void *packed_a, int ta, int tb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
#if HAVE_KERNELS
    const gemm_args g = {bf16 ? &kind_bf16 : &kind_f32, ta, tb, alpha, beta, a, b, lda, ldb, ldc, c, packed_a, m};
    /* Threads take row ranges or column ranges of whole panels; each packs its own operands, so
     * the operand a split leaves whole is packed by every thread: op(A) for columns, op(B) for
     * rows (unless f32 B is read in place). Rows where each thread has a block of MC of them
     * and A is the larger operand or B is not packed, else columns where C is wide enough:
     * gpt-bench's linears (2048 rows, 384-1536 columns) had packed all of A on both threads
     * (docs/performance.md, "Choices in the code"). */
    int T = be->nthreads > 1 && (double)m * n * k >= 1e6 ? be->nthreads : 1;
    const int b_in_place = !bf16 && !tb, rows_first = m >= T * MC && (b_in_place || m >= n);
    const int by_cols = n >= T * NR * 2 && !rows_first;
    if (!by_cols && m < T * MR) T = 1;
    int rc = MX_OK;
    /* One thread: no parallel region. The convolutions call products on one thread from inside
     * their own teams (each thread on its samples, Winograd's 36 points), where each call had
     * opened a nested region of one thread (the gain on lenet's step measured within the noise:
     * docs/performance.md, "Choices in the code"). */
    if (T == 1) rc = gemm_part(&g, 0, m, 0, n, k);
    else
#pragma omp parallel num_threads(T) reduction(min : rc)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int units = by_cols ? (n + NR - 1) / NR : (m + MR - 1) / MR, w = by_cols ? NR : MR;
        const int lo = units * t / nt * w, hi0 = units * (t + 1) / nt * w, len = by_cols ? n : m;
        const int hi = hi0 < len ? hi0 : len;
        if (lo < hi) rc = by_cols ? gemm_part(&g, 0, m, lo, hi - lo, k) : gemm_part(&g, lo, hi - lo, 0, n, k);
    }
    if (rc != MX_OK)
        mx_backend_fail(be, rc, "gemm (%s): no memory for the packing buffers of a %dx%dx%d product",
                        bf16 ? "bf16" : "f32", m, n, k);
#else
    mx_backend_fail(be, MX_EUNSUPPORTED, "gemm (%s): no AVX-512 kernels in this build", bf16 ? "bf16" : "f32");
#endif
}

void mx_cpu_gemm_bf16(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    gemm(be, 1, NULL, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void mx_cpu_gemm_f32(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    gemm(be, 0, NULL, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int mx_cpu_gemm_kind(const mx_backend *be)
{
    if (be->math == MX_BF16 && mx_cpu_bf16_native())
        return mx_cpu_gemm_bf16_dnnl() ? MX_GEMM_DNNL_BF16 : MX_GEMM_OWN_BF16;
    return mx_cpu_gemm_own() ? MX_GEMM_OWN_F32 : MX_GEMM_BLAS;
}

size_t mx_cpu_gemm_packed_a_bytes(int kind, int m, int k)
{
    if ((kind != MX_GEMM_OWN_F32 && kind != MX_GEMM_OWN_BF16) || m <= 0 || k <= 0) return 0;
    return sizeof(uint32_t) * mr_pad(m) * units(k, kind == MX_GEMM_OWN_BF16);
}

size_t mx_cpu_gemm_packed_f32_at(int m, int k, int i, int kk)
{
    const int b = kk / KU, ku = k - b * KU < KU ? k - b * KU : KU;
    return (size_t)b * mr_pad(m) * KU + (size_t)(i / MR) * MR * ku + (size_t)(kk % KU) * MR + i % MR;
}

void mx_cpu_gemm_pack_a(int kind, int ta, int m, int k, const float *a, int lda, void *dst, int part, int parts)
{
#if HAVE_KERNELS
    /* share `part` of `parts`: whole panels of MR rows, which no other share writes */
    const int panels = (m + MR - 1) / MR, r0 = panels * part / parts * MR, r1 = panels * (part + 1) / parts * MR;
    if ((kind == MX_GEMM_OWN_F32 || kind == MX_GEMM_OWN_BF16) && k > 0 && r0 < m)
        pack_a_all(dst, kind == MX_GEMM_OWN_BF16, ta, m, k, a, lda, r0, r1);
#endif
}

void mx_cpu_gemm_packed(mx_backend *be, int kind, const void *packed_a, int tb, int m, int n, int k, float alpha,
                        const float *b, int ldb, float beta, float *c, int ldc)
{
    gemm(be, kind == MX_GEMM_OWN_BF16, packed_a, 0, tb, m, n, k, alpha, NULL, 0, b, ldb, beta, c, ldc);
}
