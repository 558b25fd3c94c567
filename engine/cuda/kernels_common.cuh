/* What the CUDA backend's kernel files share (kernels.cu, kernels_seq.cu, kernels_attn.cu):
 * the block size, the grid of a grid-stride loop, the launch status and a warp's butterfly
 * sum, whose fixed order makes a sum repeat bit for bit. Internal to those files: each
 * includes it inside its own anonymous namespace. */
#ifndef MX_CUDA_KERNELS_COMMON_CUH
#define MX_CUDA_KERNELS_COMMON_CUH

const int THREADS = 256;

/* Enough blocks to cover n with a grid-stride loop, capped so huge tensors reuse threads. */
inline unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    if (b > 65535u * 4u) b = 65535u * 4u;
    return b ? (unsigned)b : 1u;
}

/* The status of the launch just queued (0: none), which the launchers return. */
inline int launched() { return (int)cudaGetLastError(); }

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* The sum of s over the 32 lanes of a warp, in every lane. */
__device__ inline float warp_sum(float s)
{
    for (int w = 16; w > 0; w /= 2) s += __shfl_xor_sync(0xffffffffu, s, w);
    return s;
}

#endif
