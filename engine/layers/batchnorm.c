/* Batch normalisation per channel: batch statistics in training (running averages updated
 * with momentum 0.9, as MXNet), running statistics in evaluation. On several devices each
 * replica normalises with its own slice's statistics. The running statistics are model
 * state (kept with the layer); the batch's mean and invstd are the context's saved state. */
#include "layer.h"
#include "base/status.h"

#include <stdlib.h>

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.9f

typedef struct {
    float *gamma, *dgamma, *beta, *dbeta; /* [c] */
    float *run_mean, *run_var;            /* [c], not trained: buffers, not parameters */
} batchnorm; /* saved state: float mean[c], invstd[c] of the batch */

static int bn_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    batchnorm *bn = l->priv;
    const int c = l->in.c;
    l->out = l->in;
    MX_TRY(mx_builder_param(b, "bn.gamma", c, MX_INIT_ONE, 0, 0, 0, &bn->gamma, &bn->dgamma));
    MX_TRY(mx_builder_param(b, "bn.beta", c, MX_INIT_ZERO, 0, 0, 0, &bn->beta, &bn->dbeta));
    float *buf = mx_builder_buffer(b, sizeof(float) * 2 * c);
    if (!buf) return MX_ENOMEM;
    bn->run_mean = buf;
    bn->run_var = buf + c;
    /* Running variance starts at 1; the buffer came zero-filled, which suits the mean. */
    float *ones = malloc(sizeof(float) * c);
    if (!ones) return mx_error(MX_ENOMEM, "out of memory setting up batchnorm");
    for (int j = 0; j < c; j++) ones[j] = 1.0f;
    mx_backend *be = mx_builder_backend(b);
    be->ops->copy(be, bn->run_var, ones, sizeof(float) * c, MX_COPY_H2D);
    free(ones);
    return MX_OK;
}

static size_t bn_state_bytes(const mx_layer *l, int max_batch) { return sizeof(float) * 2 * l->in.c; }

static void bn_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    batchnorm *bn = l->priv;
    const int hw = l->in.h * l->in.w;
    float *mean = state, *invstd = mean + l->in.c;
    if (training)
        be->ops->batchnorm_forward_train(be, n, l->in.c, hw, out, mean, invstd, bn->run_mean, bn->run_var, in,
                                         bn->gamma, bn->beta, BN_EPS, BN_MOMENTUM);
    else
        be->ops->batchnorm_forward_infer(be, n, l->in.c, hw, out, in, bn->gamma, bn->beta, bn->run_mean, bn->run_var,
                                         BN_EPS);
}

static void bn_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din,
                        const float *dout, const float *in, const float *out)
{
    batchnorm *bn = l->priv;
    const float *mean = state, *invstd = mean + l->in.c;
    be->ops->batchnorm_backward(be, n, l->in.c, l->in.h * l->in.w, din, bn->dgamma, bn->dbeta, dout, in, mean,
                                invstd, bn->gamma);
}

void mx_bn_tensors(const mx_layer *l, void *state, mx_res_bn *b, float *eps, float *momentum)
{
    const batchnorm *bn = l->priv;
    b->gamma = bn->gamma, b->beta = bn->beta, b->dgamma = bn->dgamma, b->dbeta = bn->dbeta;
    b->run_mean = bn->run_mean, b->run_var = bn->run_var;
    b->mean = state, b->invstd = b->mean ? b->mean + l->in.c : NULL;
    *eps = BN_EPS, *momentum = BN_MOMENTUM;
}

int mx_bn_relu_fusable(const mx_backend *be)
{
    return be->ops->batchnorm_relu_forward_train && be->ops->batchnorm_relu_backward;
}

void mx_bn_relu_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    batchnorm *bn = l->priv;
    float *mean = state, *invstd = mean + l->in.c;
    if (training) {
        be->ops->batchnorm_relu_forward_train(be, n, l->in.c, l->in.h * l->in.w, out, mean, invstd, bn->run_mean,
                                              bn->run_var, in, bn->gamma, bn->beta, BN_EPS, BN_MOMENTUM);
    } else { /* evaluation: the two ops (no fused kernel asked of a backend for it) */
        bn_forward(l, be, state, n, out, in, 0);
        be->ops->relu_forward(be, (size_t)n * mx_shape_size(l->out), out, out);
    }
}

void mx_bn_relu_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                         const float *in, const float *out)
{
    batchnorm *bn = l->priv;
    const float *mean = state, *invstd = mean + l->in.c;
    be->ops->batchnorm_relu_backward(be, n, l->in.c, l->in.h * l->in.w, din, bn->dgamma, bn->dbeta, dout, in, out,
                                     mean, invstd, bn->gamma);
}

static double bn_flops(const mx_layer *l) { return 2.0 * mx_shape_size(l->in); }

static unsigned bn_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_batchnorm = {
    .kind = "batchnorm",
    .priv_size = sizeof(batchnorm),
    .setup = bn_setup,
    .state_bytes = bn_state_bytes,
    .forward = bn_forward,
    .backward = bn_backward,
    .flops = bn_flops,
    .traits = bn_traits,
};
