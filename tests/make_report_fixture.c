/* Writes a results file for the report tests (test_results_cli.sh): r0000 one device whose
 * kvstore says "device", as files before one-device runs recorded "none" did; r0001 two
 * devices with a global batch of 64; r0002 diverged, with its reason; r0003 failed; r0004
 * dist_sync over 2 workers and 1 server, oversubscribed, with its rank table (worker 1 a
 * straggler).
 * usage: make_report_fixture FILE */
#include "tests/results_fixture.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_report_fixture FILE\n");
        return 2;
    }
    mx_results_meta meta;
    memset(&meta, 0, sizeof meta);
    int rc = mx_results_create(argv[1], &meta, 1);
    for (int i = 0; rc == MX_OK && i < 4; i++) {
        mx_run_record r;
        fixture_record(&r, i, i == 0 ? 1 : 2, 12);
        if (i == 0) snprintf(r.kvstore, sizeof r.kvstore, "device");
        if (i == 1) {
            snprintf(r.batch_mode, sizeof r.batch_mode, "global");
            r.batch = r.global_batch = 64;
        }
        if (i == 2) {
            snprintf(r.status, sizeof r.status, "diverged");
            snprintf(r.reason, sizeof r.reason, "loss inf at step 9 (started at 2.3)");
            r.exit_status = 1;
        }
        if (i == 3) {
            snprintf(r.status, sizeof r.status, "failed");
            snprintf(r.reason, sizeof r.reason, "the run failed (exit status 1); stderr: boom");
            r.exit_status = 1;
        }
        rc = mx_results_append(argv[1], &r);
        mx_record_free(&r);
    }
    if (rc == MX_OK) {
        mx_run_record r;
        fixture_dist_record(&r, 4, 2, 1);
        r.oversubscribed = 1;
        rc = mx_results_append(argv[1], &r);
        mx_record_free(&r);
    }
    if (rc != MX_OK) fprintf(stderr, "make_report_fixture: %s\n", mx_last_error());
    return rc == MX_OK ? 0 : 1;
}
