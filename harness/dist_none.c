/* The dist_* entry points in a build without MPI: they say so. */
#include "dist.h"

#include <stdio.h>

int mx_dist_start(mx_kv_mode mode, int servers, mx_cluster **out)
{
    *out = NULL;
    fprintf(stderr, "mxbench train: --kvstore %s: this build has no MPI support; install Open MPI (apt-get install "
            "libopenmpi-dev openmpi-bin) and rebuild (scripts/build.sh)\n", mx_kv_mode_name(mode));
    return 2;
}

int mx_dist_serve(mx_cluster *c) { return 1; }
int mx_dist_finish_worker(mx_cluster *c, int rc, mx_run_record *rec) { return rc; }
void mx_dist_end(mx_cluster *c) {}
void mx_dist_abort(mx_cluster *c, int code) {}
int mx_dist_local_ranks(void) { return 1; }
