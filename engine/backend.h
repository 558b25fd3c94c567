/* The compute backend: one table of functions per device kind (cpu, cuda). Layers,
 * strategies and kvstores call these and never test which backend they run on; pointers
 * passed in are device memory of that backend unless a name says host. */
#ifndef MX_BACKEND_H
#define MX_BACKEND_H

#include <stddef.h>
#include <stdint.h>

typedef struct mx_backend mx_backend;

typedef enum { MX_COPY_H2D, MX_COPY_D2H, MX_COPY_D2D } mx_copy_kind;

/* A 2-D convolution, NCHW, square kernel, same stride and padding on both axes. */
typedef struct {
    int c, h, w;       /* input channels and size */
    int oc, k;         /* output channels, kernel size */
    int stride, pad;
    int oh, ow;        /* output size, derived */
} mx_conv_desc;

/* Max pooling, square window. */
typedef struct {
    int c, h, w, k, stride;
    int oh, ow;
} mx_pool_desc;

typedef struct {
    const char *name;
    /* ---- memory */
    void *(*alloc)(mx_backend *be, size_t bytes);   /* zero-filled; NULL on failure */
    void (*free)(mx_backend *be, void *p);
    void (*copy)(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind);
    void (*zero)(mx_backend *be, void *p, size_t bytes);
    void (*sync)(mx_backend *be);                   /* waits for queued work */
    /* Prepares the calling thread to drive this device (CPU: OpenMP and BLAS thread counts
     * are per thread, and the device's threads are pinned to its cores where the devices fit
     * on the machine; CUDA: the current device). Every thread that computes on be calls it. */
    void (*bind_thread)(mx_backend *be);

    /* ---- dense algebra; row-major C = alpha * op(A) op(B) + beta * C */
    void (*gemm)(mx_backend *be, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
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

    /* ---- elementwise */
    void (*relu_forward)(mx_backend *be, size_t n, float *out, const float *in);
    void (*relu_backward)(mx_backend *be, size_t n, float *din, const float *dout, const float *out);
    void (*add)(mx_backend *be, size_t n, float *y, const float *x);    /* y += x */
    void (*scale)(mx_backend *be, size_t n, float *x, float a);         /* x *= a */

    /* ---- loss: softmax cross-entropy. Writes dlogits = (softmax - onehot) * grad_scale,
     * returns the summed loss (host value) and the count of correct argmax predictions.
     * labels are device memory. */
    double (*softmax_xent)(mx_backend *be, int n, int classes, float *dlogits, int *correct,
                           const float *logits, const uint8_t *labels, float grad_scale);
    /* Argmax accuracy and summed loss without gradients (evaluation). */
    double (*softmax_eval)(mx_backend *be, int n, int classes, int *correct, const float *logits,
                           const uint8_t *labels);

    /* ---- optimizer: SGD with momentum and weight decay (MXNet's form):
     * mom = momentum * mom - lr * (rescale * g + wd * w); w += mom */
    void (*sgd_update)(mx_backend *be, size_t n, float *w, float *mom, const float *g, float lr,
                       float momentum, float wd, float rescale);
} mx_backend_ops;

struct mx_backend {
    const mx_backend_ops *ops;
    int device;      /* device index within its kind */
    int nthreads;    /* CPU: threads for BLAS and kernels on this device */
    void *scratch;   /* per-device workspace, see mx_backend_scratch */
    size_t scratch_bytes;
    void *ctx;       /* backend-private state */
};

/* Creates a backend of the named kind ("cpu"; "cuda" where built) for one device. */
int mx_backend_create(mx_backend **out, const char *kind, int device, int nthreads);
void mx_backend_destroy(mx_backend *be);
/* A workspace of at least bytes, reused across calls on one device (not thread-safe
 * across devices: each device has its own backend). NULL on allocation failure. */
void *mx_backend_scratch(mx_backend *be, size_t bytes);

/* The CPU backend's table; used by mx_backend_create and by tests. */
extern const mx_backend_ops mx_cpu_backend_ops;
/* Sets the process-wide BLAS thread count (OpenBLAS keeps one global setting). */
void mx_cpu_set_blas_threads(int n);
const char *mx_cpu_blas_info(void);

#endif
