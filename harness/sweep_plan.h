/* Planning a sweep: the product of the axes as a list of run records holding only their
 * configuration; combinations that cannot run carry status "skipped" and the reason. */
#ifndef MX_SWEEP_PLAN_H
#define MX_SWEEP_PLAN_H

#include "results/record.h"

#define MX_AXIS_MAX 32

typedef struct {
    const char *strategies[MX_AXIS_MAX]; int nstrategies;
    int gpus[MX_AXIS_MAX]; int ngpus;
    int batch[MX_AXIS_MAX]; int nbatch;
    double lr[MX_AXIS_MAX]; int nlr;
    const char *kvstores[MX_AXIS_MAX]; int nkvstores;
    const char *compressions[MX_AXIS_MAX]; int ncompressions;
    const char *amps[MX_AXIS_MAX]; int namps;
    const char *workloads[MX_AXIS_MAX]; int nworkloads;
    const char *batch_mode;   /* per-device | global */
    const char *lr_scaling;   /* none | linear | sqrt */
    const char *dataset;      /* fashion-mnist | synthetic | a directory (idx) */
    double warmup_epochs, momentum, wd, target_acc;
    int epochs, steps, warmup_steps, repeats, seed, threads_per_device;
} mx_sweep_axes;

/* Fills runs[0..*n) (allocated; free each with mx_record_free, then the array). */
int mx_sweep_plan(const mx_sweep_axes *ax, mx_run_record **runs, int *n);

/* The learning rate of a run: base lr times the scaling rule's factor, where the factor is
 * the run's global batch over the global batch at the first device count (linear) or its
 * square root (sqrt): Goyal et al.'s rule, relative to the first device count. */
double mx_sweep_scaled_lr(double base_lr, const char *rule, int global_batch, int first_global_batch);

#endif
