/* Compression `2bit`, as MXNet's gradient compression: the residual accumulates the
 * gradient; where it reaches +threshold the value is sent as +threshold (code 11) and the
 * residual loses threshold, where it reaches -threshold it is sent as -threshold (code 10)
 * and the residual gains threshold, otherwise nothing is sent (00) and the residual keeps
 * it. 16 values per 32-bit word, laid out as MXNet's quantize_2bit packs them: value j of a
 * block of 16 takes byte j/4 of the word (in memory order), its two bits from the byte's
 * most significant end (j%4 = 0: bits 7-6, ..., j%4 = 3: bits 1-0). MXNet's word is a float
 * it addresses byte by byte, so what is shared is this byte order; read as a uint32 on a
 * little-endian host, value j's code sits at bits 8(j/4) + 7 - 2(j%4) and the one below
 * (value 0 at bits 7-6, value 3 at 1-0, value 4 at 15-14, value 15 at 25-24). The decoder
 * reads the same bytes, so codes and decoded values agree on any host. The residual and the
 * threshold are in the units of the compressor's prescale (the step's sum, as in MXNet).
 *
 * One departure: MXNet leaves code 01 unused, and mxbench sends a value whose residual is
 * inf or NaN as 01, decoded as NaN. MXNet's rules would send such a value as +-threshold
 * for ever (inf minus threshold is inf), hiding an overflow from the receivers: with 01
 * the summed gradient shows it, so AMP skips the step (and the residual is then cleared of
 * it) and an f32 run stops as diverged instead of training on. */
#include "compressor.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const uint8_t pos_bits[4] = {0xc0, 0x30, 0x0c, 0x03}; /* 11 at value j%4 */
static const uint8_t neg_bits[4] = {0x80, 0x20, 0x08, 0x02}; /* 10 at value j%4 */
static const uint8_t bad_bits[4] = {0x40, 0x10, 0x04, 0x01}; /* 01 at value j%4: not finite */

static size_t twobit_bytes(const mx_compressor *c, size_t count)
{
    (void)c;
    return (count + 15) / 16 * sizeof(uint32_t);
}

static void twobit_compress(const mx_compressor *c, const float *g, float *residual, size_t count, void *packed)
{
    const float t = (float)c->threshold, s = c->prescale;
    uint8_t *out = packed;
    memset(out, 0, twobit_bytes(c, count));
    for (size_t i = 0; i < count; i++) {
        const float r = residual[i] + g[i] * s;
        uint8_t *byte = out + i / 4; /* block i/16, byte (i%16)/4 of it: i/4 in all */
        if (!isfinite(r)) {
            *byte |= bad_bits[i & 3];
            residual[i] = r;
        } else if (r >= t) {
            *byte |= pos_bits[i & 3];
            residual[i] = r - t;
        } else if (r <= -t) {
            *byte |= neg_bits[i & 3];
            residual[i] = r + t;
        } else {
            residual[i] = r;
        }
    }
}

static void twobit_decompress(const mx_compressor *c, const void *packed, size_t count, float *out)
{
    const float t = (float)c->threshold / c->prescale;
    const uint8_t *in = packed;
    for (size_t i = 0; i < count; i++) {
        const uint8_t code = in[i / 4] & pos_bits[i & 3]; /* the value's two bits, in place */
        out[i] = code == pos_bits[i & 3] ? t : code == neg_bits[i & 3] ? -t : code ? NAN : 0.0f;
    }
}

const mx_compressor_ops mx_gc_2bit = {
    .kind = MX_GC_2BIT,
    .summary = "MXNet's 2-bit quantisation to +-threshold or 0, error feedback in the residual",
    .error_feedback = 1,
    .packed_bytes = twobit_bytes,
    .compress = twobit_compress,
    .decompress = twobit_decompress,
};
