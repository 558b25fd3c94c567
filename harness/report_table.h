/* The tables of `mxbench report` and the commands beside it: the table type and the cell
 * formatting live in report/table.h (the HTML page shares them); the device and layer tables
 * a run prints on the terminal are the harness's own (report_detail.c). */
#ifndef MX_HARNESS_REPORT_TABLE_H
#define MX_HARNESS_REPORT_TABLE_H

#include "report/table.h"
#include "results/record.h"

/* The device and layer tables of a run (report_detail.c): a model or layer run's, and a data
 * run's devices where it has several; as text or md, and as JSON members
 * ', "devices": [...], "layers": [...]'. */
int mx_report_print_detail(const mx_run_record *r, int md);
void mx_report_json_detail(const mx_run_record *r);
/* A device whose busy time is MX_DEVICE_STRAGGLER_RATIO (results/answer.h) of the devices'
 * median or more: 1 and a line naming it, else 0 (fewer than two devices with busy times, or
 * none so slow). */
int mx_report_straggler(const mx_run_record *r, char *buf, size_t n);

#endif
