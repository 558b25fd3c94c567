/* Winograd F(4x4, 3x3) convolution for 3x3 kernels at stride 1 (Lavin and Gray's minimal
 * filtering): each 4x4 block of outputs takes 36 products per channel pair instead of 144, so
 * resnet18's 3x3 layers do a quarter of the multiplications of im2col + GEMM (less where a
 * map's side is not a multiple of 4 and tiles hang over its edge).
 *
 *   forward   Y = A^T [ U . V ] A,  U = G g G^T (weights), V = B^T d B (6x6 input tiles)
 *
 * Per point xi of the 6x6 transform domain the sum over input channels is a GEMM:
 * M_xi (K x P) = U_xi (K x C) V_xi (C x P) over the P tiles of a block of samples, on the own
 * f32 kernel (engine/cpu/gemm.c) with U_xi packed once per call and V_xi read in place. Backward is the
 * exact adjoint of this forward, so the gradients are those of the function the forward
 * computes: dM = A dY A^T, dV_xi = U_xi^T dM_xi, din = B dV B^T added over the overlapping
 * tiles, dU_xi = dM_xi V_xi^T summed over the blocks, dw += G^T dU G. The transforms are in
 * engine/cpu/winograd_tf.c.
 *
 * U holds 4x the weights and is rebuilt at every call, straight into the GEMM's packed layout:
 * 38 MB for 512 channels, and dU as much again (where few tiles make the whole batch one block,
 * both are instead made and used by blocks of rows: see whole_forward). The products saved
 * grow with the tiles, the weights' work does not, so the path pays only where enough tiles
 * share it: on resnet18's 512-channel 4x4 maps (one tile a sample), against im2col + GEMM,
 * 8 and 16 tiles were slower and 32 faster before the blocks of rows; with them 16 tiles pay
 * too (resnet18 at batch 16, a device's share of 32 on two, on one thread and on two), while
 * 8 made batch 8 slower (docs/performance.md, "Choices in the code"). MIN_TILES keeps fewer
 * on im2col + GEMM.
 *
 * Threads: the transforms split channels, the GEMMs split the 36 points, each GEMM on one
 * thread, blocks of samples in order: every sum is done in one order whatever the thread
 * count, so results do not depend on it. Taken where the own AVX-512 f32 GEMM runs
 * (mx_cpu_conv_winograd_applies), in f32 whatever the backend's math: under AMP the operands
 * are bf16 or fp16 values already and F(4,3)'s f32 rounding (up to 1e-5 of the outputs) is far
 * below the half types', as the CUDA backend runs AMP's convolutions as TF32; measured on
 * resnet18, f32 Winograd is faster than the bf16 GEMMs on im2col. Its 36 products on the bf16
 * units instead (U and V rounded to bf16 after the transforms) were measured and rejected:
 * resnet18's bf16 step was faster, but each layer's outputs were far further off than
 * rounding the output to bf16 once, as AMP does (docs/performance.md, "Choices in the code"):
 * the transforms amplify the operands' rounding, where a GPU's bf16 products are exact.
 * MXBENCH_CONV=gemm or nowinograd keeps the im2col path. */
#include "kernels.h"
#include "base/status.h"

#include <omp.h>
#include <string.h>

/* A block's transform-domain work set (V and M), about 2 MB, not the 8 MB that fitted one
 * device in the whole 32 MB L3: with 8 MB a device beside another (data parallelism, or any
 * other program) lost its blocks to the other's, and it was slower alone too (resnet18's f32
 * step on one thread, on two devices and on one device of two threads; 1 MB measured as 2:
 * docs/performance.md, "Choices in the code"). A constant, so that a result does not depend on
 * the thread count or the devices (the blocks decide the order dU is summed in). */
#define BLOCK_BYTES ((size_t)2 << 20)
#define MIN_TILES 16                  /* tiles of a call, at least (see above) */
#define WHOLE_BYTES ((size_t)16 << 20) /* the whole batch one block where its V and M fit */
#define WHOLE_MIN_U ((size_t)4 << 20)  /* ... and U is this big at least (256+ channels) */
#define ROWS 48                       /* channels a thread takes the weights' rows of (whole) */

#define HAVE_KERNELS MX_CPU_AVX512_KERNELS

static int tiles(const mx_conv_desc *d, int n) { return n * ((d->oh + 3) / 4) * ((d->ow + 3) / 4); }

static int winograd_shape(const mx_conv_desc *d, int n)
{
    return d->k == 3 && d->stride == 1 && d->pad <= 2 && d->c >= 8 && d->oc >= 8 && d->oh >= 1 && d->ow >= 1 &&
           tiles(d, n) >= MIN_TILES;
}

int mx_cpu_conv_winograd_applies(const mx_backend *be, const mx_conv_desc *d, int n)
{
    return HAVE_KERNELS && mx_cpu_gemm_own() && winograd_shape(d, n);
}

#if HAVE_KERNELS
#include "winograd.h"

/* Tiles p = (sample * th + ty) * tw + tx, in blocks of whole samples. */
typedef struct {
    const mx_conv_desc *d;
    int n, th, tw, tps; /* tiles per sample: th x tw */
    int spb;            /* samples per block */
    size_t ldp;         /* a channel's row of a block's tiles in a transform-domain buffer */
} plan;

/* Floats from one point's rows to the next's in a transform-domain buffer of `rows` channels:
 * one vector more than they take, so that the 36 points of a tile do not all fall in one
 * cache set (rows * ldp is often a multiple of 4 KiB; the transforms write all 36 at once,
 * which missed L1 on every store). */
static size_t point_stride(const plan *pl, int rows) { return (size_t)rows * pl->ldp + 16; }

static plan make_plan(const mx_conv_desc *d, int n)
{
    plan pl = {d, n, (d->oh + 3) / 4, (d->ow + 3) / 4, 0, 0, 0};
    pl.tps = pl.th * pl.tw;
    const int widest = d->c > d->oc ? d->c : d->oc;
    size_t most = BLOCK_BYTES / (sizeof(float) * WG_XI * 2 * (size_t)widest); /* tiles */
    const size_t u_bytes = sizeof(float) * WG_XI * d->c * d->oc;
    if (u_bytes >= WHOLE_MIN_U && (size_t)n * pl.tps * sizeof(float) * WG_XI * (d->c + d->oc) <= WHOLE_BYTES)
        most = (size_t)n * pl.tps;
    int spb = (int)(most / (size_t)pl.tps);
    if (spb < 1) spb = 1;
    if (spb > n) spb = n;
    const int blocks = (n + spb - 1) / spb;
    pl.spb = (n + blocks - 1) / blocks; /* blocks of about equal size */
    pl.ldp = ((size_t)pl.spb * pl.tps + 15) / 16 * 16;
    return pl;
}

static size_t round64(size_t b) { return (b + 63) / 64 * 64; }

/* A one-thread copy of the device for a GEMM inside the team */
static mx_backend one_thread(const mx_backend *be)
{
    mx_backend one = *be;
    one.nthreads = 1;
    return one;
}

/* Floats from one point's dU to the next's: one vector more than K x C, which is a multiple of
 * 4 KiB (of 1 MiB for 512 channels: all 36 points in one cache set, as above) */
static size_t u_stride(const mx_conv_desc *d) { return (size_t)d->oc * d->c + 16; }

/* Panel-column pair i of rows [row0, row0 + m) of U for every point, written straight into
 * the own f32 kernel's packed op(A) (m x k, the point's at dst + xi * apb bytes): rows are
 * output channels and columns input channels for the forward (out_rows), the other way round
 * for the backward's U^T. A vector is 8 rows of a panel by 2 columns, contiguous there. */
static void weights_pair(const mx_conv_desc *d, const float *w, int out_rows, int row0, int m, char *dst,
                         size_t apb, int i)
{
    const int C = d->c, k = out_rows ? C : d->oc, pairs = (k + 1) / 2;
    const int r0 = i / pairs * MX_GEMM_MR, kk = i % pairs * 2;
    const float *g[16];
    for (int l = 0; l < 16; l++) {
        const int r = r0 + l % 8, col = kk + l / 8, oc = out_rows ? row0 + r : col, ic = out_rows ? col : row0 + r;
        g[l] = r < m && col < k ? w + ((size_t)oc * C + ic) * 9 : NULL; /* NULL: a padding row */
    }
    mx_wg_weights(g, w + (size_t)d->oc * C * 9, kk + 1 < k ? 0xffff : 0x00ff,
                  (float *)dst + mx_cpu_gemm_packed_f32_at(m, k, r0, kk), apb / sizeof(float));
}

/* Pairs weights_pair takes for m rows */
static int weight_pairs(const mx_conv_desc *d, int out_rows, int m)
{
    return (m + MX_GEMM_MR - 1) / MX_GEMM_MR * (((out_rows ? d->c : d->oc) + 1) / 2);
}

/* All of U packed for every point; a worksharing loop of the team */
static void weights_packed(const mx_conv_desc *d, const float *w, int out_rows, char *dst, size_t apb)
{
    const int m = out_rows ? d->oc : d->c, n = weight_pairs(d, out_rows, m);
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++) weights_pair(d, w, out_rows, 0, m, dst, apb, i);
}

/* Bytes from one point's packed U to the next's: 64 more than it takes (see u_stride) */
static size_t packed_stride(int m, int k)
{
    return round64(mx_cpu_gemm_packed_a_bytes(MX_GEMM_OWN_F32, m, k)) + 64;
}

/* A segment and its first tile's column in a transform-domain row */
typedef struct {
    mx_wg_seg sg;
    size_t col;
} seg_at;

/* The segments of a block's maps of one channel, in order of their first tile: where a row of
 * tiles is narrow, several rows a segment (windows of 8 or 16 columns), else one row's tiles
 * WG_SEG at a time. Listed once per call for a whole block and for the last one (the same
 * but for its end), as every channel of every block walks them. */
typedef struct {
    const plan *pl;
    int out;          /* the output's maps (4 * ty, 4 * tx), else the input's (less the padding) */
    int nwin;         /* rows of tiles a segment: 2 or 4 where narrow, else 1 */
    size_t stride;    /* floats between two samples' maps of one channel */
    mx_wg_lanes lanes[2]; /* the lane tables of the segment shapes */
    seg_at *list[2];  /* a whole block's segments, the last block's */
    int count[2];
} seg_walk;

/* Segments of a block of ns samples */
static int segments(const seg_walk *wk, int ns)
{
    const plan *pl = wk->pl;
    return (ns * pl->th + wk->nwin - 1) / wk->nwin * ((pl->tw + WG_SEG - 1) / WG_SEG);
}

/* Segment k of a block of ns samples, its maps at offsets from the block's first sample's */
static seg_at segment_at(const seg_walk *wk, int ns, int k)
{
    const plan *pl = wk->pl;
    const mx_conv_desc *d = pl->d;
    const int per_row = (pl->tw + WG_SEG - 1) / WG_SEG, R = k / per_row * wk->nwin, tx = k % per_row * WG_SEG;
    const int rows = ns * pl->th, nt = pl->tw - tx < WG_SEG ? pl->tw - tx : WG_SEG, pad = wk->out ? 0 : d->pad;
    seg_at s = {{&wk->lanes[wk->nwin == 1 && nt < WG_SEG && pl->tw > WG_SEG], wk->out ? d->oh : d->h,
                 wk->out ? d->ow : d->w, 4 * tx - pad, rows - R < wk->nwin ? rows - R : wk->nwin, {0}, {0}},
                (size_t)R * pl->tw + tx};
    for (int i = 0; i < s.sg.nwin; i++) {
        s.sg.y0[i] = 4 * ((R + i) % pl->th) - pad;
        s.sg.off[i] = (size_t)((R + i) / pl->th) * wk->stride;
    }
    return s;
}

/* Bytes walk_init lists the segments in */
static size_t walk_bytes(const plan *pl)
{
    const int most = pl->spb * pl->th * ((pl->tw + WG_SEG - 1) / WG_SEG); /* one window a segment */
    return 2 * sizeof(seg_at) * (size_t)most;
}

static void walk_init(seg_walk *wk, const plan *pl, int out, size_t stride, void *mem)
{
    const int tw = pl->tw, narrow = 4 * tw + 2 <= 16, n = pl->n, last = n - (n - 1) / pl->spb * pl->spb;
    wk->pl = pl, wk->out = out, wk->stride = stride;
    wk->nwin = narrow ? (4 * tw + 2 <= 8 ? 4 : 2) : 1;
    mx_wg_lanes_init(&wk->lanes[0], narrow ? tw : (tw < WG_SEG ? tw : WG_SEG), narrow ? 32 / wk->nwin : 32);
    if (!narrow && tw > WG_SEG && tw % WG_SEG) mx_wg_lanes_init(&wk->lanes[1], tw % WG_SEG, 32);
    const int ns[2] = {pl->spb, last};
    wk->list[0] = mem;
    wk->list[1] = wk->list[0] + segments(wk, pl->spb);
    for (int b = 0; b < 2; b++) {
        wk->count[b] = segments(wk, ns[b]);
        for (int k = 0; k < wk->count[b]; k++) wk->list[b][k] = segment_at(wk, ns[b], k);
    }
}

/* The segments of a block of ns samples (the plan's, or the last block's) */
static const seg_at *walk_list(const seg_walk *wk, int ns, int *count)
{
    const int b = ns != wk->pl->spb;
    *count = wk->count[b];
    return wk->list[b];
}

/* V = B^T d B for the block's samples [s0, s0 + ns): a worksharing loop over input channels */
static void input_block(const seg_walk *wk, const float *in, int s0, int ns, float *v)
{
    const plan *pl = wk->pl;
    const mx_conv_desc *d = pl->d;
    const size_t hw = (size_t)d->h * d->w, xs = point_stride(pl, d->c);
    int nseg;
    const seg_at *seg = walk_list(wk, ns, &nseg);
#pragma omp for schedule(static)
    for (int c = 0; c < d->c; c++)
        for (int k = 0; k < nseg; k++)
            mx_wg_input(in + s0 * wk->stride + c * hw, &seg[k].sg, v + c * pl->ldp + seg[k].col, xs);
}

/* ---- one block for the whole batch (few tiles: resnet18's 7x7 and 4x4 maps): the weights'
 * transforms blocked by rows of ROWS channels, each block transformed by the thread that
 * multiplies with it, so that U (38 MB at 512 channels) and dU are never whole in memory: on
 * the 512-channel maps, writing U, reading it back, and writing and reading dU through DRAM
 * had taken much of the forward and backward (docs/performance.md, "Choices in the code"). */

/* Per-thread scratch of the whole-batch drivers, in bytes */
static size_t whole_thread_bytes(const plan *pl)
{
    const mx_conv_desc *d = pl->d;
    const size_t u = WG_XI * packed_stride(ROWS, d->c > d->oc ? d->c : d->oc);
    const size_t du = sizeof(float) * d->c * WG_XI * ROWS;
    return round64(u > du ? u : du);
}

/* M = U V (out_rows: from V to M, blocks of ROWS output channels) or dV = U^T dM (from dM to dV,
 * blocks of ROWS input channels) for every point; the team's threads each on their blocks,
 * transforming those rows of the weights into their own buffer (mine) */
static void whole_products(const plan *pl, const float *w, int out_rows, const float *src, float *dst, char *mine,
                           const mx_backend *one)
{
    const mx_conv_desc *d = pl->d;
    const int m = out_rows ? d->oc : d->c, k = out_rows ? d->c : d->oc, pn = pl->n * pl->tps;
    const int blocks = (m + ROWS - 1) / ROWS;
    const size_t apb = packed_stride(ROWS, k), sxs = point_stride(pl, k), dxs = point_stride(pl, m);
#pragma omp for schedule(static)
    for (int b = 0; b < blocks; b++) {
        const int r0 = b * ROWS, rows = m - r0 < ROWS ? m - r0 : ROWS;
        for (int i = 0; i < weight_pairs(d, out_rows, rows); i++) weights_pair(d, w, out_rows, r0, rows, mine, apb, i);
        for (int x = 0; x < WG_XI; x++)
            mx_cpu_gemm_packed((mx_backend *)one, MX_GEMM_OWN_F32, mine + x * apb, 0, rows, pn, k, 1.0f, src + x * sxs,
                               (int)pl->ldp, 0.0f, dst + x * dxs + r0 * pl->ldp, (int)pl->ldp);
    }
}

/* dw += G^T dU G with dU = dM V^T, on blocks of ROWS output channels: dU^T (C x ROWS) for every
 * point from V packed ahead (vpack, vpb bytes a point) into the thread's [c][xi][ROWS] */
static void whole_weight_grad(const plan *pl, const char *vpack, size_t vpb, const float *dm, float *dw, float *mine,
                              const mx_backend *one)
{
    const mx_conv_desc *d = pl->d;
    const int C = d->c, K = d->oc, pn = pl->n * pl->tps, blocks = (K + ROWS - 1) / ROWS;
    const size_t mxs = point_stride(pl, K);
#pragma omp for schedule(static)
    for (int b = 0; b < blocks; b++) {
        const int k0 = b * ROWS, rows = K - k0 < ROWS ? K - k0 : ROWS;
        for (int x = 0; x < WG_XI; x++)
            mx_cpu_gemm_packed((mx_backend *)one, MX_GEMM_OWN_F32, vpack + x * vpb, 1, C, rows, pn, 1.0f,
                               dm + x * mxs + k0 * pl->ldp, (int)pl->ldp, 0.0f, mine + x * ROWS, WG_XI * ROWS);
        for (int c = 0; c < C; c++)
            for (int j = 0; j < rows; j += 16)
                mx_wg_weights_adj(mine + (size_t)c * WG_XI * ROWS + j, ROWS, rows - j < 16 ? rows - j : 16,
                                  dw + ((size_t)(k0 + j) * C + c) * 9, (size_t)C * 9);
    }
}

static void whole_forward(mx_backend *be, const plan *pl, float *out, const float *in, const float *w)
{
    const mx_conv_desc *d = pl->d;
    const int C = d->c, K = d->oc, n = pl->n;
    const size_t vxs = point_stride(pl, C), mxs = point_stride(pl, K), ohw = (size_t)d->oh * d->ow, koh = K * ohw;
    const size_t data = round64(sizeof(float) * WG_XI * (vxs + mxs)), per = whole_thread_bytes(pl);
    char *ws = mx_backend_scratch(be, data + 2 * walk_bytes(pl) + per * be->nthreads);
    if (!ws) return;
    float *v = (float *)ws, *m = v + WG_XI * vxs;
    seg_walk win, wout;
    walk_init(&win, pl, 0, (size_t)C * d->h * d->w, ws + data);
    walk_init(&wout, pl, 1, koh, ws + data + walk_bytes(pl));
    char *threads = ws + data + 2 * walk_bytes(pl);
#pragma omp parallel num_threads(be->nthreads)
    {
        const mx_backend one = one_thread(be);
        input_block(&win, in, 0, n, v);
        whole_products(pl, w, 1, v, m, threads + per * omp_get_thread_num(), &one);
        int nseg;
        const seg_at *seg = walk_list(&wout, n, &nseg);
#pragma omp for schedule(static)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < nseg; j++) mx_wg_output(m + k * pl->ldp + seg[j].col, mxs, &seg[j].sg, out + k * ohw);
    }
}

static void whole_backward(mx_backend *be, const plan *pl, float *din, float *dw, const float *dout, const float *in,
                           const float *w)
{
    const mx_conv_desc *d = pl->d;
    const int C = d->c, K = d->oc, n = pl->n, pn = n * pl->tps;
    const size_t vxs = point_stride(pl, C), mxs = point_stride(pl, K), vpb = packed_stride(C, pn);
    const size_t hw = (size_t)d->h * d->w, chw = C * hw, ohw = (size_t)d->oh * d->ow, koh = K * ohw;
    const size_t data = round64(sizeof(float) * WG_XI * (2 * vxs + mxs)) + WG_XI * vpb, per = whole_thread_bytes(pl);
    char *ws = mx_backend_scratch(be, data + 2 * walk_bytes(pl) + per * be->nthreads);
    if (!ws) return;
    float *v = (float *)ws, *dm = v + WG_XI * vxs, *dv = dm + WG_XI * mxs;
    char *vpack = ws + round64(sizeof(float) * WG_XI * (2 * vxs + mxs)), *threads = ws + data + 2 * walk_bytes(pl);
    seg_walk win, wout;
    walk_init(&win, pl, 0, chw, ws + data);
    walk_init(&wout, pl, 1, koh, ws + data + walk_bytes(pl));
#pragma omp parallel num_threads(be->nthreads)
    {
        const mx_backend one = one_thread(be);
        char *mine = threads + per * omp_get_thread_num();
        input_block(&win, in, 0, n, v);
        int nout, nin;
        const seg_at *so = walk_list(&wout, n, &nout), *si = walk_list(&win, n, &nin);
#pragma omp for schedule(static)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < nout; j++)
                mx_wg_output_adj(dout + k * ohw, &so[j].sg, dm + k * pl->ldp + so[j].col, mxs);
#pragma omp for schedule(static)
        for (int x = 0; x < WG_XI; x++)
            mx_cpu_gemm_pack_a(MX_GEMM_OWN_F32, 0, C, pn, v + x * vxs, (int)pl->ldp, vpack + x * vpb, 0, 1);
        whole_weight_grad(pl, vpack, vpb, dm, dw, (float *)mine, &one);
        if (din) {
            whole_products(pl, w, 0, dm, dv, mine, &one);
#pragma omp for schedule(static)
            for (int s = 0; s < n; s++) memset(din + s * chw, 0, sizeof(float) * chw);
#pragma omp for schedule(static)
            for (int c = 0; c < C; c++)
                for (int j = 0; j < nin; j++)
                    mx_wg_input_adj(dv + c * pl->ldp + si[j].col, vxs, &si[j].sg, din + c * hw);
        }
    }
}

void mx_cpu_conv_winograd_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                  const float *w)
{
    const plan pl = make_plan(d, n);
    if (pl.spb == n) {
        whole_forward(be, &pl, out, in, w);
        return;
    }
    const int C = d->c, K = d->oc, kind = MX_GEMM_OWN_F32;
    /* Scratch: U packed for every point, the block's V and M, the segment lists */
    const size_t apb = packed_stride(K, C), vxs = point_stride(&pl, C), mxs = point_stride(&pl, K);
    const size_t data = round64(WG_XI * apb + sizeof(float) * WG_XI * (vxs + mxs));
    char *ws = mx_backend_scratch(be, data + 2 * walk_bytes(&pl));
    if (!ws) return;
    float *v = (float *)(ws + WG_XI * apb), *m = v + WG_XI * vxs;
    const size_t ohw = (size_t)d->oh * d->ow;
    const size_t koh = (size_t)K * ohw;
    seg_walk win, wout;
    walk_init(&win, &pl, 0, (size_t)C * d->h * d->w, ws + data);
    walk_init(&wout, &pl, 1, koh, ws + data + walk_bytes(&pl));
#pragma omp parallel num_threads(be->nthreads)
    {
        mx_backend one = one_thread(be);
        weights_packed(d, w, 1, ws, apb);
        for (int s0 = 0; s0 < n; s0 += pl.spb) {
            const int ns = n - s0 < pl.spb ? n - s0 : pl.spb, pn = ns * pl.tps;
            input_block(&win, in, s0, ns, v);
#pragma omp for schedule(static)
            for (int x = 0; x < WG_XI; x++)
                mx_cpu_gemm_packed(&one, kind, ws + x * apb, 0, K, pn, C, 1.0f, v + x * vxs, (int)pl.ldp, 0.0f,
                                   m + x * mxs, (int)pl.ldp);
            int nseg;
            const seg_at *seg = walk_list(&wout, ns, &nseg);
#pragma omp for schedule(static)
            for (int k = 0; k < K; k++)
                for (int j = 0; j < nseg; j++)
                    mx_wg_output(m + k * pl.ldp + seg[j].col, mxs, &seg[j].sg, out + s0 * koh + k * ohw);
        }
    }
}

void mx_cpu_conv_winograd_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                   const float *dout, const float *in, const float *w)
{
    const plan pl = make_plan(d, n);
    if (pl.spb == n) {
        whole_backward(be, &pl, din, dw, dout, in, w);
        return;
    }
    const int C = d->c, K = d->oc, kind = MX_GEMM_OWN_F32;
    /* Scratch: U^T packed (when din is wanted), dU, then the block's V, dM, dV */
    const size_t apb = din ? packed_stride(C, K) : 0, uxs = u_stride(d);
    const size_t vxs = point_stride(&pl, C), mxs = point_stride(&pl, K);
    const size_t data = round64(WG_XI * apb + sizeof(float) * WG_XI * (uxs + 2 * vxs + mxs));
    char *ws = mx_backend_scratch(be, data + 2 * walk_bytes(&pl));
    if (!ws) return;
    float *du = (float *)(ws + WG_XI * apb), *v = du + WG_XI * uxs, *dm = v + WG_XI * vxs, *dv = dm + WG_XI * mxs;
    const size_t chw = (size_t)C * d->h * d->w, hw = (size_t)d->h * d->w, ohw = (size_t)d->oh * d->ow;
    const size_t koh = (size_t)K * ohw;
    seg_walk win, wout;
    walk_init(&win, &pl, 0, chw, ws + data);
    walk_init(&wout, &pl, 1, koh, ws + data + walk_bytes(&pl));
#pragma omp parallel num_threads(be->nthreads)
    {
        mx_backend one = one_thread(be);
        if (din) {
            weights_packed(d, w, 0, ws, apb);
#pragma omp for schedule(static)
            for (int s = 0; s < n; s++) memset(din + s * chw, 0, sizeof(float) * chw);
        }
        for (int s0 = 0; s0 < n; s0 += pl.spb) {
            const int ns = n - s0 < pl.spb ? n - s0 : pl.spb, pn = ns * pl.tps;
            input_block(&win, in, s0, ns, v);
            int nout, nin;
            const seg_at *so = walk_list(&wout, ns, &nout), *si = walk_list(&win, ns, &nin);
#pragma omp for schedule(static)
            for (int k = 0; k < K; k++)
                for (int j = 0; j < nout; j++)
                    mx_wg_output_adj(dout + s0 * koh + k * ohw, &so[j].sg, dm + k * pl.ldp + so[j].col, mxs);
#pragma omp for schedule(static)
            for (int x = 0; x < WG_XI; x++) {
                mx_cpu_gemm_f32(&one, 0, 1, K, C, pn, 1.0f, dm + x * mxs, (int)pl.ldp, v + x * vxs, (int)pl.ldp,
                                s0 ? 1.0f : 0.0f, du + x * uxs, C);
                if (din)
                    mx_cpu_gemm_packed(&one, kind, ws + x * apb, 0, C, pn, K, 1.0f, dm + x * mxs, (int)pl.ldp, 0.0f,
                                       dv + x * vxs, (int)pl.ldp);
            }
            if (!din) continue;
#pragma omp for schedule(static)
            for (int c = 0; c < C; c++)
                for (int j = 0; j < nin; j++)
                    mx_wg_input_adj(dv + c * pl.ldp + si[j].col, vxs, &si[j].sg, din + s0 * chw + c * hw);
        }
        const int cv = (C + 15) / 16;
#pragma omp for schedule(static)
        for (int i = 0; i < K * cv; i++) {
            const int k = i / cv, c0 = i % cv * 16;
            mx_wg_weights_adj(du + (size_t)k * C + c0, uxs, C - c0 < 16 ? C - c0 : 16, dw + ((size_t)k * C + c0) * 9,
                              9);
        }
    }
}

#else /* !HAVE_KERNELS: mx_cpu_conv_winograd_applies is false, so these are never taken */

void mx_cpu_conv_winograd_forward(mx_backend *be, const mx_conv_desc *d, int n, float *out, const float *in,
                                  const float *w)
{
    (void)d, (void)n, (void)out, (void)in, (void)w;
    mx_backend_fail(be, MX_EUNSUPPORTED, "conv2d: no Winograd kernels in this build");
}

void mx_cpu_conv_winograd_backward(mx_backend *be, const mx_conv_desc *d, int n, float *din, float *dw,
                                   const float *dout, const float *in, const float *w)
{
    (void)d, (void)n, (void)din, (void)dw, (void)dout, (void)in, (void)w;
    mx_backend_fail(be, MX_EUNSUPPORTED, "conv2d: no Winograd kernels in this build");
}

#endif
