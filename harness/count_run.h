/* Counting the work of a child process instead of timing it, for `mxbench count`: under
 * valgrind's cachegrind (instructions and simulated cache misses, the same on every run of
 * the same binary and inputs, whatever else the host runs) or with the CPU's hardware
 * counters (perf_event_open, where the kernel gives them: close to, not exactly, the same). */
#ifndef MX_COUNT_RUN_H
#define MX_COUNT_RUN_H

typedef struct {
    double instructions;
    double d1_misses; /* NaN where not counted (perf) */
    double ll_misses;
} mx_counts;

/* Runs argv (argv[0] a path) to its end under `valgrind --tool=cachegrind --cache-sim=yes`
 * (valgrind: its path), its output file in dir, and reads the totals of every thread. stdout
 * is discarded; stderr's tail goes into the error message when it fails. */
int mx_count_cachegrind(const char *valgrind, char *const argv[], const char *dir, mx_counts *out);

/* 1 when this kernel lets a process count its children's instructions (perf_event_open on
 * the hardware instructions event); why not in why otherwise. */
int mx_count_perf_available(char *why, int n);
/* Runs argv to its end with hardware counters on it and every thread it starts, from its exec. */
int mx_count_perf(char *const argv[], mx_counts *out);

#endif
