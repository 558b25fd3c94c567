/* Host wall clock for phase timing on CPU devices. */
#ifndef MX_TIMER_H
#define MX_TIMER_H

#include <time.h>

static inline double mx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
