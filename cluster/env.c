/* What a process can tell of its MPI job without MPI: built with or without MPI support, so
 * that a build without it can still say how a dist_* mode is launched. */
#include "cluster.h"

#include <stdlib.h>

const char *mx_role_name(mx_role r) { return r == MX_ROLE_SERVER ? "server" : "worker"; }

int mx_cluster_launched(void)
{
    /* Open MPI's mpirun, then PMIx and PMI launchers (MPICH's hydra, Slurm's srun) */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

