/* Internal: the transforms of the Winograd F(4x4, 3x3) convolution (cpu_winograd_tf.c), used by
 * its drivers (cpu_conv_winograd.c). Transform-domain buffers are [xi][channel][tile] with
 * tiles contiguous: point xi of a channel's tiles is xs floats after point xi - 1.
 *
 * The input and output transforms work on a segment: up to WG_SEG tiles side by side in one row
 * of tiles of one channel's map, the 16 lanes of a vector being the segment's tiles. Whole rows
 * of the map are loaded (two vectors cover the 4 * 7 + 2 columns a segment reads) and
 * transformed along y with plain vector arithmetic; along x, each tile's columns are picked out
 * of the rows with permutes. Scattered loads (gathers) had cost more than the arithmetic. */
#ifndef MX_CPU_WINOGRAD_H
#define MX_CPU_WINOGRAD_H

#include <stddef.h>

#define WG_XI 36 /* points of the transform domain: 6 x 6 */
#define WG_SEG 7 /* tiles in a segment: 4 * 7 + 2 columns fit in two vectors */

/* One map: its size, and where the segment's window starts (the first tile's top-left pixel:
 * 4 * tile row - pad, 4 * first tile column - pad; the output's is 4 * tile row, 4 * column). */
typedef struct {
    int h, w;   /* the map's size */
    int y0, x0; /* the window's origin in it */
    int nt;     /* tiles in the segment, 1..WG_SEG */
} mx_wg_seg;

/* v[xi * xs + t] = (B^T d B)[xi] of the segment's tile t, d read from plane */
void mx_wg_input(const float *plane, const mx_wg_seg *s, float *v, size_t xs);
/* plane += B dV B^T of the segment's tiles (the adjoint of mx_wg_input), the tiles' overlaps
 * summed */
void mx_wg_input_adj(const float *dv, size_t xs, const mx_wg_seg *s, float *plane);
/* plane = A^T M A of the segment's tiles, cut at the map's edge */
void mx_wg_output(const float *m, size_t xs, const mx_wg_seg *s, float *plane);
/* dm = A dY A^T of the segment's tiles (the adjoint of mx_wg_output), dY read from plane */
void mx_wg_output_adj(const float *plane, const mx_wg_seg *s, float *dm, size_t xs);

/* u[xi * xs + i] = (G g[i] G^T)[xi] for the 16 kernels g[i] (3x3 each; NULL: zeros), lanes i
 * of the mask `store` (a __mmask16) written */
void mx_wg_weights(const float *const g[16], unsigned short store, float *u, size_t xs);
/* g_i += G^T dU_i G for i < n: the adjoint of mx_wg_weights */
void mx_wg_weights_adj(const float *du, size_t xs, int n, float *g, size_t stride);

#endif
