/* The answer of a study (results/answer.h) on records built in memory, whose answer is known
 * by construction:
 * - mlp on 2 devices: a data row (10 ms steps) faster than a model row (20 ms) whose bubble
 *   counter is 0.5: the data row wins, the model row loses 50% of its step to the bubble;
 * - lenet on 2 devices: a data row whose devices computed 10 and 20 ms a step: 5 ms of
 *   stragglers (the slow one beyond the median, 15 ms), named in the paragraph;
 * - resnet18 on 4 devices with a target accuracy of 0.9: the fastest row missed it, a slower
 *   one reached it at 2 s and wins, the slowest reached it at 1 s and is the fastest to it;
 * - a dist_sync job whose worker 1 is slow (tests/results_fixture.h): the rank straggler;
 * - a language model: tokens/s;
 * - oversubscribed, noisy, failed, diverged and counted rows: left out, each with its reason;
 * and every ranked row's parts are non-negative and add up to its median step. */
#include "check.h"
#include "results_fixture.h"
#include "results/answer.h"

enum { STEPS = 12, MAXRUNS = 16 };

static mx_run_record runs[MAXRUNS];
static int nruns;

/* A row of `strategy` on `gpus` devices whose every step takes `step` seconds, split over the
 * phases data, forward, backward, comm, update, compress by share[] (summing to 1). */
static mx_run_record *row(const char *workload, const char *strategy, int gpus, double step, const double *share)
{
    mx_run_record *r = &runs[nruns];
    fixture_record(r, nruns, gpus, STEPS);
    nruns++;
    snprintf(r->workload, sizeof r->workload, "%s", workload);
    snprintf(r->strategy, sizeof r->strategy, "%s", strategy);
    if (strcmp(strategy, "data") != 0) snprintf(r->kvstore, sizeof r->kvstore, "none");
    for (int i = 0; i < STEPS; i++) {
        r->step_time[i] = step;
        for (int p = 0; p < MX_NPHASES; p++) r->phase_time[i * MX_NPHASES + p] = step * share[p];
    }
    mx_record_derive(r);
    return r;
}

static const char *find_para(char **p, int n, const char *needle)
{
    for (int i = 0; i < n; i++)
        if (strstr(p[i], needle)) return p[i];
    return NULL;
}

static const mx_answer_group *group(const mx_answer *a, const char *workload, int gpus)
{
    for (int i = 0; i < a->ngroups; i++)
        if (strcmp(a->groups[i].workload, workload) == 0 && a->groups[i].gpus == gpus) return &a->groups[i];
    return NULL;
}

static const char *winner_id(const mx_answer_group *g)
{
    return g && g->winner >= 0 ? g->entries[g->winner].run->id : "(none)";
}

int main(void)
{
    /* ---- mlp, 2 devices: data against a model row with a bubble of 0.5 */
    const double data_share[MX_NPHASES] = {0.10, 0.30, 0.40, 0.20, 0, 0};
    mx_run_record *fast = row("mlp", "data", 2, 0.010, data_share); /* 6,400 samples/s */
    const double model_share[MX_NPHASES] = {0.05, 0.45, 0.50, 0, 0, 0};
    mx_run_record *piped = row("mlp", "model", 2, 0.020, model_share); /* 3,200 samples/s */
    piped->metrics[MX_COUNTER_BUBBLE] = 0.5;
    piped->micro_batches = 4;
    /* ---- lenet, 2 devices: a device straggler */
    const double s_share[MX_NPHASES] = {0.04, 0.40, 0.48, 0.08, 0, 0};
    mx_run_record *strag = row("lenet", "data", 2, 0.025, s_share);
    static mx_device_row devs[2] = {{.device = 0, .busy_time = 0.010}, {.device = 1, .busy_time = 0.020}};
    strag->devices = devs, strag->ndevices = 2;
    /* ---- resnet18, 4 devices, target accuracy 0.9 */
    mx_run_record *missed = row("resnet18", "data", 4, 0.010, data_share);
    mx_run_record *reached = row("resnet18", "data", 4, 0.020, data_share);
    mx_run_record *first = row("resnet18", "data", 4, 0.040, data_share);
    snprintf(reached->kvstore, sizeof reached->kvstore, "local");
    snprintf(first->kvstore, sizeof first->kvstore, "dist_sync");
    const double accs[3][2] = {{0.80, 0.85}, {0.85, 0.92}, {0.91, 0.93}};
    mx_run_record *t3[3] = {missed, reached, first};
    for (int i = 0; i < 3; i++) {
        t3[i]->target_acc = 0.9;
        t3[i]->test_acc[0] = accs[i][0], t3[i]->test_acc[1] = accs[i][1];
        mx_record_derive(t3[i]);
    }
    /* ---- a dist_sync job, worker 1 slow */
    mx_run_record *dist = &runs[nruns];
    fixture_dist_record(dist, nruns, 2, 1);
    nruns++;
    snprintf(dist->workload, sizeof dist->workload, "alexnet");
    /* as a synchronous job measures it: every step 25 ms; worker 0 waits 15 ms of it in pulls
     * for worker 1, which waits 3 ms: worker 1 works 22 ms, worker 0 10 */
    for (int i = 0; i < dist->nsteps; i++) dist->step_time[i] = 0.025;
    for (int i = 0; i < 2; i++)
        dist->ranks[i].step_median = 0.025, dist->ranks[i].pull_time = i == 0 ? 0.015 : 0.003;
    mx_record_derive(dist);
    /* ---- a language model on one device */
    mx_run_record *lm = row("gpt-mini", "data", 1, 0.050, data_share);
    lm->tokens_per_sample = 64;
    mx_record_derive(lm);
    /* ---- rows left out */
    mx_run_record *over = row("mlp", "data", 2, 0.005, data_share);
    over->oversubscribed = 1;
    mx_run_record *noisy = row("mlp", "data", 2, 0.005, data_share);
    noisy->noisy = 1, noisy->host_others = 1.5, noisy->host_load = 3.2;
    mx_run_record *failed = row("mlp", "data", 2, 0.005, data_share);
    snprintf(failed->status, sizeof failed->status, "failed");
    snprintf(failed->reason, sizeof failed->reason, "the run failed (exit status 1); stderr: boom\nsecond line");
    mx_run_record *diverged = row("mlp", "data", 2, 0.005, data_share);
    snprintf(diverged->status, sizeof diverged->status, "diverged");
    snprintf(diverged->reason, sizeof diverged->reason, "loss inf at step 9");
    mx_run_record *counted = row("mlp", "data", 2, 0.005, data_share);
    snprintf(counted->counted_by, sizeof counted->counted_by, "cachegrind");

    mx_results res = {.schema_version = 1, .nruns = nruns, .runs = runs};
    mx_answer a;
    CHECK(mx_answer_build(&res, &a) == MX_OK, "build: %s", mx_last_error());
    char **p = NULL;
    int np = 0;
    CHECK(mx_answer_paragraphs(&a, &p, &np) == MX_OK && np == a.ngroups + 1, "%d paragraphs for %d groups", np,
          a.ngroups);
    for (int i = 0; i < np; i++) printf("paragraph %d: %s\n\n", i, p[i]);

    /* groups: by workload in the file's order, then device count */
    CHECK(a.ngroups == 5, "%d groups, expected mlp/2, lenet/2, resnet18/4, alexnet/2, gpt-mini/1", a.ngroups);
    CHECK(a.ngroups >= 1 && strcmp(a.groups[0].workload, "mlp") == 0, "first group %s",
          a.ngroups ? a.groups[0].workload : "-");

    /* the bubble */
    const mx_answer_group *g = group(&a, "mlp", 2);
    CHECK(g && g->nentries == 2, "mlp/2: %d ranked rows (the left-out ones must not be)", g ? g->nentries : -1);
    CHECK(g && g->winner >= 0 && g->entries[g->winner].run == fast, "mlp/2 winner %s, expected %s", winner_id(g),
          fast->id);
    CHECK(g && g->runner_up >= 0 && g->entries[g->runner_up].run == piped, "mlp/2 runner-up");
    CHECK(g && g->fastest_to_target == -1 && g->entries[0].reached == -1, "no target asked in mlp/2");
    if (g && g->runner_up >= 0) {
        const mx_answer_entry *e = &g->entries[g->runner_up];
        CHECK(fabs(e->parts[MX_PART_BUBBLE] - 0.010) < 1e-9, "bubble part %g s, expected 0.5 x 20 ms",
              e->parts[MX_PART_BUBBLE]);
        CHECK(fabs(e->parts[MX_PART_DATA] - 0.001) < 1e-9, "data part %g s, expected 5%% of 20 ms",
              e->parts[MX_PART_DATA]);
    }
    if (g && g->winner >= 0) {
        const mx_answer_entry *e = &g->entries[g->winner];
        CHECK(fabs(e->parts[MX_PART_COMM] - 0.002) < 1e-9 && fabs(e->parts[MX_PART_COMPUTE] - 0.007) < 1e-9,
              "data row: comm %g, compute %g s", e->parts[MX_PART_COMM], e->parts[MX_PART_COMPUTE]);
    }
    const char *para = find_para(p, np, "On 2 devices (mlp, cpu)");
    CHECK(para && strstr(para, "data-parallel, kvstore device (r0000) is fastest: 6,400 samples/s"),
          "mlp winner sentence: %s", para ? para : "(none)");
    CHECK(para && strstr(para, "its step (10.0 ms) goes 70% to compute, 20% to exposed communication and 10% to data"),
          "mlp winner's parts: %s", para ? para : "(none)");
    CHECK(para && strstr(para, "Runner-up: model-parallel (pipeline, 4 micro-batches, gpipe) (r0001), 3,200 samples/s, "
                               "which loses 50% of its step to the pipeline bubble at 4 micro-batches"),
          "mlp runner-up: %s", para ? para : "(none)");
    CHECK(para && strstr(para, "No projection: the fit was skipped"), "mlp projection: %s", para ? para : "(none)");

    /* the device straggler */
    mx_straggler s;
    CHECK(mx_device_straggler(strag, &s) == 1 && s.who == 1 && s.n == 2 && fabs(s.median - 0.015) < 1e-12 &&
              fabs(s.ratio - 20.0 / 15) < 1e-12,
          "device straggler: who %d, median %g, ratio %g", s.who, s.median, s.ratio);
    devs[1].busy_time = 0.011;
    CHECK(mx_device_straggler(strag, &s) == 0 && s.who == 1, "1.1x the median is no straggler (ratio %g)", s.ratio);
    devs[1].busy_time = 0.020;
    g = group(&a, "lenet", 2);
    CHECK(g && g->nentries == 1 && fabs(g->entries[0].parts[MX_PART_STRAGGLER] - 0.005) < 1e-9,
          "lenet stragglers part %g s, expected 20 - 15 ms", g ? g->entries[0].parts[MX_PART_STRAGGLER] : NAN);
    para = find_para(p, np, "(lenet, cpu)");
    CHECK(para && strstr(para, "to stragglers (device 1 computed 20.0 ms a step, 1.33x the median of the 2 devices, "
                               "15.0 ms)"),
          "lenet paragraph names the straggler: %s", para ? para : "(none)");

    /* the target */
    g = group(&a, "resnet18", 4);
    CHECK(g && g->nentries == 3 && g->entries[0].run == missed && g->entries[0].reached == 0, "resnet18 order");
    CHECK(g && g->winner >= 0 && g->entries[g->winner].run == reached, "resnet18 winner %s, expected %s (%s missed)",
          winner_id(g), reached->id, missed->id);
    CHECK(g && g->runner_up >= 0 && g->entries[g->runner_up].run == first, "resnet18 runner-up");
    CHECK(g && g->fastest_to_target >= 0 && g->entries[g->fastest_to_target].run == first &&
              g->entries[g->fastest_to_target].time_to_target == 1,
          "fastest to the target");
    CHECK(strcmp(a.target_rule, "test accuracy >= 0.9") == 0, "target rule '%s'", a.target_rule);
    para = find_para(p, np, "(resnet18, cpu)");
    CHECK(para && strstr(para, "among the rows that reached the target (test accuracy >= 0.9), data-parallel, kvstore "
                               "local (r0004) is fastest: 6,400 samples/s"),
          "resnet18 winner: %s", para ? para : "(none)");
    CHECK(para && strstr(para, "Faster, but short of the target: data-parallel, kvstore device (r0003), 12,800"),
          "resnet18 names the faster row that missed: %s", para ? para : "(none)");
    CHECK(para && strstr(para, "Fastest to the target: data-parallel, kvstore dist_sync (r0005), in 1 s"),
          "resnet18 fastest to the target: %s", para ? para : "(none)");

    /* the rank straggler: worker 1 works 22 ms a step besides waiting, worker 0 10; the 6 ms
     * beyond their median (16 ms) come out of comm, where worker 0 waited */
    CHECK(mx_rank_straggler(dist, &s) == 1 && s.who == 1 && fabs(s.time - 0.022) < 1e-12 &&
              fabs(s.median - 0.016) < 1e-12,
          "rank straggler: who %d, time %g, median %g", s.who, s.time, s.median);
    g = group(&a, "alexnet", 2);
    CHECK(g && g->nentries == 1 && fabs(g->entries[0].parts[MX_PART_STRAGGLER] - 0.006) < 1e-9 &&
              fabs(g->entries[0].parts[MX_PART_COMM] - (0.025 * 2 / 6 - 0.006)) < 1e-9,
          "dist: the wait comes out of comm first (comm %g, stragglers %g)",
          g ? g->entries[0].parts[MX_PART_COMM] : NAN, g ? g->entries[0].parts[MX_PART_STRAGGLER] : NAN);
    para = find_para(p, np, "(alexnet, cpu)");
    CHECK(para && strstr(para, "(worker rank 1 works 22.0 ms a step besides waiting for the others, 1.38x the median"),
          "dist paragraph names worker 1: %s", para ? para : "(none)");

    /* a language model */
    para = find_para(p, np, "(gpt-mini, cpu)");
    CHECK(para && strstr(para, "640 samples/s (40,960 tokens/s)"), "tokens/s: %s", para ? para : "(none)");

    /* left out, with reasons */
    CHECK(a.nleft == 5, "%d rows left out, expected 5", a.nleft);
    const char *want[5][2] = {{over->id, "oversubscribed: 2 devices x 1 thread"},
                              {noisy->id, "noisy host: 1.5 threads of other programs ready to run, load 3.2"},
                              {failed->id, "failed: the run failed (exit status 1); stderr: boom"},
                              {diverged->id, "diverged: loss inf at step 9"},
                              {counted->id, "counted only (mxbench count via cachegrind)"}};
    for (int k = 0; k < 5; k++) {
        int found = 0;
        for (int i = 0; i < a.nleft; i++)
            if (strcmp(a.left[i].run->id, want[k][0]) == 0) {
                found = 1;
                CHECK(strstr(a.left[i].why, want[k][1]) && !strstr(a.left[i].why, "second line"),
                      "%s left out: '%s', expected '%s'", want[k][0], a.left[i].why, want[k][1]);
            }
        CHECK(found, "%s not left out", want[k][0]);
    }
    para = find_para(p, np, "Left out of the ranking:");
    CHECK(para && strstr(para, "r0008 (oversubscribed") && strstr(para, "r0010 (failed: the run failed"),
          "left-out paragraph: %s", para ? para : "(none)");

    /* parts: never negative, their sum the median step */
    for (int i = 0; i < a.ngroups; i++)
        for (int k = 0; k < a.groups[i].nentries; k++) {
            const mx_answer_entry *e = &a.groups[i].entries[k];
            double sum = 0, low = 0;
            for (int q = 0; q < MX_NPARTS; q++) sum += e->parts[q], low = fmin(low, e->parts[q]);
            CHECK(low >= 0 && fabs(sum - e->step) <= 1e-12 * e->step && e->step == e->run->step_time_median,
                  "%s: parts sum %.17g, step %.17g, least part %g", e->run->id, sum, e->step, low);
        }

    /* Markdown: the winner in bold; JSON: the ids */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mx_answer_write(&a, f, 1);
    CHECK(mx_answer_write_json(&a, f) == MX_OK, "json: %s", mx_last_error());
    fclose(f);
    CHECK(buf && strstr(buf, "**data-parallel, kvstore device (r0000)** is fastest"), "md bold winner");
    CHECK(buf && strstr(buf, "\n- r0010: failed: the run failed"), "md list of left-out rows");
    CHECK(buf && strstr(buf, "\"gpus\": 2, \"winner\": \"r0000\", \"runner_up\": \"r0001\", \"fastest_to_target\": "
                             "null, \"ranked\": [\"r0000\", \"r0001\"]"),
          "json group: %s", buf ? buf : "");
    free(buf);
    mx_answer_paragraphs_free(p, np);
    mx_answer_free(&a);

    /* nothing rankable: no group, every row left out */
    mx_results none = {.schema_version = 1, .nruns = 2, .runs = failed};
    CHECK(mx_answer_build(&none, &a) == MX_OK && a.ngroups == 0 && a.nleft == 2, "only bad rows: %d groups, %d left",
          a.ngroups, a.nleft);
    CHECK(mx_answer_paragraphs(&a, &p, &np) == MX_OK && np == 2 && strstr(p[0], "No row can be ranked"),
          "only bad rows: %d paragraphs", np);
    mx_answer_paragraphs_free(p, np);
    mx_answer_free(&a);

    strag->devices = NULL, strag->ndevices = 0; /* static, not the record's */
    for (int i = 0; i < nruns; i++) mx_record_free(&runs[i]);
    return check_summary("test_answer");
}
