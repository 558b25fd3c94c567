/* Shared by the dataset tests: a private temporary directory and small IDX files written
 * byte by byte (raw or gzip), so that every field of every header is under the test's
 * control. Functions are static inline so that a test using only some of them still builds
 * with -Wall -Werror. */
#ifndef MX_TESTS_IDX_FIXTURES_H
#define MX_TESTS_IDX_FIXTURES_H

#include "tests/check.h"
#include "workloads/dataset.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>


static char tmpdir[] = "/tmp/mxbench-test-dataset-XXXXXX";

static inline const char *in_tmp(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    return p;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A pattern that covers 0 and 255 and differs between neighbours, so that a wrong
 * offset or scale shows up. */
static inline uint8_t pixel_at(size_t i) { return i == 1 ? 255 : (uint8_t)(i * 37 + 11); }

typedef struct {
    uint8_t *data;
    size_t len;
} blob;

static inline blob images_blob(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols)
{
    size_t npix = (size_t)n * rows * cols;
    blob b = {malloc(16 + npix), 16 + npix};
    put_be32(b.data, magic);
    put_be32(b.data + 4, n);
    put_be32(b.data + 8, rows);
    put_be32(b.data + 12, cols);
    for (size_t i = 0; i < npix; i++) b.data[16 + i] = pixel_at(i);
    return b;
}

/* Labels i % modulus, so the largest label (and so nclasses) is under the test's control. */
static inline blob labels_blob(uint32_t magic, uint32_t n, int modulus)
{
    blob b = {malloc(8 + n), 8 + n};
    put_be32(b.data, magic);
    put_be32(b.data + 4, n);
    for (uint32_t i = 0; i < n; i++) b.data[8 + i] = (uint8_t)(i % (uint32_t)modulus);
    return b;
}

static inline void write_raw(const char *name, const void *data, size_t len)
{
    FILE *f = fopen(in_tmp(name), "wb");
    CHECK(f != NULL, "cannot create %s", in_tmp(name));
    if (!f) return;
    CHECK(fwrite(data, 1, len, f) == len, "short write to %s", name);
    fclose(f);
}

static inline void write_gz(const char *name, const void *data, size_t len)
{
    gzFile gz = gzopen(in_tmp(name), "wb9");
    CHECK(gz != NULL, "cannot create %s", in_tmp(name));
    if (!gz) return;
    CHECK(gzwrite(gz, data, (unsigned)len) == (int)len, "short gzwrite to %s", name);
    gzclose(gz);
}

static inline blob read_whole(const char *name)
{
    blob b = {NULL, 0};
    FILE *f = fopen(in_tmp(name), "rb");
    if (!f) return b;
    fseek(f, 0, SEEK_END);
    b.len = (size_t)ftell(f);
    rewind(f);
    b.data = malloc(b.len);
    if (fread(b.data, 1, b.len, f) != b.len) b.len = 0;
    fclose(f);
    return b;
}

static inline int contains(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

static inline int is_empty(const mx_dataset *ds)
{
    return ds->n == 0 && ds->images == NULL && ds->labels == NULL;
}

static inline void check_small(const mx_dataset *ds, const char *what)
{
    CHECK(ds->n == 5 && ds->c == 1 && ds->h == 4 && ds->w == 3, "%s: shape %dx%dx%dx%d", what,
          ds->n, ds->c, ds->h, ds->w);
    CHECK(ds->nclasses == 10, "%s: nclasses %d, expected 10 (labels only reach 2)", what,
          ds->nclasses);
    int bad = 0;
    for (size_t i = 0; i < 5 * 4 * 3; i++) bad += ds->images[i] != pixel_at(i) / 255.0f;
    CHECK(bad == 0, "%s: %d pixel values differ from pixel/255", what, bad);
    CHECK(ds->images[0] == 11 / 255.0f && ds->images[1] == 1.0f, "%s: first pixels %g %g", what,
          ds->images[0], ds->images[1]);
    for (int i = 0; i < 5; i++) CHECK(ds->labels[i] == i % 3, "%s: label %d", what, i);
}

/* A header alone (or a header and a few bytes): the bounds must be refused from the header,
 * whatever the file holds after it. */
static inline void write_header(const char *name, uint32_t magic, int ndims, uint32_t d0,
                                uint32_t d1, uint32_t d2, size_t payload)
{
    size_t len = 4 + 4 * (size_t)ndims + payload;
    uint8_t *b = calloc(1, len);
    uint32_t dims[3] = {d0, d1, d2};
    put_be32(b, magic);
    for (int i = 0; i < ndims; i++) put_be32(b + 4 + 4 * i, dims[i]);
    write_raw(name, b, len);
    free(b);
}

static inline void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(in_tmp(e->d_name));
    closedir(d);
    CHECK(rmdir(tmpdir) == 0, "cannot remove %s", tmpdir);
}

#endif
