/* A small table of preformatted cells, printed aligned or as Markdown: the summary of
 * `mxbench report`, and the rank, device and layer tables of a run. */
#ifndef MX_REPORT_TABLE_H
#define MX_REPORT_TABLE_H

#include "results/record.h"

#include <stddef.h>
#include <stdio.h>

enum { MAXCOLS = 72, CELL = 112 }; /* the summary: 17 fixed columns, every counter, 2 for processes */

typedef struct {
    int ncols, nrows;
    const char *head[MAXCOLS];
    int right[MAXCOLS];           /* numbers align right */
    char (*cell)[MAXCOLS][CELL];  /* [nrows][ncols] */
} table;

void mx_table_print_text(const table *t, FILE *f);
void mx_table_print_md(const table *t, FILE *f);
/* x with printf format fmt, or "-" for NaN (a figure not measured). */
void mx_fmt_num_n(char *buf, size_t n, double x, const char *fmt);
void mx_fmt_num(char *buf, double x, const char *fmt);

/* JSON: a string with its escapes; a number that reads back as the same double, null for
 * NaN and infinities (JSON has neither). */
void mx_json_string(const char *s);
/* CSV: a quoted field, quotes doubled, newlines as spaces. */
void mx_csv_string(const char *s);
void mx_json_number(double x);

/* The device and layer tables of a run (report_detail.c): a model or layer run's, and a data
 * run's devices where it has several; as text or md, and as JSON members
 * ', "devices": [...], "layers": [...]'. */
int mx_report_print_detail(const mx_run_record *r, int md);
void mx_report_json_detail(const mx_run_record *r);
/* A device whose busy time is MX_STRAGGLER_RATIO of the devices' median or more: 1 and a line
 * naming it, else 0 (fewer than two devices with busy times, or none so slow). */
#define MX_STRAGGLER_RATIO 1.2
int mx_report_straggler(const mx_run_record *r, char *buf, size_t n);

#endif
