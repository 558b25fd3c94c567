/* Scalar conversions between f32 and the half formats (engine/backend/dtype.h), written out bit by bit so
 * that they round the same on every machine, whatever the compiler's _Float16 support. */
#include "dtype.h"

#include <string.h>

const char *mx_dtype_name(mx_dtype t)
{
    static const char *const names[MX_NDTYPES] = {"f32", "f16", "bf16"};
    return (unsigned)t < MX_NDTYPES ? names[t] : "?";
}

uint16_t mx_f32_to_f16(float x)
{
    const uint32_t u = mx_f32_bits(x);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN, quiet */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to beyond 65504: inf */
    if (a < 0x38800000u) {
        /* below the smallest normal half (2^-14): a subnormal m * 2^-24, m rounded to
         * nearest even; 2^-25 and below (half the smallest subnormal or less) go to zero,
         * exactly 2^-25 by the ties-to-even rule */
        if (a < 0x33000000u) return sign;
        const int e = (int)(a >> 23);                /* biased f32 exponent, 102..112 */
        const uint32_t m = (a & 0x7fffffu) | 0x800000u; /* 24-bit significand */
        const int shift = 126 - e;                   /* to units of 2^-24: 14..24 */
        const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        return (uint16_t)(sign | (q + (rem > half || (rem == half && (q & 1u)))));
    }
    /* normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to even; a
     * carry into the exponent is right, as for bf16 */
    const uint32_t r = a - 0x38000000u;
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}

float mx_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return mx_bits_f32(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
    if (e != 0) return mx_bits_f32(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0) return mx_bits_f32(sign);
    /* subnormal: m * 2^-24, exact in f32 */
    const float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
}

float mx_dtype_load(mx_dtype t, const void *p, size_t i)
{
    if (t == MX_F32) return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return t == MX_F16 ? mx_f16_to_f32(h) : mx_bf16_to_f32(h);
}

void mx_dtype_store(mx_dtype t, void *p, size_t i, float v)
{
    if (t == MX_F32)
        ((float *)p)[i] = v;
    else
        ((uint16_t *)p)[i] = t == MX_F16 ? mx_f32_to_f16(v) : mx_f32_to_bf16(v);
}

void mx_dtype_convert(size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    if (dt == st) {
        if (dst != src && n) memcpy(dst, src, n * mx_dtype_size(st));
        return;
    }
    for (size_t i = 0; i < n; i++) mx_dtype_store(dt, dst, i, mx_dtype_load(st, src, i));
}

size_t mx_dtype_count_nonfinite(size_t n, const void *x, mx_dtype t)
{
    size_t bad = 0;
    if (t == MX_F32) {
        const uint32_t *u = x;
        for (size_t i = 0; i < n; i++) bad += (u[i] & 0x7f800000u) == 0x7f800000u;
    } else {
        const uint16_t *h = x;
        const uint16_t e = t == MX_F16 ? 0x7c00u : 0x7f80u;
        for (size_t i = 0; i < n; i++) bad += (h[i] & e) == e;
    }
    return bad;
}
