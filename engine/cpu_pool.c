/* CPU max pooling (with argmax saved for backward) and global average pooling. Work is
 * split by (sample, channel) plane so backward never has two threads on one element. */
#include "cpu_kernels.h"

#include <float.h>
#include <string.h>

void mx_cpu_maxpool_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                            const float *in)
{
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++) {
        const float *src = in + (size_t)p * hw;
        float *dst = out + (size_t)p * ohw;
        int32_t *arg = argmax + (size_t)p * ohw;
        for (int oy = 0; oy < d->oh; oy++) {
            const int y0 = oy * d->stride, y1 = y0 + d->k < d->h ? y0 + d->k : d->h;
            for (int ox = 0; ox < d->ow; ox++) {
                const int x0 = ox * d->stride, x1 = x0 + d->k < d->w ? x0 + d->k : d->w;
                float best = -FLT_MAX;
                int32_t where = y0 * d->w + x0;
                /* selects, not branches: on real data the winner is unpredictable */
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) {
                        const float v = src[iy * d->w + ix];
                        const int better = v > best;
                        where = better ? iy * d->w + ix : where;
                        best = better ? v : best;
                    }
                dst[oy * d->ow + ox] = best;
                arg[oy * d->ow + ox] = where;
            }
        }
    }
}

void mx_cpu_maxpool_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                             const int32_t *argmax)
{
    const int planes = n * d->c, hw = d->h * d->w, ohw = d->oh * d->ow;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)planes * hw)) schedule(static)
    for (int p = 0; p < planes; p++) {
        float *dst = din + (size_t)p * hw;
        memset(dst, 0, sizeof(float) * hw);
        for (int i = 0; i < ohw; i++) dst[argmax[(size_t)p * ohw + i]] += dout[(size_t)p * ohw + i];
    }
}

void mx_cpu_avgpool_global_forward(mx_backend *be, int n, int c, int hw, float *out, const float *in)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int p = 0; p < n * c; p++) {
        double s = 0;
        for (int i = 0; i < hw; i++) s += in[(size_t)p * hw + i];
        out[p] = (float)(s / hw);
    }
}

void mx_cpu_avgpool_global_backward(mx_backend *be, int n, int c, int hw, float *din, const float *dout)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int p = 0; p < n * c; p++) {
        const float g = dout[p] / hw;
        for (int i = 0; i < hw; i++) din[(size_t)p * hw + i] = g;
    }
}
