/* What a process can tell of the Slurm allocation it runs in, from the variables Slurm sets
 * (salloc, sbatch and srun: see sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"), without Slurm's
 * library: the sweep launches its dist_* rows with srun inside one, `mxbench info` says what
 * it holds, and a rank started by srun counts the ranks on its node. */
#ifndef MX_SLURM_H
#define MX_SLURM_H

#include <stddef.h>

typedef struct {
    int inside;        /* SLURM_JOB_ID is set: this process runs in an allocation */
    char job_id[32];
    int nodes;         /* SLURM_JOB_NUM_NODES (SLURM_NNODES): at least 1 inside */
    int tasks;         /* SLURM_NTASKS: the tasks asked for; 0: not given (salloc -N without -n) */
    int cpus;          /* the allocation's CPUs over every node (SLURM_JOB_CPUS_PER_NODE); 0: unknown */
    int gpus_per_node; /* SLURM_GPUS_ON_NODE on this node (taken for each node); 0: none given */
    int in_step;       /* SLURM_STEP_ID is set: this process is a task of an srun step */
    char nodelist[256];
} mx_slurm;

/* Reads the allocation from the environment. A variable Slurm sets with a value that is not
 * what Slurm writes is refused: returns MX_EINVAL with mx_error naming it and its value;
 * else 0 (s->inside 0 outside any allocation). */
int mx_slurm_read(mx_slurm *s);

/* The sum of a Slurm count list ("2(x3),1" is 2 + 2 + 2 + 1, as SLURM_JOB_CPUS_PER_NODE and
 * SLURM_TASKS_PER_NODE write them), or its entry for node `node` (0-based) when node >= 0.
 * Returns -1 for a malformed list or a node past its end. */
long mx_slurm_count_list(const char *list, int node);

/* The ranks of this srun step on this node (SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID), or
 * 0 when this process is not a task of a step or the variables say nothing usable. */
int mx_slurm_step_local_tasks(void);

/* One line for `mxbench info`: "job 123: 2 nodes (node[1-2]), 8 tasks, 64 CPUs, 4 GPUs a node"
 * or "not in a Slurm allocation". */
void mx_slurm_describe(const mx_slurm *s, char *buf, size_t n);

#endif
