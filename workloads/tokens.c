/* Token files into language-modelling windows (tokens.h says the formats, the rules and the
 * limits). Input is untrusted: the format, the header and the size are checked against the
 * file's size and the limits before anything is allocated, and the split into windows before
 * the tokens are read; the tokens then go from a fixed read buffer straight into the windows,
 * so a lying header costs an error, never a large allocation. One function does all of it
 * for loading and for inspecting, so both give the same code and message for a file. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "workloads/tokens.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes per read: small enough for the stack of a validation, large enough that stdio's
 * per-call cost does not show. Even, so a uint16 token never straddles two reads. */
#define TOK_CHUNK (64u * 1024u)

const char *mx_tokens_format_name(mx_tokens_format format)
{
    switch (format) {
    case MX_TOKENS_LLMC: return "llm.c";
    case MX_TOKENS_UINT16: return "uint16";
    case MX_TOKENS_BYTES: return "bytes";
    }
    return "unknown";
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* Opens path for reading as a regular file and gives its size. O_NONBLOCK: a FIFO opens at
 * once instead of waiting for a writer for ever; what was opened is then checked (fstat),
 * not the name, so nothing can be swapped in between. A token file must be a regular file:
 * its size is what the header and the windows are checked against. */
static int open_regular(const char *path, FILE **out, uint64_t *size)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return mx_error(MX_EIO, "'%s': cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = MX_OK;
    if (fstat(fd, &st) != 0)
        rc = mx_error(MX_EIO, "'%s': cannot open: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = mx_error(MX_EIO, "'%s': is %s, not a regular file; accepted: a token file (llm.c, .bin or bytes)", path,
                      mx_file_kind(st.st_mode));
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        rc = mx_error(MX_EIO, "'%s': cannot open: %s", path, strerror(errno));
    if (rc == MX_OK) {
        errno = 0;
        *out = fdopen(fd, "rb");
        if (!*out)
            rc = errno ? mx_error(MX_EIO, "'%s': cannot open: %s", path, strerror(errno))
                       : mx_error(MX_ENOMEM, "'%s': out of memory opening it", path);
    }
    if (rc != MX_OK) {
        close(fd);
        return rc;
    }
    *size = (uint64_t)st.st_size;
    return MX_OK;
}

/* Reads exactly n bytes at the current position: a short read is a read error (MX_EIO) or a
 * file that shrank since its size was taken (MX_EFORMAT, as a truncated file). */
static int read_exact(FILE *f, const char *path, unsigned char *buf, size_t n)
{
    if (fread(buf, 1, n, f) == n) return MX_OK;
    if (ferror(f)) return mx_error(MX_EIO, "'%s': read error: %s", path, strerror(errno));
    return mx_error(MX_EFORMAT, "'%s': truncated: it ended early while being read (did it shrink?)", path);
}

/* The format from the first bytes and the name, and the token count, checked against the
 * file's size and MX_TOKENS_MAX. Leaves f at the first token. */
static int read_format(FILE *f, const char *path, uint64_t size, mx_tokens_info *info)
{
    if (size == 0)
        return mx_error(MX_EFORMAT, "'%s': empty file (0 bytes); a token file holds at least one token", path);
    unsigned char hdr[MX_TOKENS_LLMC_HEADER_BYTES];
    size_t head = size < sizeof hdr ? (size_t)size : sizeof hdr;
    MX_TRY(read_exact(f, path, hdr, head));
    uint64_t count;
    if (head >= 4 && le32(hdr) == MX_TOKENS_LLMC_MAGIC) {
        info->format = MX_TOKENS_LLMC;
        if (head < MX_TOKENS_LLMC_HEADER_BYTES)
            return mx_error(MX_EFORMAT, "'%s': llm.c token file (magic %d) truncated in its header: %llu bytes, "
                            "the header alone is %d", path, MX_TOKENS_LLMC_MAGIC, (unsigned long long)size,
                            MX_TOKENS_LLMC_HEADER_BYTES);
        const int32_t version = (int32_t)le32(hdr + 4), declared = (int32_t)le32(hdr + 8);
        if (version != MX_TOKENS_LLMC_VERSION)
            return mx_error(MX_EFORMAT, "'%s': llm.c token file version %d; accepted: %d (uint16 tokens)", path,
                            (int)version, MX_TOKENS_LLMC_VERSION);
        if (declared <= 0 || (uint32_t)declared > MX_TOKENS_MAX)
            return mx_error(MX_EFORMAT, "'%s': llm.c header declares %d tokens; accepted: 1..%u (2^28)", path,
                            (int)declared, MX_TOKENS_MAX);
        count = (uint64_t)declared;
        const uint64_t data = size - MX_TOKENS_LLMC_HEADER_BYTES, want = 2 * count;
        if (data < want)
            return mx_error(MX_EFORMAT, "'%s': llm.c token file truncated: its header declares %llu tokens (%llu "
                            "bytes) but %llu bytes follow the header", path, (unsigned long long)count,
                            (unsigned long long)want, (unsigned long long)data);
        if (data > want)
            return mx_error(MX_EFORMAT, "'%s': llm.c token file has trailing data: its header declares %llu tokens "
                            "(%llu bytes) but %llu bytes follow the header", path, (unsigned long long)count,
                            (unsigned long long)want, (unsigned long long)data);
    } else if (ends_with(path, ".bin")) {
        info->format = MX_TOKENS_UINT16;
        if (size % 2)
            return mx_error(MX_EFORMAT, "'%s': %llu bytes, an odd count: a .bin file without llm.c's header "
                            "(magic %d) holds uint16 tokens, 2 bytes each", path, (unsigned long long)size,
                            MX_TOKENS_LLMC_MAGIC);
        count = size / 2;
    } else {
        info->format = MX_TOKENS_BYTES;
        count = size;
    }
    if (count > MX_TOKENS_MAX)
        return mx_error(MX_EFORMAT, "'%s': %llu tokens (%s), more than the %u (2^28) mxbench reads", path,
                        (unsigned long long)count, mx_tokens_format_name(info->format), MX_TOKENS_MAX);
    info->ntokens = (uint32_t)count;
    /* the tokens start after llm.c's header, at the file's first byte otherwise */
    const long start = info->format == MX_TOKENS_LLMC ? MX_TOKENS_LLMC_HEADER_BYTES : 0;
    if (fseek(f, start, SEEK_SET) != 0) return mx_error(MX_EIO, "'%s': cannot seek: %s", path, strerror(errno));
    return MX_OK;
}

/* The two splits and their windows; each must hold one window (context + 1 tokens, the
 * labels being the inputs shifted by one). */
static int plan_split(const char *path, int context, double val_share, mx_tokens_info *info)
{
    const uint32_t n = info->ntokens;
    info->context = context;
    info->val_tokens = (uint32_t)(val_share * (double)n); /* floor; below n since the share is below 1 */
    info->train_tokens = n - info->val_tokens;
    info->train_windows = info->train_tokens ? (int)((info->train_tokens - 1) / (uint32_t)context) : 0;
    info->val_windows = info->val_tokens ? (int)((info->val_tokens - 1) / (uint32_t)context) : 0;
    const int train_short = info->train_windows < 1;
    if (train_short || info->val_windows < 1)
        return mx_error(MX_EFORMAT, "'%s': %u tokens, context %d, held-out share %g: the %s split (the %s %u tokens) "
                        "holds no window; a window needs context + 1 = %d tokens", path, n, context, val_share,
                        train_short ? "training" : "held-out", train_short ? "first" : "last",
                        train_short ? info->train_tokens : info->val_tokens, context + 1);
    return MX_OK;
}

/* One split being filled: inputs are its tokens [0, nin), labels its tokens [1, nin], with
 * nin = windows * context, both flat over the windows. */
typedef struct {
    float *images;
    int32_t *labels;
    uint32_t first; /* the split's first token in the file */
    uint32_t nin;
} split_fill;

static void put_token(split_fill *s, uint32_t pos, int tok)
{
    const uint32_t q = pos - s->first;
    if (q < s->nin) s->images[q] = (float)tok;
    if (q >= 1 && q <= s->nin) s->labels[q - 1] = tok;
}

/* Reads every token (for the vocabulary), putting them into the splits when fill is set. */
static int read_tokens(FILE *f, const char *path, mx_tokens_info *info, split_fill *fill)
{
    unsigned char buf[TOK_CHUNK];
    const size_t width = info->format == MX_TOKENS_BYTES ? 1 : 2;
    int top = 0;
    for (uint32_t pos = 0; pos < info->ntokens;) {
        const uint32_t left = info->ntokens - pos, want = left < TOK_CHUNK / width ? left : TOK_CHUNK / width;
        MX_TRY(read_exact(f, path, buf, want * width));
        for (uint32_t i = 0; i < want; i++, pos++) {
            const int tok = width == 1 ? buf[i] : buf[2 * i] | buf[2 * i + 1] << 8;
            if (tok > top) top = tok;
            if (fill) put_token(&fill[pos >= info->train_tokens], pos, tok);
        }
    }
    /* the size was checked up front; a file that grew since must not pass for that size */
    if (fgetc(f) != EOF)
        return mx_error(MX_EFORMAT, "'%s': grew while being read: more than the %u tokens its size gave", path,
                        info->ntokens);
    if (ferror(f)) return mx_error(MX_EIO, "'%s': read error: %s", path, strerror(errno));
    info->max_token = top;
    if (info->format == MX_TOKENS_BYTES) {
        info->vocab = MX_TOKENS_BYTE_VOCAB;
        info->vocab_from_data = 0;
    } else {
        info->vocab_from_data = top >= MX_TOKENS_GPT2_VOCAB;
        info->vocab = info->vocab_from_data ? top + 1 : MX_TOKENS_GPT2_VOCAB;
    }
    return MX_OK;
}

static int alloc_split(mx_dataset *ds, split_fill *fill, uint32_t first, int windows, int context,
                       const char *path)
{
    const size_t count = (size_t)windows * (size_t)context;
    ds->images = malloc(count * sizeof *ds->images);
    ds->labels = malloc(count * sizeof *ds->labels);
    if (!ds->images || !ds->labels)
        return mx_error(MX_ENOMEM, "'%s': out of memory for %d windows of %d tokens", path, windows, context);
    ds->n = windows;
    ds->c = 1;
    ds->h = 1;
    ds->w = context;
    ds->label_len = context;
    *fill = (split_fill){ds->images, ds->labels, first, (uint32_t)count};
    return MX_OK;
}

/* The one path of loading and inspecting; train and val are NULL when inspecting. */
static int tokens_read(const char *path, int context, double val_share, mx_tokens_info *info, mx_dataset *train,
                       mx_dataset *val)
{
    if (!path) return mx_error(MX_EINVAL, "token file: no path given");
    if (context < 1 || context > MX_TOKENS_MAX_CONTEXT)
        return mx_error(MX_EINVAL, "'%s': context %d; accepted: 1..%d tokens", path, context, MX_TOKENS_MAX_CONTEXT);
    if (!(val_share > 0 && val_share < 1))
        return mx_error(MX_EINVAL, "'%s': held-out share %g; accepted: above 0 and below 1 (default %g)", path,
                        val_share, MX_TOKENS_VAL_SHARE);
    memset(info, 0, sizeof *info);
    FILE *f;
    uint64_t size = 0;
    MX_TRY(open_regular(path, &f, &size));
    int rc = read_format(f, path, size, info);
    if (rc == MX_OK) rc = plan_split(path, context, val_share, info);
    split_fill fill[2] = {{0}};
    if (rc == MX_OK && train) rc = alloc_split(train, &fill[0], 0, info->train_windows, context, path);
    if (rc == MX_OK && val)
        rc = alloc_split(val, &fill[1], info->train_tokens, info->val_windows, context, path);
    if (rc == MX_OK) rc = read_tokens(f, path, info, train ? fill : NULL);
    fclose(f);
    if (rc == MX_OK && train) train->nclasses = val->nclasses = info->vocab;
    return rc;
}

int mx_tokens_inspect(const char *path, int context, double val_share, mx_tokens_info *info)
{
    mx_tokens_info scratch;
    return tokens_read(path, context, val_share, info ? info : &scratch, NULL, NULL);
}

int mx_tokens_validate(const char *path, int context, double val_share)
{
    return mx_tokens_inspect(path, context, val_share, NULL);
}

int mx_tokens_load(mx_dataset *train, mx_dataset *val, const char *path, int context, double val_share)
{
    memset(train, 0, sizeof *train);
    memset(val, 0, sizeof *val);
    mx_tokens_info info;
    int rc = tokens_read(path, context, val_share, &info, train, val);
    if (rc < 0) {
        mx_dataset_free(train);
        mx_dataset_free(val);
    }
    return rc;
}

const char *mx_tokens_describe(const mx_tokens_info *info, char *buf, size_t n)
{
    static const char *const what[] = {"llm.c uint16 tokens", "headerless uint16 tokens", "byte tokens"};
    char vocab[96];
    if (info->format == MX_TOKENS_BYTES)
        snprintf(vocab, sizeof vocab, "vocabulary %d (bytes)", info->vocab);
    else if (info->vocab_from_data)
        snprintf(vocab, sizeof vocab, "vocabulary %d (largest token %d + 1, above GPT-2's %d)", info->vocab,
                 info->max_token, MX_TOKENS_GPT2_VOCAB);
    else
        snprintf(vocab, sizeof vocab, "vocabulary %d (GPT-2's)", info->vocab);
    const unsigned fmt = (unsigned)info->format < 3 ? (unsigned)info->format : 2;
    snprintf(buf, n, "%s, %u tokens, %s, context %d: %d training and %d held-out windows", what[fmt], info->ntokens,
             vocab, info->context, info->train_windows, info->val_windows);
    return buf;
}
