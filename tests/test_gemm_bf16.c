/* The bf16 GEMM (engine/cpu_gemm_bf16.c) against a scalar reference that rounds the same
 * way: operands rounded to bf16 (nearest even), each MX_BF16_KC block of k summed from 0 in
 * f32, pair by pair as vdpbf16ps adds them (the pair's second product, then its first, each
 * add rounded), then C = alpha * sum + beta * C fused. Random shapes in all four transpose
 * cases: sizes that fill no panel, odd k, k over several blocks, leading dimensions wider
 * than the matrix, beta 0 (C not read: it starts as NaN) and not. Results must be
 * bit-equal, with 1 and 2 threads.
 *
 * Then the dispatch: with the backend's math at MX_BF16, mx_cpu_gemm takes this kernel where
 * the CPU has avx512_bf16, and with the path forced off (MXBENCH_BF16=emulate) it gives the
 * emulation's results, bit-equal to an f32 GEMM. Skipped (77) on a CPU without
 * avx512_bf16, where only the emulation exists. */
#include "engine/backend.h"
#include "engine/cpu_kernels.h"
#include "engine/dtype.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 1616;

static float bf(float x) { return mx_bf16_to_f32(mx_f32_to_bf16(x)); }

static float rand_val(void) { return (float)(4 * check_uniform(&rng) - 2); }

static void reference(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                      int ldb, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *cij = &c[(size_t)i * ldc + j];
            for (int k0 = 0; k0 < k; k0 += MX_BF16_KC) {
                const int k1 = k - k0 < MX_BF16_KC ? k : k0 + MX_BF16_KC;
                float s = 0;
                for (int kk = k0; kk < k1; kk += 2) {
                    float prod[2] = {0, 0};
                    for (int h = 0; h < 2 && kk + h < k1; h++) {
                        const float av = ta ? a[(size_t)(kk + h) * lda + i] : a[(size_t)i * lda + kk + h];
                        const float bv = tb ? b[(size_t)j * ldb + kk + h] : b[(size_t)(kk + h) * ldb + j];
                        prod[h] = bf(av) * bf(bv); /* exact: 8-bit significands */
                    }
                    s += prod[1];
                    s += prod[0];
                }
                if (k0 > 0) *cij = fmaf(alpha, s, *cij);
                else if (beta == 0) *cij = alpha * s;
                else *cij = fmaf(alpha, s, beta * *cij);
            }
        }
}

/* Counts the elements of the m x n results that differ in any bit. */
static long differing(const float *x, const float *y, int m, int n, int ld)
{
    long bad = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) bad += memcmp(&x[(size_t)i * ld + j], &y[(size_t)i * ld + j], sizeof(float)) != 0;
    return bad;
}

static void run_case(mx_backend *be[3], int trial)
{
    static const int dims[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 47, 48, 49, 95, 97, 130};
    const int nd = (int)(sizeof dims / sizeof dims[0]);
    const int ta = trial & 1, tb = (trial >> 1) & 1;
    const int m = dims[(trial * 7 + 3) % nd], n = dims[(trial * 5 + 1) % nd] + (trial % 9 == 0 ? 1500 : 0);
    static const int ks[] = {1, 2, 3, 16, 31, 32, 33, 100, 255, 256, 257, 600};
    const int k = ks[trial % (int)(sizeof ks / sizeof ks[0])];
    const int lda = (ta ? m : k) + trial % 3, ldb = (tb ? k : n) + trial % 4, ldc = n + trial % 2;
    const float alpha = trial % 5 == 0 ? 0.5f : 1.0f, beta = trial % 3 == 0 ? 0.0f : trial % 3 == 1 ? 1.0f : -0.75f;
    const size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb, nc = (size_t)m * ldc;
    float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
    float *c0 = malloc(sizeof(float) * nc), *c[3] = {malloc(sizeof(float) * nc), malloc(sizeof(float) * nc), NULL};
    for (size_t i = 0; i < na; i++) a[i] = rand_val();
    for (size_t i = 0; i < nb; i++) b[i] = rand_val();
    for (size_t i = 0; i < nc; i++) c0[i] = beta == 0 ? NAN : rand_val();
    float *want = malloc(sizeof(float) * nc);
    memcpy(want, c0, sizeof(float) * nc);
    reference(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    for (int t = 1; t <= 2; t++) {
        memcpy(c[t - 1], c0, sizeof(float) * nc);
        mx_cpu_gemm_bf16(be[t], ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[t - 1], ldc);
        const long bad = differing(c[t - 1], want, m, n, ldc);
        CHECK(bad == 0, "trial %d: %c%c m %d n %d k %d lda %d ldb %d ldc %d alpha %g beta %g, %d thread(s): %ld of %d "
              "elements differ from the reference", trial, ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, lda, ldb, ldc,
              alpha, beta, t, bad, m * n);
    }
    free(a), free(b), free(c0), free(c[0]), free(c[1]), free(want);
}

/* mx_cpu_gemm at math MX_BF16: the kernel natively, the f32 GEMM when forced off. */
static void dispatch(mx_backend *be)
{
    const int m = 37, n = 70, k = 300;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
    float *got = malloc(sizeof(float) * m * n), *want = malloc(sizeof(float) * m * n);
    for (int i = 0; i < m * k; i++) a[i] = bf(rand_val()); /* AMP's operands: bf16 values */
    for (int i = 0; i < k * n; i++) b[i] = bf(rand_val());
    be->math = MX_BF16;
    mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
    mx_cpu_gemm_bf16(be, 0, 0, m, n, k, 1, a, k, b, n, 0, want, n);
    CHECK(differing(got, want, m, n, n) == 0, "math bf16 on an avx512_bf16 CPU runs the bf16 kernel");
    CHECK(strcmp(be->ops->amp_kernels(MX_BF16), "avx512_bf16") == 0 && strcmp(be->ops->amp_kernels(MX_F16), "emulated") == 0,
          "the table names the bf16 kernels: %s", be->ops->amp_kernels(MX_BF16));
    mx_cpu_bf16_force_emulation(1);
    CHECK(!mx_cpu_bf16_native() && strcmp(be->ops->amp_kernels(MX_BF16), "emulated") == 0, "forced off: %s",
          be->ops->amp_kernels(MX_BF16));
    mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
    be->math = MX_F32;
    mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, want, n);
    CHECK(differing(got, want, m, n, n) == 0, "forced off, math bf16 gives the f32 GEMM's (the emulation's) results");
    /* bf16 values, f32 sums: the two paths differ by the order of the additions only */
    mx_cpu_bf16_force_emulation(0);
    be->math = MX_BF16;
    mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
    double worst = 0;
    for (int i = 0; i < m * n; i++) {
        const double e = fabs((double)got[i] - want[i]) / (fabs(want[i]) + 1);
        if (e > worst) worst = e;
    }
    CHECK(worst < 1e-5, "native and emulated agree to the f32 sums' rounding: %.3g", worst);
    be->math = MX_F32;
    free(a), free(b), free(got), free(want);
}

int main(void)
{
    if (!mx_cpu_bf16_native()) {
        printf("test_gemm_bf16: skipped: this CPU has no avx512_bf16 (or MXBENCH_BF16=emulate); bf16 is emulated\n");
        return CHECK_SKIP;
    }
    mx_backend *be[3] = {0};
    if (mx_backend_create(&be[1], "cpu", 0, 1) < 0 || mx_backend_create(&be[2], "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_gemm_bf16: no CPU backend\n");
        return 1;
    }
    for (int trial = 0; trial < 96; trial++) run_case(be, trial);
    dispatch(be[1]);
    CHECK(be[1]->ops->sync(be[1]) == 0 && be[2]->ops->sync(be[2]) == 0, "no backend error");
    mx_backend_destroy(be[1]);
    mx_backend_destroy(be[2]);
    return check_summary("test_gemm_bf16");
}
