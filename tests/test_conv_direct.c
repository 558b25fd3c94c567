/* The direct one-channel convolution (engine/cpu/conv_direct.c) against the im2col + GEMM
 * reference path, forward and backward (the weight gradient accumulating onto what was
 * there, and the input gradient), on random shapes: odd sizes, rows narrower than a vector
 * and wider than a tile, padding up to the kernel's size, output channels that do not fill
 * a block, 1 and 2 threads. The finite-difference gradient checks are test_layers'; this
 * covers the kernel's agreement with the reference, and which shapes take it.
 *
 * The reference itself (im2col + GEMM, any channels, stride and padding) is compared with the
 * convolution's definition written as plain loops, forward and backward: gradient checks
 * alone would pass an im2col that misplaces values, since the weight gradient reads the same
 * columns as the forward. The bf16 kernels are checked against the definition too
 * (check_bf16). */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 4242;

static void fill(float *x, size_t n) { check_fill(x, n, &rng); }


/* The definition: out[s][o][y][x] = sum over c, ky, kx of w[o][c][ky][kx] * in at (y*stride -
 * pad + ky, x*stride - pad + kx), zero outside; dw and din by the same sum, in double. */
static void naive(const mx_conv_desc *d, int n, float *out, float *din, double *dw, const float *g, const float *x,
                  const float *w)
{
    const int k = d->k;
    memset(din, 0, sizeof(float) * n * d->c * d->h * d->w);
    for (int s = 0; s < n; s++)
        for (int o = 0; o < d->oc; o++)
            for (int y = 0; y < d->oh; y++)
                for (int xo = 0; xo < d->ow; xo++) {
                    const size_t oi = (((size_t)s * d->oc + o) * d->oh + y) * d->ow + xo;
                    double acc = 0;
                    for (int c = 0; c < d->c; c++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                const int iy = y * d->stride - d->pad + ky, ix = xo * d->stride - d->pad + kx;
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                const size_t ii = (((size_t)s * d->c + c) * d->h + iy) * d->w + ix;
                                const size_t wi = (((size_t)o * d->c + c) * k + ky) * k + kx;
                                acc += (double)w[wi] * x[ii];
                                dw[wi] += (double)g[oi] * x[ii];
                                din[ii] += w[wi] * g[oi];
                            }
                    out[oi] = (float)acc;
                }
}

/* im2col + GEMM against the definition on one shape; returns the largest relative difference */
static double check_ref_shape(mx_backend *be[3], const mx_conv_desc *dp, int n, int T)
{
    const mx_conv_desc d = *dp;
    const size_t nin = (size_t)n * d.c * d.h * d.w, nout = (size_t)n * d.oc * d.oh * d.ow;
    const size_t nw = (size_t)d.oc * d.c * d.k * d.k;
    float *x = malloc(sizeof(float) * nin), *w = malloc(sizeof(float) * nw), *g = malloc(sizeof(float) * nout);
    float *o[2] = {malloc(sizeof(float) * nout), malloc(sizeof(float) * nout)};
    float *dx[2] = {malloc(sizeof(float) * nin), malloc(sizeof(float) * nin)};
    float *dw = calloc(nw, sizeof(float)), *dwf = malloc(sizeof(float) * nw);
    double *dwd = calloc(nw, sizeof(double));
    fill(x, nin), fill(w, nw), fill(g, nout);
    mx_cpu_conv2d_forward_gemm(be[T], &d, n, o[0], x, w);
    mx_cpu_conv2d_backward_gemm(be[T], &d, n, dx[0], dw, g, x, w);
    naive(&d, n, o[1], dx[1], dwd, g, x, w);
    for (size_t i = 0; i < nw; i++) dwf[i] = (float)dwd[i];
    const double eo = check_rel_diff(o[0], o[1], nout), ex = check_rel_diff(dx[0], dx[1], nin);
    const double ew = check_rel_diff(dw, dwf, nw);
    CHECK(eo <= 1e-5 && ex <= 1e-5 && ew <= 1e-5,
          "reference path: n %d c %d %dx%d k %d stride %d pad %d oc %d, %d thread(s): forward %.2g, input "
          "gradient %.2g, weight gradient %.2g", n, d.c, d.h, d.w, d.k, d.stride, d.pad, d.oc, T, eo, ex, ew);
    for (int p = 0; p < 2; p++) free(o[p]), free(dx[p]);
    free(x), free(w), free(g), free(dw), free(dwf), free(dwd);
    return fmax(eo, fmax(ex, ew));
}

/* im2col + GEMM against the definition on random shapes: channels 1-4, kernels 1-5, strides
 * 1-3, padding up to the kernel, sizes down to the kernel; and lenet's second convolution
 * (rows of exactly 8 outputs, which im2col and col2im copy with a fixed size) */
static void check_reference(mx_backend *be[3])
{
    double worst = 0;
    for (int trial = 0; trial < 60; trial++) {
        mx_conv_desc d = {.c = 1 + trial % 4, .k = 1 + (trial / 4) % 5, .stride = 1 + trial % 3, .oc = 1 + trial % 5};
        d.pad = (trial / 3) % (d.k + 1);
        d.h = d.k + (trial * 7) % 9, d.w = d.k + (trial * 5) % 11;
        d.oh = (d.h + 2 * d.pad - d.k) / d.stride + 1, d.ow = (d.w + 2 * d.pad - d.k) / d.stride + 1;
        worst = fmax(worst, check_ref_shape(be, &d, 1 + trial % 3, 1 + trial % 2));
    }
    const mx_conv_desc lenet2 = {.c = 20, .h = 12, .w = 12, .oc = 50, .k = 5, .stride = 1, .oh = 8, .ow = 8};
    for (int T = 1; T <= 2; T++) worst = fmax(worst, check_ref_shape(be, &lenet2, 5, T));
    printf("im2col + GEMM vs the definition: 62 shapes, largest relative difference %.2g\n", worst);
}

/* The bf16 kernels (engine/cpu/conv_direct_bf16.c, AMP bf16 on a CPU with bf16 dot products) against
 * the definition on bf16 values: their products are exact, so only the f32 sums' rounding
 * differs from the double sums. Shapes: kernels 1 to 16 (pairs with a zero half), rows of
 * one to three tiles of 32 and narrower than 8, padding, channel blocks of 10 full and not.
 * With the bf16 path forced off (MXBENCH_BF16=emulate's switch), the same call gives the f32
 * kernel's bits: the emulation. */
static void check_bf16(mx_backend *be[3])
{
    if (!mx_cpu_bf16_native()) {
        printf("bf16 direct convolution: skipped, this CPU has no bf16 dot products\n");
        return;
    }
    double worst = 0;
    int differs = 0;
    for (int trial = 0; trial < 60; trial++) {
        mx_conv_desc d = {.c = 1, .stride = 1};
        d.k = trial < 2 ? 15 + trial : 1 + trial % 7;
        d.pad = trial % 3 == 0 ? 0 : (trial / 3) % (d.k + 1);
        d.h = d.k + (trial * 5) % 11, d.w = d.k + (trial * 13) % 71;
        d.oc = 1 + (trial * 7) % 23;
        d.oh = d.h + 2 * d.pad - d.k + 1, d.ow = d.w + 2 * d.pad - d.k + 1;
        const int n = 1 + trial % 4, T = 1 + trial % 2;
        const size_t nin = (size_t)n * d.h * d.w, nout = (size_t)n * d.oc * d.oh * d.ow, nw = (size_t)d.oc * d.k * d.k;
        float *x = malloc(sizeof(float) * nin), *w = malloc(sizeof(float) * nw), *g = malloc(sizeof(float) * nout);
        float *o = malloc(sizeof(float) * nout), *o2 = malloc(sizeof(float) * nout),
              *ref = malloc(sizeof(float) * nout);
        float *dw = malloc(sizeof(float) * nw), *dw2 = malloc(sizeof(float) * nw), *dwr = malloc(sizeof(float) * nw);
        float *dx = malloc(sizeof(float) * nin);
        double *dwd = calloc(nw, sizeof(double));
        fill(x, nin), fill(w, nw), fill(g, nout), fill(dw, nw);
        float *all[3] = {x, w, g};
        const size_t len[3] = {nin, nw, nout};
        for (int a = 0; a < 3; a++)
            for (size_t i = 0; i < len[a]; i++) all[a][i] = mx_bf16_to_f32(mx_f32_to_bf16(all[a][i]));
        memcpy(dw2, dw, sizeof(float) * nw);
        naive(&d, n, ref, dx, dwd, g, x, w);
        for (size_t i = 0; i < nw; i++) dwr[i] = (float)(dw[i] + dwd[i]); /* it accumulates */
        be[T]->math = MX_BF16;
        mx_cpu_conv_direct_forward(be[T], &d, n, o, x, w);
        mx_cpu_conv_direct_backward(be[T], &d, n, NULL, dw, g, x, w);
        const double eo = check_rel_diff(o, ref, nout), ew = check_rel_diff(dw, dwr, nw);
        CHECK(eo <= 2e-5 && ew <= 2e-5, "bf16: n %d %dx%d k %d pad %d oc %d, %d thread(s): forward %.2g, weight "
              "gradient %.2g", n, d.h, d.w, d.k, d.pad, d.oc, T, eo, ew);
        worst = fmax(worst, fmax(eo, ew));
        /* forced off: the f32 kernel's bits */
        mx_cpu_bf16_force_emulation(1);
        mx_cpu_conv_direct_forward(be[T], &d, n, o2, x, w);
        be[T]->math = MX_F32;
        mx_cpu_conv_direct_forward(be[T], &d, n, ref, x, w);
        mx_cpu_bf16_force_emulation(0);
        CHECK(memcmp(o2, ref, sizeof(float) * nout) == 0, "bf16 forced off: not the f32 kernel's results");
        differs += memcmp(o, ref, sizeof(float) * nout) != 0;
        free(x), free(w), free(g), free(o), free(o2), free(ref), free(dw), free(dw2), free(dwr), free(dx), free(dwd);
    }
    /* above 0: the bf16 kernels ran (the f32 kernel sums in another order) */
    CHECK(differs > 0, "the bf16 path never gave other sums than the f32 kernel");
    printf("bf16 direct convolution vs the definition: 60 shapes, largest relative difference %.2g (%d differ "
           "from the f32 kernel)\n", worst, differs);
}

int main(void)
{
    mx_backend *be[3] = {0};
    if (mx_backend_create(&be[1], "cpu", 0, 1) < 0 || mx_backend_create(&be[2], "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_conv_direct: no CPU backend\n");
        return 1;
    }
    double worst = 0;
    int cases = 0;
    for (int trial = 0; trial < 120; trial++) {
        mx_conv_desc d = {.c = 1, .stride = 1};
        d.k = 1 + trial % 7;                       /* 1..7 */
        d.pad = trial % 4 == 0 ? 0 : (trial / 4) % (d.k + 1);
        d.h = d.k + (trial * 5) % 13;              /* down to the kernel itself */
        d.w = d.k + (trial * 11) % 37;             /* rows from 1 to 37 + 2 pad outputs */
        d.oc = 1 + (trial * 3) % 9;                /* blocks of 4 and pairs, full and not */
        d.oh = d.h + 2 * d.pad - d.k + 1, d.ow = d.w + 2 * d.pad - d.k + 1;
        const int n = 1 + trial % 5, T = 1 + trial % 2;
        CHECK(mx_cpu_conv_direct_applies(&d), "one channel at stride 1 takes the direct path");
        const size_t nin = (size_t)n * d.h * d.w, nout = (size_t)n * d.oc * d.oh * d.ow;
        const size_t nw = (size_t)d.oc * d.k * d.k;
        float *x = malloc(sizeof(float) * nin), *w = malloc(sizeof(float) * nw), *g = malloc(sizeof(float) * nout);
        float *o[2], *dx[2], *dw[2];
        for (int p = 0; p < 2; p++) {
            o[p] = malloc(sizeof(float) * nout);
            dx[p] = malloc(sizeof(float) * nin);
            dw[p] = malloc(sizeof(float) * nw);
        }
        fill(x, nin), fill(w, nw), fill(g, nout), fill(dw[0], nw);
        memcpy(dw[1], dw[0], sizeof(float) * nw); /* the gradient accumulates onto this */
        mx_cpu_conv_direct_forward(be[T], &d, n, o[0], x, w);
        mx_cpu_conv2d_forward_gemm(be[T], &d, n, o[1], x, w);
        mx_cpu_conv_direct_backward(be[T], &d, n, dx[0], dw[0], g, x, w);
        mx_cpu_conv2d_backward_gemm(be[T], &d, n, dx[1], dw[1], g, x, w);
        const double eo = check_rel_diff(o[0], o[1], nout), ex = check_rel_diff(dx[0], dx[1], nin),
                     ew = check_rel_diff(dw[0], dw[1], nw);
        CHECK(eo <= 1e-5 && ex <= 1e-5 && ew <= 1e-5,
              "n %d %dx%d k %d pad %d oc %d, %d thread(s): forward %.2g, input gradient %.2g, weight gradient %.2g",
              n, d.h, d.w, d.k, d.pad, d.oc, T, eo, ex, ew);
        worst = fmax(worst, fmax(eo, fmax(ex, ew)));
        /* the first layer asks for no input gradient */
        memcpy(dw[1], dw[0], sizeof(float) * nw);
        mx_cpu_conv_direct_backward(be[T], &d, n, NULL, dw[0], g, x, w);
        mx_cpu_conv_direct_backward(be[T], &d, n, dx[0], dw[1], g, x, w);
        CHECK(memcmp(dw[0], dw[1], sizeof(float) * nw) == 0, "the weight gradient does not depend on din");
        for (int p = 0; p < 2; p++) free(o[p]), free(dx[p]), free(dw[p]);
        free(x), free(w), free(g);
        cases++;
    }
    /* what does not take it: several input channels, stride 2, kernels over 16 */
    const mx_conv_desc two = {.c = 2, .h = 8, .w = 8, .oc = 4, .k = 3, .stride = 1, .oh = 6, .ow = 6};
    const mx_conv_desc s2 = {.c = 1, .h = 8, .w = 8, .oc = 4, .k = 3, .stride = 2, .oh = 3, .ow = 3};
    const mx_conv_desc big = {.c = 1, .h = 20, .w = 20, .oc = 4, .k = 17, .stride = 1, .oh = 4, .ow = 4};
    CHECK(!mx_cpu_conv_direct_applies(&two) && !mx_cpu_conv_direct_applies(&s2) && !mx_cpu_conv_direct_applies(&big),
          "other shapes stay on the im2col path");
    printf("direct convolution vs im2col + GEMM: %d shapes, largest relative difference %.2g\n", cases, worst);
    check_reference(be);
    check_bf16(be);
    mx_backend_destroy(be[1]);
    mx_backend_destroy(be[2]);
    return check_summary("test_conv_direct");
}
