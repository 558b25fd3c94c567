/* Mixed precision (engine/core/amp.h, engine/core/exec.h, engine/core/net.h):
 *  - the dynamic loss scaler: an overflow skips the step and halves the scale, 2000 clean
 *    steps double it, a clean run is reset by an overflow, the cap 2^24 and the floor 1
 *    hold, bf16 (and off) never scale but still skip a non-finite step;
 *  - the backend's casts round as a GPU does: ties to even, 65520 to inf in fp16, NaN kept,
 *    bf16's 8-bit significand;
 *  - under fp16 and bf16, on random inputs, a linear net agrees with the f32 net within
 *    AMP_TOL in its logits, loss and every parameter gradient; lenet and a small residual
 *    net with batch norm agree in logits, loss and evaluation within AMP_TOL, and in their
 *    gradients as a whole within KINK_TOL; all differ from f32 (the rounding happened)
 *    with logits and gradients on the half type's grid;
 *  - the saved activations of an AMP context take at most 0.6x the f32 context's bytes as
 *    the allocator counts them, and a deep narrow net's whole context shrinks;
 *  - a context cut in two (a pipeline) computes the bits of one context;
 *  - SGD on the master weights keeps them f32 while the layers' weights are exactly their
 *    rounding; an fp16 gradient that overflows becomes inf (bf16 and f32: finite);
 *  - bf16 on the CPU's bf16 units agrees with its emulation (AMP_TOL, NATIVE_KINK_TOL). */
#include "check.h"
#include "engine/core/amp.h"
#include "engine/cpu/kernels.h"
#include "engine/core/net.h"
#include "engine/core/optim.h"
#include "base/status.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative L2 errors allowed against f32 (measured ones are printed). bf16 keeps 8
 * significant bits (a rounding moves a value by up to 2^-9 = 2e-3), fp16 11 (2^-12): the
 * linear net's gradients come within 6e-3 (bf16) and 6e-4 (fp16), and so do every net's
 * logits and loss. Gradients through relu and max pooling differ more, by the kinks, not by
 * the emulation: a unit whose pre-activation rounding moves across zero (or a pooling
 * window whose maximum changes) passes or drops its whole gradient, and the L2 error of
 * such sparse changes grows as the square root of their share. An f32 lenet given only the
 * bf16-rounded weights is already 6e-2 off in its gradients (8.6e-3 with fp16's); AMP
 * measures 7.4e-2 (bf16) and 2.0e-2 (fp16), the residual net 4.3e-2 and 1.9e-2. */
#define AMP_TOL 1e-2
#define KINK_TOL_FP16 5e-2
#define KINK_TOL_BF16 1.5e-1
#define BATCH 64
/* bf16's native kernels against its emulation (see test_native_bf16): logits within
 * AMP_TOL, gradients as a whole within NATIVE_KINK_TOL, as one bf16 step more or less in a
 * value near a kink passes or drops a unit's gradient (measured: lenet 0 and 3.7e-6, the
 * residual net with batch norm 3.0e-3 and 2.0e-2) */
#define NATIVE_KINK_TOL 5e-2

static mx_backend *be;
static uint64_t seed = 42;

/* ---- the loss scaler */

static void test_scaler(void)
{
    mx_loss_scaler s;
    mx_loss_scaler_init(&s, MX_AMP_FP16);
    CHECK(s.enabled && s.scale == 65536.0 && s.clean_steps == 0 && s.skipped == 0, "fp16 init: %g", s.scale);
    CHECK(mx_loss_scaler_update(&s, 1) == 1 && s.scale == 32768.0 && s.skipped == 1, "overflow: %g", s.scale);
    int skips = 0;
    for (int i = 0; i < 1999; i++) skips += mx_loss_scaler_update(&s, 0);
    CHECK(skips == 0 && s.scale == 32768.0 && s.clean_steps == 1999, "1999 clean: %g", s.scale);
    CHECK(mx_loss_scaler_update(&s, 0) == 0 && s.scale == 65536.0 && s.clean_steps == 0, "2000 clean: %g", s.scale);
    /* An overflow late in a clean run starts the count again. */
    for (int i = 0; i < 1999; i++) mx_loss_scaler_update(&s, 0);
    mx_loss_scaler_update(&s, 1);
    for (int i = 0; i < 1999; i++) mx_loss_scaler_update(&s, 0);
    CHECK(s.scale == 32768.0, "a clean run interrupted by an overflow must not grow: %g", s.scale);
    mx_loss_scaler_update(&s, 0);
    CHECK(s.scale == 65536.0 && s.skipped == 2, "%g, %ld skipped", s.scale, s.skipped);
    s.scale = 8388608.0; /* 2^23 */
    for (int i = 0; i < 3 * MX_LOSS_SCALE_GROWTH; i++) mx_loss_scaler_update(&s, 0);
    CHECK(s.scale == 16777216.0, "cap 2^24: %g", s.scale);
    s.scale = 4.0;
    for (int i = 0; i < 5; i++) CHECK(mx_loss_scaler_update(&s, 1) == 1, "an overflow must skip");
    CHECK(s.scale == 1.0 && s.skipped == 7, "floor 1: %g, %ld skipped", s.scale, s.skipped);

    for (mx_amp a = MX_AMP_OFF; a <= MX_AMP_BF16; a += 2) {
        mx_loss_scaler_init(&s, a);
        CHECK(!s.enabled && s.scale == 1.0, "%s init: %g", mx_amp_name(a), s.scale);
        for (int i = 0; i < 2 * MX_LOSS_SCALE_GROWTH + 1; i++) mx_loss_scaler_update(&s, 0);
        CHECK(s.scale == 1.0, "%s must never scale: %g", mx_amp_name(a), s.scale);
        CHECK(mx_loss_scaler_update(&s, 1) == 1 && s.scale == 1.0 && s.skipped == 1,
              "%s: a non-finite step is skipped, the scale stays: %g", mx_amp_name(a), s.scale);
    }
}

static void test_parse(void)
{
    mx_amp a = MX_AMP_OFF;
    CHECK(mx_amp_parse("fp16", &a) == MX_OK && a == MX_AMP_FP16 && mx_amp_dtype(a) == MX_F16, "fp16");
    CHECK(mx_amp_parse("bf16", &a) == MX_OK && a == MX_AMP_BF16 && mx_amp_dtype(a) == MX_BF16, "bf16");
    CHECK(mx_amp_parse("off", &a) == MX_OK && a == MX_AMP_OFF && mx_amp_dtype(a) == MX_F32, "off");
    CHECK(mx_amp_parse("fp32", &a) == MX_EINVAL && strstr(mx_last_error(), "'fp32'") &&
              strstr(mx_last_error(), "off|fp16|bf16"), "%s", mx_last_error());
}

/* ---- rounding through the backend's casts (what the context and the refresh use) */

static float round_trip(mx_dtype t, float x)
{
    float *d32 = be->ops->alloc(be, sizeof(float));
    uint16_t *d16 = be->ops->alloc(be, sizeof(uint16_t));
    float y = 0;
    be->ops->copy(be, d32, &x, sizeof x, MX_COPY_H2D);
    be->ops->cast(be, 1, d16, t, d32, MX_F32);
    be->ops->cast(be, 1, d32, MX_F32, d16, t);
    be->ops->copy(be, &y, d32, sizeof y, MX_COPY_D2H);
    be->ops->free(be, d32);
    be->ops->free(be, d16);
    return y;
}

static void test_rounding(void)
{
    static const struct {
        mx_dtype t;
        float in, want;
    } cases[] = {
        {MX_F16, 1.0f + 0x1p-11f, 1.0f},                    /* tie: to the even 1 */
        {MX_F16, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f},     /* tie: up to the even neighbour */
        {MX_F16, 1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-10f}, /* just above the tie */
        {MX_F16, 65504.0f, 65504.0f},                      /* the largest finite half */
        {MX_F16, 65519.0f, 65504.0f},                      /* below the overflow threshold */
        {MX_F16, 65520.0f, INFINITY},                      /* at it: inf, as IEEE rounds */
        {MX_F16, -1e6f, -INFINITY},
        {MX_F16, 0x1p-24f, 0x1p-24f},                      /* the smallest subnormal */
        {MX_F16, 0x1p-25f, 0.0f},                          /* half of it: tie to even zero */
        {MX_F16, 0x1.8p-25f, 0x1p-24f},
        {MX_BF16, 1.0f + 0x1p-8f, 1.0f},                   /* tie: to the even 1 */
        {MX_BF16, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-6f},     /* tie: up to the even neighbour */
        {MX_BF16, 1.0f + 0x1p-8f + 0x1p-16f, 1.0f + 0x1p-7f},
        {MX_BF16, 3.0e38f, 0x1.c4p127f},                   /* f32's range: finite */
        {MX_BF16, FLT_MAX, INFINITY},                      /* above bf16's largest + half an ulp */
        {MX_BF16, 65520.0f, 65536.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const float got = round_trip(cases[i].t, cases[i].in);
        CHECK(got == cases[i].want, "%s(%.9g) = %.9g, want %.9g", mx_dtype_name(cases[i].t), cases[i].in, got,
              cases[i].want);
    }
    CHECK(isnan(round_trip(MX_F16, NAN)) && isnan(round_trip(MX_BF16, NAN)), "NaN must stay NaN");
    /* What the overflow check counts: inf and NaN in a half buffer, not the largest finite. */
    const float vals[4] = {1.0f, 65520.0f, NAN, 65504.0f};
    float *d32 = be->ops->alloc(be, sizeof vals);
    uint16_t *d16 = be->ops->alloc(be, 4 * sizeof(uint16_t));
    be->ops->copy(be, d32, vals, sizeof vals, MX_COPY_H2D);
    be->ops->cast(be, 4, d16, MX_F16, d32, MX_F32);
    CHECK(be->ops->count_nonfinite(be, 4, d16, MX_F16) == 2, "non-finite halves");
    CHECK(be->ops->count_nonfinite(be, 4, d32, MX_F32) == 1, "non-finite floats (65520 is finite in f32)");
    be->ops->free(be, d32);
    be->ops->free(be, d16);
}

/* ---- AMP networks against f32 */

static void random_batch(float *x, int32_t *y, size_t per, int n)
{
    for (size_t i = 0; i < per * n; i++) x[i] = (float)check_uniform(&seed);
    for (int i = 0; i < n; i++) y[i] = (int32_t)(check_uniform(&seed) * 10);
}

static float *to_host(const float *dev, size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    be->ops->copy(be, h, dev, sizeof(float) * n, MX_COPY_D2H);
    return h;
}

static double rel_err(const float *a, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int on_grid(mx_dtype t, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && mx_dtype_load(t, &(uint16_t){t == MX_F16 ? mx_f32_to_f16(x[i]) : mx_f32_to_bf16(x[i])},
                                            0) != x[i])
            return 0;
    return 1;
}

typedef struct {
    double loss;
    float *logits, *g; /* host copies */
} step_out;

static int run_step(mx_net *net, const float *x, const int32_t *y, int n, float grad_scale, step_out *o)
{
    mx_net_set_batch(net, x, y, n);
    mx_net_zero_grad(net);
    const float *logits = mx_net_forward(net, n, 1);
    int hits = 0;
    o->loss = mx_net_loss(net, n, grad_scale, &hits);
    mx_net_backward(net, n, NULL, NULL);
    o->logits = to_host(logits, (size_t)n * net->nclasses);
    o->g = to_host(net->g, net->nweights);
    return be->ops->sync(be);
}

/* kinks: the net has relu or max pooling (gradients as a whole within KINK_TOL, else each
 * tensor's within AMP_TOL); bn: it has batch norm, whose evaluation (running statistics)
 * differs from its training forward (batch statistics). */
static void compare_model(const char *name, const mx_layer_spec *specs, int nspecs, mx_shape in, int kinks, int bn)
{
    const size_t per = mx_shape_size(in);
    float *x = malloc(sizeof(float) * per * BATCH);
    int32_t *y = malloc(sizeof *y * BATCH);
    random_batch(x, y, per, BATCH);
    mx_net *ref = NULL;
    step_out r = {0};
    if (mx_net_create(&ref, be, specs, nspecs, in, BATCH) < 0 ||
        mx_net_init_params(ref, 7, MX_WEIGHT_INIT_XAVIER, 0) < 0 || run_step(ref, x, y, BATCH, 1.0f / BATCH, &r) < 0) {
        CHECK(0, "%s f32: %s", name, mx_last_error());
        goto out;
    }
    double ref_eval = 0;
    int ref_hits = 0;
    CHECK(mx_net_evaluate(ref, x, y, BATCH, &ref_eval, &ref_hits) == MX_OK, "%s", mx_last_error());
    for (mx_amp a = MX_AMP_FP16; a <= MX_AMP_BF16; a++) {
        const mx_dtype t = mx_amp_dtype(a);
        mx_net *net = NULL;
        step_out o = {0};
        /* fp16 as it trains: the loss scaled by the scaler's initial 2^16 (unscaled below),
         * or its small gradients would fall into fp16's subnormals and to zero. */
        mx_loss_scaler s;
        mx_loss_scaler_init(&s, a);
        if (mx_net_create_amp(&net, be, specs, nspecs, in, BATCH, a) < 0 ||
            mx_net_init_params(net, 7, MX_WEIGHT_INIT_XAVIER, 0) < 0 ||
            run_step(net, x, y, BATCH, (float)(s.scale / BATCH), &o) < 0) {
            CHECK(0, "%s %s: %s", name, mx_amp_name(a), mx_last_error());
            mx_net_destroy(net);
            continue;
        }
        const int g_on_grid = on_grid(t, o.g, net->nweights); /* before unscaling: 2^-16 may leave it */
        for (size_t i = 0; i < net->nweights; i++) o.g[i] = (float)(o.g[i] / s.scale);
        const size_t nl = (size_t)BATCH * net->nclasses;
        const double e_logits = rel_err(o.logits, r.logits, nl), e_loss = fabs(o.loss - r.loss) / fabs(r.loss);
        double e_grad = 0;
        int worst = 0;
        const double e_all = rel_err(o.g, r.g, net->nweights);
        for (int p = 0; p < net->nparams; p++) {
            const mx_param *pp = &net->params[p];
            const double e = rel_err(o.g + pp->offset, r.g + pp->offset, pp->count);
            if (e > e_grad) e_grad = e, worst = p;
        }
        printf("%s %s: relative error logits %.2e, loss %.2e, all gradients %.2e, worst tensor %.2e (%s)\n", name,
               mx_amp_name(a), e_logits, e_loss, e_all, e_grad, net->params[worst].name);
        CHECK(e_logits <= AMP_TOL && e_loss <= AMP_TOL, "%s %s: %.2e %.2e", name, mx_amp_name(a), e_logits, e_loss);
        const double kink_tol = a == MX_AMP_FP16 ? KINK_TOL_FP16 : KINK_TOL_BF16;
        CHECK(kinks ? e_all <= kink_tol : e_grad <= AMP_TOL, "%s %s gradients: %.2e (worst tensor %.2e)", name,
              mx_amp_name(a), e_all, e_grad);
        /* Not the f32 net under another name: the rounding happened, and left values on the
         * half type's grid (logits, the gradients after their rounding). */
        CHECK(e_logits > 0 && e_grad > 0, "%s %s: bit-identical to f32", name, mx_amp_name(a));
        CHECK(on_grid(t, o.logits, nl) && g_on_grid, "%s %s: values off the %s grid", name,
              mx_amp_name(a), mx_dtype_name(t));
        CHECK(net->act[0] == NULL && net->act[net->nlayers - 1] && net->exec->act_half[0], "%s: AMP act pointers",
              name);
        /* Evaluation runs the same rounded path: its loss is the training forward's. */
        double ev = 0;
        int hits = 0;
        CHECK(mx_net_evaluate(net, x, y, BATCH, &ev, &hits) == MX_OK, "%s", mx_last_error());
        CHECK(fabs(ev - ref_eval) <= AMP_TOL * fabs(ref_eval) && ev != ref_eval, "%s %s evaluate: %.9g (f32 %.9g)",
              name, mx_amp_name(a), ev, ref_eval);
        CHECK(bn || fabs(ev - o.loss) <= 1e-6 * fabs(o.loss), "%s %s evaluate %.9g, training forward %.9g", name,
              mx_amp_name(a), ev, o.loss);
        free(o.logits);
        free(o.g);
        mx_net_destroy(net);
    }
out:
    free(r.logits);
    free(r.g);
    mx_net_destroy(ref);
    free(x);
    free(y);
}

/* bf16 on the CPU's bf16 units (engine/cpu/gemm.c, or gemm_dnnl.c on AMX tiles) against the emulation
 * (MXBENCH_BF16=emulate), one training step from the same weights and batch: the products
 * are the same bf16 values, only the order of the f32 sums differs, which can move a stored
 * activation or gradient by one bf16 step where it lands near a rounding boundary. */
static void test_native_bf16(const char *name, const mx_layer_spec *specs, int nspecs, mx_shape in)
{
    if (strcmp(be->ops->amp_kernels(MX_BF16), "emulated") == 0) {
        printf("%s bf16 native against emulated: skipped, this CPU emulates bf16\n", name);
        return;
    }
    const size_t per = mx_shape_size(in);
    float *x = malloc(sizeof(float) * per * BATCH);
    int32_t *y = malloc(sizeof *y * BATCH);
    random_batch(x, y, per, BATCH);
    step_out o[2] = {{0}};
    size_t nw = 0;
    for (int emulate = 0; emulate < 2; emulate++) {
        mx_cpu_bf16_force_emulation(emulate);
        mx_net *net = NULL;
        if (mx_net_create_amp(&net, be, specs, nspecs, in, BATCH, MX_AMP_BF16) < 0 ||
            mx_net_init_params(net, 7, MX_WEIGHT_INIT_XAVIER, 0) < 0 ||
            run_step(net, x, y, BATCH, 1.0f / BATCH, &o[emulate]) < 0)
            CHECK(0, "%s bf16 (emulate %d): %s", name, emulate, mx_last_error());
        CHECK(be->math == MX_F32, "%s: the backend's math is f32 again after the AMP step", name);
        nw = net ? net->nweights : 0;
        mx_net_destroy(net);
    }
    mx_cpu_bf16_force_emulation(0);
    if (o[0].logits && o[1].logits) {
        const double e_logits = rel_err(o[0].logits, o[1].logits, (size_t)BATCH * 10);
        const double e_g = rel_err(o[0].g, o[1].g, nw);
        printf("%s bf16 native against emulated: relative error logits %.2e, gradients %.2e\n", name, e_logits, e_g);
        /* above 0: the own native kernels ran (an f32 GEMM would give the emulation's bits);
         * oneDNN's matmul (AMX CPUs, MXBENCH_BF16=dnnl) sums small products nearly in the
         * emulation's order, which every bf16 rounding of lenet's outputs and gradients then
         * absorbed (measured 0 on the AMD EPYC), so there only the bounds are asserted */
        const int own = !mx_cpu_gemm_bf16_dnnl();
        CHECK((!own || e_logits + e_g > 0) && e_logits <= AMP_TOL && e_g <= NATIVE_KINK_TOL,
              "%s bf16 native (%s): logits %.2e, gradients %.2e", name, own ? "own kernels" : "oneDNN's matmul",
              e_logits, e_g);
    }
    free(o[0].logits), free(o[0].g), free(o[1].logits), free(o[1].g), free(x), free(y);
}

/* A pipeline cut: contexts [0, cut) and [cut, n) chained by hand give the bits of one
 * context over [0, n): the first hands out its last output as f32 on the half grid, which
 * the second's input rounding keeps; the input gradient handed back is rounded as a
 * gradient inside one context is. */
static void test_cut(mx_amp a, const mx_layer_spec *specs, int nspecs, mx_shape in, int cut)
{
    const mx_dtype t = mx_amp_dtype(a);
    const size_t per = mx_shape_size(in);
    float *x = malloc(sizeof(float) * per * BATCH), *din = NULL, *g1 = NULL, *l1 = NULL;
    int32_t *y = malloc(sizeof *y * BATCH);
    random_batch(x, y, per, BATCH);
    mx_params *ps = NULL;
    mx_exec *whole = NULL, *front = NULL, *back = NULL;
    if (mx_params_create(&ps, be, specs, nspecs, in, 0, nspecs) < 0 ||
        mx_params_init(ps, 9, MX_WEIGHT_INIT_XAVIER, 0) < 0 ||
        mx_exec_create_amp(&whole, ps, 0, nspecs, BATCH, 1, t) < 0 ||
        mx_exec_create_amp(&front, ps, 0, cut, BATCH, 0, t) < 0 ||
        mx_exec_create_amp(&back, ps, cut, nspecs, BATCH, 1, t) < 0 ||
        !(din = be->ops->alloc(be, sizeof(float) * BATCH * mx_shape_size(back->in)))) {
        CHECK(0, "%s", mx_last_error());
        goto out;
    }
    int hits = 0;
    mx_exec_set_batch(whole, x, y, BATCH);
    mx_params_zero_grad(ps);
    l1 = to_host(mx_exec_forward(whole, NULL, BATCH, 1), (size_t)BATCH * whole->nclasses);
    const double loss1 = mx_exec_loss(whole, NULL, BATCH, 1.0f / BATCH, &hits);
    mx_exec_backward(whole, BATCH, NULL, NULL, NULL, NULL);
    g1 = to_host(ps->g, ps->nweights);

    mx_exec_set_batch(front, x, NULL, BATCH);
    mx_exec_set_batch(back, NULL, y, BATCH);
    mx_params_zero_grad(ps);
    const float *mid = mx_exec_forward(front, NULL, BATCH, 1);
    float *l2 = to_host(mx_exec_forward(back, mid, BATCH, 1), (size_t)BATCH * back->nclasses);
    const double loss2 = mx_exec_loss(back, NULL, BATCH, 1.0f / BATCH, &hits);
    mx_exec_backward(back, BATCH, NULL, din, NULL, NULL);
    mx_exec_backward(front, BATCH, din, NULL, NULL, NULL);
    float *g2 = to_host(ps->g, ps->nweights);
    CHECK(be->ops->sync(be) == MX_OK, "%s", mx_last_error());
    CHECK(loss1 == loss2 && !memcmp(l1, l2, sizeof(float) * BATCH * back->nclasses) &&
              !memcmp(g1, g2, sizeof(float) * ps->nweights),
          "%s cut at %d: loss %.9g vs %.9g, gradients differ", mx_amp_name(a), cut, loss1, loss2);
    free(l2);
    free(g2);
out:
    free(l1);
    free(g1);
    if (din) be->ops->free(be, din);
    mx_exec_destroy(whole);
    mx_exec_destroy(front);
    mx_exec_destroy(back);
    mx_params_destroy(ps);
    free(x);
    free(y);
}

/* ---- memory: what the allocator counts for a context */

static mx_exec *counted_exec(mx_params *ps, int max_batch, mx_dtype t, size_t *counted)
{
    mx_exec *e = NULL;
    const size_t before = mx_backend_mem_get(be).live;
    if (mx_exec_create_amp(&e, ps, 0, ps->nlayers, max_batch, 1, t) < 0) {
        CHECK(0, "%s", mx_last_error());
        return NULL;
    }
    *counted = mx_backend_mem_get(be).live - before;
    CHECK(*counted == e->bytes, "the context's count %zu against the allocator's %zu", e->bytes, *counted);
    return e;
}

static void test_memory(const char *name, const mx_layer_spec *specs, int nspecs, mx_shape in, double act_ratio,
                        double total_ratio)
{
    mx_params *ps = NULL;
    if (mx_params_create(&ps, be, specs, nspecs, in, 0, nspecs) < 0) {
        CHECK(0, "%s", mx_last_error());
        return;
    }
    size_t c32 = 0, c16 = 0;
    mx_exec *e32 = counted_exec(ps, BATCH, MX_F32, &c32), *e16 = counted_exec(ps, BATCH, MX_F16, &c16);
    if (e32 && e16) {
        size_t want = 0;
        for (int i = 0; i < nspecs; i++)
            want += mx_state_align(sizeof(float) * BATCH * mx_shape_size(ps->layers[i].out));
        CHECK(e32->act_bytes == want, "f32 activations %zu, want %zu", e32->act_bytes, want);
        const double ra = (double)e16->act_bytes / e32->act_bytes, rt = (double)c16 / c32;
        printf("%s at batch %d: saved activations f32 %zu B, fp16 %zu B (%.3fx); whole context f32 %zu B, "
               "fp16 %zu B (%.3fx; fp16 working buffers %zu B)\n", name, BATCH, e32->act_bytes, e16->act_bytes, ra,
               c32, c16, rt, 2 * sizeof(float) * e16->work_elems);
        CHECK(ra <= act_ratio && ra >= 0.45, "%s: activations %.3fx of f32's", name, ra);
        CHECK(rt <= total_ratio, "%s: context %.3fx of f32's", name, rt);
    }
    mx_exec_destroy(e32);
    mx_exec_destroy(e16);
    mx_params_destroy(ps);
}

/* ---- the master weights and overflow */

static void test_master(mx_amp a, const mx_layer_spec *specs, int nspecs, mx_shape in)
{
    const mx_dtype t = mx_amp_dtype(a);
    const size_t per = mx_shape_size(in);
    float *x = malloc(sizeof(float) * per * BATCH);
    int32_t *y = malloc(sizeof *y * BATCH);
    mx_net *net = NULL;
    float *mom = NULL, *w0 = NULL;
    if (mx_net_create_amp(&net, be, specs, nspecs, in, BATCH, a) < 0 ||
        mx_net_init_params(net, 3, MX_WEIGHT_INIT_XAVIER, 0) < 0 ||
        !(mom = be->ops->alloc(be, sizeof(float) * net->nweights))) {
        CHECK(0, "%s", mx_last_error());
        goto out;
    }
    w0 = to_host(net->w_master, net->nweights);
    mx_loss_scaler s;
    mx_loss_scaler_init(&s, a);
    const mx_optim opt = {.kind = MX_OPTIM_SGD, .lr = 0.05f, .momentum = 0.9f, .wd = 1e-4f};
    for (int step = 0; step < 3; step++) {
        random_batch(x, y, per, BATCH);
        mx_net_set_batch(net, x, y, BATCH);
        mx_net_zero_grad(net);
        mx_net_forward(net, BATCH, 1);
        int hits = 0;
        mx_net_loss(net, BATCH, (float)(s.scale / BATCH), &hits);
        mx_net_backward(net, BATCH, NULL, NULL);
        if (mx_loss_scaler_update(&s, mx_net_grad_nonfinite(net) > 0)) continue;
        be->ops->scale(be, net->nweights, net->g, (float)(1.0 / s.scale));
        mx_optim_update_amp(be, &opt, net->params, 0, net->nparams, net->w_master, (mx_optim_state){mom, NULL},
                            net->g, 1.0f, t, net->w_half, net->w);
    }
    float *m = to_host(net->w_master, net->nweights), *w = to_host(net->w, net->nweights);
    size_t moved = 0, off_grid = 0, mismatch = 0;
    for (size_t i = 0; i < net->nweights; i++) {
        const uint16_t h = t == MX_F16 ? mx_f32_to_f16(m[i]) : mx_f32_to_bf16(m[i]);
        moved += m[i] != w0[i];
        off_grid += mx_dtype_load(t, &h, 0) != m[i];
        mismatch += mx_dtype_load(t, &h, 0) != w[i];
    }
    printf("%s master weights after 3 steps: %zu of %zu moved, %zu not representable in %s\n", mx_amp_name(a), moved,
           net->nweights, off_grid, mx_dtype_name(t));
    CHECK(s.skipped == 0, "%s: %ld steps skipped at scale %g", mx_amp_name(a), s.skipped, s.scale);
    CHECK(moved > net->nweights / 2, "%s: the update did not reach the master weights", mx_amp_name(a));
    CHECK(off_grid > net->nweights / 2, "%s: the master weights were rounded (%zu off the grid)", mx_amp_name(a),
          off_grid);
    CHECK(mismatch == 0 && on_grid(t, w, net->nweights), "%s: %zu compute weights are not the master's rounding",
          mx_amp_name(a), mismatch);
    free(m);
    free(w);
out:
    free(w0);
    if (mom) be->ops->free(be, mom);
    mx_net_destroy(net);
    free(x);
    free(y);
}

/* A loss scale far too large overflows fp16's gradients, and only fp16's. */
static void test_overflow(const mx_layer_spec *specs, int nspecs, mx_shape in)
{
    const size_t per = mx_shape_size(in);
    float *x = malloc(sizeof(float) * per * BATCH);
    int32_t *y = malloc(sizeof *y * BATCH);
    random_batch(x, y, per, BATCH);
    for (mx_amp a = MX_AMP_OFF; a <= MX_AMP_BF16; a++) {
        mx_net *net = NULL;
        step_out o = {0};
        if (mx_net_create_amp(&net, be, specs, nspecs, in, BATCH, a) < 0 ||
            mx_net_init_params(net, 5, MX_WEIGHT_INIT_XAVIER, 0) < 0 ||
            run_step(net, x, y, BATCH, (float)(1e12 / BATCH), &o) < 0) {
            CHECK(0, "%s", mx_last_error());
        } else {
            const size_t bad = mx_net_grad_nonfinite(net);
            printf("gradients at loss scale 1e12, %s: %zu of %zu non-finite\n", mx_amp_name(a), bad, net->nweights);
            CHECK(a == MX_AMP_FP16 ? bad > 0 : bad == 0, "%s: %zu non-finite", mx_amp_name(a), bad);
            mx_loss_scaler s;
            mx_loss_scaler_init(&s, a);
            CHECK(mx_loss_scaler_update(&s, bad > 0) == (a == MX_AMP_FP16) && s.scale == (a == MX_AMP_FP16 ? 32768 : 1),
                  "%s: scale %g", mx_amp_name(a), s.scale);
            /* An injected inf is counted, whatever the precision. */
            const float inf = INFINITY;
            be->ops->zero(be, net->g, sizeof(float) * net->nweights);
            be->ops->copy(be, net->g + net->nweights / 2, &inf, sizeof inf, MX_COPY_H2D);
            CHECK(mx_net_grad_nonfinite(net) == 1, "%s: injected inf", mx_amp_name(a));
        }
        free(o.logits);
        free(o.g);
        mx_net_destroy(net);
    }
    free(x);
    free(y);
}

int main(void)
{
    if (mx_backend_create(&be, "cpu", 0, 2) != MX_OK) return 1;
    test_scaler();
    test_parse();
    test_rounding();

    const mx_shape img = {1, 28, 28};
    mx_layer_spec lenet[MX_MAX_LAYERS];
    const int nl = mx_workload_find("lenet")->build(lenet, img, 10);
    /* Batch norm (saved statistics, running statistics) and a residual block (saved inner
     * activations, a projection) under AMP. */
    const mx_shape small = {3, 8, 8};
    const mx_layer_spec res[] = {
        {.kind = "conv2d", .units = 8, .k = 3, .stride = 1, .pad = 1},
        {.kind = "batchnorm"},
        {.kind = "relu"},
        {.kind = "residual", .units = 16, .stride = 2},
        {.kind = "avgpool_global"},
        {.kind = "dense", .units = 10},
    };
    /* A deep narrow net: its saved outputs outweigh the working buffers many times. */
    mx_layer_spec deep[17];
    for (int i = 0; i < 16; i++)
        deep[i] = i % 2 ? (mx_layer_spec){.kind = "relu"} : (mx_layer_spec){.kind = "dense", .units = 256};
    deep[16] = (mx_layer_spec){.kind = "dense", .units = 10};

    const mx_layer_spec linear[] = {{.kind = "dense", .units = 64}, {.kind = "dense", .units = 32},
                                    {.kind = "dense", .units = 10}};
    compare_model("linear", linear, 3, (mx_shape){1, 16, 16}, 0, 0);
    compare_model("lenet", lenet, nl, img, 1, 0);
    compare_model("residual", res, (int)(sizeof res / sizeof *res), small, 1, 1);

    mx_exec *e = NULL;
    mx_params *ps = NULL;
    CHECK(mx_params_create(&ps, be, lenet, nl, img, 0, nl) == MX_OK, "%s", mx_last_error());
    CHECK(ps && mx_exec_create_amp(&e, ps, 0, nl, 4, 1, (mx_dtype)7) == MX_EINVAL && !e &&
              strstr(mx_last_error(), "type 7"), "%s", mx_last_error());
    mx_params_destroy(ps);
    /* lenet's widest outputs (conv1, relu1: 2/3 of its activations) need f32 working
     * buffers as wide, so its whole context does not shrink; the deep net's does. */
    test_memory("lenet", lenet, nl, img, 0.6, 1.25);
    test_memory("deep mlp", deep, 17, (mx_shape){1, 16, 16}, 0.6, 0.75);

    test_cut(MX_AMP_FP16, lenet, nl, img, 4);
    test_cut(MX_AMP_BF16, lenet, nl, img, 7);
    test_master(MX_AMP_FP16, lenet, nl, img);
    test_master(MX_AMP_BF16, lenet, nl, img);
    test_overflow(lenet, nl, img);
    test_native_bf16("lenet", lenet, nl, img);
    test_native_bf16("residual", res, (int)(sizeof res / sizeof *res), small);
    mx_backend_destroy(be);
    return check_summary("test_amp");
}
