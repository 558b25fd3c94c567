/* Internal: the transforms of the Winograd F(4x4, 3x3) convolution (engine/cpu/winograd_tf.c), used by
 * its drivers (engine/cpu/conv_winograd.c). Transform-domain buffers are [xi][channel][tile] with
 * tiles contiguous: point xi of a channel's tiles is xs floats after point xi - 1.
 *
 * The input and output transforms work on a segment of one channel's maps: up to WG_SEG tiles
 * side by side in a row of tiles, or where rows of tiles are narrow (3 tiles or fewer: maps of
 * 12 columns and less), 2 or 4 whole rows of tiles in windows side by side, the lanes of a
 * vector being the segment's tiles. Rows of the maps are loaded into two vectors (32 columns:
 * 4 * 7 + 2 for one wide window) and transformed along y with plain vector arithmetic; along x,
 * each tile's columns are picked out of the rows with permutes. Scattered loads (gathers) had
 * cost more than the arithmetic, and one narrow row of tiles a segment had left 13-15 of 16
 * lanes idle on resnet18's 7x7 and 4x4 maps. x86-64 only, as the own GEMM. */
#ifndef MX_CPU_WINOGRAD_H
#define MX_CPU_WINOGRAD_H

#include <immintrin.h>
#include <stddef.h>

#define WG_XI 36 /* points of the transform domain: 6 x 6 */
#define WG_SEG 7 /* tiles in a window: 4 * 7 + 2 columns fit in two vectors */

/* Which lane holds what, for segments of nt tiles a window in windows of `slot` columns
 * (mx_wg_lanes_init; set up once per convolution, as the vectors are the same for all its
 * segments). */
typedef struct {
    __m512i col[6];                       /* tile lane -> window column of the tile's column j */
    __m512i inter[2], spread[2][6];       /* window column (half h) -> tile lane: outputs, inputs */
    unsigned short inter_m[2][4], spread_m[2][6]; /* ... where column j of that tile is there */
    int nt, slot;
} mx_wg_lanes;

/* A segment: up to 4 windows side by side in 32 lanes, window i over rows y0[i].. of the map
 * at base + off[i] (consecutive rows of tiles, perhaps of consecutive samples: their tiles
 * are consecutive), all from column x0 (4 * first tile column - pad for the input, 4 * first
 * tile column for the output). One window where rows of tiles are wider than 3 tiles. */
typedef struct {
    const mx_wg_lanes *lanes;
    int h, w;         /* the map's size */
    int x0, nwin;     /* the windows' first column; windows, at most 32 / slot */
    int y0[4];
    size_t off[4];
} mx_wg_seg;

void mx_wg_lanes_init(mx_wg_lanes *L, int nt, int slot);
/* v[xi * xs + l] = (B^T d B)[xi] of the segment's tile lane l, d read from the maps */
void mx_wg_input(const float *base, const mx_wg_seg *s, float *v, size_t xs);
/* maps += B dV B^T of the segment's tiles (the adjoint of mx_wg_input), overlaps summed */
void mx_wg_input_adj(const float *dv, size_t xs, const mx_wg_seg *s, float *base);
/* maps = A^T M A of the segment's tiles, cut at the map's edge */
void mx_wg_output(const float *m, size_t xs, const mx_wg_seg *s, float *base);
/* dm = A dY A^T of the segment's tiles (the adjoint of mx_wg_output), dY read from the maps */
void mx_wg_output_adj(const float *base, const mx_wg_seg *s, float *dm, size_t xs);

/* u[xi * xs + i] = (G g[i] G^T)[xi] for the 16 kernels g[i] (3x3 each; NULL: zeros), lanes i
 * of the mask `store` (a __mmask16) written; the kernels lie before end (the weights' end:
 * a kernel 16 floats from it is read as a whole vector) */
void mx_wg_weights(const float *const g[16], const float *end, unsigned short store, float *u, size_t xs);
/* g_i += G^T dU_i G for i < n: the adjoint of mx_wg_weights */
void mx_wg_weights_adj(const float *du, size_t xs, int n, float *g, size_t stride);

#endif
