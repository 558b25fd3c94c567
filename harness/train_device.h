/* Which devices a `train` run takes: CUDA or CPU workers, from --device, what the build and the
 * machine have, and what has run on GPUs so far (mx_train_gpu_untested, commands.h). */
#ifndef MX_TRAIN_DEVICE_H
#define MX_TRAIN_DEVICE_H

#include "trainer.h"

#include <stddef.h>

typedef struct {
    const char *device;    /* --device: "cpu", "cuda", "auto" or NULL (auto) */
    int oversubscribe;     /* --oversubscribe */
    int oversubscribe_env; /* MXBENCH_OVERSUBSCRIBE=1: a sweep's --oversubscribe (its CUDA rows only) */
    int tf32;              /* --tf32 */
    int quiet;             /* --quiet: the fallback to CPU workers goes unsaid on stderr */
} mx_train_device_opts;

/* Sets c->backend ("cuda" or "cpu") for c's strategy, kvstore, compression and devices. Under
 * auto, a combination that has not run on GPUs takes CPU workers, and note (of note_size)
 * says why for the record (else it is left as it is). Returns 0, or the exit status 2 after
 * printing why: --device cuda without the backend, a GPU or for such a combination; more
 * devices than GPUs without either oversubscribe; --oversubscribe or --tf32 on CPU workers. */
int mx_train_choose_device(mx_train_config *c, const mx_train_device_opts *o, char *note, size_t note_size);

#endif
