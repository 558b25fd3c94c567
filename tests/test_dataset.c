/* Dataset module, file by file: IDX loading (raw and gzip) from small files this test
 * writes itself, every malformed-input error with its message (bad headers, bounds, sizes,
 * gzip bombs), synthetic data, and the real Fashion-MNIST files when the Debian package is
 * installed. Whole data sets (the checks between splits) are in test_dataset_checks.c. */
#include "base/status.h"
#include "tests/check.h"
#include "tests/idx_fixtures.h"
#include "workloads/dataset.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Loads a pair that must fail with `code`, and checks the message for each of `words`. */
static void expect_error(const char *images, const char *labels, int code, const char *what,
                         const char *word1, const char *word2)
{
    mx_dataset ds;
    int rc = mx_idx_load(&ds, in_tmp(images), in_tmp(labels));
    const char *msg = mx_last_error();
    printf("  %-22s -> %s: %s\n", what, mx_status_name(rc), msg);
    CHECK(rc == code, "%s: got %d (%s), expected %d", what, rc, msg, code);
    CHECK(is_empty(&ds), "%s: dataset not left empty on error", what);
    CHECK(contains(msg, word1), "%s: message lacks '%s': %s", what, word1, msg);
    if (word2) CHECK(contains(msg, word2), "%s: message lacks '%s': %s", what, word2, msg);
    if (rc == MX_OK) mx_dataset_free(&ds);
}


static void write_fixtures(void)
{
    blob im = images_blob(0x803, 5, 4, 3), lb = labels_blob(0x801, 5, 3);
    write_raw("img", im.data, im.len);
    write_raw("lbl", lb.data, lb.len);
    write_gz("zimg.gz", im.data, im.len);
    write_gz("zlbl.gz", lb.data, lb.len);
    write_raw("img-short", im.data, 30);
    write_gz("zimg-short.gz", im.data, 30);
    write_raw("img-short-header", im.data, 10);
    write_raw("img-long", im.data, im.len);
    write_raw("empty", im.data, 0);
    FILE *f = fopen(in_tmp("img-long"), "ab");
    if (f) {
        fputc(0, f);
        fclose(f);
    }
    /* Label 255 is the reserved "unlabelled" marker. */
    lb.data[8 + 3] = 255;
    write_raw("lbl-255", lb.data, lb.len);
    free(im.data);
    free(lb.data);

    blob lb4 = labels_blob(0x801, 4, 3), lb12 = labels_blob(0x801, 5, 12);
    write_raw("lbl4", lb4.data, lb4.len);
    /* Five labels 0..4 of modulus 12: nclasses stays 10; make one 11 to lift it to 12. */
    lb12.data[8 + 2] = 11;
    write_raw("lbl-11", lb12.data, lb12.len);
    free(lb4.data);
    free(lb12.data);

    blob huge = images_blob(0x803, 0, 28, 28);
    put_be32(huge.data + 4, 0x7fffffff);
    write_raw("img-huge-claim", huge.data, huge.len);
    put_be32(huge.data + 4, 0);
    write_raw("img-zero", huge.data, huge.len);
    free(huge.data);
}

static void test_good_files(void)
{
    mx_dataset raw, gz;
    int rc = mx_idx_load(&raw, in_tmp("img"), in_tmp("lbl"));
    CHECK(rc == MX_OK, "raw pair: %s", mx_last_error());
    if (rc == MX_OK) check_small(&raw, "raw");

    /* Names without .gz: the loader must find the .gz files on its own. */
    rc = mx_idx_load(&gz, in_tmp("zimg"), in_tmp("zlbl"));
    CHECK(rc == MX_OK, "gzip pair: %s", mx_last_error());
    if (rc == MX_OK) {
        check_small(&gz, "gzip");
        if (raw.images)
            CHECK(memcmp(raw.images, gz.images, 60 * sizeof(float)) == 0 &&
                      memcmp(raw.labels, gz.labels, 5) == 0,
                  "gzip pair differs from raw pair");
    }
    mx_dataset_free(&raw);
    mx_dataset_free(&gz);
    CHECK(is_empty(&raw), "mx_dataset_free leaves the struct empty");
    mx_dataset_free(&raw); /* twice is harmless */

    mx_dataset ds;
    rc = mx_idx_load(&ds, in_tmp("img"), in_tmp("lbl-11"));
    CHECK(rc == MX_OK && ds.nclasses == 12, "max label 11 gives nclasses %d (%s)", ds.nclasses,
          mx_last_error());
    mx_dataset_free(&ds);
}

static void make_corrupt_gzips(void)
{
    blob im = images_blob(0x803, 5, 4, 3);
    /* A valid 10-byte gzip header (deflate, no flags) followed by bytes that are no
     * deflate stream. */
    uint8_t garbage[64] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    for (size_t i = 10; i < sizeof garbage; i++) garbage[i] = (uint8_t)(0xff - i * 7);
    write_raw("gz-garbage.gz", garbage, sizeof garbage);

    write_gz("gz-good.gz", im.data, im.len);
    blob gz = read_whole("gz-good.gz");
    CHECK(gz.len > 30, "gzip fixture has %zu bytes", gz.len);
    if (gz.len > 30) {
        write_raw("gz-cut.gz", gz.data, gz.len / 2);
        /* Every data byte present, the 8-byte trailer (CRC, length) gone or half gone. */
        write_raw("gz-notrailer.gz", gz.data, gz.len - 8);
        write_raw("gz-halftrailer.gz", gz.data, gz.len - 3);
        /* Flip bits in the middle of the deflate data (past the 10-byte header). */
        for (size_t i = 14; i < 18; i++) gz.data[i] ^= 0x5a;
        write_raw("gz-flipped.gz", gz.data, gz.len);
        /* Only the stored CRC changes: the data inflates fine, the check must catch it. */
        gz.data[14] ^= 0x5a, gz.data[15] ^= 0x5a, gz.data[16] ^= 0x5a, gz.data[17] ^= 0x5a;
        gz.data[gz.len - 8] ^= 1;
        write_raw("gz-badcrc.gz", gz.data, gz.len);
    }
    free(gz.data);
    free(im.data);
}

static void test_errors(void)
{
    printf("error messages:\n");
    expect_error("img-short", "lbl", MX_EFORMAT, "truncated raw", "truncated",
                 "header says 5 images of 4x3 (76 bytes) but the file ends after 30 bytes");
    expect_error("img-short-header", "lbl", MX_EFORMAT, "truncated header", "truncated",
                 "16-byte");
    expect_error("empty", "lbl", MX_EFORMAT, "empty file", "empty", NULL);
    expect_error("lbl", "lbl", MX_EFORMAT, "wrong magic", "magic",
                 "wrong magic 0x00000801, expected 0x00000803 (IDX images, unsigned bytes)");
    expect_error("img", "img", MX_EFORMAT, "wrong magic (labels)", "magic", "0x00000801");
    expect_error("zimg-short.gz", "lbl", MX_EFORMAT, "truncated gzip content", "truncated",
                 "the decompressed data ends after 30 bytes");
    expect_error("zimg.gz", "zimg.gz", MX_EFORMAT, "wrong magic (gzip)", "magic", NULL);
    expect_error("gz-garbage.gz", "lbl", MX_EFORMAT, "gzip garbage", "gzip data is corrupt",
                 NULL);
    expect_error("gz-flipped.gz", "lbl", MX_EFORMAT, "gzip flipped bytes", "corrupt", NULL);
    expect_error("gz-badcrc.gz", "lbl", MX_EFORMAT, "gzip bad CRC", "corrupt", NULL);
    expect_error("gz-cut.gz", "lbl", MX_EFORMAT, "gzip cut in half", "truncated",
                 "gzip file is cut short");
    expect_error("gz-notrailer.gz", "lbl", MX_EFORMAT, "gzip trailer missing", "5 images of 4x3",
                 "before its trailer");
    expect_error("gz-halftrailer.gz", "lbl", MX_EFORMAT, "gzip trailer cut", "truncated", "trailer");
    expect_error("no-such-images", "lbl", MX_EIO, "missing file", "not found",
                 "no-such-images.gz");
    expect_error("no-such.gz", "lbl", MX_EIO, "missing .gz file", "not found", NULL);
    expect_error("img", "no-such-labels", MX_EIO, "missing labels", "not found",
                 "no-such-labels");
    expect_error("img", "lbl4", MX_EFORMAT, "count mismatch", "has 5 images but", "has 4 labels");
    expect_error("img", "lbl-255", MX_EFORMAT, "label 255", "label 255 at index 3", "0..254");
    expect_error("img-long", "lbl", MX_EFORMAT, "trailing data", "more data", NULL);
    expect_error("img-huge-claim", "lbl", MX_EFORMAT, "huge claim, tiny file", "truncated",
                 "2147483647 images");
    expect_error("img-zero", "lbl", MX_EFORMAT, "zero images", "0 images", NULL);
    expect_error(".", "lbl", MX_EIO, "a directory", "directory", NULL);
}


static void test_bad_headers(void)
{
    printf("bad headers:\n");
    /* name, magic, dimension count, the dimensions, payload bytes, expected words. */
    static const struct {
        const char *name;
        uint32_t magic;
        int ndims;
        uint32_t d[3];
        size_t payload;
        const char *what, *word1, *word2;
    } cases[] = {
        {"h-4dims", 0x804, 3, {5, 4, 3}, 60, "4-dim images", "0x00000804", "declares 4 dimensions"},
        {"h-float", 0x0d03, 3, {5, 4, 3}, 240, "float images", "0x00000d03", "32-bit floats"},
        {"l-2dims", 0x802, 1, {5}, 5, "2-dim labels", "0x00000802", "declares 2 dimensions"},
        {"h-gif", 0x47494638, 3, {0x39610000}, 0, "not IDX", "0x47494638", "not an IDX file"},
        {"h-rows0", 0x803, 3, {5, 0, 3}, 0, "zero rows", "images of 0x3", "1..65536"},
        {"h-cols0", 0x803, 3, {5, 4, 0}, 0, "zero columns", "images of 4x0", "1..65536"},
        {"h-side", 0x803, 3, {1, 65537, 3}, 0, "side too long", "65537x3", "1..65536"},
        {"h-pixels", 0x803, 3, {1, 65536, 65536}, 0, "image too large", "4294967296 pixels",
         "at most 16777216"},
        {"h-all-max", 0x803, 3, {~0u, ~0u, ~0u}, 0, "dims all 2^32-1", "4294967295 images",
         "1..2147483647"},
        /* 2^31-1 * 4096 * 4096 overflows int and a 32-bit size_t: the byte count is exact. */
        {"h-product", 0x803, 3, {0x7fffffff, 4096, 4096}, 0, "product overflows int", "truncated",
         "(36028797002186768 bytes)"},
        {"l-zero", 0x801, 1, {0}, 0, "zero labels", "0 labels", "1..2147483647"},
        {"l-max", 0x801, 1, {~0u}, 5, "2^32-1 labels", "4294967295 labels", "1..2147483647"},
        {"l-huge", 0x801, 1, {0x7fffffff}, 5, "huge label claim", "truncated", "2147483647 labels"},
        {"l-long", 0x801, 1, {5}, 6, "labels trailing data", "5 labels", "more data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_header(cases[i].name, cases[i].magic, cases[i].ndims, cases[i].d[0], cases[i].d[1],
                     cases[i].d[2], cases[i].payload);
        int labels = cases[i].name[0] == 'l';
        expect_error(labels ? "img" : cases[i].name, labels ? cases[i].name : "lbl", MX_EFORMAT,
                     cases[i].what, cases[i].word1, cases[i].word2);
    }

    /* gzip: a header promising more than deflate can expand a 50-byte file to is refused
     * before reading; a bomb (a small header, megabytes of zeros) stops one byte past it. */
    uint8_t hdr[16];
    put_be32(hdr, 0x803), put_be32(hdr + 4, 1000000), put_be32(hdr + 8, 28), put_be32(hdr + 12, 28);
    write_gz("gz-huge.gz", hdr, sizeof hdr);
    expect_error("gz-huge.gz", "lbl", MX_EFORMAT, "gzip huge claim", "1000000 images of 28x28",
                 "gzip file can hold");
    size_t bomb_len = 16 + (8u << 20);
    uint8_t *bomb = calloc(1, bomb_len);
    put_be32(bomb, 0x803), put_be32(bomb + 4, 5), put_be32(bomb + 8, 4), put_be32(bomb + 12, 3);
    write_gz("gz-bomb.gz", bomb, bomb_len);
    free(bomb);
    expect_error("gz-bomb.gz", "lbl", MX_EFORMAT, "gzip bomb", "5 images of 4x3",
                 "decompressed stream has more data");

    /* Past the pixel cap, on a sparse file that really is that large (no disk used). */
    write_header("h-cap", 0x803, 3, 65537, 256, 256, 0);
    if (truncate(in_tmp("h-cap"), 16 + 65537LL * 256 * 256) == 0)
        expect_error("h-cap", "lbl", MX_EFORMAT, "over the pixel cap", "4295032832 pixel bytes",
                     "accepted at most 4294967296");
    else
        printf("  skipped the pixel cap: no sparse 4 GiB file here\n");
    unlink(in_tmp("h-cap"));

    /* Decided: bytes after the last gzip member are ignored (as zlib and gunzip do). */
    blob gz = read_whole("zimg.gz");
    uint8_t *padded = malloc(gz.len + 7);
    memcpy(padded, gz.data, gz.len);
    memcpy(padded + gz.len, "garbage", 7);
    write_raw("zimg-trailing.gz", padded, gz.len + 7);
    mx_dataset ds;
    int rc = mx_idx_load(&ds, in_tmp("zimg-trailing.gz"), in_tmp("lbl"));
    CHECK(rc == MX_OK, "bytes after the gzip stream: %s", mx_last_error());
    if (rc == MX_OK) check_small(&ds, "gzip + trailing bytes");
    mx_dataset_free(&ds);
    free(padded);
    free(gz.data);
}


static void test_load_dir(void)
{
    blob im = images_blob(0x803, 5, 4, 3), lb = labels_blob(0x801, 5, 3);
    /* Mixed raw and gzip, as a partly unpacked download would be. */
    write_raw("train-images-idx3-ubyte", im.data, im.len);
    write_gz("train-labels-idx1-ubyte.gz", lb.data, lb.len);
    write_gz("t10k-images-idx3-ubyte.gz", im.data, im.len);
    mx_dataset train, test;
    int rc = mx_idx_load_dir(&train, &test, tmpdir);
    printf("  %-22s -> %s: %s\n", "dir without t10k labels", mx_status_name(rc), mx_last_error());
    CHECK(rc == MX_EIO && contains(mx_last_error(), "t10k-labels-idx1-ubyte"),
          "missing t10k labels: %d %s", rc, mx_last_error());
    CHECK(is_empty(&train) && is_empty(&test), "both splits empty after a failed load");

    write_raw("t10k-labels-idx1-ubyte", lb.data, lb.len);
    rc = mx_idx_load_dir(&train, &test, tmpdir);
    CHECK(rc == MX_OK, "load_dir: %s", mx_last_error());
    if (rc == MX_OK) {
        check_small(&train, "dir train");
        check_small(&test, "dir test");
    }
    mx_dataset_free(&train);
    mx_dataset_free(&test);
    free(im.data);
    free(lb.data);
}

static void test_synthetic(void)
{
    mx_dataset a, b, c;
    CHECK(mx_dataset_synthetic(&a, 50, 3, 8, 8, 7, 42) == MX_OK, "%s", mx_last_error());
    CHECK(mx_dataset_synthetic(&b, 50, 3, 8, 8, 7, 42) == MX_OK, "%s", mx_last_error());
    CHECK(mx_dataset_synthetic(&c, 50, 3, 8, 8, 7, 43) == MX_OK, "%s", mx_last_error());
    size_t count = 50 * 3 * 8 * 8;
    CHECK(a.n == 50 && a.c == 3 && a.h == 8 && a.w == 8 && a.nclasses == 7, "synthetic shape");
    CHECK(memcmp(a.images, b.images, count * sizeof(float)) == 0 &&
              memcmp(a.labels, b.labels, 50) == 0,
          "same seed gives different data");
    CHECK(memcmp(a.images, c.images, count * sizeof(float)) != 0, "seeds 42 and 43 agree");
    int out = 0, seen[7] = {0};
    double sum = 0;
    for (size_t i = 0; i < count; i++) {
        out += !(a.images[i] >= 0.0f && a.images[i] < 1.0f);
        sum += a.images[i];
    }
    for (int i = 0; i < 50; i++) {
        out += a.labels[i] >= 7;
        if (a.labels[i] < 7) seen[a.labels[i]] = 1;
    }
    CHECK(out == 0, "%d synthetic values or labels out of range", out);
    /* Mean of 9600 uniforms: sd 0.003, so 0.45..0.55 fails only on a broken generator. */
    CHECK(sum / count > 0.45 && sum / count < 0.55, "synthetic mean %g", sum / count);
    int classes = 0;
    for (int k = 0; k < 7; k++) classes += seen[k];
    CHECK(classes == 7, "only %d of 7 classes among 50 labels", classes);
    mx_dataset_free(&a);
    mx_dataset_free(&b);
    mx_dataset_free(&c);

    CHECK(mx_dataset_synthetic(&a, 0, 1, 28, 28, 10, 1) == MX_EINVAL && is_empty(&a),
          "n=0 accepted");
    CHECK(mx_dataset_synthetic(&a, 10, 1, 28, 28, 256, 1) == MX_EINVAL, "nclasses 256 accepted");
    printf("  %-22s -> %s\n", "synthetic nclasses=256", mx_last_error());
}

static void test_default_dir(void)
{
    const char *old = getenv("MXBENCH_DATA");
    char *saved = old ? strdup(old) : NULL;
    setenv("MXBENCH_DATA", "/data/fmnist", 1);
    CHECK(strcmp(mx_dataset_default_dir(), "/data/fmnist") == 0, "MXBENCH_DATA ignored");
    unsetenv("MXBENCH_DATA");
    CHECK(strcmp(mx_dataset_default_dir(), MX_FASHION_MNIST_DIR) == 0, "default dir %s",
          mx_dataset_default_dir());
    if (saved) setenv("MXBENCH_DATA", saved, 1);
    free(saved);
}

static void check_split(const mx_dataset *ds, int n, const char *what)
{
    CHECK(ds->n == n && ds->c == 1 && ds->h == 28 && ds->w == 28 && ds->nclasses == 10,
          "%s: %d samples of %dx%dx%d, %d classes", what, ds->n, ds->c, ds->h, ds->w,
          ds->nclasses);
    /* Fashion-MNIST is balanced: exactly n/10 samples per class in each split. */
    int per[256] = {0}, unbalanced = 0, out = 0;
    for (int i = 0; i < ds->n; i++) per[ds->labels[i]]++;
    for (int k = 0; k < 10; k++) unbalanced += per[k] != n / 10;
    for (size_t i = 0; i < (size_t)ds->n * 28 * 28; i++)
        out += !(ds->images[i] >= 0.0f && ds->images[i] <= 1.0f);
    CHECK(unbalanced == 0, "%s: classes not %d each", what, n / 10);
    CHECK(out == 0, "%s: %d pixels outside [0,1]", what, out);
}

static void test_fashion_mnist(void)
{
    if (access(MX_FASHION_MNIST_DIR, R_OK) != 0) {
        printf("skipped Fashion-MNIST: %s not installed\n", MX_FASHION_MNIST_DIR);
        return;
    }
    mx_dataset train, test;
    int rc = mx_idx_load_dir(&train, &test, MX_FASHION_MNIST_DIR);
    CHECK(rc == MX_OK, "Fashion-MNIST: %s", mx_last_error());
    if (rc != MX_OK) return;
    check_split(&train, 60000, "train");
    check_split(&test, 10000, "t10k");
    printf("Fashion-MNIST: train %d, t10k %d samples of %dx%dx%d, %d classes\n", train.n, test.n,
           train.c, train.h, train.w, train.nclasses);
    mx_dataset_free(&train);
    mx_dataset_free(&test);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    write_fixtures();
    make_corrupt_gzips();
    test_good_files();
    test_errors();
    test_bad_headers();
    test_load_dir();
    remove_tmpdir();
    test_synthetic();
    test_default_dir();
    test_fashion_mnist();
    return check_summary("test_dataset");
}
