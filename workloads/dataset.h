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
    float *images;   /* n * c * h * w: images' values in [0,1], or token ids (workloads/tokens.h) */
    int label_len;   /* labels per sample: 1 (an image's class) or a window's length (next tokens) */
    int32_t *labels; /* n * label_len */
} mx_dataset;

/* What an IDX file may declare. Beyond these a header is refused (MX_EFORMAT naming the file
 * and the value) before anything is allocated:
 *  - samples per file: 1..MX_IDX_MAX_SAMPLES (the engine counts samples in int);
 *  - image sides: 1..MX_IDX_MAX_SIDE each, and at most MX_IDX_MAX_IMAGE_PIXELS per image
 *    (4096x4096), so that c*h*w and batch arithmetic stay far inside int;
 *  - pixel bytes per file: at most MX_IDX_MAX_PIXEL_BYTES (4 GiB, 16 GiB once float);
 *  - labels: 0..MX_IDX_MAX_LABEL (255 is the conventional "unlabelled" marker, and as a class
 *    it would make nclasses 256, which no longer fits the uint8 that holds a label);
 *  - a declared size must fit the file: a raw file must be exactly header + data bytes
 *    (shorter: truncated; longer: trailing data, an error, since it means the header lies),
 *    a .gz file can expand at most MX_IDX_GZIP_MAX_RATIO times (deflate's limit), so a header
 *    promising more than that is refused up front; and a gzip stream that decompresses to
 *    more than its header says is refused after reading one byte past it, so a gzip bomb
 *    costs at most the declared size. Bytes after the end of the last gzip member are
 *    ignored, as zlib and gunzip do: they are outside the IDX data. */
#define MX_IDX_MAX_SAMPLES 2147483647u
#define MX_IDX_MAX_SIDE 65536u
#define MX_IDX_MAX_IMAGE_PIXELS (1u << 24)
#define MX_IDX_MAX_PIXEL_BYTES (1ull << 32)
#define MX_IDX_MAX_LABEL 254
#define MX_IDX_GZIP_MAX_RATIO 1032u

/* Reads an IDX image file (magic 0x00000803: unsigned bytes, 3 dimensions n, rows, cols) and
 * an IDX label file (magic 0x00000801: unsigned bytes, 1 dimension n) into ds, with c = 1 and
 * nclasses = max(10, largest label + 1). Paths ending in .gz are read through zlib; a path
 * without .gz is tried as given, then with .gz appended. Errors (MX_EIO missing/unreadable,
 * MX_EFORMAT truncated / wrong magic / wrong dimension count / bounds above exceeded / corrupt
 * gzip / image and label counts differ / label out of range) name the file and the value. On
 * error ds is left empty. */
int mx_idx_load(mx_dataset *ds, const char *images_path, const char *labels_path);

/* Loads the train and test splits of an MNIST-layout directory: files
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz], and checks them as one data set before
 * returning it, each error MX_EFORMAT naming the file(s) and the value:
 *  - each file as mx_idx_load (so each split has 1..MX_IDX_MAX_SAMPLES samples, as many
 *    labels as images);
 *  - both splits hold images of the same shape (c, h, w);
 *  - the class count is taken from the training labels, nclasses = max(10, largest training
 *    label + 1) (the MNIST family has ten classes, and a small training subset may lack the
 *    top ones); every test label must be below it. Both splits get this nclasses.
 * On error both splits are left empty. */
int mx_idx_load_dir(mx_dataset *train, mx_dataset *test, const char *dir);

/* The whole of mx_idx_load_dir (every file read, every check above), without keeping the
 * data: for validating user input before any work starts (a sweep, before its first child).
 * Returns MX_OK, or exactly the code and message mx_idx_load_dir would give for dir:
 * MX_EIO (a file missing or unreadable), MX_EFORMAT (bad content), MX_ENOMEM. Peak memory is
 * the u8 bytes of one split (never the float copy); it reads and decompresses all four files,
 * so it costs about a second for Fashion-MNIST. */
int mx_idx_dir_validate(const char *dir);

/* Uniform [0,1) images and uniform labels from seed, for throughput-only runs. */
int mx_dataset_synthetic(mx_dataset *ds, int n, int c, int h, int w, int nclasses, uint64_t seed);
/* n windows of `context` uniform tokens below vocab from seed, laid out as
 * workloads/tokens.h's windows (each label the next token of one stream), for throughput-only
 * language-model runs. vocab 1..65536. */
int mx_dataset_synthetic_tokens(mx_dataset *ds, int n, int context, int vocab, uint64_t seed);

void mx_dataset_free(mx_dataset *ds);

/* The default dataset directory: $MXBENCH_DATA if set, else the Debian package's. */
const char *mx_dataset_default_dir(void);
#define MX_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

#endif
