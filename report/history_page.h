/* The page of `mxbench history`: one self-contained HTML file (html.h) with the verdict on the
 * newest revision, the figures inline, the revisions, every configuration's values across
 * them and every change called, in sortable tables. */
#ifndef MX_HISTORY_PAGE_H
#define MX_HISTORY_PAGE_H

#include "results/history.h"

typedef struct {
    const char *const *paths;                 /* the files as given, by file index */
    unsigned metrics;                         /* bit 1 << MX_HIST_*: the metrics judged */
    const char *figures[MX_HIST_NMETRICS];    /* the SVG of each figure drawn, or NULL */
    char captions[MX_HIST_NMETRICS][256];     /* what each figure shows ("8 of 12 configurations ...") */
    const char *no_figures;                   /* why none was drawn (no gnuplot), or NULL */
} mx_history_page;

/* Writes the page to path (atomically: a page there before stays on failure). 0, or MX_EIO /
 * MX_EINVAL naming the path or the figure that could not be read. */
int mx_history_page_write(const mx_history *h, const mx_history_page *pg, const char *path);

#endif
