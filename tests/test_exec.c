/* Parameter sets and execution contexts (engine/core/params.h, engine/core/exec.h). Everything here is
 * compared bit for bit (memcmp), with no tolerance: the paths compared run the same layer
 * calls on the same buffers' values in the same order, so any difference is a bug (state
 * shared between contexts, a gradient lost at a cut, a stream that depends on the split).
 *  - a network cut into contexts [0, a), [a, n) (and three ways), chained by hand, ends
 *    with the weights and evaluation logits of one context after several SGD steps;
 *  - two micro-batches in flight through one parameter set (both forwards, then both
 *    backwards) accumulate the gradients of the two run one after the other;
 *  - a tensor initialised in k shards (elements, rows, columns) equals the slices of the
 *    tensor initialised whole, and a pipeline stage's parameter set holds the values the
 *    whole model's set holds. */
#include "check.h"
#include "engine/core/exec.h"
#include "engine/core/optim.h"
#include "engine/core/rng.h"
#include "base/status.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"

#include <stdlib.h>
#include <string.h>

#define BATCH 6
#define STEPS 3
#define SEED 11

static mx_backend *be;
static mx_dtype act_type = MX_F32; /* the contexts' activations (check_fusion sets 16-bit ones) */

typedef struct {
    const char *name;
    mx_shape in;
    mx_layer_spec specs[MX_MAX_LAYERS];
    int n;
    float *x;     /* host [STEPS + 1][BATCH][in] */
    int32_t *y;   /* host [STEPS + 1][BATCH] */
} model;

/* specs: NULL for the workload called name, else n layers of its own. */
static int model_make(model *m, const char *name, mx_shape in, const mx_layer_spec *specs, int n)
{
    m->name = name;
    m->in = in;
    if (specs) memcpy(m->specs, specs, sizeof *specs * n);
    m->n = specs ? n : mx_workload_find(name)->build(m->specs, in, 10);
    const size_t per = mx_shape_size(in), total = (size_t)(STEPS + 1) * BATCH;
    m->x = malloc(sizeof(float) * per * total);
    m->y = malloc(sizeof *m->y * total);
    mx_rng r;
    mx_rng_seed(&r, 5);
    for (size_t i = 0; i < per * total; i++) m->x[i] = (float)(2 * mx_rng_uniform(&r) - 1);
    for (size_t i = 0; i < total; i++) m->y[i] = (int32_t)mx_rng_below(&r, 10);
    return m->n > 0 && m->x && m->y;
}

static int model_load(model *m, const char *name, mx_shape in) { return model_make(m, name, in, NULL, 0); }

/* Trains STEPS steps of SGD with the layers cut at cuts[0] = 0 < cuts[1] < ... < cuts[k] = n
 * into k contexts, activations passed forward and gradients back by hand. Returns the
 * weights followed by the evaluation logits of the next batch (malloc'd), *count floats. */
static float *train_cut(const model *m, const int *cuts, int k, size_t *count)
{
    mx_params *ps;
    mx_exec *ex[8] = {0};
    float *din[8] = {0}; /* din[j]: gradient of context j's input, from context j */
    float *out = NULL;
    if (mx_params_create(&ps, be, m->specs, m->n, m->in, 0, m->n) < 0) goto fail;
    mx_params_init(ps, SEED, MX_WEIGHT_INIT_XAVIER, 0.01f);
    for (int j = 0; j < k; j++) {
        if (mx_exec_create_amp(&ex[j], ps, cuts[j], cuts[j + 1], BATCH, j == k - 1, act_type) < 0) goto fail;
        if (j) din[j] = be->ops->alloc(be, sizeof(float) * BATCH * mx_shape_size(ex[j]->in));
    }
    float *mom = calloc(ps->nweights, sizeof(float));
    const mx_optim opt = {.kind = MX_OPTIM_SGD, .lr = 0.05f, .momentum = 0.9f, .wd = 1e-4f};
    const size_t per = mx_shape_size(m->in);
    for (int s = 0; s < STEPS; s++) {
        mx_params_zero_grad(ps);
        mx_exec_set_batch(ex[0], m->x + (size_t)s * BATCH * per, NULL, BATCH);
        mx_exec_set_batch(ex[k - 1], NULL, m->y + s * BATCH, BATCH);
        const float *a = NULL;
        for (int j = 0; j < k; j++) a = mx_exec_forward(ex[j], a, BATCH, 1);
        int correct;
        mx_exec_loss(ex[k - 1], NULL, BATCH, 1.0f / BATCH, &correct);
        for (int j = k - 1; j >= 0; j--)
            mx_exec_backward(ex[j], BATCH, j == k - 1 ? NULL : din[j + 1], din[j], NULL, NULL);
        mx_optim_update(be, &opt, ps->params, 0, ps->nparams, ps->w, (mx_optim_state){mom, NULL}, ps->g, 1.0f);
    }
    free(mom);
    /* Evaluation logits read the batch-norm running statistics too. */
    mx_exec_set_batch(ex[0], m->x + (size_t)STEPS * BATCH * per, NULL, BATCH);
    const float *a = NULL;
    for (int j = 0; j < k; j++) a = mx_exec_forward(ex[j], a, BATCH, 0);
    *count = ps->nweights + BATCH * 10;
    out = malloc(sizeof(float) * *count);
    memcpy(out, ps->w, sizeof(float) * ps->nweights);
    memcpy(out + ps->nweights, a, sizeof(float) * BATCH * 10);
fail:
    if (!out) fprintf(stderr, "%s: %s\n", m->name, mx_last_error());
    for (int j = 0; j < k; j++) {
        mx_exec_destroy(ex[j]);
        if (din[j]) be->ops->free(be, din[j]);
    }
    mx_params_destroy(ps);
    return out;
}

static void check_cuts(const model *m, const int *points, int npoints)
{
    size_t n1, nk;
    const int whole[2] = {0, m->n};
    float *ref = train_cut(m, whole, 1, &n1);
    CHECK(ref != NULL, "%s: one context failed", m->name);
    if (!ref) return;
    for (int i = 0; i <= npoints; i++) {
        /* Each point alone, then all of them at once (several chained contexts). */
        int cuts[16] = {0}, k = 0;
        if (i < npoints) {
            cuts[1] = points[i];
            k = 2;
        } else {
            for (k = 0; k < npoints; k++) cuts[k + 1] = points[k];
            k++;
        }
        cuts[k] = m->n;
        float *w = train_cut(m, cuts, k, &nk);
        const int same = w && nk == n1 && memcmp(w, ref, sizeof(float) * n1) == 0;
        CHECK(same, "%s cut %s at %d: weights or logits differ from one context", m->name,
              i < npoints ? "once" : "everywhere", i < npoints ? points[i] : -1);
        printf("%-9s cut %s %-3d bit-identical: %s\n", m->name, i < npoints ? "at" : "all",
               i < npoints ? points[i] : npoints, same ? "ok" : "NOT OK");
        free(w);
    }
    free(ref);
}

/* Two micro-batches: one context after the other, then two contexts both in flight. */
static void check_in_flight(const model *m)
{
    mx_params *ps;
    mx_exec *a, *b;
    if (mx_params_create(&ps, be, m->specs, m->n, m->in, 0, m->n) < 0 ||
        mx_exec_create(&a, ps, 0, m->n, BATCH, 1) < 0 || mx_exec_create(&b, ps, 0, m->n, BATCH, 1) < 0) {
        CHECK(0, "%s: %s", m->name, mx_last_error());
        return;
    }
    mx_params_init(ps, SEED, MX_WEIGHT_INIT_XAVIER, 0.01f);
    const size_t per = mx_shape_size(m->in);
    float *seq = malloc(sizeof(float) * ps->nweights);
    double loss_seq[2], loss_fly[2];
    int correct;
    mx_params_zero_grad(ps);
    for (int i = 0; i < 2; i++) {
        mx_exec_set_batch(a, m->x + (size_t)i * BATCH * per, m->y + i * BATCH, BATCH);
        mx_exec_forward(a, NULL, BATCH, 1);
        loss_seq[i] = mx_exec_loss(a, NULL, BATCH, 1.0f / BATCH, &correct);
        mx_exec_backward(a, BATCH, NULL, NULL, NULL, NULL);
    }
    memcpy(seq, ps->g, sizeof(float) * ps->nweights);
    mx_params_zero_grad(ps);
    mx_exec *ctx[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        mx_exec_set_batch(ctx[i], m->x + (size_t)i * BATCH * per, m->y + i * BATCH, BATCH);
        mx_exec_forward(ctx[i], NULL, BATCH, 1);
        loss_fly[i] = mx_exec_loss(ctx[i], NULL, BATCH, 1.0f / BATCH, &correct);
    }
    /* Backwards in the sequential order, so the gradient sums round alike. */
    for (int i = 0; i < 2; i++) mx_exec_backward(ctx[i], BATCH, NULL, NULL, NULL, NULL);
    const int same = memcmp(seq, ps->g, sizeof(float) * ps->nweights) == 0 && loss_seq[0] == loss_fly[0] &&
                     loss_seq[1] == loss_fly[1];
    CHECK(same, "%s: two micro-batches in flight differ from the two in turn", m->name);
    printf("%-9s two micro-batches in flight bit-identical: %s\n", m->name, same ? "ok" : "NOT OK");
    free(seq);
    mx_exec_destroy(a);
    mx_exec_destroy(b);
    mx_params_destroy(ps);
}

/* Uneven cut j of [0, len) into k parts: the parts grow, so no two are alike. */
static size_t cut_at(size_t len, int j, int k) { return len * (size_t)(j * j) / (size_t)(k * k); }

static int shards_match(const mx_param *p, int idx, mx_weight_init kind, const float *whole, float *buf)
{
    /* Xavier's fan_in is the width of a weight's rows ([units][inputs], [oc][c*k*k]). */
    const size_t cols = p->fan_in > 0 && p->count % (size_t)p->fan_in == 0 ? (size_t)p->fan_in : p->count;
    const size_t rows = p->count / cols;
    int bad = 0;
    for (int k = 1; k <= 4; k++)
        for (int j = 0; j < k; j++) {
            const size_t lo = cut_at(p->count, j, k), hi = cut_at(p->count, j + 1, k);
            bad += mx_param_init_slice(p, idx, SEED, kind, 0.01f, lo, hi, buf) < 0 ||
                   memcmp(buf, whole + lo, sizeof(float) * (hi - lo)) != 0;
            const size_t r0 = cut_at(rows, j, k), r1 = cut_at(rows, j + 1, k);
            bad += mx_param_init_block(p, idx, SEED, kind, 0.01f, cols, r0, r1, 0, cols, buf) < 0 ||
                   memcmp(buf, whole + r0 * cols, sizeof(float) * (r1 - r0) * cols) != 0;
            const size_t c0 = cut_at(cols, j, k), c1 = cut_at(cols, j + 1, k);
            bad += mx_param_init_block(p, idx, SEED, kind, 0.01f, cols, 0, rows, c0, c1, buf) < 0;
            for (size_t r = 0; r < rows; r++)
                bad += memcmp(buf + r * (c1 - c0), whole + r * cols + c0, sizeof(float) * (c1 - c0)) != 0;
        }
    return bad;
}

static void check_init(const model *m, int both_kinds)
{
    mx_params *ps;
    if (mx_params_create(&ps, be, m->specs, m->n, m->in, 0, m->n) < 0) {
        CHECK(0, "%s: %s", m->name, mx_last_error());
        return;
    }
    for (int kind = 0; kind <= both_kinds; kind++) {
        mx_params_init(ps, SEED, (mx_weight_init)kind, 0.01f);
        int bad = 0;
        for (int i = 0; i < ps->nparams; i++) {
            const mx_param *p = &ps->params[i];
            float *whole = malloc(sizeof(float) * p->count), *buf = malloc(sizeof(float) * p->count);
            mx_param_init_slice(p, i, SEED, (mx_weight_init)kind, 0.01f, 0, p->count, whole);
            /* What the set holds is the whole tensor drawn the same way. */
            bad += memcmp(whole, ps->w + p->offset, sizeof(float) * p->count) != 0;
            const int b = shards_match(p, i, (mx_weight_init)kind, whole, buf);
            if (b) fprintf(stderr, "  %s: %d shards differ\n", p->name, b);
            bad += b;
            free(whole);
            free(buf);
        }
        CHECK(bad == 0, "%s (%s): %d shards differ from the whole tensor", m->name, kind ? "normal" : "xavier", bad);
        printf("%-9s split-independent init (%s, k = 1..4, %d tensors): %s\n", m->name, kind ? "normal" : "xavier",
               ps->nparams, bad ? "NOT OK" : "ok");
    }
    mx_params_destroy(ps);
}

/* A pipeline stage's set holds only its layers' tensors, with the whole model's values. */
static void check_stage(const model *m, int lo, int hi)
{
    mx_params *whole, *stage;
    mx_exec *e;
    if (mx_params_create(&whole, be, m->specs, m->n, m->in, 0, m->n) < 0 ||
        mx_params_create(&stage, be, m->specs, m->n, m->in, lo, hi) < 0) {
        CHECK(0, "%s: %s", m->name, mx_last_error());
        return;
    }
    mx_params_init(whole, SEED, MX_WEIGHT_INIT_XAVIER, 0.01f);
    mx_params_init(stage, SEED, MX_WEIGHT_INIT_XAVIER, 0.01f);
    int bad = stage->nweights >= whole->nweights || stage->nparams != whole->nparams;
    for (int i = stage->param_lo; i < stage->param_hi; i++)
        bad += memcmp(stage->w + stage->params[i].offset, whole->w + whole->params[i].offset,
                      sizeof(float) * stage->params[i].count) != 0;
    CHECK(bad == 0, "%s stage [%d, %d): %d tensors differ from the whole model's", m->name, lo, hi, bad);
    CHECK(mx_exec_create(&e, stage, 0, hi, BATCH, 0) == MX_EINVAL && strstr(mx_last_error(), "[0, "),
          "a context beyond the held layers: %s", mx_last_error());
    CHECK(mx_exec_create(&e, stage, lo, hi, BATCH, 1) == MX_EINVAL, "a loss context not at the end");
    CHECK(mx_exec_create(&e, stage, lo, hi, BATCH, 0) == MX_OK, "%s", mx_last_error());
    mx_exec_destroy(e);
    printf("%-9s stage [%d, %d) holds %zu of %zu floats, same values: %s\n", m->name, lo, hi, stage->nweights,
           whole->nweights, bad ? "NOT OK" : "ok");
    mx_params_destroy(stage);
    mx_params_destroy(whole);
}

/* A relu followed by a max pooling runs as one layer (engine/core/exec.c's fusion), and AMP skips the
 * roundings and expansions the layers' traits say change nothing: the same weights and logits
 * bit for bit as with MXBENCH_FUSE=off (every layer apart, every tensor rounded), in f32 and
 * both half types, whole and cut at `cut` (for a relu: a context starting there, whose input
 * gradient is the context's din). relu: the layer fused into the next (-1: none). */
static void check_fusion(const model *m, int relu, int cut)
{
    mx_params *ps;
    mx_exec *e = NULL;
    int fused = 0, hit = 0;
    if (mx_params_create(&ps, be, m->specs, m->n, m->in, 0, m->n) == MX_OK &&
        mx_exec_create(&e, ps, 0, m->n, BATCH, 1) == MX_OK)
        for (int k = 0; k < m->n; k++) fused += e->fused[k], hit |= k == relu && e->fused[k];
    CHECK(relu < 0 ? fused == 0 : hit, "%s: layer %d should be fused (%d fused)", m->name, relu, fused);
    mx_exec_destroy(e);
    mx_params_destroy(ps);
    const mx_dtype types[] = {MX_F32, MX_BF16, MX_F16};
    for (int t = 0; t < 3; t++) {
        act_type = types[t];
        const int whole[2] = {0, m->n}, two[3] = {0, cut, m->n};
        size_t n0, n1, n2;
        setenv("MXBENCH_FUSE", "off", 1);
        float *ref = train_cut(m, whole, 1, &n0);
        unsetenv("MXBENCH_FUSE");
        float *fused = train_cut(m, whole, 1, &n1), *split = train_cut(m, two, 2, &n2);
        const int same = ref && fused && split && n1 == n0 && n2 == n0 &&
                         memcmp(ref, fused, sizeof(float) * n0) == 0 && memcmp(ref, split, sizeof(float) * n0) == 0;
        CHECK(same, "%s, activations %s: fused and traits differ from plain", m->name, mx_dtype_name(types[t]));
        printf("%-9s fused and traits, %s, whole and cut at %d, bit-identical to plain: %s\n", m->name,
               mx_dtype_name(types[t]), cut, same ? "ok" : "NOT OK");
        free(ref), free(fused), free(split);
    }
    act_type = MX_F32;
}

static void check_errors(const model *m)
{
    mx_params *ps;
    CHECK(mx_params_create(&ps, be, m->specs, m->n, m->in, 2, 2) == MX_EINVAL && strstr(mx_last_error(), "[2, 2)"),
          "%s", mx_last_error());
    if (mx_params_create(&ps, be, m->specs, m->n, m->in, 0, m->n) < 0) return;
    float v[4];
    const mx_param *p = &ps->params[0];
    CHECK(mx_param_init_slice(p, 0, SEED, MX_WEIGHT_INIT_XAVIER, 0, 0, p->count + 1, v) == MX_EINVAL &&
              strstr(mx_last_error(), p->name), "%s", mx_last_error());
    CHECK(mx_param_init_block(p, 0, SEED, MX_WEIGHT_INIT_XAVIER, 0, p->count + 1, 0, 1, 0, 1, v) == MX_EINVAL,
          "a column count that does not divide the size");
    mx_params_destroy(ps);
}

int main(void)
{
    if (mx_backend_create(&be, "cpu", 0, 1) != MX_OK) return 1;
    model mlp, lenet, resnet;
    /* resnet18 on 16x16 inputs: the same layers (stages at 16, 8, 4, 2) at a fifth of the work. */
    if (!model_load(&mlp, "mlp", (mx_shape){1, 28, 28}) || !model_load(&lenet, "lenet", (mx_shape){1, 28, 28}) ||
        !model_load(&resnet, "resnet18", (mx_shape){3, 16, 16}))
        return 1;
    const int mlp_cuts[] = {1, 2, 3, 5};
    const int lenet_cuts[] = {1, 3, 6, 7, 9};
    /* resnet18: stem conv | bn | relu | 8 residual blocks (3..10) | pool | flatten | dense.
     * 4 and 8 cut inside stages 1 and 3 (between their two blocks), 5 between stages. */
    const int resnet_cuts[] = {1, 3, 4, 5, 8, 11, 13};
    check_cuts(&mlp, mlp_cuts, 4);
    check_cuts(&lenet, lenet_cuts, 5);
    check_cuts(&resnet, resnet_cuts, 7);
    check_in_flight(&mlp);
    check_in_flight(&lenet);
    check_in_flight(&resnet);
    check_init(&mlp, 1);
    check_init(&lenet, 1);
    check_init(&resnet, 0);
    check_stage(&lenet, 3, 7);
    check_stage(&resnet, 5, 11);
    check_errors(&lenet);
    check_fusion(&lenet, 1, 1);
    /* a relu as the model's first layer (no input gradient asked), overlapping windows on odd sizes */
    const mx_layer_spec first[] = {{.kind = "relu"}, {.kind = "maxpool", .k = 3, .stride = 2},
                                   {.kind = "flatten"}, {.kind = "dense", .units = 10}};
    model pool;
    if (!model_make(&pool, "relu-pool", (mx_shape){2, 11, 9}, first, 4)) return 1;
    check_fusion(&pool, 0, 2);
    check_fusion(&mlp, -1, 3);
    check_fusion(&resnet, -1, 5);
    free(pool.x), free(pool.y);
    model *all[] = {&mlp, &lenet, &resnet};
    for (int i = 0; i < 3; i++) free(all[i]->x), free(all[i]->y);
    mx_backend_destroy(be);
    return check_summary("test_exec");
}
