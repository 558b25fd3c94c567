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

/* The learning rate at a fractional epoch under gradual warmup (Goyal et al. 2017): a
 * linear ramp from start_lr to lr over warmup_epochs, then lr. */
float mx_lr_at(float lr, float start_lr, double epoch, double warmup_epochs);

#endif
