/* The answer in words (answer.h): a paragraph per workload and device count, one naming the
 * rows left out, as plain text (wrapped for a terminal), Markdown or JSON. Every figure is the
 * record's, or computed from it by answer.c. */
#include "answer.h"

#include "base/status.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growing string */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    const int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)need + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s, b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

/* ---- figures */

/* Samples/s: thousands separated from 100 up ("2,310"), three significant digits below. */
static const char *rate(char *buf, size_t n, double x)
{
    if (!isfinite(x)) return snprintf(buf, n, "-"), buf;
    if (fabs(x) < 100) return snprintf(buf, n, "%.3g", x), buf;
    char digits[48];
    snprintf(digits, sizeof digits, "%.0f", fabs(x));
    const size_t nd = strlen(digits);
    size_t o = 0;
    if (x < 0 && o + 1 < n) buf[o++] = '-';
    for (size_t i = 0; i < nd && o + 2 < n; i++) {
        if (i && (nd - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *ms(char *buf, size_t n, double s)
{
    const double m = s * 1e3;
    snprintf(buf, n, m >= 100 ? "%.0f ms" : m >= 10 ? "%.1f ms" : "%.2f ms", m);
    return buf;
}

static double share(const mx_answer_entry *e, int part) { return e->step > 0 ? e->parts[part] / e->step : 0; }

/* ---- the sentences' pieces */

static void name(sbuf *b, const mx_answer_entry *e, int bold)
{
    sb_printf(b, "%s%s (%s)%s", bold ? "**" : "", e->label, e->run->id, bold ? "**" : "");
}

static void speed(sbuf *b, const mx_answer_entry *e)
{
    char x[48];
    sb_printf(b, "%s samples/s", rate(x, sizeof x, e->throughput));
    if (isfinite(e->tokens_per_s)) sb_printf(b, " (%s tokens/s)", rate(x, sizeof x, e->tokens_per_s));
}

/* What a part holds beyond its share: the micro-batches behind a bubble, the straggler. */
static void detail(sbuf *b, const mx_answer_entry *e, int part)
{
    const mx_run_record *r = e->run;
    char t[32], m[32];
    mx_straggler s;
    if (part == MX_PART_BUBBLE)
        sb_printf(b, " at %d micro-batch%s", r->micro_batches, r->micro_batches == 1 ? "" : "es");
    if (part != MX_PART_STRAGGLER) return;
    if (r->nranks > 1) {
        mx_rank_straggler(r, &s);
        if (s.who >= 0)
            sb_printf(b, " (worker rank %d works %s a step besides waiting for the others, %.2fx the median of the %d "
                      "workers, %s)", s.who, ms(t, sizeof t, s.time), s.ratio, s.n, ms(m, sizeof m, s.median));
    } else {
        mx_device_straggler(r, &s);
        if (s.who >= 0)
            sb_printf(b, " (device %d computed %s a step, %.2fx the median of the %d devices, %s)", s.who,
                      ms(t, sizeof t, s.time), s.ratio, s.n, ms(m, sizeof m, s.median));
    }
}

/* "its step (55.4 ms) goes 78% to compute, 14% to exposed communication, 8% to data": the
 * parts of half a percent or more, largest first. */
static void breakdown(sbuf *b, const mx_answer_entry *e)
{
    char t[32];
    int order[MX_NPARTS], n = 0;
    for (int k = 0; k < MX_NPARTS; k++)
        if (share(e, k) >= 0.005) order[n++] = k;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && share(e, order[j - 1]) < share(e, order[j]); j--) {
            const int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    sb_printf(b, "its step (%s) goes ", ms(t, sizeof t, e->step));
    for (int i = 0; i < n; i++) {
        sb_printf(b, "%s%.0f%% to %s", i == 0 ? "" : i == n - 1 ? " and " : ", ", share(e, order[i]) * 100,
                  mx_answer_part_name(order[i]));
        detail(b, e, order[i]);
    }
}

/* The largest part besides compute, or -1 where none reaches 1% of the step. */
static int main_loss(const mx_answer_entry *e)
{
    int best = -1;
    for (int k = 0; k < MX_NPARTS; k++)
        if (k != MX_PART_COMPUTE && share(e, k) >= 0.01 && (best < 0 || share(e, k) > share(e, best))) best = k;
    return best;
}

static void loses(sbuf *b, const mx_answer_entry *e)
{
    const int k = main_loss(e);
    if (k < 0) {
        sb_printf(b, "which spends nearly all of its step computing");
        return;
    }
    sb_printf(b, "which loses %.0f%% of its step to the %s", share(e, k) * 100, mx_answer_part_name(k));
    detail(b, e, k);
}

/* "data/device 0.91, data/local 0.88, model 0.62": each strategy's (data: each kvstore's)
 * best efficiency in the group, in ranking order. */
static void efficiencies(sbuf *b, const mx_answer_group *g)
{
    char keys[64][48];
    int n = 0;
    for (int i = 0; i < g->nentries && n < 64; i++) {
        const mx_answer_entry *e = &g->entries[i];
        if (!isfinite(e->efficiency)) continue;
        char key[48];
        if (mx_strategy_of(e->run->strategy) == MX_STRATEGY_DATA)
            snprintf(key, sizeof key, "data/%s", e->run->kvstore);
        else
            snprintf(key, sizeof key, "%s", e->run->strategy);
        int seen = 0;
        for (int j = 0; j < n && !seen; j++) seen = strcmp(keys[j], key) == 0;
        if (!seen) memcpy(keys[n++], key, sizeof key);
    }
    if (!n) return;
    sb_printf(b, " Efficiency against one device:");
    for (int j = 0; j < n; j++) {
        double best = NAN;
        for (int i = 0; i < g->nentries; i++) {
            const mx_answer_entry *e = &g->entries[i];
            char key[48];
            if (mx_strategy_of(e->run->strategy) == MX_STRATEGY_DATA)
                snprintf(key, sizeof key, "data/%s", e->run->kvstore);
            else
                snprintf(key, sizeof key, "%s", e->run->strategy);
            if (strcmp(key, keys[j]) == 0 && isfinite(e->efficiency) && !(e->efficiency <= best)) best = e->efficiency;
        }
        sb_printf(b, "%s %s %.2f", j ? "," : "", keys[j], best);
    }
    sb_printf(b, ".");
}

static int group_asked(const mx_answer_group *g)
{
    for (int i = 0; i < g->nentries; i++)
        if (g->entries[i].reached >= 0) return 1;
    return 0;
}

static void group_paragraph(sbuf *b, const mx_answer *a, const mx_answer_group *g, int md)
{
    char x[48], y[48];
    const int w = g->winner, lead = w >= 0 ? w : 0, asked = group_asked(g);
    const mx_answer_entry *L = &g->entries[lead];
    sb_printf(b, "On %d device%s (%s, %s), ", g->gpus, g->gpus == 1 ? "" : "s", g->workload, g->device_type);
    if (asked && w >= 0) sb_printf(b, "among the rows that reached the target (%s), ", a->target_rule);
    if (asked && w < 0) sb_printf(b, "no row reached the target (%s); the fastest is ", a->target_rule);
    name(b, L, md && w >= 0);
    sb_printf(b, "%s", w < 0 ? ": " : g->nentries == 1 ? ", the only row ranked: " : " is fastest: ");
    speed(b, L);
    if (isfinite(L->efficiency)) sb_printf(b, ", efficiency %.2f", L->efficiency);
    sb_printf(b, "; ");
    breakdown(b, L);
    sb_printf(b, ".");
    if (w > 0) { /* faster rows that missed the target */
        sb_printf(b, " Faster, but short of the target: ");
        for (int i = 0; i < w; i++) {
            sb_printf(b, "%s", i ? "; " : "");
            name(b, &g->entries[i], 0);
            sb_printf(b, ", ");
            speed(b, &g->entries[i]);
        }
        sb_printf(b, ".");
    }
    const int f = g->fastest_to_target;
    if (f >= 0 && f == w)
        sb_printf(b, " It reached the target first, in %s s.", rate(x, sizeof x, g->entries[f].time_to_target));
    else if (f >= 0) {
        sb_printf(b, " Fastest to the target: ");
        name(b, &g->entries[f], 0);
        sb_printf(b, ", in %s s (%s samples/s).", rate(x, sizeof x, g->entries[f].time_to_target),
                  rate(y, sizeof y, g->entries[f].throughput));
    }
    if (g->runner_up >= 0) {
        const mx_answer_entry *e = &g->entries[g->runner_up];
        sb_printf(b, " Runner-up: ");
        name(b, e, 0);
        sb_printf(b, ", ");
        speed(b, e);
        if (isfinite(e->efficiency)) sb_printf(b, ", efficiency %.2f", e->efficiency);
        sb_printf(b, ", ");
        loses(b, e);
        sb_printf(b, ".");
    }
    /* then the best row of each strategy not named yet (what a user weighs against the
     * winner: a pipeline's bubble, a tensor split's collectives), so the paragraph stays a
     * few sentences; the breakdown lists every row */
    unsigned named = 0;
    if (lead >= 0) named |= 1u << mx_strategy_of(g->entries[lead].run->strategy);
    if (g->runner_up >= 0) named |= 1u << mx_strategy_of(g->entries[g->runner_up].run->strategy);
    int then = 0, more = 0;
    for (int i = w > 0 ? w : 0; i < g->nentries; i++) {
        if (i == lead || i == g->runner_up) continue;
        const mx_answer_entry *e = &g->entries[i];
        const unsigned bit = 1u << mx_strategy_of(e->run->strategy);
        if (named & bit) {
            more++;
            continue;
        }
        named |= bit;
        sb_printf(b, "%s", then++ ? "; " : " Best of the other strategies: ");
        name(b, e, 0);
        sb_printf(b, ", ");
        speed(b, e);
        if (e->reached == 0) sb_printf(b, " (short of the target)");
        sb_printf(b, ", ");
        loses(b, e);
    }
    if (then) sb_printf(b, ".");
    if (more) sb_printf(b, " %d more row%s, slower, in the breakdown.", more, more == 1 ? "" : "s");
    if (g->gpus > 1) efficiencies(b, g);
    if (isfinite(g->proj_throughput[0]) || isfinite(g->proj_throughput[1])) {
        sb_printf(b, " Projected (%s):", g->proj_note);
        for (int k = 0; k < 2; k++)
            sb_printf(b, "%s %d devices %s samples/s, efficiency %.2f", k ? ";" : "", (2 << k) * g->gpus,
                      rate(x, sizeof x, g->proj_throughput[k]), g->proj_efficiency[k]);
        sb_printf(b, ".");
    } else if (g->gpus > 1 && g->proj_note[0])
        sb_printf(b, " No projection: %s.", g->proj_note);
}

static void left_paragraph(sbuf *b, const mx_answer *a, int md)
{
    sb_printf(b, "Left out of the ranking:%s", md ? "\n" : "");
    for (int i = 0; i < a->nleft; i++) {
        if (md) sb_printf(b, "\n- %s: %s", a->left[i].run->id, a->left[i].why);
        else sb_printf(b, "%s %s (%s)", i ? "," : "", a->left[i].run->id, a->left[i].why);
    }
    if (!md) sb_printf(b, ".");
}

/* Every paragraph, plain (md 0) or with Markdown's bold winners and list of left-out rows. */
static int paragraphs(const mx_answer *a, int md, char ***paras, int *n)
{
    const int total = a->ngroups + (a->nleft > 0) + (a->ngroups == 0);
    char **p = calloc((size_t)total, sizeof *p);
    int k = 0, rc = p ? MX_OK : MX_ENOMEM;
    for (int i = 0; rc == MX_OK && i < total; i++) {
        sbuf b = {0};
        if (i < a->ngroups) group_paragraph(&b, a, &a->groups[i], md);
        else if (a->ngroups == 0 && i == 0)
            sb_printf(&b, "No row can be ranked: none is ok, timed and on a quiet host.");
        else left_paragraph(&b, a, md);
        if (b.oom || !b.s) {
            free(b.s);
            rc = MX_ENOMEM;
        } else
            p[k++] = b.s;
    }
    if (rc != MX_OK) {
        mx_answer_paragraphs_free(p, k);
        return mx_error(MX_ENOMEM, "out of memory writing the answer");
    }
    *paras = p;
    *n = k;
    return MX_OK;
}

int mx_answer_paragraphs(const mx_answer *a, char ***paras, int *n)
{
    *paras = NULL;
    *n = 0;
    return paragraphs(a, 0, paras, n);
}

void mx_answer_paragraphs_free(char **paras, int n)
{
    for (int i = 0; paras && i < n; i++) free(paras[i]);
    free(paras);
}

/* Words of s on lines of at most width columns (a longer word on a line of its own). */
static void wrap(FILE *f, const char *s, int width)
{
    int col = 0;
    while (*s) {
        while (*s == ' ') s++;
        const size_t len = strcspn(s, " ");
        if (!len) break;
        if (col && col + 1 + (int)len > width) fputc('\n', f), col = 0;
        else if (col) fputc(' ', f), col++;
        fwrite(s, 1, len, f);
        col += (int)len;
        s += len;
    }
    fputc('\n', f);
}

void mx_answer_write(const mx_answer *a, FILE *f, int md)
{
    char **p;
    int n;
    if (paragraphs(a, md, &p, &n) != MX_OK) {
        fprintf(f, "(the answer: %s)\n", mx_last_error());
        return;
    }
    for (int i = 0; i < n; i++) {
        if (i) fputc('\n', f);
        if (md) fprintf(f, "%s\n", p[i]);
        else wrap(f, p[i], 95);
    }
    mx_answer_paragraphs_free(p, n);
}

/* ---- JSON */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c == '\n') fputs("\\n", f);
        else if (*c == '\t') fputs("\\t", f);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

static void json_id(FILE *f, const mx_answer_group *g, int i)
{
    if (i < 0) fputs("null", f);
    else json_string(f, g->entries[i].run->id);
}

int mx_answer_write_json(const mx_answer *a, FILE *f)
{
    char **p;
    int n;
    MX_TRY(mx_answer_paragraphs(a, &p, &n));
    fputs("{\"target_rule\": ", f);
    json_string(f, a->target_rule);
    fputs(", \"groups\": [", f);
    for (int i = 0; i < a->ngroups; i++) {
        const mx_answer_group *g = &a->groups[i];
        fprintf(f, "%s\n    {\"workload\": ", i ? "," : "");
        json_string(f, g->workload);
        fputs(", \"device_type\": ", f);
        json_string(f, g->device_type);
        fprintf(f, ", \"gpus\": %d, \"winner\": ", g->gpus);
        json_id(f, g, g->winner);
        fputs(", \"runner_up\": ", f);
        json_id(f, g, g->runner_up);
        fputs(", \"fastest_to_target\": ", f);
        json_id(f, g, g->fastest_to_target);
        fputs(", \"ranked\": [", f);
        for (int k = 0; k < g->nentries; k++) fputs(k ? ", " : "", f), json_id(f, g, k);
        fputs("]}", f);
    }
    fprintf(f, "%s], \"left_out\": [", a->ngroups ? "\n  " : "");
    for (int i = 0; i < a->nleft; i++) {
        fprintf(f, "%s{\"id\": ", i ? ", " : "");
        json_string(f, a->left[i].run->id);
        fputs(", \"why\": ", f);
        json_string(f, a->left[i].why);
        fputc('}', f);
    }
    fputs("], \"paragraphs\": [", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        json_string(f, p[i]);
    }
    fprintf(f, "%s]}", n ? "\n  " : "");
    mx_answer_paragraphs_free(p, n);
    return MX_OK;
}
