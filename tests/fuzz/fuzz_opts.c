/* Fuzz target: the option parser (harness/opts.c). The first byte picks the entry point:
 * mx_opts_parse with a table holding every option type, or one of the list parsers, or
 * mx_parse_fraction; the rest of the input is split at NUL bytes into the argument strings.
 * Beyond memory errors it checks what the parser promises: a value is stored only when it
 * lies in the stated range, a list returns -1 or 1..max items, each accepted. */
#include "harness/opts.h"
#include "tests/fuzz/fuzz.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken promise is a crash, so the fuzzer saves the input. */
#define FZ_CHECK(c)                                                                    \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "fuzz_opts: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

enum { MAX_ARGS = 64, MAX_ITEMS = 16 };

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    devnull = fopen("/dev/null", "w");
    /* --help prints to stdout; nobody reads it here */
    if (devnull) dup2(fileno(devnull), 1);
    return 0;
}

/* Splits the bytes at NULs into argv[1..]; argv[0] is the subcommand name, as the CLI has it. */
static int split_args(char *buf, size_t n, char **argv)
{
    int argc = 0;
    argv[argc++] = "fuzz";
    for (size_t i = 0; i < n && argc < MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    return argc;
}

static int is_choice(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        if (!bar) return 0;
        p = bar + 1;
    }
}

/* Every option type, with ranges at the edges of what the types hold. */
static void fuzz_parse(unsigned sel, int argc, char **argv)
{
    int flag = 0, count = -7, neg = -7, wide = -7;
    double rate = -7, any = -7;
    const char *mode = NULL, *path = NULL;
    const mx_opt opts[] = {
        {.name = "flag", .type = MX_OPT_FLAG, .dst = &flag, .help = "a flag"},
        {.name = "count", .type = MX_OPT_INT, .dst = &count, .metavar = "N", .help = "a count", .lo = 1, .hi = 65536},
        {.name = "neg", .type = MX_OPT_INT, .dst = &neg, .metavar = "N", .help = "signed", .lo = -100, .hi = 100},
        {.name = "wide", .type = MX_OPT_INT, .dst = &wide, .metavar = "N", .help = "any int",
         .lo = (double)INT_MIN, .hi = (double)INT_MAX},
        {.name = "rate", .type = MX_OPT_DOUBLE, .dst = &rate, .metavar = "X", .help = "a fraction", .lo = 0, .hi = 1},
        {.name = "any", .type = MX_OPT_DOUBLE, .dst = &any, .metavar = "X", .help = "any finite number"},
        {.name = "mode", .type = MX_OPT_STRING, .dst = &mode, .metavar = "M", .help = "a choice",
         .choices = "a|bb|ccc"},
        {.name = "path", .type = MX_OPT_STRING, .dst = &path, .metavar = "FILE", .help = "any string"},
        {.name = NULL},
    };
    unsigned char seen[sizeof opts / sizeof opts[0]];
    int min_pos = (int)(sel >> 3 & 1), max_pos = (int)(sel >> 4 & 3);
    if (min_pos > max_pos) max_pos = min_pos;
    const mx_cmd_spec spec = {.cmd = "fuzz", .usage = "[options]", .summary = "fuzzing", .opts = opts,
                              .min_positional = min_pos, .max_positional = max_pos,
                              .seen = (sel & 0x40) ? seen : NULL};
    const char *pos[4];
    int npos = -1;
    int rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    FZ_CHECK(rc == MX_OPTS_OK || rc == MX_OPTS_HELP || rc == MX_OPTS_BAD);
    FZ_CHECK(npos >= 0 && npos <= max_pos);
    if (rc == MX_OPTS_OK) {
        FZ_CHECK(npos >= min_pos);
        for (int i = 0; i < npos; i++) FZ_CHECK(pos[i] != NULL);
    }
    /* stored values lie in range, even when a later argument was bad */
    FZ_CHECK(flag == 0 || flag == 1);
    FZ_CHECK(count == -7 || (count >= 1 && count <= 65536));
    FZ_CHECK(neg == -7 || (neg >= -100 && neg <= 100));
    FZ_CHECK(rate == -7 || (rate >= 0 && rate <= 1));
    FZ_CHECK(any == -7 || isfinite(any));
    FZ_CHECK(!mode || is_choice("a|bb|ccc", mode));
    (void)wide, (void)path;
    if ((sel & 0x80) && devnull) mx_opts_print_help(&spec, devnull);
}

static void fuzz_int_list(unsigned sel, const char *s)
{
    static const int ranges[][2] = {{1, 64}, {0, 1000000}, {INT_MIN, INT_MAX}, {-5, 5}};
    const int *r = ranges[(sel >> 3) % 4];
    int max = (int)(sel >> 5) * 2 + 1; /* 1..15 */
    int *out = malloc((size_t)max * sizeof *out); /* exactly max: an overrun is caught */
    if (!out) return;
    int n = mx_parse_int_list("fuzz", "list", s, out, max, r[0], r[1]);
    FZ_CHECK(n == -1 || (n >= 1 && n <= max));
    for (int i = 0; i < n; i++) FZ_CHECK(out[i] >= r[0] && out[i] <= r[1]);
    free(out);
}

static void fuzz_double_list(unsigned sel, const char *s)
{
    static const double ranges[][2] = {{0, 10}, {1e-9, 1e9}, {-1e308, 1e308}, {0, 0}};
    const double *r = ranges[(sel >> 3) % 4];
    int max = (int)(sel >> 5) * 2 + 1;
    double *out = malloc((size_t)max * sizeof *out);
    if (!out) return;
    int n = mx_parse_double_list("fuzz", "list", s, out, max, r[0], r[1]);
    FZ_CHECK(n == -1 || (n >= 1 && n <= max));
    for (int i = 0; i < n; i++) FZ_CHECK(isfinite(out[i]) && out[i] >= r[0] && out[i] <= r[1]);
    free(out);
}

static void fuzz_choice_list(unsigned sel, const char *s)
{
    static const char *const choices[] = {"data|model|layer", "a|b", "x||y", "local"};
    const char *c = choices[(sel >> 3) % 4];
    int max = (int)(sel >> 5) * 2 + 1;
    size_t bufsize = strlen(s) + 1 + (sel & 0x20 ? 0 : 3); /* exact fit, or a little more */
    if (sel & 0x80) bufsize = bufsize > 4 ? bufsize - 4 : 1; /* too small: must be refused */
    char *buf = malloc(bufsize);
    const char **out = malloc((size_t)max * sizeof *out);
    if (buf && out) {
        int n = mx_parse_choice_list("fuzz", "list", s, c, buf, bufsize, out, max);
        FZ_CHECK(n == -1 || (n >= 1 && n <= max));
        for (int i = 0; i < n; i++) {
            FZ_CHECK(out[i] >= buf && out[i] < buf + bufsize);
            FZ_CHECK(out[i][0] != '\0' && is_choice(c, out[i]));
        }
    }
    free(buf);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    unsigned sel = data[0];
    /* a private NUL-terminated copy: argv strings must be writable and end somewhere */
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[MAX_ARGS + 1];
    switch (sel % 5) {
    case 0: {
        int argc = split_args(buf, size - 1, argv);
        argv[argc] = NULL;
        fuzz_parse(sel, argc, argv);
        break;
    }
    case 1: fuzz_int_list(sel, buf); break;
    case 2: fuzz_double_list(sel, buf); break;
    case 3: fuzz_choice_list(sel, buf); break;
    case 4: {
        double x = mx_parse_fraction("fuzz", "threshold", buf);
        FZ_CHECK(x == -1 || (x >= 0 && x < 1));
        break;
    }
    }
    free(buf);
    return 0;
}
