/* What the CUDA backend's tests share (test_cuda_ops.c, test_cuda_seq.c): the two backends
 * compared and their opening, a CHECK that counts failures and goes on, random values never exactly zero,
 * device buffers filled from the host or poisoned with NaN bytes (so an op that leaves an
 * element unwritten fails), copies back, and the error measure every bound is stated in.
 * A test defines CUDA_CHECK_SEED (its random stream) before including this. */
#ifndef MX_TESTS_CUDA_CHECK_H
#define MX_TESTS_CUDA_CHECK_H

#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static mx_backend *cpu, *gpu;

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            failures++;                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
        }                                               \
    } while (0)

static unsigned long long rng = CUDA_CHECK_SEED;
static float uniform(void) /* in [-1, 1], never exactly 0 */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    float v = (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
    return v == 0 ? 0.5f : v;
}

/* A copy on be of host values (bytes), a poisoned buffer of be (NaN as f32, f16 and bf16),
 * and a host copy of bytes of a buffer of be (free it); the unsuffixed ones on the GPU. */
static void *up_on(mx_backend *be, const void *h, size_t bytes)
{
    void *d = be->ops->alloc(be, bytes ? bytes : 4);
    be->ops->copy(be, d, h, bytes, MX_COPY_H2D);
    return d;
}

static void *poisoned_on(mx_backend *be, size_t bytes)
{
    unsigned char *h = malloc(bytes ? bytes : 4);
    memset(h, 0xff, bytes ? bytes : 4);
    void *d = up_on(be, h, bytes);
    free(h);
    return d;
}

static float *down_on(mx_backend *be, const void *d, size_t bytes)
{
    float *h = malloc(bytes ? bytes : 4);
    be->ops->copy(be, h, d, bytes, MX_COPY_D2H);
    return h;
}

/* Opens gpu (CUDA device 0) and cpu, one thread each: 0 when both are open, else the test's
 * exit code (1 for a table the registry refuses, 77, skipped, where there is no GPU). */
static int open_backends(void)
{
    if (mx_backend_register(&mx_cuda_backend_ops) < 0) { /* built only where mx_cuda is */
        printf("FAIL: the cuda backend's table: %s\n", mx_last_error());
        return 1;
    }
    if (mx_backend_create(&gpu, "cuda", 0, 1) < 0) {
        printf("skip: %s\n", mx_last_error());
        return 77;
    }
    return mx_backend_create(&cpu, "cpu", 0, 1) < 0 ? 1 : 0;
}

static inline void *up(const void *h, size_t bytes) { return up_on(gpu, h, bytes); }
static inline void *poisoned(size_t bytes) { return poisoned_on(gpu, bytes); }
static inline float *down(const void *d, size_t bytes) { return down_on(gpu, d, bytes); }

/* max |got - want| / max |want|, NaN when got holds a NaN the reference does not */
static double rel_err(const float *got, const float *want, size_t n)
{
    double diff = 0, mag = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) != isnan(want[i])) return NAN;
        if (isnan(want[i])) continue;
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        mag = fmax(mag, fabs((double)want[i]));
    }
    return diff / mag;
}

#endif
