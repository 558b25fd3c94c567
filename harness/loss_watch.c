/* The growth rule of a diverging loss (loss_watch.h). */
#include "loss_watch.h"

#include <math.h>
#include <stdio.h>
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

int mx_loss_watch_judge(const mx_loss_watch *w, double ref, double last_mean, int synthetic, int step, char *why,
                        size_t n)
{
    const double factor = synthetic ? MX_DIVERGE_SYNTHETIC_FACTOR : MX_DIVERGE_FACTOR;
    if (synthetic && last_mean <= factor * ref) {
        snprintf(why, n, "the loss rose by step %d (the last %d steps' mean %.4g, %.1f x %.4g): synthetic data has "
                 "random labels, so the run measures speed; it is marked diverged only beyond %.0f x", step, w->k,
                 last_mean, last_mean / ref, ref, factor);
        return 0;
    }
    snprintf(why, n, "the mean loss of the last %d steps, %.4g, is above %.1f x %.4g (rule: mean of the last K steps > "
             "%.1f x the lesser of the first K steps' mean and ln(classes) = %.3f, K = %d%s)", w->k, last_mean, factor,
             ref, factor, w->chance, w->k, synthetic ? ", on synthetic data" : "");
    return 1;
}
