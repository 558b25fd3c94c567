/* Execution contexts over layer ranges (see exec.h): buffers sized once at creation, so a
 * step allocates and copies nothing beyond what the layers compute. */
#include "exec.h"
#include "status.h"

#include <assert.h>
#include <stdlib.h>

enum { B_ACT, B_STATE, B_DBUF, B_X, B_LABELS, B_NBLOCKS };

static void *take(mx_exec *e, int block, size_t bytes)
{
    e->blocks[block] = e->be->ops->alloc(e->be, bytes ? bytes : 1);
    e->bytes += bytes;
    return e->blocks[block];
}

static int out_of_memory(mx_exec *e, const char *what, size_t bytes)
{
    return mx_error(MX_ENOMEM, "out of device memory for the %s of layers [%d, %d): %.2f GiB for up to %d samples "
                    "a step; use a smaller batch or more devices", what, e->first, e->last,
                    (double)bytes / (1 << 30), e->max_batch);
}

static int carve(mx_exec *e)
{
    const mx_params *ps = e->ps;
    const int nl = e->last - e->first;
    size_t act_bytes = 0, state_bytes = 0, widest = 0;
    for (int i = e->first; i < e->last; i++) {
        const size_t out = mx_shape_size(ps->layers[i].out);
        act_bytes += mx_state_align(sizeof(float) * e->max_batch * out);
        state_bytes += mx_layer_state_bytes(&ps->layers[i], e->max_batch);
        if (out > widest) widest = out;
    }
    /* One block each for activations and state: their offsets are fixed here, once. */
    char *act = take(e, B_ACT, act_bytes);
    if (!act) return out_of_memory(e, "activations", act_bytes);
    char *state = take(e, B_STATE, state_bytes);
    if (!state) return out_of_memory(e, "saved state", state_bytes);
    for (int k = 0; k < nl; k++) {
        const mx_layer *l = &ps->layers[e->first + k];
        const size_t sb = mx_layer_state_bytes(l, e->max_batch);
        e->act[k] = (float *)act;
        act += mx_state_align(sizeof(float) * e->max_batch * mx_shape_size(l->out));
        e->state[k] = sb ? state : NULL;
        state += sb;
    }
    const size_t dbytes = mx_state_align(sizeof(float) * e->max_batch * widest);
    float *d = take(e, B_DBUF, 2 * dbytes);
    if (!d) return out_of_memory(e, "activation gradients", 2 * dbytes);
    e->dbuf[0] = d;
    e->dbuf[1] = d + dbytes / sizeof(float);
    if (e->first == 0) {
        const size_t xb = sizeof(float) * e->max_batch * mx_shape_size(e->in);
        if (!(e->x = take(e, B_X, xb))) return out_of_memory(e, "input batch", xb);
    }
    if (e->loss && !(e->labels = take(e, B_LABELS, (size_t)e->max_batch)))
        return out_of_memory(e, "labels", (size_t)e->max_batch);
    return MX_OK;
}

int mx_exec_create(mx_exec **out, mx_params *ps, int first, int last, int max_batch, int with_loss)
{
    *out = NULL;
    if (first < ps->layer_lo || last > ps->layer_hi || first >= last)
        return mx_error(MX_EINVAL, "context over layers [%d, %d): need a non-empty range within the held layers "
                        "[%d, %d)", first, last, ps->layer_lo, ps->layer_hi);
    if (max_batch < 1) return mx_error(MX_EINVAL, "batch size %d: must be at least 1", max_batch);
    const mx_shape o = ps->layers[last - 1].out;
    if (with_loss && last != ps->nlayers)
        return mx_error(MX_EINVAL, "context over layers [%d, %d) with the loss: the loss follows the last layer "
                        "(%d)", first, last, ps->nlayers - 1);
    if (with_loss && (o.h != 1 || o.w != 1))
        return mx_error(MX_EINVAL, "the last layer must give a vector of class scores, not %dx%dx%d", o.c, o.h, o.w);
    mx_exec *e = calloc(1, sizeof *e);
    if (!e || !(e->act = calloc(last - first, sizeof *e->act)) ||
        !(e->state = calloc(last - first, sizeof *e->state))) {
        mx_exec_destroy(e);
        return mx_error(MX_ENOMEM, "out of memory creating a context over layers [%d, %d)", first, last);
    }
    e->ps = ps;
    e->be = ps->be;
    e->first = first;
    e->last = last;
    e->max_batch = max_batch;
    e->loss = with_loss;
    e->nclasses = with_loss ? o.c : 0;
    e->in = ps->layers[first].in;
    e->out = o;
    int rc = carve(e);
    if (rc < 0) {
        mx_exec_destroy(e);
        return rc;
    }
    *out = e;
    return MX_OK;
}

void mx_exec_destroy(mx_exec *e)
{
    if (!e) return;
    for (int b = 0; b < B_NBLOCKS; b++)
        if (e->blocks[b]) e->be->ops->free(e->be, e->blocks[b]);
    free(e->act);
    free(e->state);
    free(e);
}

void mx_exec_set_batch(mx_exec *e, const float *x_host, const uint8_t *labels_host, int n)
{
    if (x_host && e->x) e->be->ops->copy(e->be, e->x, x_host, sizeof(float) * n * mx_shape_size(e->in), MX_COPY_H2D);
    if (labels_host && e->labels) e->be->ops->copy(e->be, e->labels, labels_host, (size_t)n, MX_COPY_H2D);
}

const float *mx_exec_forward(mx_exec *e, const float *in, int n, int training)
{
    assert((in || e->x) && "a context not starting at layer 0 needs an input");
    in = in ? in : e->x;
    e->in_ptr = in;
    for (int k = 0; k < e->last - e->first; k++) {
        mx_layer *l = &e->ps->layers[e->first + k];
        l->ops->forward(l, e->be, e->state[k], n, e->act[k], in, training);
        in = e->act[k];
    }
    return in;
}

double mx_exec_loss(mx_exec *e, const uint8_t *labels, int n, float grad_scale, int *correct)
{
    assert(e->loss && "a context without the loss asked for it");
    return e->be->ops->softmax_xent(e->be, n, e->nclasses, e->dbuf[0], correct, e->act[e->last - e->first - 1],
                                    labels ? labels : e->labels, grad_scale);
}

void mx_exec_backward(mx_exec *e, int n, const float *dout, float *din, mx_grad_ready_fn ready, void *user)
{
    assert((dout || e->loss) && "backward from the loss in a context without it");
    const float *g = dout ? dout : e->dbuf[0];
    int next = 1; /* never dbuf[0] first: it may hold the loss's gradient that g reads */
    for (int k = e->last - e->first - 1; k >= 0; k--) {
        mx_layer *l = &e->ps->layers[e->first + k];
        float *d = k ? e->dbuf[next] : din;
        l->ops->backward(l, e->be, e->state[k], n, d, g, k ? e->act[k - 1] : e->in_ptr, e->act[k]);
        g = d;
        next = 1 - next;
        if (ready && l->param_count) ready(user, l->param_first, l->param_count);
    }
}
