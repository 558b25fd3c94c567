/* Fuzz target: the IDX reader (workloads/idx.c), which takes file paths, so the input is
 * written to files in /dev/shm first.
 *
 * Input: one flag byte, then the file contents, each but the last preceded by its length
 * (u16, little-endian): images then labels, or with the dir flag train images, train labels,
 * test images, test labels for mx_idx_load_dir.
 *   bits 0-1 how the image files are written, bits 2-3 the label files:
 *     0 raw bytes under the plain name; 1 raw bytes under a .gz name (the bytes are read as
 *     a gzip stream, or as plain data when they do not start like one); 2 gzip-compressed
 *     here, under a .gz name; 3 compressed, stored as NAME.gz but NAME is passed (the
 *     reader's fallback to NAME.gz)
 *   bit 4 directory layout and mx_idx_load_dir; bit 5 cut the compressed files short by a
 *   count read from the input; bit 6 the (train) label file is not written at all.
 * Beyond memory errors it checks the promises of dataset.h on what it returns. */
#include "base/status.h"
#include "tests/fuzz/fuzz.h"
#include "workloads/dataset.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FZ_CHECK(c)                                                                    \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "fuzz_idx: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static const char *const dir_names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

/* A stale NAME or NAME.gz would change which file the reader picks. */
static void remove_both(const char *base)
{
    char gz[512];
    snprintf(gz, sizeof gz, "%s.gz", base);
    unlink(base);
    unlink(gz);
}

/* Writes one file as `mode` says; *arg is set to the path the reader is given. Returns 1
 * when it cut a compressed file short: such a file must never load. */
static int write_part(const char *base, unsigned mode, int cut, const uint8_t *p, size_t n, char *arg,
                      size_t argn)
{
    char gz[512];
    snprintf(gz, sizeof gz, "%s.gz", base);
    remove_both(base);
    const char *file = mode == 0 ? base : gz;
    snprintf(arg, argn, "%s", mode == 3 ? base : file);
    if (mode <= 1) {
        FILE *f = fopen(file, "wb");
        if (!f) return 0;
        if (n) fwrite(p, 1, n, f);
        fclose(f);
        return 0;
    }
    gzFile g = gzopen(file, "wb");
    if (!g) return 0;
    if (n) gzwrite(g, p, (unsigned)n);
    gzclose(g);
    struct stat st;
    if (cut > 0 && stat(file, &st) == 0) {
        off_t size = st.st_size > cut ? st.st_size - cut : 0;
        return truncate(file, size) == 0;
    }
    return 0;
}

/* The promises of dataset.h about a loaded split. */
static void check_dataset(const mx_dataset *ds)
{
    FZ_CHECK(ds->n > 0 && ds->c == 1 && ds->h > 0 && ds->w > 0);
    FZ_CHECK(ds->nclasses >= 1 && ds->nclasses <= 256);
    FZ_CHECK(ds->images && ds->labels);
    size_t count = (size_t)ds->n * (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    for (size_t i = 0; i < count; i++) FZ_CHECK(ds->images[i] >= 0.0f && ds->images[i] <= 1.0f);
    for (int i = 0; i < ds->n; i++) FZ_CHECK(ds->labels[i] < ds->nclasses);
}

static void check_empty(const mx_dataset *ds) { FZ_CHECK(!ds->images && !ds->labels && ds->n == 0); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    unsigned flags = fz_u8(&r);
    int dir_mode = flags >> 4 & 1, cut = (flags >> 5 & 1) ? (int)fz_u8(&r) + 1 : 0;
    int nparts = dir_mode ? 4 : 2;
    const uint8_t *part[4];
    size_t len[4];
    for (int i = 0; i < nparts; i++) {
        size_t want = i == nparts - 1 ? r.n : fz_u16(&r);
        part[i] = fz_bytes(&r, want, &len[i]);
    }

    char base[256], args[4][512];
    int cut_short = 0;
    if (!dir_mode) {
        const char *names[2] = {"images", "labels"};
        for (int i = 0; i < 2; i++) {
            fz_path(base, sizeof base, names[i]);
            if (i == 1 && (flags & 0x40)) {
                remove_both(base);
                snprintf(args[i], sizeof args[i], "%s", base);
                continue;
            }
            cut_short |= write_part(base, i ? flags >> 2 & 3 : flags & 3, cut, part[i], len[i], args[i],
                                    sizeof args[i]);
        }
        mx_dataset ds;
        int rc = mx_idx_load(&ds, args[0], args[1]);
        fz_outcome("mx_idx_load", rc, mx_last_error());
        FZ_CHECK(rc == MX_OK || (rc < 0 && mx_last_error()[0] != '\0'));
        FZ_CHECK(!(rc == MX_OK && cut_short)); /* a gzip file cut short must be refused */
        if (rc == MX_OK) check_dataset(&ds);
        else check_empty(&ds);
        mx_dataset_free(&ds);
        for (int i = 0; i < 2; i++) remove_both(fz_path(base, sizeof base, names[i]));
        return 0;
    }

    char dir[128];
    fz_path(dir, sizeof dir, "dir");
    mkdir(dir, 0700);
    for (int i = 0; i < 4; i++) {
        snprintf(base, sizeof base, "%s/%s", dir, dir_names[i]);
        if (i == 1 && (flags & 0x40)) {
            remove_both(base);
            continue;
        }
        cut_short |= write_part(base, i % 2 ? flags >> 2 & 3 : flags & 3, cut, part[i], len[i], args[i],
                                sizeof args[i]);
    }
    const int check = mx_idx_dir_validate(dir);
    char check_msg[512];
    snprintf(check_msg, sizeof check_msg, "%s", check < 0 ? mx_last_error() : "");
    mx_dataset train, test;
    int rc = mx_idx_load_dir(&train, &test, dir);
    /* the sweep's up-front check gives exactly what loading gives */
    FZ_CHECK(check == rc && (rc == MX_OK || strcmp(check_msg, mx_last_error()) == 0));
    fz_outcome("mx_idx_load_dir", rc, mx_last_error());
    FZ_CHECK(rc == MX_OK || rc < 0);
    if (rc == MX_OK) {
        FZ_CHECK(!cut_short);
        check_dataset(&train);
        check_dataset(&test);
    } else {
        check_empty(&train); /* a failed test split frees the train split */
        check_empty(&test);
    }
    mx_dataset_free(&train);
    mx_dataset_free(&test);
    for (int i = 0; i < 4; i++) {
        snprintf(base, sizeof base, "%s/%s", dir, dir_names[i]);
        remove_both(base);
    }
    rmdir(dir);
    return 0;
}
