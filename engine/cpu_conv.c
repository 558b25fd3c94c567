/* CPU convolution as im2col + one OpenBLAS GEMM per chunk of samples. Chunks of several
 * samples make the GEMM wide enough to run near the sgemm ceiling even where the output
 * is small (4x4 maps in resnet18's last stage); chunk size is bounded by a workspace budget. */
#include "cpu_kernels.h"

#include <string.h>

#define CONV_WORKSPACE_FLOATS ((size_t)8 << 20) /* 32 MiB per device */

/* Rows of col are (channel, ky, kx); columns are (sample, oy, ox) of the chunk. */
static void im2col(const mx_backend *be, const mx_conv_desc *d, int nb, const float *in, float *col)
{
    const int k = d->k, K = d->c * k * k, ohw = d->oh * d->ow;
    const size_t M = (size_t)nb * ohw, chw = (size_t)d->c * d->h * d->w;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)K * M)) schedule(static)
    for (int r = 0; r < K; r++) {
        const int kx = r % k, ky = (r / k) % k, ci = r / (k * k);
        float *dst = col + (size_t)r * M;
        for (int s = 0; s < nb; s++) {
            const float *plane = in + s * chw + (size_t)ci * d->h * d->w;
            for (int oy = 0; oy < d->oh; oy++) {
                const int iy = oy * d->stride - d->pad + ky;
                float *drow = dst + (size_t)s * ohw + (size_t)oy * d->ow;
                if (iy < 0 || iy >= d->h) {
                    memset(drow, 0, sizeof(float) * d->ow);
                    continue;
                }
                const float *srow = plane + (size_t)iy * d->w;
                for (int ox = 0; ox < d->ow; ox++) {
                    const int ix = ox * d->stride - d->pad + kx;
                    drow[ox] = (ix >= 0 && ix < d->w) ? srow[ix] : 0.0f;
                }
            }
        }
    }
}

/* The adjoint of im2col: accumulates col back into din (which the caller zeroed). One
 * thread per input channel, so no two threads touch the same input element. */
static void col2im(const mx_backend *be, const mx_conv_desc *d, int nb, const float *col, float *din)
{
    const int k = d->k, ohw = d->oh * d->ow;
    const size_t M = (size_t)nb * ohw, chw = (size_t)d->c * d->h * d->w;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)d->c * k * k * M)) schedule(static)
    for (int ci = 0; ci < d->c; ci++) {
        for (int kk = 0; kk < k * k; kk++) {
            const int ky = kk / k, kx = kk % k;
            const float *src = col + ((size_t)ci * k * k + kk) * M;
            for (int s = 0; s < nb; s++) {
                float *plane = din + s * chw + (size_t)ci * d->h * d->w;
                for (int oy = 0; oy < d->oh; oy++) {
                    const int iy = oy * d->stride - d->pad + ky;
                    if (iy < 0 || iy >= d->h) continue;
                    const float *srow = src + (size_t)s * ohw + (size_t)oy * d->ow;
                    float *drow = plane + (size_t)iy * d->w;
                    for (int ox = 0; ox < d->ow; ox++) {
                        const int ix = ox * d->stride - d->pad + kx;
                        if (ix >= 0 && ix < d->w) drow[ix] += srow[ox];
                    }
                }
            }
        }
    }
}

/* [nb][oc][ohw] <-> [oc][nb*ohw]: the GEMM works on channel-major rows. */
static void nchw_to_cm(const mx_backend *be, int nb, int oc, int ohw, float *dst, const float *src)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)nb * oc * ohw)) schedule(static)
    for (int j = 0; j < oc; j++)
        for (int s = 0; s < nb; s++)
            memcpy(dst + ((size_t)j * nb + s) * ohw, src + ((size_t)s * oc + j) * ohw, sizeof(float) * ohw);
}

static void cm_to_nchw(const mx_backend *be, int nb, int oc, int ohw, float *dst, const float *src)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)nb * oc * ohw)) schedule(static)
    for (int j = 0; j < oc; j++)
        for (int s = 0; s < nb; s++)
            memcpy(dst + ((size_t)s * oc + j) * ohw, src + ((size_t)j * nb + s) * ohw, sizeof(float) * ohw);
}

static int chunk_samples(const mx_conv_desc *d, int n, size_t *K, size_t *ohw)
{
    *K = (size_t)d->c * d->k * d->k;
    *ohw = (size_t)d->oh * d->ow;
    size_t per_sample = (2 * *K + d->oc) * *ohw;
    size_t nb = CONV_WORKSPACE_FLOATS / per_sample;
    if (nb < 1) nb = 1;
    return nb > (size_t)n ? n : (int)nb;
}

void mx_cpu_conv2d_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                           const float *w)
{
    size_t K, ohw;
    const int nb_max = chunk_samples(d, n, &K, &ohw);
    float *col = mx_backend_scratch(be, sizeof(float) * (K + d->oc) * nb_max * ohw);
    float *tmp = col + K * nb_max * ohw;
    const size_t chw = (size_t)d->c * d->h * d->w, ocohw = (size_t)d->oc * ohw;
    for (int s0 = 0; s0 < n; s0 += nb_max) {
        const int nb = n - s0 < nb_max ? n - s0 : nb_max;
        const int M = nb * (int)ohw;
        im2col(be, d, nb, in + s0 * chw, col);
        float *dst = nb == 1 ? out + s0 * ocohw : tmp;
        mx_cpu_gemm(be, 0, 0, d->oc, M, (int)K, 1.0f, w, (int)K, col, M, 0.0f, dst, M);
        if (nb > 1) cm_to_nchw(be, nb, d->oc, (int)ohw, out + s0 * ocohw, tmp);
    }
}

void mx_cpu_conv2d_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                            const float *dout, const float *in, const float *w)
{
    size_t K, ohw;
    const int nb_max = chunk_samples(d, n, &K, &ohw);
    float *col = mx_backend_scratch(be, sizeof(float) * (2 * K + d->oc) * nb_max * ohw);
    float *dcol = col + K * nb_max * ohw;
    float *dt = dcol + K * nb_max * ohw;
    const size_t chw = (size_t)d->c * d->h * d->w, ocohw = (size_t)d->oc * ohw;
    for (int s0 = 0; s0 < n; s0 += nb_max) {
        const int nb = n - s0 < nb_max ? n - s0 : nb_max;
        const int M = nb * (int)ohw;
        const float *g = dout + s0 * ocohw;
        if (nb > 1) {
            nchw_to_cm(be, nb, d->oc, (int)ohw, dt, g);
            g = dt;
        }
        im2col(be, d, nb, in + s0 * chw, col);
        mx_cpu_gemm(be, 0, 1, d->oc, (int)K, M, 1.0f, g, M, col, M, 1.0f, dw, (int)K);
        if (!din) continue;
        mx_cpu_gemm(be, 1, 0, (int)K, M, d->oc, 1.0f, w, (int)K, g, M, 0.0f, dcol, M);
        memset(din + s0 * chw, 0, sizeof(float) * nb * chw);
        col2im(be, d, nb, dcol, din + s0 * chw);
    }
}
