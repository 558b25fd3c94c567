/* What mxbench's oneDNN primitives share (engine/cpu/dnnl_info.c; builds with
 * MXBENCH_HAVE_DNNL only): the CPU engine, made once on first use, and the attributes every
 * primitive is made with. */
#ifndef MX_CPU_DNNL_COMMON_H
#define MX_CPU_DNNL_COMMON_H

#include <oneapi/dnnl/dnnl.h>

/* The CPU engine, or NULL where oneDNN could not make it (every caller then runs the own
 * kernels). */
dnnl_engine_t mx_dnnl_engine(void);

/* Attributes with the scratchpad in user mode (each primitive's scratch inside mxbench's
 * workspace or thread buffers, so that nothing is allocated per call and no two threads share
 * one) and, with sum, the result added to the destination (a sum post-op of scale 1). NULL on
 * failure; the caller destroys it. */
dnnl_primitive_attr_t mx_dnnl_user_scratch_attr(int sum);

#endif
