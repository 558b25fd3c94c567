/* CPU batch normalisation over (batch, h, w) per channel, one channel per thread, so results
 * do not depend on the thread count. A channel's sums run in VL float lanes that take each
 * row's whole vectors and are flushed into a double sum every MX_BN_FLUSH values a lane (no
 * lane sums more than that in f32: a relative error of MX_BN_FLUSH * 2^-24 at worst, 4e-6),
 * the rows' tails going into the double sum directly. The compiler keeps the lanes in
 * vector registers: the sums these replaced (eight double lanes, every value converted)
 * ran far below the bandwidth the host's L3 gives on resnet18's shapes and took a notable
 * share of its step (docs/performance.md, "Choices in the code"). */
#include "kernels.h"

#include <math.h>

#define VL 16 /* engine/cpu/bn16.c's blocks of 16 channels reproduce these sums lane for lane */

/* The lanes, added into *s and zeroed. */
static inline void flush(float *restrict a, double *s)
{
    double t = 0;
    for (int l = 0; l < VL; l++) t += a[l], a[l] = 0;
    *s += t;
}

/* Rows of a channel are c * hw values apart, so each is a stream of its own that the
 * hardware's prefetchers learn anew: row i + AHEAD(hw) is asked for while row i is summed,
 * AHEAD rows making about 2 KiB (before row 0's sum, rows [0, AHEAD) are). This made
 * resnet18's batch norms faster, backward most (docs/performance.md, "Choices in the code").
 * write: the row is about to be written. */
static inline int ahead(int hw) { return hw >= 512 ? 1 : 512 / hw; }

static inline void prefetch_row(const float *row, int hw, int write)
{
    for (int p = 0; p < hw; p += 64 / sizeof(float))
        if (write) __builtin_prefetch(row + p, 1);
        else __builtin_prefetch(row + p, 0);
}

static inline void prefetch_next(const float *x, int i, int n, size_t stride, int hw, int write)
{
    const int d = ahead(hw);
    if (i == 0)
        for (int k = 0; k < d && k < n; k++) prefetch_row(x + k * stride, hw, write);
    if (i + d < n) prefetch_row(x + (i + d) * stride, hw, write);
}

enum { SUM, SQDEV };

/* The sum of one channel's values (SUM) or of their squared deviations from mu (SQDEV): n
 * rows of hw, row i at x + i * stride. */
static inline __attribute__((always_inline)) double chan_sum(const float *x, int n, size_t stride, int hw, float mu,
                                                             int kind)
{
    float a[VL] = {0};
    double s = 0;
    const int full = hw - hw % VL;
    int since = 0;
    for (int i = 0; i < n; i++) {
        const float *restrict r = x + i * stride;
        if (kind == SUM) prefetch_next(x, i, n, stride, hw, 0); /* SQDEV: in L2 from SUM's pass */
        for (int p = 0; p < full; p += VL)
            for (int l = 0; l < VL; l++) a[l] += kind == SUM ? r[p + l] : (r[p + l] - mu) * (r[p + l] - mu);
        for (int p = full; p < hw; p++) s += kind == SUM ? r[p] : (double)(r[p] - mu) * (r[p] - mu);
        if (mx_bn_flush_due(&since, full / VL)) flush(a, &s);
    }
    flush(a, &s);
    return s;
}

/* The sums of dy and of dy * (x - mu) over one channel, likewise; with relu, dy is the
 * gradient of relu's output y and is taken where y > 0 only (relu_backward's mask). */
static inline __attribute__((always_inline)) void chan_grad_sums(const float *dy, const float *x, const float *y,
                                                                 int n, size_t stride, int hw, float mu, int relu,
                                                                 double *sdy, double *sdyx)
{
    float a[VL] = {0}, b[VL] = {0};
    double s = 0, t = 0;
    const int full = hw - hw % VL;
    int since = 0;
    for (int i = 0; i < n; i++) {
        const float *restrict g = dy + i * stride, *restrict r = x + i * stride,
                              *restrict m = relu ? y + i * stride : r;
        prefetch_next(x, i, n, stride, hw, 0), prefetch_next(dy, i, n, stride, hw, 0);
        if (relu) prefetch_next(y, i, n, stride, hw, 0);
        for (int p = 0; p < full; p += VL)
            for (int l = 0; l < VL; l++) {
                const float gv = relu && !(m[p + l] > 0) ? 0 : g[p + l];
                a[l] += gv;
                b[l] += gv * (r[p + l] - mu);
            }
        for (int p = full; p < hw; p++) {
            const float gv = relu && !(m[p] > 0) ? 0 : g[p];
            s += gv;
            t += (double)gv * (r[p] - mu);
        }
        if (mx_bn_flush_due(&since, full / VL)) flush(a, &s), flush(b, &t);
    }
    flush(a, &s), flush(b, &t);
    *sdy = s, *sdyx = t;
}

/* y = a * x + b over one channel's rows; with relu, max(that, 0) as relu_forward takes it. */
static inline __attribute__((always_inline)) void chan_affine(float *y, const float *x, int n, size_t stride, int hw,
                                                              float a, float b, int relu)
{
    for (int i = 0; i < n; i++) {
        const float *restrict r = x + i * stride;
        float *restrict o = y + i * stride;
        prefetch_next(y, i, n, stride, hw, 1);
        for (int p = 0; p < hw; p++) {
            const float v = a * r[p] + b;
            o[p] = relu && !(v > 0) ? 0 : v;
        }
    }
}

static inline __attribute__((always_inline)) void forward_train(mx_backend *be, int n, int c, int hw, float *out,
                                                                 float *mean, float *invstd, float *run_mean,
                                                                 float *run_var, const float *in, const float *gamma,
                                                                 const float *beta, float eps, float momentum, int relu)
{
    const double count = (double)n * hw;
    const size_t stride = (size_t)c * hw;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        const float *x = in + (size_t)j * hw;
        const double mu = chan_sum(x, n, stride, hw, 0, SUM) / count;
        const double var = chan_sum(x, n, stride, hw, (float)mu, SQDEV) / count;
        float a, b;
        mx_bn_forward_scalars(mu, var, count, gamma[j], beta[j], eps, momentum, &mean[j], &invstd[j], &run_mean[j],
                              &run_var[j], &a, &b);
        chan_affine(out + (size_t)j * hw, x, n, stride, hw, a, b, relu);
    }
}

void mx_cpu_batchnorm_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean, float *invstd,
                                    float *run_mean, float *run_var, const float *in, const float *gamma,
                                    const float *beta, float eps, float momentum)
{
    forward_train(be, n, c, hw, out, mean, invstd, run_mean, run_var, in, gamma, beta, eps, momentum, 0);
}

void mx_cpu_batchnorm_relu_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean,
                                         float *invstd, float *run_mean, float *run_var, const float *in,
                                         const float *gamma, const float *beta, float eps, float momentum)
{
    forward_train(be, n, c, hw, out, mean, invstd, run_mean, run_var, in, gamma, beta, eps, momentum, 1);
}

void mx_cpu_batchnorm_forward_infer(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                    const float *gamma, const float *beta, const float *run_mean,
                                    const float *run_var, float eps)
{
    const size_t stride = (size_t)c * hw;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        const float a = gamma[j] / sqrtf(run_var[j] + eps);
        chan_affine(out + (size_t)j * hw, in + (size_t)j * hw, n, stride, hw, a, beta[j] - run_mean[j] * a, 0);
    }
}

static inline __attribute__((always_inline)) void backward(mx_backend *be, int n, int c, int hw, float *din,
                                                            float *dgamma, float *dbeta, const float *dout,
                                                            const float *in, const float *out, const float *mean,
                                                            const float *invstd, const float *gamma, int relu)
{
    const double count = (double)n * hw;
    const size_t stride = (size_t)c * hw;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        const float mu = mean[j], is = invstd[j];
        const size_t o = (size_t)j * hw;
        double sdy, sdyx;
        chan_grad_sums(dout + o, in + o, relu ? out + o : NULL, n, stride, hw, mu, relu, &sdy, &sdyx);
        float k, mdy, mdyx;
        mx_bn_backward_scalars(sdy, sdyx, count, gamma[j], is, &dgamma[j], &dbeta[j], &k, &mdy, &mdyx);
        if (!din) continue;
        for (int i = 0; i < n; i++) {
            const float *restrict g = dout + o + i * stride, *restrict r = in + o + i * stride;
            const float *restrict m = relu ? out + o + i * stride : r;
            float *restrict d = din + o + i * stride;
            prefetch_next(din + o, i, n, stride, hw, 1);
            for (int p = 0; p < hw; p++) {
                const float gv = relu && !(m[p] > 0) ? 0 : g[p];
                d[p] = k * (gv - mdy - (r[p] - mu) * mdyx);
            }
        }
    }
}

void mx_cpu_batchnorm_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *invstd,
                               const float *gamma)
{
    backward(be, n, c, hw, din, dgamma, dbeta, dout, in, NULL, mean, invstd, gamma, 0);
}

void mx_cpu_batchnorm_relu_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                                    const float *dout, const float *in, const float *out, const float *mean,
                                    const float *invstd, const float *gamma)
{
    backward(be, n, c, hw, din, dgamma, dbeta, dout, in, out, mean, invstd, gamma, 1);
}
