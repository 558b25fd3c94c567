/* mxbench: the command-line entry point, dispatching to one subcommand. */
#include "buildinfo.h"
#include "commands.h"
#include "opts.h"
#include "base/status.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"train", mx_cmd_train, "train one configuration and print loss, accuracy and throughput"},
    {"sweep", mx_cmd_sweep, "run a scaling study over strategies, device counts, batches, ... into HDF5"},
    {"report", mx_cmd_report, "print the summary table of a results file (text, md, csv, json)"},
    {"compare", mx_cmd_compare, "compare two results files; exit 1 on a regression (for CI)"},
    {"history", mx_cmd_history,
     "follow results files across revisions (table, figures, page); exit 1 if the newest regressed"},
    {"count", mx_cmd_count, "count the instructions and cache misses of a training step (valgrind or perf)"},
    {"ab", mx_cmd_ab, "run two mxbench builds in turn on one configuration; exit 1 on a regression"},
    {"plot", mx_cmd_plot, "draw the scaling plots of a results file with gnuplot (PNG and SVG)"},
    {"project", mx_cmd_project, "fit a model of each configuration's step and predict larger device counts"},
    {"info", mx_cmd_info, "print library versions and the devices this machine has"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mxbench COMMAND [options]\n\n"
               "mxbench measures how neural-network training scales, and why: parallel strategy,\n"
               "gradient aggregation (kvstore), compression and precision, swept over device counts.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nstart with:  mxbench sweep --strategies data --gpus 1,2 --workload lenet --epochs 1\n"
               "'mxbench help COMMAND' (or 'mxbench COMMAND --help') describes a command and its options;\n"
               "'mxbench help --markdown COMMAND' prints its options as a Markdown table.\n");
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(name, commands[i].name) == 0) return &commands[i];
    return NULL;
}

/* "<who>: <what>; commands are: ..." and where to look, for a name that is no command. */
static int no_such_command(const char *who, const char *what, const char *see)
{
    fprintf(stderr, "%s: %s; commands are:", who, what);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, "\n(see '%s')\n", see);
    return 2;
}

/* `mxbench help [--markdown] [COMMAND]`: the command list, or COMMAND's own --help run as it
 * is, so that the two cannot differ; --markdown has that run print its option table in
 * Markdown, from which docs/commands.md is generated (scripts/gen-docs.sh). */
static int help(int argc, char **argv)
{
    int markdown = 0;
    const mx_opt opts[] = {
        {"markdown", MX_OPT_FLAG, &markdown, NULL,
         "print COMMAND's options as a Markdown table (option, argument, default, meaning), as docs/commands.md "
         "shows them", NULL},
        {0},
    };
    const mx_cmd_spec spec = {"mxbench help", "[--markdown] [COMMAND]",
                              "Lists the commands, or prints the help of COMMAND: the same text as\n"
                              "'mxbench COMMAND --help'.",
                              opts, 0, 1};
    const char *pos[1];
    int npos, rc = mx_opts_parse(&spec, argc, argv, pos, &npos);
    if (rc != MX_OPTS_OK) return rc == MX_OPTS_HELP ? 0 : 2;
    if (npos == 0 && markdown) return no_such_command(spec.cmd, "--markdown needs a COMMAND", "mxbench help --help");
    if (npos == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(pos[0], "help") == 0) { /* this command's own options */
        if (markdown)
            mx_opts_print_markdown(&spec, stdout);
        else
            mx_opts_print_help(&spec, stdout);
        return 0;
    }
    const command *c = find_command(pos[0]);
    if (!c) {
        char what[256];
        snprintf(what, sizeof what, "unknown command '%s'", pos[0]);
        return no_such_command(spec.cmd, what, "mxbench help");
    }
    mx_opts_set_help_format(markdown ? MX_HELP_MARKDOWN : MX_HELP_TEXT);
    char *cmd_argv[] = {(char *)c->name, "--help", NULL};
    return c->run(2, cmd_argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) argv[1] = "info";
    mx_register_device_backends();
    if (strcmp(argv[1], "help") == 0) return help(argc - 1, argv + 1);
    const command *c = find_command(argv[1]);
    if (c) return c->run(argc - 1, argv + 1);
    char what[256];
    snprintf(what, sizeof what, "unknown command '%s'", argv[1]);
    return no_such_command("mxbench", what, "mxbench --help");
}
