/* Data for a training run (see train_data.h). */
#include "train_data.h"
#include "base/status.h"
#include "workloads/tokens.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SYNTHETIC_TRAIN 4096 /* samples: enough distinct batches that caches do not flatter */
#define SYNTHETIC_TEST 1024

const char *mx_train_text_path(const mx_train_config *c)
{
    return c->data_dir ? c->data_dir : MX_TEXT_DEFAULT;
}

/* Standardises both splits with the training split's pixel mean and deviation, so every
 * dataset reaches the first layer centred and scaled alike (what users of these datasets
 * do by habit; it also makes the default learning rates transfer between datasets). */
static void standardise(mx_train_data *ds)
{
    const size_t n = (size_t)ds->train.n * ds->train.c * ds->train.h * ds->train.w;
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += ds->train.images[i], ss += (double)ds->train.images[i] * ds->train.images[i];
    const double mean = s / n, sd = sqrt(ss / n - mean * mean);
    const float inv = sd > 1e-12 ? (float)(1.0 / sd) : 1.0f;
    mx_dataset *both[2] = {&ds->train, &ds->test};
    for (int k = 0; k < 2; k++) {
        const size_t m = (size_t)both[k]->n * both[k]->c * both[k]->h * both[k]->w;
        for (size_t i = 0; i < m; i++) both[k]->images[i] = (both[k]->images[i] - (float)mean) * inv;
    }
}

static int load_images(const mx_train_config *c, int batch, mx_train_data *ds)
{
    if (strcmp(c->dataset, "synthetic") == 0) {
        /* at least one global batch: the synthetic set's size is arbitrary, so a larger batch
         * gets more samples rather than a partial step per epoch (IDX sets: check_length) */
        const int n = batch > SYNTHETIC_TRAIN ? batch : SYNTHETIC_TRAIN;
        MX_TRY(mx_dataset_synthetic(&ds->train, n, 1, 28, 28, 10, (uint64_t)c->seed));
        return mx_dataset_synthetic(&ds->test, SYNTHETIC_TEST, 1, 28, 28, 10, (uint64_t)c->seed + 1);
    }
    const char *dir = strcmp(c->dataset, "idx") == 0 && c->data_dir ? c->data_dir : mx_dataset_default_dir();
    int rc = mx_idx_load_dir(&ds->train, &ds->test, dir);
    if (rc < 0 && !c->data_dir && strcmp(dir, MX_FASHION_MNIST_DIR) == 0) {
        char why[768];
        snprintf(why, sizeof why, "%s", mx_last_error());
        return mx_error(rc, "%s\n  Fashion-MNIST comes from the Debian package dataset-fashion-mnist "
                        "(apt-get install dataset-fashion-mnist), or point --data at an IDX directory", why);
    }
    return rc;
}

static int load_tokens(const mx_train_config *c, const mx_lm_size *lm, int batch, mx_train_data *ds)
{
    if (strcmp(c->dataset, "synthetic") == 0) {
        /* fewer windows than images: a window is context samples' worth of tokens */
        const int n = batch > SYNTHETIC_TRAIN / 8 ? batch : SYNTHETIC_TRAIN / 8;
        MX_TRY(mx_dataset_synthetic_tokens(&ds->train, n, lm->context, lm->vocab, (uint64_t)c->seed));
        return mx_dataset_synthetic_tokens(&ds->test, SYNTHETIC_TEST / 8, lm->context, lm->vocab,
                                           (uint64_t)c->seed + 1);
    }
    const char *path = mx_train_text_path(c);
    int rc = mx_tokens_load(&ds->train, &ds->test, path, lm->context, MX_TOKENS_VAL_SHARE);
    if (rc < 0 && !c->data_dir) {
        char why[768];
        snprintf(why, sizeof why, "%s", mx_last_error());
        return mx_error(rc, "%s\n  the default text comes from the Debian package fortunes (apt-get install "
                        "fortunes), or point --data at a text or token file", why);
    }
    return rc;
}

int mx_train_data_load(const mx_train_config *c, int batch, mx_train_data *d)
{
    memset(d, 0, sizeof *d);
    const mx_workload *w = mx_workload_find(c->workload);
    const int rc = w && w->lm ? load_tokens(c, w->lm, batch, d) : load_images(c, batch, d);
    if (rc < 0) {
        mx_train_data_free(d);
        return rc;
    }
    if (!(w && w->lm)) standardise(d);
    return MX_OK;
}

void mx_train_data_free(mx_train_data *d)
{
    mx_dataset_free(&d->train);
    mx_dataset_free(&d->test);
}
