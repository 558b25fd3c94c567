/* What each top-level layer costs, for the balanced pipeline cut (partition.h): a short
 * profile of every layer alone, or its FLOPs where a profile is not wanted. */
#include "partition.h"
#include "engine/core/exec.h"
#include "base/status.h"
#include "base/timer.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of `rounds` forward + backward passes of layer i alone, after one untimed
 * pass (first touches, lazy allocations). The input gradient is computed for every layer
 * but the first, as its stage would. */
static int time_layer(mx_params *ps, int i, int batch, int rounds, double *secs)
{
    mx_exec *e = NULL;
    MX_TRY(mx_exec_create(&e, ps, i, i + 1, batch, 0));
    mx_backend *be = ps->be;
    const size_t nin = (size_t)batch * mx_shape_size(e->in), nout = (size_t)batch * mx_shape_size(e->out);
    float *x = be->ops->alloc(be, sizeof(float) * nin), *dout = be->ops->alloc(be, sizeof(float) * nout);
    float *din = i > 0 ? be->ops->alloc(be, sizeof(float) * nin) : NULL;
    double *t = malloc(sizeof(double) * (size_t)rounds);
    int rc = x && dout && (din || i == 0) && t ? MX_OK : mx_error(MX_ENOMEM, "out of memory profiling layer %d", i);
    /* inputs and output gradients of ones: the values do not change the time of these layers */
    float *ones = rc == MX_OK ? malloc(sizeof(float) * (nin > nout ? nin : nout)) : NULL;
    if (rc == MX_OK && !ones) rc = mx_error(MX_ENOMEM, "out of memory profiling layer %d", i);
    if (rc == MX_OK) {
        for (size_t j = 0; j < (nin > nout ? nin : nout); j++) ones[j] = 1.0f;
        be->ops->copy(be, x, ones, sizeof(float) * nin, MX_COPY_H2D);
        be->ops->copy(be, dout, ones, sizeof(float) * nout, MX_COPY_H2D);
    }
    free(ones);
    for (int r = -1; rc == MX_OK && r < rounds; r++) {
        const double t0 = mx_now();
        mx_exec_forward(e, x, batch, 1);
        mx_exec_backward(e, batch, dout, din, NULL, NULL);
        if (be->ops->sync(be) < 0) rc = mx_error(MX_ERUNTIME, "profiling layer %d: %s", i, mx_last_error());
        if (r >= 0) t[r] = mx_now() - t0;
    }
    if (rc == MX_OK) {
        qsort(t, (size_t)rounds, sizeof *t, cmp_double);
        *secs = t[rounds / 2];
    }
    free(t);
    if (x) be->ops->free(be, x);
    if (dout) be->ops->free(be, dout);
    if (din) be->ops->free(be, din);
    mx_exec_destroy(e);
    return rc;
}

int mx_partition_costs(mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in, int batch, int rounds,
                       double *cost)
{
    if (batch < 1 || rounds < 0 || rounds > 1000)
        return mx_error(MX_EINVAL, "layer profile of batch %d, %d rounds: accepted batch 1 or more, 0..1000 rounds",
                        batch, rounds);
    mx_params *ps = NULL;
    MX_TRY(mx_params_create(&ps, be, specs, nspecs, in, 0, nspecs));
    int rc = MX_OK;
    for (int i = 0; rc == MX_OK && i < nspecs; i++)
        rc = rounds > 0 ? time_layer(ps, i, batch, rounds, &cost[i]) : (cost[i] = mx_params_flops(ps, i, i + 1), MX_OK);
    mx_params_destroy(ps);
    return rc;
}
