/* The rows of a sweep that ask for more than the machine has: more CPU threads than cores
 * (devices, or a dist_* row's ranks on this machine, times threads per device), or more
 * devices than GPUs. They run (to check code paths, as users run such sweeps on small
 * machines), are recorded oversubscribed, drawn apart in the plots and warned of once,
 * before the first row. */
#ifndef MX_SWEEP_CORES_H
#define MX_SWEEP_CORES_H

#include "results/record.h"
#include "sweep_mpi.h"

/* Sets each planned row's oversubscribed flag (gpus: the GPUs the rows run on, 0 when they
 * are CPU workers); returns how many are. */
int mx_sweep_mark_oversubscribed(const mx_sweep_mpi *mpi, mx_run_record *runs, int n, int gpus);
/* One warning on stderr naming the oversubscribed rows (1-based, as the plan prints them). */
void mx_sweep_warn_oversubscribed(const mx_sweep_mpi *mpi, const mx_run_record *runs, int n, int gpus);

#endif
