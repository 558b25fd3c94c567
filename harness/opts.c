/* Option parsing for the mxbench subcommands (see opts.h): every error names the option,
 * the bad value and what is accepted. */
#include "opts.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const mx_opt *find_opt(const mx_opt *opts, const char *name, size_t len)
{
    for (const mx_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

static int choice_ok(const char *choices, const char *v)
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

static int bad(const mx_cmd_spec *spec, const char *fmt, const char *a, const char *b, const char *c)
{
    fprintf(stderr, "%s: ", spec->cmd);
    fprintf(stderr, fmt, a, b, c);
    fprintf(stderr, "\n(see '%s --help')\n", spec->cmd);
    return MX_OPTS_BAD;
}

static int set_value(const mx_cmd_spec *spec, const mx_opt *o, const char *v)
{
    char *end;
    switch (o->type) {
    case MX_OPT_FLAG: *(int *)o->dst = 1; return MX_OPTS_OK;
    case MX_OPT_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end || x < -2147483647L || x > 2147483647L)
            return bad(spec, "--%s: '%s' is not an integer%s", o->name, v, "");
        *(int *)o->dst = (int)x;
        return MX_OPTS_OK;
    }
    case MX_OPT_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x))
            return bad(spec, "--%s: '%s' is not a number%s", o->name, v, "");
        *(double *)o->dst = x;
        return MX_OPTS_OK;
    }
    case MX_OPT_STRING:
        if (!choice_ok(o->choices, v))
            return bad(spec, "--%s: '%s' is not accepted; choose one of %s", o->name, v, o->choices);
        *(const char **)o->dst = v;
        return MX_OPTS_OK;
    }
    return MX_OPTS_BAD;
}

int mx_opts_parse(const mx_cmd_spec *spec, int argc, char **argv, const char **pos, int *npos)
{
    *npos = 0;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
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
            if (!o) return bad(spec, "unknown option '%s'%s%s", a, "", "");
            const char *v = NULL;
            if (o->type == MX_OPT_FLAG) {
                if (eq) return bad(spec, "--%s takes no value (got '%s')%s", o->name, eq + 1, "");
            } else if (eq) {
                v = eq + 1;
            } else if (i + 1 < argc) {
                v = argv[++i];
            } else {
                return bad(spec, "--%s needs a value (%s)%s", o->name, o->metavar ? o->metavar : "VALUE", "");
            }
            int rc = set_value(spec, o, v);
            if (rc != MX_OPTS_OK) return rc;
            continue;
        }
        if (!only_positional && a[0] == '-' && a[1] != '\0')
            return bad(spec, "unknown option '%s' (options are long: --name)%s%s", a, "", "");
        if (*npos >= spec->max_positional)
            return bad(spec, "unexpected argument '%s'%s%s", a, "", "");
        pos[(*npos)++] = a;
    }
    if (*npos < spec->min_positional)
        return bad(spec, "missing argument: usage: %s %s%s", spec->cmd, spec->usage, "");
    return MX_OPTS_OK;
}

void mx_opts_print_help(const mx_cmd_spec *spec, FILE *f)
{
    fprintf(f, "usage: %s %s\n\n%s\n", spec->cmd, spec->usage, spec->summary);
    if (!spec->opts[0].name) return;
    fprintf(f, "\noptions:\n");
    for (const mx_opt *o = spec->opts; o->name; o++) {
        char left[64];
        if (o->type == MX_OPT_FLAG)
            snprintf(left, sizeof left, "--%s", o->name);
        else
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        fprintf(f, "  %-26s %s\n", left, o->help);
    }
    fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
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

int mx_parse_int_list(const char *cmd, const char *opt, const char *s, int *out, int max, int min_value)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || x < min_value || x > 1000000) {
            mx_usage_error(cmd, "--%s: '%s' is not a comma list of integers >= %d", opt, s, min_value);
            return -1;
        }
        if (n == max) {
            mx_usage_error(cmd, "--%s: more than %d items in '%s'", opt, max, s);
            return -1;
        }
        out[n++] = (int)x;
        p = *end ? end + 1 : end;
    }
    if (n == 0) mx_usage_error(cmd, "--%s: empty list", opt);
    return n ? n : -1;
}

int mx_parse_double_list(const char *cmd, const char *opt, const char *s, double *out, int max)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (errno || end == p || (*end && *end != ',') || !isfinite(x)) {
            mx_usage_error(cmd, "--%s: '%s' is not a comma list of numbers", opt, s);
            return -1;
        }
        if (n == max) {
            mx_usage_error(cmd, "--%s: more than %d items in '%s'", opt, max, s);
            return -1;
        }
        out[n++] = x;
        p = *end ? end + 1 : end;
    }
    if (n == 0) mx_usage_error(cmd, "--%s: empty list", opt);
    return n ? n : -1;
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
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!choice_ok(choices, tok)) {
            mx_usage_error(cmd, "--%s: '%s' is not accepted; choose from %s", opt, tok, choices);
            return -1;
        }
        if (n == max) {
            mx_usage_error(cmd, "--%s: more than %d items in '%s'", opt, max, s);
            return -1;
        }
        out[n++] = tok;
    }
    if (n == 0) mx_usage_error(cmd, "--%s: empty list", opt);
    return n ? n : -1;
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
