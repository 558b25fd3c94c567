/* Causal multi-head self-attention over a fused QKV input (GPT-2's attention core, without its
 * projections, which are linear layers around it). in {1, T, 3C}: each row holds q (columns
 * [0, C)), k ([C, 2C)) and v ([2C, 3C)), head h of H using columns [h*hs, (h+1)*hs) of each,
 * hs = C / H. out {1, T, C}: per head softmax(q k^T / sqrt(hs)) with position t attending to
 * 0..t, times v, heads side by side. No tensors. The saved state is each row's log-sum-exp
 * (n*H*T floats), from which the backend's backward recomputes the probabilities: the T x T of
 * them per head are never kept. */
#include "layer.h"
#include "base/status.h"

typedef struct {
    int t, heads, hs;
} attention;

static int attention_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    attention *a = l->priv;
    const int w = l->in.w, h = spec->heads;
    if (l->in.c != 1 || l->in.h < 1)
        return mx_error(MX_EINVAL, "attention: input shape {%d, %d, %d}; accepted {1, T, 3C} with T >= 1", l->in.c,
                        l->in.h, l->in.w);
    if (h < 1) return mx_error(MX_EINVAL, "attention: heads %d must be at least 1", h);
    if (w < 3 || w % (3 * h) != 0)
        return mx_error(MX_EINVAL, "attention: input width %d is not 3 x heads %d x a head size (a multiple of %d)",
                        w, h, 3 * h);
    MX_TRY(MX_LAYER_NEEDS_OP(b, "attention", attention_forward));
    MX_TRY(MX_LAYER_NEEDS_OP(b, "attention", attention_backward));
    a->t = l->in.h;
    a->heads = h;
    a->hs = w / (3 * h);
    l->out = (mx_shape){1, a->t, w / 3};
    return MX_OK;
}

static size_t attention_state_bytes(const mx_layer *l, int max_batch)
{
    const attention *a = l->priv;
    return sizeof(float) * (size_t)max_batch * a->heads * a->t;
}

static void attention_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                              int training)
{
    const attention *a = l->priv;
    be->ops->attention_forward(be, n, a->t, a->heads, a->hs, out, training ? state : NULL, in);
}

static void attention_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                               const float *in, const float *out)
{
    const attention *a = l->priv;
    if (din) be->ops->attention_backward(be, n, a->t, a->heads, a->hs, din, dout, in, out, state);
}

/* The two products of each head over the causal half: T(T+1)/2 (query, key) pairs, each hs
 * multiply-adds for q.k and hs for p*v, so 2 * 2 * hs * T(T+1)/2 per head, 2 C T (T+1) per
 * sample (the softmax's exponentials are not counted). */
static double attention_flops(const mx_layer *l)
{
    const attention *a = l->priv;
    return 2.0 * a->heads * a->hs * (double)a->t * (a->t + 1);
}

const mx_layer_ops mx_layer_attention = {
    .kind = "attention",
    .priv_size = sizeof(attention),
    .setup = attention_setup,
    .state_bytes = attention_state_bytes,
    .forward = attention_forward,
    .backward = attention_backward,
    .flops = attention_flops,
};
