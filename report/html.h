/* Writing one self-contained HTML page (no network access needed to read it): escaped text,
 * figures inlined as SVG data, tables a reader sorts by clicking a column's head, and the
 * page written to a temporary file and renamed into place, so that a page written before is
 * never left half-replaced. Shared by the report page and the history page. */
#ifndef MX_HTML_H
#define MX_HTML_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    char *path;  /* where the page goes */
    char *tmp;   /* "<path>.tmp-<pid>", renamed to path by mx_html_close */
} mx_html;

/* Opens a page for path: checks path (mx_path_check_output), creates its folder, opens the
 * temporary file and writes the doctype, the head (title, the shared style sheet, the
 * sorting script) and <body>. MX_EINVAL/MX_EIO naming path; nothing is written then. */
int mx_html_open(mx_html *h, const char *path, const char *title);
/* Ends the page (</body></html>), flushes and renames it into place. Any write error on the
 * way (a full disk) gives MX_EIO naming path, and the temporary file is removed: the page
 * that was there before stays. */
int mx_html_close(mx_html *h);
/* Drops an open page (an error on the way): removes the temporary file. */
void mx_html_abort(mx_html *h);

/* s with &, <, >, " and ' escaped. */
void mx_html_text(FILE *f, const char *s);
/* printf, then escaped as mx_html_text. */
void mx_html_textf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An <img> whose source is the SVG file at svg_path, inlined as base64 data (each figure
 * keeps its own ids, which several <svg> elements in one page would share), with alt text.
 * MX_EIO naming the file when it cannot be read. */
int mx_html_svg(FILE *f, const char *svg_path, const char *alt);

/* A sortable table: mx_html_table_begin writes <table class="sortable"> and the head row
 * (ncols heads; right[c] set: the column holds numbers, aligned right, sorted as numbers);
 * then rows through mx_html_row_begin, mx_html_cell (escaped text, "" or "-" for none) and
 * mx_html_row_end; mx_html_table_end closes it. */
void mx_html_table_begin(FILE *f, const char *const *heads, const int *right, int ncols);
void mx_html_row_begin(FILE *f, const char *css_class);
void mx_html_cell(FILE *f, const char *text, int right);
void mx_html_row_end(FILE *f);
void mx_html_table_end(FILE *f);

#endif
