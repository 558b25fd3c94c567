/* The optimizer (SGD with momentum and weight decay, or AdamW) over slices of a parameter
 * table, so that the same update serves one device, a kvstore updating per key, a parameter
 * server updating its part, or a device updating its shard; and clipping by the global norm. */
#ifndef MX_OPTIM_H
#define MX_OPTIM_H

#include "base/config.h"
#include "net.h"

/* What an update applies: the kind and its settings, the lr of the step, and which update
 * this is. Weight decay applies to tensors marked decay (weights), not to biases or norm
 * scales, under both kinds: SGD adds wd w to the gradient (MXNet's form), AdamW decays w
 * by lr wd apart from the adaptive step (Loshchilov and Hutter; PyTorch's AdamW). */
typedef struct {
    mx_optim_kind kind;
    float lr, wd;
    float momentum;           /* SGD */
    float beta1, beta2, eps;  /* AdamW: the moments' decays and the denominator's term */
    float clip_norm;          /* > 0: the strategy clips the summed gradient to this global L2 norm */
    long step;                /* t, the update applied, from 1: AdamW's bias corrections (1 - beta^t) */
} mx_optim;

/* An optimizer's state for a range of weights, laid out as the weights: m is SGD's momentum or
 * AdamW's first moment, v AdamW's second moment (NULL under SGD). */
typedef struct {
    float *m, *v;
} mx_optim_state;

/* Buffers of state per weight: 1 (SGD), 2 (AdamW). Whoever kept a momentum keeps this many
 * floats per weight, one allocation of mx_optim_nstate(o) x n floats. */
int mx_optim_nstate(const mx_optim *o);
/* The state in such an allocation buf for n weights: m at buf, v after the n of m (AdamW). */
mx_optim_state mx_optim_state_of(const mx_optim *o, float *buf, size_t n);
/* The state of the weights from element off on. */
static inline mx_optim_state mx_optim_state_at(mx_optim_state s, size_t off)
{
    return (mx_optim_state){s.m + off, s.v ? s.v + off : NULL};
}

/* MX_OK, or MX_EUNSUPPORTED naming the backend and the kernel it lacks ("optimizer adamw:
 * backend cuda has no adamw_update kernel"), for a device that would run o's update. */
int mx_optim_check_backend(const mx_optim *o, const mx_backend *be);

/* Updates params [first, first+count) of the table whose buffers are w, st and g (each laid
 * out by the params' offsets, on backend be); the gradient is multiplied by rescale first
 * (the clipping factor; 1 without). */
void mx_optim_update(mx_backend *be, const mx_optim *o, const mx_param *params, int first, int count, float *w,
                     mx_optim_state st, const float *g, float rescale);
/* Updates elements [lo, hi) of one tensor p; w, st and g point at the tensor's start (a
 * kvstore or a parameter server updating a shard of a key). */
void mx_optim_update_slice(mx_backend *be, const mx_optim *o, const mx_param *p, size_t lo, size_t hi, float *w,
                           mx_optim_state st, const float *g, float rescale);
/* AMP: mx_optim_update on the f32 master weights, and the compute copy refreshed from them as
 * mx_net_amp_refresh does (half: their values of type t, w: its f32 expansion), one pass per
 * tensor. */
void mx_optim_update_amp(mx_backend *be, const mx_optim *o, const mx_param *params, int first, int count,
                         float *master, mx_optim_state st, const float *g, float rescale, mx_dtype t, void *half,
                         float *w);

/* ---- clipping by the global norm (PyTorch's clip_grad_norm_) */
/* The sum of the squares of params [first, first+count)'s gradients in g (in order: the same
 * gradients give the same bits on every device). */
double mx_optim_sumsq(mx_backend *be, const mx_param *params, int first, int count, const float *g);
/* What the gradient is multiplied by, given the sum of squares of the whole model's: with
 * total = sqrt(sumsq), clip_norm / (total + 1e-6) where that is below 1, else 1 (and 1 without
 * clipping). A non-finite sumsq gives NaN, as PyTorch's would, so that a diverged step shows. */
float mx_optim_clip_factor(const mx_optim *o, double sumsq);

/* How the learning rate decays after the warmup: a multiplier of the peak lr at `progress`,
 * the share of the post-warmup run done (0 at its first step, 1 after its last). */
typedef struct {
    const char *name;
    const char *summary;
    double (*factor)(double progress);
} mx_lr_schedule;

/* The schedule called name, or NULL; the names as "a|b" for help and errors. */
const mx_lr_schedule *mx_lr_schedule_find(const char *name);
const char *mx_lr_schedule_names(void);

/* One run's learning rate over time: gradual warmup (Goyal et al. 2017), a linear ramp from
 * start_lr to lr over warmup_epochs, then lr times the schedule's factor over the rest of
 * the run, which ends at total_epochs (fractional for a --steps run). */
typedef struct {
    float lr, start_lr;
    double warmup_epochs, total_epochs;
    const mx_lr_schedule *schedule; /* NULL: constant */
} mx_lr_plan;

/* The learning rate at a fractional epoch (epochs done, plus the share of the current one). */
float mx_lr_at(const mx_lr_plan *p, double epoch);

#endif
