/* Element types of tensors: f32, and the two half-precision formats that mixed precision and
 * compressed communication use. Sizes and offsets are counted in elements of a tensor's
 * type; these are the scalar conversions every backend and communicator rounds by. */
#ifndef MX_DTYPE_H
#define MX_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { MX_F32 = 0, MX_F16 = 1, MX_BF16 = 2, MX_NDTYPES } mx_dtype;

static inline size_t mx_dtype_size(mx_dtype t) { return t == MX_F32 ? 4 : 2; }
const char *mx_dtype_name(mx_dtype t); /* "f32", "f16", "bf16" */

/* IEEE binary16 and bfloat16 from binary32: round to nearest, ties to even; values beyond
 * the largest finite half round to inf (as IEEE overflow does); NaN stays NaN (quiet, sign
 * kept); results below the smallest normal become subnormals or zero, correctly rounded. */
uint16_t mx_f32_to_f16(float x);
/* Exact: every half value is a float. */
float mx_f16_to_f32(uint16_t h);

static inline uint32_t mx_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float mx_bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* bf16 is f32's upper half: inline, so that the cast loops of AMP vectorise. */
static inline uint16_t mx_f32_to_bf16(float x)
{
    const uint32_t u = mx_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep it quiet */
    /* round to nearest even on the 16 bits dropped; a carry into the exponent is right
     * (it rounds up to the next binade, or to inf past the largest finite) */
    const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)((u + rounding) >> 16);
}

static inline float mx_bf16_to_f32(uint16_t h) { return mx_bits_f32((uint32_t)h << 16); }

/* n elements of type t at p, read as float / written from float (rounded as above). */
float mx_dtype_load(mx_dtype t, const void *p, size_t i);
void mx_dtype_store(mx_dtype t, void *p, size_t i, float v);

/* n elements from src (type st) into dst (type dt), one at a time on the host: the default
 * cast of a backend without its own (the CPU's kernels round the same, in threads). */
void mx_dtype_convert(size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st);
/* How many of n elements at x are inf or NaN (an all-ones exponent in each format). */
size_t mx_dtype_count_nonfinite(size_t n, const void *x, mx_dtype t);

#endif
