/* oneDNN's bf16 convolutions (engine/cpu/conv_dnnl.c) against mxbench's im2col + bf16 GEMM
 * under bf16 math (itself checked against a scalar reference that rounds the same way in
 * test_gemm, and against the definition in test_conv_direct), forward, input gradient and
 * weight gradient (added onto what dw held), on random shapes: channels 16 to 64, odd maps
 * narrower than a block, padding 0 and 1, strides 1 and 2, batches 1 to 5, 1 and 2 threads;
 * then resnet18's shapes. The finite-difference check of the convolution is test_layers', on
 * the reference this path is compared with.
 *
 * The operands are bf16 values, as under AMP, so every product is exact in f32 and the two
 * paths differ only in the order of their f32 sums: measured 1e-7 to 1e-6 of the largest
 * value. The bound, 2e-5, is far below what a misplaced pixel or an unrounded operand gives
 * (1e-3 and more).
 *
 * Beyond agreement: every output is written (NaN beforehand), a weight gradient that does not
 * depend on whether the input gradient is asked for, a second call (primitives from the
 * device's cache) giving the same bits, the shapes and maths oneDNN does not take, and more
 * shapes than a device caches (oneDNN declines the rest, which run on mxbench's kernels).
 *
 * Which kernels oneDNN picks, and so whether it takes a shape at all or takes operands in
 * nChw16c, is its choice from cpuid (AVX-512 bf16, AMX, or none under ONEDNN_MAX_CPU_ISA=AVX2):
 * the test asserts that whichever path runs is right, that a refusal writes nothing, and that
 * `mxbench info`'s probe says what runs; CTest runs it again with the ISA capped. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 2e-5

static uint64_t rng = 4242;
static double worst;
static int shapes_taken, shapes_seen;

/* uniform values rounded to bf16, as AMP's operands are */
static float *bf16_values(size_t n)
{
    float *x = malloc(sizeof(float) * n);
    check_fill(x, n, &rng);
    for (size_t i = 0; i < n; i++) x[i] = mx_bf16_to_f32(mx_f32_to_bf16(x[i]));
    return x;
}

static mx_conv_desc desc(int c, int oc, int h, int w, int stride, int pad)
{
    mx_conv_desc d = {.c = c, .h = h, .w = w, .oc = oc, .k = 3, .stride = stride, .pad = pad};
    d.oh = (h + 2 * pad - 3) / stride + 1, d.ow = (w + 2 * pad - 3) / stride + 1;
    return d;
}

/* One shape on device be (bf16 math): oneDNN (called directly, so also where the dispatch
 * keeps the backward on mxbench's kernels) or, where it does not take the shape, the
 * dispatch, against the reference. may_take 0: the device's cache is full, oneDNN must not
 * take it; 1: oneDNN's kernels here decide. Returns whether oneDNN took it. */
static int check_shape(mx_backend *be, mx_backend *ref, const mx_conv_desc *d, int n, int may_take)
{
    const size_t nin = (size_t)n * d->c * d->h * d->w, nout = (size_t)n * d->oc * d->oh * d->ow;
    const size_t nw = (size_t)d->oc * d->c * 9;
    float *x = bf16_values(nin), *w = bf16_values(nw), *g = bf16_values(nout), *dw0 = bf16_values(nw);
    float *out = malloc(sizeof(float) * nout), *rout = malloc(sizeof(float) * nout);
    float *din = malloc(sizeof(float) * nin), *rdin = malloc(sizeof(float) * nin);
    float *dw = malloc(sizeof(float) * nw), *rdw = malloc(sizeof(float) * nw), *dw2 = malloc(sizeof(float) * nw);
    memcpy(dw, dw0, sizeof(float) * nw), memcpy(rdw, dw0, sizeof(float) * nw);
    memset(out, 0xff, sizeof(float) * nout); /* NaN: every output must be written */
    memset(din, 0xff, sizeof(float) * nin);
    const int taken = mx_cpu_conv_dnnl_forward(be, d, n, out, x, w);
    CHECK(may_take || !taken, "n %d c %d %dx%d oc %d: oneDNN does not take it (the device's cache is full)", n, d->c,
          d->h, d->w, d->oc);
    shapes_taken += taken, shapes_seen++;
    if (!taken) mx_cpu_conv2d_forward(be, d, n, out, x, w);
    if (!mx_cpu_conv_dnnl_backward(be, d, n, din, dw, g, x, w)) mx_cpu_conv2d_backward(be, d, n, din, dw, g, x, w);
    mx_cpu_conv2d_forward_gemm(ref, d, n, rout, x, w);
    mx_cpu_conv2d_backward_gemm(ref, d, n, rdin, rdw, g, x, w);
    const double eo = check_rel_diff(out, rout, nout), ex = check_rel_diff(din, rdin, nin);
    const double ew = check_rel_diff(dw, rdw, nw);
    CHECK(eo <= TOL && ex <= TOL && ew <= TOL,
          "n %d c %d %dx%d stride %d pad %d oc %d, %d thread(s): forward %.2g, input gradient %.2g, weight "
          "gradient %.2g",
          n, d->c, d->h, d->w, d->stride, d->pad, d->oc, be->nthreads, eo, ex, ew);
    worst = fmax(worst, fmax(eo, fmax(ex, ew)));
    /* again, from the cache, without the input gradient: the same bits */
    memcpy(dw2, dw0, sizeof(float) * nw);
    memcpy(rout, out, sizeof(float) * nout);
    if (!mx_cpu_conv_dnnl_forward(be, d, n, out, x, w)) mx_cpu_conv2d_forward(be, d, n, out, x, w);
    if (!mx_cpu_conv_dnnl_backward(be, d, n, NULL, dw2, g, x, w)) mx_cpu_conv2d_backward(be, d, n, NULL, dw2, g, x, w);
    CHECK(memcmp(out, rout, sizeof(float) * nout) == 0, "a second forward gives the same bits");
    CHECK(memcmp(dw, dw2, sizeof(float) * nw) == 0, "the weight gradient does not depend on din");
    CHECK(mx_backend_error(be) == 0, "no device error");
    free(x), free(w), free(g), free(dw0), free(out), free(rout), free(din), free(rdin), free(dw), free(rdw), free(dw2);
    return taken;
}

/* The dispatch (mx_cpu_conv2d_*: oneDNN's forward and input gradient, and its weight gradient
 * or mxbench's by output size) against the reference. */
static void check_dispatch(mx_backend *be, mx_backend *ref, const mx_conv_desc *d, int n)
{
    const size_t nin = (size_t)n * d->c * d->h * d->w, nout = (size_t)n * d->oc * d->oh * d->ow;
    const size_t nw = (size_t)d->oc * d->c * 9;
    float *x = bf16_values(nin), *w = bf16_values(nw), *g = bf16_values(nout), *dw = bf16_values(nw);
    float *rdw = malloc(sizeof(float) * nw), *out = malloc(sizeof(float) * nout), *rout = malloc(sizeof(float) * nout);
    float *din = malloc(sizeof(float) * nin), *rdin = malloc(sizeof(float) * nin);
    memcpy(rdw, dw, sizeof(float) * nw);
    mx_cpu_conv2d_forward(be, d, n, out, x, w);
    mx_cpu_conv2d_backward(be, d, n, din, dw, g, x, w);
    mx_cpu_conv2d_forward_gemm(ref, d, n, rout, x, w);
    mx_cpu_conv2d_backward_gemm(ref, d, n, rdin, rdw, g, x, w);
    /* Winograd (mxbench's backward on small outputs) rounds more: its bound (test_conv_winograd) */
    const double eo = check_rel_diff(out, rout, nout), ex = check_rel_diff(din, rdin, nin),
                 ew = check_rel_diff(dw, rdw, nw);
    CHECK(eo <= TOL && ex <= TOL && ew <= 5e-5,
          "dispatch, c %d %dx%d stride %d: forward %.2g, input gradient %.2g, weight gradient %.2g", d->c, d->h, d->w,
          d->stride, eo, ex, ew);
    free(x), free(w), free(g), free(dw), free(rdw), free(out), free(rout), free(din), free(rdin);
}

/* The layout changes against their definition, on pixel counts with and without a tail. */
static void check_reorders(mx_backend *be)
{
    const int hws[5] = {1, 15, 16, 49, 196};
    for (int i = 0; i < 5; i++) {
        const int n = 3, c = 32, hw = hws[i];
        const size_t len = (size_t)n * c * hw;
        float *x = bf16_values(len), *back = malloc(sizeof(float) * len), *blk = malloc(sizeof(float) * len);
        uint16_t *h = malloc(sizeof(uint16_t) * len);
        int bad = 0;
        mx_cpu_nchw_to_c16_bf16(be, n, c, hw, h, x);
        for (int s = 0; s < n; s++)
            for (int k = 0; k < c; k++)
                for (int p = 0; p < hw; p++) {
                    const size_t at = (((size_t)s * (c / 16) + k / 16) * hw + p) * 16 + k % 16;
                    bad += h[at] != mx_f32_to_bf16(x[((size_t)s * c + k) * hw + p]);
                    blk[at] = x[((size_t)s * c + k) * hw + p];
                }
        mx_cpu_c16_to_nchw(be, n, c, hw, back, blk);
        CHECK(bad == 0 && memcmp(back, x, sizeof(float) * len) == 0,
              "%d pixels: %d values misplaced to nChw16c, %s back", hw, bad,
              memcmp(back, x, sizeof(float) * len) ? "some misplaced" : "none");
        free(x), free(back), free(blk), free(h);
    }
}

/* Operands handed over in nChw16c (a residual block's main branch, engine/cpu/res_branch.c): the same
 * primitives on the same values, so the same bits as the NCHW calls, forward and backward. */
static void check_c16(mx_backend *be, const mx_conv_desc *d, int n)
{
    const size_t nin = (size_t)n * d->c * d->h * d->w, nout = (size_t)n * d->oc * d->oh * d->ow;
    const size_t nw = (size_t)d->oc * d->c * 9;
    float *x = bf16_values(nin), *w = bf16_values(nw), *g = bf16_values(nout);
    float *out = malloc(sizeof(float) * nout), *o16 = malloc(sizeof(float) * nout),
          *back = malloc(sizeof(float) * nout);
    float *din = malloc(sizeof(float) * nin), *d16 = malloc(sizeof(float) * nin), *dback = malloc(sizeof(float) * nin);
    float *dw = calloc(nw, sizeof(float)), *dw16 = calloc(nw, sizeof(float));
    uint16_t *x16 = malloc(sizeof(uint16_t) * nin), *g16 = malloc(sizeof(uint16_t) * nout);
    const int hw = d->h * d->w, ohw = d->oh * d->ow;
    mx_cpu_nchw_to_c16_bf16(be, n, d->c, hw, x16, x);
    mx_cpu_nchw_to_c16_bf16(be, n, d->oc, ohw, g16, g);
    const unsigned fwd = MX_DNNL_C16_IN | MX_DNNL_C16_OUT, bwd = MX_DNNL_C16_IN | MX_DNNL_C16_DOUT | MX_DNNL_C16_DIN;
    if (!mx_cpu_conv_dnnl_takes_c16(be, d, n, fwd, bwd)) {
        /* oneDNN's kernels here lay the operands out otherwise: the calls refuse, writing nothing */
        memset(o16, 0x7f, sizeof(float) * nout), memcpy(back, o16, sizeof(float) * nout);
        memset(d16, 0x7f, sizeof(float) * nin), memcpy(dback, d16, sizeof(float) * nin);
        const int ran = mx_cpu_conv_dnnl_forward_c16(be, d, n, o16, x16, w, fwd) ||
                        mx_cpu_conv_dnnl_backward_c16(be, d, n, d16, dw16, g16, x16, w, bwd);
        CHECK(!ran && !memcmp(o16, back, sizeof(float) * nout) && !memcmp(d16, dback, sizeof(float) * nin),
              "c %d %dx%d stride %d: nChw16c operands not taken, and the calls write nothing", d->c, d->h, d->w,
              d->stride);
        printf("c %d %dx%d stride %d: oneDNN's %s kernels keep layouts of their own (nChw16c calls refused)\n", d->c,
               d->h, d->w, d->stride, mx_cpu_dnnl_isa());
        goto out;
    }
    int ok = mx_cpu_conv_dnnl_forward(be, d, n, out, x, w) &&
             mx_cpu_conv_dnnl_forward_c16(be, d, n, o16, x16, w, MX_DNNL_C16_IN | MX_DNNL_C16_OUT) &&
             mx_cpu_conv_dnnl_backward(be, d, n, din, dw, g, x, w) &&
             mx_cpu_conv_dnnl_backward_c16(be, d, n, d16, dw16, g16, x16, w,
                                           MX_DNNL_C16_IN | MX_DNNL_C16_DOUT | MX_DNNL_C16_DIN);
    mx_cpu_c16_to_nchw(be, n, d->oc, ohw, back, o16);
    mx_cpu_c16_to_nchw(be, n, d->c, hw, dback, d16);
    ok = ok && !memcmp(out, back, sizeof(float) * nout) && !memcmp(din, dback, sizeof(float) * nin) &&
         !memcmp(dw, dw16, sizeof(float) * nw);
    CHECK(ok, "c %d %dx%d stride %d: nChw16c operands give other bits than NCHW ones", d->c, d->h, d->w, d->stride);
out:
    free(x), free(w), free(g), free(out), free(o16), free(back), free(din), free(d16), free(dback), free(dw),
        free(dw16);
    free(x16), free(g16);
}

int main(void)
{
    if (!mx_cpu_dnnl_available() || !mx_cpu_bf16_native()) {
        printf("test_conv_dnnl: skipped: %s\n", !mx_cpu_dnnl_available()
                                                    ? "this build has no oneDNN (MXBENCH_DNNL)"
                                                    : "no avx512_bf16 here (or MXBENCH_BF16=emulate)");
        return CHECK_SKIP;
    }
    mx_backend *be[3] = {0}, *ref = NULL;
    if (mx_backend_create(&be[1], "cpu", 0, 1) < 0 || mx_backend_create(&be[2], "cpu", 0, 2) < 0 ||
        mx_backend_create(&ref, "cpu", 1, 2) < 0) {
        fprintf(stderr, "test_conv_dnnl: no CPU backend\n");
        return 1;
    }
    be[1]->math = be[2]->math = ref->math = MX_BF16;
    const mx_conv_desc r18 = desc(64, 64, 28, 28, 1, 1);
    CHECK(mx_cpu_conv_dnnl_applies(be[2], &r18), "bf16 math on bf16 units takes resnet18's 3x3 layers");

    int cases = 0;
    for (int trial = 0; trial < 40; trial++) {
        const int cs[4] = {16, 32, 48, 64}, ocs[4] = {16, 48, 32, 64};
        const int stride = 1 + trial % 2, pad = (trial / 2) % 2;
        const int h = 3 + (trial * 7) % 13, w = 3 + (trial * 5) % 11;
        const mx_conv_desc d = desc(cs[trial % 4], ocs[(trial / 3) % 4], h, w, stride, pad);
        check_shape(be[1 + trial % 2], ref, &d, 1 + trial % 5, 1);
        cases++;
    }
    check_reorders(be[2]);
    const mx_conv_desc c16a = desc(32, 64, 14, 14, 1, 1), c16b = desc(64, 128, 15, 13, 2, 1);
    check_c16(be[2], &c16a, 3);
    check_c16(be[1], &c16b, 2);
    /* resnet18's 3x3 shapes on 28x28 inputs, both strides, and through the dispatch */
    const int sides[4] = {28, 14, 7, 4}, chans[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; i++) {
        const mx_conv_desc s1 = desc(chans[i], chans[i], sides[i], sides[i], 1, 1);
        check_shape(be[2], ref, &s1, i < 2 ? 4 : 2, 1);
        check_dispatch(be[2], ref, &s1, 16);
        if (i == 0) continue;
        const mx_conv_desc s2 = desc(chans[i - 1], chans[i], sides[i - 1], sides[i - 1], 2, 1);
        check_shape(be[2], ref, &s2, 2, 1);
        if (i == 3) check_dispatch(be[2], ref, &s2, 16); /* oneDNN's input gradient, the GEMM's weight gradient */
        cases += 2;
    }
    /* more shapes than a device keeps primitives for (64): the rest run on mxbench's kernels */
    mx_backend *full = NULL;
    if (mx_backend_create(&full, "cpu", 0, 1) < 0) return 1;
    full->math = MX_BF16;
    int cached = 0;
    for (int i = 0; i < 70; i++) {
        const mx_conv_desc d = desc(16, 16, 4 + i % 5, 3 + i / 5, 1, 1);
        cached += check_shape(full, ref, &d, 1, i < 64);
        cases++;
    }
    mx_backend_destroy(full);
    printf("oneDNN bf16 (its %s kernels took %d of %d shapes) vs im2col + bf16 GEMM: %d shapes, largest relative "
           "difference %.2g (bound %.0g)\n",
           mx_cpu_dnnl_isa(), shapes_taken, shapes_seen, cases, worst, TOL);
    CHECK(cached == 0 || cached == 64, "a device caches 64 shapes of a kind oneDNN takes (took %d)", cached);
    /* what `mxbench info` says of the residual branch is what the layouts of its shape give */
    mx_backend *probe = NULL;
    if (mx_backend_create(&probe, "cpu", 0, 1) < 0) return 1;
    probe->math = MX_BF16;
    const unsigned in_out = MX_DNNL_C16_IN | MX_DNNL_C16_OUT, in_dout = MX_DNNL_C16_IN | MX_DNNL_C16_DOUT;
    const int branch = mx_cpu_conv_dnnl_takes_c16(probe, &r18, 2, in_out, in_dout) &&
                       mx_cpu_conv_dnnl_takes_c16(probe, &r18, 2, in_out, in_dout | MX_DNNL_C16_DIN);
    CHECK(mx_cpu_residual_branch_c16_probe() == branch, "mxbench info's residual-branch line says what runs (%s)",
          branch ? "nChw16c" : "layer by layer");
    mx_backend_destroy(probe);

    /* what it does not take; the backward only on 32+ output pixels */
    const mx_conv_desc last = desc(512, 512, 4, 4, 1, 1), s3 = desc(256, 256, 7, 7, 1, 1);
    CHECK(mx_cpu_conv_dnnl_applies(be[2], &last) && !mx_cpu_conv_dnnl_applies_backward(be[2], &last) &&
              mx_cpu_conv_dnnl_applies_backward(be[2], &s3),
          "4x4 outputs: the forward on oneDNN, the backward not; 7x7: both");
    const mx_conv_desc no[3] = {desc(8, 16, 8, 8, 1, 1), desc(16, 10, 8, 8, 1, 1),
                                {.c = 16, .h = 8, .w = 8, .oc = 16, .k = 5, .stride = 1, .pad = 2, .oh = 8, .ow = 8}};
    for (int i = 0; i < 3; i++) CHECK(!mx_cpu_conv_dnnl_applies(be[2], &no[i]), "shape %d is not taken", i);
    be[2]->math = MX_F32;
    CHECK(!mx_cpu_conv_dnnl_applies(be[2], &r18), "f32 math keeps mxbench's kernels");
    be[2]->math = MX_F16;
    CHECK(!mx_cpu_conv_dnnl_applies(be[2], &r18), "fp16 math keeps mxbench's kernels");
    be[2]->math = MX_BF16;
    mx_cpu_bf16_force_emulation(1);
    CHECK(!mx_cpu_conv_dnnl_applies(be[2], &r18), "the emulation (MXBENCH_BF16=emulate) keeps mxbench's kernels");
    mx_cpu_bf16_force_emulation(0);
    mx_backend_destroy(be[1]);
    mx_backend_destroy(be[2]);
    mx_backend_destroy(ref);
    return check_summary("test_conv_dnnl");
}
