/* The attention layer (engine/layers/attention.c) and the CPU's tiled kernels
 * (engine/cpu/attention.c): forward and each row's log-sum-exp against a naive reference (the
 * whole T x T softmax with its causal mask, in double) on odd shapes, T = 1, 5, 67, 130 and 200
 * (over several blocks of queries and tiles of keys), H = 1, 2 and 3, hs = 4, 8, 16, 64 (GPT-2's)
 * and 84 (each column path of the kernels); backward against the reference's gradient and by
 * finite differences of the input gradient through a net (the checking rule of
 * tests/gradcheck.h); causality (changing row t's q, k and v leaves the outputs of rows before
 * t unchanged, bit for bit); results independent of the thread count; and the setups it
 * refuses. Under AMP bf16's math on a CPU with avx512_bf16 (heads a multiple of 32 wide), the
 * bf16 kernels against the same reference on the inputs rounded to bf16, on shapes that end
 * blocks and tiles on odd positions, and the same bits on 1 and 2 threads. */
#include "check.h"
#include "gradcheck.h"
#include "engine/core/backends.h"
#include "engine/core/net.h"
#include "engine/cpu/cpu.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mx_backend *be;
static uint64_t seed = 99;
static mx_rng rng;

typedef struct {
    int n, t, heads, hs;
} shape;

static size_t in_count(shape s) { return (size_t)s.n * s.t * 3 * s.heads * s.hs; }
static size_t out_count(shape s) { return (size_t)s.n * s.t * s.heads * s.hs; }

/* Head h's scaled scores' softmax for query i of sample b, over keys 0..i, into p (t doubles). */
static void ref_probs(shape s, const float *qkv, int b, int h, int i, double *p)
{
    const int c = s.heads * s.hs;
    const float *q = qkv + ((size_t)b * s.t + i) * 3 * c + h * s.hs;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j <= i; j++) {
        const float *k = qkv + ((size_t)b * s.t + j) * 3 * c + c + h * s.hs;
        double d = 0;
        for (int e = 0; e < s.hs; e++) d += (double)q[e] * k[e];
        p[j] = d / sqrt((double)s.hs);
        if (p[j] > mx) mx = p[j];
    }
    for (int j = 0; j <= i; j++) sum += p[j] = exp(p[j] - mx);
    for (int j = 0; j <= i; j++) p[j] /= sum;
    p[s.t] = mx + log(sum); /* the row's log-sum-exp, after the t probabilities */
}

static void ref_forward(shape s, const float *qkv, float *out, float *lse)
{
    const int c = s.heads * s.hs;
    double *p = malloc(sizeof(double) * (s.t + 1));
    for (int b = 0; b < s.n; b++)
        for (int h = 0; h < s.heads; h++)
            for (int i = 0; i < s.t; i++) {
                ref_probs(s, qkv, b, h, i, p);
                for (int e = 0; e < s.hs; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += p[j] * qkv[((size_t)b * s.t + j) * 3 * c + 2 * c + h * s.hs + e];
                    out[((size_t)b * s.t + i) * c + h * s.hs + e] = (float)o;
                }
                lse[((size_t)b * s.heads + h) * s.t + i] = (float)p[s.t];
            }
    free(p);
}

/* The gradient of sum(out * dout) with respect to qkv, from the whole softmax in double. */
static void ref_backward(shape s, const float *qkv, const float *dout, float *dqkv)
{
    const int c = s.heads * s.hs;
    const double scale = 1 / sqrt((double)s.hs);
    double *g = calloc(in_count(s), sizeof(double)), *p = malloc(sizeof(double) * (s.t + 1));
    double *dp = malloc(sizeof(double) * s.t);
    for (int b = 0; b < s.n; b++)
        for (int h = 0; h < s.heads; h++)
            for (int i = 0; i < s.t; i++) {
                ref_probs(s, qkv, b, h, i, p);
                const size_t qi = ((size_t)b * s.t + i) * 3 * c + h * s.hs;
                const float *go = dout + ((size_t)b * s.t + i) * c + h * s.hs;
                double dsum = 0;
                for (int j = 0; j <= i; j++) {
                    const size_t vj = ((size_t)b * s.t + j) * 3 * c + 2 * c + h * s.hs;
                    dp[j] = 0;
                    for (int e = 0; e < s.hs; e++) {
                        dp[j] += (double)go[e] * qkv[vj + e];
                        g[vj + e] += p[j] * go[e];
                    }
                    dsum += p[j] * dp[j];
                }
                for (int j = 0; j <= i; j++) {
                    const double ds = p[j] * (dp[j] - dsum) * scale;
                    const size_t kj = ((size_t)b * s.t + j) * 3 * c + c + h * s.hs;
                    for (int e = 0; e < s.hs; e++) {
                        g[qi + e] += ds * qkv[kj + e];
                        g[kj + e] += ds * qkv[qi + e];
                    }
                }
            }
    for (size_t i = 0; i < in_count(s); i++) dqkv[i] = (float)g[i];
    free(g), free(p), free(dp);
}

/* Largest |a - b| / max(1, |b|) */
static double max_err(const float *a, const float *b, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs(b[i]));
        if (!(d <= e)) e = d; /* NaN wins */
    }
    return e;
}

/* On a second backend of 2 threads with the same math, the same bits as out, lse and dqkv. */
static void check_two_threads(shape s, mx_dtype math, const float *qkv, const float *dout, const float *out,
                              const float *lse, const float *dqkv)
{
    const size_t ni = in_count(s), no = out_count(s), nl = (size_t)s.n * s.heads * s.t;
    mx_backend *be2;
    if (mx_backend_create(&be2, "cpu", 1, 2) != MX_OK) {
        CHECK(0, "a backend of 2 threads: %s", mx_last_error());
        return;
    }
    float *out2 = malloc(sizeof(float) * no), *lse2 = malloc(sizeof(float) * nl), *dqkv2 = malloc(sizeof(float) * ni);
    be2->math = math;
    be2->ops->attention_forward(be2, s.n, s.t, s.heads, s.hs, out2, lse2, qkv);
    be2->ops->attention_backward(be2, s.n, s.t, s.heads, s.hs, dqkv2, dout, qkv, out2, lse2);
    CHECK(!memcmp(out, out2, sizeof(float) * no) && !memcmp(lse, lse2, sizeof(float) * nl) &&
              !memcmp(dqkv, dqkv2, sizeof(float) * ni),
          "%s T %d H %d hs %d: 2 threads give other bits than 1", mx_dtype_name(math), s.t, s.heads, s.hs);
    free(out2), free(lse2), free(dqkv2);
    mx_backend_destroy(be2);
}

/* Forward, log-sum-exp and backward of the backend's ops against the reference; on a second
 * backend of 2 threads, the same bits. */
static void check_kernels(shape s)
{
    const size_t ni = in_count(s), no = out_count(s), nl = (size_t)s.n * s.heads * s.t;
    float *qkv = malloc(sizeof(float) * ni), *dout = malloc(sizeof(float) * no);
    float *out = malloc(sizeof(float) * no), *lse = malloc(sizeof(float) * nl), *dqkv = malloc(sizeof(float) * ni);
    float *rout = malloc(sizeof(float) * no), *rlse = malloc(sizeof(float) * nl), *rdqkv = malloc(sizeof(float) * ni);
    /* scores of a few units, so that the softmax is neither flat nor one-hot */
    check_fill(qkv, ni, &seed);
    for (size_t i = 0; i < ni; i++) qkv[i] *= 2;
    check_fill(dout, no, &seed);
    be->ops->attention_forward(be, s.n, s.t, s.heads, s.hs, out, lse, qkv);
    be->ops->attention_backward(be, s.n, s.t, s.heads, s.hs, dqkv, dout, qkv, out, lse);
    ref_forward(s, qkv, rout, rlse);
    ref_backward(s, qkv, dout, rdqkv);
    const double eo = max_err(out, rout, no), el = max_err(lse, rlse, nl), eg = max_err(dqkv, rdqkv, ni);
    CHECK(eo <= 1e-5 && el <= 1e-5 && eg <= 1e-4,
          "n %d T %d H %d hs %d: out off by %.2g, lse by %.2g (<= 1e-5), dqkv by %.2g (<= 1e-4)", s.n, s.t, s.heads,
          s.hs, eo, el, eg);

    check_two_threads(s, MX_F32, qkv, dout, out, lse, dqkv);
    printf("kernels n %d T %-3d H %d hs %d   out %.1e lse %.1e dqkv %.1e\n", s.n, s.t, s.heads, s.hs, eo, el, eg);
    free(qkv), free(dout), free(out), free(lse), free(dqkv), free(rout), free(rlse), free(rdqkv);
}

/* The bf16 forms (engine/cpu/attention_bf16.c): every product's operands rounded to bf16 and
 * summed in f32, so against the double reference on the inputs rounded to bf16 they are off by
 * the roundings of P, dS and dO (8 bits each): out within 1e-2, dqkv within 3e-2 (relative to
 * max(1, |x|)); lse comes from exact products of the rounded inputs summed in f32: 1e-5. */
static void check_bf16(shape s)
{
    const size_t ni = in_count(s), no = out_count(s), nl = (size_t)s.n * s.heads * s.t;
    float *qkv = malloc(sizeof(float) * ni), *dout = malloc(sizeof(float) * no), *r16 = malloc(sizeof(float) * ni);
    float *out = malloc(sizeof(float) * no), *lse = malloc(sizeof(float) * nl), *dqkv = malloc(sizeof(float) * ni);
    float *rout = malloc(sizeof(float) * no), *rlse = malloc(sizeof(float) * nl), *rdqkv = malloc(sizeof(float) * ni);
    check_fill(qkv, ni, &seed);
    for (size_t i = 0; i < ni; i++) qkv[i] *= 2, r16[i] = mx_bf16_to_f32(mx_f32_to_bf16(qkv[i]));
    check_fill(dout, no, &seed);
    be->math = MX_BF16;
    be->ops->attention_forward(be, s.n, s.t, s.heads, s.hs, out, lse, qkv);
    be->ops->attention_backward(be, s.n, s.t, s.heads, s.hs, dqkv, dout, qkv, out, lse);
    be->math = MX_F32;
    ref_forward(s, r16, rout, rlse);
    ref_backward(s, r16, dout, rdqkv);
    const double eo = max_err(out, rout, no), el = max_err(lse, rlse, nl), eg = max_err(dqkv, rdqkv, ni);
    CHECK(eo <= 1e-2 && el <= 1e-5 && eg <= 3e-2,
          "bf16 n %d T %d H %d hs %d: out off by %.2g (<= 1e-2), lse by %.2g (<= 1e-5), dqkv by %.2g (<= 3e-2)", s.n,
          s.t, s.heads, s.hs, eo, el, eg);
    check_two_threads(s, MX_BF16, qkv, dout, out, lse, dqkv);
    printf("bf16 n %d T %-3d H %d hs %-3d   out %.1e lse %.1e dqkv %.1e\n", s.n, s.t, s.heads, s.hs, eo, el, eg);
    free(qkv), free(dout), free(r16), free(out), free(lse), free(dqkv), free(rout), free(rlse), free(rdqkv);
}

/* Rows before t keep their outputs, bit for bit, when row t's q, k and v change; row t's change. */
static void check_causal(shape s, int t)
{
    const int c = s.heads * s.hs;
    const size_t ni = in_count(s), no = out_count(s), nl = (size_t)s.n * s.heads * s.t;
    float *qkv = malloc(sizeof(float) * ni), *a = malloc(sizeof(float) * no), *b = malloc(sizeof(float) * no);
    float *lse = malloc(sizeof(float) * nl);
    check_fill(qkv, ni, &seed);
    be->ops->attention_forward(be, s.n, s.t, s.heads, s.hs, a, lse, qkv);
    for (int smp = 0; smp < s.n; smp++)
        for (int e = 0; e < 3 * c; e++) qkv[((size_t)smp * s.t + t) * 3 * c + e] += 0.5f;
    be->ops->attention_forward(be, s.n, s.t, s.heads, s.hs, b, lse, qkv);
    int before = 0, at = 0;
    for (int smp = 0; smp < s.n; smp++) {
        const size_t row = (size_t)smp * s.t * c;
        before += memcmp(a + row, b + row, sizeof(float) * (size_t)t * c) != 0;
        at += memcmp(a + row + (size_t)t * c, b + row + (size_t)t * c, sizeof(float) * c) != 0;
    }
    CHECK(before == 0, "T %d: changing row %d changed earlier rows' outputs in %d samples", s.t, t, before);
    CHECK(at == s.n, "T %d: changing row %d left its own output unchanged in %d of %d samples", s.t, t, s.n - at, s.n);
    printf("causal T %d, row %-3d changed       %s\n", s.t, t, before == 0 && at == s.n ? "ok" : "NOT OK");
    free(qkv), free(a), free(b), free(lse);
}

/* The layer in a net [attention, flatten]: its shape and FLOPs, and the input gradient of
 * L = sum(out * R) against central differences (tests/gradcheck.h's rule). */
static void check_layer_fd(shape s)
{
    const mx_layer_spec specs[2] = {{.kind = "attention", .heads = s.heads}, {.kind = "flatten"}};
    const mx_shape in = {1, s.t, 3 * s.heads * s.hs};
    mx_net *net;
    if (mx_net_create(&net, be, specs, 2, in, s.n) != MX_OK) {
        CHECK(0, "T %d H %d hs %d: net not built: %s", s.t, s.heads, s.hs, mx_last_error());
        return;
    }
    const mx_layer *l = &net->layers[0];
    const size_t ni = in_count(s), no = out_count(s);
    CHECK(l->out.c == 1 && l->out.h == s.t && l->out.w == s.heads * s.hs, "out shape {%d, %d, %d}", l->out.c,
          l->out.h, l->out.w);
    CHECK(fabs(l->ops->flops(l) - 2.0 * s.heads * s.hs * s.t * (s.t + 1)) < 0.5, "flops %g", l->ops->flops(l));
    float *r = malloc(sizeof(float) * no), *din = calloc(ni, sizeof(float));
    check_fill(net->x, ni, &seed);
    check_fill(r, no, &seed);
    gc_objective(net, s.n, r);
    gc_backward(net, s.n, r, din);
    const int bad = gc_probe("input", net, s.n, r, net->x, ni, din, GC_STEP, &rng);
    CHECK(bad == 0, "T %d H %d hs %d: %d input-gradient elements disagree with finite differences", s.t, s.heads,
          s.hs, bad);
    printf("gradient T %-3d H %d hs %d         %s\n", s.t, s.heads, s.hs, bad ? "NOT OK" : "ok");
    free(r), free(din);
    mx_net_destroy(net);
}

/* A setup refused with code and every word of want in its message. */
static void check_refused(const char *what, mx_backend *b, int heads, mx_shape in, int code, const char *w1,
                          const char *w2)
{
    const mx_layer_spec spec = {.kind = "attention", .heads = heads};
    mx_net *net = NULL;
    const int rc = mx_net_create(&net, b, &spec, 1, in, 2);
    CHECK(rc == code && strstr(mx_last_error(), w1) && strstr(mx_last_error(), w2), "%s: rc %d, '%s'", what, rc,
          mx_last_error());
    if (rc == MX_OK) mx_net_destroy(net);
}

int main(void)
{
    mx_rng_seed(&rng, 5);
    if (mx_backend_create(&be, "cpu", 0, 1) != MX_OK) return 1;
    const shape shapes[] = {{2, 1, 1, 4}, {2, 5, 3, 8}, {2, 67, 1, 8}, {2, 67, 3, 4}, {1, 67, 3, 8}, {3, 130, 2, 16},
                            /* GPT-2's head size, and one taking every column path of the kernels (64, 16, 1) */
                            {1, 200, 2, 64}, {1, 67, 2, 84}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) check_kernels(shapes[i]);
    if (mx_cpu_bf16_native()) {
        /* odd lengths end blocks of queries and tiles of keys on odd positions (a pair's second
         * position is padding), 4-row groups past the last key; 256: gpt-bench's; heads of 32
         * (gpt-mini's) and 96 take the 32-column sums */
        const shape b16[] = {{2, 1, 1, 64}, {1, 67, 2, 64}, {2, 99, 1, 128}, {1, 130, 3, 64}, {1, 256, 1, 64},
                             {2, 67, 2, 32}, {1, 33, 1, 96}};
        for (size_t i = 0; i < sizeof b16 / sizeof *b16; i++) check_bf16(b16[i]);
    } else {
        printf("bf16 kernels: skipped, this CPU lacks avx512_bf16 (or MXBENCH_BF16=emulate)\n");
    }
    check_causal((shape){2, 67, 3, 8}, 40);
    check_causal((shape){1, 67, 1, 4}, 64);
    check_causal((shape){1, 5, 3, 4}, 1);
    const shape fd[] = {{2, 1, 1, 4}, {2, 5, 3, 8}, {2, 67, 3, 4}, {1, 67, 1, 8}};
    for (size_t i = 0; i < sizeof fd / sizeof *fd; i++) check_layer_fd(fd[i]);

    check_refused("width 20, 3 heads", be, 3, (mx_shape){1, 4, 20}, MX_EINVAL, "20", "3");
    check_refused("0 heads", be, 0, (mx_shape){1, 4, 24}, MX_EINVAL, "heads", "0");
    check_refused("2 channels", be, 2, (mx_shape){2, 4, 24}, MX_EINVAL, "{2, 4, 24}", "{1, T, 3C}");
    mx_backend_ops bare = mx_cpu_backend_ops;
    bare.name = "cpu_without_attention";
    bare.attention_backward = NULL;
    mx_backend *nb;
    if (mx_backend_register(&bare) == MX_OK && mx_backend_create(&nb, bare.name, 0, 1) == MX_OK) {
        check_refused("a backend without the backward", nb, 2, (mx_shape){1, 4, 24}, MX_EUNSUPPORTED,
                      "cpu_without_attention", "attention_backward");
        mx_backend_destroy(nb);
    } else {
        CHECK(0, "a cpu table without attention_backward: %s", mx_last_error());
    }
    mx_backend_destroy(be);
    return check_summary("test_attention");
}
