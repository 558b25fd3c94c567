/* Compression `fp16`: each gradient value is rounded to IEEE half precision for the wire
 * (nearest, ties to even; beyond 65504 it becomes inf, which is what a loss scaler must
 * then catch) and summed in f32 by the receiver. Half the bytes, no error feedback. Values
 * are rounded at the compressor's prescale (a step's sum, not its mean), which keeps small
 * gradients out of half precision's subnormal range. */
#include "compressor.h"

#include <stdint.h>

static size_t fp16_bytes(const mx_compressor *c, size_t count) { return count * sizeof(uint16_t); }

static void fp16_compress(const mx_compressor *c, const float *g, float *residual, size_t count, void *packed)
{
    uint16_t *h = packed;
    const float s = c->prescale;
    for (size_t i = 0; i < count; i++) h[i] = mx_f32_to_f16(g[i] * s);
}

static void fp16_decompress(const mx_compressor *c, const void *packed, size_t count, float *out)
{
    const uint16_t *h = packed;
    const float s = c->prescale;
    for (size_t i = 0; i < count; i++) out[i] = mx_f16_to_f32(h[i]) / s;
}

const mx_compressor_ops mx_gc_fp16 = {
    .kind = MX_GC_FP16,
    .summary = "each value rounded to half precision for the wire, summed in f32",
    .packed_bytes = fp16_bytes,
    .compress = fp16_compress,
    .decompress = fp16_decompress,
};
