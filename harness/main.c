/* mxbench: the command-line entry point, dispatching to one subcommand. */
#include "buildinfo.h"
#include "commands.h"
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
    {"count", mx_cmd_count, "count the instructions and cache misses of a training step (valgrind or perf)"},
    {"ab", mx_cmd_ab, "run two mxbench builds in turn on one configuration; exit 1 on a regression"},
    {"plot", mx_cmd_plot, "draw the scaling plots of a results file with gnuplot (PNG and SVG)"},
    {"project", mx_cmd_project, "fit a model of each configuration's step and predict larger device counts"},
    {"info", mx_cmd_info, "print library versions and the devices this machine has"},
};

int mx_exit_status(int rc) { return rc == MX_EINVAL || rc == MX_EFORMAT || rc == MX_EIO ? 2 : 1; }

static void usage(FILE *f)
{
    fprintf(f, "usage: mxbench COMMAND [options]\n\n"
               "mxbench measures how neural-network training scales, and why: parallel strategy,\n"
               "gradient aggregation (kvstore), compression and precision, swept over device counts.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nstart with:  mxbench sweep --strategies data --gpus 1,2 --workload lenet --epochs 1\n"
               "'mxbench COMMAND --help' describes each command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) argv[1] = "info";
    mx_register_device_backends();
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "mxbench: unknown command '%s'; commands are:", argv[1]);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, "\n(see 'mxbench --help')\n");
    return 2;
}
