/* The GPT-2 block (engine/layers/gpt_block.c): its output is the two residual halves computed by
 * nets of its children's kinds with the same tensors, x1 = x + [layernorm, linear 3C, attention,
 * linear C](x) and out = x1 + [layernorm, linear 4C, gelu, linear C](x1); the gradients of its
 * input and of every tensor agree with central differences (tests/gradcheck.h's rule); a block
 * with no input gradient to give (the first layer) gives the same tensor gradients; its FLOPs
 * are its children's and the two adds; and the setups it refuses. */
#include "check.h"
#include "gradcheck.h"
#include "engine/core/backends.h"
#include "engine/core/net.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mx_backend *be;
static uint64_t seed = 7;
static mx_rng rng;

typedef struct {
    int n, t, c, heads;
} shape;

static mx_net *block_net(shape s)
{
    const mx_layer_spec specs[2] = {{.kind = "gpt_block", .heads = s.heads}, {.kind = "flatten"}};
    mx_net *net = NULL;
    const int rc = mx_net_create(&net, be, specs, 2, (mx_shape){1, s.t, s.c}, s.n);
    CHECK(rc == MX_OK, "T %d C %d heads %d: block not built: %s", s.t, s.c, s.heads, mx_last_error());
    if (rc != MX_OK) return NULL;
    mx_net_init_params(net, 11, MX_WEIGHT_INIT_NORMAL, 0.5f);
    /* layer norms' scales and shifts and every bias away from 1 and 0 */
    for (size_t i = 0; i < net->nweights; i++) net->w[i] += 0.3f * (float)(2 * check_uniform(&seed) - 1);
    return net;
}

/* A half of the block as its own net [norm, linear, mid..., linear C, flatten], holding copies
 * of the block's tensors first..first+count-1; its output at y (n*T*C), its FLOPs returned. */
static double half(shape s, const mx_net *blk, int first, const mx_layer_spec *mid, int nmid, int units,
                   const float *x, float *y)
{
    mx_layer_spec specs[6] = {{.kind = "layernorm"}, {.kind = "linear", .units = units, .bias = 1}};
    for (int i = 0; i < nmid; i++) specs[2 + i] = mid[i];
    specs[2 + nmid] = (mx_layer_spec){.kind = "linear", .units = s.c, .bias = 1};
    specs[3 + nmid] = (mx_layer_spec){.kind = "flatten"};
    mx_net *net;
    if (mx_net_create(&net, be, specs, 4 + nmid, (mx_shape){1, s.t, s.c}, s.n) != MX_OK) {
        CHECK(0, "half net not built: %s", mx_last_error());
        return 0;
    }
    CHECK(net->nparams == 6, "a half holds %d tensors, not 6", net->nparams);
    for (int p = 0; p < net->nparams && p < 6; p++) {
        const mx_param *a = &net->params[p], *b = &blk->params[first + p];
        CHECK(a->count == b->count, "tensor %d: %zu values in the half, %zu in the block", p, a->count, b->count);
        if (a->count == b->count) memcpy(net->w + a->offset, blk->w + b->offset, sizeof(float) * a->count);
    }
    memcpy(net->x, x, sizeof(float) * s.n * s.t * s.c);
    const float *o = mx_net_forward(net, s.n, 1);
    memcpy(y, o, sizeof(float) * s.n * s.t * s.c);
    double f = 0;
    for (int i = 0; i + 1 < net->nlayers; i++) f += net->layers[i].ops->flops(&net->layers[i]);
    mx_net_destroy(net);
    return f;
}

static void check_composition(shape s)
{
    mx_net *blk = block_net(s);
    if (!blk) return;
    const size_t count = (size_t)s.n * s.t * s.c;
    check_fill(blk->x, count, &seed);
    const float *out = mx_net_forward(blk, s.n, 1);
    float *x1 = malloc(sizeof(float) * count), *want = malloc(sizeof(float) * count);
    const mx_layer_spec att = {.kind = "attention", .heads = s.heads}, gelu = {.kind = "gelu"};
    double flops = half(s, blk, 0, &att, 1, 3 * s.c, blk->x, x1);
    for (size_t i = 0; i < count; i++) x1[i] += blk->x[i];
    flops += half(s, blk, 6, &gelu, 1, 4 * s.c, x1, want);
    for (size_t i = 0; i < count; i++) want[i] += x1[i];
    const double e = check_rel_diff(out, want, count);
    CHECK(e <= 1e-6, "T %d C %d heads %d: the block differs from its halves by %.2g", s.t, s.c, s.heads, e);
    const mx_layer *l = &blk->layers[0];
    const double f = l->ops->flops(l), fw = flops + 2.0 * s.t * s.c;
    CHECK(fabs(f - fw) <= 1e-9 * fw, "flops %.0f, its children's and the adds %.0f", f, fw);
    printf("composition T %-3d C %-2d heads %d   %s (%.1e)\n", s.t, s.c, s.heads, e <= 1e-6 ? "ok" : "NOT OK", e);
    free(x1), free(want);
    mx_net_destroy(blk);
}

/* Backward with dout = R against central differences of sum(out * R) (tests/gradcheck.h), for
 * the input and every tensor; then again with no input gradient asked for and no output given:
 * the same tensor gradients, bit for bit. */
static void check_gradients(shape s)
{
    mx_net *net = block_net(s);
    if (!net) return;
    const mx_layer *l = &net->layers[0];
    const size_t count = (size_t)s.n * s.t * s.c;
    float *r = malloc(sizeof(float) * count), *din = calloc(count, sizeof(float));
    float *g = malloc(sizeof(float) * net->nweights);
    check_fill(net->x, count, &seed);
    check_fill(r, count, &seed);
    mx_net_zero_grad(net);
    gc_objective(net, s.n, r);
    gc_backward(net, s.n, r, din);
    memcpy(g, net->g, sizeof(float) * net->nweights);
    int bad = gc_probe("input", net, s.n, r, net->x, count, din, GC_STEP, &rng);
    CHECK(l->param_count == 12, "the block holds %d tensors, not 12 (2 per norm and linear)", l->param_count);
    for (int p = l->param_first; p < l->param_first + l->param_count; p++) {
        const mx_param *pr = &net->params[p];
        bad += gc_probe(pr->name, net, s.n, r, net->w + pr->offset, pr->count, net->g + pr->offset, GC_STEP, &rng);
    }
    CHECK(bad == 0, "T %d C %d heads %d: %d gradient elements disagree with finite differences", s.t, s.c, s.heads,
          bad);
    /* as the first layer, without its output (MX_TRAIT_BWD_NO_OUT); flatten's gradient is r */
    mx_net_zero_grad(net);
    gc_objective(net, s.n, r);
    l->ops->backward((mx_layer *)l, be, net->exec->state[0], s.n, NULL, r, net->x, NULL);
    CHECK(!memcmp(g, net->g, sizeof(float) * net->nweights), "without din the tensors' gradients differ");
    printf("gradients T %-3d C %-2d heads %d     %s\n", s.t, s.c, s.heads, bad ? "NOT OK" : "ok");
    free(r), free(din), free(g);
    mx_net_destroy(net);
}

static void check_refused(const char *what, int heads, mx_shape in, const char *w1, const char *w2)
{
    const mx_layer_spec spec = {.kind = "gpt_block", .heads = heads};
    mx_net *net = NULL;
    const int rc = mx_net_create(&net, be, &spec, 1, in, 2);
    CHECK(rc == MX_EINVAL && strstr(mx_last_error(), w1) && strstr(mx_last_error(), w2), "%s: rc %d, '%s'", what, rc,
          mx_last_error());
    if (rc == MX_OK) mx_net_destroy(net);
}

int main(void)
{
    mx_rng_seed(&rng, 3);
    if (mx_backend_create(&be, "cpu", 0, 1) != MX_OK) return 1;
    check_composition((shape){2, 5, 12, 3});
    check_composition((shape){2, 70, 16, 2});
    check_gradients((shape){2, 5, 12, 3});
    check_gradients((shape){1, 9, 8, 1});
    check_refused("width 10, 3 heads", 3, (mx_shape){1, 4, 10}, "10", "3");
    check_refused("0 heads", 0, (mx_shape){1, 4, 12}, "heads", "0");
    check_refused("2 channels", 2, (mx_shape){2, 4, 12}, "{2, 4, 12}", "{1, T, C}");
    mx_backend_destroy(be);
    return check_summary("test_gpt_block");
}
