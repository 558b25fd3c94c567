/* The strategies this build has, and the batch split they share. */
#include "strategy.h"
#include "base/status.h"
#include "results/axes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One line per strategy: its table, defined in its own file. */
extern const mx_strategy_ops mx_strategy_data;
extern const mx_strategy_ops mx_strategy_model;
extern const mx_strategy_ops mx_strategy_layer;
static const mx_strategy_ops *const strategies[] = {&mx_strategy_data, &mx_strategy_model, &mx_strategy_layer};
#define NSTRATEGIES (sizeof strategies / sizeof *strategies)

const mx_strategy_ops *mx_strategy_find(const char *name)
{
    for (size_t i = 0; i < NSTRATEGIES; i++)
        if (strcmp(strategies[i]->name, name) == 0) return strategies[i];
    return NULL;
}

int mx_strategy_check(const char *name, const mx_strategy_config *cfg)
{
    const mx_strategy_ops *ops = mx_strategy_find(name);
    if (!ops) return mx_error(MX_EINVAL, "strategy '%s' is not in this build (available: %s)", name, mx_strategy_names());
    return ops->check ? ops->check(cfg) : MX_OK;
}

const char *mx_strategy_names(void)
{
    static char names[64];
    if (!names[0])
        for (size_t i = 0, at = 0; i < NSTRATEGIES; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? "|" : "", strategies[i]->name);
    return names;
}
/* The strategies the CLI knows are the sweep axis's choices (results/axes.c): one list. */
const char *mx_strategy_planned(void) { return mx_axis_find("strategy")->choices; }

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
