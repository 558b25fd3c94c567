/* Cutting a model's top-level layers (a residual or transformer block is one) into k
 * contiguous pipeline stages for the model strategy: balanced by cost (the measured time of
 * each layer, or its FLOPs where it cannot be profiled), or as the user wrote it
 * (--partition 6,3,3). Stage s holds layers [first[s], first[s+1]); first has k+1
 * entries, first[0] = 0 and first[k] = n. */
#ifndef MX_PARTITION_H
#define MX_PARTITION_H

#include "engine/backend/backend.h"
#include "engine/layers/layer.h"

/* The contiguous cut into k non-empty stages whose largest stage cost (the pipeline's
 * bottleneck) is least; among such cuts, the one whose earlier stages end first (under 1F1B
 * stage r holds k-r micro-batches in flight, so early stages had better be light). MX_EINVAL
 * when k is not 1..n (n at most MX_MAX_LAYERS) or a cost is negative or not finite. */
int mx_partition_balance(const double *cost, int n, int k, int *first);

/* A hand partition "6,3,3": k positive counts of layers per stage that add up to n.
 * MX_EINVAL naming what is wrong and what is accepted. */
int mx_partition_parse(const char *spec, int n, int k, int *first);

/* The cost of each of the nspecs top-level layers of a model for inputs of shape in (cost
 * has nspecs entries): with rounds > 0, the median seconds of `rounds` forward + backward
 * passes of each layer alone at batch `batch` on be (after one untimed pass); with rounds 0,
 * its forward FLOPs per sample (where no profile can run). */
int mx_partition_costs(mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in, int batch, int rounds,
                       double *cost);

/* The largest stage cost of a cut (for messages and the record). */
double mx_partition_bottleneck(const double *cost, int k, const int *first);

#endif
