/* The compute backend: one table of functions per device kind (cpu, cuda). Layers,
 * strategies and kvstores call these and never test which backend they run on; pointers
 * passed in are device memory of that backend unless a name says host.
 *
 * Sizes and offsets of tensors are counted in elements of the tensor's dtype (engine/backend/dtype.h);
 * the ops without a dtype argument work on f32, and copies, zero and alloc take bytes.
 *
 * Ops return void so the hot paths stay plain calls. A backend whose op fails (a CUDA
 * launch, an allocation inside an op, an unsupported type) records its first failure with
 * mx_backend_fail; the error is sticky and surfaces as the return value of `sync`, so a
 * caller checks once per phase, not per op. */
#ifndef MX_BACKEND_H
#define MX_BACKEND_H

#include "dtype.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mx_backend mx_backend;
/* Opaque: each backend allocates its own event object and casts it (CPU: a host time). */
typedef struct mx_event mx_event;

typedef enum { MX_COPY_H2D, MX_COPY_D2H, MX_COPY_D2D } mx_copy_kind;

/* A 2-D convolution, NCHW, square kernel, same stride and padding on both axes. */
typedef struct {
    int c, h, w;       /* input channels and size */
    int oc, k;         /* output channels, kernel size */
    int stride, pad;
    int oh, ow;        /* output size, derived */
} mx_conv_desc;

/* A batch norm of a residual block's main branch, with its tensors (mx_res_branch). */
typedef struct {
    const float *gamma, *beta;
    float *dgamma, *dbeta;   /* accumulated (+=) */
    float *run_mean, *run_var;
    float *mean, *invstd;    /* the batch's statistics: the forward writes, the backward reads */
} mx_res_bn;

/* A residual block's main branch, conv3x3 -> batch norm -> relu -> conv3x3 -> batch norm,
 * with its tensors, for a backend that runs it in layouts of its own (residual_branch_*). */
typedef struct {
    mx_conv_desc c1, c2;
    const float *w1, *w2;
    float *dw1, *dw2; /* weight gradients: accumulated (+=) */
    mx_res_bn bn1, bn2;
    float eps, momentum;
} mx_res_branch;

/* Max pooling, square window. */
typedef struct {
    int c, h, w, k, stride;
    int oh, ow;
} mx_pool_desc;

/* One AdamW update's scalars (adamw_update): bc1 = 1 - beta1^t and bc2 = 1 - beta2^t for update
 * t (from 1); rescale multiplies the gradient first (clipping by the global norm). */
typedef struct {
    float lr, beta1, beta2, eps, wd, rescale, bc1, bc2;
} mx_adamw_step;

/* A timeline hook (mx_backend_set_range_hook): called on range_push (push = 1, with the
 * range's name) and range_pop (push = 0, name NULL) with the host time in seconds. */
typedef void (*mx_range_hook)(void *user, mx_backend *be, const char *name, int push, double t);

/* The table of a backend kind. Ops marked OPTIONAL may be left NULL: mx_backend_register
 * fills them from the defaults in engine/backend/backend.c (named after each), so a new backend
 * implements only what its device needs. Every other op is required. */
typedef struct {
    const char *name;         /* the kind, as --device and mx_backend_create name it */
    const char *device_type;  /* what a result records as its device_type: "cpu" or "cuda" */
    /* OPTIONAL: per-device setup and teardown of be->ctx (streams, library handles).
     * open fails with an MX_E* code and mx_error's message; default: nothing to do. */
    int (*open)(mx_backend *be);
    void (*close)(mx_backend *be);

    /* ---- memory */
    void *(*alloc)(mx_backend *be, size_t bytes);   /* zero-filled; NULL on failure */
    void (*free)(mx_backend *be, void *p);
    /* Synchronous: returns once the bytes are at dst (host memory is reusable at once). */
    void (*copy)(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind);
    void (*zero)(mx_backend *be, void *p, size_t bytes);
    /* OPTIONAL: waits for queued work, then returns MX_OK or the sticky error, re-raised
     * through mx_error with its message (it stays set). Implementations end with
     * `return mx_backend_error(be);`. Default: that alone (a synchronous backend). */
    int (*sync)(mx_backend *be);
    /* OPTIONAL: prepares the calling thread to drive this device (CPU: OpenMP and BLAS
     * thread counts are per thread, and the device's threads are pinned to its cores where
     * the devices fit on the machine; CUDA: the current device). Every thread that computes
     * on be calls it. Default: nothing to do. */
    void (*bind_thread)(mx_backend *be);
    /* OPTIONAL: queued behind earlier work on be; host memory must stay valid and unchanged
     * until an event recorded after it has completed (or sync). Default: copy. */
    void (*copy_async)(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind);
    /* OPTIONAL: bytes from src on src_be to dst on dst_be (called on dst_be's table; the
     * kinds may differ). Synchronous as copy. Default: staged through host memory. */
    void (*copy_peer)(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes);
    /* OPTIONAL: host memory (not this backend's) that its copies will read and write again and
     * again, a kvstore's host buffers, made faster to copy where the device can (CUDA:
     * page-locked with cudaHostRegister, so that copies go by DMA rather than through the
     * driver's staging): 1 when done, 0 when left as it was, never an error (copies work
     * either way). host_release undoes it before the memory is freed. Default: 0, nothing. */
    int (*host_pin)(mx_backend *be, void *p, size_t bytes);
    void (*host_release)(mx_backend *be, void *p);

    /* ---- events: points in a backend's queue of work. OPTIONAL, all five together;
     * default: a host timestamp taken after sync (so on a synchronous backend, now). */
    mx_event *(*event_create)(mx_backend *be);        /* NULL on failure, sticky error set */
    void (*event_record)(mx_backend *be, mx_event *ev); /* marks the end of work queued so far */
    void (*event_wait)(mx_backend *be, mx_event *ev);   /* later work on be waits for ev (any backend's) */
    double (*event_elapsed)(mx_backend *be, mx_event *start, mx_event *end); /* seconds; waits for end */
    void (*event_destroy)(mx_backend *be, mx_event *ev);
    /* ---- OPTIONAL: named ranges for profilers (NVTX on CUDA). Default: the backend's
     * range hook if one is set, else nothing. name is copied if kept. */
    void (*range_push)(mx_backend *be, const char *name);
    void (*range_pop)(mx_backend *be);

    /* ---- typed ops (the element types of engine/backend/dtype.h) */
    /* OPTIONAL: n elements of src_type at src to dst_type at dst, rounded as engine/backend/dtype.h
     * (nearest even, overflow to inf, NaN kept). Same type: a copy. dst and src must not
     * overlap unless they are the same buffer and type. Default: a scalar host loop. */
    void (*cast)(mx_backend *be, size_t n, void *dst, mx_dtype dst_type, const void *src, mx_dtype src_type);
    /* OPTIONAL: rounds the n f32 values at x to type t's values in place and writes those t
     * values to half: cast(half <- x, t) then cast(x <- half) in one pass (AMP rounds every
     * layer's output and gradient so). Default: those two casts. */
    void (*round_half)(mx_backend *be, size_t n, float *x, mx_dtype t, void *half);
    /* OPTIONAL: how many of the n elements are NaN or +-inf (host value; AMP skips a step
     * on any). Default: a scalar host loop. */
    size_t (*count_nonfinite)(mx_backend *be, size_t n, const void *x, mx_dtype type);
    /* OPTIONAL: the sum of the squares of the n f32 values at x, accumulated in double (host
     * value; clipping by the global norm adds it over tensors, devices and ranks). Default: a
     * host loop over staged copies. */
    double (*sumsq)(mx_backend *be, size_t n, const float *x);

    /* OPTIONAL: how GEMMs and convolutions run under AMP of type t (MX_F16, MX_BF16), in a
     * word that records and `mxbench info` keep: a name for the units the kind has for t
     * (CPU: "avx512_bf16"), or "emulated" (f32 arithmetic on the half values). Decided at run
     * time, not build time. Default: "emulated". */
    const char *(*amp_kernels)(mx_dtype t);

    /* ---- dense algebra; row-major C = alpha * op(A) op(B) + beta * C.
     * gemm_ex: A, B and C each of their own type, leading dimensions in elements; products
     * accumulate in the compute type (f32 only: anything else fails with MX_EUNSUPPORTED;
     * a backend may use TF32 for f32 when its user allows it). Half operands are widened
     * to f32 exactly and C is rounded back to its type once, as tensor cores do; with
     * beta = 0, C is not read. gemm is gemm_ex with every type f32. A table must give at
     * least one of the two; the other (OPTIONAL) defaults to calling it, half operands
     * through f32 device temporaries and cast. */
    void (*gemm)(mx_backend *be, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
    void (*gemm_ex)(mx_backend *be, int trans_a, int trans_b, int m, int n, int k, float alpha, const void *a,
                    mx_dtype a_type, int lda, const void *b, mx_dtype b_type, int ldb, float beta, void *c,
                    mx_dtype c_type, int ldc, mx_dtype compute_type);
    /* y viewed as [outer][c][inner]: y[o][j][i] += b[j]; backward db[j] += sum over o, i.
     * Dense layers use inner = 1, convolutions outer = batch, inner = h*w. */
    void (*bias_forward)(mx_backend *be, int outer, int c, int inner, float *y, const float *b);
    void (*bias_backward)(mx_backend *be, int outer, int c, int inner, float *db, const float *dy);

    /* ---- convolution and pooling; n is the batch size of this call */
    void (*conv2d_forward)(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                           const float *w);
    /* din may be NULL (first layer); dw accumulates (+=). */
    void (*conv2d_backward)(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                            const float *dout, const float *in, const float *w);
    void (*maxpool_forward)(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                            const float *in);
    void (*maxpool_backward)(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                             const int32_t *argmax);
    /* OPTIONAL, no default: max pooling of relu(in) in one pass, forward and backward (din
     * the gradient of the relu's input; out the forward's output), with the values and
     * gradients of a relu followed by maxpool_forward/_backward. Where a table gives these,
     * the engine runs a relu layer followed by a max pooling as one (engine/core/exec.c); where not, apart. */
    void (*maxpool_relu_forward)(mx_backend *be, const mx_pool_desc *d, int n, float *out, int32_t *argmax,
                                 const float *in);
    void (*maxpool_relu_backward)(mx_backend *be, const mx_pool_desc *d, int n, float *din, const float *dout,
                                  const float *out, const int32_t *argmax);
    void (*avgpool_global_forward)(mx_backend *be, int n, int c, int hw, float *out, const float *in);
    void (*avgpool_global_backward)(mx_backend *be, int n, int c, int hw, float *din, const float *dout);

    /* ---- batch norm over (n, hw) per channel; mean/invstd saved for backward */
    void (*batchnorm_forward_train)(mx_backend *be, int n, int c, int hw, float *out, float *mean,
                                    float *invstd, float *run_mean, float *run_var, const float *in,
                                    const float *gamma, const float *beta, float eps, float momentum);
    void (*batchnorm_forward_infer)(mx_backend *be, int n, int c, int hw, float *out, const float *in,
                                    const float *gamma, const float *beta, const float *run_mean,
                                    const float *run_var, float eps);
    /* dgamma, dbeta accumulate (+=). */
    void (*batchnorm_backward)(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *invstd,
                               const float *gamma);
    /* OPTIONAL, no default: batch norm in training followed by a relu, in one pass each way
     * (out = relu(bn(in)); backward: dout the gradient of that out, din of bn's in), with the
     * values of the ops above and relu_forward/_backward run one after the other. Where a
     * table gives them, a residual block runs its inner batch norm and relu as one. */
    void (*batchnorm_relu_forward_train)(mx_backend *be, int n, int c, int hw, float *out, float *mean,
                                         float *invstd, float *run_mean, float *run_var, const float *in,
                                         const float *gamma, const float *beta, float eps, float momentum);
    void (*batchnorm_relu_backward)(mx_backend *be, int n, int c, int hw, float *din, float *dgamma, float *dbeta,
                                    const float *dout, const float *in, const float *out, const float *mean,
                                    const float *invstd, const float *gamma);

    /* OPTIONAL, no default: a residual block's main branch in training (mx_res_branch), run
     * in the backend's own layouts. forward: from in ([n][c1.c][h][w]) writes the second batch
     * norm's output to out (NCHW), the batch statistics, and what backward reads into keep[0]
     * (room for in as 16-bit values), keep[1], keep[2] and keep[3] (each as wide as the first
     * convolution's output in floats), contents the backend's; returns 0, having written
     * nothing but keep, where it does not take these shapes (the layers then run one by one).
     * backward: from dout (the gradient of out, NCHW) writes din (NULL: not needed) and
     * accumulates the parameters' gradients, with ws1 and ws2 as workspaces as wide as
     * keep[1]; it takes exactly the calls whose forward it took (the same device, shapes and
     * n) and returns 0 for the others, having written nothing. The values are those of the
     * layers run one by one, but for the backend's rounding of what it keeps (the CPU's: bf16
     * copies that the convolutions round to anyway). */
    int (*residual_branch_forward)(mx_backend *be, const mx_res_branch *r, int n, float *out, const float *in,
                                   float *const keep[4]);
    int (*residual_branch_backward)(mx_backend *be, const mx_res_branch *r, int n, float *din, const float *dout,
                                    const float *in, const float *const keep[4], float *ws1, float *ws2);

    /* ---- elementwise */
    void (*relu_forward)(mx_backend *be, size_t n, float *out, const float *in);
    /* din may be dout: the layer strategy computes it in place */
    void (*relu_backward)(mx_backend *be, size_t n, float *din, const float *dout, const float *out);
    void (*add)(mx_backend *be, size_t n, float *y, const float *x);    /* y += x */
    /* OPTIONAL: out = relu(a + b) in one pass (a residual block's end; out may be a or b).
     * Default: copy a, add b, relu in place: the same values. */
    void (*add_relu)(mx_backend *be, size_t n, float *out, const float *a, const float *b);
    void (*scale)(mx_backend *be, size_t n, float *x, float a);         /* x *= a */

    /* ---- transformer: the row-wise and elementwise ops of a GPT-2 block. OPTIONAL, no default:
     * a layer whose op its backend leaves NULL refuses at setup (MX_LAYER_NEEDS_OP). A sequence
     * activation is rows of floats: a batch of n samples of t positions is n*t rows. */
    /* Token and position embedding: out[s][p] = wte[ids[s][p]] + wpe[p], rows of c floats, for
     * n samples of t positions; ids hold integer token ids as floats. A row whose id is not an
     * integer in [0, vocab) is written as zeros and records the sticky error (MX_EINVAL, naming
     * the id and vocab): never a read out of bounds. */
    void (*embedding_forward)(mx_backend *be, int n, int t, int c, int vocab, float *out, const float *ids,
                              const float *wte, const float *wpe);
    /* dwte[ids[s][p]] += dout[s][p] and dwpe[p] += dout[s][p] (accumulated); rows with a bad id
     * add nothing (their forward recorded the error). */
    void (*embedding_backward)(mx_backend *be, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                               const float *dout, const float *ids);
    /* Layer norm of each of rows rows of w floats: out = (x - mean) * rstd * gamma + beta with
     * rstd = 1 / sqrt(var + eps) (the biased variance); mean and rstd saved per row. */
    void (*layernorm_forward)(mx_backend *be, int rows, int w, float *out, float *mean, float *rstd,
                              const float *in, const float *gamma, const float *beta, float eps);
    /* din written (NULL: not needed); dgamma and dbeta accumulated (+=). */
    void (*layernorm_backward)(mx_backend *be, int rows, int w, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *rstd,
                               const float *gamma);
    /* GELU, GPT-2's tanh approximation: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
    void (*gelu_forward)(mx_backend *be, size_t n, float *out, const float *in);
    /* din = dout * gelu'(in); din may be dout. */
    void (*gelu_backward)(mx_backend *be, size_t n, float *din, const float *dout, const float *in);

    /* ---- loss: softmax cross-entropy. Writes dlogits = (softmax - onehot) * grad_scale,
     * returns the summed loss (host value) and the count of correct argmax predictions.
     * labels are device memory. */
    double (*softmax_xent)(mx_backend *be, int n, int classes, float *dlogits, int *correct,
                           const float *logits, const int32_t *labels, float grad_scale);
    /* Argmax accuracy and summed loss without gradients (evaluation). */
    double (*softmax_eval)(mx_backend *be, int n, int classes, int *correct, const float *logits,
                           const int32_t *labels);

    /* ---- optimizer: SGD with momentum and weight decay (MXNet's form):
     * mom = momentum * mom - lr * (rescale * g + wd * w); w += mom */
    void (*sgd_update)(mx_backend *be, size_t n, float *w, float *mom, const float *g, float lr,
                       float momentum, float wd, float rescale);
    /* OPTIONAL: AMP's update: sgd_update on the f32 master weights, then their rounding to
     * type t (MX_F16 or MX_BF16) into half and its f32 expansion into w, the compute copy the
     * layers read; the values of sgd_update and two casts, in one pass over the weights
     * (resnet18 under bf16 streams 45 MB less a step). Default: those three ops. */
    void (*sgd_update_amp)(mx_backend *be, size_t n, float *master, float *mom, const float *g, float lr,
                           float momentum, float wd, float rescale, mx_dtype t, void *half, float *w);
    /* OPTIONAL, no default: AdamW (PyTorch's torch.optim.AdamW) with g' = rescale * g:
     * m = beta1 m + (1 - beta1) g'; v = beta2 v + (1 - beta2) g'^2;
     * w -= lr (m / bc1 / (sqrt(v / bc2) + eps) + wd w), bc1 and bc2 the bias corrections 1 - beta^t
     * of update t. A backend without it cannot run AdamW (engine/core/optim.h refuses it). */
    void (*adamw_update)(mx_backend *be, size_t n, float *w, float *m, float *v, const float *g,
                         const mx_adamw_step *a);
    /* OPTIONAL: AMP's AdamW, as sgd_update_amp is AMP's SGD. Default: adamw_update and two
     * casts where the backend has adamw_update, else none. */
    void (*adamw_update_amp)(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                             const mx_adamw_step *a, mx_dtype t, void *half, float *w);

    /* ---- OPTIONAL, no default: causal multi-head self-attention (engine/layers/attention.c)
     * over n sequences of t positions, c = heads * hs. qkv is [n][t][3c], each row q, k, v side
     * by side, head h taking columns [h*hs, (h+1)*hs) of each; out is [n][t][c]: per head
     * softmax(q k^T / sqrt(hs)) with position i attending to 0..i, times v, heads side by side.
     * lse ([n][heads][t]) receives each row's log-sum-exp of its scaled scores, so that backward
     * recomputes the probabilities instead of keeping t x t of them (NULL: not kept). backward
     * writes dqkv ([n][t][3c], =) from dout ([n][t][c]) and the forward's qkv, out and lse. A
     * table without them runs no attention layer (its setup refuses the backend). */
    void (*attention_forward)(mx_backend *be, int n, int t, int heads, int hs, float *out, float *lse,
                              const float *qkv);
    void (*attention_backward)(mx_backend *be, int n, int t, int heads, int hs, float *dqkv, const float *dout,
                               const float *qkv, const float *out, const float *lse);
} mx_backend_ops;

struct mx_backend {
    const mx_backend_ops *ops; /* the registered table, defaults filled */
    const mx_backend_ops *raw; /* the same as the backend wrote it (its own alloc and free) */
    int device;      /* device index within its kind */
    int nthreads;    /* CPU: threads for BLAS and kernels on this device */
    void *scratch;   /* per-device workspace, see mx_backend_scratch */
    size_t scratch_bytes;
    void *ctx;       /* backend-private state (open/close) */
    /* The sticky error, behind a pointer so that a copy of this struct made for one
     * thread (engine/cpu/conv.c) still records into the device's state. */
    struct mx_backend_status *status;
    /* The arithmetic GEMMs and convolutions may use for f32 operands, as a GPU's math mode:
     * MX_F32 (the default) multiplies f32 values; MX_BF16 and MX_F16 (set by AMP's forward
     * and backward, engine/core/exec.c) let a backend round the operands to that type and sum the
     * products in f32, on the device's half-precision units. Under AMP the operands are
     * values of that type already, so only the order of the f32 sums may differ from
     * MX_F32's; a backend without such units ignores it (the CPU has bf16 units only). */
    mx_dtype math;
    /* f32 GEMMs and convolutions may use TF32 (a GPU's tensor cores, 10-bit mantissas): the
     * user's --tf32, taken from mx_backend_set_tf32_default when the backend is created. A
     * backend without such units ignores it. */
    int tf32;
    mx_range_hook range_hook; /* see mx_backend_set_range_hook */
    void *range_user;
};

/* ---- opening a device (the registry, engine/core/backends.h, does this by kind) */

/* Checks a backend's table and fills out with it, its NULL optional ops set to the defaults
 * and alloc/free routed through the allocator's count; fails naming a required op that is
 * NULL. */
int mx_backend_table_prepare(mx_backend_ops *out, const mx_backend_ops *raw);
/* Opens one device of a prepared table (ops, which must outlive the backend) whose table as
 * written is raw. */
int mx_backend_open(mx_backend **out, const mx_backend_ops *ops, const mx_backend_ops *raw, int device,
                    int nthreads);
void mx_backend_destroy(mx_backend *be);
/* A workspace of at least bytes, reused across calls on one device (not thread-safe
 * across devices: each device has its own backend). NULL on allocation failure, with the
 * backend's sticky error set (MX_ENOMEM), so a kernel that gets NULL may just return. */
void *mx_backend_scratch(mx_backend *be, size_t bytes);

/* The allocator's count of one device (every alloc and free of a created backend goes
 * through it): bytes held now, and the most held since creation or the last reset. A
 * strategy reads it after building parameters and optimizer state, and after steps, to
 * report memory per device as measured. */
typedef struct {
    size_t live, peak;
} mx_backend_mem;
mx_backend_mem mx_backend_mem_get(mx_backend *be);
void mx_backend_mem_reset_peak(mx_backend *be);

/* ---- the sticky error */

/* For implementations: records the first failure of be (code: a negative MX_E*; the
 * message names the call and what it said). Later failures are dropped: the first is the
 * cause, the rest its consequences. Safe from any thread. */
void mx_backend_fail(mx_backend *be, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* MX_OK, or the sticky error's code with its message re-raised through mx_error (naming
 * the backend and device), without waiting for queued work. */
int mx_backend_error(const mx_backend *be);

/* For gemm_ex implementations: MX_OK if every dtype is known and the compute type is
 * f32; otherwise records the sticky error (naming the bad type) and returns its code. */
int mx_backend_check_gemm_types(mx_backend *be, mx_dtype a, mx_dtype b, mx_dtype c, mx_dtype compute);

/* For the ops that take a half type (AMP's roundings and updates): MX_OK for f16 and bf16;
 * otherwise records the sticky error (naming op and the type) and returns MX_EINVAL. */
int mx_backend_check_half(mx_backend *be, mx_dtype t, const char *op);

/* Whether backends created from now on may run f32 GEMMs and convolutions as TF32 (the
 * user's --tf32; off by default). Set it before the run's backends are created. */
void mx_backend_set_tf32_default(int on);

/* Whether a kind's memory is the host's (the CPU backend, and tables made from it for tests
 * under its device type): otherwise the host must reach it through the table's copies. */
int mx_backend_host_memory(const mx_backend_ops *ops);

/* bytes from src on src_be to dst on dst_be through host memory, in bounded pieces (the
 * default copy_peer; a backend's own copy_peer calls it for peers of another kind). */
void mx_backend_copy_staged(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes);

/* Sets the hook the default range ops call (NULL: ranges are no-ops). Not thread-safe
 * against ranges in flight on be: set it before the run. */
void mx_backend_set_range_hook(mx_backend *be, mx_range_hook hook, void *user);

#endif
