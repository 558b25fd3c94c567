/* `mxbench project`'s output (project_print.c): the fitted model and the measured and modelled
 * points of every configuration, as text, Markdown, CSV or JSON. */
#ifndef MX_PROJECT_PRINT_H
#define MX_PROJECT_PRINT_H

#include "results/project.h"

/* fmt: "text", "md", "csv" or "json"; file names the study in text, md and json. */
void mx_project_print(const char *fmt, const char *file, const mx_projection *pr, int n);

#endif
