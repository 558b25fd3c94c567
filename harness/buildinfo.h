/* What this build links and what this machine has: for `mxbench info` and for the file
 * attributes of every results file. */
#ifndef MX_BUILDINFO_H
#define MX_BUILDINFO_H

#include "results/results.h"

#include <stdio.h>

typedef struct {
    int count;          /* CUDA devices visible; 0 when none or not built */
    char model[128];    /* first device's name */
    char driver[64];    /* driver version, or why there is none */
    char runtime[64];   /* CUDA runtime version, or "not built" */
    char cudnn[64], nccl[64];
} mx_cuda_info;

/* Implemented by devices_cuda.c or devices_none.c, chosen by CMake. */
void mx_cuda_probe(mx_cuda_info *info);
/* Registers the device backends this build links beyond the CPU's (CUDA's in a CUDA build,
 * none otherwise); mxbench's main calls it once. */
void mx_register_device_backends(void);
void mx_mpi_version(char *buf, size_t n);

int mx_cpu_cores(void);
void mx_cpu_model(char *buf, size_t n);
/* The instruction sets behind mxbench's CPU kernels and the cache sizes (the results file's
 * cpu_features; results/SCHEMA.md). */
void mx_cpu_features(char *buf, size_t n);

void mx_buildinfo_meta(mx_results_meta *m, int argc, char **argv);
void mx_buildinfo_print(FILE *f);

#endif
