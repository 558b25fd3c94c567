/* `mxbench project`'s configurations (project.h): the ok runs of a results file grouped as the
 * scaling series are (record.h: equal series keys and matching exchanges, a one-device run
 * without kvstore joining each kvstore's series unless the series has a one-device run of
 * its own), each fitted (project.c) and evaluated at its measured device counts and at the
 * counts asked for. */
#include "project.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEY = 2048 };

typedef struct {
    char key[KEY];
    const mx_run_record *exch;  /* a run of its kvstore and compression; NULL: no kvstore */
    const mx_run_record **runs;
    int n;
} group;

static int is_none(const mx_run_record *r) { return mx_kv_mode_of(r->kvstore) == MX_KV_NONE; }

static int find(group *g, int ng, const char *key, const mx_run_record *r)
{
    for (int i = 0; i < ng; i++) {
        if (strcmp(g[i].key, key) != 0) continue;
        if (!r && !g[i].exch) return i;
        if (r && g[i].exch && strcmp(g[i].exch->kvstore, r->kvstore) == 0 &&
            strcmp(g[i].exch->compression, r->compression) == 0)
            return i;
    }
    return -1;
}

/* A one-device run with the group's own kvstore (a dist_* job of one worker). */
static int has_one_device(const group *g)
{
    for (int i = 0; i < g->n; i++)
        if (g->runs[i]->gpus == 1 && !is_none(g->runs[i])) return 1;
    return 0;
}

/* Groups the ok runs: first the runs with a kvstore by series key and exchange, then each
 * run without one into every group of its key that has no one-device run of its own (or a
 * group of its own: model and layer runs, or one-device runs alone). */
static int build_groups(const mx_results *res, group **out, int *ng)
{
    group *g = calloc((size_t)res->nruns + 1, sizeof *g);
    char *key = malloc(KEY);
    int n = 0, rc = g && key ? MX_OK : mx_error(MX_ENOMEM, "out of memory grouping %d runs", res->nruns);
    for (int pass = 0; rc == MX_OK && pass < 2; pass++)
        for (int i = 0; rc == MX_OK && i < res->nruns; i++) {
            const mx_run_record *r = &res->runs[i];
            if (strcmp(r->status, "ok") != 0 || !(r->step_time_median > 0) || is_none(r) != pass) continue;
            mx_record_series_key(r, key, KEY);
            int joined = 0;
            for (int k = 0; pass && k < n; k++)
                if (g[k].exch && strcmp(g[k].key, key) == 0 && !has_one_device(&g[k]) && r->gpus == 1)
                    g[k].runs[g[k].n++] = r, joined = 1;
            if (joined) continue;
            int k = find(g, n, key, pass ? NULL : r);
            if (k < 0) {
                k = n++;
                snprintf(g[k].key, KEY, "%s", key);
                g[k].exch = pass ? NULL : r;
                if (!(g[k].runs = calloc((size_t)res->nruns, sizeof *g[k].runs)))
                    rc = mx_error(MX_ENOMEM, "out of memory grouping %d runs", res->nruns);
            }
            if (rc == MX_OK) g[k].runs[g[k].n++] = r;
        }
    free(key);
    *out = g;
    *ng = n;
    return rc;
}

static void describe(const mx_run_record *r, const group *g, char *buf, size_t n)
{
    const mx_run_record *x = g->exch ? g->exch : r;
    int len = snprintf(buf, n, "%s %s kv=%s", r->workload, r->strategy, x->kvstore);
    if (len > 0 && (size_t)len < n && mx_gc_of(x->compression) != MX_GC_NONE)
        len += snprintf(buf + len, n - (size_t)len, " gc=%s", x->compression);
    if (len > 0 && (size_t)len < n && mx_amp_of(r->amp) != MX_AMP_OFF)
        len += snprintf(buf + len, n - (size_t)len, " amp=%s", r->amp);
    if (len > 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " batch=%d%s threads=%d", r->batch,
                 strcmp(r->batch_mode, "global") == 0 ? " global" : "/dev", r->threads_per_device);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The points: every measured count and every count asked for, ascending, with what the runs
 * measured there. */
static void points(mx_projection *pr, const group *g, const mx_proj_options *opt)
{
    int p[MX_PROJ_MAX_POINTS], np = 0;
    for (int i = 0; i < g->n + opt->ngpus && np < MX_PROJ_MAX_POINTS; i++) {
        const int v = i < g->n ? g->runs[i]->gpus : opt->gpus[i - g->n];
        int seen = 0;
        for (int j = 0; j < np && !seen; j++) seen = p[j] == v;
        if (!seen) p[np++] = v;
    }
    qsort(p, (size_t)np, sizeof *p, cmp_int);
    pr->npoints = np;
    for (int j = 0; j < np; j++) {
        mx_proj_point *pt = &pr->pt[j];
        memset(pt, 0, sizeof *pt);
        pt->gpus = p[j];
        double thr = 0, step = 0, eff = 0;
        int neff = 0;
        for (int i = 0; i < g->n; i++) {
            const mx_run_record *r = g->runs[i];
            if (r->gpus != p[j]) continue;
            pt->measured++;
            thr += r->throughput, step += r->step_time_median;
            if (isfinite(r->efficiency)) eff += r->efficiency, neff++;
        }
        pt->throughput = pt->measured ? thr / pt->measured : NAN;
        pt->step = pt->measured ? step / pt->measured : NAN;
        pt->efficiency = neff ? eff / neff : NAN;
        for (int i = 0; i < pr->nfit; i++) pt->fitted |= pr->fit_gpus[i] == p[j];
        pt->m_throughput = pt->m_step = pt->m_efficiency = pt->error = NAN;
        pt->data = pt->compute = pt->comm = pt->update = NAN;
        if (!pr->skipped[0]) mx_project_predict(pr, p[j], pt);
    }
}

/* Every count of opt->fit must be one some ok run measured: a typo would otherwise fit
 * nothing, quietly. */
static int check_fit(const mx_results *res, const mx_proj_options *opt)
{
    for (int f = 0; f < opt->nfit; f++) {
        int found = 0;
        for (int i = 0; i < res->nruns && !found; i++)
            found = strcmp(res->runs[i].status, "ok") == 0 && res->runs[i].gpus == opt->fit[f];
        if (found) continue;
        char list[256] = "";
        int len = 0, seen[MX_PROJ_MAX_POINTS], ns = 0;
        for (int i = 0; i < res->nruns && len < (int)sizeof list - 16; i++) {
            const int v = res->runs[i].gpus;
            int dup = strcmp(res->runs[i].status, "ok") != 0;
            for (int j = 0; j < ns && !dup; j++) dup = seen[j] == v;
            if (dup || ns >= MX_PROJ_MAX_POINTS) continue;
            seen[ns++] = v;
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", len ? ", " : "", v);
        }
        return mx_error(MX_EINVAL, "--fit %d: no ok run has %d devices (measured: %s)", opt->fit[f], opt->fit[f],
                        ns ? list : "none");
    }
    return MX_OK;
}

int mx_project(const mx_results *res, const mx_proj_options *opt, mx_projection **out, int *n)
{
    *out = NULL;
    *n = 0;
    MX_TRY(check_fit(res, opt));
    group *g;
    int ng, rc = build_groups(res, &g, &ng);
    mx_projection *pr = rc == MX_OK ? calloc((size_t)ng + 1, sizeof *pr) : NULL;
    if (rc == MX_OK && !pr) rc = mx_error(MX_ENOMEM, "out of memory for %d projections", ng);
    for (int k = 0; rc == MX_OK && k < ng; k++) {
        mx_projection *p = &pr[k];
        describe(g[k].runs[0], &g[k], p->label, sizeof p->label);
        for (int j = 0; j < k; j++)
            if (strcmp(pr[j].label, p->label) == 0) { /* differ in a field the label leaves out (lr, seed, ...) */
                const size_t len = strlen(p->label);
                snprintf(p->label + len, sizeof p->label - len, " (run %s)", g[k].runs[0]->id);
                break;
            }
        if (mx_strategy_of(g[k].runs[0]->strategy) != MX_STRATEGY_DATA)
            snprintf(p->skipped, sizeof p->skipped,
                     "strategy %s: the model is of data parallelism (replicas and a kvstore)", g[k].runs[0]->strategy);
        else
            mx_project_fit(p, g[k].runs, g[k].n, opt->fit, opt->nfit, opt->cores);
        points(p, &g[k], opt);
    }
    for (int k = 0; k < ng; k++) free(g[k].runs);
    free(g);
    if (rc < 0) {
        free(pr);
        return rc;
    }
    *out = pr;
    *n = ng;
    return MX_OK;
}

void mx_projection_free(mx_projection *p) { free(p); }
