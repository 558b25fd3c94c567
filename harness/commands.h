/* The mxbench subcommands: each takes argv with argv[0] = its name and returns the exit
 * status (0 ok, 1 run failed or regression found, 2 bad usage or bad input). */
#ifndef MX_COMMANDS_H
#define MX_COMMANDS_H

int mx_cmd_train(int argc, char **argv);
int mx_cmd_sweep(int argc, char **argv);
int mx_cmd_report(int argc, char **argv);
int mx_cmd_compare(int argc, char **argv);
int mx_cmd_history(int argc, char **argv);
int mx_cmd_ab(int argc, char **argv);
int mx_cmd_count(int argc, char **argv);
int mx_cmd_plot(int argc, char **argv);
int mx_cmd_project(int argc, char **argv);
int mx_cmd_info(int argc, char **argv);

/* Parses and checks a `train` command line (argv[0] = "train") exactly as `mxbench train`
 * would, without running anything: 0 when valid, else 2 after printing why. The sweep runs
 * it on every child's command line before the first child starts. */
int mx_train_validate_argv(int argc, char **argv);

/* What of a configuration has not run on GPUs yet, by the record's names (strategy,
 * compression, kvstore): "the model and layer strategies", "gradient compression", "the
 * dist_* kvstores", or NULL when it runs there. `train --device cuda` refuses it, auto runs it
 * on CPU workers; the sweep plans its rows' device_type by it. */
const char *mx_train_gpu_untested(const char *strategy, const char *compression, const char *kvstore);

/* Exit status for a library status: bad input is 2, anything else 1. */
int mx_exit_status(int rc);

#endif
