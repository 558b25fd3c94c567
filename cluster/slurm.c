/* The Slurm allocation from its variables (slurm.h). */
#include "slurm.h"
#include "base/status.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number in [0, 1e7] that is all of s, or -1. */
static long whole(const char *s)
{
    if (!s || !*s || strlen(s) > 7) return -1;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    return strtol(s, NULL, 10);
}

long mx_slurm_count_list(const char *list, int node)
{
    if (!list || !*list || strlen(list) > 4096) return -1;
    long sum = 0, at = 0, entry = -1; /* the whole list is checked before an entry is returned */
    for (const char *p = list;;) {
        char *end;
        if (!isdigit((unsigned char)*p)) return -1;
        const long v = strtol(p, &end, 10);
        long times = 1;
        p = end;
        if (*p == '(') { /* "(xR)": the count repeats R times */
            if (p[1] != 'x' || !isdigit((unsigned char)p[2])) return -1;
            times = strtol(p + 2, &end, 10);
            if (*end != ')' || times < 1) return -1;
            p = end + 1;
        }
        if (v > 10000000 || times > 100000) return -1;
        if (node >= at && node < at + times) entry = v;
        sum += v * times;
        at += times;
        if (!*p) break;
        if (*p++ != ',') return -1;
    }
    return node >= 0 ? entry : sum;
}

/* The variable as a whole number, 0 when unset; -1 after mx_error when set and malformed. */
static long count_var(const char *name, int list)
{
    const char *v = getenv(name);
    if (!v) return 0;
    const long n = list ? mx_slurm_count_list(v, -1) : whole(v);
    if (n < 0) {
        mx_error(MX_EINVAL, "%s='%.40s' (set by Slurm): not %s", name, v,
                 list ? "a Slurm count list such as 4 or 2(x3),1" : "a whole number");
        return -1;
    }
    return n;
}

int mx_slurm_read(mx_slurm *s)
{
    memset(s, 0, sizeof *s);
    const char *job = getenv("SLURM_JOB_ID");
    if (!job) job = getenv("SLURM_JOBID");
    if (!job) return 0;
    if (!*job || strlen(job) >= sizeof s->job_id || strspn(job, "0123456789+_") != strlen(job))
        return mx_error(MX_EINVAL, "SLURM_JOB_ID='%.40s' (set by Slurm): not a job id (digits)", job);
    s->inside = 1;
    snprintf(s->job_id, sizeof s->job_id, "%s", job);
    const long nodes = count_var(getenv("SLURM_JOB_NUM_NODES") ? "SLURM_JOB_NUM_NODES" : "SLURM_NNODES", 0);
    const long tasks = count_var("SLURM_NTASKS", 0), cpus = count_var("SLURM_JOB_CPUS_PER_NODE", 1);
    const long gpus = count_var("SLURM_GPUS_ON_NODE", 0);
    if (nodes < 0 || tasks < 0 || cpus < 0 || gpus < 0) return MX_EINVAL;
    s->nodes = nodes > 0 ? (int)nodes : 1;
    s->tasks = (int)tasks, s->cpus = (int)cpus, s->gpus_per_node = (int)gpus;
    s->in_step = getenv("SLURM_STEP_ID") != NULL;
    const char *list = getenv("SLURM_JOB_NODELIST");
    snprintf(s->nodelist, sizeof s->nodelist, "%s", list ? list : "");
    return 0;
}

int mx_slurm_step_local_tasks(void)
{
    const char *per = getenv("SLURM_STEP_TASKS_PER_NODE"), *node = getenv("SLURM_NODEID");
    if (!per || !getenv("SLURM_STEP_ID")) return 0;
    const long at = node ? whole(node) : 0, n = at < 0 ? -1 : mx_slurm_count_list(per, (int)at);
    return n > 0 && n < 1000000 ? (int)n : 0;
}

void mx_slurm_describe(const mx_slurm *s, char *buf, size_t n)
{
    if (!s->inside) {
        snprintf(buf, n, "not in a Slurm allocation");
        return;
    }
    char tasks[32] = "", cpus[32] = "", gpus[40] = "";
    if (s->tasks) snprintf(tasks, sizeof tasks, ", %d task%s", s->tasks, s->tasks == 1 ? "" : "s");
    if (s->cpus) snprintf(cpus, sizeof cpus, ", %d CPU%s", s->cpus, s->cpus == 1 ? "" : "s");
    if (s->gpus_per_node) snprintf(gpus, sizeof gpus, ", %d GPU%s a node", s->gpus_per_node,
                                   s->gpus_per_node == 1 ? "" : "s");
    snprintf(buf, n, "job %s: %d node%s%s%s%s%s%s%s", s->job_id, s->nodes, s->nodes == 1 ? "" : "s",
             s->nodelist[0] ? " (" : "", s->nodelist, s->nodelist[0] ? ")" : "", tasks, cpus, gpus);
}
