/* The history of a study across results files (history.h): the files in time order, a series
 * per configuration, each point judged against the configuration's previous one. */
#include "history.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mx_metric mx_history_metric(int m) { return m == MX_HIST_INSTRUCTIONS ? MX_METRIC_INSTRUCTIONS : MX_METRIC_THROUGHPUT; }

const char *mx_history_metric_name(int m) { return mx_compare_metric_name(mx_history_metric(m)); }

void mx_history_fmt(char *buf, size_t n, int m, double x)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else if (m == MX_HIST_INSTRUCTIONS || fabs(x) >= 100) snprintf(buf, n, "%.0f", x);
    else snprintf(buf, n, "%.3g", x);
}

/* Time order: start_time is ISO 8601 in UTC with a fixed width, so text order is time order.
 * An insertion sort keeps files of equal times in the order given (a handful of files). */
static void order_revs(mx_history *h)
{
    for (int i = 0; i < h->nrevs; i++)
        if (!h->revs[i].start_time[0]) h->unordered = 1;
    if (h->unordered) return;
    for (int i = 1; i < h->nrevs; i++)
        for (int j = i; j > 0 && strcmp(h->revs[j - 1].start_time, h->revs[j].start_time) > 0; j--) {
            mx_history_rev t = h->revs[j];
            h->revs[j] = h->revs[j - 1];
            h->revs[j - 1] = t;
        }
}

/* A tic label must survive gnuplot's word() and a table cell: letters, digits and ._-#+ only. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (!(((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9') || strchr("._-#+", *s))) *s = '_';
}

/* The revision's label, the file's name (no folder, no extension) where the file has none or
 * "unknown" (a build outside git), made unique with "#k" for the k-th file of one revision
 * (the same revision measured again). */
static void label_revs(mx_history *h, const char *const *names)
{
    for (int i = 0; i < h->nrevs; i++) {
        mx_history_rev *r = &h->revs[i];
        if (r->revision[0] && strcmp(r->revision, "unknown") != 0) {
            snprintf(r->label, sizeof r->label, "%s", r->revision);
        } else if (names && names[r->file]) {
            const char *base = strrchr(names[r->file], '/');
            snprintf(r->label, sizeof r->label, "%.24s", base ? base + 1 : names[r->file]);
            char *dot = strrchr(r->label, '.');
            if (dot && dot != r->label) *dot = '\0';
        } else {
            snprintf(r->label, sizeof r->label, "file-%d", r->file + 1);
        }
        sanitize(r->label);
    }
    for (int i = h->nrevs - 1; i > 0; i--) { /* from the last, so that earlier labels are still bare */
        int same = 0;
        for (int j = 0; j < i; j++) same += strcmp(h->revs[j].label, h->revs[i].label) == 0;
        if (same) {
            char base[32];
            snprintf(base, sizeof base, "%.30s", h->revs[i].label);
            snprintf(h->revs[i].label, sizeof h->revs[i].label, "%s#%d", base, same + 1);
        }
    }
}

static int find_config(const mx_history *h, const char *key)
{
    for (int c = 0; c < h->nconfigs; c++)
        if (strcmp(h->configs[c].key, key) == 0) return c;
    return -1;
}

static int add_config(mx_history *h, const char *key, const mx_run_record *r, int *cap)
{
    if (h->nconfigs == *cap) {
        const int ncap = *cap ? 2 * *cap : 16;
        mx_history_config *nc = realloc(h->configs, (size_t)ncap * sizeof *nc);
        if (!nc) return mx_error(MX_ENOMEM, "out of memory for %d configurations", ncap);
        h->configs = nc, *cap = ncap;
    }
    mx_history_config *c = &h->configs[h->nconfigs];
    memset(c, 0, sizeof *c);
    c->pt = calloc((size_t)h->nrevs, sizeof *c->pt);
    if (!c->pt) return mx_error(MX_ENOMEM, "out of memory for a configuration's %d points", h->nrevs);
    snprintf(c->key, sizeof c->key, "%s", key);
    mx_compare_describe(r, c->label, sizeof c->label);
    for (int i = 0; i < h->nrevs; i++) {
        c->pt[i].prev = -1;
        for (int m = 0; m < MX_HIST_NMETRICS; m++) {
            c->pt[i].value[m] = c->pt[i].lo[m] = c->pt[i].hi[m] = NAN;
            c->pt[i].vs[m] = (mx_comparison){NAN, NAN, NAN, NAN, NAN, MX_VERDICT_NA};
        }
    }
    return h->nconfigs++;
}

static void set_point(mx_history_point *p, const mx_run_record *r)
{
    p->run = r;
    p->value[MX_HIST_THROUGHPUT] = r->throughput;
    p->lo[MX_HIST_THROUGHPUT] = r->throughput_ci_low;
    p->hi[MX_HIST_THROUGHPUT] = r->throughput_ci_high;
    const double ins = r->metrics[MX_COUNTER_INSTRUCTIONS];
    p->value[MX_HIST_INSTRUCTIONS] = p->lo[MX_HIST_INSTRUCTIONS] = p->hi[MX_HIST_INSTRUCTIONS] = ins;
}

/* Every ok run of every file becomes its configuration's point at the file's revision. */
static int collect(mx_history *h)
{
    int cap = 0;
    for (int i = 0; i < h->nrevs; i++) {
        const mx_results *res = h->revs[i].res;
        for (int k = 0; k < res->nruns; k++) {
            const mx_run_record *r = &res->runs[k];
            if (strcmp(r->status, "ok") != 0) {
                h->skipped++;
                continue;
            }
            char key[1024];
            mx_record_config_key(r, key, sizeof key);
            int c = find_config(h, key);
            if (c < 0) c = add_config(h, key, r, &cap);
            if (c < 0) return c;
            mx_history_point *p = &h->configs[c].pt[i];
            if (p->run) {
                h->repeated++;
                continue;
            }
            set_point(p, r);
            h->configs[c].npoints++;
            h->counted |= !isnan(p->value[MX_HIST_INSTRUCTIONS]);
        }
    }
    return MX_OK;
}

/* Each point against the configuration's previous point: across a gap, the last revision where
 * it ran ok, so that a change is judged once, where it appeared. */
static void judge(mx_history *h)
{
    for (int c = 0; c < h->nconfigs; c++) {
        mx_history_config *cf = &h->configs[c];
        int prev = -1;
        for (int i = 0; i < h->nrevs; i++) {
            mx_history_point *p = &cf->pt[i];
            if (!p->run) continue;
            p->prev = prev;
            if (prev >= 0)
                for (int m = 0; m < MX_HIST_NMETRICS; m++) {
                    const mx_metric cm = mx_history_metric(m);
                    if (mx_compare_measured(cf->pt[prev].run, cm) && mx_compare_measured(p->run, cm))
                        mx_compare_runs(cf->pt[prev].run, p->run, cm, h->threshold, &p->vs[m]);
                }
            prev = i;
        }
    }
}

int mx_history_build(const mx_results *files, const char *const *names, int n, double threshold, mx_history *h)
{
    memset(h, 0, sizeof *h);
    if (n < 1 || !files) return mx_error(MX_EINVAL, "a history needs at least one results file (given %d)", n);
    h->threshold = threshold;
    h->nrevs = n;
    h->revs = calloc((size_t)n, sizeof *h->revs);
    if (!h->revs) return mx_error(MX_ENOMEM, "out of memory for %d files", n);
    for (int i = 0; i < n; i++) {
        mx_history_rev *r = &h->revs[i];
        r->file = i;
        r->res = &files[i];
        snprintf(r->revision, sizeof r->revision, "%.12s", files[i].meta.git_revision);
        snprintf(r->start_time, sizeof r->start_time, "%s", files[i].meta.start_time);
    }
    order_revs(h);
    label_revs(h, names);
    const int rc = collect(h);
    if (rc != MX_OK) {
        mx_history_free(h);
        return rc;
    }
    judge(h);
    return MX_OK;
}

void mx_history_free(mx_history *h)
{
    for (int c = 0; c < h->nconfigs; c++) free(h->configs[c].pt);
    free(h->configs);
    free(h->revs);
    memset(h, 0, sizeof *h);
}

int mx_history_count(const mx_history *h, int m, mx_verdict v, int rev)
{
    int k = 0;
    for (int c = 0; c < h->nconfigs; c++)
        for (int i = rev < 0 ? 0 : rev; i < (rev < 0 ? h->nrevs : rev + 1); i++)
            k += h->configs[c].pt[i].run && h->configs[c].pt[i].vs[m].verdict == v;
    return k;
}

int mx_history_ncompared(const mx_history *h, int m, int rev)
{
    int k = 0;
    for (int c = 0; c < h->nconfigs; c++)
        for (int i = rev < 0 ? 0 : rev; i < (rev < 0 ? h->nrevs : rev + 1); i++)
            k += h->configs[c].pt[i].run && h->configs[c].pt[i].vs[m].verdict != MX_VERDICT_NA;
    return k;
}
