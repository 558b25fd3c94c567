/* The HDF5 results store: one file per study, one group per run under /runs, a /summary
 * table, file attributes describing the machine and build. Every change is written to a
 * temporary copy and renamed into place, so a kill at any moment leaves the last complete
 * file. Layout and versioning: results/SCHEMA.md. */
#ifndef MX_RESULTS_H
#define MX_RESULTS_H

#include "record.h"

#define MX_RESULTS_SCHEMA_VERSION 1

/* File attributes: what ran where. Empty strings are written as "" (not present). */
typedef struct {
    char mxbench_version[32];
    char git_revision[64];
    char host[128];
    char cpu_model[128];
    char cpu_features[160]; /* instruction sets and caches, as `mxbench info` prints them */
    char gpu_model[128];
    char gpu_driver[64];
    char blas[128];
    char onednn[64];
    char cuda[64];
    char cudnn[64];
    char nccl[64];
    char mpi[128];
    char hdf5[64];
    char start_time[40];     /* ISO 8601, UTC */
    char command_line[4096];
} mx_results_meta;

typedef struct {
    int schema_version;
    mx_results_meta meta;
    int nruns;
    mx_run_record *runs;     /* in the order of /summary */
} mx_results;

/* Creates a new results file holding meta and no runs. An existing file is an error
 * (MX_EIO naming it and suggesting --force / --resume) unless force is set. */
int mx_results_create(const char *path, const mx_results_meta *meta, int force);

/* Adds a line to the file's command_line attribute: the command that continues it (a sweep's
 * --resume), so that the file says every command that wrote it; atomically, as append. */
int mx_results_add_command(const char *path, const char *command_line);

/* Adds one run (group /runs/<rec->id> and a /summary row), recomputes speedup/efficiency
 * for every row, and atomically replaces the file. */
int mx_results_append(const char *path, const mx_run_record *rec);

/* Replaces the run whose id is rec->id (group and /summary row, in place) with rec, and
 * recomputes speedup/efficiency; atomically, as append. For `sweep --resume --retry-failed`. */
int mx_results_replace(const char *path, const mx_run_record *rec);

/* Removes the files killed writers left beside path: "<path>.<tag>-<pid>..." for each of the
 * ntags tags (the store's own working copies are "tmp"; a sweep adds "run"), when process
 * <pid> no longer exists. Says so on stderr, each line starting with who ("mxbench sweep").
 * Returns how many it removed, or MX_EIO when the directory cannot be listed (also said on
 * stderr: the caller may go on). */
int mx_results_remove_leftovers(const char *path, const char *const *tags, int ntags, const char *who);

/* The lock a process holds on a results file while it writes it (lock.c): two writers of
 * one file would each replace it with their own version, losing the other's runs. */
typedef struct {
    int fd;     /* the locked "<path>.lock"; -1 when none is held */
    char *path;
} mx_results_lock;

/* Locks path for this process (flock on "<path>.lock", created). Another process holding it:
 * MX_EINVAL at once (no waiting), naming path and the holder ("pid 123: mxbench sweep ..."). */
int mx_results_lock_take(mx_results_lock *l, const char *path);
/* Removes the lock file and releases the lock; nothing when none is held. */
void mx_results_lock_release(mx_results_lock *l);

/* Reads a whole file. A file that is not HDF5, or HDF5 without our schema_version
 * attribute, or of a newer schema, gives MX_EFORMAT naming the file and the problem. */
int mx_results_load(const char *path, mx_results *out);
void mx_results_free(mx_results *r);

/* mx_results_load reads a file first in a child process, so that a file on which libhdf5
 * itself crashes is refused instead of taking the command down (results.c). On (the default)
 * or off; the structure-aware fuzzer turns it off: it builds every file through HDF5's own
 * API, so it looks for faults in mxbench's reader, and a fork per input would slow it tenfold. */
void mx_results_set_isolation(int on);

#endif
