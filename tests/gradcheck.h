/* Finite-difference gradient checks of layers through a net (tests/test_layers.c,
 * tests/test_layers_seq.c). A net is probed with the scalar L = sum(out * R) of its final output
 * for a fixed random R, so that a backward from dout = R must give dL/din and dL/dparams.
 * Central differences with step h = 1e-3 in float32: L is a sum of ~1e3 float terms, so its
 * rounding error is about 1e-6 and the difference quotient's about 1e-6 / h = 1e-3; truncation
 * error is O(h^2). An element passes when |analytic - numeric| <= 1e-2 * max(1, |analytic|,
 * |numeric|) + 1e-3. */
#ifndef MX_GRADCHECK_H
#define MX_GRADCHECK_H

#include "check.h"
#include "engine/core/net.h"
#include "engine/core/rng.h"

#include <math.h>
#include <stdlib.h>

#define GC_STEP 1e-3f
#define GC_RTOL 1e-2
#define GC_ATOL 1e-3
#define GC_PROBES 24 /* elements probed per tensor */

/* L = sum(out * r) over the net's final output for the n samples in net->x. */
static inline double gc_objective(mx_net *net, int n, const float *r)
{
    const float *out = mx_net_forward(net, n, 1);
    const size_t count = (size_t)n * mx_shape_size(net->layers[net->nlayers - 1].out);
    double s = 0;
    for (size_t i = 0; i < count; i++) s += (double)out[i] * r[i];
    return s;
}

static inline int gc_close(double analytic, double numeric)
{
    const double scale = fmax(1.0, fmax(fabs(analytic), fabs(numeric)));
    return fabs(analytic - numeric) <= GC_RTOL * scale + GC_ATOL;
}

/* Compares grad with central differences of L in x (count values, a tensor of the net or its
 * input) at GC_PROBES elements (all of them when there are no more), chosen by rng; returns how
 * many disagree, printing the first three. */
static inline int gc_probe(const char *what, mx_net *net, int n, const float *r, float *x, size_t count,
                           const float *grad, float step, mx_rng *rng)
{
    int bad = 0;
    for (int p = 0; p < GC_PROBES && p < (int)count; p++) {
        const size_t i = count <= GC_PROBES ? (size_t)p : mx_rng_below(rng, (uint32_t)count);
        const float keep = x[i];
        x[i] = keep + step;
        const double lp = gc_objective(net, n, r);
        x[i] = keep - step;
        const double lm = gc_objective(net, n, r);
        x[i] = keep;
        const double num = (lp - lm) / (2 * step);
        if (!gc_close(grad[i], num)) {
            if (bad < 3) fprintf(stderr, "  %s[%zu]: analytic %.6g numeric %.6g\n", what, i, grad[i], num);
            bad++;
        }
    }
    return bad;
}

/* The backward of every layer of net, last to first, from dout = r (the gradient of
 * gc_objective), after a training forward of the same n samples: the input gradient into din
 * (NULL: not asked for), parameter gradients accumulated into net->g. Each layer runs its own
 * ops, so the net must hold no relu that the context fuses into its successor. */
static inline void gc_backward(mx_net *net, int n, const float *r, float *din)
{
    size_t widest = 0;
    for (int k = 0; k < net->nlayers; k++) {
        const size_t s = (size_t)n * mx_shape_size(net->layers[k].in);
        if (s > widest) widest = s;
    }
    float *buf[2] = {malloc(sizeof(float) * widest), malloc(sizeof(float) * widest)};
    const float *dout = r;
    for (int k = net->nlayers - 1; k >= 0; k--) {
        mx_layer *l = &net->layers[k];
        float *d = k ? buf[k % 2] : din;
        l->ops->backward(l, net->be, net->exec->state[k], n, d, dout, k ? net->act[k - 1] : net->x, net->act[k]);
        dout = d;
    }
    free(buf[0]);
    free(buf[1]);
}

#endif
