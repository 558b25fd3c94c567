/* How `mxbench sweep` launches a dist_* row: as its own `mpirun` job of G worker ranks (one
 * device each) plus S server ranks, every rank `mxbench train` (see docs/commands.md, "mxbench
 * sweep"). Here: the sweep's MPI options checked (mpirun, --hostfile, --mpirun-args), the
 * ranks of a row, and the mpirun command line. */
#ifndef MX_SWEEP_MPI_H
#define MX_SWEEP_MPI_H

#include "results/record.h"

#include <stddef.h>

#define MX_SWEEP_MPI_ARGS 32 /* --mpirun-args words */

typedef struct {
    char mpirun[4096];     /* mpirun's path ("" when no row needs it) */
    char exe[4096];        /* this program, which every rank runs */
    const char *hostfile;  /* NULL: every rank on this machine */
    int one_machine;       /* no --hostfile, no --host in --mpirun-args */
    int cores;             /* of this machine */
    double bucket_mb;      /* --bucket-mb for dist_allreduce rows; 0: the child's default */
    int nextra;            /* --mpirun-args, split on spaces */
    char *extra[MX_SWEEP_MPI_ARGS];
    char extra_store[2048];
    int add_btl, add_bind; /* on one machine, unless --mpirun-args or OMPI_MCA_btl/pml say otherwise */
} mx_sweep_mpi;

/* Checks an Open MPI host file: lines `HOST [slots=N] [max_slots=N] ...`, # comments and
 * blank lines. Returns 0 with *nhosts and the first host, or 2 after printing (as cmd) the
 * file, the line and what is accepted. */
int mx_hostfile_check(const char *cmd, const char *path, int *nhosts, char *first, size_t firstsize);

/* Fills m from the sweep's options (hostfile, args, bucket_mb: NULL/0 when not given) and,
 * when need_mpirun, finds mpirun (the path given, else on PATH) and checks it is Open MPI's.
 * Returns 0, or 2 after printing what was wrong, naming the value and what is accepted. */
int mx_sweep_mpi_setup(mx_sweep_mpi *m, const char *mpirun, const char *hostfile, const char *args,
                       double bucket_mb, int need_mpirun);

/* The MPI ranks of a dist_* row: its workers (one per device) and servers. */
int mx_sweep_mpi_ranks(const mx_run_record *r);
/* "worker 1" or "server 0": what rank `rank` of row r is (ranks in order: workers first). */
void mx_sweep_mpi_role(const mx_run_record *r, int rank, char *buf, size_t n);

/* The row's mpirun command line around the child's `train` command line (train_argv, as
 * mx_sweep_child_argv made it): argv (NULL-terminated, at most 127 entries) points into
 * store and train_argv. */
void mx_sweep_mpi_argv(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                       char **argv);

#endif
