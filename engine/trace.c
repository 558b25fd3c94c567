/* The timeline's events and their JSON (trace.h). */
#include "trace.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int tid, index;
    const char *cat, *name; /* string literals of the callers */
    double t0, t1;
} event;

atomic_int mx_trace_active;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static event *events;
static int nevents, capevents;
static double origin;
/* Past this many events recording stops growing (a window of a few steps makes thousands). */
#define MAX_EVENTS (1 << 22)

void mx_trace_start(double t0)
{
    pthread_mutex_lock(&lock);
    if (!nevents) origin = t0;
    pthread_mutex_unlock(&lock);
    atomic_store(&mx_trace_active, 1);
}

void mx_trace_stop(void) { atomic_store(&mx_trace_active, 0); }

void mx_trace_reset(void)
{
    mx_trace_stop();
    pthread_mutex_lock(&lock);
    free(events);
    events = NULL;
    nevents = capevents = 0;
    pthread_mutex_unlock(&lock);
}

void mx_trace_event(int tid, const char *cat, const char *name, int index, double t0, double t1)
{
    if (!mx_trace_on()) return;
    pthread_mutex_lock(&lock);
    if (nevents == capevents && capevents < MAX_EVENTS) {
        const int cap = capevents ? 2 * capevents : 4096;
        event *e = realloc(events, sizeof *e * (size_t)cap);
        if (e) events = e, capevents = cap;
    }
    if (nevents < capevents) events[nevents++] = (event){tid, index, cat, name, t0, t1};
    pthread_mutex_unlock(&lock);
}

int mx_trace_count(void)
{
    pthread_mutex_lock(&lock);
    const int n = nevents;
    pthread_mutex_unlock(&lock);
    return n;
}

static void track_name(int tid, char *b, size_t n)
{
    if (tid == MX_TRACK_TRAINER)
        snprintf(b, n, "trainer");
    else if (tid >= MX_TRACK_KV_WORKER(0))
        snprintf(b, n, "kvstore worker %d", tid - MX_TRACK_KV_WORKER(0));
    else
        snprintf(b, n, "device %d", tid - MX_TRACK_DEVICE(0));
}

static void write_events(FILE *f, int pid, const char *process_name)
{
    fprintf(f, "{\"traceEvents\": [\n");
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"%s\"}}",
            pid, process_name);
    int named[MX_TRACK_KV_WORKER(64)] = {0}; /* a track's name once */
    for (int i = 0; i < nevents; i++) {
        const int tid = events[i].tid;
        if (tid < 0 || tid >= (int)(sizeof named / sizeof named[0]) || named[tid]) continue;
        named[tid] = 1;
        char name[64];
        track_name(tid, name, sizeof name);
        fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                pid, tid, name);
        /* tracks in the order trainer, devices, workers */
        fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %d, \"tid\": %d, \"args\": "
                "{\"sort_index\": %d}}", pid, tid, tid);
    }
    for (int i = 0; i < nevents; i++) {
        const event *e = &events[i];
        const double ts = (e->t0 - origin) * 1e6, dur = (e->t1 - e->t0) * 1e6;
        fprintf(f, ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"cat\": \"%s\", \"name\": \"%s", pid, e->tid,
                e->cat, e->name);
        if (e->index >= 0) fprintf(f, " %d", e->index);
        fprintf(f, "\", \"ts\": %.3f, \"dur\": %.3f}", ts, dur > 0 ? dur : 0.0);
    }
    fprintf(f, "\n], \"displayTimeUnit\": \"ms\"}\n");
}

int mx_trace_write(const char *path, int pid, const char *process_name)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return mx_error(MX_EINVAL, "trace path '%.200s...': too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return mx_error(MX_EIO, "cannot write the trace '%s': %s", tmp, strerror(errno));
    pthread_mutex_lock(&lock);
    write_events(f, pid, process_name);
    pthread_mutex_unlock(&lock);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        const int err = errno;
        remove(tmp);
        return mx_error(MX_EIO, "cannot write the trace '%s': %s", path, strerror(err ? err : EIO));
    }
    return MX_OK;
}
