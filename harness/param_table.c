/* The tensor table of a model (see param_table.h). */
#include "param_table.h"
#include "base/status.h"
#include "engine/core/backends.h"
#include "engine/core/params.h"
#include "results/store.h"

#include <stdio.h>
#include <stdlib.h>

/* A table line: the name (under 48 bytes), three sizes and a flag */
#define LINE_MAX_BYTES 160
#define HEAD_MAX_BYTES 512

static int format(const mx_params *ps, const char *workload, char **text, size_t *len)
{
    const size_t cap = HEAD_MAX_BYTES + (size_t)ps->nparams * LINE_MAX_BYTES;
    char *s = malloc(cap);
    if (!s) return mx_error(MX_ENOMEM, "out of memory for the tensor table of %d tensors", ps->nparams);
    size_t at = (size_t)snprintf(s, cap,
                                 "# mxbench tensor table: %s, %d tensors, %zu floats in its weights files (raw "
                                 "little-endian f32: train --save-init, --save-params)\n"
                                 "# index name offset count decay (offset and count in floats; decay 1: weight "
                                 "decay applies)\n",
                                 workload, ps->nparams, ps->nweights);
    for (int i = 0; i < ps->nparams && at < cap; i++) {
        const mx_param *p = &ps->params[i];
        at += (size_t)snprintf(s + at, cap - at, "%d %s %zu %zu %d\n", i, p->name, p->offset, p->count, p->decay);
    }
    if (at >= cap) { /* cannot happen with the bounds above; never write a cut table */
        free(s);
        return mx_error(MX_ENOMEM, "the tensor table of %d tensors outgrew %zu bytes", ps->nparams, cap);
    }
    *text = s;
    *len = at;
    return MX_OK;
}

int mx_param_table_write(const char *path, const char *workload, const mx_layer_spec *specs, int nspecs,
                         mx_shape in)
{
    /* The layout is the whole model's parameter set on one device, the same on every backend:
     * a set on the CPU gives it without a device (its buffers live only for this call). */
    mx_backend *be;
    MX_TRY(mx_backend_create(&be, "cpu", 0, 1));
    mx_params *ps;
    int rc = mx_params_create(&ps, be, specs, nspecs, in, 0, nspecs);
    char *text = NULL;
    size_t len = 0;
    if (rc == MX_OK) {
        rc = format(ps, workload, &text, &len);
        mx_params_destroy(ps);
    }
    mx_backend_destroy(be);
    if (rc == MX_OK) rc = mx_image_commit(path, text, len);
    free(text);
    return rc;
}
