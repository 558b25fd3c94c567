/* The CUDA backend's convolutions and batch norm, through cuDNN. Each convolution shape gets
 * a plan once (descriptors, and for each pass the algorithm cudnnFind* measured fastest on
 * this device), kept for the run; MXBENCH_CUDNN_LOG=1 prints each plan as it is made.
 *
 * Arithmetic: f32 convolutions are strict f32 (CUDNN_FMA_MATH) unless the user allowed
 * TF32; under AMP's math (engine/backend/backend.h) they run on the tensor cores as TF32 (tf32_for). */
#include "engine/backend/backend.h"
#include "ctx.h"
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX(be) ((mx_cuda_ctx *)(be)->ctx)

static int same_shape(const mx_conv_desc *a, const mx_conv_desc *b)
{
    return a->c == b->c && a->h == b->h && a->w == b->w && a->oc == b->oc && a->k == b->k && a->stride == b->stride &&
           a->pad == b->pad;
}

static void plan_free(mx_cuda_conv_plan *p)
{
    if (p->x) cudnnDestroyTensorDescriptor(p->x);
    if (p->y) cudnnDestroyTensorDescriptor(p->y);
    if (p->w) cudnnDestroyFilterDescriptor(p->w);
    if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
}

void mx_cuda_dnn_close(mx_cuda_ctx *x)
{
    for (int i = 0; i < x->nplans; i++) plan_free(&x->plans[i]);
    free(x->plans);
    if (x->bn_x) cudnnDestroyTensorDescriptor(x->bn_x);
    if (x->bn_p) cudnnDestroyTensorDescriptor(x->bn_p);
}

/* The fastest algorithm that ran: cudnnFind* returns them sorted by time. */
#define PICK(perf, got, algo_out, mem_out)                                   \
    do {                                                                     \
        int found_ = 0;                                                      \
        for (int i_ = 0; i_ < (got) && !found_; i_++)                        \
            if ((perf)[i_].status == CUDNN_STATUS_SUCCESS) {                 \
                (algo_out) = (perf)[i_].algo, (mem_out) = (perf)[i_].memory; \
                found_ = 1;                                                  \
            }                                                                \
        if (!found_) ok = 0;                                                 \
    } while (0)

static int plan_make(mx_backend *be, mx_cuda_conv_plan *p)
{
    cudnnHandle_t h = CTX(be)->dnn;
    const mx_conv_desc *d = &p->d;
    const cudnnDataType_t t = CUDNN_DATA_FLOAT;
    if (mx_cudnn_failed(be, cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor") ||
        mx_cudnn_failed(be, cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor") ||
        mx_cudnn_failed(be, cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor") ||
        mx_cudnn_failed(be, cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor") ||
        mx_cudnn_failed(be, cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, t, p->n, d->c, d->h, d->w),
                        "cudnnSetTensor4dDescriptor (input)") ||
        mx_cudnn_failed(be, cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, t, p->n, d->oc, d->oh, d->ow),
                        "cudnnSetTensor4dDescriptor (output)") ||
        mx_cudnn_failed(be, cudnnSetFilter4dDescriptor(p->w, t, CUDNN_TENSOR_NCHW, d->oc, d->c, d->k, d->k),
                        "cudnnSetFilter4dDescriptor") ||
        mx_cudnn_failed(be,
                        cudnnSetConvolution2dDescriptor(p->conv, d->pad, d->pad, d->stride, d->stride, 1, 1,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                        "cudnnSetConvolution2dDescriptor") ||
        mx_cudnn_failed(be,
                        cudnnSetConvolutionMathType(p->conv, p->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                        "cudnnSetConvolutionMathType"))
        return -1;
    int on, oc, oh, ow;
    if (mx_cudnn_failed(be, cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &on, &oc, &oh, &ow),
                        "cudnnGetConvolution2dForwardOutputDim"))
        return -1;
    if (oh != d->oh || ow != d->ow) {
        mx_backend_fail(be, MX_EINVAL, "convolution %dx%d: cuDNN makes a %dx%d output where the layer expects %dx%d",
                        d->h, d->w, oh, ow, d->oh, d->ow);
        return -1;
    }
    /* Every pass is measured here, once per shape: the first step of a run pays for it */
    enum { TRIES = 8 };
    cudnnConvolutionFwdAlgoPerf_t pf[TRIES];
    cudnnConvolutionBwdDataAlgoPerf_t pd[TRIES];
    cudnnConvolutionBwdFilterAlgoPerf_t pw[TRIES];
    int gf = 0, gd = 0, gw = 0, ok = 1;
    if (mx_cudnn_failed(be, cudnnFindConvolutionForwardAlgorithm(h, p->x, p->w, p->conv, p->y, TRIES, &gf, pf),
                        "cudnnFindConvolutionForwardAlgorithm") ||
        mx_cudnn_failed(be, cudnnFindConvolutionBackwardDataAlgorithm(h, p->w, p->y, p->conv, p->x, TRIES, &gd, pd),
                        "cudnnFindConvolutionBackwardDataAlgorithm") ||
        mx_cudnn_failed(be,
                        cudnnFindConvolutionBackwardFilterAlgorithm(h, p->x, p->y, p->conv, p->w, TRIES, &gw, pw),
                        "cudnnFindConvolutionBackwardFilterAlgorithm"))
        return -1;
    PICK(pf, gf, p->fwd, p->ws_fwd);
    PICK(pd, gd, p->bwd_data, p->ws_bwd_data);
    PICK(pw, gw, p->bwd_filter, p->ws_bwd_filter);
    if (!ok) {
        mx_backend_fail(be, MX_EUNSUPPORTED,
                        "cuDNN has no algorithm for the convolution %dx%dx%d -> %d, k %d, stride %d, "
                        "pad %d, batch %d%s",
                        d->c, d->h, d->w, d->oc, d->k, d->stride, d->pad, p->n, p->tf32 ? ", TF32" : "");
        return -1;
    }
    const char *log = getenv("MXBENCH_CUDNN_LOG");
    if (log && *log == '1')
        fprintf(stderr, "mxbench: cuDNN plan, device %d: %dx%dx%d -> %dx%dx%d k%d s%d p%d batch %d %s: forward algo %d "
                "(%zu B), backward data %d (%zu B), backward filter %d (%zu B)\n", be->device, d->c, d->h, d->w, d->oc,
                d->oh, d->ow, d->k, d->stride, d->pad, p->n, p->tf32 ? "tf32" : "f32",
                (int)p->fwd, p->ws_fwd, (int)p->bwd_data, p->ws_bwd_data, (int)p->bwd_filter, p->ws_bwd_filter);
    return 0;
}

/* TF32 where the user allowed it, and always under AMP's math: the operands are values of the
 * AMP type then, which TF32 holds exactly (bf16's 8 and fp16's 11 significant bits fit its
 * 11, its exponent is f32's), so the tensor cores multiply them exactly and sum in f32, as
 * half-precision tensor-core math would, without casting them to half and back. */
static int tf32_for(const mx_backend *be) { return be->tf32 || be->math == MX_F16 || be->math == MX_BF16; }

static mx_cuda_conv_plan *plan_for(mx_backend *be, const mx_conv_desc *d, int n)
{
    mx_cuda_ctx *x = CTX(be);
    be->ops->bind_thread(be); /* cuDNN's handle belongs to this device's GPU */
    const int tf32 = tf32_for(be);
    for (int i = 0; i < x->nplans; i++) {
        mx_cuda_conv_plan *p = &x->plans[i];
        if (p->n == n && p->tf32 == tf32 && same_shape(&p->d, d)) return p;
    }
    if (x->nplans == x->cap_plans) {
        const int cap = x->cap_plans ? 2 * x->cap_plans : 16;
        mx_cuda_conv_plan *grown = realloc(x->plans, sizeof *grown * (size_t)cap);
        if (!grown) {
            mx_backend_fail(be, MX_ENOMEM, "out of host memory for convolution plans");
            return NULL;
        }
        x->plans = grown, x->cap_plans = cap;
    }
    mx_cuda_conv_plan *p = &x->plans[x->nplans];
    memset(p, 0, sizeof *p);
    p->d = *d, p->n = n, p->tf32 = tf32;
    if (plan_make(be, p) < 0) {
        plan_free(p);
        return NULL;
    }
    x->nplans++;
    return p;
}

static void *workspace(mx_backend *be, size_t bytes)
{
    mx_cuda_ctx *x = CTX(be);
    if (!bytes) return x->ws;
    return mx_cuda_grow(be, &x->ws, &x->ws_bytes, bytes);
}

static const float one = 1.0f, zero = 0.0f;

void mx_cuda_conv2d_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in, const float *w)
{
    mx_cuda_ctx *x = CTX(be);
    mx_cuda_conv_plan *p = plan_for(be, d, n);
    void *ws = p ? workspace(be, p->ws_fwd) : NULL;
    if (!p || (p->ws_fwd && !ws)) return;
    mx_cudnn_failed(be,
                    cudnnConvolutionForward(x->dnn, &one, p->x, in, p->w, w, p->conv, p->fwd, ws, p->ws_fwd, &zero,
                                            p->y, out),
                    "cudnnConvolutionForward");
}

void mx_cuda_conv2d_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const float *dout,
                             const float *in, const float *w)
{
    mx_cuda_ctx *x = CTX(be);
    mx_cuda_conv_plan *p = plan_for(be, d, n);
    const size_t need = p ? (p->ws_bwd_data > p->ws_bwd_filter ? p->ws_bwd_data : p->ws_bwd_filter) : 0;
    void *ws = p ? workspace(be, need) : NULL;
    if (!p || (need && !ws)) return;
    if (din && mx_cudnn_failed(be,
                               cudnnConvolutionBackwardData(x->dnn, &one, p->w, w, p->y, dout, p->conv, p->bwd_data, ws,
                                                            p->ws_bwd_data, &zero, p->x, din),
                               "cudnnConvolutionBackwardData"))
        return;
    /* dw accumulates (engine/backend/backend.h): beta 1 */
    mx_cudnn_failed(be,
                    cudnnConvolutionBackwardFilter(x->dnn, &one, p->x, in, p->y, dout, p->conv, p->bwd_filter, ws,
                                                   p->ws_bwd_filter, &one, p->w, dw),
                    "cudnnConvolutionBackwardFilter");
}

/* ---- batch norm: cuDNN's spatial mode is exactly the layer's (per channel over n, h, w;
 * saved mean and inverse std; the running variance unbiased) */

static int bn_desc(mx_backend *be, int n, int c, int hw)
{
    mx_cuda_ctx *x = CTX(be);
    if (!x->bn_x && (mx_cudnn_failed(be, cudnnCreateTensorDescriptor(&x->bn_x), "cudnnCreateTensorDescriptor") ||
                     mx_cudnn_failed(be, cudnnCreateTensorDescriptor(&x->bn_p), "cudnnCreateTensorDescriptor")))
        return -1;
    if (mx_cudnn_failed(be, cudnnSetTensor4dDescriptor(x->bn_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, 1),
                        "cudnnSetTensor4dDescriptor (batch norm)") ||
        mx_cudnn_failed(be, cudnnDeriveBNTensorDescriptor(x->bn_p, x->bn_x, CUDNN_BATCHNORM_SPATIAL),
                        "cudnnDeriveBNTensorDescriptor"))
        return -1;
    return 0;
}

/* cuDNN refuses an epsilon below CUDNN_BN_MIN_EPSILON (1e-5): a smaller one is an error,
 * not a silent change of the model. */
static int eps_ok(mx_backend *be, float eps)
{
    if (eps >= CUDNN_BN_MIN_EPSILON) return 1;
    mx_backend_fail(be, MX_EUNSUPPORTED, "batch norm epsilon %g: cuDNN accepts %g or more", eps, CUDNN_BN_MIN_EPSILON);
    return 0;
}

void mx_cuda_batchnorm_forward_train(mx_backend *be, int n, int c, int hw, float *out, float *mean, float *invstd,
                                     float *run_mean, float *run_var, const float *in, const float *gamma,
                                     const float *beta, float eps, float momentum)
{
    mx_cuda_ctx *x = CTX(be);
    be->ops->bind_thread(be);
    if (!eps_ok(be, eps) || bn_desc(be, n, c, hw) < 0) return;
    /* cuDNN's factor weighs the new batch: running = (1 - f) running + f batch */
    mx_cudnn_failed(be,
                    cudnnBatchNormalizationForwardTraining(x->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x->bn_x, in,
                                                           x->bn_x, out, x->bn_p, gamma, beta, 1.0 - momentum,
                                                           run_mean, run_var, eps, mean, invstd),
                    "cudnnBatchNormalizationForwardTraining");
}

void mx_cuda_batchnorm_forward_infer(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                     const float *gamma, const float *beta, const float *run_mean,
                                     const float *run_var, float eps)
{
    mx_cuda_ctx *x = CTX(be);
    be->ops->bind_thread(be);
    if (!eps_ok(be, eps) || bn_desc(be, n, c, hw) < 0) return;
    mx_cudnn_failed(be,
                    cudnnBatchNormalizationForwardInference(x->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x->bn_x, in,
                                                            x->bn_x, out, x->bn_p, gamma, beta, run_mean, run_var, eps),
                    "cudnnBatchNormalizationForwardInference");
}

void mx_cuda_batchnorm_backward(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                                const float *dout, const float *in, const float *mean, const float *invstd,
                                const float *gamma)
{
    mx_cuda_ctx *x = CTX(be);
    be->ops->bind_thread(be);
    if (bn_desc(be, n, c, hw) < 0) return;
    /* din may be NULL (a first layer): cuDNN writes it regardless, so into the workspace */
    if (!din && !(din = workspace(be, sizeof(float) * (size_t)n * c * hw))) return;
    /* the saved mean and inverse std are given, so epsilon is not used: any valid value */
    mx_cudnn_failed(be,
                    cudnnBatchNormalizationBackward(x->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &one, x->bn_x,
                                                    in, x->bn_x, dout, x->bn_x, din, x->bn_p, gamma, dgamma, dbeta,
                                                    CUDNN_BN_MIN_EPSILON, mean, invstd),
                    "cudnnBatchNormalizationBackward");
}
