/* Every CUDA backend op against the CPU backend, on fresh random inputs (never zeros) with
 * the GPU's outputs poisoned (NaN bytes) before each call, so an op that leaves an element
 * unwritten fails. Error is the largest absolute difference over the largest reference
 * magnitude; bounds per arithmetic: f32 2e-5 (summation order only), TF32 and half
 * precision 1e-2 (operands rounded to 10 or 7-8 mantissa bits). Exits 77 where there is no
 * CUDA device (or no CUDA build). */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"

#define CUDA_CHECK_SEED 88172645463325252ull
#include "tests/cuda_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x rounded to values of type t, in place (AMP's operands are such values) */
static void round_all(mx_dtype t, float *x, size_t n)
{
    unsigned short h;
    for (size_t i = 0; i < n; i++) mx_dtype_store(t, &h, 0, x[i]), x[i] = mx_dtype_load(t, &h, 0);
}

static float *host_random(size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) h[i] = uniform();
    return h;
}

/* The device buffer d (n floats) against the host reference ref. */
static void expect(const char *what, const void *d, const float *ref, size_t n, double tol)
{
    float *got = down(d, sizeof(float) * n);
    const double e = rel_err(got, ref, n);
    CHECK(e <= tol, "%s: relative error %.3g, bound %.3g", what, e, tol);
    if (e <= tol) printf("ok   %-44s rel err %.2e (bound %.0e)\n", what, e, tol);
    free(got);
}

static void sync_ok(const char *what)
{
    CHECK(gpu->ops->sync(gpu) == MX_OK, "%s: %s", what, mx_last_error());
}

static void test_gemm(int ta, int tb, int m, int n, int k, float beta, int tf32, mx_dtype math)
{
    const int lda = ta ? m : k, ldb = tb ? k : n;
    float *a = host_random((size_t)m * k), *b = host_random((size_t)k * n), *c = host_random((size_t)m * n);
    if (math != MX_F32) round_all(math, a, (size_t)m * k), round_all(math, b, (size_t)k * n);
    void *da = up(a, sizeof(float) * m * k), *db = up(b, sizeof(float) * k * n), *dc = up(c, sizeof(float) * m * n);
    cpu->ops->gemm(cpu, ta, tb, m, n, k, 1.5f, a, lda, b, ldb, beta, c, n);
    gpu->tf32 = tf32, gpu->math = math;
    gpu->ops->gemm(gpu, ta, tb, m, n, k, 1.5f, da, lda, db, ldb, beta, dc, n);
    gpu->tf32 = 0, gpu->math = MX_F32;
    sync_ok("gemm");
    char what[96];
    snprintf(what, sizeof what, "gemm %c%c %dx%dx%d beta %g%s%s", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, beta,
             tf32 ? " tf32" : "", math != MX_F32 ? (math == MX_BF16 ? " bf16 math" : " f16 math") : "");
    expect(what, dc, c, (size_t)m * n, tf32 || math != MX_F32 ? 1e-2 : 2e-5);
    gpu->ops->free(gpu, da), gpu->ops->free(gpu, db), gpu->ops->free(gpu, dc);
    free(a), free(b), free(c);
}

static void test_gemm_ex(mx_dtype t)
{
    const int m = 33, n = 47, k = 65;
    float *a = host_random((size_t)m * k), *b = host_random((size_t)k * n), *c = malloc(sizeof(float) * m * n);
    unsigned short *ah = malloc(2 * m * k), *bh = malloc(2 * k * n);
    for (int i = 0; i < m * k; i++) mx_dtype_store(t, ah, i, a[i]);
    for (int i = 0; i < k * n; i++) mx_dtype_store(t, bh, i, b[i]);
    cpu->ops->gemm_ex(cpu, 0, 1, m, n, k, 1, ah, t, k, bh, t, k, 0, c, MX_F32, n, MX_F32);
    void *da = up(ah, 2 * m * k), *db = up(bh, 2 * k * n), *dc = poisoned(sizeof(float) * m * n);
    gpu->ops->gemm_ex(gpu, 0, 1, m, n, k, 1, da, t, k, db, t, k, 0, dc, MX_F32, n, MX_F32);
    sync_ok("gemm_ex");
    char what[64];
    snprintf(what, sizeof what, "gemm_ex %s operands, f32 out", mx_dtype_name(t));
    expect(what, dc, c, (size_t)m * n, 2e-5); /* exact products, f32 sums */
    gpu->ops->free(gpu, da), gpu->ops->free(gpu, db), gpu->ops->free(gpu, dc);
    free(a), free(b), free(c), free(ah), free(bh);
}

static void test_conv(int c, int h, int w, int oc, int k, int stride, int pad, int n, mx_dtype math)
{
    mx_conv_desc d = {c, h, w, oc, k, stride, pad, (h + 2 * pad - k) / stride + 1, (w + 2 * pad - k) / stride + 1};
    const size_t nin = (size_t)n * c * h * w, nw = (size_t)oc * c * k * k, nout = (size_t)n * oc * d.oh * d.ow;
    float *in = host_random(nin), *wt = host_random(nw), *dout = host_random(nout), *dw = host_random(nw);
    if (math != MX_F32) /* half operands: values of that type, as AMP gives them */
        round_all(math, in, nin), round_all(math, wt, nw), round_all(math, dout, nout);
    float *out = malloc(sizeof(float) * nout), *din = malloc(sizeof(float) * nin);
    void *g_in = up(in, 4 * nin), *g_w = up(wt, 4 * nw), *g_dout = up(dout, 4 * nout), *g_dw = up(dw, 4 * nw);
    void *g_out = poisoned(4 * nout), *g_din = poisoned(4 * nin);
    cpu->ops->conv2d_forward(cpu, &d, n, out, in, wt);
    cpu->ops->conv2d_backward(cpu, &d, n, din, dw, dout, in, wt);
    gpu->math = math;
    gpu->ops->conv2d_forward(gpu, &d, n, g_out, g_in, g_w);
    gpu->ops->conv2d_backward(gpu, &d, n, g_din, g_dw, g_dout, g_in, g_w);
    gpu->math = MX_F32;
    sync_ok("conv2d");
    char what[96];
    const double tol = math == MX_F32 ? 2e-5 : 1e-2;
    const char *mt = math == MX_F32 ? "" : math == MX_BF16 ? " bf16" : " f16";
    snprintf(what, sizeof what, "conv %dx%dx%d->%d k%d s%d p%d n%d%s fwd", c, h, w, oc, k, stride, pad, n, mt);
    expect(what, g_out, out, nout, tol);
    snprintf(what, sizeof what, "conv %dx%dx%d->%d k%d s%d p%d n%d%s din", c, h, w, oc, k, stride, pad, n, mt);
    expect(what, g_din, din, nin, tol);
    snprintf(what, sizeof what, "conv %dx%dx%d->%d k%d s%d p%d n%d%s dw+=", c, h, w, oc, k, stride, pad, n, mt);
    expect(what, g_dw, dw, nw, tol);
    void *bufs[] = {g_in, g_w, g_dout, g_dw, g_out, g_din};
    for (int i = 0; i < 6; i++) gpu->ops->free(gpu, bufs[i]);
    free(in), free(wt), free(dout), free(dw), free(out), free(din);
}

/* The elementwise and reduction ops: one shape each that is not a multiple of a block. */
static void test_bias(int outer, int c, int inner)
{
    const size_t n = (size_t)outer * c * inner;
    float *y = host_random(n), *b = host_random(c), *db = host_random(c);
    void *gy = up(y, 4 * n), *gb = up(b, 4 * c), *gdb = up(db, 4 * c);
    cpu->ops->bias_forward(cpu, outer, c, inner, y, b);
    gpu->ops->bias_forward(gpu, outer, c, inner, gy, gb);
    cpu->ops->bias_backward(cpu, outer, c, inner, db, y);
    gpu->ops->bias_backward(gpu, outer, c, inner, gdb, gy);
    sync_ok("bias");
    char what[64];
    snprintf(what, sizeof what, "bias forward %dx%dx%d", outer, c, inner);
    expect(what, gy, y, n, 2e-5);
    snprintf(what, sizeof what, "bias backward %dx%dx%d (db +=)", outer, c, inner);
    expect(what, gdb, db, c, 2e-5);
    gpu->ops->free(gpu, gy), gpu->ops->free(gpu, gb), gpu->ops->free(gpu, gdb);
    free(y), free(b), free(db);
}

static void test_pool(int c, int h, int w, int k, int stride, int n)
{
    mx_pool_desc d = {c, h, w, k, stride, (h - k) / stride + 1, (w - k) / stride + 1};
    const size_t nin = (size_t)n * c * h * w, nout = (size_t)n * c * d.oh * d.ow;
    float *in = host_random(nin), *dout = host_random(nout), *out = malloc(4 * nout), *din = malloc(4 * nin);
    int32_t *arg = malloc(4 * nout);
    void *gin = up(in, 4 * nin), *gdout = up(dout, 4 * nout), *gout = poisoned(4 * nout), *garg = poisoned(4 * nout),
         *gdin = poisoned(4 * nin);
    cpu->ops->maxpool_forward(cpu, &d, n, out, arg, in);
    cpu->ops->maxpool_backward(cpu, &d, n, din, dout, arg);
    gpu->ops->maxpool_forward(gpu, &d, n, gout, garg, gin);
    gpu->ops->maxpool_backward(gpu, &d, n, gdin, gdout, garg);
    sync_ok("maxpool");
    int32_t *got = (int32_t *)down(garg, 4 * nout);
    CHECK(memcmp(got, arg, 4 * nout) == 0, "maxpool %dx%d k%d s%d: argmax differs", h, w, k, stride);
    free(got);
    char what[64];
    snprintf(what, sizeof what, "maxpool %dx%dx%d k%d s%d forward", c, h, w, k, stride);
    expect(what, gout, out, nout, 0);
    snprintf(what, sizeof what, "maxpool %dx%dx%d k%d s%d backward", c, h, w, k, stride);
    expect(what, gdin, din, nin, 2e-6);
    void *bufs[] = {gin, gdout, gout, garg, gdin};
    for (int i = 0; i < 5; i++) gpu->ops->free(gpu, bufs[i]);
    free(in), free(dout), free(out), free(din), free(arg);
}

static void test_avgpool(int n, int c, int hw)
{
    const size_t nin = (size_t)n * c * hw;
    float *in = host_random(nin), *dout = host_random((size_t)n * c), *out = malloc(4 * n * c), *din = malloc(4 * nin);
    void *gin = up(in, 4 * nin), *gdout = up(dout, 4 * n * c), *gout = poisoned(4 * n * c), *gdin = poisoned(4 * nin);
    cpu->ops->avgpool_global_forward(cpu, n, c, hw, out, in);
    cpu->ops->avgpool_global_backward(cpu, n, c, hw, din, dout);
    gpu->ops->avgpool_global_forward(gpu, n, c, hw, gout, gin);
    gpu->ops->avgpool_global_backward(gpu, n, c, hw, gdin, gdout);
    sync_ok("avgpool");
    expect("global average pool forward", gout, out, (size_t)n * c, 2e-6);
    expect("global average pool backward", gdin, din, nin, 2e-6);
    gpu->ops->free(gpu, gin), gpu->ops->free(gpu, gdout), gpu->ops->free(gpu, gout), gpu->ops->free(gpu, gdin);
    free(in), free(dout), free(out), free(din);
}

static void test_batchnorm(int n, int c, int hw)
{
    const size_t nx = (size_t)n * c * hw;
    float *in = host_random(nx), *dout = host_random(nx), *gam = host_random(c), *bet = host_random(c);
    float *rm = host_random(c), *rv = host_random(c), *dg = host_random(c), *dbt = host_random(c);
    for (int j = 0; j < c; j++) rv[j] = fabsf(rv[j]) + 0.5f;
    float *out = malloc(4 * nx), *din = malloc(4 * nx), *mean = malloc(4 * c), *istd = malloc(4 * c),
          *inf = malloc(4 * nx);
    void *gin = up(in, 4 * nx), *gdout = up(dout, 4 * nx), *ggam = up(gam, 4 * c), *gbet = up(bet, 4 * c),
         *grm = up(rm, 4 * c), *grv = up(rv, 4 * c), *gdg = up(dg, 4 * c), *gdb = up(dbt, 4 * c),
         *gout = poisoned(4 * nx), *gdin = poisoned(4 * nx), *gmean = poisoned(4 * c), *gistd = poisoned(4 * c),
         *ginf = poisoned(4 * nx);
    const float eps = 1e-5f, mom = 0.9f;
    cpu->ops->batchnorm_forward_train(cpu, n, c, hw, out, mean, istd, rm, rv, in, gam, bet, eps, mom);
    cpu->ops->batchnorm_backward(cpu, n, c, hw, din, dg, dbt, dout, in, mean, istd, gam);
    cpu->ops->batchnorm_forward_infer(cpu, n, c, hw, inf, in, gam, bet, rm, rv, eps);
    gpu->ops->batchnorm_forward_train(gpu, n, c, hw, gout, gmean, gistd, grm, grv, gin, ggam, gbet, eps, mom);
    gpu->ops->batchnorm_backward(gpu, n, c, hw, gdin, gdg, gdb, gdout, gin, gmean, gistd, ggam);
    gpu->ops->batchnorm_forward_infer(gpu, n, c, hw, ginf, gin, ggam, gbet, grm, grv, eps);
    sync_ok("batchnorm");
    expect("batch norm forward (train)", gout, out, nx, 2e-5);
    expect("batch norm saved mean", gmean, mean, c, 2e-5);
    expect("batch norm saved inverse std", gistd, istd, c, 2e-5);
    expect("batch norm running mean", grm, rm, c, 2e-5);
    expect("batch norm running variance (unbiased)", grv, rv, c, 2e-5);
    expect("batch norm backward din", gdin, din, nx, 2e-5);
    expect("batch norm backward dgamma +=", gdg, dg, c, 2e-5);
    expect("batch norm backward dbeta +=", gdb, dbt, c, 2e-5);
    expect("batch norm forward (inference)", ginf, inf, nx, 2e-5);
    void *bufs[] = {gin, gdout, ggam, gbet, grm, grv, gdg, gdb, gout, gdin, gmean, gistd, ginf};
    for (int i = 0; i < 13; i++) gpu->ops->free(gpu, bufs[i]);
    float *hb[] = {in, dout, gam, bet, rm, rv, dg, dbt, out, din, mean, istd, inf};
    for (int i = 0; i < 13; i++) free(hb[i]);
}

static void test_elementwise(size_t n)
{
    float *x = host_random(n), *y = host_random(n), *m = host_random(n), *out = malloc(4 * n), *din = malloc(4 * n);
    void *gx = up(x, 4 * n), *gy = up(y, 4 * n), *gm = up(m, 4 * n), *gout = poisoned(4 * n), *gdin = poisoned(4 * n);
    cpu->ops->relu_forward(cpu, n, out, x);
    cpu->ops->relu_backward(cpu, n, din, y, out);
    gpu->ops->relu_forward(gpu, n, gout, gx);
    gpu->ops->relu_backward(gpu, n, gdin, gy, gout);
    sync_ok("relu");
    expect("relu forward", gout, out, n, 0);
    expect("relu backward", gdin, din, n, 0);
    cpu->ops->add(cpu, n, y, x), gpu->ops->add(gpu, n, gy, gx);
    cpu->ops->scale(cpu, n, y, 0.37f), gpu->ops->scale(gpu, n, gy, 0.37f);
    sync_ok("add, scale");
    expect("add then scale", gy, y, n, 2e-7);
    cpu->ops->sgd_update(cpu, n, x, m, y, 0.1f, 0.9f, 1e-4f, 0.5f);
    gpu->ops->sgd_update(gpu, n, gx, gm, gy, 0.1f, 0.9f, 1e-4f, 0.5f);
    sync_ok("sgd_update");
    expect("sgd_update weights", gx, x, n, 2e-7);
    expect("sgd_update momentum", gm, m, n, 2e-7);
    void *bufs[] = {gx, gy, gm, gout, gdin};
    for (int i = 0; i < 5; i++) gpu->ops->free(gpu, bufs[i]);
    free(x), free(y), free(m), free(out), free(din);
}

static void test_softmax(int n, int classes)
{
    const size_t nl = (size_t)n * classes;
    float *logits = host_random(nl), *dl = malloc(4 * nl);
    int32_t *labels = malloc(sizeof *labels * n);
    for (int i = 0; i < n; i++) labels[i] = (int32_t)(i * 7 % classes);
    for (size_t i = 0; i < nl; i++) logits[i] *= 8; /* some confident rows */
    void *gl = up(logits, 4 * nl), *glab = up(labels, sizeof *labels * n), *gdl = poisoned(4 * nl);
    int hc = -1, gc = -2, ec = -3;
    const double lc = cpu->ops->softmax_xent(cpu, n, classes, dl, &hc, logits, labels, 0.25f);
    const double lg = gpu->ops->softmax_xent(gpu, n, classes, gdl, &gc, gl, glab, 0.25f);
    const double le = gpu->ops->softmax_eval(gpu, n, classes, &ec, gl, glab);
    sync_ok("softmax");
    CHECK(fabs(lc - lg) <= 1e-9 * fabs(lc) && gc == hc, "softmax_xent: loss %.12g vs %.12g, correct %d vs %d", lg, lc,
          gc, hc);
    CHECK(fabs(lc - le) <= 1e-9 * fabs(lc) && ec == hc, "softmax_eval: loss %.12g vs %.12g, correct %d vs %d", le, lc,
          ec, hc);
    expect("softmax cross-entropy dlogits", gdl, dl, nl, 2e-6);
    gpu->ops->free(gpu, gl), gpu->ops->free(gpu, glab), gpu->ops->free(gpu, gdl);
    free(logits), free(dl), free(labels);
}

static void test_casts(size_t n)
{
    float *x = host_random(n);
    for (size_t i = 0; i < n; i++)
        x[i] *= (i % 5 == 0) ? 70000.0f : (i % 7 == 0) ? 1e-6f : 3.0f; /* f16 overflow, subnormals */
    x[1] = NAN, x[2] = INFINITY;
    const mx_dtype types[] = {MX_F16, MX_BF16};
    for (int t = 0; t < 2; t++) {
        unsigned short *h = malloc(2 * n);
        float *back = malloc(4 * n);
        for (size_t i = 0; i < n; i++) mx_dtype_store(types[t], h, i, x[i]), back[i] = mx_dtype_load(types[t], h, i);
        void *gx = up(x, 4 * n), *gh = poisoned(2 * n), *gback = poisoned(4 * n), *gr = up(x, 4 * n),
             *gh2 = poisoned(2 * n);
        gpu->ops->cast(gpu, n, gh, types[t], gx, MX_F32);
        gpu->ops->cast(gpu, n, gback, MX_F32, gh, types[t]);
        gpu->ops->round_half(gpu, n, gr, types[t], gh2);
        const size_t bad = gpu->ops->count_nonfinite(gpu, n, gh, types[t]);
        size_t want = 0;
        for (size_t i = 0; i < n; i++) want += !isfinite(back[i]);
        sync_ok("casts");
        unsigned short *got = (unsigned short *)down(gh, 2 * n);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) differ += got[i] != h[i] && !(isnan(back[i]));
        CHECK(differ == 0, "cast f32 -> %s: %zu of %zu values differ from engine/backend/dtype.h's rounding",
              mx_dtype_name(types[t]), differ, n);
        char what[64];
        snprintf(what, sizeof what, "cast %s -> f32 (every value exact)", mx_dtype_name(types[t]));
        expect(what, gback, back, n, 0);
        snprintf(what, sizeof what, "round_half %s in place", mx_dtype_name(types[t]));
        expect(what, gr, back, n, 0);
        CHECK(bad == want, "count_nonfinite %s: %zu, expected %zu", mx_dtype_name(types[t]), bad, want);
        void *bufs[] = {gx, gh, gback, gr, gh2};
        for (int i = 0; i < 5; i++) gpu->ops->free(gpu, bufs[i]);
        free(h), free(back), free(got);
    }
    free(x);
}

static void test_more(void)
{
    test_bias(7, 13, 45);
    test_bias(129, 10, 1); /* a dense layer's bias */
    test_pool(3, 24, 24, 2, 2, 5);
    test_pool(4, 13, 11, 3, 2, 3); /* overlapping windows, odd sizes */
    test_avgpool(9, 33, 49);
    test_batchnorm(6, 10, 49);
    test_elementwise(100003);
    test_softmax(131, 10);
    test_casts(4099);
    /* host memory pinned for the GPU's copies (a kvstore's host buffers): pinned, copied both
     * ways, released; a second pin of the same memory is declined, not an error */
    const size_t n = 1 << 18;
    float *host = malloc(sizeof(float) * n), *back = malloc(sizeof(float) * n);
    float *dev = gpu->ops->alloc(gpu, sizeof(float) * n);
    if (host && back && dev) {
        for (size_t i = 0; i < n; i++) host[i] = (float)i;
        const int pinned = gpu->ops->host_pin(gpu, host, sizeof(float) * n);
        CHECK(pinned == 1, "host_pin of %zu bytes: %d", sizeof(float) * n, pinned);
        CHECK(gpu->ops->host_pin(gpu, host, sizeof(float) * n) == 0, "a second pin is declined");
        gpu->ops->copy(gpu, dev, host, sizeof(float) * n, MX_COPY_H2D);
        memset(host, 0, sizeof(float) * n);
        gpu->ops->copy(gpu, host, dev, sizeof(float) * n, MX_COPY_D2H);
        for (size_t i = 0; i < n; i++) back[i] = (float)i;
        CHECK(memcmp(host, back, sizeof(float) * n) == 0, "copies through pinned memory");
        if (pinned) gpu->ops->host_release(gpu, host);
        sync_ok("host_pin");
    }
    gpu->ops->free(gpu, dev);
    free(host), free(back);
    /* a failed op surfaces at sync with the call's name, and stays */
    gpu->ops->gemm_ex(gpu, 0, 0, 4, 4, 4, 1, NULL, MX_F16, 4, NULL, MX_BF16, 4, 0, NULL, MX_F32, 4, MX_F32);
    const int rc = gpu->ops->sync(gpu);
    CHECK(rc < 0 && strstr(mx_last_error(), "gemm_ex"), "a refused gemm_ex surfaces at sync: %d %s", rc,
          mx_last_error());
}

int main(void)
{
    const int rc = open_backends();
    if (rc) return rc;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) test_gemm(ta, tb, 37, 29, 53, ta ? 0.0f : 0.5f, 0, MX_F32);
    test_gemm(0, 0, 256, 256, 256, 0, 1, MX_F32);
    test_gemm(0, 1, 128, 96, 200, 1, 0, MX_BF16);
    test_gemm(1, 0, 128, 96, 200, 0, 0, MX_F16);
    test_gemm_ex(MX_F16);
    test_gemm_ex(MX_BF16);
    test_conv(1, 28, 28, 6, 5, 1, 2, 4, MX_F32);   /* lenet's first: one input channel */
    test_conv(6, 13, 11, 16, 5, 1, 0, 3, MX_F32);  /* odd sizes */
    test_conv(16, 15, 15, 32, 3, 2, 1, 5, MX_F32); /* stride 2, padding */
    test_conv(64, 8, 8, 64, 3, 1, 1, 8, MX_F32);
    test_conv(32, 9, 9, 16, 1, 2, 0, 4, MX_F32);   /* 1x1 stride 2 (a residual shortcut) */
    test_conv(16, 14, 14, 32, 3, 1, 1, 8, MX_BF16);
    test_conv(16, 14, 14, 32, 3, 2, 1, 8, MX_F16);
    test_more();
    mx_backend_destroy(gpu);
    mx_backend_destroy(cpu);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
