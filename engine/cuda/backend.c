/* The CUDA backend: one logical device per mx_backend, each with its own stream on its GPU
 * (several logical devices may share one GPU: --oversubscribe). Memory is plain device
 * memory (cudaMalloc), GEMMs are cuBLAS's, convolutions and batch norm cuDNN's
 * (engine/cuda/dnn.c), everything else the own kernels of engine/cuda/kernels.cu (the
 * transformer's, AdamW's and sumsq's: seq.c, attention.c, kernels_seq.cu, kernels_attn.cu).
 * Ops only queue work; a failed status is recorded in the sticky error with the call's name and message and
 * surfaces at the next sync. Events are CUDA events on the stream, ranges NVTX's. */
#include "engine/backend/backend.h"
#include "ctx.h"
#include "kernels.h"
#include "base/status.h"
#include "base/timer.h"

#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX(be) ((mx_cuda_ctx *)(be)->ctx)

/* The device's stream, its GPU made current first: ops also come from threads that never
 * bound to this device (a kvstore's comm workers, the updater), and a launch on another
 * GPU's stream would fail. */
static mx_cuda_stream stream_of(mx_backend *be)
{
    mx_cuda_ctx *x = CTX(be);
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != x->gpu) cudaSetDevice(x->gpu);
    return (mx_cuda_stream)x->stream;
}
#define STREAM(be) stream_of(be)

static int blas_failed(mx_backend *be, cublasStatus_t st, const char *call)
{
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    mx_backend_fail(be, MX_ERUNTIME, "%s: %s (%s)", call, cublasGetStatusString(st), cublasGetStatusName(st));
    return 1;
}

/* ---- setup */

static void cuda_close(mx_backend *be)
{
    mx_cuda_ctx *x = CTX(be);
    if (!x) return;
    cudaSetDevice(x->gpu);
    if (x->stream) cudaStreamSynchronize(x->stream);
    /* buffers from the counted allocator go back through it */
    void *bufs[] = {x->ws, x->rows, x->count};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) be->ops->free(be, bufs[i]);
    mx_cuda_dnn_close(x);
    mx_cuda_seq_close(be);
    if (x->host) cudaFreeHost(x->host);
    if (x->blas) cublasDestroy(x->blas);
    if (x->dnn) cudnnDestroy(x->dnn);
    if (x->stream) cudaStreamDestroy(x->stream);
    free(x);
    be->ctx = NULL;
}

static int open_failed(mx_backend *be, const char *what)
{
    char msg[600];
    snprintf(msg, sizeof msg, "%s", mx_backend_error(be) < 0 ? mx_last_error() : what);
    cuda_close(be);
    return mx_error(MX_EUNSUPPORTED, "CUDA device %d: %s", be->device, msg);
}

static int cuda_open(mx_backend *be)
{
    int gpus = 0;
    const cudaError_t st = cudaGetDeviceCount(&gpus);
    if (st != cudaSuccess || gpus == 0)
        return mx_error(MX_EUNSUPPORTED, "no CUDA device present (%s)",
                        st != cudaSuccess ? cudaGetErrorString(st) : "the driver sees 0 GPUs");
    mx_cuda_ctx *x = calloc(1, sizeof *x);
    if (!x) return mx_error(MX_ENOMEM, "out of host memory opening CUDA device %d", be->device);
    be->ctx = x;
    /* logical devices beyond the GPUs go round-robin (the harness allows that only with
     * --oversubscribe, and records it) */
    x->gpu = be->device < 0 ? 0 : be->device % gpus;
    if (mx_cuda_failed(be, cudaSetDevice(x->gpu), "cudaSetDevice") ||
        mx_cuda_failed(be, cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
        blas_failed(be, cublasCreate(&x->blas), "cublasCreate") ||
        blas_failed(be, cublasSetStream(x->blas, x->stream), "cublasSetStream") ||
        mx_cudnn_failed(be, cudnnCreate(&x->dnn), "cudnnCreate") ||
        mx_cudnn_failed(be, cudnnSetStream(x->dnn, x->stream), "cudnnSetStream") ||
        mx_cuda_failed(be, cudaMallocHost(&x->host, 64), "cudaMallocHost"))
        return open_failed(be, "setup failed");
    x->host_bytes = 64;
    if (!(x->count = be->ops->alloc(be, sizeof *x->count))) return open_failed(be, "no device memory for a counter");
    /* logical devices on different GPUs read each other's buffers in the threads
     * communicator's kernels: peer access where the pair allows it */
    for (int g = 0; g < gpus; g++) {
        int can = 0;
        if (g != x->gpu && cudaDeviceCanAccessPeer(&can, x->gpu, g) == cudaSuccess && can) {
            cudaDeviceEnablePeerAccess(g, 0);
            cudaGetLastError(); /* already enabled by another logical device: fine */
        }
    }
    return MX_OK;
}

static void cuda_bind_thread(mx_backend *be) { mx_cuda_failed(be, cudaSetDevice(CTX(be)->gpu), "cudaSetDevice"); }

/* ---- memory */

static void *cuda_alloc(mx_backend *be, size_t bytes)
{
    void *p = NULL;
    cudaSetDevice(CTX(be)->gpu);
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError(); /* an allocation failure is reported as NULL, not sticky */
        return NULL;
    }
    /* zero-filled, as the table promises: queued on the device's stream, so every later op
     * of this device (and any other, once it has waited for this device's queue) sees the
     * zeros first. A plain cudaMemset would go to the legacy stream, which this non-blocking
     * stream does not wait for, and could land after the first copy into the buffer. */
    if (cudaMemsetAsync(p, 0, bytes ? bytes : 1, CTX(be)->stream) != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cuda_free(mx_backend *be, void *p)
{
    if (p) mx_cuda_failed(be, cudaFree(p), "cudaFree");
}

/* Queued on the stream then waited for: ordered after every op queued before (the stream
 * is non-blocking, so a plain cudaMemcpy would not be). Addresses are unified, so one
 * direction serves host, device and peer alike. */
static void cuda_copy(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind)
{
    if (!bytes || dst == src) return;
    if (!mx_cuda_failed(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, STREAM(be)), "cudaMemcpyAsync"))
        mx_cuda_failed(be, cudaStreamSynchronize(CTX(be)->stream), "cudaStreamSynchronize after a copy");
}

static void cuda_copy_async(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind)
{
    if (bytes && dst != src)
        mx_cuda_failed(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, STREAM(be)), "cudaMemcpyAsync");
}

/* Portable: pinned for every GPU's context, as a kvstore's devices may be several GPUs. A
 * failure (a locked-memory limit, memory already registered) leaves the memory pageable,
 * which the copies take as before, and clears CUDA's error so that it is not taken for the
 * next call's. */
static int cuda_host_pin(mx_backend *be, void *p, size_t bytes)
{
    if (!p || !bytes) return 0;
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return 1;
    cudaGetLastError();
    return 0;
}

static void cuda_host_release(mx_backend *be, void *p)
{
    if (p && cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
}

/* Between logical devices: the source's queued work first, then one copy on the
 * destination's stream (same GPU or peer). */
static void cuda_copy_peer(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes)
{
    if (src_be->ops != dst_be->ops) { /* another kind: through the host, in its own copies */
        mx_backend_copy_staged(dst_be, dst, src_be, src, bytes);
        return;
    }
    if (mx_cuda_failed(src_be, cudaStreamSynchronize(CTX(src_be)->stream), "cudaStreamSynchronize (peer source)"))
        return;
    cuda_copy(dst_be, dst, src, bytes, MX_COPY_D2D);
}

static void cuda_zero(mx_backend *be, void *p, size_t bytes)
{
    if (bytes) mx_cuda_failed(be, cudaMemsetAsync(p, 0, bytes, STREAM(be)), "cudaMemsetAsync");
}

static int cuda_sync(mx_backend *be)
{
    if (!mx_cuda_failed(be, cudaStreamSynchronize(CTX(be)->stream), "cudaStreamSynchronize"))
        mx_cuda_check_bad_ids(be); /* the embedding's bad token ids surface here */
    return mx_backend_error(be);
}

/* ---- events: CUDA events on the device's stream, so phases are timed on the device */

static mx_event *cuda_event_create(mx_backend *be)
{
    cudaEvent_t e = NULL;
    if (mx_cuda_failed(be, cudaEventCreate(&e), "cudaEventCreate")) return NULL;
    return (mx_event *)e;
}

static void cuda_event_record(mx_backend *be, mx_event *ev)
{
    mx_cuda_failed(be, cudaEventRecord((cudaEvent_t)ev, STREAM(be)), "cudaEventRecord");
}

static void cuda_event_wait(mx_backend *be, mx_event *ev)
{
    mx_cuda_failed(be, cudaStreamWaitEvent(STREAM(be), (cudaEvent_t)ev, 0), "cudaStreamWaitEvent");
}

static double cuda_event_elapsed(mx_backend *be, mx_event *start, mx_event *end)
{
    float ms = 0;
    if (mx_cuda_failed(be, cudaEventSynchronize((cudaEvent_t)end), "cudaEventSynchronize") ||
        mx_cuda_failed(be, cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end), "cudaEventElapsedTime"))
        return 0;
    return ms / 1e3;
}

static void cuda_event_destroy(mx_backend *be, mx_event *ev)
{
    if (ev) cudaEventDestroy((cudaEvent_t)ev);
}

/* NVTX for Nsight Systems, and the timeline hook as on every backend */
static void cuda_range_push(mx_backend *be, const char *name)
{
    nvtxRangePushA(name);
    if (be->range_hook) be->range_hook(be->range_user, be, name, 1, mx_now());
}

static void cuda_range_pop(mx_backend *be)
{
    nvtxRangePop();
    if (be->range_hook) be->range_hook(be->range_user, be, NULL, 0, mx_now());
}

/* ---- typed ops */

static void cuda_cast(mx_backend *be, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    if (n) mx_cuda_failed(be, mx_cuk_cast(STREAM(be), n, dst, dt, src, st), "cast kernel");
}

static void cuda_round_half(mx_backend *be, size_t n, float *x, mx_dtype t, void *half)
{
    if (n) mx_cuda_failed(be, mx_cuk_round_half(STREAM(be), n, x, t, half), "round_half kernel");
}

/* Pinned host memory of at least bytes for results read back, grown when a batch needs more
 * (it is only read after a stream sync, so nothing queued still uses the old one). */
static void *host_buffer(mx_backend *be, size_t bytes)
{
    mx_cuda_ctx *x = CTX(be);
    if (bytes <= x->host_bytes) return x->host;
    cudaFreeHost(x->host);
    x->host = NULL, x->host_bytes = 0;
    if (mx_cuda_failed(be, cudaMallocHost(&x->host, bytes), "cudaMallocHost")) return NULL;
    x->host_bytes = bytes;
    return x->host;
}

static size_t cuda_count_nonfinite(mx_backend *be, size_t n, const void *x, mx_dtype t)
{
    mx_cuda_ctx *c = CTX(be);
    if (!n) return 0;
    unsigned long long *host = c->host; /* at least 64 bytes from open */
    if (mx_cuda_failed(be, mx_cuk_count_nonfinite(STREAM(be), n, x, t, c->count), "count_nonfinite kernel") ||
        mx_cuda_failed(be, cudaMemcpyAsync(host, c->count, sizeof *host, cudaMemcpyDeviceToHost, c->stream),
                       "cudaMemcpyAsync") ||
        mx_cuda_failed(be, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize"))
        return n; /* unknown: say all, so that AMP skips the step rather than trust it */
    return (size_t)*host;
}

/* What the GEMMs and convolutions run on under AMP: the tensor cores, in both types (the
 * record's amp names the type). */
static const char *cuda_amp_kernels(mx_dtype t) { return "tensor_cores"; }

/* ---- GEMM: cuBLAS is column-major, so the row-major C = op(A) op(B) is computed as its
 * transpose, C^T = op(B)^T op(A)^T: the same memory, operands swapped. */

static cudaDataType_t cuda_type(mx_dtype t)
{
    return t == MX_F16 ? CUDA_R_16F : t == MX_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static void cuda_gemm_ex(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const void *a,
                         mx_dtype at, int lda, const void *b, mx_dtype bt, int ldb, float beta, void *c, mx_dtype ct,
                         int ldc, mx_dtype compute)
{
    if (mx_backend_check_gemm_types(be, at, bt, ct, compute) < 0) return;
    if (at != bt) {
        mx_backend_fail(be, MX_EUNSUPPORTED, "gemm_ex: operands of two types (%s, %s): cuBLAS takes one",
                        mx_dtype_name(at), mx_dtype_name(bt));
        return;
    }
    /* f32 operands under AMP's math (engine/backend/backend.h) run on the tensor cores through cuBLAS's
     * down-conversion; plain f32 is strict f32 unless the user allowed TF32 */
    cublasComputeType_t ctype = CUBLAS_COMPUTE_32F;
    if (at == MX_F32 && be->math == MX_BF16) ctype = CUBLAS_COMPUTE_32F_FAST_16BF;
    else if (at == MX_F32 && be->math == MX_F16) ctype = CUBLAS_COMPUTE_32F_FAST_16F;
    else if (at == MX_F32 && be->tf32) ctype = CUBLAS_COMPUTE_32F_FAST_TF32;
    stream_of(be); /* the handle is bound to this GPU: make it current */
    blas_failed(be,
                cublasGemmEx(CTX(be)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                             &alpha, b, cuda_type(bt), ldb, a, cuda_type(at), lda, &beta, c, cuda_type(ct), ldc, ctype,
                             CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
}

static void cuda_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    cuda_gemm_ex(be, ta, tb, m, n, k, alpha, a, MX_F32, lda, b, MX_F32, ldb, beta, c, MX_F32, ldc, MX_F32);
}

/* ---- the own kernels */

#define LAUNCH(be, call, what) mx_cuda_failed(be, call, what)

static void cuda_bias_forward(mx_backend *be, int outer, int c, int inner, float *y, const float *b)
{
    LAUNCH(be, mx_cuk_bias_forward(STREAM(be), outer, c, inner, y, b), "bias_forward kernel");
}

static void cuda_bias_backward(mx_backend *be, int outer, int c, int inner, float *db, const float *dy)
{
    LAUNCH(be, mx_cuk_bias_backward(STREAM(be), outer, c, inner, db, dy), "bias_backward kernel");
}

static void cuda_maxpool_forward(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                 const float *in)
{
    LAUNCH(be, mx_cuk_maxpool_forward(STREAM(be), d, n, out, argmax, in), "maxpool_forward kernel");
}

static void cuda_maxpool_backward(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                  const int32_t *argmax)
{
    LAUNCH(be, mx_cuk_maxpool_backward(STREAM(be), d, n, din, dout, argmax), "maxpool_backward kernel");
}

static void cuda_avgpool_forward(mx_backend *be, int n, int c, int hw, float *out, const float *in)
{
    LAUNCH(be, mx_cuk_avgpool_forward(STREAM(be), n, c, hw, out, in), "avgpool_forward kernel");
}

static void cuda_avgpool_backward(mx_backend *be, int n, int c, int hw, float *din, const float *dout)
{
    LAUNCH(be, mx_cuk_avgpool_backward(STREAM(be), n, c, hw, din, dout), "avgpool_backward kernel");
}

static void cuda_relu_forward(mx_backend *be, size_t n, float *out, const float *in)
{
    if (n) LAUNCH(be, mx_cuk_relu_forward(STREAM(be), n, out, in), "relu_forward kernel");
}

static void cuda_relu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *out)
{
    if (n) LAUNCH(be, mx_cuk_relu_backward(STREAM(be), n, din, dout, out), "relu_backward kernel");
}

static void cuda_add(mx_backend *be, size_t n, float *y, const float *x)
{
    if (n) LAUNCH(be, mx_cuk_add(STREAM(be), n, y, x), "add kernel");
}

static void cuda_scale(mx_backend *be, size_t n, float *x, float a)
{
    if (n) LAUNCH(be, mx_cuk_scale(STREAM(be), n, x, a), "scale kernel");
}

static void cuda_sgd_update(mx_backend *be, size_t n, float *w, float *mom, const float *g, float lr, float momentum,
                            float wd, float rescale)
{
    if (n) LAUNCH(be, mx_cuk_sgd(STREAM(be), n, w, mom, g, lr, momentum, wd, rescale), "sgd_update kernel");
}

/* The rows' losses and hits come back to the host and are summed there in row order, the
 * CPU backend's order, so both report the same sums for the same logits. */
static double cuda_softmax_xent(mx_backend *be, int n, int classes, float *dlogits, int *correct, const float *logits,
                                const int32_t *labels, float grad_scale)
{
    mx_cuda_ctx *c = CTX(be);
    const size_t bytes = (sizeof(double) + sizeof(int)) * (size_t)(n > 0 ? n : 1);
    char *rows = mx_cuda_grow(be, &c->rows, &c->rows_bytes, bytes), *host = host_buffer(be, bytes);
    double loss = 0;
    int hits = 0;
    if (correct) *correct = 0;
    if (!rows || !host) return 0;
    double *dl = (double *)rows;
    int *dh = (int *)(rows + sizeof(double) * (size_t)n);
    if (n > 0 &&
        !LAUNCH(be, mx_cuk_softmax_xent(STREAM(be), n, classes, dlogits, dl, dh, logits, labels, grad_scale),
                "softmax_xent kernel") &&
        !mx_cuda_failed(be, cudaMemcpyAsync(host, rows, bytes, cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync") &&
        !mx_cuda_failed(be, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize")) {
        const double *hl = (const double *)host;
        const int *hh = (const int *)(host + sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) loss += hl[i], hits += hh[i];
    }
    if (correct) *correct = hits;
    return loss;
}

static double cuda_softmax_eval(mx_backend *be, int n, int classes, int *correct, const float *logits,
                                const int32_t *labels)
{
    return cuda_softmax_xent(be, n, classes, NULL, correct, logits, labels, 0);
}

const mx_backend_ops mx_cuda_backend_ops = {
    .name = "cuda",
    .device_type = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
    .zero = cuda_zero,
    .sync = cuda_sync,
    .bind_thread = cuda_bind_thread,
    .copy_async = cuda_copy_async,
    .copy_peer = cuda_copy_peer,
    .host_pin = cuda_host_pin,
    .host_release = cuda_host_release,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_elapsed = cuda_event_elapsed,
    .event_destroy = cuda_event_destroy,
    .range_push = cuda_range_push,
    .range_pop = cuda_range_pop,
    .cast = cuda_cast,
    .round_half = cuda_round_half,
    .count_nonfinite = cuda_count_nonfinite,
    .amp_kernels = cuda_amp_kernels,
    .gemm = cuda_gemm,
    .gemm_ex = cuda_gemm_ex,
    .bias_forward = cuda_bias_forward,
    .bias_backward = cuda_bias_backward,
    .conv2d_forward = mx_cuda_conv2d_forward,
    .conv2d_backward = mx_cuda_conv2d_backward,
    .maxpool_forward = cuda_maxpool_forward,
    .maxpool_backward = cuda_maxpool_backward,
    .avgpool_global_forward = cuda_avgpool_forward,
    .avgpool_global_backward = cuda_avgpool_backward,
    .batchnorm_forward_train = mx_cuda_batchnorm_forward_train,
    .batchnorm_forward_infer = mx_cuda_batchnorm_forward_infer,
    .batchnorm_backward = mx_cuda_batchnorm_backward,
    .relu_forward = cuda_relu_forward,
    .relu_backward = cuda_relu_backward,
    .add = cuda_add,
    .scale = cuda_scale,
    .softmax_xent = cuda_softmax_xent,
    .softmax_eval = cuda_softmax_eval,
    .sgd_update = cuda_sgd_update,
    /* the transformer's ops, AdamW and clipping's sum of squares (engine/cuda/seq.c, attention.c) */
    .embedding_forward = mx_cuda_embedding_forward,
    .embedding_backward = mx_cuda_embedding_backward,
    .layernorm_forward = mx_cuda_layernorm_forward,
    .layernorm_backward = mx_cuda_layernorm_backward,
    .gelu_forward = mx_cuda_gelu_forward,
    .gelu_backward = mx_cuda_gelu_backward,
    .attention_forward = mx_cuda_attention_forward,
    .attention_backward = mx_cuda_attention_backward,
    .adamw_update = mx_cuda_adamw_update,
    .adamw_update_amp = mx_cuda_adamw_update_amp,
    .sumsq = mx_cuda_sumsq,
};
