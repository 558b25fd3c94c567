/* Sweep progress on stderr: a redrawn bar (run k of n, current config, ETA) on a
 * terminal; one plain line per event when stderr is a file or a CI log. */
#ifndef MX_PROGRESS_H
#define MX_PROGRESS_H

typedef struct {
    int total, done, tty;
    double t_start, t_run;
    double work_done;   /* seconds spent on finished runs, for the ETA */
    int runs_timed;
    char label[160];
} mx_progress;

void mx_progress_start(mx_progress *p, int total);
/* A run begins (k is 0-based). */
void mx_progress_run(mx_progress *p, int k, const char *label);
/* Redraws the bar with the current run's elapsed time (terminal only). */
void mx_progress_tick(mx_progress *p, double run_elapsed);
/* A run ended; outcome is a short text ("ok 1234 samples/s", "failed: ..."); timed is
 * whether it ran (a skipped run takes no time and does not enter the ETA). */
void mx_progress_end(mx_progress *p, const char *outcome, int timed);
void mx_progress_finish(mx_progress *p);

#endif
