/* The peak FLOP/s a run's devices offer, the denominator of model FLOPs utilisation: on CPU
 * workers measured (the best of a few square GEMMs on the run's backend, in the arithmetic the
 * run multiplies in); on a GPU unknown here (NaN) until a datasheet table or a measurement
 * is added. */
#ifndef MX_PEAK_H
#define MX_PEAK_H

#include "base/config.h"

#include <stddef.h>

/* Peak FLOP/s of `devices` devices of kind backend (NULL: cpu) with threads_per_device threads
 * each, multiplying in amp's type (off: f32); source receives how it was found ("measured
 * gemm 512, f32"). NaN where it cannot say. Costs about 0.2 s on two cores. */
double mx_peak_flops(const char *backend, int devices, int threads_per_device, mx_amp amp, char *source, size_t n);

#endif
