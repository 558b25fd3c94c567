/* The 2bit and topk compressors on hand-made vectors (the expected codes, words and
 * residuals worked out by hand below from MXNet's rules), their error feedback (what was
 * decoded plus what the residual still holds equals what was pushed), topk's choice on
 * random data, and the prescale that makes a step's mean compress as its sum. */
#include "check.h"
#include "base/status.h"
#include "kvstore/compressor.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mx_compressor *make(const char *kind, size_t count, double threshold, double ratio)
{
    const mx_kv_key key = {0, count, MX_F32};
    const mx_compressor_opts o = {threshold, ratio};
    mx_compressor *c = NULL;
    CHECK(mx_compressor_create(&c, mx_gc_of(kind), 1, &key, 1, &o) == MX_OK, "%s: %s", kind, mx_last_error());
    return c;
}

static void check_2bit(void)
{
    enum { N = 18 };
    mx_compressor *c = make("2bit", N, 0.5, 0);
    if (!c) return;
    float g[N] = {0.6f, -0.7f, 0.2f, 0.49f, -0.5f, 0.5f, 0, 1.2f};
    g[16] = -3;
    uint8_t packed[8];
    float out[N], sum[N] = {0}, pushed[N] = {0};
    CHECK(c->ops->packed_bytes(c, N) == 8, "18 values take %zu bytes, expected two 32-bit words",
          c->ops->packed_bytes(c, N));
    c->ops->compress(c, g, c->residual[0], N, packed);
    /* value j of a block: byte j/4, bits from the top: 11 +t, 10 -t.
     * byte 0: 0.6 -> 11, -0.7 -> 10, 0.2 -> 00, 0.49 -> 00            = 1110 0000 = 0xE0
     * byte 1: -0.5 -> 10 (reaches -t), 0.5 -> 11, 0 -> 00, 1.2 -> 11  = 1011 0011 = 0xB3
     * byte 4 (second word, value 16): -3 -> 10                        = 1000 0000 = 0x80 */
    const uint8_t want[8] = {0xE0, 0xB3, 0, 0, 0x80, 0, 0, 0};
    CHECK(memcmp(packed, want, 8) == 0, "2bit codes %02x %02x %02x %02x %02x, expected e0 b3 00 00 80", packed[0],
          packed[1], packed[2], packed[3], packed[4]);
    const float *r = c->residual[0];
    CHECK(fabsf(r[0] - 0.1f) < 1e-6f && fabsf(r[1] + 0.2f) < 1e-6f && r[2] == 0.2f && r[3] == 0.49f && r[4] == 0 &&
              r[5] == 0 && fabsf(r[7] - 0.7f) < 1e-6f && r[16] == -2.5f,
          "2bit residuals %g %g %g %g %g %g %g %g", r[0], r[1], r[2], r[3], r[4], r[5], r[7], r[16]);
    c->ops->decompress(c, packed, N, out);
    CHECK(out[0] == 0.5f && out[1] == -0.5f && out[2] == 0 && out[4] == -0.5f && out[5] == 0.5f && out[7] == 0.5f &&
              out[16] == -0.5f && out[17] == 0,
          "2bit decodes %g %g %g %g %g %g %g", out[0], out[1], out[2], out[4], out[5], out[7], out[16]);
    /* a second push carries the residual: 0.1 + 0.6 and 0.49 + 0.49 now reach the threshold */
    for (int i = 0; i < N; i++) sum[i] = out[i], pushed[i] = g[i];
    c->ops->compress(c, g, c->residual[0], N, packed);
    CHECK((packed[0] & 0xc0) == 0xc0 && (packed[0] & 0x03) == 0x03 && (packed[0] & 0x0c) == 0,
          "second push: byte 0 is %02x, expected 11 at values 0 and 3, 00 at value 2", packed[0]);
    c->ops->decompress(c, packed, N, out);
    float worst = 0;
    for (int i = 0; i < N; i++) {
        sum[i] += out[i], pushed[i] += g[i];
        worst = fmaxf(worst, fabsf(sum[i] + r[i] - pushed[i]));
    }
    CHECK(worst < 1e-6f, "2bit: decoded sums plus residual differ from the pushed sum by %g", worst);
    mx_compressor_destroy(c);
}

/* inf and NaN go out as code 01 (unused by MXNet) and come back as NaN, so that the sum
 * shows the overflow; the finite values beside them keep their codes. */
static void check_2bit_nonfinite(void)
{
    mx_compressor *c = make("2bit", 4, 0.5, 0);
    if (!c) return;
    const float g[4] = {INFINITY, 0.6f, NAN, -INFINITY};
    uint8_t packed[4];
    float out[4];
    c->ops->compress(c, g, c->residual[0], 4, packed);
    /* 01 11 01 01 = 0111 0101 = 0x75 */
    CHECK(packed[0] == 0x75, "2bit of inf, 0.6, NaN, -inf: byte %02x, expected 75", packed[0]);
    c->ops->decompress(c, packed, 4, out);
    CHECK(isnan(out[0]) && out[1] == 0.5f && isnan(out[2]) && isnan(out[3]), "decoded %g %g %g %g", out[0], out[1],
          out[2], out[3]);
    mx_compressor_destroy(c);
}

static void check_topk(void)
{
    enum { N = 10 };
    mx_compressor *c = make("topk", N, 0, 0.3); /* k = 3 */
    if (!c) return;
    const float g[N] = {1, -5, 3, 3, 0.5f, -3, 2, 0, 4, -1};
    unsigned char packed[24];
    CHECK(c->ops->packed_bytes(c, N) == 24, "topk of 10 at 0.3: %zu bytes, expected 3 pairs",
          c->ops->packed_bytes(c, N));
    c->ops->compress(c, g, c->residual[0], N, packed);
    /* the largest |v|: 5 (index 1), 4 (8), then three at 3: the lowest index (2) wins */
    uint32_t idx[3];
    float val[3];
    for (int n = 0; n < 3; n++) memcpy(&idx[n], packed + 8 * n, 4), memcpy(&val[n], packed + 8 * n + 4, 4);
    CHECK(idx[0] == 1 && val[0] == -5 && idx[1] == 2 && val[1] == 3 && idx[2] == 8 && val[2] == 4,
          "topk sent (%u,%g) (%u,%g) (%u,%g), expected (1,-5) (2,3) (8,4)", idx[0], val[0], idx[1], val[1], idx[2],
          val[2]);
    const float *r = c->residual[0];
    CHECK(r[1] == 0 && r[2] == 0 && r[8] == 0 && r[3] == 3 && r[5] == -3 && r[0] == 1,
          "topk residual keeps what was not sent: %g %g %g %g %g %g", r[0], r[1], r[2], r[3], r[5], r[8]);
    /* nothing new pushed: the residual's largest go next, 3 (3), -3 (5), 2 (6) */
    const float zero[N] = {0};
    c->ops->compress(c, zero, c->residual[0], N, packed);
    float out[N];
    c->ops->decompress(c, packed, N, out);
    CHECK(out[3] == 3 && out[5] == -3 && out[6] == 2 && out[0] == 0 && out[1] == 0,
          "topk second push decodes %g %g %g", out[3], out[5], out[6]);
    mx_compressor_destroy(c);

    /* random data: exactly k sent, each at least as large as anything kept */
    enum { M = 100003 };
    c = make("topk", M, 0, 0.01);
    float *v = malloc(sizeof(float) * M), *o = malloc(sizeof(float) * M);
    unsigned char *p = malloc(c ? c->ops->packed_bytes(c, M) : 1);
    if (c && v && o && p) {
        srand(7);
        for (int i = 0; i < M; i++) v[i] = (float)(rand() % 2001 - 1000) / 7; /* many ties */
        c->ops->compress(c, v, c->residual[0], M, p);
        c->ops->decompress(c, p, M, o);
        int sent = 0;
        float least_sent = INFINITY, most_kept = 0;
        for (int i = 0; i < M; i++) {
            if (o[i] != 0) sent++, least_sent = fminf(least_sent, fabsf(o[i]));
            if (c->residual[0][i] != 0) most_kept = fmaxf(most_kept, fabsf(c->residual[0][i]));
        }
        const int k = (int)ceil(0.01 * M);
        CHECK(sent == k && least_sent >= most_kept, "topk on %d random values: %d sent (k = %d), smallest sent %g, "
              "largest kept %g", M, sent, k, least_sent, most_kept);
    }
    free(v), free(o), free(p);
    mx_compressor_destroy(c);
}

/* At prescale s, a value g is compressed as s g and decoded back to g's scale: 2bit's
 * threshold is met by a mean of 0.5/s, as MXNet's by the sum. */
static void check_prescale(void)
{
    mx_compressor *c = make("2bit", 4, 0.5, 0);
    if (!c) return;
    c->prescale = 128;
    const float g[4] = {0.004f, -0.004f, 0.003f, 0};
    uint8_t packed[4];
    float out[4];
    c->ops->compress(c, g, c->residual[0], 4, packed);
    c->ops->decompress(c, packed, 4, out);
    CHECK(out[0] == 0.5f / 128 && out[1] == -0.5f / 128 && out[2] == 0 && fabsf(c->residual[0][2] - 0.384f) < 1e-5f,
          "2bit at prescale 128 decodes %g %g %g, residual %g (in sum units)", out[0], out[1], out[2],
          c->residual[0][2]);
    mx_compressor_destroy(c);
    c = make("fp16", 1, 0, 0);
    if (!c) return;
    c->prescale = 128;
    const float tiny = 3e-7f; /* a subnormal in half precision; 128x of it is a normal half */
    uint16_t h;
    float back;
    c->ops->compress(c, &tiny, NULL, 1, &h);
    c->ops->decompress(c, &h, 1, &back);
    CHECK(fabsf(back - tiny) / tiny < 1e-3f, "fp16 at prescale 128 keeps 3e-7 as %g", back);
    mx_compressor_destroy(c);
}

static void check_bad_settings(void)
{
    const mx_kv_key key = {0, 4, MX_F32};
    mx_compressor *c = NULL;
    const mx_compressor_opts t = {-1, 0}, r = {0, 1.5};
    CHECK(mx_compressor_create(&c, MX_GC_2BIT, 1, &key, 1, &t) == MX_EINVAL && strstr(mx_last_error(), "threshold -1"),
          "a negative threshold is refused: %s", mx_last_error());
    CHECK(mx_compressor_create(&c, MX_GC_TOPK, 1, &key, 1, &r) == MX_EINVAL && strstr(mx_last_error(), "ratio 1.5"),
          "a ratio above 1 is refused: %s", mx_last_error());
}

int main(void)
{
    check_2bit();
    check_2bit_nonfinite();
    check_topk();
    check_prescale();
    check_bad_settings();
    return check_summary("test_gc_codecs");
}
