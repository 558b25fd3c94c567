/* Token data sets (workloads/tokens.h) from files this test writes itself: each format (a
 * text file read as bytes, llm.c's header and uint16 tokens, nanoGPT's headerless .bin) told
 * apart as documented, every window and label checked value by value against the token
 * stream, the held-out split at the stream's end, the vocabulary rule, and every bad file
 * and argument with its error code, the value named in its message, both splits left empty,
 * and the same code and message from mx_tokens_validate. */
#include "base/status.h"
#include "tests/check.h"
#include "tests/idx_fixtures.h"
#include "workloads/dataset.h"
#include "workloads/tokens.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A token stream whose neighbours differ and which covers 0 and the top of GPT-2's range,
 * so that an offset, a byte order or a width mistake shows. */
static int token_at(uint32_t i) { return i == 3 ? 0 : i == 5 ? 50256 : (int)((i * 7919u + 13) % 50000u); }

static void put_le16(uint8_t *p, int v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* An llm.c file: header (magic, version, declared count), then n tokens from token_at with
 * `top` (when >= 0) in place of the token at position 7. */
static void write_llmc(const char *name, uint32_t version, int32_t declared, uint32_t n, int top)
{
    size_t len = MX_TOKENS_LLMC_HEADER_BYTES + 2 * (size_t)n;
    uint8_t *b = calloc(1, len);
    put_le32(b, MX_TOKENS_LLMC_MAGIC);
    put_le32(b + 4, version);
    put_le32(b + 8, (uint32_t)declared);
    for (uint32_t i = 0; i < n; i++)
        put_le16(b + MX_TOKENS_LLMC_HEADER_BYTES + 2 * i, i == 7 && top >= 0 ? top : token_at(i));
    write_raw(name, b, len);
    free(b);
}

/* The same tokens without a header (nanoGPT's .bin). */
static void write_u16(const char *name, uint32_t n, int top)
{
    uint8_t *b = malloc(2 * (size_t)n + 1);
    for (uint32_t i = 0; i < n; i++) put_le16(b + 2 * i, i == 7 && top >= 0 ? top : token_at(i));
    write_raw(name, b, 2 * (size_t)n);
    free(b);
}

/* Every input and label of both splits against the stream: train window i holds tokens
 * [i*T, i*T+T), labels one later; the held-out split the same from train_tokens on. */
static void check_windows(const mx_dataset *train, const mx_dataset *val, const mx_tokens_info *info,
                          int (*tok)(uint32_t), const char *what)
{
    const int T = info->context;
    const mx_dataset *split[2] = {train, val};
    const uint32_t first[2] = {0, info->train_tokens};
    const int windows[2] = {info->train_windows, info->val_windows};
    for (int s = 0; s < 2; s++) {
        const mx_dataset *ds = split[s];
        CHECK(ds->n == windows[s] && ds->c == 1 && ds->h == 1 && ds->w == T && ds->label_len == T,
              "%s split %d: n %d c %d h %d w %d label_len %d, expected %d windows of %d", what, s, ds->n, ds->c,
              ds->h, ds->w, ds->label_len, windows[s], T);
        CHECK(ds->nclasses == info->vocab, "%s split %d: nclasses %d, vocabulary %d", what, s, ds->nclasses,
              info->vocab);
        if (ds->n != windows[s] || ds->w != T) continue;
        int bad_in = 0, bad_lab = 0, out_of_range = 0;
        for (uint32_t k = 0; k < (uint32_t)ds->n * (uint32_t)T; k++) {
            bad_in += ds->images[k] != (float)tok(first[s] + k);
            bad_lab += ds->labels[k] != tok(first[s] + k + 1);
            out_of_range += ds->labels[k] < 0 || ds->labels[k] >= ds->nclasses || ds->images[k] >= ds->nclasses;
        }
        CHECK(bad_in == 0, "%s split %d: %d inputs differ from the token stream", what, s, bad_in);
        CHECK(bad_lab == 0, "%s split %d: %d labels are not the next token", what, s, bad_lab);
        CHECK(out_of_range == 0, "%s split %d: %d ids at or above nclasses", what, s, out_of_range);
        /* the last label of the split is its token (windows * T), inside the split */
        CHECK(first[s] + (uint32_t)ds->n * (uint32_t)T < first[s] + (s ? info->val_tokens : info->train_tokens),
              "%s split %d: a window reaches past its split", what, s);
    }
}

static const char *text =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity.\n";
static int text_at(uint32_t i) { return (unsigned char)text[i]; }

static void test_text(void)
{
    write_raw("story.txt", text, strlen(text));
    mx_tokens_info info;
    const uint32_t n = (uint32_t)strlen(text);
    CHECK(mx_tokens_inspect(in_tmp("story.txt"), 8, 0.25, &info) == MX_OK, "text: %s", mx_last_error());
    CHECK(info.format == MX_TOKENS_BYTES && info.vocab == 256 && info.ntokens == n, "text: format %s vocab %d n %u",
          mx_tokens_format_name(info.format), info.vocab, info.ntokens);
    CHECK(info.val_tokens == (uint32_t)(0.25 * n) && info.train_tokens == n - info.val_tokens,
          "text: split %u + %u of %u", info.train_tokens, info.val_tokens, n);
    CHECK(info.train_windows == (int)((info.train_tokens - 1) / 8) &&
              info.val_windows == (int)((info.val_tokens - 1) / 8),
          "text: windows %d %d", info.train_windows, info.val_windows);
    CHECK(info.max_token == 'y', "text: largest byte %d, expected 'y'", info.max_token);
    mx_dataset train, val;
    int rc = mx_tokens_load(&train, &val, in_tmp("story.txt"), 8, 0.25);
    CHECK(rc == MX_OK, "text load: %s", mx_last_error());
    if (rc == MX_OK) check_windows(&train, &val, &info, text_at, "text");
    if (rc == MX_OK)
        CHECK(train.images[0] == 'I' && train.labels[0] == 't' && train.images[8] == 'h' && train.labels[7] == 'h',
              "text: first window %g->%d, second starts %g", train.images[0], train.labels[0], train.images[8]);
    mx_dataset_free(&train);
    mx_dataset_free(&val);
    char line[256];
    mx_tokens_describe(&info, line, sizeof line);
    printf("  text: %s\n", line);
    CHECK(contains(line, "vocabulary 256") && contains(line, "byte"), "text: description %s", line);
    /* a .txt holding what a .bin would: still bytes, since only content and a .bin name decide */
    write_u16("tokens.txt", 100, -1);
    CHECK(mx_tokens_inspect(in_tmp("tokens.txt"), 4, 0.1, &info) == MX_OK && info.format == MX_TOKENS_BYTES &&
              info.ntokens == 200,
          "uint16 data under a .txt name: format %s, %u tokens", mx_tokens_format_name(info.format), info.ntokens);
}

static int top_token = -1; /* the token at position 7, for the vocabulary cases */
static int stream_at(uint32_t i) { return i == 7 && top_token >= 0 ? top_token : token_at(i); }

static void test_uint16(void)
{
    /* 1000 tokens, context 8, 10% held out: 900 + 100 tokens, 112 + 12 windows */
    write_llmc("llmc.bin", 1, 1000, 1000, -1);
    write_llmc("llmc.dat", 1, 1000, 1000, -1); /* the magic decides, not the name */
    write_u16("nano.bin", 1000, -1);
    const char *files[3] = {"llmc.bin", "llmc.dat", "nano.bin"};
    const mx_tokens_format formats[3] = {MX_TOKENS_LLMC, MX_TOKENS_LLMC, MX_TOKENS_UINT16};
    for (int i = 0; i < 3; i++) {
        mx_tokens_info info;
        mx_dataset train, val;
        top_token = -1;
        CHECK(mx_tokens_inspect(in_tmp(files[i]), 8, 0.1, &info) == MX_OK, "%s: %s", files[i], mx_last_error());
        CHECK(info.format == formats[i] && info.ntokens == 1000 && info.vocab == MX_TOKENS_GPT2_VOCAB &&
                  !info.vocab_from_data && info.max_token == 50256,
              "%s: format %s, %u tokens, vocabulary %d (largest %d)", files[i], mx_tokens_format_name(info.format),
              info.ntokens, info.vocab, info.max_token);
        CHECK(info.train_tokens == 900 && info.val_tokens == 100 && info.train_windows == 112 &&
                  info.val_windows == 12,
              "%s: split %u/%u, windows %d/%d", files[i], info.train_tokens, info.val_tokens, info.train_windows,
              info.val_windows);
        int rc = mx_tokens_load(&train, &val, in_tmp(files[i]), 8, 0.1);
        CHECK(rc == MX_OK, "%s load: %s", files[i], mx_last_error());
        if (rc == MX_OK) check_windows(&train, &val, &info, stream_at, files[i]);
        mx_dataset_free(&train);
        mx_dataset_free(&val);
    }
    CHECK(strcmp(mx_tokens_format_name(MX_TOKENS_LLMC), "llm.c") == 0 &&
              strcmp(mx_tokens_format_name(MX_TOKENS_UINT16), "uint16") == 0 &&
              strcmp(mx_tokens_format_name(MX_TOKENS_BYTES), "bytes") == 0,
          "format names");
}

/* GPT-2's 50257 while every token is below it; the largest + 1 from 50257 on, said so. */
static void test_vocabulary(void)
{
    const int tops[4] = {50256, 50257, 60000, 65535};
    const int vocabs[4] = {50257, 50258, 60001, 65536};
    for (int i = 0; i < 4; i++) {
        for (int headerless = 0; headerless < 2; headerless++) {
            const char *name = headerless ? "top.bin" : "top-llmc.bin";
            if (headerless) write_u16(name, 300, tops[i]);
            else write_llmc(name, 1, 300, 300, tops[i]);
            mx_tokens_info info;
            mx_dataset train, val;
            top_token = tops[i];
            int rc = mx_tokens_load(&train, &val, in_tmp(name), 16, 0.2);
            CHECK(rc == MX_OK, "%s top %d: %s", name, tops[i], mx_last_error());
            CHECK(mx_tokens_inspect(in_tmp(name), 16, 0.2, &info) == MX_OK && info.vocab == vocabs[i] &&
                      info.max_token == tops[i] && info.vocab_from_data == (tops[i] >= 50257),
                  "%s top %d: vocabulary %d (from data %d), expected %d", name, tops[i], info.vocab,
                  info.vocab_from_data, vocabs[i]);
            if (rc == MX_OK) {
                CHECK(train.nclasses == vocabs[i] && val.nclasses == vocabs[i], "%s top %d: nclasses %d %d", name,
                      tops[i], train.nclasses, val.nclasses);
                CHECK(train.images[7] == (float)tops[i] && train.labels[6] == tops[i], "%s: token 7 is %g / %d",
                      name, train.images[7], train.labels[6]);
                check_windows(&train, &val, &info, stream_at, name);
            }
            mx_dataset_free(&train);
            mx_dataset_free(&val);
            char line[256], want[32];
            mx_tokens_describe(&info, line, sizeof line);
            snprintf(want, sizeof want, "vocabulary %d", vocabs[i]);
            CHECK(contains(line, want) && contains(line, "GPT-2") &&
                      contains(line, "largest token") == (tops[i] >= 50257),
                  "%s top %d: description %s", name, tops[i], line);
            if (i == 2 && headerless) printf("  %s\n", line);
        }
    }
    top_token = -1;
}

/* Loading must fail with code, naming each of the words, leaving both splits empty; the
 * check that keeps no data gives the same code and message. */
static void expect_error(const char *path, int context, double share, int code, const char *what, const char *word1,
                         const char *word2)
{
    mx_dataset train, val;
    memset(&train, 0xab, sizeof train); /* not pre-cleared: the loader must empty them itself */
    memset(&val, 0xab, sizeof val);
    int rc = mx_tokens_load(&train, &val, path, context, share);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mx_last_error());
    printf("  %-26s -> %s: %s\n", what, mx_status_name(rc), msg);
    CHECK(rc == code, "%s: got %d (%s), expected %d", what, rc, msg, code);
    CHECK(is_empty(&train) && is_empty(&val), "%s: data sets not left empty on error", what);
    CHECK(contains(msg, word1), "%s: message lacks '%s': %s", what, word1, msg);
    if (word2) CHECK(contains(msg, word2), "%s: message lacks '%s': %s", what, word2, msg);
    if (rc == MX_OK) {
        mx_dataset_free(&train);
        mx_dataset_free(&val);
    }
    int vrc = mx_tokens_validate(path, context, share);
    CHECK(vrc == rc && strcmp(mx_last_error(), msg) == 0, "%s: validate gives %d '%s', load gave %d '%s'", what, vrc,
          mx_last_error(), rc, msg);
}

static void test_bad_files(void)
{
    write_llmc("ok.bin", 1, 1000, 1000, -1);
    blob ok = read_whole("ok.bin");
    write_raw("cut.bin", ok.data, ok.len - 2);
    expect_error(in_tmp("cut.bin"), 8, 0.1, MX_EFORMAT, "llm.c truncated", "truncated", "1998 bytes");
    write_raw("cut-header.bin", ok.data, 100);
    expect_error(in_tmp("cut-header.bin"), 8, 0.1, MX_EFORMAT, "llm.c header cut", "header", "100 bytes");
    write_raw("magic-only.txt", ok.data, 4);
    expect_error(in_tmp("magic-only.txt"), 1, 0.5, MX_EFORMAT, "magic alone", "header", "4 bytes");
    free(ok.data);
    write_llmc("v2.bin", 2, 1000, 1000, -1);
    expect_error(in_tmp("v2.bin"), 8, 0.1, MX_EFORMAT, "llm.c version 2", "version 2", "accepted: 1");
    write_llmc("v0.bin", 0, 1000, 1000, -1);
    expect_error(in_tmp("v0.bin"), 8, 0.1, MX_EFORMAT, "llm.c version 0", "version 0", NULL);
    write_llmc("more.bin", 1, 1001, 1000, -1);
    expect_error(in_tmp("more.bin"), 8, 0.1, MX_EFORMAT, "count above the data", "1001 tokens", "truncated");
    write_llmc("fewer.bin", 1, 999, 1000, -1);
    expect_error(in_tmp("fewer.bin"), 8, 0.1, MX_EFORMAT, "count below the data", "999 tokens", "trailing data");
    write_llmc("zero.bin", 1, 0, 10, -1);
    expect_error(in_tmp("zero.bin"), 8, 0.1, MX_EFORMAT, "count 0", "declares 0 tokens", NULL);
    write_llmc("negative.bin", 1, -5, 10, -1);
    expect_error(in_tmp("negative.bin"), 8, 0.1, MX_EFORMAT, "count -5", "declares -5 tokens", NULL);
    write_llmc("huge.bin", 1, (int32_t)MX_TOKENS_MAX + 1, 10, -1);
    expect_error(in_tmp("huge.bin"), 8, 0.1, MX_EFORMAT, "count above 2^28", "268435457", "268435456");

    uint8_t odd[7] = {1, 0, 2, 0, 3, 0, 4};
    write_raw("odd.bin", odd, sizeof odd);
    expect_error(in_tmp("odd.bin"), 1, 0.5, MX_EFORMAT, "odd-length .bin", "7 bytes", "odd");
    write_raw("empty.txt", odd, 0);
    expect_error(in_tmp("empty.txt"), 8, 0.1, MX_EFORMAT, "empty file", "empty", "0 bytes");
    write_raw("empty.bin", odd, 0);
    expect_error(in_tmp("empty.bin"), 8, 0.1, MX_EFORMAT, "empty .bin", "empty", NULL);

    /* too few tokens: 41 tokens, context 4, 10% held out: 4 held-out tokens, no window of 5 */
    write_raw("short.txt", text, 41);
    expect_error(in_tmp("short.txt"), 4, 0.1, MX_EFORMAT, "no held-out window", "41 tokens", "held-out split");
    expect_error(in_tmp("short.txt"), 4, 0.1, MX_EFORMAT, "no held-out window", "context 4", "last 4 tokens");
    /* 50 tokens give 5 held-out tokens: one window, and 45 training tokens: 11 windows */
    write_raw("fifty.txt", text, 50);
    mx_tokens_info info;
    CHECK(mx_tokens_inspect(in_tmp("fifty.txt"), 4, 0.1, &info) == MX_OK && info.val_windows == 1 &&
              info.train_windows == 11,
          "fifty tokens: %s; windows %d/%d", mx_last_error(), info.train_windows, info.val_windows);
    expect_error(in_tmp("fifty.txt"), 4, 0.95, MX_EFORMAT, "no training window", "training split", "first 3 tokens");
    expect_error(in_tmp("fifty.txt"), 65536, 0.1, MX_EFORMAT, "context 65536, 50 tokens", "context 65536",
                 "65537 tokens");

    /* beyond 2^28 tokens: refused from the size alone (sparse files: nothing is written) */
    const char *big[2] = {"big.txt", "big.bin"};
    const off_t big_size[2] = {(off_t)MX_TOKENS_MAX + 1, 2 * (off_t)MX_TOKENS_MAX + 2};
    for (int i = 0; i < 2; i++) {
        write_raw(big[i], odd, 0);
        if (truncate(in_tmp(big[i]), big_size[i]) != 0) {
            printf("  (no sparse file here: the size limit of %s is untested)\n", big[i]);
            continue;
        }
        expect_error(in_tmp(big[i]), 8, 0.1, MX_EFORMAT, big[i], "268435457 tokens", "2^28");
        unlink(in_tmp(big[i]));
    }
}

static void test_bad_access_and_arguments(void)
{
    expect_error(in_tmp("missing.bin"), 8, 0.1, MX_EIO, "missing file", "missing.bin", "No such file");
    mkdir(in_tmp("adir"), 0700);
    expect_error(in_tmp("adir"), 8, 0.1, MX_EIO, "a directory", "directory", "adir");
    rmdir(in_tmp("adir"));
    if (mkfifo(in_tmp("fifo"), 0600) == 0) {
        expect_error(in_tmp("fifo"), 8, 0.1, MX_EIO, "a FIFO", "FIFO", "not a regular file");
        unlink(in_tmp("fifo"));
    }
    write_raw("args.txt", text, strlen(text));
    expect_error(in_tmp("args.txt"), 0, 0.1, MX_EINVAL, "context 0", "context 0", "1..65536");
    expect_error(in_tmp("args.txt"), 65537, 0.1, MX_EINVAL, "context 65537", "context 65537", "1..65536");
    expect_error(in_tmp("args.txt"), -3, 0.1, MX_EINVAL, "context -3", "context -3", NULL);
    const double shares[4] = {0, 1, -0.1, NAN};
    const char *named[4] = {"share 0", "share 1", "share -0.1", "share nan"};
    for (int i = 0; i < 4; i++)
        expect_error(in_tmp("args.txt"), 8, shares[i], MX_EINVAL, named[i], named[i], "above 0 and below 1");
    expect_error(NULL, 8, 0.1, MX_EINVAL, "no path", "no path", NULL);
}

/* The smallest file that loads: four bytes, context 1, half held out: one window per split. */
static void test_smallest(void)
{
    write_raw("four.txt", "abcd", 4);
    mx_dataset train, val;
    int rc = mx_tokens_load(&train, &val, in_tmp("four.txt"), 1, 0.5);
    CHECK(rc == MX_OK, "four bytes, context 1: %s", mx_last_error());
    if (rc == MX_OK) {
        CHECK(train.n == 1 && val.n == 1 && train.images[0] == 'a' && train.labels[0] == 'b' &&
                  val.images[0] == 'c' && val.labels[0] == 'd',
              "four bytes: train %d window(s) %g->%d, held-out %d %g->%d", train.n, train.images[0], train.labels[0],
              val.n, val.images[0], val.labels[0]);
    }
    mx_dataset_free(&train);
    mx_dataset_free(&val);
    expect_error(in_tmp("four.txt"), 2, 0.5, MX_EFORMAT, "four bytes, context 2", "4 tokens", "context 2");
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_text();
    test_uint16();
    test_vocabulary();
    test_bad_files();
    test_bad_access_and_arguments();
    test_smallest();
    remove_tmpdir();
    return check_summary("test_tokens");
}
