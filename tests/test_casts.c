/* The backend's casts against the scalar conversions of engine/backend/dtype.h, which test_backend pins to
 * hand-worked bit patterns: every f16 and bf16 value widened, and f32 values at and around
 * every rounding boundary narrowed, bit for bit (NaN: NaN with its sign, since a CPU's
 * conversion instructions may set the quiet bit of a signalling NaN). The CPU backend casts
 * f16 with F16C instructions where the build targets them, so this is where a vector path
 * that rounds a tie, a subnormal or an overflow differently would show. round_half (AMP's
 * rounding in place, one pass) gives what the two casts give. */
#include "check.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "base/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 65536 };

static int same(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && signbit(a) == signbit(b);
    return mx_f32_bits(a) == mx_f32_bits(b);
}

static int same_half(uint16_t a, uint16_t b, mx_dtype t)
{
    const uint16_t e = t == MX_F16 ? 0x7c00u : 0x7f80u, m = t == MX_F16 ? 0x03ffu : 0x007fu;
    const int na = (a & e) == e && (a & m), nb = (b & e) == e && (b & m);
    if (na || nb) return na && nb && (a >> 15) == (b >> 15);
    return a == b;
}

static void check_type(mx_backend *be, mx_dtype t, uint16_t *h, float *f, uint16_t *back)
{
    const char *name = mx_dtype_name(t);
    for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
    be->ops->cast(be, N, f, MX_F32, h, t);
    int bad = 0;
    for (int i = 0; i < N && bad < 5; i++) {
        const float want = t == MX_F16 ? mx_f16_to_f32(h[i]) : mx_bf16_to_f32(h[i]);
        if (!same(f[i], want)) bad++;
        CHECK(same(f[i], want), "%s 0x%04x widened to 0x%08x, the scalar gives 0x%08x", name, i, mx_f32_bits(f[i]),
              mx_f32_bits(want));
    }
    /* each value's exact f32, the tie halfway to the next, and one f32 ulp either side of
     * that tie: 4 x 65536 narrowings (the tie offset is the dropped bits' half) */
    const uint32_t tie = t == MX_F16 ? 0x1000u : 0x8000u;
    for (int pass = 0; pass < 4; pass++) {
        for (int i = 0; i < N; i++) {
            const uint32_t u = mx_f32_bits(t == MX_F16 ? mx_f16_to_f32((uint16_t)i) : mx_bf16_to_f32((uint16_t)i));
            f[i] = mx_bits_f32(pass == 0 ? u : u + tie + (uint32_t)(pass - 2));
        }
        be->ops->cast(be, N, back, t, f, MX_F32);
        for (int i = 0; i < N && bad < 10; i++) {
            const uint16_t want = t == MX_F16 ? mx_f32_to_f16(f[i]) : mx_f32_to_bf16(f[i]);
            if (!same_half(back[i], want, t)) bad++;
            CHECK(same_half(back[i], want, t), "f32 0x%08x to %s gave 0x%04x, the scalar gives 0x%04x",
                  mx_f32_bits(f[i]), name, back[i], want);
        }
    }
    /* round_half: the two casts in one pass, the same bits, on the last pass's values */
    float *x = malloc(sizeof *x * N), *want = malloc(sizeof *want * N);
    uint16_t *h2 = malloc(sizeof *h2 * N);
    memcpy(x, f, sizeof *x * N);
    be->ops->cast(be, N, back, t, f, MX_F32);
    be->ops->cast(be, N, want, MX_F32, back, t);
    be->ops->round_half(be, N, x, t, h2);
    int rbad = 0;
    for (int i = 0; i < N; i++) rbad += !same(x[i], want[i]) || !same_half(h2[i], back[i], t);
    CHECK(rbad == 0, "%s round_half: %d of %d values differ from cast and cast back", name, rbad, N);
    free(x), free(want), free(h2);
    CHECK(be->ops->sync(be) == MX_OK, "%s casts: %s", name, mx_last_error());
}

int main(void)
{
    mx_backend *cpu;
    if (mx_backend_create(&cpu, "cpu", 0, 2) != MX_OK) {
        fprintf(stderr, "cpu backend: %s\n", mx_last_error());
        return 1;
    }
    /* the CPU backend's device memory is host memory */
    uint16_t *h = malloc(sizeof *h * N), *back = malloc(sizeof *back * N);
    float *f = malloc(sizeof *f * N);
    if (!h || !back || !f) return 1;
    check_type(cpu, MX_F16, h, f, back);
    check_type(cpu, MX_BF16, h, f, back);
    free(h);
    free(back);
    free(f);
    mx_backend_destroy(cpu);
    return check_summary("test_casts");
}
