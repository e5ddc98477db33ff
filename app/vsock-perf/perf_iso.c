/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The isolation part (--isolation): what one VM's flood costs its neighbour on the same worker
 * lcore. One app serves VMs 3 and 5, both polled by its one worker (lcore 1, as in
 * tests/faults/test_faults_fair.c: two VMs, one worker lcore; checked in /vsock/vms). VM 3's
 * guest streams 64 KiB packets guest -> host on plan.flood_conns connections to host readers
 * that take everything there; VM 5's guest plays 64 B ping-pong with its host (the guest sends,
 * the host reads the 64 bytes and writes them back, the guest receives them), each round trip
 * timed with CLOCK_MONOTONIC from the guest's send to the echo's last byte in the guest. The
 * figures are VM 5's round trips while VM 3 floods and while VM 3 is idle (its quiet figure).
 *
 * Quiet and flood slices alternate, --reps of each, --time seconds each: this machine changes
 * speed from one second to the next, and whatever else runs on it meanwhile then weighs on both
 * conditions alike, where one long window of each would compare two states of the machine.
 *
 * This one thread plays both guests and every host end on CPU 0; the worker has CPU 1. Its
 * flood work (refilling VM 3's ring, draining the flood's host sockets) is done between round
 * trips, never during one, so that a round trip holds the worker's time and none of this
 * loop's: what the flood queued meanwhile (the app's 256 KiB of credit per connection, and the
 * host sockets' buffers) keeps the worker busy with VM 3 for longer than a round trip. The
 * worker's busy share in each condition (record-core-cycles) shows whether it stayed busy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "vsock_perf.h"

/* Round trips before the first slice, quiet: caches, the sockets, the worker's backoff. */
#define ISO_WARM_RTTS 1000
/* Flood turns before a flood slice: VM 3's queues filled before its first round trip. */
#define ISO_PRIME_TURNS 16

const char *const iso_cond_name[ISO_NB] = { "quiet", "flood" };
struct iso_result iso_results[ISO_NB];
unsigned int nb_iso;

/* VM 5, the neighbour (VM 3 is env.dp, its connections pconns[0 .. flood_conns - 1]). */
static struct dp_env peer;
/* Its one ping-pong connection: guest sends the pattern, checks the echo against it. */
static struct pconn pp;
static uint64_t *rtt[ISO_NB];
static uint64_t nb_rtt[ISO_NB];
/* The worker's busy cycles in each condition's slices, and the slices' TSC cycles. */
static struct perf_busy busy[ISO_NB];

/*
 * The flood, one turn: VM 3's guest sends whole 64 KiB packets within each connection's credit
 * (if @p more), then the host readers take what is there. Every byte is checked against the
 * pattern at its stream offset and summed (perf_host_recv(), as the g2h case): it costs this
 * loop time between round trips only, and a flood of wrong bytes would measure nothing.
 */
static void flood_turn(bool more)
{
	unsigned int i;

	for (i = 0; i < plan.flood_conns && more; i++) {
		struct pconn *pc = &pconns[i];

		while (vfe_guest_credit(pc->gc) >= ISO_FLOOD_PAYLOAD) {
			long w = vfe_guest_send(&env.dp.g, pc->gc, perf_pat_at(pc->base + pc->sent),
						ISO_FLOOD_PAYLOAD);

			if (w <= 0)
				break;
			pc->sent += (uint64_t)w;
		}
	}
	vfe_guest_poll(&env.dp.g);
	for (i = 0; i < plan.flood_conns; i++)
		perf_host_recv(&pconns[i], UINT64_MAX);
}

/*
 * One round trip of VM 5: its nanoseconds, or 0 when it did not complete by @p deadline or an
 * end failed. The echo is checked after the clock stops.
 */
static uint64_t pp_once(uint64_t deadline)
{
	struct vfe_guest *g = &peer.g;
	uint8_t buf[ISO_PING];
	uint64_t t0 = perf_now_ns(), t1;
	size_t off = 0;

	while (off < ISO_PING) {
		long w = vfe_guest_send(g, pp.gc, perf_pat_at(pp.base + pp.sent + off),
					ISO_PING - off);

		if (w < 0)
			return 0;
		off += (size_t)w;
		if (off < ISO_PING) {
			/* No descriptor or credit left: take the device's completions. */
			vfe_guest_poll(g);
			if (perf_now_ns() > deadline)
				return 0;
		}
	}
	pp.sent += ISO_PING;
	/* The host end reads the ping whole, then writes it back. */
	for (off = 0; off < ISO_PING;) {
		ssize_t r = recv(pp.fd, buf + off, ISO_PING - off, MSG_DONTWAIT);

		if (r > 0)
			off += (size_t)r;
		else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
			 perf_now_ns() > deadline)
			return 0;
	}
	for (off = 0; off < ISO_PING;) {
		ssize_t w = send(pp.fd, buf + off, ISO_PING - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0)
			off += (size_t)w;
		else if ((w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
			 perf_now_ns() > deadline)
			return 0;
	}
	for (off = 0; off < ISO_PING;) {
		vfe_guest_poll(g);
		if (vfe_guest_rx_avail(pp.gc))
			off += vfe_guest_recv(g, pp.gc, buf + off, ISO_PING - off);
		else if (perf_now_ns() > deadline)
			return 0;
	}
	t1 = perf_now_ns();
	perf_stream_check(&pp, buf, ISO_PING);
	return t1 > t0 ? t1 - t0 : 1;
}

/* Both VMs on one worker lcore: the point of the part, so it is checked, not assumed. */
static bool one_lcore(char *err, size_t len)
{
	char json[OPS_TEL_MAX], key[32];
	uint64_t l3, l5, nb = 0;

	if (ops_tel(&env, "/vsock/vms", json, sizeof(json)) < 0 ||
	    ops_json_u64(json, "3.lcore", &l3) < 0 || ops_json_u64(json, "5.lcore", &l5) < 0 ||
	    ops_tel(&env, "/vsock/lcores", json, sizeof(json)) < 0) {
		snprintf(err, len, "no /vsock/vms or /vsock/lcores reply");
		return false;
	}
	snprintf(key, sizeof(key), "%llu.nb_vms", (unsigned long long)l3);
	if (l3 != l5 || ops_json_u64(json, key, &nb) < 0 || nb != 2) {
		snprintf(err, len, "VMs 3 and 5 on lcores %llu and %llu (%llu VMs on the first)",
			 (unsigned long long)l3, (unsigned long long)l5, (unsigned long long)nb);
		return false;
	}
	return true;
}

/* Every flood byte the guest sent has reached its host reader (checked). */
static bool flood_drained(void)
{
	return perf_all_received(plan.flood_conns);
}

/*
 * One slice of condition @p c: round trips for plan.secs, the flood fed between them if it is
 * on, and the books of the slice added to its condition's result. False on a stall.
 */
static bool slice(enum iso_cond c, char *err, size_t len)
{
	struct iso_result *r = &iso_results[c];
	bool flood = c == ISO_FLOOD;
	struct perf_counters w0, w1;
	uint64_t t0, t1, end, b0, b1, k0 = nb_rtt[c], tsc0, tsc1;
	unsigned int k;

	for (k = 0; flood && k < ISO_PRIME_TURNS; k++)
		flood_turn(true);
	/* Telemetry outside the timed window: it wakes a thread of the app on this CPU. */
	perf_counters_read(&w0);
	b0 = perf_total_rcvd(plan.flood_conns);
	tsc0 = rte_rdtsc();
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(plan.secs * 1e9);
	/* A slice ends with its last round trip, so that none straddles two. */
	do {
		uint64_t ns;

		if (flood)
			flood_turn(true);
		ns = pp_once(perf_now_ns() + STALL_TIMEOUT_NS);
		if (ns == 0) {
			snprintf(err, len, "%s slice %u: a round trip of VM 5 did not complete "
				 "within %llu s (after %llu)", iso_cond_name[c], r->slices,
				 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u),
				 (unsigned long long)(nb_rtt[c] - k0));
			return false;
		}
		if (nb_rtt[c] < RTT_MAX)
			rtt[c][nb_rtt[c]++] = ns;
		t1 = perf_now_ns();
	} while (t1 < end);
	tsc1 = rte_rdtsc();
	b1 = perf_total_rcvd(plan.flood_conns);
	perf_counters_read(&w1);
	perf_busy_add(&busy[c], &w0, &w1, tsc1 - tsc0);
	r->secs += (double)(t1 - t0) / 1e9;
	r->flood_bytes += b1 - b0;
	if (r->slices == 0 || nb_rtt[c] - k0 < r->min_slice_rtts)
		r->min_slice_rtts = nb_rtt[c] - k0;
	if (r->slices == 0 || b1 - b0 < r->min_slice_flood_bytes)
		r->min_slice_flood_bytes = b1 - b0;
	if (r->slices < MAX_SLICES && nb_rtt[c] > k0) {
		perf_rtt_sort(rtt[c] + k0, nb_rtt[c] - k0);
		r->slice_p50[r->slices] = perf_rtt_pct(rtt[c] + k0, nb_rtt[c] - k0, 0.5);
	}
	r->slices++;
	if (flood) {
		/* Quiet means VM 3 idle: everything it sent read before the next slice. */
		uint64_t deadline = perf_now_ns() + STALL_TIMEOUT_NS;

		while (!flood_drained() && perf_now_ns() < deadline)
			flood_turn(false);
		if (!flood_drained()) {
			snprintf(err, len, "the flood did not drain within %llu s",
				 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u));
			return false;
		}
	}
	return true;
}

/* Both ends' books: no protocol breach, every byte echoed or streamed intact. */
static bool books(char *err, size_t len)
{
	const struct pconn *pc = NULL;
	unsigned int i;

	for (i = 0; i < plan.flood_conns && pc == NULL; i++)
		if (pconns[i].bad_at != UINT64_MAX || pconns[i].rcvd != pconns[i].sent ||
		    perf_csum_value(&pconns[i].rx_sum) != perf_sent_csum(&pconns[i]))
			pc = &pconns[i];
	if (env.dp.g.errors || peer.g.errors) {
		snprintf(err, len, "VM %d's guest saw a protocol breach: %.100s",
			 env.dp.g.errors ? DP_CID : ISO_PEER_CID,
			 env.dp.g.errors ? env.dp.g.err : peer.g.err);
		return false;
	}
	if (pp.bad_at != UINT64_MAX || pp.rcvd != pp.sent) {
		snprintf(err, len, "VM 5: %llu bytes pinged, %llu echoed, first bad byte %lld",
			 (unsigned long long)pp.sent, (unsigned long long)pp.rcvd,
			 (long long)pp.bad_at);
		return false;
	}
	if (pc != NULL) {
		snprintf(err, len, "flood conn %u: sent %llu, received %llu, first bad byte %lld, "
			 "checksums %s", (unsigned int)(pc - pconns), (unsigned long long)pc->sent,
			 (unsigned long long)pc->rcvd, (long long)pc->bad_at,
			 perf_csum_value(&pc->rx_sum) == perf_sent_csum(pc) ? "equal" : "differ");
		return false;
	}
	return true;
}

/* The figures of each condition from its round trips and books. */
static void finish(void)
{
	unsigned int c;

	for (c = 0; c < ISO_NB; c++) {
		struct iso_result *r = &iso_results[c];
		uint64_t n = nb_rtt[c];

		perf_rtt_sort(rtt[c], n);
		r->round_trips = n;
		r->busy = perf_busy_share(&busy[c]);
		r->p50 = perf_rtt_pct(rtt[c], n, 0.5);
		r->p99 = perf_rtt_pct(rtt[c], n, 0.99);
		r->p999 = perf_rtt_pct(rtt[c], n, 0.999);
		r->max = n ? (double)rtt[c][n - 1] / 1e3 : 0;
		for (r->slow = 0; r->slow < n && rtt[c][n - 1 - r->slow] > ISO_SLOW_US * 1000ull;)
			r->slow++;
		r->flood_gbps = r->secs > 0 ? (double)r->flood_bytes * 8 / (r->secs * 1e9) : 0;
		if (r->ok && n == 0) {
			r->ok = false;
			snprintf(r->err, sizeof(r->err), "no round trip completed");
		}
	}
	for (c = 0; c < ISO_NB; c++) {
		iso_results[c].p50_ratio = iso_results[c].p50 / iso_results[ISO_QUIET].p50;
		iso_results[c].p99_ratio = iso_results[c].p99 / iso_results[ISO_QUIET].p99;
	}
}

/* The ping-pong connection: VM 5's guest connects, the host accepts. 0 or -errno. */
static int pp_open(void)
{
	int lfd = dp_listen(&peer, PORT_RR, SOCK_STREAM);

	memset(&pp, 0, sizeof(pp));
	pp.fd = -1;
	pp.h = -1;
	pp.bad_at = UINT64_MAX;
	pp.base = 104729;
	perf_csum_init(&pp.rx_sum);
	if (lfd < 0)
		return lfd;
	pp.gc = dp_guest_connect(&peer, PORT_RR, VIRTIO_VSOCK_TYPE_STREAM, STEP_TIMEOUT_MS);
	if (pp.gc != NULL && pp.gc->state == VFE_GC_ESTABLISHED)
		pp.fd = dp_accept(&peer, lfd, STEP_TIMEOUT_MS);
	close(lfd);
	return pp.fd >= 0 ? 0 : -ECONNREFUSED;
}

static bool pp_closed(void)
{
	vfe_guest_recv(&peer.g, pp.gc, NULL, vfe_guest_rx_avail(pp.gc));
	return pp.gc->state == VFE_GC_CLOSED;
}

/* The host closes; the guest answers and forgets the connection. */
static void pp_close(void)
{
	if (pp.fd >= 0)
		close(pp.fd);
	pp.fd = -1;
	if (pp.gc != NULL) {
		DP_WAIT(&peer, pp_closed(), STEP_TIMEOUT_MS);
		vfe_guest_release(&peer.g, pp.gc);
	}
	pp.gc = NULL;
}

/* The part between the app's start and stop: attach, connect, warm up, the slices. */
static bool measure(char *err, size_t len)
{
	const struct variant *var = &plan.variants[0];
	bool packed = var->ring == R_PACKED;
	struct vfe_guest_conf g3 = perf_guest_conf(M_G2H, ISO_FLOOD_PAYLOAD);
	struct vfe_guest_conf g5 = perf_guest_conf(M_RR, ISO_PING);
	unsigned int s, k;
	uint64_t end;
	int rc;

	memset(&peer, 0, sizeof(peer));
	memcpy(peer.sock, env.sock5, sizeof(peer.sock));
	app_proc_path(&env.dp.app, "vm5.vsock", peer.uds, sizeof(peer.uds));
	if (perf_attach(&env.dp, packed, &g3, err, len) < 0 ||
	    perf_attach(&peer, packed, &g5, err, len) < 0)
		return false;
	/* The engine takes each device over asynchronously; connect refuses until then. */
	if (!DP_WAIT(&peer, perf_vm_running(DP_CID) && perf_vm_running(ISO_PEER_CID),
		     STEP_TIMEOUT_MS)) {
		snprintf(err, len, "the engine did not start polling both guests");
		return false;
	}
	if (!one_lcore(err, len))
		return false;
	perf_guest_polling(&env.dp);
	perf_guest_polling(&peer);
	rc = perf_open_conns(M_G2H, plan.flood_conns);
	if (rc < 0) {
		snprintf(err, len, "VM 3's %u flood connections: %s", plan.flood_conns,
			 strerror(-rc));
		return false;
	}
	if (pp_open() < 0) {
		snprintf(err, len, "VM 5's ping-pong connection refused");
		return false;
	}
	/* Warm up, neither measured: quiet round trips, then a slice's worth of flood. */
	for (k = 0; k < ISO_WARM_RTTS; k++)
		if (pp_once(perf_now_ns() + STALL_TIMEOUT_NS) == 0) {
			snprintf(err, len, "warm-up: a round trip of VM 5 did not complete");
			return false;
		}
	end = perf_now_ns() + (uint64_t)(plan.secs * 1e9);
	while (perf_now_ns() < end) {
		flood_turn(true);
		if (pp_once(perf_now_ns() + STALL_TIMEOUT_NS) == 0) {
			snprintf(err, len, "warm-up: a round trip of VM 5 stalled in the flood");
			return false;
		}
	}
	end = perf_now_ns() + STALL_TIMEOUT_NS;
	while (!flood_drained() && perf_now_ns() < end)
		flood_turn(false);
	/* Quiet, flood, quiet, flood ...: each pair shares one state of the machine. */
	for (s = 0; s < 2 * plan.reps; s++)
		if (!slice(s % 2 ? ISO_FLOOD : ISO_QUIET, err, len))
			return false;
	return books(err, len);
}

bool perf_run_isolation(void)
{
	const struct variant *var = &plan.variants[0];
	char err[160] = "";
	bool ok = false, clean;
	unsigned int c;

	memset(iso_results, 0, sizeof(iso_results));
	nb_iso = ISO_NB;
	/* Nothing open yet: what the closing below finds unset, it leaves alone. */
	memset(&pp, 0, sizeof(pp));
	pp.fd = -1;
	for (c = 0; c < plan.flood_conns; c++) {
		memset(&pconns[c], 0, sizeof(pconns[c]));
		pconns[c].fd = -1;
		pconns[c].h = -1;
	}
	for (c = 0; c < ISO_NB; c++) {
		rtt[c] = calloc(RTT_MAX, sizeof(*rtt[c]));
		nb_rtt[c] = 0;
		memset(&busy[c], 0, sizeof(busy[c]));
		if (rtt[c] == NULL) {
			snprintf(err, sizeof(err), "no memory for the round trips");
			goto report;
		}
	}
	cur_host = H_UDS;
	if (ops_start(&env, true, true, var->args) < 0) {
		snprintf(err, sizeof(err), "the app did not start with VMs 3 and 5");
		goto report;
	}
	perf_pin(0);
	if (!ops_cmd(&env, "set record-core-cycles on", "record-core-cycles on",
		     STEP_TIMEOUT_MS, NULL))
		fprintf(stderr, "vsock-perf: no busy share (record-core-cycles refused)\n");
	ok = measure(err, sizeof(err));
	if (peer.attached)
		pp_close();
	if (env.dp.attached)
		perf_close_conns(plan.flood_conns);
	dp_detach(&peer);
	clean = ops_stop(&env) >= 0;
	if (!clean && ok) {
		ok = false;
		snprintf(err, sizeof(err), "the app did not exit cleanly");
	}
report:
	for (c = 0; c < ISO_NB; c++) {
		iso_results[c].ok = ok;
		snprintf(iso_results[c].err, sizeof(iso_results[c].err), "%s", ok ? "" : err);
	}
	finish();
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &iso_results[c];

		fprintf(stderr, "  isolation %-5s: %llu round trips, p50 %.2f us, p99 %.2f us, max "
			"%.2f us, flood %.2f Gbit/s%s%s\n", iso_cond_name[c],
			(unsigned long long)r->round_trips, r->p50, r->p99, r->max, r->flood_gbps,
			r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
		free(rtt[c]);
		rtt[c] = NULL;
	}
	return ok;
}
