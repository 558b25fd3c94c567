/* Token and position embedding, a language model's first layer: the input is T token ids per
 * sample (shape {1, 1, T}, integers held as floats), the output T rows of `units` (C) floats,
 * out[t] = wte[id_t] + wpe[t]. The token table "embedding.wte" [vocab][C] is the tensor a tied
 * lm_head reads; both tables are 2-D weights, decayed as GPT-2 decays them. */
#include "layer.h"
#include "base/status.h"

typedef struct {
    int t, c, vocab;
    float *wte, *dwte; /* [vocab][c] */
    float *wpe, *dwpe; /* [t][c] */
} embedding;

static int embedding_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    embedding *e = l->priv;
    MX_TRY(MX_LAYER_NEEDS_OP(b, "embedding", embedding_forward));
    MX_TRY(MX_LAYER_NEEDS_OP(b, "embedding", embedding_backward));
    if (l->in.c != 1 || l->in.h != 1)
        return mx_error(MX_EINVAL, "embedding: input %dx%dx%d; accepted: 1x1xT, T token ids", l->in.c, l->in.h,
                        l->in.w);
    if (spec->units < 1) return mx_error(MX_EINVAL, "embedding: units %d must be at least 1", spec->units);
    if (spec->vocab < 1) return mx_error(MX_EINVAL, "embedding: vocab %d must be at least 1", spec->vocab);
    e->t = l->in.w;
    e->c = spec->units;
    e->vocab = spec->vocab;
    l->out = (mx_shape){1, e->t, e->c};
    /* Fans as of the matrices they are (a one-hot row in, C values out), for Xavier; a GPT-2
     * workload draws them from a normal of sigma 0.02 instead. */
    MX_TRY(mx_builder_param(b, "embedding.wte", (size_t)e->vocab * e->c, MX_INIT_WEIGHT, e->vocab, e->c, 1, &e->wte,
                            &e->dwte));
    return mx_builder_param(b, "embedding.wpe", (size_t)e->t * e->c, MX_INIT_WEIGHT, e->t, e->c, 1, &e->wpe,
                            &e->dwpe);
}

static void embedding_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                              int training)
{
    embedding *e = l->priv;
    be->ops->embedding_forward(be, n, e->t, e->c, e->vocab, out, in, e->wte, e->wpe);
}

static void embedding_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                               const float *in, const float *out)
{
    embedding *e = l->priv;
    be->ops->embedding_backward(be, n, e->t, e->c, e->vocab, e->dwte, e->dwpe, dout, in);
    /* Token ids have no gradient. */
    if (din) be->ops->zero(be, din, sizeof(float) * (size_t)n * e->t);
}

/* One add per output value. */
static double embedding_flops(const mx_layer *l)
{
    const embedding *e = l->priv;
    return (double)e->t * e->c;
}

/* Backward reads the ids, not the output; the input gradient is all zeros. */
static unsigned embedding_traits(const mx_layer *l)
{
    return MX_TRAIT_BWD_NO_OUT | MX_TRAIT_EXACT_DIN | MX_TRAIT_IDS_IN;
}

const mx_layer_ops mx_layer_embedding = {
    .kind = "embedding",
    .priv_size = sizeof(embedding),
    .setup = embedding_setup,
    .forward = embedding_forward,
    .backward = embedding_backward,
    .flops = embedding_flops,
    .traits = embedding_traits,
};
