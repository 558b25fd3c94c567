/* The products of attention's tiles in AVX-512 registers (attention_tiles.h). Each right-hand
 * vector is loaded once and pinned to a register by an empty asm statement (IN_REGS): without
 * it GCC folds a load into each of its four multiply-adds, intrinsics or not. */
#include "attention_tiles.h"
#include "kernels.h"

#if MX_CPU_AVX512_KERNELS
#include "avx512.h"

#define IN_REGS(a, b, c, d) __asm__("" : "+v"(a), "+v"(b), "+v"(c), "+v"(d))
#define load_ps _mm512_loadu_ps

/* Four rows of four vectors: c##r##v += x##r * b##v */
#define ROW_FMA(r)                                                                                              \
    do {                                                                                                        \
        c##r##0 = _mm512_fmadd_ps(x##r, b0, c##r##0);                                                           \
        c##r##1 = _mm512_fmadd_ps(x##r, b1, c##r##1);                                                           \
        c##r##2 = _mm512_fmadd_ps(x##r, b2, c##r##2);                                                           \
        c##r##3 = _mm512_fmadd_ps(x##r, b3, c##r##3);                                                           \
    } while (0)
#define ROW_STORE(r, dst)                                                                                       \
    do {                                                                                                        \
        _mm512_storeu_ps((dst), c##r##0);                                                                       \
        _mm512_storeu_ps((dst) + 16, c##r##1);                                                                  \
        _mm512_storeu_ps((dst) + 32, c##r##2);                                                                  \
        _mm512_storeu_ps((dst) + 48, c##r##3);                                                                  \
    } while (0)
#define ROW_LOAD(r, src)                                                                                        \
    __m512 c##r##0 = _mm512_loadu_ps(src), c##r##1 = _mm512_loadu_ps((src) + 16);                               \
    __m512 c##r##2 = _mm512_loadu_ps((src) + 32), c##r##3 = _mm512_loadu_ps((src) + 48)

MX_AVX512_TARGET void mx_att_tile_product_f32(float *restrict s, const float *restrict a, const float *restrict bt,
                                              size_t ldb, int hs)
{
    for (int r = 0; r < MX_ATT_BQ; r += 4) {
        const float *a0 = a + (size_t)r * hs, *a1 = a0 + hs, *a2 = a1 + hs, *a3 = a2 + hs;
        const __m512 z = _mm512_setzero_ps();
        __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        __m512 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
        const float *b = bt;
        for (int d = 0; d < hs; d++, b += ldb) {
            __m512 b0 = load_ps(b), b1 = load_ps(b + 16), b2 = load_ps(b + 32), b3 = load_ps(b + 48);
            IN_REGS(b0, b1, b2, b3);
            const __m512 x0 = _mm512_set1_ps(a0[d]), x1 = _mm512_set1_ps(a1[d]);
            const __m512 x2 = _mm512_set1_ps(a2[d]), x3 = _mm512_set1_ps(a3[d]);
            ROW_FMA(0);
            ROW_FMA(1);
            ROW_FMA(2);
            ROW_FMA(3);
        }
        float *s0 = s + (size_t)r * MX_ATT_BK;
        ROW_STORE(0, s0);
        ROW_STORE(1, s0 + MX_ATT_BK);
        ROW_STORE(2, s0 + 2 * MX_ATT_BK);
        ROW_STORE(3, s0 + 3 * MX_ATT_BK);
    }
}

MX_AVX512_TARGET int mx_att_accumulate4_f32(float *restrict o, size_t ors, int hs, const float *restrict p,
                                            size_t prs, size_t pks, int ka, int kb, const float *restrict v,
                                            size_t vs)
{
    float *o0 = o, *o1 = o0 + ors, *o2 = o1 + ors, *o3 = o2 + ors;
    const float *p0 = p, *p1 = p0 + prs, *p2 = p1 + prs, *p3 = p2 + prs;
    int d = 0;
    for (; d + 64 <= hs; d += 64) {
        ROW_LOAD(0, o0 + d);
        ROW_LOAD(1, o1 + d);
        ROW_LOAD(2, o2 + d);
        ROW_LOAD(3, o3 + d);
        for (int k = ka; k < kb; k++) {
            const float *vr = v + (size_t)k * vs + d;
            __m512 b0 = load_ps(vr), b1 = load_ps(vr + 16), b2 = load_ps(vr + 32), b3 = load_ps(vr + 48);
            IN_REGS(b0, b1, b2, b3);
            const size_t pk = (size_t)k * pks;
            const __m512 x0 = _mm512_set1_ps(p0[pk]), x1 = _mm512_set1_ps(p1[pk]);
            const __m512 x2 = _mm512_set1_ps(p2[pk]), x3 = _mm512_set1_ps(p3[pk]);
            ROW_FMA(0);
            ROW_FMA(1);
            ROW_FMA(2);
            ROW_FMA(3);
        }
        ROW_STORE(0, o0 + d);
        ROW_STORE(1, o1 + d);
        ROW_STORE(2, o2 + d);
        ROW_STORE(3, o3 + d);
    }
    return d;
}

/* ---- bf16: words of two bf16 values, vdpbf16ps */

#define ROW_DP(r)                                                                                               \
    do {                                                                                                        \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, x##r, (__m512bh)b0);                                              \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, x##r, (__m512bh)b1);                                              \
        c##r##2 = _mm512_dpbf16_ps(c##r##2, x##r, (__m512bh)b2);                                              \
        c##r##3 = _mm512_dpbf16_ps(c##r##3, x##r, (__m512bh)b3);                                              \
    } while (0)
#define WORD(x) ((__m512bh)_mm512_set1_epi32((int)(x)))
#define LOAD4(src)                                                                                              \
    __m512 b0 = load_ps((const float *)(src)), b1 = load_ps((const float *)(src) + 16);                         \
    __m512 b2 = load_ps((const float *)(src) + 32), b3 = load_ps((const float *)(src) + 48);                    \
    IN_REGS(b0, b1, b2, b3)

MX_AVX512_TARGET void mx_att_tile_product_bf16(float *restrict s, const uint32_t *restrict a,
                                               const uint32_t *restrict bt, size_t ldb, int hw, float scale)
{
    const __m512 sc = _mm512_set1_ps(scale);
    for (int r = 0; r < MX_ATT_BQ; r += 4) {
        const uint32_t *a0 = a + (size_t)r * hw, *a1 = a0 + hw, *a2 = a1 + hw, *a3 = a2 + hw;
        const __m512 z = _mm512_setzero_ps();
        __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        __m512 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
        const uint32_t *b = bt;
        for (int w = 0; w < hw; w++, b += ldb) {
            LOAD4(b);
            const __m512bh x0 = WORD(a0[w]), x1 = WORD(a1[w]), x2 = WORD(a2[w]), x3 = WORD(a3[w]);
            ROW_DP(0);
            ROW_DP(1);
            ROW_DP(2);
            ROW_DP(3);
        }
        c00 = _mm512_mul_ps(c00, sc), c01 = _mm512_mul_ps(c01, sc), c02 = _mm512_mul_ps(c02, sc);
        c03 = _mm512_mul_ps(c03, sc), c10 = _mm512_mul_ps(c10, sc), c11 = _mm512_mul_ps(c11, sc);
        c12 = _mm512_mul_ps(c12, sc), c13 = _mm512_mul_ps(c13, sc), c20 = _mm512_mul_ps(c20, sc);
        c21 = _mm512_mul_ps(c21, sc), c22 = _mm512_mul_ps(c22, sc), c23 = _mm512_mul_ps(c23, sc);
        c30 = _mm512_mul_ps(c30, sc), c31 = _mm512_mul_ps(c31, sc), c32 = _mm512_mul_ps(c32, sc);
        c33 = _mm512_mul_ps(c33, sc);
        float *s0 = s + (size_t)r * MX_ATT_BK;
        ROW_STORE(0, s0);
        ROW_STORE(1, s0 + MX_ATT_BK);
        ROW_STORE(2, s0 + 2 * MX_ATT_BK);
        ROW_STORE(3, s0 + 3 * MX_ATT_BK);
    }
}

MX_AVX512_TARGET void mx_att_accumulate4_bf16(float *const o[4], const uint32_t *const p[4], size_t pks, int wa,
                                              int wb, const uint32_t *v, size_t vs, int hs)
{
    for (int e = 0; e + 64 <= hs; e += 64) {
        ROW_LOAD(0, o[0] + e);
        ROW_LOAD(1, o[1] + e);
        ROW_LOAD(2, o[2] + e);
        ROW_LOAD(3, o[3] + e);
        for (int w = wa; w < wb; w++) {
            LOAD4(v + (size_t)w * vs + e);
            const size_t at = (size_t)w * pks;
            const __m512bh x0 = WORD(p[0][at]), x1 = WORD(p[1][at]), x2 = WORD(p[2][at]), x3 = WORD(p[3][at]);
            ROW_DP(0);
            ROW_DP(1);
            ROW_DP(2);
            ROW_DP(3);
        }
        ROW_STORE(0, o[0] + e);
        ROW_STORE(1, o[1] + e);
        ROW_STORE(2, o[2] + e);
        ROW_STORE(3, o[3] + e);
    }
    if (hs % 64) { /* the last 32 columns (heads of 32, as gpt-mini's), two vectors a row */
        const int e = hs - 32;
        __m512 c00 = _mm512_loadu_ps(o[0] + e), c01 = _mm512_loadu_ps(o[0] + e + 16);
        __m512 c10 = _mm512_loadu_ps(o[1] + e), c11 = _mm512_loadu_ps(o[1] + e + 16);
        __m512 c20 = _mm512_loadu_ps(o[2] + e), c21 = _mm512_loadu_ps(o[2] + e + 16);
        __m512 c30 = _mm512_loadu_ps(o[3] + e), c31 = _mm512_loadu_ps(o[3] + e + 16);
        for (int w = wa; w < wb; w++) {
            const float *vr = (const float *)v + (size_t)w * vs + e;
            __m512 b0 = load_ps(vr), b1 = load_ps(vr + 16), b2 = b0, b3 = b1;
            IN_REGS(b0, b1, b2, b3);
            const size_t at = (size_t)w * pks;
            const __m512bh x0 = WORD(p[0][at]), x1 = WORD(p[1][at]), x2 = WORD(p[2][at]), x3 = WORD(p[3][at]);
            c00 = _mm512_dpbf16_ps(c00, x0, (__m512bh)b0), c01 = _mm512_dpbf16_ps(c01, x0, (__m512bh)b1);
            c10 = _mm512_dpbf16_ps(c10, x1, (__m512bh)b0), c11 = _mm512_dpbf16_ps(c11, x1, (__m512bh)b1);
            c20 = _mm512_dpbf16_ps(c20, x2, (__m512bh)b0), c21 = _mm512_dpbf16_ps(c21, x2, (__m512bh)b1);
            c30 = _mm512_dpbf16_ps(c30, x3, (__m512bh)b0), c31 = _mm512_dpbf16_ps(c31, x3, (__m512bh)b1);
        }
        _mm512_storeu_ps(o[0] + e, c00), _mm512_storeu_ps(o[0] + e + 16, c01);
        _mm512_storeu_ps(o[1] + e, c10), _mm512_storeu_ps(o[1] + e + 16, c11);
        _mm512_storeu_ps(o[2] + e, c20), _mm512_storeu_ps(o[2] + e + 16, c21);
        _mm512_storeu_ps(o[3] + e, c30), _mm512_storeu_ps(o[3] + e + 16, c31);
    }
}

/* 16 f32 values rounded to bf16 (nearest even) in the low halves of 16 words */
MX_AVX512_TARGET static inline __m512i low_halves(__m512 x)
{
    return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x));
}

MX_AVX512_TARGET void mx_att_words_of_row(uint32_t *restrict dst, const float *restrict x, int n, float scale)
{
    const __m512 sc = _mm512_set1_ps(scale);
    for (int i = 0; i + 32 <= n; i += 32) {
        const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(x + i), sc),
                     hi = _mm512_mul_ps(_mm512_loadu_ps(x + i + 16), sc);
        _mm512_storeu_si512((void *)(dst + i / 2), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
}

MX_AVX512_TARGET void mx_att_words_of_rows(uint32_t *restrict dst, const float *r0, const float *r1, int n,
                                           float scale)
{
    const __m512 sc = _mm512_set1_ps(scale), z = _mm512_setzero_ps();
    for (int e = 0; e + 16 <= n; e += 16) {
        const __m512 a = r0 ? _mm512_mul_ps(_mm512_loadu_ps(r0 + e), sc) : z;
        const __m512 b = r1 ? _mm512_mul_ps(_mm512_loadu_ps(r1 + e), sc) : z;
        const __m512i w = _mm512_or_si512(low_halves(a), _mm512_slli_epi32(low_halves(b), 16));
        _mm512_storeu_si512((void *)(dst + e), w);
    }
}

MX_AVX512_TARGET void mx_att_turn_rows_bf16(uint32_t *restrict dst, size_t ldd, const float *restrict rows,
                                            size_t stride, int t, int nj, int hs)
{
    const __m512 z = _mm512_setzero_ps();
    for (int j0 = 0; j0 < nj; j0 += 16)
        for (int w0 = 0; w0 < hs / 2; w0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; i++) {
                const float *x = j0 + i < t ? rows + (size_t)(j0 + i) * stride + 2 * w0 : NULL;
                r[i] = x ? (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x)) : z;
            }
            mx_transpose16x16_ps(r);
            for (int i = 0; i < 16; i++) _mm512_storeu_ps((float *)dst + (size_t)(w0 + i) * ldd + j0, r[i]);
        }
}

#else /* no AVX-512 kernels: attention.c never calls these (mx_cpu_gemm_own() and mx_cpu_bf16_native() are 0) */

void mx_att_tile_product_f32(float *s, const float *a, const float *bt, size_t ldb, int hs)
{
    (void)s, (void)a, (void)bt, (void)ldb, (void)hs;
}

int mx_att_accumulate4_f32(float *o, size_t ors, int hs, const float *p, size_t prs, size_t pks, int ka, int kb,
                           const float *v, size_t vs)
{
    (void)o, (void)ors, (void)hs, (void)p, (void)prs, (void)pks, (void)ka, (void)kb, (void)v, (void)vs;
    return 0;
}

void mx_att_tile_product_bf16(float *s, const uint32_t *a, const uint32_t *bt, size_t ldb, int hw, float scale)
{
    (void)s, (void)a, (void)bt, (void)ldb, (void)hw, (void)scale;
}

void mx_att_accumulate4_bf16(float *const o[4], const uint32_t *const p[4], size_t pks, int wa, int wb,
                             const uint32_t *v, size_t vs, int hs)
{
    (void)o, (void)p, (void)pks, (void)wa, (void)wb, (void)v, (void)vs, (void)hs;
}

void mx_att_words_of_row(uint32_t *dst, const float *x, int n, float scale)
{
    (void)dst, (void)x, (void)n, (void)scale;
}

void mx_att_words_of_rows(uint32_t *dst, const float *r0, const float *r1, int n, float scale)
{
    (void)dst, (void)r0, (void)r1, (void)n, (void)scale;
}

void mx_att_turn_rows_bf16(uint32_t *dst, size_t ldd, const float *rows, size_t stride, int t, int nj, int hs)
{
    (void)dst, (void)ldd, (void)rows, (void)stride, (void)t, (void)nj, (void)hs;
}

#endif
