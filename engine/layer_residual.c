/* Residual basic block (He et al. 2016): relu(bn(conv3x3(relu(bn(conv3x3 x)))) + shortcut),
 * where the shortcut is x itself or, when the stride or the channel count changes, a 1x1
 * convolution with that stride followed by batch norm. Built from the other layers. */
#include "layer.h"
#include "status.h"

enum { C1, B1, R1, C2, B2, PC, PB, NSUB };

typedef struct {
    mx_layer sub[NSUB];
    int project;
    float *act[NSUB]; /* outputs of each sub-layer (R1's feeds C2); PC/PB only if project */
    float *sum;       /* main branch + shortcut, before the final relu */
    float *g[3];      /* activation-gradient workspaces */
} residual;

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
    const int nsub = r->project ? NSUB : PC;
    const int maxb = mx_builder_max_batch(b);
    mx_shape in = l->in;
    for (int i = 0; i < nsub; i++) {
        if (i == PC) in = l->in;
        MX_TRY(mx_builder_child(b, &r->sub[i], &specs[i], in));
        in = r->sub[i].out;
        r->act[i] = mx_builder_buffer(b, sizeof(float) * maxb * mx_shape_size(in));
    }
    l->out = r->sub[B2].out;
    const size_t widest = maxb * (mx_shape_size(l->in) > mx_shape_size(l->out) ? mx_shape_size(l->in)
                                                                                : mx_shape_size(l->out));
    r->sum = mx_builder_buffer(b, sizeof(float) * maxb * mx_shape_size(l->out));
    for (int k = 0; k < 3; k++) r->g[k] = mx_builder_buffer(b, sizeof(float) * widest);
    return MX_OK;
}

static void sub_forward(residual *r, int i, mx_backend *be, int n, const float *in, int training)
{
    r->sub[i].ops->forward(&r->sub[i], be, n, r->act[i], in, training);
}

static void residual_forward(mx_layer *l, mx_backend *be, int n, float *out, const float *in, int training)
{
    residual *r = l->priv;
    const size_t count = n * mx_shape_size(l->out);
    sub_forward(r, C1, be, n, in, training);
    for (int i = B1; i <= B2; i++) sub_forward(r, i, be, n, r->act[i - 1], training);
    be->ops->copy(be, r->sum, r->act[B2], sizeof(float) * count, MX_COPY_D2D);
    if (r->project) {
        sub_forward(r, PC, be, n, in, training);
        sub_forward(r, PB, be, n, r->act[PC], training);
        be->ops->add(be, count, r->sum, r->act[PB]);
    } else {
        be->ops->add(be, count, r->sum, in);
    }
    be->ops->relu_forward(be, count, out, r->sum);
}

static void sub_backward(residual *r, int i, mx_backend *be, int n, float *din, const float *dout, const float *in)
{
    r->sub[i].ops->backward(&r->sub[i], be, n, din, dout, in, r->act[i]);
}

static void residual_backward(mx_layer *l, mx_backend *be, int n, float *din, const float *dout, const float *in,
                              const float *out)
{
    residual *r = l->priv;
    const size_t count = n * mx_shape_size(l->out);
    float *dsum = r->g[0], *ga = r->g[1], *gb = r->g[2];
    be->ops->relu_backward(be, count, dsum, dout, out);
    /* Main branch, last to first, alternating two workspaces. */
    sub_backward(r, B2, be, n, ga, dsum, r->act[C2]);
    sub_backward(r, C2, be, n, gb, ga, r->act[R1]);
    sub_backward(r, R1, be, n, ga, gb, r->act[B1]);
    sub_backward(r, B1, be, n, gb, ga, r->act[C1]);
    sub_backward(r, C1, be, n, din, gb, in);
    if (r->project) {
        sub_backward(r, PB, be, n, ga, dsum, r->act[PC]);
        sub_backward(r, PC, be, n, din ? gb : NULL, ga, in);
        if (din) be->ops->add(be, n * mx_shape_size(l->in), din, gb);
    } else if (din) {
        be->ops->add(be, count, din, dsum);
    }
}

static double residual_flops(const mx_layer *l)
{
    const residual *r = l->priv;
    double f = 2.0 * mx_shape_size(l->out); /* the add and the relu */
    for (int i = 0; i < (r->project ? NSUB : PC); i++)
        if (r->sub[i].ops->flops) f += r->sub[i].ops->flops(&r->sub[i]);
    return f;
}

const mx_layer_ops mx_layer_residual = {
    .kind = "residual",
    .priv_size = sizeof(residual),
    .setup = residual_setup,
    .forward = residual_forward,
    .backward = residual_backward,
    .flops = residual_flops,
};
