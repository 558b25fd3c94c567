/* Tied tensors across pipeline stages (model.h): where the stage running a language model's
 * head does not hold the token embedding it reads, its parameter set holds a replica
 * (engine/core/params.h), initialised as the owner's. After every step's backward the copies'
 * gradients are added, as Megatron-LM all-reduces the embedding's gradient between its first
 * and last stages, so that each stage's update (the same optimizer, the same state, the same
 * gradient) keeps every copy bit for bit the owner's. */
#include "model.h"
#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int owner_of(const model_stage *st, int k, int param)
{
    for (int r = 0; r < k; r++)
        if (param >= st[r].ps->param_lo && param < st[r].ps->param_hi) return r;
    return -1;
}

static model_tie *find_tie(model_tie *ties, int n, int param)
{
    for (int i = 0; i < n; i++)
        if (ties[i].param == param) return &ties[i];
    return NULL;
}

int mx_model_ties_plan(model_stage *st, int k, model_tie **ties, int *nties)
{
    *ties = NULL;
    *nties = 0;
    int cap = 0;
    for (int r = 0; r < k; r++) cap += st[r].ps->nreplicas;
    if (!cap) return MX_OK;
    model_tie *t = calloc((size_t)cap, sizeof *t);
    if (!t) return mx_error(MX_ENOMEM, "out of memory listing the tied tensors of %d stages", k);
    int n = 0;
    /* stages in order, so that each tie lists its replicas ascending */
    for (int r = 0; r < k; r++) {
        const mx_params *ps = st[r].ps;
        for (int j = 0; j < ps->nreplicas; j++) {
            const int p = ps->replicas[j];
            model_tie *x = find_tie(t, n, p);
            if (!x) {
                const int owner = owner_of(st, k, p);
                if (owner < 0) {
                    free(t);
                    return mx_error(MX_ERUNTIME, "stage %d holds a replica of tensor '%s', which no stage holds", r,
                                    ps->params[p].name);
                }
                /* ascending by tensor: every stage meets the ties in the same order */
                int at = n++;
                for (; at > 0 && t[at - 1].param > p; at--) t[at] = t[at - 1];
                x = &t[at];
                *x = (model_tie){.param = p, .count = ps->params[p].count, .owner = owner};
            }
            x->replica[x->nreplicas++] = r;
        }
    }
    *ties = t;
    *nties = n;
    /* each owner receives one replica's gradient at a time: a buffer for its largest tensor */
    for (int r = 0; r < k; r++) {
        size_t most = 0;
        for (int i = 0; i < n; i++)
            if (t[i].owner == r && t[i].count > most) most = t[i].count;
        if (most && !(st[r].tie_buf = st[r].be->ops->alloc(st[r].be, sizeof(float) * most)))
            return mx_error(MX_ENOMEM, "out of device memory for a tied tensor's gradient (%zu floats) on pipeline "
                            "stage %d", most, r);
    }
    return MX_OK;
}

void mx_model_ties_destroy(model_stage *st, int k, model_tie *ties)
{
    for (int r = 0; r < k; r++)
        if (st[r].be && st[r].tie_buf) {
            st[r].be->ops->free(st[r].be, st[r].tie_buf);
            st[r].tie_buf = NULL;
        }
    free(ties);
}

static void note_failure(model_stage *st, int rc)
{
    if (rc >= 0 || st->error) return;
    st->error = rc;
    snprintf(st->errmsg, sizeof st->errmsg, "%s", mx_last_error());
}

/* The owner gathers: it adds each replica's gradient to its own, in stage order, then sends
 * the sum back to each; a replica sends its gradient and takes the sum in its place. For the
 * usual pair (first and last stage) that is one all-reduce of two, as Megatron-LM's. After a
 * failure a stage still makes every call of its part, so that no partner is left waiting. */
void mx_model_stage_reduce_tied(model_stage *st, const model_step *sp)
{
    st->sent_tied = 0;
    const mx_params *ps = st->ps;
    for (int i = 0; i < sp->nties; i++) {
        const model_tie *t = &sp->ties[i];
        float *g = ps->g + ps->params[t->param].offset;
        const double bytes = sizeof(float) * (double)t->count;
        if (t->owner == st->r) {
            for (int j = 0; j < t->nreplicas; j++) {
                note_failure(st, mx_comm_recv(sp->comm, st->r, st->tie_buf, t->count, MX_F32, t->replica[j]));
                if (!st->error) st->be->ops->add(st->be, t->count, g, st->tie_buf);
            }
            if (!st->error && st->be->ops->sync(st->be) < 0) note_failure(st, MX_ERUNTIME);
            for (int j = 0; j < t->nreplicas; j++) {
                const int rc = mx_comm_send(sp->comm, st->r, g, t->count, MX_F32, t->replica[j]);
                note_failure(st, rc);
                if (rc >= 0) st->sent_tied += bytes;
            }
            continue;
        }
        int mine = 0;
        for (int j = 0; j < t->nreplicas; j++) mine |= t->replica[j] == st->r;
        if (!mine) continue;
        const int rc = mx_comm_send(sp->comm, st->r, g, t->count, MX_F32, t->owner);
        note_failure(st, rc);
        if (rc >= 0) st->sent_tied += bytes;
        note_failure(st, mx_comm_recv(sp->comm, st->r, g, t->count, MX_F32, t->owner));
    }
}

int mx_model_ties_compare(model_stage *st, const model_tie *ties, int nties, int *copies, double *diff)
{
    *copies = 0;
    *diff = 0;
    for (int i = 0; i < nties; i++) {
        const model_tie *t = &ties[i];
        float *a = malloc(sizeof(float) * t->count), *b = malloc(sizeof(float) * t->count);
        if (!a || !b) {
            free(a), free(b);
            return mx_error(MX_ENOMEM, "out of memory comparing copies of %zu floats", t->count);
        }
        const model_stage *o = &st[t->owner];
        o->be->ops->copy(o->be, a, o->ps->w + o->ps->params[t->param].offset, sizeof(float) * t->count, MX_COPY_D2H);
        for (int j = 0; j < t->nreplicas; j++) {
            const model_stage *q = &st[t->replica[j]];
            q->be->ops->copy(q->be, b, q->ps->w + q->ps->params[t->param].offset, sizeof(float) * t->count,
                             MX_COPY_D2H);
            for (size_t e = 0; e < t->count; e++) {
                /* NaN differs from everything, itself included */
                const double d = a[e] == b[e] ? 0 : isnan(a[e]) || isnan(b[e]) ? INFINITY : fabs((double)a[e] - b[e]);
                if (d > *diff) *diff = d;
            }
            ++*copies;
        }
        free(a);
        free(b);
    }
    return MX_OK;
}
