/* Test helper for test_compare_cli.sh: writes a copy of a results file in which every step
 * (and phase) time is multiplied by a factor, with the derived figures recomputed, so that
 * `mxbench compare` can be shown a known slowdown without depending on machine noise.
 * usage: inject_slowdown IN OUT FACTOR */
#include "base/status.h"
#include "results/results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: inject_slowdown IN OUT FACTOR\n");
        return 2;
    }
    char *end;
    errno = 0;
    const double factor = strtod(argv[3], &end);
    if (errno || end == argv[3] || *end || !isfinite(factor) || factor <= 0) {
        fprintf(stderr, "inject_slowdown: FACTOR '%s' is not a positive number\n", argv[3]);
        return 2;
    }
    mx_results in;
    if (mx_results_load(argv[1], &in) < 0) {
        fprintf(stderr, "inject_slowdown: %s\n", mx_last_error());
        return 2;
    }
    int rc = mx_results_create(argv[2], &in.meta, 1);
    for (int i = 0; rc == MX_OK && i < in.nruns; i++) {
        mx_run_record *r = &in.runs[i];
        for (int s = 0; s < r->nsteps; s++) r->step_time[s] *= factor;
        if (r->phase_time)
            for (int s = 0; s < r->nsteps * MX_NPHASES; s++) r->phase_time[s] *= factor;
        if (strcmp(r->status, "ok") == 0) mx_record_derive(r); /* throughput and its interval */
        rc = mx_results_append(argv[2], r);
    }
    if (rc < 0) fprintf(stderr, "inject_slowdown: %s: %s\n", argv[2], mx_last_error());
    mx_results_free(&in);
    return rc < 0 ? 1 : 0;
}
