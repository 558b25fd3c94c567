/* IDX (MNIST-family) image and label files, raw or gzip, into an mx_dataset. Input is
 * untrusted: every header field is checked and nothing is allocated beyond the data that
 * is actually present, so a lying header gives an error rather than a huge allocation. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "workloads/dataset.h"

#include "engine/status.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_IMAGES_HEADER 16
#define IDX_LABELS_HEADER 8
/* Far beyond any MNIST-family image, and small enough that n*rows*cols cannot overflow. */
#define IDX_MAX_SIDE 65536u
/* 255 marks "unlabelled" in u8 label files by convention; as a class it would also make
 * nclasses 256, which no longer fits the uint8 that holds a class index. */
#define IDX_MAX_LABEL 254
/* Bytes asked of zlib per call; the buffer grows only as data actually arrives. */
#define IDX_CHUNK (1u << 20)

/* One open IDX file. gzopen reads uncompressed files transparently, so raw and gzip
 * share one code path; `compressed` only changes the wording of messages. */
typedef struct {
    gzFile gz;
    char *path;
    int compressed;
} idx_file;

typedef struct {
    uint32_t n, rows, cols;
    uint8_t *pixels;
} idx_images;

typedef struct {
    uint32_t n;
    uint8_t *labels;
} idx_labels;

static int ends_with_gz(const char *path)
{
    size_t len = strlen(path);
    return len >= 3 && strcmp(path + len - 3, ".gz") == 0;
}

static char *concat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* Missing is not an error here (*found = 0), since the caller may go on to path.gz;
 * a path that exists but cannot be an IDX file, or cannot be looked at, is. */
static int check_exists(const char *path, int *found)
{
    struct stat st;
    *found = 0;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return MX_OK;
        return mx_error(MX_EIO, "'%s': cannot open: %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return mx_error(MX_EIO, "'%s': is a directory, expected an IDX file", path);
    *found = 1;
    return MX_OK;
}

/* Picks the file to read: a .gz path as given; otherwise the path, then path.gz, so that
 * callers need not know how the dataset was shipped. Sets *out to a malloc'd path. */
static int resolve_path(const char *path, char **out)
{
    int found;
    *out = NULL;
    MX_TRY(check_exists(path, &found));
    if (found || ends_with_gz(path)) {
        if (!found) return mx_error(MX_EIO, "'%s': not found", path);
        *out = concat(path, "");
        return *out ? MX_OK : mx_error(MX_ENOMEM, "out of memory for a file name");
    }
    char *gz = concat(path, ".gz");
    if (!gz) return mx_error(MX_ENOMEM, "out of memory for a file name");
    int rc = check_exists(gz, &found);
    if (rc == MX_OK && !found)
        rc = mx_error(MX_EIO, "'%s': not found (also tried '%s')", path, gz);
    if (rc < 0) {
        free(gz);
        return rc;
    }
    *out = gz;
    return MX_OK;
}

static int idx_open(idx_file *f, const char *path)
{
    f->gz = NULL;
    f->compressed = 0;
    MX_TRY(resolve_path(path, &f->path));
    errno = 0;
    f->gz = gzopen(f->path, "rb");
    if (!f->gz) {
        int rc = errno ? mx_error(MX_EIO, "'%s': cannot open: %s", f->path, strerror(errno))
                       : mx_error(MX_ENOMEM, "'%s': out of memory opening it", f->path);
        free(f->path);
        f->path = NULL;
        return rc;
    }
    return MX_OK;
}

static void idx_close(idx_file *f)
{
    if (f->gz) gzclose(f->gz);
    free(f->path);
    f->gz = NULL;
    f->path = NULL;
}

/* zlib prefixes its messages with the path, which ours already names once. */
static const char *zlib_reason(const idx_file *f, const char *msg)
{
    size_t len = strlen(f->path);
    if (strncmp(msg, f->path, len) == 0 && strncmp(msg + len, ": ", 2) == 0) return msg + len + 2;
    return msg;
}

/* Reads up to len bytes; *got says how many arrived. A short read is not an error here
 * (the caller knows what was expected), but a zlib or I/O failure is reported at once. */
static int idx_read(idx_file *f, uint8_t *buf, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        size_t want = len - *got;
        int r = gzread(f->gz, buf + *got, (unsigned)(want < IDX_CHUNK ? want : IDX_CHUNK));
        /* gzdirect is only meaningful once zlib has looked at the first bytes. */
        f->compressed = !gzdirect(f->gz);
        if (r > 0) *got += (size_t)r;
        int errnum;
        const char *msg = gzerror(f->gz, &errnum);
        if (errnum == Z_ERRNO)
            return mx_error(MX_EIO, "'%s': read error: %s", f->path, strerror(errno));
        if (errnum == Z_DATA_ERROR)
            return mx_error(MX_EFORMAT, "'%s': gzip data is corrupt: %s", f->path,
                            zlib_reason(f, msg));
        if (errnum == Z_MEM_ERROR)
            return mx_error(MX_ENOMEM, "'%s': out of memory while decompressing", f->path);
        /* Z_BUF_ERROR means the compressed stream stopped mid-way: a truncated .gz file,
         * which the caller reports as truncated like a short raw file. */
        if (r <= 0 || errnum == Z_BUF_ERROR) break;
    }
    return MX_OK;
}

/* Wording for "where the data stopped", which differs between raw and gzip files. */
static const char *end_phrase(const idx_file *f)
{
    int errnum;
    gzerror(f->gz, &errnum);
    if (errnum == Z_BUF_ERROR)
        return "the gzip file is cut short (its compressed data stops mid-stream) after "
               "decompressing";
    return f->compressed ? "the decompressed data ends after" : "the file ends after";
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int check_magic(const idx_file *f, uint32_t magic, uint32_t expected, const char *what)
{
    if (magic == expected) return MX_OK;
    uint32_t other = expected == IDX_IMAGES_MAGIC ? IDX_LABELS_MAGIC : IDX_IMAGES_MAGIC;
    const char *hint = magic == other ? "; this is the other kind of IDX file: are the image "
                                        "and label paths swapped?"
                                      : "";
    return mx_error(MX_EFORMAT,
                    "'%s': wrong magic 0x%08x, expected 0x%08x (IDX %s, unsigned bytes)%s",
                    f->path, (unsigned)magic, (unsigned)expected, what, hint);
}

/* Reads the header, magic first: a wrong kind of file is named as such even when it is
 * shorter than the header this kind would need. */
static int read_header(idx_file *f, uint8_t *hdr, size_t len, uint32_t expected,
                       const char *what)
{
    size_t got, more;
    MX_TRY(idx_read(f, hdr, 4, &got));
    if (got == 0 && !f->compressed)
        return mx_error(MX_EFORMAT, "'%s': the file is empty, expected IDX %s", f->path, what);
    if (got == 4) {
        MX_TRY(check_magic(f, be32(hdr), expected, what));
        MX_TRY(idx_read(f, hdr + 4, len - 4, &more));
        got += more;
    }
    if (got < len)
        return mx_error(MX_EFORMAT,
                        "'%s': truncated: %s %zu bytes, inside the %zu-byte IDX %s header",
                        f->path, end_phrase(f), got, len, what);
    return MX_OK;
}

/* Reads exactly total payload bytes, growing the buffer only as data arrives, so that a
 * header claiming gigabytes on a short file costs nothing. `claim` describes the header's
 * promise for the message ("60000 images of 28x28"). */
static int read_payload(idx_file *f, size_t header, uint64_t total, const char *claim,
                        uint8_t **out)
{
    uint8_t *buf = NULL;
    size_t have = 0, cap = 0;
    *out = NULL;
    while (have < total) {
        if (have == cap) {
            size_t next = cap ? cap * 2 : IDX_CHUNK;
            if (next > total) next = (size_t)total;
            uint8_t *grown = realloc(buf, next);
            if (!grown) {
                free(buf);
                return mx_error(MX_ENOMEM, "'%s': out of memory reading %s", f->path, claim);
            }
            buf = grown;
            cap = next;
        }
        size_t got;
        int rc = idx_read(f, buf + have, cap - have, &got);
        if (rc < 0) {
            free(buf);
            return rc;
        }
        have += got;
        if (have < cap) break;
    }
    if (have < total) {
        free(buf);
        return mx_error(MX_EFORMAT,
                        "'%s': truncated: header says %s (%llu bytes) but %s %llu bytes",
                        f->path, claim, (unsigned long long)(header + total), end_phrase(f),
                        (unsigned long long)(header + have));
    }
    /* One more byte: data past the promised size means the header is wrong, and for gzip
     * this read also makes zlib check the stream's CRC, which catches silent corruption. */
    uint8_t extra;
    size_t got;
    int rc = idx_read(f, &extra, 1, &got);
    if (rc == MX_OK && got)
        rc = mx_error(MX_EFORMAT,
                      "'%s': header says %s (%llu bytes) but the %s has more data after that",
                      f->path, claim, (unsigned long long)(header + total),
                      f->compressed ? "decompressed stream" : "file");
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    return MX_OK;
}

static int load_images(idx_images *im, const char *path)
{
    idx_file f;
    uint8_t hdr[IDX_IMAGES_HEADER];
    char claim[96];
    memset(im, 0, sizeof *im);
    MX_TRY(idx_open(&f, path));
    int rc = read_header(&f, hdr, sizeof hdr, IDX_IMAGES_MAGIC, "images");
    if (rc == MX_OK) {
        im->n = be32(hdr + 4);
        im->rows = be32(hdr + 8);
        im->cols = be32(hdr + 12);
        snprintf(claim, sizeof claim, "%u images of %ux%u", (unsigned)im->n,
                 (unsigned)im->rows, (unsigned)im->cols);
        if (im->n == 0 || im->n > INT_MAX)
            rc = mx_error(MX_EFORMAT, "'%s': header says %u images; accepted 1..%d", f.path,
                          (unsigned)im->n, INT_MAX);
        else if (im->rows == 0 || im->cols == 0 || im->rows > IDX_MAX_SIDE ||
                 im->cols > IDX_MAX_SIDE)
            rc = mx_error(MX_EFORMAT, "'%s': header says images of %ux%u; each side must be 1..%u",
                          f.path, (unsigned)im->rows, (unsigned)im->cols, IDX_MAX_SIDE);
    }
    if (rc == MX_OK) {
        uint64_t total = (uint64_t)im->n * im->rows * im->cols;
        if (total > SIZE_MAX / sizeof(float))
            rc = mx_error(MX_EFORMAT, "'%s': header says %s, too large for this machine", f.path,
                          claim);
        else
            rc = read_payload(&f, sizeof hdr, total, claim, &im->pixels);
    }
    idx_close(&f);
    return rc;
}

static int load_labels(idx_labels *lb, const char *path)
{
    idx_file f;
    uint8_t hdr[IDX_LABELS_HEADER];
    char claim[48];
    memset(lb, 0, sizeof *lb);
    MX_TRY(idx_open(&f, path));
    int rc = read_header(&f, hdr, sizeof hdr, IDX_LABELS_MAGIC, "labels");
    if (rc == MX_OK) {
        lb->n = be32(hdr + 4);
        snprintf(claim, sizeof claim, "%u labels", (unsigned)lb->n);
        rc = read_payload(&f, sizeof hdr, lb->n, claim, &lb->labels);
    }
    for (uint32_t i = 0; rc == MX_OK && i < lb->n; i++)
        if (lb->labels[i] > IDX_MAX_LABEL)
            rc = mx_error(MX_EFORMAT, "'%s': label %u at index %u is out of range; accepted 0..%d",
                          f.path, (unsigned)lb->labels[i], (unsigned)i, IDX_MAX_LABEL);
    if (rc < 0) {
        free(lb->labels);
        lb->labels = NULL;
    }
    idx_close(&f);
    return rc;
}

/* Pixels become float in [0,1]; the u8 buffers are freed either way. */
static int build_dataset(mx_dataset *ds, idx_images *im, idx_labels *lb)
{
    size_t count = (size_t)im->n * im->rows * im->cols;
    float *images = malloc(count * sizeof *images);
    if (!images) {
        free(im->pixels);
        free(lb->labels);
        return mx_error(MX_ENOMEM, "out of memory for %zu image values", count);
    }
    for (size_t i = 0; i < count; i++) images[i] = im->pixels[i] / 255.0f;
    free(im->pixels);

    int maxlabel = 0;
    for (uint32_t i = 0; i < lb->n; i++)
        if (lb->labels[i] > maxlabel) maxlabel = lb->labels[i];
    ds->n = (int)im->n;
    ds->c = 1;
    ds->h = (int)im->rows;
    ds->w = (int)im->cols;
    /* A split may lack the top classes (a small test file); the MNIST family has ten. */
    ds->nclasses = maxlabel + 1 > 10 ? maxlabel + 1 : 10;
    ds->images = images;
    ds->labels = lb->labels;
    return MX_OK;
}

int mx_idx_load(mx_dataset *ds, const char *images_path, const char *labels_path)
{
    idx_images im;
    idx_labels lb;
    memset(ds, 0, sizeof *ds);
    MX_TRY(load_images(&im, images_path));
    int rc = load_labels(&lb, labels_path);
    if (rc < 0) {
        free(im.pixels);
        return rc;
    }
    if (im.n != lb.n) {
        free(im.pixels);
        free(lb.labels);
        return mx_error(MX_EFORMAT, "'%s' has %u images but '%s' has %u labels", images_path,
                        (unsigned)im.n, labels_path, (unsigned)lb.n);
    }
    return build_dataset(ds, &im, &lb);
}

static int load_split(mx_dataset *ds, const char *dir, const char *split)
{
    char *prefix = malloc(strlen(dir) + strlen(split) + 2);
    if (!prefix) return mx_error(MX_ENOMEM, "out of memory for a file name");
    sprintf(prefix, "%s/%s", dir, split);
    char *images = concat(prefix, "-images-idx3-ubyte");
    char *labels = concat(prefix, "-labels-idx1-ubyte");
    int rc = images && labels ? mx_idx_load(ds, images, labels)
                              : mx_error(MX_ENOMEM, "out of memory for a file name");
    free(prefix);
    free(images);
    free(labels);
    return rc;
}

int mx_idx_load_dir(mx_dataset *train, mx_dataset *test, const char *dir)
{
    memset(test, 0, sizeof *test);
    MX_TRY(load_split(train, dir, "train"));
    int rc = load_split(test, dir, "t10k");
    if (rc < 0) mx_dataset_free(train);
    return rc;
}

int mx_idx_dir_check(const char *dir)
{
    static const char *const names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char path[4096];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, R_OK) == 0) continue;
        snprintf(path, sizeof path, "%s/%s.gz", dir, names[i]);
        if (access(path, R_OK) == 0) continue;
        return mx_error(MX_EIO, "'%s/%s' not found (nor with .gz): an IDX dataset directory holds "
                        "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]", dir, names[i]);
    }
    return MX_OK;
}

const char *mx_dataset_default_dir(void)
{
    const char *env = getenv("MXBENCH_DATA");
    return env && *env ? env : MX_FASHION_MNIST_DIR;
}
