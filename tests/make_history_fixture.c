/* Results files for test_history.sh, as CI would keep them from five successive revisions.
 *
 * make_history_fixture synth DIR K: writes DIR/rev1.h5 .. DIR/rev5.h5, revisions aaaa...,
 *   bbbb..., ... (40 hex digits, as `git rev-parse` prints), started a day apart. Three
 *   configurations: mlp on 1 and on 2 devices, and lenet on 1 device, which is missing from
 *   rev3 (a gap). Throughputs drift by at most 1.5% between revisions, with 95% intervals of
 *   about +-2% (what a 120-step run gives on a quiet host); at revision K (2..5) mlp on 2
 *   devices loses 10% of its throughput and needs 10% more instructions per step, and keeps
 *   that loss after K; lenet gains 12% at rev4 (judged against rev2, across the gap). Every
 *   run also has an instruction count (mxbench count's figure).
 * make_history_fixture relabel IN OUT REVISION START_TIME: a copy of IN whose git_revision
 *   and start_time are the ones given (real runs of one build, told apart as revisions). */
#include "tests/results_fixture.h"

enum { NREVS = 5 };

static const double drift[NREVS] = {1.000, 1.012, 0.995, 1.004, 0.990}; /* revision to revision */

static void config_record(mx_run_record *r, int cfg, int rev, int regressed_at)
{
    static const double base[3] = {5200, 8900, 2400};          /* samples/s */
    static const double instructions[3] = {1.9e7, 2.1e7, 4.6e7}; /* per step */
    fixture_record(r, cfg, cfg == 1 ? 2 : 1, 12);
    if (cfg == 2) snprintf(r->workload, sizeof r->workload, "lenet");
    r->epochs = 0, r->steps = 120;
    double x = base[cfg] * drift[rev], ins = instructions[cfg] * (1 + 0.001 * rev);
    if (cfg == 1 && rev + 1 >= regressed_at) x *= 0.90, ins *= 1.10;
    if (cfg == 2 && rev + 1 >= 4) x *= 1.12;
    r->throughput = x;
    r->throughput_ci_low = x * 0.982;
    r->throughput_ci_high = x * 1.019;
    r->metrics[MX_COUNTER_INSTRUCTIONS] = ins;
}

static int synth(const char *dir, int regressed_at)
{
    for (int rev = 0; rev < NREVS; rev++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rev%d.h5", dir, rev + 1);
        mx_results_meta meta;
        memset(&meta, 0, sizeof meta);
        snprintf(meta.mxbench_version, sizeof meta.mxbench_version, "test");
        for (int k = 0; k < 40; k++) meta.git_revision[k] = (char)('a' + rev);
        snprintf(meta.start_time, sizeof meta.start_time, "2026-03-%02dT10:00:00Z", 10 + rev);
        snprintf(meta.host, sizeof meta.host, "ci-runner");
        MX_TRY(mx_results_create(path, &meta, 1));
        for (int cfg = 0; cfg < 3; cfg++) {
            if (cfg == 2 && rev == 2) continue; /* lenet did not run at rev3 */
            mx_run_record r;
            config_record(&r, cfg, rev, regressed_at);
            const int rc = mx_results_append(path, &r);
            mx_record_free(&r);
            MX_TRY(rc);
        }
    }
    return MX_OK;
}

static int relabel(const char *in, const char *out, const char *revision, const char *start)
{
    mx_results res;
    MX_TRY(mx_results_load(in, &res));
    snprintf(res.meta.git_revision, sizeof res.meta.git_revision, "%s", revision);
    snprintf(res.meta.start_time, sizeof res.meta.start_time, "%s", start);
    int rc = mx_results_create(out, &res.meta, 1);
    for (int i = 0; rc == MX_OK && i < res.nruns; i++) rc = mx_results_append(out, &res.runs[i]);
    mx_results_free(&res);
    return rc;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc == 4 && strcmp(argv[1], "synth") == 0) {
        const int k = atoi(argv[3]);
        if (k < 2 || k > NREVS) {
            fprintf(stderr, "make_history_fixture: K '%s' must be a revision from 2 to %d\n", argv[3], NREVS);
            return 2;
        }
        rc = synth(argv[2], k);
    } else if (argc == 6 && strcmp(argv[1], "relabel") == 0) {
        rc = relabel(argv[2], argv[3], argv[4], argv[5]);
    } else {
        fprintf(stderr, "usage: make_history_fixture synth DIR K | relabel IN OUT REVISION START_TIME\n");
        return 2;
    }
    if (rc != MX_OK) fprintf(stderr, "make_history_fixture: %s\n", mx_last_error());
    return rc == MX_OK ? 0 : 1;
}
