/* Batch norm, with or without a relu after it, on activations in oneDNN's nChw16c layout (per
 * sample, per block of 16 channels, each pixel's 16 channels side by side), for a residual
 * block's main branch run in that layout (engine/cpu/res_branch.c). The input is f32 nChw16c (a
 * convolution's output); the output is bf16 nChw16c (what the next convolution reads) or f32
 * NCHW (the branch's end, which the layers around read), written through 16x16 transposes.
 * Backward the gradient of the output comes f32 in nChw16c or in NCHW (read through the same
 * transposes), and the gradient of the input goes out as bf16 nChw16c.
 *
 * The values are engine/cpu/batchnorm.c's, bit for bit: each channel's sums take the same values in
 * the same order (pixel p of a row into f32 lane p % 16 while p is in the row's whole
 * vectors of 16, the rest into the double sum, the lanes flushed in lane order every
 * MX_BN_FLUSH vectors), here with the 16 lanes of 16 channels as 16 vectors; the per-channel
 * scalars come from the same functions (engine/cpu/kernels.h), and the bf16 roundings are the
 * reorders' (vcvtneps2bf16). One difference: the relu's mask in backward is read from the
 * bf16 output, so an output that is a positive f32 denormal (bf16 0) passes no gradient. */
#include "kernels.h"

#if MX_CPU_AVX512_KERNELS
#include "avx512.h"
#define TARGET MX_AVX512_TARGET
#define ALWAYS_INLINE inline __attribute__((always_inline))

enum { SUM, SQDEV };

/* Double sums of 16 channels: lo channels 0-7, hi 8-15. */
typedef struct {
    __m512d lo, hi;
} dsum;

TARGET static ALWAYS_INLINE void dsum_add(dsum *s, __m512 v)
{
    s->lo = _mm512_add_pd(s->lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    s->hi = _mm512_add_pd(s->hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

/* d * d in double, per channel (engine/cpu/batchnorm.c's (double)d * d of a float d) */
TARGET static ALWAYS_INLINE void dsum_add_prod(dsum *s, __m512 a, __m512 b)
{
    const __m512d alo = _mm512_cvtps_pd(_mm512_castps512_ps256(a)), blo = _mm512_cvtps_pd(_mm512_castps512_ps256(b));
    const __m512d ahi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    const __m512d bhi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(b), 1)));
    s->lo = _mm512_add_pd(s->lo, _mm512_mul_pd(alo, blo));
    s->hi = _mm512_add_pd(s->hi, _mm512_mul_pd(ahi, bhi));
}

/* The lanes (acc[l]: pixel lane l of 16 channels) into s in lane order, and zeroed. */
TARGET static ALWAYS_INLINE void flush(__m512 *acc, dsum *s)
{
    dsum t = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int l = 0; l < 16; l++) dsum_add(&t, acc[l]), acc[l] = _mm512_setzero_ps();
    s->lo = _mm512_add_pd(s->lo, t.lo);
    s->hi = _mm512_add_pd(s->hi, t.hi);
}

/* Sum (SUM) or squared deviations from mu (SQDEV) of one block of 16 channels: sample i's
 * block at x + i * ss, hw pixels. */
TARGET static ALWAYS_INLINE dsum block_sum(const float *x, int n, size_t ss, int hw, __m512 mu, int kind)
{
    __m512 acc[16];
    for (int l = 0; l < 16; l++) acc[l] = _mm512_setzero_ps();
    dsum s = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    const int full = hw - hw % 16;
    int since = 0;
    for (int i = 0; i < n; i++) {
        const float *r = x + i * ss;
        for (int p = 0; p < full; p += 16)
            for (int l = 0; l < 16; l++) {
                const __m512 v = _mm512_loadu_ps(r + (size_t)(p + l) * 16);
                if (kind == SUM) {
                    acc[l] = _mm512_add_ps(acc[l], v);
                } else {
                    const __m512 d = _mm512_sub_ps(v, mu);
                    acc[l] = _mm512_add_ps(acc[l], _mm512_mul_ps(d, d));
                }
            }
        for (int p = full; p < hw; p++) {
            const __m512 v = _mm512_loadu_ps(r + (size_t)p * 16);
            if (kind == SUM) dsum_add(&s, v);
            else dsum_add_prod(&s, _mm512_sub_ps(v, mu), _mm512_sub_ps(v, mu));
        }
        if (mx_bn_flush_due(&since, full / 16)) flush(acc, &s);
    }
    flush(acc, &s);
    return s;
}

/* The relu's gradient: g where the bf16 output m (16 values) is above 0, else 0. */
TARGET static ALWAYS_INLINE __m512 masked(__m512 g, const uint16_t *m)
{
    const __m512 y =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)m)), 16));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ), g);
}

/* The gradient of pixels [p, p + cnt) of one sample's block of 16 channels: g[l] for pixel
 * p + l. nchw: from the planes of an NCHW tensor (the block's first plane at dy, hw apart),
 * through a transpose; else from nChw16c (the block's pixels at dy). */
TARGET static ALWAYS_INLINE void grad_tile(__m512 *g, const float *dy, int hw, int p, int cnt, int nchw)
{
    if (nchw) {
        const __mmask16 m = cnt >= 16 ? 0xffff : (__mmask16)((1u << cnt) - 1);
        for (int k = 0; k < 16; k++) g[k] = _mm512_maskz_loadu_ps(m, dy + (size_t)k * hw + p);
        mx_transpose16x16_ps(g);
    } else {
        for (int l = 0; l < cnt; l++) g[l] = _mm512_loadu_ps(dy + (size_t)(p + l) * 16);
    }
}

/* The sums of the (relu-masked) gradient and of it times (x - mu) over one block, as
 * block_sum; dy and m (the relu's bf16 output) at the block, x in nChw16c. */
TARGET static ALWAYS_INLINE void block_grad_sums(const float *dy, const float *x, const uint16_t *m, int n, size_t ss,
                                                 int hw, __m512 mu, int relu, int nchw, dsum *sdy, dsum *sdyx)
{
    __m512 a[16], b[16], g[16];
    for (int l = 0; l < 16; l++) a[l] = b[l] = _mm512_setzero_ps();
    dsum s = {_mm512_setzero_pd(), _mm512_setzero_pd()}, t = s;
    const int full = hw - hw % 16;
    int since = 0;
    for (int i = 0; i < n; i++) {
        const float *r = x + i * ss;
        const uint16_t *mm = relu ? m + i * ss : NULL;
        for (int p = 0; p < hw; p += 16) {
            const int cnt = hw - p < 16 ? hw - p : 16;
            grad_tile(g, dy + i * ss, hw, p, cnt, nchw);
            for (int l = 0; l < cnt; l++) {
                const size_t o = (size_t)(p + l) * 16;
                const __m512 gv = relu ? masked(g[l], mm + o) : g[l];
                const __m512 xm = _mm512_sub_ps(_mm512_loadu_ps(r + o), mu);
                if (p < full) {
                    a[l] = _mm512_add_ps(a[l], gv);
                    b[l] = _mm512_add_ps(b[l], _mm512_mul_ps(gv, xm));
                } else {
                    dsum_add(&s, gv);
                    dsum_add_prod(&t, gv, xm);
                }
            }
        }
        if (mx_bn_flush_due(&since, full / 16)) flush(a, &s), flush(b, &t);
    }
    flush(a, &s), flush(b, &t);
    *sdy = s, *sdyx = t;
}

TARGET static ALWAYS_INLINE void store16d(double *d, dsum s)
{
    _mm512_storeu_pd(d, s.lo);
    _mm512_storeu_pd(d + 8, s.hi);
}

/* One block of 16 channels (blk) of the forward: out bf16 nChw16c, or f32 NCHW (nchw). */
TARGET static ALWAYS_INLINE void forward_block(int blk, int n, int c, int hw, void *out, float *mean, float *invstd,
                                               float *run_mean, float *run_var, const float *in, const float *gamma,
                                               const float *beta, float eps, float momentum, int relu, int nchw)
{
    const double count = (double)n * hw;
    const size_t ss = (size_t)c * hw, at = (size_t)blk * hw * 16; /* one sample further; the block */
    const float *x = in + at;
    double s[16], q[16];
    float mu[16], a[16], b[16];
    store16d(s, block_sum(x, n, ss, hw, _mm512_setzero_ps(), SUM));
    for (int k = 0; k < 16; k++) mu[k] = (float)(s[k] / count);
    store16d(q, block_sum(x, n, ss, hw, _mm512_loadu_ps(mu), SQDEV));
    for (int k = 0; k < 16; k++) {
        const int j = blk * 16 + k;
        mx_bn_forward_scalars(s[k] / count, q[k] / count, count, gamma[j], beta[j], eps, momentum, &mean[j], &invstd[j],
                              &run_mean[j], &run_var[j], &a[k], &b[k]);
    }
    const __m512 va = _mm512_loadu_ps(a), vb = _mm512_loadu_ps(b);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p += 16) {
            const int cnt = hw - p < 16 ? hw - p : 16;
            __m512 y[16];
            for (int l = 0; l < 16; l++) {
                const size_t o = i * ss + at + (size_t)(p + l) * 16;
                const __m512 v =
                    l < cnt ? _mm512_add_ps(_mm512_mul_ps(va, _mm512_loadu_ps(in + o)), vb) : _mm512_setzero_ps();
                y[l] = relu ? _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v) : v;
                if (!nchw && l < cnt)
                    _mm256_storeu_si256((__m256i *)((uint16_t *)out + o), (__m256i)_mm512_cvtneps_pbh(y[l]));
            }
            if (!nchw) continue;
            mx_transpose16x16_ps(y); /* y[k]: channel k's pixels [p, p + cnt) */
            const __mmask16 m = cnt >= 16 ? 0xffff : (__mmask16)((1u << cnt) - 1);
            for (int k = 0; k < 16; k++)
                _mm512_mask_storeu_ps((float *)out + i * ss + at + (size_t)k * hw + p, m, y[k]);
        }
}

/* One block of 16 channels (blk) of the backward: dout f32 nChw16c, or NCHW (nchw); out (the
 * relu's bf16 output) read with relu only. */
TARGET static ALWAYS_INLINE void backward_block(int blk, int n, int c, int hw, uint16_t *din, float *dgamma,
                                                float *dbeta, const float *dout, const float *in, const uint16_t *out,
                                                const float *mean, const float *invstd, const float *gamma, int relu,
                                                int nchw)
{
    const double count = (double)n * hw;
    const size_t ss = (size_t)c * hw, at = (size_t)blk * hw * 16;
    const __m512 mu = _mm512_loadu_ps(mean + blk * 16);
    dsum vdy, vdyx;
    block_grad_sums(dout + at, in + at, relu ? out + at : NULL, n, ss, hw, mu, relu, nchw, &vdy, &vdyx);
    double sdy[16], sdyx[16];
    float k[16], mdy[16], mdyx[16];
    store16d(sdy, vdy);
    store16d(sdyx, vdyx);
    for (int l = 0; l < 16; l++) {
        const int j = blk * 16 + l;
        mx_bn_backward_scalars(sdy[l], sdyx[l], count, gamma[j], invstd[j], &dgamma[j], &dbeta[j], &k[l], &mdy[l],
                               &mdyx[l]);
    }
    const __m512 vk = _mm512_loadu_ps(k), vmdy = _mm512_loadu_ps(mdy), vmdyx = _mm512_loadu_ps(mdyx);
    __m512 g[16];
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p += 16) {
            const int cnt = hw - p < 16 ? hw - p : 16;
            grad_tile(g, dout + i * ss + at, hw, p, cnt, nchw); /* the block's offset in both layouts */
            for (int l = 0; l < cnt; l++) {
                const size_t o = i * ss + at + (size_t)(p + l) * 16;
                const __m512 gv = relu ? masked(g[l], out + o) : g[l];
                const __m512 xm = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(in + o), mu), vmdyx);
                const __m512 d = _mm512_mul_ps(vk, _mm512_sub_ps(_mm512_sub_ps(gv, vmdy), xm));
                _mm256_storeu_si256((__m256i *)(din + o), (__m256i)_mm512_cvtneps_pbh(d));
            }
        }
}

/* The two kinds a residual block's branch runs (MX_BN16_*), each its own compiled copy. */
TARGET static void fwd_relu(int blk, int n, int c, int hw, void *out, float *mean, float *invstd, float *rm, float *rv,
                            const float *in, const float *g, const float *b, float eps, float mom)
{
    forward_block(blk, n, c, hw, out, mean, invstd, rm, rv, in, g, b, eps, mom, 1, 0);
}
TARGET static void fwd_nchw(int blk, int n, int c, int hw, void *out, float *mean, float *invstd, float *rm, float *rv,
                            const float *in, const float *g, const float *b, float eps, float mom)
{
    forward_block(blk, n, c, hw, out, mean, invstd, rm, rv, in, g, b, eps, mom, 0, 1);
}
TARGET static void bwd_relu(int blk, int n, int c, int hw, uint16_t *din, float *dg, float *db, const float *dout,
                            const float *in, const uint16_t *out, const float *mean, const float *invstd,
                            const float *g)
{
    backward_block(blk, n, c, hw, din, dg, db, dout, in, out, mean, invstd, g, 1, 0);
}
TARGET static void bwd_nchw(int blk, int n, int c, int hw, uint16_t *din, float *dg, float *db, const float *dout,
                            const float *in, const uint16_t *out, const float *mean, const float *invstd,
                            const float *g)
{
    backward_block(blk, n, c, hw, din, dg, db, dout, in, out, mean, invstd, g, 0, 1);
}
#endif

int mx_cpu_bn_c16_forward(mx_backend *be, int n, int c, int hw, int kind, void *out, float *mean, float *invstd,
                          float *run_mean, float *run_var, const float *in, const float *gamma, const float *beta,
                          float eps, float momentum)
{
#if MX_CPU_AVX512_KERNELS
    if (c % 16 || !mx_cpu_bf16_native()) return 0;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int blk = 0; blk < c / 16; blk++)
        (kind == MX_BN16_INNER ? fwd_relu : fwd_nchw)(blk, n, c, hw, out, mean, invstd, run_mean, run_var, in, gamma,
                                                      beta, eps, momentum);
    return 1;
#else
    return 0;
#endif
}

int mx_cpu_bn_c16_backward(mx_backend *be, int n, int c, int hw, int kind, uint16_t *din, float *dgamma, float *dbeta,
                           const float *dout, const float *in, const uint16_t *out, const float *mean,
                           const float *invstd, const float *gamma)
{
#if MX_CPU_AVX512_KERNELS
    if (c % 16 || !mx_cpu_bf16_native()) return 0;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int blk = 0; blk < c / 16; blk++)
        (kind == MX_BN16_INNER ? bwd_relu : bwd_nchw)(blk, n, c, hw, din, dgamma, dbeta, dout, in, out, mean, invstd,
                                                      gamma);
    return 1;
#else
    return 0;
#endif
}
