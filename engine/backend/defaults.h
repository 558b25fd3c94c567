/* Inside engine/backend/: the check of a backend's table, which fills its NULL optional ops
 * with the defaults (engine/backend/defaults.c). */
#ifndef MX_BACKEND_DEFAULTS_H
#define MX_BACKEND_DEFAULTS_H

#include "backend.h"

/* MX_OK with o's NULL optional ops set to the defaults, or MX_EINVAL naming a required op
 * that is NULL or an incomplete set of event ops. */
int mx_backend_check_and_fill(mx_backend_ops *o);

#endif
