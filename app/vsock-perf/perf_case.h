/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One case's measured window (perf_case.c): the stream cases guest to host and host to
 * guest, the round trips, and the counters read around them, into a struct result.
 */
#ifndef APP_VSOCK_PERF_PERF_CASE_H
#define APP_VSOCK_PERF_PERF_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "perf_args.h"

struct perf_run;

struct result {
	unsigned int variant, rep;
	enum mode mode;
	uint32_t payload;
	unsigned int burst, conns;
	bool ok;
	char err[160];
	double secs;
	uint64_t bytes, msgs;
	double mpps, gbps;
	double p50, p99, p999;		/* rr: microseconds */
	double floor_p50;		/* rr, --refs: its repetition's Unix ping-pong floor, us */
	/* CPU 0 <-> CPU 1 cache line round trip, ns, before the backend started and after it */
	double cl_before, cl_after;
	uint64_t vq_pkts;		/* used entries both rings, in the window */
	uint64_t idx;			/* used->idx stores both rings, in the window */
	double cyc_pkt, idx_pkt, irq_pkt, kick_pkt;
	double busy;			/* the worker's busy share of the window; NAN: unknown */
	double sys_pkt;			/* other than epoll_wait; -1: not measured */
	double csys_pkt;		/* this process's thread (guest + host end); -1: same */
	long csys;			/* the same, in the whole window */
	double epoll_pkt;		/* epoll_wait (idle rounds included); -1: not measured */
	/*
	 * Callgrind (-1: none): instructions per packet in the rounds that moved something,
	 * of dp_dev_poll and of the virtqueue code alone; of every round in the window;
	 * of one round that found nothing. From the window's dump: its instructions, rounds
	 * (calls of dp_dev_poll), and the busy ones among them (the worker's counter).
	 */
	double ir_pkt, ring_ir_pkt, ir_all_pkt, idle_round_ir;
	double cg_ir, cg_ring, cg_rounds;
	uint64_t busy_rounds;
	double rss_per_conn;		/* app RSS growth per connection opened, bytes */
};

/* A stream case (g2h, h2g) on run->pconns[0 .. r->conns - 1], open: its window in @p r. */
void perf_run_stream(struct perf_run *run, struct result *r);
/* The rr case, the same way. */
void perf_run_rr(struct perf_run *run, struct result *r);
/*
 * With --callgrind, after a case, its connections open and nothing moving: what a round
 * that finds nothing costs, taken out of @p r's figures.
 */
void perf_case_busy_only(struct perf_run *run, struct result *r);

#endif /* APP_VSOCK_PERF_PERF_CASE_H */
