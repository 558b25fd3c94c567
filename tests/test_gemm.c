/* The own GEMMs (engine/cpu/gemm.c) against scalar references that round the same way:
 *  - f32: each MX_F32_KC block of k summed from 0 by fused multiply-adds in k order;
 *  - bf16: operands rounded to bf16 (nearest even), each MX_BF16_KC block summed from 0 in
 *    f32 pair by pair as vdpbf16ps adds them (the pair's second product, then its first, each
 *    add rounded);
 * then C = alpha * sum + beta * C fused. Random shapes in all four transpose cases: sizes that
 * fill no panel, odd k, k over several blocks, leading dimensions wider than the matrix, beta
 * 0 (C not read: it starts as NaN) and not; and two large shapes whose 2 threads split C's
 * rows over several blocks of B's columns and of k. Results must be bit-equal, with 1 and 2
 * threads, and with op(A) packed once ahead (mx_cpu_gemm_pack_a).
 *
 * Then the dispatch: mx_cpu_gemm takes the own f32 kernel on an AVX-512 CPU and the BLAS when
 * forced (MXBENCH_GEMM=blas); with the backend's math at MX_BF16 it takes the bf16 kernel
 * where the CPU has avx512_bf16, and with that forced off (MXBENCH_BF16=emulate) it gives the
 * emulation's results, bit-equal to the f32 GEMM's. A kind the CPU lacks is skipped with a
 * message (the whole test, 77, when it has neither). Last, oneDNN's bf16 matmul (the AMX
 * path) forced on, against the own bf16 kernel, and the default rule (dnnl_path). */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/cpu/kernels.h"
#include "engine/backend/dtype.h"
#include "engine/backend/switches.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 1616;

static float bf(float x) { return mx_bf16_to_f32(mx_f32_to_bf16(x)); }

static float rand_val(void) { return (float)(4 * check_uniform(&rng) - 2); }

static void reference(int bf16, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    const int KC = bf16 ? MX_BF16_KC : MX_F32_KC;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *cij = &c[(size_t)i * ldc + j];
            for (int k0 = 0; k0 < k; k0 += KC) {
                const int k1 = k - k0 < KC ? k : k0 + KC;
                float s = 0;
                for (int kk = k0; kk < k1; kk += 2) {
                    float av[2] = {0, 0}, bv[2] = {0, 0};
                    for (int h = 0; h < 2 && kk + h < k1; h++) {
                        av[h] = ta ? a[(size_t)(kk + h) * lda + i] : a[(size_t)i * lda + kk + h];
                        bv[h] = tb ? b[(size_t)j * ldb + kk + h] : b[(size_t)(kk + h) * ldb + j];
                    }
                    if (bf16) {
                        s += bf(av[1]) * bf(bv[1]); /* exact products: 8-bit significands */
                        s += bf(av[0]) * bf(bv[0]);
                    } else {
                        s = fmaf(av[0], bv[0], s);
                        s = fmaf(av[1], bv[1], s); /* past k: 0 * 0 adds nothing */
                    }
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

static void run_shape(mx_backend *be[3], int bf16, int trial, int ta, int tb, int m, int n, int k);

static void run_case(mx_backend *be[3], int bf16, int trial)
{
    static const int dims[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 47, 48, 49, 64, 80, 95, 97, 130};
    const int nd = (int)(sizeof dims / sizeof dims[0]);
    static const int ks[] = {1, 2, 3, 16, 31, 32, 33, 100, 127, 128, 129, 255, 256, 257, 600};
    run_shape(be, bf16, trial, trial & 1, (trial >> 1) & 1, dims[(trial * 7 + 3) % nd],
              dims[(trial * 5 + 1) % nd] + (trial % 9 == 0 ? 1500 : 0), ks[trial % (int)(sizeof ks / sizeof ks[0])]);
}

/* m x n x k in the transpose case ta, tb; leading dimensions, alpha and beta from trial */
static void run_shape(mx_backend *be[3], int bf16, int trial, int ta, int tb, int m, int n, int k)
{
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
    reference(bf16, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    for (int t = 1; t <= 2; t++) {
        memcpy(c[t - 1], c0, sizeof(float) * nc);
        (bf16 ? mx_cpu_gemm_bf16 : mx_cpu_gemm_f32)(be[t], ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[t - 1], ldc);
        const long bad = differing(c[t - 1], want, m, n, ldc);
        CHECK(bad == 0,
              "%s trial %d: %c%c m %d n %d k %d lda %d ldb %d ldc %d alpha %g beta %g, %d thread(s): %ld of %d "
              "elements differ from the reference", bf16 ? "bf16" : "f32", trial, ta ? 'T' : 'N', tb ? 'T' : 'N', m,
              n, k, lda, ldb, ldc, alpha, beta, t, bad, m * n);
    }
    /* op(A) packed once ahead gives the same bits (a convolution's weights over its chunks) */
    const int kind = bf16 ? MX_GEMM_OWN_BF16 : MX_GEMM_OWN_F32;
    void *pa = aligned_alloc(64, (mx_cpu_gemm_packed_a_bytes(kind, m, k) + 63) / 64 * 64);
    for (int part = 0; part < 3; part++) mx_cpu_gemm_pack_a(kind, ta, m, k, a, lda, pa, part, 3);
    memcpy(c[1], c0, sizeof(float) * nc);
    mx_cpu_gemm_packed(be[1 + trial % 2], kind, pa, tb, m, n, k, alpha, b, ldb, beta, c[1], ldc);
    CHECK(differing(c[1], want, m, n, ldc) == 0, "%s trial %d: with A packed ahead, %ld elements differ",
          bf16 ? "bf16" : "f32", trial, differing(c[1], want, m, n, ldc));
    free(pa);
    free(a), free(b), free(c0), free(c[0]), free(c[1]), free(want);
}

/* oneDNN's matmul (engine/cpu/gemm_dnnl.c), forced where it is not the default: against the own
 * bf16 kernel on the same bf16 values, both summing exact products in f32, so they may differ
 * by the sums' order only: within 1e-5 of the sum of |products| (and |beta C|). Random shapes
 * in the four transpose cases, beta 0 and 1, C wider than n, 1 and 2 threads; alpha 2 (which
 * oneDNN's path leaves to the own kernel) bit-equal to the own kernel. */
static void dnnl_path(mx_backend **be)
{
    mx_cpu_gemm_force_dnnl(1);
    CHECK(mx_cpu_gemm_bf16_dnnl(), "forced on, the bf16 GEMMs go to oneDNN");
    for (int trial = 0; trial < 24; trial++) {
        const int ta = trial & 1, tb = trial >> 1 & 1, t = 1 + (trial >> 2 & 1);
        const int m = 1 + (int)(check_uniform(&rng) * 300), n = 1 + (int)(check_uniform(&rng) * 300);
        const int k = 1 + (int)(check_uniform(&rng) * 700), ldc = n + (trial % 3 == 0 ? 5 : 0);
        const float beta = trial % 4 < 2 ? 0.0f : 1.0f, alpha = trial == 23 ? 2.0f : 1.0f;
        const int lda = ta ? m : k, ldb = tb ? k : n;
        float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
        float *got = malloc(sizeof(float) * m * ldc), *want = malloc(sizeof(float) * m * ldc);
        for (int i = 0; i < m * k; i++) a[i] = bf(rand_val());
        for (int i = 0; i < k * n; i++) b[i] = bf(rand_val());
        for (int i = 0; i < m * ldc; i++) got[i] = want[i] = rand_val();
        be[t]->math = MX_BF16;
        CHECK(mx_cpu_gemm_kind(be[t]) == MX_GEMM_DNNL_BF16 && mx_cpu_gemm_packed_a_bytes(MX_GEMM_DNNL_BF16, m, k) == 0,
              "the kind is oneDNN's, which takes nothing packed ahead");
        /* oneDNN takes alpha 1 (it ran: 1) and leaves alpha 2 to the own kernel (0, nothing written) */
        const int ran = mx_cpu_gemm_dnnl(be[t], ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc);
        CHECK(ran == (alpha == 1.0f), "trial %d: oneDNN's matmul ran %d", trial, ran);
        if (!ran) mx_cpu_gemm(be[t], ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc);
        mx_cpu_gemm_bf16(be[t], ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
        be[t]->math = MX_F32;
        long bad = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < ldc; j++) {
                const size_t at = (size_t)i * ldc + j;
                if (j >= n) { /* past n: untouched */
                    bad += got[at] != want[at];
                    continue;
                }
                double mag = fabs(beta * want[at]);
                for (int p = 0; p < k; p++)
                    mag += fabs((double)(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                                (tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]));
                bad += alpha == 1.0f ? !(fabs((double)got[at] - want[at]) <= 1e-5 * mag + 1e-30) : got[at] != want[at];
            }
        CHECK(bad == 0,
              "oneDNN trial %d: %c%c m %d n %d k %d ldc %d alpha %g beta %g, %d thread(s): %ld of %d elements "
              "off the own kernel's",
              trial, ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, ldc, alpha, beta, t, bad, m * ldc);
        free(a), free(b), free(got), free(want);
    }
    mx_cpu_gemm_force_dnnl(0);
    CHECK(!mx_cpu_gemm_bf16_dnnl() && strcmp(be[1]->ops->amp_kernels(MX_BF16), "avx512_bf16") == 0,
          "forced off (MXBENCH_BF16=own), the own kernels: %s", be[1]->ops->amp_kernels(MX_BF16));
    mx_cpu_gemm_force_dnnl(-1);
    /* the switch's rule (by default oneDNN where its kernels are AMX tiles), and the record says
     * which ran */
    const int amx = strcmp(mx_cpu_dnnl_isa(), "avx512_core_amx") == 0, sw = mx_switch_value(MX_SWITCH_BF16);
    const int on = sw == MX_SW_BF16_DNNL || (sw == MX_SW_BF16_NATIVE && amx);
    CHECK(mx_cpu_gemm_bf16_dnnl() == on &&
              strcmp(be[1]->ops->amp_kernels(MX_BF16), on && amx ? "amx_bf16" : "avx512_bf16") == 0,
          "MXBENCH_BF16=%s: oneDNN's matmul %s (its ISA here: %s); amp_kernels %s",
          mx_switches[MX_SWITCH_BF16].values[sw], on ? "runs" : "does not run", mx_cpu_dnnl_isa(),
          be[1]->ops->amp_kernels(MX_BF16));
}

/* What mx_cpu_gemm runs, on AMP's operands (bf16 values); the own kernels whatever the CPU's
 * tiles (oneDNN's path: dnnl_path). */
static void dispatch(mx_backend *be)
{
    mx_cpu_gemm_force_dnnl(0);
    const int m = 37, n = 70, k = 300;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
    float *got = malloc(sizeof(float) * m * n), *want = malloc(sizeof(float) * m * n);
    for (int i = 0; i < m * k; i++) a[i] = bf(rand_val());
    for (int i = 0; i < k * n; i++) b[i] = bf(rand_val());
    if (mx_cpu_gemm_own()) {
        mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
        mx_cpu_gemm_f32(be, 0, 0, m, n, k, 1, a, k, b, n, 0, want, n);
        CHECK(differing(got, want, m, n, n) == 0, "f32 on an AVX-512 CPU runs the own kernel");
        mx_cpu_gemm_force_blas(1);
        CHECK(!mx_cpu_gemm_own(), "MXBENCH_GEMM=blas forces the BLAS");
        mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
        CHECK(differing(got, want, m, n, n) > 0, "forced to the BLAS, f32 sums in another order");
        mx_cpu_gemm_force_blas(0);
    }
    if (mx_cpu_bf16_native()) {
        be->math = MX_BF16;
        mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
        mx_cpu_gemm_bf16(be, 0, 0, m, n, k, 1, a, k, b, n, 0, want, n);
        CHECK(differing(got, want, m, n, n) == 0, "math bf16 on an avx512_bf16 CPU runs the bf16 kernel");
        CHECK(strcmp(be->ops->amp_kernels(MX_BF16), "avx512_bf16") == 0 &&
                  strcmp(be->ops->amp_kernels(MX_F16), "emulated") == 0,
              "the table names the bf16 kernels: %s", be->ops->amp_kernels(MX_BF16));
        mx_cpu_bf16_force_emulation(1);
        CHECK(!mx_cpu_bf16_native() && strcmp(be->ops->amp_kernels(MX_BF16), "emulated") == 0, "forced off: %s",
              be->ops->amp_kernels(MX_BF16));
        mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, got, n);
        be->math = MX_F32;
        mx_cpu_gemm(be, 0, 0, m, n, k, 1, a, k, b, n, 0, want, n);
        CHECK(differing(got, want, m, n, n) == 0,
              "forced off, math bf16 gives the f32 GEMM's (the emulation's) results");
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
    }
    mx_cpu_gemm_force_dnnl(-1);
    free(a), free(b), free(got), free(want);
}

int main(void)
{
    const int kinds[2] = {mx_cpu_gemm_own(), mx_cpu_bf16_native()};
    if (!kinds[0] && !kinds[1]) {
        printf("test_gemm: skipped: this CPU has no AVX-512 (or MXBENCH_GEMM=blas and MXBENCH_BF16=emulate): "
               "the BLAS and the emulation run\n");
        return CHECK_SKIP;
    }
    mx_backend *be[3] = {0};
    if (mx_backend_create(&be[1], "cpu", 0, 1) < 0 || mx_backend_create(&be[2], "cpu", 0, 2) < 0) {
        fprintf(stderr, "test_gemm: no CPU backend\n");
        return 1;
    }
    for (int bf16 = 0; bf16 < 2; bf16++) {
        if (!kinds[bf16]) {
            printf("test_gemm: %s kernel skipped: this CPU lacks %s, or %s\n", bf16 ? "bf16" : "f32",
                   bf16 ? "avx512_bf16" : "avx512f/bw/vl/dq", bf16 ? "MXBENCH_BF16=emulate" : "MXBENCH_GEMM=blas");
            continue;
        }
        for (int trial = 0; trial < 96; trial++) run_case(be, bf16, trial);
        /* 2 threads splitting C's rows (bf16, or f32 with B transposed): over two column blocks
         * of B and three of k, and a row count that leaves the last thread part of a panel */
        run_shape(be, bf16, 1, 0, 1, 1603, 1550, 300);
        run_shape(be, bf16, 2, 1, bf16 ? 0 : 1, 401, 390, 260);
    }
    dispatch(be[1]);
    if (mx_cpu_bf16_native() && mx_cpu_dnnl_available()) dnnl_path(be);
    else printf("test_gemm: oneDNN's bf16 matmul skipped: %s\n",
                mx_cpu_bf16_native() ? "this build has no oneDNN" : "no avx512_bf16 here (or MXBENCH_BF16=emulate)");
    CHECK(be[1]->ops->sync(be[1]) == 0 && be[2]->ops->sync(be[2]) == 0, "no backend error");
    mx_backend_destroy(be[1]);
    mx_backend_destroy(be[2]);
    return check_summary("test_gemm");
}
