/* A known slowdown on demand, for checking that regression gates see one (`mxbench ab`'s
 * benchmark and tests). MXBENCH_TEST_SLOWDOWN=F (0 < F < 0.9) makes every training step take
 * 1/(1-F) times as long by spinning on the step's own core after its work, so that the
 * throughput is (1-F) times what it was: F = 0.1 is a 10% slowdown, whatever the step costs.
 * Unset (as users run), it costs one branch per step. */
#ifndef MX_TEST_HOOKS_H
#define MX_TEST_HOOKS_H

/* The factor F from the environment, 0 when unset; a value outside (0, 0.9) is refused on
 * stderr once and ignored. */
double mx_test_slowdown(void);
/* Spins until t0 + (now - t0) / (1 - f) when f > 0 (t0: when the step started, mx_now()). */
void mx_test_slowdown_wait(double f, double t0);

#endif
