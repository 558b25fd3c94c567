/* SGD with momentum and weight decay over slices of a parameter table, so that the same
 * update serves one device, a kvstore updating per key, or a device updating its shard. */
#ifndef MX_OPTIM_H
#define MX_OPTIM_H

#include "net.h"

typedef struct {
    float lr, momentum, wd;
} mx_sgd;

/* Updates params [first, first+count) of the table whose buffers are w, mom and g (each
 * laid out by the params' offsets, on backend be). Weight decay applies to tensors marked
 * decay (weights), not to biases or norm scales. */
void mx_sgd_update(mx_backend *be, const mx_sgd *opt, const mx_param *params, int first, int count, float *w,
                   float *mom, const float *g);
/* Updates elements [lo, hi) of one tensor p; w, mom and g point at the tensor's start (a
 * kvstore updating a shard of a key). */
void mx_sgd_update_slice(mx_backend *be, const mx_sgd *opt, const mx_param *p, size_t lo, size_t hi, float *w,
                         float *mom, const float *g);

/* AMP: mx_sgd_update on the f32 master weights, and the compute copy refreshed from them as
 * mx_net_amp_refresh does (half: their values of type t, w: its f32 expansion), one pass per
 * tensor. */
void mx_sgd_update_amp(mx_backend *be, const mx_sgd *opt, const mx_param *params, int first, int count,
                       float *master, float *mom, const float *g, mx_dtype t, void *half, float *w);

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
