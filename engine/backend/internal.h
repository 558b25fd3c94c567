/* Inside engine/backend/ only: a device's status (its sticky error, error.c, and its
 * allocator's count, backend.c), and the check of a backend's table that fills its NULL
 * optional ops with the defaults (defaults.c). */
#ifndef MX_BACKEND_INTERNAL_H
#define MX_BACKEND_INTERNAL_H

#include "backend.h"

#include <pthread.h>
#include <stdatomic.h>

struct mx_backend_status {
    pthread_mutex_t lock; /* orders writers; readers need only the atomic code */
    atomic_int code;      /* stored after msg is complete, so a reader seeing it sees msg */
    char msg[512];
    /* the allocator's count (counted_alloc): bytes live now and at most since the last
     * mx_backend_mem_reset_peak, and the size of each live block (few: buffers are made
     * once per run, so a linear search on free is cheap) */
    size_t live, peak;
    struct mem_block { void *p; size_t bytes; } *blocks;
    size_t nblocks, cap;
};

/* MX_OK with o's NULL optional ops set to the defaults, or MX_EINVAL naming a required op
 * that is NULL or an incomplete set of event ops. */
int mx_backend_check_and_fill(mx_backend_ops *o);

#endif
