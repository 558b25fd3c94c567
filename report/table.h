/* A small table of preformatted cells, printed aligned or as Markdown, and the cell and field
 * formatting every output of the reports shares: the summary of `mxbench report` and of the
 * HTML page (summary.h), the rank, device and layer tables of a run, `mxbench compare`,
 * `ab` and `project`. */
#ifndef MX_REPORT_TABLE_H
#define MX_REPORT_TABLE_H

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

#endif
