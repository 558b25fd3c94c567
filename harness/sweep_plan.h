/* Planning a sweep: the product of the axes (results/axes.h) as a list of run records holding
 * only their configuration; combinations that cannot run carry status "skipped" and the
 * reason. */
#ifndef MX_SWEEP_PLAN_H
#define MX_SWEEP_PLAN_H

#include "results/axes.h"
#include "results/record.h"

#define MX_AXIS_MAX 32  /* values of one axis */
#define MX_AXES_MAX 64  /* entries of mx_axes */
/* Rows a sweep plans at most (the product of its list axes' lengths, before one-device rows
 * of several kvstores fold into one): each row is a training run, so 10000 is days of work
 * already, and the plan itself stays a few megabytes. docs/commands.md's sweep section says it. */
#define MX_SWEEP_MAX_ROWS 10000

/* The values of every entry of mx_axes, as text (mx_axis_set reads them into a record):
 * n[i] values for a list axis, 1 for a single value, 0 for a derived field (the planner sets
 * it). */
typedef struct {
    int n[MX_AXES_MAX];
    const char *text[MX_AXES_MAX][MX_AXIS_MAX];
    char store[MX_AXES_MAX][512]; /* storage the texts point into */
    /* dist_* rows (no axes of their own): --servers (0: as many as the row's workers, as
     * MXNet), and threads per device (0: the threads_per_device value) */
    int servers, dist_threads;
} mx_sweep_axes;

/* Index of the entry called name in mx_axes (it must exist). */
int mx_sweep_axis_index(const char *name);

/* Fills runs[0..*n) (allocated; free each with mx_record_free, then the array), in the order
 * of the nested loops over the list axes by rank (mx_axis.loop, the largest varying fastest).
 * Derived fields: the global batch (per --batch-mode), the scaled lr (relative to the first
 * device count), kvstore "none" on one device for local and device (such a row is planned
 * once, not once per kvstore); a dist_* row of G devices: G workers of one device each (a
 * one-device row too is a real one-worker job), servers (ax->servers, else G) for the
 * parameter-server modes, none for dist_allreduce, ax->dist_threads threads per device. */
int mx_sweep_plan(const mx_sweep_axes *ax, mx_run_record **runs, int *n);
/* (mx_sweep_plan returns MX_EINVAL, before allocating anything, naming the count and the axes,
 * when the product of the list axes exceeds MX_SWEEP_MAX_ROWS.) */

/* The learning rate of a run: base lr times the scaling rule's factor, where the factor is
 * the run's global batch over the global batch at the first device count (linear) or its
 * square root (sqrt): Goyal et al.'s rule, relative to the first device count. */
double mx_sweep_scaled_lr(double base_lr, const char *rule, int global_batch, int first_global_batch);

#endif
