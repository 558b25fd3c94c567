/* Gradient compressors through the kvstore's push hook: the registry, what each compressor
 * makes of a gradient (fp16: every value rounded to half, summed in f32 by the receiver),
 * the bytes it puts on the wire, and pushes that do not match its key table. */
#include "check.h"
#include "engine/status.h"
#include "strategies/comm.h"
#include "strategies/compressor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NKEYS 3
static const mx_kv_key keys[NKEYS] = {{0, 7, MX_F32}, {16, 300, MX_F32}, {320, 1001, MX_F32}};
#define TOTAL 1321

static float grad_value(int d, size_t i) { return 0.1f * (float)(i + 1) * (float)(d + 1) + 1e-4f; }

/* What the receiver sums for one pushed value. */
static float decoded(const char *kind, float v) { return strcmp(kind, "fp16") == 0 ? mx_f16_to_f32(mx_f32_to_f16(v)) : v; }

static void check_kind(const char *kind, const char *mode, int ndev, double bytes_per_value)
{
    mx_backend *be[4];
    float *w[4], *g[4];
    mx_comm *comm = NULL;
    mx_kvstore *kv = NULL;
    mx_compressor *c = NULL;
    int rc = mx_comm_create(&comm, "threads", ndev);
    if (rc == MX_OK) rc = mx_kv_create(&kv, mode, comm, keys, NKEYS, NULL);
    if (rc == MX_OK) rc = mx_compressor_create(&c, kind, ndev, keys, NKEYS, NULL);
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
            for (int k = NKEYS - 1; k >= 0; k--) CHECK(mx_kv_push(kv, k, d, keys[k].count) == MX_OK, "push: %s", mx_last_error());
        for (int d = 0; d < ndev; d++)
            for (int k = 0; k < NKEYS; k++) CHECK(mx_kv_pull(kv, k, d, keys[k].count) == MX_OK, "pull: %s", mx_last_error());
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
        printf("%-5s %-6s x%d: sums of the decoded pushes ok (%d of %d values differ from the raw sum), %.0f wire bytes\n",
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
    CHECK(mx_compressor_create(&c, "2bit-typo", 2, keys, NKEYS, NULL) == MX_EINVAL && strstr(mx_last_error(), "'2bit-typo'") &&
              strstr(mx_last_error(), "none|fp16"),
          "an unknown compressor is refused naming it and the accepted ones: %s", mx_last_error());
    const mx_kv_key half[1] = {{0, 8, MX_F16}};
    CHECK(mx_compressor_create(&c, "fp16", 2, half, 1, NULL) == MX_EINVAL && strstr(mx_last_error(), "f16"),
          "a non-f32 key is refused: %s", mx_last_error());
    CHECK(mx_compressor_create(&c, "fp16", 2, keys, NKEYS, NULL) == MX_OK, "%s", mx_last_error());
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

int main(void)
{
    check_registry_and_errors();
    for (int ndev = 2; ndev <= 3; ndev++)
        for (int m = 0; m < 2; m++) {
            const char *mode = m ? "device" : "local";
            check_kind("none", mode, ndev, 4);
            check_kind("fp16", mode, ndev, 2);
        }
    return check_summary("test_compressor");
}
