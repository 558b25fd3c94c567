/* CPU batch normalisation over (batch, h, w) per channel. Sums run in double, one channel
 * per thread, so results do not depend on the thread count; each row of hw values is summed
 * in LANES independent double sums, then those in order: one chain of dependent double adds
 * per channel had made the sums latency-bound (resnet18's batch norms took 8% of its step,
 * at about one value per 4 cycles). */
#include "cpu_kernels.h"

#include <math.h>

#define LANES 8

/* sum of x[p] over one row, in LANES double lanes then in order */
static double row_sum(const float *restrict x, int hw)
{
    double a[LANES] = {0}, s = 0;
    int p = 0;
    for (; p + LANES <= hw; p += LANES)
        for (int l = 0; l < LANES; l++) a[l] += x[p + l];
    for (int l = 0; p + l < hw; l++) a[l] += x[p + l];
    for (int l = 0; l < LANES; l++) s += a[l];
    return s;
}

/* sum of (x[p] - mu)^2 over one row, likewise */
static double row_sqdev(const float *restrict x, int hw, double mu)
{
    double b[LANES] = {0}, s = 0;
    int p = 0;
    for (; p + LANES <= hw; p += LANES)
        for (int l = 0; l < LANES; l++) b[l] += (x[p + l] - mu) * (x[p + l] - mu);
    for (int l = 0; p + l < hw; l++) b[l] += (x[p + l] - mu) * (x[p + l] - mu);
    for (int l = 0; l < LANES; l++) s += b[l];
    return s;
}

/* sum of dy[p] and of dy[p] * (x[p] - mu) * is over one row, likewise */
static void row_grad_sums(const float *restrict dy, const float *restrict x, int hw, float mu, float is,
                          double *sdy, double *sdyx)
{
    double a[LANES] = {0}, b[LANES] = {0};
    int p = 0;
    for (; p + LANES <= hw; p += LANES)
        for (int l = 0; l < LANES; l++) {
            a[l] += dy[p + l];
            b[l] += dy[p + l] * (x[p + l] - mu) * is;
        }
    for (int l = 0; p + l < hw; l++) {
        a[l] += dy[p + l];
        b[l] += dy[p + l] * (x[p + l] - mu) * is;
    }
    for (int l = 0; l < LANES; l++) *sdy += a[l], *sdyx += b[l];
}

void mx_cpu_batchnorm_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean, float *invstd,
                                    float *run_mean, float *run_var, const float *in, const float *gamma,
                                    const float *beta, float eps, float momentum)
{
    const double count = (double)n * hw;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        double s = 0, ss = 0;
        for (int i = 0; i < n; i++) s += row_sum(in + ((size_t)i * c + j) * hw, hw);
        const double mu = s / count;
        for (int i = 0; i < n; i++) ss += row_sqdev(in + ((size_t)i * c + j) * hw, hw, mu);
        const double var = ss / count;
        const float is = (float)(1.0 / sqrt(var + eps));
        mean[j] = (float)mu;
        invstd[j] = is;
        /* Running variance is the unbiased estimate, as evaluation sees a population. */
        const double unbiased = count > 1 ? var * count / (count - 1) : var;
        run_mean[j] = momentum * run_mean[j] + (1 - momentum) * (float)mu;
        run_var[j] = momentum * run_var[j] + (1 - momentum) * (float)unbiased;
        const float a = gamma[j] * is, b = beta[j] - (float)mu * a;
        for (int i = 0; i < n; i++) {
            const float *x = in + ((size_t)i * c + j) * hw;
            float *y = out + ((size_t)i * c + j) * hw;
            for (int p = 0; p < hw; p++) y[p] = a * x[p] + b;
        }
    }
}

void mx_cpu_batchnorm_forward_infer(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                    const float *gamma, const float *beta, const float *run_mean,
                                    const float *run_var, float eps)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        const float a = gamma[j] / sqrtf(run_var[j] + eps), b = beta[j] - run_mean[j] * a;
        for (int i = 0; i < n; i++) {
            const float *x = in + ((size_t)i * c + j) * hw;
            float *y = out + ((size_t)i * c + j) * hw;
            for (int p = 0; p < hw; p++) y[p] = a * x[p] + b;
        }
    }
}

void mx_cpu_batchnorm_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *invstd,
                               const float *gamma)
{
    const double count = (double)n * hw;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int j = 0; j < c; j++) {
        const float mu = mean[j], is = invstd[j];
        double sdy = 0, sdyx = 0;
        for (int i = 0; i < n; i++) {
            const size_t o = ((size_t)i * c + j) * hw;
            row_grad_sums(dout + o, in + o, hw, mu, is, &sdy, &sdyx);
        }
        dbeta[j] += (float)sdy;
        dgamma[j] += (float)sdyx;
        if (!din) continue;
        const float k = gamma[j] * is, mdy = (float)(sdy / count), mdyx = (float)(sdyx / count);
        for (int i = 0; i < n; i++) {
            const size_t o = ((size_t)i * c + j) * hw;
            for (int p = 0; p < hw; p++) din[o + p] = k * (dout[o + p] - mdy - (in[o + p] - mu) * is * mdyx);
        }
    }
}
