/* Library versions and machine description (see buildinfo.h). */
#include "buildinfo.h"
#include "engine/backend/backend.h"
#include "engine/cpu/cpu.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef MXBENCH_VERSION
#define MXBENCH_VERSION "0.0.0"
#endif
#ifndef MXBENCH_GIT_REV
#define MXBENCH_GIT_REV "unknown"
#endif

int mx_cpu_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void mx_cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) break;
        colon += 2;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, n, "%s", colon);
        break;
    }
    fclose(f);
}

static void hdf5_version(char *buf, size_t n)
{
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    snprintf(buf, n, "%u.%u.%u", maj, min, rel);
}

void mx_buildinfo_meta(mx_results_meta *m, int argc, char **argv)
{
    memset(m, 0, sizeof *m);
    snprintf(m->mxbench_version, sizeof m->mxbench_version, "%s", MXBENCH_VERSION);
    snprintf(m->git_revision, sizeof m->git_revision, "%s", MXBENCH_GIT_REV);
    gethostname(m->host, sizeof m->host - 1);
    mx_cpu_model(m->cpu_model, sizeof m->cpu_model);
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    snprintf(m->gpu_model, sizeof m->gpu_model, "%s", cu.count ? cu.model : "none");
    snprintf(m->gpu_driver, sizeof m->gpu_driver, "%s", cu.driver);
    snprintf(m->blas, sizeof m->blas, "%s", mx_cpu_blas_info());
    snprintf(m->onednn, sizeof m->onednn, "%s", mx_cpu_dnnl_info());
    snprintf(m->cuda, sizeof m->cuda, "%s", cu.runtime);
    snprintf(m->cudnn, sizeof m->cudnn, "%s", cu.cudnn);
    snprintf(m->nccl, sizeof m->nccl, "%s", cu.nccl);
    mx_mpi_version(m->mpi, sizeof m->mpi);
    hdf5_version(m->hdf5, sizeof m->hdf5);
    time_t now = time(NULL);
    strftime(m->start_time, sizeof m->start_time, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    size_t used = 0;
    for (int i = 0; i < argc && used + 2 < sizeof m->command_line; i++)
        used += snprintf(m->command_line + used, sizeof m->command_line - used, "%s%s", i ? " " : "", argv[i]);
}

void mx_buildinfo_print(FILE *f)
{
    mx_results_meta m;
    char *argv0 = "mxbench";
    mx_buildinfo_meta(&m, 1, &argv0);
    mx_cuda_info cu;
    mx_cuda_probe(&cu);
    fprintf(f, "mxbench %s (git %s)\n\nlibraries:\n", m.mxbench_version, m.git_revision);
    fprintf(f, "  %-8s %s\n", "BLAS", m.blas);
    fprintf(f, "  %-8s %s; see docs/performance.md\n", "oneDNN",
            m.onednn);
    fprintf(f, "  %-8s %s\n", "HDF5", m.hdf5);
    fprintf(f, "  %-8s %s\n", "MPI", m.mpi);
    fprintf(f, "  %-8s %s\n", "CUDA", m.cuda);
    fprintf(f, "  %-8s %s\n", "cuDNN", m.cudnn);
    fprintf(f, "  %-8s %s\n", "NCCL", m.nccl);
    fprintf(f, "\ndevices:\n  cpu      %s, %d cores (host: %s)\n", m.cpu_model, mx_cpu_cores(), m.host);
    if (cu.count)
        fprintf(f, "  cuda     %d x %s (driver %s)\n", cu.count, cu.model, cu.driver);
    else
        fprintf(f, "  cuda     none (%s): devices are CPU workers\n", cu.driver);
}
