/* Device probing for a build without CUDA or MPI: says so. */
#include "buildinfo.h"

#include <string.h>

void mx_cuda_probe(mx_cuda_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->driver, sizeof info->driver, "CUDA not built");
    snprintf(info->runtime, sizeof info->runtime, "not built");
    snprintf(info->cudnn, sizeof info->cudnn, "not built");
    snprintf(info->nccl, sizeof info->nccl, "not built");
}

void mx_register_device_backends(void) {}
