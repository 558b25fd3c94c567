/* The CUDA backend as the rest of mxbench sees it: its table, which a program that links
 * mx_cuda registers (mxbench: harness/devices_cuda.c). */
#ifndef MX_CUDA_H
#define MX_CUDA_H

#include "engine/backend/backend.h"

extern const mx_backend_ops mx_cuda_backend_ops;

#endif
