/* Backend registry and the parts every backend shares (the device workspace). The only
 * place that knows which backends this build has. */
#include "backend.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

int mx_backend_create(mx_backend **out, const char *kind, int device, int nthreads)
{
    *out = NULL;
    if (strcmp(kind, "cpu") != 0)
        return mx_error(MX_EUNSUPPORTED, "backend '%s' is not available in this build (available: cpu)", kind);
    mx_backend *be = calloc(1, sizeof *be);
    if (!be) return mx_error(MX_ENOMEM, "out of memory creating a backend");
    be->ops = &mx_cpu_backend_ops;
    be->device = device;
    be->nthreads = nthreads < 1 ? 1 : nthreads;
    *out = be;
    return MX_OK;
}

void mx_backend_destroy(mx_backend *be)
{
    if (!be) return;
    if (be->scratch) be->ops->free(be, be->scratch);
    free(be);
}

void *mx_backend_scratch(mx_backend *be, size_t bytes)
{
    if (bytes <= be->scratch_bytes) return be->scratch;
    if (be->scratch) be->ops->free(be, be->scratch);
    be->scratch = be->ops->alloc(be, bytes);
    be->scratch_bytes = be->scratch ? bytes : 0;
    return be->scratch;
}
