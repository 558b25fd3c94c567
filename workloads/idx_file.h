/* Internal to workloads/: one IDX file's header and payload as raw bytes (idx.c), for the
 * pair, split and directory checks of idx_dir.c. Not part of the public dataset API. */
#ifndef MX_IDX_FILE_H
#define MX_IDX_FILE_H

#include <stdint.h>

typedef struct {
    char *path; /* the file actually read (after the .gz fallback), for messages */
    uint32_t n, rows, cols;
    uint8_t *pixels; /* n * rows * cols */
} mx_idx_images;

typedef struct {
    char *path;
    uint32_t n;
    uint8_t *labels; /* n, each at most MX_IDX_MAX_LABEL */
} mx_idx_labels;

/* Read and check one file: magic, dimensions against the bounds of dataset.h, declared size
 * against the file's size, then the payload, with nothing after it. On error the struct is
 * left empty and the message names the file and the value. */
int mx_idx_read_images(mx_idx_images *im, const char *path);
int mx_idx_read_labels(mx_idx_labels *lb, const char *path);
void mx_idx_images_free(mx_idx_images *im);
void mx_idx_labels_free(mx_idx_labels *lb);

/* path + suffix in a fresh allocation, or NULL. */
char *mx_idx_concat(const char *a, const char *b);

#endif
