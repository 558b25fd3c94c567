/* AMP's fused update (mx_backend_ops.sgd_update_amp) on the CPU against what it replaces:
 * sgd_update on the master weights, then cast to the half type and back. Bit for bit, in
 * every output (master, momentum, half, compute copy), for fp16 and bf16, on sizes around
 * the kernel's pieces and thread split, with values that round to a tie, overflow fp16 or
 * are inf or NaN; a dtype other than the two half types fails, naming it. */
#include "check.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "engine/core/rng.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mx_backend *be;

static void fill(float *x, size_t n, mx_rng *s, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = scale * (float)(2 * mx_rng_uniform(s) - 1);
}

static void compare(mx_dtype t, size_t n, float wd)
{
    const size_t hs = mx_dtype_size(t), nn = n ? n : 1;
    float *g = malloc(sizeof(float) * nn), *m[2], *mom[2], *w[2];
    void *h[2];
    mx_rng s;
    mx_rng_seed(&s, 7 + n);
    for (int k = 0; k < 2; k++) {
        m[k] = malloc(sizeof(float) * nn), mom[k] = malloc(sizeof(float) * nn), w[k] = malloc(sizeof(float) * nn);
        h[k] = malloc(hs * nn);
    }
    fill(g, n, &s, 1);
    fill(m[0], n, &s, 2);
    fill(mom[0], n, &s, 0.1f);
    /* Special values where there is room: inf and NaN gradients, a master weight past fp16's
     * largest, one halfway between two bf16 values (without weight decay, a tie to even) */
    if (n > 4) {
        g[1] = INFINITY, g[2] = NAN, m[0][3] = 70000.0f, m[0][4] = mx_bf16_to_f32(0x3f81) + 0x1p-8f;
        g[3] = g[4] = mom[0][3] = mom[0][4] = 0;
    }
    memcpy(m[1], m[0], sizeof(float) * n), memcpy(mom[1], mom[0], sizeof(float) * n);
    const float lr = 0.05f, momentum = 0.9f, rescale = 0.5f;
    be->ops->sgd_update(be, n, m[0], mom[0], g, lr, momentum, wd, rescale);
    be->ops->cast(be, n, h[0], t, m[0], MX_F32);
    be->ops->cast(be, n, w[0], MX_F32, h[0], t);
    be->ops->sgd_update_amp(be, n, m[1], mom[1], g, lr, momentum, wd, rescale, t, h[1], w[1]);
    CHECK(memcmp(m[0], m[1], sizeof(float) * n) == 0, "%s n=%zu: master weights differ", mx_dtype_name(t), n);
    CHECK(memcmp(mom[0], mom[1], sizeof(float) * n) == 0, "%s n=%zu: momentum differs", mx_dtype_name(t), n);
    CHECK(memcmp(h[0], h[1], hs * n) == 0, "%s n=%zu: half values differ", mx_dtype_name(t), n);
    CHECK(memcmp(w[0], w[1], sizeof(float) * n) == 0, "%s n=%zu: compute copies differ", mx_dtype_name(t), n);
    if (n > 4 && wd == 0) /* the specials came through as the casts make them */
        CHECK(w[1][1] == -INFINITY && isnan(w[1][2]) && w[1][3] == (t == MX_F16 ? INFINITY : 70144.0f) &&
                  (t != MX_BF16 || w[1][4] == mx_bf16_to_f32(0x3f82)),
              "%s n=%zu: specials %g %g %g %g", mx_dtype_name(t), n, w[1][1], w[1][2], w[1][3], w[1][4]);
    for (int k = 0; k < 2; k++) free(m[k]), free(mom[k]), free(w[k]), free(h[k]);
    free(g);
}

int main(void)
{
    if (mx_backend_create(&be, "cpu", 0, 2) != MX_OK) return 1;
    /* 2048 is a piece; past 32768 two threads split the range at n/2 */
    const size_t sizes[] = {0, 1, 5, 17, 2047, 2048, 2049, 4097, 32767, 65537, 100003};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        compare(MX_F16, sizes[i], 1e-4f);
        compare(MX_BF16, sizes[i], 1e-4f);
    }
    compare(MX_F16, 5, 0);
    compare(MX_BF16, 5, 0);
    float x = 1, mom = 0, g = 1, w = 0;
    uint16_t h;
    be->ops->sgd_update_amp(be, 1, &x, &mom, &g, 0.1f, 0.9f, 0, 1, MX_F32, &h, &w);
    CHECK(mx_backend_error(be) != MX_OK && strstr(mx_last_error(), "dtype 0"), "%s", mx_last_error());
    mx_backend_destroy(be);
    return check_summary("test_sgd_amp");
}
