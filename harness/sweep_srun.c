/* The sweep's dist_* rows as srun job steps inside a Slurm allocation (sweep_mpi.h): each row
 * one step of its ranks, placed by Slurm over the allocation's nodes, the ranks started
 * directly by Slurm and wired up through PMIx (Open MPI's direct launch), as clusters run MPI
 * jobs. */
#include "sweep_mpi.h"
#include "sweep_child.h"

#include <stdio.h>
#include <string.h>

static int find_srun(mx_sweep_mpi *m, const char *path)
{
    (void)path;
    if (mx_find_program("srun", m->prog, sizeof m->prog) == 0) return 0;
    fprintf(stderr, "mxbench sweep: --launcher srun: srun not found on PATH (Slurm's client: apt-get install "
            "slurm-client, or the cluster's module)\n");
    return 2;
}

/* Whether the row asks the allocation for more than it holds: more ranks than its tasks, or
 * ranks x threads than its CPUs. Slurm then refuses the step unless told to overcommit, which
 * the sweep does (the row is recorded oversubscribed: sweep_cores.c). */
static int overcommits(const mx_sweep_mpi *m, const mx_run_record *r)
{
    const int ranks = mx_sweep_mpi_ranks(r);
    return (m->slurm.tasks > 0 && ranks > m->slurm.tasks) ||
           (m->slurm.cpus > 0 && ranks * r->threads_per_device > m->slurm.cpus);
}

static void srun_argv(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                      char **argv)
{
    int k = 0;
    size_t used = 0;
    argv[k++] = (char *)m->prog;
    if (m->add_mpi) argv[k++] = "--mpi=pmix"; /* Open MPI's ranks find each other through PMIx */
    argv[k++] = store + used;
    used += (size_t)snprintf(store + used, n - used, "--ntasks=%d", mx_sweep_mpi_ranks(r)) + 1;
    /* one failed rank ends the step (as mpirun ends the job), so that the row fails at once */
    argv[k++] = "--kill-on-bad-exit=1";
    if (overcommits(m, r)) argv[k++] = "--overcommit";
    /* a sweep that is itself a task of a step (srun mxbench sweep) shares that step's resources */
    if (m->slurm.in_step) argv[k++] = "--overlap";
    for (int i = 0; i < m->nextra; i++) argv[k++] = m->extra[i];
    mx_sweep_mpi_tail(m, r, train_argv, store, n, &used, argv, k);
}

const mx_sweep_launcher mx_launcher_srun = {"srun", "srun --ntasks=%d", find_srun, srun_argv};
