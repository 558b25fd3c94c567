/* The CUDA kernels of the transformer's row-wise and elementwise ops (engine/backend/backend.h,
 * "transformer"): token and position embedding, layer norm, GELU; and of AdamW and the sum of
 * squares that clipping adds up. The CPU's kernels (engine/cpu/seq.c, optim.c) are the
 * reference: every sum here runs in a fixed order (no float atomics), so a run repeats bit for
 * bit, and where it cheaply can it runs in the CPU's order too (the embedding's gradients,
 * layer norm's dgamma and dbeta), so that the two backends differ only by contraction into FMAs
 * and by the library's exp. */
#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace {

#include "kernels_common.cuh"

/* ---- embedding */

/* The token id a float holds, or -1 where it is not an integer in [0, vocab) (NaN included),
 * as engine/cpu/seq.c decides it: compared before converted, since converting a float out of
 * int's range is undefined. */
__device__ int token_id(float x, int vocab)
{
    if (!(x >= 0.0f && x < (float)vocab)) return -1;
    const int id = (int)x;
    return (float)id == x && id < vocab ? id : -1;
}

/* One thread per output value. A bad id's row is written as zeros and the first such row (in
 * whichever thread wins) goes to *bad, which the host reads after the stream's next sync. */
__global__ void embed_fwd(int rows, int t, int c, int vocab, float *out, const float *ids, const float *wte,
                          const float *wpe, mx_cuk_bad_id *bad)
{
    GRID_STRIDE(i, (size_t)rows * c)
    {
        const int r = (int)(i / c), j = (int)(i % c);
        const int id = token_id(ids[r], vocab);
        if (id < 0) {
            out[i] = 0;
            if (j == 0 && atomicCAS(&bad->set, 0, 1) == 0) {
                bad->row = r, bad->t = t, bad->vocab = vocab, bad->id = ids[r];
            }
            continue;
        }
        out[i] = wte[(size_t)id * c + j] + wpe[(size_t)(r % t) * c + j];
    }
}

/* dwte without atomics: a block owns EMB_IDS token ids and THREADS columns, and walks every row
 * of the batch in order (ids staged through shared memory a tile at a time), adding the rows
 * whose id it owns. Each dwte value is so summed by one thread in row order, the CPU's order:
 * deterministic, and equal to the CPU's sums. The cost is a scan of the ids per block (a batch
 * of 8192 rows against 786 id blocks of GPT-2's vocabulary: a few million shared-memory reads,
 * tens of microseconds); a batch of one repeated token puts all its rows on one block, which
 * then adds them one after another (still milliseconds at most). */
enum { EMB_IDS = 64, EMB_TILE = 1024 };

__global__ void embed_bwd_wte(int rows, int c, int vocab, float *dwte, const float *dout, const float *ids)
{
    __shared__ int tile[EMB_TILE];
    const int v0 = blockIdx.x * EMB_IDS, v1 = min(v0 + EMB_IDS, vocab);
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    for (int r0 = 0; r0 < rows; r0 += EMB_TILE) {
        const int nr = min(EMB_TILE, rows - r0);
        __syncthreads(); /* the last tile is read by every thread before it is replaced */
        for (int k = threadIdx.x; k < nr; k += blockDim.x) tile[k] = token_id(ids[r0 + k], vocab);
        __syncthreads();
        if (j < c)
            for (int k = 0; k < nr; k++) {
                const int id = tile[k];
                if (id >= v0 && id < v1) dwte[(size_t)id * c + j] += dout[(size_t)(r0 + k) * c + j];
            }
    }
}

/* dwpe[p][j]: one thread per value, the samples in order (rows with a bad id add nothing). */
__global__ void embed_bwd_wpe(int n, int t, int c, int vocab, float *dwpe, const float *dout, const float *ids)
{
    GRID_STRIDE(i, (size_t)t * c)
    {
        const int p = (int)(i / c), j = (int)(i % c);
        float acc = dwpe[i];
        for (int s = 0; s < n; s++) {
            const size_t r = (size_t)s * t + p;
            if (token_id(ids[r], vocab) >= 0) acc += dout[r * c + j];
        }
        dwpe[i] = acc;
    }
}

/* ---- layer norm: one warp per row, mean then the variance of x - mean (two passes, f32 as
 * the CPU: a row is at most a few thousand values) */

__global__ void ln_fwd(int rows, int w, float *out, float *mean, float *rstd, const float *in, const float *gamma,
                       const float *beta, float eps)
{
    const size_t r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (r >= (size_t)rows) return;
    const float *x = in + r * w;
    float s = 0;
    for (int j = lane; j < w; j += 32) s += x[j];
    const float mu = warp_sum(s) / (float)w;
    float v = 0;
    for (int j = lane; j < w; j += 32) v += (x[j] - mu) * (x[j] - mu);
    const float rs = 1.0f / sqrtf(warp_sum(v) / (float)w + eps);
    if (lane == 0) mean[r] = mu, rstd[r] = rs;
    float *o = out + r * w;
    for (int j = lane; j < w; j += 32) o[j] = (x[j] - mu) * rs * gamma[j] + beta[j];
}

/* din of a row: with xh = (x - mean) rstd and g = dout gamma, din = rstd (g - mean(g) - xh mean(g xh)). */
__global__ void ln_bwd_din(int rows, int w, float *din, const float *dout, const float *in, const float *mean,
                           const float *rstd, const float *gamma)
{
    const size_t r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (r >= (size_t)rows) return;
    const float *x = in + r * w, *d = dout + r * w;
    const float mu = mean[r], s = rstd[r];
    float s1 = 0, s2 = 0;
    for (int j = lane; j < w; j += 32) {
        const float g = d[j] * gamma[j];
        s1 += g;
        s2 += g * (x[j] - mu) * s;
    }
    const float m1 = warp_sum(s1) / (float)w, m2 = warp_sum(s2) / (float)w;
    float *o = din + r * w;
    for (int j = lane; j < w; j += 32) o[j] = s * (d[j] * gamma[j] - m1 - (x[j] - mu) * s * m2);
}

/* dgamma and dbeta as the CPU sums them (engine/cpu/seq.c): per column, f32 over LN_CHUNK rows
 * in order, those chunk sums added in double in order. Pass one writes the chunks' sums
 * (part: [2][chunks][w]), pass two adds them up, one thread per column. */
__global__ void ln_bwd_part(int rows, int w, int chunks, float *part, const float *dout, const float *in,
                            const float *mean, const float *rstd)
{
    const int j = blockIdx.y * blockDim.x + threadIdx.x, ch = blockIdx.x;
    if (j >= w) return;
    const int r1 = min(rows, (ch + 1) * MX_CUK_LN_CHUNK);
    float ag = 0, ab = 0;
    for (int r = ch * MX_CUK_LN_CHUNK; r < r1; r++) {
        const float d = dout[(size_t)r * w + j];
        ag += d * (in[(size_t)r * w + j] - mean[r]) * rstd[r];
        ab += d;
    }
    part[(size_t)ch * w + j] = ag;
    part[((size_t)chunks + ch) * w + j] = ab;
}

__global__ void ln_bwd_sum(int w, int chunks, float *dgamma, float *dbeta, const float *part)
{
    GRID_STRIDE(j, (size_t)w)
    {
        double sg = 0, sb = 0;
        for (int ch = 0; ch < chunks; ch++) {
            sg += part[(size_t)ch * w + j];
            sb += part[((size_t)chunks + ch) * w + j];
        }
        dgamma[j] += (float)sg;
        dbeta[j] += (float)sb;
    }
}

/* ---- GELU, GPT-2's tanh form as x / (1 + e^(-2u)) (engine/cpu/seq.c says why), with the same
 * tails beyond |x| = 10 and the same clamp of the exponent */

#define GELU_C 0.7978845608028654f
#define GELU_A 0.044715f
#define GELU_TAIL 10.0f

__device__ float gelu_s(float x, float *e)
{
    float z = -2.0f * GELU_C * (x + GELU_A * x * x * x);
    z = z > -87.0f ? z : -87.0f; /* NaN: -87, as the CPU's compare gives it */
    z = z < 87.0f ? z : 87.0f;
    *e = expf(z);
    return 1.0f / (1.0f + *e);
}

__global__ void gelu_fwd(size_t n, float *out, const float *in)
{
    GRID_STRIDE(i, n)
    {
        const float x = in[i];
        float e;
        const float y = x * gelu_s(x, &e);
        out[i] = x < -GELU_TAIL ? 0.0f : x > GELU_TAIL ? x : y;
    }
}

__global__ void gelu_bwd(size_t n, float *din, const float *dout, const float *in)
{
    GRID_STRIDE(i, n)
    {
        const float x = in[i];
        float e;
        const float s = gelu_s(x, &e), du = 2.0f * GELU_C * (1.0f + 3.0f * GELU_A * x * x);
        const float g = s + x * du * (e * s) * s;
        din[i] = dout[i] * (x < -GELU_TAIL ? 0.0f : x > GELU_TAIL ? 1.0f : g);
    }
}

/* ---- AdamW in mx_cpu_adamw_range's order of operations; the AMP form also rounds the master
 * weight to t into half and widens that into w, the compute copy */

__device__ float adamw_one(size_t i, float *w, float *m, float *v, const float *g, const mx_adamw_step &a)
{
    const float b1 = a.beta1, b2 = a.beta2, step = a.lr / a.bc1, sbc2 = sqrtf(a.bc2), keep = 1.0f - a.lr * a.wd;
    const float gi = a.rescale * g[i];
    const float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float wi = w[i] * keep - step * mi / (sqrtf(vi) / sbc2 + a.eps);
    w[i] = wi;
    return wi;
}

__global__ void adamw_k(size_t n, float *w, float *m, float *v, const float *g, mx_adamw_step a)
{
    GRID_STRIDE(i, n) adamw_one(i, w, m, v, g, a);
}

__global__ void adamw_amp_k(size_t n, float *master, float *m, float *v, const float *g, mx_adamw_step a, int bf16,
                            void *half, float *w)
{
    GRID_STRIDE(i, n)
    {
        const float x = adamw_one(i, master, m, v, g, a);
        if (bf16) {
            const __nv_bfloat16 h = __float2bfloat16_rn(x);
            ((__nv_bfloat16 *)half)[i] = h;
            w[i] = __bfloat162float(h);
        } else {
            const __half h = __float2half_rn(x);
            ((__half *)half)[i] = h;
            w[i] = __half2float(h);
        }
    }
}

/* ---- sum of squares: a fixed grid, each thread's strided share in double, a tree per block,
 * then one block adds the blocks' sums in order: the same bits on every run and device */

__global__ void sumsq_part(size_t n, const float *x, double *part)
{
    __shared__ double s[MX_CUK_SUMSQ_THREADS];
    double mine = 0;
    GRID_STRIDE(i, n) mine += (double)x[i] * x[i];
    s[threadIdx.x] = mine;
    __syncthreads();
    for (int w = MX_CUK_SUMSQ_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}

__global__ void sumsq_total(const double *part, double *out)
{
    __shared__ double s[MX_CUK_SUMSQ_BLOCKS];
    s[threadIdx.x] = part[threadIdx.x];
    __syncthreads();
    for (int w = MX_CUK_SUMSQ_BLOCKS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = s[0];
}

} // namespace

extern "C" {

int mx_cuk_embedding_forward(mx_cuda_stream s, int n, int t, int c, int vocab, float *out, const float *ids,
                             const float *wte, const float *wpe, mx_cuk_bad_id *bad)
{
    const size_t total = (size_t)n * t * c;
    if (total) embed_fwd<<<blocks_for(total), THREADS, 0, s>>>(n * t, t, c, vocab, out, ids, wte, wpe, bad);
    return launched();
}

int mx_cuk_embedding_backward(mx_cuda_stream s, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                              const float *dout, const float *ids)
{
    if ((size_t)n * t * c == 0 || vocab < 1) return 0;
    const dim3 grid((unsigned)((vocab + EMB_IDS - 1) / EMB_IDS), (unsigned)((c + THREADS - 1) / THREADS));
    embed_bwd_wte<<<grid, THREADS, 0, s>>>(n * t, c, vocab, dwte, dout, ids);
    const int rc = launched();
    if (rc) return rc;
    embed_bwd_wpe<<<blocks_for((size_t)t * c), THREADS, 0, s>>>(n, t, c, vocab, dwpe, dout, ids);
    return launched();
}

int mx_cuk_layernorm_forward(mx_cuda_stream s, int rows, int w, float *out, float *mean, float *rstd, const float *in,
                             const float *gamma, const float *beta, float eps)
{
    if (rows < 1 || w < 1) return 0;
    ln_fwd<<<(unsigned)(((size_t)rows * 32 + THREADS - 1) / THREADS), THREADS, 0, s>>>(rows, w, out, mean, rstd, in,
                                                                                       gamma, beta, eps);
    return launched();
}

int mx_cuk_layernorm_backward(mx_cuda_stream s, int rows, int w, float *din, float *dgamma, float *dbeta,
                              const float *dout, const float *in, const float *mean, const float *rstd,
                              const float *gamma, float *part)
{
    if (rows < 1 || w < 1) return 0;
    if (din) {
        ln_bwd_din<<<(unsigned)(((size_t)rows * 32 + THREADS - 1) / THREADS), THREADS, 0, s>>>(rows, w, din, dout, in,
                                                                                               mean, rstd, gamma);
        const int rc = launched();
        if (rc) return rc;
    }
    const int chunks = (rows + MX_CUK_LN_CHUNK - 1) / MX_CUK_LN_CHUNK;
    ln_bwd_part<<<dim3((unsigned)chunks, (unsigned)((w + THREADS - 1) / THREADS)), THREADS, 0, s>>>(
        rows, w, chunks, part, dout, in, mean, rstd);
    const int rc = launched();
    if (rc) return rc;
    ln_bwd_sum<<<blocks_for((size_t)w), THREADS, 0, s>>>(w, chunks, dgamma, dbeta, part);
    return launched();
}

int mx_cuk_gelu_forward(mx_cuda_stream s, size_t n, float *out, const float *in)
{
    gelu_fwd<<<blocks_for(n), THREADS, 0, s>>>(n, out, in);
    return launched();
}

int mx_cuk_gelu_backward(mx_cuda_stream s, size_t n, float *din, const float *dout, const float *in)
{
    gelu_bwd<<<blocks_for(n), THREADS, 0, s>>>(n, din, dout, in);
    return launched();
}

int mx_cuk_adamw(mx_cuda_stream s, size_t n, float *w, float *m, float *v, const float *g, const mx_adamw_step *a)
{
    adamw_k<<<blocks_for(n), THREADS, 0, s>>>(n, w, m, v, g, *a);
    return launched();
}

int mx_cuk_adamw_amp(mx_cuda_stream s, size_t n, float *master, float *m, float *v, const float *g,
                     const mx_adamw_step *a, mx_dtype t, void *half, float *w)
{
    adamw_amp_k<<<blocks_for(n), THREADS, 0, s>>>(n, master, m, v, g, *a, t == MX_BF16, half, w);
    return launched();
}

int mx_cuk_sumsq(mx_cuda_stream s, size_t n, const float *x, double *part, double *out)
{
    sumsq_part<<<MX_CUK_SUMSQ_BLOCKS, MX_CUK_SUMSQ_THREADS, 0, s>>>(n, x, part);
    const int rc = launched();
    if (rc) return rc;
    sumsq_total<<<1, MX_CUK_SUMSQ_BLOCKS, 0, s>>>(part, out);
    return launched();
}

} // extern "C"
