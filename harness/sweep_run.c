/* Sweep runs as child processes (see sweep_run.h). */
#include "sweep_run.h"
#include "commands.h"
#include "engine/status.h"
#include "results/results.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mx_sweep_run_label(const mx_run_record *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s x%d kv=%s batch=%d lr=%.4g%s%s%s%s", r->workload, r->strategy, r->gpus, r->kvstore,
             r->global_batch, r->lr, strcmp(r->compression, "none") ? " gc=" : "",
             strcmp(r->compression, "none") ? r->compression : "", strcmp(r->amp, "off") ? " amp=" : "",
             strcmp(r->amp, "off") ? r->amp : "");
}

/* The child's command line: `mxbench train` with this run's configuration. */
typedef struct {
    char *store;
    size_t size, used;
    char **argv;
    int argc;
} arg_list;

static void arg(arg_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(arg_list *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    l->argv[l->argc++] = l->store + l->used;
    l->used += (size_t)vsnprintf(l->store + l->used, l->size - l->used, fmt, ap) + 1;
    va_end(ap);
    l->argv[l->argc] = NULL;
}

static void child_argv(const mx_run_record *r, const char *record_path, char *store, size_t storesize, char **argv)
{
    arg_list l = {store, storesize, 0, argv, 0};
    arg(&l, "/proc/self/exe");
    arg(&l, "train");
    arg(&l, "--workload"), arg(&l, "%s", r->workload);
    arg(&l, "--strategy"), arg(&l, "%s", r->strategy);
    arg(&l, "--gpus"), arg(&l, "%d", r->gpus);
    arg(&l, "--kvstore"), arg(&l, "%s", r->gpus > 1 ? r->kvstore : "device");
    arg(&l, "--batch"), arg(&l, "%d", r->global_batch);
    arg(&l, "--lr"), arg(&l, "%.17g", r->lr);
    arg(&l, "--momentum"), arg(&l, "%.17g", r->momentum);
    arg(&l, "--wd"), arg(&l, "%.17g", r->wd);
    arg(&l, "--seed"), arg(&l, "%d", r->seed);
    arg(&l, "--threads-per-device"), arg(&l, "%d", r->threads_per_device);
    arg(&l, "--repeat"), arg(&l, "%d", r->repeats);
    arg(&l, "--warmup-steps"), arg(&l, "%d", r->warmup_steps);
    if (r->steps)
        arg(&l, "--steps"), arg(&l, "%d", r->steps);
    else
        arg(&l, "--epochs"), arg(&l, "%d", r->epochs);
    if (r->warmup_epochs > 0) {
        arg(&l, "--warmup-epochs"), arg(&l, "%.17g", r->warmup_epochs);
        arg(&l, "--warmup-from"), arg(&l, "%.17g", r->base_lr);
    }
    if (r->target_acc > 0) arg(&l, "--target-acc"), arg(&l, "%.17g", r->target_acc);
    if (strcmp(r->dataset, "fashion-mnist") == 0 || strcmp(r->dataset, "synthetic") == 0)
        arg(&l, "--dataset"), arg(&l, "%s", r->dataset);
    else
        arg(&l, "--data"), arg(&l, "%s", r->dataset);
    arg(&l, "--record"), arg(&l, "%s", record_path);
    arg(&l, "--quiet");
}

/* Moves the child's measurements into the planned record, whose configuration (with the
 * sweep's view of it: axis values, scaling rule, compression, amp) stays authoritative. */
static void adopt(mx_run_record *r, mx_run_record *got)
{
    r->nsteps = got->nsteps, r->step_time = got->step_time, r->phase_time = got->phase_time;
    r->nloss = got->nloss, r->loss = got->loss;
    r->nepochs = got->nepochs, r->test_acc = got->test_acc, r->epoch_time = got->epoch_time;
    got->step_time = got->phase_time = got->test_acc = got->epoch_time = NULL;
    got->loss = NULL;
    r->test_samples = got->test_samples;
    r->bytes_per_step = got->bytes_per_step;
    r->comm_overlap = got->comm_overlap;
    r->wall_time = got->wall_time;
    r->throughput_agg = got->throughput_agg;
    r->exit_status = got->exit_status;
    snprintf(r->status, sizeof r->status, "%s", got->status);
    snprintf(r->reason, sizeof r->reason, "%s", got->reason);
    mx_record_derive(r);
}

static void fail(mx_run_record *r, const mx_child_result *cr, const char *why)
{
    snprintf(r->status, sizeof r->status, "failed");
    r->exit_status = cr->exit_status;
    r->wall_time = cr->seconds;
    const char *tail = cr->stderr_tail;
    if (cr->timed_out)
        snprintf(r->reason, sizeof r->reason, "timed out after %.0f s (--timeout); stderr: %s", cr->seconds, tail);
    else if (cr->term_signal) {
        /* "killed by SIGKILL" says what happened (the OOM killer, a user); "exit status 137" does not */
        const char *abbrev = sigabbrev_np(cr->term_signal);
        snprintf(r->reason, sizeof r->reason, "%s: killed by SIG%s (signal %d: %s); stderr: %s", why,
                 abbrev ? abbrev : "?", cr->term_signal, strsignal(cr->term_signal), tail);
    } else
        snprintf(r->reason, sizeof r->reason, "%s (exit status %d); stderr: %s", why, cr->exit_status, tail);
}

void mx_sweep_execute(mx_run_record *r, const char *tmp_path, double timeout, mx_child_tick_fn tick, void *user,
                      const volatile sig_atomic_t *interrupted)
{
    char store[4096], *argv[64];
    child_argv(r, tmp_path, store, sizeof store, argv);
    unlink(tmp_path);
    mx_child_result cr;
    if (mx_child_run(argv, timeout, tick, user, &cr) < 0) {
        cr.exit_status = -1;
        snprintf(cr.stderr_tail, sizeof cr.stderr_tail, "%s", mx_last_error());
        fail(r, &cr, "could not start the run");
        return;
    }
    if (cr.timed_out || cr.term_signal || *interrupted) {
        fail(r, &cr, *interrupted ? "interrupted" : "the run failed");
        unlink(tmp_path);
        return;
    }
    /* a run that diverged exits 1 but leaves its record, marked */
    mx_results got;
    const int readable = mx_results_load(tmp_path, &got) == MX_OK;
    const int usable = readable && got.nruns == 1 &&
                       (cr.exit_status == 0 ? strcmp(got.runs[0].status, "ok") == 0
                                            : strcmp(got.runs[0].status, "diverged") == 0);
    if (usable) {
        got.runs[0].exit_status = cr.exit_status;
        adopt(r, &got.runs[0]);
    } else {
        fail(r, &cr, cr.exit_status == 0 ? "the run left no readable record" : "the run failed");
    }
    if (readable) mx_results_free(&got);
    unlink(tmp_path);
}

int mx_sweep_check_runs(const mx_run_record *runs, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(runs[i].status, "skipped") == 0) continue;
        char store[4096], *argv[64], label[256];
        child_argv(&runs[i], "unused.h5", store, sizeof store, argv);
        int argc = 0;
        while (argv[argc]) argc++;
        if (mx_train_validate_argv(argc - 1, argv + 1) != 0) {
            mx_sweep_run_label(&runs[i], label, sizeof label);
            fprintf(stderr, "mxbench sweep: run %d of %d (%s) would be refused (the message above); nothing was "
                    "run\n", i + 1, n, label);
            return 2;
        }
    }
    return 0;
}

void mx_sweep_outcome_text(const mx_run_record *r, char *buf, size_t n)
{
    if (strcmp(r->status, "ok") == 0) {
        if (isfinite(r->final_test_acc))
            snprintf(buf, n, "ok, %.1f samples/s, test acc %.4f", r->throughput, r->final_test_acc);
        else
            snprintf(buf, n, "ok, %.1f samples/s", r->throughput);
    } else {
        snprintf(buf, n, "%s: %.200s", r->status, r->reason);
        char *nl = strchr(buf, '\n');
        if (nl) *nl = 0;
    }
}

