/* The data a training run reads: both splits of an image data set (IDX files or synthetic
 * images) or of a language model's tokens (a token file or synthetic tokens), chosen by the
 * workload and the configuration. */
#ifndef MX_TRAIN_DATA_H
#define MX_TRAIN_DATA_H

#include "trainer.h"
#include "workloads/dataset.h"

typedef struct {
    mx_dataset train, test; /* a language model's test split is the file's held-out tokens */
} mx_train_data;

/* The text a language model trains on when no --data is given: English from the Debian
 * package fortunes (several hundred KB of quotations), read as bytes. */
#define MX_TEXT_DEFAULT "/usr/share/games/fortunes/cookie"

/* The token file a language-model run reads: --data, else MX_TEXT_DEFAULT. */
const char *mx_train_text_path(const mx_train_config *c);

/* Loads both splits for c, a global batch of `batch` samples. Image data is standardised
 * with the training split's mean and deviation; tokens are left as ids. On error both are
 * empty, and the message names the file and says how to get the default data. */
int mx_train_data_load(const mx_train_config *c, int batch, mx_train_data *d);
void mx_train_data_free(mx_train_data *d);

#endif
