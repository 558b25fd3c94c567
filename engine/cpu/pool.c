/* CPU max pooling (with argmax saved for backward), also of a relu's output in the same pass
 * (the engine's fusion of a relu before a max pooling: engine/core/exec.c), and global average pooling.
 * Work is split by (sample, channel) plane so backward never has two threads on one element. */
#include "kernels.h"

#include <float.h>
#include <string.h>

/* relu: the maximum of relu(in), which is relu(maximum of in): the window's winner among the
 * raw values, 0 stored where it is not positive (the backward then passes no gradient there,
 * whichever element the argmax names). */
static void forward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax, const float *in,
                        int relu)
{
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++) {
        const float *src = in + (size_t)p * hw;
        float *dst = out + (size_t)p * ohw;
        int32_t *arg = argmax + (size_t)p * ohw;
        for (int oy = 0; oy < d->oh; oy++) {
            const int y0 = oy * d->stride, y1 = y0 + d->k < d->h ? y0 + d->k : d->h;
            for (int ox = 0; ox < d->ow; ox++) {
                const int x0 = ox * d->stride, x1 = x0 + d->k < d->w ? x0 + d->k : d->w;
                float best = -FLT_MAX;
                int32_t where = y0 * d->w + x0;
                /* selects, not branches: on real data the winner is unpredictable */
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) {
                        const float v = src[iy * d->w + ix];
                        const int better = v > best;
                        where = better ? iy * d->w + ix : where;
                        best = better ? v : best;
                    }
                dst[oy * d->ow + ox] = relu && !(best > 0) ? 0.0f : best;
                arg[oy * d->ow + ox] = where;
            }
        }
    }
}

void mx_cpu_maxpool_forward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                const float *in)
{
    forward_ref(be, d, n, out, argmax, in, 0);
}

/* The 2x2 window of stride 2 that lies wholly inside the plane (lenet's and most CNNs'
 * pooling): the same selects in the same order as the reference (row by row, a strictly
 * greater value wins, so the first of equal maxima and every NaN rule match bit for bit).
 * Outputs go 8 (or 4) at a time in GCC vector extensions: the window's four values are the
 * even and odd lanes of two rows, split by shuffles. On lenet's first pooling the reference
 * loop was far slower than a scalar loop with constant bounds, and with that loop the poolings
 * were still a sizeable share of lenet's step (docs/performance.md, "Choices in the code"). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
/* lane selections of two vectors (__builtin_shufflevector: GCC 12 and clang alike) */
#define EVEN8(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD8(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)
#define EVEN4(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#define ODD4(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7)
#define LO8(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define HI8(a, b) __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15)

/* Outputs [ox0, ox0 + W) of row r0/r1 (input row 2 oy, base its first index), W = 8 or 4:
 * VF/VI the vector types, EVEN/ODD the lane selections of two loaded vectors, LANES 0..W-1. */
#define POOL_CHUNK(VF, VI, EVEN, ODD, LANES)                                                                  \
    do {                                                                                                      \
        VF a0, b0, a1, b1;                                                                                    \
        memcpy(&a0, r0 + 2 * ox0, sizeof a0), memcpy(&b0, r0 + 2 * ox0 + sizeof a0 / 4, sizeof b0);           \
        memcpy(&a1, r1 + 2 * ox0, sizeof a1), memcpy(&b1, r1 + 2 * ox0 + sizeof a1 / 4, sizeof b1);           \
        const VF v[4] = {EVEN(a0, b0), ODD(a0, b0), EVEN(a1, b1), ODD(a1, b1)};                               \
        const VI i0 = base + 2 * ox0 + 2 * LANES, at[4] = {i0, i0 + 1, i0 + w, i0 + w + 1};                   \
        VF best = (VF){0} - FLT_MAX;                                                                          \
        VI where = i0;                                                                                        \
        for (int j = 0; j < 4; j++) {                                                                         \
            const VI better = v[j] > best;                                                                    \
            where = (at[j] & better) | (where & ~better);                                                     \
            best = (VF)(((VI)v[j] & better) | ((VI)best & ~better));                                          \
        }                                                                                                     \
        if (relu) best = (VF)((VI)best & (best > 0));                                                         \
        memcpy(dst + oy * ow + ox0, &best, sizeof best);                                                      \
        memcpy(arg + oy * ow + ox0, &where, sizeof where);                                                    \
    } while (0)

static void maxpool_2x2_plane(const float *src, float *dst, int32_t *arg, int w, int oh, int ow, int relu)
{
    const v8i lanes8 = {0, 1, 2, 3, 4, 5, 6, 7};
    const v4i lanes4 = {0, 1, 2, 3};
    for (int oy = 0; oy < oh; oy++) {
        const float *r0 = src + (size_t)2 * oy * w, *r1 = r0 + w;
        const int32_t base = 2 * oy * w;
        int ox0 = 0;
        for (; ox0 + 8 <= ow; ox0 += 8) POOL_CHUNK(v8f, v8i, EVEN8, ODD8, lanes8);
        for (; ox0 + 4 <= ow; ox0 += 4) POOL_CHUNK(v4f, v4i, EVEN4, ODD4, lanes4);
        for (int ox = ox0; ox < ow; ox++) {
            const int32_t i = base + 2 * ox;
            const float v[4] = {r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]};
            const int32_t at[4] = {i, i + 1, i + w, i + w + 1};
            float best = -FLT_MAX;
            int32_t where = i;
            for (int j = 0; j < 4; j++) {
                const int better = v[j] > best;
                where = better ? at[j] : where;
                best = better ? v[j] : best;
            }
            dst[oy * ow + ox] = relu && !(best > 0) ? 0.0f : best;
            arg[oy * ow + ox] = where;
        }
    }
}

/* 2x2 windows of stride 2 inside the plane, rows of at least min_ow outputs: the vector paths. */
static int tiled_2x2(const mx_pool_desc *d, int min_ow)
{
    return d->k == 2 && d->stride == 2 && 2 * d->oh <= d->h && 2 * d->ow <= d->w && d->ow >= min_ow;
}

static void forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax, const float *in,
                    int relu)
{
    if (!tiled_2x2(d, 4)) {
        forward_ref(be, d, n, out, argmax, in, relu);
        return;
    }
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++)
        maxpool_2x2_plane(in + (size_t)p * hw, out + (size_t)p * ohw, argmax + (size_t)p * ohw, d->w, d->oh, d->ow,
                          relu);
}

void mx_cpu_maxpool_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                            const float *in)
{
    forward(be, d, n, out, argmax, in, 0);
}

void mx_cpu_maxpool_relu_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                 const float *in)
{
    forward(be, d, n, out, argmax, in, 1);
}

/* mask (NULL: none): the outputs of a pooling of relu(in); where one is not positive, no
 * gradient passes (the relu's own backward, done here). */
static void backward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                         const int32_t *argmax, const float *mask)
{
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++) {
        float *dst = din + (size_t)p * hw;
        memset(dst, 0, sizeof(float) * hw);
        for (size_t i = (size_t)p * ohw; i < (size_t)(p + 1) * ohw; i++)
            dst[argmax[i]] += mask && !(mask[i] > 0) ? 0.0f : dout[i];
    }
}

void mx_cpu_maxpool_backward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                 const int32_t *argmax)
{
    backward_ref(be, d, n, din, dout, argmax, NULL);
}

/* Backward of the 2x2, stride-2 windows, which do not overlap: each input is written once,
 * the gradient where the window's argmax is and 0 elsewhere, instead of zeroing the plane and
 * adding into it (twice the traffic). 0 + g, as the reference adds, so that a -0 gradient
 * lands as +0 there too. mask as in backward_ref. */
#define UNPOOL_CHUNK(VF, VI, LO, HI, LANES)                                                                   \
    do {                                                                                                      \
        VF g;                                                                                                 \
        VI where;                                                                                             \
        memcpy(&g, gy + ox0, sizeof g), memcpy(&where, ay + ox0, sizeof where);                               \
        g = g + 0.0f;                                                                                         \
        if (my) {                                                                                             \
            VF o;                                                                                             \
            memcpy(&o, my + ox0, sizeof o);                                                                   \
            g = (VF)((VI)g & (o > 0));                                                                        \
        }                                                                                                     \
        const VI i0 = base + 2 * ox0 + 2 * LANES;                                                             \
        const VF v[4] = {(VF)((VI)g & (where == i0)), (VF)((VI)g & (where == i0 + 1)),                        \
                         (VF)((VI)g & (where == i0 + w)), (VF)((VI)g & (where == i0 + w + 1))};               \
        const VF r0a = LO(v[0], v[1]), r0b = HI(v[0], v[1]), r1a = LO(v[2], v[3]), r1b = HI(v[2], v[3]);      \
        memcpy(r0 + 2 * ox0, &r0a, sizeof r0a), memcpy(r0 + 2 * ox0 + sizeof g / 4, &r0b, sizeof r0b);        \
        memcpy(r1 + 2 * ox0, &r1a, sizeof r1a), memcpy(r1 + 2 * ox0 + sizeof g / 4, &r1b, sizeof r1b);        \
    } while (0)

static void unpool_2x2_plane(float *din, const float *dout, const int32_t *arg, const float *mask, int h, int w,
                             int oh, int ow)
{
    const v8i lanes8 = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int oy = 0; oy < oh; oy++) {
        float *r0 = din + (size_t)2 * oy * w, *r1 = r0 + w;
        const float *gy = dout + (size_t)oy * ow, *my = mask ? mask + (size_t)oy * ow : NULL;
        const int32_t *ay = arg + (size_t)oy * ow, base = 2 * oy * w;
        int ox0 = 0;
        for (; ox0 + 8 <= ow; ox0 += 8) UNPOOL_CHUNK(v8f, v8i, LO8, HI8, lanes8);
        for (int ox = ox0; ox < ow; ox++) {
            const int32_t i = base + 2 * ox;
            const float g = my && !(my[ox] > 0) ? 0.0f : 0.0f + gy[ox];
            r0[2 * ox] = ay[ox] == i ? g : 0.0f, r0[2 * ox + 1] = ay[ox] == i + 1 ? g : 0.0f;
            r1[2 * ox] = ay[ox] == i + w ? g : 0.0f, r1[2 * ox + 1] = ay[ox] == i + w + 1 ? g : 0.0f;
        }
        for (int x = 2 * ow; x < w; x++) r0[x] = r1[x] = 0.0f; /* a last column no window covers */
    }
    memset(din + (size_t)2 * oh * w, 0, sizeof(float) * (size_t)(h - 2 * oh) * w); /* and a last row */
}

static void backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                     const int32_t *argmax, const float *mask)
{
    /* rows of 4 outputs stay with the reference: on lenet's second pooling (8x8 planes) this
     * path was the slower one (docs/performance.md, "Choices in the code") */
    if (!tiled_2x2(d, 8)) {
        backward_ref(be, d, n, din, dout, argmax, mask);
        return;
    }
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++)
        unpool_2x2_plane(din + (size_t)p * hw, dout + (size_t)p * ohw, argmax + (size_t)p * ohw,
                         mask ? mask + (size_t)p * ohw : NULL, d->h, d->w, d->oh, d->ow);
}

void mx_cpu_maxpool_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                             const int32_t *argmax)
{
    backward(be, d, n, din, dout, argmax, NULL);
}

void mx_cpu_maxpool_relu_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                  const float *out, const int32_t *argmax)
{
    backward(be, d, n, din, dout, argmax, out);
}

void mx_cpu_avgpool_global_forward(mx_backend *be, int n, int c, int hw, float *out, const float *in)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int p = 0; p < n * c; p++) {
        double s = 0;
        for (int i = 0; i < hw; i++) s += in[(size_t)p * hw + i];
        out[p] = (float)(s / hw);
    }
}

void mx_cpu_avgpool_global_backward(mx_backend *be, int n, int c, int hw, float *din, const float *dout)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int p = 0; p < n * c; p++) {
        const float g = dout[p] / hw;
        for (int i = 0; i < hw; i++) din[(size_t)p * hw + i] = g;
    }
}
