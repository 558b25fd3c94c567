/* Gradient compressors through the kvstore's push hook: the registry, what each compressor
 * makes of a gradient (fp16: every value rounded to half, summed in f32 by the receiver),
 * the bytes it puts on the wire, and pushes that do not match its key table. Through the
 * hook alone: 2bit's words and residuals over several pushes (worked out by hand), topk's
 * choice against a sort, fp16's rounding at ties and at the range's end, the residual norm,
 * and the settings refused. (test_gc_codecs.c has the codecs' own hand-made vectors.) */
#include "check.h"
#include "base/status.h"
#include "comm/comm.h"
#include "kvstore/compressor.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 3
static const mx_kv_key keys[NKEYS] = {{0, 7, MX_F32}, {16, 300, MX_F32}, {320, 1001, MX_F32}};
#define TOTAL 1321

static float grad_value(int d, size_t i) { return 0.1f * (float)(i + 1) * (float)(d + 1) + 1e-4f; }

/* What the receiver sums for one pushed value. */
static float decoded(const char *kind, float v)
{
    return strcmp(kind, "fp16") == 0 ? mx_f16_to_f32(mx_f32_to_f16(v)) : v;
}

static void check_kind(const char *kind, const char *mode, int ndev, double bytes_per_value)
{
    mx_backend *be[4];
    float *w[4], *g[4];
    mx_comm *comm = NULL;
    mx_kvstore *kv = NULL;
    mx_compressor *c = NULL;
    int rc = mx_comm_create(&comm, "threads", ndev);
    if (rc == MX_OK) rc = mx_kv_create(&kv, mx_kv_mode_of(mode), comm, keys, NKEYS, NULL);
    if (rc == MX_OK) rc = mx_compressor_create(&c, mx_gc_of(kind), ndev, keys, NKEYS, NULL);
    for (int d = 0; d < ndev; d++) {
        mx_backend_create(&be[d], "cpu", d, 1);
        w[d] = be[d]->ops->alloc(be[d], sizeof(float) * TOTAL);
        g[d] = be[d]->ops->alloc(be[d], sizeof(float) * TOTAL);
        for (size_t i = 0; i < TOTAL; i++) g[d][i] = grad_value(d, i);
        if (rc == MX_OK) rc = mx_kv_bind(kv, d, be[d], w[d], g[d]);
    }
    if (rc == MX_OK) rc = mx_kv_init(kv);
    CHECK(rc == MX_OK, "%s on %s x%d: set-up: %s", kind, mode, ndev, mx_last_error());
    if (rc == MX_OK) {
        mx_kv_set_push_hook(kv, mx_compressor_push, c);
        for (int d = 0; d < ndev; d++)
            for (int k = NKEYS - 1; k >= 0; k--)
                CHECK(mx_kv_push(kv, k, d, keys[k].count) == MX_OK, "push: %s", mx_last_error());
        for (int d = 0; d < ndev; d++)
            for (int k = 0; k < NKEYS; k++)
                CHECK(mx_kv_pull(kv, k, d, keys[k].count) == MX_OK, "pull: %s", mx_last_error());
        /* without an updater the pull returns the summed gradient: the decoded pushes summed
         * in f32 in device order, the same bits on every device */
        int bad = 0, changed = 0;
        for (int d = 0; d < ndev; d++)
            for (int k = 0; k < NKEYS; k++)
                for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++) {
                    float sum = 0, raw = 0;
                    for (int e = 0; e < ndev; e++) sum += decoded(kind, grad_value(e, i)), raw += grad_value(e, i);
                    bad += g[d][i] != sum;
                    changed += sum != raw;
                }
        const mx_kv_stats st = mx_kv_stats_get(kv);
        const double expect = bytes_per_value * ndev * (7 + 300 + 1001);
        CHECK(bad == 0, "%s on %s x%d: %d summed values differ from the sum of what was sent", kind, mode, ndev, bad);
        CHECK(strcmp(kind, "fp16") != 0 || changed > 0, "fp16: no value was rounded (the test data cannot show it)");
        CHECK(st.wire_bytes == expect, "%s on %s x%d: %.0f bytes on the wire, expected %.0f", kind, mode, ndev,
              st.wire_bytes, expect);
        printf(
            "%-5s %-6s x%d: sums of the decoded pushes ok (%d of %d values differ from the raw sum), %.0f wire bytes\n",
            kind, mode, ndev, changed / ndev, 7 + 300 + 1001, st.wire_bytes);
    }
    mx_kv_destroy(kv);
    mx_compressor_destroy(c);
    mx_comm_destroy(comm);
    for (int d = 0; d < ndev; d++) {
        be[d]->ops->free(be[d], w[d]);
        be[d]->ops->free(be[d], g[d]);
        mx_backend_destroy(be[d]);
    }
}

static void check_registry_and_errors(void)
{
    mx_compressor *c = NULL;
    mx_gc_kind kind;
    CHECK(mx_gc_parse("2bit-typo", &kind) == MX_EINVAL && strstr(mx_last_error(), "'2bit-typo'") &&
              strstr(mx_last_error(), "none|fp16"),
          "an unknown compressor is refused naming it and the accepted ones: %s", mx_last_error());
    const mx_kv_key half[1] = {{0, 8, MX_F16}};
    CHECK(mx_compressor_create(&c, MX_GC_FP16, 2, half, 1, NULL) == MX_EINVAL && strstr(mx_last_error(), "f16"),
          "a non-f32 key is refused: %s", mx_last_error());
    CHECK(mx_compressor_create(&c, MX_GC_FP16, 2, keys, NKEYS, NULL) == MX_OK, "%s", mx_last_error());
    float data[300];
    double wire = 0;
    CHECK(mx_compressor_push(c, 0, 1, data, 299, MX_F32, &wire) == MX_EINVAL && strstr(mx_last_error(), "299"),
          "a push whose count does not match the key is refused: %s", mx_last_error());
    CHECK(mx_compressor_push(c, 2, 1, data, 300, MX_F32, &wire) == MX_EINVAL, "device 2 of 2 is refused");
    /* beyond half precision's range: inf, as IEEE rounding gives (a loss scaler's signal) */
    for (int i = 0; i < 300; i++) data[i] = i ? 1.0f : 70000.0f;
    CHECK(mx_compressor_push(c, 1, 1, data, 300, MX_F32, &wire) == MX_OK && isinf(data[0]) && data[1] == 1.0f &&
              wire == 600,
          "fp16 of 70000 gives %g, of 1 gives %g; wire %.0f bytes", data[0], data[1], wire);
    mx_compressor_destroy(c);
}

/* What a little-endian host reads as the word at packed + 4w (the test builds it from the
 * bytes, so the expected words below hold on any host). */
static uint32_t word_at(const unsigned char *packed, int w)
{
    const unsigned char *b = packed + 4 * w;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* 2bit through the push hook on two devices and two keys (the second key's residual at an
 * offset), three pushes of key 0 on device 0; the codes and residuals are worked out by hand
 * from MXNet's rules at threshold 0.5. */
static void check_2bit_pushes(void)
{
    enum { N = 17 };
    const mx_kv_key k2[2] = {{0, N, MX_F32}, {32, 5, MX_F32}};
    const mx_compressor_opts o = {0.5, 0};
    mx_compressor *c = NULL;
    CHECK(mx_compressor_create(&c, MX_GC_2BIT, 2, k2, 2, &o) == MX_OK, "%s", mx_last_error());
    if (!c) return;
    const float g[N] = {0.6f, -0.7f, 0.2f, 0.49f, -0.5f, 0.5f, -0.6f, 1.7f, [15] = -2.0f, [16] = 0.75f};
    float data[N], decoded_sum[N] = {0}, pushed[N] = {0}, other[5] = {9, 9, 9, 9, 9};
    double wire = 0;
    /* the other device's other key first: it must not touch device 0's residuals */
    CHECK(mx_compressor_push(c, 1, 1, other, 5, MX_F32, &wire) == MX_OK && wire == 4 && other[0] == 0.5f,
          "device 1 key 1: %s, wire %.0f, decoded %g", mx_last_error(), wire, other[0]);
    /* push 1, r = g. Codes (value: code, residual after):
     *  0: 0.6 11 0.1   1: -0.7 10 -0.2   2: 0.2 00 0.2   3: 0.49 00 0.49
     *  4: -0.5 10 0 (reaches -t)   5: 0.5 11 0 (reaches +t)   6: -0.6 10 -0.1
     *  7: 1.7 11 1.2 (one threshold a push)   8-14: 0 00   15: -2 10 -1.5   16: 0.75 11 0.25
     * bytes 11100000 = e0, 10111011 = bb, 00, 00000010 = 02 | c0 00 00 00, so the words read
     * as 0x0200bbe0 and 0x000000c0 */
    /* push 2, r += g:  0: 0.7 11 0.2   1: -0.9 10 -0.4   2: 0.4 00 0.4   3: 0.98 11 0.48
     *  4: -0.5 10 0   5: 0.5 11 0   6: -0.7 10 -0.2   7: 2.9 11 2.4   15: -3.5 10 -3
     *  16: 1.0 11 0.5: words 0x0200bbe3, 0x000000c0 */
    /* push 3 of zeros: 7: 2.4 11 1.9, 15: -3 10 -2.5, 16: exactly 0.5 11 0 (>= t), the rest
     * below t (3: 0.48) send nothing: byte 1 00000011, byte 3 00000010, byte 4 11000000 */
    const uint32_t want[3][2] = {{0x0200bbe0u, 0xc0u}, {0x0200bbe3u, 0xc0u}, {0x02000300u, 0xc0u}};
    const float want_r[3][N] = {
        {0.1f, -0.2f, 0.2f, 0.49f, 0, 0, -0.1f, 1.2f, [15] = -1.5f, [16] = 0.25f},
        {0.2f, -0.4f, 0.4f, 0.48f, 0, 0, -0.2f, 2.4f, [15] = -3.0f, [16] = 0.5f},
        {0.2f, -0.4f, 0.4f, 0.48f, 0, 0, -0.2f, 1.9f, [15] = -2.5f, [16] = 0}};
    for (int p = 0; p < 3; p++) {
        for (int i = 0; i < N; i++) data[i] = p < 2 ? g[i] : 0, pushed[i] += data[i];
        CHECK(mx_compressor_push(c, 0, 0, data, N, MX_F32, &wire) == MX_OK && wire == 8,
              "push %d: %s, %.0f wire bytes for 17 values (two words: 8)", p + 1, mx_last_error(), wire);
        const uint32_t w0 = word_at(c->buf[0], 0), w1 = word_at(c->buf[0], 1);
        CHECK(w0 == want[p][0] && w1 == want[p][1], "push %d: words %08x %08x, expected %08x %08x", p + 1,
              (unsigned)w0, (unsigned)w1, (unsigned)want[p][0], (unsigned)want[p][1]);
        int bad_r = -1, bad_d = -1;
        for (int i = 0; i < N; i++) {
            /* decoded in place: the code's value, read back from the residual's change */
            const float code = data[i];
            if (code != 0 && code != 0.5f && code != -0.5f) bad_d = i;
            if (fabsf(c->residual[0][i] - want_r[p][i]) > 1e-6f) bad_r = i;
            decoded_sum[i] += code;
        }
        CHECK(bad_d < 0, "push %d: value %d decoded as %g, not 0 or +-0.5", p + 1, bad_d, bad_d < 0 ? 0 : data[bad_d]);
        CHECK(bad_r < 0, "push %d: residual %d is %g, worked out %g", p + 1, bad_r,
              bad_r < 0 ? 0 : c->residual[0][bad_r], bad_r < 0 ? 0 : want_r[p][bad_r]);
    }
    /* what was decoded over the pushes plus what is still owed is what was pushed */
    float worst = 0;
    for (int i = 0; i < N; i++) worst = fmaxf(worst, fabsf(decoded_sum[i] + c->residual[0][i] - pushed[i]));
    CHECK(worst < 1e-5f, "2bit: decoded sums plus residual differ from the pushed sums by %g", worst);
    CHECK(decoded_sum[7] == 1.5f && decoded_sum[16] == 1.5f && decoded_sum[3] == 0.5f,
          "2bit decoded sums %g %g %g, worked out 1.5 1.5 0.5", decoded_sum[7], decoded_sum[16], decoded_sum[3]);
    /* the norm covers both devices: device 1 key 1 holds 8.5 in each of its five values */
    double ss = 5 * 8.5 * 8.5;
    for (int i = 0; i < N; i++) ss += (double)want_r[2][i] * want_r[2][i];
    const double norm = mx_compressor_residual_norm(c);
    CHECK(fabs(norm - sqrt(ss)) < 1e-5, "2bit residual norm %g, worked out %g", norm, sqrt(ss));
    mx_compressor_destroy(c);
}

static void topk_sent(const mx_compressor *c, int n, uint32_t *idx, float *val)
{
    for (int i = 0; i < n; i++) memcpy(&idx[i], c->buf[0] + 8 * i, 4), memcpy(&val[i], c->buf[0] + 8 * i + 4, 4);
}

/* topk through the push hook: exactly k pairs, the largest magnitudes with ties to the lower
 * index, the rest kept and sent later. */
static void check_topk_pushes(void)
{
    enum { N = 10 };
    const mx_kv_key key = {0, N, MX_F32};
    const mx_compressor_opts o = {0, 0.4}; /* k = 4 */
    mx_compressor *c = NULL;
    CHECK(mx_compressor_create(&c, MX_GC_TOPK, 1, &key, 1, &o) == MX_OK, "%s", mx_last_error());
    if (!c) return;
    const float g1[N] = {2, -7, 0, 7, 1, -2, 2, 0.5f, -1, 3}, g2[N] = {[6] = 0.5f, [9] = -1};
    float data[N], decoded_sum[N] = {0};
    uint32_t idx[4];
    float val[4];
    double wire = 0;
    /* |v|: 7 (1), 7 (3), 3 (9), then 2 at 0, 5 and 6: index 0 wins. Pairs in index order. */
    memcpy(data, g1, sizeof data);
    CHECK(mx_compressor_push(c, 0, 0, data, N, MX_F32, &wire) == MX_OK && wire == 32,
          "push 1: %s, wire %.0f (4 pairs: 32)", mx_last_error(), wire);
    topk_sent(c, 4, idx, val);
    CHECK(idx[0] == 0 && val[0] == 2 && idx[1] == 1 && val[1] == -7 && idx[2] == 3 && val[2] == 7 && idx[3] == 9 &&
              val[3] == 3,
          "push 1 sent (%u,%g) (%u,%g) (%u,%g) (%u,%g), expected (0,2) (1,-7) (3,7) (9,3)", idx[0], val[0], idx[1],
          val[1], idx[2], val[2], idx[3], val[3]);
    const float want1[N] = {0, 0, 0, 0, 1, -2, 2, 0.5f, -1, 0};
    CHECK(memcmp(c->residual[0], want1, sizeof want1) == 0 && data[0] == 2 && data[5] == 0 && data[9] == 3,
          "push 1: residual keeps what was not sent (r5 %g r6 %g), decoded %g %g %g", c->residual[0][5],
          c->residual[0][6], data[0], data[5], data[9]);
    for (int i = 0; i < N; i++) decoded_sum[i] += data[i];
    /* v = {0,0,0,0,1,-2,2.5,0.5,-1,-1}: 2.5 (6), 2 (5), then 1 at 4, 8, 9: 4 and 8 win */
    memcpy(data, g2, sizeof data);
    CHECK(mx_compressor_push(c, 0, 0, data, N, MX_F32, &wire) == MX_OK, "push 2: %s", mx_last_error());
    topk_sent(c, 4, idx, val);
    CHECK(idx[0] == 4 && val[0] == 1 && idx[1] == 5 && val[1] == -2 && idx[2] == 6 && val[2] == 2.5f && idx[3] == 8 &&
              val[3] == -1,
          "push 2 sent (%u,%g) (%u,%g) (%u,%g) (%u,%g), expected (4,1) (5,-2) (6,2.5) (8,-1)", idx[0], val[0], idx[1],
          val[1], idx[2], val[2], idx[3], val[3]);
    int sent = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        sent += data[i] != 0;
        decoded_sum[i] += data[i];
        bad += decoded_sum[i] + c->residual[0][i] != g1[i] + g2[i]; /* exact: values move, never round */
    }
    CHECK(sent == 4 && bad == 0 && c->residual[0][7] == 0.5f && c->residual[0][9] == -1,
          "push 2: %d decoded (k = 4), %d sums of decoded plus residual differ from the pushes", sent, bad);
    CHECK(fabs(mx_compressor_residual_norm(c) - sqrt(1.25)) < 1e-9, "topk residual norm %g, expected sqrt(1.25)",
          mx_compressor_residual_norm(c));
    mx_compressor_destroy(c);
}

static const float *sort_v; /* qsort's comparator has no user pointer */
static int by_magnitude(const void *a, const void *b)
{
    const int i = *(const int *)a, j = *(const int *)b;
    const float x = fabsf(sort_v[i]), y = fabsf(sort_v[j]);
    return x > y ? -1 : x < y ? 1 : i - j;
}

/* Many exact ties (values from a set of 41) over a large key: the radix select's choice is
 * the first k of a sort by magnitude then index, and k follows ratio x count exactly. */
static void check_topk_select(void)
{
    enum { M = 50000 };
    const mx_kv_key key = {0, M, MX_F32};
    const mx_compressor_opts o = {0, 0.07}; /* 3500; 0.07 x 50000 is 3500.0000000000005 in doubles */
    mx_compressor *c = NULL;
    float *v = malloc(sizeof(float) * M), *data = malloc(sizeof(float) * M);
    int *order = malloc(sizeof(int) * M);
    CHECK(mx_compressor_create(&c, MX_GC_TOPK, 1, &key, 1, &o) == MX_OK, "%s", mx_last_error());
    if (c && v && data && order) {
        uint64_t st = 11;
        for (int i = 0; i < M; i++) v[i] = (float)((int)(check_uniform(&st) * 41) - 20) * 0.25f, order[i] = i;
        memcpy(data, v, sizeof(float) * M);
        double wire = 0;
        CHECK(mx_compressor_push(c, 0, 0, data, M, MX_F32, &wire) == MX_OK && wire == 8 * 3500,
              "topk of 50000 at 0.07: %s, %.0f wire bytes (3500 pairs: 28000)", mx_last_error(), wire);
        sort_v = v;
        qsort(order, M, sizeof *order, by_magnitude);
        int wrong = 0, sent = 0;
        for (int n = 0; n < M; n++) {
            const int i = order[n];
            const int chosen = n < 3500;
            sent += data[i] != 0; /* the first 3500 are all +-4.75 or more */
            wrong += chosen ? data[i] != v[i] || c->residual[0][i] != 0 : data[i] != 0 || c->residual[0][i] != v[i];
        }
        CHECK(wrong == 0 && sent == 3500, "topk: %d values differ from the sort's first 3500 by magnitude then index "
              "(%d sent)", wrong, sent);
        const mx_compressor_opts small = {0, 1e-9}, all = {0, 1};
        mx_compressor_destroy(c);
        c = NULL;
        CHECK(mx_compressor_create(&c, MX_GC_TOPK, 1, &key, 1, &small) == MX_OK && c->ops->packed_bytes(c, M) == 8,
              "a tiny ratio still sends one pair");
        mx_compressor_destroy(c);
        c = NULL;
        CHECK(mx_compressor_create(&c, MX_GC_TOPK, 1, &key, 1, &all) == MX_OK &&
                  c->ops->packed_bytes(c, M) == (size_t)8 * M,
              "ratio 1 sends every value");
    }
    mx_compressor_destroy(c);
    free(v), free(data), free(order);
}

/* fp16 through the compressor: IEEE nearest, ties to even, inf beyond the largest half. */
static void check_fp16_rounding(void)
{
    enum { N = 12 };
    const mx_kv_key key = {0, N, MX_F32};
    mx_compressor *c = NULL;
    CHECK(mx_compressor_create(&c, MX_GC_FP16, 1, &key, 1, NULL) == MX_OK, "%s", mx_last_error());
    if (!c) return;
    const float u = 1.0f / 2048; /* half an ulp of half precision at 1 */
    const float in[N] = {1 + u, 1 + 3 * u, -(1 + u), 1 + u + 1.0f / (1 << 20), 65519, 65520, -65520, 65504,
                         NAN, 0x1p-25f, 0x3p-25f, 1e-9f};
    /* 1+u: tie, to 1 (even); 1+3u: tie, to 1+4u (even); just above a tie rounds up; 65519
     * rounds down to 65504, 65520 is the tie with 65536 (beyond range): inf; subnormal ties
     * 2^-25 -> 0 and 3 x 2^-25 -> 2^-23 (even); 1e-9 underflows to 0 */
    const float want[N] = {1, 1 + 4 * u, -1, 1 + 2 * u, 65504, INFINITY, -INFINITY, 65504, NAN, 0, 0x1p-23f, 0};
    float data[N];
    memcpy(data, in, sizeof data);
    double wire = 0;
    CHECK(mx_compressor_push(c, 0, 0, data, N, MX_F32, &wire) == MX_OK && wire == 2 * N, "fp16 push: %s, wire %.0f",
          mx_last_error(), wire);
    for (int i = 0; i < N; i++)
        CHECK(isnan(want[i]) ? isnan(data[i]) : data[i] == want[i], "fp16 of %.9g gives %.9g, expected %.9g", in[i],
              data[i], want[i]);
    CHECK(mx_compressor_residual_norm(c) == 0, "fp16 keeps no residual");
    mx_compressor_destroy(c);
}

/* Settings: NULL or 0 is the default; what is out of range is refused naming the value. */
static void check_settings(void)
{
    const mx_kv_key key = {0, 4, MX_F32};
    mx_compressor *c = NULL;
    const mx_compressor_opts zero = {0, 0};
    for (int i = 0; i < 2; i++) {
        CHECK(mx_compressor_create(&c, MX_GC_2BIT, 1, &key, 1, i ? &zero : NULL) == MX_OK && c->threshold == 0.5 &&
                  c->topk_ratio == 0.01,
              "defaults: %s", mx_last_error());
        mx_compressor_destroy(c);
        c = NULL;
    }
    const struct {
        mx_compressor_opts o;
        const char *kind, *want;
    } bad[] = {
        {{-0.5, 0}, "2bit", "threshold -0.5"},  {{NAN, 0}, "2bit", "threshold nan"},
        {{INFINITY, 0}, "2bit", "threshold inf"}, {{2e6, 0}, "2bit", "threshold 2e+06"},
        {{0, -0.1}, "topk", "ratio -0.1"},       {{0, 1.5}, "topk", "ratio 1.5"},
        {{0, NAN}, "topk", "ratio nan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const int rc = mx_compressor_create(&c, mx_gc_of(bad[i].kind), 1, &key, 1, &bad[i].o);
        CHECK(rc == MX_EINVAL && !c && strstr(mx_last_error(), bad[i].want) && strstr(mx_last_error(), "accepted"),
              "%s: '%s' refused naming it and what is accepted: %s", bad[i].kind, bad[i].want, mx_last_error());
        mx_compressor_destroy(c);
        c = NULL;
    }
}

int main(void)
{
    check_registry_and_errors();
    check_2bit_pushes();
    check_topk_pushes();
    check_topk_select();
    check_fp16_rounding();
    check_settings();
    for (int ndev = 2; ndev <= 3; ndev++)
        for (int m = 0; m < 2; m++) {
            const char *mode = m ? "device" : "local";
            check_kind("none", mode, ndev, 4);
            check_kind("fp16", mode, ndev, 2);
        }
    return check_summary("test_compressor");
}
