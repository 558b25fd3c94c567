/* GPT-2's architecture at the named sizes of workloads/workloads.c (see workloads/gpt.c). */
#ifndef MX_GPT_H
#define MX_GPT_H

#include "workloads.h"

extern const mx_lm_size mx_gpt_mini, mx_gpt_bench, mx_gpt_124m;

int mx_gpt_build_mini(mx_layer_spec *specs, mx_shape in, int vocab);
int mx_gpt_build_bench(mx_layer_spec *specs, mx_shape in, int vocab);
int mx_gpt_build_124m(mx_layer_spec *specs, mx_shape in, int vocab);

/* Parameters of a model of size s over a vocabulary of vocab tokens (padded as the model
 * holds it), counting the tied head once; and the training FLOPs per token as the scaling
 * literature counts them (Kaplan et al. 2020, PaLM's MFU): 6 per parameter (forward 2,
 * backward 4) plus the attention's 12 * layers * width * context (scores and the weighted
 * sum, forward and backward, over the full context as PaLM counts it). */
double mx_gpt_params(const mx_lm_size *s, int vocab);
double mx_gpt_train_flops_per_token(const mx_lm_size *s, int vocab);

#endif
