/* Element types of tensors: f32, and the two half-precision formats that mixed precision and
 * compressed communication use. Sizes and offsets are counted in elements of a tensor's
 * type; these are the scalar conversions every backend and communicator rounds by. */
#ifndef MX_DTYPE_H
#define MX_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MX_F32 = 0, MX_F16 = 1, MX_BF16 = 2, MX_NDTYPES } mx_dtype;

static inline size_t mx_dtype_size(mx_dtype t) { return t == MX_F32 ? 4 : 2; }
const char *mx_dtype_name(mx_dtype t); /* "f32", "f16", "bf16" */

/* IEEE binary16 and bfloat16 from binary32: round to nearest, ties to even; values beyond
 * the largest finite half round to inf (as IEEE overflow does); NaN stays NaN (quiet, sign
 * kept); results below the smallest normal become subnormals or zero, correctly rounded. */
uint16_t mx_f32_to_f16(float x);
uint16_t mx_f32_to_bf16(float x);
/* Exact: every half value is a float. */
float mx_f16_to_f32(uint16_t h);
float mx_bf16_to_f32(uint16_t h);

/* n elements of type t at p, read as float / written from float (rounded as above). */
float mx_dtype_load(mx_dtype t, const void *p, size_t i);
void mx_dtype_store(mx_dtype t, void *p, size_t i, float v);

#endif
