/* Sweep progress display (see progress.h). */
#include "progress.h"
#include "base/timer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void mx_progress_start(mx_progress *p, int total)
{
    memset(p, 0, sizeof *p);
    p->total = total;
    p->tty = isatty(STDERR_FILENO);
    p->t_start = mx_now();
}

static void format_eta(const mx_progress *p, double run_elapsed, char *buf, size_t n)
{
    if (p->runs_timed == 0) {
        snprintf(buf, n, "ETA --");
        return;
    }
    const double per_run = p->work_done / p->runs_timed;
    double left = per_run * (p->total - p->done) - run_elapsed;
    if (left < 0) left = 0;
    snprintf(buf, n, "ETA %dm%02ds", (int)(left / 60), (int)left % 60);
}

static void draw(const mx_progress *p, double run_elapsed)
{
    const int width = 24, filled = p->total ? width * p->done / p->total : width;
    char bar[32], eta[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    format_eta(p, run_elapsed, eta, sizeof eta);
    fprintf(stderr, "\r\033[K[%s] %d/%d %s (%.0fs)  %s", bar, p->done + 1 > p->total ? p->total : p->done + 1,
            p->total, p->label, run_elapsed, eta);
    fflush(stderr);
}

void mx_progress_run(mx_progress *p, int k, const char *label)
{
    p->done = k;
    p->t_run = mx_now();
    snprintf(p->label, sizeof p->label, "%s", label);
    if (p->tty) {
        draw(p, 0);
    } else {
        char eta[32];
        format_eta(p, 0, eta, sizeof eta);
        fprintf(stderr, "[%d/%d] %s  (%s)\n", k + 1, p->total, label, eta);
    }
}

void mx_progress_tick(mx_progress *p, double run_elapsed)
{
    if (p->tty) draw(p, run_elapsed);
}

void mx_progress_end(mx_progress *p, const char *outcome, int timed)
{
    const double secs = mx_now() - p->t_run;
    if (timed) {
        p->work_done += secs;
        p->runs_timed++;
    }
    if (p->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr, "[%d/%d] %s: %s (%.1f s)\n", p->done + 1, p->total, p->label, outcome, secs);
    p->done++;
}

void mx_progress_finish(mx_progress *p)
{
    fprintf(stderr, "sweep finished: %d runs in %.1f s\n", p->total, mx_now() - p->t_start);
}
