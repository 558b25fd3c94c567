/* A dense layer applied to every row of a sequence activation: in {1, R, K} -> out {1, R, units},
 * out[r] = in[r] . W^T + b with W [units][K]. A batch of n samples is one GEMM of n*R rows, as
 * dense's of n rows (engine/layers/dense.c). The bias is optional (spec.bias). */
#include "layer.h"
#include "base/status.h"

typedef struct {
    int rows, k, units;
    float *w, *dw; /* [units][k] */
    float *b, *db; /* [units]; NULL without a bias */
} linear;

static int linear_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    linear *d = l->priv;
    if (l->in.c != 1)
        return mx_error(MX_EINVAL, "linear: input %dx%dx%d; accepted: 1xRxK, R rows of K features", l->in.c,
                        l->in.h, l->in.w);
    if (spec->units < 1) return mx_error(MX_EINVAL, "linear: units %d must be at least 1", spec->units);
    d->rows = l->in.h;
    d->k = l->in.w;
    d->units = spec->units;
    l->out = (mx_shape){1, d->rows, d->units};
    MX_TRY(mx_builder_param(b, "linear.w", (size_t)d->units * d->k, MX_INIT_WEIGHT, d->k, d->units, 1, &d->w,
                            &d->dw));
    if (!spec->bias) return MX_OK;
    return mx_builder_param(b, "linear.b", d->units, MX_INIT_ZERO, 0, 0, 0, &d->b, &d->db);
}

static void linear_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    linear *d = l->priv;
    const int m = n * d->rows;
    be->ops->gemm(be, 0, 1, m, d->units, d->k, 1.0f, in, d->k, d->w, d->k, 0.0f, out, d->units);
    if (d->b) be->ops->bias_forward(be, m, d->units, 1, out, d->b);
}

static void linear_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                            const float *in, const float *out)
{
    linear *d = l->priv;
    const int m = n * d->rows;
    be->ops->gemm(be, 1, 0, d->units, d->k, m, 1.0f, dout, d->units, in, d->k, 1.0f, d->dw, d->k);
    if (d->b) be->ops->bias_backward(be, m, d->units, 1, d->db, dout);
    if (din) be->ops->gemm(be, 0, 0, m, d->k, d->units, 1.0f, dout, d->units, d->w, d->k, 0.0f, din, d->k);
}

/* 2 per multiply-add, as dense (the bias's adds not counted). */
static double linear_flops(const mx_layer *l)
{
    const linear *d = l->priv;
    return 2.0 * d->rows * d->k * d->units;
}

static unsigned linear_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_linear = {
    .kind = "linear",
    .priv_size = sizeof(linear),
    .setup = linear_setup,
    .forward = linear_forward,
    .backward = linear_backward,
    .flops = linear_flops,
    .traits = linear_traits,
};
