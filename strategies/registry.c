/* The strategies this build has, and the batch split they share. */
#include "strategy.h"
#include "base/status.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>

/* One line per strategy: its table, defined in its own file, at its line of MX_STRATEGY_LIST
 * (base/config.h); NULL: not in this build. */
extern const mx_strategy_ops mx_strategy_data;
extern const mx_strategy_ops mx_strategy_model;
extern const mx_strategy_ops mx_strategy_layer;
static const mx_strategy_ops *const strategies[MX_NSTRATEGIES] = {
    [MX_STRATEGY_DATA] = &mx_strategy_data, [MX_STRATEGY_MODEL] = &mx_strategy_model,
    [MX_STRATEGY_LAYER] = &mx_strategy_layer};

const mx_strategy_ops *mx_strategy_find(mx_strategy_kind kind)
{
    return kind >= 0 && kind < MX_NSTRATEGIES ? strategies[kind] : NULL;
}

int mx_strategy_check(mx_strategy_kind kind, const mx_strategy_config *cfg)
{
    const mx_strategy_ops *ops = mx_strategy_find(kind);
    if (!ops)
        return mx_error(MX_EINVAL, "strategy '%s' is not in this build (available: %s)", mx_strategy_name(kind),
                        mx_strategy_names());
    return ops->check ? ops->check(cfg) : MX_OK;
}

static char built_list[64];
static pthread_once_t built_once = PTHREAD_ONCE_INIT;
static void list_built(void)
{
    size_t at = 0;
    for (int k = 0; k < MX_NSTRATEGIES; k++)
        if (strategies[k])
            at += (size_t)snprintf(built_list + at, sizeof built_list - at, "%s%s", at ? "|" : "",
                                   mx_strategy_name((mx_strategy_kind)k));
}

const char *mx_strategy_names(void)
{
    pthread_once(&built_once, list_built);
    return built_list;
}

int mx_split_batch(int n, int k, const double *weights, int *counts)
{
    double total = 0;
    for (int i = 0; i < k; i++) {
        double w = weights ? weights[i] : 1.0;
        if (!(w > 0)) return mx_error(MX_EINVAL, "work-load weight %g for device %d: weights must be > 0", w, i);
        total += w;
    }
    int given = 0;
    for (int i = 0; i < k; i++) {
        counts[i] = i == k - 1 ? n - given : (int)lround((weights ? weights[i] : 1.0) * n / total);
        if (counts[i] < 1)
            return mx_error(MX_EINVAL, "a batch of %d split over %d devices leaves device %d with %d samples; use a "
                            "larger batch or fewer devices", n, k, i, counts[i]);
        given += counts[i];
    }
    return MX_OK;
}
