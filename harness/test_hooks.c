/* The injected slowdown of test_hooks.h. */
#include "harness/test_hooks.h"
#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>

double mx_test_slowdown(void)
{
    const char *e = getenv("MXBENCH_TEST_SLOWDOWN");
    if (!e || !*e) return 0;
    char *end;
    const double f = strtod(e, &end);
    if (*end || !(f > 0 && f < 0.9)) {
        fprintf(stderr, "mxbench: MXBENCH_TEST_SLOWDOWN '%s' ignored: expected a fraction above 0 and below 0.9\n", e);
        return 0;
    }
    return f;
}

void mx_test_slowdown_wait(double f, double t0)
{
    if (f <= 0) return;
    /* a busy wait, as a slower kernel would keep the core busy: a sleep would free it */
    const double until = t0 + (mx_now() - t0) / (1 - f);
    while (mx_now() < until) {}
}
