/* Causal multi-head self-attention on CUDA (engine/backend/backend.h's attention_forward and
 * attention_backward): per sample, cuBLAS strided-batched GEMMs over a pass of heads (a head's
 * q, k and v are hs columns of qkv's rows, heads hs apart: one stride serves the batch) around
 * the own kernels of engine/cuda/kernels_attn.cu.
 *   forward   S = Q K^T / sqrt(hs); the causal softmax turns S into P in place and keeps each
 *             row's log-sum-exp; O = P V
 *   backward  P again from S and the log-sum-exp (nothing t x t is kept between the two);
 *             dV = P^T dO; dP = dO V^T; dS = P (dP - rowsum(dO O)) / sqrt(hs); dQ = dS K;
 *             dK = dS^T Q
 * The t x t matrices of a pass live in the backend's workspace (the one cuDNN's convolutions
 * grow, mx_cuda_grow): one per head forward, two backward, at most ATT_WS_BOUND bytes unless a
 * single head's need more (then one head a pass: 2 t^2 floats, 8 MiB at GPT-2's t = 1024).
 * The GEMMs compute all of S, the masked half included (twice the causal FLOPs, on cuBLAS's
 * fastest path); a fused kernel per direction is the step after this one. Under AMP's math
 * (and --tf32) the GEMMs run on the tensor cores as the backend's gemm does. */
#include "ctx.h"
#include "kernels.h"
#include "base/status.h"

#include <math.h>

#define ATT_WS_BOUND ((size_t)256 << 20)

/* Heads a pass takes: as many as fit their mats t x t matrices in the bound, at least one. */
static int heads_per_pass(int heads, int t, int mats)
{
    const size_t per = (size_t)mats * t * t * sizeof(float);
    const size_t g = per ? ATT_WS_BOUND / per : (size_t)heads;
    return g < 1 ? 1 : g < (size_t)heads ? (int)g : heads;
}

/* Row-major C = alpha op(A) op(B) + beta C for g matrices at strides sa, sb, sc (elements), as
 * the backend's gemm: cuBLAS, column-major, computes C^T = op(B)^T op(A)^T on the same memory.
 * Returns 0 on failure (recorded in the sticky error). */
static int gemm_batched(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                        long long sa, const float *b, int ldb, long long sb, float beta, float *c, int ldc,
                        long long sc, int g)
{
    mx_cuda_ctx *x = be->ctx;
    const cublasStatus_t st = cublasGemmStridedBatchedEx(
        x->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F, ldb,
        sb, a, CUDA_R_32F, lda, sa, &beta, c, CUDA_R_32F, ldc, sc, g, mx_cuda_compute_type(be), CUBLAS_GEMM_DEFAULT);
    if (st == CUBLAS_STATUS_SUCCESS) return 1;
    mx_backend_fail(be, MX_ERUNTIME, "attention: cublasGemmStridedBatchedEx: %s (%s)", cublasGetStatusString(st),
                    cublasGetStatusName(st));
    return 0;
}

void mx_cuda_attention_forward(mx_backend *be, int n, int t, int heads, int hs, float *out, float *lse,
                               const float *qkv)
{
    mx_cuda_ctx *x = be->ctx;
    const int c = heads * hs, ld = 3 * c, g = heads_per_pass(heads, t, 1);
    const long long tt = (long long)t * t;
    const float scale = 1.0f / sqrtf((float)hs);
    if (n < 1 || t < 1 || heads < 1) return;
    float *s = mx_cuda_grow(be, &x->ws, &x->ws_bytes, sizeof(float) * (size_t)g * tt);
    if (!s) return;
    const mx_cuda_stream st = (mx_cuda_stream)mx_cuda_bind(be);
    for (int b = 0; b < n; b++)
        for (int h0 = 0; h0 < heads; h0 += g) {
            const int gh = heads - h0 < g ? heads - h0 : g;
            const float *q = qkv + (size_t)b * t * ld + (size_t)h0 * hs, *k = q + c, *v = q + 2 * c;
            if (!gemm_batched(be, 0, 1, t, t, hs, scale, q, ld, hs, k, ld, hs, 0, s, t, tt, gh) ||
                mx_cuda_failed(be,
                               mx_cuk_attention_softmax(st, gh, t, s, lse ? lse + ((size_t)b * heads + h0) * t : NULL),
                               "attention softmax kernel") ||
                !gemm_batched(be, 0, 0, t, hs, t, 1.0f, s, t, tt, v, ld, hs, 0,
                              out + (size_t)b * t * c + (size_t)h0 * hs, c, hs, gh))
                return;
        }
}

void mx_cuda_attention_backward(mx_backend *be, int n, int t, int heads, int hs, float *dqkv, const float *dout,
                                const float *qkv, const float *out, const float *lse)
{
    mx_cuda_ctx *x = be->ctx;
    const int c = heads * hs, ld = 3 * c, g = heads_per_pass(heads, t, 2);
    const long long tt = (long long)t * t;
    const float scale = 1.0f / sqrtf((float)hs);
    if (n < 1 || t < 1 || heads < 1) return;
    float *p = mx_cuda_grow(be, &x->ws, &x->ws_bytes, sizeof(float) * 2 * (size_t)g * tt);
    if (!p) return;
    float *dp = p + (size_t)g * tt;
    const mx_cuda_stream st = (mx_cuda_stream)mx_cuda_bind(be);
    for (int b = 0; b < n; b++)
        for (int h0 = 0; h0 < heads; h0 += g) {
            const int gh = heads - h0 < g ? heads - h0 : g;
            const size_t in_at = (size_t)b * t * ld + (size_t)h0 * hs, out_at = (size_t)b * t * c + (size_t)h0 * hs;
            const float *q = qkv + in_at, *k = q + c, *v = q + 2 * c, *o = out + out_at, *d_o = dout + out_at;
            float *dq = dqkv + in_at, *dk = dq + c, *dv = dq + 2 * c;
            if (!gemm_batched(be, 0, 1, t, t, hs, scale, q, ld, hs, k, ld, hs, 0, p, t, tt, gh) ||
                mx_cuda_failed(be, mx_cuk_attention_probs(st, gh, t, p, lse + ((size_t)b * heads + h0) * t),
                               "attention probabilities kernel") ||
                !gemm_batched(be, 1, 0, t, hs, t, 1.0f, p, t, tt, d_o, c, hs, 0, dv, ld, hs, gh) ||
                !gemm_batched(be, 0, 1, t, t, hs, 1.0f, d_o, c, hs, v, ld, hs, 0, dp, t, tt, gh) ||
                mx_cuda_failed(be, mx_cuk_attention_dscores(st, gh, t, hs, dp, p, d_o, o, c, scale),
                               "attention score gradient kernel") ||
                !gemm_batched(be, 0, 0, t, hs, t, 1.0f, dp, t, tt, k, ld, hs, 0, dq, ld, hs, gh) ||
                !gemm_batched(be, 1, 0, t, hs, t, 1.0f, dp, t, tt, q, ld, hs, 0, dk, ld, hs, gh))
                return;
        }
}
