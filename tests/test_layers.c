/* Finite-difference gradient checks for every layer and the loss, on random inputs, by the
 * rule of tests/gradcheck.h (L = sum(out * R), central differences of step 1e-3, 1e-2 relative
 * and 1e-3 absolute). The small step also keeps the internal relus of a residual block from
 * crossing their kink (with h = 1e-2 they did, and a central difference across a kink is
 * not a derivative); inputs sit on a 0.025 grid so relu and max pooling see no ties. */
#include "gradcheck.h"
#include "engine/cpu/kernels.h"
#include "engine/core/net.h"
#include "engine/core/rng.h"
#include "base/status.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEP GC_STEP
/* The step of probe(): STEP, or larger for a layer linear in everything probed (see the
 * Winograd checks in main) */
static float step = STEP;

static mx_backend *be;
static mx_rng rng;

static void fill_away_from_kinks(float *x, size_t n)
{
    /* Distinct values on a 0.025 grid, shuffled, none within 0.0125 of zero: no ties
     * for max pooling, no sign changes for relu under a step of 1e-3. */
    int32_t *perm = malloc(sizeof(int32_t) * n);
    for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
    mx_rng_shuffle(&rng, perm, (int)n);
    for (size_t i = 0; i < n; i++) x[i] = 0.025f * ((float)perm[i] - (float)(n / 2)) + 0.0125f;
    free(perm);
}

static int probe(const char *what, mx_net *net, int n, const float *r, float *x, size_t count, const float *grad)
{
    return gc_probe(what, net, n, r, x, count, grad, step, &rng);
}

/* Builds [spec, flatten] on input shape in, runs one backward with dout = R and probes
 * the input gradient and every parameter tensor of the first layer. */
static void check_layer(const char *label, mx_layer_spec spec, mx_shape in, int n, int kinks)
{
    mx_layer_spec specs[2] = {spec, {.kind = "flatten"}};
    mx_net *net;
    int rc = mx_net_create(&net, be, specs, 2, in, n);
    CHECK(rc == MX_OK, "%s: create failed: %s", label, mx_last_error());
    if (rc) return;
    mx_net_init_params(net, 7, MX_WEIGHT_INIT_NORMAL, 0.5f);
    /* Non-trivial parameters: batch-norm scales and all biases away from 1 and 0. */
    for (size_t i = 0; i < net->nweights; i++) net->w[i] += 0.3f * (float)(mx_rng_uniform(&rng) - 0.5);
    const mx_layer *l = &net->layers[0];
    size_t nin = n * mx_shape_size(in), nout = n * mx_shape_size(l->out);
    if (kinks)
        fill_away_from_kinks(net->x, nin);
    else
        for (size_t i = 0; i < nin; i++) net->x[i] = (float)(2 * mx_rng_uniform(&rng) - 1);
    float *r = malloc(sizeof(float) * nout), *din = calloc(nin, sizeof(float));
    for (size_t i = 0; i < nout; i++) r[i] = (float)(2 * mx_rng_uniform(&rng) - 1);

    mx_net_zero_grad(net);
    gc_objective(net, n, r);
    l->ops->backward((mx_layer *)l, be, net->exec->state[0], n, din, r, net->x, net->act[0]);

    int bad = probe("input", net, n, r, net->x, nin, din);
    for (int p = l->param_first; p < l->param_first + l->param_count; p++) {
        const mx_param *pr = &net->params[p];
        bad += probe(pr->name, net, n, r, net->w + pr->offset, pr->count, net->g + pr->offset);
    }
    CHECK(bad == 0, "%s: %d gradient elements disagree with finite differences", label, bad);
    printf("%-28s %s\n", label, bad ? "NOT OK" : "ok");
    free(r);
    free(din);
    mx_net_destroy(net);
}

static void check_loss(void)
{
    const int n = 5, classes = 7;
    float logits[35], dlogits[35];
    int32_t labels[5] = {0, 3, 6, 2, 2};
    for (int i = 0; i < n * classes; i++) logits[i] = (float)(4 * mx_rng_uniform(&rng) - 2);
    int correct;
    const float scale = 1.0f / n;
    be->ops->softmax_xent(be, n, classes, dlogits, &correct, logits, labels, scale);
    int bad = 0;
    for (int i = 0; i < n * classes; i++) {
        float keep = logits[i];
        logits[i] = keep + STEP;
        double lp = be->ops->softmax_eval(be, n, classes, &correct, logits, labels);
        logits[i] = keep - STEP;
        double lm = be->ops->softmax_eval(be, n, classes, &correct, logits, labels);
        logits[i] = keep;
        if (!gc_close(dlogits[i], scale * (lp - lm) / (2 * STEP))) bad++;
    }
    CHECK(bad == 0, "softmax cross-entropy: %d gradient elements disagree", bad);
    printf("%-28s %s\n", "softmax_xent", bad ? "NOT OK" : "ok");
    /* Large logits must not overflow: log-sum-exp is shifted by the max. */
    for (int i = 0; i < n * classes; i++) logits[i] *= 1e4f;
    double big = be->ops->softmax_eval(be, n, classes, &correct, logits, labels);
    CHECK(isfinite(big), "loss on logits of 1e4 is %g", big);
}

static double max_rel(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]) / fmax(0.1, fabs(b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

/* The multi-threaded convolution (each thread on its own samples, private weight gradients
 * summed afterwards) must agree with the one-thread path the gradient checks above cover:
 * only the order of sums differs, so 1e-5 relative to max(0.1, |value|) (values are O(1)). An
 * odd batch leaves the threads unequal slices; dw starts non-zero because gradients accumulate. */
static void check_conv_threads(int stride, int pad, int k)
{
    mx_conv_desc d = {.c = 3, .h = 9, .w = 9, .oc = 4, .k = k, .stride = stride, .pad = pad};
    d.oh = (d.h + 2 * pad - k) / stride + 1;
    d.ow = (d.w + 2 * pad - k) / stride + 1;
    const int n = 5;
    const size_t nin = (size_t)n * d.c * d.h * d.w, nout = (size_t)n * d.oc * d.oh * d.ow,
                 nw = (size_t)d.oc * d.c * k * k;
    float *x = malloc(sizeof(float) * nin), *w = malloc(sizeof(float) * nw), *g = malloc(sizeof(float) * nout);
    float *out[2], *din[2], *dw[2];
    for (size_t i = 0; i < nin; i++) x[i] = (float)(2 * mx_rng_uniform(&rng) - 1);
    for (size_t i = 0; i < nw; i++) w[i] = (float)(2 * mx_rng_uniform(&rng) - 1);
    for (size_t i = 0; i < nout; i++) g[i] = (float)(2 * mx_rng_uniform(&rng) - 1);
    for (int t = 0; t < 2; t++) {
        mx_backend *b;
        mx_backend_create(&b, "cpu", 0, t + 1);
        out[t] = malloc(sizeof(float) * nout);
        din[t] = malloc(sizeof(float) * nin);
        dw[t] = malloc(sizeof(float) * nw);
        for (size_t i = 0; i < nw; i++) dw[t][i] = 0.5f;
        b->ops->conv2d_forward(b, &d, n, out[t], x, w);
        b->ops->conv2d_backward(b, &d, n, din[t], dw[t], g, x, w);
        mx_backend_destroy(b);
    }
    const double e = fmax(max_rel(out[1], out[0], nout), fmax(max_rel(din[1], din[0], nin), max_rel(dw[1], dw[0], nw)));
    CHECK(e <= 1e-5, "conv %dx%d stride %d pad %d: 2 threads differ from 1 by %.3g", k, k, stride, pad, e);
    printf("conv2d %dx%d s%d p%d, 2 threads vs 1   %s (%.1e)\n", k, k, stride, pad, e <= 1e-5 ? "ok" : "NOT OK", e);
    for (int t = 0; t < 2; t++) free(out[t]), free(din[t]), free(dw[t]);
    free(x), free(w), free(g);
}

int main(void)
{
    mx_rng_seed(&rng, 12345);
    if (mx_backend_create(&be, "cpu", 0, 1) != MX_OK) return 1;
    const mx_shape img = {3, 6, 6};
    check_layer("dense", (mx_layer_spec){.kind = "dense", .units = 5}, img, 3, 0);
    check_layer("conv2d 3x3 s1 p1 bias",
                (mx_layer_spec){.kind = "conv2d", .units = 4, .k = 3, .stride = 1, .pad = 1, .bias = 1}, img, 2, 0);
    check_layer("conv2d 3x3 s2 p1", (mx_layer_spec){.kind = "conv2d", .units = 4, .k = 3, .stride = 2, .pad = 1}, img,
                2, 0);
    check_layer("conv2d 5x5 s1 p0 bias",
                (mx_layer_spec){.kind = "conv2d", .units = 2, .k = 5, .stride = 1, .pad = 0, .bias = 1}, img, 2, 0);
    check_layer("conv2d 1x1 s2", (mx_layer_spec){.kind = "conv2d", .units = 3, .k = 1, .stride = 2}, img, 2, 0);
    check_layer("relu", (mx_layer_spec){.kind = "relu"}, img, 2, 1);
    check_layer("maxpool 2", (mx_layer_spec){.kind = "maxpool", .k = 2}, img, 2, 1);
    check_layer("maxpool 3 stride 2", (mx_layer_spec){.kind = "maxpool", .k = 3, .stride = 2}, (mx_shape){2, 7, 7}, 2,
                1);
    check_layer("avgpool_global", (mx_layer_spec){.kind = "avgpool_global"}, img, 2, 0);
    check_layer("batchnorm", (mx_layer_spec){.kind = "batchnorm"}, img, 4, 0);
    check_layer("flatten", (mx_layer_spec){.kind = "flatten"}, img, 2, 0);
    check_layer("residual identity", (mx_layer_spec){.kind = "residual", .units = 3, .stride = 1}, img, 3, 1);
    check_layer("residual projection s2", (mx_layer_spec){.kind = "residual", .units = 4, .stride = 2}, img, 3, 1);
    /* one input channel at stride 1: the direct kernel (engine/cpu/conv_direct.c), odd sizes and padding */
    check_layer("conv2d 1-ch 5x5 s1 p0 bias",
                (mx_layer_spec){.kind = "conv2d", .units = 5, .k = 5, .stride = 1, .pad = 0, .bias = 1},
                (mx_shape){1, 9, 11}, 2, 0);
    check_layer("conv2d 1-ch 3x3 s1 p2", (mx_layer_spec){.kind = "conv2d", .units = 3, .k = 3, .stride = 1, .pad = 2},
                (mx_shape){1, 7, 5}, 3, 0);
    check_layer("conv2d 1-ch 3x3 s2 p1", (mx_layer_spec){.kind = "conv2d", .units = 4, .k = 3, .stride = 2, .pad = 1},
                (mx_shape){1, 7, 7}, 2, 0);
    check_loss();
    check_conv_threads(1, 1, 3);
    check_conv_threads(2, 1, 3);
    check_conv_threads(2, 0, 1);
    /* 3x3 at stride 1 with 8+ channels: Winograd F(4x4,3x3) (engine/cpu/conv_winograd.c) where the CPU
     * has the own AVX-512 GEMM; maps not a multiple of the 4x4 tile, padding 1 and 2 (after
     * the thread checks, whose random data they would otherwise change) */
    const mx_conv_desc wg[2] = {{.c = 8, .h = 15, .w = 13, .oc = 9, .k = 3, .stride = 1, .pad = 1, .oh = 15, .ow = 13},
                                {.c = 9, .h = 14, .w = 13, .oc = 8, .k = 3, .stride = 1, .pad = 2, .oh = 16, .ow = 15}};
    CHECK(!mx_cpu_gemm_own() || (mx_cpu_conv_path_winograd(be, &wg[0], 4) && mx_cpu_conv_path_winograd(be, &wg[1], 4)),
          "the next two checks take the Winograd path");
    /* A convolution is linear in its input and its weights, so a central difference has no
     * truncation error at any step; F(4,3)'s transforms round more than a direct sum (up to 1e-5
     * of the outputs), which at STEP put single elements 1.5-2% off. A step of 0.05 divides that
     * noise by 50. */
    step = 0.05f;
    check_layer("conv2d 8-ch 3x3 s1 p1 bias",
                (mx_layer_spec){.kind = "conv2d", .units = 9, .k = 3, .stride = 1, .pad = 1, .bias = 1},
                (mx_shape){8, 15, 13}, 4, 0);
    check_layer("conv2d 9-ch 3x3 s1 p2", (mx_layer_spec){.kind = "conv2d", .units = 8, .k = 3, .stride = 1, .pad = 2},
                (mx_shape){9, 14, 13}, 4, 0);
    step = STEP;

    /* Bad specifications give errors naming the value, not crashes. */
    mx_net *net;
    mx_layer_spec badk[2] = {{.kind = "conv2d", .units = 4, .k = 9, .stride = 1}, {.kind = "flatten"}};
    CHECK(mx_net_create(&net, be, badk, 2, img, 2) == MX_EINVAL && strstr(mx_last_error(), "kernel 9"), "%s",
          mx_last_error());
    mx_layer_spec unknown[1] = {{.kind = "lstm"}};
    CHECK(mx_net_create(&net, be, unknown, 1, img, 2) == MX_EINVAL && strstr(mx_last_error(), "lstm"), "%s",
          mx_last_error());
    mx_backend_destroy(be);
    return check_summary("test_layers");
}
