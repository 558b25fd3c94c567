/* The transformer's row-wise and elementwise layers (engine/layers/embedding.c, layernorm.c,
 * gelu.c, linear.c, lm_head.c) and the CPU's kernels under them (engine/cpu/seq.c), on odd
 * shapes (T = 5, widths 7 and 12, n = 3): finite-difference gradient checks of every input and
 * tensor (the rule of tests/gradcheck.h), parameter gradients that accumulate and input
 * gradients that are written; forward values against naive references in double; the tied
 * token table taking the gradients of both the head and the embedding; token ids out of range
 * (no read out of bounds, the sticky error set); results independent of the thread count; and
 * the setups the layers refuse. */
#include "gradcheck.h"
#include "engine/core/backends.h"
#include "engine/cpu/cpu.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEQ 5    /* T */
#define VOCAB 11 /* V */
#define BATCH 3  /* n */

static mx_backend *be;
static mx_rng rng;

static void fill_uniform(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(2 * mx_rng_uniform(&rng) - 1);
}

static void fill_ids(float *x, size_t n, int vocab)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)mx_rng_below(&rng, (uint32_t)vocab);
}

/* specs with a flatten appended, parameters drawn from a normal of sigma 0.5 and moved off 1
 * and 0 (layer norm's gamma and beta, biases), and an input batch: token ids below ids_vocab,
 * or uniform values where ids_vocab is 0. NULL when the net cannot be built. */
static mx_net *make_net(const char *label, const mx_layer_spec *specs, int nspecs, mx_shape in, int ids_vocab)
{
    mx_layer_spec all[8];
    memcpy(all, specs, sizeof *specs * nspecs);
    all[nspecs] = (mx_layer_spec){.kind = "flatten"};
    mx_net *net;
    const int rc = mx_net_create(&net, be, all, nspecs + 1, in, BATCH);
    CHECK(rc == MX_OK, "%s: create failed: %s", label, mx_last_error());
    if (rc) return NULL;
    mx_net_init_params(net, 7, MX_WEIGHT_INIT_NORMAL, 0.5f);
    for (size_t i = 0; i < net->nweights; i++) net->w[i] += 0.3f * (float)(mx_rng_uniform(&rng) - 0.5);
    const size_t nin = BATCH * mx_shape_size(in);
    if (ids_vocab)
        fill_ids(net->x, nin, ids_vocab);
    else
        fill_uniform(net->x, nin);
    return net;
}

static size_t out_count(const mx_net *net) { return BATCH * mx_shape_size(net->layers[net->nlayers - 1].out); }

/* Gradients of every tensor of the net and of its input (token ids have none: their gradient
 * must be written as zeros) by finite differences; then a second backward must add the same
 * parameter gradients again and write the same input gradient. */
static void check_grads(const char *label, const mx_layer_spec *specs, int nspecs, mx_shape in, int ids_vocab)
{
    mx_net *net = make_net(label, specs, nspecs, in, ids_vocab);
    if (!net) return;
    const size_t nin = BATCH * mx_shape_size(in), nout = out_count(net);
    float *r = malloc(sizeof(float) * nout), *din = malloc(sizeof(float) * nin), *din1 = malloc(sizeof(float) * nin);
    float *g1 = malloc(sizeof(float) * net->nweights);
    fill_uniform(r, nout);
    for (size_t i = 0; i < nin; i++) din[i] = 7.0f; /* must be overwritten */
    mx_net_zero_grad(net);
    gc_objective(net, BATCH, r);
    gc_backward(net, BATCH, r, din);

    int bad = 0;
    if (ids_vocab) {
        for (size_t i = 0; i < nin; i++) bad += din[i] != 0.0f;
        CHECK(bad == 0, "%s: %d gradients of token ids are not 0", label, bad);
    } else {
        bad += gc_probe("input", net, BATCH, r, net->x, nin, din, GC_STEP, &rng);
    }
    for (int p = 0; p < net->nparams; p++) {
        const mx_param *pr = &net->params[p];
        bad += gc_probe(pr->name, net, BATCH, r, net->w + pr->offset, pr->count, net->g + pr->offset, GC_STEP, &rng);
    }
    CHECK(bad == 0, "%s: %d gradient elements disagree with finite differences", label, bad);

    memcpy(g1, net->g, sizeof(float) * net->nweights);
    memcpy(din1, din, sizeof(float) * nin);
    for (size_t i = 0; i < nin; i++) din[i] = -3.0f;
    gc_objective(net, BATCH, r);
    gc_backward(net, BATCH, r, din);
    int acc = 0;
    for (size_t i = 0; i < net->nweights; i++) acc += fabsf(net->g[i] - 2 * g1[i]) > 1e-5f * (1 + fabsf(g1[i]));
    CHECK(acc == 0, "%s: %d parameter gradients did not accumulate (+=) over two backwards", label, acc);
    CHECK(memcmp(din, din1, sizeof(float) * nin) == 0, "%s: a second backward wrote another input gradient", label);
    printf("%-44s %s\n", label, bad || acc ? "NOT OK" : "ok");
    free(r), free(din), free(din1), free(g1);
    mx_net_destroy(net);
}

/* The tensor of the net named "<layer>.<name>". */
static float *tensor(const mx_net *net, const char *name)
{
    for (int p = 0; p < net->nparams; p++) {
        const char *full = net->params[p].name, *dot = strchr(full, '.');
        if (dot && strcmp(dot + 1, name) == 0) return net->w + net->params[p].offset;
    }
    CHECK(0, "no tensor %s", name);
    return NULL;
}

/* ---- forward values against naive references */

/* out[s][t] = wte[id] + wpe[t], exactly (one float add). */
static void check_embedding_values(int c)
{
    const mx_layer_spec s = {.kind = "embedding", .units = c, .vocab = VOCAB};
    mx_net *net = make_net("embedding values", &s, 1, (mx_shape){1, 1, SEQ}, VOCAB);
    if (!net) return;
    mx_net_forward(net, BATCH, 1);
    const float *wte = tensor(net, "embedding.wte"), *wpe = tensor(net, "embedding.wpe"), *out = net->act[0];
    int bad = 0;
    for (int r = 0; r < BATCH * SEQ; r++)
        for (int j = 0; j < c; j++) bad += out[r * c + j] != wte[(int)net->x[r] * c + j] + wpe[(r % SEQ) * c + j];
    CHECK(bad == 0, "embedding C=%d: %d values differ from wte[id] + wpe[t]", c, bad);
    mx_net_destroy(net);
}

static void check_layernorm_values(int w)
{
    const mx_layer_spec s = {.kind = "layernorm"};
    mx_net *net = make_net("layernorm values", &s, 1, (mx_shape){1, SEQ, w}, 0);
    if (!net) return;
    for (int i = 0; i < BATCH * SEQ * w; i++) net->x[i] = 3 * net->x[i] + 10; /* a mean far from 0 */
    mx_net_forward(net, BATCH, 1);
    const float *g = tensor(net, "layernorm.g"), *b = tensor(net, "layernorm.b");
    float *ref = malloc(sizeof(float) * BATCH * SEQ * w);
    for (int r = 0; r < BATCH * SEQ; r++) {
        const float *x = net->x + r * w;
        double mu = 0, var = 0;
        for (int j = 0; j < w; j++) mu += x[j];
        mu /= w;
        for (int j = 0; j < w; j++) var += (x[j] - mu) * (x[j] - mu);
        const double rstd = 1 / sqrt(var / w + 1e-5);
        for (int j = 0; j < w; j++) ref[r * w + j] = (float)((x[j] - mu) * rstd * g[j] + b[j]);
    }
    const double e = check_rel_diff(net->act[0], ref, (size_t)BATCH * SEQ * w);
    CHECK(e <= 2e-6, "layernorm W=%d: off the reference by %.3g", w, e);
    free(ref);
    mx_net_destroy(net);
}

/* GPT-2's formula in double. Near its negative tail 1 + tanh(u) cancels even in double, so the
 * values are also held to x / (1 + e^(-2u)), the same function without the cancellation. */
static double ref_gelu_tanh(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double ref_gelu_exp(double x) { return x / (1 + exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double ref_gelu_grad(double x)
{
    const double t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

static void check_gelu_values(void)
{
    enum { N = 2401 + 8 };
    float x[N], y[N], d[N], ones[N];
    for (int i = 0; i < 2401; i++) x[i] = -12.0f + 0.01f * (float)i;
    const float special[8] = {0.0f, -0.0f, 1e-6f, -1e-6f, 30.0f, -30.0f, 1e20f, -1e30f};
    memcpy(x + 2401, special, sizeof special);
    for (int i = 0; i < N; i++) ones[i] = 1.0f;
    be->ops->gelu_forward(be, N, y, x);
    be->ops->gelu_backward(be, N, d, ones, x);
    int bad = 0, badg = 0;
    for (int i = 0; i < N; i++) {
        const double xi = x[i], a = fabs(xi) > 1 ? fabs(xi) : 1, ref = ref_gelu_exp(xi);
        /* float's rounding of u (2^-24 relative an operation) is an error of e^(-2u)'s exponent:
         * hold the values to 1e-6 (1 + |2u|) relative to the reference */
        const double u2 = 2 * 0.7978845608028654 * fabs(xi + 0.044715 * xi * xi * xi);
        const int off = !(fabs(y[i] - ref_gelu_tanh(xi)) <= 1e-6 * a) ||
                        (fabs(xi) <= 10 && !(fabs(y[i] - ref) <= 1e-6 * (1 + u2) * fabs(ref) + 1e-37));
        const int offg = !(fabs(d[i] - ref_gelu_grad(x[i])) <= 2e-6);
        if ((off || offg) && bad + badg < 3)
            fprintf(stderr, "  gelu(%g) = %.9g (reference %.9g), gradient %.9g (reference %.9g)\n", x[i], y[i],
                    ref_gelu_exp(x[i]), d[i], ref_gelu_grad(x[i]));
        bad += off;
        badg += offg;
    }
    CHECK(bad == 0, "gelu: %d values off the reference", bad);
    CHECK(badg == 0, "gelu: %d gradients off the reference", badg);
    float nan_in[3] = {NAN, INFINITY, -INFINITY}, nan_out[3], nan_d[3];
    be->ops->gelu_forward(be, 3, nan_out, nan_in);
    be->ops->gelu_backward(be, 3, nan_d, ones, nan_in);
    CHECK(isnan(nan_out[0]) && isnan(nan_d[0]), "gelu(NaN) = %g, gradient %g: NaN must stay NaN", nan_out[0], nan_d[0]);
    CHECK(nan_out[1] == INFINITY && nan_out[2] == 0 && nan_d[1] == 1 && nan_d[2] == 0,
          "gelu(+-inf) = %g, %g with gradients %g, %g; expected inf, 0, 1, 0", nan_out[1], nan_out[2], nan_d[1],
          nan_d[2]);
}

/* linear (with its bias) and the tied head: each output row in double from its input row. */
static void check_gemm_values(void)
{
    const mx_layer_spec lin = {.kind = "linear", .units = 12, .bias = 1};
    mx_net *net = make_net("linear values", &lin, 1, (mx_shape){1, SEQ, 7}, 0);
    if (net) {
        mx_net_forward(net, BATCH, 1);
        const float *w = tensor(net, "linear.w"), *b = tensor(net, "linear.b");
        float ref[BATCH * SEQ * 12];
        for (int r = 0; r < BATCH * SEQ; r++)
            for (int o = 0; o < 12; o++) {
                double s = b[o];
                for (int k = 0; k < 7; k++) s += (double)net->x[r * 7 + k] * w[o * 7 + k];
                ref[r * 12 + o] = (float)s;
            }
        const double e = check_rel_diff(net->act[0], ref, BATCH * SEQ * 12);
        CHECK(e <= 1e-5, "linear: off the reference by %.3g", e);
        mx_net_destroy(net);
    }
    const mx_layer_spec tied[2] = {{.kind = "embedding", .units = 7, .vocab = VOCAB},
                                   {.kind = "lm_head", .vocab = VOCAB}};
    net = make_net("lm_head values", tied, 2, (mx_shape){1, 1, SEQ}, VOCAB);
    if (!net) return;
    mx_net_forward(net, BATCH, 1);
    const float *wte = tensor(net, "embedding.wte"), *x = net->act[0];
    float ref[BATCH * SEQ * VOCAB];
    for (int r = 0; r < BATCH * SEQ; r++)
        for (int v = 0; v < VOCAB; v++) {
            double s = 0;
            for (int k = 0; k < 7; k++) s += (double)x[r * 7 + k] * wte[v * 7 + k];
            ref[r * VOCAB + v] = (float)s;
        }
    const double e = check_rel_diff(net->act[1], ref, BATCH * SEQ * VOCAB);
    CHECK(e <= 1e-5, "lm_head: off x . wte^T by %.3g", e);
    mx_net_destroy(net);
}

/* The head and the embedding both add to the one token table: run apart, each gives a non-zero
 * share, and the backward of the two gives their sum (neither overwrites the other). */
static void check_tied_accumulation(void)
{
    const mx_layer_spec tied[2] = {{.kind = "embedding", .units = 12, .vocab = VOCAB},
                                   {.kind = "lm_head", .vocab = VOCAB}};
    mx_net *net = make_net("tied", tied, 2, (mx_shape){1, 1, SEQ}, VOCAB);
    if (!net) return;
    CHECK(net->nparams == 2, "embedding + lm_head hold %d tensors; the head must add none", net->nparams);
    const size_t nout = out_count(net), nwte = (size_t)VOCAB * 12, nmid = (size_t)BATCH * SEQ * 12;
    const size_t off = net->params[0].offset;
    float *r = malloc(sizeof(float) * nout), *dmid = malloc(sizeof(float) * nmid);
    float *head = malloc(sizeof(float) * nwte), *emb = malloc(sizeof(float) * nwte);
    fill_uniform(r, nout);
    mx_net_forward(net, BATCH, 1);
    mx_layer *le = &net->layers[0], *lh = &net->layers[1];
    mx_net_zero_grad(net);
    lh->ops->backward(lh, be, net->exec->state[1], BATCH, dmid, r, net->act[0], net->act[1]);
    memcpy(head, net->g + off, sizeof(float) * nwte);
    mx_net_zero_grad(net);
    le->ops->backward(le, be, net->exec->state[0], BATCH, NULL, dmid, net->x, net->act[0]);
    memcpy(emb, net->g + off, sizeof(float) * nwte);
    mx_net_zero_grad(net);
    gc_backward(net, BATCH, r, NULL);
    double nh = 0, ne = 0;
    int bad = 0;
    for (size_t i = 0; i < nwte; i++) {
        nh += fabsf(head[i]);
        ne += fabsf(emb[i]);
        bad += fabsf(net->g[off + i] - (head[i] + emb[i])) > 1e-6f * (1 + fabsf(head[i]) + fabsf(emb[i]));
    }
    CHECK(nh > 0 && ne > 0, "the head's share of wte's gradient sums to %g, the embedding's to %g", nh, ne);
    CHECK(bad == 0, "%d of wte's gradients are not the head's plus the embedding's", bad);
    /* And by finite differences of every element of the table. */
    int fd = 0;
    for (size_t i = 0; i < nwte; i += GC_PROBES)
        fd += gc_probe("tied wte", net, BATCH, r, net->w + off + i, nwte - i < GC_PROBES ? nwte - i : GC_PROBES,
                       net->g + off + i, GC_STEP, &rng);
    CHECK(fd == 0, "tied wte: %d gradients disagree with finite differences", fd);
    printf("%-44s %s\n", "lm_head + embedding, tied wte accumulates", bad || fd || !nh || !ne ? "NOT OK" : "ok");
    free(r), free(dmid), free(head), free(emb);
    mx_net_destroy(net);
}

/* ---- token ids out of range: zeros, the sticky error, no read out of bounds */

static void check_bad_ids(void)
{
    const float bad_ids[6] = {-1.0f, (float)VOCAB, 2.5f, NAN, 1e10f, -0.5f};
    const int c = 7;
    float wte[VOCAB * 7], wpe[SEQ * 7], out[SEQ * 7], ids[SEQ], dwte[VOCAB * 7], dwpe[SEQ * 7];
    fill_uniform(wte, VOCAB * 7);
    fill_uniform(wpe, SEQ * 7);
    for (int k = 0; k < 6; k++) {
        mx_backend *b;
        if (mx_backend_create(&b, "cpu", 0, 1) != MX_OK) return;
        for (int t = 0; t < SEQ; t++) ids[t] = (float)((t * 3) % VOCAB);
        ids[2] = bad_ids[k];
        for (int i = 0; i < SEQ * c; i++) out[i] = 9.0f;
        b->ops->embedding_forward(b, 1, SEQ, c, VOCAB, out, ids, wte, wpe);
        const int rc = mx_backend_error(b);
        CHECK(rc == MX_EINVAL && strstr(mx_last_error(), "token id") && strstr(mx_last_error(), "[0, 11)"),
              "id %g: error %d '%s'", bad_ids[k], rc, mx_last_error());
        int wrong = 0;
        for (int t = 0; t < SEQ; t++)
            for (int j = 0; j < c; j++)
                wrong += out[t * c + j] != (t == 2 ? 0.0f : wte[(int)ids[t] * c + j] + wpe[t * c + j]);
        CHECK(wrong == 0, "id %g: %d values wrong (its row must be zeros, the others as usual)", bad_ids[k], wrong);
        memset(dwte, 0, sizeof dwte);
        memset(dwpe, 0, sizeof dwpe);
        b->ops->embedding_backward(b, 1, SEQ, c, VOCAB, dwte, dwpe, out, ids);
        CHECK(dwpe[2 * c] == 0 && dwpe[c] == out[c], "id %g: the bad row added to wpe's gradient", bad_ids[k]);
        mx_backend_destroy(b);
    }
    /* Through a net: the step's sync reports it. */
    mx_backend *b;
    if (mx_backend_create(&b, "cpu", 0, 1) != MX_OK) return;
    const mx_layer_spec s[2] = {{.kind = "embedding", .units = 12, .vocab = VOCAB}, {.kind = "flatten"}};
    mx_net *net;
    if (mx_net_create(&net, b, s, 2, (mx_shape){1, 1, SEQ}, BATCH) == MX_OK) {
        fill_ids(net->x, BATCH * SEQ, VOCAB);
        net->x[BATCH * SEQ - 1] = 4096.0f;
        mx_net_forward(net, BATCH, 1);
        CHECK(b->ops->sync(b) == MX_EINVAL && strstr(mx_last_error(), "4096"), "net forward: %s", mx_last_error());
        mx_net_destroy(net);
    }
    mx_backend_destroy(b);
    printf("%-44s %s\n", "embedding: ids out of range", "checked");
}

/* ---- thread counts: every sum keeps its order, so 1 and 2 threads agree bit for bit (shapes
 * large enough for mx_cpu_team to take 2; 244 rows make layer norm's backward sum three whole
 * chunks of 64 rows and a part of one), and layer norm's gamma and beta gradients over those
 * rows against sums in double */

static void check_threads(void)
{
    enum { EMB_OUT, DWTE, DWPE, LN_OUT, MEAN, RSTD, LN_DIN, DGAMMA, DBETA, GELU_OUT, GELU_DIN, NRES };
    const int n = 4, t = 61, c = 160, vocab = 50, rows = n * t;
    const size_t nx = (size_t)rows * c;
    const size_t sizes[NRES] = {nx, (size_t)vocab * c, (size_t)t * c, nx, rows, rows, nx, c, c, nx, nx};
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * nx), *ids = malloc(sizeof(float) * rows);
    float *wte = malloc(sizeof(float) * vocab * c), *wpe = malloc(sizeof(float) * t * c);
    float *g = malloc(sizeof(float) * c), *bb = malloc(sizeof(float) * c);
    float *g0 = malloc(sizeof(float) * c), *b0 = malloc(sizeof(float) * c); /* gradients before backward */
    fill_uniform(x, nx), fill_uniform(dy, nx), fill_uniform(wte, (size_t)vocab * c), fill_uniform(wpe, (size_t)t * c);
    fill_uniform(g, c), fill_uniform(bb, c);
    fill_ids(ids, rows, vocab);
    float *res[2][NRES];
    const mx_rng start = rng; /* both thread counts start from the same gradients */
    for (int k = 0; k < 2; k++) {
        mx_backend *b;
        if (mx_backend_create(&b, "cpu", 0, k + 1) != MX_OK) return;
        for (int i = 0; i < NRES; i++) res[k][i] = malloc(sizeof(float) * sizes[i]);
        /* parameter gradients accumulate: start them non-zero */
        rng = start;
        for (int i = DWTE; i <= DWPE; i++) fill_uniform(res[k][i], sizes[i]);
        for (int i = DGAMMA; i <= DBETA; i++) fill_uniform(res[k][i], sizes[i]);
        if (k == 0) memcpy(g0, res[0][DGAMMA], sizeof(float) * c), memcpy(b0, res[0][DBETA], sizeof(float) * c);
        float **r = res[k];
        b->ops->embedding_forward(b, n, t, c, vocab, r[EMB_OUT], ids, wte, wpe);
        b->ops->embedding_backward(b, n, t, c, vocab, r[DWTE], r[DWPE], dy, ids);
        b->ops->layernorm_forward(b, rows, c, r[LN_OUT], r[MEAN], r[RSTD], x, g, bb, 1e-5f);
        b->ops->layernorm_backward(b, rows, c, r[LN_DIN], r[DGAMMA], r[DBETA], dy, x, r[MEAN], r[RSTD], g);
        b->ops->gelu_forward(b, nx, r[GELU_OUT], x);
        b->ops->gelu_backward(b, nx, r[GELU_DIN], dy, x);
        CHECK(b->ops->sync(b) == MX_OK, "%d threads: %s", k + 1, mx_last_error());
        mx_backend_destroy(b);
    }
    int differ = 0;
    for (int i = 0; i < NRES; i++)
        if (memcmp(res[0][i], res[1][i], sizeof(float) * sizes[i])) {
            differ++;
            fprintf(stderr, "  result %d (of enum order) differs\n", i);
        }
    CHECK(differ == 0, "embedding, layer norm and gelu: %d of %d results differ between 1 and 2 threads", differ, NRES);
    printf("%-44s %s\n", "1 and 2 threads, bit for bit", differ ? "NOT OK" : "ok");
    /* f32 sums of 64 terms, then double: within 1e-5 of the value or of 1 */
    double worst = 0;
    for (int j = 0; j < c; j++) {
        double sg = g0[j], sb = b0[j];
        for (int i = 0; i < rows; i++) {
            const double d = dy[(size_t)i * c + j];
            sg += d * ((double)x[(size_t)i * c + j] - res[0][MEAN][i]) * res[0][RSTD][i];
            sb += d;
        }
        const double eg = fabs(res[0][DGAMMA][j] - sg) / fmax(1, fabs(sg));
        const double eb = fabs(res[0][DBETA][j] - sb) / fmax(1, fabs(sb));
        worst = fmax(worst, fmax(eg, eb));
    }
    CHECK(worst < 1e-5, "layer norm over %d rows: gamma's or beta's gradient off its double sum by %.2g", rows, worst);
    printf("layer norm dgamma, dbeta over %d rows%-12s %s (%.1e)\n", rows, "", worst < 1e-5 ? "ok" : "NOT OK", worst);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NRES; i++) free(res[k][i]);
    free(x), free(dy), free(ids), free(wte), free(wpe), free(g), free(bb), free(g0), free(b0);
}

/* ---- refusals */

/* A net of spec alone, or after an embedding of C = 7 and V = VOCAB where after_embedding. */
static void expect_refused(const char *label, mx_backend *b, mx_layer_spec spec, int after_embedding, mx_shape in,
                           int code, const char *says)
{
    const mx_layer_spec all[2] = {{.kind = "embedding", .units = 7, .vocab = VOCAB}, spec};
    mx_net *net = NULL;
    const int rc = mx_net_create(&net, b, after_embedding ? all : all + 1, after_embedding ? 2 : 1, in, 2);
    CHECK(rc == code && strstr(mx_last_error(), says), "%s: rc %d, '%s' (expected %d and '%s')", label, rc,
          mx_last_error(), code, says);
    if (rc == MX_OK) mx_net_destroy(net);
}

static void check_refusals(void)
{
    const mx_shape ids = {1, 1, SEQ}, seq = {1, SEQ, 7};
    expect_refused("embedding vocab 0", be, (mx_layer_spec){.kind = "embedding", .units = 7}, 0, ids, MX_EINVAL,
                   "vocab 0");
    expect_refused("embedding units 0", be, (mx_layer_spec){.kind = "embedding", .vocab = 3}, 0, ids, MX_EINVAL,
                   "units 0");
    expect_refused("embedding on 1x2x5", be, (mx_layer_spec){.kind = "embedding", .units = 7, .vocab = 3}, 0,
                   (mx_shape){1, 2, 5}, MX_EINVAL, "input 1x2x5");
    expect_refused("layernorm on 2x5x7", be, (mx_layer_spec){.kind = "layernorm"}, 0, (mx_shape){2, 5, 7}, MX_EINVAL,
                   "input 2x5x7");
    expect_refused("linear units 0", be, (mx_layer_spec){.kind = "linear"}, 0, seq, MX_EINVAL, "units 0");
    /* the head's vocabulary or width not the table's */
    expect_refused("lm_head vocab 12", be, (mx_layer_spec){.kind = "lm_head", .vocab = 12}, 1, ids, MX_EINVAL,
                   "holds 77 values; tying it as 84");
    /* a head without an embedding before it */
    expect_refused("lm_head alone", be, (mx_layer_spec){.kind = "lm_head", .vocab = VOCAB}, 0, seq, MX_EINVAL,
                   "embedding.wte");
    /* A backend without the kernels: refused at setup, naming the op. */
    mx_backend_ops bare = mx_cpu_backend_ops;
    bare.name = "cpu_noseq";
    bare.embedding_forward = NULL;
    bare.layernorm_backward = NULL;
    bare.gelu_forward = NULL;
    mx_backend *nb;
    if (mx_backend_register(&bare) == MX_OK && mx_backend_create(&nb, bare.name, 0, 1) == MX_OK) {
        expect_refused("no embedding kernel", nb, (mx_layer_spec){.kind = "embedding", .units = 7, .vocab = 3}, 0, ids,
                       MX_EUNSUPPORTED, "layer embedding: backend cpu_noseq has no embedding_forward kernel");
        expect_refused("no layernorm kernel", nb, (mx_layer_spec){.kind = "layernorm"}, 0, seq, MX_EUNSUPPORTED,
                       "layer layernorm: backend cpu_noseq has no layernorm_backward kernel");
        expect_refused("no gelu kernel", nb, (mx_layer_spec){.kind = "gelu"}, 0, seq, MX_EUNSUPPORTED,
                       "layer gelu: backend cpu_noseq has no gelu_forward kernel");
        mx_backend_destroy(nb);
    } else {
        CHECK(0, "registering a backend without the transformer's kernels: %s", mx_last_error());
    }
    printf("%-44s %s\n", "refusals", "checked");
}

int main(void)
{
    mx_rng_seed(&rng, 4242);
    if (mx_backend_create(&be, "cpu", 0, 1) != MX_OK) return 1;
    const mx_shape ids = {1, 1, SEQ}, w7 = {1, SEQ, 7}, w12 = {1, SEQ, 12};
    const mx_layer_spec emb7 = {.kind = "embedding", .units = 7, .vocab = VOCAB},
                        emb12 = {.kind = "embedding", .units = 12, .vocab = VOCAB}, ln = {.kind = "layernorm"},
                        gelu = {.kind = "gelu"}, head = {.kind = "lm_head", .vocab = VOCAB};
    check_grads("embedding C=7", &emb7, 1, ids, VOCAB);
    check_grads("embedding C=12", &emb12, 1, ids, VOCAB);
    check_grads("layernorm W=7", &ln, 1, w7, 0);
    check_grads("layernorm W=12", &ln, 1, w12, 0);
    check_grads("gelu W=7", &gelu, 1, w7, 0);
    check_grads("gelu W=12", &gelu, 1, w12, 0);
    check_grads("linear 7->12 bias", &(mx_layer_spec){.kind = "linear", .units = 12, .bias = 1}, 1, w7, 0);
    check_grads("linear 12->7", &(mx_layer_spec){.kind = "linear", .units = 7}, 1, w12, 0);
    const mx_layer_spec tied[2] = {emb7, head};
    check_grads("embedding + lm_head C=7", tied, 2, ids, VOCAB);
    const mx_layer_spec chain[6] = {
        emb12, ln, {.kind = "linear", .units = 7, .bias = 1}, gelu, {.kind = "linear", .units = 12}, head};
    check_grads("embedding, layernorm, linear, gelu, linear, lm_head", chain, 6, ids, VOCAB);
    check_embedding_values(7);
    check_embedding_values(12);
    check_layernorm_values(7);
    check_layernorm_values(12);
    check_gelu_values();
    check_gemm_values();
    check_tied_accumulation();
    check_bad_ids();
    check_threads();
    check_refusals();
    mx_backend_destroy(be);
    return check_summary("test_layers_seq");
}
