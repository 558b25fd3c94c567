/* Unit tests of results/history.c on files built in memory: the time order (equal times keep
 * the order given; a file without a time keeps the order given for all), the labels (the
 * revision's first 12 characters, "#k" for a revision measured again, the file's name where a
 * build had no revision), gaps judged against the last point before them, runs not ok and
 * repeated configurations left out and counted. */
#include "tests/check.h"
#include "tests/results_fixture.h"

#include "results/history.h"

#define EXPECT(cond) CHECK(cond, "(the condition)")

/* A file of one revision: n runs of configurations cfg[0..n) (0: mlp on 1 device, 1: on 2),
 * throughputs tp[] with +-2% intervals. */
static void make_file(mx_results *f, const char *rev, const char *start, int n, const int *cfg, const double *tp)
{
    memset(f, 0, sizeof *f);
    snprintf(f->meta.git_revision, sizeof f->meta.git_revision, "%s", rev);
    snprintf(f->meta.start_time, sizeof f->meta.start_time, "%s", start);
    f->nruns = n;
    f->runs = calloc((size_t)n, sizeof *f->runs);
    for (int i = 0; i < n; i++) {
        fixture_record(&f->runs[i], i, 1 + cfg[i], 12);
        f->runs[i].throughput = tp[i];
        f->runs[i].throughput_ci_low = tp[i] * 0.98;
        f->runs[i].throughput_ci_high = tp[i] * 1.02;
    }
}

static void free_files(mx_results *f, int n)
{
    for (int i = 0; i < n; i++) mx_results_free(&f[i]);
}

static void test_order_and_labels(void)
{
    mx_results f[4];
    const int one[1] = {0};
    const double t[1] = {1000};
    make_file(&f[0], "0123456789abcdef0123", "2026-01-03T00:00:00Z", 1, one, t);
    make_file(&f[1], "ffff", "2026-01-01T00:00:00Z", 1, one, t);
    make_file(&f[2], "0123456789abcdef0123", "2026-01-03T00:00:00Z", 1, one, t); /* same time as f[0] */
    make_file(&f[3], "unknown", "2026-01-02T00:00:00Z", 1, one, t);
    const char *names[4] = {"a.h5", "b.h5", "c.h5", "dir/nightly.h5"};
    mx_history h;
    EXPECT(mx_history_build(f, names, 4, 0.05, &h) == MX_OK);
    EXPECT(h.nrevs == 4 && !h.unordered);
    EXPECT(h.revs[0].file == 1 && h.revs[1].file == 3 && h.revs[2].file == 0 && h.revs[3].file == 2);
    EXPECT(strcmp(h.revs[0].label, "ffff") == 0);
    EXPECT(strcmp(h.revs[1].label, "nightly") == 0);
    EXPECT(strcmp(h.revs[2].label, "0123456789ab") == 0);
    EXPECT(strcmp(h.revs[3].label, "0123456789ab#2") == 0);
    EXPECT(h.nconfigs == 1 && h.configs[0].npoints == 4);
    mx_history_free(&h);

    /* a file without a start time: the order given, said */
    f[1].meta.start_time[0] = '\0';
    EXPECT(mx_history_build(f, names, 4, 0.05, &h) == MX_OK);
    EXPECT(h.unordered && h.revs[0].file == 0 && h.revs[3].file == 3);
    mx_history_free(&h);
    free_files(f, 4);
}

static void test_gaps_and_verdicts(void)
{
    mx_results f[4];
    const int both[2] = {0, 1}, first[1] = {0};
    const double t0[2] = {1000, 2000}, t1[1] = {1005}, t2[2] = {1000, 1700}, t3[2] = {1100, 1710};
    make_file(&f[0], "r0", "2026-01-01T00:00:00Z", 2, both, t0);
    make_file(&f[1], "r1", "2026-01-02T00:00:00Z", 1, first, t1); /* config 1 missing: a gap */
    make_file(&f[2], "r2", "2026-01-03T00:00:00Z", 2, both, t2);
    make_file(&f[3], "r3", "2026-01-04T00:00:00Z", 2, both, t3);
    mx_history h;
    EXPECT(mx_history_build(f, NULL, 4, 0.05, &h) == MX_OK);
    EXPECT(h.nconfigs == 2);
    const mx_history_config *c0 = &h.configs[0], *c1 = &h.configs[1];
    EXPECT(c0->pt[0].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_NA && c0->pt[0].prev == -1);
    EXPECT(c0->pt[1].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_SAME);
    EXPECT(c1->pt[1].run == NULL && c1->npoints == 3);
    /* across the gap: r2 against r0, 15% down with +-2% intervals */
    EXPECT(c1->pt[2].prev == 0 && c1->pt[2].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_REGRESSION);
    EXPECT(fabs(c1->pt[2].vs[MX_HIST_THROUGHPUT].ratio - 0.85) < 1e-9);
    EXPECT(c0->pt[3].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_IMPROVEMENT);
    EXPECT(c1->pt[3].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_SAME);
    /* no counts in these files: instructions never judged */
    EXPECT(!h.counted && mx_history_ncompared(&h, MX_HIST_INSTRUCTIONS, -1) == 0);
    EXPECT(mx_history_count(&h, MX_HIST_THROUGHPUT, MX_VERDICT_REGRESSION, -1) == 1);
    EXPECT(mx_history_count(&h, MX_HIST_THROUGHPUT, MX_VERDICT_REGRESSION, 3) == 0);
    EXPECT(mx_history_ncompared(&h, MX_HIST_THROUGHPUT, 3) == 2);
    mx_history_free(&h);
    free_files(f, 4);
}

static void test_left_out(void)
{
    mx_results f[2];
    const int cfg[3] = {0, 0, 1};
    const double t[3] = {1000, 500, 2000};
    make_file(&f[0], "r0", "2026-01-01T00:00:00Z", 3, cfg, t);
    make_file(&f[1], "r1", "2026-01-02T00:00:00Z", 3, cfg, t);
    snprintf(f[1].runs[0].status, sizeof f[1].runs[0].status, "failed");
    f[1].runs[2].metrics[MX_COUNTER_INSTRUCTIONS] = 5e6;
    mx_history h;
    EXPECT(mx_history_build(f, NULL, 2, 0.05, &h) == MX_OK);
    /* f[0]'s second mlp run repeats the first (kept); f[1]'s first failed, so its repeat is the point */
    EXPECT(h.skipped == 1 && h.repeated == 1);
    EXPECT(h.configs[0].pt[0].value[MX_HIST_THROUGHPUT] == 1000 && h.configs[0].pt[1].value[MX_HIST_THROUGHPUT] == 500);
    EXPECT(h.configs[0].pt[1].vs[MX_HIST_THROUGHPUT].verdict == MX_VERDICT_REGRESSION);
    EXPECT(h.counted && h.configs[1].pt[1].vs[MX_HIST_INSTRUCTIONS].verdict == MX_VERDICT_NA);
    mx_history_free(&h);
    EXPECT(mx_history_build(f, NULL, 0, 0.05, &h) == MX_EINVAL);
    free_files(f, 2);
}

int main(void)
{
    test_order_and_labels();
    test_gaps_and_verdicts();
    test_left_out();
    return check_summary("test_history_build");
}
