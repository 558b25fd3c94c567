/* The summary of a results file, one row per run, the same in every place that shows it:
 * `mxbench report`'s text and Markdown tables and the HTML page's full table. Which columns
 * show depends on the file (a counter's figure only where some run has it, the processes of
 * dist_* runs, the language models' figures), so the heads, the rows and the legend come from
 * one description here. Also the rank table of a dist_* run, which both show. */
#ifndef MX_REPORT_SUMMARY_H
#define MX_REPORT_SUMMARY_H

#include "report/table.h"
#include "results/results.h"

#include <stdio.h>

/* The optional columns a file's summary shows. */
typedef struct {
    int counter[MX_NCOUNTERS]; /* some run has the counter's figure */
    int procs;                 /* some run has processes other than one worker */
    int lm;                    /* some run is a language model's */
} mx_summary_cols;

void mx_summary_columns(const mx_results *res, mx_summary_cols *shown);

/* The whole summary of res as a table: heads, alignment and one row per run, in the file's
 * order (t->cell malloc'd: free it). MX_ENOMEM naming the row count. */
int mx_summary_table(const mx_results *res, const mx_summary_cols *shown, table *t);

/* What the columns mean, only those of the columns shown: a counter's column as its head and
 * help (a sentence without its full stop), the others as notes (head NULL) of whole lines,
 * wrapped for a terminal. mx_summary_legend_items fills items (MX_LEGEND_ITEMS of them at
 * most) and returns how many; mx_summary_legend prints them as the text report does under
 * its table, "head: help." a line. */
typedef struct {
    const char *head, *text;
} mx_legend_item;
enum { MX_LEGEND_ITEMS = MX_NCOUNTERS + 3 };
int mx_summary_legend_items(const mx_summary_cols *shown, mx_legend_item *items);
void mx_summary_legend(FILE *f, const mx_summary_cols *shown);

/* The kvstore a row shows: "none" for one device (files before one-device runs recorded
 * "none" hold the kvstore named on the command line, never used), dist_* as recorded. */
const char *mx_summary_kvstore(const mx_run_record *r);
/* The samples each device computes on per step (NaN where the record does not say). */
double mx_summary_batch_per_device(const mx_run_record *r);
/* 1 for a row not ok: failed, skipped, diverged. */
int mx_summary_not_ok(const mx_run_record *r);

/* The rank table of a dist_* run: one row per rank of its MPI job (rank, host, role, steps,
 * step times, vs median, MB/step, push, pull and busy ms), so that a straggler shows;
 * with_min adds each rank's shortest step. t->cell malloc'd: free it. MX_ENOMEM. */
int mx_summary_rank_table(const mx_run_record *r, int with_min, table *t);
/* The device table of a run: one row per device (device, its layers, bubble, parameter,
 * optimizer and peak memory, bytes sent per step, micro-batches in flight, busy ms). t->cell
 * malloc'd: free it. MX_ENOMEM. */
int mx_summary_device_table(const mx_run_record *r, table *t);
/* "kvstore dist_sync, 2 workers, 1 server; oversubscribed: ..." for the rank table's title. */
void mx_summary_rank_about(const mx_run_record *r, char *buf, size_t n);
/* What the rank table's columns mean, as plain text lines. */
void mx_summary_rank_legend(FILE *f);

#endif
