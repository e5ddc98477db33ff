/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scale part (--scale, perf_scale.c): what a worker lcore's idle VMs cost it and the one
 * VM that works; its table and its records of the JSON.
 */
#ifndef APP_VSOCK_PERF_PERF_SCALE_H
#define APP_VSOCK_PERF_PERF_SCALE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct perf_run;

/*
 * One (VM count, repetition) of it. VM 3 is the active VM; the figures are its 64 B round
 * trips and its 64 KiB g2h stream with the others idle, and the worker's rounds in a window
 * where every VM is idle.
 */
#define SCALE_PING 64u
#define SCALE_STREAM 65536u
struct scale_result {
	unsigned int vms, rep;
	bool ok;
	char err[160];
	uint64_t round_trips;
	double p50, p99;		/* microseconds */
	uint64_t bytes;			/* the stream's, checked */
	double gbps;
	uint64_t rounds, busy_rounds;	/* the worker's, in the idle window */
	double round_ns;		/* TSC time inside one idle round */
	double wall_round_ns;		/* the window's time over its rounds */
};

/* The part's results, once it ran. */
struct perf_scale {
	struct scale_result *results;
	unsigned int nb;
};

/* Every count of the plan, one app each; whether every one ran and its app exited cleanly. */
bool perf_scale_run(struct perf_run *run);
void perf_scale_print(const struct perf_run *run, FILE *f);
/* Its records of the JSON's "cases" (perf_json_next() before each). */
void perf_scale_write_json(const struct perf_run *run, FILE *f, bool *first);

#endif /* APP_VSOCK_PERF_PERF_SCALE_H */
