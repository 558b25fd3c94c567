/* The answer of a study (answer.h), computed: which rows are ranked and which are left out,
 * the groups by workload and device count, the ranking and the target rule, where each
 * ranked row's step goes, and the projection of a data-parallel winner. The words are
 * answer_text.c's. */
#include "answer.h"
#include "axes.h"

#include "base/status.h"
#include "project.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *mx_answer_part_name(mx_answer_part p)
{
    static const char *const names[MX_NPARTS] = {"compute", "data", "exposed communication", "pipeline bubble",
                                                 "update", "stragglers"};
    return p >= 0 && p < MX_NPARTS ? names[p] : "?";
}

/* ---- the straggler rules */

/* The slowest of x[0..n) (their owners in who[]) against their median. */
static int straggler_of(const double *x, const int *who, int n, mx_straggler *s)
{
    s->who = -1, s->n = n, s->time = s->median = s->ratio = NAN;
    if (n < 2) return 0;
    int slow = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[slow]) slow = i;
    s->who = who[slow];
    s->time = x[slow];
    s->median = mx_stats_median(x, n);
    s->ratio = s->median > 0 ? s->time / s->median : NAN;
    return s->ratio >= MX_DEVICE_STRAGGLER_RATIO;
}

int mx_device_straggler(const mx_run_record *r, mx_straggler *s)
{
    const int n = r->ndevices > 0 && r->devices ? r->ndevices : 0;
    double *x = malloc(sizeof *x * (size_t)(n + 1));
    int *who = malloc(sizeof *who * (size_t)(n + 1)), m = 0;
    for (int i = 0; x && who && i < n; i++)
        if (isfinite(r->devices[i].busy_time)) x[m] = r->devices[i].busy_time, who[m++] = r->devices[i].device;
    const int rc = straggler_of(x, who, x && who ? m : 0, s);
    free(x);
    free(who);
    return rc;
}

int mx_rank_straggler(const mx_run_record *r, mx_straggler *s)
{
    const int n = r->nranks > 0 && r->ranks ? r->nranks : 0;
    const int collective = mx_kv_name_has(r->kvstore, MX_KV_COLLECTIVE);
    /* The waits are means over the steps: they are taken from the mean step, the same for every
     * worker of a synchronous job (they run their steps in lockstep), worker 0's series. An
     * asynchronous job's workers wait for no one: their own step medians tell. */
    double step = 0;
    int nstep = 0;
    for (int i = 0; r->step_time && i < r->nsteps; i++)
        if (isfinite(r->step_time[i]) && r->step_time[i] > 0) step += r->step_time[i], nstep++;
    step = nstep && !mx_kv_name_has(r->kvstore, MX_KV_ASYNC) ? step / nstep : NAN;
    double *x = malloc(sizeof *x * (size_t)(n + 1));
    int *who = malloc(sizeof *who * (size_t)(n + 1)), m = 0;
    for (int i = 0; x && who && i < n; i++) {
        const mx_rank_row *k = &r->ranks[i];
        if (strcmp(k->role, "worker") != 0 || !isfinite(k->step_median)) continue;
        const double wait = collective ? k->push_time : k->pull_time;
        x[m] = isfinite(step) && isfinite(wait) && wait >= 0 ? fmax(0, step - wait) : k->step_median;
        who[m++] = k->rank;
    }
    const int rc = straggler_of(x, who, x && who ? m : 0, s);
    free(x);
    free(who);
    return rc;
}

/* ---- rows left out */

/* The first line of text, at most max characters ("..." where cut). */
static void first_line(char *buf, size_t n, const char *text, size_t max)
{
    size_t len = strcspn(text, "\n");
    if (len > max) snprintf(buf, n, "%.*s...", (int)(max - 3), text);
    else snprintf(buf, n, "%.*s", (int)len, text);
}

/* Why r is not ranked, into why; 0 when it is ranked. */
static int left_reason(const mx_run_record *r, char *why, size_t n)
{
    char line[128];
    if (strcmp(r->status, "ok") != 0) {
        first_line(line, sizeof line, r->reason, 110);
        snprintf(why, n, "%s%s%s", r->status, line[0] ? ": " : "", line);
        return 1;
    }
    if (r->counted_by[0]) {
        snprintf(why, n, "counted only (mxbench count via %s): instructions and cache misses, no timings",
                 r->counted_by);
        return 1;
    }
    if (r->oversubscribed) {
        const double cores = r->metrics[MX_COUNTER_HOST_CORES];
        const int procs = r->workers > 1 ? r->workers : r->gpus,
                  t = r->threads_per_device > 0 ? r->threads_per_device : 1;
        const char *unit = r->workers > 1 ? "worker" : "device";
        char servers[40] = ""; /* a parameter server is a process on the cores too */
        if (r->servers > 0)
            snprintf(servers, sizeof servers, " and %d server%s", r->servers, r->servers == 1 ? "" : "s");
        if (isfinite(cores))
            snprintf(why, n, "oversubscribed: %d %s%s x %d thread%s%s on %.0f cores", procs, unit,
                     procs == 1 ? "" : "s", t, t == 1 ? "" : "s", servers, cores);
        else
            snprintf(why, n, "oversubscribed: %d %s%s x %d thread%s%s, more than the host's cores", procs, unit,
                     procs == 1 ? "" : "s", t, t == 1 ? "" : "s", servers);
        return 1;
    }
    if (r->noisy) {
        int len = snprintf(why, n, "noisy host: %.1f threads of other programs ready to run, load %.1f",
                           r->host_others, r->host_load);
        if (len > 0 && (size_t)len < n && r->host_steal > 0)
            snprintf(why + len, n - (size_t)len, ", %.0f%% stolen", r->host_steal * 100);
        return 1;
    }
    if (!(r->step_time_median > 0) || !(r->throughput > 0)) {
        snprintf(why, n, "no timed step: nothing to rank it by");
        return 1;
    }
    return 0;
}

/* ---- where a step goes */

/* The phases' mean shares of the median step (as project.c splits it: a sum of per-phase
 * medians would not add up to any step), then the bubble and the stragglers taken out of the
 * part where their time shows, compute the rest; never negative, the sum the step. */
static void split_step(const mx_run_record *r, double *parts)
{
    const double step = r->step_time_median;
    double sum[MX_NPHASES] = {0}, total = 0;
    for (int k = 0; k < MX_NPARTS; k++) parts[k] = 0;
    for (int i = 0; r->phase_time && i < r->nsteps; i++)
        for (int k = 0; k < MX_NPHASES; k++) {
            const double v = r->phase_time[(size_t)i * MX_NPHASES + k];
            if (isfinite(v) && v > 0) sum[k] += v;
        }
    for (int k = 0; k < MX_NPHASES; k++) total += sum[k];
    if (!(total > 0)) {
        parts[MX_PART_COMPUTE] = step; /* no phases: the whole step, undivided */
        return;
    }
    const double t = step / total;
    parts[MX_PART_DATA] = sum[MX_PHASE_DATA] * t;
    parts[MX_PART_COMM] = (sum[MX_PHASE_COMM] + sum[MX_PHASE_COMPRESS]) * t;
    parts[MX_PART_UPDATE] = sum[MX_PHASE_UPDATE] * t;
    parts[MX_PART_COMPUTE] = (sum[MX_PHASE_FORWARD] + sum[MX_PHASE_BACKWARD]) * t;
    /* the pipeline's idle share: the forward and backward phases run until the last stage is
     * done, so the stages' idle windows are inside them */
    const double bubble = r->metrics[MX_COUNTER_BUBBLE];
    if (mx_strategy_of(r->strategy) == MX_STRATEGY_MODEL && bubble > 0) {
        parts[MX_PART_BUBBLE] = fmin(bubble * step, parts[MX_PART_COMPUTE]);
        parts[MX_PART_COMPUTE] -= parts[MX_PART_BUBBLE];
    }
    /* Stragglers: the slowest beyond the median one. A model row has none apart: a stage that
     * computes longer leaves the others idle, which its bubble counter measured already. The
     * devices of one process: the forward and backward phases end when the last device is
     * done, so the slow device's extra time is in compute. A dist_* job: worker 0's phases
     * are the record's, and it waits for a slower worker in its pulls (all-reduces), which it
     * times as comm; only where worker 0 is itself the slowest is the extra time its compute.
     * What comm cannot hold comes out of compute. */
    mx_straggler s;
    double extra = 0, from_comm = 0;
    if (r->nranks > 1) {
        mx_rank_straggler(r, &s);
        if (s.who >= 0 && s.time > s.median) extra = s.time - s.median;
        if (s.who != 0) from_comm = fmin(extra, parts[MX_PART_COMM]);
    } else if (r->ndevices > 1 && mx_strategy_of(r->strategy) != MX_STRATEGY_MODEL) {
        mx_device_straggler(r, &s);
        if (s.who >= 0 && s.time > s.median) extra = s.time - s.median;
    }
    const double from_compute = fmin(extra - from_comm, parts[MX_PART_COMPUTE]);
    parts[MX_PART_COMM] -= from_comm;
    parts[MX_PART_COMPUTE] -= from_compute;
    parts[MX_PART_STRAGGLER] = from_comm + from_compute;
    for (int k = 0; k < MX_NPARTS; k++)
        if (!(parts[k] > 0)) parts[k] = 0; /* rounding below zero */
}

/* ---- the entries of a group */

/* The configuration in words; the caller makes equal ones of a group distinct. */
static void label_of(const mx_run_record *r, char *buf, size_t n)
{
    int len;
    const mx_strategy_kind s = mx_strategy_of(r->strategy);
    if (s == MX_STRATEGY_MODEL)
        len = snprintf(buf, n, "model-parallel (pipeline, %d micro-batch%s, %s)", r->micro_batches,
                       r->micro_batches == 1 ? "" : "es", r->schedule);
    else if (s == MX_STRATEGY_LAYER)
        len = snprintf(buf, n, "layer-parallel (tensor)");
    else if (mx_kv_mode_of(r->kvstore) == MX_KV_NONE || (r->gpus == 1 && !mx_kv_name_has(r->kvstore, MX_KV_DIST)))
        len = snprintf(buf, n, "%s-parallel, no kvstore", r->strategy);
    else
        len = snprintf(buf, n, "%s-parallel, kvstore %s", r->strategy, r->kvstore);
    if (len > 0 && (size_t)len < n && mx_gc_of(r->compression) != MX_GC_NONE)
        len += snprintf(buf + len, n - (size_t)len, ", %s compression", r->compression);
    if (len > 0 && (size_t)len < n && mx_amp_of(r->amp) != MX_AMP_OFF)
        snprintf(buf + len, n - (size_t)len, ", %s AMP", r->amp);
}

static int asked_target(const mx_run_record *r) { return r->target_acc > 0 || r->target_loss > 0; }

static void fill_entry(mx_answer_entry *e, const mx_run_record *r)
{
    memset(e, 0, sizeof *e);
    e->run = r;
    label_of(r, e->label, sizeof e->label);
    e->throughput = r->throughput;
    e->tokens_per_s = r->tokens_per_sample > 0 ? r->tokens_per_s : NAN;
    e->efficiency = r->efficiency;
    e->step = r->step_time_median;
    e->noisy_host = r->noisy;
    const int acc = r->target_acc > 0 && isfinite(r->time_to_acc);
    const int loss = r->target_loss > 0 && isfinite(r->time_to_loss);
    e->reached = asked_target(r) ? acc || loss : -1;
    e->time_to_target = acc && loss ? fmin(r->time_to_acc, r->time_to_loss)
                        : acc       ? r->time_to_acc
                        : loss      ? r->time_to_loss
                                    : NAN;
    split_step(r, e->parts);
}

static int by_throughput(const void *pa, const void *pb)
{
    const mx_answer_entry *a = pa, *b = pb;
    if (a->throughput != b->throughput) return a->throughput < b->throughput ? 1 : -1;
    return strcmp(a->run->id, b->run->id);
}

/* The first field of the configuration key (results/axes.h, in its order) whose values in
 * a and b differ, as ", name value" for a; "" when none does (the run ids tell them apart). */
static void first_difference(const mx_run_record *a, const mx_run_record *b, char *buf, size_t n)
{
    buf[0] = 0;
    for (int k = 0; k < mx_naxes; k++) {
        const mx_axis *x = &mx_axes[k];
        char va[128], vb[128];
        if (!x->in_key) continue;
        mx_axis_text(x, a, va, sizeof va);
        mx_axis_text(x, b, vb, sizeof vb);
        if (strcmp(va, vb) != 0) {
            if (x->type == MX_AXIS_DBL) /* the key's exact digits (0.05000000000000000277) read badly */
                snprintf(buf, n, ", %s %g", x->name, strtod(va, NULL));
            else
                snprintf(buf, n, ", %s %s", x->name, va);
            return;
        }
    }
}

/* Equal labels within a group (they differ in a field the label leaves out): each gets the
 * first field in which the two differ, e.g. ", gc_threshold 1". Runs equal in every field
 * keep their labels: the paragraphs name each entry's run id beside it. */
static void distinct_labels(mx_answer_group *g)
{
    for (int i = 1; i < g->nentries; i++)
        for (int j = 0; j < i; j++) {
            mx_answer_entry *a = &g->entries[i], *b = &g->entries[j];
            if (strcmp(a->label, b->label) != 0) continue;
            char da[160], db[160];
            first_difference(a->run, b->run, da, sizeof da);
            first_difference(b->run, a->run, db, sizeof db);
            const size_t la = strlen(a->label), lb = strlen(b->label);
            if (!da[0] || la + strlen(da) >= sizeof a->label || lb + strlen(db) >= sizeof b->label) continue;
            memcpy(a->label + la, da, strlen(da) + 1);
            memcpy(b->label + lb, db, strlen(db) + 1);
            j = -1; /* compare again with the longer labels */
        }
}

/* The winner, runner-up and fastest to the target (answer.h's rule). */
static void rank_group(mx_answer_group *g)
{
    int asked = 0;
    for (int i = 0; i < g->nentries; i++) asked |= g->entries[i].reached >= 0;
    g->winner = g->runner_up = g->fastest_to_target = -1;
    for (int i = 0; i < g->nentries; i++) {
        const mx_answer_entry *e = &g->entries[i];
        if (asked && e->reached != 1) continue;
        if (g->winner < 0) g->winner = i;
        else if (g->runner_up < 0) g->runner_up = i;
        if (e->reached == 1 &&
            (g->fastest_to_target < 0 || e->time_to_target < g->entries[g->fastest_to_target].time_to_target))
            g->fastest_to_target = i;
    }
}

/* ---- the projection of a data-parallel winner */

static int kv_none(const mx_run_record *r) { return mx_kv_mode_of(r->kvstore) == MX_KV_NONE; }

/* The winner's configuration as `mxbench project` groups it (project_group.c): the ok runs of
 * its series key and exchange, with the one-device runs without kvstore where the series has
 * no one-device run of its own; fitted, and evaluated at 2x and 4x the group's devices. */
static int project_winner(const mx_results *res, mx_answer_group *g)
{
    const mx_run_record *w = g->entries[g->winner].run;
    g->proj_throughput[0] = g->proj_throughput[1] = g->proj_efficiency[0] = g->proj_efficiency[1] = NAN;
    if (mx_strategy_of(w->strategy) != MX_STRATEGY_DATA) {
        snprintf(g->proj_note, sizeof g->proj_note,
                 "the winner is %s-parallel; the projection models data parallelism (replicas and a kvstore)",
                 w->strategy);
        return MX_OK;
    }
    if (kv_none(w)) {
        snprintf(g->proj_note, sizeof g->proj_note,
                 "the winner has no kvstore; mxbench project projects each kvstore's series from it");
        return MX_OK;
    }
    if (4 * g->gpus > MX_PROJ_MAX_GPUS) {
        snprintf(g->proj_note, sizeof g->proj_note, "4 x %d devices is past the %d a projection accepts", g->gpus,
                 MX_PROJ_MAX_GPUS);
        return MX_OK;
    }
    enum { KEY = 2048 };
    char *key = malloc(KEY), *other = malloc(KEY);
    const mx_run_record **runs = calloc((size_t)res->nruns + 1, sizeof *runs);
    mx_projection *pr = calloc(1, sizeof *pr);
    if (!key || !other || !runs || !pr) {
        free(key), free(other), free(runs), free(pr);
        return mx_error(MX_ENOMEM, "out of memory projecting run %s", w->id);
    }
    mx_record_series_key(w, key, KEY);
    int n = 0, own_one = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < res->nruns; i++) {
            const mx_run_record *r = &res->runs[i];
            if (strcmp(r->status, "ok") != 0 || !(r->step_time_median > 0) || kv_none(r) != pass) continue;
            if (pass ? own_one || r->gpus != 1 : !mx_record_same_exchange(r, w)) continue;
            mx_record_series_key(r, other, KEY);
            if (strcmp(key, other) != 0) continue;
            runs[n++] = r;
            own_one |= r->gpus == 1;
        }
    mx_project_fit(pr, runs, n, NULL, 0, 0);
    if (pr->skipped[0])
        snprintf(g->proj_note, sizeof g->proj_note, "the fit was skipped: %.200s", pr->skipped);
    else {
        for (int k = 0; k < 2; k++) {
            mx_proj_point pt;
            memset(&pt, 0, sizeof pt);
            mx_project_predict(pr, (2 << k) * g->gpus, &pt);
            g->proj_throughput[k] = pt.m_throughput;
            g->proj_efficiency[k] = pt.m_efficiency;
        }
        int len = snprintf(g->proj_note, sizeof g->proj_note, "mxbench project's data-parallel model, fitted on ");
        for (int i = 0; i < pr->nfit && len > 0 && (size_t)len < sizeof g->proj_note - 24; i++)
            len += snprintf(g->proj_note + len, sizeof g->proj_note - (size_t)len, "%s%d", i ? ", " : "",
                            pr->fit_gpus[i]);
        if (len > 0 && (size_t)len < sizeof g->proj_note)
            snprintf(g->proj_note + len, sizeof g->proj_note - (size_t)len, " devices");
    }
    free(key), free(other), free(runs), free(pr);
    return MX_OK;
}

/* ---- the whole answer */

static int same_place(const mx_run_record *a, const mx_run_record *b)
{
    return strcmp(a->workload, b->workload) == 0 && strcmp(a->device_type, b->device_type) == 0;
}

static int cmp_int(const void *pa, const void *pb)
{
    const int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

/* "test accuracy >= 0.85", "validation loss <= 3.2", both joined by "; ", or "". */
static void target_rule(const mx_results *res, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int kind = 0; kind < 2; kind++) {
        double seen[4];
        int ns = 0, more = 0;
        for (int i = 0; i < res->nruns; i++) {
            const double v = kind ? res->runs[i].target_loss : res->runs[i].target_acc;
            int dup = !(v > 0);
            for (int j = 0; j < ns && !dup; j++) dup = seen[j] == v;
            if (dup) continue;
            if (ns < 4) seen[ns++] = v;
            else more = 1;
        }
        if (!ns) continue;
        for (int i = 1; i < ns; i++)
            for (int j = i; j > 0 && seen[j - 1] > seen[j]; j--) {
                const double t = seen[j];
                seen[j] = seen[j - 1], seen[j - 1] = t;
            }
        if (len && len < n) len += (size_t)snprintf(buf + len, n - len, "; ");
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s", kind ? "validation loss <= " : "test accuracy >= ");
        for (int i = 0; i < ns && len < n; i++)
            len +=
                (size_t)snprintf(buf + len, n - len, "%s%g", i ? (i == ns - 1 && !more ? " or " : ", ") : "", seen[i]);
        if (more && len < n) len += (size_t)snprintf(buf + len, n - len, ", ...");
    }
}

void mx_answer_free(mx_answer *a)
{
    for (int i = 0; a->groups && i < a->ngroups; i++) free(a->groups[i].entries);
    free(a->groups);
    free(a->left);
    memset(a, 0, sizeof *a);
}

int mx_answer_build(const mx_results *res, mx_answer *out)
{
    memset(out, 0, sizeof *out);
    const int n = res->nruns;
    char *ranked = calloc((size_t)n + 1, 1);
    int *gpus = calloc((size_t)n + 1, sizeof *gpus);
    out->left = calloc((size_t)n + 1, sizeof *out->left);
    out->groups = calloc((size_t)n + 1, sizeof *out->groups);
    int rc = ranked && gpus && out->left && out->groups ? MX_OK
                                                       : mx_error(MX_ENOMEM, "out of memory answering %d runs", n);
    for (int i = 0; rc == MX_OK && i < n; i++) {
        mx_answer_left_out *l = &out->left[out->nleft];
        if (left_reason(&res->runs[i], l->why, sizeof l->why)) l->run = &res->runs[i], out->nleft++;
        else ranked[i] = 1;
    }
    /* groups: workloads (with their device type) in the order the file first has them, each
     * by device count ascending */
    for (int i = 0; rc == MX_OK && i < n; i++) {
        const mx_run_record *r = &res->runs[i];
        int first = ranked[i];
        for (int j = 0; j < i && first; j++) first = !(ranked[j] && same_place(&res->runs[j], r));
        if (!first) continue;
        int ng = 0;
        for (int j = i; j < n; j++) {
            if (!ranked[j] || !same_place(&res->runs[j], r)) continue;
            int dup = 0;
            for (int k = 0; k < ng && !dup; k++) dup = gpus[k] == res->runs[j].gpus;
            if (!dup) gpus[ng++] = res->runs[j].gpus;
        }
        qsort(gpus, (size_t)ng, sizeof *gpus, cmp_int);
        for (int k = 0; rc == MX_OK && k < ng; k++) {
            mx_answer_group *g = &out->groups[out->ngroups++];
            snprintf(g->workload, sizeof g->workload, "%s", r->workload);
            snprintf(g->device_type, sizeof g->device_type, "%s", r->device_type);
            g->gpus = gpus[k];
            for (int j = i; j < n; j++)
                g->nentries += ranked[j] && same_place(&res->runs[j], r) && res->runs[j].gpus == g->gpus;
            if (!(g->entries = calloc((size_t)g->nentries, sizeof *g->entries))) {
                rc = mx_error(MX_ENOMEM, "out of memory for %d rows of %s", g->nentries, r->workload);
                break;
            }
            int e = 0;
            for (int j = i; j < n; j++)
                if (ranked[j] && same_place(&res->runs[j], r) && res->runs[j].gpus == g->gpus)
                    fill_entry(&g->entries[e++], &res->runs[j]);
            qsort(g->entries, (size_t)g->nentries, sizeof *g->entries, by_throughput);
            distinct_labels(g);
            rank_group(g);
            g->proj_throughput[0] = g->proj_throughput[1] = g->proj_efficiency[0] = g->proj_efficiency[1] = NAN;
            if (g->winner >= 0) rc = project_winner(res, g);
            else snprintf(g->proj_note, sizeof g->proj_note, "no row qualifies as the winner");
        }
    }
    if (rc == MX_OK) target_rule(res, out->target_rule, sizeof out->target_rule);
    free(ranked);
    free(gpus);
    if (rc != MX_OK) mx_answer_free(out);
    return rc;
}
