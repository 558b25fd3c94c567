/* Language-modelling data sets: a file of tokens cut into windows of `context` tokens, each
 * with the same window shifted by one token as its labels (the next token at every position).
 *
 * Formats, told apart by content first, then by name:
 *  1. llm.c's token files: a header of 256 little-endian int32 (header[0] the magic
 *     MX_TOKENS_LLMC_MAGIC, header[1] the version, of which 1 (uint16 tokens) is accepted,
 *     header[2] the token count), then exactly that many little-endian uint16 tokens. A file
 *     whose first four bytes are the magic is this format whatever its name, and must match
 *     exactly: a short header, another version, a count of 0 or below, or a file holding
 *     fewer (truncated) or more (trailing data) token bytes than the count says are errors.
 *  2. nanoGPT's headerless uint16 files: a name ending in ".bin" that does not start with
 *     the magic: the whole file is little-endian uint16 tokens; an odd byte count is an error.
 *  3. any other file: each byte is a token (byte-level, vocabulary 256), e.g. a text file.
 *
 * Vocabulary (the data set's nclasses): 256 for bytes; for the uint16 formats GPT-2's 50257
 * (the tokenizer both carry) when every token is below 50257, else the largest token + 1,
 * which mx_tokens_describe says.
 *
 * Windows and splits: the held-out (validation) split is the last floor(val_share * N) tokens
 * of the file's N, the training split the rest, so that no window spans both. A split of L
 * tokens holds (L - 1) / context windows: window i has tokens [i*T, i*T+T) of its split as
 * inputs and [i*T+1, i*T+T+1) as labels (T = context); the tokens after the last window are
 * unused. Each split must hold at least one window.
 *
 * A loaded split is an mx_dataset of n windows with c = 1, h = 1, w = context: images holds
 * n * context floats, each an integer token id (exact: ids are below 2^16); labels holds
 * n * context int32 token ids, label_len = context; every id, input or label, is below
 * nclasses.
 *
 * Limits, checked before anything is allocated: a file holds 1..MX_TOKENS_MAX tokens
 * (2^28, so that one split's windows, as floats and as int32 labels, stay within 2 GiB and
 * every count fits an int); context is 1..MX_TOKENS_MAX_CONTEXT; 0 < val_share < 1.
 *
 * Errors, each naming the file and the value: MX_EIO (missing, unreadable, a directory or
 * not a regular file; with strerror), MX_EFORMAT (the content: empty, bad header, truncated,
 * trailing data, odd length, too many tokens, too few tokens for a window in a split, which
 * names the token count, the context and the split), MX_EINVAL (context or val_share out of
 * range), MX_ENOMEM. */
#ifndef MX_TOKENS_H
#define MX_TOKENS_H

#include "workloads/dataset.h"

#include <stddef.h>
#include <stdint.h>

#define MX_TOKENS_LLMC_MAGIC 20240520
#define MX_TOKENS_LLMC_VERSION 1
#define MX_TOKENS_LLMC_HEADER_BYTES 1024 /* 256 int32 */
#define MX_TOKENS_MAX (1u << 28)
#define MX_TOKENS_MAX_CONTEXT 65536
#define MX_TOKENS_GPT2_VOCAB 50257
#define MX_TOKENS_BYTE_VOCAB 256
#define MX_TOKENS_VAL_SHARE 0.1 /* the default held-out share */

typedef enum {
    MX_TOKENS_LLMC,  /* llm.c: 1024-byte header, uint16 tokens */
    MX_TOKENS_UINT16, /* nanoGPT: headerless uint16 tokens, a .bin name */
    MX_TOKENS_BYTES, /* any other file: one token per byte */
} mx_tokens_format;

/* What a token file holds and how it splits, as mx_tokens_inspect found it. */
typedef struct {
    mx_tokens_format format;
    uint32_t ntokens;        /* tokens in the file, 1..MX_TOKENS_MAX */
    int max_token;           /* the largest token id in the file */
    int vocab;               /* the data set's nclasses */
    int vocab_from_data;     /* 1: vocab is max_token + 1 (a uint16 token at or above 50257) */
    int context;             /* T, as asked */
    uint32_t train_tokens;   /* the training split: tokens [0, train_tokens) */
    uint32_t val_tokens;     /* the held-out split: the last val_tokens tokens */
    int train_windows;       /* (train_tokens - 1) / context */
    int val_windows;         /* (val_tokens - 1) / context */
} mx_tokens_info;

/* The format's name, for messages and the results record: "llm.c", "uint16" or "bytes". */
const char *mx_tokens_format_name(mx_tokens_format format);

/* Every check of mx_tokens_load (the whole file is read, for the vocabulary), keeping no
 * data: MX_OK with *info filled in (info may be NULL), or exactly the code and message that
 * mx_tokens_load would give for the same arguments. Peak memory is one read buffer. */
int mx_tokens_inspect(const char *path, int context, double val_share, mx_tokens_info *info);

/* mx_tokens_inspect without the info: for validating user input before any work starts
 * (a sweep, before its first row). */
int mx_tokens_validate(const char *path, int context, double val_share);

/* Reads the token file at path into its training and held-out splits of windows (above).
 * On error both data sets are left empty (mx_dataset_free on them is still fine); on success
 * each has n >= 1 windows. Peak memory is the two splits plus one read buffer: tokens go
 * straight from the file into the windows. */
int mx_tokens_load(mx_dataset *train, mx_dataset *val, const char *path, int context, double val_share);

/* One line for messages and logs, e.g. "llm.c uint16 tokens, 1000000 tokens, vocabulary
 * 50257 (GPT-2's), context 64: 14062 training and 1562 held-out windows"; a vocabulary taken
 * from the data says so. Writes at most n bytes, NUL-terminated (n >= 1); returns buf. */
const char *mx_tokens_describe(const mx_tokens_info *info, char *buf, size_t n);

#endif
