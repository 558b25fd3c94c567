/* The transforms of Winograd F(4x4, 3x3) (see engine/cpu/winograd.h and engine/cpu/conv_winograd.c), on
 * AVX-512 with function target attributes whatever the build's -march; the drivers take them
 * only where cpuid says the CPU has it (mx_cpu_conv_winograd_applies).
 *
 * Matrices (Lavin and Gray; points 0, 1, -1, 2, -2 and infinity):
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1] */
#include "winograd.h"
#include "kernels.h"

#include <stdint.h>
#include <string.h>

#if MX_CPU_AVX512_KERNELS
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

typedef __m512 v16;
#define SPLAT(x) _mm512_set1_ps(x)

/* ---- the 1-D transforms and their adjoints (the 2-D ones apply them along y, then x) */

/* t = B^T d */
TARGET static inline void bt(const v16 d[6], v16 t[6])
{
    const v16 c2 = SPLAT(2), c4 = SPLAT(4), c5 = SPLAT(5);
    const v16 s34 = d[3] + d[4], d43 = d[4] - d[3], e = d[4] - d[2], f = d[3] - d[1];
    t[0] = _mm512_fmadd_ps(c4, d[0], _mm512_fnmadd_ps(c5, d[2], d[4]));
    t[1] = _mm512_fnmadd_ps(c4, d[1] + d[2], s34);
    t[2] = _mm512_fmadd_ps(c4, d[1] - d[2], d43);
    t[3] = _mm512_fmadd_ps(c2, f, e);
    t[4] = _mm512_fnmadd_ps(c2, f, e);
    t[5] = _mm512_fmadd_ps(c4, d[1], _mm512_fnmadd_ps(c5, d[3], d[5]));
}

/* d = B t: the adjoint of bt */
TARGET static inline void bt_adj(const v16 t[6], v16 d[6])
{
    const v16 c2 = SPLAT(2), c4 = SPLAT(4), c5 = SPLAT(5);
    d[0] = c4 * t[0];
    d[1] = _mm512_fmadd_ps(c4, t[2] - t[1] + t[5], c2 * (t[4] - t[3]));
    d[2] = -(_mm512_fmadd_ps(c5, t[0], _mm512_fmadd_ps(c4, t[1] + t[2], t[3] + t[4])));
    d[3] = _mm512_fnmadd_ps(c5, t[5], _mm512_fmadd_ps(c2, t[3] - t[4], t[1] - t[2]));
    d[4] = t[0] + t[1] + t[2] + t[3] + t[4];
    d[5] = t[5];
}

/* y = A^T m (6 -> 4) */
TARGET static inline void at(const v16 m[6], v16 y[4])
{
    const v16 s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    y[0] = m[0] + s12 + s34;
    y[1] = _mm512_fmadd_ps(SPLAT(2), d34, d12);
    y[2] = _mm512_fmadd_ps(SPLAT(4), s34, s12);
    y[3] = _mm512_fmadd_ps(SPLAT(8), d34, d12) + m[5];
}

/* m = A y (4 -> 6): the adjoint of at */
TARGET static inline void at_adj(const v16 y[4], v16 m[6])
{
    const v16 e = y[0] + y[2], o = y[1] + y[3];
    const v16 e2 = _mm512_fmadd_ps(SPLAT(4), y[2], y[0]), o2 = _mm512_fmadd_ps(SPLAT(8), y[3], SPLAT(2) * y[1]);
    m[0] = y[0], m[1] = e + o, m[2] = e - o, m[3] = e2 + o2, m[4] = e2 - o2, m[5] = y[3];
}

/* u = G g (3 -> 6) */
TARGET static inline void gt(const v16 g[3], v16 u[6])
{
    const v16 s = g[0] + g[2], p = _mm512_fmadd_ps(SPLAT(1.0f / 24), g[0], SPLAT(1.0f / 6) * g[2]);
    const v16 q = SPLAT(1.0f / 12) * g[1];
    u[0] = SPLAT(0.25f) * g[0];
    u[1] = SPLAT(-1.0f / 6) * (s + g[1]);
    u[2] = SPLAT(-1.0f / 6) * (s - g[1]);
    u[3] = p + q, u[4] = p - q, u[5] = g[2];
}

/* g = G^T u (6 -> 3): the adjoint of gt */
TARGET static inline void gt_adj(const v16 u[6], v16 g[3])
{
    const v16 s12 = u[1] + u[2], s34 = u[3] + u[4];
    g[0] = _mm512_fmadd_ps(SPLAT(0.25f), u[0], _mm512_fmadd_ps(SPLAT(-1.0f / 6), s12, SPLAT(1.0f / 24) * s34));
    g[1] = _mm512_fmadd_ps(SPLAT(1.0f / 6), u[2] - u[1], SPLAT(1.0f / 12) * (u[3] - u[4]));
    g[2] = _mm512_fmadd_ps(SPLAT(1.0f / 6), s34 - s12, u[5]);
}


/* Lanes [lo, hi) of 16 set (clamped). */
static inline __mmask16 lanes(int lo, int hi)
{
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    return hi <= lo ? 0 : (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

/* ---- which lane holds what. A segment's 32 window columns hold nwin windows of `slot`
 * columns; window position P (0..31) is column P % slot of window P / slot. A tile lane l is
 * tile l % nt of window l / nt. */

void mx_wg_lanes_init(mx_wg_lanes *L, int nt, int slot)
{
    int32_t col[6][16], inter[2][16], spread[2][6][16];
    memset(L, 0, sizeof *L);
    L->nt = nt, L->slot = slot;
    for (int l = 0; l < 16; l++)
        for (int j = 0; j < 6; j++) col[j][l] = l < (32 / slot) * nt ? (l / nt) * slot + 4 * (l % nt) + j : 0;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 16; l++) {
            const int P = 16 * h + l, i = P / slot, q = P % slot;
            /* the output's column q of window i: tile q / 4's column q % 4 */
            inter[h][l] = q < 4 * nt ? i * nt + q / 4 : 0;
            if (q < 4 * nt) L->inter_m[h][q % 4] |= (__mmask16)(1u << l);
            /* the input's column q of window i: column j of tile (q - j) / 4, for each j it is one of */
            for (int j = 0; j < 6; j++) {
                const int ok = q >= j && (q - j) % 4 == 0 && (q - j) / 4 < nt;
                spread[h][j][l] = ok ? i * nt + (q - j) / 4 : 0;
                if (ok) L->spread_m[h][j] |= (__mmask16)(1u << l);
            }
        }
    memcpy(L->col, col, sizeof col);
    memcpy(L->inter, inter, sizeof inter);
    memcpy(L->spread, spread, sizeof spread);
}

/* Window i's part of half h of window row r (its row y0[i] + r), its first `cols` columns
 * inside the map: the lanes (0 if none) and, through *at, the offset from base of lane 0 */
static inline __mmask16 win_part(const mx_wg_seg *s, int i, int r, int h, int cols, ptrdiff_t *at)
{
    const int y = s->y0[i] + r, first = i * s->lanes->slot - 16 * h; /* lane of the window's column 0 */
    if (y < 0 || y >= s->h) return 0;
    *at = (ptrdiff_t)s->off[i] + (ptrdiff_t)y * s->w + s->x0 - first;
    return lanes(first, first + cols) & lanes(first - s->x0, first - s->x0 + s->w);
}

/* Half h of the window row r, zero outside the map and past each window's `cols` columns */
TARGET static v16 load_half(const float *base, const mx_wg_seg *s, int r, int h, int cols)
{
    v16 v = _mm512_setzero_ps();
    for (int i = 0; i < s->nwin; i++) {
        ptrdiff_t at;
        const __mmask16 m = win_part(s, i, r, h, cols, &at);
        if (m) v = _mm512_mask_loadu_ps(v, m, base + at);
    }
    return v;
}

/* Half h of the window row r stored where load_half reads it */
TARGET static void store_half(float *base, const mx_wg_seg *s, int r, int h, int cols, v16 v)
{
    for (int i = 0; i < s->nwin; i++) {
        ptrdiff_t at;
        const __mmask16 m = win_part(s, i, r, h, cols, &at);
        if (m) _mm512_mask_storeu_ps(base + at, m, v);
    }
}

/* The segment's tile lanes, nwin * nt of them */
static inline __mmask16 tile_lanes(const mx_wg_seg *s) { return lanes(0, s->nwin * s->lanes->nt); }

TARGET void mx_wg_input(const float *base, const mx_wg_seg *s, float *v, size_t xs)
{
    const mx_wg_lanes *L = s->lanes;
    v16 rows[6][2], t[6][2]; /* t[a]: row a of B^T d, the windows' width */
    for (int r = 0; r < 6; r++)
        for (int h = 0; h < 2; h++) rows[r][h] = load_half(base, s, r, h, L->slot);
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        v16 o[6];
        bt(col, o);
        for (int a = 0; a < 6; a++) t[a][h] = o[a];
    }
    const __mmask16 st = tile_lanes(s);
    for (int a = 0; a < 6; a++) {
        v16 d[6], o[6];
        for (int j = 0; j < 6; j++) d[j] = _mm512_permutex2var_ps(t[a][0], L->col[j], t[a][1]);
        bt(d, o);
        for (int b = 0; b < 6; b++) _mm512_mask_storeu_ps(v + (size_t)(6 * a + b) * xs, st, o[b]);
    }
}

TARGET void mx_wg_input_adj(const float *dv, size_t xs, const mx_wg_seg *s, float *base)
{
    const mx_wg_lanes *L = s->lanes;
    const __mmask16 ld = tile_lanes(s);
    v16 rows[6][2]; /* rows[a]: row a of dV B^T spread back over the windows' columns */
    for (int a = 0; a < 6; a++) {
        v16 t[6], d[6];
        for (int b = 0; b < 6; b++) t[b] = _mm512_maskz_loadu_ps(ld, dv + (size_t)(6 * a + b) * xs);
        bt_adj(t, d);
        /* column q of a window takes column j of tile (q - j) / 4 for every j that fits */
        for (int h = 0; h < 2; h++) {
            v16 acc = _mm512_setzero_ps();
            for (int j = 0; j < 6; j++)
                acc = _mm512_add_ps(acc, _mm512_maskz_permutexvar_ps(L->spread_m[h][j], L->spread[h][j], d[j]));
            rows[a][h] = acc;
        }
    }
    v16 o[2][6];
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        bt_adj(col, o[h]);
    }
    /* Window by window: windows of consecutive rows of tiles share 2 rows of the map, so each
     * window's sums must be stored before the next one reads them. */
    for (int i = 0; i < s->nwin; i++) {
        v16 old[6][2];
        __mmask16 m[6][2];
        ptrdiff_t at[6][2];
        for (int r = 0; r < 6; r++)
            for (int h = 0; h < 2; h++) {
                m[r][h] = win_part(s, i, r, h, 4 * L->nt + 2, &at[r][h]);
                old[r][h] = m[r][h] ? _mm512_maskz_loadu_ps(m[r][h], base + at[r][h]) : _mm512_setzero_ps();
            }
        for (int r = 0; r < 6; r++)
            for (int h = 0; h < 2; h++)
                if (m[r][h]) _mm512_mask_storeu_ps(base + at[r][h], m[r][h], _mm512_add_ps(old[r][h], o[h][r]));
    }
}

TARGET void mx_wg_output(const float *m, size_t xs, const mx_wg_seg *s, float *base)
{
    const mx_wg_lanes *L = s->lanes;
    const __mmask16 ld = tile_lanes(s);
    v16 rows[6][2]; /* rows[a]: row a of M A, tile t's output column j at 4t + j of its window */
    for (int a = 0; a < 6; a++) {
        v16 mb[6], y[4];
        for (int b = 0; b < 6; b++) mb[b] = _mm512_maskz_loadu_ps(ld, m + (size_t)(6 * a + b) * xs);
        at(mb, y);
        for (int h = 0; h < 2; h++) {
            v16 r = _mm512_setzero_ps();
            for (int j = 0; j < 4; j++) r = _mm512_mask_permutexvar_ps(r, L->inter_m[h][j], L->inter[h], y[j]);
            rows[a][h] = r;
        }
    }
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        v16 o[4];
        at(col, o);
        for (int i = 0; i < 4; i++) store_half(base, s, i, h, 4 * L->nt, o[i]);
    }
}

TARGET void mx_wg_output_adj(const float *base, const mx_wg_seg *s, float *dm, size_t xs)
{
    const mx_wg_lanes *L = s->lanes;
    v16 dy[4][2], rows[6][2]; /* rows[a]: row a of A dY, the windows' width */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) dy[i][h] = load_half(base, s, i, h, 4 * L->nt);
    for (int h = 0; h < 2; h++) {
        const v16 col[4] = {dy[0][h], dy[1][h], dy[2][h], dy[3][h]};
        v16 o[6];
        at_adj(col, o);
        for (int a = 0; a < 6; a++) rows[a][h] = o[a];
    }
    const __mmask16 st = tile_lanes(s);
    for (int a = 0; a < 6; a++) {
        v16 y[4], o[6];
        for (int j = 0; j < 4; j++) y[j] = _mm512_permutex2var_ps(rows[a][0], L->col[j], rows[a][1]);
        at_adj(y, o);
        for (int b = 0; b < 6; b++) _mm512_mask_storeu_ps(dm + (size_t)(6 * a + b) * xs, st, o[b]);
    }
}

/* The 16 kernels are turned in registers (mx_cpu_transpose16): a kernel's 9 values are
 * contiguous, and the plain loop that did it compiled to gathers, which cost more than the
 * transform. */
TARGET void mx_wg_weights(const float *const g[16], const float *end, __mmask16 store, float *u, size_t xs)
{
    float g9[16][16] __attribute__((aligned(64)));
    mx_cpu_transpose16(g, 9, end, g9);
    v16 cols[3][6]; /* cols[s]: G times column s of g */
    for (int s = 0; s < 3; s++) {
        const v16 col[3] = {_mm512_load_ps(g9[s]), _mm512_load_ps(g9[3 + s]), _mm512_load_ps(g9[6 + s])};
        gt(col, cols[s]);
    }
    for (int a = 0; a < 6; a++) {
        const v16 row[3] = {cols[0][a], cols[1][a], cols[2][a]};
        v16 o[6];
        gt(row, o);
        for (int b = 0; b < 6; b++) _mm512_mask_storeu_ps(u + (size_t)(6 * a + b) * xs, store, o[b]);
    }
}

TARGET void mx_wg_weights_adj(const float *du, size_t xs, int n, float *g, size_t stride)
{
    const __mmask16 m = lanes(0, n);
    v16 rows[6][3]; /* rows[a]: row a of dU G */
    for (int a = 0; a < 6; a++) {
        v16 row[6];
        for (int b = 0; b < 6; b++) row[b] = _mm512_maskz_loadu_ps(m, du + (size_t)(6 * a + b) * xs);
        gt_adj(row, rows[a]);
    }
    float g9[16][16] __attribute__((aligned(64))), t[16][16] __attribute__((aligned(64)));
    for (int s = 0; s < 3; s++) {
        const v16 col[6] = {rows[0][s], rows[1][s], rows[2][s], rows[3][s], rows[4][s], rows[5][s]};
        v16 gs[3];
        gt_adj(col, gs);
        for (int r = 0; r < 3; r++) _mm512_store_ps(g9[3 * r + s], gs[r]);
    }
    const float *e9[16] = {g9[0], g9[1], g9[2], g9[3], g9[4], g9[5], g9[6], g9[7], g9[8]};
    mx_cpu_transpose16(e9, 16, NULL, t); /* t[i]: kernel i's 9 values */
    v16 old[16];
    for (int i = 0; i < n; i++) old[i] = _mm512_maskz_loadu_ps(0x1ff, g + stride * i);
    for (int i = 0; i < n; i++)
        _mm512_mask_storeu_ps(g + stride * i, 0x1ff, _mm512_add_ps(old[i], _mm512_load_ps(t[i])));
}

#endif
