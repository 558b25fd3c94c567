/* The tensor-parallel plan: how each layer of a model is split over k devices and where the
 * collectives go (layer_plan.h). Rules, applied layer by layer to the tensor in hand:
 *  - a convolution needs every input channel: its input is gathered if it is a shard, and
 *    its output channels are split (column-parallel);
 *  - a dense layer on a sharded input (a column-parallel dense layer's units, or a
 *    convolution's channels flattened) is row-parallel: each device multiplies its input
 *    shard by its column block of the weight, and one all-reduce sums the partial outputs
 *    (Megatron's pairing: no gather before it). Otherwise (whole input, or the classifier
 *    before the loss) it is column-parallel on the whole input;
 *  - batch norm, relu, pooling and flatten work per channel, so they run on the shard;
 *  - a residual block is opened up into its sub-layers, each sharded by the rules above; the
 *    gathered block input feeds both its first convolution and the projection, and an
 *    identity shortcut adds the device's own channels of the block input;
 *  - a GPT block is split as Megatron-LM splits it (gpt_block below); the embedding, the layer
 *    norms and the head tied to the embedding run whole on every device (replicated);
 *  - the output is gathered whole, so the loss sees every class on every device. */
#include "layer_plan.h"
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mx_tp_plan *p;
    const mx_params *ref; /* the whole model, set up once for its shapes and tensor table */
    int cap_steps, cap_tensors;
    int *gathered;        /* [tensor] the FULL tensor gathered from this SHARD, or -1 */
    const char *what;     /* the layer being planned, for messages */
} builder;

/* Contiguous channel ranges, as even as the count allows (the first devices get fewer). */
static void split_even(int c, int k, int *bound)
{
    for (int d = 0; d <= k; d++) bound[d] = (int)((long)c * d / k);
}

static int new_tensor(builder *b, mx_shape shape, tp_layout layout, const int *bound)
{
    mx_tp_plan *p = b->p;
    if (p->ntensors == b->cap_tensors) {
        const int nc = b->cap_tensors ? 2 * b->cap_tensors : 64;
        tp_tensor *t = realloc(p->tensors, sizeof *t * nc);
        int *g = realloc(b->gathered, sizeof *g * nc);
        if (t) p->tensors = t;
        if (g) b->gathered = g;
        if (!t || !g) return mx_error(MX_ENOMEM, "out of memory planning the layer strategy");
        b->cap_tensors = nc;
    }
    tp_tensor *t = &p->tensors[p->ntensors];
    memset(t, 0, sizeof *t);
    t->shape = shape;
    t->layout = layout;
    t->producer = p->nsteps; /* the step added next writes it */
    t->gpart_layer = -1;
    if (bound) memcpy(t->bound, bound, sizeof t->bound);
    b->gathered[p->ntensors] = -1;
    return p->ntensors++;
}

static int add_step(builder *b, tp_op op, tp_par par, const mx_layer_spec *spec, int in, int in2, int out, int layer,
                    int param_first, int nparams)
{
    mx_tp_plan *p = b->p;
    if (p->nsteps == b->cap_steps) {
        const int nc = b->cap_steps ? 2 * b->cap_steps : 64;
        tp_step *s = realloc(p->steps, sizeof *s * nc);
        if (!s) return mx_error(MX_ENOMEM, "out of memory planning the layer strategy");
        p->steps = s;
        b->cap_steps = nc;
    }
    tp_step *s = &p->steps[p->nsteps++];
    *s = (tp_step){.op = op, .par = par, .in = in, .in2 = in2, .out = out, .layer = layer,
                   .param_first = param_first, .nparams = nparams, .groups = 1, .tied_by = -1, .shares = -1};
    if (spec) s->spec = *spec;
    tp_tensor *t = p->tensors;
    t[out].needs_grad = nparams > 0 || t[in].needs_grad || (in2 >= 0 && t[in2].needs_grad);
    /* who reads each input's gradient back: column-parallel layers give partial sums */
    const int ins[2] = {in, in2};
    for (int j = 0; j < 2; j++) {
        if (ins[j] < 0 || !t[ins[j]].needs_grad) continue;
        if (op == TP_LAYER && par == TP_COL) {
            t[ins[j]].col_uses++;
            if (t[ins[j]].gpart_layer < 0) t[ins[j]].gpart_layer = layer;
        } else {
            t[ins[j]].other_uses++;
        }
    }
    return MX_OK;
}

/* The whole tensor t, gathering it from its shards (once: the residual block's input feeds
 * two convolutions). */
static int ensure_full(builder *b, int t, int layer, int *out)
{
    const tp_tensor *x = &b->p->tensors[t];
    if (x->layout == TP_FULL) {
        *out = t;
        return MX_OK;
    }
    if (x->layout != TP_SHARD || x->seq)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s reads a %s (internal planning error)", b->what,
                        x->seq ? "sequence's feature shard" : "partial sum");
    if (b->gathered[t] < 0) {
        const mx_shape shape = x->shape;
        int g = new_tensor(b, shape, TP_FULL, NULL);
        MX_TRY(g);
        MX_TRY(add_step(b, TP_GATHER, TP_REPL, NULL, t, -1, g, layer, 0, 0));
        b->gathered[t] = g;
    }
    *out = b->gathered[t];
    return MX_OK;
}

static int split_for(builder *b, int channels, const char *noun, int *bound)
{
    const int k = b->p->k;
    if (channels < k)
        return mx_error(MX_EINVAL, "layer strategy on %d devices: %s has %d %s to split; accepted 1..%d devices", k,
                        b->what, channels, noun, channels);
    split_even(channels, k, bound);
    return MX_OK;
}

/* A column-parallel layer (convolution or dense) on the whole of tensor `in`: its output
 * is a shard of `shape`'s channels. */
static int col_layer(builder *b, const mx_layer_spec *spec, int in, mx_shape shape, int layer, int pf, int np,
                     int *out)
{
    int full, bound[MX_MAX_DEVICES + 1];
    MX_TRY(ensure_full(b, in, layer, &full));
    MX_TRY(split_for(b, shape.c, strcmp(spec->kind, "dense") == 0 ? "units" : "channels", bound));
    const int o = new_tensor(b, shape, TP_SHARD, bound);
    MX_TRY(o);
    MX_TRY(add_step(b, TP_LAYER, TP_COL, spec, full, -1, o, layer, pf, np));
    *out = o;
    return MX_OK;
}

/* A layer that works per channel: on the shard where the input is one, else whole. */
static int chan_layer(builder *b, const mx_layer_spec *spec, int in, mx_shape shape, int layer, int pf, int np,
                      int *out)
{
    const tp_tensor *x = &b->p->tensors[in];
    int bound[MX_MAX_DEVICES + 1];
    const tp_layout layout = x->layout;
    /* flatten turns channel c into features [c*h*w, (c+1)*h*w): the shard stays contiguous */
    const int per = shape.c / x->shape.c;
    for (int d = 0; d <= b->p->k; d++) bound[d] = x->bound[d] * per;
    if (layout == TP_PARTIAL)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s reads a partial sum (internal planning error)", b->what);
    const int o = new_tensor(b, shape, layout, layout == TP_SHARD ? bound : NULL);
    MX_TRY(o);
    MX_TRY(add_step(b, TP_LAYER, layout == TP_SHARD ? TP_CHAN : TP_REPL, spec, in, -1, o, layer, pf, np));
    *out = o;
    return MX_OK;
}

static mx_shape conv_out(mx_shape in, int oc, int k, int stride, int pad)
{
    return (mx_shape){oc, (in.h + 2 * pad - k) / stride + 1, (in.w + 2 * pad - k) / stride + 1};
}

/* A residual basic block (engine/layers/residual.c) opened up: conv1 shard -> bn1 -> relu ->
 * gather -> conv2 shard -> bn2, plus the shortcut (projection conv shard + bn on the
 * gathered block input, or the device's own channels of it), add, relu. Its tensors are
 * the block's in engine/layers/residual.c's order: C1.w, B1.gamma, B1.beta, C2.w, B2.gamma,
 * B2.beta, then PC.w, PB.gamma, PB.beta when it projects. */
static int residual_block(builder *b, const mx_layer_spec *spec, int in, int layer, int *out)
{
    const mx_layer *L = &b->ref->layers[layer];
    const int oc = spec->units, stride = spec->stride ? spec->stride : 1, P = L->param_first;
    const mx_shape x = b->p->tensors[in].shape;
    const int project = stride != 1 || oc != x.c;
    if (L->param_count != (project ? 9 : 6))
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s has %d tensors, not a basic block's", b->what,
                        L->param_count);
    const mx_layer_spec c1s = {.kind = "conv2d", .units = oc, .k = 3, .stride = stride, .pad = 1};
    const mx_layer_spec c2s = {.kind = "conv2d", .units = oc, .k = 3, .stride = 1, .pad = 1};
    const mx_layer_spec pcs = {.kind = "conv2d", .units = oc, .k = 1, .stride = stride, .pad = 0};
    const mx_layer_spec bn = {.kind = "batchnorm"}, relu = {.kind = "relu"};
    const mx_shape s1 = conv_out(x, oc, 3, stride, 1);
    int c1, b1, r1, c2, b2, sc, sum;
    MX_TRY(col_layer(b, &c1s, in, s1, layer, P, 1, &c1));
    MX_TRY(chan_layer(b, &bn, c1, s1, layer, P + 1, 2, &b1));
    MX_TRY(chan_layer(b, &relu, b1, s1, layer, 0, 0, &r1));
    MX_TRY(col_layer(b, &c2s, r1, s1, layer, P + 3, 1, &c2));
    MX_TRY(chan_layer(b, &bn, c2, s1, layer, P + 4, 2, &b2));
    if (project) {
        int pc;
        MX_TRY(col_layer(b, &pcs, in, conv_out(x, oc, 1, stride, 0), layer, P + 6, 1, &pc));
        MX_TRY(chan_layer(b, &bn, pc, s1, layer, P + 7, 2, &sc));
    } else {
        if (b->p->tensors[in].layout != TP_SHARD)
            return mx_error(MX_EUNSUPPORTED, "layer strategy: %s adds its input unsharded; accepted after a "
                            "sharded layer", b->what);
        sc = in; /* same channel count, so the same split as the main branch */
    }
    int bound[MX_MAX_DEVICES + 1]; /* copied: new_tensor may move the table */
    memcpy(bound, b->p->tensors[b2].bound, sizeof bound);
    MX_TRY(sum = new_tensor(b, s1, TP_SHARD, bound));
    MX_TRY(add_step(b, TP_ADD, TP_CHAN, NULL, b2, sc, sum, layer, 0, 0));
    return chan_layer(b, &relu, sum, s1, layer, 0, 0, out);
}

/* ---- the transformer, split as Megatron-LM splits it (Shoeybi et al. 2019) */

/* A layer every device runs whole on the whole input, its tensors replicated: a transformer's
 * layer norms, embedding and head. Their inputs are whole (the all-reduces' sums are the same
 * bits on every member), so their outputs, their gradients and so their updates are the same
 * on every device: the copies never drift apart (mx_tp_check_replicas checks it). */
static int repl_layer(builder *b, const mx_layer_spec *spec, int in, mx_shape shape, int layer, int pf, int np,
                      int *out)
{
    int full = in;
    MX_TRY(ensure_full(b, in, layer, &full));
    const int o = new_tensor(b, shape, TP_FULL, NULL);
    MX_TRY(o);
    MX_TRY(add_step(b, TP_LAYER, TP_REPL, spec, full, -1, o, layer, pf, np));
    *out = o;
    return MX_OK;
}

/* A step of a GPT block on sequence rows {1, T, w}, its output laid out as given (a SHARD
 * splits the features at bound). */
static int seq_step(builder *b, tp_op op, tp_par par, const mx_layer_spec *spec, int in, int in2, int w,
                    tp_layout layout, const int *bound, int layer, int pf, int np, int *out)
{
    const mx_shape shape = {1, b->p->tensors[in].shape.h, w};
    const int o = new_tensor(b, shape, layout, bound);
    MX_TRY(o);
    b->p->tensors[o].seq = 1;
    MX_TRY(add_step(b, op, par, spec, in, in2, o, layer, pf, np));
    *out = o;
    return MX_OK;
}

/* A GPT block (engine/layers/gpt_block.c) over k devices, its tensors in the block's order:
 * LN1 gamma, beta; QKV w [3C][C], b [3C]; PROJ w [C][C], b [C]; LN2 gamma, beta; FC w [4C][C],
 * b [4C]; FCP w [C][4C], b [C]. Each device:
 *   ln1 = LN1(x), replicated;
 *   qkv = QKV's rows of the q, k and v of its heads [d*H/k, (d+1)*H/k) (column-parallel, in
 *         three row groups), so that attention runs on its own heads alone;
 *   proj = PROJ over its heads' columns (row-parallel), all-reduced; x1 = proj + x;
 *   ln2 = LN2(x1), replicated; fc = FC's 4C/k units (column-parallel); GELU on them;
 *   fcp = FCP over them (row-parallel), all-reduced; out = fcp + x1.
 * Forward: one all-reduce per sublayer (Megatron's g). Backward: ln1's and ln2's gradients,
 * read by column-parallel layers, are partial sums, all-reduced before the layer norms'
 * backward (Megatron's f); the residual stream stays whole. The row-parallel biases are added
 * once, by device 0 to its partial sum (the layer strategy's rule for row-parallel layers). */
static int gpt_block(builder *b, const mx_layer_spec *spec, int in, int layer, int *out)
{
    const mx_layer *L = &b->ref->layers[layer];
    const mx_shape x = b->p->tensors[in].shape;
    const int k = b->p->k, C = x.w, H = spec->heads, P = L->param_first;
    if (b->p->tensors[in].layout != TP_FULL)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s reads a split input (internal planning error)", b->what);
    if (L->param_count != 12 || b->ref->params[P + 2].count != (size_t)3 * C * C ||
        b->ref->params[P + 8].count != (size_t)4 * C * C)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s has %d tensors, not a GPT block's 12 (two layer norms, "
                        "QKV, projection, MLP)", b->what, L->param_count);
    if (H < 1 || H % k != 0 || C % H != 0 || (4 * C) % k != 0)
        return mx_error(MX_EINVAL, "layer strategy: %s has heads %d over %d devices (and %d MLP units); accepted "
                        "a device count that divides the heads", b->what, H, k, 4 * C);
    int heads[MX_MAX_DEVICES + 1], qkv_b[MX_MAX_DEVICES + 1], fc_b[MX_MAX_DEVICES + 1];
    for (int d = 0; d <= k; d++) {
        heads[d] = H / k * d * (C / H); /* the features of the device's heads */
        qkv_b[d] = 3 * heads[d];         /* its q, k and v columns: a count, never gathered */
        fc_b[d] = 4 * C / k * d;
    }
    const mx_layer_spec ln = {.kind = "layernorm"}, att = {.kind = "attention", .heads = H}, gelu = {.kind = "gelu"};
    const mx_layer_spec qkv = {.kind = "linear", .units = 3 * C, .bias = 1};
    const mx_layer_spec proj = {.kind = "linear", .units = C, .bias = 1};
    const mx_layer_spec fc = {.kind = "linear", .units = 4 * C, .bias = 1};
    int ln1, q, a, part, sum, x1, ln2, f, g;
    MX_TRY(repl_layer(b, &ln, in, x, layer, P, 2, &ln1));
    MX_TRY(seq_step(b, TP_LAYER, TP_COL, &qkv, ln1, -1, 3 * C, TP_SHARD, qkv_b, layer, P + 2, 2, &q));
    b->p->steps[b->p->nsteps - 1].groups = 3;
    MX_TRY(seq_step(b, TP_LAYER, TP_HEADS, &att, q, -1, C, TP_SHARD, heads, layer, 0, 0, &a));
    MX_TRY(seq_step(b, TP_LAYER, TP_ROW, &proj, a, -1, C, TP_PARTIAL, NULL, layer, P + 4, 2, &part));
    MX_TRY(seq_step(b, TP_ALLREDUCE, TP_REPL, NULL, part, -1, C, TP_FULL, NULL, layer, 0, 0, &sum));
    MX_TRY(seq_step(b, TP_ADD, TP_REPL, NULL, sum, in, C, TP_FULL, NULL, layer, 0, 0, &x1));
    MX_TRY(repl_layer(b, &ln, x1, x, layer, P + 6, 2, &ln2));
    MX_TRY(seq_step(b, TP_LAYER, TP_COL, &fc, ln2, -1, 4 * C, TP_SHARD, fc_b, layer, P + 8, 2, &f));
    MX_TRY(seq_step(b, TP_LAYER, TP_CHAN, &gelu, f, -1, 4 * C, TP_SHARD, fc_b, layer, 0, 0, &g));
    MX_TRY(seq_step(b, TP_LAYER, TP_ROW, &proj, g, -1, C, TP_PARTIAL, NULL, layer, P + 10, 2, &part));
    MX_TRY(seq_step(b, TP_ALLREDUCE, TP_REPL, NULL, part, -1, C, TP_FULL, NULL, layer, 0, 0, &sum));
    return seq_step(b, TP_ADD, TP_REPL, NULL, sum, x1, C, TP_FULL, NULL, layer, 0, 0, out);
}

/* The language-model head, replicated, in the parameter set of the embedding it is tied to
 * (the last one planned), so that their table is one tensor on each device. A head over a
 * vocabulary split across the devices (Megatron's VocabParallelEmbedding with a parallel
 * cross-entropy) would hold V/k rows of the table and compute V/k of the logits on each
 * device: the largest matrix of a small GPT (GPT-2's 50304 x 768 against 12 x 7.1M in its
 * blocks) and its GEMM, which every device here computes whole. A known limit. */
static int tied_head(builder *b, const mx_layer_spec *spec, int in, int layer, int *out)
{
    int e = -1;
    for (int i = 0; i < b->p->nsteps; i++)
        if (b->p->steps[i].op == TP_LAYER && strcmp(b->p->steps[i].spec.kind, "embedding") == 0) e = i;
    const mx_layer *L = &b->ref->layers[layer];
    if (e < 0 || b->p->steps[e].tied_by >= 0 || b->ref->layers[b->p->steps[e].layer].out.w != L->in.w ||
        b->ref->layers[b->p->steps[e].layer].out.h != L->in.h)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: %s is tied to no embedding of its input's shape planned "
                        "before it", b->what);
    MX_TRY(repl_layer(b, spec, in, L->out, layer, L->param_first, L->param_count, out));
    b->p->steps[b->p->nsteps - 1].shares = e;
    b->p->steps[e].tied_by = b->p->nsteps - 1;
    return MX_OK;
}

static int plan_layers(builder *b, const mx_layer_spec *specs, int nspecs, int with_loss, int *cur)
{
    const mx_params *ref = b->ref;
    char what[64];
    b->what = what;
    for (int i = 0; i < nspecs; i++) {
        const mx_layer_spec *s = &specs[i];
        const mx_layer *L = &ref->layers[i];
        snprintf(what, sizeof what, "layer %d (%s)", i, s->kind);
        const tp_tensor *x = &b->p->tensors[*cur];
        if (strcmp(s->kind, "conv2d") == 0) {
            MX_TRY(col_layer(b, s, *cur, L->out, i, L->param_first, L->param_count, cur));
        } else if (strcmp(s->kind, "dense") == 0 && x->layout == TP_SHARD && !(with_loss && i == nspecs - 1)) {
            int part, full;
            MX_TRY(part = new_tensor(b, L->out, TP_PARTIAL, NULL));
            MX_TRY(add_step(b, TP_LAYER, TP_ROW, s, *cur, -1, part, i, L->param_first, L->param_count));
            MX_TRY(full = new_tensor(b, L->out, TP_FULL, NULL));
            MX_TRY(add_step(b, TP_ALLREDUCE, TP_REPL, NULL, part, -1, full, i, 0, 0));
            *cur = full;
        } else if (strcmp(s->kind, "dense") == 0) {
            MX_TRY(col_layer(b, s, *cur, L->out, i, L->param_first, L->param_count, cur));
        } else if (strcmp(s->kind, "residual") == 0) {
            MX_TRY(residual_block(b, s, *cur, i, cur));
        } else if (strcmp(s->kind, "gpt_block") == 0) {
            MX_TRY(gpt_block(b, s, *cur, i, cur));
        } else if (strcmp(s->kind, "embedding") == 0 || strcmp(s->kind, "layernorm") == 0) {
            MX_TRY(repl_layer(b, s, *cur, L->out, i, L->param_first, L->param_count, cur));
        } else if (strcmp(s->kind, "lm_head") == 0) {
            MX_TRY(tied_head(b, s, *cur, i, cur));
        } else if (strcmp(s->kind, "batchnorm") == 0 || strcmp(s->kind, "relu") == 0 ||
                   strcmp(s->kind, "maxpool") == 0 || strcmp(s->kind, "avgpool_global") == 0 ||
                   strcmp(s->kind, "flatten") == 0) {
            MX_TRY(chan_layer(b, s, *cur, L->out, i, L->param_first, L->param_count, cur));
        } else {
            return mx_error(MX_EUNSUPPORTED, "layer strategy: cannot shard %s; accepted conv2d, dense, batchnorm, "
                            "relu, maxpool, avgpool_global, flatten, residual, gpt_block, embedding, layernorm, "
                            "lm_head", what);
        }
    }
    snprintf(what, sizeof what, "the output");
    /* the output whole on every device (the loss's logits) */
    return ensure_full(b, *cur, nspecs - 1, cur);
}

/* Backward runs the steps in reverse: the last consumer of a tensor (in forward order)
 * writes its gradient, the earlier ones add to it. A tensor's gradient is either partial
 * (all its consumers column-parallel) or whole: a mix would need the whole parts divided
 * among the devices, which no model here has. */
static int finish(mx_tp_plan *p)
{
    char *written = calloc(p->ntensors, 1);
    if (!written) return mx_error(MX_ENOMEM, "out of memory planning the layer strategy");
    for (int i = p->nsteps - 1; i >= 0; i--) {
        tp_step *s = &p->steps[i];
        if (p->tensors[s->in].needs_grad) s->acc = written[s->in], written[s->in] = 1;
        if (s->in2 >= 0 && p->tensors[s->in2].needs_grad) s->acc2 = written[s->in2], written[s->in2] = 1;
    }
    free(written);
    for (int t = 0; t < p->ntensors; t++) {
        tp_tensor *x = &p->tensors[t];
        if (x->col_uses && x->other_uses)
            return mx_error(MX_EUNSUPPORTED, "layer strategy: a tensor feeds both sharded and whole layers "
                            "(internal planning limit)");
        x->gpart = x->layout == TP_FULL && x->col_uses > 0;
    }
    return MX_OK;
}

/* The whole model's tensor table and the one-device layout (engine/core/params.c's carve: each tensor
 * 16-float aligned). */
static int copy_table(mx_tp_plan *p, const mx_params *ref)
{
    p->nwhole = ref->nparams;
    p->whole = malloc(sizeof *p->whole * (ref->nparams ? ref->nparams : 1));
    p->offset = malloc(sizeof *p->offset * (ref->nparams ? ref->nparams : 1));
    if (!p->whole || !p->offset) return mx_error(MX_ENOMEM, "out of memory planning the layer strategy");
    memcpy(p->whole, ref->params, sizeof *p->whole * ref->nparams);
    for (int i = 0; i < ref->nparams; i++) {
        p->offset[i] = p->nweights;
        p->nweights += (ref->params[i].count + 15) / 16 * 16;
    }
    p->nlayers = ref->nlayers;
    p->flops = mx_params_flops(ref, 0, ref->nlayers);
    return MX_OK;
}

int mx_tp_plan_create(mx_tp_plan **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                      int k, int with_loss, int input_grad)
{
    *out = NULL;
    if (k < 1 || k > MX_MAX_DEVICES || k > MX_COMM_MAX)
        return mx_error(MX_EINVAL, "layer strategy: device count %d; accepted 1..%d", k, MX_MAX_DEVICES);
    if (nspecs < 1 || nspecs > MX_MAX_LAYERS)
        return mx_error(MX_EINVAL, "layer strategy: %d layers; accepted 1..%d", nspecs, MX_MAX_LAYERS);
    mx_tp_plan *p = calloc(1, sizeof *p);
    if (!p) return mx_error(MX_ENOMEM, "out of memory planning the layer strategy");
    p->k = k;
    p->init_sigma = 0.01f;
    mx_params *ref = NULL;
    builder b = {.p = p};
    /* Holding layer 0 only: every layer is set up (shapes, the tensor table) but only the
     * first one's tensors get storage, briefly. */
    int rc = mx_params_create(&ref, be, specs, nspecs, in, 0, 1);
    b.ref = ref;
    if (rc == MX_OK) rc = copy_table(p, ref);
    int x = rc == MX_OK ? new_tensor(&b, in, TP_FULL, NULL) : rc;
    if (x < 0) rc = x;
    if (rc == MX_OK) {
        p->tensors[x].producer = -1;
        p->tensors[x].needs_grad = input_grad;
        rc = plan_layers(&b, specs, nspecs, with_loss, &p->out);
    }
    if (rc == MX_OK) rc = finish(p);
    mx_params_destroy(ref);
    free(b.gathered);
    if (rc < 0) {
        mx_tp_plan_destroy(p);
        return rc;
    }
    *out = p;
    return MX_OK;
}

void mx_tp_plan_destroy(mx_tp_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->tensors);
    free(p->whole);
    free(p->offset);
    free(p);
}
