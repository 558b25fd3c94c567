/* Stragglers: a backend whose GEMMs sleep on device 1 (a test hook, as test_backend's
 * faulty backend) makes that device's busy time, as the data strategy measures it per step,
 * longer than device 0's, and the report names it; equal devices name none; the pipeline
 * reports each stage's busy time, the layer strategy (lockstep devices) none. */
#include "check.h"
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/core/rng.h"
#include "engine/cpu/cpu.h"
#include "base/status.h"
#include "harness/report_table.h"
#include "results/answer.h"
#include "strategies/strategy.h"
#include "workloads/workloads.h"

#include <math.h>
#include <string.h>
#include <time.h>

enum { BATCH = 32, PER = 28 * 28, STEPS = 6 };
static float x[BATCH * PER];
static int32_t y[BATCH];

static void slow_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    if (be->device == 1) {
        const struct timespec ts = {0, 2 * 1000 * 1000}; /* 2 ms a GEMM: mlp runs 8 a step */
        nanosleep(&ts, NULL);
    }
    mx_cpu_backend_ops.gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* STEPS steps of mlp on 2 devices; fills rec's device rows from the strategy's detail. */
static void train(const char *strategy, const char *backend, mx_run_record *rec)
{
    static mx_layer_spec specs[MX_MAX_LAYERS];
    const int nspecs = mx_workload_find("mlp")->build(specs, (mx_shape){1, 28, 28}, 10);
    const mx_strategy_config cfg = {.workload = "mlp", .specs = specs, .nspecs = nspecs, .in = {1, 28, 28},
                                    .nclasses = 10, .devices = 2, .threads_per_device = 1, .kvstore = MX_KV_DEVICE,
                                    .backend = backend, .max_batch = BATCH,
                                    .opt = {.kind = MX_OPTIM_SGD, .lr = 0.05f, .momentum = 0.9f, .wd = 1e-4f},
                                    .seed = 1, .init = MX_WEIGHT_INIT_XAVIER, .micro_batches = 2};
    const mx_strategy_ops *ops = mx_strategy_find(mx_strategy_of(strategy));
    mx_strategy *s = NULL;
    mx_record_init(rec);
    if (ops->create(&s, &cfg) != MX_OK) {
        CHECK(0, "%s on %s: %s", strategy, backend, mx_last_error());
        return;
    }
    mx_step_stats st;
    for (int i = 0; i < STEPS; i++)
        CHECK(ops->step(s, x, y, BATCH, 0.05f, &st) == MX_OK, "%s step %d: %s", strategy, i, mx_last_error());
    static mx_strategy_detail d;
    static mx_device_row rows[2];
    CHECK(ops->detail(s, &d) == MX_OK && d.ndevices == 2, "%s detail: %s", strategy, mx_last_error());
    for (int i = 0; i < 2; i++) rows[i] = (mx_device_row){.device = i, .busy_time = d.dev[i].busy};
    rec->devices = rows, rec->ndevices = 2;
    ops->destroy(s);
}

int main(void)
{
    mx_backend_ops slow = mx_cpu_backend_ops;
    slow.name = "slow1";
    slow.gemm = slow_gemm;
    CHECK(mx_backend_register(&slow) == MX_OK, "register: %s", mx_last_error());
    mx_rng rng;
    mx_rng_seed(&rng, 5);
    for (int i = 0; i < BATCH * PER; i++) x[i] = (float)mx_rng_normal(&rng);
    for (int i = 0; i < BATCH; i++) y[i] = (int32_t)(i % 10);

    mx_run_record rec;
    char line[160];
    train("data", "slow1", &rec);
    const double b0 = rec.devices ? rec.devices[0].busy_time : NAN, b1 = rec.devices ? rec.devices[1].busy_time : NAN;
    CHECK(b0 > 0 && b1 > b0 + 0.010, "data: busy %.2f ms and %.2f ms a step, expected device 1 at least 10 ms longer",
          b0 * 1e3, b1 * 1e3);
    CHECK(mx_report_straggler(&rec, line, sizeof line) && strstr(line, "device 1 "), "straggler line: '%s'",
          mx_report_straggler(&rec, line, sizeof line) ? line : "(none)");
    printf("%s\n", line);

    rec.devices[1].busy_time = rec.devices[0].busy_time * 1.1; /* within MX_DEVICE_STRAGGLER_RATIO */
    CHECK(!mx_report_straggler(&rec, line, sizeof line), "equal devices: '%s'", line);
    rec.devices[1].busy_time = NAN;
    CHECK(!mx_report_straggler(&rec, line, sizeof line), "one device measured: '%s'", line);

    train("model", "cpu", &rec);
    CHECK(rec.devices && rec.devices[0].busy_time > 0 && rec.devices[1].busy_time > 0, "model: stage busy %g %g",
          rec.devices ? rec.devices[0].busy_time : NAN, rec.devices ? rec.devices[1].busy_time : NAN);
    train("layer", "cpu", &rec);
    CHECK(rec.devices && isnan(rec.devices[0].busy_time), "layer: busy %g, expected NaN (lockstep)",
          rec.devices ? rec.devices[0].busy_time : 0.0);
    return check_summary("test_straggler");
}
