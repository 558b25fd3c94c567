/* The CUDA backend's per-device state (be->ctx), shared by engine/cuda/backend.c (memory, events,
 * ranges, cuBLAS, own kernels) and engine/cuda/dnn.c (cuDNN convolutions and batch norm). */
#ifndef MX_CUDA_CTX_H
#define MX_CUDA_CTX_H

#include "engine/backend/backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

/* One convolution shape as cuDNN sees it, with the algorithms chosen for it once (by
 * cudnnFind*, timed on this device) and kept for the run. */
typedef struct {
    mx_conv_desc d;
    int n;
    int tf32;       /* on the tensor cores as TF32 (--tf32, or AMP's math) */
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t ws_fwd, ws_bwd_data, ws_bwd_filter;
} mx_cuda_conv_plan;

typedef struct {
    int gpu;                   /* the CUDA device this logical device runs on */
    cudaStream_t stream;       /* every op of this device is queued here, in order */
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    void *ws;                  /* cuDNN workspace, grown to the largest plan's need */
    size_t ws_bytes;
    void *rows;                /* the loss's per-row results (double loss, int hit) */
    size_t rows_bytes;
    void *host;                /* pinned host memory for results read back (loss rows, counts) */
    size_t host_bytes;
    unsigned long long *count; /* device counter of count_nonfinite */
    mx_cuda_conv_plan *plans;
    int nplans, cap_plans;
    cudnnTensorDescriptor_t bn_x, bn_p; /* batch norm: data and per-channel parameters */
    /* the embedding's bad-id record (mx_cuk_bad_id): on the device, where its kernel writes it,
     * and a pinned copy queued after each forward, read after a sync (engine/cuda/seq.c) */
    void *bad, *bad_host;
} mx_cuda_ctx;

/* Records a failed CUDA/cuBLAS/cuDNN status in the sticky error with the call that gave it;
 * returns nonzero when it failed. */
int mx_cuda_failed(mx_backend *be, int cuda_status, const char *call);
int mx_cudnn_failed(mx_backend *be, cudnnStatus_t st, const char *call);
/* A device buffer of at least bytes kept in *buf (grown through the counted allocator). */
void *mx_cuda_grow(mx_backend *be, void **buf, size_t *have, size_t bytes);

/* The device's stream, its GPU made current first (ops also come from threads that never bound
 * to the device); and the compute type of f32 GEMMs under the backend's math and tf32 setting. */
cudaStream_t mx_cuda_bind(mx_backend *be);
cublasComputeType_t mx_cuda_compute_type(const mx_backend *be);

/* engine/cuda/seq.c: the transformer's row-wise and elementwise ops, AdamW, sumsq */
void mx_cuda_embedding_forward(mx_backend *be, int n, int t, int c, int vocab, float *out, const float *ids,
                               const float *wte, const float *wpe);
void mx_cuda_embedding_backward(mx_backend *be, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                                const float *dout, const float *ids);
void mx_cuda_layernorm_forward(mx_backend *be, int rows, int w, float *out, float *mean, float *rstd, const float *in,
                               const float *gamma, const float *beta, float eps);
void mx_cuda_layernorm_backward(mx_backend *be, int rows, int w, float *din, float *dgamma, float *dbeta,
                                const float *dout, const float *in, const float *mean, const float *rstd,
                                const float *gamma);
void mx_cuda_gelu_forward(mx_backend *be, size_t n, float *out, const float *in);
void mx_cuda_gelu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *in);
void mx_cuda_adamw_update(mx_backend *be, size_t n, float *w, float *m, float *v, const float *g,
                          const mx_adamw_step *a);
void mx_cuda_adamw_update_amp(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                              const mx_adamw_step *a, mx_dtype t, void *half, float *w);
double mx_cuda_sumsq(mx_backend *be, size_t n, const float *x);
/* After the stream has been synchronised: a bad token id the embedding's forward met becomes
 * the sticky error (MX_EINVAL, naming the id, its sample and position, and the vocabulary). */
void mx_cuda_check_bad_ids(mx_backend *be);
/* Frees the bad-id record (close). */
void mx_cuda_seq_close(mx_backend *be);

/* engine/cuda/attention.c */
void mx_cuda_attention_forward(mx_backend *be, int n, int t, int heads, int hs, float *out, float *lse,
                               const float *qkv);
void mx_cuda_attention_backward(mx_backend *be, int n, int t, int heads, int hs, float *dqkv, const float *dout,
                                const float *qkv, const float *out, const float *lse);

/* engine/cuda/dnn.c */
void mx_cuda_conv2d_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in, const float *w);
void mx_cuda_conv2d_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const float *dout,
                             const float *in, const float *w);
void mx_cuda_batchnorm_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean, float *invstd,
                                     float *run_mean, float *run_var, const float *in, const float *gamma,
                                     const float *beta, float eps, float momentum);
void mx_cuda_batchnorm_forward_infer(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                     const float *gamma, const float *beta, const float *run_mean,
                                     const float *run_var, float eps);
void mx_cuda_batchnorm_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                                const float *dout, const float *in, const float *mean, const float *invstd,
                                const float *gamma);
void mx_cuda_dnn_close(mx_cuda_ctx *x);

#endif
