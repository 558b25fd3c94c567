/* Causal attention under AMP bf16's math (mx_backend.math MX_BF16) on CPUs with avx512_bf16:
 * engine/cpu/attention.c's tiling and online softmax, with the four kinds of product (scores
 * Q K^T and dP = dO V^T, and the sums P V, dS K, P^T dO, dS^T Q) on the CPU's bf16 dot products.
 * Their operands are rounded to bf16 (nearest even) and every product summed in f32, as a GPU's
 * autocast runs attention in bf16 with f32 accumulation; the softmax, the log-sum-exp, D =
 * rowsum(dO O) and the gradients' sums stay in f32.
 *
 * A dot product takes words of two bf16 values (attention_tiles.h), so each operand is laid out
 * with the two values of a word adjacent along the sum: Q, dO and the tiles of P and dS along
 * their rows (the head's dimensions, or the keys), K and V turned (pairs of dimensions, a column
 * per key) for the scores, and K, V, Q and dO interleaved two rows at a time (pairs of
 * positions) for the sums over positions. A sum whose range ends on an odd position takes the
 * next position's zero: a masked probability, or a padding row of zeros. */
#include "attention_tiles.h"
#include "kernels.h"

#include <string.h>

enum { BQ = MX_ATT_BQ, BK = MX_ATT_BK, BW = MX_ATT_BK / 2 /* words in a tile's row of probabilities */ };


size_t mx_att_bf16_fwd_floats(int t, int hs)
{
    const size_t ld = padded_t(t), hw = (size_t)hs / 2;
    return part(BQ * hw) + part((size_t)BQ * hs) + part(hw * ld) + part(ld / 2 * hs) + part(BQ * BK) +
           part(BQ * BW) + 2 * part(BQ);
}

size_t mx_att_bf16_bwd_floats(int t, int hs)
{
    const size_t ld = padded_t(t), hw = (size_t)hs / 2;
    return 2 * part(BQ * hw) + 2 * part(BQ / 2 * (size_t)hs) + part((size_t)BQ * hs) + 2 * part(hw * ld) +
           part(ld / 2 * hs) + 2 * part(BQ * BK) + 3 * part(BQ * BW) + part(BQ) + part(hs);
}

/* Rows 2m and 2m + 1 of x (stride apart, n of them) interleaved into words, for m < pairs; rows
 * from n on are zeros. */
static void pair_rows(uint32_t *dst, const float *x, size_t stride, int n, int pairs, int hs)
{
    for (int m = 0; m < pairs; m++) {
        const int r = 2 * m;
        mx_att_words_of_rows(dst + (size_t)m * hs, r < n ? x + r * stride : NULL,
                             r + 1 < n ? x + (r + 1) * stride : NULL, hs, 1.0f);
    }
}

/* BQ rows of x (stride apart) as words along the row; rows from n on are zeros. */
static void word_rows(uint32_t *dst, const float *x, size_t stride, int n, int hs)
{
    for (int r = 0; r < n; r++) mx_att_words_of_row(dst + (size_t)r * (hs / 2), x + r * stride, hs, 1.0f);
    memset(dst + (size_t)n * (hs / 2), 0, sizeof(uint32_t) * (size_t)(BQ - n) * (hs / 2));
}

/* o[r] += sum over the tile's keys of p[r] x, for the block's query rows r < nq (hs wide, BQ rows
 * of o and p): row r's keys run from j0 to i0 + r, its later ones masked (p 0). pw: the tile's
 * probabilities (or their gradients) as words along the keys, BW a row; xw: the tile's values (or
 * keys) interleaved two keys a word, hs words a pair. Rows from nq to the group's end are zeros
 * in p and unused in o. */
static void accumulate_queries(float *o, const uint32_t *pw, int nq, int i0, int j0, int nk, const uint32_t *xw,
                               int hs)
{
    for (int i = 0; i < nq; i += 4) {
        const int kb = i0 + i + 4 - j0 < nk ? i0 + i + 4 - j0 : nk; /* row i + 3's keys end */
        float *const or[4] = {o + (size_t)i * hs, o + (size_t)(i + 1) * hs, o + (size_t)(i + 2) * hs,
                              o + (size_t)(i + 3) * hs};
        const uint32_t *const pr[4] = {pw + (size_t)i * BW, pw + (size_t)(i + 1) * BW, pw + (size_t)(i + 2) * BW,
                                       pw + (size_t)(i + 3) * BW};
        mx_att_accumulate4_bf16(or, pr, 1, 0, (kb + 1) / 2, xw, hs, hs);
    }
}

void mx_att_forward_pair_bf16(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *o, float *lse,
                              const float *q, const float *k, const float *v)
{
    const size_t ld = padded_t(t);
    const int hw = hs / 2;
    uint32_t *q16 = (uint32_t *)ws;
    float *acc = ws + part(BQ * (size_t)hw);
    uint32_t *kt = (uint32_t *)(acc + part((size_t)BQ * hs)), *vp = kt + part(hw * ld);
    float *s = (float *)(vp + part(ld / 2 * hs));
    uint32_t *p16 = (uint32_t *)(s + part(BQ * BK));
    float *m = (float *)(p16 + part(BQ * BW)), *l = m + part(BQ);
    const float scale = 1.0f / sqrtf((float)hs);
    mx_att_turn_rows_bf16(kt, ld, k, qkv_stride, t, (int)ld, hs);
    pair_rows(vp, v, qkv_stride, t, (int)ld / 2, hs);
    for (int i0 = 0; i0 < t; i0 += BQ) {
        const int nq = t - i0 < BQ ? t - i0 : BQ, i1 = i0 + nq;
        word_rows(q16, q + i0 * qkv_stride, qkv_stride, nq, hs);
        memset(acc, 0, sizeof(float) * (size_t)BQ * hs);
        memset(p16, 0, sizeof(uint32_t) * BQ * BW); /* rows from nq on stay 0 */
        for (int r = 0; r < BQ; r++) m[r] = -INFINITY, l[r] = 0;
        for (int j0 = 0; j0 < i1; j0 += BK) {
            const int nk = i1 - j0 < BK ? i1 - j0 : BK;
            mx_att_tile_product_bf16(s, q16, kt + j0, ld, hw, scale);
            mx_att_softmax_tile(s, nq, i0, j0, nk, m, l, acc, hs);
            for (int r = 0; r < nq; r++) mx_att_words_of_row(p16 + (size_t)r * BW, s + (size_t)r * BK, BK, 1.0f);
            accumulate_queries(acc, p16, nq, i0, j0, nk, vp + (size_t)j0 / 2 * hs, hs); /* P V */
        }
        for (int r = 0; r < nq; r++) {
            const float inv = 1.0f / l[r];
            for (int d = 0; d < hs; d++) o[(i0 + r) * out_stride + d] = acc[(size_t)r * hs + d] * inv;
            if (lse) lse[i0 + r] = m[r] + logf(l[r]);
        }
    }
}

/* dst[i] += sum over the block's queries of p^T x for the tile's keys i < nk (rows ostride
 * apart): key i's queries run from j0 + i - i0 (the earlier ones are masked) to nq. pw: the
 * tile's probabilities (or their gradients) interleaved two queries a word, BK words a pair;
 * xw: the block's rows of dO (or Q) interleaved likewise, hs words a pair. */
static void accumulate_keys(float *dst, size_t ostride, float *spare, int nk, int nq, int i0, int j0,
                            const uint32_t *pw, const uint32_t *xw, int hs)
{
    for (int i = 0; i < nk; i += 4) {
        const int ka = j0 + i - i0 > 0 ? j0 + i - i0 : 0;
        float *or[4];
        const uint32_t *pr[4];
        for (int r = 0; r < 4; r++) {
            or[r] = i + r < nk ? dst + (size_t)(i + r) * ostride : spare;
            pr[r] = pw + (i + r < nk ? i + r : i);
        }
        mx_att_accumulate4_bf16(or, pr, BK, ka / 2, (nq + 1) / 2, xw, hs, hs);
    }
}

void mx_att_backward_pair_bf16(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *lse, const float *q,
                               const float *k, const float *v)
{
    const size_t ld = padded_t(t);
    const int hw = hs / 2;
    uint32_t *q16 = (uint32_t *)ws, *do16 = q16 + part(BQ * (size_t)hw), *qp = do16 + part(BQ * (size_t)hw);
    uint32_t *dop = qp + part(BQ / 2 * (size_t)hs);
    float *dqa = (float *)(dop + part(BQ / 2 * (size_t)hs));
    uint32_t *kt = (uint32_t *)(dqa + part((size_t)BQ * hs)), *vt = kt + part(hw * ld), *kp = vt + part(hw * ld);
    float *pt = (float *)(kp + part(ld / 2 * hs)), *ds = pt + part(BQ * BK);
    uint32_t *ptp = (uint32_t *)(ds + part(BQ * BK)), *dsp = ptp + part(BQ * BW), *ds16 = dsp + part(BQ * BW);
    float *dd = (float *)(ds16 + part(BQ * BW)), *spare = dd + part(BQ);
    const float scale = 1.0f / sqrtf((float)hs);
    mx_att_turn_rows_bf16(kt, ld, k, qkv_stride, t, (int)ld, hs);
    mx_att_turn_rows_bf16(vt, ld, v, qkv_stride, t, (int)ld, hs);
    pair_rows(kp, k, qkv_stride, t, (int)ld / 2, hs);
    for (int i = 0; i < t; i++) {
        memset(dk + i * qkv_stride, 0, sizeof(float) * hs);
        memset(dv + i * qkv_stride, 0, sizeof(float) * hs);
    }
    for (int i0 = 0; i0 < t; i0 += BQ) {
        const int nq = t - i0 < BQ ? t - i0 : BQ, i1 = i0 + nq;
        word_rows(q16, q + i0 * qkv_stride, qkv_stride, nq, hs);
        word_rows(do16, dout + i0 * out_stride, out_stride, nq, hs);
        pair_rows(qp, q + i0 * qkv_stride, qkv_stride, nq, BQ / 2, hs);
        pair_rows(dop, dout + i0 * out_stride, out_stride, nq, BQ / 2, hs);
        memset(dqa, 0, sizeof(float) * (size_t)BQ * hs);
        for (int r = 0; r < nq; r++) dd[r] = mx_att_dot(dout + (i0 + r) * out_stride, o + (i0 + r) * out_stride, hs);
        for (int j0 = 0; j0 < i1; j0 += BK) {
            const int nk = i1 - j0 < BK ? i1 - j0 : BK;
            /* rows from nq on: q16 and do16 are zeros there, so their scores and dP are 0 */
            mx_att_tile_product_bf16(pt, q16, kt + j0, ld, hw, scale);
            mx_att_tile_product_bf16(ds, do16, vt + j0, ld, hw, 1.0f);
            mx_att_probs_tile(pt, ds, nq, i0, j0, nk, lse + i0, dd);
            for (int r = 0; r < BQ; r++) mx_att_words_of_row(ds16 + (size_t)r * BW, ds + (size_t)r * BK, BK, 1.0f);
            for (int mm = 0; mm < BQ / 2; mm++) {
                const size_t a = (size_t)2 * mm * BK;
                mx_att_words_of_rows(ptp + (size_t)mm * BK, pt + a, pt + a + BK, BK, 1.0f);
                mx_att_words_of_rows(dsp + (size_t)mm * BK, ds + a, ds + a + BK, BK, scale); /* dK's 1/sqrt(hs) */
            }
            accumulate_queries(dqa, ds16, nq, i0, j0, nk, kp + (size_t)j0 / 2 * hs, hs); /* dS K */
            accumulate_keys(dv + j0 * qkv_stride, qkv_stride, spare, nk, nq, i0, j0, ptp, dop, hs); /* P^T dO */
            accumulate_keys(dk + j0 * qkv_stride, qkv_stride, spare, nk, nq, i0, j0, dsp, qp, hs); /* dS^T Q */
        }
        for (int r = 0; r < nq; r++)
            for (int d = 0; d < hs; d++) dq[(i0 + r) * qkv_stride + d] = dqa[(size_t)r * hs + d] * scale;
    }
}
