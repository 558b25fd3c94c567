/* The CUDA backend's transformer ops (embedding, layer norm, GELU), AdamW and the gradient's
 * sum of squares: the table's entries, which queue the kernels of engine/cuda/kernels_seq.cu
 * on the device's stream and turn a failed launch into the sticky error. */
#include "ctx.h"
#include "kernels.h"
#include "base/status.h"

#include <math.h>
#include <string.h>

#define LAUNCH(be, call, what) mx_cuda_failed(be, call, what)

/* The device's bad-id record and its pinned host copy, made on the first forward. */
static mx_cuk_bad_id *bad_record(mx_backend *be)
{
    mx_cuda_ctx *x = be->ctx;
    if (x->bad) return x->bad;
    void *h = NULL;
    if (mx_cuda_failed(be, cudaMallocHost(&h, sizeof(mx_cuk_bad_id)), "cudaMallocHost (bad-id record)")) return NULL;
    memset(h, 0, sizeof(mx_cuk_bad_id));
    if (!(x->bad = be->ops->alloc(be, sizeof(mx_cuk_bad_id)))) { /* zero-filled */
        cudaFreeHost(h);
        mx_backend_fail(be, MX_ENOMEM, "out of device memory for the embedding's bad-id record");
        return NULL;
    }
    x->bad_host = h;
    return x->bad;
}

void mx_cuda_embedding_forward(mx_backend *be, int n, int t, int c, int vocab, float *out, const float *ids,
                               const float *wte, const float *wpe)
{
    mx_cuk_bad_id *bad = bad_record(be);
    if (!bad) return;
    mx_cuda_ctx *x = be->ctx;
    const cudaStream_t s = mx_cuda_bind(be);
    /* the record comes back behind the kernel, read once the stream is synchronised: a check
     * without a sync of its own (the record is tiny; the copy costs a few microseconds) */
    if (!LAUNCH(be, mx_cuk_embedding_forward(s, n, t, c, vocab, out, ids, wte, wpe, bad), "embedding_forward kernel"))
        mx_cuda_failed(be, cudaMemcpyAsync(x->bad_host, bad, sizeof *bad, cudaMemcpyDeviceToHost, s),
                       "cudaMemcpyAsync (bad-id record)");
}

void mx_cuda_check_bad_ids(mx_backend *be)
{
    const mx_cuda_ctx *x = be->ctx;
    const mx_cuk_bad_id *b = x ? x->bad_host : NULL;
    if (!b || !b->set) return;
    const int t = b->t > 0 ? b->t : 1;
    mx_backend_fail(be, MX_EINVAL,
                    "embedding: token id %g (sample %d, position %d) is not an integer in [0, %d), the vocabulary",
                    (double)b->id, b->row / t, b->row % t, b->vocab);
}

void mx_cuda_seq_close(mx_backend *be)
{
    mx_cuda_ctx *x = be->ctx;
    if (x->bad) be->ops->free(be, x->bad);
    if (x->bad_host) cudaFreeHost(x->bad_host);
    x->bad = x->bad_host = NULL;
}

void mx_cuda_embedding_backward(mx_backend *be, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                                const float *dout, const float *ids)
{
    LAUNCH(be, mx_cuk_embedding_backward(mx_cuda_bind(be), n, t, c, vocab, dwte, dwpe, dout, ids),
           "embedding_backward kernel");
}

void mx_cuda_layernorm_forward(mx_backend *be, int rows, int w, float *out, float *mean, float *rstd, const float *in,
                               const float *gamma, const float *beta, float eps)
{
    LAUNCH(be, mx_cuk_layernorm_forward(mx_cuda_bind(be), rows, w, out, mean, rstd, in, gamma, beta, eps),
           "layernorm_forward kernel");
}

/* dgamma's and dbeta's chunk sums in the backend's workspace (2 * rows / 64 * w floats: 0.8 MB
 * for GPT-2's 8192 rows of 768). */
void mx_cuda_layernorm_backward(mx_backend *be, int rows, int w, float *din, float *dgamma, float *dbeta,
                                const float *dout, const float *in, const float *mean, const float *rstd,
                                const float *gamma)
{
    mx_cuda_ctx *x = be->ctx;
    if (rows < 1 || w < 1) return;
    const size_t chunks = ((size_t)rows + MX_CUK_LN_CHUNK - 1) / MX_CUK_LN_CHUNK;
    float *part = mx_cuda_grow(be, &x->ws, &x->ws_bytes, sizeof(float) * 2 * chunks * (size_t)w);
    if (!part) return;
    LAUNCH(be,
           mx_cuk_layernorm_backward(mx_cuda_bind(be), rows, w, din, dgamma, dbeta, dout, in, mean, rstd, gamma, part),
           "layernorm_backward kernel");
}

void mx_cuda_gelu_forward(mx_backend *be, size_t n, float *out, const float *in)
{
    if (n) LAUNCH(be, mx_cuk_gelu_forward(mx_cuda_bind(be), n, out, in), "gelu_forward kernel");
}

void mx_cuda_gelu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *in)
{
    if (n) LAUNCH(be, mx_cuk_gelu_backward(mx_cuda_bind(be), n, din, dout, in), "gelu_backward kernel");
}

void mx_cuda_adamw_update(mx_backend *be, size_t n, float *w, float *m, float *v, const float *g,
                          const mx_adamw_step *a)
{
    if (n) LAUNCH(be, mx_cuk_adamw(mx_cuda_bind(be), n, w, m, v, g, a), "adamw_update kernel");
}

void mx_cuda_adamw_update_amp(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                              const mx_adamw_step *a, mx_dtype t, void *half, float *w)
{
    if (mx_backend_check_half(be, t, "adamw_update_amp") < 0) return;
    if (n) LAUNCH(be, mx_cuk_adamw_amp(mx_cuda_bind(be), n, master, m, v, g, a, t, half, w), "adamw_update_amp kernel");
}

/* The blocks' sums and the total in the workspace, the total read back through the pinned
 * buffer (at least 64 bytes from open). NaN when it could not be read: clipping refuses a NaN
 * norm rather than apply a wrong one. */
double mx_cuda_sumsq(mx_backend *be, size_t n, const float *x)
{
    mx_cuda_ctx *c = be->ctx;
    if (!n) return 0;
    double *part = mx_cuda_grow(be, &c->ws, &c->ws_bytes, sizeof(double) * (MX_CUK_SUMSQ_BLOCKS + 1));
    if (!part) return NAN;
    const cudaStream_t s = mx_cuda_bind(be);
    double *host = c->host;
    if (LAUNCH(be, mx_cuk_sumsq(s, n, x, part, part + MX_CUK_SUMSQ_BLOCKS), "sumsq kernel") ||
        mx_cuda_failed(be, cudaMemcpyAsync(host, part + MX_CUK_SUMSQ_BLOCKS, sizeof *host, cudaMemcpyDeviceToHost, s),
                       "cudaMemcpyAsync") ||
        mx_cuda_failed(be, cudaStreamSynchronize(s), "cudaStreamSynchronize"))
        return NAN;
    return *host;
}
