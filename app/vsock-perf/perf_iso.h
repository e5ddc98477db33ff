/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The isolation part (--isolation, perf_iso.c): what one VM's flood costs its neighbour on
 * the same worker lcore; its table and its records of the JSON.
 */
#ifndef APP_VSOCK_PERF_PERF_ISO_H
#define APP_VSOCK_PERF_PERF_ISO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "perf_args.h"

struct perf_run;

/* VM 5's ping (bytes each way), VM 3's flood packets (bytes). */
#define ISO_PEER_CID 5
#define ISO_PING 64u
#define ISO_FLOOD_PAYLOAD 65536u
/* A round trip slower than this (microseconds) is a stall, counted as such. */
#define ISO_SLOW_US 1000

/* The two conditions: VM 3 idle, VM 3 flooding. */
enum iso_cond { ISO_QUIET, ISO_FLOOD, ISO_NB };

/* The neighbour's (VM 5's) round trips in one condition, over all its slices. */
struct iso_result {
	bool ok;
	char err[160];
	unsigned int slices;
	double secs;			/* measured, the slices together */
	uint64_t round_trips;
	double p50, p99, p999, max;	/* microseconds */
	/* Over ISO_SLOW_US: stalls, counted as such; a percentile of few round trips hides them. */
	uint64_t slow;
	double slice_p50[MAX_REPS];	/* each slice's own median, microseconds */
	uint64_t flood_bytes;		/* VM 3's bytes the host readers took in the slices */
	/* The fewest in one slice: whether both VMs moved in every one. */
	uint64_t min_slice_rtts, min_slice_flood_bytes;
	double flood_gbps;
	double busy;			/* the worker's busy share of the slices; NAN: unknown */
	double p50_ratio, p99_ratio;	/* over the quiet condition's */
};

/* The part's results, once it ran. */
struct perf_iso {
	struct iso_result results[ISO_NB];
	unsigned int nb;		/* conditions measured: 0 or ISO_NB */
};

/* The part, its app started and stopped; whether it went well and the app exited cleanly. */
bool perf_iso_run(struct perf_run *run);
void perf_iso_print(const struct perf_run *run, FILE *f);
/* Its records of the JSON's "cases" (perf_json_next() before each). */
void perf_iso_write_json(const struct perf_run *run, FILE *f, bool *first);

#endif /* APP_VSOCK_PERF_PERF_ISO_H */
