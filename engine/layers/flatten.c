/* Flatten: [c][h][w] -> [c*h*w]. The memory layout is unchanged; the layer exists so a
 * network reads as the model it is, and it costs one copy. */
#include "layer.h"

static int flatten_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    l->out = (mx_shape){(int)mx_shape_size(l->in), 1, 1};
    return 0;
}

static void flatten_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    be->ops->copy(be, out, in, sizeof(float) * n * mx_shape_size(l->in), MX_COPY_D2D);
}

static void flatten_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                             const float *dout, const float *in, const float *out)
{
    if (din) be->ops->copy(be, din, dout, sizeof(float) * n * mx_shape_size(l->in), MX_COPY_D2D);
}

static unsigned flatten_traits(const mx_layer *l)
{
    return MX_TRAIT_BWD_NO_IN | MX_TRAIT_BWD_NO_OUT | MX_TRAIT_EXACT_OUT | MX_TRAIT_EXACT_DIN;
}

const mx_layer_ops mx_layer_flatten = {
    .kind = "flatten",
    .setup = flatten_setup,
    .forward = flatten_forward,
    .backward = flatten_backward,
    .traits = flatten_traits,
};
