/* The GPU's matrix-product ceiling as mxbench's CUDA backend reaches it: one large square
 * product (8192 by default) through the backend's gemm (cuBLAS), in strict f32, TF32, and
 * with bf16 and fp16 operands (f32 sums, f32 result), timed with the backend's CUDA events
 * over 10 products after 3 warm-ups. Prints a GEMMPEAK line per arithmetic in TFLOP/s, the
 * figure a training run's achieved FLOP rate is read against.
 * usage: gpu_gemm_ceiling [N] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cuda/cuda.h"
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>

static double timed(mx_backend *be, int n, mx_dtype t, void *a, void *b, float *c)
{
    mx_event *e0 = be->ops->event_create(be), *e1 = be->ops->event_create(be);
    for (int i = 0; i < 13; i++) {
        if (i == 3) be->ops->event_record(be, e0);
        be->ops->gemm_ex(be, 0, 0, n, n, n, 1, a, t, n, b, t, n, 0, c, MX_F32, n, MX_F32);
    }
    be->ops->event_record(be, e1);
    const double s = be->ops->event_elapsed(be, e0, e1) / 10;
    be->ops->event_destroy(be, e0), be->ops->event_destroy(be, e1);
    return be->ops->sync(be) < 0 ? -1 : 2.0 * n * n * (double)n / s * 1e-12;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 8192;
    if (n < 64 || n > 32768) {
        fprintf(stderr, "gpu_gemm_ceiling: size '%s': accepted 64 to 32768\n", argv[1]);
        return 2;
    }
    if (mx_backend_register(&mx_cuda_backend_ops) < 0) {
        fprintf(stderr, "gpu_gemm_ceiling: %s\n", mx_last_error());
        return 1;
    }
    mx_backend *be;
    if (mx_backend_create(&be, "cuda", 0, 1) < 0) {
        printf("gpu_gemm_ceiling: skipped: %s\n", mx_last_error());
        return 77;
    }
    const size_t nn = (size_t)n * n;
    float *h = malloc(sizeof(float) * nn);
    for (size_t i = 0; i < nn; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    float *a = be->ops->alloc(be, 4 * nn), *b = be->ops->alloc(be, 4 * nn), *c = be->ops->alloc(be, 4 * nn);
    void *ah = be->ops->alloc(be, 2 * nn), *bh = be->ops->alloc(be, 2 * nn);
    if (!a || !b || !c || !ah || !bh) {
        fprintf(stderr, "gpu_gemm_ceiling: out of device memory for n = %d\n", n);
        return 1;
    }
    be->ops->copy(be, a, h, 4 * nn, MX_COPY_H2D);
    be->ops->copy(be, b, h, 4 * nn, MX_COPY_H2D);
    printf("GEMMPEAK n=%d f32 %.1f TFLOP/s\n", n, timed(be, n, MX_F32, a, b, c));
    be->tf32 = 1;
    printf("GEMMPEAK n=%d tf32 %.1f TFLOP/s\n", n, timed(be, n, MX_F32, a, b, c));
    be->tf32 = 0;
    const mx_dtype halves[] = {MX_BF16, MX_F16};
    for (int i = 0; i < 2; i++) {
        be->ops->cast(be, nn, ah, halves[i], a, MX_F32);
        be->ops->cast(be, nn, bh, halves[i], b, MX_F32);
        printf("GEMMPEAK n=%d %s %.1f TFLOP/s\n", n, mx_dtype_name(halves[i]), timed(be, n, halves[i], ah, bh, c));
    }
    if (be->ops->sync(be) < 0) fprintf(stderr, "gpu_gemm_ceiling: %s\n", mx_last_error());
    mx_backend_destroy(be);
    free(h);
    return 0;
}
