/* Internal: the products of engine/cpu/attention.c's tiles in AVX-512 registers
 * (engine/cpu/attention_tiles.c), taken where mx_cpu_gemm_own() says the CPU has AVX-512 (and,
 * for the bf16 forms, where mx_cpu_bf16_native() says it has avx512_bf16).
 *
 * The f32 forms give the plain C loops' results bit for bit: each sum runs in the same order,
 * one fused multiply-add per term. They exist because GCC, vectorising those loops, folds a
 * load of the right operand into every multiply-add (four loads of one vector for four rows),
 * which left them load-bound at about half the core's multiply-add rate (docs/performance.md,
 * "Choices in the code"); here each vector is loaded once into a register. */
#ifndef MX_CPU_ATTENTION_TILES_H
#define MX_CPU_ATTENTION_TILES_H

#include <stddef.h>
#include <stdint.h>

enum {
    MX_ATT_BQ = 32, /* query rows a block: a multiple of 4 (the products take four rows at a time) */
    MX_ATT_BK = 64  /* keys a tile: four vectors; a multiple of BQ */
};

/* s[r][c] = sum_{d < hs} a[r * hs + d] * bt[d * ldb + c], r < BQ, c < BK, in d order. */
void mx_att_tile_product_f32(float *s, const float *a, const float *bt, size_t ldb, int hs);

/* For rows i..i+3 of o (ors apart) and columns [0, 64 * (hs / 64)): o[i][e] += sum over k in [ka, kb)
 * of p[i * prs + k * pks] * v[k * vs + e], in k order. Returns the columns done (a multiple of 64). */
int mx_att_accumulate4_f32(float *o, size_t ors, int hs, const float *p, size_t prs, size_t pks, int ka, int kb,
                           const float *v, size_t vs);

/* ---- bf16 forms, for AMP bf16's math (mx_backend.math MX_BF16) on avx512_bf16. A word holds two
 * bf16 values, the first in its low half, as vdpbf16ps multiplies them pairwise; every product
 * of two words is summed into f32 (attention_bf16.c). */

/* s[r][c] = scale * sum_{w < hw} a[r * hw + w] . bt[w * ldb + c], r < BQ, c < BK: the scale in f32,
 * after the sums (Q is rounded unscaled: 1/sqrt(hs) is not a power of two for every hs). */
void mx_att_tile_product_bf16(float *s, const uint32_t *a, const uint32_t *bt, size_t ldb, int hw, float scale);

/* For r < 4 and e < hs (a multiple of 32): o[r][e] += sum_{w in [wa, wb)} p[r][w * pks] . v[w * vs + e].
 * Rows a caller lacks may repeat another's p and point o at a scratch row. */
void mx_att_accumulate4_bf16(float *const o[4], const uint32_t *const p[4], size_t pks, int wa, int wb,
                             const uint32_t *v, size_t vs, int hs);

/* dst[w] = (x[2w], x[2w + 1]) * scale rounded to bf16 (nearest even), w < n / 2 (n a multiple of 32). */
void mx_att_words_of_row(uint32_t *dst, const float *x, int n, float scale);

/* dst[e] = (r0[e], r1[e]) * scale rounded to bf16, e < n (a multiple of 16); a NULL row is zeros. */
void mx_att_words_of_rows(uint32_t *dst, const float *r0, const float *r1, int n, float scale);

/* dst[w * ldd + j] = (rows[j][2w], rows[j][2w + 1]) rounded to bf16 for j < t (rows stride apart),
 * 0 for t <= j < nj (a multiple of 16), w < hs / 2 (hs a multiple of 32): keys or values turned
 * for the products along a head's dimensions. */
void mx_att_turn_rows_bf16(uint32_t *dst, size_t ldd, const float *rows, size_t stride, int t, int nj, int hs);

/* ---- shared by the f32 and bf16 forms (engine/cpu/attention.c) */

/* Keys padded to whole tiles: the length of a head's turned keys and values. */
static inline size_t padded_t(int t) { return (size_t)(t + MX_ATT_BK - 1) / MX_ATT_BK * MX_ATT_BK; }

/* n floats rounded up to whole cache lines: the parts of a thread's workspace. */
static inline size_t part(size_t n) { return (n + 15) / 16 * 16; }

/* sum a[d] b[d], one running sum in d order (backward's D = rowsum(dO O)): summed in 16 lanes
 * it ran faster (a fifth of backward's own time beside the tile products, under perf) but moved
 * gpt-mini's 20 AdamW steps from PyTorch's from about 5e-5 to 1.5e-4 (test_gpt_parity, twice
 * each; AdamW magnifies rounding differences in gradients near zero), for about 0.2% of
 * gpt-bench's step. */
static inline float mx_att_dot(const float *restrict a, const float *restrict b, int len)
{
    float s = 0;
    for (int d = 0; d < len; d++) s += a[d] * b[d];
    return s;
}

/* Forward's online softmax over one tile of scores s (BQ x BK), queries i0 + r for r < nq,
 * keys j0 .. j0 + nk: masks the keys after each query, turns s into e^(s - m) with each row's
 * running maximum m and sum l updated, and scales the rows of acc (hs wide) by e^(m_old - m). */
void mx_att_softmax_tile(float *s, int nq, int i0, int j0, int nk, float *m, float *l, float *acc, int hs);

/* Backward's probabilities and score gradients over one tile: p = e^(s - lse) (0 after each
 * query's last key), ds = p (dp - dd) in place of dp, rows r < nq. */
void mx_att_probs_tile(float *p, float *dp, int nq, int i0, int j0, int nk, const float *lse, const float *dd);

/* ---- the bf16 forms of a (sample, head) pair's forward and backward (engine/cpu/attention_bf16.c),
 * for heads a multiple of 32 wide: as attention.c's f32 forms, on ws of the floats they name */
size_t mx_att_bf16_fwd_floats(int t, int hs);
size_t mx_att_bf16_bwd_floats(int t, int hs);
void mx_att_forward_pair_bf16(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *o, float *lse,
                              const float *q, const float *k, const float *v);
void mx_att_backward_pair_bf16(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *lse, const float *q,
                               const float *k, const float *v);

#endif
