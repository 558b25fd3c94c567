/* What the tests of the plot driver share: synthetic runs shaped like a study's (step times
 * that fall less than linearly with devices, a loss curve, epochs of test accuracy, memory
 * and bytes moved, a bubble on model rows), and readers of the files plot writes. */
#ifndef MX_TEST_PLOT_FIXTURE_H
#define MX_TEST_PLOT_FIXTURE_H

#include "results/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Deterministic noise in [-1, 1): the figures must not depend on the run. */
static inline double noise(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (double)(*state >> 8) / (1u << 23) - 1.0;
}

/* One synthetic run: step time falls with devices less than linearly (comm grows). */
static inline void make_run(mx_run_record *r, int idx, const char *strategy, const char *lr_scaling, int gpus)
{
    mx_record_init(r);
    unsigned seed = 17u + (unsigned)idx;
    snprintf(r->id, sizeof r->id, "r%04d", idx);
    snprintf(r->workload, sizeof r->workload, "lenet");
    snprintf(r->dataset, sizeof r->dataset, "fashion-mnist");
    snprintf(r->strategy, sizeof r->strategy, "%s", strategy);
    snprintf(r->kvstore, sizeof r->kvstore, "device");
    snprintf(r->lr_scaling, sizeof r->lr_scaling, "%s", lr_scaling);
    r->gpus = gpus, r->batch = 64, r->global_batch = 64 * gpus;
    r->base_lr = 0.05, r->lr = strcmp(lr_scaling, "linear") == 0 ? 0.05 * gpus : 0.05;
    r->epochs = 3, r->repeats = 1, r->seed = 1, r->test_samples = 10000, r->threads_per_device = 1;
    r->nsteps = 40;
    r->step_time = malloc(sizeof(double) * (size_t)r->nsteps);
    r->phase_time = malloc(sizeof(double) * (size_t)r->nsteps * MX_NPHASES);
    double comm = gpus > 1 ? 0.004 * log2(gpus) : 0;
    double part[MX_NPHASES] = {0.002, 0.010, 0.020, comm, 0.003};
    for (int i = 0; i < r->nsteps; i++) {
        double sum = 0;
        for (int p = 0; p < MX_NPHASES; p++) {
            double t = part[p] * (1 + 0.05 * noise(&seed));
            r->phase_time[i * MX_NPHASES + p] = t;
            sum += t;
        }
        r->step_time[i] = sum * (1 + 0.02 * noise(&seed)) + 0.001;
    }
    r->nloss = 300;
    r->loss = malloc(sizeof(float) * (size_t)r->nloss);
    for (int i = 0; i < r->nloss; i++)
        r->loss[i] = (float)(0.35 + 2.0 * exp(-i / (60.0 + 10 * gpus)) + 0.08 * noise(&seed));
    r->nepochs = 3;
    r->test_acc = malloc(sizeof(double) * 3);
    r->epoch_time = malloc(sizeof(double) * 3);
    for (int e = 0; e < 3; e++) {
        r->test_acc[e] = 0.80 + 0.03 * e - (strcmp(lr_scaling, "none") == 0 ? 0.01 * log2(gpus) : 0.004 * gpus);
        r->epoch_time[e] = 5.0 * (e + 1) / gpus;
    }
    /* memory on every device count, bytes moved from two devices, a bubble on model rows */
    r->metrics[MX_COUNTER_MEM_PEAK] = 20e6 / (strcmp(strategy, "model") == 0 ? gpus : 1);
    r->metrics[MX_COUNTER_MEM_PARAMS] = 2e6 / (strcmp(strategy, "model") == 0 ? gpus : 1);
    if (gpus > 1) r->metrics[strcmp(strategy, "model") == 0 ? MX_COUNTER_STAGE_BYTES : MX_COUNTER_BYTES] = 1e6 * gpus;
    if (strcmp(strategy, "model") == 0) {
        r->metrics[MX_COUNTER_BUBBLE] = (gpus - 1) / (gpus + 3.0) + 0.02;
        r->metrics[MX_COUNTER_BUBBLE_THEORY] = (gpus - 1) / (gpus + 3.0);
        r->micro_batches = 4;
    }
    mx_record_derive(r);
}

static inline int is_png(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return n == sizeof buf && memcmp(buf, sig, sizeof sig) == 0;
}

/* Whole file into a NUL-terminated buffer (the caller frees), or NULL. */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    if (buf) buf[got] = '\0';
    fclose(f);
    return buf;
}

static inline int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline int count_lines(const char *path, const char *prefix)
{
    char *text = slurp(path);
    int rows = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (strncmp(line, prefix, strlen(prefix)) == 0) rows++;
    free(text);
    return rows;
}

#endif
