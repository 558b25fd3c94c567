/* Pooling layers: max pooling (window k, stride s, no padding; the argmax, saved state of
 * the context, routes the gradient back) and global average pooling ([c][h][w] -> [c][1][1]). */
#include "layer.h"
#include "base/status.h"

typedef struct {
    mx_pool_desc d;
} maxpool; /* saved state: int32_t argmax[n][c][oh][ow] */

static int maxpool_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    maxpool *p = l->priv;
    const int stride = spec->stride ? spec->stride : spec->k;
    if (spec->k < 1 || stride < 1 || spec->k > l->in.h || spec->k > l->in.w)
        return mx_error(MX_EINVAL, "maxpool: window %d, stride %d on %dx%d input: need 1 <= window <= input size",
                        spec->k, stride, l->in.h, l->in.w);
    p->d = (mx_pool_desc){.c = l->in.c, .h = l->in.h, .w = l->in.w, .k = spec->k, .stride = stride};
    p->d.oh = (p->d.h - p->d.k) / stride + 1;
    p->d.ow = (p->d.w - p->d.k) / stride + 1;
    l->out = (mx_shape){p->d.c, p->d.oh, p->d.ow};
    return MX_OK;
}

static size_t maxpool_state_bytes(const mx_layer *l, int max_batch)
{
    return sizeof(int32_t) * max_batch * mx_shape_size(l->out);
}

static void maxpool_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    maxpool *p = l->priv;
    be->ops->maxpool_forward(be, &p->d, n, out, state, in);
}

static void maxpool_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                             const float *dout, const float *in, const float *out)
{
    maxpool *p = l->priv;
    if (din) be->ops->maxpool_backward(be, &p->d, n, din, dout, state);
}

/* Backward routes each gradient by the saved argmax; where windows overlap, an input's
 * gradient is a sum of several. */
static unsigned maxpool_traits(const mx_layer *l)
{
    const maxpool *p = l->priv;
    return MX_TRAIT_BWD_NO_IN | MX_TRAIT_BWD_NO_OUT | MX_TRAIT_EXACT_OUT |
           (p->d.stride >= p->d.k ? MX_TRAIT_EXACT_DIN : 0);
}

/* The relu before a max pooling, in the pooling's pass: the maximum of relu(x) is
 * relu(maximum of x), and the gradient passes where that is positive. */
static int maxpool_absorbs_relu(const mx_layer *l, const mx_backend *be)
{
    return be->ops->maxpool_relu_forward && be->ops->maxpool_relu_backward;
}

static void maxpool_forward_relu(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                                 int training)
{
    maxpool *p = l->priv;
    be->ops->maxpool_relu_forward(be, &p->d, n, out, state, in);
}

static void maxpool_backward_relu(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                                  const float *dout, const float *in, const float *out)
{
    maxpool *p = l->priv;
    if (din) be->ops->maxpool_relu_backward(be, &p->d, n, din, dout, out, state);
}

const mx_layer_ops mx_layer_maxpool = {
    .kind = "maxpool",
    .priv_size = sizeof(maxpool),
    .setup = maxpool_setup,
    .state_bytes = maxpool_state_bytes,
    .forward = maxpool_forward,
    .backward = maxpool_backward,
    .traits = maxpool_traits,
    .absorbs_relu = maxpool_absorbs_relu,
    .forward_relu = maxpool_forward_relu,
    .backward_relu = maxpool_backward_relu,
};

static int gap_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    l->out = (mx_shape){l->in.c, 1, 1};
    return MX_OK;
}

static void gap_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    be->ops->avgpool_global_forward(be, n, l->in.c, l->in.h * l->in.w, out, in);
}

static void gap_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                         const float *dout, const float *in, const float *out)
{
    if (din) be->ops->avgpool_global_backward(be, n, l->in.c, l->in.h * l->in.w, din, dout);
}

static unsigned gap_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_IN | MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_avgpool_global = {
    .kind = "avgpool_global",
    .setup = gap_setup,
    .forward = gap_forward,
    .backward = gap_backward,
    .traits = gap_traits,
};
