/* Minimal test helpers: CHECK records a failure with file and line and goes on; a test's
 * main ends with `return check_summary("name");`, which prints "N passed, N failed" and
 * returns non-zero on any failure. A test that cannot run here returns CHECK_SKIP (77). */
#ifndef MX_CHECK_H
#define MX_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_SKIP 77

static int check_passed_, check_failed_;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            check_passed_++;                                                 \
        } else {                                                             \
            check_failed_++;                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

/* The steps a long equivalence run takes: n, or at most 3 where scripts/sanitize.sh runs the
 * test (MXBENCH_TEST_SANITIZED set). Under the sanitizers a run looks for memory errors and
 * undefined behaviour, which every step's code shows in its first steps; the numerics after 20
 * steps are the optimised build's to check, at a fifth of the time (test_layer_parallel took
 * 227 s under ASan with every 20-step run, 50 s without). */
static inline int check_sanitized(void)
{
    const char *s = getenv("MXBENCH_TEST_SANITIZED");
    return s && *s && strcmp(s, "0") != 0;
}
static inline int check_long_steps(int n) { return check_sanitized() && n > 3 ? 3 : n; }

/* Uniform in [0,1) from *state (xorshift64*): deterministic test data, no library RNG. */
static inline double check_uniform(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (double)((*state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* x[i] uniform in [-1, 1) from *state */
static inline void check_fill(float *x, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(2 * check_uniform(state) - 1);
}

/* Largest |a - b| over the largest |b| (at least 1); NaN counts as infinite. */
static inline double check_rel_diff(const float *a, const float *b, size_t n)
{
    double e = 0, m = 1;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - b[i], ad = d < 0 ? -d : d, ab = b[i] < 0 ? -(double)b[i] : b[i];
        if (ad > e || d != d) e = d != d ? 1.0 / 0.0 : ad;
        if (ab > m) m = ab;
    }
    return e / m;
}

#endif
