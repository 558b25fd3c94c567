/* What the kernel micro-benchmarks (gemm_bench, attention_bench) share: an integer option, and a
 * clock that is the wall clock or, with --cpu-time, the process's CPU time over its threads (on
 * a busy host the time a thread waits for a core then does not count; a thread that spins at a
 * barrier still does). */
#ifndef MX_BENCH_ARGS_H
#define MX_BENCH_ARGS_H

#include "base/timer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The value after `name` on the command line, or dflt. */
static inline int bench_arg(int argc, char **argv, const char *name, int dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
    return dflt;
}

/* Seconds: the wall clock where cpu_threads is 0, else the process's CPU time / cpu_threads. */
static inline double bench_clock(int cpu_threads)
{
    if (!cpu_threads) return mx_now();
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return ((double)t.tv_sec + 1e-9 * (double)t.tv_nsec) / cpu_threads;
}

#endif
