/* CPU convolution as im2col + one GEMM (mx_cpu_gemm) per chunk of samples (the reference path),
 * or for a one-channel input at stride 1 the direct kernel of engine/cpu/conv_direct.c. Chunks of
 * several samples make the GEMM wide enough to run near the sgemm ceiling even where the output
 * is small (4x4 maps in resnet18's last stage); chunk size is bounded by a workspace budget.
 * With several threads and at least as many samples, each thread works on its own samples
 * with a one-thread GEMM (no synchronisation inside GEMMs): this trains lenet much faster,
 * and resnet18 a little, than threading each GEMM (docs/performance.md, "Choices in the code"). */
#include "kernels.h"
#include "engine/backend/switches.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONV_WORKSPACE_FLOATS ((size_t)8 << 20) /* at most 32 MiB per device, threads sharing a GEMM */
#define CONV_THREAD_FLOATS ((size_t)1 << 20)     /* 4 MiB per thread: 1 MiB starved resnet18's */
                                                 /* 4x4 layers */

/* The output columns ox whose input column ox*stride - pad + kx lies inside [0, w). */
static void valid_cols(const mx_conv_desc *d, int kx, int *lo, int *hi)
{
    const int a = d->pad - kx;
    int l = a <= 0 ? 0 : (a + d->stride - 1) / d->stride;
    int h = (d->w - 1 + a) / d->stride + 1;
    if (d->w - 1 + a < 0) h = 0;
    if (h > d->ow) h = d->ow;
    if (l > h) l = h;
    *lo = l, *hi = h;
}

/* The output rows oy whose input row oy*stride - pad + ky lies inside [0, h). */
static void valid_rows(const mx_conv_desc *d, int ky, int *lo, int *hi)
{
    int l = 0, h = d->oh;
    while (l < h && l * d->stride - d->pad + ky < 0) l++;
    while (h > l && (h - 1) * d->stride - d->pad + ky >= d->h) h--;
    *lo = l, *hi = h;
}

/* Rows of exactly 8 at stride 1 (lenet's second convolution: 8x8 outputs, no padding) are
 * copied (im2col) and added (col2im) with a fixed size, one vector operation a row, the test
 * hoisted out of the row loop: the loop of variable length had cost more than its 8 values
 * (that convolution's forward and backward, and lenet's step, are faster with the fixed size:
 * docs/performance.md, "Choices in the code"). Runs of any length cut in fixed pieces of 8
 * and 4 measured no better than the plain loop. */
static inline int rows_of_8(int st, int len, int ow) { return st == 1 && len == 8 && ow == 8; }

/* Rows of col are (channel, ky, kx); columns are (sample, oy, ox) of the chunk. The bounds
 * are worked out once per row of col, so that the loop over a sample's output rows is a
 * strided copy: lenet's second convolution copies runs of 8 values, where per-run bounds
 * tests and address arithmetic had cost more than the copying. */
static void im2col(const mx_backend *be, const mx_conv_desc *d, int nb, const float *in, float *col)
{
    const int k = d->k, K = d->c * k * k, ohw = d->oh * d->ow, ow = d->ow, st = d->stride;
    const size_t M = (size_t)nb * ohw, chw = (size_t)d->c * d->h * d->w;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)K * M)) schedule(static)
    for (int r = 0; r < K; r++) {
        const int kx = r % k, ky = (r / k) % k, ci = r / (k * k);
        int lo, hi, ylo, yhi;
        valid_cols(d, kx, &lo, &hi);
        valid_rows(d, ky, &ylo, &yhi);
        const int len = hi - lo;
        const size_t step = (size_t)st * d->w; /* input floats between output rows */
        const float *first = in + (size_t)ci * d->h * d->w + (ylo * st - d->pad + ky) * (ptrdiff_t)d->w +
                             (lo * st - d->pad + kx);
        float *dst = col + (size_t)r * M;
        for (int s = 0; s < nb; s++, dst += ohw) {
            /* rows whose input row is padding, then the columns left and right of the valid ones */
            memset(dst, 0, sizeof(float) * ylo * ow);
            memset(dst + (size_t)yhi * ow, 0, sizeof(float) * (d->oh - yhi) * ow);
            const float *restrict src = first + s * chw;
            float *restrict drow = dst + (size_t)ylo * ow;
            if (rows_of_8(st, len, ow)) {
                for (int oy = ylo; oy < yhi; oy++, src += step, drow += ow) memcpy(drow, src, 8 * sizeof(float));
                continue;
            }
            for (int oy = ylo; oy < yhi; oy++, src += step, drow += ow) {
                for (int ox = 0; ox < lo; ox++) drow[ox] = 0.0f;
                if (st == 1)
                    for (int j = 0; j < len; j++) drow[lo + j] = src[j];
                else
                    for (int j = 0; j < len; j++) drow[lo + j] = src[j * st];
                for (int ox = hi; ox < ow; ox++) drow[ox] = 0.0f;
            }
        }
    }
}

/* The adjoint of im2col: accumulates col back into din (which the caller zeroed). One
 * thread per input channel, so no two threads touch the same input element. Bounds once per
 * row of col, as im2col. */
static void col2im(const mx_backend *be, const mx_conv_desc *d, int nb, const float *col, float *din)
{
    const int k = d->k, ohw = d->oh * d->ow, ow = d->ow, st = d->stride;
    const size_t M = (size_t)nb * ohw, chw = (size_t)d->c * d->h * d->w, step = (size_t)st * d->w;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)d->c * k * k * M)) schedule(static)
    for (int ci = 0; ci < d->c; ci++) {
        for (int kk = 0; kk < k * k; kk++) {
            const int ky = kk / k, kx = kk % k;
            int lo, hi, ylo, yhi;
            valid_cols(d, kx, &lo, &hi);
            valid_rows(d, ky, &ylo, &yhi);
            const int len = hi - lo;
            const float *src0 = col + ((size_t)ci * k * k + kk) * M + (size_t)ylo * ow + lo;
            float *first = din + (size_t)ci * d->h * d->w + (ylo * st - d->pad + ky) * (ptrdiff_t)d->w +
                           (lo * st - d->pad + kx);
            for (int s = 0; s < nb; s++) {
                const float *restrict srow = src0 + (size_t)s * ohw;
                float *restrict drow = first + s * chw;
                if (rows_of_8(st, len, ow)) {
                    for (int oy = ylo; oy < yhi; oy++, srow += ow, drow += step)
                        for (int j = 0; j < 8; j++) drow[j] += srow[j];
                    continue;
                }
                for (int oy = ylo; oy < yhi; oy++, srow += ow, drow += step) {
                    if (st == 1)
                        for (int j = 0; j < len; j++) drow[j] += srow[j];
                    else
                        for (int j = 0; j < len; j++) drow[j * st] += srow[j];
                }
            }
        }
    }
}

/* [nb][oc][ohw] <-> [oc][nb*ohw]: the GEMM works on channel-major rows. */
static void nchw_to_cm(const mx_backend *be, int nb, int oc, int ohw, float *dst, const float *src)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)nb * oc * ohw)) schedule(static)
    for (int j = 0; j < oc; j++)
        for (int s = 0; s < nb; s++)
            memcpy(dst + ((size_t)j * nb + s) * ohw, src + ((size_t)s * oc + j) * ohw, sizeof(float) * ohw);
}

static void cm_to_nchw(const mx_backend *be, int nb, int oc, int ohw, float *dst, const float *src)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)nb * oc * ohw)) schedule(static)
    for (int j = 0; j < oc; j++)
        for (int s = 0; s < nb; s++)
            memcpy(dst + ((size_t)s * oc + j) * ohw, src + ((size_t)j * nb + s) * ohw, sizeof(float) * ohw);
}

/* Samples per chunk so that a chunk's workspace (col, gradient col, channel-major output)
 * fits in budget floats; at least one, at most n. */
static int chunk_samples(const mx_conv_desc *d, int n, size_t budget)
{
    const size_t K = (size_t)d->c * d->k * d->k, ohw = (size_t)d->oh * d->ow;
    size_t nb = budget / ((2 * K + d->oc) * ohw);
    if (nb < 1) nb = 1;
    return nb > (size_t)n ? n : (int)nb;
}

/* The workspace of a GEMM the device's threads share: a thread's 4 MiB each, at most 32 MiB.
 * A one-thread device (several devices on few cores) thus holds 4 MiB, not 32: beyond a
 * GEMM a few thousand columns wide, a wider chunk buys one thread nothing, and the memory
 * is what a study of memory per device reads (the layer strategy's devices each convolve
 * the whole batch). */
static size_t shared_budget(const mx_backend *be)
{
    const size_t b = CONV_THREAD_FLOATS * (size_t)(be->nthreads > 1 ? be->nthreads : 1);
    return b < CONV_WORKSPACE_FLOATS ? b : CONV_WORKSPACE_FLOATS;
}

/* The weights as the GEMMs' A operand (forward: w, oc x K; backward: w transposed, K x oc),
 * packed once per call where an own kernel runs (engine/cpu/gemm.c), so that every chunk and thread
 * reuses them: resnet18's last stage has 2.4M weights against 16-96 output columns a chunk,
 * and had packed them again for each chunk. */
typedef struct {
    int kind;         /* mx_cpu_gemm_kind of the device */
    void *pack;       /* at the workspace's head; NULL: the BLAS, which packs for itself */
} weights_op;

/* Bytes the packed weights take at the head of the workspace (0 for the BLAS). */
static size_t weights_bytes(int kind, const mx_conv_desc *d, int trans)
{
    const int K = d->c * d->k * d->k;
    return (mx_cpu_gemm_packed_a_bytes(kind, trans ? K : d->oc, trans ? d->oc : K) + 63) / 64 * 64;
}

/* Share t of T of the packing into op->pack; every share must be done before a product
 * reads it. */
static void pack_weights(const weights_op *op, const mx_conv_desc *d, int trans, const float *w, int t, int T)
{
    const int K = d->c * d->k * d->k;
    if (op->pack) mx_cpu_gemm_pack_a(op->kind, trans, trans ? K : d->oc, trans ? d->oc : K, w, K, op->pack, t, T);
}

/* C (m x M) = op(w) B, through the packed weights where there are some. */
static void weights_gemm(mx_backend *be, const weights_op *op, int trans, const mx_conv_desc *d, int M,
                         const float *w, const float *b, float *c)
{
    const int K = d->c * d->k * d->k, m = trans ? K : d->oc, k = trans ? d->oc : K;
    if (op->pack) mx_cpu_gemm_packed(be, op->kind, op->pack, 0, m, M, k, 1.0f, b, M, 0.0f, c, M);
    else mx_cpu_gemm(be, trans, 0, m, M, k, 1.0f, w, K, b, M, 0.0f, c, M);
}

/* Samples [lo, hi) in chunks of nb_max with workspace col ((K + oc) * nb_max * ohw floats). */
static void fwd_range(mx_backend *be, const mx_conv_desc *d, const weights_op *wop, int lo, int hi, int nb_max,
                      float *out, const float *in, const float *w, float *col)
{
    const size_t K = (size_t)d->c * d->k * d->k, ohw = (size_t)d->oh * d->ow;
    float *tmp = col + K * nb_max * ohw;
    const size_t chw = (size_t)d->c * d->h * d->w, ocohw = (size_t)d->oc * ohw;
    for (int s0 = lo; s0 < hi; s0 += nb_max) {
        const int nb = hi - s0 < nb_max ? hi - s0 : nb_max;
        const int M = nb * (int)ohw;
        im2col(be, d, nb, in + s0 * chw, col);
        float *dst = nb == 1 ? out + s0 * ocohw : tmp;
        weights_gemm(be, wop, 0, d, M, w, col, dst);
        if (nb > 1) cm_to_nchw(be, nb, d->oc, (int)ohw, out + s0 * ocohw, tmp);
    }
}

static void bwd_range(mx_backend *be, const mx_conv_desc *d, const weights_op *wop, int lo, int hi, int nb_max,
                      float *din, float *dw, const float *dout, const float *in, const float *w, float *col)
{
    const size_t K = (size_t)d->c * d->k * d->k, ohw = (size_t)d->oh * d->ow;
    float *dcol = col + K * nb_max * ohw;
    float *dt = dcol + K * nb_max * ohw;
    const size_t chw = (size_t)d->c * d->h * d->w, ocohw = (size_t)d->oc * ohw;
    for (int s0 = lo; s0 < hi; s0 += nb_max) {
        const int nb = hi - s0 < nb_max ? hi - s0 : nb_max;
        const int M = nb * (int)ohw;
        const float *g = dout + s0 * ocohw;
        if (nb > 1) {
            nchw_to_cm(be, nb, d->oc, (int)ohw, dt, g);
            g = dt;
        }
        im2col(be, d, nb, in + s0 * chw, col);
        mx_cpu_gemm(be, 0, 1, d->oc, (int)K, M, 1.0f, g, M, col, M, 1.0f, dw, (int)K);
        if (!din) continue;
        weights_gemm(be, wop, 1, d, M, w, g, dcol);
        memset(din + s0 * chw, 0, sizeof(float) * nb * chw);
        col2im(be, d, nb, dcol, din + s0 * chw);
    }
}

/* Sample-parallel mode: each thread runs im2col + single-threaded GEMM on its own slice of
 * the batch in cache-sized chunks. */
static int sample_parallel(const mx_backend *be, int n) { return be->nthreads > 1 && n >= be->nthreads; }

void mx_cpu_conv2d_forward_gemm(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                const float *w)
{
    const size_t K = (size_t)d->c * d->k * d->k, ohw = (size_t)d->oh * d->ow;
    const int kind = mx_cpu_gemm_kind(be);
    const size_t wbytes = weights_bytes(kind, d, 0);
    if (!sample_parallel(be, n)) {
        const int nb_max = chunk_samples(d, n, shared_budget(be));
        const size_t cbytes = sizeof(float) * (K + d->oc) * nb_max * ohw;
        char *ws = mx_backend_scratch(be, wbytes + cbytes);
        if (!ws) return;
        const weights_op wop = {kind, wbytes ? ws : NULL};
        pack_weights(&wop, d, 0, w, 0, 1);
        fwd_range(be, d, &wop, 0, n, nb_max, out, in, w, (float *)(ws + wbytes));
        return;
    }
    const int T = be->nthreads, per = (n + T - 1) / T;
    const int nb_max = chunk_samples(d, per, CONV_THREAD_FLOATS);
    const size_t ws = (K + d->oc) * nb_max * ohw;
    char *buf = mx_backend_scratch(be, wbytes + sizeof(float) * ws * T);
    if (!buf) return;
    float *col = (float *)(buf + wbytes);
    const weights_op wop = {kind, wbytes ? buf : NULL};
#pragma omp parallel num_threads(T)
    {
        const int t = omp_get_thread_num(), lo = t * per, hi = lo + per < n ? lo + per : n;
        pack_weights(&wop, d, 0, w, t, T);
#pragma omp barrier
        mx_backend one = *be;
        one.nthreads = 1;
        if (lo < hi) fwd_range(&one, d, &wop, lo, hi, nb_max, out, in, w, col + ws * t);
    }
}

void mx_cpu_conv2d_backward_gemm(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                 const float *dout, const float *in, const float *w)
{
    const size_t K = (size_t)d->c * d->k * d->k, ohw = (size_t)d->oh * d->ow;
    const int kind = din ? mx_cpu_gemm_kind(be) : MX_GEMM_BLAS; /* the first layer: no input gradient */
    const size_t wbytes = weights_bytes(kind, d, 1);
    if (!sample_parallel(be, n)) {
        const int nb_max = chunk_samples(d, n, shared_budget(be));
        char *ws = mx_backend_scratch(be, wbytes + sizeof(float) * (2 * K + d->oc) * nb_max * ohw);
        if (!ws) return;
        const weights_op wop = {kind, wbytes ? ws : NULL};
        pack_weights(&wop, d, 1, w, 0, 1);
        bwd_range(be, d, &wop, 0, n, nb_max, din, dw, dout, in, w, (float *)(ws + wbytes));
        return;
    }
    const int T = be->nthreads, per = (n + T - 1) / T;
    const int nb_max = chunk_samples(d, per, CONV_THREAD_FLOATS);
    /* Per thread: the chunk workspace, then a private weight gradient. */
    const size_t nw = (size_t)d->oc * K, ws = (2 * K + d->oc) * nb_max * ohw + nw;
    char *buf = mx_backend_scratch(be, wbytes + sizeof(float) * ws * T);
    if (!buf) return;
    float *col = (float *)(buf + wbytes);
    const weights_op wop = {kind, wbytes ? buf : NULL};
#pragma omp parallel num_threads(T)
    {
        const int t = omp_get_thread_num(), lo = t * per, hi = lo + per < n ? lo + per : n;
        pack_weights(&wop, d, 1, w, t, T);
#pragma omp barrier
        mx_backend one = *be;
        one.nthreads = 1;
        float *dwt = col + ws * t + (ws - nw);
        memset(dwt, 0, sizeof(float) * nw);
        if (lo < hi) bwd_range(&one, d, &wop, lo, hi, nb_max, din, dwt, dout, in, w, col + ws * t);
#pragma omp barrier
        mx_cpu_add_thread_sums(dw, col + (ws - nw), ws, T, nw);
    }
}

/* MXBENCH_CONV, read once: "gemm" keeps every convolution on the im2col path (the reference),
 * "nowinograd" keeps 3x3 ones there (to measure what Winograd brings), "nodnnl" keeps oneDNN's
 * bf16 convolutions out (to measure what they bring, and for mxbench's own kernels alone). */
static int direct_allowed, winograd_allowed, dnnl_allowed;

static void read_conv_env(void)
{
    const int v = mx_switch_value(MX_SWITCH_CONV);
    direct_allowed = v != MX_SW_CONV_GEMM;
    winograd_allowed = direct_allowed && v != MX_SW_CONV_NOWINOGRAD;
    dnnl_allowed = direct_allowed && v != MX_SW_CONV_NODNNL;
}

static pthread_once_t conv_env_once = PTHREAD_ONCE_INIT;

int mx_cpu_conv_path_direct(const mx_conv_desc *d)
{
    pthread_once(&conv_env_once, read_conv_env);
    return direct_allowed && mx_cpu_conv_direct_applies(d);
}

int mx_cpu_conv_path_winograd(const mx_backend *be, const mx_conv_desc *d, int n)
{
    pthread_once(&conv_env_once, read_conv_env);
    return winograd_allowed && mx_cpu_conv_winograd_applies(be, d, n);
}

int mx_cpu_conv_path_dnnl(const mx_backend *be, const mx_conv_desc *d, int backward)
{
    pthread_once(&conv_env_once, read_conv_env);
    return dnnl_allowed && (backward ? mx_cpu_conv_dnnl_applies_backward(be, d) : mx_cpu_conv_dnnl_applies(be, d));
}

/* oneDNN in this process: not built in, kept out by MXBENCH_CONV, no bf16 units, or taken. */
typedef enum { DNNL_ABSENT, DNNL_OFF, DNNL_NO_UNITS, DNNL_ON } dnnl_use;

static dnnl_use dnnl_in_use(void)
{
    pthread_once(&conv_env_once, read_conv_env);
    return !mx_cpu_dnnl_available() ? DNNL_ABSENT : !dnnl_allowed ? DNNL_OFF : !mx_cpu_bf16_native() ? DNNL_NO_UNITS
                                                                                                  : DNNL_ON;
}

int mx_cpu_conv_dnnl_on(void) { return dnnl_in_use() == DNNL_ON; }

const char *mx_cpu_conv_paths(void)
{
    static char s[768], dnnl[256];
    pthread_once(&conv_env_once, read_conv_env);
    if (!direct_allowed) return "im2col + GEMM for every shape (MXBENCH_CONV=gemm)";
    switch (dnnl_in_use()) {
    case DNNL_ABSENT: dnnl[0] = 0; break;
    case DNNL_OFF: snprintf(dnnl, sizeof dnnl, "; oneDNN off (MXBENCH_CONV=nodnnl)"); break;
    case DNNL_NO_UNITS: snprintf(dnnl, sizeof dnnl, "; oneDNN unused (no bf16 units)"); break;
    case DNNL_ON:
        snprintf(dnnl, sizeof dnnl,
                 "; under AMP bf16, 3x3 with channels in blocks of 16: oneDNN %s (the backward on 32+ output "
                 "pixels, and below only the input gradient where Winograd does not apply; MXBENCH_CONV=nodnnl: not)",
                 mx_cpu_dnnl_version());
        break;
    }
    if (!winograd_allowed || !mx_cpu_gemm_own())
        snprintf(s, sizeof s, "direct for one-channel inputs at stride 1 (kernels up to 16), im2col + GEMM otherwise"
                 " (Winograd off: MXBENCH_CONV=nowinograd, or no own AVX-512 GEMM)%s", dnnl);
    else
        snprintf(s, sizeof s, "direct for one-channel inputs at stride 1 (kernels up to 16), Winograd F(4x4,3x3) for "
                 "3x3 at stride 1 with 8+ channels and 16+ tiles (in f32, under AMP too), im2col + GEMM otherwise "
                 "(MXBENCH_CONV=gemm: always the latter; nowinograd: no Winograd)%s", dnnl);
    return s;
}

const char *mx_cpu_dnnl_info(void)
{
    static const char *const role[] = {[DNNL_OFF] = ", unused (MXBENCH_CONV)",
                                       [DNNL_NO_UNITS] = ", unused (no bf16 units)",
                                       [DNNL_ON] = " (3x3 convolutions under AMP bf16)"};
    static char s[64];
    const dnnl_use u = dnnl_in_use();
    if (u == DNNL_ABSENT) return "not in this build";
    snprintf(s, sizeof s, "%s%s", mx_cpu_dnnl_version(), role[u]);
    return s;
}

void mx_cpu_conv2d_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                           const float *w)
{
    if (mx_cpu_conv_path_direct(d)) mx_cpu_conv_direct_forward(be, d, n, out, in, w);
    else if (mx_cpu_conv_path_dnnl(be, d, 0) && mx_cpu_conv_dnnl_forward(be, d, n, out, in, w)) return;
    else if (mx_cpu_conv_path_winograd(be, d, n)) mx_cpu_conv_winograd_forward(be, d, n, out, in, w);
    else mx_cpu_conv2d_forward_gemm(be, d, n, out, in, w);
}

void mx_cpu_conv2d_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                            const float *dout, const float *in, const float *w)
{
    if (mx_cpu_conv_path_direct(d)) mx_cpu_conv_direct_backward(be, d, n, din, dw, dout, in, w);
    else if (mx_cpu_conv_path_dnnl(be, d, 1) && mx_cpu_conv_dnnl_backward(be, d, n, din, dw, dout, in, w)) return;
    /* small outputs (engine/cpu/conv_dnnl.c): Winograd's whole backward where it applies, else
     * oneDNN's input gradient and the GEMM's weight gradient */
    else if (mx_cpu_conv_path_winograd(be, d, n)) mx_cpu_conv_winograd_backward(be, d, n, din, dw, dout, in, w);
    else if (din && mx_cpu_conv_path_dnnl(be, d, 0) && mx_cpu_conv_dnnl_backward(be, d, n, din, NULL, dout, in, w))
        mx_cpu_conv2d_backward_gemm(be, d, n, NULL, dw, dout, in, w);
    else mx_cpu_conv2d_backward_gemm(be, d, n, din, dw, dout, in, w);
}
