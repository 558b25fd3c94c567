/* Mixed precision: the types it computes in and the dynamic loss scaler (see engine/core/amp.h; the
 * modes' names are base/config.h's). */
#include "amp.h"

mx_dtype mx_amp_dtype(mx_amp a) { return a == MX_AMP_FP16 ? MX_F16 : a == MX_AMP_BF16 ? MX_BF16 : MX_F32; }

void mx_loss_scaler_init(mx_loss_scaler *s, mx_amp a)
{
    /* Only fp16 needs a scale: bf16 shares f32's exponent range, so its gradients neither
     * underflow nor overflow where f32's would not. */
    s->enabled = a == MX_AMP_FP16;
    s->scale = s->enabled ? MX_LOSS_SCALE_INIT : 1.0;
    s->clean_steps = 0;
    s->skipped = 0;
}

int mx_loss_scaler_update(mx_loss_scaler *s, int overflow)
{
    if (overflow) {
        s->skipped++;
        s->clean_steps = 0;
        if (s->enabled) {
            s->scale /= 2;
            if (s->scale < MX_LOSS_SCALE_MIN) s->scale = MX_LOSS_SCALE_MIN;
        }
        return 1;
    }
    if (!s->enabled) return 0;
    /* Grow only after a long clean run: a scale that just overflowed would overflow again
     * at once if doubled on the next clean step. */
    if (++s->clean_steps >= MX_LOSS_SCALE_GROWTH) {
        s->clean_steps = 0;
        s->scale *= 2;
        if (s->scale > MX_LOSS_SCALE_MAX) s->scale = MX_LOSS_SCALE_MAX;
    }
    return 0;
}
