/* The one line `mxbench train` prints when a run ends. */
#ifndef MX_TRAIN_SUMMARY_H
#define MX_TRAIN_SUMMARY_H

#include "trainer.h"

/* What ran and what it measured: throughput (median with its interval, and the aggregate),
 * GFLOP/s from flops (the forward FLOPs per sample; <= 0: not printed), accuracy or, for a
 * language model, tokens/s, the validation loss and perplexity and the model FLOPs
 * utilisation; the host's noise where it competed. */
void mx_train_print_summary(const mx_train_config *c, const mx_run_record *r, double flops);

#endif
