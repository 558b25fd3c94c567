/* Fuzz target: the token file reader (workloads/tokens.c), which takes a file path, so the
 * input is written to a file in /dev/shm first.
 *
 * Input: one flag byte, one context byte, then the file's contents.
 *   bits 0-1 the file's name: 0 "tokens.bin" (headerless uint16 unless the llm.c magic), 1
 *     "tokens.txt" (bytes unless the magic), 2 "tokens.bin" with llm.c's magic written over
 *     the first four bytes (or making up a short file), 3 "tokens.bin" with a whole llm.c
 *     header written here (version 1, the true token count) before the contents, so the
 *     data, not the header, is fuzzed;
 *   bits 2-4 the held-out share: 0.5, 0.1, 0.25, 0.01, 0.9, 0.001, 0.999 or 0.3;
 *   bit 5 the context byte is scaled by 256 (contexts up to 65280);
 *   bit 6 the file is not written at all; bit 7 a context or share out of range (0, 65537,
 *   a share of 0 or 1, taken from the context byte), which must be refused.
 * Beyond memory errors it checks the promises of tokens.h on what it returns: the windows'
 * shape and that every label is the next input, every id below nclasses, the vocabulary
 * rule, both splits empty on error, and that mx_tokens_validate gives the same code and
 * message as loading. */
#include "base/status.h"
#include "tests/fuzz/fuzz.h"
#include "workloads/dataset.h"
#include "workloads/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FZ_CHECK(c)                                                                      \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "fuzz_tokens: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* Writes the file as the flags say; returns 0 when it could not be written. */
static int write_file(const char *path, unsigned name_mode, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    uint8_t head[MX_TOKENS_LLMC_HEADER_BYTES];
    if (name_mode == 2) {
        memset(head, 0, 4);
        memcpy(head, p, n < 4 ? n : 4);
        put_le32(head, MX_TOKENS_LLMC_MAGIC);
        fwrite(head, 1, 4, f);
        if (n > 4) fwrite(p + 4, 1, n - 4, f);
    } else {
        if (name_mode == 3) {
            memset(head, 0, sizeof head);
            put_le32(head, MX_TOKENS_LLMC_MAGIC);
            put_le32(head + 4, MX_TOKENS_LLMC_VERSION);
            put_le32(head + 8, (uint32_t)(n / 2));
            fwrite(head, 1, sizeof head, f);
        }
        if (n) fwrite(p, 1, n, f);
    }
    return fclose(f) == 0;
}

/* The promises of tokens.h about a loaded split. */
static void check_split(const mx_dataset *ds, const mx_tokens_info *info, int windows, int context)
{
    FZ_CHECK(ds->n == windows && ds->n >= 1);
    FZ_CHECK(ds->c == 1 && ds->h == 1 && ds->w == context && ds->label_len == context);
    FZ_CHECK(ds->images && ds->labels && ds->nclasses == info->vocab);
    const size_t count = (size_t)ds->n * (size_t)context;
    for (size_t k = 0; k < count; k++) {
        FZ_CHECK(ds->images[k] >= 0 && ds->images[k] < (float)ds->nclasses);
        FZ_CHECK(ds->images[k] == (float)(int)ds->images[k]);
        FZ_CHECK(ds->labels[k] >= 0 && ds->labels[k] < ds->nclasses);
        /* a label is the next token: within a window the next input, and across windows too */
        if (k + 1 < count) FZ_CHECK((float)ds->labels[k] == ds->images[k + 1]);
    }
}

static void check_info(const mx_tokens_info *info, int context)
{
    FZ_CHECK(info->ntokens >= 1 && info->ntokens <= MX_TOKENS_MAX);
    FZ_CHECK(info->train_tokens + info->val_tokens == info->ntokens);
    FZ_CHECK(info->context == context);
    FZ_CHECK(info->train_windows >= 1 && (uint64_t)info->train_windows * context < info->train_tokens);
    FZ_CHECK(info->val_windows >= 1 && (uint64_t)info->val_windows * context < info->val_tokens);
    if (info->format == MX_TOKENS_BYTES) FZ_CHECK(info->vocab == 256 && info->max_token < 256);
    else FZ_CHECK(info->vocab == (info->max_token < 50257 ? 50257 : info->max_token + 1));
    FZ_CHECK(info->vocab_from_data == (info->format != MX_TOKENS_BYTES && info->max_token >= 50257));
    char line[300];
    mx_tokens_describe(info, line, sizeof line);
    FZ_CHECK(strlen(line) < sizeof line - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const double shares[8] = {0.5, 0.1, 0.25, 0.01, 0.9, 0.001, 0.999, 0.3};
    fz_reader r = {data, size};
    const unsigned flags = fz_u8(&r), cbyte = fz_u8(&r);
    int context = (flags & 0x20) ? (int)cbyte * 256 : (int)cbyte;
    double share = shares[flags >> 2 & 7];
    if (flags & 0x80) {
        switch (cbyte & 3) {
        case 0: context = 0; break;
        case 1: context = MX_TOKENS_MAX_CONTEXT + 1; break;
        case 2: share = 0; break;
        default: share = 1; break;
        }
    }
    size_t len;
    const uint8_t *contents = fz_bytes(&r, r.n, &len);

    const unsigned name_mode = flags & 3;
    char path[256];
    fz_path(path, sizeof path, name_mode == 1 ? "tokens.txt" : "tokens.bin");
    unlink(path);
    if (!(flags & 0x40) && !write_file(path, name_mode, contents, len)) return 0;

    mx_tokens_info info;
    const int check = mx_tokens_inspect(path, context, share, &info);
    char check_msg[1024];
    snprintf(check_msg, sizeof check_msg, "%s", check < 0 ? mx_last_error() : "");
    mx_dataset train, val;
    const int rc = mx_tokens_load(&train, &val, path, context, share);
    fz_outcome("mx_tokens_load", rc, mx_last_error());
    /* the sweep's up-front check gives exactly what loading gives */
    FZ_CHECK(check == rc && (rc == MX_OK || strcmp(check_msg, mx_last_error()) == 0));
    FZ_CHECK(rc == MX_OK || (rc < 0 && mx_last_error()[0] != '\0'));
    /* the arguments are checked before the file: out of range is MX_EINVAL, missing or not */
    const int args_ok = context >= 1 && context <= MX_TOKENS_MAX_CONTEXT && share > 0 && share < 1;
    FZ_CHECK(args_ok != (rc == MX_EINVAL));
    if (flags & 0x40) FZ_CHECK(rc == (args_ok ? MX_EIO : MX_EINVAL));
    if (rc == MX_OK) {
        check_info(&info, context);
        check_split(&train, &info, info.train_windows, context);
        check_split(&val, &info, info.val_windows, context);
        /* a header written here with the true count: the contents decide only the tokens */
        if (name_mode == 3) FZ_CHECK(info.format == MX_TOKENS_LLMC && len % 2 == 0);
        if (name_mode == 2) FZ_CHECK(info.format == MX_TOKENS_LLMC);
        if (name_mode == 1) FZ_CHECK(info.format == MX_TOKENS_BYTES || info.format == MX_TOKENS_LLMC);
    } else {
        FZ_CHECK(train.n == 0 && !train.images && !train.labels);
        FZ_CHECK(val.n == 0 && !val.images && !val.labels);
    }
    mx_dataset_free(&train);
    mx_dataset_free(&val);
    unlink(path);
    return 0;
}
