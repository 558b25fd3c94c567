/* The measurement behind the choice of convolution implementation: mxbench's own CPU kernels
 * (through the backend table: direct, Winograd or im2col + GEMM, as a run takes them) against
 * oneDNN on lenet's and resnet18's convolution shapes, forward + backward-data +
 * backward-weights, on the same thread count. --bf16 compares them under AMP bf16: mxbench
 * with its math set to bf16 (its bf16 kernels where the CPU has them), oneDNN's primitives on
 * bf16 src, weights and dst (f32 weight gradient) from mxbench's f32 tensors, the conversions
 * counted as the reorders they are. mxbench's column is the engine's dispatch, which under bf16
 * math takes oneDNN itself for 3x3 shapes where the build has it (engine/cpu/conv_dnnl.c):
 * MXBENCH_CONV=nodnnl compares mxbench's own kernels, as scripts/bench.sh does.
 * Usage: conv_bench [--threads T] [--reps R] [--model lenet|resnet18|all] [--min-ms MS] [--bf16] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHK(call)                                                                                             \
    do {                                                                                                      \
        dnnl_status_t st_ = (call);                                                                           \
        if (st_ != dnnl_success) {                                                                            \
            fprintf(stderr, "conv_bench: %s failed: %s (line %d)\n", #call, dnnl_status2str(st_), __LINE__); \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---- the shapes: NCHW, square kernels; count = occurrences per forward pass of the model;
 * first = the network's first layer, which needs no gradient with respect to its input
 * (mxbench passes din = NULL there, so neither side computes backward-data). */
typedef struct {
    const char *model, *name;
    int n, c, h, w, oc, k, stride, pad, count, first;
} shape;

static const shape shapes[] = {
    {"lenet", "conv1 5x5", 128, 1, 28, 28, 20, 5, 1, 0, 1, 1},
    {"lenet", "conv2 5x5", 128, 20, 12, 12, 50, 5, 1, 0, 1, 0},
    {"resnet18", "stem 3x3", 32, 1, 28, 28, 64, 3, 1, 1, 1, 1},
    {"resnet18", "s1 3x3", 32, 64, 28, 28, 64, 3, 1, 1, 4, 0},
    {"resnet18", "s2 3x3/2", 32, 64, 28, 28, 128, 3, 2, 1, 1, 0},
    {"resnet18", "s2 1x1/2", 32, 64, 28, 28, 128, 1, 2, 0, 1, 0},
    {"resnet18", "s2 3x3", 32, 128, 14, 14, 128, 3, 1, 1, 3, 0},
    {"resnet18", "s3 3x3/2", 32, 128, 14, 14, 256, 3, 2, 1, 1, 0},
    {"resnet18", "s3 1x1/2", 32, 128, 14, 14, 256, 1, 2, 0, 1, 0},
    {"resnet18", "s3 3x3", 32, 256, 7, 7, 256, 3, 1, 1, 3, 0},
    {"resnet18", "s4 3x3/2", 32, 256, 7, 7, 512, 3, 2, 1, 1, 0},
    {"resnet18", "s4 1x1/2", 32, 256, 7, 7, 512, 1, 2, 0, 1, 0},
    {"resnet18", "s4 3x3", 32, 512, 4, 4, 512, 3, 1, 1, 3, 0},
};
#define NSHAPES ((int)(sizeof shapes / sizeof *shapes))

/* ---- oneDNN: one primitive with the reorders at its boundaries */

typedef struct {
    dnnl_memory_t user, prim; /* prim == user when the layouts agree */
    dnnl_primitive_t reorder; /* user -> prim for inputs, prim -> user for outputs; NULL if none */
    int input;
} boundary;

typedef struct {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    int nargs;
    dnnl_exec_arg_t args[3];
    boundary b[3];
    const char *impl;
} dnnl_op;

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static dnnl_data_type_t prim_type = dnnl_f32; /* the primitives' src, weights, dst: --bf16 makes it bf16 */

static void md_typed(dnnl_memory_desc_t *md, int64_t a, int64_t b, int64_t c, int64_t d, dnnl_format_tag_t tag,
                     dnnl_data_type_t t)
{
    const dnnl_dims_t dims = {a, b, c, d};
    CHK(dnnl_memory_desc_init_by_tag(md, 4, dims, t, tag));
}

static void md_plain(dnnl_memory_desc_t *md, int64_t a, int64_t b, int64_t c, int64_t d, dnnl_format_tag_t tag)
{
    md_typed(md, a, b, c, d, tag, dnnl_f32);
}

static void make_boundary(boundary *b, const dnnl_memory_desc_t *user_md, float *host,
                          const dnnl_memory_desc_t *prim_md, int input)
{
    memset(b, 0, sizeof *b);
    b->input = input;
    CHK(dnnl_memory_create(&b->user, user_md, eng, host));
    if (dnnl_memory_desc_equal(user_md, prim_md)) {
        b->prim = b->user;
        return;
    }
    CHK(dnnl_memory_create(&b->prim, prim_md, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    if (input) CHK(dnnl_reorder_primitive_desc_create(&rpd, user_md, eng, prim_md, eng, NULL));
    else CHK(dnnl_reorder_primitive_desc_create(&rpd, prim_md, eng, user_md, eng, NULL));
    CHK(dnnl_primitive_create(&b->reorder, rpd));
    CHK(dnnl_primitive_desc_destroy(rpd));
}

static void finish_op(dnnl_op *op, const int arg[3], const dnnl_query_t q[3], const dnnl_memory_desc_t *user[3],
                      float *host[3], const int input[3])
{
    CHK(dnnl_primitive_create(&op->p, op->pd));
    CHK(dnnl_primitive_desc_query(op->pd, dnnl_query_impl_info_str, 0, &op->impl));
    op->nargs = 3;
    for (int i = 0; i < 3; i++) {
        const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(op->pd, q[i], 0);
        make_boundary(&op->b[i], user[i], host[i], pmd, input[i]);
        op->args[i] = (dnnl_exec_arg_t){arg[i], op->b[i].prim};
    }
}

static void exec_reorder(const boundary *b)
{
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, b->input ? b->user : b->prim}, {DNNL_ARG_TO, b->input ? b->prim : b->user}};
    CHK(dnnl_primitive_execute(b->reorder, strm, 2, a));
}

/* Runs one op; adds the convolution primitive's time to *core and the time with the
 * boundary reorders to *total. */
static void run_op(const dnnl_op *op, double *core, double *total)
{
    const double t0 = now();
    for (int i = 0; i < 3; i++)
        if (op->b[i].input && op->b[i].reorder) exec_reorder(&op->b[i]);
    CHK(dnnl_stream_wait(strm));
    const double t1 = now();
    CHK(dnnl_primitive_execute(op->p, strm, op->nargs, op->args));
    CHK(dnnl_stream_wait(strm));
    const double t2 = now();
    for (int i = 0; i < 3; i++)
        if (!op->b[i].input && op->b[i].reorder) exec_reorder(&op->b[i]);
    CHK(dnnl_stream_wait(strm));
    const double t3 = now();
    *core += t2 - t1;
    *total += t3 - t0;
}

static void destroy_op(dnnl_op *op)
{
    if (!op->p) return;
    for (int i = 0; i < 3; i++) {
        if (op->b[i].reorder) dnnl_primitive_destroy(op->b[i].reorder);
        if (op->b[i].prim != op->b[i].user) dnnl_memory_destroy(op->b[i].prim);
        dnnl_memory_destroy(op->b[i].user);
    }
    dnnl_primitive_destroy(op->p);
    dnnl_primitive_desc_destroy(op->pd);
    memset(op, 0, sizeof *op);
}

/* The three passes of one convolution; plain = 1 forces the nchw/oihw user layouts on the
 * primitives (no reorders), plain = 0 lets oneDNN choose (format_tag any). */
typedef struct {
    dnnl_op fwd, bwd_d, bwd_w;
} dnnl_conv;

static void dnnl_conv_create(dnnl_conv *cv, const shape *s, int oh, int ow, int plain, float *x, float *w, float *y,
                             float *dy, float *dx, float *dw)
{
    memset(cv, 0, sizeof *cv);
    dnnl_memory_desc_t src_u, w_u, dst_u, src_p, w_p, dst_p;
    md_plain(&src_u, s->n, s->c, s->h, s->w, dnnl_nchw);
    md_plain(&w_u, s->oc, s->c, s->k, s->k, dnnl_oihw);
    md_plain(&dst_u, s->n, s->oc, oh, ow, dnnl_nchw);
    dnnl_memory_desc_t dw_p; /* the weight gradient: f32, as AMP keeps it */
    md_typed(&src_p, s->n, s->c, s->h, s->w, plain ? dnnl_nchw : dnnl_format_tag_any, prim_type);
    md_typed(&w_p, s->oc, s->c, s->k, s->k, plain ? dnnl_oihw : dnnl_format_tag_any, prim_type);
    md_typed(&dst_p, s->n, s->oc, oh, ow, plain ? dnnl_nchw : dnnl_format_tag_any, prim_type);
    md_plain(&dw_p, s->oc, s->c, s->k, s->k, plain ? dnnl_oihw : dnnl_format_tag_any);
    /* Right padding that reproduces mxbench's output size floor((h + 2p - k) / s) + 1. */
    int pr = (oh - 1) * s->stride + s->k - s->h - s->pad;
    if (pr < 0) pr = 0;
    const dnnl_dims_t strides = {s->stride, s->stride}, pl = {s->pad, s->pad}, pad_r = {pr, pr};

    dnnl_convolution_desc_t fd, bdd, bwd;
    CHK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_p, &w_p, NULL,
                                           &dst_p, strides, pl, pad_r));
    CHK(dnnl_primitive_desc_create(&cv->fwd.pd, &fd, NULL, eng, NULL));
    finish_op(&cv->fwd, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
              (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
              (const dnnl_memory_desc_t *[]){&src_u, &w_u, &dst_u}, (float *[]){x, w, y}, (int[]){1, 1, 0});

    if (!s->first) {
        CHK(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src_p, &w_p, &dst_p, strides, pl,
                                                     pad_r));
        CHK(dnnl_primitive_desc_create(&cv->bwd_d.pd, &bdd, NULL, eng, cv->fwd.pd));
        finish_op(&cv->bwd_d, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                  (dnnl_query_t[]){dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
                  (const dnnl_memory_desc_t *[]){&dst_u, &w_u, &src_u}, (float *[]){dy, w, dx}, (int[]){1, 1, 0});
    }

    CHK(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src_p, &dw_p, NULL, &dst_p, strides,
                                                    pl, pad_r));
    CHK(dnnl_primitive_desc_create(&cv->bwd_w.pd, &bwd, NULL, eng, cv->fwd.pd));
    finish_op(&cv->bwd_w, (int[]){DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
              (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
              (const dnnl_memory_desc_t *[]){&src_u, &dst_u, &w_u}, (float *[]){x, dy, dw}, (int[]){1, 1, 0});
}

static void dnnl_conv_destroy(dnnl_conv *cv)
{
    destroy_op(&cv->fwd);
    destroy_op(&cv->bwd_d);
    destroy_op(&cv->bwd_w);
}

/* ---- helpers */

static float *falloc(size_t n)
{
    float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
    if (!p) {
        fprintf(stderr, "conv_bench: out of memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

static void frand(float *p, size_t n, unsigned *seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = scale * ((float)(*seed >> 8) / (float)(1u << 24) - 0.5f);
    }
}

/* max |a - b| / max |b|: elementwise relative differences are meaningless near zero. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]);
        if (d > num || isnan(d)) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { IMPL_MX, IMPL_DNNL, IMPL_NCHW, NIMPL };           /* what is run */
enum { COL_MX, COL_DNNL, COL_CORE, COL_NCHW, NCOL };     /* what is reported */
enum { PH_FWD, PH_BWD_D, PH_BWD_W, NPH };
static const char *col_name[NCOL] = {"mxbench", "onednn", "onednn-core", "onednn-nchw"};

#define MAX_REPS 64

typedef struct {
    double ms[NCOL][NPH]; /* median per phase, ms */
    double flops[NPH];
    double err[2];        /* max rel diff: onednn (any), onednn (nchw) */
    const char *impl[2][NPH];
} result;

int main(int argc, char **argv)
{
    int threads = omp_get_num_procs(), reps = 7;
    double min_ms = 30;
    const char *model = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--min-ms") && i + 1 < argc) min_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--bf16")) prim_type = dnnl_bf16;
        else {
            fprintf(stderr,
                    "usage: %s [--threads T] [--reps R (1..%d)] [--model lenet|resnet18|all] [--min-ms MS] [--bf16]\n",
                    argv[0], MAX_REPS);
            return 2;
        }
    }
    if (threads < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "conv_bench: threads %d, reps %d: need threads >= 1 and reps in 1..%d\n", threads, reps,
                MAX_REPS);
        return 2;
    }
    omp_set_num_threads(threads); /* oneDNN (OpenMP runtime) takes its team size from here */
    mx_cpu_set_blas_threads(threads);
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, threads) < 0) {
        fprintf(stderr, "conv_bench: cannot create the CPU backend\n");
        return 1;
    }
    if (prim_type == dnnl_bf16) be->math = MX_BF16; /* as AMP's layers run */
    CHK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    const dnnl_version_t *ver = dnnl_version();
    printf("# conv_bench: %d thread(s); oneDNN %d.%d.%d (cpu runtime OpenMP), %s; %s%s%s\n# mxbench's paths: %s\n",
           threads, ver->major, ver->minor, ver->patch, mx_cpu_blas_info(),
           prim_type == dnnl_bf16 ? "bf16 (mxbench: AMP bf16 math on its " : "f32",
           prim_type == dnnl_bf16 ? mx_cpu_amp_kernels(MX_BF16) : "", prim_type == dnnl_bf16 ? " kernels)" : "",
           mx_cpu_conv_paths());
    printf(
        "# each figure: median of %d interleaved repeats of >= %.0f ms; forward + backward-data + backward-weights,\n"
        "# no bias; first layers (din = NULL in mxbench) have no backward-data. 'onednn' includes the reorders\n"
        "# from/to mxbench's nchw/oihw layouts at every call; 'onednn-core' is the same run without them;\n"
        "# 'onednn-nchw' forces the plain layouts on the primitives. x = speed relative to mxbench.\n",
        reps, min_ms);

    result res[NSHAPES];
    int ran[NSHAPES] = {0};
    printf("\n%-9s %-10s %4s %11s %7s | %-22s | %-22s | %-22s | %-22s\n", "model", "layer", "n", "c>oc@hxw", "MFLOP",
           "mxbench ms f/bd/bw", "onednn ms f/bd/bw", "onednn-core ms", "onednn-nchw ms");
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &shapes[si];
        if (strcmp(model, "all") && strcmp(model, s->model)) continue;
        mx_conv_desc d = {.c = s->c, .h = s->h, .w = s->w, .oc = s->oc, .k = s->k, .stride = s->stride, .pad = s->pad};
        d.oh = (d.h + 2 * d.pad - d.k) / d.stride + 1;
        d.ow = (d.w + 2 * d.pad - d.k) / d.stride + 1;
        const size_t nx = (size_t)s->n * s->c * s->h * s->w, nw = (size_t)s->oc * s->c * s->k * s->k,
                     ny = (size_t)s->n * s->oc * d.oh * d.ow;
        float *x = falloc(nx), *w = falloc(nw), *dy = falloc(ny);
        float *y_mx = falloc(ny), *dx_mx = falloc(nx), *dw_mx = falloc(nw);
        float *y_d = falloc(ny), *dx_d = falloc(nx), *dw_d = falloc(nw);
        unsigned seed = 12345u + si;
        frand(x, nx, &seed, 2.0f);
        frand(w, nw, &seed, 2.0f / sqrtf((float)s->c * s->k * s->k));
        frand(dy, ny, &seed, 2.0f);
        result *r = &res[si];
        memset(r, 0, sizeof *r);
        const double f = 2.0 * s->n * s->oc * d.oh * d.ow * (double)s->c * s->k * s->k;
        r->flops[PH_FWD] = f;
        r->flops[PH_BWD_D] = s->first ? 0 : f;
        r->flops[PH_BWD_W] = f;

        dnnl_conv dc[2];
        dnnl_conv_create(&dc[0], s, d.oh, d.ow, 0, x, w, y_d, dy, dx_d, dw_d);
        dnnl_conv_create(&dc[1], s, d.oh, d.ow, 1, x, w, y_d, dy, dx_d, dw_d);
        float *din_mx = s->first ? NULL : dx_mx;

        /* ---- agreement first, outside the timed region */
        memset(dw_mx, 0, nw * sizeof(float));
        be->ops->conv2d_forward(be, &d, s->n, y_mx, x, w);
        be->ops->conv2d_backward(be, &d, s->n, din_mx, dw_mx, dy, x, w);
        for (int v = 0; v < 2; v++) {
            double c = 0, t = 0, e;
            memset(y_d, 0, ny * sizeof(float));
            memset(dx_d, 0, nx * sizeof(float));
            memset(dw_d, 0, nw * sizeof(float));
            run_op(&dc[v].fwd, &c, &t);
            if (!s->first) run_op(&dc[v].bwd_d, &c, &t);
            run_op(&dc[v].bwd_w, &c, &t);
            e = rel_diff(y_d, y_mx, ny);
            if (!s->first && rel_diff(dx_d, dx_mx, nx) > e) e = rel_diff(dx_d, dx_mx, nx);
            if (rel_diff(dw_d, dw_mx, nw) > e) e = rel_diff(dw_d, dw_mx, nw);
            r->err[v] = e;
            r->impl[v][PH_FWD] = dc[v].fwd.impl;
            r->impl[v][PH_BWD_D] = s->first ? "-" : dc[v].bwd_d.impl;
            r->impl[v][PH_BWD_W] = dc[v].bwd_w.impl;
        }

        /* ---- calibrate: enough iterations that one repeat of mxbench's passes is >= min_ms */
        double t0 = now();
        be->ops->conv2d_forward(be, &d, s->n, y_mx, x, w);
        be->ops->conv2d_backward(be, &d, s->n, din_mx, dw_mx, dy, x, w);
        const double once = now() - t0;
        int iters = (int)ceil(min_ms * 1e-3 / (once > 1e-6 ? once : 1e-6));
        if (iters < 1) iters = 1;

        /* ---- timed repeats, the implementations in rotating order so drift hits all alike */
        double samp[NCOL][NPH][MAX_REPS];
        memset(samp, 0, sizeof samp);
        for (int rep = 0; rep < reps; rep++)
            for (int j = 0; j < NIMPL; j++) {
                const int impl = (rep + j) % NIMPL;
                if (impl == IMPL_MX) {
                    double a = now();
                    for (int it = 0; it < iters; it++) be->ops->conv2d_forward(be, &d, s->n, y_mx, x, w);
                    double b = now();
                    for (int it = 0; it < iters; it++) be->ops->conv2d_backward(be, &d, s->n, NULL, dw_mx, dy, x, w);
                    double c = now();
                    if (!s->first)
                        for (int it = 0; it < iters; it++)
                            be->ops->conv2d_backward(be, &d, s->n, dx_mx, dw_mx, dy, x, w);
                    double e = now();
                    samp[COL_MX][PH_FWD][rep] = (b - a) / iters;
                    samp[COL_MX][PH_BWD_W][rep] = (c - b) / iters;
                    /* backward-data alone is not a backend call: full backward minus weights-only */
                    samp[COL_MX][PH_BWD_D][rep] = s->first ? 0 : fmax(0, (e - c) - (c - b)) / iters;
                } else {
                    const dnnl_conv *cv = &dc[impl == IMPL_DNNL ? 0 : 1];
                    const dnnl_op *ops[NPH] = {&cv->fwd, s->first ? NULL : &cv->bwd_d, &cv->bwd_w};
                    for (int ph = 0; ph < NPH; ph++) {
                        if (!ops[ph]) continue;
                        double core = 0, total = 0;
                        for (int it = 0; it < iters; it++) run_op(ops[ph], &core, &total);
                        if (impl == IMPL_DNNL) {
                            samp[COL_DNNL][ph][rep] = total / iters;
                            samp[COL_CORE][ph][rep] = core / iters;
                        } else {
                            samp[COL_NCHW][ph][rep] = total / iters;
                        }
                    }
                }
            }
        for (int col = 0; col < NCOL; col++)
            for (int ph = 0; ph < NPH; ph++) r->ms[col][ph] = 1e3 * median(samp[col][ph], reps);
        ran[si] = 1;

        char geo[32], cell[NCOL][32];
        snprintf(geo, sizeof geo, "%d>%d@%dx%d", s->c, s->oc, d.oh, d.ow);
        for (int col = 0; col < NCOL; col++)
            snprintf(cell[col], sizeof cell[col], "%6.2f/%6.2f/%6.2f", r->ms[col][PH_FWD], r->ms[col][PH_BWD_D],
                     r->ms[col][PH_BWD_W]);
        printf("%-9s %-10s %4d %11s %7.1f | %-22s | %-22s | %-22s | %-22s\n", s->model, s->name, s->n, geo, f * 1e-6,
               cell[COL_MX], cell[COL_DNNL], cell[COL_CORE], cell[COL_NCHW]);
        fflush(stdout);

        dnnl_conv_destroy(&dc[0]);
        dnnl_conv_destroy(&dc[1]);
        free(x), free(w), free(dy), free(y_mx), free(dx_mx), free(dw_mx), free(y_d), free(dx_d), free(dw_d);
    }

    /* ---- GFLOP/s and ratios per shape, then per model weighted by occurrences */
    printf("\n%-9s %-10s %3s | %8s | %8s %6s | %8s %6s | %8s %6s | %-9s | %s\n", "model", "layer", "cnt", "mxbench",
           "onednn", "x", "core", "x", "nchw", "x", "maxreldif", "onednn impl (fwd / bwd-d / bwd-w; any | nchw)");
    printf("%-9s %-10s %3s | %8s | %8s %6s | %8s %6s | %8s %6s | %-9s |\n", "", "", "", "GFLOP/s", "GFLOP/s", "",
           "GFLOP/s", "", "GFLOP/s", "", "any/nchw");
    const char *models[2] = {"lenet", "resnet18"};
    for (int m = 0; m < 2; m++) {
        double tot_ms[NCOL] = {0}, tot_flops = 0;
        int any = 0;
        for (int si = 0; si < NSHAPES; si++) {
            if (!ran[si] || strcmp(shapes[si].model, models[m])) continue;
            any = 1;
            const result *r = &res[si];
            double fl = 0, ms[NCOL] = {0};
            for (int ph = 0; ph < NPH; ph++) fl += r->flops[ph];
            for (int col = 0; col < NCOL; col++)
                for (int ph = 0; ph < NPH; ph++) ms[col] += r->ms[col][ph];
            tot_flops += shapes[si].count * fl;
            for (int col = 0; col < NCOL; col++) tot_ms[col] += shapes[si].count * ms[col];
            printf("%-9s %-10s %3d | %8.1f | %8.1f %5.2fx | %8.1f %5.2fx | %8.1f %5.2fx | %.0e/%.0e | %s / %s / %s | "
                   "%s / %s / %s\n",
                   shapes[si].model, shapes[si].name, shapes[si].count, fl / ms[COL_MX] * 1e-6,
                   fl / ms[COL_DNNL] * 1e-6, ms[COL_MX] / ms[COL_DNNL], fl / ms[COL_CORE] * 1e-6,
                   ms[COL_MX] / ms[COL_CORE], fl / ms[COL_NCHW] * 1e-6, ms[COL_MX] / ms[COL_NCHW], r->err[0], r->err[1],
                   r->impl[0][PH_FWD], r->impl[0][PH_BWD_D], r->impl[0][PH_BWD_W], r->impl[1][PH_FWD],
                   r->impl[1][PH_BWD_D], r->impl[1][PH_BWD_W]);
        }
        if (!any) continue;
        printf("%-9s %-10s %3s | %8.1f | %8.1f %5.2fx | %8.1f %5.2fx | %8.1f %5.2fx | (all convolutions of one "
               "training step, %.1f ms in mxbench)\n",
               models[m], "TOTAL", "", tot_flops / tot_ms[COL_MX] * 1e-6, tot_flops / tot_ms[COL_DNNL] * 1e-6,
               tot_ms[COL_MX] / tot_ms[COL_DNNL], tot_flops / tot_ms[COL_CORE] * 1e-6,
               tot_ms[COL_MX] / tot_ms[COL_CORE], tot_flops / tot_ms[COL_NCHW] * 1e-6,
               tot_ms[COL_MX] / tot_ms[COL_NCHW], tot_ms[COL_MX]);
        /* One parseable line per model for scripts. */
        printf("CONV_TOTAL model=%s threads=%d step_conv_gflop=%.3f", models[m], threads, tot_flops * 1e-9);
        for (int col = 0; col < NCOL; col++)
            printf(" %s_ms=%.2f %s_gflops=%.1f", col_name[col], tot_ms[col], col_name[col],
                   tot_flops / tot_ms[col] * 1e-6);
        printf("\n");
    }
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    mx_backend_destroy(be);
    return 0;
}
