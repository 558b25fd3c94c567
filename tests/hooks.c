/* Known slowdowns on demand, linked only into mxbench_hooked (tests/CMakeLists.txt: mxbench's
 * main with these hooks), so that the gates can be shown to catch a regression while mxbench
 * itself reads no such variable. Installed before main() through the product's seams:
 * - MXBENCH_TEST_SLOWDOWN=F (0 < F < 0.9): every training step takes 1/(1-F) times as long,
 *   spinning on the step's own core after its work, so that the throughput is (1-F) times
 *   what it was: F = 0.1 is a 10% slowdown, whatever the step costs (`mxbench ab`'s test and
 *   benchmark: tests/test_ab.sh, scripts/bench-ab-gate.sh; harness/trainer_hook.h);
 * - MXBENCH_TEST_SLOW_GEMM=F (0 < F <= 1): every GEMM handed to the BLAS computes the first F
 *   of its output rows a second time, into scratch: F more work in the kernel, the same
 *   results (the instruction-count gate's self-check, scripts/ci-regress.sh;
 *   engine/cpu/kernels.h's mx_cpu_set_gemm_hook);
 * - MXBENCH_TEST_SLOW_RANK=R (R >= 0): only MPI rank R (OMPI_COMM_WORLD_RANK, or PMI_RANK) is
 *   slowed, by MXBENCH_TEST_SLOWDOWN's share or 0.5 without it: one straggling worker of a
 *   dist_* job, which `mxbench report`'s answer must name (tests/test_answer.sh).
 * A value outside its range is refused on stderr and ignored. */
#include "engine/cpu/kernels.h"
#include "harness/trainer_hook.h"
#include "base/timer.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

static double step_slowdown; /* F of MXBENCH_TEST_SLOWDOWN */
static float gemm_share;     /* F of MXBENCH_TEST_SLOW_GEMM */

static void slow_step(double t0)
{
    /* a busy wait, as a slower kernel would keep the core busy: a sleep would free it */
    const double until = t0 + (mx_now() - t0) / (1 - step_slowdown);
    while (mx_now() < until) {}
}

static void gemm_again(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                       int ldb)
{
    const int rows = (int)((float)m * gemm_share + 0.5f);
    float *scratch = rows > 0 ? malloc(sizeof(float) * (size_t)rows * (size_t)n) : NULL;
    if (!scratch) return;
    /* the first rows of op(A) start at a whether or not A is transposed (row-major) */
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, rows, n, k, alpha, a,
                lda, b, ldb, 0.0f, scratch, n);
    free(scratch);
}

/* The fraction in the variable `name`: 0 when unset, or when not above 0 and below top (at most
 * top where top_included), which is said on stderr. */
static double fraction(const char *name, double top, int top_included)
{
    const char *e = getenv(name);
    if (!e || !*e) return 0;
    char *end;
    const double f = strtod(e, &end);
    if (*end || !(f > 0 && (f < top || (top_included && f == top)))) {
        fprintf(stderr, "mxbench: %s '%s' ignored: expected a fraction above 0 and %s %g\n", name, e,
                top_included ? "at most" : "below", top);
        return 0;
    }
    return f;
}

/* MXBENCH_TEST_SLOW_RANK: -1 when unset; a value that is no rank is refused on stderr (-1). */
static int slow_rank(void)
{
    const char *e = getenv("MXBENCH_TEST_SLOW_RANK");
    if (!e || !*e) return -1;
    char *end;
    const long r = strtol(e, &end, 10);
    if (*end || r < 0 || r > 1 << 20) {
        fprintf(stderr, "mxbench: MXBENCH_TEST_SLOW_RANK '%s' ignored: expected an MPI rank, 0 or more\n", e);
        return -1;
    }
    return (int)r;
}

/* This process's rank in an MPI job's world (Open MPI's variable, or MPICH's), -1 outside one. */
static int own_rank(void)
{
    const char *e = getenv("OMPI_COMM_WORLD_RANK");
    if (!e) e = getenv("PMI_RANK");
    return e && *e ? atoi(e) : -1;
}

__attribute__((constructor)) static void install_hooks(void)
{
    step_slowdown = fraction("MXBENCH_TEST_SLOWDOWN", 0.9, 0);
    const int rank = slow_rank();
    if (rank >= 0) step_slowdown = rank == own_rank() ? (step_slowdown > 0 ? step_slowdown : 0.5) : 0;
    if (step_slowdown > 0) mx_trainer_set_step_hook(slow_step);
    gemm_share = (float)fraction("MXBENCH_TEST_SLOW_GEMM", 1, 1);
    if (gemm_share > 0) mx_cpu_set_gemm_hook(gemm_again);
}
