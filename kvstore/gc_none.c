/* Compression `none`: the gradient goes as it is (f32). Useful to run the compressor path
 * with nothing changed; the data strategy installs no hook at all for it. */
#include "compressor.h"

#include <string.h>

static size_t none_bytes(const mx_compressor *c, size_t count) { return count * sizeof(float); }

static void none_compress(const mx_compressor *c, const float *g, float *residual, size_t count, void *packed)
{
    memcpy(packed, g, count * sizeof(float));
}

static void none_decompress(const mx_compressor *c, const void *packed, size_t count, float *out)
{
    if (out != packed) memcpy(out, packed, count * sizeof(float));
}

const mx_compressor_ops mx_gc_none = {
    .kind = MX_GC_NONE,
    .summary = "f32 as computed",
    .packed_bytes = none_bytes,
    .compress = none_compress,
    .decompress = none_decompress,
};
