/* Shared by the fuzz targets: the libFuzzer entry points, a reader that turns the fuzz bytes
 * into values (running dry yields zeros, so every input decodes to something), and private
 * temporary file names. Each target is built twice: with libFuzzer (scripts/fuzz.sh) and,
 * with gcc and no libFuzzer, with replay.c as main, which CTest runs on every file of
 * tests/fuzz/regress/<target>/ and tests/fuzz/corpus/<target>/. */
#ifndef MX_FUZZ_H
#define MX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *p;
    size_t n;
} fz_reader;

static inline unsigned fz_u8(fz_reader *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

static inline unsigned fz_u16(fz_reader *r) { return fz_u8(r) | fz_u8(r) << 8; }

static inline uint32_t fz_u32(fz_reader *r) { return fz_u16(r) | (uint32_t)fz_u16(r) << 16; }

/* Up to max bytes, as a pointer into the input (no copy); *len says how many. */
static inline const uint8_t *fz_bytes(fz_reader *r, size_t max, size_t *len)
{
    const uint8_t *p = r->p;
    *len = max < r->n ? max : r->n;
    r->p += *len;
    r->n -= *len;
    return p;
}

/* A length-prefixed string (one length byte, capped at max) into buf, NUL-terminated. */
static inline const char *fz_str(fz_reader *r, char *buf, size_t max)
{
    size_t want = fz_u8(r) % (max + 1), len;
    const uint8_t *p = fz_bytes(r, want, &len);
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}

/* <dir>/mxfuzz-<pid>-<name>: per process, so parallel fuzzing jobs do not collide. dir is
 * $MX_FUZZ_TMPDIR (scripts/fuzz.sh: a directory it removes, with what a crash left), else
 * /dev/shm, which keeps the files in memory, else /tmp. */
static inline const char *fz_path(char *buf, size_t n, const char *name)
{
    const char *dir = getenv("MX_FUZZ_TMPDIR");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(buf, n, "%s/mxfuzz-%ld-%s", dir, (long)getpid(), name);
    return buf;
}

/* MX_FUZZ_VERBOSE=1 makes a target say what became of each input (checking the seeds). */
static inline void fz_outcome(const char *what, int rc, const char *msg)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("MX_FUZZ_VERBOSE") && getenv("MX_FUZZ_VERBOSE")[0] == '1';
    if (verbose)
        fprintf(stderr, "  %s: %s%s%s\n", what, rc == 0 ? "ok" : "error", rc == 0 ? "" : ": ", rc == 0 ? "" : msg);
}

#endif
