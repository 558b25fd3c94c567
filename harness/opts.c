/* Option parsing for the mxbench subcommands (see opts.h): every error names the option,
 * the bad value and what is accepted. */
#include "opts.h"
#include "base/status.h"
#include "harness/commands.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static mx_help_format help_format = MX_HELP_TEXT;

void mx_opts_set_help_format(mx_help_format format) { help_format = format; }

static const mx_opt *find_opt(const mx_opt *opts, const char *name, size_t len)
{
    for (const mx_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

int mx_choice_ok(const char *choices, const char *v)
{
    if (!choices) return 1;
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

static int bad(const mx_cmd_spec *spec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const mx_cmd_spec *spec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", spec->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see '%s --help')\n", spec->cmd);
    va_end(ap);
    return MX_OPTS_BAD;
}

static int has_range(const mx_opt *o) { return o->lo != 0 || o->hi != 0; }

/* "1..65536" for integers, "0..1" for numbers. */
static const char *range_text(const mx_opt *o, char *buf, size_t n)
{
    if (o->type == MX_OPT_INT)
        snprintf(buf, n, "%.0f..%.0f", o->lo, o->hi);
    else
        snprintf(buf, n, "%g..%g", o->lo, o->hi);
    return buf;
}

static int set_value(const mx_cmd_spec *spec, const mx_opt *o, const char *v)
{
    char *end, r[64];
    switch (o->type) {
    case MX_OPT_FLAG: *(int *)o->dst = 1; return MX_OPTS_OK;
    case MX_OPT_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end)
            return bad(spec, "--%s: '%s' is not an integer; accepted %s", o->name, v, range_text(o, r, sizeof r));
        if (x < o->lo || x > o->hi)
            return bad(spec, "--%s: %s is out of range; accepted %s", o->name, v, range_text(o, r, sizeof r));
        *(int *)o->dst = (int)x;
        return MX_OPTS_OK;
    }
    case MX_OPT_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x))
            return bad(spec, "--%s: '%s' is not a number%s%s", o->name, v, has_range(o) ? "; accepted " : "",
                       has_range(o) ? range_text(o, r, sizeof r) : "");
        if (has_range(o) && (x < o->lo || x > o->hi))
            return bad(spec, "--%s: %s is out of range; accepted %s", o->name, v, range_text(o, r, sizeof r));
        *(double *)o->dst = x;
        return MX_OPTS_OK;
    }
    case MX_OPT_STRING:
        if (!mx_choice_ok(o->choices, v))
            return bad(spec, "--%s: '%s' is not accepted; choose one of %s", o->name, v, o->choices);
        *(const char **)o->dst = v;
        return MX_OPTS_OK;
    }
    return MX_OPTS_BAD;
}

/* An integer option without bounds is a bug in the table, caught on every invocation so that
 * any test of the command finds it. */
static int check_table(const mx_cmd_spec *spec)
{
    for (const mx_opt *o = spec->opts; o->name; o++)
        if (o->type == MX_OPT_INT && !(o->hi > o->lo))
            return bad(spec, "internal error: option --%s has no accepted range", o->name);
    return MX_OPTS_OK;
}

int mx_opts_seen(const mx_cmd_spec *spec, const char *name)
{
    for (int i = 0; spec->seen && spec->opts[i].name; i++)
        if (strcmp(spec->opts[i].name, name) == 0) return spec->seen[i];
    return 0;
}

int mx_opts_parse(const mx_cmd_spec *spec, int argc, char **argv, const char **pos, int *npos)
{
    *npos = 0;
    if (check_table(spec) != MX_OPTS_OK) return MX_OPTS_BAD;
    for (int i = 0; spec->seen && spec->opts[i].name; i++) spec->seen[i] = 0;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            if (help_format == MX_HELP_MARKDOWN)
                mx_opts_print_markdown(spec, stdout);
            else
                mx_opts_print_help(spec, stdout);
            return MX_OPTS_HELP;
        }
        if (!only_positional && strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (!only_positional && a[0] == '-' && a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const mx_opt *o = find_opt(spec->opts, name, len);
            if (!o) return bad(spec, "unknown option '%s'", a);
            const char *v = NULL;
            if (o->type == MX_OPT_FLAG) {
                if (eq) return bad(spec, "--%s takes no value (got '%s')", o->name, eq + 1);
            } else if (eq) {
                v = eq + 1;
            } else if (i + 1 < argc) {
                v = argv[++i];
            } else {
                return bad(spec, "--%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
            }
            int rc = set_value(spec, o, v);
            if (rc != MX_OPTS_OK) return rc;
            if (spec->seen) spec->seen[o - spec->opts] = 1;
            continue;
        }
        if (!only_positional && a[0] == '-' && a[1] != '\0')
            return bad(spec, "unknown option '%s' (options are long: --name)", a);
        if (*npos >= spec->max_positional)
            return bad(spec, "unexpected argument '%s'", a);
        pos[(*npos)++] = a;
    }
    if (*npos < spec->min_positional)
        return bad(spec, "missing argument: usage: %s %s", spec->cmd, spec->usage);
    return MX_OPTS_OK;
}

void mx_opts_print_help(const mx_cmd_spec *spec, FILE *f)
{
    fprintf(f, "usage: %s %s\n\n%s\n", spec->cmd, spec->usage, spec->summary);
    if (!spec->opts[0].name) return;
    fprintf(f, "\noptions:\n");
    for (const mx_opt *o = spec->opts; o->name; o++) {
        char left[64], r[64];
        if (o->type == MX_OPT_FLAG)
            snprintf(left, sizeof left, "--%s", o->name);
        else
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        if (has_range(o))
            fprintf(f, "  %-26s %s [%s]\n", left, o->help, range_text(o, r, sizeof r));
        else
            fprintf(f, "  %-26s %s\n", left, o->help);
    }
    fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
}

/* ---- the Markdown table */

/* Where a help text states its default (see opts.h): the value is help[d0, d1), and the
 * meaning column leaves out help[c0, c1), the phrase that stated it. */
typedef struct {
    size_t d0, d1, c0, c1;
} stated_default;

/* The end of the parenthesis open at depth 1 before i: the index of its ')', else of the end. */
static size_t paren_end(const char *h, size_t i)
{
    for (int depth = 1; h[i]; i++) {
        if (h[i] == '(') depth++;
        if (h[i] == ')' && --depth == 0) break;
    }
    return i;
}

static int paren_depth(const char *h, size_t end)
{
    int depth = 0;
    for (size_t i = 0; i < end; i++) depth += (h[i] == '(') - (h[i] == ')');
    return depth;
}

/* The first of "X (default)", "(default X)", "(default: X)" and "(...; default X)"; 0 when the
 * text states none (a flag, an option whose absence is its default). */
static int find_default(const char *h, stated_default *d)
{
    static const char word[] = "default";
    for (const char *p = strstr(h, word); p; p = strstr(p + 1, word)) {
        const size_t at = (size_t)(p - h), after = at + sizeof word - 1;
        const int open = at > 0 && h[at - 1] == '(';
        if (open && h[after] == ')') {
            size_t c0 = at - 1 > 0 && h[at - 2] == ' ' ? at - 2 : at - 1, w0 = c0;
            while (w0 > 0 && !strchr(" ,;(", h[w0 - 1])) w0--;
            if (w0 == c0) continue;
            *d = (stated_default){w0, c0, c0, after + 1};
            return 1;
        }
        const int inner = at > 1 && h[at - 2] == ';' && h[at - 1] == ' ' && paren_depth(h, at) > 0;
        if ((!open && !inner) || (h[after] != ' ' && h[after] != ':')) continue;
        size_t v0 = after, v1;
        while (h[v0] == ':' || h[v0] == ' ') v0++;
        const size_t end = paren_end(h, v0);
        for (v1 = end; v1 > v0 && h[v1 - 1] == ' ';) v1--;
        if (v1 == v0) continue;
        size_t c0 = open ? at - 1 : at - 2, c1 = open && h[end] == ')' ? end + 1 : end;
        if (open && c0 > 0 && h[c0 - 1] == ' ') c0--;
        if (c0 == 0)
            while (h[c1] == ' ') c1++; /* a help that starts with its default: the meaning starts after it */
        *d = (stated_default){v0, v1, c0, c1};
        return 1;
    }
    return 0;
}

/* Text inside a table cell: one line, and nothing Markdown would read as a column break, a tag,
 * code or emphasis ("dist_*" twice on a line, "<run id>"). */
static void put_cell(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        if (strchr("\\|*<`~", s[i])) fputc('\\', f);
        fputc(s[i] == '\n' ? ' ' : s[i], f);
    }
}

static void put_choices(FILE *f, const char *choices)
{
    for (const char *c = choices; *c; c++)
        if (*c == '|')
            fputs(", ", f);
        else
            put_cell(f, c, 1);
}

void mx_opts_print_markdown(const mx_cmd_spec *spec, FILE *f)
{
    fprintf(f, "| option | argument | default | meaning |\n| --- | --- | --- | --- |\n");
    for (const mx_opt *o = spec->opts; o->name; o++) {
        char r[64];
        fprintf(f, "| `--%s` | ", o->name);
        if (o->type != MX_OPT_FLAG) {
            fprintf(f, "`%s`", o->metavar ? o->metavar : "VALUE");
            if (has_range(o)) fprintf(f, ": %s", range_text(o, r, sizeof r));
            if (o->type == MX_OPT_STRING && o->choices) {
                fputs(": ", f);
                put_choices(f, o->choices);
            }
        }
        const char *h = o->help ? o->help : "";
        stated_default d = {0, 0, 0, 0};
        fputs(" | ", f);
        if (find_default(h, &d)) put_cell(f, h + d.d0, d.d1 - d.d0);
        fputs(" | ", f);
        put_cell(f, h, d.c0 < d.c1 ? d.c0 : strlen(h));
        if (d.c0 < d.c1) put_cell(f, h + d.c1, strlen(h + d.c1));
        fputs(" |\n", f);
    }
    fprintf(f, "| `-h`, `--help` |  |  | show this help |\n");
}

int mx_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see '%s --help')\n", cmd);
    va_end(ap);
    return MX_OPTS_BAD;
}

/* Splits s at commas; calls item() on each, which returns 0 or -1 (already reported).
 * Empty items are errors: a trailing comma is a typo, not an empty entry. */
static int parse_list(const char *cmd, const char *opt, const char *s, int max,
                      int (*item)(const char *cmd, const char *opt, const char *s, const char *p, char **end, int i,
                                  void *ctx),
                      void *ctx)
{
    int n = 0;
    const char *p = s;
    for (;;) {
        if (*p == ',' || *p == '\0') {
            mx_usage_error(cmd, "--%s: '%s' has an empty item%s", opt, s, n ? " (a stray comma?)" : "");
            return -1;
        }
        if (n == max) {
            mx_usage_error(cmd, "--%s: more than %d items in '%s'", opt, max, s);
            return -1;
        }
        char *end;
        if (item(cmd, opt, s, p, &end, n, ctx) < 0) return -1;
        n++;
        if (*end == '\0') return n;
        p = end + 1;
    }
}

typedef struct {
    int *out;
    int lo, hi;
} int_items;

static int int_item(const char *cmd, const char *opt, const char *s, const char *p, char **end, int i, void *ctx)
{
    const int_items *c = ctx;
    errno = 0;
    long x = strtol(p, end, 10);
    if (errno || *end == p || (**end && **end != ',')) {
        mx_usage_error(cmd, "--%s: '%s' is not a comma list of integers (accepted %d..%d)", opt, s, c->lo, c->hi);
        return -1;
    }
    if (x < c->lo || x > c->hi) {
        mx_usage_error(cmd, "--%s: %ld in '%s' is out of range; accepted %d..%d", opt, x, s, c->lo, c->hi);
        return -1;
    }
    c->out[i] = (int)x;
    return 0;
}

int mx_parse_int_list(const char *cmd, const char *opt, const char *s, int *out, int max, int lo, int hi)
{
    int_items c = {out, lo, hi};
    return parse_list(cmd, opt, s, max, int_item, &c);
}

typedef struct {
    double *out;
    double lo, hi;
} double_items;

static int double_item(const char *cmd, const char *opt, const char *s, const char *p, char **end, int i, void *ctx)
{
    const double_items *c = ctx;
    errno = 0;
    double x = strtod(p, end);
    if (errno || *end == p || (**end && **end != ',') || !isfinite(x)) {
        mx_usage_error(cmd, "--%s: '%s' is not a comma list of numbers (accepted %g..%g)", opt, s, c->lo, c->hi);
        return -1;
    }
    if (x < c->lo || x > c->hi) {
        mx_usage_error(cmd, "--%s: %g in '%s' is out of range; accepted %g..%g", opt, x, s, c->lo, c->hi);
        return -1;
    }
    c->out[i] = x;
    return 0;
}

int mx_parse_double_list(const char *cmd, const char *opt, const char *s, double *out, int max, double lo,
                         double hi)
{
    double_items c = {out, lo, hi};
    return parse_list(cmd, opt, s, max, double_item, &c);
}

int mx_parse_choice_list(const char *cmd, const char *opt, const char *s, const char *choices, char *buf,
                         size_t bufsize, const char **out, int max)
{
    if (strlen(s) + 1 > bufsize) {
        mx_usage_error(cmd, "--%s: value too long (%zu characters)", opt, strlen(s));
        return -1;
    }
    strcpy(buf, s);
    int n = 0;
    for (char *tok = buf;; n++) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (!*tok) {
            mx_usage_error(cmd, "--%s: '%s' has an empty item%s", opt, s, n ? " (a stray comma?)" : "");
            return -1;
        }
        if (!mx_choice_ok(choices, tok)) {
            mx_usage_error(cmd, "--%s: '%s' is not accepted; choose from %s", opt, tok, choices);
            return -1;
        }
        if (n == max) {
            mx_usage_error(cmd, "--%s: more than %d items in '%s'", opt, max, s);
            return -1;
        }
        out[n] = tok;
        if (!comma) return n + 1;
        tok = comma + 1;
    }
}

double mx_parse_fraction(const char *cmd, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!errno && end != s && isfinite(x)) {
        if (*end == '%' && end[1] == '\0' && x >= 0 && x < 100) return x / 100.0;
        if (*end == '\0' && x >= 0 && x < 1) return x;
    }
    mx_usage_error(cmd, "--%s: '%s' is not a percentage below 100%% like 5%% or a fraction below 1 like 0.05", opt,
                   s);
    return -1;
}

/* Bad input (a value, a file's format, a path) is the caller's to fix: 2; anything else that
 * failed: 1. In the library rather than main.c, so that programs driving the commands
 * without main() (the tests, the fuzzers) map statuses the same way. */
int mx_exit_status(int rc) { return rc == MX_EINVAL || rc == MX_EFORMAT || rc == MX_EIO ? 2 : 1; }
