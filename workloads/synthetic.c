/* Synthetic datasets for throughput-only runs: uniform images and labels from a seed,
 * identical on every machine, plus mx_dataset_free for every dataset kind. */
#include "workloads/dataset.h"

#include "base/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Same bound as IDX labels: 255 stays free as the "unlabelled" marker. */
#define SYNTH_MAX_CLASSES 255

/* splitmix64: a tiny generator of its own, so that the data depends on the seed alone and
 * not on whichever RNG the engine or the C library happens to use. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 24 random bits fill a float's mantissa exactly, so the result is < 1 without rounding up. */
static float uniform01(uint64_t *state)
{
    return (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
}

/* Multiply-shift instead of modulo: no division, and the bias (< 2^-32) is immaterial. */
static int32_t uniform_label(uint64_t *state, int nclasses)
{
    return (int32_t)(((splitmix64(state) >> 32) * (uint64_t)nclasses) >> 32);
}

static int check_args(int n, int c, int h, int w, int nclasses)
{
    if (n < 1 || c < 1 || h < 1 || w < 1)
        return mx_error(MX_EINVAL,
                        "synthetic dataset: n=%d c=%d h=%d w=%d; each must be at least 1", n, c,
                        h, w);
    if (nclasses < 1 || nclasses > SYNTH_MAX_CLASSES)
        return mx_error(MX_EINVAL, "synthetic dataset: nclasses=%d; accepted 1..%d", nclasses,
                        SYNTH_MAX_CLASSES);
    uint64_t per = (uint64_t)c * h * w;
    if (per > SIZE_MAX / sizeof(float) / (uint64_t)n)
        return mx_error(MX_EINVAL, "synthetic dataset: %d samples of %dx%dx%d is too large", n,
                        c, h, w);
    return MX_OK;
}

int mx_dataset_synthetic(mx_dataset *ds, int n, int c, int h, int w, int nclasses, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    MX_TRY(check_args(n, c, h, w, nclasses));
    size_t count = (size_t)n * c * h * w;
    float *images = malloc(count * sizeof *images);
    int32_t *labels = malloc(sizeof *labels * n);
    if (!images || !labels) {
        free(images);
        free(labels);
        return mx_error(MX_ENOMEM, "synthetic dataset: out of memory for %d samples of %dx%dx%d",
                        n, c, h, w);
    }
    uint64_t state = seed;
    for (size_t i = 0; i < count; i++) images[i] = uniform01(&state);
    for (int i = 0; i < n; i++) labels[i] = uniform_label(&state, nclasses);
    *ds = (mx_dataset){.n = n, .c = c, .h = h, .w = w, .nclasses = nclasses,
                       .images = images, .label_len = 1, .labels = labels};
    return MX_OK;
}

int mx_dataset_synthetic_tokens(mx_dataset *ds, int n, int context, int vocab, uint64_t seed)
{
    memset(ds, 0, sizeof *ds);
    if (n < 1 || context < 1 || vocab < 1 || vocab > 65536)
        return mx_error(MX_EINVAL, "synthetic tokens: n=%d context=%d vocab=%d; accepted n, context >= 1 and vocab "
                        "1..65536", n, context, vocab);
    if ((uint64_t)n * context > SIZE_MAX / sizeof(float) / 2)
        return mx_error(MX_EINVAL, "synthetic tokens: %d windows of %d is too large", n, context);
    const size_t count = (size_t)n * context;
    float *ids = malloc(count * sizeof *ids);
    int32_t *labels = malloc(count * sizeof *labels);
    if (!ids || !labels) {
        free(ids);
        free(labels);
        return mx_error(MX_ENOMEM, "synthetic tokens: out of memory for %d windows of %d", n, context);
    }
    uint64_t state = seed;
    int32_t next = uniform_label(&state, vocab);
    for (size_t i = 0; i < count; i++) {
        ids[i] = (float)next;
        next = uniform_label(&state, vocab);
        labels[i] = next;
    }
    *ds = (mx_dataset){.n = n, .c = 1, .h = 1, .w = context, .nclasses = vocab, .images = ids,
                       .label_len = context, .labels = labels};
    return MX_OK;
}

void mx_dataset_free(mx_dataset *ds)
{
    if (!ds) return;
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
