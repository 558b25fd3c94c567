/* Pipeline stage cuts (partition.h). */
#include "partition.h"
#include "workloads/workloads.h"
#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double mx_partition_bottleneck(const double *cost, int k, const int *first)
{
    double worst = 0;
    for (int s = 0; s < k; s++) {
        double c = 0;
        for (int i = first[s]; i < first[s + 1]; i++) c += cost[i];
        if (c > worst) worst = c;
    }
    return worst;
}

int mx_partition_balance(const double *cost, int n, int k, int *first)
{
    if (n < 1 || n > MX_MAX_LAYERS || k < 1 || k > n)
        return mx_error(MX_EINVAL, "%d stages of %d layers: accepted 1..%d stages (one layer at least each)", k, n, n);
    for (int i = 0; i < n; i++)
        if (!(cost[i] >= 0 && isfinite(cost[i])))
            return mx_error(MX_EINVAL, "layer %d costs %g: accepted a finite number, 0 or more", i, cost[i]);
    /* best[s * (n + 1) + i]: the least bottleneck of layers [i, n) cut into s stages
     * (INFINITY where impossible), from the end, so that the cut can then be read forwards
     * taking each stage's earliest end that keeps the optimum */
    double *best = malloc(sizeof(double) * (size_t)(k + 1) * (n + 1)), *tail = malloc(sizeof(double) * (n + 1));
    if (!best || !tail) {
        free(best), free(tail);
        return mx_error(MX_ENOMEM, "out of memory partitioning %d layers", n);
    }
    tail[n] = 0; /* tail[i]: cost of layers [i, n), summed from the end so each stage sum below is exact */
    for (int i = n - 1; i >= 0; i--) tail[i] = tail[i + 1] + cost[i];
#define BEST(s, i) best[(size_t)(s) * (n + 1) + (i)]
    for (int i = 0; i <= n; i++) BEST(0, i) = i == n ? 0 : INFINITY;
    for (int s = 1; s <= k; s++)
        for (int i = 0; i <= n; i++) {
            double b = INFINITY;
            for (int e = i + 1; e <= n - (s - 1); e++) {
                const double here = tail[i] - tail[e], rest = BEST(s - 1, e), m = here > rest ? here : rest;
                if (m < b) b = m;
            }
            BEST(s, i) = b;
        }
    first[0] = 0;
    for (int s = k, i = 0, st = 1; s > 1; s--, st++) {
        int e = i + 1;
        for (; e <= n - (s - 1); e++) {
            const double here = tail[i] - tail[e], rest = BEST(s - 1, e);
            if ((here > rest ? here : rest) == BEST(s, i)) break;
        }
        first[st] = i = e;
    }
    first[k] = n;
#undef BEST
    free(best);
    free(tail);
    return MX_OK;
}

/* "4,4,4": an even partition of n layers over k stages, for messages. */
static void even_example(int n, int k, char *buf, size_t size)
{
    size_t len = 0;
    for (int s = 0; s < k && len < size; s++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", s ? "," : "", n / k + (s < n % k));
}

int mx_partition_parse(const char *spec, int n, int k, int *first)
{
    const char *p = spec;
    int s = 0;
    first[0] = 0;
    while (*p) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > n || (*end && *end != ',')) {
            char eg[64] = "";
            even_example(n, k, eg, sizeof eg);
            return mx_error(MX_EINVAL, "--partition %s: '%.*s' is not a layer count; accepted: %d positive counts "
                            "of layers per stage adding up to the model's %d layers, e.g. %s", spec,
                            (int)strcspn(p, ","), p, k, n, eg);
        }
        if (s == k)
            return mx_error(MX_EINVAL, "--partition %s: more than the %d stages (one per device); accepted: %d counts",
                            spec, k, k);
        first[s + 1] = first[s] + (int)v;
        s++;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return mx_error(MX_EINVAL, "--partition %s: ends with a comma; accepted: %d counts", spec, k);
    }
    if (s != k)
        return mx_error(MX_EINVAL, "--partition %s: %d stage(s) for %d devices; accepted: %d counts", spec, s, k, k);
    if (first[k] != n)
        return mx_error(MX_EINVAL, "--partition %s: covers %d layers, the model has %d top-level layers (a residual "
                        "or transformer block is one); accepted: counts adding up to %d", spec, first[k], n, n);
    return MX_OK;
}
