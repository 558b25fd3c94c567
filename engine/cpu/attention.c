/* Causal multi-head self-attention on the CPU (engine/backend/backend.h's attention_forward and
 * attention_backward), tiled as flash attention is: a (sample, head) pair is taken a block of
 * BQ query rows at a time against tiles of BK keys, only the tiles at or before the block's last
 * query, with an online softmax. The t x t probabilities of a head are never stored, for one
 * sample or the batch: what backward needs of them is each row's log-sum-exp (n*heads*t
 * floats), from which it recomputes every tile's probabilities.
 *
 * A thread takes whole (sample, head) pairs: the pair's columns of dqkv are then written by
 * one thread, so the key and value gradients accumulate over the query blocks without locks
 * or per-thread copies, in one order whatever the thread count (results do not depend on it).
 * The pair's keys (and, for backward, values) are turned into hs rows of t once, in the
 * thread's workspace (hs x t floats each), rather than a tile per block of queries.
 *
 * The inner loops are plain C written for GCC's vectoriser: fixed-width tiles held in local
 * arrays (the score tile, four query rows at a time, stays in registers while it sums over the
 * head's dimensions), products fused (fmaf) where the target has FMA, and exp as a polynomial
 * (libm's expf does not vectorise). On AVX-512 CPUs the tile products run instead in
 * attention_tiles.c's register kernels (the same sums in the same order), and under AMP bf16 on
 * CPUs with bf16 units a pair's whole forward and backward in attention_bf16.c (form_of). */
#include "attention_tiles.h"
#include "kernels.h"

#include <omp.h>
#include <stdint.h>
#include <string.h>

enum {
    BQ = MX_ATT_BQ, /* query rows a block: a multiple of 4 (the score tile takes four at a time) */
    BK = MX_ATT_BK, /* keys a tile: a multiple of BQ, so that every row of a block has a key in every tile */
    LANES = 16
};

/* e^x in f32 for the softmax's shifted scores (x <= 0 but for rounding): Cephes' expf
 * polynomial on r = x - n ln2, n = round(x / ln2) taken from the bits of x / ln2 + 1.5*2^23,
 * times 2^n built in the exponent field. Relative error about 2e-7; 0 below -87 (where f32
 * turns denormal) and at -inf; NaN stays NaN. Arithmetic and selects only, so that the loops
 * calling it vectorise. */
static inline float exp_shifted(float x)
{
    const float xc = x >= -87.0f ? (x <= 88.0f ? x : 88.0f) : -87.0f; /* NaN: -87, replaced below */
    const float shifter = 12582912.0f;                                 /* 1.5 * 2^23 */
    const float t = xc * 1.44269504f + shifter;
    const float n = t - shifter;
    const float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = MX_MADD(p, r, 1.3981999507e-3f);
    p = MX_MADD(p, r, 8.3334519073e-3f);
    p = MX_MADD(p, r, 4.1665795894e-2f);
    p = MX_MADD(p, r, 1.6666665459e-1f);
    p = MX_MADD(p, r, 5.0000001201e-1f);
    const float y = p * r * r + r + 1.0f;
    int32_t tb, nb;
    memcpy(&tb, &t, sizeof tb);
    nb = (tb - 0x4B400000 + 127) * (1 << 23); /* the low bits of t hold n */
    float s;
    memcpy(&s, &nb, sizeof s);
    return x != x ? x : x < -87.0f ? 0.0f : y * s;
}

/* s[r][c] = sum_d a[r][d] * bt[d][c] for a BQ x BK tile: a is BQ rows of hs, bt hs rows ldb apart.
 * Four rows a pass: their 4 x 64 sums fill 16 vector registers while d runs (the c loop is
 * unrolled whole so that GCC keeps them there rather than unrolling and jamming the d loop
 * around memory). Forward and backward call it on the same operands and so get the same
 * scores, bit for bit. */
static void tile_product(float *restrict s, const float *restrict a, const float *restrict bt, size_t ldb, int hs)
{
    if (mx_cpu_gemm_own()) {
        mx_att_tile_product_f32(s, a, bt, ldb, hs);
        return;
    }
    for (int r = 0; r < BQ; r += 4) {
        float acc0[BK] = {0}, acc1[BK] = {0}, acc2[BK] = {0}, acc3[BK] = {0};
        const float *a0 = a + (size_t)r * hs, *a1 = a0 + hs, *a2 = a1 + hs, *a3 = a2 + hs;
        for (int d = 0; d < hs; d++) {
            const float x0 = a0[d], x1 = a1[d], x2 = a2[d], x3 = a3[d];
            const float *b = bt + d * ldb;
#pragma GCC unroll 64
            for (int c = 0; c < BK; c++) {
                acc0[c] = MX_MADD(x0, b[c], acc0[c]);
                acc1[c] = MX_MADD(x1, b[c], acc1[c]);
                acc2[c] = MX_MADD(x2, b[c], acc2[c]);
                acc3[c] = MX_MADD(x3, b[c], acc3[c]);
            }
        }
        memcpy(s + (size_t)r * BK, acc0, sizeof acc0);
        memcpy(s + (size_t)(r + 1) * BK, acc1, sizeof acc1);
        memcpy(s + (size_t)(r + 2) * BK, acc2, sizeof acc2);
        memcpy(s + (size_t)(r + 3) * BK, acc3, sizeof acc3);
    }
}

/* o[0..len) += sum_{k < cnt} p[k * pstride] * v[k * vstride + 0..len): a row of a tile
 * product with the row held in registers (64 or 16 columns at a time) over the sum. */
static void row_accumulate(float *restrict o, int len, const float *restrict p, size_t pstride, int cnt,
                           const float *restrict v, size_t vstride)
{
    int d = 0;
    for (; d + 64 <= len; d += 64) {
        float acc[64];
        memcpy(acc, o + d, sizeof acc);
        for (int k = 0; k < cnt; k++) {
            const float pk = p[k * pstride];
            const float *vr = v + k * vstride + d;
            for (int e = 0; e < 64; e++) acc[e] = MX_MADD(pk, vr[e], acc[e]);
        }
        memcpy(o + d, acc, sizeof acc);
    }
    for (; d + 16 <= len; d += 16) {
        float acc[16];
        memcpy(acc, o + d, sizeof acc);
        for (int k = 0; k < cnt; k++) {
            const float pk = p[k * pstride];
            const float *vr = v + k * vstride + d;
            for (int e = 0; e < 16; e++) acc[e] = MX_MADD(pk, vr[e], acc[e]);
        }
        memcpy(o + d, acc, sizeof acc);
    }
    for (; d < len; d++) {
        float acc = o[d];
        for (int k = 0; k < cnt; k++) acc = MX_MADD(p[k * pstride], v[k * vstride + d], acc);
        o[d] = acc;
    }
}

/* o[i][0..hs) += sum_k p[i * prs + k * pks] * v[k * vs + 0..hs) for rows i < nr of o (ors apart),
 * k over row i's keys [max(0, i + lo), min(kn, i + hi)): the product of a tile of probabilities
 * (or of their gradients) with rows of values, keys, queries or output gradients. Four rows a
 * pass share each load of v, their 4 x 64 sums in registers over the sum; a row's products from
 * outside its own range (up to three, where the rows' ranges differ) have p = 0 there (masked
 * scores' exponentials, or gradients of them), so each sum is row_accumulate's over its own
 * range, in the same order. row_accumulate a row at a time had loaded a vector of v per
 * multiply-add: the most of attention's time (docs/performance.md, "Choices in the code"). */
static void tile_accumulate(float *restrict o, size_t ors, int nr, int hs, const float *restrict p, size_t prs,
                            size_t pks, int kn, int lo, int hi, const float *restrict v, size_t vs)
{
    const int own = mx_cpu_gemm_own();
    int i = 0;
    for (; i + 4 <= nr; i += 4) {
        const int ka = i + lo > 0 ? i + lo : 0, kb = i + 3 + hi < kn ? i + 3 + hi : kn;
        float *o0 = o + i * ors, *o1 = o0 + ors, *o2 = o1 + ors, *o3 = o2 + ors;
        const float *p0 = p + i * prs, *p1 = p0 + prs, *p2 = p1 + prs, *p3 = p2 + prs;
        int d = own ? mx_att_accumulate4_f32(o0, ors, hs, p0, prs, pks, ka, kb, v, vs) : 0;
        for (; d + 64 <= hs; d += 64) {
            float a0[64], a1[64], a2[64], a3[64];
            memcpy(a0, o0 + d, sizeof a0), memcpy(a1, o1 + d, sizeof a1);
            memcpy(a2, o2 + d, sizeof a2), memcpy(a3, o3 + d, sizeof a3);
            for (int k = ka; k < kb; k++) {
                const float x0 = p0[k * pks], x1 = p1[k * pks], x2 = p2[k * pks], x3 = p3[k * pks];
                const float *vr = v + k * vs + d;
#pragma GCC unroll 64
                for (int e = 0; e < 64; e++) {
                    a0[e] = MX_MADD(x0, vr[e], a0[e]);
                    a1[e] = MX_MADD(x1, vr[e], a1[e]);
                    a2[e] = MX_MADD(x2, vr[e], a2[e]);
                    a3[e] = MX_MADD(x3, vr[e], a3[e]);
                }
            }
            memcpy(o0 + d, a0, sizeof a0), memcpy(o1 + d, a1, sizeof a1);
            memcpy(o2 + d, a2, sizeof a2), memcpy(o3 + d, a3, sizeof a3);
        }
        for (; d + 16 <= hs; d += 16) {
            float a0[16], a1[16], a2[16], a3[16];
            memcpy(a0, o0 + d, sizeof a0), memcpy(a1, o1 + d, sizeof a1);
            memcpy(a2, o2 + d, sizeof a2), memcpy(a3, o3 + d, sizeof a3);
            for (int k = ka; k < kb; k++) {
                const float x0 = p0[k * pks], x1 = p1[k * pks], x2 = p2[k * pks], x3 = p3[k * pks];
                const float *vr = v + k * vs + d;
                for (int e = 0; e < 16; e++) {
                    a0[e] = MX_MADD(x0, vr[e], a0[e]);
                    a1[e] = MX_MADD(x1, vr[e], a1[e]);
                    a2[e] = MX_MADD(x2, vr[e], a2[e]);
                    a3[e] = MX_MADD(x3, vr[e], a3[e]);
                }
            }
            memcpy(o0 + d, a0, sizeof a0), memcpy(o1 + d, a1, sizeof a1);
            memcpy(o2 + d, a2, sizeof a2), memcpy(o3 + d, a3, sizeof a3);
        }
        for (int r = 0; r < 4 && d < hs; r++)
            row_accumulate(o + (i + r) * ors + d, hs - d, p + (i + r) * prs + ka * pks, pks, kb - ka,
                           v + ka * vs + d, vs);
    }
    for (; i < nr; i++) {
        const int ka = i + lo > 0 ? i + lo : 0, kb = i + hi < kn ? i + hi : kn;
        if (ka < kb) row_accumulate(o + i * ors, hs, p + i * prs + ka * pks, pks, kb - ka, v + ka * vs, vs);
    }
}

/* bt[d][j] = rows[j][d] for j < t, 0 for t <= j < padded_t(t): a head's keys (or values)
 * turned once per (sample, head), so that tile_product runs along keys; the zeros fill the
 * last tile. */
static void load_transposed(float *restrict bt, const float *restrict rows, size_t stride, int t, int hs)
{
    const size_t ld = padded_t(t);
#if MX_CPU_AVX512_KERNELS
    /* 16 x 16 blocks turned in registers (mx_cpu_transpose16, on CPUs the own GEMMs run on):
     * the loop below stores a value at a time, each 4 * ld bytes from the last, which had been
     * half of backward's own time beside its tile products (docs/performance.md, "Choices in the
     * code") */
    if (mx_cpu_gemm_own()) {
        float blk[16][16] __attribute__((aligned(64)));
        for (size_t j0 = 0; j0 < ld; j0 += 16)
            for (int d0 = 0; d0 < hs; d0 += 16) {
                const float *r[16];
                for (int i = 0; i < 16; i++) r[i] = (int)j0 + i < t ? rows + (j0 + i) * stride + d0 : NULL;
                const int nc = hs - d0 < 16 ? hs - d0 : 16;
                mx_cpu_transpose16(r, nc, NULL, blk);
                for (int e = 0; e < nc; e++) memcpy(bt + (size_t)(d0 + e) * ld + j0, blk[e], sizeof blk[e]);
            }
        return;
    }
#endif
    for (int d = 0; d < hs; d++) memset(bt + d * ld + t, 0, sizeof(float) * (ld - t));
    for (int j = 0; j < t; j++)
        for (int d = 0; d < hs; d++) bt[d * ld + j] = rows[j * stride + d];
}

/* BQ rows of hs from rows (stride apart), times scale; rows from nq on are zeros. */
static void load_rows(float *restrict dst, const float *restrict rows, size_t stride, int nq, int hs, float scale)
{
    for (int r = 0; r < nq; r++)
        for (int d = 0; d < hs; d++) dst[(size_t)r * hs + d] = rows[r * stride + d] * scale;
    memset(dst + (size_t)nq * hs, 0, sizeof(float) * (size_t)(BQ - nq) * hs);
}

/* Sums and maxima over BK values in LANES lanes combined in a fixed order (vectorised; a
 * single running sum would be a chain of dependent adds). */
static float tile_sum(const float *restrict x)
{
    float lane[LANES] = {0};
    for (int c = 0; c < BK; c += LANES)
        for (int l = 0; l < LANES; l++) lane[l] += x[c + l];
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) lane[l] += lane[l + w];
    return lane[0];
}

static float tile_max(const float *restrict x)
{
    float lane[LANES];
    memcpy(lane, x, sizeof lane);
    for (int c = LANES; c < BK; c += LANES)
        for (int l = 0; l < LANES; l++) lane[l] = x[c + l] > lane[l] ? x[c + l] : lane[l];
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) lane[l] = lane[l + w] > lane[l] ? lane[l + w] : lane[l];
    return lane[0];
}

void mx_att_softmax_tile(float *s, int nq, int i0, int j0, int nk, float *m, float *l, float *acc, int hs)
{
    for (int r = 0; r < nq; r++) {
        const int lim = i0 + r - j0 + 1 < nk ? i0 + r - j0 + 1 : nk; /* keys j0 .. i0 + r */
        float *sr = s + (size_t)r * BK;
        for (int c = lim; c < BK; c++) sr[c] = -INFINITY;
        const float mt = tile_max(sr), mnew = mt > m[r] ? mt : m[r];
        for (int c = 0; c < BK; c++) sr[c] = exp_shifted(sr[c] - mnew);
        const float alpha = exp_shifted(m[r] - mnew); /* 0 on the first tile (m = -inf) */
        l[r] = l[r] * alpha + tile_sum(sr);
        m[r] = mnew;
        float *ar = acc + (size_t)r * hs;
        if (alpha != 1.0f)
            for (int d = 0; d < hs; d++) ar[d] *= alpha;
    }
}

void mx_att_probs_tile(float *p, float *dp, int nq, int i0, int j0, int nk, const float *lse, const float *dd)
{
    for (int r = 0; r < nq; r++) {
        const int lim = i0 + r - j0 + 1 < nk ? i0 + r - j0 + 1 : nk;
        float *pr = p + (size_t)r * BK, *dr = dp + (size_t)r * BK;
        for (int c = lim; c < BK; c++) pr[c] = -INFINITY;
        for (int c = 0; c < BK; c++) {
            const float pc = exp_shifted(pr[c] - lse[r]);
            pr[c] = pc;
            dr[c] = pc * (dr[c] - dd[r]);
        }
    }
}

/* Floats of one thread's workspace, each part a whole number of cache lines. */
static size_t fwd_floats(int t, int hs)
{
    return 2 * part((size_t)BQ * hs) + part(hs * padded_t(t)) + part(BQ * BK) + 2 * part(BQ);
}
static size_t bwd_floats(int t, int hs)
{
    return 3 * part((size_t)BQ * hs) + 2 * part(hs * padded_t(t)) + 2 * part(BQ * BK) + part(BQ);
}

/* Threads for n*heads pairs of t x t x hs work: one below the size where forking costs more. */
static int pair_team(const mx_backend *be, int pairs, int t, int hs)
{
    const int T = mx_cpu_team(be, (size_t)pairs * t * t * hs / 2);
    return T < pairs ? T : pairs;
}

/* One (sample, head) pair's forward: q, k, v the head's first columns in the sample's first row
 * of qkv (rows 3c apart), o its first column of out (rows c apart). */
static void forward_pair(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *o, float *lse,
                         const float *q, const float *k, const float *v)
{
    float *qs = ws, *acc = qs + part((size_t)BQ * hs), *kt = acc + part((size_t)BQ * hs);
    float *s = kt + part(hs * padded_t(t)), *m = s + part(BQ * BK), *l = m + part(BQ);
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t ld = padded_t(t);
    load_transposed(kt, k, qkv_stride, t, hs);
    for (int i0 = 0; i0 < t; i0 += BQ) {
        const int nq = t - i0 < BQ ? t - i0 : BQ, i1 = i0 + nq;
        load_rows(qs, q + i0 * qkv_stride, qkv_stride, nq, hs, scale);
        memset(acc, 0, sizeof(float) * (size_t)BQ * hs);
        for (int r = 0; r < BQ; r++) m[r] = -INFINITY, l[r] = 0;
        for (int j0 = 0; j0 < i1; j0 += BK) {
            const int nk = i1 - j0 < BK ? i1 - j0 : BK;
            tile_product(s, qs, kt + j0, ld, hs);
            mx_att_softmax_tile(s, nq, i0, j0, nk, m, l, acc, hs);
            /* row r's keys j0 .. i0 + r */
            tile_accumulate(acc, hs, nq, hs, s, BK, 1, nk, -BK, i0 - j0 + 1, v + j0 * qkv_stride, qkv_stride);
        }
        for (int r = 0; r < nq; r++) {
            const float inv = 1.0f / l[r];
            for (int d = 0; d < hs; d++) o[(i0 + r) * out_stride + d] = acc[(size_t)r * hs + d] * inv;
            if (lse) lse[i0 + r] = m[r] + logf(l[r]);
        }
    }
}

/* The forms of a pair's work: f32, or AMP bf16's on the CPU's bf16 dot products
 * (attention_bf16.c) where the device's math is bf16, the CPU has them and heads are a multiple
 * of 32 wide (the products' vectors hold 16 pairs). */
typedef void (*forward_fn)(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *o, float *lse,
                           const float *q, const float *k, const float *v);
typedef void (*backward_fn)(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *lse, const float *q,
                            const float *k, const float *v);
typedef struct {
    size_t (*fwd_floats)(int t, int hs);
    forward_fn forward;
    size_t (*bwd_floats)(int t, int hs);
    backward_fn backward;
} pair_form;

static void backward_pair(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *dq, float *dk,
                          float *dv, const float *dout, const float *o, const float *lse, const float *q,
                          const float *k, const float *v);
static const pair_form form_f32 = {fwd_floats, forward_pair, bwd_floats, backward_pair},
                       form_bf16 = {mx_att_bf16_fwd_floats, mx_att_forward_pair_bf16, mx_att_bf16_bwd_floats,
                                    mx_att_backward_pair_bf16};

static const pair_form *form_of(const mx_backend *be, int hs)
{
    return be->math == MX_BF16 && hs % 32 == 0 && mx_cpu_bf16_native() ? &form_bf16 : &form_f32;
}

void mx_cpu_attention_forward(mx_backend *be, int n, int t, int heads, int hs, float *out, float *lse,
                              const float *qkv)
{
    const pair_form *f = form_of(be, hs);
    const int pairs = n * heads, T = pair_team(be, pairs, t, hs);
    const size_t c = (size_t)heads * hs, per = f->fwd_floats(t, hs);
    float *ws = mx_backend_scratch(be, sizeof(float) * per * T);
    if (!ws) return;
#pragma omp parallel for num_threads(T) schedule(static)
    for (int p = 0; p < pairs; p++) {
        const int b = p / heads, h = p % heads;
        const float *q = qkv + (size_t)b * t * 3 * c + (size_t)h * hs;
        f->forward(ws + per * omp_get_thread_num(), t, hs, 3 * c, c, out + (size_t)b * t * c + (size_t)h * hs,
                   lse ? lse + (size_t)p * t : NULL, q, q + c, q + 2 * c);
    }
}

/* One pair's backward (flash attention's): per block of queries and tile of keys, P from the
 * recomputed scores and the saved log-sum-exp, dP = dO V^T, dS = P (dP - D) with D = rowsum(dO
 * O); dV += P^T dO, dK += dS^T Q / sqrt(hs), dQ += dS K / sqrt(hs). dq, dk, dv: the head's
 * first columns in the sample's first row of dqkv. */
static void backward_pair(float *ws, int t, int hs, size_t qkv_stride, size_t out_stride, float *dq, float *dk,
                          float *dv, const float *dout, const float *o, const float *lse, const float *q,
                          const float *k, const float *v)
{
    float *qs = ws, *dob = qs + part((size_t)BQ * hs), *dqa = dob + part((size_t)BQ * hs);
    float *kt = dqa + part((size_t)BQ * hs), *vt = kt + part(hs * padded_t(t)), *pt = vt + part(hs * padded_t(t));
    float *ds = pt + part(BQ * BK), *dd = ds + part(BQ * BK);
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t ld = padded_t(t);
    load_transposed(kt, k, qkv_stride, t, hs);
    load_transposed(vt, v, qkv_stride, t, hs);
    for (int i = 0; i < t; i++) {
        memset(dk + i * qkv_stride, 0, sizeof(float) * hs);
        memset(dv + i * qkv_stride, 0, sizeof(float) * hs);
    }
    for (int i0 = 0; i0 < t; i0 += BQ) {
        const int nq = t - i0 < BQ ? t - i0 : BQ, i1 = i0 + nq;
        load_rows(qs, q + i0 * qkv_stride, qkv_stride, nq, hs, scale);
        load_rows(dob, dout + i0 * out_stride, out_stride, nq, hs, 1.0f);
        memset(dqa, 0, sizeof(float) * (size_t)BQ * hs);
        for (int r = 0; r < nq; r++) dd[r] = mx_att_dot(dob + (size_t)r * hs, o + (i0 + r) * out_stride, hs);
        for (int j0 = 0; j0 < i1; j0 += BK) {
            const int nk = i1 - j0 < BK ? i1 - j0 : BK;
            tile_product(pt, qs, kt + j0, ld, hs);
            tile_product(ds, dob, vt + j0, ld, hs);
            mx_att_probs_tile(pt, ds, nq, i0, j0, nk, lse + i0, dd);
            /* query row r's keys j0 .. i0 + r; key j0 + c's rows from j0 + c - i0 */
            tile_accumulate(dqa, hs, nq, hs, ds, BK, 1, nk, -BK, i0 - j0 + 1, k + j0 * qkv_stride, qkv_stride);
            tile_accumulate(dv + j0 * qkv_stride, qkv_stride, nk, hs, pt, 1, BK, nq, j0 - i0, BQ, dob, hs);
            tile_accumulate(dk + j0 * qkv_stride, qkv_stride, nk, hs, ds, 1, BK, nq, j0 - i0, BQ, qs, hs);
        }
        for (int r = 0; r < nq; r++)
            for (int d = 0; d < hs; d++) dq[(i0 + r) * qkv_stride + d] = dqa[(size_t)r * hs + d] * scale;
    }
}

void mx_cpu_attention_backward(mx_backend *be, int n, int t, int heads, int hs, float *dqkv, const float *dout,
                               const float *qkv, const float *out, const float *lse)
{
    const pair_form *f = form_of(be, hs);
    const int pairs = n * heads, T = pair_team(be, pairs, t, hs);
    const size_t c = (size_t)heads * hs, per = f->bwd_floats(t, hs);
    float *ws = mx_backend_scratch(be, sizeof(float) * per * T);
    if (!ws) return;
#pragma omp parallel for num_threads(T) schedule(static)
    for (int p = 0; p < pairs; p++) {
        const int b = p / heads, h = p % heads;
        const size_t in_at = (size_t)b * t * 3 * c + (size_t)h * hs, out_at = (size_t)b * t * c + (size_t)h * hs;
        const float *q = qkv + in_at;
        float *dq = dqkv + in_at;
        f->backward(ws + per * omp_get_thread_num(), t, hs, 3 * c, c, dq, dq + c, dq + 2 * c, dout + out_at,
                    out + out_at, lse + (size_t)p * t, q, q + c, q + 2 * c);
    }
}
