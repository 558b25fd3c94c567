/* The optimizers' update (engine/core/optim.h) against a direct evaluation of their formulas
 * in double over several steps:
 *   SGD:   mom = momentum mom - lr (f g + wd w); w += mom
 *   AdamW: m = b1 m + (1 - b1) f g; v = b2 v + (1 - b2) (f g)^2; mhat = m / (1 - b1^t);
 *          vhat = v / (1 - b2^t); w -= lr (mhat / (sqrt(vhat) + eps) + wd w)
 * with wd only on tensors marked decay (a weight and a bias here), t from 1, and f the
 * clipping factor of PyTorch's clip_grad_norm_ (total = the L2 norm of every gradient of the
 * table; f = max / (total + 1e-6) where that is below 1, else 1), without and with clipping.
 * Tolerance: 2e-5 of the largest weight (0.53) after 10 steps, f32 arithmetic against double:
 * measured differences up to 2.4e-7, where a step count stuck at 1 gives 1.3e-2, no bias
 * correction (t very large) 0.11, and weight decay on the bias too 4.9e-3 (AdamW) and 1.0e-2
 * (SGD). Also: the AMP form equals the update and two
 * casts bit for bit; the CPU's sum of squares does not depend on its thread count; AdamW is
 * refused, naming the kernel, on a backend without adamw_update, whose AMP form then stays
 * NULL; the state's layout. */
#include "check.h"
#include "engine/core/optim.h"
#include "engine/core/backends.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N_W 300 /* the weight: decay applies */
#define N_B 37  /* the bias: no decay */
#define N (N_W + N_B)
#define STEPS 10
#define TOL 2e-5

static mx_backend *be;
static const mx_param table[2] = {
    {.name = "w", .offset = 0, .count = N_W, .dtype = MX_F32, .decay = 1},
    {.name = "b", .offset = N_W, .count = N_B, .dtype = MX_F32, .decay = 0},
};

/* Step i's gradient of element j: deterministic, of both signs and a range of sizes. */
static double grad_of(int i, int j) { return sin(0.37 * j + 1.3 * i) * (0.05 + 0.02 * (j % 7)); }

/* The formulas in double; returns the weights after STEPS steps in w. */
static void reference(const mx_optim *o, double *w)
{
    double m[N] = {0}, v[N] = {0}, g[N];
    for (int i = 0; i < STEPS; i++) {
        double sumsq = 0;
        for (int j = 0; j < N; j++) g[j] = grad_of(i, j), sumsq += g[j] * g[j];
        double f = 1;
        if (o->clip_norm > 0) {
            const double c = o->clip_norm / (sqrt(sumsq) + 1e-6);
            if (c < 1) f = c;
        }
        const double t = i + 1;
        for (int j = 0; j < N; j++) {
            const double wd = j < N_W ? o->wd : 0, gj = f * g[j];
            if (o->kind == MX_OPTIM_SGD) {
                m[j] = o->momentum * m[j] - o->lr * (gj + wd * w[j]);
                w[j] += m[j];
            } else {
                m[j] = o->beta1 * m[j] + (1 - o->beta1) * gj;
                v[j] = o->beta2 * v[j] + (1 - o->beta2) * gj * gj;
                const double mhat = m[j] / (1 - pow(o->beta1, t)), vhat = v[j] / (1 - pow(o->beta2, t));
                w[j] -= o->lr * (mhat / (sqrt(vhat) + o->eps) + wd * w[j]);
            }
        }
    }
}

static double initial(int j) { return 0.5 * cos(0.11 * j); }

/* The engine's update over the same steps, clipping as a strategy does. */
static int engine(mx_optim o, float *w, int *clipped_steps)
{
    float g[N], *state = calloc((size_t)mx_optim_nstate(&o) * N, sizeof(float));
    if (!state) return -1;
    const mx_optim_state st = mx_optim_state_of(&o, state, N);
    *clipped_steps = 0;
    for (int i = 0; i < STEPS; i++) {
        for (int j = 0; j < N; j++) g[j] = (float)grad_of(i, j);
        o.step = i + 1;
        const float f = mx_optim_clip_factor(&o, mx_optim_sumsq(be, table, 0, 2, g));
        *clipped_steps += f < 1;
        mx_optim_update(be, &o, table, 0, 2, w, st, g, f);
    }
    free(state);
    return 0;
}

static void check_case(const char *label, const mx_optim *o, int want_clipped)
{
    double ref[N];
    float w[N];
    for (int j = 0; j < N; j++) ref[j] = initial(j), w[j] = (float)initial(j);
    reference(o, ref);
    int clipped = -1;
    CHECK(engine(*o, w, &clipped) == 0, "%s: out of memory", label);
    double worst = 0, scale = 0;
    for (int j = 0; j < N; j++) {
        worst = fmax(worst, fabs(w[j] - ref[j]));
        scale = fmax(scale, fabs(ref[j]));
    }
    CHECK(worst <= TOL * scale, "%s: differs from the formulas by %.3g (weights up to %.3g)", label, worst, scale);
    CHECK(want_clipped ? clipped == STEPS : clipped == 0, "%s: %d of %d steps clipped", label, clipped, STEPS);
    /* the step moved the weights: a test of nothing would pass too */
    CHECK(fabs(ref[0] - initial(0)) > 1e-3, "%s: the weights barely moved", label);
    printf("%-40s max difference %.2e of %.2e, %d steps clipped\n", label, worst, scale, clipped);
}

/* The gradient's norm is about 0.8: 0.1 clips every step, 100 none. */
static void test_formulas(void)
{
    mx_optim sgd = {.kind = MX_OPTIM_SGD, .lr = 0.05f, .momentum = 0.9f, .wd = 0.01f};
    mx_optim adamw = {.kind = MX_OPTIM_ADAMW, .lr = 0.01f, .wd = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    check_case("sgd", &sgd, 0);
    check_case("adamw", &adamw, 0);
    sgd.clip_norm = adamw.clip_norm = 100;
    check_case("sgd, clip norm above the gradient's", &sgd, 0);
    check_case("adamw, clip norm above the gradient's", &adamw, 0);
    sgd.clip_norm = adamw.clip_norm = 0.1f;
    check_case("sgd, clipped to 0.1", &sgd, 1);
    check_case("adamw, clipped to 0.1", &adamw, 1);
    adamw.beta1 = 0.5f, adamw.beta2 = 0.9f, adamw.eps = 1e-3f;
    check_case("adamw, clipped, other betas and eps", &adamw, 1);
}

/* AdamW's AMP update is adamw_update and two casts, bit for bit, around the pieces and the
 * thread split of the CPU's kernel. */
static void test_amp(void)
{
    const size_t sizes[] = {1, 2047, 2049, 40000};
    const mx_adamw_step a = {0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.5f, 1 - 0.9f * 0.9f, 1 - 0.999f * 0.999f};
    for (int k = 0; k < 2; k++) {
        const mx_dtype t = k ? MX_BF16 : MX_F16;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            const size_t n = sizes[s];
            float *buf = calloc(n * 11, sizeof(float));
            uint16_t *h = calloc(2 * n, sizeof(uint16_t));
            if (!buf || !h) {
                CHECK(0, "out of memory");
                return;
            }
            float *g = buf, *w[2] = {buf + n, buf + 2 * n}, *m[2] = {buf + 3 * n, buf + 4 * n};
            float *v[2] = {buf + 5 * n, buf + 6 * n}, *c[2] = {buf + 7 * n, buf + 8 * n};
            for (size_t j = 0; j < n; j++) {
                g[j] = (float)grad_of(3, (int)j);
                w[0][j] = w[1][j] = (float)initial((int)j);
                m[0][j] = m[1][j] = 0.1f * g[j], v[0][j] = v[1][j] = 0.01f * g[j] * g[j];
            }
            be->ops->adamw_update(be, n, w[0], m[0], v[0], g, &a);
            be->ops->cast(be, n, h, t, w[0], MX_F32);
            be->ops->cast(be, n, c[0], MX_F32, h, t);
            be->ops->adamw_update_amp(be, n, w[1], m[1], v[1], g, &a, t, h + n, c[1]);
            const int same = !memcmp(w[0], w[1], n * 4) && !memcmp(m[0], m[1], n * 4) &&
                             !memcmp(v[0], v[1], n * 4) && !memcmp(c[0], c[1], n * 4) && !memcmp(h, h + n, n * 2);
            CHECK(same, "adamw_update_amp %s n=%zu differs from adamw_update and two casts", mx_dtype_name(t), n);
            free(buf);
            free(h);
        }
    }
    float x = 1, m = 0, v = 0, g = 1, w = 0;
    uint16_t h;
    be->ops->adamw_update_amp(be, 1, &x, &m, &v, &g, &a, MX_F32, &h, &w);
    CHECK(mx_backend_error(be) != MX_OK && strstr(mx_last_error(), "dtype 0"), "%s", mx_last_error());
}

/* The same values give the same sum whatever the threads: replicas must take one factor. */
static void test_sumsq(void)
{
    const size_t n = 1000003;
    float *x = malloc(sizeof(float) * n);
    mx_backend *b1, *b4;
    if (!x || mx_backend_create(&b1, "cpu", 1, 1) < 0 || mx_backend_create(&b4, "cpu", 2, 4) < 0) {
        CHECK(0, "setup: %s", mx_last_error());
        free(x);
        return;
    }
    double want = 0;
    for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.001 * (double)i), want += (double)x[i] * x[i];
    const double s1 = b1->ops->sumsq(b1, n, x), s4 = b4->ops->sumsq(b4, n, x);
    CHECK(s1 == s4, "sumsq: %.17g on 1 thread, %.17g on 4", s1, s4);
    CHECK(fabs(s1 - want) <= 1e-12 * want, "sumsq %.17g, want %.17g", s1, want);
    CHECK(b1->ops->sumsq(b1, 0, x) == 0, "sumsq of nothing");
    const mx_optim o = {.kind = MX_OPTIM_SGD, .clip_norm = 2};
    CHECK(mx_optim_clip_factor(&o, 16) == (float)(2 / (4 + 1e-6)), "clip factor at norm 4");
    CHECK(mx_optim_clip_factor(&o, 1) == 1, "clip factor at norm 1");
    CHECK(isnan(mx_optim_clip_factor(&o, INFINITY)), "clip factor of an infinite norm");
    const mx_optim off = {.kind = MX_OPTIM_SGD};
    CHECK(mx_optim_clip_factor(&off, 1e30) == 1, "no clipping without clip_norm");
    mx_backend_destroy(b1);
    mx_backend_destroy(b4);
    free(x);
}

/* A backend without AdamW's kernel: refused by name; its AMP form gets no default. */
static void test_refusal(void)
{
    mx_backend_ops raw = *be->raw, prepared;
    raw.name = "noadam";
    raw.adamw_update = NULL;
    raw.adamw_update_amp = NULL;
    CHECK(mx_backend_table_prepare(&prepared, &raw) == MX_OK, "%s", mx_last_error());
    CHECK(prepared.adamw_update_amp == NULL && prepared.sumsq != NULL, "defaults: adamw_update_amp %p, sumsq %p",
          (void *)prepared.adamw_update_amp, (void *)prepared.sumsq);
    mx_backend fake = *be;
    fake.ops = &prepared;
    const mx_optim adamw = {.kind = MX_OPTIM_ADAMW}, sgd = {.kind = MX_OPTIM_SGD};
    CHECK(mx_optim_check_backend(&adamw, &fake) == MX_EUNSUPPORTED &&
              strstr(mx_last_error(), "backend noadam has no adamw_update kernel"),
          "%s", mx_last_error());
    CHECK(mx_optim_check_backend(&sgd, &fake) == MX_OK, "sgd refused: %s", mx_last_error());
    CHECK(mx_optim_check_backend(&adamw, be) == MX_OK, "the CPU refuses adamw: %s", mx_last_error());
    /* the state: one buffer for SGD, two for AdamW, v after m */
    float buf[8];
    const mx_optim_state s1 = mx_optim_state_of(&sgd, buf, 4), s2 = mx_optim_state_of(&adamw, buf, 4);
    CHECK(mx_optim_nstate(&sgd) == 1 && mx_optim_nstate(&adamw) == 2 && !s1.v && s2.v == buf + 4, "state layout");
    const mx_optim_state at = mx_optim_state_at(s2, 3);
    CHECK(at.m == buf + 3 && at.v == buf + 7, "state at an offset");
}

int main(void)
{
    if (mx_backend_create(&be, "cpu", 0, 2) != MX_OK) return 1;
    test_formulas();
    test_amp();
    test_sumsq();
    test_refusal();
    mx_backend_destroy(be);
    return check_summary("test_optim");
}
