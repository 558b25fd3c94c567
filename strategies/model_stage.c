/* One pipeline stage of the model strategy (model.h): its parameter set, optimizer state and
 * execution contexts, and the run of its op list for one step (pipeline_schedule.h). A stage
 * is one device with its own thread; it meets its neighbours only through the communicator's
 * send and recv, so the same code serves threads on CPU workers and, later, GPUs over NCCL. */
#include "model.h"
#include "base/status.h"
#include "base/timer.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int out_of_memory(const model_stage *st, const char *what)
{
    return mx_error(MX_ENOMEM, "out of device memory for the %s of pipeline stage %d (layers [%d, %d))", what, st->r,
                    st->first, st->last);
}

int mx_model_stage_create(model_stage *st, const mx_strategy_config *cfg, int r, int k, int first, int last,
                          int micro_cap, int m, mx_pp_schedule sched, int id)
{
    memset(st, 0, sizeof *st);
    st->r = r, st->k = k, st->first = first, st->last = last, st->micro_cap = micro_cap;
    st->slots = mx_pp_slots(sched, k, r, m);
    if (!(st->ops = malloc(sizeof *st->ops * MX_PP_MAX_OPS(m))) || !(st->ctx = calloc(st->slots, sizeof *st->ctx)) ||
        !(st->inbuf = calloc(st->slots, sizeof *st->inbuf)) || !(st->out = calloc(st->slots, sizeof *st->out)))
        return mx_error(MX_ENOMEM, "out of memory for pipeline stage %d's schedule", r);
    st->nops = mx_pp_stage_ops(sched, k, r, m, st->ops);
    st->ops_m = m, st->sched = sched;
    MX_TRY(mx_backend_create(&st->be, cfg->backend ? cfg->backend : "cpu", id, cfg->threads_per_device));
    /* What the allocator counts while the set is built is the stage's parameters, gradients
     * and batch-norm statistics; the momentum comes next. */
    const size_t before = mx_backend_mem_get(st->be).live;
    MX_TRY(mx_params_create(&st->ps, st->be, cfg->specs, cfg->nspecs, cfg->in, first, last));
    MX_TRY(mx_params_init(st->ps, cfg->seed, cfg->init, mx_init_sigma(cfg)));
    st->mem_params = (double)(mx_backend_mem_get(st->be).live - before);
    MX_TRY(mx_optim_check_backend(&cfg->opt, st->be));
    const size_t nw = (size_t)mx_optim_nstate(&cfg->opt) * (st->ps->nweights ? st->ps->nweights : 1);
    if (!(st->mom = st->be->ops->alloc(st->be, sizeof(float) * nw))) return out_of_memory(st, "optimizer state");
    st->mem_optim = sizeof(float) * (double)nw;
    const int with_loss = last == cfg->nspecs;
    for (int s = 0; s < st->slots; s++) MX_TRY(mx_exec_create(&st->ctx[s], st->ps, first, last, micro_cap, with_loss));
    st->in_size = mx_shape_size(st->ctx[0]->in);
    st->out_size = mx_shape_size(st->ctx[0]->out);
    /* stage 0 reads its contexts' own batch; the others receive each micro-batch's input into
     * its slot, where it stays until that micro-batch's backward reads it again */
    for (int s = 0; r > 0 && s < st->slots; s++)
        if (!(st->inbuf[s] = st->be->ops->alloc(st->be, sizeof(float) * micro_cap * st->in_size)))
            return out_of_memory(st, "received activations");
    if (r > 0 && !(st->gin = st->be->ops->alloc(st->be, sizeof(float) * micro_cap * st->in_size)))
        return out_of_memory(st, "input gradients");
    if (r < k - 1 && !(st->gout = st->be->ops->alloc(st->be, sizeof(float) * micro_cap * st->out_size)))
        return out_of_memory(st, "output gradients");
    mx_backend_mem_reset_peak(st->be);
    return MX_OK;
}

void mx_model_stage_destroy(model_stage *st)
{
    for (int s = 0; st->be && st->ctx && s < st->slots; s++) {
        mx_exec_destroy(st->ctx[s]);
        if (st->inbuf[s]) st->be->ops->free(st->be, st->inbuf[s]);
    }
    free(st->ctx);
    free(st->inbuf);
    free(st->out);
    free(st->ops);
    if (!st->be) {
        memset(st, 0, sizeof *st);
        return;
    }
    if (st->gin) st->be->ops->free(st->be, st->gin);
    if (st->gout) st->be->ops->free(st->be, st->gout);
    if (st->mom) st->be->ops->free(st->be, st->mom);
    mx_params_destroy(st->ps);
    mx_backend_destroy(st->be);
    memset(st, 0, sizeof *st);
}

/* The first failure of the stage, with its message (mx_last_error is per thread). */
static void fail(model_stage *st, int rc)
{
    if (st->error) return;
    st->error = rc;
    snprintf(st->errmsg, sizeof st->errmsg, "%s", mx_last_error());
}

/* Compute time counts as busy once the backend has finished it (a no-op wait on CPU). */
static void busy_since(model_stage *st, double t0)
{
    const int rc = st->be->ops->sync(st->be);
    if (rc < 0) fail(st, rc);
    st->busy += mx_now() - t0;
}

static int comm_failed(model_stage *st, int rc)
{
    if (rc < 0) fail(st, rc);
    return rc < 0;
}

/* The clipping factor of the whole model's gradient (1 without clipping): each stage's sum of
 * squares over its own tensors (every tensor is on exactly one stage), added over the stages.
 * The stages are threads of one process: each writes its sum into the step's shared array and,
 * after a barrier, every stage adds the k sums in stage order in double, so all take the same
 * factor (and no bytes cross the comm); a second barrier keeps the array until all have read
 * it. A failed stage still takes part (with NaN), so that the others do not wait for it. */
static float clip_factor(model_stage *st, const model_step *sp)
{
    if (!(sp->opt.clip_norm > 0)) return 1.0f;
    const mx_params *ps = st->ps;
    sp->sumsq[st->r] =
        st->error ? NAN : mx_optim_sumsq(st->be, ps->params, ps->param_lo, ps->param_hi - ps->param_lo, ps->g);
    if (comm_failed(st, mx_comm_barrier(sp->comm, st->r))) return NAN;
    double sum = 0;
    for (int r = 0; r < st->k; r++) sum += sp->sumsq[r];
    if (comm_failed(st, mx_comm_barrier(sp->comm, st->r))) return NAN;
    return mx_optim_clip_factor(&sp->opt, sum);
}

/* The op list of one step on micro-batches of sizes count[] starting at sample off[] of the
 * host batch x, y; the loss of every micro-batch is scaled by grad_scale (1/batch), so the
 * accumulated gradient is the batch mean. After a failure (st->error) the stage skips its
 * compute but still makes every send and recv of its list, so that no neighbour is left
 * waiting for a partner; the step then fails. */
void mx_model_stage_run(model_stage *st, const model_step *sp)
{
    const int first_stage = st->r == 0, last_stage = st->r == st->k - 1;
    const size_t per = mx_shape_size(st->ps->in);
    st->busy = 0, st->loss = 0, st->correct = 0, st->held = 0, st->error = 0, st->sent_act = st->sent_grad = 0;
    /* a batch of fewer samples than micro-batches (an epoch's last) runs as fewer: their op
     * list holds no more micro-batches at once than the slots made for m (gpipe: m; 1f1b:
     * k-r, consecutive ones, so i % slots still tells them apart) */
    if (sp->m != st->ops_m) st->nops = mx_pp_stage_ops(st->sched, st->k, st->r, st->ops_m = sp->m, st->ops);
    mx_params_zero_grad(st->ps);
    for (int o = 0; o < st->nops; o++) {
        const mx_pp_op op = st->ops[o];
        const int i = op.micro, slot = i % st->slots, n = sp->count[i];
        mx_exec *e = st->ctx[slot];
        double t0 = mx_now();
        switch (op.kind) {
        case MX_PP_RECV_ACT:
            comm_failed(st, mx_comm_recv(sp->comm, st->r, st->inbuf[slot], (size_t)n * st->in_size, MX_F32, st->r - 1));
            break;
        case MX_PP_FORWARD:
            /* after a failure: what is sent on is the slot's last buffer, whatever it holds */
            st->out[slot] = e->act[e->last - e->first - 1];
            if (st->error) break;
            if (first_stage) mx_exec_set_batch(e, sp->x + (size_t)sp->off[i] * per, NULL, n);
            if (last_stage) mx_exec_set_batch(e, NULL, sp->y + (size_t)sp->off[i] * e->label_len, n);
            st->out[slot] = mx_exec_forward(e, first_stage ? NULL : st->inbuf[slot], n, 1);
            if (last_stage) {
                int hits = 0;
                st->loss += mx_exec_loss(e, NULL, n, sp->grad_scale, &hits);
                st->correct += hits;
            }
            busy_since(st, t0);
            if (++st->held > st->held_max) st->held_max = st->held;
            st->t_fwd_end = mx_now();
            break;
        case MX_PP_SEND_ACT:
            if (!comm_failed(st,
                             mx_comm_send(sp->comm, st->r, st->out[slot], (size_t)n * st->out_size, MX_F32, st->r + 1)))
                st->sent_act += sizeof(float) * (double)n * st->out_size;
            break;
        case MX_PP_RECV_GRAD:
            comm_failed(st, mx_comm_recv(sp->comm, st->r, st->gout, (size_t)n * st->out_size, MX_F32, st->r + 1));
            break;
        case MX_PP_BACKWARD:
            if (st->error) break;
            mx_exec_backward(e, n, last_stage ? NULL : st->gout, first_stage ? NULL : st->gin, NULL, NULL);
            busy_since(st, t0);
            st->held--;
            st->t_bwd_end = mx_now();
            break;
        case MX_PP_SEND_GRAD:
            if (!comm_failed(st, mx_comm_send(sp->comm, st->r, st->gin, (size_t)n * st->in_size, MX_F32, st->r - 1)))
                st->sent_grad += sizeof(float) * (double)n * st->in_size;
            break;
        }
    }
    /* the copies of a tied tensor on several stages take the sum of their gradients, before
     * the norm is taken (the owner's copy counts once) and the update */
    mx_model_stage_reduce_tied(st, sp);
    /* each stage updates its own parameters once per batch, as soon as its last backward is
     * done (stage 0's is the pipeline's last) */
    mx_optim o = sp->opt;
    o.step = st->updates + 1;
    const float rescale = clip_factor(st, sp);
    if (!st->error) {
        const mx_params *ps = st->ps;
        mx_optim_update(st->be, &o, ps->params, ps->param_lo, ps->param_hi - ps->param_lo, ps->w,
                        mx_optim_state_of(&o, st->mom, ps->nweights), ps->g, rescale);
        /* a replica as its owner: the same gradient, rescale and state, so the same bits */
        for (int j = 0; j < ps->nreplicas; j++)
            mx_optim_update(st->be, &o, ps->params, ps->replicas[j], 1, ps->w,
                            mx_optim_state_of(&o, st->mom, ps->nweights), ps->g, rescale);
        if (st->be->ops->sync(st->be) < 0) st->error = MX_ERUNTIME;
        st->updates++;
    }
    st->t_end = mx_now();
}
