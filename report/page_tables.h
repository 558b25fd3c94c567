/* The page's tables (page_tables.c): where each ranked configuration's step goes, the rank
 * tables of dist_* runs, the device tables, and the full summary. Internal to report/page*.c;
 * each writes its section (an <h2> and what belongs under it) to f. */
#ifndef MX_REPORT_PAGE_TABLES_H
#define MX_REPORT_PAGE_TABLES_H

#include "results/answer.h"
#include "results/results.h"

#include <stdio.h>

/* Per group of the answer, its ranked configurations with the parts of their step (ms and
 * share), the winner's row of class "win"; then the rows left out and why. */
void mx_page_breakdown(FILE *f, const mx_answer *a);
/* The rank table of every dist_* run and the device table of every run with devices; nothing
 * where no run has either. MX_ENOMEM. */
int mx_page_ranks_devices(FILE *f, const mx_results *res);
/* Every run as the text report's summary shows it, sortable; rows not ok of class "bad".
 * MX_ENOMEM. */
int mx_page_summary(FILE *f, const mx_results *res);

#endif
