/* Key placement on parameter servers (kvstore/ps.h), as MXNet's KVStoreDist: keys under
 * the big-array bound go whole to (key x 9973) mod S, so consecutive keys spread over the
 * servers; a key at or over the bound is split over every server into contiguous parts that
 * cover it exactly. */
#include "kvstore/ps.h"

#include <stdio.h>
#include <stdlib.h>

static int failures;
#define CHECK(cond, ...)                                                                                        \
    do {                                                                                                        \
        if (!(cond)) {                                                                                          \
            failures++;                                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                \
            fprintf(stderr, __VA_ARGS__);                                                                       \
            fputc('\n', stderr);                                                                                \
        }                                                                                                       \
    } while (0)

int main(void)
{
    mx_ps_part parts[64];
    /* small keys: whole, and spread (every server of 2, 3, 4 gets some of 8 keys) */
    for (int S = 1; S <= 4; S++) {
        int hits[4] = {0};
        for (int k = 0; k < 8; k++) {
            const int n = mx_ps_place(k, 1000, S, 100000, parts);
            CHECK(n == 1 && parts[0].lo == 0 && parts[0].hi == 1000, "key %d of %d servers: %d parts", k, S, n);
            CHECK(parts[0].server == (k * 9973) % S, "key %d on server %d, MXNet's rule gives %d", k, parts[0].server,
                  (k * 9973) % S);
            hits[parts[0].server]++;
        }
        for (int s = 0; s < S; s++) CHECK(hits[s] > 0, "server %d of %d holds no key of 8", s, S);
    }
    /* big keys: one part per server, contiguous, covering [0, count) */
    const size_t counts[] = {100000, 100001, 1234567, 3000000};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        for (int S = 2; S <= 7; S++) {
            const int n = mx_ps_place(3, counts[i], S, 100000, parts);
            CHECK(n == S, "%zu values over %d servers: %d parts", counts[i], S, n);
            size_t at = 0, lo = counts[i], hi = 0;
            for (int p = 0; p < n; p++) {
                CHECK(parts[p].server == p && parts[p].lo == at && parts[p].hi >= parts[p].lo,
                      "part %d of %zu over %d: server %d [%zu, %zu) after %zu", p, counts[i], S, parts[p].server,
                      parts[p].lo, parts[p].hi, at);
                const size_t len = parts[p].hi - parts[p].lo;
                lo = len < lo ? len : lo, hi = len > hi ? len : hi;
                at = parts[p].hi;
            }
            CHECK(at == counts[i], "parts of %zu over %d end at %zu", counts[i], S, at);
            CHECK(hi - lo <= 1, "parts of %zu over %d range %zu..%zu values: not even", counts[i], S, lo, hi);
        }
    /* the bound: MXNet's default, and its environment variable */
    unsetenv("MXNET_KVSTORE_BIGARRAY_BOUND");
    CHECK(mx_ps_bigarray_bound() == 1000000, "default bound %zu", mx_ps_bigarray_bound());
    setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "500", 1);
    CHECK(mx_ps_bigarray_bound() == 500, "bound from the environment %zu", mx_ps_bigarray_bound());
    setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "x", 1);
    CHECK(mx_ps_bigarray_bound() == 1000000, "a malformed bound is ignored: %zu", mx_ps_bigarray_bound());
    if (failures) return 1;
    printf("test_ps_place: ok\n");
    return 0;
}
