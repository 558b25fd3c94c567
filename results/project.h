/* Projection past the machine (`mxbench project`): a model of a data-parallel step, fitted
 * per configuration to the runs a results file measured on a few device counts, and
 * evaluated at others. A step is
 *
 *   T(p) = D(p) + s_c(p) C(b) + (k + e) s_m(p) M(p)      (+ the update, on one device)
 *
 * - D: assembling the batch on the host, a line in the global batch B (d0 + d1 B);
 * - C: forward and backward on a device of its own, a line in the device's share of the batch
 *   b = B / p (c0 + c1 b), from the phases the runs measured;
 * - M: one member's communication, from the kvstore's calls (the comm_rounds, comm_bus_bytes,
 *   comm_reduce_bytes figures and the fitted comm_alpha, beta, gamma): rounds alpha + bus
 *   bytes beta + summed bytes gamma, where the bytes grow as (p-1)/p from the measured device
 *   count and the rounds as p-1 on a ring (an MPI job; GPUs' NCCL) or not at all on the
 *   threads communicator of CPU workers in one process (one rendezvous a call); the calls,
 *   one per key or bucket, do not depend on p;
 * - e: the exposed share, the measured comm tail (the part of communication after the last
 *   backward) over M at the fitted counts: the share hidden behind backward stays as
 *   measured;
 * - k: what the hidden part still costs the forward and backward phases (comm workers of CPU
 *   devices run on the cores backward needs), fitted with C to those phases;
 * - s_c, s_m: CPU workers take turns on the host's cores: threads over cores when more
 *   (devices x threads per device for compute, one comm worker per device for M), 1 on GPUs.
 *
 * The parts are the measured median step split by the phases' mean shares. results/SCHEMA.md
 * and docs/projection.md state the assumptions. */
#ifndef MX_PROJECT_H
#define MX_PROJECT_H

#include "results.h"

#define MX_PROJ_MAX_GPUS 65536 /* largest device count a projection accepts */
#define MX_PROJ_MAX_POINTS 64  /* device counts per configuration (measured and asked) */

/* The model at one device count. */
typedef struct {
    int gpus;
    int measured;          /* runs of the file at this count (0: a prediction only) */
    int fitted;            /* 1: those runs are among the fitted ones */
    double throughput;     /* measured: the runs' median throughput (their mean); NaN if none */
    double step;           /* measured: median step time, s */
    double efficiency;     /* measured: as the file defines it (against its smallest count) */
    double m_throughput;   /* the model's samples/s */
    double m_step;         /* the model's step, s */
    double m_efficiency;   /* the model's throughput over (gpus / smallest fitted) x its own there */
    double error;          /* m_throughput / throughput - 1 (NaN without a measurement) */
    double data, compute, comm, update; /* the model's parts of its step, s */
    double share_compute, share_comm;   /* s_c, s_m: threads per core beyond 1 */
} mx_proj_point;

typedef struct {
    char label[256];       /* what the configuration is: workload, strategy, kvstore, batch ... */
    char kvstore[24], compression[16], workload[32], device_type[8], batch_mode[12];
    int batch;             /* the --batch value, per device or global as batch_mode says */
    int threads;           /* threads per device */
    int dist;              /* 1: an MPI job (one worker per device) */
    int fit_gpus[MX_PROJ_MAX_POINTS], nfit; /* the device counts fitted */
    /* ---- the fit */
    double d0, d1;         /* s, s per sample of the global batch */
    double c0, c1;         /* s, s per sample of one device's share, on a device of its own */
    double overlap;        /* k: the compute phases' growth per s_m M (communication overlapped with
                            * backward taking the cores from it; 0 where overlap is free) */
    double update;         /* s: one device's optimizer update (no kvstore); NaN if not fitted */
    double alpha, beta, gamma; /* s per message, per bus byte, per byte summed */
    int p_ref;             /* the device count the per-member call figures below are from */
    double rounds, bus_bytes, reduce_bytes; /* per member and step at p_ref */
    double exposed;        /* e */
    double cores;          /* the host's cores (NaN: unknown, no turns modelled) */
    int per_host;          /* dist: ranks one host ran (0: every rank on one host) */
    int cpu;               /* 1: CPU workers (turns on cores); 0: GPUs */
    int ring;              /* 1: rounds grow as p-1 (mpi, NCCL); 0: one rendezvous a call (threads) */
    char notes[1024];      /* what the fit could not tell and assumed, '; '-separated */
    char skipped[512];     /* non-empty: no projection, and why */
    /* ---- the points, ascending in gpus: every measured count and every one asked for */
    int npoints;
    mx_proj_point pt[MX_PROJ_MAX_POINTS];
} mx_projection;

typedef struct {
    const int *fit;        /* device counts to fit on (NULL: every measured one) */
    int nfit;
    const int *gpus;       /* device counts to predict, besides the measured ones */
    int ngpus;
    double cores;          /* > 0: the host's cores for the turns, instead of what the runs recorded */
} mx_proj_options;

/* The configurations of res (ok runs of the data strategy whose configurations differ only by
 * their device count, and the worker and server counts and global batch that follow it; a
 * one-device run without kvstore joins each kvstore's), each fitted and evaluated. *out is
 * malloc'd (*n entries; mx_projection_free). A configuration that cannot be projected has
 * its reason in skipped. MX_EINVAL when opt asks for a fit count no run has. */
int mx_project(const mx_results *res, const mx_proj_options *opt, mx_projection **out, int *n);
void mx_projection_free(mx_projection *p);

/* Fits pr to the runs, all of one configuration (its fields are set from them; the label is
 * the caller's), fitting those whose device count is in fit (all when nfit is 0); cores > 0
 * replaces what the runs recorded. Sets skipped when they do not determine the model. */
void mx_project_fit(mx_projection *pr, const mx_run_record *const *runs, int n, const int *fit, int nfit,
                    double cores);
/* The model of a fitted pr at p devices: the m_* fields and parts of pt (its measured
 * fields untouched). */
void mx_project_predict(const mx_projection *pr, int p, mx_proj_point *pt);

#endif
