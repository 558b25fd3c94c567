/* Workloads: a model (as a list of layer specs) and the dataset it trains on by default. */
#ifndef MX_WORKLOADS_H
#define MX_WORKLOADS_H

#include "engine/layers/layer.h"

#define MX_MAX_LAYERS 64

typedef struct {
    const char *name;
    const char *summary;
    /* Writes the layer list for inputs of shape in and nclasses outputs; returns the count. */
    int (*build)(mx_layer_spec *specs, mx_shape in, int nclasses);
} mx_workload;

/* NULL if unknown; mx_workload_names() lists the known ones as "a|b|c". */
const mx_workload *mx_workload_find(const char *name);
const char *mx_workload_names(void);
int mx_workload_count(void);
const mx_workload *mx_workload_at(int i);

#endif
