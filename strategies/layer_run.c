/* One device's part of a tensor-parallel plan (layer_plan.h): its shards of every layer,
 * each an engine layer set up over the shard's shape in a parameter set of its own (a
 * convolution with the device's output channels is exactly a shard of the whole one, a
 * dense layer over the input shard is a row-parallel one), and a small interpreter that
 * runs the plan's steps forward and backward, calling the communicator where the plan puts
 * a collective. Every device runs the same steps, so the collectives meet in one order.
 *
 * A gathered input read by one layer alone is not kept from forward to backward: it lives
 * in the shared buffers of backward's gradients (which forward leaves free), and the gather
 * runs again just before its reader's backward (as Megatron's sequence parallelism
 * re-gathers instead of storing). Kept, each would be the whole batch's activation on
 * every device, which is what makes a tensor-parallel device hold more than a
 * data-parallel one; the cost is one more all-gather per such layer and step, counted in
 * its bytes. */
#include "layer_plan.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

struct mx_tp_dev {
    const mx_tp_plan *p;
    int d, k, max_batch;
    mx_backend *be;
    mx_comm *comm;
    mx_params **ps;     /* [nsteps] LAYER steps: the shard layer and its tensors */
    tp_map **map;       /* [nsteps][ps->nparams] */
    float **mom;        /* [nsteps] the optimizer's state of ps's tensors (engine/core/optim.h) */
    int nstate;         /* its buffers per weight: 1 (SGD's momentum) or 2 (AdamW's moments) */
    long updates;       /* updates applied: AdamW's t is the next */
    void **state;       /* [nsteps] the layer's saved state */
    float **act, **grad;/* [ntensors] the device's part of each tensor and of its gradient */
    /* [nsteps] each step's all-gather / reduce-scatter staging (k blocks of one shard each)
     * and scratch (a gradient to be added rather than written); stage and scratch are the
     * running step's. All of these, and grad, point into the shared buffers of pool. */
    float **stg, **scr;
    float *stage, *scratch;
    float **pool;       /* [npool] the shared buffers (alloc_grad_buffers) */
    int npool;
    /* [nsteps] at a layer's backward, the GATHER step to run again first (its input was not
     * kept, and points into pool), -1 for none */
    int *regather_at;
    mx_tp_dev_stats stats;
};

static void *dev_alloc(mx_tp_dev *t, size_t bytes)
{
    return t->be->ops->alloc(t->be, bytes ? bytes : 1);
}

/* ---- setting up the shards */

/* The engine layer step i runs: its own set's, or the second layer of the set it shares (a
 * head tied to an embedding). */
static mx_layer *step_layer(const mx_tp_dev *t, int i)
{
    const int sh = t->p->steps[i].shares;
    return sh >= 0 ? &t->ps[sh]->layers[1] : &t->ps[i]->layers[0];
}

static int setup_step(mx_tp_dev *t, int i, uint64_t seed, mx_weight_init init, float *host)
{
    const mx_tp_plan *p = t->p;
    const tp_step *s = &p->steps[i];
    const mx_shape want = mx_tp_local_shape(p, s->out, t->d);
    mx_shape got;
    if (s->shares >= 0) { /* its layer and tensor are the embedding step's */
        got = step_layer(t, i)->out;
    } else {
        /* an embedding's set holds the head tied to it as its second layer */
        const mx_layer_spec spec[2] = {mx_tp_shard_spec(p, s, t->d),
                                       s->tied_by >= 0 ? p->steps[s->tied_by].spec : s->spec};
        const int nl = s->tied_by >= 0 ? 2 : 1;
        MX_TRY(mx_params_create(&t->ps[i], t->be, spec, nl, mx_tp_local_shape(p, s->in, t->d), 0, nl));
        got = t->ps[i]->layers[0].out;
    }
    const mx_params *ps = t->ps[i];
    if (got.c != want.c || got.h != want.h || got.w != want.w || (ps && ps->nparams != s->nparams))
        return mx_error(MX_EUNSUPPORTED, "layer strategy: the shard of layer %d (%s) gives %dx%dx%d, the plan "
                        "%dx%dx%d (internal)", s->layer, s->spec.kind, got.c, got.h, got.w, want.c, want.h, want.w);
    if (!ps) return MX_OK;
    t->map[i] = calloc(ps->nparams ? ps->nparams : 1, sizeof *t->map[i]);
    if (!t->map[i]) return mx_error(MX_ENOMEM, "out of memory setting up the layer strategy");
    for (int j = 0; j < ps->nparams; j++) {
        tp_map *m = &t->map[i][j];
        MX_TRY(mx_tp_shard_map(p, s, j, t->d, ps->params[j].count, m));
        if (!m->train) continue; /* stays zero, as allocated */
        /* drawn as the whole tensor is: the union of the shards is the one-device tensor */
        MX_TRY(mx_tp_shard_init(p, m, seed, init, host));
        t->be->ops->copy(t->be, ps->w + ps->params[j].offset, host, sizeof(float) * ps->params[j].count,
                         MX_COPY_H2D);
    }
    return MX_OK;
}

/* Floats of the staging buffer for gathering tensor x over n samples: k blocks, each one
 * shard's, 16-float aligned, so that mx_comm_shard of the whole buffer is exactly block m
 * for member m. */
static size_t stage_block(const mx_tp_dev *t, int x, int n)
{
    size_t most = 0;
    for (int m = 0; m < t->k; m++)
        if (mx_tp_local_size(t->p, x, m) > most) most = mx_tp_local_size(t->p, x, m);
    return (most * n + 15) / 16 * 16;
}

/* One gradient-side use of device memory, over the steps [lo, hi] of the plan: a tensor's
 * gradient is live from the backward of its last consumer (hi: it writes it, earlier
 * consumers add to it) down to its producer's (lo: it is summed there if partial and read;
 * -1 for the input, read after the last step); a step's staging and scratch only during that
 * step. Forward holds no gradient, so its staging may use any of them. */
typedef struct {
    int lo, hi;
    size_t n;    /* floats */
    float **ptr; /* set to its buffer */
} tp_use;

static int by_hi_desc(const void *a, const void *b)
{
    const tp_use *x = a, *y = b;
    return x->hi != y->hi ? (x->hi < y->hi) - (x->hi > y->hi) : (x->lo < y->lo) - (x->lo > y->lo);
}

/* Greedy interval colouring in backward order (MXNet's memory planner shares its buffers
 * the same way): uses are placed latest first, each into a buffer whose last placed use
 * begins (lo) after this one ends (hi); the uses placed before that one begin later still.
 * Of those buffers, the smallest that holds it, else the largest, grown; else a new one.
 * Uses live at the same step never share, so no step reads and writes one buffer through
 * two names; a chain of layers ends up with the one-device engine's two ping-pong buffers
 * (and a third for staging). size[b]: the floats of buffer b; returns how many. */
static int colour(tp_use *u, int nu, int *buf_of, size_t *size, int *free_from)
{
    int nb = 0;
    qsort(u, nu, sizeof *u, by_hi_desc);
    for (int j = 0; j < nu; j++) {
        int best = -1;
        for (int b = 0; b < nb; b++) {
            if (free_from[b] <= u[j].hi) continue; /* its last use overlaps this one */
            const int fits = size[b] >= u[j].n, best_fits = best >= 0 && size[best] >= u[j].n;
            if (best < 0 || (fits && (!best_fits || size[b] < size[best])) ||
                (!fits && !best_fits && size[b] > size[best]))
                best = b;
        }
        if (best < 0) best = nb++, size[best] = 0;
        if (u[j].n > size[best]) size[best] = u[j].n;
        free_from[best] = u[j].lo;
        buf_of[j] = best;
    }
    return nb;
}

/* The relu whose input gradient may be computed in place over its output's (relu's backward
 * reads the gradient and writes it element by element): its input has no other reader and
 * sums no partial gradients. -1 where none; the two gradients are then one use. */
static int in_place_of(const mx_tp_plan *p, int x)
{
    int reader = -1, readers = 0;
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].in == x || p->steps[i].in2 == x) readers++, reader = i;
    if (readers != 1) return -1;
    const tp_step *s = &p->steps[reader];
    const int y = s->out;
    if (s->op != TP_LAYER || strcmp(s->spec.kind, "relu") != 0 || s->acc || y == p->out || p->tensors[x].gpart ||
        p->tensors[y].gpart || !p->tensors[y].needs_grad)
        return -1;
    return y;
}

/* The gradients, staging and scratch of backward in shared buffers (colour). */
static int alloc_grad_buffers(mx_tp_dev *t)
{
    const mx_tp_plan *p = t->p;
    const int nb = t->max_batch, cap = p->ntensors + 3 * p->nsteps;
    tp_use *u = malloc(sizeof *u * cap);
    int *buf_of = malloc(sizeof(int) * cap), *free_from = malloc(sizeof(int) * cap), nu = 0;
    size_t *size = malloc(sizeof(size_t) * cap);
    int *into = malloc(sizeof(int) * p->ntensors); /* [x] the relu output whose gradient x's is, or -1 */
    int rc = u && buf_of && free_from && size && into ? MX_OK : MX_ENOMEM;
    for (int x = 0; rc == MX_OK && x < p->ntensors; x++)
        into[x] = p->tensors[x].needs_grad && x != p->out ? in_place_of(p, x) : -1;
    for (int x = 0; rc == MX_OK && x < p->ntensors; x++) {
        if (!p->tensors[x].needs_grad || x == p->out) continue; /* the output's gradient is the caller's */
        if (into[x] >= 0) continue; /* its relu's output's use covers it */
        int hi = p->tensors[x].producer;
        for (int i = hi + 1; i < p->nsteps; i++)
            if (p->steps[i].in == x || p->steps[i].in2 == x) hi = i;
        int lo = p->tensors[x].producer; /* from the input's producer where a relu runs in place */
        for (int w = 0; w < p->ntensors; w++)
            if (into[w] == x) lo = p->tensors[w].producer;
        u[nu++] = (tp_use){lo, hi, nb * mx_tp_local_size(p, x, t->d), &t->grad[x]};
    }
    for (int i = 0; rc == MX_OK && i < p->nsteps; i++) {
        const tp_step *s = &p->steps[i];
        /* a gathered input not kept: live at its reader's backward, which gathers it again
         * (in forward no gradient is live, and no other gather runs before its reader) */
        if (t->regather_at[i] >= 0)
            u[nu++] = (tp_use){i, i, nb * mx_tp_local_size(p, s->in, t->d), &t->act[s->in]};
        /* a gather run again at its reader's backward (j) stages there too */
        int j = i;
        for (int r = i + 1; s->op == TP_GATHER && r < p->nsteps; r++)
            if (t->regather_at[r] == i) j = r;
        if (s->op == TP_GATHER) u[nu++] = (tp_use){i, j, t->k * stage_block(t, s->in, nb), &t->stg[i]};
        /* where backward puts the input's gradient before adding it (mx_tp_backward) */
        if (s->acc && p->tensors[s->in].needs_grad && (s->op == TP_LAYER || s->op == TP_GATHER))
            u[nu++] = (tp_use){i, i, nb * mx_tp_local_size(p, s->in, t->d), &t->scr[i]};
    }
    if (rc == MX_OK) t->npool = colour(u, nu, buf_of, size, free_from);
    if (rc == MX_OK && !(t->pool = calloc(t->npool ? t->npool : 1, sizeof *t->pool))) rc = MX_ENOMEM;
    for (int b = 0; rc == MX_OK && b < t->npool; b++) {
        if (!(t->pool[b] = dev_alloc(t, sizeof(float) * size[b]))) rc = MX_ENOMEM;
        t->stats.mem_grads += sizeof(float) * (double)size[b];
    }
    for (int j = 0; rc == MX_OK && j < nu; j++) {
        *u[j].ptr = t->pool[buf_of[j]];
        t->stats.grad_uses++;
    }
    for (int x = 0; rc == MX_OK && x < p->ntensors; x++)
        if (into[x] >= 0) t->grad[x] = t->grad[into[x]];
    t->stats.grad_buffers = t->npool;
    free(into);
    free(u);
    free(buf_of);
    free(free_from);
    free(size);
    return rc;
}

/* The gathers whose output has one reader, a layer, with no other gather between the two
 * (so that the shared buffer still holds it when the layer reads it in forward); not the
 * model's output, which the loss reads. Sets regather_at[reader] = the gather. */
static void plan_regather(mx_tp_dev *t)
{
    const mx_tp_plan *p = t->p;
    for (int i = 0; i < p->nsteps; i++) t->regather_at[i] = -1;
    for (int g = 0; g < p->nsteps; g++) {
        const int x = p->steps[g].out;
        if (p->steps[g].op != TP_GATHER || x == p->out) continue;
        int reader = -1, readers = 0, gathers = 0;
        for (int i = g + 1; i < p->nsteps; i++) {
            if (p->steps[i].in == x || p->steps[i].in2 == x) readers++, reader = reader < 0 ? i : reader;
            if (reader < 0 && p->steps[i].op == TP_GATHER) gathers++;
        }
        if (readers == 1 && gathers == 0 && p->steps[reader].op == TP_LAYER && p->steps[reader].in == x)
            t->regather_at[reader] = g;
    }
}

/* 1 when tensor x lives in the shared regather buffer. */
static int regathered(const mx_tp_dev *t, int x)
{
    const int g = t->p->tensors[x].producer;
    if (g < 0 || t->p->steps[g].op != TP_GATHER) return 0;
    for (int i = g + 1; i < t->p->nsteps; i++)
        if (t->regather_at[i] == g) return 1;
    return 0;
}

static int alloc_buffers(mx_tp_dev *t)
{
    const mx_tp_plan *p = t->p;
    plan_regather(t);
    for (int x = 0; x < p->ntensors; x++) /* a regathered one: in the shared buffers */
        if (!regathered(t, x) &&
            !(t->act[x] = dev_alloc(t, sizeof(float) * t->max_batch * mx_tp_local_size(p, x, t->d))))
            return MX_ENOMEM;
    for (int i = 0; i < p->nsteps; i++) {
        const size_t sb = p->steps[i].op == TP_LAYER ? mx_layer_state_bytes(step_layer(t, i), t->max_batch) : 0;
        if (sb && !(t->state[i] = dev_alloc(t, sb))) return MX_ENOMEM;
    }
    return alloc_grad_buffers(t);
}

int mx_tp_dev_create(mx_tp_dev **out, const mx_tp_plan *p, int d, mx_backend *be, mx_comm *comm, int max_batch,
                     uint64_t seed, mx_weight_init init, const mx_optim *opt)
{
    *out = NULL;
    MX_TRY(mx_optim_check_backend(opt, be));
    mx_tp_dev *t = calloc(1, sizeof *t);
    if (!t) return mx_error(MX_ENOMEM, "out of memory setting up the layer strategy");
    *t = (mx_tp_dev){.p = p, .d = d, .k = p->k, .max_batch = max_batch, .be = be, .comm = comm,
                     .nstate = mx_optim_nstate(opt)};
    t->ps = calloc(p->nsteps, sizeof *t->ps);
    t->map = calloc(p->nsteps, sizeof *t->map);
    t->mom = calloc(p->nsteps, sizeof *t->mom);
    t->state = calloc(p->nsteps, sizeof *t->state);
    t->act = calloc(p->ntensors, sizeof *t->act);
    t->grad = calloc(p->ntensors, sizeof *t->grad);
    t->stg = calloc(p->nsteps, sizeof *t->stg);
    t->scr = calloc(p->nsteps, sizeof *t->scr);
    t->regather_at = calloc(p->nsteps, sizeof *t->regather_at);
    size_t most = 1; /* the largest whole tensor: init's host buffer holds any shard of it */
    for (int w = 0; w < p->nwhole; w++)
        if (p->whole[w].count > most) most = p->whole[w].count;
    float *host = malloc(sizeof(float) * most);
    int rc = t->ps && t->map && t->mom && t->state && t->act && t->grad && t->stg && t->scr && t->regather_at && host
                 ? MX_OK : mx_error(MX_ENOMEM, "out of memory setting up the layer strategy");
    /* memory as the allocator counts it: parameters with gradients (and batch-norm
     * statistics, model state), then the optimizer's state */
    const size_t live0 = mx_backend_mem_get(be).live;
    for (int i = 0; rc == MX_OK && i < p->nsteps; i++)
        if (p->steps[i].op == TP_LAYER) rc = setup_step(t, i, seed, init, host);
    const size_t live1 = mx_backend_mem_get(be).live;
    for (int i = 0; rc == MX_OK && i < p->nsteps; i++)
        if (t->ps[i] && t->ps[i]->nparams &&
            !(t->mom[i] = dev_alloc(t, sizeof(float) * (size_t)t->nstate * t->ps[i]->nweights)))
            rc = mx_error(MX_ENOMEM, "out of device memory for the optimizer's state");
    t->stats.mem_params = (double)(live1 - live0);
    t->stats.mem_optim = (double)(mx_backend_mem_get(be).live - live1);
    if (rc == MX_OK && alloc_buffers(t) < 0)
        rc = mx_error(MX_ENOMEM, "out of device memory for the layer strategy's activations (batch %d)", max_batch);
    free(host);
    if (rc < 0) {
        mx_tp_dev_destroy(t);
        return rc;
    }
    *out = t;
    return MX_OK;
}

void mx_tp_dev_destroy(mx_tp_dev *t)
{
    if (!t) return;
    mx_backend *be = t->be;
#define FREE_DEV(ptr) do { if (ptr) be->ops->free(be, ptr); } while (0)
    for (int i = 0; i < t->p->nsteps; i++) {
        if (t->ps) mx_params_destroy(t->ps[i]);
        if (t->map) free(t->map[i]);
        if (t->mom) FREE_DEV(t->mom[i]);
        if (t->state) FREE_DEV(t->state[i]);
    }
    for (int x = 0; t->act && x < t->p->ntensors; x++)
        if (!t->regather_at || !regathered(t, x)) FREE_DEV(t->act[x]);
    for (int b = 0; t->pool && b < t->npool; b++) FREE_DEV(t->pool[b]);
#undef FREE_DEV
    free(t->ps);
    free(t->map);
    free(t->mom);
    free(t->state);
    free(t->act);
    free(t->grad);
    free(t->stg);
    free(t->scr);
    free(t->regather_at);
    free(t->pool);
    free(t);
}

float *mx_tp_input(mx_tp_dev *t) { return t->act[0]; }
const mx_tp_dev_stats *mx_tp_stats(const mx_tp_dev *t) { return &t->stats; }
void mx_tp_stats_reset(mx_tp_dev *t) { memset(t->stats.layer_bytes, 0, sizeof t->stats.layer_bytes); }

/* ---- the collectives */

static void count_bytes(mx_tp_dev *t, int layer, size_t count)
{
    if (layer >= 0 && layer < MX_MAX_LAYERS) t->stats.layer_bytes[layer] += sizeof(float) * (double)count;
}

/* Moves between a whole NCHW tensor [n][C][hw] and the staging buffer, where member m's
 * block holds its channels [n][c_m][hw]: a shard is a channel range of every sample. */
static void stage_permute(mx_tp_dev *t, int x, int n, float *whole, int to_stage)
{
    const tp_tensor *s = &t->p->tensors[x];
    const size_t hw = mx_shape_size(s->shape) / s->shape.c, C = s->shape.c, S = stage_block(t, x, n);
    for (int m = 0; m < t->k; m++) {
        const size_t cm = s->bound[m + 1] - s->bound[m];
        for (int i = 0; i < n; i++) {
            float *a = whole + (i * C + s->bound[m]) * hw, *b = t->stage + m * S + i * cm * hw;
            t->be->ops->copy(t->be, to_stage ? b : a, to_stage ? a : b, sizeof(float) * cm * hw, MX_COPY_D2D);
        }
    }
}

static int gather_forward(mx_tp_dev *t, const tp_step *s, int n)
{
    const size_t S = stage_block(t, s->in, n), mine = n * mx_tp_local_size(t->p, s->in, t->d);
    t->be->ops->copy(t->be, t->stage + t->d * S, t->act[s->in], sizeof(float) * mine, MX_COPY_D2D);
    count_bytes(t, s->layer, t->k * S);
    MX_TRY(mx_comm_allgather(t->comm, t->d, t->stage, t->k * S, MX_F32));
    stage_permute(t, s->in, n, t->act[s->out], 0);
    return MX_OK;
}

/* dst (+)= src over count floats. */
static void put_grad(mx_tp_dev *t, float *dst, const float *src, size_t count, int acc)
{
    if (acc)
        t->be->ops->add(t->be, count, dst, src);
    else if (dst != src)
        t->be->ops->copy(t->be, dst, src, sizeof(float) * count, MX_COPY_D2D);
}

/* The shard's gradient from the whole one: summed over the devices (reduce-scatter) where
 * column-parallel layers gave partial sums, else the device's own channels of it. */
static int gather_backward(mx_tp_dev *t, const tp_step *s, int n)
{
    const tp_tensor *x = &t->p->tensors[s->in], *g = &t->p->tensors[s->out];
    const size_t S = stage_block(t, s->in, n), mine = n * mx_tp_local_size(t->p, s->in, t->d);
    const float *src;
    if (g->gpart) {
        stage_permute(t, s->in, n, t->grad[s->out], 1);
        count_bytes(t, s->layer, t->k * S);
        /* in place: the threads comm sums each shard through a buffer of its own */
        MX_TRY(mx_comm_reduce_scatter(t->comm, t->d, t->stage, t->stage, t->k * S, MX_F32));
        src = t->stage + t->d * S;
    } else {
        const size_t hw = mx_shape_size(x->shape) / x->shape.c, C = x->shape.c, c = x->bound[t->d + 1] - x->bound[t->d];
        float *tmp = s->acc ? t->scratch : t->grad[s->in];
        for (int i = 0; i < n; i++)
            t->be->ops->copy(t->be, tmp + i * c * hw, t->grad[s->out] + (i * C + x->bound[t->d]) * hw,
                             sizeof(float) * c * hw, MX_COPY_D2D);
        src = tmp;
    }
    put_grad(t, t->grad[s->in], src, mine, s->acc);
    return MX_OK;
}

/* A whole tensor read by column-parallel layers holds partial gradients: sum them before
 * its producer's backward reads them (Megatron's f: identity forward, all-reduce backward). */
static int sum_partial_grad(mx_tp_dev *t, int x, int n)
{
    const tp_tensor *s = &t->p->tensors[x];
    if (!s->gpart || !s->needs_grad) return MX_OK;
    const size_t count = n * mx_shape_size(s->shape);
    count_bytes(t, s->gpart_layer, count);
    return mx_comm_allreduce(t->comm, t->d, t->grad[x], t->grad[x], count, MX_F32);
}

/* ---- the interpreter */

int mx_tp_forward(mx_tp_dev *t, int n, int training, const float **out)
{
    const mx_tp_plan *p = t->p;
    mx_backend *be = t->be;
    for (int i = 0; i < p->nsteps; i++) {
        const tp_step *s = &p->steps[i];
        const size_t count = n * mx_tp_local_size(p, s->out, t->d);
        t->stage = t->stg[i]; /* a gradient buffer: none is live in forward */
        switch (s->op) {
        case TP_LAYER: {
            mx_layer *l = step_layer(t, i);
            l->ops->forward(l, be, t->state[i], n, t->act[s->out], t->act[s->in], training);
            break;
        }
        case TP_GATHER:
            MX_TRY(gather_forward(t, s, n));
            break;
        case TP_ALLREDUCE: /* the row-parallel layer's partial outputs summed */
            count_bytes(t, s->layer, count);
            MX_TRY(mx_comm_allreduce(t->comm, t->d, t->act[s->in], t->act[s->out], count, MX_F32));
            break;
        case TP_ADD:
            be->ops->copy(be, t->act[s->out], t->act[s->in], sizeof(float) * count, MX_COPY_D2D);
            be->ops->add(be, count, t->act[s->out], t->act[s->in2]);
            break;
        }
    }
    *out = t->act[p->out];
    return MX_OK;
}

int mx_tp_backward(mx_tp_dev *t, int n, const float *dout, float *din)
{
    const mx_tp_plan *p = t->p;
    mx_backend *be = t->be;
    t->grad[p->out] = (float *)dout; /* read only: nothing downstream of the output */
    int rc = MX_OK;
    for (int i = p->nsteps - 1; rc == MX_OK && i >= 0; i--) {
        const tp_step *s = &p->steps[i];
        if (!p->tensors[s->out].needs_grad) continue;
        const int need_in = p->tensors[s->in].needs_grad;
        const size_t count = n * mx_tp_local_size(p, s->out, t->d);
        t->stage = t->stg[i], t->scratch = t->scr[i]; /* buffers no gradient live here uses */
        if (s->op != TP_GATHER) rc = sum_partial_grad(t, s->out, n);
        if (rc < 0) break;
        switch (s->op) {
        case TP_LAYER: {
            mx_layer *l = step_layer(t, i);
            if (t->regather_at[i] >= 0) { /* its input, gathered again */
                t->stage = t->stg[t->regather_at[i]];
                rc = gather_forward(t, &p->steps[t->regather_at[i]], n);
                if (rc < 0) break;
            }
            float *dx = need_in ? (s->acc ? t->scratch : t->grad[s->in]) : NULL;
            l->ops->backward(l, be, t->state[i], n, dx, t->grad[s->out], t->act[s->in], t->act[s->out]);
            if (dx && s->acc) put_grad(t, t->grad[s->in], dx, n * mx_tp_local_size(p, s->in, t->d), 1);
            break;
        }
        case TP_GATHER:
            if (need_in) rc = gather_backward(t, s, n);
            break;
        case TP_ALLREDUCE: /* d(sum)/d(part) = 1: the partial's gradient is the sum's */
            if (need_in) put_grad(t, t->grad[s->in], t->grad[s->out], count, s->acc);
            break;
        case TP_ADD:
            if (need_in) put_grad(t, t->grad[s->in], t->grad[s->out], count, s->acc);
            if (p->tensors[s->in2].needs_grad) put_grad(t, t->grad[s->in2], t->grad[s->out], count, s->acc2);
            break;
        }
    }
    t->grad[p->out] = NULL;
    if (rc == MX_OK && p->tensors[0].needs_grad) {
        rc = sum_partial_grad(t, 0, n);
        if (din && rc == MX_OK)
            be->ops->copy(be, din, t->grad[0], sizeof(float) * n * mx_tp_local_size(p, 0, t->d), MX_COPY_D2D);
    }
    return rc;
}

void mx_tp_zero_grad(mx_tp_dev *t)
{
    for (int i = 0; i < t->p->nsteps; i++)
        if (t->ps[i] && t->ps[i]->nparams) mx_params_zero_grad(t->ps[i]);
}

/* The whole model's gradient norm, squared: each device adds the squares of the tensors it
 * owns (its shard of a split tensor; a replicated tensor, equal on every device, on device 0
 * only, as get_params takes it; the row-parallel bias on device 0, its only trained copy) into
 * parts[d]; after a barrier every device adds the k parts in device order in double, so all
 * get the same bits and no bytes cross the comm (the devices are threads of one process); a
 * second barrier keeps parts until every device has read them. */
static int global_sumsq(mx_tp_dev *t, double *parts, double *out)
{
    double mine = 0;
    for (int i = 0; i < t->p->nsteps; i++) {
        const mx_params *ps = t->ps[i];
        for (int j = 0; ps && j < ps->nparams; j++)
            if (t->map[i][j].owner && t->map[i][j].train) mine += mx_optim_sumsq(t->be, ps->params, j, 1, ps->g);
    }
    parts[t->d] = mine;
    MX_TRY(mx_comm_barrier(t->comm, t->d));
    *out = 0;
    for (int d = 0; d < t->k; d++) *out += parts[d];
    return mx_comm_barrier(t->comm, t->d);
}

int mx_tp_update(mx_tp_dev *t, const mx_optim *opt, double *sumsq)
{
    mx_optim o = *opt;
    o.step = t->updates + 1;
    float rescale = 1.0f;
    if (o.clip_norm > 0) {
        double total;
        MX_TRY(global_sumsq(t, sumsq, &total));
        rescale = mx_optim_clip_factor(&o, total);
    }
    for (int i = 0; i < t->p->nsteps; i++) {
        mx_params *ps = t->ps[i];
        if (!ps) continue;
        const mx_optim_state st = mx_optim_state_of(&o, t->mom[i], ps->nweights);
        for (int j = 0; j < ps->nparams; j++)
            if (t->map[i][j].train) mx_optim_update(t->be, &o, ps->params, j, 1, ps->w, st, ps->g, rescale);
    }
    t->updates++;
    return MX_OK;
}

/* Walks the tensors of the device (owners only, or replicas only), each copied to the host
 * as shard, with its map and whole tensor: put it there, or compare it. */
static int each_shard(mx_tp_dev *t, float *host, int grads, int replicas)
{
    const mx_tp_plan *p = t->p;
    for (int i = 0; i < p->nsteps; i++) {
        const mx_params *ps = t->ps[i];
        for (int j = 0; ps && j < ps->nparams; j++) {
            const tp_map *m = &t->map[i][j];
            if (replicas ? !m->replica : !m->owner) continue;
            float *shard = malloc(sizeof(float) * (ps->params[j].count ? ps->params[j].count : 1));
            if (!shard) return mx_error(MX_ENOMEM, "out of memory reading the layer strategy's parameters");
            t->be->ops->copy(t->be, shard, (grads ? ps->g : ps->w) + ps->params[j].offset,
                             sizeof(float) * ps->params[j].count, MX_COPY_D2H);
            float *whole = host + p->offset[m->whole];
            const int same = !replicas || mx_tp_shard_same(m, shard, whole);
            if (!replicas) mx_tp_shard_put(m, shard, whole);
            free(shard);
            if (!same)
                return mx_error(MX_ERUNTIME, "layer strategy: device %d's copy of the replicated tensor '%s' differs "
                                "from device 0's", t->d, p->whole[m->whole].name);
        }
    }
    return MX_OK;
}

int mx_tp_get_params(mx_tp_dev *t, float *host, int grads) { return each_shard(t, host, grads, 0); }
int mx_tp_check_replicas(mx_tp_dev *t, const float *host) { return each_shard(t, (float *)host, 0, 1); }
