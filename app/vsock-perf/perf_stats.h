/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The figures vsock-perf draws from its samples (perf_stats.c): shares, medians,
 * percentiles; and how a figure is written into the JSON.
 */
#ifndef APP_VSOCK_PERF_PERF_STATS_H
#define APP_VSOCK_PERF_PERF_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* @p a / @p b, 0 when @p b is. */
double perf_per(uint64_t a, uint64_t b);
/* Median of @p v (sorted in place; NAN if empty). */
double perf_median(double *v, unsigned int n);
/* Sort @p n round trips (ns); percentile @p p (0..1) of the sorted ones, in us (0: none). */
void perf_rtt_sort(uint64_t *ns, uint64_t n);
double perf_rtt_pct(const uint64_t *sorted, uint64_t n, double p);

/* "k": v, a JSON number, null if not finite; ", " after it if @p comma. */
void perf_json_num(FILE *f, const char *k, double v, bool comma);
/*
 * Before each record of the JSON's "cases", whichever part writes it: ",\n" after the
 * record before it. @p first: true before the first record.
 */
void perf_json_next(FILE *f, bool *first);

#endif /* APP_VSOCK_PERF_PERF_STATS_H */
