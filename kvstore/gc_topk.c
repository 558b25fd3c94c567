/* Compression `topk` with error feedback (as Deep Gradient Compression): v = residual +
 * gradient; the k = max(1, ceil(ratio x count)) values of largest magnitude are sent as
 * (uint32 index, f32 value) pairs in index order, the rest stay in the residual. Ties in
 * magnitude go to the lower index, so the choice is a function of the values alone.
 * Selection is O(count) without a sort: a radix select over the magnitudes' bit patterns
 * (for non-negative floats the bits order as the values do), four passes of 8 bits. */
#include "compressor.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static size_t topk_k(const mx_compressor *c, size_t count)
{
    /* ratio x count in doubles lands just above a whole k that was meant exactly (0.07 x 100
     * is 7.000000000000001, 0.07 being stored a little above 0.07): ceil would send k + 1.
     * Products within a few ulps above a whole number count as that number; a ratio meant
     * to land so close above one is not a setting anyone writes. The server computes k with
     * this same function, so its payload sizes agree with the workers'. */
    const double x = c->topk_ratio * (double)count;
    size_t k = (size_t)ceil(x - 4 * DBL_EPSILON * x);
    if (k < 1) k = 1;
    return k > count ? count : k;
}

static size_t topk_bytes(const mx_compressor *c, size_t count)
{
    return count ? topk_k(c, count) * (sizeof(uint32_t) + sizeof(float)) : 0;
}

static uint32_t mag_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b & 0x7fffffffu; /* |v|; NaN sorts above inf, deterministically */
}

/* The bit pattern T of the k-th largest magnitude: k values have magnitude >= T, and fewer
 * than k have magnitude > T. */
static uint32_t kth_largest(const float *v, size_t count, size_t k)
{
    uint32_t prefix = 0, mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        size_t hist[256] = {0};
        for (size_t i = 0; i < count; i++) {
            const uint32_t b = mag_bits(v[i]);
            if ((b & mask) == prefix) hist[(b >> shift) & 255]++;
        }
        int d = 255;
        for (; d > 0 && hist[d] < k; d--) k -= hist[d];
        prefix |= (uint32_t)d << shift;
        mask |= 255u << shift;
    }
    return prefix;
}

static void topk_compress(const mx_compressor *c, const float *g, float *residual, size_t count, void *packed)
{
    if (!count) return;
    const size_t k = topk_k(c, count);
    const float s = c->prescale;
    for (size_t i = 0; i < count; i++) residual[i] += g[i] * s; /* v, in place, at the prescale */
    const uint32_t t = kth_largest(residual, count, k);
    size_t above = 0;
    for (size_t i = 0; i < count; i++) above += mag_bits(residual[i]) > t;
    size_t ties = k - above, n = 0; /* the lowest-indexed values at the threshold fill the rest */
    unsigned char *out = packed;
    for (size_t i = 0; i < count && n < k; i++) {
        const uint32_t b = mag_bits(residual[i]);
        if (b < t || (b == t && !ties)) continue;
        if (b == t) ties--;
        const uint32_t idx = (uint32_t)i;
        memcpy(out + n * 8, &idx, 4);
        memcpy(out + n * 8 + 4, &residual[i], 4);
        residual[i] = 0; /* sent: nothing owed */
        n++;
    }
}

static void topk_decompress(const mx_compressor *c, const void *packed, size_t count, float *out)
{
    memset(out, 0, sizeof(float) * count);
    if (!count) return;
    const unsigned char *in = packed;
    for (size_t n = 0, k = topk_k(c, count); n < k; n++) {
        uint32_t idx;
        float v;
        memcpy(&idx, in + n * 8, 4);
        memcpy(&v, in + n * 8 + 4, 4);
        if (idx < count) out[idx] = v / c->prescale; /* a payload from elsewhere never writes out of bounds */
    }
}

const mx_compressor_ops mx_gc_topk = {
    .kind = MX_GC_TOPK,
    .summary = "the largest values by magnitude as (index, value) pairs, the rest kept in the residual",
    .error_feedback = 1,
    .packed_bytes = topk_bytes,
    .compress = topk_compress,
    .decompress = topk_decompress,
};
