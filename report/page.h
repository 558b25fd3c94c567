/* The HTML report of a results file (`mxbench report FILE --format html`): one self-contained
 * page that leads with the answer (which configuration to run and what holds it back), then
 * the figures inline, where each configuration's step goes, the per-rank and per-device views
 * and the full summary table, sortable. */
#ifndef MX_REPORT_PAGE_H
#define MX_REPORT_PAGE_H

#include "results/results.h"

/* Writes the page of res (loaded from results_path) to out_html, atomically (html.h): a page
 * there before stays whole when anything fails. The figures are drawn with the gnuplot scripts
 * in plot_scripts_dir into a temporary directory, inlined and the directory removed; without
 * gnuplot, or when it fails, the page is still written and says why it has no figures
 * (verbose: each gnuplot command and its warnings on stderr, as `mxbench plot --verbose`).
 * MX_EINVAL for an out_html that is no regular file's path, MX_EIO when it cannot be written,
 * MX_ENOMEM; mx_last_error() names the problem. */
int mx_report_page(const char *results_path, const mx_results *res, const char *out_html,
                   const char *plot_scripts_dir, int verbose);

/* Where the page of results_path goes by default: beside it, ".h5" replaced by ".html" (added
 * to a name without it). malloc'd; NULL when out of memory. */
char *mx_report_page_path(const char *results_path);

#endif
