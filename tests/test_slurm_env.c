/* The Slurm allocation as cluster/slurm.h reads it from the environment: count lists as
 * Slurm writes them ("2(x3),1"), each node's entry, malformed lists refused (-1, never a
 * crash or a read past the string), a variable Slurm sets with a value it does not write
 * refused naming it, and no allocation outside one. */
#include "check.h"
#include "cluster/slurm.h"
#include "base/status.h"

static void clear(void)
{
    static const char *const vars[] = {"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
                                       "SLURM_NTASKS", "SLURM_JOB_CPUS_PER_NODE", "SLURM_GPUS_ON_NODE",
                                       "SLURM_STEP_ID", "SLURM_JOB_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
                                       "SLURM_NODEID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

int main(void)
{
    /* count lists */
    CHECK(mx_slurm_count_list("4", -1) == 4, "4");
    CHECK(mx_slurm_count_list("2(x3),1", -1) == 7, "2(x3),1 sums to 7");
    CHECK(mx_slurm_count_list("2(x3),1", 2) == 2 && mx_slurm_count_list("2(x3),1", 3) == 1, "entries of nodes 2, 3");
    CHECK(mx_slurm_count_list("2(x3),1", 4) == -1, "node 4 is past the list");
    CHECK(mx_slurm_count_list("8,16(x2)", 0) == 8 && mx_slurm_count_list("8,16(x2)", 2) == 16, "8,16(x2)");
    static const char *const bad[] = {"", "x", "2(", "2(x", "2(x)", "2(x0)", "2(y3)", "2(x3", "2,", ",2", "2,,3",
                                      "-1", "2 ", "99999999999999999999", "2(x99999999999)"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(mx_slurm_count_list(bad[i], -1) == -1 && mx_slurm_count_list(bad[i], 0) == -1, "'%s' refused", bad[i]);
    CHECK(mx_slurm_count_list(NULL, -1) == -1, "NULL refused");

    /* outside an allocation */
    clear();
    mx_slurm s;
    CHECK(mx_slurm_read(&s) == 0 && !s.inside, "no SLURM_JOB_ID: not inside");
    char line[400];
    mx_slurm_describe(&s, line, sizeof line);
    CHECK(strcmp(line, "not in a Slurm allocation") == 0, "outside: '%s'", line);

    /* an allocation of 2 nodes */
    setenv("SLURM_JOB_ID", "4711", 1);
    setenv("SLURM_JOB_NUM_NODES", "2", 1);
    setenv("SLURM_NTASKS", "16", 1);
    setenv("SLURM_JOB_CPUS_PER_NODE", "32(x2)", 1);
    setenv("SLURM_GPUS_ON_NODE", "4", 1);
    setenv("SLURM_JOB_NODELIST", "node[1-2]", 1);
    CHECK(mx_slurm_read(&s) == 0 && s.inside && s.nodes == 2 && s.tasks == 16 && s.cpus == 64 &&
              s.gpus_per_node == 4 && !s.in_step && strcmp(s.job_id, "4711") == 0,
          "read: inside %d nodes %d tasks %d cpus %d gpus %d", s.inside, s.nodes, s.tasks, s.cpus, s.gpus_per_node);
    mx_slurm_describe(&s, line, sizeof line);
    CHECK(strcmp(line, "job 4711: 2 nodes (node[1-2]), 16 tasks, 64 CPUs, 4 GPUs a node") == 0, "'%s'", line);

    /* a value Slurm does not write, named */
    setenv("SLURM_NTASKS", "16x", 1);
    CHECK(mx_slurm_read(&s) == MX_EINVAL && strstr(mx_last_error(), "SLURM_NTASKS='16x'"), "SLURM_NTASKS=16x: %s",
          mx_last_error());
    setenv("SLURM_NTASKS", "16", 1);
    setenv("SLURM_JOB_CPUS_PER_NODE", "32(x2", 1);
    CHECK(mx_slurm_read(&s) == MX_EINVAL && strstr(mx_last_error(), "SLURM_JOB_CPUS_PER_NODE"), "%s", mx_last_error());
    setenv("SLURM_JOB_CPUS_PER_NODE", "32(x2)", 1);
    setenv("SLURM_JOB_ID", "12; rm", 1);
    CHECK(mx_slurm_read(&s) == MX_EINVAL && strstr(mx_last_error(), "SLURM_JOB_ID"), "%s", mx_last_error());

    /* a task of a step: its node's share of the step's tasks */
    setenv("SLURM_JOB_ID", "4711", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "3,2", 1);
    setenv("SLURM_NODEID", "1", 1);
    CHECK(mx_slurm_read(&s) == 0 && s.in_step, "in a step");
    CHECK(mx_slurm_step_local_tasks() == 2, "node 1 of 3,2 runs 2 tasks: %d", mx_slurm_step_local_tasks());
    setenv("SLURM_NODEID", "5", 1);
    CHECK(mx_slurm_step_local_tasks() == 0, "a node past the list: unknown (0)");
    clear();
    CHECK(mx_slurm_step_local_tasks() == 0, "not a step: 0");
    return check_summary("test_slurm_env");
}
