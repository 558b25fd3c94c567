/* GPT-2's transformer block, pre-norm, on a sequence activation in {1, T, C} (out the same):
 *   x1  = x + linear_C(attention(linear_3C(layernorm(x))))
 *   out = x1 + linear_C(gelu(linear_4C(layernorm(x1))))
 * with biases on every linear and spec.heads attention heads of C / heads. Built from the other
 * layers as a residual block is (engine/layers/residual.c): the children are set up through the
 * builder, and its saved state holds their states, the outputs their backwards read, x1 and the
 * gradient workspaces of backward, so a context owns all of it. The two projections back to C
 * write straight into x1 and out (then the residual is added in place): their backwards do not
 * read their outputs (the linear layer's MX_TRAIT_BWD_NO_OUT, checked at setup). */
#include "layer.h"
#include "base/status.h"

enum { LN1, QKV, ATT, PROJ, LN2, FC, GELU, FCP, NSUB };

typedef struct {
    mx_layer sub[NSUB];
    int c; /* width */
} gpt_block;

/* Where one call's saved state lies: laid out from n (see engine/layers/layer.h). */
typedef struct {
    void *sub[NSUB];  /* children's states (NULL when a child keeps none) */
    float *act[NSUB]; /* children's outputs; NULL for PROJ and FCP, written into x1 and out */
    float *x1;        /* the first residual's sum, LN2's input */
    float *g4, *g1a, *g1b; /* backward's workspaces: 4C, C and C floats a row */
} blk_state;

/* Bytes of the state for n samples; with base non-NULL also fills st with the pointers. */
static size_t blk_layout(const mx_layer *l, int n, char *base, blk_state *st)
{
    const gpt_block *g = l->priv;
    size_t off = 0, at;
#define BLK_TAKE(bytes) (at = off, off += mx_state_align(bytes), base ? (void *)(base + at) : NULL)
    for (int i = 0; i < NSUB; i++) {
        const size_t sb = mx_layer_state_bytes(&g->sub[i], n);
        st->sub[i] = sb ? BLK_TAKE(sb) : NULL;
        st->act[i] = i == PROJ || i == FCP ? NULL : BLK_TAKE(sizeof(float) * n * mx_shape_size(g->sub[i].out));
    }
    const size_t row = sizeof(float) * n * mx_shape_size(l->in); /* n*T*C floats */
    st->x1 = BLK_TAKE(row);
    st->g4 = BLK_TAKE(4 * row);
    st->g1a = BLK_TAKE(row);
    st->g1b = BLK_TAKE(row);
#undef BLK_TAKE
    return off;
}

static size_t blk_state_bytes(const mx_layer *l, int max_batch)
{
    blk_state st;
    return blk_layout(l, max_batch, NULL, &st);
}

static int blk_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    gpt_block *g = l->priv;
    const int c = l->in.w, heads = spec->heads;
    if (l->in.c != 1 || l->in.h < 1 || c < 1)
        return mx_error(MX_EINVAL, "gpt_block: input shape {%d, %d, %d}; accepted {1, T, C} with T, C >= 1",
                        l->in.c, l->in.h, l->in.w);
    if (heads < 1 || c % heads != 0)
        return mx_error(MX_EINVAL, "gpt_block: width %d is not a multiple of heads %d (heads >= 1)", c, heads);
    const mx_layer_spec specs[NSUB] = {
        [LN1] = {.kind = "layernorm"},
        [QKV] = {.kind = "linear", .units = 3 * c, .bias = 1},
        [ATT] = {.kind = "attention", .heads = heads},
        [PROJ] = {.kind = "linear", .units = c, .bias = 1},
        [LN2] = {.kind = "layernorm"},
        [FC] = {.kind = "linear", .units = 4 * c, .bias = 1},
        [GELU] = {.kind = "gelu"},
        [FCP] = {.kind = "linear", .units = c, .bias = 1},
    };
    g->c = c;
    mx_shape in = l->in;
    for (int i = 0; i < NSUB; i++) {
        MX_TRY(mx_builder_child(b, &g->sub[i], &specs[i], in));
        in = g->sub[i].out;
    }
    const int proj[2] = {PROJ, FCP};
    for (int i = 0; i < 2; i++) {
        const mx_layer *s = &g->sub[proj[i]];
        if (!(s->ops->traits && s->ops->traits(s) & MX_TRAIT_BWD_NO_OUT))
            return mx_error(MX_EINVAL, "gpt_block: its %s layers' backward reads their output, which the block "
                            "does not keep", s->ops->kind);
    }
    l->out = l->in;
    return MX_OK;
}

static void sub_forward(gpt_block *g, const blk_state *st, int i, mx_backend *be, int n, float *out, const float *in,
                        int training)
{
    g->sub[i].ops->forward(&g->sub[i], be, st->sub[i], n, out, in, training);
}

static void blk_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training)
{
    gpt_block *g = l->priv;
    blk_state st;
    blk_layout(l, n, state, &st);
    const size_t count = n * mx_shape_size(l->in);
    sub_forward(g, &st, LN1, be, n, st.act[LN1], in, training);
    sub_forward(g, &st, QKV, be, n, st.act[QKV], st.act[LN1], training);
    sub_forward(g, &st, ATT, be, n, st.act[ATT], st.act[QKV], training);
    sub_forward(g, &st, PROJ, be, n, st.x1, st.act[ATT], training);
    be->ops->add(be, count, st.x1, in);
    sub_forward(g, &st, LN2, be, n, st.act[LN2], st.x1, training);
    sub_forward(g, &st, FC, be, n, st.act[FC], st.act[LN2], training);
    sub_forward(g, &st, GELU, be, n, st.act[GELU], st.act[FC], training);
    sub_forward(g, &st, FCP, be, n, out, st.act[GELU], training);
    be->ops->add(be, count, out, st.x1);
}

static void sub_backward(gpt_block *g, const blk_state *st, int i, mx_backend *be, int n, float *din,
                         const float *dout, const float *in)
{
    g->sub[i].ops->backward(&g->sub[i], be, st->sub[i], n, din, dout, in, st->act[i]);
}

/* Each residual's input gradient is its output's (the direct path) plus its branch's; every
 * child writes its input gradient, so the two sums are adds onto the branch's. */
static void blk_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                         const float *in, const float *out)
{
    gpt_block *g = l->priv;
    blk_state st;
    blk_layout(l, n, state, &st);
    const size_t count = n * mx_shape_size(l->in);
    float *g4 = st.g4, *ga = st.g1a, *dx1 = st.g1b;
    sub_backward(g, &st, FCP, be, n, g4, dout, st.act[GELU]);
    sub_backward(g, &st, GELU, be, n, g4, g4, st.act[FC]); /* in place: gelu's backward allows din == dout */
    sub_backward(g, &st, FC, be, n, ga, g4, st.act[LN2]);
    sub_backward(g, &st, LN2, be, n, dx1, ga, st.x1);
    be->ops->add(be, count, dx1, dout);
    sub_backward(g, &st, PROJ, be, n, ga, dx1, st.act[ATT]);
    sub_backward(g, &st, ATT, be, n, g4, ga, st.act[QKV]);
    sub_backward(g, &st, QKV, be, n, ga, g4, st.act[LN1]);
    sub_backward(g, &st, LN1, be, n, din, ga, in); /* din NULL: LN1's tensors' gradients only */
    if (din) be->ops->add(be, count, din, dx1);
}

static double blk_flops(const mx_layer *l)
{
    const gpt_block *g = l->priv;
    double f = 2.0 * mx_shape_size(l->in); /* the two residual adds */
    for (int i = 0; i < NSUB; i++)
        if (g->sub[i].ops->flops) f += g->sub[i].ops->flops(&g->sub[i]);
    return f;
}

/* Backward reads the block's input (LN1's), never its output. */
static unsigned blk_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_gpt_block = {
    .kind = "gpt_block",
    .priv_size = sizeof(gpt_block),
    .setup = blk_setup,
    .state_bytes = blk_state_bytes,
    .forward = blk_forward,
    .backward = blk_backward,
    .flops = blk_flops,
    .traits = blk_traits,
};
