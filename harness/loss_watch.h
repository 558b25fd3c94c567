#ifndef MX_LOSS_WATCH_H
#define MX_LOSS_WATCH_H

#include <stddef.h>

/* Divergence: A loss that turns NaN or inf stops the run at that step: the weights are then NaN too, and
 * no later step means anything. A loss that grows far beyond its start marks the run as
 * diverged and lets it finish: such a loss may come back (resnet18 at lr 0.05, batch 32, on
 * synthetic data climbs from 2.5 to a 5-step mean of 7.2 at step 22, then falls back to 2.3-3.0
 * by step 44), so the curve is worth seeing whole, and the timings keep the length asked for,
 * comparable with the other runs of a sweep. The warning is printed when the rule fires, so
 * a user can stop a long run at once.
 *
 * Growth rule: the mean of the last K losses exceeds MX_DIVERGE_FACTOR times the reference,
 * the lesser of the mean of the first K and ln(classes), checked once 2K steps ran (the two
 * windows do not overlap). K steps cover at least MX_DIVERGE_MIN_STEPS steps and
 * MX_DIVERGE_SAMPLES samples: a mean over 160 samples keeps the noise of single batches
 * (worst at small batches) out of the comparison. ln(classes) is the loss of a uniform guess,
 * where a fresh model starts: a first-K mean above it has already grown (lenet at lr 2 reaches
 * 1.8e5 at step 3), and must not raise the reference out of reach.
 * Measured here (batch 32 unless said), as the largest last-5 mean over the reference: normal
 * training 1.17 (mlp on synthetic data at lr 0.05, whose first losses are 2.4-3.1), lenet on
 * synthetic data 1.02, lenet and mlp on Fashion-MNIST (batch 128) 0.71 and 0.85 at the first
 * check, then falling to 0.2-0.3; resnet18 at
 * lr 0.05 on synthetic data is at 2.35 by step 10 and 3.1 at step 22; at lr 0.05 mlp at batch 8
 * and lenet at batch 4 (16 and 32 times the lr that batch 128 uses) fire too, rightly: the first
 * collapses to chance after single losses of 65, the second ends in NaN. 1.5 leaves normal runs
 * a margin of 3 times their largest excess (0.5 over the reference against 0.17), while a
 * mean loss 1.5 times that of a uniform guess means a model confidently wrong, which SGD at a
 * workable learning rate does not produce. */
#define MX_DIVERGE_FACTOR 1.5
/* On synthetic data (random labels) the rule's factor: only a blow-up marks a run diverged
 * there, a wandering loss is a note (trainer.c) */
#define MX_DIVERGE_SYNTHETIC_FACTOR 10.0
#define MX_DIVERGE_MIN_STEPS 5
#define MX_DIVERGE_SAMPLES 160

typedef struct {
    int k;                             /* window length in steps */
    double chance;                     /* ln(classes): the loss of a uniform guess */
    int n;                             /* finite losses seen in this repeat */
    double first_sum;                  /* sum of the first k */
    double win[MX_DIVERGE_SAMPLES];    /* the last k, as a ring */
} mx_loss_watch;

/* Starts a repeat's watch for batches of `batch` samples over nclasses classes. */
void mx_loss_watch_start(mx_loss_watch *w, int batch, int nclasses);
/* Adds a finite loss; returns 1 when the growth rule fires, with the recent mean and the
 * reference it was compared with. */
int mx_loss_watch_add(mx_loss_watch *w, double loss, double *ref, double *last_mean);
/* What a fired rule means (ref and last_mean from mx_loss_watch_add): 1, diverged, with the
 * rule in why; 0, on synthetic data (random labels: nothing to learn, and a loss that wanders
 * up says nothing of a run that measures speed) a rise below MX_DIVERGE_SYNTHETIC_FACTOR,
 * with the note to print once in why. */
int mx_loss_watch_judge(const mx_loss_watch *w, double ref, double last_mean, int synthetic, int step, char *why,
                        size_t n);

#endif
