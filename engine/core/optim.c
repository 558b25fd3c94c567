/* The optimizers' updates, clipping and the learning-rate schedule (see engine/core/optim.h). */
#include "optim.h"
#include "base/status.h"

#include <math.h>
#include <string.h>

int mx_optim_nstate(const mx_optim *o) { return o && o->kind == MX_OPTIM_ADAMW ? 2 : 1; }

mx_optim_state mx_optim_state_of(const mx_optim *o, float *buf, size_t n)
{
    return (mx_optim_state){buf, buf && mx_optim_nstate(o) == 2 ? buf + n : NULL};
}

int mx_optim_check_backend(const mx_optim *o, const mx_backend *be)
{
    if (o->kind == MX_OPTIM_ADAMW && !be->ops->adamw_update)
        return mx_error(MX_EUNSUPPORTED, "optimizer %s: backend %s has no adamw_update kernel (accepted there: sgd)",
                        mx_optim_name(o->kind), be->ops->name);
    return MX_OK;
}

/* AdamW's scalars for one update of a tensor (decay: whether its weight decay applies). */
static mx_adamw_step adamw_step(const mx_optim *o, int decay, float rescale)
{
    const double t = (double)(o->step > 0 ? o->step : 1);
    return (mx_adamw_step){o->lr, o->beta1, o->beta2, o->eps, decay ? o->wd : 0.0f, rescale,
                           (float)(1 - pow(o->beta1, t)), (float)(1 - pow(o->beta2, t))};
}

void mx_optim_update_slice(mx_backend *be, const mx_optim *o, const mx_param *p, size_t lo, size_t hi, float *w,
                           mx_optim_state st, const float *g, float rescale)
{
    if (hi <= lo) return;
    if (o->kind == MX_OPTIM_ADAMW) {
        const mx_adamw_step a = adamw_step(o, p->decay, rescale);
        be->ops->adamw_update(be, hi - lo, w + lo, st.m + lo, st.v + lo, g + lo, &a);
        return;
    }
    be->ops->sgd_update(be, hi - lo, w + lo, st.m + lo, g + lo, o->lr, o->momentum, p->decay ? o->wd : 0.0f,
                        rescale);
}

void mx_optim_update(mx_backend *be, const mx_optim *o, const mx_param *params, int first, int count, float *w,
                     mx_optim_state st, const float *g, float rescale)
{
    for (int i = first; i < first + count; i++) {
        const mx_param *p = &params[i];
        mx_optim_update_slice(be, o, p, 0, p->count, w + p->offset, mx_optim_state_at(st, p->offset),
                              g + p->offset, rescale);
    }
}

void mx_optim_update_amp(mx_backend *be, const mx_optim *o, const mx_param *params, int first, int count,
                         float *master, mx_optim_state st, const float *g, float rescale, mx_dtype t, void *half,
                         float *w)
{
    const size_t hs = mx_dtype_size(t);
    for (int i = first; i < first + count; i++) {
        const mx_param *p = &params[i];
        const size_t off = p->offset;
        if (!p->count) continue;
        if (o->kind == MX_OPTIM_ADAMW) {
            const mx_adamw_step a = adamw_step(o, p->decay, rescale);
            be->ops->adamw_update_amp(be, p->count, master + off, st.m + off, st.v + off, g + off, &a, t,
                                      (char *)half + off * hs, w + off);
        } else {
            be->ops->sgd_update_amp(be, p->count, master + off, st.m + off, g + off, o->lr, o->momentum,
                                    p->decay ? o->wd : 0.0f, rescale, t, (char *)half + off * hs, w + off);
        }
    }
}

double mx_optim_sumsq(mx_backend *be, const mx_param *params, int first, int count, const float *g)
{
    double sum = 0;
    for (int i = first; i < first + count; i++) sum += be->ops->sumsq(be, params[i].count, g + params[i].offset);
    return sum;
}

float mx_optim_clip_factor(const mx_optim *o, double sumsq)
{
    if (!(o->clip_norm > 0)) return 1.0f;
    if (!isfinite(sumsq)) return NAN;
    /* PyTorch: clip_coef = max_norm / (total_norm + 1e-6), clamped to at most 1 */
    const double f = o->clip_norm / (sqrt(sumsq) + 1e-6);
    return f < 1 ? (float)f : 1.0f;
}

static double constant(double progress)
{
    (void)progress;
    return 1;
}

/* Half a cosine from 1 down to 0 (Loshchilov and Hutter's SGDR without restarts): the last
 * steps train at a small lr, so the final weights settle instead of carrying the noise of
 * the last few batches, which at a constant lr moves lenet's test accuracy by a point. */
static double cosine(double progress)
{
    return 0.5 * (1 + cos(M_PI * progress));
}

static const mx_lr_schedule schedules[] = {
    {"constant", "the peak lr to the end (MXNet's and PyTorch's default without a scheduler)", constant},
    {"cosine", "half a cosine from the peak lr to 0 at the end of the run", cosine},
};

const mx_lr_schedule *mx_lr_schedule_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof schedules / sizeof schedules[0]; i++)
        if (strcmp(schedules[i].name, name) == 0) return &schedules[i];
    return NULL;
}

const char *mx_lr_schedule_names(void) { return "constant|cosine"; }

float mx_lr_at(const mx_lr_plan *p, double epoch)
{
    if (p->warmup_epochs > 0 && epoch < p->warmup_epochs)
        return (float)(p->start_lr + (p->lr - p->start_lr) * epoch / p->warmup_epochs);
    const double span = p->total_epochs - p->warmup_epochs;
    if (!p->schedule || !(span > 0)) return p->lr;
    double progress = (epoch - p->warmup_epochs) / span;
    progress = progress < 0 ? 0 : progress > 1 ? 1 : progress;
    return (float)(p->lr * p->schedule->factor(progress));
}
