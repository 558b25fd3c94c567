/* `mxbench train --np N`: runs this command as N ranks of an mpirun job on this machine, the
 * way `mxbench sweep` launches its dist_* rows: --oversubscribe (Open MPI counts slots in
 * cores and refuses more ranks than slots), --bind-to none, Open MPI's allow-run-as-root
 * switches as root, and each rank a share of the cores unless --threads-per-device is given.
 * Across machines, mpirun is started by hand (docs/parallelism.md, "Across processes and machines"). */
#ifndef MX_TRAIN_LAUNCH_H
#define MX_TRAIN_LAUNCH_H

/* Replaces this process with mpirun; returns only on failure: 2 (bad usage, printed) or 1. */
int mx_train_launch(int np, int threads_given, int argc, char **argv);

#endif
