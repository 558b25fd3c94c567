/* Internal: the CPU backend's kernels, split by family across the files of engine/cpu/ and gathered
 * into mx_cpu_backend_ops in engine/cpu/backend.c. */
#ifndef MX_CPU_KERNELS_H
#define MX_CPU_KERNELS_H

#include "engine/backend/backend.h"
#include "cpu.h"

#include <math.h>

/* Whether this compiler and architecture build the AVX-512 kernels (the own GEMMs, Winograd's
 * transforms), each compiled with function target attributes whatever the build's -march and
 * taken only where cpuid says the CPU has them. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MX_CPU_AVX512_KERNELS 1
#else
#define MX_CPU_AVX512_KERNELS 0
#endif

/* a * b + c, fused where the target has FMA: the build is ISO C, where GCC does not contract
 * a * b + c itself, and fmaf without the instruction would be a library call. The kernels'
 * loops written in C use it (attention's tiles and exponential, GELU's: 30% faster fused,
 * docs/performance.md). */
#ifdef __FMA__
#define MX_MADD(a, b, c) fmaf(a, b, c)
#else
#define MX_MADD(a, b, c) ((a) * (b) + (c))
#endif

/* OpenMP team size for a loop of `work` elements on this device: small loops stay on one
 * thread because forking costs more than it saves. */
static inline int mx_cpu_team(const mx_backend *be, size_t work)
{
    return work < 32768 ? 1 : be->nthreads;
}

/* Threads for a loop over n samples, one sample a thread at least: the device's, at most n. */
static inline int mx_cpu_sample_team(const mx_backend *be, int n)
{
    return be->nthreads < n ? be->nthreads : n > 0 ? n : 1;
}

void mx_cpu_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
/* A function mx_cpu_gemm calls after each GEMM it hands to the BLAS, with that GEMM's operands
 * (C already written), or NULL (as in mxbench): the seam through which a test build makes
 * the kernel do more work, to check that a gate notices (tests/hooks.c). Set it before any
 * thread runs a GEMM. */
typedef void (*mx_cpu_gemm_hook)(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                                 const float *b, int ldb);
void mx_cpu_set_gemm_hook(mx_cpu_gemm_hook fn);

/* Per-thread buffers (engine/cpu/thread_buf.c): the slot's buffer of this thread, grown to at least
 * bytes (64-byte aligned; contents kept only while it does not grow); NULL when out of
 * memory. */
typedef enum {
    MX_THREAD_BUF_PANELS,
    MX_THREAD_BUF_GEMM_A,
    MX_THREAD_BUF_GEMM_B,
    MX_THREAD_BUF_DNNL, /* oneDNN's matmul: bf16 operands and scratchpad (gemm_dnnl.c) */
    MX_THREAD_BUF_COUNT
} mx_thread_buf;
void *mx_cpu_thread_buffer(mx_thread_buf slot, size_t bytes);

/* Own GEMMs (engine/cpu/gemm.c), as cblas_sgemm row-major, on AVX-512 CPUs:
 *  - f32: FMA, each element of C summed in k order from 0 every MX_F32_KC values of k. Where
 *    mx_cpu_gemm_own() (cpuid says avx512f and MXBENCH_GEMM is not "blas"), mx_cpu_gemm takes
 *    it instead of the BLAS;
 *  - bf16: operands rounded to bf16 as they are packed, products summed in f32 by the CPU's
 *    bf16 dot products, from 0 every MX_BF16_KC values. Where mx_cpu_bf16_native() (avx512_bf16,
 *    MXBENCH_BF16 not "emulate"), mx_cpu_gemm takes it when the backend's math is MX_BF16. */
#define MX_F32_KC 128
#define MX_BF16_KC 256
int mx_cpu_gemm_own(void);
int mx_cpu_bf16_native(void);
/* Tests: on != 0 forces the BLAS / the emulation (as the variables do), 0 lets cpuid decide. */
void mx_cpu_gemm_force_blas(int on);
void mx_cpu_bf16_force_emulation(int on);
/* Where mx_cpu_bf16_native(), whether the bf16 GEMMs run on oneDNN's matmul (gemm_dnnl.c):
 * where oneDNN runs AMX tiles (MXBENCH_BF16 native), always (dnnl), never (own). Tests force it
 * with 1 or 0; -1 returns to the switch. */
int mx_cpu_gemm_bf16_dnnl(void);
void mx_cpu_gemm_force_dnnl(int on);
/* oneDNN's bf16 matmul as mx_cpu_gemm under bf16 math: 1 when it ran (or failed, the sticky
 * error set), 0 when oneDNN does not take the product (this build, the shape, alpha other than
 * 1, beta other than 0 or 1): nothing was written and the own kernel must run it. */
int mx_cpu_gemm_dnnl(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc);
/* n f32 values to bf16 (nearest even, as the own GEMM's packing rounds); AVX-512 CPUs with
 * avx512_bf16 only (conv_direct_bf16.c). */
void mx_cpu_to_bf16(uint16_t *dst, const float *src, int n);
/* The table's amp_kernels for MX_BF16: "amx_bf16" where the GEMMs run on oneDNN's AMX tiles,
 * "avx512_bf16" where native otherwise, else "emulated" (every other type too). */
const char *mx_cpu_amp_kernels(mx_dtype t);
void mx_cpu_gemm_f32(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc);
void mx_cpu_gemm_bf16(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc);
/* Which GEMM mx_cpu_gemm runs on be now (its math and this CPU): the BLAS, an own kernel, or
 * oneDNN's bf16 matmul (which, as the BLAS, takes no operand packed ahead). */
enum { MX_GEMM_BLAS = -1, MX_GEMM_OWN_F32 = 0, MX_GEMM_OWN_BF16 = 1, MX_GEMM_DNNL_BF16 = 2 };
int mx_cpu_gemm_kind(const mx_backend *be);
/* Repeated products with one A (a convolution's weights over a batch's chunks): op(A), m x
 * k, packed once for an own kernel (kind MX_GEMM_OWN_*; 0 bytes for the others) into mx_cpu_gemm_packed_a_bytes
 * bytes at dst (64-byte aligned), then C = alpha * op(A) op(B) + beta * C from it, with the
 * same results as mx_cpu_gemm of that kind. The packing is split in `parts` shares that
 * threads may write at once, `part` being one of them (0 of 1: all). */
size_t mx_cpu_gemm_packed_a_bytes(int kind, int m, int k);
void mx_cpu_gemm_pack_a(int kind, int ta, int m, int k, const float *a, int lda, void *dst, int part, int parts);
void mx_cpu_gemm_packed(mx_backend *be, int kind, const void *packed_a, int tb, int m, int n, int k, float alpha,
                        const float *b, int ldb, float beta, float *c, int ldc);
/* For producers that write an m x k op(A) packed for MX_GEMM_OWN_F32 themselves (Winograd's
 * transformed weights) instead of packing a copy: element (i, kk) lies
 * mx_cpu_gemm_packed_f32_at(m, k, i, kk) floats from the start. Rows come in panels of
 * MX_GEMM_MR: rows i..i+7 of a panel (i a multiple of 8) are contiguous for one kk, and kk + 1
 * follows them while kk + 1 is in the same block of MX_F32_KC values of k (kk even: always,
 * below k). Rows from m to the panel's end must be written as zeros. */
#define MX_GEMM_MR 8
size_t mx_cpu_gemm_packed_f32_at(int m, int k, int i, int kk);
/* out[j][i] = rows[i][j] for j < ncols (<= 16), 0 where rows[i] is NULL: a transpose in
 * registers, for callers with 16 short rows to turn (AVX-512 CPUs only, as the own GEMMs;
 * plain loops over pointers compile to slow gathers). A row with 16 floats readable before
 * end (NULL: none past ncols) is read whole, and out[j] for j >= ncols is then what follows
 * it; otherwise 0. */
void mx_cpu_transpose16(const float *const rows[16], int ncols, const float *end, float out[16][16]);

/* Typed ops (engine/cpu/typed.c). The _host forms are plain loops over host memory with up to
 * nthreads threads, shared with engine/backend/backend.c's defaults. */
void mx_cpu_cast_host(int nthreads, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st);
size_t mx_cpu_count_nonfinite_host(int nthreads, size_t n, const void *x, mx_dtype t);
void mx_cpu_cast(mx_backend *be, size_t n, void *dst, mx_dtype dst_type, const void *src, mx_dtype src_type);
size_t mx_cpu_count_nonfinite(mx_backend *be, size_t n, const void *x, mx_dtype type);
void mx_cpu_round_half(mx_backend *be, size_t n, float *x, mx_dtype t, void *half);
void mx_cpu_sgd_update_amp(mx_backend *be, size_t n, float *master, float *mom, const float *g, float lr,
                           float momentum, float wd, float rescale, mx_dtype t, void *half, float *w);

/* Elements [lo, hi) of the SGD update (mx_backend_ops.sgd_update's formula): the one loop
 * of the plain and the AMP update, so that both give the same master weights. */
static inline void mx_cpu_sgd_range(float *w, float *mom, const float *g, float lr, float momentum, float wd,
                                    float rescale, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        const float m = momentum * mom[i] - lr * (rescale * g[i] + wd * w[i]);
        mom[i] = m;
        w[i] += m;
    }
}
/* AdamW and the squared norm (engine/cpu/optim.c); AdamW's AMP form beside SGD's (typed.c). */
void mx_cpu_adamw_update(mx_backend *be, size_t n, float *w, float *m, float *v, const float *g,
                         const mx_adamw_step *a);
void mx_cpu_adamw_update_amp(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                             const mx_adamw_step *a, mx_dtype t, void *half, float *w);
double mx_cpu_sumsq(mx_backend *be, size_t n, const float *x);

/* Elements [lo, hi) of AdamW (mx_backend_ops.adamw_update's formula) in PyTorch's order of
 * operations: the decay multiplies w first, then the step lr / bc1 times m over
 * sqrt(v) / sqrt(bc2) + eps is taken off; the one loop of the plain and the AMP update. */
static inline void mx_cpu_adamw_range(float *w, float *m, float *v, const float *g, const mx_adamw_step *a,
                                      size_t lo, size_t hi)
{
    const float b1 = a->beta1, b2 = a->beta2, step = a->lr / a->bc1, sbc2 = sqrtf(a->bc2);
    const float keep = 1.0f - a->lr * a->wd;
    for (size_t i = lo; i < hi; i++) {
        const float gi = a->rescale * g[i];
        const float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * keep - step * mi / (sqrtf(vi) / sbc2 + a->eps);
    }
}
void mx_cpu_copy_peer(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes);
void mx_cpu_gemm_ex(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const void *a, mx_dtype at,
                    int lda, const void *b, mx_dtype bt, int ldb, float beta, void *c, mx_dtype ct, int ldc,
                    mx_dtype compute);

/* Convolution: the direct kernel where it applies and MXBENCH_CONV is not "gemm"
 * (mx_cpu_conv_path_direct), oneDNN where it applies and MXBENCH_CONV is neither "gemm" nor
 * "nodnnl" (mx_cpu_conv_path_dnnl), Winograd where it applies and MXBENCH_CONV is neither "gemm" nor
 * "nowinograd" (mx_cpu_conv_path_winograd), else im2col + GEMM, the reference kept for every
 * shape. */
void mx_cpu_conv2d_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                           const float *w);
void mx_cpu_conv2d_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                            const float *dout, const float *in, const float *w);
int mx_cpu_conv_path_direct(const mx_conv_desc *d);
int mx_cpu_conv_path_winograd(const mx_backend *be, const mx_conv_desc *d, int n);
/* Which convolution paths this process takes, in words (`mxbench info`). */
const char *mx_cpu_conv_paths(void);
void mx_cpu_conv2d_forward_gemm(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                const float *w);
void mx_cpu_conv2d_backward_gemm(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                 const float *dout, const float *in, const float *w);
/* Inside a parallel region of T threads: dw[i] += the T threads' partial sums, thread u's at
 * part + u*stride, added in thread order so that a result depends on the thread count only
 * (a worksharing loop: every thread of the team calls it, after a barrier). */
void mx_cpu_add_thread_sums(float *dw, const float *part, size_t stride, int T, size_t nw);
/* Direct convolution (engine/cpu/conv_direct.c): one input channel, stride 1, kernels up to
 * MX_DIRECT_MAX_K; under bf16 math where mx_cpu_bf16_native(), its forward and weight gradient
 * on the bf16 dot products (engine/cpu/conv_direct_bf16.c). */
#define MX_DIRECT_MAX_K 16
int mx_cpu_conv_direct_applies(const mx_conv_desc *d);
void mx_cpu_conv_direct_bf16_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                     const float *w);
/* dw += the weight gradient */
void mx_cpu_conv_direct_bf16_weight_grad(mx_backend *be, const mx_conv_desc *d, int n, float *dw, const float *dout,
                                         const float *in);
void mx_cpu_conv_direct_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                const float *w);
void mx_cpu_conv_direct_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                 const float *dout, const float *in, const float *w);

/* oneDNN's bf16 convolutions (engine/cpu/conv_dnnl.c; builds with MXBENCH_HAVE_DNNL): where they
 * apply (3x3 under bf16 math on bf16 units, channels in blocks of 16; the whole backward where
 * the output has 32+ pixels, else its input gradient only), _path_dnnl adding MXBENCH_CONV;
 * forward and backward (dw or din may be NULL: not computed) return 0 where oneDNN cannot take
 * the shape (nothing written: run the own kernels), else 1. _close frees the device's
 * primitives (be->ctx). */
int mx_cpu_dnnl_available(void);
const char *mx_cpu_dnnl_version(void); /* NULL without oneDNN */
const char *mx_cpu_dnnl_isa(void);     /* its kernels' instruction set here; NULL without oneDNN */
int mx_cpu_conv_dnnl_applies(const mx_backend *be, const mx_conv_desc *d);
int mx_cpu_conv_dnnl_applies_backward(const mx_backend *be, const mx_conv_desc *d);
int mx_cpu_conv_path_dnnl(const mx_backend *be, const mx_conv_desc *d, int backward);
/* Whether bf16 math takes oneDNN's convolutions in this process (built in, bf16 units, not
 * kept out by MXBENCH_CONV). */
int mx_cpu_conv_dnnl_on(void);
int mx_cpu_conv_dnnl_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in, const float *w);
int mx_cpu_conv_dnnl_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const float *dout,
                              const float *in, const float *w);
/* The same with operands handed over in oneDNN's nChw16c (c16: MX_DNNL_C16_* flags): an input
 * (IN, DOUT) as bf16 in that layout, an output (OUT, DIN) written as f32 in it. 0 (nothing
 * written) where oneDNN does not take the shape or lays an operand asked for out otherwise. */
enum { MX_DNNL_C16_IN = 1, MX_DNNL_C16_OUT = 2, MX_DNNL_C16_DOUT = 4, MX_DNNL_C16_DIN = 8 };
int mx_cpu_conv_dnnl_forward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *out, const void *in,
                                  const float *w, unsigned c16);
int mx_cpu_conv_dnnl_backward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const void *dout,
                                   const void *in, const float *w, unsigned c16);
/* Whether (d, n) runs on oneDNN with the forward's and the whole backward's operands in the
 * layouts fwd_c16 and bwd_c16 ask for (the primitives are made, nothing runs). */
int mx_cpu_conv_dnnl_takes_c16(mx_backend *be, const mx_conv_desc *d, int n, unsigned fwd_c16, unsigned bwd_c16);
void mx_cpu_dnnl_close(mx_backend *be);
/* A residual block's main branch in nChw16c (engine/cpu/res_branch.c): engine/backend/backend.h's residual_branch_*;
 * _probe: whether resnet18's first-stage block takes that path here (1, 0; -1: cannot ask). */
int mx_cpu_residual_branch_c16_probe(void);
int mx_cpu_residual_branch_forward(mx_backend *be, const mx_res_branch *r, int n, float *out, const float *in,
                                   float *const keep[4]);
int mx_cpu_residual_branch_backward(mx_backend *be, const mx_res_branch *r, int n, float *din, const float *dout,
                                    const float *in, const float *const keep[4], float *ws1, float *ws2);
/* NCHW f32 <-> nChw16c (engine/cpu/reorder16.c; c a multiple of 16): to bf16 on the way in (rounded
 * as vcvtneps2bf16), f32 on the way out. */
void mx_cpu_nchw_to_c16_bf16(mx_backend *be, int n, int c, int hw, uint16_t *dst, const float *src);
void mx_cpu_c16_to_nchw(mx_backend *be, int n, int c, int hw, float *dst, const float *src);

/* Winograd F(4x4, 3x3) (engine/cpu/conv_winograd.c): 3x3 kernels at stride 1, padding up to 2, 8 or
 * more channels in and out, 16 or more 4x4 tiles in the batch of n, taken where the own
 * AVX-512 f32 GEMM runs, under any math (_applies). */
int mx_cpu_conv_winograd_applies(const mx_backend *be, const mx_conv_desc *d, int n);
void mx_cpu_conv_winograd_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                  const float *w);
void mx_cpu_conv_winograd_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                   const float *dout, const float *in, const float *w);

/* The reference loop of any window and stride, kept for tests and for the shapes the fast
 * paths of mx_cpu_maxpool_forward do not take. */
void mx_cpu_maxpool_forward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                const float *in);
void mx_cpu_maxpool_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                            const float *in);
void mx_cpu_maxpool_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                             const int32_t *argmax);
void mx_cpu_maxpool_backward_ref(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                 const int32_t *argmax);
void mx_cpu_maxpool_relu_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                 const float *in);
void mx_cpu_maxpool_relu_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                  const float *out, const int32_t *argmax);
void mx_cpu_avgpool_global_forward(mx_backend *be, int n, int c, int hw, float *out, const float *in);
void mx_cpu_avgpool_global_backward(mx_backend *be, int n, int c, int hw, float *din, const float *dout);

/* The transformer's row-wise and elementwise kernels (engine/cpu/seq.c): engine/backend/backend.h's
 * embedding_*, layernorm_* and gelu_*. */
void mx_cpu_embedding_forward(mx_backend *be, int n, int t, int c, int vocab, float *out, const float *ids,
                              const float *wte, const float *wpe);
void mx_cpu_embedding_backward(mx_backend *be, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                               const float *dout, const float *ids);
void mx_cpu_layernorm_forward(mx_backend *be, int rows, int w, float *out, float *mean, float *rstd,
                              const float *in, const float *gamma, const float *beta, float eps);
void mx_cpu_layernorm_backward(mx_backend *be, int rows, int w, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *rstd,
                               const float *gamma);
void mx_cpu_gelu_forward(mx_backend *be, size_t n, float *out, const float *in);
void mx_cpu_gelu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *in);

void mx_cpu_batchnorm_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean, float *invstd,
                                    float *run_mean, float *run_var, const float *in, const float *gamma,
                                    const float *beta, float eps, float momentum);
void mx_cpu_batchnorm_forward_infer(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                    const float *gamma, const float *beta, const float *run_mean,
                                    const float *run_var, float eps);
void mx_cpu_batchnorm_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *invstd,
                               const float *gamma);
/* Batch norm's f32 lanes take this many values each between flushes into the double sums. */
#define MX_BN_FLUSH 64
/* Whether the lanes are due for a flush after `vecs` more values each (since: the count so
 * far, reset when due); one rule for the NCHW and the nChw16c kernels, which keep the same
 * lanes. */
static inline int mx_bn_flush_due(int *since, int vecs)
{
    *since += vecs;
    if (*since < MX_BN_FLUSH) return 0;
    *since = 0;
    return 1;
}
/* Batch norm's per-channel scalars, shared by the NCHW kernels (engine/cpu/batchnorm.c) and the
 * nChw16c ones (engine/cpu/bn16.c) so that both give the same bits. Forward, from the batch's mean
 * and (biased) variance: the saved mean and inverse deviation, the running statistics (the
 * unbiased variance, as evaluation sees a population) and the output's y = a x + b. */
static inline void mx_bn_forward_scalars(double mu, double var, double count, float gamma, float beta, float eps,
                                         float momentum, float *mean, float *invstd, float *run_mean, float *run_var,
                                         float *a, float *b)
{
    const float is = (float)(1.0 / sqrt(var + eps));
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    *mean = (float)mu;
    *invstd = is;
    *run_mean = momentum * *run_mean + (1 - momentum) * (float)mu;
    *run_var = momentum * *run_var + (1 - momentum) * (float)unbiased;
    *a = gamma * is;
    *b = beta - (float)mu * *a;
}
/* Backward, from the sums of dy and of dy (x - mu): the parameters' gradients accumulated
 * (+=), and the input gradient's k (dy - mdy - (x - mu) mdyx). */
static inline void mx_bn_backward_scalars(double sdy, double sdyx, double count, float gamma, float is, float *dgamma,
                                          float *dbeta, float *k, float *mdy, float *mdyx)
{
    sdyx *= is;
    *dbeta += (float)sdy;
    *dgamma += (float)sdyx;
    *k = gamma * is;
    *mdy = (float)(sdy / count);
    *mdyx = (float)(sdyx / count) * is;
}
/* Batch norm on nChw16c activations (engine/cpu/bn16.c), the values of the NCHW kernels, in two kinds:
 * MX_BN16_INNER, followed by a relu: f32 in, the relu's output out as bf16 nChw16c; backward
 * the f32 nChw16c gradient of that output in (its mask read from the bf16 output), the bf16
 * nChw16c gradient of the input out. MX_BN16_END, no relu: f32 nChw16c in, f32 NCHW out;
 * backward the NCHW f32 gradient of the output in, the input's gradient out as bf16 nChw16c
 * (out unread). 0 (nothing done) where c is not a multiple of 16 or the CPU has no bf16 units. */
enum { MX_BN16_INNER, MX_BN16_END };
int mx_cpu_bn_c16_forward(mx_backend *be, int n, int c, int hw, int kind, void *out, float *mean, float *invstd,
                          float *run_mean, float *run_var, const float *in, const float *gamma, const float *beta,
                          float eps, float momentum);
int mx_cpu_bn_c16_backward(mx_backend *be, int n, int c, int hw, int kind, uint16_t *din, float *dgamma, float *dbeta,
                           const float *dout, const float *in, const uint16_t *out, const float *mean,
                           const float *invstd, const float *gamma);
void mx_cpu_batchnorm_relu_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean,
                                         float *invstd, float *run_mean, float *run_var, const float *in,
                                         const float *gamma, const float *beta, float eps, float momentum);
void mx_cpu_batchnorm_relu_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                                    const float *dout, const float *in, const float *out, const float *mean,
                                    const float *invstd, const float *gamma);

/* Causal multi-head self-attention (engine/cpu/attention.c): engine/backend/backend.h's
 * attention_forward and attention_backward, tiled by blocks of query rows and keys. */
void mx_cpu_attention_forward(mx_backend *be, int n, int t, int heads, int hs, float *out, float *lse,
                              const float *qkv);
void mx_cpu_attention_backward(mx_backend *be, int n, int t, int heads, int hs, float *dqkv, const float *dout,
                               const float *qkv, const float *out, const float *lse);

#endif
