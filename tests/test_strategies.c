/* Equivalence of data parallelism with one device: with the same seed and global batch B,
 * k devices (each computing its slice's gradient, summed by the kvstore) must end with the
 * weights of one device training on B, because only the order of the floating-point sums
 * differs. Tolerances, as ||w_k - w_1|| / ||w_1|| over all weights:
 *  - after 1 step: 1e-6. Measured 1e-8 to 4e-8 (rounding of differently ordered sums);
 *    dropping a quarter of the batch (one device of four lost) gives 1.1e-3.
 *  - after 20 steps: 1e-6, against one device that runs the same slices one after another,
 *    each slice's gradient from zero, and sums them in device order (mathematically the
 *    one-device step on the whole batch; in floating point the very additions a kvstore
 *    makes). Against a one-device run on the whole batch, whose forward rounds differently
 *    (other thread count, other GEMM shapes), a rounding difference can flip a max-pool
 *    argmax or a relu between nearly equal values and training then drifts apart
 *    chaotically: measured 2.0e-3 on an AVX2 host and 5.4e-3 on an AVX-512 host, which
 *    says nothing about the strategy. A reference that accumulated every slice into one
 *    gradient buffer (dw += ...) differed from the kvstore's sum in the last bits, and a
 *    kernel change was enough to flip a tie there too (5.4e-3 after 20 steps); with the
 *    kvstore's order the runs are bit-equal (measured 0 for every case below). Dropping a
 *    quarter of the batch gives 2.3e-2 after 20 steps, caught.
 * resnet18 is checked after one step: with 2 to 4 samples per device its batch norms make
 * training so sensitive that rounding alone separates runs by 1e-3 after 3 steps and
 * 0.25 after 20 (measured), which says nothing about the strategy.
 * Batch norm normalises with each device's slice, so resnet18 is compared against one
 * device that runs the same slices one after another and accumulates their gradients.
 * Also: runs are bit-identical for the same seed, on one device and on several.
 * SGD and AdamW with clipping by the global norm (a norm small enough that every step clips)
 * are held to the same tolerances: every device sums the squares of the same pulled sum, so the
 * factor, and the update, are the reference's bits (measured 0); unclipped, the kvstores'
 * updaters run AdamW on their own state, with the same bits (measured 0). */
#include "check.h"
#include "engine/core/net.h"
#include "engine/core/optim.h"
#include "base/status.h"
#include "strategies/strategy.h"
#include "workloads/dataset.h"
#include "workloads/workloads.h"
#include "engine/core/backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL_ONE_STEP 1e-6
#define TOL_20_STEPS 1e-6
#define TEST_LR 0.05f

static mx_dataset data;
static mx_optim test_opt; /* the optimizer of every run: SGD, then AdamW with clipping */
static long clipped;      /* steps the references clipped: the AdamW cases must clip */

typedef struct {
    const char *workload, *kvstore;
    int devices, batch, steps;
    const double *work_load;
} setup;

/* The model, built as the trainer builds it (one strategy exists at a time here). */
static mx_layer_spec model_specs[MX_MAX_LAYERS];

static mx_strategy_config config_of(const setup *s)
{
    const int nspecs = mx_workload_find(s->workload)->build(model_specs, (mx_shape){1, 28, 28}, 10);
    return (mx_strategy_config){.workload = s->workload, .specs = model_specs, .nspecs = nspecs, .in = {1, 28, 28},
                                .nclasses = 10, .devices = s->devices,
                                .threads_per_device = 1, .kvstore = mx_kv_mode_of(s->kvstore), .max_batch = s->batch,
                                .work_load = s->work_load, .opt = test_opt, .seed = 3,
                                .init = MX_WEIGHT_INIT_XAVIER};
}

/* Trains with the data strategy and returns the final weights (malloc'd), or NULL. */
static float *train_data(const setup *s, size_t *count)
{
    const mx_strategy_ops *ops = mx_strategy_find(MX_STRATEGY_DATA);
    mx_strategy_config cfg = config_of(s);
    mx_strategy *st;
    if (ops->create(&st, &cfg) < 0) {
        fprintf(stderr, "create: %s\n", mx_last_error());
        return NULL;
    }
    const size_t per = 28 * 28;
    for (int i = 0; i < s->steps; i++) {
        const int from = (i * s->batch) % (data.n - s->batch);
        mx_step_stats ss;
        if (ops->step(st, data.images + from * per, data.labels + from, s->batch, test_opt.lr, &ss) < 0) {
            fprintf(stderr, "step: %s\n", mx_last_error());
            ops->destroy(st);
            return NULL;
        }
    }
    *count = ops->param_count(st);
    float *w = malloc(sizeof(float) * *count);
    ops->get_params(st, w);
    ops->destroy(st);
    return w;
}

/* One device processing the k slices of each batch in turn, accumulating gradients: the
 * reference for networks with batch norm. */
static float *train_sliced_reference(const setup *s, size_t *count)
{
    const mx_workload *wl = mx_workload_find(s->workload);
    mx_layer_spec specs[MX_MAX_LAYERS];
    const int nspecs = wl->build(specs, (mx_shape){1, 28, 28}, 10);
    mx_backend *be;
    mx_net *net;
    mx_backend_create(&be, "cpu", 0, 1);
    int slices[MX_MAX_DEVICES];
    mx_split_batch(s->batch, s->devices, s->work_load, slices);
    if (mx_net_create(&net, be, specs, nspecs, (mx_shape){1, 28, 28}, s->batch) < 0) return NULL;
    mx_net_init_params(net, 3, MX_WEIGHT_INIT_XAVIER, 0.01f);
    mx_optim opt = test_opt;
    float *mom = calloc((size_t)mx_optim_nstate(&opt) * net->nweights, sizeof(float));
    float *sum = malloc(sizeof(float) * net->nweights);
    const size_t per = 28 * 28;
    for (int i = 0; i < s->steps; i++) {
        int from = (i * s->batch) % (data.n - s->batch);
        /* each slice's gradient from zero, summed in device order, as a kvstore sums the
         * devices' gradients: the same additions in the same order */
        for (int d = 0; d < s->devices; from += slices[d], d++) {
            mx_net_zero_grad(net);
            mx_net_set_batch(net, data.images + from * per, data.labels + from, slices[d]);
            mx_net_forward(net, slices[d], 1);
            int correct;
            mx_net_loss(net, slices[d], 1.0f / s->batch, &correct);
            mx_net_backward(net, slices[d], NULL, NULL);
            for (size_t j = 0; j < net->nweights; j++) sum[j] = d ? sum[j] + net->g[j] : net->g[j];
        }
        opt.step = i + 1;
        const float f = mx_optim_clip_factor(&opt, mx_optim_sumsq(be, net->params, 0, net->nparams, sum));
        clipped += f < 1;
        mx_optim_update(be, &opt, net->params, 0, net->nparams, net->w, mx_optim_state_of(&opt, mom, net->nweights),
                        sum, f);
    }
    free(sum);
    *count = net->nweights;
    float *w = malloc(sizeof(float) * *count);
    memcpy(w, net->w, sizeof(float) * *count);
    free(mom);
    mx_net_destroy(net);
    mx_backend_destroy(be);
    return w;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, nb = 0;
    for (size_t i = 0; i < n; i++) d += (double)(a[i] - b[i]) * (a[i] - b[i]), nb += (double)b[i] * b[i];
    return sqrt(d / (nb > 0 ? nb : 1));
}

static void compare(const char *label, float *got, size_t n_got, float *ref, size_t n_ref, double tol)
{
    CHECK(got && ref && n_got == n_ref, "%s: training failed or sizes differ", label);
    if (got && ref && n_got == n_ref) {
        const double r = rel_diff(got, ref, n_got);
        CHECK(r <= tol, "%s: relative difference %.3g > %.1g", label, r, tol);
        printf("%-44s relative difference %.2e %s\n", label, r, r <= tol ? "ok" : "NOT OK");
    }
    free(got);
    free(ref);
}

static void check_equivalence(const char *workload, int devices, const char *kv, const double *work_load,
                              int batch, int steps, int sliced_ref)
{
    char label[128];
    snprintf(label, sizeof label, "%s x%d kvstore %s%s, %d step%s", workload, devices, kv,
             work_load ? " work-load 3,1" : "", steps, steps > 1 ? "s" : "");
    setup multi = {workload, kv, devices, batch, steps, work_load};
    setup single = {workload, kv, 1, batch, steps, NULL};
    size_t n1, n2;
    float *ref = sliced_ref ? train_sliced_reference(&multi, &n1) : train_data(&single, &n1);
    float *got = train_data(&multi, &n2);
    compare(label, got, n2, ref, n1, steps == 1 ? TOL_ONE_STEP : TOL_20_STEPS);
}

static void check_determinism(const char *workload, int devices)
{
    setup s = {workload, "device", devices, 32, 10, NULL};
    size_t n1, n2;
    float *a = train_data(&s, &n1), *b = train_data(&s, &n2);
    CHECK(a && b && n1 == n2 && memcmp(a, b, sizeof(float) * n1) == 0, "%s x%d: two runs with one seed differ",
          workload, devices);
    printf("%-44s %s\n", devices > 1 ? "bit-identical reruns, 2 devices" : "bit-identical reruns, 1 device",
           a && b && !memcmp(a, b, sizeof(float) * n1) ? "ok" : "NOT OK");
    free(a);
    free(b);
}

int main(void)
{
    if (mx_dataset_synthetic(&data, 2048, 1, 28, 28, 10, 11) < 0) return 1;
    test_opt = (mx_optim){.kind = MX_OPTIM_SGD, .lr = TEST_LR, .momentum = 0.9f, .wd = 1e-4f};
    static const double uneven[2] = {3, 1};
    const char *kvs[2] = {"local", "device"};
    for (int steps = 1; steps <= 20; steps += 19) {
        for (int k = 0; k < 2; k++)
            for (int devices = 2; devices <= 4; devices *= 2) {
                check_equivalence("mlp", devices, kvs[k], NULL, 64, steps, steps > 1);
                check_equivalence("lenet", devices, kvs[k], NULL, 64, steps, steps > 1);
            }
        check_equivalence("lenet", 2, "device", uneven, 64, steps, steps > 1);
        check_equivalence("mlp", 2, "local", uneven, 64, steps, steps > 1);
    }
    check_equivalence("resnet18", 2, "device", NULL, 8, 1, 1);
    check_equivalence("resnet18", 2, "local", uneven, 8, 1, 1);
    check_equivalence("resnet18", 4, "device", NULL, 8, 1, 1);
    check_determinism("lenet", 1);
    check_determinism("lenet", 2);

    /* SGD clipped to a global norm below the gradients' (every step clips): the factor shows
     * in every weight */
    test_opt.clip_norm = 0.05f;
    clipped = 0;
    check_equivalence("mlp", 2, "local", NULL, 64, 20, 1);
    check_equivalence("lenet", 4, "device", NULL, 64, 20, 1);
    CHECK(clipped == 2 * 20, "SGD: the references clipped %ld of their %d steps", clipped, 2 * 20);
    /* AdamW, clipped likewise */
    test_opt = (mx_optim){.kind = MX_OPTIM_ADAMW, .lr = 1e-3f, .wd = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f,
                          .eps = 1e-8f, .clip_norm = 0.05f};
    clipped = 0;
    for (int k = 0; k < 2; k++) {
        check_equivalence("mlp", 2, kvs[k], NULL, 64, 20, 1);
        check_equivalence("lenet", 4, kvs[k], NULL, 64, 20, 1);
    }
    check_equivalence("lenet", 2, "device", uneven, 64, 20, 1);
    check_equivalence("resnet18", 2, "device", NULL, 8, 1, 1);
    CHECK(clipped == 5 * 20 + 1, "AdamW: the references clipped %ld of their %d steps", clipped, 5 * 20 + 1);
    /* unclipped, the kvstores' updaters run AdamW on their own state (host, device shards) */
    test_opt.clip_norm = 0;
    check_equivalence("mlp", 2, "local", NULL, 64, 20, 1);
    check_equivalence("lenet", 4, "device", NULL, 64, 20, 1);

    /* A batch too small for the device count is refused with the numbers in the message. */
    int counts[4];
    CHECK(mx_split_batch(3, 4, NULL, counts) == MX_EINVAL && strstr(mx_last_error(), "batch of 3"), "%s",
          mx_last_error());
    mx_dataset_free(&data);
    return check_summary("test_strategies");
}
