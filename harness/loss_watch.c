/* The growth rule of a diverging loss (loss_watch.h). */
#include "loss_watch.h"

#include <math.h>
#include <string.h>

void mx_loss_watch_start(mx_loss_watch *w, int batch, int nclasses)
{
    memset(w, 0, sizeof *w);
    w->chance = log(nclasses > 1 ? nclasses : 2);
    const int k = (MX_DIVERGE_SAMPLES + batch - 1) / batch;
    w->k = k > MX_DIVERGE_MIN_STEPS ? k : MX_DIVERGE_MIN_STEPS;
}

int mx_loss_watch_add(mx_loss_watch *w, double loss, double *ref, double *last_mean)
{
    if (w->n < w->k) w->first_sum += loss;
    w->win[w->n % w->k] = loss;
    w->n++;
    if (w->n < 2 * w->k) return 0;
    double s = 0; /* summed afresh: a running sum would drift over millions of steps */
    for (int i = 0; i < w->k; i++) s += w->win[i];
    *ref = w->first_sum / w->k;
    if (*ref > w->chance) *ref = w->chance;
    *last_mean = s / w->k;
    return *last_mean > MX_DIVERGE_FACTOR * *ref;
}
