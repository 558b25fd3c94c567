/* The CUDA backend's transformer ops, AdamW, sumsq and the language model's loss against the
 * CPU backend (engine/cpu/seq.c, attention.c, optim.c: the reference), on random inputs and odd
 * shapes (t not a multiple of the CPU's tiles or a warp, hs 32 and 64, a vocabulary not a
 * multiple of 64, rows past layer norm's 64-row chunks), forward and backward, with the GPU's
 * outputs poisoned (NaN bytes) before each call so that an element left unwritten fails; and a
 * bad token id, which must become the sticky error at sync with its row written as zeros.
 * Error is the largest absolute difference over the largest reference magnitude. Bounds:
 *   0      the embedding's forward and backward (the GPU adds in the CPU's order);
 *   2e-6   GELU, AdamW (expf and sqrtf against the CPU's own exp: a few ulps);
 *   2e-5   layer norm, attention forward and log-sum-exp (f32 sums in other orders);
 *   1e-4   attention backward (its sums run over up to t keys, then through two GEMMs);
 *   1e-12  sumsq, and 1e-9 the summed loss (doubles in other orders).
 * Exits 77 where there is no CUDA device. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"

#define CUDA_CHECK_SEED 0x9e3779b97f4a7c15ull
#include "tests/cuda_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *host_random(size_t n, float scale)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) h[i] = uniform() * scale;
    return h;
}

static float *host_copy(const float *x, size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    memcpy(h, x, sizeof(float) * n);
    return h;
}

static void expect_on(mx_backend *be, const char *what, const void *d, const float *ref, size_t n, double tol)
{
    float *got = down_on(be, d, sizeof(float) * n);
    const double e = rel_err(got, ref, n);
    CHECK(e <= tol, "%s: relative error %.3g, bound %.3g", what, e, tol);
    if (e <= tol) printf("ok   %-52s rel err %.2e (bound %.0e)\n", what, e, tol);
    free(got);
}

static void expect(const char *what, const void *d, const float *ref, size_t n, double tol)
{
    expect_on(gpu, what, d, ref, n, tol);
}

static void sync_ok(const char *what) { CHECK(gpu->ops->sync(gpu) == MX_OK, "%s: %s", what, mx_last_error()); }

static void free_all(void **d, int nd, float **h, int nh)
{
    for (int i = 0; i < nd; i++) gpu->ops->free(gpu, d[i]);
    for (int i = 0; i < nh; i++) free(h[i]);
}

/* ---- embedding */

static float *random_ids(int rows, int vocab)
{
    float *ids = malloc(sizeof(float) * (size_t)rows);
    for (int r = 0; r < rows; r++) ids[r] = (float)(int)((uniform() * 0.5f + 0.5f) * (vocab - 1) + 0.5f);
    ids[0] = 0, ids[rows - 1] = (float)(vocab - 1); /* both ends of the table */
    if (rows > 3) ids[2] = ids[1];                  /* a repeated token: two rows add into one */
    return ids;
}

static void test_embedding(int n, int t, int c, int vocab)
{
    const int rows = n * t;
    const size_t nw = (size_t)vocab * c, np = (size_t)t * c, no = (size_t)rows * c;
    float *ids = random_ids(rows, vocab), *wte = host_random(nw, 1), *wpe = host_random(np, 1);
    float *dout = host_random(no, 1), *dwte = host_random(nw, 1), *dwpe = host_random(np, 1);
    float *out = malloc(sizeof(float) * no);
    void *g_ids = up(ids, 4 * (size_t)rows), *g_wte = up(wte, 4 * nw), *g_wpe = up(wpe, 4 * np),
         *g_dout = up(dout, 4 * no), *g_dwte = up(dwte, 4 * nw), *g_dwpe = up(dwpe, 4 * np), *g_out = poisoned(4 * no);
    cpu->ops->embedding_forward(cpu, n, t, c, vocab, out, ids, wte, wpe);
    cpu->ops->embedding_backward(cpu, n, t, c, vocab, dwte, dwpe, dout, ids);
    gpu->ops->embedding_forward(gpu, n, t, c, vocab, g_out, g_ids, g_wte, g_wpe);
    gpu->ops->embedding_backward(gpu, n, t, c, vocab, g_dwte, g_dwpe, g_dout, g_ids);
    sync_ok("embedding");
    char what[96];
    snprintf(what, sizeof what, "embedding n%d t%d c%d vocab %d forward", n, t, c, vocab);
    expect(what, g_out, out, no, 0);
    snprintf(what, sizeof what, "embedding n%d t%d c%d vocab %d dwte +=", n, t, c, vocab);
    expect(what, g_dwte, dwte, nw, 0);
    snprintf(what, sizeof what, "embedding n%d t%d c%d vocab %d dwpe +=", n, t, c, vocab);
    expect(what, g_dwpe, dwpe, np, 0);
    void *d[] = {g_ids, g_wte, g_wpe, g_dout, g_dwte, g_dwpe, g_out};
    float *h[] = {ids, wte, wpe, dout, dwte, dwpe, out};
    free_all(d, 7, h, 7);
}

/* Bad ids on backends of their own (the sticky error stays): the GPU's sync fails naming the
 * vocabulary, the bad rows are zeros, and backward skips them as the CPU does. */
static void test_bad_ids(void)
{
    mx_backend *g2 = NULL, *c2 = NULL;
    if (mx_backend_create(&g2, "cuda", 0, 1) < 0 || mx_backend_create(&c2, "cpu", 0, 1) < 0) {
        CHECK(0, "a second backend for the bad-id test: %s", mx_last_error());
        return;
    }
    const int n = 2, t = 5, c = 40, vocab = 100, rows = n * t;
    float ids[10] = {1, 100, 3, -1, 5, 2.5f, 7, NAN, 9, 99};
    const size_t nw = (size_t)vocab * c, np = (size_t)t * c, no = (size_t)rows * c;
    float *wte = host_random(nw, 1), *wpe = host_random(np, 1), *dout = host_random(no, 1);
    float *dwte = host_random(nw, 1), *dwpe = host_random(np, 1), *out = malloc(4 * no);
    void *g_ids = up_on(g2, ids, sizeof ids), *g_wte = up_on(g2, wte, 4 * nw), *g_wpe = up_on(g2, wpe, 4 * np),
         *g_dout = up_on(g2, dout, 4 * no), *g_dwte = up_on(g2, dwte, 4 * nw), *g_dwpe = up_on(g2, dwpe, 4 * np),
         *g_out = poisoned_on(g2, 4 * no);
    CHECK(g2->ops->sync(g2) == MX_OK, "bad ids: setup: %s", mx_last_error());
    c2->ops->embedding_forward(c2, n, t, c, vocab, out, ids, wte, wpe);
    c2->ops->embedding_backward(c2, n, t, c, vocab, dwte, dwpe, dout, ids);
    g2->ops->embedding_forward(g2, n, t, c, vocab, g_out, g_ids, g_wte, g_wpe);
    g2->ops->embedding_backward(g2, n, t, c, vocab, g_dwte, g_dwpe, g_dout, g_ids);
    const int rc = g2->ops->sync(g2);
    CHECK(rc == MX_EINVAL && strstr(mx_last_error(), "[0, 100), the vocabulary"),
          "bad token ids: sync gave %d (%s); expected MX_EINVAL naming the vocabulary", rc, mx_last_error());
    if (rc == MX_EINVAL) printf("ok   bad token ids surface at sync: %s\n", mx_last_error());
    CHECK(c2->ops->sync(c2) == MX_EINVAL, "the CPU reference records the bad ids too");
    expect_on(g2, "embedding with bad ids: forward (bad rows 0)", g_out, out, no, 0);
    expect_on(g2, "embedding with bad ids: dwte += (bad rows skipped)", g_dwte, dwte, nw, 0);
    expect_on(g2, "embedding with bad ids: dwpe +=", g_dwpe, dwpe, np, 0);
    void *d[] = {g_ids, g_wte, g_wpe, g_dout, g_dwte, g_dwpe, g_out};
    for (int i = 0; i < 7; i++) g2->ops->free(g2, d[i]);
    free(wte), free(wpe), free(dout), free(dwte), free(dwpe), free(out);
    mx_backend_destroy(g2);
    mx_backend_destroy(c2);
}

/* ---- layer norm, GELU */

static void test_layernorm(int rows, int w)
{
    const size_t nx = (size_t)rows * w;
    float *in = host_random(nx, 2), *dout = host_random(nx, 1), *gam = host_random(w, 1), *bet = host_random(w, 1);
    float *dg = host_random(w, 1), *db = host_random(w, 1);
    for (size_t i = 0; i < nx; i++) in[i] += (float)(i / w % 7); /* rows of different means */
    float *out = malloc(4 * nx), *din = malloc(4 * nx), *mean = malloc(4 * (size_t)rows),
          *rstd = malloc(4 * (size_t)rows);
    void *g_in = up(in, 4 * nx), *g_dout = up(dout, 4 * nx), *g_gam = up(gam, 4 * (size_t)w),
         *g_bet = up(bet, 4 * (size_t)w), *g_dg = up(dg, 4 * (size_t)w), *g_db = up(db, 4 * (size_t)w),
         *g_out = poisoned(4 * nx), *g_din = poisoned(4 * nx), *g_mean = poisoned(4 * (size_t)rows),
         *g_rstd = poisoned(4 * (size_t)rows);
    cpu->ops->layernorm_forward(cpu, rows, w, out, mean, rstd, in, gam, bet, 1e-5f);
    cpu->ops->layernorm_backward(cpu, rows, w, din, dg, db, dout, in, mean, rstd, gam);
    gpu->ops->layernorm_forward(gpu, rows, w, g_out, g_mean, g_rstd, g_in, g_gam, g_bet, 1e-5f);
    gpu->ops->layernorm_backward(gpu, rows, w, g_din, g_dg, g_db, g_dout, g_in, g_mean, g_rstd, g_gam);
    sync_ok("layernorm");
    char what[96];
    const char *names[] = {"forward", "mean", "rstd", "din", "dgamma +=", "dbeta +="};
    const void *got[] = {g_out, g_mean, g_rstd, g_din, g_dg, g_db};
    const float *want[] = {out, mean, rstd, din, dg, db};
    const size_t len[] = {nx, (size_t)rows, (size_t)rows, nx, (size_t)w, (size_t)w};
    for (int i = 0; i < 6; i++) {
        snprintf(what, sizeof what, "layernorm %d rows of %d: %s", rows, w, names[i]);
        expect(what, got[i], want[i], len[i], 2e-5);
    }
    /* din NULL: only the parameters' gradients (accumulated once more) */
    cpu->ops->layernorm_backward(cpu, rows, w, NULL, dg, db, dout, in, mean, rstd, gam);
    gpu->ops->layernorm_backward(gpu, rows, w, NULL, g_dg, g_db, g_dout, g_in, g_mean, g_rstd, g_gam);
    sync_ok("layernorm without din");
    expect("layernorm backward without din: dgamma", g_dg, dg, (size_t)w, 2e-5);
    void *d[] = {g_in, g_dout, g_gam, g_bet, g_dg, g_db, g_out, g_din, g_mean, g_rstd};
    float *h[] = {in, dout, gam, bet, dg, db, out, din, mean, rstd};
    free_all(d, 10, h, 10);
}

static void test_gelu(size_t n)
{
    float *x = host_random(n, 12), *dout = host_random(n, 1), *out = malloc(4 * n), *din = malloc(4 * n);
    x[0] = 0, x[1] = -11, x[2] = 11, x[3] = 1e-6f; /* the tails and near 0 */
    void *g_x = up(x, 4 * n), *g_dout = up(dout, 4 * n), *g_out = poisoned(4 * n), *g_din = poisoned(4 * n);
    cpu->ops->gelu_forward(cpu, n, out, x);
    cpu->ops->gelu_backward(cpu, n, din, dout, x);
    gpu->ops->gelu_forward(gpu, n, g_out, g_x);
    gpu->ops->gelu_backward(gpu, n, g_din, g_dout, g_x);
    sync_ok("gelu");
    expect("gelu forward on [-12, 12]", g_out, out, n, 2e-6);
    expect("gelu backward", g_din, din, n, 2e-6);
    gpu->ops->gelu_backward(gpu, n, g_dout, g_dout, g_x); /* in place, as the layer may */
    sync_ok("gelu in place");
    expect("gelu backward in place (din = dout)", g_dout, din, n, 2e-6);
    void *d[] = {g_x, g_dout, g_out, g_din};
    float *h[] = {x, dout, out, din};
    free_all(d, 4, h, 4);
}

/* ---- attention */

static void test_attention(int n, int t, int heads, int hs)
{
    const int c = heads * hs;
    const size_t nq = (size_t)n * t * 3 * c, no = (size_t)n * t * c, nl = (size_t)n * heads * t;
    float *qkv = host_random(nq, 1), *dout = host_random(no, 1);
    float *out = malloc(4 * no), *lse = malloc(4 * nl), *dqkv = malloc(4 * nq);
    void *g_qkv = up(qkv, 4 * nq), *g_dout = up(dout, 4 * no), *g_out = poisoned(4 * no), *g_lse = poisoned(4 * nl),
         *g_dqkv = poisoned(4 * nq), *g_out2 = poisoned(4 * no);
    cpu->ops->attention_forward(cpu, n, t, heads, hs, out, lse, qkv);
    cpu->ops->attention_backward(cpu, n, t, heads, hs, dqkv, dout, qkv, out, lse);
    gpu->ops->attention_forward(gpu, n, t, heads, hs, g_out, g_lse, g_qkv);
    gpu->ops->attention_forward(gpu, n, t, heads, hs, g_out2, NULL, g_qkv); /* inference: no lse */
    gpu->ops->attention_backward(gpu, n, t, heads, hs, g_dqkv, g_dout, g_qkv, g_out, g_lse);
    sync_ok("attention");
    char what[96];
    snprintf(what, sizeof what, "attention n%d t%d heads %d hs %d forward", n, t, heads, hs);
    expect(what, g_out, out, no, 2e-5);
    snprintf(what, sizeof what, "attention n%d t%d heads %d hs %d lse", n, t, heads, hs);
    expect(what, g_lse, lse, nl, 2e-5);
    snprintf(what, sizeof what, "attention n%d t%d heads %d hs %d forward, no lse", n, t, heads, hs);
    expect(what, g_out2, out, no, 2e-5);
    snprintf(what, sizeof what, "attention n%d t%d heads %d hs %d dqkv", n, t, heads, hs);
    expect(what, g_dqkv, dqkv, nq, 1e-4);
    void *d[] = {g_qkv, g_dout, g_out, g_lse, g_dqkv, g_out2};
    float *h[] = {qkv, dout, out, lse, dqkv};
    free_all(d, 6, h, 5);
}

/* ---- AdamW, its AMP form, sumsq */

static void test_adamw(size_t n)
{
    float *w = host_random(n, 1), *m = host_random(n, 0.1f), *v = host_random(n, 0.01f), *g = host_random(n, 1);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    const mx_adamw_step a = {
        1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.7f, 1 - 0.9f * 0.9f * 0.9f, 1 - 0.999f * 0.999f * 0.999f};
    float *w2 = host_copy(w, n), *m2 = host_copy(m, n), *v2 = host_copy(v, n);
    void *g_w = up(w, 4 * n), *g_m = up(m, 4 * n), *g_v = up(v, 4 * n), *g_g = up(g, 4 * n);
    cpu->ops->adamw_update(cpu, n, w, m, v, g, &a);
    gpu->ops->adamw_update(gpu, n, g_w, g_m, g_v, g_g, &a);
    sync_ok("adamw");
    expect("adamw_update weights", g_w, w, n, 2e-6);
    expect("adamw_update first moment", g_m, m, n, 2e-6);
    expect("adamw_update second moment", g_v, v, n, 2e-6);
    const mx_dtype types[] = {MX_BF16, MX_F16};
    for (int k = 0; k < 2; k++) {
        const mx_dtype t = types[k];
        float *mw = host_copy(w2, n), *mm = host_copy(m2, n), *mv = host_copy(v2, n), *cw = malloc(4 * n);
        unsigned short *half = malloc(2 * n);
        void *g_mw = up(mw, 4 * n), *g_mm = up(mm, 4 * n), *g_mv = up(mv, 4 * n), *g_half = poisoned(2 * n),
             *g_cw = poisoned(4 * n);
        cpu->ops->adamw_update_amp(cpu, n, mw, mm, mv, g, &a, t, half, cw);
        gpu->ops->adamw_update_amp(gpu, n, g_mw, g_mm, g_mv, g_g, &a, t, g_half, g_cw);
        sync_ok("adamw_update_amp");
        char what[96];
        snprintf(what, sizeof what, "adamw_update_amp %s master weights", mx_dtype_name(t));
        expect(what, g_mw, mw, n, 2e-6);
        /* the half and compute copies are the GPU's master rounded, exactly */
        float *gm = down_on(gpu, g_mw, 4 * n), *gw = down_on(gpu, g_cw, 4 * n);
        unsigned short *gh = (unsigned short *)down_on(gpu, g_half, 2 * n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned short want;
            mx_dtype_store(t, &want, 0, gm[i]);
            bad += gh[i] != want || gw[i] != mx_dtype_load(t, &want, 0);
        }
        CHECK(bad == 0, "adamw_update_amp %s: %zu of %zu half or compute values are not the master's rounding",
              mx_dtype_name(t), bad, n);
        if (!bad)
            printf("ok   adamw_update_amp %s: half and compute copies are the master's rounding\n", mx_dtype_name(t));
        void *d[] = {g_mw, g_mm, g_mv, g_half, g_cw};
        float *h[] = {mw, mm, mv, cw, gm, gw, (float *)gh, (float *)half};
        free_all(d, 5, h, 8);
    }
    void *d[] = {g_w, g_m, g_v, g_g};
    float *h[] = {w, m, v, g, w2, m2, v2};
    free_all(d, 4, h, 7);
}

static void test_sumsq(size_t n)
{
    float *x = host_random(n, 3);
    void *g_x = up(x, 4 * n);
    const double want = cpu->ops->sumsq(cpu, n, x), got = gpu->ops->sumsq(gpu, n, g_x);
    const double again = gpu->ops->sumsq(gpu, n, g_x);
    sync_ok("sumsq");
    CHECK(fabs(got - want) <= 1e-12 * fabs(want) && got == again, "sumsq of %zu: %.17g, CPU %.17g, again %.17g", n, got,
          want, again);
    if (fabs(got - want) <= 1e-12 * fabs(want)) printf("ok   sumsq of %zu values: %.12g (the same twice)\n", n, got);
    gpu->ops->free(gpu, g_x);
    free(x);
}

/* ---- the loss over a language model's rows (block-per-row kernel from 128 classes) */

static void test_softmax(int n, int classes)
{
    const size_t nl = (size_t)n * classes;
    float *logits = host_random(nl, 8), *dl = malloc(4 * nl);
    int32_t *labels = malloc(sizeof *labels * (size_t)n);
    for (int i = 0; i < n; i++) labels[i] = (int32_t)((i * 7919L) % classes);
    labels[n - 1] = classes - 1;
    logits[3] = logits[5] = 20; /* a tie at the first row's maximum: the first index wins */
    void *gl = up(logits, 4 * nl), *glab = up(labels, sizeof *labels * (size_t)n), *gdl = poisoned(4 * nl);
    int hc = -1, gc = -2, ec = -3;
    const double lc = cpu->ops->softmax_xent(cpu, n, classes, dl, &hc, logits, labels, 0.25f);
    const double lg = gpu->ops->softmax_xent(gpu, n, classes, gdl, &gc, gl, glab, 0.25f);
    const double le = gpu->ops->softmax_eval(gpu, n, classes, &ec, gl, glab);
    sync_ok("softmax");
    CHECK(fabs(lc - lg) <= 1e-9 * fabs(lc) && gc == hc, "softmax_xent %d x %d: loss %.12g vs %.12g, correct %d vs %d",
          n, classes, lg, lc, gc, hc);
    CHECK(fabs(lc - le) <= 1e-9 * fabs(lc) && ec == hc, "softmax_eval %d x %d: loss %.12g vs %.12g, correct %d vs %d",
          n, classes, le, lc, ec, hc);
    char what[96];
    snprintf(what, sizeof what, "softmax cross-entropy %d rows of %d: dlogits", n, classes);
    expect(what, gdl, dl, nl, 2e-6);
    gpu->ops->free(gpu, gl), gpu->ops->free(gpu, glab), gpu->ops->free(gpu, gdl);
    free(logits), free(dl), free(labels);
}

int main(void)
{
    const int rc = open_backends();
    if (rc) return rc;
    test_embedding(3, 37, 48, 100);  /* vocabulary not a multiple of 64 */
    test_embedding(2, 70, 130, 257); /* columns past a block of 128 */
    test_embedding(1, 1100, 64, 70); /* more rows than a tile of ids (1024) */
    test_layernorm(67, 48);
    test_layernorm(130, 770); /* rows past two chunks of 64, a width not a multiple of 32 */
    test_gelu(100003);
    test_attention(2, 37, 3, 32); /* t not a multiple of the CPU's tiles */
    test_attention(1, 70, 2, 64);
    test_attention(2, 129, 2, 64);
    test_attention(1, 1, 1, 32);
    test_adamw(100003);
    test_sumsq(100003);
    test_sumsq(5);
    test_softmax(37, 50304); /* GPT-2's padded vocabulary */
    test_softmax(9, 200);
    test_softmax(131, 10); /* the thread-per-row kernel still */
    test_bad_ids();
    mx_backend_destroy(gpu);
    mx_backend_destroy(cpu);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
