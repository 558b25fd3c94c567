/* One planned sweep configuration run as a child `mxbench train --record FILE`: its command
 * line (checked for every run before the sweep starts, by the same validation `train`
 * uses), and its outcome moved into the planned record. */
#ifndef MX_SWEEP_RUN_H
#define MX_SWEEP_RUN_H

#include "results/record.h"
#include "sweep_child.h"
#include "sweep_mpi.h"

#include <signal.h>
#include <stddef.h>

/* "lenet data x2 kv=device batch=256 lr=0.05" */
void mx_sweep_run_label(const mx_run_record *r, char *buf, size_t n);

/* The child's command line, `/proc/self/exe train ... --record record_path --quiet`, from the
 * axes table (results/axes.h): argv[] (NULL-terminated, at most 63 entries) points into
 * store (4096 bytes and record_path's length suffice). A dist_* row's is one rank's: --gpus 1,
 * --batch the global batch / workers, --servers S for the parameter-server modes. 0, or -1
 * when an argument does not fit in store (none is ever cut short). */
int mx_sweep_child_argv(const mx_run_record *r, const char *record_path, char *store, size_t storesize, char **argv);

/* Checks the child command line of every run that is not skipped as `mxbench train` would
 * (mx_train_validate_argv), so that a sweep refuses bad input before its first child starts.
 * Returns 0, or 2 after printing which run and why. */
int mx_sweep_check_runs(const mx_run_record *runs, int n);

/* Runs r as a child writing its record to tmp_path (a dist_* row: as an mpirun job, as m
 * says; rank 0 writes the record), and fills r's outcome: ok (with the child's
 * measurements), diverged (the child's record, status and reason), or failed (exit status or
 * signal, the rank that failed where mpirun or the rank named it, and the tail of its
 * stderr). trace_path: where the child writes its timeline (train --trace), NULL for none.
 * *interrupted is the sweep's signal flag. */
void mx_sweep_execute(mx_run_record *r, const mx_sweep_mpi *m, const char *tmp_path, const char *trace_path,
                      double timeout, mx_child_tick_fn tick, void *user, const volatile sig_atomic_t *interrupted);

/* One line: "ok, 4913.2 samples/s, test acc 0.8712" or "failed: ...". */
void mx_sweep_outcome_text(const mx_run_record *r, char *buf, size_t n);

#endif
