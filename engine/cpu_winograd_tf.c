/* The transforms of Winograd F(4x4, 3x3) (see cpu_winograd.h and cpu_conv_winograd.c), on
 * AVX-512 with function target attributes whatever the build's -march; the drivers take them
 * only where cpuid says the CPU has it (mx_cpu_conv_winograd_applies).
 *
 * Matrices (Lavin and Gray; points 0, 1, -1, 2, -2 and infinity):
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1] */
#include "cpu_winograd.h"
#include "cpu_kernels.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
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

/* 0, 1, ..., 15 */
TARGET static inline __m512i iota(void) { return _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0); }

/* Row y of the map from column x0 on, 32 values in two vectors, zero outside the map (and
 * where y is outside it). */
TARGET static void load_row(const float *plane, const mx_wg_seg *s, int y, v16 out[2])
{
    for (int h = 0; h < 2; h++) {
        const int x = s->x0 + 16 * h;
        const __mmask16 m = y < 0 || y >= s->h ? 0 : lanes(-x, s->w - x);
        out[h] = m ? _mm512_maskz_loadu_ps(m, plane + (ptrdiff_t)y * s->w + x) : _mm512_setzero_ps();
    }
}

/* Tile t's column j of a window row: the row's value 4t + j (a permute across both halves). */
TARGET static inline v16 tile_col(const v16 row[2], int j)
{
    const __m512i idx = _mm512_add_epi32(_mm512_slli_epi32(iota(), 2), _mm512_set1_epi32(j));
    return _mm512_permutex2var_ps(row[0], idx, row[1]);
}

void mx_wg_input(const float *plane, const mx_wg_seg *s, float *v, size_t xs)
{
    v16 rows[6][2], t[6][2]; /* t[a]: row a of B^T d, the window's width */
    for (int r = 0; r < 6; r++) load_row(plane, s, s->y0 + r, rows[r]);
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        v16 o[6];
        bt(col, o);
        for (int a = 0; a < 6; a++) t[a][h] = o[a];
    }
    const __mmask16 st = lanes(0, s->nt);
    for (int a = 0; a < 6; a++) {
        v16 d[6], o[6];
        for (int j = 0; j < 6; j++) d[j] = tile_col(t[a], j);
        bt(d, o);
        for (int b = 0; b < 6; b++) _mm512_mask_storeu_ps(v + (size_t)(6 * a + b) * xs, st, o[b]);
    }
}

void mx_wg_input_adj(const float *dv, size_t xs, const mx_wg_seg *s, float *plane)
{
    const __mmask16 ld = lanes(0, s->nt);
    v16 rows[6][2]; /* rows[a]: row a of dV B^T spread back over the window's columns */
    for (int a = 0; a < 6; a++) {
        v16 t[6], d[6];
        for (int b = 0; b < 6; b++) t[b] = _mm512_maskz_loadu_ps(ld, dv + (size_t)(6 * a + b) * xs);
        bt_adj(t, d);
        /* window column q takes tile t's column j where q = 4t + j: j = q mod 4 (t = q / 4) and,
         * where q mod 4 < 2, j + 4 of the tile before */
        for (int h = 0; h < 2; h++) {
            v16 acc = _mm512_setzero_ps();
            for (int j = 0; j < 6; j++) {
                const int q0 = 16 * h;
                const __m512i idx = _mm512_srai_epi32(_mm512_add_epi32(iota(), _mm512_set1_epi32(q0 - j)), 2);
                const __mmask16 m = (__mmask16)(0x1111u << (j % 4)) & lanes(j - q0, 4 * (s->nt - 1) + j + 1 - q0);
                acc = _mm512_add_ps(acc, _mm512_maskz_permutexvar_ps(m, idx, d[j]));
            }
            rows[a][h] = acc;
        }
    }
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        v16 o[6];
        bt_adj(col, o);
        const int x = s->x0 + 16 * h;
        for (int r = 0; r < 6; r++) {
            const int y = s->y0 + r;
            /* the window's columns: 4 * nt + 2 of them, inside the map */
            const __mmask16 m = y < 0 || y >= s->h ? 0 : lanes(-x, s->w - x) & lanes(0, 4 * s->nt + 2 - 16 * h);
            if (!m) continue;
            float *p = plane + (ptrdiff_t)y * s->w + x;
            _mm512_mask_storeu_ps(p, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), o[r]));
        }
    }
}

void mx_wg_output(const float *m, size_t xs, const mx_wg_seg *s, float *plane)
{
    const __mmask16 ld = lanes(0, s->nt);
    v16 rows[6][2]; /* rows[a]: row a of M A, tile t's output column j at 4t + j */
    for (int a = 0; a < 6; a++) {
        v16 mb[6], y[4];
        for (int b = 0; b < 6; b++) mb[b] = _mm512_maskz_loadu_ps(ld, m + (size_t)(6 * a + b) * xs);
        at(mb, y);
        for (int h = 0; h < 2; h++) {
            const __m512i idx = _mm512_srli_epi32(_mm512_add_epi32(iota(), _mm512_set1_epi32(16 * h)), 2);
            v16 r = _mm512_setzero_ps();
            for (int j = 0; j < 4; j++) r = _mm512_mask_permutexvar_ps(r, (__mmask16)(0x1111u << j), idx, y[j]);
            rows[a][h] = r;
        }
    }
    for (int h = 0; h < 2; h++) {
        const v16 col[6] = {rows[0][h], rows[1][h], rows[2][h], rows[3][h], rows[4][h], rows[5][h]};
        v16 o[4];
        at(col, o);
        const int x = s->x0 + 16 * h;
        const __mmask16 mx = lanes(0, s->w - x) & lanes(0, 4 * s->nt - 16 * h);
        for (int i = 0; i < 4 && s->y0 + i < s->h; i++)
            if (mx) _mm512_mask_storeu_ps(plane + (ptrdiff_t)(s->y0 + i) * s->w + x, mx, o[i]);
    }
}

void mx_wg_output_adj(const float *plane, const mx_wg_seg *s, float *dm, size_t xs)
{
    v16 dy[4][2], rows[6][2]; /* rows[a]: row a of A dY, the window's width */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            const int x = s->x0 + 16 * h, y = s->y0 + i;
            const __mmask16 mx = y >= s->h ? 0 : lanes(0, s->w - x) & lanes(0, 4 * s->nt - 16 * h);
            dy[i][h] = mx ? _mm512_maskz_loadu_ps(mx, plane + (ptrdiff_t)y * s->w + x) : _mm512_setzero_ps();
        }
    for (int h = 0; h < 2; h++) {
        const v16 col[4] = {dy[0][h], dy[1][h], dy[2][h], dy[3][h]};
        v16 o[6];
        at_adj(col, o);
        for (int a = 0; a < 6; a++) rows[a][h] = o[a];
    }
    const __mmask16 st = lanes(0, s->nt);
    for (int a = 0; a < 6; a++) {
        v16 y[4], o[6];
        for (int j = 0; j < 4; j++) y[j] = tile_col(rows[a], j);
        at_adj(y, o);
        for (int b = 0; b < 6; b++) _mm512_mask_storeu_ps(dm + (size_t)(6 * a + b) * xs, st, o[b]);
    }
}

/* The 16 kernels are turned in registers (mx_cpu_transpose16): a kernel's 9 values are
 * contiguous, and the plain loop that did it compiled to gathers, which cost more than the
 * transform. */
void mx_wg_weights(const float *const g[16], __mmask16 store, float *u, size_t xs)
{
    float g9[16][16] __attribute__((aligned(64)));
    mx_cpu_transpose16(g, 9, g9);
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

void mx_wg_weights_adj(const float *du, size_t xs, int n, float *g, size_t stride)
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
    mx_cpu_transpose16(e9, 16, t); /* t[i]: kernel i's 9 values */
    for (int i = 0; i < n; i++) {
        float *gi = g + stride * i;
        _mm512_mask_storeu_ps(gi, 0x1ff, _mm512_add_ps(_mm512_maskz_loadu_ps(0x1ff, gi), _mm512_load_ps(t[i])));
    }
}

#endif
