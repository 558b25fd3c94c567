/* Host readings from /proc (hostload.h). */
#include "hostload.h"
#include "base/timer.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The first line of path into buf (newline dropped); 0 when it cannot be read. */
static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* Threads of process pid in state R: the field after the ")" that closes the name in each
 * /proc/PID/task/TID/stat (a name may hold spaces and parentheses). */
static int runnable_threads(const char *pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%.32s/task", pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char stat[96];
        snprintf(stat, sizeof stat, "/proc/%.32s/task/%.32s/stat", pid, e->d_name);
        if (!read_line(stat, line, sizeof line)) continue; /* it ended meanwhile */
        const char *p = strrchr(line, ')');
        n += p && p[1] == ' ' && p[2] == 'R';
    }
    closedir(d);
    return n;
}

/* Runnable threads of processes whose name is not self. */
static int count_others(const char *self)
{
    char comm[64], path[64];
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        snprintf(path, sizeof path, "/proc/%.32s/comm", e->d_name);
        if (!read_line(path, comm, sizeof comm) || strcmp(comm, self) == 0) continue;
        n += runnable_threads(e->d_name);
    }
    closedir(d);
    return n;
}

void mx_host_sample_now(mx_host_sample *s)
{
    memset(s, 0, sizeof *s);
    char line[512];
    if (!read_line("/proc/loadavg", line, sizeof line) || sscanf(line, "%lf", &s->load1) != 1) return;
    /* cpu  user nice system idle iowait irq softirq steal ... */
    unsigned long long v[8] = {0};
    if (!read_line("/proc/stat", line, sizeof line) ||
        sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) < 4)
        return;
    for (int i = 0; i < 8; i++) s->total += v[i];
    s->steal = v[7];
    /* the least of a short burst: a program that competes for a core is ready to run at
     * every look, one starting beside mxbench (the other end of a shell pipe) or waking
     * for an instant is not, and must not make a short run of two readings noisy */
    char self[64] = "";
    read_line("/proc/self/comm", self, sizeof self);
    s->others = -1;
    for (int i = 0; i < MX_HOST_BURST; i++) {
        if (i) nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
        const int n = count_others(self);
        if (n >= 0 && (s->others < 0 || n < s->others)) s->others = n;
    }
    s->ok = s->others >= 0;
}

void mx_host_watch_add(mx_host_watch *w)
{
    if (w->off) return;
    mx_host_sample s;
    mx_host_sample_now(&s);
    w->t_last = mx_now();
    if (!s.ok) return;
    if (w->n == 0) w->first = s;
    w->last = s;
    w->n++;
    w->others_sum += s.others;
    w->others_last = s.others;
    if (s.load1 > w->load_max) w->load_max = s.load1;
}

void mx_host_watch_start(mx_host_watch *w)
{
    memset(w, 0, sizeof *w);
    /* `mxbench count` runs its children under MXBENCH_COUNTED=1: a reading costs more
     * instructions the more processes the host has, and a count must not depend on that */
    const char *e = getenv("MXBENCH_COUNTED");
    w->off = e && strcmp(e, "1") == 0;
    mx_host_watch_add(w);
}

int mx_host_watch_tick(mx_host_watch *w)
{
    if (mx_now() - w->t_last < MX_HOST_SAMPLE_EVERY) return 0;
    mx_host_watch_add(w);
    return 1;
}

void mx_host_watch_figures(const mx_host_watch *w, double *others, double *load, double *steal, int *noisy)
{
    *others = w->n ? w->others_sum / w->n : NAN;
    *load = w->n ? w->load_max : NAN;
    const unsigned long long dt = w->n > 1 ? w->last.total - w->first.total : 0;
    *steal = dt ? (double)(w->last.steal - w->first.steal) / (double)dt : NAN;
    *noisy = (isfinite(*others) && *others >= MX_NOISY_OTHERS) || (isfinite(*steal) && *steal >= MX_NOISY_STEAL);
}
