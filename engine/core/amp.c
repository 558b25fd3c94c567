/* Mixed precision: the mode's names and the dynamic loss scaler (see engine/core/amp.h). */
#include "amp.h"
#include "base/status.h"

#include <string.h>

static const char *const names[] = {[MX_AMP_OFF] = "off", [MX_AMP_FP16] = "fp16", [MX_AMP_BF16] = "bf16"};

int mx_amp_parse(const char *name, mx_amp *out)
{
    for (int a = MX_AMP_OFF; a <= MX_AMP_BF16; a++)
        if (name && strcmp(name, names[a]) == 0) {
            *out = (mx_amp)a;
            return MX_OK;
        }
    return mx_error(MX_EINVAL, "mixed precision '%s': accepted off|fp16|bf16", name ? name : "(null)");
}

const char *mx_amp_name(mx_amp a) { return (unsigned)a <= MX_AMP_BF16 ? names[a] : "?"; }

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
