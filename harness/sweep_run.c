/* Sweep runs as child processes (see sweep_run.h). */
#include "sweep_run.h"
#include "commands.h"
#include "base/status.h"
#include "opts.h"
#include "results/axes.h"
#include "results/results.h"
#include "kvstore/kvstore.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parts of the axes table that have a label_rank, in rank order. */
void mx_sweep_run_label(const mx_run_record *r, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int rank = 1, found = 1; found && len < n; rank++) {
        found = 0;
        for (int i = 0; i < mx_naxes && len < n; i++) {
            const mx_axis *a = &mx_axes[i];
            if (a->label_rank != rank) continue;
            found = 1;
            if (!mx_axis_in_label(a, r)) continue;
            const char *p = (const char *)r + a->off;
            char part[160];
            if (a->type == MX_AXIS_STR) snprintf(part, sizeof part, a->label_fmt, p);
            else if (a->type == MX_AXIS_INT) snprintf(part, sizeof part, a->label_fmt, *(const int *)p);
            else snprintf(part, sizeof part, a->label_fmt, *(const double *)p);
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? " " : "", part);
        }
    }
}

/* The child's command line: `mxbench train` with this run's configuration. */
typedef struct {
    char *store;
    size_t size, used;
    char **argv;
    int argc;
    int full; /* an argument did not fit in store: the list is unusable (never cut short) */
} arg_list;

static void arg(arg_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(arg_list *l, const char *fmt, ...)
{
    if (l->full) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(l->store + l->used, l->size - l->used, fmt, ap);
    va_end(ap);
    /* a cut argument would be another value (a --record path cut back to a results file's
     * own name): it is refused, and nothing past the store is written */
    if (n < 0 || (size_t)n >= l->size - l->used || l->argc >= 62) {
        l->full = 1;
        return;
    }
    l->argv[l->argc++] = l->store + l->used;
    l->used += (size_t)n + 1;
    l->argv[l->argc] = NULL;
}

/* Every entry of the axes table with a train option, as its child rule says; a string outside
 * the entry's choices goes to its other option (a --data directory instead of --dataset). */
int mx_sweep_child_argv(const mx_run_record *r, const char *record_path, char *store, size_t storesize, char **argv)
{
    arg_list l = {store, storesize, 0, argv, 0, 0};
    argv[0] = NULL;
    arg(&l, "/proc/self/exe");
    arg(&l, "train");
    /* a dist_* row: every worker rank trains one device on its share of the global batch */
    const int dist = mx_kv_name_has(r->kvstore, MX_KV_DIST) && r->gpus > 0;
    for (int i = 0; i < mx_naxes; i++) {
        const mx_axis *a = &mx_axes[i];
        if (!mx_axis_to_child(a, r)) continue;
        char v[256];
        mx_axis_text(a, r, v, sizeof v);
        if (dist && strcmp(a->name, "gpus") == 0) snprintf(v, sizeof v, "1");
        if (dist && strcmp(a->name, "global_batch") == 0) snprintf(v, sizeof v, "%d", r->global_batch / r->gpus);
        const int other = a->type == MX_AXIS_STR && a->train_opt_other && !mx_choice_ok(mx_axis_choices(a), v);
        arg(&l, "--%s", other ? a->train_opt_other : a->train_opt), arg(&l, "%s", v);
    }
    /* the sweep's warmup ramps from the base lr to the scaled one: a rule between two fields */
    if (r->warmup_epochs > 0) arg(&l, "--warmup-from"), arg(&l, "%.17g", r->base_lr);
    if (dist && r->servers > 0) arg(&l, "--servers"), arg(&l, "%d", r->servers);
    arg(&l, "--record"), arg(&l, "%s", record_path);
    arg(&l, "--quiet");
    return l.full ? -1 : 0;
}

/* Moves the child's measurements into the planned record, whose configuration (with the
 * sweep's view of it: axis values, scaling rule, compression, amp) stays authoritative. */
static void adopt(mx_run_record *r, mx_run_record *got)
{
    r->nsteps = got->nsteps, r->step_time = got->step_time, r->phase_time = got->phase_time;
    r->nloss = got->nloss, r->loss = got->loss, r->loss_scale = got->loss_scale;
    r->nepochs = got->nepochs, r->test_acc = got->test_acc, r->epoch_time = got->epoch_time;
    r->val_loss = got->val_loss;
    got->step_time = got->phase_time = got->test_acc = got->epoch_time = got->val_loss = NULL;
    got->loss = got->loss_scale = NULL;
    r->test_samples = got->test_samples;
    memcpy(r->metrics, got->metrics, sizeof r->metrics); /* every counter's figure */
    r->wall_time = got->wall_time;
    r->throughput_agg = got->throughput_agg;
    r->exit_status = got->exit_status;
    r->nranks = got->nranks, r->ranks = got->ranks; /* dist_*: every rank's row */
    got->nranks = 0, got->ranks = NULL;
    r->ndevices = got->ndevices, r->devices = got->devices; /* per device and per layer */
    r->nlayers = got->nlayers, r->layers = got->layers;
    got->ndevices = got->nlayers = 0, got->devices = NULL, got->layers = NULL;
    r->oversubscribed = r->oversubscribed || got->oversubscribed;
    r->noisy = got->noisy;
    r->host_others = got->host_others, r->host_load = got->host_load, r->host_steal = got->host_steal;
    /* what the child found about its machine: its devices (as planned: prepare_rows) and which
     * kernels AMP ran on */
    snprintf(r->device_type, sizeof r->device_type, "%s", got->device_type);
    snprintf(r->amp_kernels, sizeof r->amp_kernels, "%s", got->amp_kernels);
    /* a language model's tokens per sample and FLOPs per token, and the peak its devices offer */
    r->tokens_per_sample = got->tokens_per_sample;
    r->flops_per_token = got->flops_per_token, r->peak_flops = got->peak_flops;
    snprintf(r->peak_source, sizeof r->peak_source, "%s", got->peak_source);
    snprintf(r->status, sizeof r->status, "%s", got->status);
    snprintf(r->reason, sizeof r->reason, "%s", got->reason);
    mx_record_derive(r);
}

/* Open MPI's, Slurm's and the ranks' own lines that name a failed rank, most telling first: a
 * rank killed by a signal, a rank's own error, an abort (maybe by a rank that saw another
 * fail), the first rank to exit non-zero (mpirun's, then srun's "srun: error: HOST: task N:
 * Exited with exit code C"). */
static const char *const rank_marks[MX_CHILD_MARKS] = {
    "mpirun noticed that process rank", "mxbench train: rank ", "MPI_ABORT was invoked on rank", "Process name: [[",
    ": task ",
};

/* "rank 1 (worker 1): <the line>" from the first mark found, or "" */
static void rank_note(const mx_run_record *r, const mx_child_result *cr, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < MX_CHILD_MARKS; i++) {
        const char *line = cr->marks[i];
        if (!line[0]) continue;
        const char *p = strstr(line, rank_marks[i]) + strlen(rank_marks[i]);
        if (i == 3) p = strchr(p, ']') ? strchr(p, ']') + 2 : p; /* [[jobid,1],RANK] */
        char *end;
        const long rank = strtol(p, &end, 10);
        if (end == p || rank < 0) continue;
        char role[32];
        mx_sweep_mpi_role(r, (int)rank, role, sizeof role);
        while (*line == ' ') line++;
        snprintf(buf, n, "rank %ld (%s)%s: %s", rank, role, i >= 3 ? " exited first with an error" : "", line);
        return;
    }
}

static void fail(mx_run_record *r, const mx_child_result *cr, const char *why)
{
    snprintf(r->status, sizeof r->status, "failed");
    r->exit_status = cr->exit_status;
    r->wall_time = cr->seconds;
    const char *tail = cr->stderr_tail;
    char note[400];
    rank_note(r, cr, note, sizeof note);
    if (cr->timed_out)
        snprintf(r->reason, sizeof r->reason, "timed out after %.0f s (--timeout)%s; stderr: %s", cr->seconds,
                 mx_kv_name_has(r->kvstore, MX_KV_DIST) ? ", every rank ended" : "", tail);
    else if (cr->term_signal) {
        /* "killed by SIGKILL" says what happened (the OOM killer, a user); "exit status 137" does not */
        const char *abbrev = sigabbrev_np(cr->term_signal);
        snprintf(r->reason, sizeof r->reason, "%s: killed by SIG%s (signal %d: %s); stderr: %s", why,
                 abbrev ? abbrev : "?", cr->term_signal, strsignal(cr->term_signal), tail);
    } else if (note[0])
        snprintf(r->reason, sizeof r->reason, "%s (exit status %d): %s; stderr: %s", why, cr->exit_status, note, tail);
    else
        snprintf(r->reason, sizeof r->reason, "%s (exit status %d); stderr: %s", why, cr->exit_status, tail);
}

void mx_sweep_execute(mx_run_record *r, const mx_sweep_mpi *m, const char *tmp_path, const char *trace_path,
                      double timeout, mx_child_tick_fn tick, void *user, const volatile sig_atomic_t *interrupted)
{
    /* the axes' options fit in 4096 bytes; the record's path is added at its own length */
    const size_t nstore = 4096 + strlen(tmp_path);
    char *store = malloc(nstore), *train_argv[64], mstore[256], *argv[128], trace_opt[] = "--trace";
    if (!store || mx_sweep_child_argv(r, tmp_path, store, nstore, train_argv) < 0) {
        mx_child_result cr = {.exit_status = -1};
        snprintf(cr.stderr_tail, sizeof cr.stderr_tail, "%s",
                 store ? "the command line does not fit" : "out of memory");
        fail(r, &cr, "could not start the run");
        free(store);
        return;
    }
    if (trace_path) { /* the child's own option, after those of the axes */
        int argc = 0;
        while (train_argv[argc]) argc++;
        if (argc + 2 < (int)(sizeof train_argv / sizeof train_argv[0]))
            train_argv[argc] = trace_opt, train_argv[argc + 1] = (char *)trace_path, train_argv[argc + 2] = NULL;
    }
    const int dist = mx_kv_name_has(r->kvstore, MX_KV_DIST);
    if (dist) mx_sweep_mpi_argv(m, r, train_argv, mstore, sizeof mstore, argv);
    unlink(tmp_path);
    mx_child_result cr;
    /* mpirun ends its ranks on SIGTERM (they run in process groups of their own) */
    mx_child_opts opts = {timeout, dist ? 10 : 0, {NULL}};
    if (dist) memcpy(opts.marks, rank_marks, sizeof opts.marks);
    if (mx_child_run(dist ? argv : train_argv, &opts, tick, user, &cr) < 0) {
        cr.exit_status = -1;
        snprintf(cr.stderr_tail, sizeof cr.stderr_tail, "%s", mx_last_error());
        fail(r, &cr, "could not start the run");
        free(store);
        return;
    }
    free(store); /* the child has its copy */
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
        if (mx_sweep_child_argv(&runs[i], "unused.h5", store, sizeof store, argv) < 0) {
            mx_sweep_run_label(&runs[i], label, sizeof label);
            fprintf(stderr, "mxbench sweep: run %d of %d (%s): its options are longer than %zu characters; nothing "
                    "was run\n", i + 1, n, label, sizeof store);
            return 2;
        }
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
        const size_t len = strlen(buf);
        if (r->noisy && len < n) /* the host was busy: its timings measured other programs too */
            snprintf(buf + len, n - len, ", NOISY host (%.1f thread(s) of other programs ready to run)",
                     r->host_others);
    } else {
        snprintf(buf, n, "%s: %.200s", r->status, r->reason);
        char *nl = strchr(buf, '\n');
        if (nl) *nl = 0;
    }
}

