/* Pipeline stage cuts (strategies/partition.h): the balanced cut's bottleneck is the least of
 * every contiguous cut (checked by brute force on random costs), one heavy layer gets a stage
 * of its own, ties go to earlier ends, and hand partitions that do not cover the layers or
 * name the wrong number of stages are refused. */
#include "strategies/partition.h"
#include "base/status.h"
#include "workloads/workloads.h"
#include "check.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The least bottleneck over every cut of n layers into k stages, by enumeration. */
static double brute(const double *cost, int n, int k, int *cut, int s, int at)
{
    if (s == k) {
        if (at != n) return INFINITY;
        cut[k] = n;
        return mx_partition_bottleneck(cost, k, cut);
    }
    double best = INFINITY;
    cut[s] = at;
    for (int e = at + 1; e <= n - (k - s - 1); e++) {
        cut[s + 1] = e;
        const double b = brute(cost, n, k, cut, s + 1, e);
        if (b < best) best = b;
    }
    return best;
}

static void parse_refused(const char *spec, int n, int k, const char *needle)
{
    int first[16];
    const int rc = mx_partition_parse(spec, n, k, first);
    CHECK(rc == MX_EINVAL && strstr(mx_last_error(), needle), "--partition %s (%d layers, %d stages): rc %d, '%s', "
          "expected a refusal saying '%s'", spec, n, k, rc, mx_last_error(), needle);
}

int main(void)
{
    int first[65];
    /* one heavy layer among light ones: a stage of its own */
    const double heavy[6] = {1, 1, 10, 1, 1, 1};
    CHECK(mx_partition_balance(heavy, 6, 3, first) == MX_OK, "%s", mx_last_error());
    int own = 0;
    for (int s = 0; s < 3; s++) own += first[s] == 2 && first[s + 1] == 3;
    CHECK(own == 1, "the heavy layer 2 shares a stage: cut %d,%d,%d,%d", first[0], first[1], first[2], first[3]);
    /* equal costs split evenly; ties end earlier stages first */
    const double even[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(mx_partition_balance(even, 8, 4, first) == MX_OK && first[1] == 2 && first[2] == 4 && first[3] == 6,
          "8 equal layers over 4 stages: cut %d,%d,%d", first[1], first[2], first[3]);
    CHECK(mx_partition_balance(even, 7, 2, first) == MX_OK && first[1] == 3,
          "7 equal layers over 2 stages: first stage ends at %d, expected 3 (the earlier end of a tie)", first[1]);
    /* optimal on random costs, k = 1..n, against enumeration */
    uint64_t rng = 42;
    for (int trial = 0; trial < 300; trial++) {
        const int n = 1 + (int)(9 * check_uniform(&rng)), k = 1 + (int)(n * check_uniform(&rng));
        double cost[9];
        for (int i = 0; i < n; i++) cost[i] = (double)(int)(1000 * check_uniform(&rng)) / 10;
        int cut[10];
        const double want = brute(cost, n, k, cut, 0, 0);
        CHECK(mx_partition_balance(cost, n, k, first) == MX_OK, "%s", mx_last_error());
        CHECK(first[0] == 0 && first[k] == n, "cut of %d layers does not span them", n);
        for (int s = 0; s < k; s++) CHECK(first[s + 1] > first[s], "trial %d: stage %d is empty", trial, s);
        const double got = mx_partition_bottleneck(cost, k, first);
        CHECK(got == want, "trial %d (%d layers, %d stages): bottleneck %g, the best cut has %g", trial, n, k, got,
              want);
    }
    /* real layers, profiled and by FLOPs: mlp's first dense layer (784 x 256) costs more
     * than the rest together, so two stages give it one of its own (with the free flatten
     * before it) */
    mx_backend *be = NULL;
    CHECK(mx_backend_create(&be, "cpu", -1, 1) == MX_OK, "%s", mx_last_error());
    mx_layer_spec specs[MX_MAX_LAYERS];
    const mx_shape in = {1, 28, 28};
    const int n = mx_workload_find("mlp")->build(specs, in, 10);
    for (int rounds = 0; be && rounds <= 3; rounds += 3) {
        double cost[MX_MAX_LAYERS];
        CHECK(mx_partition_costs(be, specs, n, in, 32, rounds, cost) == MX_OK, "%s", mx_last_error());
        int heavy = 0;
        for (int i = 1; i < n; i++) heavy = cost[i] > cost[heavy] ? i : heavy;
        /* the layers before it (the flatten) cost nothing: the first stage ends right after it */
        CHECK(mx_partition_balance(cost, n, 2, first) == MX_OK && first[1] == heavy + 1,
              "mlp (%d layers) over 2 stages by %s: the first stage ends at %d, expected %d (after the heavy layer "
              "%d; costs %g, %g, %g ...)", n, rounds ? "profile" : "FLOPs", first[1], heavy + 1, heavy, cost[0],
              cost[1], n > 2 ? cost[2] : 0);
        for (int i = 0; i < n; i++) CHECK(cost[i] >= 0, "layer %d costs %g", i, cost[i]);
    }
    mx_backend_destroy(be);
    /* refused: more stages than layers, bad costs */
    CHECK(mx_partition_balance(even, 3, 4, first) == MX_EINVAL, "4 stages of 3 layers accepted");
    const double bad[2] = {1, NAN};
    CHECK(mx_partition_balance(bad, 2, 1, first) == MX_EINVAL, "a NaN cost accepted");
    /* hand partitions */
    CHECK(mx_partition_parse("6,3,3", 12, 3, first) == MX_OK && first[1] == 6 && first[2] == 9 && first[3] == 12,
          "6,3,3: %s", mx_last_error());
    parse_refused("6,3,2", 12, 3, "covers 11 layers");
    parse_refused("6,3,4", 12, 3, "covers 13 layers");
    parse_refused("6,6", 12, 3, "2 stage(s) for 3 devices");
    parse_refused("4,4,3,1", 12, 3, "more than the 3 stages");
    parse_refused("6,x,6", 12, 3, "e.g. 4,4,4");
    parse_refused("6,0,6", 12, 3, "'0' is not a layer count");
    parse_refused("6,x,6", 12, 3, "'x' is not a layer count");
    parse_refused("6,6,", 12, 2, "ends with a comma");
    parse_refused("", 12, 2, "0 stage(s)");
    return check_summary("test_partition");
}
