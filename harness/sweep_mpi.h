/* How `mxbench sweep` launches a dist_* row: as its own MPI job of G worker ranks (one device
 * each) plus S server ranks, every rank `mxbench train` (see docs/commands.md, "mxbench sweep"),
 * started by a launcher: Open MPI's mpirun (this file's), or inside a Slurm allocation Slurm's
 * srun (sweep_srun.c). Here: the sweep's MPI options checked (--launcher, --mpirun, --hostfile,
 * --mpirun-args, --srun-args), the ranks of a row, and the launcher's command line. */
#ifndef MX_SWEEP_MPI_H
#define MX_SWEEP_MPI_H

#include "cluster/slurm.h"
#include "results/record.h"

#include <stddef.h>

#define MX_SWEEP_MPI_ARGS 32 /* --mpirun-args or --srun-args words */

struct mx_sweep_mpi;

/* One launcher: how its program is found and checked, and a row's command line. */
typedef struct {
    const char *name;   /* "mpirun", "srun" */
    const char *ranks;  /* how its command line gives the ranks, a printf format: "mpirun -np %d" */
    /* the program (path: --mpirun's, or NULL for the name on PATH) into m->prog; 0, or 2 after
     * printing what is wrong */
    int (*find)(struct mx_sweep_mpi *m, const char *path);
    /* argv (NULL-terminated, at most 127 entries): the launcher's words, then train_argv;
     * pointing into store and train_argv */
    void (*argv)(const struct mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                 char **argv);
} mx_sweep_launcher;

extern const mx_sweep_launcher mx_launcher_mpirun, mx_launcher_srun;

/* The sweep's options for its dist_* rows, as given (NULL/0: not given). */
typedef struct {
    const char *launcher; /* auto, mpirun or srun */
    const char *mpirun, *hostfile, *mpirun_args, *srun_args;
    double bucket_mb;
} mx_sweep_mpi_opts;

typedef struct mx_sweep_mpi {
    const mx_sweep_launcher *launcher;
    char prog[4096];       /* the launcher's path ("" when no row needs it) */
    char exe[4096];        /* this program, which every rank runs */
    const char *hostfile;  /* NULL: every rank on this machine (mpirun) */
    mx_slurm slurm;        /* the Slurm allocation the sweep runs in, if any */
    int one_machine;       /* every rank on this machine: no --hostfile, no --host, one Slurm node */
    int cores;             /* where the ranks run: this machine's, or the Slurm allocation's CPUs */
    double bucket_mb;      /* --bucket-mb for dist_allreduce rows; 0: the child's default */
    int nextra;            /* --mpirun-args or --srun-args, split on spaces */
    char *extra[MX_SWEEP_MPI_ARGS];
    char extra_store[2048];
    int add_btl, add_bind; /* mpirun on one machine, unless --mpirun-args or OMPI_MCA_btl/pml say otherwise */
    int add_mpi;           /* srun: --mpi=pmix, unless --srun-args names the plugin */
} mx_sweep_mpi;

/* Checks an Open MPI host file: lines `HOST [slots=N] [max_slots=N] ...`, # comments and
 * blank lines. Returns 0 with *nhosts and the first host, or 2 after printing (as cmd) the
 * file, the line and what is accepted. */
int mx_hostfile_check(const char *cmd, const char *path, int *nhosts, char *first, size_t firstsize);

/* Fills m from the sweep's options: the launcher (--launcher auto: srun inside a Slurm
 * allocation where srun is on PATH and no mpirun option is given, else mpirun), its options
 * checked and, when need_launcher, its program found and checked. Returns 0, or 2 after
 * printing what was wrong, naming the value and what is accepted. */
int mx_sweep_mpi_setup(mx_sweep_mpi *m, const mx_sweep_mpi_opts *o, int need_launcher);

/* The MPI ranks of a dist_* row: its workers (one per device) and servers. */
int mx_sweep_mpi_ranks(const mx_run_record *r);
/* "worker 1" or "server 0": what rank `rank` of row r is (ranks in order: workers first). */
void mx_sweep_mpi_role(const mx_run_record *r, int rank, char *buf, size_t n);

/* The row's launcher command line around the child's `train` command line (train_argv, as
 * mx_sweep_child_argv made it): argv (NULL-terminated, at most 127 entries) points into
 * store and train_argv. */
void mx_sweep_mpi_argv(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                       char **argv);

/* A rank's command after the launcher's words (argv[0..k)): this program, train_argv's
 * arguments and a dist_allreduce row's --bucket-mb, NULL-terminated; formatted numbers go to
 * store (n bytes, *used of them taken). */
void mx_sweep_mpi_tail(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                       size_t *used, char **argv, int k);

#endif
