/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What vsock-perf reports of a run (perf_report.c): the summary table of the cases with
 * medians and paired ratios per variant, and the JSON file of every part that ran.
 */
#ifndef APP_VSOCK_PERF_PERF_REPORT_H
#define APP_VSOCK_PERF_PERF_REPORT_H

#include <stdio.h>

struct perf_run;

void perf_report_print(const struct perf_run *run, FILE *f);
/* The JSON document at @p path: the machine, the plan, the references, every record. */
void perf_report_write_json(const struct perf_run *run, const char *path);

#endif /* APP_VSOCK_PERF_PERF_REPORT_H */
