/* The CPU batch-norm kernels (f32 lanes flushed into double sums, prefetched rows) against a
 * reference computed in double from the definition: forward in training (outputs, batch mean
 * and inverse deviation, running statistics), forward in evaluation, and backward (input,
 * gamma and beta gradients, accumulated onto what they held), on shapes whose rows are
 * shorter than a vector, not a whole number of vectors, and long enough for the lanes to be
 * flushed within a row and across rows; values offset from zero, so that the sums cancel
 * as a real layer's do. The thread count must not change a result: one thread and two
 * give the same bits. The nChw16c kernels give the NCHW ones' bits. The fused batch norm and
 * relu (a residual block's inner pair) give the bits of the two ops run apart, forward and
 * backward. The layer's gradient check (test_layers) covers the maths of the backward; this
 * covers the kernels' sums. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 2024;

typedef struct {
    int n, c, hw;
    float *in, *dout, *gamma, *beta;
    float *out, *mean, *istd, *rm, *rv, *din, *dg, *db, *inf;
} bn_case;

/* Runs the kernels of be on k (its outputs are overwritten; dg/db start from 0.5). */
static void run(mx_backend *be, bn_case *k, float eps, float mom)
{
    for (int j = 0; j < k->c; j++) k->rm[j] = 0.1f * j, k->rv[j] = 1 + 0.05f * j, k->dg[j] = k->db[j] = 0.5f;
    be->ops->batchnorm_forward_train(be, k->n, k->c, k->hw, k->out, k->mean, k->istd, k->rm, k->rv, k->in, k->gamma,
                                     k->beta, eps, mom);
    be->ops->batchnorm_backward(be, k->n, k->c, k->hw, k->din, k->dg, k->db, k->dout, k->in, k->mean, k->istd,
                                k->gamma);
    be->ops->batchnorm_forward_infer(be, k->n, k->c, k->hw, k->inf, k->in, k->gamma, k->beta, k->rm, k->rv, eps);
}

static float *alloc(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* |a - ref| within tol relative to the largest |ref| of the channel's values (at least 1). */
static int close_to(double a, double ref, double scale, double tol) { return fabs(a - ref) <= tol * scale; }

static void check_case(mx_backend *one, mx_backend *two, int n, int c, int hw)
{
    const size_t total = (size_t)n * c * hw;
    const float eps = 1e-5f, mom = 0.9f;
    bn_case k = {.n = n, .c = c, .hw = hw};
    float **arrays[] = {&k.in, &k.dout, &k.out, &k.din, &k.inf};
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) *arrays[a] = alloc(total);
    float **chans[] = {&k.gamma, &k.beta, &k.mean, &k.istd, &k.rm, &k.rv, &k.dg, &k.db};
    for (size_t a = 0; a < sizeof chans / sizeof *chans; a++) *chans[a] = alloc((size_t)c);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int p = 0; p < hw; p++) {
                const size_t o = ((size_t)i * c + j) * hw + p;
                k.in[o] = (float)(3 + j + 2 * check_uniform(&rng)); /* mean about 4 + j, deviation 0.6 */
                k.dout[o] = (float)(0.2 + 2 * check_uniform(&rng) - 1);
            }
    for (int j = 0; j < c; j++) k.gamma[j] = 0.5f + 0.25f * j, k.beta[j] = 0.1f * j - 0.2f;
    run(two, &k, eps, mom);

    int bad_fwd = 0, bad_stats = 0, bad_bwd = 0, bad_inf = 0;
    const double cnt = (double)n * hw, tol = 2e-5;
    for (int j = 0; j < c; j++) {
        double s = 0, ss = 0, sdy = 0, sdyx = 0;
        for (int i = 0; i < n; i++)
            for (int p = 0; p < hw; p++) s += k.in[((size_t)i * c + j) * hw + p];
        const double mu = s / cnt;
        for (int i = 0; i < n; i++)
            for (int p = 0; p < hw; p++) {
                const double x = k.in[((size_t)i * c + j) * hw + p] - mu;
                ss += x * x;
            }
        const double var = ss / cnt, is = 1 / sqrt(var + eps);
        for (int i = 0; i < n; i++)
            for (int p = 0; p < hw; p++) {
                const size_t o = ((size_t)i * c + j) * hw + p;
                sdy += k.dout[o];
                sdyx += k.dout[o] * (k.in[o] - mu) * is;
            }
        const double rm = mom * 0.1 * j + (1 - mom) * mu;
        const double rv = mom * (1 + 0.05 * j) + (1 - mom) * (cnt > 1 ? var * cnt / (cnt - 1) : var);
        bad_stats += !close_to(k.mean[j], mu, fabs(mu) + 1, tol) || !close_to(k.istd[j], is, is, tol) ||
                     !close_to(k.rm[j], rm, fabs(rm) + 1, tol) || !close_to(k.rv[j], rv, rv, tol) ||
                     !close_to(k.db[j], 0.5 + sdy, cnt, tol) || !close_to(k.dg[j], 0.5 + sdyx, cnt, tol);
        const double ia = k.gamma[j] / sqrt((double)k.rv[j] + eps);
        for (int i = 0; i < n; i++)
            for (int p = 0; p < hw; p++) {
                const size_t o = ((size_t)i * c + j) * hw + p;
                const double xh = (k.in[o] - mu) * is;
                const double y = k.gamma[j] * xh + k.beta[j];
                const double dx = k.gamma[j] * is * (k.dout[o] - sdy / cnt - xh * sdyx / cnt);
                const double yi = ia * (k.in[o] - k.rm[j]) + k.beta[j];
                bad_fwd += !close_to(k.out[o], y, fabs(k.gamma[j]) * 4 + 1, tol);
                bad_bwd += !close_to(k.din[o], dx, fabs(k.gamma[j] * is) * 2 + 1, tol);
                bad_inf += !close_to(k.inf[o], yi, fabs(yi) + 1, tol);
            }
    }
    CHECK(!bad_stats, "n %d c %d hw %d: %d channels' statistics or parameter gradients off", n, c, hw, bad_stats);
    CHECK(!bad_fwd, "n %d c %d hw %d: %d outputs off", n, c, hw, bad_fwd);
    CHECK(!bad_bwd, "n %d c %d hw %d: %d input gradients off", n, c, hw, bad_bwd);
    CHECK(!bad_inf, "n %d c %d hw %d: %d evaluation outputs off", n, c, hw, bad_inf);

    /* the fused batch norm and relu: the bits of the two ops run apart, each way */
    float *y = alloc(total), *yf = alloc(total), *g = alloc(total), *dref = alloc(total), *df = alloc(total);
    float *st = alloc(4 * (size_t)c), *dgb = alloc(4 * (size_t)c); /* mean, istd, rm, rv; dg, db twice */
    for (int j = 0; j < c; j++) st[2 * c + j] = st[3 * c + j] = 1;
    two->ops->batchnorm_forward_train(two, n, c, hw, y, st, st + c, st + 2 * c, st + 3 * c, k.in, k.gamma, k.beta, eps,
                                      mom);
    two->ops->relu_forward(two, total, y, y);
    two->ops->batchnorm_relu_forward_train(two, n, c, hw, yf, st, st + c, st + 2 * c, st + 3 * c, k.in, k.gamma, k.beta,
                                           eps, mom);
    two->ops->relu_backward(two, total, g, k.dout, y);
    two->ops->batchnorm_backward(two, n, c, hw, dref, dgb, dgb + c, g, k.in, st, st + c, k.gamma);
    two->ops->batchnorm_relu_backward(two, n, c, hw, df, dgb + 2 * c, dgb + 3 * c, k.dout, k.in, yf, st, st + c,
                                      k.gamma);
    int zeros = 0;
    for (size_t i = 0; i < total; i++) zeros += yf[i] == 0;
    CHECK(!memcmp(y, yf, total * sizeof(float)) && !memcmp(dref, df, total * sizeof(float)) &&
              !memcmp(dgb, dgb + 2 * c, 2 * (size_t)c * sizeof(float)),
          "n %d c %d hw %d: batch norm and relu fused differ from the two apart", n, c, hw);
    CHECK(total < 8 || (zeros > 0 && zeros < (int)total), "n %d c %d hw %d: the relu cut %d of %zu outputs", n, c, hw,
          zeros, total);
    free(y), free(yf), free(g), free(dref), free(df), free(st), free(dgb);

    /* one thread: the same bits (each channel's sums run in one order whatever the team) */
    bn_case k1 = k;
    k1.out = alloc(total), k1.din = alloc(total), k1.inf = alloc(total);
    float **mine[] = {&k1.mean, &k1.istd, &k1.rm, &k1.rv, &k1.dg, &k1.db};
    for (size_t a = 0; a < sizeof mine / sizeof *mine; a++) *mine[a] = alloc((size_t)c);
    run(one, &k1, eps, mom);
    const size_t tb = total * sizeof(float), cb = (size_t)c * sizeof(float);
    const int same = !memcmp(k1.out, k.out, tb) && !memcmp(k1.din, k.din, tb) && !memcmp(k1.inf, k.inf, tb) &&
                     !memcmp(k1.mean, k.mean, cb) && !memcmp(k1.istd, k.istd, cb) && !memcmp(k1.rm, k.rm, cb) &&
                     !memcmp(k1.rv, k.rv, cb) && !memcmp(k1.dg, k.dg, cb) && !memcmp(k1.db, k.db, cb);
    CHECK(same, "n %d c %d hw %d: one thread and two give different bits", n, c, hw);
    free(k1.out), free(k1.din), free(k1.inf);
    for (size_t a = 0; a < sizeof mine / sizeof *mine; a++) free(*mine[a]);
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) free(*arrays[a]);
    for (size_t a = 0; a < sizeof chans / sizeof *chans; a++) free(*chans[a]);
}

/* The nChw16c kernels (a residual block's main branch, engine/cpu/bn16.c) against the NCHW ones on the
 * same values: the same statistics, running averages and parameter gradients bit for bit;
 * MX_BN16_INNER (with the relu): outputs and input gradients that are the NCHW kernels'
 * rounded to bf16; MX_BN16_END: the NCHW output bit for bit from nChw16c input, and from an
 * NCHW output gradient the input gradients rounded to bf16. */
static void check_c16(mx_backend *be, int n, int c, int hw, int kind)
{
    const size_t total = (size_t)n * c * hw;
    const int relu = kind == MX_BN16_INNER;
    float *x = alloc(total), *dy = alloc(total), *x16 = alloc(total), *dy16 = alloc(total), *y = alloc(total);
    float *din = alloc(total), *yn = alloc(total), *st = alloc(8 * (size_t)c), *gb = alloc(4 * (size_t)c);
    float *gamma = alloc(c), *beta = alloc(c);
    uint16_t *y16 = calloc(total, 2), *din16 = calloc(total, 2);
    for (int j = 0; j < c; j++)
        gamma[j] = 0.5f + 0.01f * j, beta[j] = 0.05f * (j % 7) - 0.1f, st[2 * c + j] = st[6 * c + j] = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int p = 0; p < hw; p++) {
                const size_t o = ((size_t)i * c + j) * hw + p,
                             b = (((size_t)i * (c / 16) + j / 16) * hw + p) * 16 + j % 16;
                x16[b] = x[o] = (float)(1 + 0.1 * j + 2 * check_uniform(&rng));
                dy16[b] = dy[o] = (float)(2 * check_uniform(&rng) - 1);
            }
    /* st: mean, istd, running mean, running var (NCHW), then the same four (nChw16c) */
    if (relu) {
        be->ops->batchnorm_relu_forward_train(be, n, c, hw, y, st, st + c, st + 2 * c, st + 3 * c, x, gamma, beta,
                                              1e-5f, 0.9f);
        be->ops->batchnorm_relu_backward(be, n, c, hw, din, gb, gb + c, dy, x, y, st, st + c, gamma);
    } else {
        be->ops->batchnorm_forward_train(be, n, c, hw, y, st, st + c, st + 2 * c, st + 3 * c, x, gamma, beta, 1e-5f,
                                         0.9f);
        be->ops->batchnorm_backward(be, n, c, hw, din, gb, gb + c, dy, x, st, st + c, gamma);
    }
    const int ran = mx_cpu_bn_c16_forward(be, n, c, hw, kind, relu ? (void *)y16 : (void *)yn, st + 4 * c, st + 5 * c,
                                          st + 6 * c, st + 7 * c, x16, gamma, beta, 1e-5f, 0.9f) &&
                    mx_cpu_bn_c16_backward(be, n, c, hw, kind, din16, gb + 2 * c, gb + 3 * c, relu ? dy16 : dy, x16,
                                           relu ? y16 : NULL, st + 4 * c, st + 5 * c, gamma);
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int p = 0; p < hw; p++) {
                const size_t o = ((size_t)i * c + j) * hw + p,
                             b = (((size_t)i * (c / 16) + j / 16) * hw + p) * 16 + j % 16;
                bad += (relu ? y16[b] != mx_f32_to_bf16(y[o]) : memcmp(&yn[o], &y[o], sizeof(float)) != 0) ||
                       din16[b] != mx_f32_to_bf16(din[o]);
            }
    CHECK(ran && !bad && !memcmp(st, st + 4 * c, 4 * (size_t)c * sizeof(float)) &&
              !memcmp(gb, gb + 2 * c, 2 * (size_t)c * sizeof(float)),
          "nChw16c %s, n %d c %d hw %d: %d values, or the statistics, differ from the NCHW kernels'",
          relu ? "with relu" : "to NCHW", n, c, hw, bad);
    free(x), free(dy), free(x16), free(dy16), free(y), free(din), free(yn), free(st), free(gb), free(gamma), free(beta);
    free(y16), free(din16);
}

int main(void)
{
    mx_backend *one, *two;
    if (mx_backend_create(&one, "cpu", 0, 1) < 0 || mx_backend_create(&two, "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_batchnorm: no CPU backend\n");
        return 1;
    }
    /* (n, c, hw): a single value; rows shorter than a vector; 16 and 49 (resnet18's last
     * stages); rows of 1000 (62 vectors: flushed within a row); short rows flushed across
     * rows (64 rows of 16); and a team's worth of channels (the two-thread split) */
    static const int shapes[][3] = {{1, 1, 1},  {2, 3, 1},   {3, 2, 7},  {5, 3, 16}, {2, 4, 17},
                                    {4, 5, 49}, {3, 2, 1000}, {70, 3, 16}, {2, 40, 33}, {8, 64, 196}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        check_case(one, two, shapes[s][0], shapes[s][1], shapes[s][2]);
    if (mx_cpu_bf16_native()) {
        static const int c16[][3] = {{2, 16, 1}, {3, 16, 7}, {2, 32, 16}, {4, 16, 17}, {3, 48, 49}, {2, 16, 1000},
                                     {70, 16, 16}, {8, 64, 196}};
        for (size_t s = 0; s < sizeof c16 / sizeof *c16; s++)
            for (int kind = MX_BN16_INNER; kind <= MX_BN16_END; kind++)
                check_c16(two, c16[s][0], c16[s][1], c16[s][2], kind);
    } else {
        printf("test_batchnorm: the nChw16c kernels skipped: no avx512_bf16 here\n");
    }
    mx_backend_destroy(one);
    mx_backend_destroy(two);
    return check_summary("test_batchnorm");
}
