/* Which rows of a sweep ask for more than the machine has (sweep_cores.h). */
#include "sweep_cores.h"
#include "kvstore/kvstore.h"

#include <stdio.h>
#include <string.h>

/* What a row asks of this machine, in the unit it is short of: CPU threads (devices or ranks
 * x threads per device) against cores, or devices against GPUs. A dist_* row across machines
 * asks nothing that can be counted here, unless srun places it in a Slurm allocation, whose
 * CPUs are mpi->cores. */
static int asks(const mx_sweep_mpi *mpi, const mx_run_record *r, int gpus)
{
    if (gpus > 0 && strcmp(r->device_type, "cuda") == 0) return r->gpus;
    if (mx_kv_name_has(r->kvstore, MX_KV_DIST))
        return mpi->one_machine || mpi->launcher == &mx_launcher_srun ? mx_sweep_mpi_ranks(r) * r->threads_per_device
                                                                       : 0;
    return r->gpus * r->threads_per_device;
}

int mx_sweep_mark_oversubscribed(const mx_sweep_mpi *mpi, mx_run_record *runs, int n, int gpus)
{
    int nover = 0;
    for (int i = 0; i < n; i++) {
        mx_run_record *r = &runs[i];
        if (strcmp(r->status, "skipped") == 0) continue;
        /* a row on CPU workers counts against the cores, a GPU machine's too */
        const int have = gpus > 0 && strcmp(r->device_type, "cuda") == 0 ? gpus : mpi->cores;
        r->oversubscribed = have > 0 && asks(mpi, r, gpus) > have;
        nover += r->oversubscribed;
    }
    return nover;
}

void mx_sweep_warn_oversubscribed(const mx_sweep_mpi *mpi, const mx_run_record *runs, int n, int gpus)
{
    char list[512] = "";
    size_t len = 0;
    int nover = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        const mx_run_record *r = &runs[i];
        if (!r->oversubscribed || strcmp(r->status, "skipped") == 0) continue;
        nover++;
        if (shown == 8 || len >= sizeof list - 80) continue; /* the first eight name the pattern */
        const int dist = mx_kv_name_has(r->kvstore, MX_KV_DIST), cuda = strcmp(r->device_type, "cuda") == 0;
        int k = cuda ? snprintf(list + len, sizeof list - len, "%s%d (%d devices)", shown ? ", " : "", i + 1, r->gpus)
                         : snprintf(list + len, sizeof list - len, "%s%d (%d %s x %d thread%s)", shown ? ", " : "",
                                    i + 1, dist ? mx_sweep_mpi_ranks(r) : r->gpus, dist ? "ranks" : "devices",
                                    r->threads_per_device, r->threads_per_device == 1 ? "" : "s");
        len += k > 0 ? (size_t)k : 0;
        shown++;
    }
    if (!nover) return;
    const int slurm = gpus == 0 && mpi->launcher == &mx_launcher_srun;
    char have[96];
    if (gpus > 0) /* CUDA rows against the GPUs, rows on CPU workers against the cores */
        snprintf(have, sizeof have, "this machine's %d GPUs (or %d cores, rows on CPU workers)", gpus, mpi->cores);
    else
        snprintf(have, sizeof have, "%s %d %s", slurm ? "the Slurm allocation's" : "this machine's", mpi->cores,
                 slurm ? "CPUs" : "cores");
    fprintf(stderr, "mxbench sweep: warning: %d of %d rows ask for more than %s: row%s %s%s. "
            "Their timings are not a scaling result: each is recorded oversubscribed and drawn apart in the plots "
            "(use them for correctness)\n", nover, n, have, nover == 1 ? "" : "s", list, nover > shown ? ", ..." : "");
}
