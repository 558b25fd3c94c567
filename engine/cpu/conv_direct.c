/* Direct convolution of a one-channel input at stride 1 (lenet's and resnet18's first
 * layers), without an im2col buffer. With one input channel the GEMM of the im2col path has
 * K = k*k (25 for 5x5, 9 for 3x3): too thin to reach the sgemm ceiling, and its buffer is
 * k*k times the input. Here each output row is computed in registers: a tile of 8 output
 * channels x up to 32 columns keeps its accumulators in 16- and 8-wide vectors (24 columns,
 * lenet's rows: one of each per channel), and every input vector loaded feeds 8 of them. The
 * weight gradient keeps 4 channels x 5 kernel columns of 16-wide accumulators over a whole
 * sample, so each input vector feeds 4 and each output-gradient vector 5. Padding, and rows
 * whose length is not a multiple of 8, are handled by copying a sample into a zero-bordered
 * plane with 8 spare columns, so the inner loops have no bounds tests and a row's last
 * columns are one more vector tile (resnet18's first layer has 28-column rows).
 *
 * GCC's vector extensions give the arithmetic whatever the build's instruction set, so the
 * kernel needs no run-time dispatch; the width is the build's: VW = 16 where it targets
 * AVX-512 (-march=native here), else 8 (AVX2 has 16 vector registers: 16-wide accumulators
 * there were spilled, and the count gate's Haswell build took many more instructions a lenet
 * step). On this project's CPUs (AMD Zen 5, full-width AVX-512) a 16-wide FMA costs what an
 * 8-wide one does, so VW 16 made lenet's first convolution faster both ways, and its step
 * (docs/performance.md, "Choices in the code"). Samples are split over the device's threads;
 * each thread sums its own weight gradient, and the threads' sums are added in thread order
 * (mx_cpu_add_thread_sums, as the im2col path), so a result depends on the thread count only. */
#include "kernels.h"

#include <omp.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias)); /* unaligned access */
#if defined(__AVX512F__)
#define VW 16
typedef float vec __attribute__((vector_size(64)));
typedef float vecu __attribute__((vector_size(64), aligned(4), may_alias));
#define NVMAX 2 /* full vectors a forward tile: 32 columns, or 16 + 8 */
#else
#define VW 8
typedef v8 vec;
typedef v8u vecu;
#define NVMAX 3 /* 24 columns */
#endif

#define OB 8       /* output channels per forward tile */
#define GB 4       /* output channels per weight-gradient block */
#define GX 5       /* kernel columns per weight-gradient block */
#define MAX_K MX_DIRECT_MAX_K /* kernels up to 16x16 take this path; beyond, K = k*k is no longer thin */

static inline v8 load8(const float *p) { return *(const v8u *)p; }
static inline void store8(float *p, v8 v) { *(v8u *)p = v; }
static inline vec loadv(const float *p) { return *(const vecu *)p; }
static inline void storev(float *p, vec v) { *(vecu *)p = v; }
/* 8 values as a vector, zeros above them where it is wider: reads only the 8 */
static inline vec load8v(const float *p)
{
#if VW == 16
    return __builtin_shufflevector(load8(p), (v8){0}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    return load8(p);
#endif
}

static inline float hsumv(vec v)
{
#if VW == 16
    const v8 s = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    const v8 s = v;
#endif
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

int mx_cpu_conv_direct_applies(const mx_conv_desc *d) { return d->c == 1 && d->stride == 1 && d->k <= MAX_K; }

/* Whether a sample is copied into a zero-bordered plane: with padding, or where the output
 * rows end in a part of a vector (the last 8-wide tile of a row then reads up to 8 columns
 * past the input row, zeros in the copy). */
static int copies(const mx_conv_desc *d) { return d->pad > 0 || d->ow % 8 != 0; }

/* The width and height of the plane the kernels read. */
static int plane_w(const mx_conv_desc *d) { return copies(d) ? d->w + 2 * d->pad + 8 : d->w; }
static int plane_h(const mx_conv_desc *d) { return d->h + 2 * d->pad; }

/* The sample's plane as the kernels read it: a zero-bordered copy in buf, or itself. */
static const float *padded(const mx_conv_desc *d, const float *x, float *buf)
{
    if (!copies(d)) return x;
    const int pw = plane_w(d);
    memset(buf, 0, sizeof(float) * (size_t)plane_h(d) * pw);
    for (int y = 0; y < d->h; y++)
        memcpy(buf + (size_t)(y + d->pad) * pw + d->pad, x + (size_t)y * d->w, sizeof(float) * d->w);
    return buf;
}

/* NV vectors of VW columns, then H (0 or 1; VW 16 only) of 8, x OB channels of one output row.
 * x: the padded input at (oy, ox); wb: the block's weights as [k*k][OB]; o: the output at
 * (first channel, oy, ox). */
static inline __attribute__((always_inline)) void fwd_tile(const float *x, int pw, int k, const float *wb,
                                                           float *o, size_t ohw, int nb, int NV, int H)
{
    vec acc[OB][NVMAX] = {{{0}}};
    v8 acch[OB] = {{0}};
    for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) {
            const float *r = x + (size_t)ky * pw + kx;
            const float *wk = wb + (ky * k + kx) * OB;
            vec xv[NVMAX];
            for (int v = 0; v < NV; v++) xv[v] = loadv(r + VW * v);
            const v8 xh = H ? load8(r + VW * NV) : (v8){0};
            for (int j = 0; j < OB; j++) {
                for (int v = 0; v < NV; v++) acc[j][v] += wk[j] * xv[v];
                if (H) acch[j] += wk[j] * xh;
            }
        }
    for (int j = 0; j < nb; j++) {
        for (int v = 0; v < NV; v++) storev(o + j * ohw + VW * v, acc[j][v]);
        if (H) store8(o + j * ohw + VW * NV, acch[j]);
    }
}

static void fwd_sample(const mx_conv_desc *d, const float *x, const float *wb_all, float *out)
{
    const int k = d->k, kk = k * k, pw = plane_w(d), ow = d->ow;
    const size_t ohw = (size_t)d->oh * ow;
    for (int c0 = 0; c0 < d->oc; c0 += OB) {
        const int nb = d->oc - c0 < OB ? d->oc - c0 : OB;
        const float *wb = wb_all + (size_t)c0 * kk; /* block c0/OB holds OB*kk weights */
        for (int oy = 0; oy < d->oh; oy++) {
            const float *xr = x + (size_t)oy * pw;
            float *o = out + c0 * ohw + (size_t)oy * ow;
            int ox = 0;
#if VW == 16
            for (; ox + 32 <= ow; ox += 32) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 2, 0);
            if (ow - ox >= 24) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 1, 1), ox += 24;
            else if (ow - ox >= 16) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 1, 0), ox += 16;
            else if (ow - ox >= 8) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 0, 1), ox += 8;
#define TILE8 0, 1 /* 8 columns: the 8-wide half */
#else
            for (; ox + 24 <= ow; ox += 24) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 3, 0);
            for (; ox + 16 <= ow; ox += 16) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 2, 0);
            for (; ox + 8 <= ow; ox += 8) fwd_tile(xr + ox, pw, k, wb, o + ox, ohw, nb, 1, 0);
#define TILE8 1, 0 /* 8 columns: one vector */
#endif
            if (ox < ow) { /* the row's last columns: a whole tile over the copy's zeros, kept in part */
                float tmp[OB * 8];
                fwd_tile(xr + ox, pw, k, wb, tmp, 8, nb, TILE8);
                for (int j = 0; j < nb; j++) memcpy(o + j * ohw + ox, tmp + 8 * j, sizeof(float) * (ow - ox));
            }
        }
    }
}

/* Weight-gradient sums of channels g[0..GB-1] (a missing channel repeats the last) over one
 * sample, kernel row ky, kernel columns kx0 .. kx0+G-1, added to s[channel][column]. */
static inline __attribute__((always_inline)) void dw_block(const mx_conv_desc *d, const float *x,
                                                           const float *const g[GB], int ky, int kx0, int G,
                                                           float s[GB][GX])
{
    const int pw = plane_w(d), ow = d->ow;
    vec acc[GB][GX] = {{{0}}};
    for (int oy = 0; oy < d->oh; oy++) {
        const float *xr = x + (size_t)(oy + ky) * pw + kx0;
        const size_t row = (size_t)oy * ow;
        int ox = 0;
        for (; ox + VW <= ow; ox += VW) {
            vec gv[GB];
            for (int j = 0; j < GB; j++) gv[j] = loadv(g[j] + row + ox);
            for (int t = 0; t < G; t++) {
                const vec xv = loadv(xr + ox + t);
                for (int j = 0; j < GB; j++) acc[j][t] += gv[j] * xv;
            }
        }
        /* 8 columns more (VW 16): read 8 wide (a 16-wide read would run past the plane),
         * summed in the low lanes */
        if (VW > 8 && ox + 8 <= ow) {
            vec gv[GB];
            for (int j = 0; j < GB; j++) gv[j] = load8v(g[j] + row + ox);
            for (int t = 0; t < G; t++) {
                const vec xv = load8v(xr + ox + t);
                for (int j = 0; j < GB; j++) acc[j][t] += gv[j] * xv;
            }
            ox += 8;
        }
        if (ox < ow) { /* the row's last columns: the gradient zero-extended, the input read
                        * on into the copy's zeros */
            float gt[GB][8] = {{0}};
            for (int j = 0; j < GB; j++) memcpy(gt[j], g[j] + row + ox, sizeof(float) * (ow - ox));
            for (int t = 0; t < G; t++) {
                const vec xv = load8v(xr + ox + t);
                for (int j = 0; j < GB; j++) acc[j][t] += load8v(gt[j]) * xv;
            }
        }
    }
    for (int j = 0; j < GB; j++)
        for (int t = 0; t < G; t++) s[j][t] += hsumv(acc[j][t]);
}

static void dw_sample(const mx_conv_desc *d, const float *x, const float *dout, float *dw)
{
    const int k = d->k, kk = k * k;
    const size_t ohw = (size_t)d->oh * d->ow;
    for (int c0 = 0; c0 < d->oc; c0 += GB) {
        const int nb = d->oc - c0 < GB ? d->oc - c0 : GB;
        const float *g[GB];
        for (int j = 0; j < GB; j++) g[j] = dout + (c0 + (j < nb ? j : nb - 1)) * ohw;
        for (int ky = 0; ky < k; ky++)
            for (int kx0 = 0; kx0 < k; kx0 += GX) {
                float s[GB][GX] = {{0}};
                switch (k - kx0 < GX ? k - kx0 : GX) { /* constant widths, so acc stays in registers */
                case 1: dw_block(d, x, g, ky, kx0, 1, s); break;
                case 2: dw_block(d, x, g, ky, kx0, 2, s); break;
                case 3: dw_block(d, x, g, ky, kx0, 3, s); break;
                case 4: dw_block(d, x, g, ky, kx0, 4, s); break;
                default: dw_block(d, x, g, ky, kx0, 5, s); break;
                }
                for (int j = 0; j < nb; j++)
                    for (int t = 0; t < GX && kx0 + t < k; t++)
                        dw[(size_t)(c0 + j) * kk + ky * k + kx0 + t] += s[j][t];
            }
    }
}

/* The input gradient of one sample: scattered into the zeroed padded plane p, then its
 * interior copied out. */
static void din_sample(const mx_conv_desc *d, const float *dout, const float *w, float *p, float *din)
{
    const int k = d->k, pw = plane_w(d), ow = d->ow;
    const size_t ohw = (size_t)d->oh * ow;
    memset(p, 0, sizeof(float) * (size_t)plane_h(d) * pw);
    for (int c = 0; c < d->oc; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                const float wv = w[((size_t)c * k + ky) * k + kx];
                for (int oy = 0; oy < d->oh; oy++) {
                    float *restrict pr = p + (size_t)(oy + ky) * pw + kx;
                    const float *restrict g = dout + c * ohw + (size_t)oy * ow;
                    for (int ox = 0; ox < ow; ox++) pr[ox] += wv * g[ox];
                }
            }
    for (int y = 0; y < d->h; y++)
        memcpy(din + (size_t)y * d->w, p + (size_t)(y + d->pad) * pw + d->pad, sizeof(float) * d->w);
}


/* Under AMP bf16 on a CPU with bf16 dot products (where the GEMMs take the bf16 kernel), the
 * forward and the weight gradient run there. */
static int on_bf16_units(const mx_backend *be) { return be->math == MX_BF16 && mx_cpu_bf16_native(); }

void mx_cpu_conv_direct_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                const float *w)
{
    if (on_bf16_units(be)) {
        mx_cpu_conv_direct_bf16_forward(be, d, n, out, in, w);
        return;
    }
    const int kk = d->k * d->k, nblk = (d->oc + OB - 1) / OB, T = mx_cpu_sample_team(be, n);
    const size_t plane = copies(d) ? (size_t)plane_h(d) * plane_w(d) : 0;
    const size_t nwb = (size_t)nblk * OB * kk, hw = (size_t)d->h * d->w, ocohw = (size_t)d->oc * d->oh * d->ow;
    float *wb = mx_backend_scratch(be, sizeof(float) * (nwb + plane * T));
    if (!wb) return;
    /* the weights as [block][k*k][OB], a missing channel of the last block zero */
    memset(wb, 0, sizeof(float) * nwb);
    for (int c = 0; c < d->oc; c++)
        for (int t = 0; t < kk; t++) wb[((size_t)(c / OB) * kk + t) * OB + c % OB] = w[(size_t)c * kk + t];
#pragma omp parallel for num_threads(T) schedule(static)
    for (int s = 0; s < n; s++) {
        float *buf = wb + nwb + plane * omp_get_thread_num();
        fwd_sample(d, padded(d, in + s * hw, buf), wb, out + s * ocohw);
    }
}

void mx_cpu_conv_direct_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                 const float *dout, const float *in, const float *w)
{
    const int bf16 = on_bf16_units(be); /* the weight gradient there, the input's here */
    if (bf16) {
        mx_cpu_conv_direct_bf16_weight_grad(be, d, n, dw, dout, in);
        if (!din) return;
    }
    const int T = mx_cpu_sample_team(be, n);
    const size_t nw = (size_t)d->oc * d->k * d->k, hw = (size_t)d->h * d->w;
    const size_t plane = (size_t)plane_h(d) * (d->w + 2 * d->pad + 8), ocohw = (size_t)d->oc * d->oh * d->ow;
    const size_t ws = nw + 2 * plane; /* per thread: its weight gradient, the padded input, the padded din */
    float *scratch = mx_backend_scratch(be, sizeof(float) * ws * T);
    if (!scratch) return;
#pragma omp parallel num_threads(T)
    {
        const int t = omp_get_thread_num();
        float *dwt = scratch + ws * t, *xbuf = dwt + nw, *pbuf = xbuf + plane;
        memset(dwt, 0, sizeof(float) * nw);
#pragma omp for schedule(static)
        for (int s = 0; s < n; s++) {
            if (!bf16) dw_sample(d, padded(d, in + s * hw, xbuf), dout + s * ocohw, dwt);
            if (din) din_sample(d, dout + s * ocohw, w, pbuf, din + s * hw);
        }
        if (!bf16) mx_cpu_add_thread_sums(dw, scratch, ws, T, nw); /* after the loop's own barrier */
    }
}
