/* 2-D convolution layer (NCHW, square kernel), optional per-channel bias; the arithmetic
 * is the backend's (im2col + GEMM on CPU). */
#include "layer.h"
#include "base/status.h"

typedef struct {
    mx_conv_desc d;
    int bias;
    float *w, *dw; /* [oc][c][k][k] */
    float *b, *db; /* [oc] */
} conv2d;

static int conv2d_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    conv2d *cv = l->priv;
    mx_conv_desc *d = &cv->d;
    if (spec->units < 1 || spec->k < 1 || spec->stride < 1 || spec->pad < 0)
        return mx_error(MX_EINVAL, "conv2d: channels %d, kernel %d, stride %d, padding %d: need channels, kernel "
                        "and stride >= 1, padding >= 0", spec->units, spec->k, spec->stride, spec->pad);
    *d = (mx_conv_desc){.c = l->in.c, .h = l->in.h, .w = l->in.w, .oc = spec->units, .k = spec->k,
                        .stride = spec->stride, .pad = spec->pad};
    d->oh = (d->h + 2 * d->pad - d->k) / d->stride + 1;
    d->ow = (d->w + 2 * d->pad - d->k) / d->stride + 1;
    if (d->h + 2 * d->pad < d->k || d->w + 2 * d->pad < d->k)
        return mx_error(MX_EINVAL, "conv2d: kernel %d is larger than the padded input %dx%d", d->k, d->h, d->w);
    l->out = (mx_shape){d->oc, d->oh, d->ow};
    cv->bias = spec->bias;
    const int kk = d->k * d->k;
    MX_TRY(mx_builder_param(b, "conv.w", (size_t)d->oc * d->c * kk, MX_INIT_WEIGHT, d->c * kk, d->oc * kk, 1, &cv->w,
                            &cv->dw));
    if (cv->bias) MX_TRY(mx_builder_param(b, "conv.b", d->oc, MX_INIT_ZERO, 0, 0, 0, &cv->b, &cv->db));
    return MX_OK;
}

static void conv2d_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    conv2d *cv = l->priv;
    be->ops->conv2d_forward(be, &cv->d, n, out, in, cv->w);
    if (cv->bias) be->ops->bias_forward(be, n, cv->d.oc, cv->d.oh * cv->d.ow, out, cv->b);
}

static void conv2d_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                            const float *dout, const float *in, const float *out)
{
    conv2d *cv = l->priv;
    if (cv->bias) be->ops->bias_backward(be, n, cv->d.oc, cv->d.oh * cv->d.ow, cv->db, dout);
    be->ops->conv2d_backward(be, &cv->d, n, din, cv->dw, dout, in, cv->w);
}

void mx_conv2d_tensors(const mx_layer *l, mx_conv_desc *d, const float **w, float **dw)
{
    const conv2d *cv = l->priv;
    *d = cv->d, *w = cv->w, *dw = cv->dw;
}

static double conv2d_flops(const mx_layer *l)
{
    const mx_conv_desc *d = &((const conv2d *)l->priv)->d;
    return 2.0 * d->oc * d->oh * d->ow * d->c * d->k * d->k;
}

static unsigned conv2d_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_conv2d = {
    .kind = "conv2d",
    .priv_size = sizeof(conv2d),
    .setup = conv2d_setup,
    .forward = conv2d_forward,
    .backward = conv2d_backward,
    .flops = conv2d_flops,
    .traits = conv2d_traits,
};
