/* Table-driven command-line options shared by every subcommand: one table gives parsing,
 * --help text and error messages that name the bad value and what is accepted. */
#ifndef MX_OPTS_H
#define MX_OPTS_H

#include <stdio.h>

typedef enum {
    MX_OPT_FLAG,   /* --name; dst is int*, set to 1 */
    MX_OPT_INT,    /* --name N; dst is int* */
    MX_OPT_DOUBLE, /* --name X; dst is double* */
    MX_OPT_STRING, /* --name S; dst is const char** (points into argv) */
} mx_opt_type;

typedef struct {
    const char *name;    /* long name without the leading dashes */
    mx_opt_type type;
    void *dst;
    const char *metavar; /* shown in help, e.g. "N" or "LIST" */
    /* One line; say the accepted values and the default, as "(default X)", "(...; default X)"
     * or "X (default)": the Markdown table (mx_opts_print_markdown) shows X in its own column. */
    const char *help;
    const char *choices; /* MX_OPT_STRING only: "a|b|c" accepted values, or NULL for any */
    /* Accepted range, inclusive. Every MX_OPT_INT must state one (hi > lo): a count without
     * an upper bound overflowed arithmetic or the stack further on. For MX_OPT_DOUBLE,
     * lo == hi == 0 accepts any finite number. Shown in --help. */
    double lo, hi;
} mx_opt;

/* The outcomes of mx_opts_parse; MX_OPTS_BAD is also the CLI's exit status for bad usage. */
enum { MX_OPTS_OK = 0, MX_OPTS_HELP = 1, MX_OPTS_BAD = 2 };

typedef struct {
    const char *cmd;        /* "mxbench train" */
    const char *usage;      /* "[options]" or "FILE [options]" */
    const char *summary;    /* one paragraph shown under the usage line */
    const mx_opt *opts;     /* terminated by an entry with name == NULL */
    int min_positional, max_positional;
    unsigned char *seen;    /* optional, one per option: set to 1 when given on the command line */
} mx_cmd_spec;

/* Parses argv[1..argc) (argv[0] is the subcommand name). Accepts --name V and --name=V,
 * and -h/--help. Positional arguments are stored in pos[0..*npos). On bad usage prints
 * "mxbench CMD: <what was wrong>" and a hint to stderr and returns MX_OPTS_BAD; on --help
 * prints the help to stdout and returns MX_OPTS_HELP. */
int mx_opts_parse(const mx_cmd_spec *spec, int argc, char **argv, const char **pos, int *npos);
void mx_opts_print_help(const mx_cmd_spec *spec, FILE *f);

/* The options as a Markdown table: option, argument (metavar with the accepted range or
 * values), default (taken from the help text, see mx_opt.help), meaning. docs/commands.md
 * holds this output for every command (scripts/gen-docs.sh), so the docs follow the code. */
void mx_opts_print_markdown(const mx_cmd_spec *spec, FILE *f);

/* What --help prints: the text (the default) or the Markdown table. `mxbench help --markdown
 * CMD` sets it before running CMD --help, so every command prints its own table without
 * exporting it. */
typedef enum { MX_HELP_TEXT, MX_HELP_MARKDOWN } mx_help_format;
void mx_opts_set_help_format(mx_help_format format);

/* 1 when v is one of choices ("a|b|c"), or choices is NULL. */
int mx_choice_ok(const char *choices, const char *v);

/* 1 when the option called name was given (spec->seen must be set). */
int mx_opts_seen(const mx_cmd_spec *spec, const char *name);

/* Comma lists ("1,2,4"). Each returns the count parsed, or -1 after printing an error
 * ("<cmd>: --opt: ...") that names the option and the bad item. Empty items ("1,,2", "3,")
 * are errors. Every value must lie in [lo, hi]. */
int mx_parse_int_list(const char *cmd, const char *opt, const char *s, int *out, int max, int lo, int hi);
int mx_parse_double_list(const char *cmd, const char *opt, const char *s, double *out, int max, double lo,
                         double hi);
/* Splits s into items checked against choices ("a|b|c"; NULL accepts any). Items point into
 * buf, a copy of s. */
int mx_parse_choice_list(const char *cmd, const char *opt, const char *s, const char *choices, char *buf,
                         size_t bufsize, const char **out, int max);

/* Parses a percentage "5%" or a fraction "0.05" in [0, 1) into a fraction; -1 on error
 * (printed). */
double mx_parse_fraction(const char *cmd, const char *opt, const char *s);

/* Prints "<cmd>: <message>\n(see '<cmd> --help')" to stderr; returns MX_OPTS_BAD. */
int mx_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
