/* The CUDA backend's own kernels (engine/cuda/kernels.cu), callable from C: every launcher queues
 * its kernel on the given stream and returns the launch's status (cudaError_t as int, 0 on
 * success), which the backend turns into its sticky error with the launcher's name. The
 * arguments are the backend ops' (engine/backend/backend.h), already checked by the layers. */
#ifndef MX_CUDA_KERNELS_H
#define MX_CUDA_KERNELS_H

#include "engine/backend/backend.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *mx_cuda_stream;

int mx_cuk_bias_forward(mx_cuda_stream s, int outer, int c, int inner, float *y, const float *b);
int mx_cuk_bias_backward(mx_cuda_stream s, int outer, int c, int inner, float *db, const float *dy);
int mx_cuk_relu_forward(mx_cuda_stream s, size_t n, float *out, const float *in);
int mx_cuk_relu_backward(mx_cuda_stream s, size_t n, float *din, const float *dout, const float *out);
int mx_cuk_add(mx_cuda_stream s, size_t n, float *y, const float *x);
int mx_cuk_scale(mx_cuda_stream s, size_t n, float *x, float a);
int mx_cuk_sgd(mx_cuda_stream s, size_t n, float *w, float *mom, const float *g, float lr, float momentum, float wd,
               float rescale);

int mx_cuk_maxpool_forward(mx_cuda_stream s, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                           const float *in);
int mx_cuk_maxpool_backward(mx_cuda_stream s, const mx_pool_desc *d, int n, float *din, const float *dout,
                            const int32_t *argmax);
int mx_cuk_avgpool_forward(mx_cuda_stream s, int n, int c, int hw, float *out, const float *in);
int mx_cuk_avgpool_backward(mx_cuda_stream s, int n, int c, int hw, float *din, const float *dout);

/* Per row i of n: loss[i] (NaN for a label outside [0, classes)), hit[i] (argmax ==
 * label) and, when dlogits is not NULL, (softmax - onehot) * grad_scale. The caller sums
 * the rows on the host in row order, as the CPU backend does. */
int mx_cuk_softmax_xent(mx_cuda_stream s, int n, int classes, float *dlogits, double *loss, int *hit,
                        const float *logits, const int32_t *labels, float grad_scale);

/* engine/backend/dtype.h's conversions (nearest even, overflow to inf, NaN kept); same type: a copy. */
int mx_cuk_cast(mx_cuda_stream s, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st);
int mx_cuk_round_half(mx_cuda_stream s, size_t n, float *x, mx_dtype t, void *half);
/* *count (device memory, zeroed here) += the non-finite elements of x. */
int mx_cuk_count_nonfinite(mx_cuda_stream s, size_t n, const void *x, mx_dtype t, unsigned long long *count);

/* ---- the transformer's ops (engine/cuda/kernels_seq.cu, kernels_attn.cu) */

/* Where the embedding's forward records a bad token id: device memory, zero until a row's id
 * is not an integer in [0, vocab); then the first row to claim it (set = 1) writes the rest. */
typedef struct {
    int set, row, t, vocab;
    float id;
} mx_cuk_bad_id;

int mx_cuk_embedding_forward(mx_cuda_stream s, int n, int t, int c, int vocab, float *out, const float *ids,
                             const float *wte, const float *wpe, mx_cuk_bad_id *bad);
int mx_cuk_embedding_backward(mx_cuda_stream s, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                              const float *dout, const float *ids);
int mx_cuk_layernorm_forward(mx_cuda_stream s, int rows, int w, float *out, float *mean, float *rstd,
                             const float *in, const float *gamma, const float *beta, float eps);
/* Rows a partial sum of dgamma and dbeta takes (engine/cpu/seq.c's LN_CHUNK); part is device
 * memory for 2 * ceil(rows / MX_CUK_LN_CHUNK) * w floats. */
#define MX_CUK_LN_CHUNK 64
int mx_cuk_layernorm_backward(mx_cuda_stream s, int rows, int w, float *din, float *dgamma, float *dbeta,
                              const float *dout, const float *in, const float *mean, const float *rstd,
                              const float *gamma, float *part);
int mx_cuk_gelu_forward(mx_cuda_stream s, size_t n, float *out, const float *in);
int mx_cuk_gelu_backward(mx_cuda_stream s, size_t n, float *din, const float *dout, const float *in);
int mx_cuk_adamw(mx_cuda_stream s, size_t n, float *w, float *m, float *v, const float *g, const mx_adamw_step *a);
/* t: MX_F16 or MX_BF16 (the caller checks). */
int mx_cuk_adamw_amp(mx_cuda_stream s, size_t n, float *master, float *m, float *v, const float *g,
                     const mx_adamw_step *a, mx_dtype t, void *half, float *w);
/* *out (device) = the sum of x[i]^2 in double, in a fixed order; part: device memory for
 * MX_CUK_SUMSQ_BLOCKS doubles. */
#define MX_CUK_SUMSQ_BLOCKS 256
#define MX_CUK_SUMSQ_THREADS 256
int mx_cuk_sumsq(mx_cuda_stream s, size_t n, const float *x, double *part, double *out);

/* Attention's own kernels, over g heads of one sample at a time (engine/cuda/attention.c runs
 * the GEMMs around them): s holds g score matrices of t x t, row-major, scaled already.
 * softmax: each row i's first i + 1 scores become probabilities, the rest 0; lse (NULL: not
 * kept) receives each row's log-sum-exp, g rows of t side by side. */
int mx_cuk_attention_softmax(mx_cuda_stream s, int g, int t, float *scores, float *lse);
/* backward: the probabilities again, exp(score - lse), 0 above the diagonal. */
int mx_cuk_attention_probs(mx_cuda_stream s, int g, int t, float *scores, const float *lse);
/* dp (the gradients of the probabilities) becomes scale * P (dP - D) below the diagonal and 0
 * above, D of row i = dout_i . out_i over the head's hs columns; dout and out point at the
 * first head's first column, rows ld apart, heads hs apart. */
int mx_cuk_attention_dscores(mx_cuda_stream s, int g, int t, int hs, float *dp, const float *p, const float *dout,
                             const float *out, int ld, float scale);

#ifdef __cplusplus
}
#endif

#endif
