/* One IDX (MNIST-family) image or label file, raw or gzip, into bytes. Input is untrusted:
 * every header field is checked against the bounds of dataset.h and the declared size
 * against the file's size before anything is allocated, and the buffer then grows only as
 * data actually arrives, so a lying header or a gzip bomb gives an error rather than a huge
 * allocation. Pairs, splits and directories are checked in idx_dir.c. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "workloads/dataset.h"
#include "workloads/idx_file.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_IMAGES_HEADER 16
#define IDX_LABELS_HEADER 8
/* Bytes asked of zlib per call; the buffer grows only as data actually arrives. */
#define IDX_CHUNK (1u << 20)

/* One open IDX file. gzopen reads uncompressed files transparently, so raw and gzip
 * share one code path; `compressed` only changes the wording of messages. */
typedef struct {
    gzFile gz;
    char *path;
    int compressed;
    int sized;     /* a regular file, whose size bounds what the header may claim */
    uint64_t size; /* on disk, to check the header's claim against before allocating */
} idx_file;

static int ends_with_gz(const char *path)
{
    size_t len = strlen(path);
    return len >= 3 && strcmp(path + len - 3, ".gz") == 0;
}

char *mx_idx_concat(const char *a, const char *b)
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
        *out = mx_idx_concat(path, "");
        return *out ? MX_OK : mx_error(MX_ENOMEM, "out of memory for a file name");
    }
    char *gz = mx_idx_concat(path, ".gz");
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
    f->sized = 0;
    f->size = 0;
    MX_TRY(resolve_path(path, &f->path));
    /* O_NONBLOCK: a FIFO opens at once (without it, open blocks until a writer comes, for
     * ever); what was opened is then checked, not the name, so nothing can be swapped in
     * between. A data file must be a regular file: its size bounds what a header may claim,
     * and a FIFO or a device would block or feed endless bytes. */
    int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int rc = fd < 0 || fstat(fd, &st) != 0 ? mx_error(MX_EIO, "'%s': cannot open: %s", f->path, strerror(errno))
             : !S_ISREG(st.st_mode)
                 ? mx_error(MX_EIO, "'%s': is %s, not a regular file; accepted: an IDX file (raw or gzip)", f->path,
                            mx_file_kind(st.st_mode))
                 : MX_OK;
    /* reads block as usual from here on (a regular file never waits anyway) */
    if (rc == MX_OK && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        rc = mx_error(MX_EIO, "'%s': cannot open: %s", f->path, strerror(errno));
    if (rc == MX_OK) {
        f->sized = 1;
        f->size = (uint64_t)st.st_size;
        errno = 0;
        f->gz = gzdopen(fd, "rb"); /* owns fd from here: gzclose closes it */
        if (!f->gz)
            rc = errno ? mx_error(MX_EIO, "'%s': cannot open: %s", f->path, strerror(errno))
                       : mx_error(MX_ENOMEM, "'%s': out of memory opening it", f->path);
        else
            fd = -1;
    }
    if (fd >= 0) close(fd);
    if (rc != MX_OK) {
        free(f->path);
        f->path = NULL;
    }
    return rc;
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

/* The magic is 0, 0, an element type, a dimension count: say which part is wrong, since
 * "wrong magic" alone leaves a user guessing whether the file is IDX at all. */
static const char *idx_type_name(unsigned type)
{
    switch (type) {
    case 0x08: return "unsigned bytes";
    case 0x09: return "signed bytes";
    case 0x0B: return "16-bit integers";
    case 0x0C: return "32-bit integers";
    case 0x0D: return "32-bit floats";
    case 0x0E: return "64-bit floats";
    default: return NULL;
    }
}

static int check_magic(const idx_file *f, uint32_t magic, uint32_t expected, const char *what)
{
    if (magic == expected) return MX_OK;
    const uint32_t other = expected == IDX_IMAGES_MAGIC ? IDX_LABELS_MAGIC : IDX_IMAGES_MAGIC;
    const unsigned type = magic >> 8 & 0xff, dims = magic & 0xff, want_dims = expected & 0xff;
    const char *type_name = magic >> 16 == 0 ? idx_type_name(type) : NULL;
    char hint[160] = "; not an IDX file";
    if (magic == other)
        snprintf(hint, sizeof hint, "; this is the other kind of IDX file: are the image and "
                                    "label paths swapped?");
    else if (type_name && type != (expected >> 8 & 0xff))
        snprintf(hint, sizeof hint, "; its elements are %s (type 0x%02x), only unsigned bytes "
                 "(0x08) are read", type_name, type);
    else if (type_name)
        snprintf(hint, sizeof hint, "; it declares %u dimensions, IDX %s have %u", dims, what,
                 want_dims);
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
    /* All the data arrived but the 8-byte gzip trailer (CRC and length) did not: zlib says
     * so only as a short read, and without the CRC nothing vouches for the data. */
    int errnum = Z_OK;
    if (rc == MX_OK && f->compressed) gzerror(f->gz, &errnum);
    if (errnum == Z_BUF_ERROR)
        rc = mx_error(MX_EFORMAT,
                      "'%s': truncated: %s (%llu bytes) all decompressed, but the gzip file is cut "
                      "short before its trailer (CRC and length), so the data cannot be verified",
                      f->path, claim, (unsigned long long)(header + total));
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    return MX_OK;
}

/* The header's promise against the file, before any allocation. A raw file must be exactly
 * header + data (shorter: truncated; longer: the header lies); a gzip file cannot expand
 * beyond deflate's ratio. Files that are not regular (a pipe) have no size to compare:
 * the buffer then grows as data arrives, up to the caps already checked. */
static int check_declared(const idx_file *f, uint64_t header, uint64_t total, const char *claim)
{
    const unsigned long long want = header + total, size = f->size;
    if (!f->sized) return MX_OK;
    if (!f->compressed && size < want)
        return mx_error(MX_EFORMAT, "'%s': truncated: header says %s (%llu bytes) but the file "
                        "ends after %llu bytes", f->path, claim, want, size);
    if (!f->compressed && size > want)
        return mx_error(MX_EFORMAT, "'%s': header says %s (%llu bytes) but the file has %llu "
                        "bytes: more data after that", f->path, claim, want, size);
    if (f->compressed && want / MX_IDX_GZIP_MAX_RATIO > size)
        return mx_error(MX_EFORMAT, "'%s': header says %s (%llu bytes), more than this %llu-byte "
                        "gzip file can hold (deflate expands at most %ux): the header is wrong "
                        "or the file is cut short", f->path, claim, want, size,
                        MX_IDX_GZIP_MAX_RATIO);
    return MX_OK;
}

/* Field by field, so that the message names the value that is out of bounds; products are
 * formed only once each factor is bounded, so none can overflow. */
static int check_image_dims(const idx_file *f, uint32_t n, uint32_t rows, uint32_t cols)
{
    if (n == 0 || n > MX_IDX_MAX_SAMPLES)
        return mx_error(MX_EFORMAT, "'%s': header says %u images; accepted 1..%u", f->path,
                        (unsigned)n, MX_IDX_MAX_SAMPLES);
    if (rows == 0 || cols == 0 || rows > MX_IDX_MAX_SIDE || cols > MX_IDX_MAX_SIDE)
        return mx_error(MX_EFORMAT, "'%s': header says images of %ux%u; each side must be 1..%u",
                        f->path, (unsigned)rows, (unsigned)cols, MX_IDX_MAX_SIDE);
    if ((uint64_t)rows * cols > MX_IDX_MAX_IMAGE_PIXELS)
        return mx_error(MX_EFORMAT, "'%s': header says images of %ux%u (%llu pixels); accepted at "
                        "most %u pixels per image", f->path, (unsigned)rows, (unsigned)cols,
                        (unsigned long long)rows * cols, MX_IDX_MAX_IMAGE_PIXELS);
    return MX_OK;
}

static int check_image_total(const idx_file *f, uint64_t total, const char *claim)
{
    if (total > MX_IDX_MAX_PIXEL_BYTES || total > SIZE_MAX / sizeof(float))
        return mx_error(MX_EFORMAT, "'%s': header says %s (%llu pixel bytes); accepted at most "
                        "%llu", f->path, claim, (unsigned long long)total,
                        (unsigned long long)(MX_IDX_MAX_PIXEL_BYTES < SIZE_MAX / sizeof(float)
                                                 ? MX_IDX_MAX_PIXEL_BYTES
                                                 : SIZE_MAX / sizeof(float)));
    return MX_OK;
}

int mx_idx_read_images(mx_idx_images *im, const char *path)
{
    idx_file f;
    uint8_t hdr[IDX_IMAGES_HEADER];
    char claim[96];
    memset(im, 0, sizeof *im);
    MX_TRY(idx_open(&f, path));
    int rc = read_header(&f, hdr, sizeof hdr, IDX_IMAGES_MAGIC, "images");
    uint64_t total = 0;
    if (rc == MX_OK) {
        im->n = be32(hdr + 4);
        im->rows = be32(hdr + 8);
        im->cols = be32(hdr + 12);
        snprintf(claim, sizeof claim, "%u images of %ux%u", (unsigned)im->n,
                 (unsigned)im->rows, (unsigned)im->cols);
        rc = check_image_dims(&f, im->n, im->rows, im->cols);
    }
    if (rc == MX_OK) {
        total = (uint64_t)im->n * im->rows * im->cols;
        rc = check_declared(&f, sizeof hdr, total, claim);
    }
    if (rc == MX_OK) rc = check_image_total(&f, total, claim);
    if (rc == MX_OK) rc = read_payload(&f, sizeof hdr, total, claim, &im->pixels);
    if (rc == MX_OK) {
        im->path = f.path; /* handed over: the messages of later checks name it */
        f.path = NULL;
    } else {
        memset(im, 0, sizeof *im);
    }
    idx_close(&f);
    return rc;
}

int mx_idx_read_labels(mx_idx_labels *lb, const char *path)
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
        if (lb->n == 0 || lb->n > MX_IDX_MAX_SAMPLES)
            rc = mx_error(MX_EFORMAT, "'%s': header says %u labels; accepted 1..%u", f.path,
                          (unsigned)lb->n, MX_IDX_MAX_SAMPLES);
    }
    if (rc == MX_OK) rc = check_declared(&f, sizeof hdr, lb->n, claim);
    if (rc == MX_OK) rc = read_payload(&f, sizeof hdr, lb->n, claim, &lb->labels);
    for (uint32_t i = 0; rc == MX_OK && i < lb->n; i++)
        if (lb->labels[i] > MX_IDX_MAX_LABEL)
            rc = mx_error(MX_EFORMAT, "'%s': label %u at index %u is out of range; accepted 0..%d",
                          f.path, (unsigned)lb->labels[i], (unsigned)i, MX_IDX_MAX_LABEL);
    if (rc == MX_OK) {
        lb->path = f.path;
        f.path = NULL;
    } else {
        free(lb->labels);
        memset(lb, 0, sizeof *lb);
    }
    idx_close(&f);
    return rc;
}

void mx_idx_images_free(mx_idx_images *im)
{
    free(im->pixels);
    free(im->path);
    memset(im, 0, sizeof *im);
}

void mx_idx_labels_free(mx_idx_labels *lb)
{
    free(lb->labels);
    free(lb->path);
    memset(lb, 0, sizeof *lb);
}
