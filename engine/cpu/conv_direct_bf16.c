/* The direct convolution of a one-channel input (engine/cpu/conv_direct.c) on the CPU's bf16 dot
 * products (AVX512_BF16's vdpbf16ps), for AMP bf16 where mx_cpu_bf16_native(): the forward
 * and the weight gradient, lenet's first layer. Operands are rounded to bf16 as the own GEMM
 * packs them (under AMP they are bf16 values already) and each product pair is summed in f32,
 * as the GEMM's bf16 kernel does, so only the order of the f32 sums differs from the
 * emulation's f32 kernel.
 *
 * vdpbf16ps multiplies pairs: lane i adds a.lo * b.lo + a.hi * b.hi. A row of the input kept
 * as bf16 gives those pairs for free: the 16 dwords loaded from element e are elements
 * (e + 2i, e + 2i + 1). So
 *  - forward: a pair of kernel columns (kx, kx + 1) against the dwords loaded at ox + kx gives
 *    the outputs at even columns ox + 2i, loaded at ox + kx + 1 the odd ones; a tile is 32
 *    columns x OBB channels in two accumulators each, interleaved back when stored. 5x5
 *    kernels take 3 pairs a kernel row where the f32 kernel takes 5 taps, each on 32
 *    columns where it has 16;
 *  - weight gradient: pairs of output columns (ox, ox + 1) of the output gradient against the
 *    input's at ox + kx: each lane sums two products of the same weight.
 * Rows are zero-padded to whole tiles of 32 columns (lenet's 24 compute 32) in per-thread
 * planes. Threads split samples and sum their own weight gradients, added in thread order
 * (mx_cpu_add_thread_sums), so results depend on the thread count only. */
#include "kernels.h"
#include "base/status.h"

#include <omp.h>
#include <string.h>

#if MX_CPU_AVX512_KERNELS
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define TILE 32 /* output columns a tile: the even and odd lanes of two vectors */
#define OBB 10  /* output channels a forward tile: 20 accumulators */
#define GB 4    /* weight gradient: channels x kernel columns of accumulators */
#define GX 5

/* The planes a sample is copied into: rows of whole tiles and the kernel's reach past them. */
typedef struct {
    int tiles; /* tiles a row */
    int pw, ph; /* the input plane, zero-bordered: the padding around, zeros past the row */
    int gw;     /* the output gradient's rows, zeros past ow */
} geom;

static geom geometry(const mx_conv_desc *d)
{
    geom g;
    g.tiles = (d->ow + TILE - 1) / TILE;
    g.pw = g.tiles * TILE + d->k + 1; /* a load at ox + kx + 1 reads 32 elements */
    g.ph = d->h + 2 * d->pad;
    g.gw = g.tiles * TILE;
    return g;
}

/* bf16 elements of one thread's planes: the input and, for backward, the output gradient */
static size_t plane_elems(const mx_conv_desc *d, int with_grad)
{
    const geom g = geometry(d);
    const size_t in = ((size_t)g.ph * g.pw + 31) / 32 * 32;
    return in + (with_grad ? (size_t)d->oc * d->oh * g.gw : 0);
}

/* n f32 values to bf16 at dst (16 at a time), rounded as the GEMM's packing rounds (kernels.h) */
TARGET void mx_cpu_to_bf16(uint16_t *dst, const float *src, int n)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
        _mm256_mask_storeu_epi16(dst + i, m, h);
    }
}

/* A sample's input as the zero-bordered bf16 plane */
TARGET static void input_plane(const mx_conv_desc *d, const geom *g, const float *x, uint16_t *p)
{
    memset(p, 0, sizeof(uint16_t) * (size_t)g->ph * g->pw);
    for (int y = 0; y < d->h; y++)
        mx_cpu_to_bf16(p + (size_t)(y + d->pad) * g->pw + d->pad, x + (size_t)y * d->w, d->w);
}

/* The weights as pairs of kernel columns, [block of OBB channels][ky][pair][OBB] dwords (low
 * half column 2j, high 2j + 1; zero past the kernel and for a missing channel) */
TARGET static void weight_pairs(const mx_conv_desc *d, const float *w, uint32_t *wp)
{
    const int k = d->k, kp = (k + 1) / 2, blocks = (d->oc + OBB - 1) / OBB;
    memset(wp, 0, sizeof(uint32_t) * (size_t)blocks * k * kp * OBB);
    for (int c = 0; c < d->oc; c++)
        for (int ky = 0; ky < k; ky++) {
            float row[2 * MX_DIRECT_MAX_K] = {0};
            memcpy(row, w + ((size_t)c * k + ky) * k, sizeof(float) * k);
            uint16_t h[2 * MX_DIRECT_MAX_K];
            mx_cpu_to_bf16(h, row, 2 * kp);
            for (int j = 0; j < kp; j++)
                wp[(((size_t)(c / OBB) * k + ky) * kp + j) * OBB + c % OBB] = h[2 * j] | (uint32_t)h[2 * j + 1] << 16;
        }
}

/* The first cols (> 0) of v to o: whole vectors stored plainly (masked stores are slow here) */
TARGET static inline void store_cols(float *o, __m512 v, int cols)
{
    if (cols >= 16) _mm512_storeu_ps(o, v);
    else if (cols == 8) _mm256_storeu_ps(o, _mm512_castps512_ps256(v));
    else _mm512_mask_storeu_ps(o, (__mmask16)((1u << cols) - 1), v);
}

/* One tile: columns [ox, ox + TILE) of output row oy (cols of them kept) for the block's
 * channels (nb of OBB kept); xr: the plane at row oy, column ox */
TARGET static void fwd_tile(const uint16_t *xr, int pw, int k, const uint32_t *wb, float *o, size_t ohw, int nb,
                            int cols)
{
    const int kp = (k + 1) / 2;
    __m512 ev[OBB], od[OBB];
    for (int c = 0; c < OBB; c++) ev[c] = od[c] = _mm512_setzero_ps();
    for (int ky = 0; ky < k; ky++)
        for (int j = 0; j < kp; j++) {
            const uint16_t *r = xr + (size_t)ky * pw + 2 * j;
            const __m512bh xe = (__m512bh)_mm512_loadu_si512(r), xo = (__m512bh)_mm512_loadu_si512(r + 1);
            const uint32_t *wk = wb + (ky * kp + j) * OBB;
            for (int c = 0; c < OBB; c++) {
                const __m512bh wv = (__m512bh)_mm512_set1_epi32((int)wk[c]);
                ev[c] = _mm512_dpbf16_ps(ev[c], xe, wv);
                od[c] = _mm512_dpbf16_ps(od[c], xo, wv);
            }
        }
    /* columns 2i from the even accumulator, 2i + 1 from the odd one */
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int c = 0; c < nb; c++) {
        store_cols(o + c * ohw, _mm512_permutex2var_ps(ev[c], lo, od[c]), cols);
        if (cols > 16) store_cols(o + c * ohw + 16, _mm512_permutex2var_ps(ev[c], hi, od[c]), cols - 16);
    }
}

TARGET static void fwd_sample(const mx_conv_desc *d, const geom *g, const uint16_t *p, const uint32_t *wp, float *out)
{
    const int k = d->k, kp = (k + 1) / 2;
    const size_t ohw = (size_t)d->oh * d->ow;
    for (int c0 = 0; c0 < d->oc; c0 += OBB) {
        const int nb = d->oc - c0 < OBB ? d->oc - c0 : OBB;
        const uint32_t *wb = wp + (size_t)(c0 / OBB) * k * kp * OBB;
        for (int oy = 0; oy < d->oh; oy++)
            for (int ox = 0; ox < d->ow; ox += TILE)
                fwd_tile(p + (size_t)oy * g->pw + ox, g->pw, k, wb, out + c0 * ohw + (size_t)oy * d->ow + ox, ohw, nb,
                         d->ow - ox);
    }
}

/* Weight-gradient sums of channels c0 .. c0 + GB - 1 (a missing one repeats the last, its sums
 * dropped), kernel row ky, columns kx0 .. kx0 + G - 1, over one sample, added lane by lane to
 * the thread's 16-lane sums (s: [weight][16], the block's first at s, a channel's kk weights
 * apart): a sample's sums are not reduced to one value each, which had cost as much as the
 * products. */
TARGET static inline __attribute__((always_inline)) void dw_block(const mx_conv_desc *d, const geom *g,
                                                                  const uint16_t *p, const uint16_t *const gr[GB],
                                                                  int ky, int kx0, int G, int nb, float *s)
{
    __m512 acc[GB][GX];
    for (int j = 0; j < GB; j++)
        for (int t = 0; t < GX; t++) acc[j][t] = _mm512_setzero_ps();
    for (int oy = 0; oy < d->oh; oy++) {
        const uint16_t *xr = p + (size_t)(oy + ky) * g->pw + kx0;
        for (int ox = 0; ox < g->gw; ox += TILE) {
            __m512bh gv[GB];
            for (int j = 0; j < GB; j++) gv[j] = (__m512bh)_mm512_loadu_si512(gr[j] + (size_t)oy * g->gw + ox);
            for (int t = 0; t < G; t++) {
                const __m512bh xv = (__m512bh)_mm512_loadu_si512(xr + ox + t);
                for (int j = 0; j < GB; j++) acc[j][t] = _mm512_dpbf16_ps(acc[j][t], gv[j], xv);
            }
        }
    }
    const size_t kk = (size_t)d->k * d->k;
    for (int j = 0; j < nb; j++)
        for (int t = 0; t < G; t++) {
            float *l = s + (j * kk + (size_t)ky * d->k + kx0 + t) * 16;
            _mm512_storeu_ps(l, _mm512_add_ps(_mm512_loadu_ps(l), acc[j][t]));
        }
}

/* lanes += this sample's weight gradient, 16 lanes a weight; gb: its output gradient as bf16
 * rows of gw */
TARGET static void dw_sample(const mx_conv_desc *d, const geom *g, const uint16_t *p, const uint16_t *gb, float *lanes)
{
    const int k = d->k, kk = k * k;
    const size_t plane = (size_t)d->oh * g->gw;
    for (int c0 = 0; c0 < d->oc; c0 += GB) {
        const int nb = d->oc - c0 < GB ? d->oc - c0 : GB;
        const uint16_t *gr[GB];
        for (int j = 0; j < GB; j++) gr[j] = gb + (size_t)(c0 + (j < nb ? j : nb - 1)) * plane;
        for (int ky = 0; ky < k; ky++)
            for (int kx0 = 0; kx0 < k; kx0 += GX) {
                float *s = lanes + (size_t)c0 * kk * 16;
                switch (k - kx0 < GX ? k - kx0 : GX) { /* constant widths, so acc stays in registers */
                case 1: dw_block(d, g, p, gr, ky, kx0, 1, nb, s); break;
                case 2: dw_block(d, g, p, gr, ky, kx0, 2, nb, s); break;
                case 3: dw_block(d, g, p, gr, ky, kx0, 3, nb, s); break;
                case 4: dw_block(d, g, p, gr, ky, kx0, 4, nb, s); break;
                default: dw_block(d, g, p, gr, ky, kx0, 5, nb, s); break;
                }
            }
    }
}

TARGET static float reduce16(const float *l) { return _mm512_reduce_add_ps(_mm512_loadu_ps(l)); }

/* A sample's output gradient as bf16 rows of gw, zeros past ow */
TARGET static void grad_plane(const mx_conv_desc *d, const geom *g, const float *dout, uint16_t *gb)
{
    for (int r = 0; r < d->oc * d->oh; r++) {
        uint16_t *row = gb + (size_t)r * g->gw;
        mx_cpu_to_bf16(row, dout + (size_t)r * d->ow, d->ow);
        memset(row + d->ow, 0, sizeof(uint16_t) * (g->gw - d->ow));
    }
}

void mx_cpu_conv_direct_bf16_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                     const float *w)
{
    const geom g = geometry(d);
    const int T = mx_cpu_sample_team(be, n), kp = (d->k + 1) / 2;
    const size_t nwp = (size_t)(d->oc + OBB - 1) / OBB * d->k * kp * OBB, pe = plane_elems(d, 0);
    const size_t hw = (size_t)d->h * d->w, ocohw = (size_t)d->oc * d->oh * d->ow;
    uint32_t *wp = mx_backend_scratch(be, sizeof(uint32_t) * nwp + sizeof(uint16_t) * pe * T);
    if (!wp) return;
    weight_pairs(d, w, wp);
#pragma omp parallel for num_threads(T) schedule(static)
    for (int s = 0; s < n; s++) {
        uint16_t *p = (uint16_t *)(wp + nwp) + pe * omp_get_thread_num();
        input_plane(d, &g, in + s * hw, p);
        fwd_sample(d, &g, p, wp, out + s * ocohw);
    }
}

void mx_cpu_conv_direct_bf16_weight_grad(mx_backend *be, const mx_conv_desc *d, int n, float *dw, const float *dout,
                                         const float *in)
{
    const geom g = geometry(d);
    const int T = mx_cpu_sample_team(be, n);
    const size_t nw = (size_t)d->oc * d->k * d->k, pe = plane_elems(d, 1);
    /* floats a thread: its sums, its 16-lane sums, then its planes */
    const size_t ws = (nw + 15) / 16 * 16 + 16 * nw + (pe + 1) / 2;
    const size_t hw = (size_t)d->h * d->w, ocohw = (size_t)d->oc * d->oh * d->ow;
    float *scratch = mx_backend_scratch(be, sizeof(float) * ws * T);
    if (!scratch) return;
#pragma omp parallel num_threads(T)
    {
        float *dwt = scratch + ws * omp_get_thread_num(), *lanes = dwt + (nw + 15) / 16 * 16;
        uint16_t *p = (uint16_t *)(lanes + 16 * nw), *gb = p + plane_elems(d, 0);
        memset(lanes, 0, sizeof(float) * 16 * nw);
#pragma omp for schedule(static)
        for (int s = 0; s < n; s++) {
            input_plane(d, &g, in + s * hw, p);
            grad_plane(d, &g, dout + s * ocohw, gb);
            dw_sample(d, &g, p, gb, lanes);
        }
        for (size_t i = 0; i < nw; i++) dwt[i] = reduce16(lanes + 16 * i);
#pragma omp barrier /* every thread's sums are in */
        mx_cpu_add_thread_sums(dw, scratch, ws, T, nw);
    }
}

#else /* !MX_CPU_AVX512_KERNELS: mx_cpu_bf16_native() is false, so these are never taken */

void mx_cpu_conv_direct_bf16_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                     const float *w)
{
    (void)d, (void)n, (void)out, (void)in, (void)w;
    mx_backend_fail(be, MX_EUNSUPPORTED, "conv2d: no bf16 kernels in this build");
}

void mx_cpu_conv_direct_bf16_weight_grad(mx_backend *be, const mx_conv_desc *d, int n, float *dw, const float *dout,
                                         const float *in)
{
    (void)d, (void)n, (void)dw, (void)dout, (void)in;
    mx_backend_fail(be, MX_EUNSUPPORTED, "conv2d: no bf16 kernels in this build");
}

#endif
