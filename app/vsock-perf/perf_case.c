/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One case's measured window: stream rounds guest to host and host to guest, the
 * round trips, and the counters read around them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"
#include "perf_case.h"
#include "perf_stats.h"

/* Guest -> host: the guest sends whole payloads within its credit; the host reads. */
static void g2h_round(struct perf_run *run, uint32_t payload, unsigned int n, bool more)
{
	struct vfe_guest *g = &run->env.dp.g;
	uint64_t ring, read_max;
	unsigned int i;

	/*
	 * First what the worker did since the last round: the tx ring's room it made and the
	 * credit it gave back are this round's to send into, not the next one's.
	 */
	vfe_guest_poll(g);
	for (i = 0; i < n; i++) {
		struct pconn *pc = &run->pconns[i];
		uint32_t credit = vfe_guest_credit(pc->gc);
		long w;

		if (!more)
			break;
		credit -= credit % payload;
		if (credit > PERF_PAT_RUN)
			credit = PERF_PAT_RUN - PERF_PAT_RUN % payload;
		if (credit == 0)
			continue;
		w = vfe_guest_send(g, pc->gc, perf_pat_at(run->pat, pc->base + pc->sent), credit);
		if (w > 0)
			pc->sent += (uint64_t)w;
	}
	/*
	 * What the worker has not taken off the tx ring yet, polled again after the sends: the
	 * first poll's count would hold what the worker took meanwhile, and with many
	 * connections each one's outstanding bytes would all look still on the ring, never read.
	 */
	vfe_guest_poll(g);
	ring = (uint64_t)(g->v->vq[VFE_VSOCK_TX].num - vfe_guest_tx_free(g)) * payload;
	/*
	 * A ring that holds less than HOST_BATCH: a read takes one ring's bytes at most, and the
	 * guest refills the ring before the next one. At 64 B, reading all that waited took this
	 * thread longer than the worker takes to empty QEMU's 128 entries, and the worker waited
	 * a quarter of the time. A ring that holds more is read whole: capped there, the socket
	 * stays fuller and the worker's writes come up short (doc/performance.md).
	 */
	read_max = (uint64_t)g->v->vq[VFE_VSOCK_TX].num * payload;
	if (read_max >= HOST_BATCH)
		read_max = UINT64_MAX;
	for (i = 0; i < n; i++) {
		struct pconn *pc = &run->pconns[i];
		uint64_t out = pc->sent - pc->rcvd;
		uint64_t past = out > ring ? out - ring : 0;

		/*
		 * The host end reads once HOST_BATCH bytes or more wait past the ring while the
		 * guest streams, either host end alike (so that native/uds compares backends, not
		 * clients): a Unix socket read is a syscall, and a native read that finds nothing
		 * costs the client as much as dozens of packets' worth of checks. Less is past the
		 * ring: the socket or the pipe has room, so the worker goes on without this read
		 * (when the worker is behind, the ring holds what is outstanding, and a read would
		 * find nothing). It reads what is past the ring when the guest's credit is short
		 * (unread bytes may hold it back; mostly the credit waits for its update and a read
		 * would find nothing) and, a round at a time, all there is when the stream drains.
		 * The native pipe counts mbufs, not bytes, and a burst of a few packets takes an
		 * mbuf of its own: it may be full with less than HOST_BATCH in it, so a native end
		 * also reads what is past when the guest's ring is full (the worker may wait for
		 * it).
		 */
		if (more && past < HOST_BATCH &&
		    (past == 0 || (vfe_guest_credit(pc->gc) >= payload &&
				   (run->host == H_UDS || vfe_guest_tx_free(g) > 0))))
			continue;
		perf_host_recv(run, pc, read_max);
	}
}

/* Host -> guest: the host writes what its socket takes; the guest checks in place. */
static void h2g_round(struct perf_run *run, unsigned int n, bool more)
{
	struct vfe_guest *g = &run->env.dp.g;
	unsigned int i;

	for (i = 0; i < n && more; i++) {
		struct pconn *pc = &run->pconns[i];
		long w;

		if (pc->rcvd < pc->send_at)
			continue;
		w = perf_host_send(run, pc, pc->base + pc->sent, PERF_PAT_RUN);
		pc->sent += (uint64_t)w;
		/*
		 * A Unix socket or a native pipe that took less than offered is full: it has room
		 * again once the worker drained it into the guest, so the next write waits until
		 * the guest took HOST_BATCH bytes more (that much then fits, and more than that
		 * is queued: the worker does not run dry). One syscall per round would be one per
		 * few packets; a native send per round would offer the same held mbufs to a full
		 * pipe again and again.
		 */
		if (w < (long)PERF_PAT_RUN)
			pc->send_at = pc->rcvd + HOST_BATCH;
	}
	vfe_guest_poll(g);
	for (i = 0; i < n; i++) {
		struct pconn *pc = &run->pconns[i];
		struct vfe_guest_conn *c = pc->gc;
		uint32_t avail = vfe_guest_rx_avail(c), off, first;

		if (avail == 0)
			continue;
		/* Checked where the driver put it (its receive queue), then consumed. */
		off = c->fwd_cnt % c->buf_alloc;
		first = c->buf_alloc - off < avail ? c->buf_alloc - off : avail;
		perf_stream_check(run, pc, c->rxq + off, first);
		if (avail > first)
			perf_stream_check(run, pc, c->rxq, avail - first);
		vfe_guest_recv(g, c, NULL, avail);
	}
}

/* Both ends' books of @p n connections: every byte arrived as sent, no protocol breach. */
static void verify(const struct perf_run *run, struct result *r, unsigned int n)
{
	unsigned int i;

	r->ok = true;
	if (run->env.dp.g.errors) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "guest saw a protocol breach: %.100s",
			 run->env.dp.g.err);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct pconn *pc = &run->pconns[i];

		if (pc->herr) {
			r->ok = false;
			snprintf(r->err, sizeof(r->err), "conn %u: the native API returned %s", i,
				 strerror(-pc->herr));
			return;
		}
		if (!perf_pconn_ok(pc, "conn", i, r->err, sizeof(r->err))) {
			r->ok = false;
			return;
		}
	}
}

/*
 * perf first, then the counters, right before the timed loop: the busy cycles then fall in
 * the loop's time, not in perf's attach (the worker draining the warm-up's queues meanwhile,
 * or preempted by perf in a busy round, would count busy cycles the loop's time does not
 * hold: a busy share over 1).
 */
static void window_begin(struct perf_run *run, struct perf_counters *c)
{
	perf_syscalls_start(run);
	perf_counters_read(run, c);
	if (run->plan.callgrind)
		perf_cg_cmd(run, "-z");
}

/* The window's end; @p tsc: TSC cycles of its timed loop (for the worker's busy share). */
static void window_end(struct perf_run *run, struct result *r, const struct perf_counters *c0,
		       uint64_t tsc)
{
	struct perf_busy busy = { 0 };
	struct perf_counters c1;
	long epolls, cepolls, csys, sys;

	if (run->plan.callgrind)
		perf_cg_cmd(run, "-d");
	perf_counters_read(run, &c1);
	/*
	 * Then this thread's perf, before it makes any other syscall: what it counts beyond the
	 * window is its own kill and wait, the sleep that let perf attach, and on the uds host
	 * end the telemetry requests of the two counter reads (and callgrind_control's fork).
	 */
	csys = perf_syscalls_stop(run, PS_CLIENT, &cepolls);
	sys = perf_syscalls_stop(run, PS_WORKER, &epolls);
	if (!c0->ok || !c1.ok) {
		/* No per-packet figure rather than a wrong one: the medians skip it. */
		r->vq_pkts = 0;
		r->cyc_pkt = r->idx_pkt = r->irq_pkt = r->kick_pkt = r->busy = NAN;
		fprintf(stderr, "vsock-perf: the backend's counters could not be read\n");
		return;
	}
	r->vq_pkts = c1.vq_pkts - c0->vq_pkts;
	r->idx = c1.idx - c0->idx;
	r->cyc_pkt = perf_per(c1.busy_cycles - c0->busy_cycles, c1.cycles_pkts - c0->cycles_pkts);
	r->idx_pkt = perf_per(r->idx, r->vq_pkts);
	r->irq_pkt = perf_per(c1.irq - c0->irq, r->vq_pkts);
	r->kick_pkt = perf_per(c1.kicks - c0->kicks, r->vq_pkts);
	perf_busy_add(&busy, c0, &c1, tsc);
	r->busy = perf_busy_share(&busy);
	r->sys_pkt = sys >= 0 ? perf_per((uint64_t)sys, r->vq_pkts) : -1;
	/* The client never waits in epoll: every syscall it makes counts. */
	r->csys = csys >= 0 ? csys + RTE_MAX(cepolls, 0L) : -1;
	r->csys_pkt = r->csys >= 0 ? perf_per((uint64_t)r->csys, r->vq_pkts) : -1;
	r->epoll_pkt = epolls >= 0 ? perf_per((uint64_t)epolls, r->vq_pkts) : -1;
	r->busy_rounds = c1.busy_rounds - c0->busy_rounds;
	if (run->plan.callgrind)
		perf_cg_read_ir(run, &r->cg_ir, &r->cg_ring, &r->cg_rounds);
}

/* Whether the backend completed ring entries since @p c0 was read. */
static bool backend_moved(struct perf_run *run, const struct perf_counters *c0)
{
	struct perf_counters c;

	perf_counters_read(run, &c);
	return c.ok && c0->ok && c.vq_pkts != c0->vq_pkts;
}

/* One round of the stream case of @p r; @p more: send more, or only take what is there. */
static void stream_round(struct perf_run *run, const struct result *r, bool more)
{
	if (r->mode == M_G2H)
		g2h_round(run, r->payload, r->conns, more);
	else
		h2g_round(run, r->conns, more);
}

void perf_run_stream(struct perf_run *run, struct result *r)
{
	unsigned int n = r->conns;
	uint64_t t0, t1, b0, b1, end, deadline, tsc0;
	struct perf_counters c0;

	/* Warm up (caches, mempool, the sockets' buffers), then the measured window. */
	end = perf_now_ns() + (uint64_t)(run->plan.secs * 0.2e9);
	while (perf_now_ns() < end)
		stream_round(run, r, true);
	window_begin(run, &c0);
	b0 = perf_total_rcvd(run, n);
	tsc0 = rte_rdtsc();
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(run->plan.secs * 1e9);
	/* A window in which no byte arrived (the machine held us up) measures nothing: go on. */
	do {
		unsigned int k;

		for (k = 0; k < 16; k++)
			stream_round(run, r, true);
		t1 = perf_now_ns();
	} while ((t1 < end || (perf_total_rcvd(run, n) == b0 && t1 < end + STALL_TIMEOUT_NS)) &&
		 run->pconns[0].bad_at == UINT64_MAX);
	/*
	 * The smoke (tests/bench) checks that the backend's counters moved in the window; on a
	 * loaded machine the bytes that arrived may all be from buffers the backend filled
	 * before it began, so the window also goes on until the backend completed something.
	 */
	while (run->plan.smoke && c0.ok && !backend_moved(run, &c0) &&
	       t1 < end + STALL_TIMEOUT_NS && run->pconns[0].bad_at == UINT64_MAX) {
		unsigned int k;

		for (k = 0; k < 16; k++)
			stream_round(run, r, true);
		t1 = perf_now_ns();
	}
	b1 = perf_total_rcvd(run, n);
	window_end(run, r, &c0, rte_rdtsc() - tsc0);
	/*
	 * Everything in flight arrives before the books are checked. The native host end under
	 * callgrind is this process, its worker and this thread taking turns in valgrind: a
	 * guest's window of 64 B packets takes it longer.
	 */
	deadline = perf_now_ns() + STALL_TIMEOUT_NS *
		   (run->plan.callgrind && run->host == H_NATIVE ? 12 : 1);
	while (!perf_all_received(run, n) && perf_now_ns() < deadline)
		stream_round(run, r, false);
	r->secs = (double)(t1 - t0) / 1e9;
	r->bytes = b1 - b0;
	r->msgs = r->bytes / r->payload;
	r->gbps = (double)r->bytes * 8 / (double)(t1 - t0);
	r->mpps = (double)r->msgs / (double)(t1 - t0) * 1e3;
	verify(run, r, n);
	if (r->ok && r->bytes == 0) {
		/* The window went on STALL_TIMEOUT_NS past its end for a byte: none came. */
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "no byte arrived in the window, %llu s past its "
			 "end: the stream stalled",
			 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u));
	}
}

/*
 * Ping-pong: the host writes a request, the guest reads it whole and writes the same
 * number of bytes back, the host reads them all. RTT is host send to host receive.
 */
static bool rr_once(struct perf_run *run, struct pconn *pc, uint32_t p, uint64_t *rtt,
		    uint64_t deadline)
{
	struct vfe_guest *g = &run->env.dp.g;
	struct vfe_guest_conn *c = pc->gc;
	uint64_t t0 = perf_now_ns(), got = 0;
	size_t off = 0;

	while (off < p) {
		long w = perf_host_send(run, pc, pc->base + pc->sent + off, p - off);

		if (w > 0)
			off += (size_t)w;
		else if (pc->herr || perf_now_ns() > deadline)
			return false;
		else
			vfe_guest_poll(g);
	}
	pc->sent += p;
	/* The guest echoes: the bytes come back as the next part of the same stream. */
	off = 0;
	while (off < p) {
		uint32_t avail;

		vfe_guest_poll(g);
		avail = vfe_guest_rx_avail(c);
		if (avail) {
			uint32_t o = c->fwd_cnt % c->buf_alloc;
			uint32_t n = c->buf_alloc - o < avail ? c->buf_alloc - o : avail;
			long w;

			if (n > p - off)
				n = (uint32_t)(p - off);
			w = vfe_guest_send(g, c, c->rxq + o, n);
			if (w > 0) {
				vfe_guest_recv(g, c, NULL, (size_t)w);
				off += (size_t)w;
			}
		}
		if (perf_now_ns() > deadline)
			return false;
	}
	while (got < p) {
		long r = perf_host_recv(run, pc, p - got);

		if (r > 0) {
			got += (uint64_t)r;
		} else {
			vfe_guest_poll(g);
			if (pc->herr || perf_now_ns() > deadline)
				return false;
		}
	}
	*rtt = perf_now_ns() - t0;
	return true;
}

void perf_run_rr(struct perf_run *run, struct result *r)
{
	unsigned int n = r->conns, i = 0, k;
	uint64_t t0, t1, end, cnt = 0, deadline, tsc0;
	bool stalled = false;
	struct perf_counters c0;

	for (k = 0; k < 1000; k++) {
		uint64_t rtt;

		if (!rr_once(run, &run->pconns[k % n], r->payload, &rtt,
			     perf_now_ns() + STALL_TIMEOUT_NS))
			break;
	}
	window_begin(run, &c0);
	tsc0 = rte_rdtsc();
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(run->plan.secs * 1e9);
	deadline = end + STALL_TIMEOUT_NS;
	do {
		if (!rr_once(run, &run->pconns[i++ % n], r->payload, &run->rtts[cnt], deadline)) {
			stalled = true;
			break;
		}
		cnt++;
		t1 = perf_now_ns();
	} while (t1 < end && cnt < RTT_MAX);
	t1 = perf_now_ns();
	window_end(run, r, &c0, rte_rdtsc() - tsc0);
	r->secs = (double)(t1 - t0) / 1e9;
	r->msgs = cnt;
	r->bytes = cnt * r->payload * 2;
	r->mpps = (double)cnt / (double)(t1 - t0) * 1e3;
	r->gbps = (double)r->bytes * 8 / (double)(t1 - t0);
	if (cnt) {
		perf_rtt_sort(run->rtts, cnt);
		r->p50 = perf_rtt_pct(run->rtts, cnt, 0.5);
		r->p99 = perf_rtt_pct(run->rtts, cnt, 0.99);
		r->p999 = perf_rtt_pct(run->rtts, cnt, 0.999);
	}
	verify(run, r, n);
	if (stalled) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "a round trip did not complete within %llu s "
			 "(after %llu)", (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u),
			 (unsigned long long)cnt);
	} else if (r->ok && cnt == 0) {
		r->ok = false;
		snprintf(r->err, sizeof(r->err), "no round trip completed");
	}
}

/*
 * From a dump of idle rounds alone. The window's rounds that moved nothing (the worker spins
 * while this process waits for callgrind_control, or is descheduled) are then taken out of
 * its figures: what remains is the cost of moving packets.
 */
void perf_case_busy_only(struct perf_run *run, struct result *r)
{
	double ir, ring, rounds, idle;

	if (r->cg_ir < 0 || r->cg_rounds < 0 || r->vq_pkts == 0)
		return;
	r->ir_all_pkt = r->cg_ir / (double)r->vq_pkts;
	perf_cg_cmd(run, "-z");
	/*
	 * The device idle since the window went cold (the worker no longer polls it): a kick
	 * with nothing new brings it back for the idle rounds this dump is for.
	 */
	if (vfe_vq_kick(&run->env.dp.g.v->vq[VFE_VSOCK_TX]) < 0)
		return;
	usleep(300000);
	perf_cg_cmd(run, "-d");
	perf_cg_read_ir(run, &ir, &ring, &rounds);
	if (ir < 0 || rounds <= 0)
		return;
	idle = RTE_MAX(r->cg_rounds - (double)r->busy_rounds, 0.0);
	r->idle_round_ir = ir / rounds;
	r->ir_pkt = (r->cg_ir - idle * r->idle_round_ir) / (double)r->vq_pkts;
	if (r->cg_ring >= 0)
		r->ring_ir_pkt = (r->cg_ring - idle * RTE_MAX(ring, 0.0) / rounds) /
				 (double)r->vq_pkts;
}
