/* The CUDA backend's own kernels: the ops cuBLAS and cuDNN do not cover (bias, ReLU,
 * pooling with the argmax the layers keep, loss, SGD, casts). Each is written for one
 * obvious thread mapping and coalesced access; reductions sum in a fixed order so that a
 * run repeats bit for bit. */
#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <float.h>

namespace {

#include "kernels_common.cuh"

__global__ void bias_fwd(size_t total, int c, int inner, float *y, const float *b)
{
    GRID_STRIDE(i, total) y[i] += b[(i / inner) % c];
}

/* One block per channel; each thread sums a strided share, then a tree in shared memory:
 * the same order on every run. */
__global__ void bias_bwd(int outer, int c, int inner, float *db, const float *dy)
{
    __shared__ float part[THREADS];
    const int j = blockIdx.x;
    const size_t per = (size_t)outer * inner;
    float s = 0;
    for (size_t e = threadIdx.x; e < per; e += blockDim.x) {
        const size_t o = e / inner, i = e % inner;
        s += dy[(o * c + j) * inner + i];
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) db[j] += part[0];
}

__global__ void relu_fwd(size_t n, float *out, const float *in)
{
    GRID_STRIDE(i, n) out[i] = in[i] > 0 ? in[i] : 0;
}

__global__ void relu_bwd(size_t n, float *din, const float *dout, const float *out)
{
    GRID_STRIDE(i, n) din[i] = out[i] > 0 ? dout[i] : 0;
}

__global__ void add_k(size_t n, float *y, const float *x)
{
    GRID_STRIDE(i, n) y[i] += x[i];
}

__global__ void scale_k(size_t n, float *x, float a)
{
    GRID_STRIDE(i, n) x[i] *= a;
}

__global__ void sgd_k(size_t n, float *w, float *mom, const float *g, float lr, float momentum, float wd, float rescale)
{
    GRID_STRIDE(i, n)
    {
        const float m = momentum * mom[i] - lr * (rescale * g[i] + wd * w[i]);
        mom[i] = m;
        w[i] += m;
    }
}

/* One thread per output: the window's first maximum, as the CPU reference picks it. */
__global__ void maxpool_fwd(size_t total, mx_pool_desc d, float *out, int32_t *argmax, const float *in)
{
    GRID_STRIDE(i, total)
    {
        const size_t plane = i / ((size_t)d.oh * d.ow);
        const int o = (int)(i % ((size_t)d.oh * d.ow)), oy = o / d.ow, ox = o % d.ow;
        const float *src = in + plane * d.h * d.w;
        const int y0 = oy * d.stride, x0 = ox * d.stride;
        const int y1 = min(y0 + d.k, d.h), x1 = min(x0 + d.k, d.w);
        float best = -FLT_MAX;
        int where = y0 * d.w + x0;
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) {
                const float v = src[y * d.w + x];
                if (v > best) best = v, where = y * d.w + x;
            }
        out[i] = best;
        argmax[i] = where;
    }
}

/* One thread per input: it gathers the gradients of the windows whose maximum it was (no
 * atomics, so overlapping windows sum in one order). */
__global__ void maxpool_bwd(size_t total, mx_pool_desc d, float *din, const float *dout, const int32_t *argmax)
{
    GRID_STRIDE(i, total)
    {
        const size_t plane = i / ((size_t)d.h * d.w);
        const int at = (int)(i % ((size_t)d.h * d.w)), y = at / d.w, x = at % d.w;
        const int oy0 = y >= d.k ? (y - d.k) / d.stride + 1 : 0, ox0 = x >= d.k ? (x - d.k) / d.stride + 1 : 0;
        const int oy1 = min(y / d.stride, d.oh - 1), ox1 = min(x / d.stride, d.ow - 1);
        const size_t base = plane * d.oh * d.ow;
        float g = 0;
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++) {
                const size_t o = base + (size_t)oy * d.ow + ox;
                if (argmax[o] == at) g += dout[o];
            }
        din[i] = g;
    }
}

/* One warp per plane. */
__global__ void avgpool_fwd(int planes, int hw, float *out, const float *in)
{
    const int p = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
    if (p >= planes) return;
    float s = 0;
    for (int i = lane; i < hw; i += 32) s += in[(size_t)p * hw + i];
    for (int w = 16; w > 0; w /= 2) s += __shfl_down_sync(0xffffffffu, s, w);
    if (lane == 0) out[p] = s / hw;
}

__global__ void avgpool_bwd(size_t total, int hw, float *din, const float *dout)
{
    GRID_STRIDE(i, total) din[i] = dout[i / hw] / hw;
}

/* One thread per row: rows are short (the classes), and the sums in double match the CPU's. */
__global__ void xent(int n, int classes, float *dlogits, double *loss, int *hit, const float *logits,
                     const int32_t *labels, float grad_scale)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const float *row = logits + (size_t)r * classes;
    float *drow = dlogits ? dlogits + (size_t)r * classes : NULL;
    const int label = labels[r];
    if (label < 0 || label >= classes) {
        if (drow)
            for (int j = 0; j < classes; j++) drow[j] = 0;
        hit[r] = 0;
        loss[r] = __longlong_as_double(0x7ff8000000000000LL);
        return;
    }
    float mx = row[0];
    int arg = 0;
    for (int j = 1; j < classes; j++)
        if (row[j] > mx) mx = row[j], arg = j;
    double sum = 0;
    for (int j = 0; j < classes; j++) sum += exp((double)(row[j] - mx));
    const double logz = log(sum) + mx;
    if (drow)
        for (int j = 0; j < classes; j++) drow[j] = (float)(exp((double)row[j] - logz) - (j == label)) * grad_scale;
    hit[r] = arg == label;
    loss[r] = logz - row[label];
}

/* One block per row, for a language model's rows (GPT-2's 50304 classes): the thread-per-row
 * kernel above walks a long row three times in one thread, and a batch has too few rows to
 * fill the GPU that way. The same arithmetic as the CPU's: the first maximum (the smallest
 * index among equal maxima), the sum of exp in double (a fixed tree, not the CPU's running
 * sum: the loss differs in the last bits of a double), the gradient in double rounded once. */
const int XENT_WIDE = 128; /* classes from which the block-per-row kernel runs */

__global__ void xent_wide(int classes, float *dlogits, double *loss, int *hit, const float *logits,
                          const int32_t *labels, float grad_scale)
{
    __shared__ float smax[THREADS];
    __shared__ int sarg[THREADS];
    __shared__ double ssum[THREADS];
    const int r = blockIdx.x, tid = threadIdx.x;
    const float *row = logits + (size_t)r * classes;
    float *drow = dlogits ? dlogits + (size_t)r * classes : NULL;
    const int label = labels[r];
    if (label < 0 || label >= classes) {
        if (drow)
            for (int j = tid; j < classes; j += blockDim.x) drow[j] = 0;
        if (tid == 0) hit[r] = 0, loss[r] = __longlong_as_double(0x7ff8000000000000LL);
        return;
    }
    float mx = -INFINITY;
    int arg = classes;
    for (int j = tid; j < classes; j += blockDim.x)
        if (row[j] > mx || arg == classes) mx = row[j], arg = j;
    smax[tid] = mx, sarg[tid] = arg;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (tid < w) {
            const float m2 = smax[tid + w];
            const int a2 = sarg[tid + w];
            if (a2 < classes && (sarg[tid] == classes || m2 > smax[tid] || (m2 == smax[tid] && a2 < sarg[tid])))
                smax[tid] = m2, sarg[tid] = a2;
        }
        __syncthreads();
    }
    mx = smax[0];
    double sum = 0;
    for (int j = tid; j < classes; j += blockDim.x) sum += exp((double)(row[j] - mx));
    ssum[tid] = sum;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (tid < w) ssum[tid] += ssum[tid + w];
        __syncthreads();
    }
    const double logz = log(ssum[0]) + mx;
    if (drow)
        for (int j = tid; j < classes; j += blockDim.x)
            drow[j] = (float)(exp((double)row[j] - logz) - (j == label)) * grad_scale;
    if (tid == 0) hit[r] = sarg[0] == label, loss[r] = logz - row[label];
}

__device__ float load(mx_dtype t, const void *p, size_t i)
{
    if (t == MX_F16) return __half2float(((const __half *)p)[i]);
    if (t == MX_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return ((const float *)p)[i];
}

__device__ void store(mx_dtype t, void *p, size_t i, float v)
{
    if (t == MX_F16) ((__half *)p)[i] = __float2half_rn(v);
    else if (t == MX_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else ((float *)p)[i] = v;
}

__global__ void cast_k(size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    GRID_STRIDE(i, n) store(dt, dst, i, load(st, src, i));
}

__global__ void round_k(size_t n, float *x, mx_dtype t, void *half)
{
    GRID_STRIDE(i, n)
    {
        store(t, half, i, x[i]);
        x[i] = load(t, half, i);
    }
}

__global__ void nonfinite_k(size_t n, const void *x, mx_dtype t, unsigned long long *count)
{
    unsigned long long mine = 0;
    GRID_STRIDE(i, n) mine += !isfinite(load(t, x, i));
    for (int w = 16; w > 0; w /= 2) mine += __shfl_down_sync(0xffffffffu, mine, w);
    if (threadIdx.x % 32 == 0 && mine) atomicAdd(count, mine);
}

} // namespace

extern "C" {

int mx_cuk_bias_forward(mx_cuda_stream s, int outer, int c, int inner, float *y, const float *b)
{
    const size_t total = (size_t)outer * c * inner;
    bias_fwd<<<blocks_for(total), THREADS, 0, s>>>(total, c, inner, y, b);
    return launched();
}

int mx_cuk_bias_backward(mx_cuda_stream s, int outer, int c, int inner, float *db, const float *dy)
{
    if (c > 0) bias_bwd<<<c, THREADS, 0, s>>>(outer, c, inner, db, dy);
    return launched();
}

int mx_cuk_relu_forward(mx_cuda_stream s, size_t n, float *out, const float *in)
{
    relu_fwd<<<blocks_for(n), THREADS, 0, s>>>(n, out, in);
    return launched();
}

int mx_cuk_relu_backward(mx_cuda_stream s, size_t n, float *din, const float *dout, const float *out)
{
    relu_bwd<<<blocks_for(n), THREADS, 0, s>>>(n, din, dout, out);
    return launched();
}

int mx_cuk_add(mx_cuda_stream s, size_t n, float *y, const float *x)
{
    add_k<<<blocks_for(n), THREADS, 0, s>>>(n, y, x);
    return launched();
}

int mx_cuk_scale(mx_cuda_stream s, size_t n, float *x, float a)
{
    scale_k<<<blocks_for(n), THREADS, 0, s>>>(n, x, a);
    return launched();
}

int mx_cuk_sgd(mx_cuda_stream s, size_t n, float *w, float *mom, const float *g, float lr, float momentum, float wd,
               float rescale)
{
    sgd_k<<<blocks_for(n), THREADS, 0, s>>>(n, w, mom, g, lr, momentum, wd, rescale);
    return launched();
}

int mx_cuk_maxpool_forward(mx_cuda_stream s, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                           const float *in)
{
    const size_t total = (size_t)n * d->c * d->oh * d->ow;
    maxpool_fwd<<<blocks_for(total), THREADS, 0, s>>>(total, *d, out, argmax, in);
    return launched();
}

int mx_cuk_maxpool_backward(mx_cuda_stream s, const mx_pool_desc *d, int n, float *din, const float *dout,
                            const int32_t *argmax)
{
    const size_t total = (size_t)n * d->c * d->h * d->w;
    maxpool_bwd<<<blocks_for(total), THREADS, 0, s>>>(total, *d, din, dout, argmax);
    return launched();
}

int mx_cuk_avgpool_forward(mx_cuda_stream s, int n, int c, int hw, float *out, const float *in)
{
    const int planes = n * c;
    avgpool_fwd<<<(unsigned)((planes * 32 + THREADS - 1) / THREADS), THREADS, 0, s>>>(planes, hw, out, in);
    return launched();
}

int mx_cuk_avgpool_backward(mx_cuda_stream s, int n, int c, int hw, float *din, const float *dout)
{
    const size_t total = (size_t)n * c * hw;
    avgpool_bwd<<<blocks_for(total), THREADS, 0, s>>>(total, hw, din, dout);
    return launched();
}

int mx_cuk_softmax_xent(mx_cuda_stream s, int n, int classes, float *dlogits, double *loss, int *hit,
                        const float *logits, const int32_t *labels, float grad_scale)
{
    if (classes >= XENT_WIDE)
        xent_wide<<<(unsigned)n, THREADS, 0, s>>>(classes, dlogits, loss, hit, logits, labels, grad_scale);
    else
        xent<<<(unsigned)((n + 127) / 128), 128, 0, s>>>(n, classes, dlogits, loss, hit, logits, labels, grad_scale);
    return launched();
}

int mx_cuk_cast(mx_cuda_stream s, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    if (dt == st) return (int)cudaMemcpyAsync(dst, src, n * mx_dtype_size(dt), cudaMemcpyDeviceToDevice, s);
    cast_k<<<blocks_for(n), THREADS, 0, s>>>(n, dst, dt, src, st);
    return launched();
}

int mx_cuk_round_half(mx_cuda_stream s, size_t n, float *x, mx_dtype t, void *half)
{
    round_k<<<blocks_for(n), THREADS, 0, s>>>(n, x, t, half);
    return launched();
}

int mx_cuk_count_nonfinite(mx_cuda_stream s, size_t n, const void *x, mx_dtype t, unsigned long long *count)
{
    const int rc = (int)cudaMemsetAsync(count, 0, sizeof *count, s);
    if (rc) return rc;
    nonfinite_k<<<blocks_for(n), THREADS, 0, s>>>(n, x, t, count);
    return launched();
}

} // extern "C"
