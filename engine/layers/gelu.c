/* GELU in GPT-2's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * elementwise on any shape; backward reads the input. */
#include "layer.h"
#include "base/status.h"

static int gelu_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    MX_TRY(MX_LAYER_NEEDS_OP(b, "gelu", gelu_forward));
    MX_TRY(MX_LAYER_NEEDS_OP(b, "gelu", gelu_backward));
    l->out = l->in;
    return MX_OK;
}

static void gelu_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    be->ops->gelu_forward(be, n * mx_shape_size(l->in), out, in);
}

static void gelu_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                          const float *in, const float *out)
{
    if (din) be->ops->gelu_backward(be, n * mx_shape_size(l->in), din, dout, in);
}

/* Per value, as commonly counted for the tanh form: the cubic and its scaling (5), the tanh
 * (1), and 1 + tanh times 0.5 x (3). */
static double gelu_flops(const mx_layer *l) { return 9.0 * mx_shape_size(l->in); }

static unsigned gelu_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_gelu = {
    .kind = "gelu",
    .setup = gelu_setup,
    .forward = gelu_forward,
    .backward = gelu_backward,
    .flops = gelu_flops,
    .traits = gelu_traits,
};
