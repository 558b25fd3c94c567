/* The layer (tensor-parallel) strategy on a GPT, split as Megatron-LM splits it
 * (strategies/layer_plan.c, gpt_block): against the data strategy on one device, which trains
 * the whole batch as the layer strategy's devices together do. The model is built here: a
 * token and position embedding (vocabulary 64, width 16, context 8), 2 GPT blocks of 4 heads,
 * a final layer norm and the head tied to the embedding; inputs {1, 1, 8} (token ids), 8
 * int32 labels per sample (the next tokens), scored row by row (mx_loss_rows).
 * Tolerances, as test_layer_parallel.c states them (||w_k - w_1|| / ||w_1|| over all
 * weights): after creation identical (memcmp: the union of the shards, QKV's three row
 * groups per device included, is the one-device model), evaluation loss within 1e-5; after
 * 1 step TOL_ONE_STEP = 1e-6; after 20 SGD steps TOL_20_STEPS = 1e-3 (the measured values are
 * printed: only the order of sums differs, the row-parallel projections summing their inputs
 * in k pieces and the layer norms' input gradients summed over the devices), the evaluation
 * loss then within TOL_LOSS. One device: bit-identical to the data strategy.
 * Also: the plan (per block two all-reduces forward, no gather, QKV in three row groups,
 * attention on H/k heads), the bytes each block moves (4 all-reduces of the n*T*C activation
 * per step) and none for the replicated layers, the replicated tensors the same on every
 * device (the strategy's get_params checks them bit for bit), and the refusal of a device
 * count that does not divide the heads. Checked by breaking it: summing no partial
 * input gradient of the layer norms, or drawing QKV's shard as one row block, fails. */
#include "check.h"
#include "base/status.h"
#include "comm/comm.h"
#include "engine/core/backends.h"
#include "strategies/layer_plan.h"
#include "strategies/strategy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define T 8
#define V 64
#define C 16
#define HEADS 4
#define NBLOCKS 2
#define NWIN 384
#define TOL_ONE_STEP 1e-6
#define TOL_20_STEPS 1e-3
#define TOL_LOSS 1e-4

static const mx_layer_spec gpt_specs[] = {
    {.kind = "embedding", .units = C, .vocab = V},
    {.kind = "gpt_block", .heads = HEADS},
    {.kind = "gpt_block", .heads = HEADS},
    {.kind = "layernorm"},
    {.kind = "lm_head", .vocab = V},
};
#define NSPECS ((int)(sizeof gpt_specs / sizeof *gpt_specs))

static float ids[NWIN * T];
static int32_t labels[NWIN * T];

/* A token stream with some structure to learn (each token mostly the previous plus 3), cut
 * into windows whose labels are the next tokens. */
static void make_tokens(void)
{
    uint64_t state = 7;
    int32_t stream[NWIN * T + 1];
    stream[0] = 5;
    for (int i = 1; i <= NWIN * T; i++)
        stream[i] = check_uniform(&state) < 0.7 ? (stream[i - 1] + 3) % V : (int32_t)(check_uniform(&state) * V);
    for (int i = 0; i < NWIN * T; i++) ids[i] = (float)stream[i], labels[i] = stream[i + 1];
}

static mx_strategy_config config_of(int devices, int batch)
{
    return (mx_strategy_config){.workload = "test-gpt", .specs = gpt_specs, .nspecs = NSPECS, .in = {1, 1, T},
                                .nclasses = V, .devices = devices, .threads_per_device = 1, .kvstore = MX_KV_LOCAL,
                                .max_batch = batch, .opt = {.lr = 0.05f, .momentum = 0.9f, .wd = 1e-4f},
                                .seed = 3, .init = MX_WEIGHT_INIT_NORMAL};
}

typedef struct {
    float *w;
    size_t n;
    double loss0, loss1; /* evaluation loss over 128 windows before and after training */
    mx_step_stats last;
    mx_strategy_detail detail;
} run_result;

static double eval(const mx_strategy_ops *ops, mx_strategy *st, int *rc)
{
    double loss = NAN;
    int correct;
    if (*rc == MX_OK) *rc = ops->evaluate(st, ids, labels, 128, &loss, &correct);
    return loss / 128;
}

/* Trains `steps` steps with the named strategy; w is malloc'd (NULL on failure). */
static run_result train(const char *strategy, int devices, int batch, int steps, float lr)
{
    run_result r = {0};
    const mx_strategy_ops *ops = mx_strategy_find(mx_strategy_of(strategy));
    mx_strategy_config cfg = config_of(devices, batch);
    mx_strategy *st;
    if (!ops || ops->create(&st, &cfg) < 0) {
        fprintf(stderr, "create %s x%d: %s\n", strategy, devices, mx_last_error());
        return r;
    }
    int rc = MX_OK;
    r.loss0 = eval(ops, st, &rc);
    for (int i = 0; rc == MX_OK && i < steps; i++) {
        const int from = (i * batch) % (NWIN - batch);
        rc = ops->step(st, ids + (size_t)from * T, labels + (size_t)from * T, batch, lr, &r.last);
    }
    r.loss1 = eval(ops, st, &rc);
    if (rc == MX_OK && ops->detail) rc = ops->detail(st, &r.detail);
    r.n = ops->param_count(st);
    r.w = rc == MX_OK ? malloc(sizeof(float) * r.n) : NULL;
    if (r.w && (rc = ops->get_params(st, r.w)) < 0) free(r.w), r.w = NULL;
    if (rc < 0) fprintf(stderr, "%s x%d: %s\n", strategy, devices, mx_last_error());
    ops->destroy(st);
    return r;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, nb = 0;
    for (size_t i = 0; i < n; i++) d += (double)(a[i] - b[i]) * (a[i] - b[i]), nb += (double)b[i] * b[i];
    return sqrt(d / (nb > 0 ? nb : 1));
}

/* What each layer moves per step: a block four all-reduces of the whole activation (two
 * forward, Megatron's g; two of the layer norms' input gradients backward, its f), counted
 * once per device; the replicated embedding, layer norm and head nothing. */
static void check_bytes(const run_result *got, int k, int batch)
{
    const double act = sizeof(float) * (double)batch * T * C;
    for (int l = 0; l < got->detail.nlayers; l++) {
        const int block = l >= 1 && l <= NBLOCKS;
        const double want = k > 1 && block ? 4 * act * k : 0;
        CHECK(got->detail.layer_bytes[l] == want, "x%d: layer %d moves %.0f bytes a step, expected %.0f", k, l,
              got->detail.layer_bytes[l], want);
    }
    const double sent = k > 1 ? NBLOCKS * 4 * act * mx_comm_busbw_factor(MX_COMM_ALLREDUCE, k) : 0;
    for (int d = 0; d < k; d++)
        CHECK(fabs(got->detail.dev[d].bytes_sent - sent) <= 1e-9 * sent, "x%d: device %d sends %.0f bytes, "
              "expected %.0f", k, d, got->detail.dev[d].bytes_sent, sent);
}

static void check_equivalence(int devices, int batch, int steps, float lr, double tol)
{
    run_result ref = train("data", 1, batch, steps, lr);
    run_result got = train("layer", devices, batch, steps, lr);
    CHECK(ref.w && got.w && ref.n == got.n, "x%d: training failed or sizes differ", devices);
    if (ref.w && got.w && ref.n == got.n) {
        const double r = rel_diff(got.w, ref.w, ref.n);
        const double dl = fabs(got.loss1 - ref.loss1) / fabs(ref.loss1);
        if (steps == 0 || devices == 1) {
            CHECK(memcmp(got.w, ref.w, sizeof(float) * ref.n) == 0, "x%d, %d steps: weights differ (%.3g)", devices,
                  steps, r);
            CHECK(fabs(got.loss1 - ref.loss1) <= 1e-5 * fabs(ref.loss1), "x%d: evaluation %.9g vs %.9g", devices,
                  got.loss1, ref.loss1);
        } else {
            CHECK(r <= tol, "x%d, %d steps: relative difference %.3g > %.1g", devices, steps, r, tol);
            CHECK(dl <= TOL_LOSS, "x%d, %d steps: evaluation loss %.9g vs %.9g", devices, steps, got.loss1,
                  ref.loss1);
            check_bytes(&got, devices, batch);
        }
        printf("gpt x%d, %2d steps of %2d at lr %.2f: weights' relative difference %.2e, evaluation loss %.7f vs "
               "%.7f (from %.7f)\n", devices, steps, batch, lr, r, got.loss1, ref.loss1, ref.loss0);
    }
    free(ref.w);
    free(got.w);
}

/* The plan's shape: per block two all-reduces (and no gather: a GPT needs none), QKV's shard
 * in three row groups, attention on H/k heads of the device. */
static void check_plan(int k)
{
    mx_backend *be;
    mx_tp_plan *p = NULL;
    if (mx_backend_create(&be, "cpu", 0, 1) < 0 || mx_tp_plan_create(&p, be, gpt_specs, NSPECS, (mx_shape){1, 1, T},
                                                                      k, 1, 0) < 0) {
        CHECK(0, "plan x%d: %s", k, mx_last_error());
        return;
    }
    int reduces = 0, gathers = 0, groups = 0, heads = 0, tied = 0;
    for (int i = 0; i < p->nsteps; i++) {
        const tp_step *s = &p->steps[i];
        reduces += s->op == TP_ALLREDUCE, gathers += s->op == TP_GATHER;
        groups += s->op == TP_LAYER && s->groups == 3;
        if (s->par == TP_HEADS) heads += mx_tp_shard_spec(p, s, k - 1).heads == HEADS / k;
        tied += s->shares >= 0 && p->steps[s->shares].tied_by == i;
    }
    CHECK(reduces == 2 * NBLOCKS && gathers == 0 && groups == NBLOCKS && heads == NBLOCKS && tied == 1,
          "plan x%d: %d all-reduces, %d gathers, %d QKV steps in 3 groups, %d attentions on %d heads, %d ties", k,
          reduces, gathers, groups, heads, HEADS / k, tied);
    mx_tp_plan_destroy(p);
    mx_backend_destroy(be);
}

static void check_refusal(void)
{
    mx_strategy_config cfg = config_of(3, 8);
    const mx_strategy_ops *ops = mx_strategy_find(MX_STRATEGY_LAYER);
    mx_strategy *st = NULL;
    CHECK(ops->check(&cfg) == MX_EINVAL && strstr(mx_last_error(), "heads 4 over 3 devices") &&
              strstr(mx_last_error(), "accepted 1, 2, 4 devices"),
          "%s", mx_last_error());
    printf("refused: %s\n", mx_last_error());
    CHECK(ops->create(&st, &cfg) == MX_EINVAL && !st, "3 devices on 4 heads: created");
    mx_tp_plan *p = NULL;
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, 1) == MX_OK) {
        CHECK(mx_tp_plan_create(&p, be, gpt_specs, NSPECS, (mx_shape){1, 1, T}, 3, 1, 0) == MX_EINVAL && !p,
              "the plan over 3 devices: made");
        mx_backend_destroy(be);
    }
}

int main(void)
{
    make_tokens();
    for (int k = 2; k <= 4; k *= 2) check_plan(k);
    check_refusal();
    check_equivalence(1, 16, 20, 0.05f, 0);
    for (int k = 2; k <= 4; k *= 2) {
        check_equivalence(k, 16, 0, 0.05f, 0);
        check_equivalence(k, 16, 1, 0.05f, TOL_ONE_STEP);
        check_equivalence(k, 16, 20, 0.05f, TOL_20_STEPS);
    }
    return check_summary("test_layer_gpt");
}
