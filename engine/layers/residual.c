/* Residual basic block (He et al. 2016): relu(bn(conv3x3(relu(bn(conv3x3 x)))) + shortcut),
 * where the shortcut is x itself or, when the stride or the channel count changes, a 1x1
 * convolution with that stride followed by batch norm. Built from the other layers; its
 * saved state holds the sub-layers' states and outputs, so a context owns all of it. Where
 * the backend has the fused kernels (and MXBENCH_FUSE is not off), the inner batch norm and
 * relu run as one, each way: the batch norm's output is then never written (nor kept), and
 * the relu's trip through memory is saved (resnet18's relu passes had taken a small but
 * measurable share of a step: docs/performance.md, "Choices in the code").
 * Where it also has residual_branch_* (the CPU's), training hands it the main branch, conv ->
 * batch norm -> relu -> conv -> batch norm, to run in its own layouts (engine/cpu/res_branch.c under
 * bf16), and runs the layers one by one where it declines. */
#include "engine/backend/switches.h"
#include "layer.h"
#include "base/status.h"

#include <stdint.h>

enum { C1, B1, R1, C2, B2, PC, PB, NSUB };

typedef struct {
    mx_layer sub[NSUB];
    int project;
    int fuse;  /* B1 and R1 run as one (mx_bn_relu_forward/_backward) */
    int branch; /* the backend may run C1..B2 as one in training (residual_branch_*) */
} residual;

/* Where one call's saved state lies: laid out from n (see engine/layers/layer.h). */
typedef struct {
    void *sub[NSUB];  /* sub-layer states (NULL when a sub-layer keeps none) */
    float *act[NSUB]; /* outputs of each sub-layer (R1's feeds C2); PC/PB only if project; B2's
                       * is read by the forward alone, which writes it into g[0] */
    float *g[3];      /* activation-gradient workspaces of backward */
    float *keep0;     /* branch: room for the block's input as 16-bit values (residual_branch_*) */
} res_state;

static int nsub(const residual *r) { return r->project ? NSUB : PC; }

/* Bytes of the state for n samples; with base non-NULL also fills st with the pointers. */
static size_t res_layout(const mx_layer *l, int n, char *base, res_state *st)
{
    const residual *r = l->priv;
    size_t off = 0, at;
#define RES_TAKE(bytes) (at = off, off += mx_state_align(bytes), base ? (void *)(base + at) : NULL)
    for (int i = 0; i < nsub(r); i++) {
        const size_t sb = mx_layer_state_bytes(&r->sub[i], n);
        st->sub[i] = sb ? RES_TAKE(sb) : NULL;
        st->act[i] =
            (i == B1 && r->fuse) || i == B2 ? NULL : RES_TAKE(sizeof(float) * n * mx_shape_size(r->sub[i].out));
    }
    const size_t in = mx_shape_size(l->in), out = mx_shape_size(l->out);
    for (int k = 0; k < 3; k++) st->g[k] = RES_TAKE(sizeof(float) * n * (in > out ? in : out));
    st->keep0 = r->branch ? RES_TAKE(sizeof(uint16_t) * n * in) : NULL;
#undef RES_TAKE
    return off;
}

static size_t residual_state_bytes(const mx_layer *l, int max_batch)
{
    res_state st;
    return res_layout(l, max_batch, NULL, &st);
}

static int residual_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    residual *r = l->priv;
    const int oc = spec->units, stride = spec->stride ? spec->stride : 1;
    if (oc < 1) return mx_error(MX_EINVAL, "residual: channels %d must be at least 1", oc);
    const mx_layer_spec specs[NSUB] = {
        [C1] = {.kind = "conv2d", .units = oc, .k = 3, .stride = stride, .pad = 1},
        [B1] = {.kind = "batchnorm"},
        [R1] = {.kind = "relu"},
        [C2] = {.kind = "conv2d", .units = oc, .k = 3, .stride = 1, .pad = 1},
        [B2] = {.kind = "batchnorm"},
        [PC] = {.kind = "conv2d", .units = oc, .k = 1, .stride = stride, .pad = 0},
        [PB] = {.kind = "batchnorm"},
    };
    r->project = stride != 1 || oc != l->in.c;
    const mx_backend *be = mx_builder_backend(b);
    r->fuse = mx_switch_value(MX_SWITCH_FUSE) != MX_SW_FUSE_OFF && mx_bn_relu_fusable(be);
    r->branch = r->fuse && be->ops->residual_branch_forward && be->ops->residual_branch_backward;
    mx_shape in = l->in;
    for (int i = 0; i < nsub(r); i++) {
        if (i == PC) in = l->in;
        MX_TRY(mx_builder_child(b, &r->sub[i], &specs[i], in));
        in = r->sub[i].out;
    }
    l->out = r->sub[B2].out;
    return MX_OK;
}

/* The block's main branch as a backend's residual_branch_* ops see it, and what they keep. */
static mx_res_branch branch_of(const residual *r, const res_state *st, float *keep[4])
{
    mx_res_branch b;
    mx_conv2d_tensors(&r->sub[C1], &b.c1, &b.w1, &b.dw1);
    mx_conv2d_tensors(&r->sub[C2], &b.c2, &b.w2, &b.dw2);
    mx_bn_tensors(&r->sub[B1], st->sub[B1], &b.bn1, &b.eps, &b.momentum);
    mx_bn_tensors(&r->sub[B2], st->sub[B2], &b.bn2, &b.eps, &b.momentum);
    keep[0] = st->keep0, keep[1] = st->act[C1], keep[2] = st->act[R1], keep[3] = st->act[C2];
    return b;
}

/* Whether the backend ran the main branch (training only), its output in out. */
static int branch_forward(const residual *r, const res_state *st, mx_backend *be, int n, float *out, const float *in)
{
    float *keep[4];
    const mx_res_branch b = branch_of(r, st, keep);
    return be->ops->residual_branch_forward(be, &b, n, out, in, keep);
}

/* Whether the backend ran the main branch's backward (as its forward did), from dout. */
static int branch_backward(const residual *r, const res_state *st, mx_backend *be, int n, float *din,
                           const float *dout, const float *in)
{
    float *keep[4];
    const mx_res_branch b = branch_of(r, st, keep);
    return be->ops->residual_branch_backward(be, &b, n, din, dout, in, (const float *const *)keep, st->g[2], st->g[1]);
}

static void sub_forward(residual *r, const res_state *st, int i, mx_backend *be, int n, const float *in,
                        int training)
{
    r->sub[i].ops->forward(&r->sub[i], be, st->sub[i], n, st->act[i], in, training);
}

static void residual_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                             int training)
{
    residual *r = l->priv;
    res_state st;
    res_layout(l, n, state, &st);
    const size_t count = n * mx_shape_size(l->out);
    float *branch = st.g[0]; /* B2's output: free until backward */
    if (!(training && r->branch && branch_forward(r, &st, be, n, branch, in))) {
        sub_forward(r, &st, C1, be, n, in, training);
        if (r->fuse) mx_bn_relu_forward(&r->sub[B1], be, st.sub[B1], n, st.act[R1], st.act[C1], training);
        else for (int i = B1; i <= R1; i++) sub_forward(r, &st, i, be, n, st.act[i - 1], training);
        sub_forward(r, &st, C2, be, n, st.act[R1], training);
        r->sub[B2].ops->forward(&r->sub[B2], be, st.sub[B2], n, branch, st.act[C2], training);
    }
    if (r->project) {
        sub_forward(r, &st, PC, be, n, in, training);
        sub_forward(r, &st, PB, be, n, st.act[PC], training);
    }
    be->ops->add_relu(be, count, out, branch, r->project ? st.act[PB] : in);
}

static void sub_backward(residual *r, const res_state *st, int i, mx_backend *be, int n, float *din,
                         const float *dout, const float *in)
{
    r->sub[i].ops->backward(&r->sub[i], be, st->sub[i], n, din, dout, in, st->act[i]);
}

static void residual_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                              const float *in, const float *out)
{
    residual *r = l->priv;
    res_state st;
    res_layout(l, n, state, &st);
    const size_t count = n * mx_shape_size(l->out);
    float *dsum = st.g[0], *ga = st.g[1], *gb = st.g[2];
    be->ops->relu_backward(be, count, dsum, dout, out);
    /* Main branch, last to first, alternating two workspaces (unless the backend ran it in
     * its own layouts, as its forward did). */
    if (!(r->branch && branch_backward(r, &st, be, n, din, dsum, in))) {
        sub_backward(r, &st, B2, be, n, ga, dsum, st.act[C2]);
        sub_backward(r, &st, C2, be, n, gb, ga, st.act[R1]);
        if (r->fuse) {
            mx_bn_relu_backward(&r->sub[B1], be, st.sub[B1], n, ga, gb, st.act[C1], st.act[R1]);
            sub_backward(r, &st, C1, be, n, din, ga, in);
        } else {
            sub_backward(r, &st, R1, be, n, ga, gb, st.act[B1]);
            sub_backward(r, &st, B1, be, n, gb, ga, st.act[C1]);
            sub_backward(r, &st, C1, be, n, din, gb, in);
        }
    }
    if (r->project) {
        sub_backward(r, &st, PB, be, n, ga, dsum, st.act[PC]);
        sub_backward(r, &st, PC, be, n, din ? gb : NULL, ga, in);
        if (din) be->ops->add(be, n * mx_shape_size(l->in), din, gb);
    } else if (din) {
        be->ops->add(be, count, din, dsum);
    }
}

static double residual_flops(const mx_layer *l)
{
    const residual *r = l->priv;
    double f = 2.0 * mx_shape_size(l->out); /* the add and the relu */
    for (int i = 0; i < nsub(r); i++)
        if (r->sub[i].ops->flops) f += r->sub[i].ops->flops(&r->sub[i]);
    return f;
}

const mx_layer_ops mx_layer_residual = {
    .kind = "residual",
    .priv_size = sizeof(residual),
    .setup = residual_setup,
    .state_bytes = residual_state_bytes,
    .forward = residual_forward,
    .backward = residual_backward,
    .flops = residual_flops,
};
