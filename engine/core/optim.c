/* SGD update and learning-rate schedule (see engine/core/optim.h). */
#include "optim.h"

#include <math.h>
#include <string.h>

void mx_sgd_update_slice(mx_backend *be, const mx_sgd *opt, const mx_param *p, size_t lo, size_t hi, float *w,
                         float *mom, const float *g)
{
    be->ops->sgd_update(be, hi - lo, w + lo, mom + lo, g + lo, opt->lr, opt->momentum, p->decay ? opt->wd : 0.0f,
                        1.0f);
}

void mx_sgd_update(mx_backend *be, const mx_sgd *opt, const mx_param *params, int first, int count, float *w,
                   float *mom, const float *g)
{
    for (int i = first; i < first + count; i++) {
        const mx_param *p = &params[i];
        mx_sgd_update_slice(be, opt, p, 0, p->count, w + p->offset, mom + p->offset, g + p->offset);
    }
}

void mx_sgd_update_amp(mx_backend *be, const mx_sgd *opt, const mx_param *params, int first, int count,
                       float *master, float *mom, const float *g, mx_dtype t, void *half, float *w)
{
    const size_t hs = mx_dtype_size(t);
    for (int i = first; i < first + count; i++) {
        const mx_param *p = &params[i];
        const size_t o = p->offset;
        be->ops->sgd_update_amp(be, p->count, master + o, mom + o, g + o, opt->lr, opt->momentum,
                                p->decay ? opt->wd : 0.0f, 1.0f, t, (char *)half + o * hs, w + o);
    }
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
