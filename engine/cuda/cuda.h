/* The CUDA backend as the rest of mxbench sees it: its table, which a program that links
 * mx_cuda registers (mxbench: harness/devices_cuda.c). */
#ifndef MX_CUDA_H
#define MX_CUDA_H

#include "engine/backend/backend.h"

#include <cuda_runtime_api.h>

extern const mx_backend_ops mx_cuda_backend_ops;

/* A cuda backend's GPU and the stream every op of it is queued on, for code that queues its
 * own work in the same order (the nccl communicator); -1 and NULL for another backend or
 * one not open. */
int mx_cuda_backend_gpu(const mx_backend *be);
cudaStream_t mx_cuda_backend_stream(const mx_backend *be);

#endif
