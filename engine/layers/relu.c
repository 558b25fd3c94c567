/* Rectified linear unit; backward reads the saved output (positive where the input was). */
#include "layer.h"

static int relu_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    l->out = l->in;
    return 0;
}

static void relu_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    be->ops->relu_forward(be, n * mx_shape_size(l->in), out, in);
}

static void relu_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                          const float *dout, const float *in, const float *out)
{
    if (din) be->ops->relu_backward(be, n * mx_shape_size(l->in), din, dout, out);
}

static unsigned relu_traits(const mx_layer *l)
{
    return MX_TRAIT_BWD_NO_IN | MX_TRAIT_EXACT_OUT | MX_TRAIT_EXACT_DIN;
}

const mx_layer_ops mx_layer_relu = {
    .kind = "relu",
    .setup = relu_setup,
    .forward = relu_forward,
    .backward = relu_backward,
    .traits = relu_traits,
};
