/* The CPU backend as the rest of mxbench sees it: its table, registered by
 * engine/core/backends.c, and what `mxbench info` and the records say about it. Its kernels
 * are declared in engine/cpu/kernels.h. */
#ifndef MX_CPU_H
#define MX_CPU_H

#include "engine/backend/backend.h"

/* The CPU backend's table as written (optional ops NULL): the registry takes
 * it; tests copy it to build variants. */
extern const mx_backend_ops mx_cpu_backend_ops;
/* Sets the process-wide BLAS thread count (OpenBLAS keeps one global setting). */
void mx_cpu_set_blas_threads(int n);
const char *mx_cpu_blas_info(void);
/* oneDNN's version and role for the records and `mxbench info`: "2.6.3 (3x3 convolutions
 * under AMP bf16)", "2.6.3, unused (...why)", or "not in this build". */
const char *mx_cpu_dnnl_info(void);
#endif
