/* IDX pairs, splits and directories: a data set is checked whole (both splits, their image
 * shapes, label ranges and counts) before any of it is handed to training, since an
 * inconsistency found later reads memory out of bounds (a test label past the class count
 * indexes past a row of logits; a test image of another size is copied with the training
 * image's stride). File-level checks are in idx.c. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "workloads/dataset.h"
#include "workloads/idx_file.h"

#include "base/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The MNIST family has ten classes; a small split may lack the top ones, and the model's
 * output layer should not shrink because of it. */
#define IDX_MIN_CLASSES 10

typedef struct {
    mx_idx_images im;
    mx_idx_labels lb;
} idx_pair;

static void pair_free(idx_pair *p)
{
    mx_idx_images_free(&p->im);
    mx_idx_labels_free(&p->lb);
}

/* Images first, then labels, then one label per image. */
static int read_pair(idx_pair *p, const char *images_path, const char *labels_path)
{
    memset(p, 0, sizeof *p);
    MX_TRY(mx_idx_read_images(&p->im, images_path));
    int rc = mx_idx_read_labels(&p->lb, labels_path);
    if (rc == MX_OK && p->im.n != p->lb.n)
        rc = mx_error(MX_EFORMAT, "'%s' has %u images but '%s' has %u labels; each image needs "
                      "exactly one label", p->im.path, (unsigned)p->im.n, p->lb.path,
                      (unsigned)p->lb.n);
    if (rc < 0) pair_free(p);
    return rc;
}

/* nclasses = max(IDX_MIN_CLASSES, largest label + 1); labels are at most MX_IDX_MAX_LABEL,
 * so this is at most 255 and every label of these files is below it. */
static int classes_of(const mx_idx_labels *lb)
{
    int top = 0;
    for (uint32_t i = 0; i < lb->n; i++)
        if (lb->labels[i] > top) top = lb->labels[i];
    return top + 1 > IDX_MIN_CLASSES ? top + 1 : IDX_MIN_CLASSES;
}

/* Pixels become float in [0,1]; the labels move into ds and the pair is emptied either way. */
static int build_dataset(mx_dataset *ds, idx_pair *p, int nclasses)
{
    const size_t count = (size_t)p->im.n * p->im.rows * p->im.cols;
    float *images = malloc(count * sizeof *images);
    int32_t *labels = malloc(sizeof *labels * p->lb.n);
    if (!images || !labels) {
        free(images);
        free(labels);
        pair_free(p);
        return mx_error(MX_ENOMEM, "out of memory for %zu image values", count);
    }
    for (size_t i = 0; i < count; i++) images[i] = p->im.pixels[i] / 255.0f;
    for (size_t i = 0; i < p->lb.n; i++) labels[i] = p->lb.labels[i];
    *ds = (mx_dataset){.n = (int)p->im.n, .c = 1, .h = (int)p->im.rows, .w = (int)p->im.cols,
                       .nclasses = nclasses, .images = images, .label_len = 1, .labels = labels};
    pair_free(p);
    return MX_OK;
}

int mx_idx_load(mx_dataset *ds, const char *images_path, const char *labels_path)
{
    idx_pair p;
    memset(ds, 0, sizeof *ds);
    MX_TRY(read_pair(&p, images_path, labels_path));
    return build_dataset(ds, &p, classes_of(&p.lb));
}

static int read_split(idx_pair *p, const char *dir, const char *split)
{
    char *prefix = malloc(strlen(dir) + strlen(split) + 2);
    if (!prefix) return mx_error(MX_ENOMEM, "out of memory for a file name");
    sprintf(prefix, "%s/%s", dir, split);
    char *images = mx_idx_concat(prefix, "-images-idx3-ubyte");
    char *labels = mx_idx_concat(prefix, "-labels-idx1-ubyte");
    memset(p, 0, sizeof *p);
    int rc = images && labels ? read_pair(p, images, labels)
                              : mx_error(MX_ENOMEM, "out of memory for a file name");
    free(prefix);
    free(images);
    free(labels);
    return rc;
}

/* The checks between the splits. Every file is 1 channel, so the shape is rows x cols. */
static int check_splits(const idx_pair *train, const idx_pair *test, int nclasses)
{
    if (train->im.rows != test->im.rows || train->im.cols != test->im.cols)
        return mx_error(MX_EFORMAT, "'%s' holds images of 1x%ux%u but '%s' holds 1x%ux%u; both "
                        "splits must have the same image shape (channels x rows x columns)",
                        train->im.path, (unsigned)train->im.rows, (unsigned)train->im.cols,
                        test->im.path, (unsigned)test->im.rows, (unsigned)test->im.cols);
    for (uint32_t i = 0; i < test->lb.n; i++)
        if (test->lb.labels[i] >= nclasses)
            return mx_error(MX_EFORMAT, "'%s': label %u at index %u is outside the classes of the "
                            "training set; accepted 0..%d (the training labels in '%s' give %d "
                            "classes)", test->lb.path, (unsigned)test->lb.labels[i], (unsigned)i,
                            nclasses - 1, train->lb.path, nclasses);
    return MX_OK;
}

/* The one implementation behind loading and validating, so that the two cannot disagree.
 * Without datasets to fill (validation), the training pixels are dropped before the test
 * split is read: only the shape and the labels are still needed. */
static int load_dir(mx_dataset *train, mx_dataset *test, const char *dir)
{
    idx_pair tr, te;
    MX_TRY(read_split(&tr, dir, "train"));
    const int nclasses = classes_of(&tr.lb);
    if (!train) {
        free(tr.im.pixels);
        tr.im.pixels = NULL;
    }
    int rc = read_split(&te, dir, "t10k");
    if (rc < 0) {
        pair_free(&tr);
        return rc;
    }
    rc = check_splits(&tr, &te, nclasses);
    if (rc < 0 || !train) {
        pair_free(&tr);
        pair_free(&te);
        return rc;
    }
    rc = build_dataset(train, &tr, nclasses);
    if (rc < 0) {
        pair_free(&te);
        return rc;
    }
    rc = build_dataset(test, &te, nclasses);
    if (rc < 0) mx_dataset_free(train);
    return rc;
}

int mx_idx_load_dir(mx_dataset *train, mx_dataset *test, const char *dir)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    return load_dir(train, test, dir);
}

int mx_idx_dir_validate(const char *dir) { return load_dir(NULL, NULL, dir); }

const char *mx_dataset_default_dir(void)
{
    const char *env = getenv("MXBENCH_DATA");
    return env && *env ? env : MX_FASHION_MNIST_DIR;
}
