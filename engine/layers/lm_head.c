/* A language model's head tied to its token embedding: in {1, T, C} -> out {1, T, vocab}, each
 * row's logits x . wte^T, no bias. The weight is the embedding's "embedding.wte" [vocab][C]
 * (mx_builder_tied), one tensor whose gradient the head and the embedding both add to, as
 * GPT-2 ties them; the head registers no tensor of its own. */
#include "layer.h"
#include "base/status.h"

#include <stdio.h>

typedef struct {
    int rows, c, vocab;
    float *wte, *dwte; /* the embedding's [vocab][c] */
} lm_head;

static int lm_head_setup(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b)
{
    lm_head *h = l->priv;
    if (l->in.c != 1)
        return mx_error(MX_EINVAL, "lm_head: input %dx%dx%d; accepted: 1xTxC, T rows of C features", l->in.c,
                        l->in.h, l->in.w);
    if (spec->vocab < 1) return mx_error(MX_EINVAL, "lm_head: vocab %d must be at least 1", spec->vocab);
    h->rows = l->in.h;
    h->c = l->in.w;
    h->vocab = spec->vocab;
    l->out = (mx_shape){1, h->rows, h->vocab};
    const int rc = mx_builder_tied(b, "embedding.wte", (size_t)h->vocab * h->c, &h->wte, &h->dwte);
    if (rc < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", mx_last_error());
        return mx_error(rc, "lm_head (vocab %d, width %d) reads the token embedding's table: %s", h->vocab, h->c,
                        why);
    }
    return MX_OK;
}

static void lm_head_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in,
                            int training)
{
    lm_head *h = l->priv;
    be->ops->gemm(be, 0, 1, n * h->rows, h->vocab, h->c, 1.0f, in, h->c, h->wte, h->c, 0.0f, out, h->vocab);
}

static void lm_head_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                             const float *in, const float *out)
{
    lm_head *h = l->priv;
    const int m = n * h->rows;
    be->ops->gemm(be, 1, 0, h->vocab, h->c, m, 1.0f, dout, h->vocab, in, h->c, 1.0f, h->dwte, h->c);
    if (din) be->ops->gemm(be, 0, 0, m, h->c, h->vocab, 1.0f, dout, h->vocab, h->wte, h->c, 0.0f, din, h->c);
}

static double lm_head_flops(const mx_layer *l)
{
    const lm_head *h = l->priv;
    return 2.0 * h->rows * h->c * h->vocab;
}

static unsigned lm_head_traits(const mx_layer *l) { return MX_TRAIT_BWD_NO_OUT; }

const mx_layer_ops mx_layer_lm_head = {
    .kind = "lm_head",
    .priv_size = sizeof(lm_head),
    .setup = lm_head_setup,
    .forward = lm_head_forward,
    .backward = lm_head_backward,
    .flops = lm_head_flops,
    .traits = lm_head_traits,
};
