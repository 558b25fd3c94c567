/* 3x3 convolutions under AMP bf16 on oneDNN's bf16 direct convolutions (builds with
 * MXBENCH_HAVE_DNNL), chosen by measurement: on resnet18's 3x3 layers at batch 32, forward and
 * both backward passes, oneDNN's jit kernels with the reorders from and to mxbench's layouts
 * ran as fast as mxbench's own (f32 Winograd at stride 1, bf16 im2col + GEMM at stride 2) or
 * faster, while its 1x1 and one-channel ones ran slower (bench/conv_bench --bf16;
 * docs/performance.md, "Choices in the code"); on small outputs the weight gradient stays
 * mxbench's, and the input gradient too where Winograd applies (see
 * mx_cpu_conv_dnnl_applies_backward). Everything else, and every convolution without bf16 math
 * or bf16 units, stays on mxbench's kernels (engine/cpu/conv.c). The activations' reorders are
 * mxbench's (engine/cpu/reorder16.c, much faster than oneDNN's), the weights' oneDNN's.
 *
 * Numbers: the operands are rounded to bf16 (under AMP they are bf16 values already), the
 * products are exact in f32 and summed in f32, and the outputs, input gradients and weight
 * gradients are f32 (dst, diff_src and diff_weights requested as f32), so a result differs from
 * mxbench's bf16 GEMM only in the order of the f32 sums. The weight gradient is added to dw
 * (the backend's contract) by the reorder back to oihw, through its sum post-op.
 *
 * Each device keeps its primitives, one entry per shape and batch size, in be->ctx: creating
 * them JIT-compiles code (milliseconds), a step reuses them. Their scratchpads are in
 * user mode, inside the device's workspace (mx_backend_scratch) with the blocked copies of the
 * operands, so no two devices share memory and nothing is allocated per call. oneDNN runs on
 * the OpenMP runtime mxbench's kernels use; it takes omp_get_max_threads() threads, set to
 * the device's thread count around every call (devices are threads of their own, whose
 * setting is theirs alone). A shape oneDNN cannot take (creation fails) falls back to the own
 * kernels and is not tried again. */
#include "kernels.h"
#include "base/status.h"

#ifdef MXBENCH_HAVE_DNNL
#include "dnnl_common.h"
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 64 /* shapes x batch sizes a device keeps; beyond, the own kernels run */

/* An operand at the primitive's boundary: the caller's array (user, plain layout) and the
 * primitive's blocked copy at offset off of the workspace, with the reorder between them
 * (NULL where the primitive takes the user's layout as it is). */
typedef struct {
    dnnl_memory_t user, prim;
    dnnl_primitive_t reorder;
    size_t off, rs_off; /* the copy's and the reorder's scratchpad offsets in the workspace */
    dnnl_memory_t rs;   /* the reorder's scratchpad (NULL: needs none) */
    int input;          /* user -> prim before the primitive; else prim -> user after it */
    int own;            /* an activation in nChw16c: mxbench's reorder (engine/cpu/reorder16.c) */
    int n, c, hw;       /* its shape */
} boundary;

/* One primitive and its three operands (their argument ids in arg[]). */
typedef struct {
    dnnl_primitive_t p;
    boundary b[3];
    int arg[3];
    dnnl_memory_t scratch; /* the primitive's scratchpad (NULL: none) */
    size_t scratch_off;
    int ready;
} op;

typedef struct {
    mx_conv_desc d;
    int n;
    int failed;           /* oneDNN could not take it: the own kernels do */
    int ddst_shared;      /* the data gradient reads the weight gradient's copy of dout */
    op fwd, bwd_d, bwd_w;
    size_t bytes;         /* the workspace the entry's operations need */
    dnnl_primitive_desc_t fwd_pd; /* hint for the backward primitives */
} entry;

typedef struct {
    dnnl_stream_t stream;
    int count;
    entry e[MAX_ENTRIES];
} cache;

static size_t align64(size_t b) { return (b + 63) / 64 * 64; }

static int md(dnnl_memory_desc_t *m, int64_t a, int64_t b, int64_t c, int64_t d, dnnl_data_type_t t,
              dnnl_format_tag_t tag)
{
    const dnnl_dims_t dims = {a, b, c, d};
    return dnnl_memory_desc_init_by_tag(m, 4, dims, t, tag) == dnnl_success;
}

/* A memory object with no buffer yet: handles are set per call. */
static int memory(dnnl_memory_t *m, const dnnl_memory_desc_t *d)
{
    return dnnl_memory_create(m, d, mx_dnnl_engine(), DNNL_MEMORY_NONE) == dnnl_success;
}

/* The scratchpad a primitive asks for, placed at *bytes of the workspace. */
static int scratchpad(dnnl_primitive_desc_t pd, dnnl_memory_t *m, size_t *off, size_t *bytes)
{
    const dnnl_memory_desc_t *s = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    *m = NULL;
    if (!s || dnnl_memory_desc_get_size(s) == 0) return 1;
    *off = *bytes;
    *bytes += align64(dnnl_memory_desc_get_size(s));
    return memory(m, s);
}

/* The boundary of an operand whose plain layout is user_md and whose primitive layout is
 * prim_md; sum: the reorder back adds to the user's array. */
static int boundary_init(boundary *b, const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *prim_md, int input,
                         int sum, size_t *bytes)
{
    memset(b, 0, sizeof *b);
    b->input = input;
    if (!memory(&b->user, user_md)) return 0;
    if (dnnl_memory_desc_equal(user_md, prim_md) && !sum) {
        b->prim = b->user;
        return 1;
    }
    if (!memory(&b->prim, prim_md)) return 0;
    b->off = *bytes;
    *bytes += align64(dnnl_memory_desc_get_size(prim_md));
    /* an activation to bf16 nChw16c or back from f32 nChw16c: mxbench's reorder, the faster one */
    dnnl_memory_desc_t c16;
    if (!sum && user_md->ndims == 4 && user_md->dims[1] % 16 == 0 &&
        dnnl_memory_desc_init_by_tag(&c16, 4, user_md->dims, input ? dnnl_bf16 : dnnl_f32, dnnl_nChw16c) ==
            dnnl_success &&
        dnnl_memory_desc_equal(&c16, prim_md)) {
        b->own = 1;
        b->n = (int)user_md->dims[0], b->c = (int)user_md->dims[1], b->hw = (int)(user_md->dims[2] * user_md->dims[3]);
        return 1;
    }
    dnnl_primitive_attr_t a = mx_dnnl_user_scratch_attr(sum);
    dnnl_primitive_desc_t rpd;
    const dnnl_engine_t eng = mx_dnnl_engine();
    const int ok = a && (input ? dnnl_reorder_primitive_desc_create(&rpd, user_md, eng, prim_md, eng, a)
                               : dnnl_reorder_primitive_desc_create(&rpd, prim_md, eng, user_md, eng, a)) ==
                            dnnl_success;
    if (a) dnnl_primitive_attr_destroy(a);
    if (!ok) return 0;
    const int made =
        scratchpad(rpd, &b->rs, &b->rs_off, bytes) && dnnl_primitive_create(&b->reorder, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    return made;
}

static void boundary_free(boundary *b)
{
    if (b->reorder) dnnl_primitive_destroy(b->reorder);
    if (b->rs) dnnl_memory_destroy(b->rs);
    if (b->prim && b->prim != b->user) dnnl_memory_destroy(b->prim);
    if (b->user) dnnl_memory_destroy(b->user);
}

/* The primitive of pd, its scratchpad and its operands' boundaries: q the primitive's
 * queries, user the plain layouts, input/sum per operand. */
static int op_init(op *o, dnnl_primitive_desc_t pd, const int arg[3], const dnnl_query_t q[3],
                   const dnnl_memory_desc_t *user[3], const int input[3], const int sum[3], size_t *bytes)
{
    if (dnnl_primitive_create(&o->p, pd) != dnnl_success) return 0;
    if (!scratchpad(pd, &o->scratch, &o->scratch_off, bytes)) return 0;
    for (int i = 0; i < 3; i++) {
        o->arg[i] = arg[i];
        if (!boundary_init(&o->b[i], user[i], dnnl_primitive_desc_query_md(pd, q[i], 0), input[i], sum[i], bytes))
            return 0;
    }
    o->ready = 1;
    return 1;
}

static void op_free(op *o)
{
    if (o->p) dnnl_primitive_destroy(o->p);
    if (o->scratch) dnnl_memory_destroy(o->scratch);
    for (int i = 0; i < 3; i++) boundary_free(&o->b[i]);
    memset(o, 0, sizeof *o);
}

static void entry_free(entry *e)
{
    op_free(&e->fwd), op_free(&e->bwd_d), op_free(&e->bwd_w);
    if (e->fwd_pd) dnnl_primitive_desc_destroy(e->fwd_pd);
    e->fwd_pd = NULL;
}

/* The plain layouts of the caller's arrays (f32 nchw / oihw) and the primitive's choice of
 * layouts (any) in the types above; forward and backward descriptors of one shape. */
typedef struct {
    dnnl_memory_desc_t src, wei, dst;       /* plain f32 */
    dnnl_memory_desc_t src_h, wei_h, dst_h; /* bf16, any layout: the operands */
    dnnl_memory_desc_t src_f, wei_f, dst_f; /* f32, any layout: the results */
    dnnl_dims_t strides, pad_l, pad_r;
} shapes;

static int shapes_init(shapes *s, const mx_conv_desc *d, int n)
{
    const int pr_h = (d->oh - 1) * d->stride + d->k - d->h - d->pad,
              pr_w = (d->ow - 1) * d->stride + d->k - d->w - d->pad;
    s->strides[0] = s->strides[1] = d->stride;
    s->pad_l[0] = s->pad_l[1] = d->pad;
    s->pad_r[0] = pr_h, s->pad_r[1] = pr_w;
    return md(&s->src, n, d->c, d->h, d->w, dnnl_f32, dnnl_nchw) &&
           md(&s->wei, d->oc, d->c, d->k, d->k, dnnl_f32, dnnl_oihw) &&
           md(&s->dst, n, d->oc, d->oh, d->ow, dnnl_f32, dnnl_nchw) &&
           md(&s->src_h, n, d->c, d->h, d->w, dnnl_bf16, dnnl_format_tag_any) &&
           md(&s->wei_h, d->oc, d->c, d->k, d->k, dnnl_bf16, dnnl_format_tag_any) &&
           md(&s->dst_h, n, d->oc, d->oh, d->ow, dnnl_bf16, dnnl_format_tag_any) &&
           md(&s->src_f, n, d->c, d->h, d->w, dnnl_f32, dnnl_format_tag_any) &&
           md(&s->wei_f, d->oc, d->c, d->k, d->k, dnnl_f32, dnnl_format_tag_any) &&
           md(&s->dst_f, n, d->oc, d->oh, d->ow, dnnl_f32, dnnl_format_tag_any);
}

/* A primitive descriptor of op descriptor cd, scratchpad in user mode; hint: the forward's,
 * for a backward. */
static int pd_create(dnnl_primitive_desc_t *pd, const void *cd, const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_attr_t a = mx_dnnl_user_scratch_attr(0);
    const int ok = a && dnnl_primitive_desc_create(pd, cd, a, mx_dnnl_engine(), hint) == dnnl_success;
    if (a) dnnl_primitive_attr_destroy(a);
    return ok;
}

/* The forward primitive descriptor (bf16 src and weights, f32 dst); also the backward's hint. */
static int fwd_pd(entry *e, const shapes *s)
{
    if (e->fwd_pd) return 1;
    dnnl_convolution_desc_t cd;
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &s->src_h, &s->wei_h,
                                           NULL, &s->dst_f, s->strides, s->pad_l, s->pad_r) != dnnl_success)
        return 0;
    if (!pd_create(&e->fwd_pd, &cd, NULL)) e->fwd_pd = NULL;
    return e->fwd_pd != NULL;
}

static int fwd_init(entry *e)
{
    shapes s;
    size_t bytes = 0;
    if (!shapes_init(&s, &e->d, e->n) || !fwd_pd(e, &s)) return 0;
    const int ok = op_init(&e->fwd, e->fwd_pd, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                           (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
                           (const dnnl_memory_desc_t *[]){&s.src, &s.wei, &s.dst}, (int[]){1, 1, 0}, (int[]){0, 0, 0},
                           &bytes);
    if (bytes > e->bytes) e->bytes = bytes;
    return ok;
}

/* The backward primitives asked for (weight gradient: with_dw, data gradient: with_din), laid
 * out one after the other in the workspace; the weight gradient's runs first and the data
 * gradient's reuses its bf16 copy of the output gradient where both chose the same layout
 * (one reorder fewer). */
static int bwd_init(entry *e, int with_din, int with_dw)
{
    shapes s;
    size_t bytes = 0;
    if (!shapes_init(&s, &e->d, e->n) || !fwd_pd(e, &s)) return 0;
    dnnl_convolution_desc_t wd, dd;
    dnnl_primitive_desc_t wpd = NULL, dpd = NULL;
    int ok = 1;
    if (with_dw)
        ok =
            dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &s.src_h, &s.wei_f, NULL,
                                                        &s.dst_h, s.strides, s.pad_l, s.pad_r) == dnnl_success &&
            pd_create(&wpd, &wd, e->fwd_pd) &&
            op_init(&e->bwd_w, wpd, (int[]){DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
                    (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
                    (const dnnl_memory_desc_t *[]){&s.src, &s.dst, &s.wei}, (int[]){1, 1, 0}, (int[]){0, 0, 1}, &bytes);
    if (ok && with_din)
        ok =
            dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_direct, &s.src_f, &s.wei_h, &s.dst_h,
                                                     s.strides, s.pad_l, s.pad_r) == dnnl_success &&
            pd_create(&dpd, &dd, e->fwd_pd) &&
            op_init(&e->bwd_d, dpd, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                    (dnnl_query_t[]){dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
                    (const dnnl_memory_desc_t *[]){&s.dst, &s.wei, &s.src}, (int[]){1, 1, 0}, (int[]){0, 0, 0}, &bytes);
    if (wpd) dnnl_primitive_desc_destroy(wpd);
    if (dpd) dnnl_primitive_desc_destroy(dpd);
    const dnnl_memory_desc_t *wg, *dg;
    e->ddst_shared = ok && with_din && with_dw && e->bwd_w.b[1].prim != e->bwd_w.b[1].user &&
                     e->bwd_d.b[0].prim != e->bwd_d.b[0].user &&
                     dnnl_memory_get_memory_desc(e->bwd_w.b[1].prim, &wg) == dnnl_success &&
                     dnnl_memory_get_memory_desc(e->bwd_d.b[0].prim, &dg) == dnnl_success &&
                     dnnl_memory_desc_equal(wg, dg);
    if (e->ddst_shared) e->bwd_d.b[0].off = e->bwd_w.b[1].off;
    if (bytes > e->bytes) e->bytes = bytes;
    return ok;
}

static void set_handle(dnnl_memory_t m, void *p, dnnl_stream_t s)
{
    if (m) (void)dnnl_memory_set_data_handle_v2(m, p, s);
}

static int exec_reorder(const boundary *b, dnnl_stream_t s)
{
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_FROM, b->input ? b->user : b->prim},
                            {DNNL_ARG_TO, b->input ? b->prim : b->user},
                            {DNNL_ARG_SCRATCHPAD, b->rs}};
    return dnnl_primitive_execute(b->reorder, s, b->rs ? 3 : 2, a) == dnnl_success;
}

/* An operand's reorder: mxbench's or oneDNN's. */
static int reorder(mx_backend *be, const boundary *b, char *ws, void *user, dnnl_stream_t s)
{
    if (!b->own) return exec_reorder(b, s);
    if (b->input) mx_cpu_nchw_to_c16_bf16(be, b->n, b->c, b->hw, (uint16_t *)(ws + b->off), user);
    else mx_cpu_c16_to_nchw(be, b->n, b->c, b->hw, user, (const float *)(ws + b->off));
    return 1;
}

/* Whether each operand of o that `given` flags (bit i: operand i) is an activation the
 * primitive takes in nChw16c, so that the caller may hand it over in that layout. */
static int given_ok(const op *o, unsigned given)
{
    for (int i = 0; i < 3; i++)
        if ((given >> i & 1) && !o->b[i].own) return 0;
    return 1;
}

/* Runs o on the caller's arrays ptr[] with workspace ws; input operand `reuse` (-1: none) is
 * in its blocked copy already; the operands `given` flags are the caller's arrays in the
 * primitive's layout (given_ok), read or written there without a reorder. */
static int op_run(mx_backend *be, const op *o, char *ws, void *const ptr[3], dnnl_stream_t s, int reuse, unsigned given)
{
    dnnl_exec_arg_t a[4];
    int na = 0;
    for (int i = 0; i < 3; i++) {
        const boundary *b = &o->b[i];
        set_handle(b->user, ptr[i], s);
        if (b->prim != b->user) set_handle(b->prim, (given >> i & 1) ? ptr[i] : ws + b->off, s);
        set_handle(b->rs, ws + b->rs_off, s);
        a[na++] = (dnnl_exec_arg_t){o->arg[i], b->prim};
    }
    set_handle(o->scratch, ws + o->scratch_off, s);
    if (o->scratch) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, o->scratch};
    for (int i = 0; i < 3; i++)
        if (o->b[i].input && o->b[i].prim != o->b[i].user && i != reuse && !(given >> i & 1) &&
            !reorder(be, &o->b[i], ws, ptr[i], s))
            return 0;
    if (dnnl_primitive_execute(o->p, s, na, a) != dnnl_success) return 0;
    for (int i = 0; i < 3; i++)
        if (!o->b[i].input && o->b[i].prim != o->b[i].user && !(given >> i & 1) &&
            !reorder(be, &o->b[i], ws, ptr[i], s))
            return 0;
    return 1;
}

static int same_desc(const mx_conv_desc *a, const mx_conv_desc *b)
{
    return a->c == b->c && a->h == b->h && a->w == b->w && a->oc == b->oc && a->k == b->k && a->stride == b->stride &&
           a->pad == b->pad && a->oh == b->oh && a->ow == b->ow;
}

static void cache_free(cache *c)
{
    for (int i = 0; i < c->count; i++) entry_free(&c->e[i]);
    if (c->stream) dnnl_stream_destroy(c->stream);
    free(c);
}

/* The device's entry for (d, n), created on first use; NULL where oneDNN does not run it. */
static entry *lookup(mx_backend *be, const mx_conv_desc *d, int n)
{
    cache *c = be->ctx;
    if (!c) {
        if (!mx_dnnl_engine() || !(c = calloc(1, sizeof *c))) return NULL;
        if (dnnl_stream_create(&c->stream, mx_dnnl_engine(), dnnl_stream_default_flags) != dnnl_success) {
            free(c);
            return NULL;
        }
        be->ctx = c;
    }
    for (int i = 0; i < c->count; i++)
        if (c->e[i].n == n && same_desc(&c->e[i].d, d)) return c->e[i].failed ? NULL : &c->e[i];
    if (c->count == MAX_ENTRIES) return NULL;
    entry *e = &c->e[c->count++];
    memset(e, 0, sizeof *e);
    e->d = *d, e->n = n;
    return e;
}

/* Marks e as not oneDNN's (its primitives freed): the caller runs the own kernels. */
static void give_up(entry *e)
{
    entry_free(e);
    e->failed = 1;
}

void mx_cpu_dnnl_close(mx_backend *be)
{
    if (be->ctx) cache_free(be->ctx);
    be->ctx = NULL;
}

/* In this build: the engine itself is made on first use (lookup), so that `mxbench info` and a
 * run's record do not start oneDNN; a failure there sends every shape to mxbench's kernels. */
int mx_cpu_dnnl_available(void) { return 1; }

/* Runs stmt with the device's thread count as oneDNN's. */
#define WITH_DEVICE_THREADS(be, stmt)              \
    do {                                           \
        const int prev_ = omp_get_max_threads();   \
        omp_set_num_threads((be)->nthreads);       \
        stmt;                                      \
        omp_set_num_threads(prev_);                \
    } while (0)

/* The layouts a caller hands over (MX_DNNL_C16_*) as op_run's `given` bits of each op. */
static unsigned fwd_given(unsigned c16) { return (c16 & MX_DNNL_C16_IN ? 1u : 0) | (c16 & MX_DNNL_C16_OUT ? 4u : 0); }
static unsigned bwd_w_given(unsigned c16)
{
    return (c16 & MX_DNNL_C16_IN ? 1u : 0) | (c16 & MX_DNNL_C16_DOUT ? 2u : 0);
}
static unsigned bwd_d_given(unsigned c16)
{
    return (c16 & MX_DNNL_C16_DOUT ? 1u : 0) | (c16 & MX_DNNL_C16_DIN ? 4u : 0);
}

/* The forward and backward of one entry: 0 where its primitives cannot be made (nothing has
 * been written: the caller runs the own kernels), -1 where they do not take the layouts c16
 * asks for (nothing written either), else 1, with the sticky error set if oneDNN failed
 * while running (the weight gradient may be added already, so no fallback). */
static int forward(mx_backend *be, entry *e, float *out, const void *in, const float *w, unsigned c16)
{
    if (!e->fwd.ready && !fwd_init(e)) return 0;
    if (!given_ok(&e->fwd, fwd_given(c16))) return -1;
    char *ws = mx_backend_scratch(be, e->bytes);
    cache *c = be->ctx;
    void *const ptr[3] = {(void *)in, (void *)w, out};
    if (ws &&
        !(op_run(be, &e->fwd, ws, ptr, c->stream, -1, fwd_given(c16)) && dnnl_stream_wait(c->stream) == dnnl_success))
        mx_backend_fail(be, MX_ERUNTIME, "oneDNN's bf16 convolution (forward) failed");
    return 1;
}

static int backward(mx_backend *be, entry *e, float *din, float *dw, const void *dout, const void *in, const float *w,
                    unsigned c16)
{
    if ((din && !e->bwd_d.ready) || (dw && !e->bwd_w.ready)) {
        /* those asked and those made before, anew and laid out together */
        const int with_din = din || e->bwd_d.ready, with_dw = dw || e->bwd_w.ready;
        op_free(&e->bwd_w), op_free(&e->bwd_d);
        if (!bwd_init(e, with_din, with_dw)) return 0;
    }
    if ((dw && !given_ok(&e->bwd_w, bwd_w_given(c16))) || (din && !given_ok(&e->bwd_d, bwd_d_given(c16)))) return -1;
    char *ws = mx_backend_scratch(be, e->bytes);
    if (!ws) return 1; /* the sticky error says why */
    cache *c = be->ctx;
    void *const wptr[3] = {(void *)in, (void *)dout, dw}, *const dptr[3] = {(void *)dout, (void *)w, din};
    const int ok =
        (!dw || op_run(be, &e->bwd_w, ws, wptr, c->stream, -1, bwd_w_given(c16))) &&
        (!din || op_run(be, &e->bwd_d, ws, dptr, c->stream, dw && e->ddst_shared ? 0 : -1, bwd_d_given(c16))) &&
        dnnl_stream_wait(c->stream) == dnnl_success;
    if (!ok) mx_backend_fail(be, MX_ERUNTIME, "oneDNN's bf16 convolution (backward) failed");
    return 1;
}

int mx_cpu_conv_dnnl_forward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *out, const void *in,
                                  const float *w, unsigned c16)
{
    entry *e = lookup(be, d, n);
    if (!e) return 0;
    int done;
    WITH_DEVICE_THREADS(be, done = forward(be, e, out, in, w, c16));
    if (!done) give_up(e);
    return done > 0;
}

int mx_cpu_conv_dnnl_backward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const void *dout,
                                   const void *in, const float *w, unsigned c16)
{
    entry *e = lookup(be, d, n);
    if (!e) return 0;
    int done;
    WITH_DEVICE_THREADS(be, done = backward(be, e, din, dw, dout, in, w, c16));
    if (!done) give_up(e);
    return done > 0;
}

/* Whether the primitives of (d, n), made here if need be, take the forward's and the whole
 * backward's operands in the layouts asked (fwd_c16, bwd_c16); nothing runs. */
static int takes(mx_backend *be, entry *e, unsigned fwd_c16, unsigned bwd_c16)
{
    if (!e->fwd.ready && !fwd_init(e)) return 0;
    if (!e->bwd_w.ready || !e->bwd_d.ready) {
        op_free(&e->bwd_w), op_free(&e->bwd_d);
        if (!bwd_init(e, 1, 1)) return 0;
    }
    return given_ok(&e->fwd, fwd_given(fwd_c16)) && given_ok(&e->bwd_w, bwd_w_given(bwd_c16)) &&
                   given_ok(&e->bwd_d, bwd_d_given(bwd_c16))
               ? 1
               : -1;
}

int mx_cpu_conv_dnnl_takes_c16(mx_backend *be, const mx_conv_desc *d, int n, unsigned fwd_c16, unsigned bwd_c16)
{
    entry *e = lookup(be, d, n);
    if (!e) return 0;
    int ok;
    WITH_DEVICE_THREADS(be, ok = takes(be, e, fwd_c16, bwd_c16));
    if (!ok) give_up(e);
    return ok > 0;
}

int mx_cpu_conv_dnnl_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in, const float *w)
{
    return mx_cpu_conv_dnnl_forward_c16(be, d, n, out, in, w, 0);
}

int mx_cpu_conv_dnnl_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const float *dout,
                              const float *in, const float *w)
{
    return mx_cpu_conv_dnnl_backward_c16(be, d, n, din, dw, dout, in, w, 0);
}

#else /* no oneDNN in this build */

int mx_cpu_dnnl_available(void) { return 0; }
void mx_cpu_dnnl_close(mx_backend *be) {}
int mx_cpu_conv_dnnl_forward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *out, const void *in,
                                  const float *w, unsigned c16)
{
    return 0;
}
int mx_cpu_conv_dnnl_backward_c16(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const void *dout,
                                   const void *in, const float *w, unsigned c16)
{
    return 0;
}
int mx_cpu_conv_dnnl_takes_c16(mx_backend *be, const mx_conv_desc *d, int n, unsigned fwd_c16, unsigned bwd_c16)
{
    return 0;
}
int mx_cpu_conv_dnnl_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in, const float *w)
{
    return 0;
}
int mx_cpu_conv_dnnl_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw, const float *dout,
                              const float *in, const float *w)
{
    return 0;
}

#endif

/* Where oneDNN takes a convolution, by the measurement above: 3x3 kernels with channel
 * counts in whole blocks of 16 (its bf16 layouts' block; resnet18's 64-512) under bf16
 * math on bf16 units; the backward only where the output has 32 pixels or more. On 4x4
 * outputs (resnet18's last stage, 512 channels) oneDNN's weight gradient is slow (far
 * slower than its forward) and the reorders of 2.4M weights and their gradient add to it: that
 * stage's two blocks ran backward slowest with oneDNN's whole backward, faster with mxbench's,
 * fastest with oneDNN's input gradient and mxbench's weight gradient, while oneDNN's forward
 * is the faster there (layer_profile; docs/performance.md, "Choices in the code"). Since the
 * GEMM's narrow kernels (engine/cpu/gemm.c: a 4x4 map is one Winograd tile a sample),
 * Winograd's whole backward beats that mix where it applies (stride 1); engine/cpu/conv.c
 * takes it there, and keeps oneDNN's input gradient with the GEMM's weight gradient for the
 * stage's stride-2 convolution. */
int mx_cpu_conv_dnnl_applies(const mx_backend *be, const mx_conv_desc *d)
{
    return be->math == MX_BF16 && mx_cpu_bf16_native() && d->k == 3 && d->c % 16 == 0 && d->oc % 16 == 0 &&
           mx_cpu_dnnl_available();
}

int mx_cpu_conv_dnnl_applies_backward(const mx_backend *be, const mx_conv_desc *d)
{
    return mx_cpu_conv_dnnl_applies(be, d) && d->oh * d->ow >= 32;
}
