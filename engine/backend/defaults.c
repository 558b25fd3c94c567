/* The defaults of a backend's optional ops, correct for any backend that implements the
 * required ones (host memory reached through copy), and the check that fills them in. */
#include "backend.h"
#include "internal.h"
#include "base/status.h"
#include "base/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- defaults of the optional ops: correct for any backend that implements the
 * required ones (host memory is reached through copy), fast only where nothing better
 * exists. */

static int default_open(mx_backend *be) { return MX_OK; }
static void default_close(mx_backend *be) {}
static int default_sync(mx_backend *be) { return mx_backend_error(be); }
static void default_bind_thread(mx_backend *be) {}

static void default_copy_async(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind)
{
    be->ops->copy(be, dst, src, bytes, kind);
}

/* Staged in bounded pieces so a large tensor does not need a second host copy of itself. */
#define PEER_STAGE_BYTES ((size_t)4 << 20)

int mx_backend_host_memory(const mx_backend_ops *ops) { return strcmp(ops->device_type, "cpu") == 0; }

void mx_backend_copy_staged(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes)
{
    if (!bytes) return;
    const size_t piece = bytes < PEER_STAGE_BYTES ? bytes : PEER_STAGE_BYTES;
    char *host = malloc(piece);
    if (!host) {
        mx_backend_fail(dst_be, MX_ENOMEM, "copy_peer: no host memory to stage %zu bytes", piece);
        return;
    }
    for (size_t at = 0; at < bytes; at += piece) {
        const size_t b = bytes - at < piece ? bytes - at : piece;
        src_be->ops->copy(src_be, host, (const char *)src + at, b, MX_COPY_D2H);
        dst_be->ops->copy(dst_be, (char *)dst + at, host, b, MX_COPY_H2D);
    }
    free(host);
}

static void default_copy_peer(mx_backend *dst_be, void *dst, mx_backend *src_be, const void *src, size_t bytes)
{
    mx_backend_copy_staged(dst_be, dst, src_be, src, bytes);
}

static int default_host_pin(mx_backend *be, void *p, size_t bytes) { return 0; }
static void default_host_release(mx_backend *be, void *p) {}

typedef struct {
    double t;
} host_event;

static mx_event *default_event_create(mx_backend *be)
{
    host_event *e = calloc(1, sizeof *e);
    if (!e) mx_backend_fail(be, MX_ENOMEM, "event_create: out of host memory");
    return (mx_event *)e;
}

static void default_event_record(mx_backend *be, mx_event *ev)
{
    /* Everything queued before the record has finished once sync returns; its status is
     * the sticky error, read by the caller's own sync. */
    (void)be->ops->sync(be);
    ((host_event *)ev)->t = mx_now();
}

/* Nothing to wait for: the record already waited for the work before it. */
static void default_event_wait(mx_backend *be, mx_event *ev) {}

static double default_event_elapsed(mx_backend *be, mx_event *start, mx_event *end)
{
    return ((host_event *)end)->t - ((host_event *)start)->t;
}

static void default_event_destroy(mx_backend *be, mx_event *ev) { free(ev); }

static void default_range_push(mx_backend *be, const char *name)
{
    if (be->range_hook) be->range_hook(be->range_user, be, name, 1, mx_now());
}

static void default_range_pop(mx_backend *be)
{
    if (be->range_hook) be->range_hook(be->range_user, be, NULL, 0, mx_now());
}

/* Host copies of device data for the scalar loops; NULL (and the sticky error) when
 * host memory runs out. */
static void *to_host(mx_backend *be, const void *src, size_t bytes, const char *op)
{
    void *h = malloc(bytes ? bytes : 1);
    if (!h) {
        mx_backend_fail(be, MX_ENOMEM, "%s: no host memory for %zu bytes", op, bytes);
        return NULL;
    }
    if (src && bytes) be->ops->copy(be, h, src, bytes, MX_COPY_D2H);
    return h;
}

static void default_cast(mx_backend *be, size_t n, void *dst, mx_dtype dst_type, const void *src, mx_dtype src_type)
{
    if ((unsigned)dst_type >= MX_NDTYPES || (unsigned)src_type >= MX_NDTYPES) {
        mx_backend_fail(be, MX_EINVAL, "cast: dtype %d to %d; accepted 0..%d (f32, f16, bf16)", (int)src_type,
                        (int)dst_type, MX_NDTYPES - 1);
        return;
    }
    if (dst_type == src_type) {
        if (dst != src) be->ops->copy(be, dst, src, n * mx_dtype_size(src_type), MX_COPY_D2D);
        return;
    }
    void *hs = to_host(be, src, n * mx_dtype_size(src_type), "cast");
    void *hd = hs ? to_host(be, NULL, n * mx_dtype_size(dst_type), "cast") : NULL;
    if (hd) {
        mx_dtype_convert(n, hd, dst_type, hs, src_type);
        be->ops->copy(be, dst, hd, n * mx_dtype_size(dst_type), MX_COPY_H2D);
    }
    free(hs);
    free(hd);
}

static const char *default_amp_kernels(mx_dtype t) { return "emulated"; }

static void default_add_relu(mx_backend *be, size_t n, float *out, const float *a, const float *b)
{
    if (out == b) {
        be->ops->add(be, n, out, a); /* a + b and b + a are the same float */
    } else {
        be->ops->copy(be, out, a, sizeof(float) * n, MX_COPY_D2D);
        be->ops->add(be, n, out, b);
    }
    be->ops->relu_forward(be, n, out, out);
}

static void default_round_half(mx_backend *be, size_t n, float *x, mx_dtype t, void *half)
{
    be->ops->cast(be, n, half, t, x, MX_F32);
    be->ops->cast(be, n, x, MX_F32, half, t);
}

static void default_sgd_update_amp(mx_backend *be, size_t n, float *master, float *mom, const float *g, float lr,
                                   float momentum, float wd, float rescale, mx_dtype t, void *half, float *w)
{
    be->ops->sgd_update(be, n, master, mom, g, lr, momentum, wd, rescale);
    be->ops->cast(be, n, half, t, master, MX_F32);
    be->ops->cast(be, n, w, MX_F32, half, t);
}

static void default_adamw_update_amp(mx_backend *be, size_t n, float *master, float *m, float *v, const float *g,
                                     const mx_adamw_step *a, mx_dtype t, void *half, float *w)
{
    be->ops->adamw_update(be, n, master, m, v, g, a);
    be->ops->cast(be, n, half, t, master, MX_F32);
    be->ops->cast(be, n, w, MX_F32, half, t);
}

/* In order, piece by piece: the same values give the same sum on every device and rank. */
static double default_sumsq(mx_backend *be, size_t n, const float *x)
{
    const size_t piece = n < PEER_STAGE_BYTES / sizeof(float) ? n : PEER_STAGE_BYTES / sizeof(float);
    float *h = to_host(be, NULL, sizeof(float) * piece, "sumsq");
    if (!h) return NAN; /* unable to look: a NaN norm, which clipping refuses to apply */
    double sum = 0;
    for (size_t at = 0; at < n; at += piece) {
        const size_t b = n - at < piece ? n - at : piece;
        be->ops->copy(be, h, x + at, sizeof(float) * b, MX_COPY_D2H);
        for (size_t i = 0; i < b; i++) sum += (double)h[i] * h[i];
    }
    free(h);
    return sum;
}

static size_t default_count_nonfinite(mx_backend *be, size_t n, const void *x, mx_dtype type)
{
    if ((unsigned)type >= MX_NDTYPES) {
        mx_backend_fail(be, MX_EINVAL, "count_nonfinite: dtype %d; accepted 0..%d", (int)type, MX_NDTYPES - 1);
        return n;
    }
    void *h = to_host(be, x, n * mx_dtype_size(type), "count_nonfinite");
    /* Unable to look: report every element suspect so AMP skips rather than applies. */
    if (!h) return n;
    const size_t bad = mx_dtype_count_nonfinite(n, h, type);
    free(h);
    return bad;
}

static void default_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc)
{
    be->ops->gemm_ex(be, ta, tb, m, n, k, alpha, a, MX_F32, lda, b, MX_F32, ldb, beta, c, MX_F32, ldc, MX_F32);
}

/* rows x cols of type t at src (leading dimension ld) to and from a packed f32 panel. */
static void widen(mx_backend *be, int rows, int cols, float *panel, const void *src, mx_dtype t, int ld)
{
    const size_t es = mx_dtype_size(t);
    if (ld == cols) {
        be->ops->cast(be, (size_t)rows * cols, panel, MX_F32, src, t);
        return;
    }
    for (int r = 0; r < rows; r++)
        be->ops->cast(be, (size_t)cols, panel + (size_t)r * cols, MX_F32, (const char *)src + (size_t)r * ld * es, t);
}

static void narrow(mx_backend *be, int rows, int cols, void *dst, mx_dtype t, int ld, const float *panel)
{
    const size_t es = mx_dtype_size(t);
    if (ld == cols) {
        be->ops->cast(be, (size_t)rows * cols, dst, t, panel, MX_F32);
        return;
    }
    for (int r = 0; r < rows; r++)
        be->ops->cast(be, (size_t)cols, (char *)dst + (size_t)r * ld * es, t, panel + (size_t)r * cols, MX_F32);
}

static void default_gemm_ex(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const void *a,
                            mx_dtype at, int lda, const void *b, mx_dtype bt, int ldb, float beta, void *c,
                            mx_dtype ct, int ldc, mx_dtype compute)
{
    if (mx_backend_check_gemm_types(be, at, bt, ct, compute) < 0) return;
    if (at == MX_F32 && bt == MX_F32 && ct == MX_F32) {
        be->ops->gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (m <= 0 || n <= 0) return;
    /* Stored shapes of A (m x k, or k x m transposed) and B (k x n, or n x k). */
    const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    float *pa = at == MX_F32 ? NULL : be->ops->alloc(be, sizeof(float) * ((size_t)ar * ac + 1));
    float *pb = bt == MX_F32 ? NULL : be->ops->alloc(be, sizeof(float) * ((size_t)br * bc + 1));
    float *pc = ct == MX_F32 ? NULL : be->ops->alloc(be, sizeof(float) * (size_t)m * n);
    if ((at != MX_F32 && !pa) || (bt != MX_F32 && !pb) || (ct != MX_F32 && !pc)) {
        mx_backend_fail(be, MX_ENOMEM, "gemm_ex: no device memory for the f32 panels of a %dx%dx%d product", m, n, k);
    } else {
        if (pa) widen(be, ar, ac, pa, a, at, lda);
        if (pb) widen(be, br, bc, pb, b, bt, ldb);
        if (pc && beta != 0) widen(be, m, n, pc, c, ct, ldc);
        const int la = pa ? (ac > 1 ? ac : 1) : lda, lb = pb ? (bc > 1 ? bc : 1) : ldb;
        be->ops->gemm(be, ta, tb, m, n, k, alpha, pa ? pa : a, la, pb ? pb : b, lb, beta, pc ? pc : c,
                      pc ? n : ldc);
        if (pc) narrow(be, m, n, c, ct, ldc, pc);
    }
    if (pa) be->ops->free(be, pa);
    if (pb) be->ops->free(be, pb);
    if (pc) be->ops->free(be, pc);
}

/* ---- a table made ready: required ops checked, optional ones filled */

int mx_backend_check_and_fill(mx_backend_ops *o)
{
#define REQUIRE(op)                                                                                          \
    if (!o->op) return mx_error(MX_EINVAL, "backend '%s' leaves the required op '%s' NULL", o->name, #op)
    REQUIRE(device_type);
    REQUIRE(alloc);
    REQUIRE(free);
    REQUIRE(copy);
    REQUIRE(zero);
    REQUIRE(bias_forward);
    REQUIRE(bias_backward);
    REQUIRE(conv2d_forward);
    REQUIRE(conv2d_backward);
    REQUIRE(maxpool_forward);
    REQUIRE(maxpool_backward);
    REQUIRE(avgpool_global_forward);
    REQUIRE(avgpool_global_backward);
    REQUIRE(batchnorm_forward_train);
    REQUIRE(batchnorm_forward_infer);
    REQUIRE(batchnorm_backward);
    REQUIRE(relu_forward);
    REQUIRE(relu_backward);
    REQUIRE(add);
    REQUIRE(scale);
    REQUIRE(softmax_xent);
    REQUIRE(softmax_eval);
    REQUIRE(sgd_update);
#undef REQUIRE
    if (!o->gemm && !o->gemm_ex)
        return mx_error(MX_EINVAL, "backend '%s' leaves both gemm and gemm_ex NULL; it needs at least one", o->name);
    /* A default event is a host timestamp: mixed with the backend's own events it would
     * be read as the wrong type. */
    const int nev = !!o->event_create + !!o->event_record + !!o->event_wait + !!o->event_elapsed +
                    !!o->event_destroy;
    if (nev != 0 && nev != 5)
        return mx_error(MX_EINVAL, "backend '%s' gives %d of the 5 event ops; give all or none", o->name, nev);
#define DEFAULT(op) if (!o->op) o->op = default_##op
    DEFAULT(open);
    DEFAULT(close);
    DEFAULT(sync);
    DEFAULT(bind_thread);
    DEFAULT(copy_async);
    DEFAULT(copy_peer);
    DEFAULT(host_pin);
    DEFAULT(host_release);
    DEFAULT(event_create);
    DEFAULT(event_record);
    DEFAULT(event_wait);
    DEFAULT(event_elapsed);
    DEFAULT(event_destroy);
    DEFAULT(range_push);
    DEFAULT(range_pop);
    DEFAULT(cast);
    DEFAULT(count_nonfinite);
    DEFAULT(amp_kernels);
    DEFAULT(round_half);
    DEFAULT(sgd_update_amp);
    DEFAULT(sumsq);
    /* AdamW has no default kernel: its AMP form exists where the plain one does */
    if (o->adamw_update) DEFAULT(adamw_update_amp);
    DEFAULT(add_relu);
    DEFAULT(gemm);
    DEFAULT(gemm_ex);
#undef DEFAULT
    return MX_OK;
}
