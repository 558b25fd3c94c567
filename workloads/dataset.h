/* Datasets: images as float32 NCHW scaled to [0,1] plus uint8 labels, loaded from IDX files
 * (MNIST family, raw or gzip) or generated synthetically for throughput-only runs. */
#ifndef MX_DATASET_H
#define MX_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int n;           /* number of samples */
    int c, h, w;     /* per-sample shape */
    int nclasses;    /* labels lie in [0, nclasses) */
    float *images;   /* n * c * h * w, values in [0,1] */
    uint8_t *labels; /* n */
} mx_dataset;

/* Reads an IDX image file (magic 0x00000803, u8 pixels) and an IDX label file (magic
 * 0x00000801) into ds. Paths ending in .gz are read through zlib; a path without .gz is
 * tried as given, then with .gz appended. Errors (MX_EIO missing/unreadable, MX_EFORMAT
 * truncated / wrong magic / corrupt gzip / count mismatch / label out of range) name the
 * file and what was wrong. On error ds is left empty. */
int mx_idx_load(mx_dataset *ds, const char *images_path, const char *labels_path);

/* Loads the train and test splits of an MNIST-layout directory: files
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]. */
int mx_idx_load_dir(mx_dataset *train, mx_dataset *test, const char *dir);

/* Checks, without reading them, that dir holds the four files mx_idx_load_dir needs (raw or
 * .gz); MX_EIO naming the first one missing. For up-front validation of user input. */
int mx_idx_dir_check(const char *dir);

/* Uniform [0,1) images and uniform labels from seed, for throughput-only runs. */
int mx_dataset_synthetic(mx_dataset *ds, int n, int c, int h, int w, int nclasses, uint64_t seed);

void mx_dataset_free(mx_dataset *ds);

/* The default dataset directory: $MXBENCH_DATA if set, else the Debian package's. */
const char *mx_dataset_default_dir(void);
#define MX_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

#endif
