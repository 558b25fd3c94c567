/* The answer of a study: for each workload and device count, which configuration to run and
 * what holds it back, computed from the records alone (`mxbench report` prints it first, the
 * HTML page leads with it, the ranking figure draws it).
 *
 * A row is ranked when it is ok, timed (not a `mxbench count` row), not oversubscribed and
 * not noisy; the others are listed in `left_out` with the reason. Among the ranked rows of a
 * group (one workload, one device count), the winner is the fastest by throughput among those
 * that reached the target (target_acc, or target_loss for language models), or among all of
 * them where no row had a target; the fastest to the target is the one with the least
 * time_to_acc (time_to_loss). A step is split into the parts below from the phases, the
 * overlap, the bubble and the per-device and per-rank times the record holds. */
#ifndef MX_ANSWER_H
#define MX_ANSWER_H

#include "results.h"

#include <stdio.h>

/* Where a step's time goes, seconds per step (they add up to the median step time, the
 * remainder in COMPUTE). */
typedef enum {
    MX_PART_COMPUTE,   /* forward and backward on the devices, net of what the parts below took */
    MX_PART_DATA,      /* assembling the batch on the host */
    MX_PART_COMM,      /* communication not hidden behind backward (comm and compress phases) */
    MX_PART_BUBBLE,    /* model: stages idle in the pipeline (bubble share x step) */
    MX_PART_UPDATE,    /* the optimizer update outside the kvstore */
    MX_PART_STRAGGLER, /* the slowest device or worker beyond the median one (the others wait) */
    MX_NPARTS
} mx_answer_part;

/* "compute", "data", "exposed communication", "pipeline bubble", "update", "stragglers" */
const char *mx_answer_part_name(mx_answer_part p);

typedef struct {
    const mx_run_record *run;    /* a row of the results the answer was built from */
    char label[200];             /* the configuration in words: "data-parallel, kvstore device", "... fp16 AMP" */
    double throughput;           /* samples/s (the record's median) */
    double tokens_per_s;         /* language models; NaN otherwise */
    double efficiency;           /* against one device of its series (NaN: no one-device run) */
    int reached;                 /* 1: reached the target, 0: did not, -1: no target asked */
    double time_to_target;       /* s (NaN: not reached or none) */
    double parts[MX_NPARTS];     /* s per step */
    double step;                 /* median step time, s */
    int noisy_host;              /* the host ran other work (kept: never ranked; see left_out) */
} mx_answer_entry;

typedef struct {
    char workload[32];
    char device_type[8];         /* cpu | cuda */
    int gpus;
    int nentries;                /* ranked rows, fastest first */
    mx_answer_entry *entries;
    int winner;                  /* index in entries of the fastest among rows that reached the
                                  * target (all rows without target); -1 when none qualifies */
    int runner_up;               /* the next one by the same rule; -1 */
    int fastest_to_target;       /* least time to the target; -1 without target or none reached */
    /* the projection of the winner's configuration (data strategy only) at 2x and 4x the
     * devices: samples/s and efficiency; NaN where it does not apply */
    double proj_throughput[2], proj_efficiency[2];
    char proj_note[256];         /* why there is none, or what it assumed */
} mx_answer_group;

typedef struct {
    const mx_run_record *run;
    char why[160];               /* "oversubscribed: 4 workers x 2 threads on 2 cores", "failed: ...", ... */
} mx_answer_left_out;

typedef struct {
    int ngroups;                 /* by workload, then device count ascending */
    mx_answer_group *groups;
    int nleft;
    mx_answer_left_out *left;
    char target_rule[200];       /* "test accuracy >= 0.85" / "validation loss <= 3.2" / "" (none asked) */
} mx_answer;

/* Builds the answer of res (which must outlive it). MX_ENOMEM on allocation failure; a file
 * without a rankable row gives an answer with no groups and every row in left. */
int mx_answer_build(const mx_results *res, mx_answer *out);
void mx_answer_free(mx_answer *a);

/* The answer as paragraphs of plain text (no markup), the order mx_answer_write prints them:
 * per workload and device count one paragraph, then one naming the rows left out and why.
 * *paras is malloc'd, each string too (mx_answer_paragraphs_free). MX_ENOMEM. */
int mx_answer_paragraphs(const mx_answer *a, char ***paras, int *n);
void mx_answer_paragraphs_free(char **paras, int n);

/* The answer in sentences a team pastes into a design review: per workload, a paragraph per
 * device count naming the winner with its throughput and efficiency, the runner-up, what each
 * loses its step to, the fastest to the target where it differs, each strategy's and kvstore's
 * efficiency, the projection, and the rows left out and why. md: Markdown emphasis and lists;
 * else plain text wrapped for a terminal (the paragraphs above, blank lines between). */
void mx_answer_write(const mx_answer *a, FILE *f, int md);

/* ---- additions: the straggler rules (`mxbench report`'s device and rank tables name the same
 * straggler), and the answer as JSON */

/* A device (or worker) is named a straggler at this ratio of the median or more. */
#define MX_DEVICE_STRAGGLER_RATIO 1.2

typedef struct {
    int who;       /* the slowest: its device number, or its rank; -1 when fewer than two measured */
    int n;         /* devices (workers) measured */
    double time;   /* its time per step, s: a device's busy_time; a worker's own time (below) */
    double median; /* the median of the n */
    double ratio;  /* time / median (NaN when the median is not positive) */
} mx_straggler;

/* The devices of r with a finite busy_time: the one that computed longest against their median.
 * 1 when its ratio is MX_DEVICE_STRAGGLER_RATIO or more, else 0 (fields still set when two or
 * more devices measured; who -1 and NaN otherwise). */
int mx_device_straggler(const mx_run_record *r, mx_straggler *s);
/* The workers of a dist_* run's rank table, by their own time per step: the job's mean step
 * (worker 0's series) less what the worker waited for the others (pull_time; dist_allreduce:
 * push_time, its all-reduces). In a synchronous job every worker's step lasts as long as the
 * slowest one's, so the step medians hide the straggler: the others' waiting shows it. A
 * worker without those figures, and every worker of dist_async (no one waits), counts its
 * median step. Returns as mx_device_straggler. */
int mx_rank_straggler(const mx_run_record *r, mx_straggler *s);

/* The answer as one JSON object: target_rule, groups (workload, device_type, gpus, winner,
 * runner_up, fastest_to_target: run ids or null; ranked: the ids fastest first), left_out
 * ({id, why}) and paragraphs (mx_answer_paragraphs). MX_ENOMEM. */
int mx_answer_write_json(const mx_answer *a, FILE *f);

#endif
