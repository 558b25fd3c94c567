/* The model strategy (a pipeline) on a GPT, whose head is tied to the token embedding on
 * another stage: a tiny GPT built here (embedding, 3 gpt_blocks of width 16 with 2 heads,
 * layer norm, lm_head; context 8, vocabulary 64, uniform tokens), cut into 2 and 3 stages.
 *  - a parameter set of the last layers holds a replica of embedding.wte after its own tensors,
 *    with the whole model's values; one of the first layers, or of all, holds none;
 *  - the last stage's replica equals the first stage's tensor bit for bit when created and
 *    after 20 steps (every copy gets the same summed gradient and update);
 *  - equivalence: with one micro-batch, k stages give the weights of the data strategy on one
 *    device after 20 SGD steps; with 4 micro-batches, gpipe and 1f1b, k stages give the
 *    weights of one stage with the same micro-batches. Tolerance 1e-6 relative (L2),
 *    test_model's: the stages compute what one device computes, but embedding.wte's gradient
 *    is summed in another order (one device adds the embedding's rows onto the head's share
 *    as they come, the pipeline sums each copy's share and then the two), measured 1.7e-8;
 *    without the exchange (each copy updated by its own share) the difference is 5.7e-2;
 *  - the same under AdamW with clipping by the global norm: measured 5.0e-7, AdamW's
 *    normalised step magnifying the last bits of the smallest gradients;
 *  - evaluation (the last stage's head reads its replica): the loss and correct tokens match
 *    one device's, relative 1e-6;
 *  - a batch of fewer samples than micro-batches (an epoch's last: 5 of 8) runs as micro-batches
 *    of one, on 2 and 3 stages as on one;
 *  - the bytes each stage sends include the tied gradient's exchange: exactly the
 *    activations, their gradients and one copy of embedding.wte each way;
 *  - the cut: auto balancing profiles every gpt_block (and falls back to the layers' own
 *    FLOPs), the embedding lands on the first stage and the head on the last, and what
 *    create refuses names a GPT's top-level layers. */
#include "check.h"
#include "base/status.h"
#include "engine/core/backends.h"
#include "strategies/model.h"
#include "strategies/partition.h"
#include "strategies/strategy.h"
#include "workloads/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-6
#define T 8
#define C 16
#define V 64
#define BLOCKS 3
#define NLAYERS (BLOCKS + 3)
#define STEPS 20

static mx_dataset data;
static mx_layer_spec specs[NLAYERS];
static mx_optim test_opt;

static void build_gpt(void)
{
    int n = 0;
    specs[n++] = (mx_layer_spec){.kind = "embedding", .units = C, .vocab = V};
    for (int i = 0; i < BLOCKS; i++) specs[n++] = (mx_layer_spec){.kind = "gpt_block", .heads = 2};
    specs[n++] = (mx_layer_spec){.kind = "layernorm"};
    specs[n++] = (mx_layer_spec){.kind = "lm_head", .vocab = V};
}

static mx_strategy_config config(int devices, int batch, int m, const char *schedule)
{
    return (mx_strategy_config){.workload = "tiny gpt", .specs = specs, .nspecs = NLAYERS, .in = {1, 1, T},
                                .nclasses = V, .devices = devices, .threads_per_device = 1,
                                .kvstore = MX_KV_DEVICE, .max_batch = batch, .opt = test_opt, .seed = 3,
                                .init = MX_WEIGHT_INIT_NORMAL, .micro_batches = m, .schedule = schedule};
}

typedef struct {
    float *w;
    size_t n;
    double loss;      /* evaluation's summed loss over the held-out samples */
    int correct;
    int copies;       /* model: replicas of tied tensors */
    double diff0, diff; /* model: largest replica-owner difference at creation, after training */
    mx_strategy_detail detail;
} run;

/* Trains `steps` batches (and one of `tail` samples after them when tail > 0), then evaluates
 * 64 other samples; fills r (r->w malloc'd). */
static int train(const mx_strategy_config *cfg, mx_strategy_kind kind, int steps, int tail, run *r)
{
    memset(r, 0, sizeof *r);
    const mx_strategy_ops *ops = mx_strategy_find(kind);
    mx_strategy *s;
    if (ops->create(&s, cfg) < 0) {
        fprintf(stderr, "create %s: %s\n", mx_strategy_name(kind), mx_last_error());
        return -1;
    }
    int rc = kind == MX_STRATEGY_MODEL ? mx_model_tied_diff(s, &r->copies, &r->diff0) : MX_OK;
    const int b = cfg->max_batch;
    mx_step_stats ss;
    for (int i = 0; rc == MX_OK && i < steps; i++) {
        const int from = i * b;
        rc = ops->step(s, data.images + (size_t)from * T, data.labels + (size_t)from * T, b, test_opt.lr, &ss);
    }
    if (rc == MX_OK && tail > 0)
        rc = ops->step(s, data.images + (size_t)steps * b * T, data.labels + (size_t)steps * b * T, tail, test_opt.lr,
                       &ss);
    const int at = data.n - 64;
    if (rc == MX_OK) rc = ops->evaluate(s, data.images + (size_t)at * T, data.labels + (size_t)at * T, 64, &r->loss,
                                        &r->correct);
    if (rc == MX_OK && kind == MX_STRATEGY_MODEL) rc = mx_model_tied_diff(s, &r->copies, &r->diff);
    if (rc == MX_OK) rc = ops->detail(s, &r->detail);
    if (rc == MX_OK) {
        r->n = ops->param_count(s);
        r->w = malloc(sizeof(float) * r->n);
        rc = r->w ? ops->get_params(s, r->w) : MX_ENOMEM;
    }
    if (rc < 0) fprintf(stderr, "%s: %s\n", mx_strategy_name(kind), mx_last_error());
    ops->destroy(s);
    return rc;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, nb = 0;
    for (size_t i = 0; i < n; i++) d += (double)(a[i] - b[i]) * (a[i] - b[i]), nb += (double)b[i] * b[i];
    return sqrt(d / (nb > 0 ? nb : 1));
}

/* got against ref: the weights within TOL, the replicas equal to their owners, evaluation. */
static void compare(const char *label, const run *got, int rc_got, const run *ref, int rc_ref, int k)
{
    CHECK(rc_got == MX_OK && rc_ref == MX_OK && got->n == ref->n, "%s: a run failed or sizes differ (%zu, %zu)",
          label, got->n, ref->n);
    if (rc_got != MX_OK || rc_ref != MX_OK || got->n != ref->n) return;
    const double r = rel_diff(got->w, ref->w, got->n);
    CHECK(r <= TOL, "%s: relative difference %.3g > %.1g", label, r, TOL);
    /* one replica of embedding.wte on the last stage, for any cut into 2 or more */
    CHECK(got->copies == (k > 1), "%s: %d replicas, expected %d", label, got->copies, k > 1);
    CHECK(got->diff0 == 0 && got->diff == 0, "%s: a replica differs from its owner by %g when created, %g after "
          "%d steps", label, got->diff0, got->diff, STEPS);
    const double le = fabs(got->loss - ref->loss) / fabs(ref->loss);
    CHECK(le <= TOL && got->correct == ref->correct, "%s: evaluation loss %.9g against %.9g (relative %.2g), "
          "correct %d against %d", label, got->loss, ref->loss, le, got->correct, ref->correct);
    printf("%-60s weights %.2e, eval loss %.2e, replica = owner\n", label, r, le);
}

static void check_one_micro_batch(int k, const char *schedule)
{
    run ref, got;
    const mx_strategy_config a = config(1, 16, 1, NULL), b = config(k, 16, 1, schedule);
    const int ra = train(&a, MX_STRATEGY_DATA, STEPS, 0, &ref), rb = train(&b, MX_STRATEGY_MODEL, STEPS, 0, &got);
    char label[128];
    snprintf(label, sizeof label, "%s: %d stages, %s, 1 micro-batch = data on 1", mx_optim_name(test_opt.kind), k,
             schedule);
    compare(label, &got, rb, &ref, ra, k);
    free(ref.w);
    free(got.w);
}

static void check_micro_batches(int k, int m, const char *schedule)
{
    run ref, got;
    const mx_strategy_config a = config(1, 16, m, NULL), b = config(k, 16, m, schedule);
    const int ra = train(&a, MX_STRATEGY_MODEL, STEPS, 0, &ref), rb = train(&b, MX_STRATEGY_MODEL, STEPS, 0, &got);
    char label[128];
    snprintf(label, sizeof label, "%s: %d stages, %s, %d micro-batches = 1 stage", mx_optim_name(test_opt.kind), k,
             schedule, m);
    compare(label, &got, rb, &ref, ra, k);
    free(ref.w);
    free(got.w);
}

/* An epoch's last batch may hold fewer samples than there are micro-batches (5 of 8): it runs
 * as micro-batches of one, on k stages as on one stage. */
static void check_small_batch(int k, const char *schedule)
{
    run ref, got;
    const mx_strategy_config a = config(1, 16, 8, NULL), b = config(k, 16, 8, schedule);
    const int ra = train(&a, MX_STRATEGY_MODEL, 3, 5, &ref), rb = train(&b, MX_STRATEGY_MODEL, 3, 5, &got);
    char label[128];
    snprintf(label, sizeof label, "sgd: %d stages, %s, 8 micro-batches, a last batch of 5", k, schedule);
    compare(label, &got, rb, &ref, ra, k);
    free(ref.w);
    free(got.w);
}

/* Two stages, one micro-batch of B: stage 0 sends B activations forward and the tied tensor's
 * gradient to stage 1; stage 1 sends B activation gradients back and the summed gradient. */
static void check_bytes(void)
{
    enum { B = 8 };
    run r;
    mx_strategy_config c = config(2, B, 1, "1f1b");
    c.partition = "2,4";
    const int rc = train(&c, MX_STRATEGY_MODEL, 2, 0, &r);
    const double act = sizeof(float) * (double)B * T * C, wte = sizeof(float) * (double)V * C;
    CHECK(rc == MX_OK && r.detail.dev[0].bytes_sent == act + wte && r.detail.dev[1].bytes_sent == act + wte,
          "bytes per step: stage 0 %g, stage 1 %g, expected %g each (activations %g, embedding.wte %g)",
          r.detail.dev[0].bytes_sent, r.detail.dev[1].bytes_sent, act + wte, act, wte);
    /* the tied gradient crosses no cut between layers: the boundary counts activations only */
    CHECK(rc == MX_OK && r.detail.layer_bytes[1] == 2 * act, "bytes across the cut after layer 1: %g, expected %g",
          r.detail.layer_bytes[1], 2 * act);
    free(r.w);
}

/* The parameter set of a last stage: the replica of embedding.wte after its own tensors, the
 * whole model's values; the set of the first stage has none. */
static void check_replica_set(void)
{
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, 1) < 0) {
        CHECK(0, "cpu backend: %s", mx_last_error());
        return;
    }
    const mx_shape in = {1, 1, T};
    mx_params *whole = NULL, *last = NULL, *first = NULL;
    int rc = mx_params_create(&whole, be, specs, NLAYERS, in, 0, NLAYERS);
    if (rc == MX_OK) rc = mx_params_create(&last, be, specs, NLAYERS, in, 3, NLAYERS);
    if (rc == MX_OK) rc = mx_params_create(&first, be, specs, NLAYERS, in, 0, 3);
    if (rc == MX_OK) rc = mx_params_init(whole, 3, MX_WEIGHT_INIT_NORMAL, 0.02f);
    if (rc == MX_OK) rc = mx_params_init(last, 3, MX_WEIGHT_INIT_NORMAL, 0.02f);
    CHECK(rc == MX_OK, "stage sets: %s", mx_last_error());
    if (rc == MX_OK) {
        const int wte = 0; /* the embedding's first tensor */
        const mx_param *p = &last->params[wte];
        CHECK(strstr(whole->params[wte].name, "embedding.wte") && last->nreplicas == 1 && last->replicas[0] == wte &&
                  first->nreplicas == 0 && whole->nreplicas == 0 && whole->nheld == whole->nweights &&
                  p->offset == last->nheld && last->nweights == last->nheld + (p->count + 15) / 16 * 16,
              "replicas: last stage %d (tensor %d at %zu of %zu, held %zu), first %d, whole %d", last->nreplicas,
              last->nreplicas ? last->replicas[0] : -1, p->offset, last->nweights, last->nheld, first->nreplicas,
              whole->nreplicas);
        CHECK(p->offset + p->count <= last->nweights &&
                  !memcmp(last->w + p->offset, whole->w + whole->params[wte].offset, sizeof(float) * p->count),
              "the replica's values are not the whole model's");
    }
    mx_params_destroy(first);
    mx_params_destroy(last);
    mx_params_destroy(whole);
    mx_backend_destroy(be);
}

static void check_cut(void)
{
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, 1) < 0) {
        CHECK(0, "cpu backend: %s", mx_last_error());
        return;
    }
    be->ops->bind_thread(be);
    double timed[NLAYERS], flops[NLAYERS];
    const mx_shape in = {1, 1, T};
    const int rt = mx_partition_costs(be, specs, NLAYERS, in, 4, 3, timed);
    const int rf = mx_partition_costs(be, specs, NLAYERS, in, 4, 0, flops);
    mx_params *ps = NULL;
    const int rp = mx_params_create(&ps, be, specs, NLAYERS, in, 0, NLAYERS);
    CHECK(rt == MX_OK && rf == MX_OK && rp == MX_OK, "costs: %s", mx_last_error());
    for (int i = 0; rt == MX_OK && rf == MX_OK && rp == MX_OK && i < NLAYERS; i++) {
        CHECK(timed[i] > 0 && isfinite(timed[i]), "layer %d (%s): profiled %g s", i, specs[i].kind, timed[i]);
        const double own = ps->layers[i].ops->flops ? ps->layers[i].ops->flops(&ps->layers[i]) : 0;
        CHECK(flops[i] == own && (strcmp(specs[i].kind, "gpt_block") != 0 || own > 0),
              "layer %d (%s): FLOPs cost %g, the layer's own %g", i, specs[i].kind, flops[i], own);
    }
    /* FLOPs: the blocks are equal and carry the weight, so 3 stages of a 6-layer GPT split them */
    int cut[4];
    CHECK(rf == MX_OK && mx_partition_balance(flops, NLAYERS, 3, cut) == MX_OK && cut[1] >= 1 && cut[1] <= 2 &&
              cut[2] >= 3 && cut[2] <= 4,
          "FLOPs cut of 3 stages: [0, %d, %d, %d)", cut[1], cut[2], NLAYERS);
    mx_params_destroy(ps);
    mx_backend_destroy(be);

    /* "auto" on the strategy: embedding first, head last, the head's copy on the last stage */
    const mx_strategy_ops *ops = mx_strategy_find(MX_STRATEGY_MODEL);
    mx_strategy_config c = config(3, 8, 2, "1f1b");
    c.partition = "auto";
    mx_strategy *s = NULL;
    mx_strategy_detail d;
    int copies = 0;
    double diff = 1;
    const int rc = ops->create(&s, &c);
    CHECK(rc == MX_OK && ops->detail(s, &d) == MX_OK && d.dev[0].first == 0 && d.dev[2].last == NLAYERS &&
              mx_model_tied_diff(s, &copies, &diff) == MX_OK && copies == 1 && diff == 0,
          "auto cut of 3 stages: %s", rc == MX_OK ? "embedding not first, head not last or no replica" :
          mx_last_error());
    if (rc == MX_OK) printf("auto cut of 3 stages: [%d, %d) [%d, %d) [%d, %d)\n", d.dev[0].first, d.dev[0].last,
                            d.dev[1].first, d.dev[1].last, d.dev[2].first, d.dev[2].last);
    if (rc == MX_OK) ops->destroy(s);

    /* what create refuses reads for a GPT: blocks are its top-level layers */
    s = NULL;
    c = config(7, 8, 1, NULL);
    CHECK(ops->create(&s, &c) == MX_EINVAL && strstr(mx_last_error(), "6 top-level layers") &&
              strstr(mx_last_error(), "transformer block"), "7 stages of a 6-layer GPT: %s", mx_last_error());
    c = config(2, 8, 1, NULL);
    c.partition = "3,4";
    CHECK(ops->create(&s, &c) == MX_EINVAL && strstr(mx_last_error(), "transformer block"),
          "partition 3,4 of 6 layers: %s", mx_last_error());
}

int main(void)
{
    build_gpt();
    /* 20 steps of 16 samples, then 64 held out for evaluation */
    if (mx_dataset_synthetic_tokens(&data, STEPS * 16 + 64, T, V, 17) < 0) {
        fprintf(stderr, "tokens: %s\n", mx_last_error());
        return 1;
    }
    test_opt = (mx_optim){.kind = MX_OPTIM_SGD, .lr = 0.1f, .momentum = 0.9f, .wd = 1e-4f};
    check_one_micro_batch(2, "1f1b");
    check_one_micro_batch(3, "gpipe");
    for (int k = 2; k <= 3; k++) {
        check_micro_batches(k, 4, "gpipe");
        check_micro_batches(k, 4, "1f1b");
    }
    /* AdamW, clipped to a norm below the gradients' */
    test_opt = (mx_optim){.kind = MX_OPTIM_ADAMW, .lr = 3e-3f, .wd = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f,
                          .eps = 1e-8f, .clip_norm = 0.5f};
    check_one_micro_batch(3, "1f1b");
    check_micro_batches(2, 4, "1f1b");
    check_micro_batches(3, 4, "gpipe");
    test_opt = (mx_optim){.kind = MX_OPTIM_SGD, .lr = 0.1f, .momentum = 0.9f, .wd = 1e-4f};
    check_replica_set();
    check_small_batch(2, "1f1b");
    check_small_batch(3, "gpipe");
    check_bytes();
    check_cut();
    mx_dataset_free(&data);
    return check_summary("test_model_gpt");
}
