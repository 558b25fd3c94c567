/* Library versions and machine description (see buildinfo.h). */
#include "buildinfo.h"
#include "cluster/slurm.h"
#include "base/status.h"
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

/* The instruction sets that decide which of mxbench's CPU kernels run (and oneDNN's), as
 * /proc/cpuinfo names them, then the caches as sysfs gives cpu0's: "avx2 fma avx512f
 * avx512_bf16; L1d 48K, L2 1024K, L3 32768K" ("none" before the ';' where it has none of them;
 * no caches where sysfs does not list them). A figure from one CPU (Intel's or AMD's, with or
 * without AMX) is read against these. */
void mx_cpu_features(char *buf, size_t n)
{
    static const char *const isa[] = {"avx2",        "fma",         "avx512f",  "avx512_bf16",
                                      "avx512_fp16", "amx_tile",    "amx_bf16", "avx512_vnni"};
    size_t used = 0;
    buf[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        line[strcspn(line, "\n")] = ' '; /* so that the last flag ends with a space too */
        for (size_t i = 0; i < sizeof isa / sizeof *isa; i++) {
            char word[32];
            snprintf(word, sizeof word, " %s ", isa[i]);
            if (strstr(line, word) && used < n)
                used += snprintf(buf + used, n - used, "%s%s", used ? " " : "", isa[i]);
        }
        break;
    }
    if (f) fclose(f);
    if (!used) used = (size_t)snprintf(buf, n, "none");
    static const char *const level_name[] = {"L1d", "L2", "L3"};
    int caches = 0;
    for (int index = 0; index < 8 && used < n; index++) {
        char path[96], type[32] = "", level[32] = "", size[32] = "";
        const char *const what[3] = {"type", "level", "size"};
        char *const dst[3] = {type, level, size};
        int ok = 1;
        for (int k = 0; k < 3 && ok; k++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, what[k]);
            FILE *c = fopen(path, "r");
            ok = c && fgets(dst[k], 32, c) != NULL;
            if (c) fclose(c);
            dst[k][strcspn(dst[k], "\n")] = 0;
        }
        const int lv = atoi(level);
        if (!ok || strcmp(type, "Instruction") == 0 || lv < 1 || lv > 3) continue;
        used += snprintf(buf + used, n - used, "%s%s %s", caches++ ? ", " : "; ", level_name[lv - 1], size);
    }
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
    mx_cpu_features(m->cpu_features, sizeof m->cpu_features);
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
    if (m.cpu_features[0]) fprintf(f, "           %s\n", m.cpu_features);
    if (cu.count)
        fprintf(f, "  cuda     %d x %s (driver %s)\n", cu.count, cu.model, cu.driver);
    else
        fprintf(f, "  cuda     none (%s): devices are CPU workers\n", cu.driver);
    /* where a sweep's dist_* rows start their ranks (sweep_mpi.h) */
    mx_slurm s;
    char job[400];
    if (mx_slurm_read(&s) < 0) snprintf(job, sizeof job, "%s", mx_last_error());
    else mx_slurm_describe(&s, job, sizeof job);
    fprintf(f, "  slurm    %s%s\n", job, s.inside ? ": a sweep's dist_* rows are srun steps" : "");
}
