/* GPT-2 (Radford et al. 2019) as a layer list: token and position embedding, pre-norm
 * transformer blocks (engine/layers/gpt_block.c: layer norm, causal self-attention with a
 * fused QKV projection, residual add; layer norm, GELU MLP of 4x width, residual add), a
 * final layer norm and the language-model head tied to the token embedding. No dropout:
 * benchmarks and equivalence tests want the same arithmetic on every run (llm.c and
 * nanoGPT's GPT-2 reproductions train without it too). */
#include "gpt.h"

const mx_lm_size mx_gpt_mini = {.layers = 4, .width = 128, .heads = 4, .context = 64, .vocab = 256};
const mx_lm_size mx_gpt_bench = {.layers = 6, .width = 384, .heads = 6, .context = 256, .vocab = 256};
const mx_lm_size mx_gpt_124m = {.layers = 12, .width = 768, .heads = 12, .context = 1024, .vocab = 50257};

int mx_lm_padded_vocab(int vocab) { return (vocab + 63) / 64 * 64; }

static int build(const mx_lm_size *s, mx_layer_spec *spec, int vocab)
{
    const int V = mx_lm_padded_vocab(vocab);
    int n = 0;
    spec[n++] = (mx_layer_spec){.kind = "embedding", .units = s->width, .vocab = V};
    for (int i = 0; i < s->layers; i++) spec[n++] = (mx_layer_spec){.kind = "gpt_block", .heads = s->heads};
    spec[n++] = (mx_layer_spec){.kind = "layernorm"};
    spec[n++] = (mx_layer_spec){.kind = "lm_head", .vocab = V};
    return n;
}

int mx_gpt_build_mini(mx_layer_spec *specs, mx_shape in, int vocab) { return build(&mx_gpt_mini, specs, vocab); }
int mx_gpt_build_bench(mx_layer_spec *specs, mx_shape in, int vocab) { return build(&mx_gpt_bench, specs, vocab); }
int mx_gpt_build_124m(mx_layer_spec *specs, mx_shape in, int vocab) { return build(&mx_gpt_124m, specs, vocab); }

double mx_gpt_params(const mx_lm_size *s, int vocab)
{
    const double C = s->width, V = mx_lm_padded_vocab(vocab), T = s->context;
    /* per block: QKV (3C^2 + 3C), projection (C^2 + C), MLP (8C^2 + 5C), two layer norms (4C) */
    const double block = 12 * C * C + 13 * C;
    return V * C + T * C + s->layers * block + 2 * C;
}

double mx_gpt_train_flops_per_token(const mx_lm_size *s, int vocab)
{
    return 6 * mx_gpt_params(s, vocab) + 12.0 * s->layers * s->width * s->context;
}
