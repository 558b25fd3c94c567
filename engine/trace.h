/* A timeline of a run in Chrome's trace format (JSON `traceEvents`, `ph: "X"` complete
 * events with microsecond `ts` and `dur`), which Perfetto and chrome://tracing open: one
 * track per device thread, kvstore worker and the trainer's thread, so that who waits for
 * whom, whether communication overlaps backward, and which device straggles read off it.
 * Recording is off unless the trainer turns it on for a window of steps; a call while off
 * costs one load of a flag. Events are kept in memory (a window of steps makes a few
 * thousand) and written once, at the end. */
#ifndef MX_TRACE_H
#define MX_TRACE_H

#include <stdatomic.h>

/* Tracks (Chrome's tid): the trainer's thread, device d, kvstore comm worker w. */
#define MX_TRACK_TRAINER 0
#define MX_TRACK_DEVICE(d) (1 + (d))
#define MX_TRACK_KV_WORKER(w) (100 + (w))

extern atomic_int mx_trace_active;

static inline int mx_trace_on(void) { return atomic_load_explicit(&mx_trace_active, memory_order_relaxed); }

/* Starts recording (events kept from now on, times relative to origin, mx_now() seconds) or
 * stops it; what was recorded stays until mx_trace_reset. */
void mx_trace_start(double origin);
void mx_trace_stop(void);
void mx_trace_reset(void);
/* One complete event on track tid from t0 to t1 (mx_now() seconds): category cat, name
 * name, and index appended to the name where >= 0 ("conv2d 3"). Thread-safe. */
void mx_trace_event(int tid, const char *cat, const char *name, int index, double t0, double t1);
/* Events recorded so far. */
int mx_trace_count(void);
/* Writes every event to path as one JSON object ({"traceEvents": [...]}), with names for the
 * process (pid, e.g. the rank) and for every track that has events; written to a temporary
 * file and renamed, so that a failed write leaves no half file. MX_EIO with a message. */
int mx_trace_write(const char *path, int pid, const char *process_name);

#endif
