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

#ifdef __cplusplus
}
#endif

#endif
