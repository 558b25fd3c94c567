/* Layer norm over each row of a sequence activation ({1, rows, w}: every position's w
 * features), out = (x - mean) * rstd * gamma + beta with eps 1e-5 as GPT-2's. The row's mean
 * and rstd are the saved state its backward reads. */
#include "layer.h"
#include "base/status.h"

#define LAYERNORM_EPS 1e-5f

typedef struct {
    int rows, w;
    float *g, *dg; /* gamma [w] */
    float *b, *db; /* beta [w] */
} layernorm;

static int layernorm_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    layernorm *ln = l->priv;
    MX_TRY(MX_LAYER_NEEDS_OP(b, "layernorm", layernorm_forward));
    MX_TRY(MX_LAYER_NEEDS_OP(b, "layernorm", layernorm_backward));
    if (l->in.c != 1)
        return mx_error(MX_EINVAL, "layernorm: input %dx%dx%d; accepted: 1xRxW, R rows of W features", l->in.c,
                        l->in.h, l->in.w);
    ln->rows = l->in.h;
    ln->w = l->in.w;
    l->out = l->in;
    MX_TRY(mx_builder_param(b, "layernorm.g", ln->w, MX_INIT_ONE, 0, 0, 0, &ln->g, &ln->dg));
    return mx_builder_param(b, "layernorm.b", ln->w, MX_INIT_ZERO, 0, 0, 0, &ln->b, &ln->db);
}

/* mean[n*rows] then rstd[n*rows] */
static size_t layernorm_state_bytes(const mx_layer *l, int max_batch)
{
    const layernorm *ln = l->priv;
    return 2 * sizeof(float) * (size_t)max_batch * ln->rows;
}

static void layernorm_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                              int training)
{
    layernorm *ln = l->priv;
    const int rows = n * ln->rows;
    float *mean = state, *rstd = mean + rows;
    be->ops->layernorm_forward(be, rows, ln->w, out, mean, rstd, in, ln->g, ln->b, LAYERNORM_EPS);
}

static void layernorm_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                               const float *in, const float *out)
{
    layernorm *ln = l->priv;
    const int rows = n * ln->rows;
    const float *mean = state, *rstd = mean + rows;
    be->ops->layernorm_backward(be, rows, ln->w, din, ln->dg, ln->db, dout, in, mean, rstd, ln->g);
}

/* Per value: 1 for the mean, 3 for the variance (subtract, multiply-add), 4 for the output
 * (subtract, scale, multiply-add). */
static double layernorm_flops(const mx_layer *l)
{
    const layernorm *ln = l->priv;
    return 8.0 * ln->rows * ln->w;
}

static unsigned layernorm_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_layernorm = {
    .kind = "layernorm",
    .priv_size = sizeof(layernorm),
    .setup = layernorm_setup,
    .state_bytes = layernorm_state_bytes,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
    .flops = layernorm_flops,
    .traits = layernorm_traits,
};
