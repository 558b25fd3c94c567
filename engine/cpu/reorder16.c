/* Activations between mxbench's NCHW f32 and the channel-blocked layout oneDNN's bf16
 * convolutions take (nChw16c: per sample, per block of 16 channels, each pixel's 16 channels
 * side by side), for engine/cpu/conv_dnnl.c. oneDNN's own reorders are much slower and had
 * taken a notable share of resnet18's bf16 step (docs/performance.md, "Choices in the code"):
 * here each 16x16 block of (channel, pixel) is loaded as 16 vectors, converted, and transposed
 * in registers.
 *
 * The bf16 rounding is vcvtneps2bf16's, as the bf16 GEMM's packing (engine/cpu/gemm.c): to nearest
 * even, with denormal inputs read as zero. The channel count must be a multiple of 16. */
#include "kernels.h"
#include "engine/backend/dtype.h"

#include <string.h>

#if MX_CPU_AVX512_KERNELS
#include "avx512.h"
#define TARGET MX_AVX512_TARGET
/* The 16 planes a block reads are 16 streams, more than the hardware's prefetchers follow:
 * each is asked for AHEAD values (8 lines) before it is read, which made the reorder to bf16
 * faster; the writes of the way back, prefetched so, were slower (docs/performance.md,
 * "Choices in the code"). */
#define AHEAD 128

/* r[0..7]: rows of 8 16-bit values in each 128-bit lane, transposed within each lane. */
TARGET static inline void transpose8x8_epi16(__m256i *r)
{
    __m256i a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            b[4 * i + 2 * j] = _mm256_unpacklo_epi32(a[4 * i + j], a[4 * i + j + 2]);
            b[4 * i + 2 * j + 1] = _mm256_unpackhi_epi32(a[4 * i + j], a[4 * i + j + 2]);
        }
    for (int j = 0; j < 4; j++) {
        r[2 * j] = _mm256_unpacklo_epi64(b[j], b[j + 4]);
        r[2 * j + 1] = _mm256_unpackhi_epi64(b[j], b[j + 4]);
    }
}

/* One block of 16 channels (planes src + k*hw) to dst[p*16 + k], pixels [p, p + cnt). */
TARGET static void block_to_bf16(uint16_t *dst, const float *src, int hw, int p, int cnt)
{
    const __mmask16 m = cnt >= 16 ? 0xffff : (__mmask16)((1u << cnt) - 1);
    __m256i r[16];
    for (int k = 0; k < 16; k++) {
        __builtin_prefetch(src + (size_t)k * hw + p + AHEAD);
        r[k] = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + (size_t)k * hw + p));
    }
    transpose8x8_epi16(r);
    transpose8x8_epi16(r + 8);
    /* r[j] holds pixels j (low lane) and 8 + j (high lane) of channels 0-7; r[8 + j] of 8-15 */
    for (int j = 0; j < 8; j++) {
        __m256i *lo = (__m256i *)(dst + (size_t)(p + j) * 16), *hi = (__m256i *)(dst + (size_t)(p + 8 + j) * 16);
        if (j < cnt) _mm256_storeu_si256(lo, _mm256_permute2x128_si256(r[j], r[8 + j], 0x20));
        if (8 + j < cnt) _mm256_storeu_si256(hi, _mm256_permute2x128_si256(r[j], r[8 + j], 0x31));
    }
}

/* One block: src[p*16 + k] (pixels [p, p + cnt)) to the planes dst + k*hw. */
TARGET static void block_to_nchw(float *dst, const float *src, int hw, int p, int cnt)
{
    const __mmask16 m = cnt >= 16 ? 0xffff : (__mmask16)((1u << cnt) - 1);
    __m512 r[16];
    for (int j = 0; j < 16; j++) r[j] = j < cnt ? _mm512_loadu_ps(src + (size_t)(p + j) * 16) : _mm512_setzero_ps();
    mx_transpose16x16_ps(r);
    for (int k = 0; k < 16; k++) _mm512_mask_storeu_ps(dst + (size_t)k * hw + p, m, r[k]);
}
#endif

/* Per (sample, block of 16 channels): the planes of a block are apart, its pixels together. */
void mx_cpu_nchw_to_c16_bf16(mx_backend *be, int n, int c, int hw, uint16_t *dst, const float *src)
{
    const int cb = c / 16, blocks = n * cb;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int i = 0; i < blocks; i++) {
        const float *s = src + (size_t)i * 16 * hw; /* sample i / cb, channels 16 (i % cb): contiguous */
        uint16_t *d = dst + (size_t)i * 16 * hw;
#if MX_CPU_AVX512_KERNELS
        for (int p = 0; p < hw; p += 16) block_to_bf16(d, s, hw, p, hw - p < 16 ? hw - p : 16);
#else
        for (int p = 0; p < hw; p++)
            for (int k = 0; k < 16; k++) d[(size_t)p * 16 + k] = mx_f32_to_bf16(s[(size_t)k * hw + p]);
#endif
    }
}

void mx_cpu_c16_to_nchw(mx_backend *be, int n, int c, int hw, float *dst, const float *src)
{
    const int cb = c / 16, blocks = n * cb;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)n * c * hw)) schedule(static)
    for (int i = 0; i < blocks; i++) {
        const float *s = src + (size_t)i * 16 * hw;
        float *d = dst + (size_t)i * 16 * hw;
#if MX_CPU_AVX512_KERNELS
        for (int p = 0; p < hw; p += 16) block_to_nchw(d, s, hw, p, hw - p < 16 ? hw - p : 16);
#else
        for (int p = 0; p < hw; p++)
            for (int k = 0; k < 16; k++) d[(size_t)k * hw + p] = s[(size_t)p * 16 + k];
#endif
    }
}
