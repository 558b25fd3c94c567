/* The CPU max-pooling kernel's fast paths against the reference loop: outputs equal bit for
 * bit and the same argmax (so backward routes every gradient to the same element), on random
 * shapes (odd sizes, one channel, a plane one window wide) and values chosen to tie often,
 * with NaN, -inf and -FLT_MAX among them; backward the same input gradient bit for bit (every
 * element written, -0 gradients among them). The same for the fused pooling of a relu
 * (engine/core/exec.c's fusion) against relu then pooling. The layer's gradient check (test_layers) covers
 * the maths; this covers the fast paths' equality with it. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "tests/check.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 12345;

static float draw(void)
{
    const double u = check_uniform(&rng);
    if (u < 0.01) return NAN;
    if (u < 0.02) return -INFINITY;
    if (u < 0.03) return -FLT_MAX;
    return (float)((int)(u * 1000) % 4) - 1; /* -1, 0, 1, 2: ties in most windows */
}

int main(void)
{
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_pool: no CPU backend\n");
        return 1;
    }
    int cases = 0, fast = 0;
    for (int trial = 0; trial < 300; trial++) {
        const int n = 1 + trial % 3, c = 1 + (trial / 3) % 4, h = 2 + (trial * 7) % 12, w = 2 + (trial * 5) % 37;
        const int k = trial % 5 == 0 ? 3 : 2, stride = trial % 7 == 0 ? 1 : 2;
        mx_pool_desc d = {.c = c, .h = h, .w = w, .k = k, .stride = stride};
        if (h < k || w < k) continue;
        d.oh = (h - k) / stride + 1, d.ow = (w - k) / stride + 1;
        const size_t nin = (size_t)n * c * h * w, nout = (size_t)n * c * d.oh * d.ow;
        float *in = malloc(nin * sizeof *in), *o1 = malloc(nout * sizeof *o1), *o2 = malloc(nout * sizeof *o2);
        int32_t *a1 = malloc(nout * sizeof *a1), *a2 = malloc(nout * sizeof *a2);
        for (size_t i = 0; i < nin; i++) in[i] = draw();
        mx_cpu_maxpool_forward(be, &d, n, o1, a1, in);
        mx_cpu_maxpool_forward_ref(be, &d, n, o2, a2, in);
        CHECK(memcmp(o1, o2, nout * sizeof *o1) == 0 && memcmp(a1, a2, nout * sizeof *a1) == 0,
              "n %d c %d %dx%d k %d stride %d: the fast path differs from the reference", n, c, h, w, k, stride);
        /* backward: each gradient to the same element, bit for bit (-0, NaN and ties among them) */
        float *g = malloc(nout * sizeof *g), *d1 = malloc(nin * sizeof *d1), *d2 = malloc(nin * sizeof *d2);
        for (size_t i = 0; i < nout; i++) g[i] = i % 11 == 0 ? -0.0f : draw();
        for (size_t i = 0; i < nin; i++) d1[i] = d2[i] = NAN; /* every element must be written */
        mx_cpu_maxpool_backward(be, &d, n, d1, g, a2);
        mx_cpu_maxpool_backward_ref(be, &d, n, d2, g, a2);
        CHECK(memcmp(d1, d2, nin * sizeof *d1) == 0, "n %d c %d %dx%d k %d stride %d: backward differs from the "
              "reference", n, c, h, w, k, stride);
        /* relu then pooling, against the fused kernels: the pooling of the relu's output and
         * backward through both (the relu's gradient a select, as engine/cpu/backend.c's) */
        float *r = malloc(nin * sizeof *r), *d3 = malloc(nin * sizeof *d3);
        be->ops->relu_forward(be, nin, r, in);
        mx_cpu_maxpool_forward_ref(be, &d, n, o2, a2, r);
        mx_cpu_maxpool_relu_forward(be, &d, n, o1, a1, in);
        CHECK(memcmp(o1, o2, nout * sizeof *o1) == 0, "n %d c %d %dx%d k %d stride %d: the fused pooling of a relu "
              "differs from the two apart", n, c, h, w, k, stride);
        mx_cpu_maxpool_backward_ref(be, &d, n, d2, g, a2);
        be->ops->relu_backward(be, nin, d3, d2, r);
        for (size_t i = 0; i < nin; i++) d1[i] = NAN;
        mx_cpu_maxpool_relu_backward(be, &d, n, d1, g, o1, a1);
        CHECK(memcmp(d1, d3, nin * sizeof *d1) == 0, "n %d c %d %dx%d k %d stride %d: the fused backward differs "
              "from the two apart", n, c, h, w, k, stride);
        free(r), free(d3);
        free(g), free(d1), free(d2);
        cases++;
        fast += k == 2 && stride == 2 && d.ow >= 4; /* the shapes the fast path takes */
        free(in), free(o1), free(o2), free(a1), free(a2);
    }
    CHECK(cases > 250 && fast > 50, "only %d cases ran, %d of them on the fast path", cases, fast);
    mx_backend_destroy(be);
    return check_summary("test_pool");
}
