/* `mxbench train --np N`: this command again as N ranks of an mpirun job on this machine,
 * with what one machine needs and a user would otherwise have to know (see train_launch.h). */
#include "train_launch.h"
#include "buildinfo.h"
#include "sweep_child.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when argv[i] is --np (its value next) or --np=N: the launcher's own option, which the
 * ranks must not see (each would launch again). */
static int np_words(char *const argv[], int i)
{
    if (strcmp(argv[i], "--np") == 0) return argv[i + 1] ? 2 : 1;
    return strncmp(argv[i], "--np=", 5) == 0 ? 1 : 0;
}

int mx_train_launch(int np, int threads_given, int argc, char **argv)
{
    const char *cmd = "mxbench train";
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE")) {
        fprintf(stderr, "%s: --np %d: this process is already a rank of an MPI job; accepted: --np when starting "
                "the job yourself, or mpirun without --np\n", cmd, np);
        return 2;
    }
    char mpirun[4096], exe[4096];
    if (mx_find_program("mpirun", mpirun, sizeof mpirun) != 0) {
        fprintf(stderr, "%s: --np %d: mpirun not found on PATH; apt-get install openmpi-bin\n", cmd, np);
        return 2;
    }
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "%s: cannot tell this program's path (/proc/self/exe): %s\n", cmd, strerror(errno));
        return 1;
    }
    exe[len] = 0;
    const int cores = mx_cpu_cores();
    /* mpirun's words, then this command's arguments without --np, then two of ours */
    char **v = calloc((size_t)argc + 24, sizeof *v);
    char npv[16], threads[16];
    if (!v) return 1;
    int k = 0;
    v[k++] = mpirun;
    /* Open MPI counts a machine's slots in cores and refuses more ranks than slots: ranks
     * beyond the cores are allowed, and said below, as the sweep does */
    v[k++] = "--oversubscribe";
    v[k++] = "--bind-to", v[k++] = "none"; /* a rank's threads free to run where the kernel puts them */
    snprintf(npv, sizeof npv, "%d", np);
    v[k++] = "-np", v[k++] = npv;
    v[k++] = exe;
    for (int i = 0; i < argc;) { /* argv[0] is "train" */
        const int skip = np_words(argv, i);
        if (skip) i += skip;
        else v[k++] = argv[i++];
    }
    /* each rank its share of the cores, unless told: N ranks of cores/devices threads each
     * would ask for N times the machine */
    const int share = cores / np > 1 ? cores / np : 1;
    if (!threads_given) {
        snprintf(threads, sizeof threads, "%d", share);
        v[k++] = "--threads-per-device", v[k++] = threads;
    }
    v[k] = NULL;
    if (geteuid() == 0) {
        /* Open MPI refuses root unless both are set; a container's root is the common case */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    if (np > cores)
        fprintf(stderr, "%s: warning: %d ranks on %d cores: oversubscribed, so the timings are not a scaling "
                "result (each rank's record says so); use them for correctness\n", cmd, np, cores);
    fprintf(stderr, "%s: launching:", cmd);
    for (int i = 0; v[i]; i++) fprintf(stderr, " %s", v[i]);
    fprintf(stderr, "%s\n", geteuid() == 0 ? "   (as root: OMPI_ALLOW_RUN_AS_ROOT set)" : "");
    fflush(stderr);
    execv(mpirun, v);
    fprintf(stderr, "%s: cannot run %s: %s\n", cmd, mpirun, strerror(errno));
    free(v);
    return 1;
}
