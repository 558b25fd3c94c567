/* The timeline's events and their JSON (engine/core/trace.h). */
#include "trace.h"
#include "base/status.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int tid, index;
    const char *cat, *name; /* string literals of the callers */
    double t0, t1;
    double bytes;           /* < 0: none */
} event;

atomic_int mx_trace_active;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static event *events;
static int nevents, capevents;
static double origin;
static _Thread_local int thread_track; /* 0: MX_TRACK_TRAINER */
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

void mx_trace_set_track(int tid) { thread_track = tid; }
int mx_trace_track(void) { return thread_track; }

void mx_trace_event_bytes(int tid, const char *cat, const char *name, int index, double t0, double t1, double bytes)
{
    if (!mx_trace_on()) return;
    pthread_mutex_lock(&lock);
    if (nevents == capevents && capevents < MAX_EVENTS) {
        const int cap = capevents ? 2 * capevents : 4096;
        event *e = realloc(events, sizeof *e * (size_t)cap);
        if (e) events = e, capevents = cap;
    }
    if (nevents < capevents) events[nevents++] = (event){tid, index, cat, name, t0, t1, bytes};
    pthread_mutex_unlock(&lock);
}

void mx_trace_event(int tid, const char *cat, const char *name, int index, double t0, double t1)
{
    mx_trace_event_bytes(tid, cat, name, index, t0, t1, -1);
}

void mx_trace_visit(mx_trace_visit_fn fn, void *user)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nevents; i++)
        fn(user, events[i].tid, events[i].cat, events[i].name, events[i].index, events[i].t0, events[i].t1);
    pthread_mutex_unlock(&lock);
}

int mx_trace_count(void)
{
    pthread_mutex_lock(&lock);
    const int n = nevents;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Caller holds the lock. */
static int span(double *lo, double *hi)
{
    *lo = *hi = 0;
    for (int i = 0; i < nevents; i++) {
        if (!i || events[i].t0 < *lo) *lo = events[i].t0;
        if (!i || events[i].t1 > *hi) *hi = events[i].t1;
    }
    return nevents > 0;
}

int mx_trace_span(double *lo, double *hi)
{
    pthread_mutex_lock(&lock);
    const int any = span(lo, hi);
    pthread_mutex_unlock(&lock);
    return any;
}

/* ---- JSON text, built in memory: a merged trace travels to its writer as text */

typedef struct {
    char *p;
    size_t n, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...)
{
    while (!t->failed) {
        va_list ap;
        va_start(ap, fmt);
        const int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        const size_t cap = k < 0 ? 0 : 2 * t->cap + (size_t)k;
        char *p = cap ? realloc(t->p, cap) : NULL;
        if (!p) t->failed = 1;
        else t->p = p, t->cap = cap;
    }
}

/* A JSON string: process names carry host names, which this program does not choose. */
static void put_string(text *t, const char *s)
{
    put(t, "\"");
    for (; *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') put(t, "\\%c", ch);
        else if (ch < 0x20) put(t, "\\u%04x", ch);
        else put(t, "%c", ch);
    }
    put(t, "\"");
}

static void track_name(int tid, char *b, size_t n)
{
    if (tid == MX_TRACK_TRAINER)
        snprintf(b, n, "trainer");
    else if (tid == MX_TRACK_SERVER)
        snprintf(b, n, "server");
    else if (tid >= MX_TRACK_KV_WORKER(0))
        snprintf(b, n, "kvstore worker %d", tid - MX_TRACK_KV_WORKER(0));
    else
        snprintf(b, n, "device %d", tid - MX_TRACK_DEVICE(0));
}

/* Caller holds the lock. */
static void put_events(text *t, int pid, const char *process_name, double t_origin, double lo, double hi)
{
    put(t, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": ", pid);
    put_string(t, process_name);
    put(t, "}},\n{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, \"tid\": 0, \"args\": "
        "{\"sort_index\": %d}}", pid, pid);
    int named[MX_TRACK_SERVER + 1] = {0}; /* a track's name once */
    for (int i = 0; i < nevents; i++) {
        const int tid = events[i].tid;
        if (tid < 0 || tid >= (int)(sizeof named / sizeof named[0]) || named[tid]) continue;
        named[tid] = 1;
        char name[64];
        track_name(tid, name, sizeof name);
        put(t, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
            pid, tid, name);
        /* tracks in the order trainer, devices, workers, server */
        put(t, ",\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %d, \"tid\": %d, \"args\": "
            "{\"sort_index\": %d}}", pid, tid, tid);
    }
    for (int i = 0; i < nevents; i++) {
        const event *e = &events[i];
        if (e->t0 < lo || e->t1 > hi) continue;
        /* Both ends rounded to whole nanoseconds, the same way, so that events nested on a
         * thread stay nested in the file (Perfetto drops a slice that overlaps its parent's
         * end); a merged part's clock shift may round its first event a hair below 0. */
        long long a = llround((e->t0 - t_origin) * 1e9), b = llround((e->t1 - t_origin) * 1e9);
        a = a > 0 ? a : 0;
        b = b > a ? b : a;
        put(t, ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"cat\": \"%s\", \"name\": \"%s", pid, e->tid, e->cat,
            e->name);
        if (e->index >= 0) put(t, " %d", e->index);
        put(t, "\", \"ts\": %lld.%03lld, \"dur\": %lld.%03lld", a / 1000, a % 1000, (b - a) / 1000, (b - a) % 1000);
        if (e->bytes >= 0) put(t, ", \"args\": {\"bytes\": %.0f}", e->bytes);
        put(t, "}");
    }
}

static char *json_locked(int pid, const char *process_name, double t_origin, double lo, double hi, size_t *len)
{
    text t = {malloc(4096), 0, 4096, 0};
    t.failed = !t.p;
    put_events(&t, pid, process_name, t_origin, lo, hi);
    if (t.failed) {
        free(t.p);
        *len = 0;
        mx_error(MX_ENOMEM, "out of memory for the trace's %d events", nevents);
        return NULL;
    }
    *len = t.n;
    return t.p;
}

char *mx_trace_json(int pid, const char *process_name, double t_origin, double lo, double hi, size_t *len)
{
    pthread_mutex_lock(&lock);
    char *s = json_locked(pid, process_name, t_origin, lo, hi, len);
    pthread_mutex_unlock(&lock);
    return s;
}

int mx_trace_write_parts(const char *path, const char *const *parts, const size_t *lens, int n)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return mx_error(MX_EINVAL, "trace path '%.200s...': too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return mx_error(MX_EIO, "cannot write the trace '%s': %s", tmp, strerror(errno));
    fputs("{\"traceEvents\": [\n", f);
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!lens[i]) continue;
        if (!first) fputs(",\n", f);
        fwrite(parts[i], 1, lens[i], f);
        first = 0;
    }
    fputs("\n], \"displayTimeUnit\": \"ms\"}\n", f);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        const int err = errno;
        remove(tmp);
        return mx_error(MX_EIO, "cannot write the trace '%s': %s", path, strerror(err ? err : EIO));
    }
    return MX_OK;
}

int mx_trace_write(const char *path, int pid, const char *process_name)
{
    pthread_mutex_lock(&lock);
    /* from the window's start, or from an event that began before it (a reduction under way) */
    double lo, hi, from = origin;
    if (span(&lo, &hi) && lo < from) from = lo;
    size_t len;
    char *s = json_locked(pid, process_name, from, -HUGE_VAL, HUGE_VAL, &len);
    pthread_mutex_unlock(&lock);
    if (!s) return MX_ENOMEM;
    const char *parts[1] = {s};
    const int rc = mx_trace_write_parts(path, parts, &len, 1);
    free(s);
    return rc;
}
