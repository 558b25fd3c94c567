/* What the CUDA backend's files share (engine/cuda/ctx.h): turning a failed status into the
 * sticky error, and the device workspaces that grow. */
#include "ctx.h"
#include "cuda.h"
#include "base/status.h"

#include <string.h>

int mx_cuda_failed(mx_backend *be, int st, const char *call)
{
    if (st == cudaSuccess) return 0;
    mx_backend_fail(be, MX_ERUNTIME, "%s: %s (%s)", call, cudaGetErrorString((cudaError_t)st),
                    cudaGetErrorName((cudaError_t)st));
    return 1;
}

int mx_cudnn_failed(mx_backend *be, cudnnStatus_t st, const char *call)
{
    if (st == CUDNN_STATUS_SUCCESS) return 0;
    mx_backend_fail(be, MX_ERUNTIME, "%s: %s", call, cudnnGetErrorString(st));
    return 1;
}

void *mx_cuda_grow(mx_backend *be, void **buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes) return *buf;
    if (*buf) {
        cudaStreamSynchronize(((mx_cuda_ctx *)be->ctx)->stream); /* queued work may still read the old one */
        be->ops->free(be, *buf);
        *buf = NULL, *have = 0;
    }
    if (!(*buf = be->ops->alloc(be, bytes))) {
        mx_backend_fail(be, MX_ENOMEM, "out of device memory for a %zu-byte workspace", bytes);
        return NULL;
    }
    *have = bytes;
    return *buf;
}

cudaStream_t mx_cuda_bind(mx_backend *be)
{
    mx_cuda_ctx *x = be->ctx;
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != x->gpu) cudaSetDevice(x->gpu);
    return x->stream;
}

/* As the backend's gemm_ex for f32 operands: AMP's math on the tensor cores through cuBLAS's
 * down-conversion, TF32 where the user allowed it, else strict f32. */
cublasComputeType_t mx_cuda_compute_type(const mx_backend *be)
{
    if (be->math == MX_BF16) return CUBLAS_COMPUTE_32F_FAST_16BF;
    if (be->math == MX_F16) return CUBLAS_COMPUTE_32F_FAST_16F;
    return be->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/* By name, not by table address: the backend registry keeps a copy of the table. */
static const mx_cuda_ctx *ctx_of(const mx_backend *be)
{
    return be && be->ops && be->ops->name && strcmp(be->ops->name, "cuda") == 0 ? be->ctx : NULL;
}

int mx_cuda_backend_gpu(const mx_backend *be)
{
    const mx_cuda_ctx *x = ctx_of(be);
    return x ? x->gpu : -1;
}

cudaStream_t mx_cuda_backend_stream(const mx_backend *be)
{
    const mx_cuda_ctx *x = ctx_of(be);
    return x ? x->stream : NULL;
}
