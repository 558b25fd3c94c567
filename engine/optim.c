/* SGD update and learning-rate schedule (see optim.h). */
#include "optim.h"

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

float mx_lr_at(float lr, float start_lr, double epoch, double warmup_epochs)
{
    if (warmup_epochs <= 0 || epoch >= warmup_epochs) return lr;
    return (float)(start_lr + (lr - start_lr) * epoch / warmup_epochs);
}
