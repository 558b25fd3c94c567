/* AVX-512 helpers shared by the CPU kernels that change layouts (engine/cpu/reorder16.c, engine/cpu/bn16.c).
 * Include only where MX_CPU_AVX512_KERNELS (engine/cpu/kernels.h) is set; each function carries its
 * own target attribute, and callers take them only where cpuid says the CPU has them. */
#ifndef MX_CPU_AVX512_H
#define MX_CPU_AVX512_H

#include <immintrin.h>

#define MX_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* 16 rows of 16 floats, transposed. */
MX_AVX512_TARGET static inline void mx_transpose16x16_ps(__m512 *r)
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            r[4 * i + 2 * j] = (__m512)_mm512_unpacklo_pd((__m512d)t[4 * i + j], (__m512d)t[4 * i + j + 2]);
            r[4 * i + 2 * j + 1] = (__m512)_mm512_unpackhi_pd((__m512d)t[4 * i + j], (__m512d)t[4 * i + j + 2]);
        }
    /* r[4g + q], lane L: column 4L + q of rows 4g .. 4g + 3; gather the lanes of a column */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0x88);
            t[8 * i + j + 4] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
}

#endif
