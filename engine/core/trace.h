/* A timeline of a run in Chrome's trace format (JSON `traceEvents`, `ph: "X"` complete
 * events with microsecond `ts` and `dur`), which Perfetto and chrome://tracing open: one
 * track per device thread, kvstore worker, parameter server and the trainer's thread, so that
 * who waits for whom, whether communication overlaps backward, and which device straggles
 * read off it. Recording is off unless the trainer (or a server) turns it on for a window of
 * steps; a call while off costs one load of a flag. Events are kept in memory (a window of
 * steps makes a few thousand) and written once, at the end: by this process
 * (mx_trace_write), or as one part per rank of an MPI job merged into one file
 * (mx_trace_json on every rank, mx_trace_write_parts on the writer: cluster/cluster.h). */
#ifndef MX_TRACE_H
#define MX_TRACE_H

#include <stdatomic.h>
#include <stddef.h>

/* Tracks (Chrome's tid): the trainer's thread, device d, kvstore comm worker w, a
 * parameter-server rank's one thread. */
#define MX_TRACK_TRAINER 0
#define MX_TRACK_DEVICE(d) (1 + (d))
#define MX_TRACK_KV_WORKER(w) (100 + (w))
#define MX_TRACK_SERVER 200

extern atomic_int mx_trace_active;

static inline int mx_trace_on(void) { return atomic_load_explicit(&mx_trace_active, memory_order_relaxed); }

/* Starts recording (events kept from now on, times relative to origin, mx_now() seconds) or
 * stops it; what was recorded stays until mx_trace_reset. */
void mx_trace_start(double origin);
void mx_trace_stop(void);
void mx_trace_reset(void);
/* The calling thread's track, for code that records events without knowing whose thread it
 * runs on (the communicator): set once by the code that owns the thread (device threads,
 * kvstore workers); a thread that never set it is the trainer's. */
void mx_trace_set_track(int tid);
int mx_trace_track(void);
/* One complete event on track tid from t0 to t1 (mx_now() seconds): category cat, name
 * name, and index appended to the name where >= 0 ("conv2d 3"). Thread-safe. */
void mx_trace_event(int tid, const char *cat, const char *name, int index, double t0, double t1);
/* The same with the bytes it moved (args.bytes in the JSON; bytes < 0: none). */
void mx_trace_event_bytes(int tid, const char *cat, const char *name, int index, double t0, double t1, double bytes);
/* Calls fn on every event recorded so far, in recording order, times in mx_now() seconds
 * (the per-layer profile of bench/layer_profile.c reads the layers' events this way). */
typedef void (*mx_trace_visit_fn)(void *user, int tid, const char *cat, const char *name, int index, double t0,
                                  double t1);
void mx_trace_visit(mx_trace_visit_fn fn, void *user);
/* Events recorded so far. */
int mx_trace_count(void);
/* The earliest start and latest end of the recorded events (mx_now() seconds); 0 when none. */
int mx_trace_span(double *lo, double *hi);
/* Writes every event to path as one JSON object ({"traceEvents": [...]}), with names for the
 * process (pid, e.g. the rank) and for every track that has events; written to a temporary
 * file and renamed, so that a failed write leaves no half file. MX_EIO with a message. */
int mx_trace_write(const char *path, int pid, const char *process_name);
/* One process's part of a merged trace: its name, its tracks' names and the events lying
 * within [lo, hi] (mx_now() seconds), times relative to origin, as JSON objects separated by
 * ",\n" with no enclosing array. Returns malloc'ed text (*len bytes, NUL-terminated), or NULL
 * (MX_ENOMEM with a message). */
char *mx_trace_json(int pid, const char *process_name, double origin, double lo, double hi, size_t *len);
/* Writes the parts (n of them, part i lens[i] bytes, empty ones left out) as one trace to
 * path, atomically as mx_trace_write. */
int mx_trace_write_parts(const char *path, const char *const *parts, const size_t *lens, int n);

#endif
