/* Causal attention's own kernels (engine/cuda/attention.c runs cuBLAS's GEMMs around them): the
 * row-wise softmax of the scaled scores that also keeps each row's log-sum-exp, the
 * probabilities recomputed from it for backward, and the scores' gradient. One warp per row of
 * t scores; sums over a row run in a fixed order (lane strides, then a butterfly), so a run
 * repeats bit for bit. */
#include "kernels.h"

#include <cuda_runtime.h>
#include <math.h>

namespace {

#include "kernels_common.cuh"

__device__ float warp_max(float m)
{
    for (int w = 16; w > 0; w /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, w));
    return m;
}

unsigned row_blocks(size_t rows) { return (unsigned)((rows * 32 + THREADS - 1) / THREADS); }

/* Row i of a head attends to keys 0..i: max, then the sum of exp(s - max), lse = max + log of
 * it, and P = exp(s - lse) (the form backward recomputes, so both see the same values). The
 * keys above the diagonal get 0: the P V GEMM reads whole rows. */
__global__ void causal_softmax(size_t rows, int t, float *scores, float *lse)
{
    const size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const int i = (int)(row % t);
    float *s = scores + row * t;
    float m = -INFINITY;
    for (int j = lane; j <= i; j += 32) m = fmaxf(m, s[j]);
    m = warp_max(m);
    float l = 0;
    for (int j = lane; j <= i; j += 32) l += expf(s[j] - m);
    const float L = m + logf(warp_sum(l));
    if (lse && lane == 0) lse[row] = L;
    for (int j = lane; j < t; j += 32) s[j] = j <= i ? expf(s[j] - L) : 0.0f;
}

__global__ void causal_probs(size_t rows, int t, float *scores, const float *lse)
{
    const size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const int i = (int)(row % t);
    const float L = lse[row];
    float *s = scores + row * t;
    for (int j = lane; j < t; j += 32) s[j] = j <= i ? expf(s[j] - L) : 0.0f;
}

/* dS = P (dP - D), D = rowsum(dO O) (flash attention's backward), times the scores' scale so
 * that the GEMMs for dQ and dK take it as is. */
__global__ void causal_dscores(size_t rows, int t, int hs, float *dp, const float *p, const float *dout,
                               const float *out, int ld, float scale)
{
    const size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const int h = (int)(row / t), i = (int)(row % t);
    const float *dor = dout + (size_t)i * ld + (size_t)h * hs, *orow = out + (size_t)i * ld + (size_t)h * hs;
    float d = 0;
    for (int k = lane; k < hs; k += 32) d += dor[k] * orow[k];
    d = warp_sum(d);
    float *g = dp + row * t;
    const float *pr = p + row * t;
    for (int j = lane; j < t; j += 32) g[j] = j <= i ? scale * pr[j] * (g[j] - d) : 0.0f;
}

} // namespace

extern "C" {

int mx_cuk_attention_softmax(mx_cuda_stream s, int g, int t, float *scores, float *lse)
{
    const size_t rows = (size_t)g * t;
    if (rows) causal_softmax<<<row_blocks(rows), THREADS, 0, s>>>(rows, t, scores, lse);
    return launched();
}

int mx_cuk_attention_probs(mx_cuda_stream s, int g, int t, float *scores, const float *lse)
{
    const size_t rows = (size_t)g * t;
    if (rows) causal_probs<<<row_blocks(rows), THREADS, 0, s>>>(rows, t, scores, lse);
    return launched();
}

int mx_cuk_attention_dscores(mx_cuda_stream s, int g, int t, int hs, float *dp, const float *p, const float *dout,
                             const float *out, int ld, float scale)
{
    const size_t rows = (size_t)g * t;
    if (rows) causal_dscores<<<row_blocks(rows), THREADS, 0, s>>>(rows, t, hs, dp, p, dout, out, ld, scale);
    return launched();
}

} // extern "C"
