/* Execution contexts over layer ranges (see engine/core/exec.h): buffers sized once at creation, so a
 * step allocates and copies nothing beyond what the layers compute. */
#include "exec.h"
#include "base/status.h"

#include "base/timer.h"
#include "engine/backend/switches.h"
#include "device_marks.h"
#include "trace.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

enum { B_ACT, B_STATE, B_DBUF, B_X, B_LABELS, B_WORK, B_NBLOCKS };

static int amp(const mx_exec *e) { return e->act_type != MX_F32; }

/* The timeline (engine/core/trace.h): a layer's forward or backward on its device's track, timed on the
 * host (the CPU backend computes in the call; a queueing backend would show its launches);
 * and the same span as a named range for profilers (engine/core/device_marks.h: NVTX on CUDA). */
static double layer_begin(const mx_exec *e, const char *cat, const mx_layer *l, int k)
{
    mx_range_begin(e->be, "L%d %s %s", e->first + k, l->ops->kind, cat);
    return mx_trace_on() ? mx_now() : 0;
}
static void trace_layer(const mx_exec *e, const char *cat, const mx_layer *l, int k, double t0)
{
    mx_range_end(e->be);
    if (t0 > 0) mx_trace_event(MX_TRACK_DEVICE(e->be->device), cat, l->ops->kind, e->first + k, t0, mx_now());
}

static void *take(mx_exec *e, int block, size_t bytes)
{
    /* An empty block still takes a byte (alloc(0) may return NULL): counted, so that
     * bytes is what the allocator counts. */
    bytes = bytes ? bytes : 1;
    e->blocks[block] = e->be->ops->alloc(e->be, bytes);
    e->bytes += bytes;
    return e->blocks[block];
}

static int out_of_memory(mx_exec *e, const char *what, size_t bytes)
{
    return mx_error(MX_ENOMEM, "out of device memory for the %s of layers [%d, %d): %.2f GiB for up to %d samples "
                    "a step; use a smaller batch or more devices", what, e->first, e->last,
                    (double)bytes / (1 << 30), e->max_batch);
}

/* Bytes of layer k's saved output: 16-bit in an AMP context, except the last layer's,
 * which is handed out as f32 (to the loss, or to the next stage as its input). */
static size_t act_size(const mx_exec *e, int k)
{
    const int last = k == e->last - e->first - 1;
    const size_t es = amp(e) && !last ? mx_dtype_size(e->act_type) : sizeof(float);
    return mx_state_align(es * e->max_batch * mx_shape_size(e->ps->layers[e->first + k].out));
}

static int carve(mx_exec *e)
{
    const mx_params *ps = e->ps;
    const int nl = e->last - e->first;
    size_t act_bytes = 0, state_bytes = 0, widest = 0;
    for (int i = e->first; i < e->last; i++) {
        const size_t out = mx_shape_size(ps->layers[i].out);
        act_bytes += act_size(e, i - e->first);
        state_bytes += mx_layer_state_bytes(&ps->layers[i], e->max_batch);
        if (out > widest) widest = out;
    }
    const size_t in_half_bytes = mx_state_align(mx_dtype_size(e->act_type) * e->max_batch * mx_shape_size(e->in));
    if (amp(e)) act_bytes += in_half_bytes;
    /* One block each for activations and state: their offsets are fixed here, once. */
    char *act = take(e, B_ACT, act_bytes);
    if (!act) return out_of_memory(e, "activations", act_bytes);
    e->act_bytes = act_bytes;
    char *state = take(e, B_STATE, state_bytes);
    if (!state) return out_of_memory(e, "saved state", state_bytes);
    for (int k = 0; k < nl; k++) {
        const mx_layer *l = &ps->layers[e->first + k];
        const size_t sb = mx_layer_state_bytes(l, e->max_batch);
        if (amp(e) && k < nl - 1)
            e->act_half[k] = act;
        else
            e->act[k] = (float *)act;
        act += act_size(e, k);
        e->state[k] = sb ? state : NULL;
        state += sb;
    }
    if (amp(e)) e->in_half = act;
    const size_t dbytes = mx_state_align(sizeof(float) * e->max_batch * widest);
    float *d = take(e, B_DBUF, 2 * dbytes);
    if (!d) return out_of_memory(e, "activation gradients", 2 * dbytes);
    e->dbuf[0] = d;
    e->dbuf[1] = d + dbytes / sizeof(float);
    if (amp(e)) {
        /* A layer's f32 input and output at once; the input of layer first may be the
         * widest (a stage that narrows). */
        const size_t io = widest > mx_shape_size(e->in) ? widest : mx_shape_size(e->in);
        const size_t wbytes = mx_state_align(sizeof(float) * e->max_batch * io);
        float *w = take(e, B_WORK, 2 * wbytes);
        if (!w) return out_of_memory(e, "f32 working buffers", 2 * wbytes);
        e->work[0] = w;
        e->work[1] = w + wbytes / sizeof(float);
        e->work_elems = wbytes / sizeof(float);
    }
    if (e->first == 0) {
        const size_t xb = sizeof(float) * e->max_batch * mx_shape_size(e->in);
        if (!(e->x = take(e, B_X, xb))) return out_of_memory(e, "input batch", xb);
    }
    const size_t lb = sizeof(int32_t) * e->max_batch * e->label_len;
    if (e->loss && !(e->labels = take(e, B_LABELS, lb))) return out_of_memory(e, "labels", lb);
    return MX_OK;
}

/* A relu layer whose successor in this context can take it into its own pass (engine/layers/layer.h's
 * absorbs_relu) runs as nothing: the successor applies it, forward and backward. Both are in
 * the same context, so a pipeline's stage boundary never splits a pair. MXBENCH_FUSE=off
 * runs every layer apart and ignores the layers' traits, AMP rounding and expanding every
 * tensor (measurements, and the tests that compare the two). */
int mx_exec_fusion_off(void) { return mx_switch_value(MX_SWITCH_FUSE) == MX_SW_FUSE_OFF; }

static void plan_fusion(mx_exec *e)
{
    e->plain = mx_exec_fusion_off();
    if (e->plain) return;
    for (int k = 0; k + 1 < e->last - e->first; k++) {
        const mx_layer *l = &e->ps->layers[e->first + k], *next = l + 1;
        e->fused[k] = strcmp(l->ops->kind, "relu") == 0 && next->ops->absorbs_relu &&
                      next->ops->absorbs_relu(next, e->be);
    }
}

/* Layer k's forward: of relu(in) where the relu before it is fused into it. */
static void run_forward(mx_exec *e, int k, int n, float *out, const float *in, int training)
{
    mx_layer *l = &e->ps->layers[e->first + k];
    const double t0 = layer_begin(e, "forward", l, k);
    if (k && e->fused[k - 1])
        l->ops->forward_relu(l, e->be, e->state[k], n, out, in, training);
    else
        l->ops->forward(l, e->be, e->state[k], n, out, in, training);
    trace_layer(e, "forward", l, k, t0);
}

/* Layer k's backward; where the relu before it is fused into it, through that relu too (in
 * and din are then the relu's). */
static void run_backward(mx_exec *e, int k, int n, float *din, const float *dout, const float *in, const float *out)
{
    mx_layer *l = &e->ps->layers[e->first + k];
    const double t0 = layer_begin(e, "backward", l, k);
    if (k && e->fused[k - 1])
        l->ops->backward_relu(l, e->be, e->state[k], n, din, dout, in, out);
    else
        l->ops->backward(l, e->be, e->state[k], n, din, dout, in, out);
    trace_layer(e, "backward", l, k, t0);
}

/* The layer whose input a backward of layer k takes the gradient of: k, or the relu fused into it. */
static int grad_layer(const mx_exec *e, int k) { return k && e->fused[k - 1] ? k - 1 : k; }

/* Layer k's MX_TRAIT_* flags as this context runs it: fused with a relu, its backward reads
 * out and not in, and a relu keeps both exactness claims. */
static unsigned traits_at(const mx_exec *e, int k)
{
    const mx_layer *l = &e->ps->layers[e->first + k];
    const unsigned t = l->ops->traits && !e->plain ? l->ops->traits(l) : 0;
    if (k && e->fused[k - 1]) return (t & (MX_TRAIT_EXACT_OUT | MX_TRAIT_EXACT_DIN)) | MX_TRAIT_BWD_NO_IN;
    return t;
}

/* AMP: whether layer k's stored half output (act_half[k]) is read again: by layer k's backward
 * as its out, or by the next layer run's as its in (k < nl - 1, k not fused). */
static int half_output_read(const mx_exec *e, int k)
{
    const int m = e->fused[k + 1] ? k + 2 : k + 1; /* the last layer is never fused */
    return !(traits_at(e, k) & MX_TRAIT_BWD_NO_OUT) || !(traits_at(e, m) & MX_TRAIT_BWD_NO_IN);
}

int mx_loss_rows(mx_shape out, int *classes, int *rows)
{
    if (out.h == 1 && out.w == 1) {
        *classes = out.c, *rows = 1;
        return MX_OK;
    }
    if (out.c == 1) {
        *classes = out.w, *rows = out.h;
        return MX_OK;
    }
    return mx_error(MX_EINVAL, "the last layer must give class scores, a vector {C,1,1} or rows {1,R,C}, not "
                    "%dx%dx%d", out.c, out.h, out.w);
}

int mx_exec_create(mx_exec **out, mx_params *ps, int first, int last, int max_batch, int with_loss)
{
    return mx_exec_create_amp(out, ps, first, last, max_batch, with_loss, MX_F32);
}

int mx_exec_create_amp(mx_exec **out, mx_params *ps, int first, int last, int max_batch, int with_loss,
                       mx_dtype act_type)
{
    *out = NULL;
    if (first < ps->layer_lo || last > ps->layer_hi || first >= last)
        return mx_error(MX_EINVAL, "context over layers [%d, %d): need a non-empty range within the held layers "
                        "[%d, %d)", first, last, ps->layer_lo, ps->layer_hi);
    if (max_batch < 1) return mx_error(MX_EINVAL, "batch size %d: must be at least 1", max_batch);
    if ((unsigned)act_type >= MX_NDTYPES)
        return mx_error(MX_EINVAL, "activation type %d: accepted %d (f32), %d (f16), %d (bf16)", (int)act_type,
                        MX_F32, MX_F16, MX_BF16);
    const mx_shape o = ps->layers[last - 1].out;
    if (with_loss && last != ps->nlayers)
        return mx_error(MX_EINVAL, "context over layers [%d, %d) with the loss: the loss follows the last layer "
                        "(%d)", first, last, ps->nlayers - 1);
    int classes = 0, rows = 0;
    if (with_loss) MX_TRY(mx_loss_rows(o, &classes, &rows));
    mx_exec *e = calloc(1, sizeof *e);
    if (!e || !(e->act = calloc(last - first, sizeof *e->act)) ||
        !(e->state = calloc(last - first, sizeof *e->state)) || !(e->fused = calloc(last - first, 1)) ||
        (act_type != MX_F32 && !(e->act_half = calloc(last - first, sizeof *e->act_half)))) {
        mx_exec_destroy(e);
        return mx_error(MX_ENOMEM, "out of memory creating a context over layers [%d, %d)", first, last);
    }
    e->ps = ps;
    e->act_type = act_type;
    e->be = ps->be;
    e->first = first;
    e->last = last;
    e->max_batch = max_batch;
    e->loss = with_loss;
    e->nclasses = classes;
    e->label_len = rows;
    e->in = ps->layers[first].in;
    e->out = o;
    plan_fusion(e);
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
    free(e->act_half);
    free(e->state);
    free(e->fused);
    free(e);
}

void mx_exec_set_batch(mx_exec *e, const float *x_host, const int32_t *labels_host, int n)
{
    if (x_host && e->x) e->be->ops->copy(e->be, e->x, x_host, sizeof(float) * n * mx_shape_size(e->in), MX_COPY_H2D);
    if (labels_host && e->labels)
        e->be->ops->copy(e->be, e->labels, labels_host, sizeof(int32_t) * n * e->label_len, MX_COPY_H2D);
}

/* ---- mixed precision: f32 kernels over 16-bit storage */

static void cast(mx_exec *e, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    e->be->ops->cast(e->be, n, dst, dt, src, st);
}

/* Rounds n floats at x to act_type's values in place, through stage (a free working
 * buffer) as 16-bit staging; in chunks, since x may be longer than a working buffer
 * (a dense layer's weight gradient). */
static void round_in_place(mx_exec *e, float *x, size_t n, float *stage)
{
    const size_t chunk = 2 * e->work_elems; /* 16-bit values in one working buffer */
    for (size_t i = 0; i < n; i += chunk) {
        const size_t m = n - i < chunk ? n - i : chunk;
        e->be->ops->round_half(e->be, m, x + i, e->act_type, stage);
    }
}

/* The layer's parameter gradients, one contiguous range of g (the padding between
 * tensors is zero and stays zero). */
static void round_param_grads(mx_exec *e, const mx_layer *l, float *stage)
{
    if (!l->param_count) return;
    const mx_param *p0 = &e->ps->params[l->param_first], *p1 = &e->ps->params[l->param_first + l->param_count - 1];
    round_in_place(e, e->ps->g + p0->offset, p1->offset + p1->count - p0->offset, stage);
}

/* AMP's layers may multiply on half-precision units (engine/backend/backend.h's math); restored after, so that
 * nothing outside the AMP graph (the optimizer, a kvstore) rounds. */
static mx_dtype math_begin(mx_exec *e)
{
    const mx_dtype saved = e->be->math;
    e->be->math = e->act_type == MX_BF16 || e->act_type == MX_F16 ? e->act_type : MX_F32;
    return saved;
}

/* The context's first layer reads ids (MX_TRAIT_IDS_IN): its input is never rounded, whatever
 * MXBENCH_FUSE says (traits_at drops the other traits there: they only save work). */
static int ids_in(const mx_exec *e)
{
    const mx_layer *l = &e->ps->layers[e->first];
    return l->ops->traits && (l->ops->traits(l) & MX_TRAIT_IDS_IN);
}

static const float *forward_amp(mx_exec *e, const float *in, int n, int training)
{
    const int nl = e->last - e->first;
    const mx_dtype t = e->act_type;
    /* The input is rounded too, as autocast casts a convolution's input: the half copy is
     * what backward reads again, as the GPU's saved tensor would be. Token ids are not
     * values to round (bf16 holds integers exactly only up to 256): they stay f32, and
     * backward reads them from in, which stays unchanged until then (mx_exec_forward). */
    const size_t nin = (size_t)n * mx_shape_size(e->in);
    if (ids_in(e)) {
        e->be->ops->copy(e->be, e->work[0], in, sizeof(float) * nin, MX_COPY_D2D);
    } else {
        cast(e, nin, e->in_half, t, in, MX_F32);
        cast(e, nin, e->work[0], MX_F32, e->in_half, t);
    }
    int a = 0; /* work[a] holds the layer's input */
    const mx_dtype saved = math_begin(e);
    for (int k = 0; k < nl; k++) {
        if (e->fused[k]) continue; /* work[a] stays the relu's input, which layer k + 1 reads */
        const mx_layer *l = &e->ps->layers[e->first + k];
        const size_t nout = (size_t)n * mx_shape_size(l->out);
        float *out = k < nl - 1 ? e->work[1 - a] : e->act[k];
        run_forward(e, k, n, out, e->work[a], training);
        if (k < nl - 1) {
            /* Stored rounded, and expanded back in place so that the next layer reads
             * exactly the stored values; a layer whose outputs are its inputs' values has
             * nothing to round, and only a half copy that backward reads is stored. */
            if (!(traits_at(e, k) & MX_TRAIT_EXACT_OUT))
                e->be->ops->round_half(e->be, nout, out, t, e->act_half[k]);
            else if (half_output_read(e, k))
                cast(e, nout, e->act_half[k], t, out, MX_F32);
            a = 1 - a;
        } else {
            round_in_place(e, out, nout, e->work[1 - a]);
        }
    }
    e->be->math = saved;
    return e->act[nl - 1];
}

static void backward_amp(mx_exec *e, int n, const float *g, float *din, mx_grad_ready_fn ready, void *user)
{
    const int nl = e->last - e->first;
    const mx_dtype t = e->act_type;
    int next = 1;
    /* Layer k's output is its successor's input, expanded when that one's backward read it
     * (have_out): the two working buffers alternate, work[b] holding the output (the last
     * layer's is its own f32 storage). Only what a backward reads is expanded (traits). */
    int b = 0, have_out = 1;
    const float *out = e->act[nl - 1];
    const mx_dtype saved = math_begin(e);
    for (int k = nl - 1; k >= 0; k--) {
        if (e->fused[k]) continue; /* done by layer k + 1 */
        const mx_layer *l = &e->ps->layers[e->first + k];
        const unsigned tr = traits_at(e, k);
        const int j = grad_layer(e, k), in_read = !(tr & MX_TRAIT_BWD_NO_IN), out_read = !(tr & MX_TRAIT_BWD_NO_OUT);
        float *d = j ? e->dbuf[next] : din;
        float *in = e->work[1 - b];
        if (out_read && !have_out) {
            cast(e, (size_t)n * mx_shape_size(l->out), e->work[b], MX_F32, e->act_half[k], t);
            out = e->work[b];
        }
        const size_t nin = (size_t)n * mx_shape_size(e->ps->layers[e->first + j].in);
        const float *x = in;
        if (in_read && !j && ids_in(e)) x = e->in_ptr;
        else if (in_read) cast(e, nin, in, MX_F32, j ? e->act_half[j - 1] : e->in_half, t);
        run_backward(e, k, n, d, g, in_read ? x : NULL, out_read ? out : NULL);
        /* work[b] (the output) is no longer needed: it stages the rounding. The gradient of
         * an exact layer is its output gradient's half values already. */
        if (d && !(tr & MX_TRAIT_EXACT_DIN)) round_in_place(e, d, nin, e->work[b]);
        round_param_grads(e, l, e->work[b]);
        out = in;
        have_out = in_read;
        b = 1 - b;
        g = d;
        next = 1 - next;
        if (ready && l->param_count) ready(user, l->param_first, l->param_count);
    }
    e->be->math = saved;
}

const float *mx_exec_forward(mx_exec *e, const float *in, int n, int training)
{
    assert((in || e->x) && "a context not starting at layer 0 needs an input");
    in = in ? in : e->x;
    e->in_ptr = in;
    if (amp(e)) return forward_amp(e, in, n, training);
    for (int k = 0; k < e->last - e->first; k++) {
        if (e->fused[k]) continue; /* in stays the relu's input, which layer k + 1 reads */
        run_forward(e, k, n, e->act[k], in, training);
        in = e->act[k];
    }
    return in;
}

double mx_exec_loss(mx_exec *e, const int32_t *labels, int n, float grad_scale, int *correct)
{
    assert(e->loss && "a context without the loss asked for it");
    const int rows = n * e->label_len;
    const double loss = e->be->ops->softmax_xent(e->be, rows, e->nclasses, e->dbuf[0], correct,
                                                 e->act[e->last - e->first - 1], labels ? labels : e->labels,
                                                 grad_scale / e->label_len);
    /* The logits' gradient enters the half-precision graph: the backward of autocast's
     * cast to f32 rounds it (both working buffers are free between forward and backward). */
    if (amp(e)) round_in_place(e, e->dbuf[0], (size_t)rows * e->nclasses, e->work[0]);
    return loss / e->label_len;
}

void mx_exec_backward(mx_exec *e, int n, const float *dout, float *din, mx_grad_ready_fn ready, void *user)
{
    assert((dout || e->loss) && "backward from the loss in a context without it");
    const float *g = dout ? dout : e->dbuf[0];
    if (amp(e)) {
        backward_amp(e, n, g, din, ready, user);
        return;
    }
    int next = 1; /* never dbuf[0] first: it may hold the loss's gradient that g reads */
    for (int k = e->last - e->first - 1; k >= 0; k--) {
        if (e->fused[k]) continue; /* done by layer k + 1 */
        const mx_layer *l = &e->ps->layers[e->first + k];
        const int j = grad_layer(e, k);
        float *d = j ? e->dbuf[next] : din;
        run_backward(e, k, n, d, g, j ? e->act[j - 1] : e->in_ptr, e->act[k]);
        g = d;
        next = 1 - next;
        if (ready && l->param_count) ready(user, l->param_first, l->param_count);
    }
}
