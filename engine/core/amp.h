/* Mixed precision (AMP) as a GPU runs it under fp16/bf16 autocast, emulated on kernels that
 * compute in f32: saved activations are stored as 16-bit values (engine/core/exec.h), activation and
 * weight gradients are rounded to the half type after each layer's backward (so an fp16
 * overflow becomes inf), the layers read a compute copy of the weights rounded from f32
 * master weights (engine/core/net.h), and the loss is computed in f32 from the logits' half values.
 *
 * fp16's narrow range needs a dynamic loss scale (MXNet's LossScaler, PyTorch's
 * GradScaler): the loss's gradient is multiplied by the scale so that small gradients stay
 * out of fp16's subnormals; a step whose gradients hold inf or NaN is skipped and the
 * scale halved; after MX_LOSS_SCALE_GROWTH clean steps in a row it doubles. bf16 has
 * f32's range and needs no scaling. */
#ifndef MX_AMP_H
#define MX_AMP_H

#include "base/config.h" /* mx_amp, its names and mx_amp_parse */
#include "engine/backend/dtype.h"

/* The type activations and the compute copy of the weights take: MX_F32 when off. */
mx_dtype mx_amp_dtype(mx_amp a);

#define MX_LOSS_SCALE_INIT 65536.0      /* 2^16, MXNet's and PyTorch's initial scale */
#define MX_LOSS_SCALE_GROWTH 2000       /* clean steps in a row before the scale doubles */
#define MX_LOSS_SCALE_MAX 16777216.0    /* 2^24: MXNet's cap; beyond it fp16 gains nothing */
#define MX_LOSS_SCALE_MIN 1.0           /* halving stops here: a scale below 1 would shrink gradients */

typedef struct {
    double scale;    /* multiplies the loss's gradient; divide the summed gradient by it before the update */
    int clean_steps; /* steps without overflow since the last change of scale */
    long skipped;    /* steps skipped for non-finite gradients */
    int enabled;     /* fp16: the scale moves; bf16/off: it stays 1 */
} mx_loss_scaler;

/* fp16: enabled, scale 2^16; bf16 and off: disabled, scale 1. */
void mx_loss_scaler_init(mx_loss_scaler *s, mx_amp a);
/* After a step's gradients are summed: overflow says whether any of them is inf or NaN
 * (mx_net_grad_nonfinite). Returns 1 when the step must be skipped (overflow), else 0,
 * and moves the scale: halved (not below MX_LOSS_SCALE_MIN) on overflow, doubled (not
 * above MX_LOSS_SCALE_MAX) after MX_LOSS_SCALE_GROWTH clean steps. Disabled, the scale
 * stays 1, but a non-finite step is still skipped and counted: its update would write
 * inf/NaN into every weight, which no later step could undo.
 *
 * The caller must pass the same overflow on every device and rank (count the non-finite
 * values of the gradient after its reduction, or agree by an all-reduce of the counts):
 * each replica keeps its own scaler, and replicas that disagree once skip different
 * steps and run with different scales from then on, i.e. their weights part. */
int mx_loss_scaler_update(mx_loss_scaler *s, int overflow);

#endif
