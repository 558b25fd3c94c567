/* Fully connected layer: out[n][units] = in[n][inputs] . W^T + b, W is [units][inputs].
 * The input is read flat, so it may follow a convolution without a reshape. */
#include "layer.h"
#include "base/status.h"

typedef struct {
    int inputs, units;
    float *w, *dw; /* [units][inputs] */
    float *b, *db; /* [units] */
} dense;

static int dense_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    dense *d = l->priv;
    if (spec->units < 1) return mx_error(MX_EINVAL, "dense: units %d must be at least 1", spec->units);
    d->inputs = (int)mx_shape_size(l->in);
    d->units = spec->units;
    l->out = (mx_shape){d->units, 1, 1};
    MX_TRY(mx_builder_param(b, "dense.w", (size_t)d->units * d->inputs, MX_INIT_WEIGHT, d->inputs, d->units, 1,
                            &d->w, &d->dw));
    return mx_builder_param(b, "dense.b", d->units, MX_INIT_ZERO, 0, 0, 0, &d->b, &d->db);
}

static void dense_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    dense *d = l->priv;
    be->ops->gemm(be, 0, 1, n, d->units, d->inputs, 1.0f, in, d->inputs, d->w, d->inputs, 0.0f, out, d->units);
    be->ops->bias_forward(be, n, d->units, 1, out, d->b);
}

static void dense_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                           const float *dout, const float *in, const float *out)
{
    dense *d = l->priv;
    be->ops->gemm(be, 1, 0, d->units, d->inputs, n, 1.0f, dout, d->units, in, d->inputs, 1.0f, d->dw, d->inputs);
    be->ops->bias_backward(be, n, d->units, 1, d->db, dout);
    if (din)
        be->ops->gemm(be, 0, 0, n, d->inputs, d->units, 1.0f, dout, d->units, d->w, d->inputs, 0.0f, din,
                      d->inputs);
}

static double dense_flops(const mx_layer *l)
{
    const dense *d = l->priv;
    return 2.0 * d->inputs * d->units;
}

static unsigned dense_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_dense = {
    .kind = "dense",
    .priv_size = sizeof(dense),
    .setup = dense_setup,
    .forward = dense_forward,
    .backward = dense_backward,
    .flops = dense_flops,
    .traits = dense_traits,
};
