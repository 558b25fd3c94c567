/* Device probing for a CUDA build: runtime, driver, cuDNN and NCCL versions and the GPUs
 * visible. Built only when CMake finds the CUDA toolkit. */
#include "buildinfo.h"
#include "base/status.h"
#include "comm/comm_nccl.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>
#include <string.h>

static void version(char *buf, size_t n, int v) { snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10); }

static void probe(mx_cuda_info *info)
{
    memset(info, 0, sizeof *info);
    int v = 0;
    cudaRuntimeGetVersion(&v);
    version(info->runtime, sizeof info->runtime, v);
    size_t cv = cudnnGetVersion();
    snprintf(info->cudnn, sizeof info->cudnn, "%zu.%zu.%zu", cv / 10000, (cv % 10000) / 100, cv % 100);
    int nv = 0;
    ncclGetVersion(&nv);
    snprintf(info->nccl, sizeof info->nccl, "%d.%d.%d", nv / 10000, (nv % 10000) / 100, nv % 100);
    if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) {
        snprintf(info->driver, sizeof info->driver, "no CUDA driver");
        return;
    }
    version(info->driver, sizeof info->driver, v);
    if (cudaGetDeviceCount(&info->count) != cudaSuccess || info->count == 0) {
        info->count = 0;
        snprintf(info->driver, sizeof info->driver, "no CUDA device");
        return;
    }
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) snprintf(info->model, sizeof info->model, "%.120s", p.name);
}

/* Several callers (info, train, results attributes) ask; the answer cannot change within a
 * process, and starting the CUDA runtime is not free, so it is asked once. */
void mx_cuda_probe(mx_cuda_info *info)
{
    static mx_cuda_info cached;
    static int done;
    if (!done) probe(&cached), done = 1;
    *info = cached;
}

/* The CUDA backend and, beside it, the nccl communicators (one process's GPUs; one per MPI
 * rank where the build has MPI): they live in libraries only a CUDA build links, so the
 * registries learn of them here. */
void mx_register_device_backends(void)
{
    if (mx_backend_register(&mx_cuda_backend_ops) < 0)
        fprintf(stderr, "mxbench: the cuda backend's table is incomplete: %s\n", mx_last_error());
    if (mx_comm_register(&mx_comm_nccl_ops) < 0)
        fprintf(stderr, "mxbench: the nccl communicator's table: %s\n", mx_last_error());
    const mx_comm_ops *ranks = mx_comm_nccl_mpi_ops();
    if (ranks && mx_comm_register(ranks) < 0)
        fprintf(stderr, "mxbench: the nccl_mpi communicator's table: %s\n", mx_last_error());
}
