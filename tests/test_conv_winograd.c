/* The Winograd F(4x4, 3x3) convolution (engine/cpu/conv_winograd.c) against the im2col + GEMM
 * reference (itself checked against the definition in test_conv_direct), forward, input
 * gradient and weight gradient (accumulating onto what was there), on random shapes: channels
 * that do not fill a vector, maps narrower than a tile and not a multiple of 4, padding 0 to 2,
 * batches whose tiles span several blocks, 1 and 2 threads. Then what the path promises
 * beyond agreement: results that do not depend on the thread count (bit for bit), a weight
 * gradient that does not depend on whether the input gradient is asked for, and the shapes
 * and CPUs that do not take it. The finite-difference gradient check is test_layers'.
 *
 * Tolerance: F(4,3)'s transforms multiply by up to 8 and divide by 24, so its f32 rounding
 * error is larger than a direct sum's: measured here 5e-7 to 1.1e-5 of the largest value (the
 * most at 128 channels, 14x14). The bound, 5e-5, is far below what a misplaced tile or pixel
 * gives (order 1). */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 5e-5

static uint64_t rng = 777;

static void fill(float *x, size_t n) { check_fill(x, n, &rng); }


typedef struct {
    float *x, *w, *g, *out, *din, *dw;
} bufs;

static void alloc_bufs(bufs *b, size_t nin, size_t nout, size_t nw)
{
    b->x = malloc(sizeof(float) * nin), b->w = malloc(sizeof(float) * nw), b->g = malloc(sizeof(float) * nout);
    b->out = malloc(sizeof(float) * nout), b->din = malloc(sizeof(float) * nin), b->dw = malloc(sizeof(float) * nw);
}

static void free_bufs(bufs *b) { free(b->x), free(b->w), free(b->g), free(b->out), free(b->din), free(b->dw); }

static double worst;

/* One shape: Winograd against the reference, and 2 threads against 1 bit for bit. */
static void check_shape(mx_backend *be[3], const mx_conv_desc *d, int n)
{
    const size_t nin = (size_t)n * d->c * d->h * d->w, nout = (size_t)n * d->oc * d->oh * d->ow;
    const size_t nw = (size_t)d->oc * d->c * 9;
    bufs r, t[3];
    alloc_bufs(&r, nin, nout, nw);
    fill(r.x, nin), fill(r.w, nw), fill(r.g, nout), fill(r.dw, nw);
    for (int T = 1; T <= 2; T++) {
        alloc_bufs(&t[T], nin, nout, nw);
        memcpy(t[T].dw, r.dw, sizeof(float) * nw);
        const int many = n * ((d->oh + 3) / 4) * ((d->ow + 3) / 4) >= 16;
        CHECK(mx_cpu_conv_winograd_applies(be[T], d, n) == many, "c %d oc %d %dx%d pad %d, %d samples: %s Winograd",
              d->c, d->oc, d->h, d->w, d->pad, n, many ? "takes" : "does not take (fewer than 16 tiles)");
        memset(t[T].out, 0xff, sizeof(float) * nout); /* NaN: every output must be written */
        memset(t[T].din, 0xff, sizeof(float) * nin);
        mx_cpu_conv_winograd_forward(be[T], d, n, t[T].out, r.x, r.w);
        mx_cpu_conv_winograd_backward(be[T], d, n, t[T].din, t[T].dw, r.g, r.x, r.w);
    }
    mx_cpu_conv2d_forward_gemm(be[2], d, n, r.out, r.x, r.w);
    mx_cpu_conv2d_backward_gemm(be[2], d, n, r.din, r.dw, r.g, r.x, r.w);
    const double eo = check_rel_diff(t[2].out, r.out, nout), ex = check_rel_diff(t[2].din, r.din, nin);
    const double ew = check_rel_diff(t[2].dw, r.dw, nw);
    CHECK(eo <= TOL && ex <= TOL && ew <= TOL,
          "n %d c %d %dx%d pad %d oc %d: forward %.2g, input gradient %.2g, weight gradient %.2g", n, d->c, d->h,
          d->w, d->pad, d->oc, eo, ex, ew);
    worst = fmax(worst, fmax(eo, fmax(ex, ew)));
    CHECK(memcmp(t[1].out, t[2].out, sizeof(float) * nout) == 0 &&
              memcmp(t[1].din, t[2].din, sizeof(float) * nin) == 0 &&
              memcmp(t[1].dw, t[2].dw, sizeof(float) * nw) == 0,
          "n %d c %d %dx%d oc %d: 2 threads give other bits than 1", n, d->c, d->h, d->w, d->oc);
    /* no input gradient (a first layer): the same weight gradient */
    fill(t[1].dw, nw);
    memcpy(t[2].dw, t[1].dw, sizeof(float) * nw);
    mx_cpu_conv_winograd_backward(be[2], d, n, NULL, t[1].dw, r.g, r.x, r.w);
    mx_cpu_conv_winograd_backward(be[2], d, n, t[2].din, t[2].dw, r.g, r.x, r.w);
    CHECK(memcmp(t[1].dw, t[2].dw, sizeof(float) * nw) == 0, "the weight gradient does not depend on din");
    CHECK(mx_backend_error(be[1]) == 0 && mx_backend_error(be[2]) == 0, "no device error");
    free_bufs(&r), free_bufs(&t[1]), free_bufs(&t[2]);
}

static mx_conv_desc desc(int c, int oc, int h, int w, int pad)
{
    mx_conv_desc d = {.c = c, .h = h, .w = w, .oc = oc, .k = 3, .stride = 1, .pad = pad};
    d.oh = h + 2 * pad - 2, d.ow = w + 2 * pad - 2;
    return d;
}

int main(void)
{
    mx_backend *be[3] = {0};
    if (mx_backend_create(&be[1], "cpu", 0, 1) < 0 || mx_backend_create(&be[2], "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_conv_winograd: no CPU backend\n");
        return 1;
    }
    const mx_conv_desc r18 = desc(64, 64, 28, 28, 1);
    if (!mx_cpu_conv_winograd_applies(be[2], &r18, 8)) {
        printf("test_conv_winograd: skipped: no own AVX-512 f32 GEMM here (or MXBENCH_GEMM=blas)\n");
        return CHECK_SKIP;
    }
    int cases = 0;
    for (int trial = 0; trial < 48; trial++) {
        const int cs[5] = {8, 9, 16, 17, 33}, ocs[5] = {8, 13, 16, 31, 48};
        const int pad = trial % 3, h = 3 - 2 * pad + (trial * 7) % 15, w = 3 - 2 * pad + (trial * 5) % 19;
        if (h < 1 || w < 1) continue;
        const mx_conv_desc d = desc(cs[trial % 5], ocs[(trial / 5) % 5], h < 1 ? 1 : h, w < 1 ? 1 : w, pad);
        if (d.oh < 1 || d.ow < 1) continue;
        check_shape(be, &d, 1 + trial % 4);
        cases++;
    }
    /* resnet18's shapes on 28x28 inputs, batch 8, and one batch of tiles in several blocks */
    const int sides[4] = {28, 14, 7, 4}, chans[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; i++) {
        const mx_conv_desc d = desc(chans[i], chans[i], sides[i], sides[i], 1);
        check_shape(be, &d, i < 2 ? 8 : 4);
        cases++;
    }
    const mx_conv_desc many = desc(16, 16, 30, 30, 1); /* 64 tiles a sample: blocks of several */
    check_shape(be, &many, 70);
    const mx_conv_desc wide = desc(8, 8, 3, 61, 1); /* 16 tiles a row: segments of 7, 7 and 2 */
    check_shape(be, &wide, 5);
    cases++;
    printf("Winograd vs im2col + GEMM: %d shapes, largest relative difference %.2g (bound %.0g)\n", cases, worst,
           TOL);

    /* what does not take it */
    const mx_conv_desc no[4] = {desc(4, 16, 8, 8, 1), desc(16, 4, 8, 8, 1), desc(16, 16, 8, 8, 3),
                                {.c = 16, .h = 8, .w = 8, .oc = 16, .k = 3, .stride = 2, .pad = 1, .oh = 4, .ow = 4}};
    for (int i = 0; i < 4; i++) CHECK(!mx_cpu_conv_winograd_applies(be[2], &no[i], 64), "shape %d is not taken", i);
    const mx_conv_desc five = {.c = 16, .h = 8, .w = 8, .oc = 16, .k = 5, .stride = 1, .pad = 2, .oh = 8, .ow = 8};
    CHECK(!mx_cpu_conv_winograd_applies(be[2], &five, 64), "5x5 kernels are not taken");
    const mx_conv_desc last = desc(512, 512, 4, 4, 1); /* resnet18's last stage: 1 tile a sample */
    CHECK(!mx_cpu_conv_winograd_applies(be[2], &last, 15) && mx_cpu_conv_winograd_applies(be[2], &last, 16),
          "16 tiles at least");
    /* under AMP too: its operands are bf16 or fp16 values already, and F(4,3)'s f32 rounding (as
     * above) is far below the half types' */
    be[2]->math = MX_BF16;
    CHECK(mx_cpu_conv_winograd_applies(be[2], &r18, 8), "bf16 math takes it");
    be[2]->math = MX_F16;
    CHECK(mx_cpu_conv_winograd_applies(be[2], &r18, 8), "fp16 math takes it");
    be[2]->math = MX_F32;
    mx_cpu_gemm_force_blas(1);
    CHECK(!mx_cpu_conv_winograd_applies(be[2], &r18, 8), "the BLAS (MXBENCH_GEMM=blas) keeps the im2col path");
    mx_cpu_gemm_force_blas(0);
    mx_backend_destroy(be[1]);
    mx_backend_destroy(be[2]);
    return check_summary("test_conv_winograd");
}
