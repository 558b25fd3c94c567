/* What profilers and phase timings see of a device's queue of work:
 * - named ranges (NVTX on CUDA, the timeline hook elsewhere) around every phase and every
 *   layer's forward and backward, named "<strategy> d<device> step <n> ..." from a tag the
 *   strategy sets per thread, so that a run under Nsight Systems reads without a legend;
 * - a phase clock: marks queued on the device (CUDA events) whose gaps are the phases'
 *   device times. On the CPU both cost nothing: ranges are not even formatted unless a
 *   timeline hook is set, and the host clock already times the work there. */
#ifndef MX_DEVICE_MARKS_H
#define MX_DEVICE_MARKS_H

#include "engine/backend/backend.h"

/* The calling thread's range prefix ("data d0 step 12") for be's ranges, formatted only
 * where they are heard (the training step sets it every step). */
void mx_range_set_tag(mx_backend *be, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pushes "<tag> <name>" on be's ranges where anyone listens (a non-CPU backend, or a hook). */
void mx_range_begin(mx_backend *be, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mx_range_end(mx_backend *be);

enum { MX_PHASE_MARKS = 4 };
typedef struct {
    mx_backend *be;
    mx_event *ev[MX_PHASE_MARKS];
    int on; /* the backend keeps its own queue (not the CPU): marks are events on it */
} mx_phase_clock;

/* MX_OK, or MX_ENOMEM-like failure of event_create (the backend's sticky error says why). */
int mx_phase_clock_init(mx_phase_clock *c, mx_backend *be);
void mx_phase_clock_mark(mx_phase_clock *c, int i);
/* Seconds between marks i and j on the device (waits for j); 0 where the clock is off. */
double mx_phase_clock_between(mx_phase_clock *c, int i, int j);
void mx_phase_clock_free(mx_phase_clock *c);

#endif
