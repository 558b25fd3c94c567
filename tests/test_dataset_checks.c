/* Whole data sets: mx_idx_load_dir and mx_idx_dir_validate check both splits together
 * (image shapes, test labels against the training classes, counts, empty splits) and agree
 * on every code and message; and the loss kernel's own bound on labels, the last line of
 * defence should a bad label reach the engine anyway. */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "base/status.h"
#include "tests/check.h"
#include "tests/idx_fixtures.h"
#include "workloads/dataset.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- whole directories: the checks between the splits, through load_dir and validate */

static const char *in_ds(const char *name)
{
    static char path[4][600];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/ds/%s", tmpdir, name);
    return p;
}

static void put_split(const char *split, uint32_t n, uint32_t rows, uint32_t cols, uint32_t nlabels,
                      int modulus, int bad_index, uint8_t bad_label)
{
    char name[64];
    blob im = images_blob(0x803, n, rows, cols), lb = labels_blob(0x801, nlabels, modulus);
    if (bad_index >= 0) lb.data[8 + bad_index] = bad_label;
    snprintf(name, sizeof name, "ds/%s-images-idx3-ubyte", split);
    write_raw(name, im.data, im.len);
    snprintf(name, sizeof name, "ds/%s-labels-idx1-ubyte", split);
    write_raw(name, lb.data, lb.len);
    free(im.data);
    free(lb.data);
}

/* load_dir and validate must agree: same code, same message, and nothing kept on error. */
static void expect_dir(int code, const char *what, const char *word1, const char *word2,
                       const char *word3)
{
    mx_dataset train, test;
    char dir[600], msg[1024];
    snprintf(dir, sizeof dir, "%s/ds", tmpdir);
    int rc = mx_idx_load_dir(&train, &test, dir);
    snprintf(msg, sizeof msg, "%s", rc ? mx_last_error() : "");
    printf("  %-22s -> %s: %s\n", what, mx_status_name(rc), msg);
    CHECK(rc == code, "%s: got %d (%s), expected %d", what, rc, msg, code);
    const char *words[3] = {word1, word2, word3};
    for (int i = 0; i < 3; i++)
        if (words[i]) CHECK(contains(msg, words[i]), "%s: message lacks '%s': %s", what, words[i], msg);
    if (rc == MX_OK)
        CHECK(train.nclasses == test.nclasses && train.h == test.h && train.w == test.w,
              "%s: splits disagree: %d/%d classes, %dx%d/%dx%d", what, train.nclasses,
              test.nclasses, train.h, train.w, test.h, test.w);
    else
        CHECK(is_empty(&train) && is_empty(&test), "%s: splits not left empty", what);
    mx_dataset_free(&train);
    mx_dataset_free(&test);
    int vrc = mx_idx_dir_validate(dir);
    CHECK(vrc == rc && (rc == MX_OK || strcmp(mx_last_error(), msg) == 0),
          "%s: validate gave %d (%s), load_dir %d (%s)", what, vrc, mx_last_error(), rc, msg);
}

static void test_dir_checks(void)
{
    printf("data set checks:\n");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/ds", tmpdir);
    CHECK(mkdir(dir, 0700) == 0, "cannot create %s", dir);
    const char *trl = in_ds("train-labels-idx1-ubyte"), *tel = in_ds("t10k-labels-idx1-ubyte");
    const char *tri = in_ds("train-images-idx3-ubyte"), *tei = in_ds("t10k-images-idx3-ubyte");
    put_split("train", 6, 4, 3, 6, 3, -1, 0);
    put_split("t10k", 5, 4, 3, 5, 3, -1, 0);
    expect_dir(MX_OK, "consistent splits", NULL, NULL, NULL);
    put_split("t10k", 5, 4, 3, 5, 3, 2, 200);
    expect_dir(MX_EFORMAT, "test label 200", tel, "label 200 at index 2", "accepted 0..9");
    put_split("t10k", 5, 4, 3, 5, 3, 4, 10);
    expect_dir(MX_EFORMAT, "test label 10 of 10", tel, "label 10 at index 4", "accepted 0..9");
    put_split("t10k", 5, 4, 3, 5, 3, 4, 9);
    expect_dir(MX_OK, "test label 9 of 10", NULL, NULL, NULL);
    put_split("train", 6, 4, 3, 6, 3, 1, 11); /* 12 classes now */
    put_split("t10k", 5, 4, 3, 5, 3, 0, 11);
    expect_dir(MX_OK, "test label 11 of 12", NULL, NULL, NULL);
    put_split("t10k", 5, 4, 3, 5, 3, 0, 12);
    expect_dir(MX_EFORMAT, "test label 12 of 12", tel, "label 12 at index 0", "accepted 0..11");
    put_split("train", 6, 4, 3, 6, 3, -1, 0);
    put_split("t10k", 5, 2, 3, 5, 3, -1, 0);
    expect_dir(MX_EFORMAT, "test images smaller", tri, tei, "1x4x3 but");
    put_split("t10k", 5, 8, 3, 5, 3, -1, 0);
    expect_dir(MX_EFORMAT, "test images larger", tei, "1x8x3", "same image shape");
    put_split("t10k", 5, 3, 4, 5, 3, -1, 0);
    expect_dir(MX_EFORMAT, "test images transposed", "1x4x3", "1x3x4", NULL);
    put_split("t10k", 5, 4, 3, 4, 3, -1, 0);
    expect_dir(MX_EFORMAT, "test count mismatch", tei, tel, "has 5 images but");
    put_split("t10k", 5, 4, 3, 5, 3, -1, 0);
    put_split("train", 6, 4, 3, 7, 3, -1, 0);
    expect_dir(MX_EFORMAT, "train count mismatch", tri, trl, "has 7 labels");
    put_split("train", 6, 4, 3, 6, 3, -1, 0);
    write_header("ds/t10k-images-idx3-ubyte", 0x803, 3, 0, 4, 3, 0);
    expect_dir(MX_EFORMAT, "test split empty", tei, "0 images", "1..2147483647");
    put_split("t10k", 5, 4, 3, 5, 3, -1, 0);
    write_header("ds/train-labels-idx1-ubyte", 0x801, 1, 0, 0, 0, 0);
    expect_dir(MX_EFORMAT, "train labels empty", trl, "0 labels", NULL);
    unlink(trl);
    expect_dir(MX_EIO, "train labels missing", trl, "not found", NULL);
    put_split("train", 6, 4, 3, 6, 3, 5, 255);
    expect_dir(MX_EFORMAT, "train label 255", trl, "label 255 at index 5", "0..254");
    const char *names[4] = {tri, trl, tei, tel};
    for (int i = 0; i < 4; i++) unlink(names[i]);
    CHECK(rmdir(dir) == 0, "cannot remove %s", dir);
}

/* The loss kernel is the last line of defence: a label past the class count (or negative)
 * gives a NaN loss and no gradient, never a read outside the row of logits (exact-size
 * buffers, for ASan). */
static void test_loss_label_bound(void)
{
    mx_backend *be = NULL;
    CHECK(mx_backend_create(&be, "cpu", 0, 1) == MX_OK, "cpu backend: %s", mx_last_error());
    if (!be) return;
    float *logits = malloc(6 * sizeof *logits), *dl = malloc(6 * sizeof *dl);
    int32_t labels[2] = {1, 200};
    static const int32_t bad_labels[] = {200, 3, -1, INT32_MIN}; /* 3: exactly the class count */
    const float row[6] = {0.f, 2.f, 1.f, 3.f, 0.f, 1.f};
    memcpy(logits, row, sizeof row);
    for (size_t k = 0; k < sizeof bad_labels / sizeof *bad_labels; k++) {
        const int bad = bad_labels[k];
        int correct = -1;
        labels[1] = bad;
        double loss = be->ops->softmax_xent(be, 2, 3, dl, &correct, logits, labels, 1.0f);
        CHECK(isnan(loss) && correct == 1, "label %d of 3 classes: loss %g, %d correct", bad, loss,
              correct);
        CHECK(dl[3] == 0 && dl[4] == 0 && dl[5] == 0 && dl[1] < 0, "label %d: gradient %g %g %g",
              bad, dl[3], dl[4], dl[5]);
        loss = be->ops->softmax_eval(be, 2, 3, &correct, logits, labels);
        CHECK(isnan(loss) && correct == 1, "eval, label %d: loss %g, %d correct", bad, loss, correct);
    }
    free(logits);
    free(dl);
    mx_backend_destroy(be);
}
int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_dir_checks();
    remove_tmpdir();
    test_loss_label_bound();
    return check_summary("test_dataset_checks");
}
