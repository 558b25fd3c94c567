/* The trainer's seam for test builds: a function called after every training step's work,
 * before the step's time is taken, or NULL (as in mxbench: one branch per step). A test build
 * sets it at start-up to make every step slower by a known share (tests/hooks.c), to check
 * that `mxbench ab` sees a regression. */
#ifndef MX_TRAINER_HOOK_H
#define MX_TRAINER_HOOK_H

/* t0: when the step started (mx_now()). */
typedef void (*mx_trainer_step_hook)(double t0);
/* Set it before the first run starts. */
void mx_trainer_set_step_hook(mx_trainer_step_hook fn);

#endif
