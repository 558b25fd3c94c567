/* Workloads: a model (as a list of layer specs) and the dataset it trains on by default. */
#ifndef MX_WORKLOADS_H
#define MX_WORKLOADS_H

#include "engine/layers/layer.h"

#define MX_MAX_LAYERS 64

/* A language model's size (GPT-2's architecture, workloads/gpt.c): what its input shape, its
 * data and its FLOPs per token follow from. */
typedef struct {
    int layers, width, heads;
    int context;     /* tokens per sample (T): the input is {1, 1, T}, the labels T per sample */
    int vocab;       /* of synthetic data; real data brings its own (workloads/tokens.h) */
} mx_lm_size;

typedef struct {
    const char *name;
    const char *summary;
    /* Writes the layer list for inputs of shape in and nclasses outputs (a language model:
     * the data's vocabulary); returns the count. */
    int (*build)(mx_layer_spec *specs, mx_shape in, int nclasses);
    const mx_lm_size *lm; /* a language model's size; NULL for image models */
} mx_workload;

/* The vocabulary a language model's embedding and head hold for data of `vocab` tokens:
 * rounded up to a multiple of 64 (GPT-2's 50257 becomes 50304, as in llm.c and nanoGPT), so
 * that the head's GEMM runs on whole vector tiles; the extra rows are never a label. */
int mx_lm_padded_vocab(int vocab);

/* NULL if unknown; mx_workload_names() lists the known ones as "a|b|c". */
const mx_workload *mx_workload_find(const char *name);
const char *mx_workload_names(void);
int mx_workload_count(void);
const mx_workload *mx_workload_at(int i);

#endif
