/* Is the host busy beside mxbench? Readings of /proc taken before, during (about once a
 * second, between steps) and after a run: the threads of other programs ready to run, the
 * load average, and the share of CPU time the hypervisor stole. A benchmark on a machine
 * where another program takes a core measures that program too (OpenMP's spinning threads
 * collapse when a core is shared), so such a run is recorded `noisy` and drawn apart. On a
 * system without /proc every figure is NaN and no run is called noisy. */
#ifndef MX_HOSTLOAD_H
#define MX_HOSTLOAD_H

/* A run is noisy when other programs kept on average at least this many threads ready to
 * run (half a core), or the hypervisor stole at least MX_NOISY_STEAL of the CPU time. */
#define MX_NOISY_OTHERS 0.5
#define MX_NOISY_STEAL 0.05
#define MX_HOST_SAMPLE_EVERY 1.0 /* seconds between readings during a run */
#define MX_HOST_BURST 3          /* looks 2 ms apart making one reading of others: their least */

typedef struct {
    int ok;                     /* 0: /proc could not be read */
    double load1;               /* 1-minute load average */
    int others;                 /* threads in state R of processes not named as this one (least of a burst) */
    unsigned long long steal, total; /* /proc/stat's aggregate cpu jiffies */
} mx_host_sample;

typedef struct {
    int n;                      /* readings taken */
    double others_sum, load_max;
    int others_last;
    mx_host_sample first, last;
    double t_last;              /* mx_now() of the last reading */
    int off;                    /* a counted run (MXBENCH_COUNTED=1): no readings, figures NaN */
} mx_host_watch;

/* One reading now. Processes whose name (/proc/PID/comm) is this process's are mxbench's
 * own (a sweep's parent, an MPI job's other ranks) and never count as others. */
void mx_host_sample_now(mx_host_sample *s);

void mx_host_watch_start(mx_host_watch *w);            /* zeroes it and takes the first reading */
void mx_host_watch_add(mx_host_watch *w);              /* another reading */
/* A reading if MX_HOST_SAMPLE_EVERY has passed since the last; returns 1 when it took one. */
int mx_host_watch_tick(mx_host_watch *w);
/* The figures over the readings so far: mean threads of other programs ready to run, the
 * largest load average, the stolen share of CPU time between the first and last reading
 * (NaN with fewer than two), and whether that makes the run noisy. */
void mx_host_watch_figures(const mx_host_watch *w, double *others, double *load, double *steal, int *noisy);

#endif
