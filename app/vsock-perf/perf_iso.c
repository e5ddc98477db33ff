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

#include "perf.h"
#include "perf_iso.h"
#include "perf_stats.h"
#include "perf_variant.h"

/* Round trips before the first slice, quiet: caches, the sockets, the worker's backoff. */
#define ISO_WARM_RTTS 1000
/* Flood turns before a flood slice: VM 3's queues filled before its first round trip. */
#define ISO_PRIME_TURNS 16

static const char *const iso_cond_name[ISO_NB] = { "quiet", "flood" };

/* What the part measures with, from the app's start to its stop. */
struct iso {
	/* VM 5, the neighbour (VM 3 is run->env.dp, its connections run->pconns[0 ..]). */
	struct dp_env peer;
	/* Its one ping-pong connection: guest sends the pattern, checks the echo against it. */
	struct pconn pp;
	uint64_t *rtt[ISO_NB];
	uint64_t nb_rtt[ISO_NB];
	/* The worker's busy cycles in each condition's slices, and the slices' TSC cycles. */
	struct perf_busy busy[ISO_NB];
};

/*
 * The flood, one turn: VM 3's guest sends whole 64 KiB packets within each connection's credit
 * (if @p more), then the host readers take what is there. Every byte is checked against the
 * pattern at its stream offset and summed (perf_host_recv(), as the g2h case): it costs this
 * loop time between round trips only, and a flood of wrong bytes would measure nothing.
 */
static void flood_turn(struct perf_run *run, bool more)
{
	struct vfe_guest *g = &run->env.dp.g;
	unsigned int i;

	for (i = 0; i < run->plan.flood_conns && more; i++) {
		struct pconn *pc = &run->pconns[i];

		while (vfe_guest_credit(pc->gc) >= ISO_FLOOD_PAYLOAD) {
			const uint8_t *at = perf_pat_at(run->pat, pc->base + pc->sent);
			long w = vfe_guest_send(g, pc->gc, at, ISO_FLOOD_PAYLOAD);

			if (w <= 0)
				break;
			pc->sent += (uint64_t)w;
		}
	}
	vfe_guest_poll(g);
	for (i = 0; i < run->plan.flood_conns; i++)
		perf_host_recv(run, &run->pconns[i], UINT64_MAX);
}

/*
 * One round trip of VM 5: its nanoseconds, or 0 when it did not complete by @p deadline or an
 * end failed. The echo is checked after the clock stops.
 */
static uint64_t pp_once(const struct perf_run *run, struct iso *iso, uint64_t deadline)
{
	struct vfe_guest *g = &iso->peer.g;
	struct pconn *pp = &iso->pp;
	uint8_t buf[ISO_PING];
	uint64_t t0 = perf_now_ns(), t1;
	size_t off = 0;

	while (off < ISO_PING) {
		long w = vfe_guest_send(g, pp->gc, perf_pat_at(run->pat, pp->base + pp->sent + off),
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
	pp->sent += ISO_PING;
	/* The host end reads the ping whole, then writes it back. */
	for (off = 0; off < ISO_PING;) {
		ssize_t r = recv(pp->fd, buf + off, ISO_PING - off, MSG_DONTWAIT);

		if (r > 0)
			off += (size_t)r;
		else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
			 perf_now_ns() > deadline)
			return 0;
	}
	for (off = 0; off < ISO_PING;) {
		ssize_t w = send(pp->fd, buf + off, ISO_PING - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0)
			off += (size_t)w;
		else if ((w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
			 perf_now_ns() > deadline)
			return 0;
	}
	for (off = 0; off < ISO_PING;) {
		vfe_guest_poll(g);
		if (vfe_guest_rx_avail(pp->gc))
			off += vfe_guest_recv(g, pp->gc, buf + off, ISO_PING - off);
		else if (perf_now_ns() > deadline)
			return 0;
	}
	t1 = perf_now_ns();
	perf_stream_check(run, pp, buf, ISO_PING);
	return t1 > t0 ? t1 - t0 : 1;
}

/* Both VMs on one worker lcore: the point of the part, so it is checked, not assumed. */
static bool one_lcore(const struct perf_run *run, char *err, size_t len)
{
	char json[OPS_TEL_MAX], key[32];
	uint64_t l3, l5, nb = 0;

	if (ops_tel(&run->env, "/vsock/vms", json, sizeof(json)) < 0 ||
	    ops_json_u64(json, "3.lcore", &l3) < 0 || ops_json_u64(json, "5.lcore", &l5) < 0 ||
	    ops_tel(&run->env, "/vsock/lcores", json, sizeof(json)) < 0) {
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
static bool flood_drained(const struct perf_run *run)
{
	return perf_all_received(run, run->plan.flood_conns);
}

/*
 * One slice of condition @p c: round trips for plan.secs, the flood fed between them if it is
 * on, and the books of the slice added to its condition's result. False on a stall.
 */
static bool slice(struct perf_run *run, struct iso *iso, enum iso_cond c, char *err,
		  size_t len)
{
	struct iso_result *r = &run->iso.results[c];
	unsigned int conns = run->plan.flood_conns;
	uint64_t *rtt = iso->rtt[c], *nb_rtt = &iso->nb_rtt[c];
	bool flood = c == ISO_FLOOD;
	struct perf_counters w0, w1;
	uint64_t t0, t1, end, b0, b1, k0 = *nb_rtt, tsc0, tsc1;
	unsigned int k;

	for (k = 0; flood && k < ISO_PRIME_TURNS; k++)
		flood_turn(run, true);
	/*
	 * Telemetry outside the timed window: it wakes a thread of the app on this CPU. The
	 * window opens as a stream case's does (perf_case.c), deliberately apart: that one
	 * starts perf stat and callgrind in the order its figures need, a slice neither.
	 */
	perf_counters_read(run, &w0);
	b0 = perf_total_rcvd(run, conns);
	tsc0 = rte_rdtsc();
	t0 = perf_now_ns();
	end = t0 + (uint64_t)(run->plan.secs * 1e9);
	/*
	 * A slice ends with its last round trip, so that none straddles two; a flood slice also
	 * not before the flood moved, however long this machine stalled us.
	 */
	do {
		uint64_t ns;

		if (flood)
			flood_turn(run, true);
		ns = pp_once(run, iso, perf_now_ns() + STALL_TIMEOUT_NS);
		if (ns == 0) {
			snprintf(err, len, "%s slice %u: a round trip of VM 5 did not complete "
				 "within %llu s (after %llu)", iso_cond_name[c], r->slices,
				 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u),
				 (unsigned long long)(*nb_rtt - k0));
			return false;
		}
		if (*nb_rtt < RTT_MAX)
			rtt[(*nb_rtt)++] = ns;
		t1 = perf_now_ns();
	} while (t1 < end || (flood && perf_total_rcvd(run, conns) == b0 &&
			      t1 < t0 + STALL_TIMEOUT_NS));
	tsc1 = rte_rdtsc();
	b1 = perf_total_rcvd(run, conns);
	if (flood && b1 == b0) {
		snprintf(err, len, "%s slice %u: the flood moved nothing within %llu s",
			 iso_cond_name[c], r->slices,
			 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u));
		return false;
	}
	perf_counters_read(run, &w1);
	perf_busy_add(&iso->busy[c], &w0, &w1, tsc1 - tsc0);
	r->secs += (double)(t1 - t0) / 1e9;
	r->flood_bytes += b1 - b0;
	if (r->slices == 0 || *nb_rtt - k0 < r->min_slice_rtts)
		r->min_slice_rtts = *nb_rtt - k0;
	if (r->slices == 0 || b1 - b0 < r->min_slice_flood_bytes)
		r->min_slice_flood_bytes = b1 - b0;
	if (r->slices < MAX_REPS && *nb_rtt > k0) {
		perf_rtt_sort(rtt + k0, *nb_rtt - k0);
		r->slice_p50[r->slices] = perf_rtt_pct(rtt + k0, *nb_rtt - k0, 0.5);
	}
	r->slices++;
	if (flood) {
		/* Quiet means VM 3 idle: everything it sent read before the next slice. */
		uint64_t deadline = perf_now_ns() + STALL_TIMEOUT_NS;

		while (!flood_drained(run) && perf_now_ns() < deadline)
			flood_turn(run, false);
		if (!flood_drained(run)) {
			snprintf(err, len, "the flood did not drain within %llu s",
				 (unsigned long long)(STALL_TIMEOUT_NS / 1000000000u));
			return false;
		}
	}
	return true;
}

/* Both ends' books: no protocol breach, every byte echoed or streamed intact. */
static bool books(const struct perf_run *run, const struct iso *iso, char *err, size_t len)
{
	const struct dp_env *e = &run->env.dp;
	unsigned int i;

	if (e->g.errors || iso->peer.g.errors) {
		snprintf(err, len, "VM %d's guest saw a protocol breach: %.100s",
			 e->g.errors ? DP_CID : ISO_PEER_CID,
			 e->g.errors ? e->g.err : iso->peer.g.err);
		return false;
	}
	/* VM 5's pings: sent what it pinged, received what came back. */
	if (!perf_pconn_ok(&iso->pp, "VM", ISO_PEER_CID, err, len))
		return false;
	for (i = 0; i < run->plan.flood_conns; i++)
		if (!perf_pconn_ok(&run->pconns[i], "flood conn", i, err, len))
			return false;
	return true;
}

/* The figures of each condition from its round trips and books. */
static void finish(struct perf_run *run, struct iso *iso)
{
	struct iso_result *res = run->iso.results;
	unsigned int c;

	for (c = 0; c < ISO_NB; c++) {
		struct iso_result *r = &res[c];
		const uint64_t *rtt = iso->rtt[c];
		uint64_t n = iso->nb_rtt[c];

		perf_rtt_sort(iso->rtt[c], n);
		r->round_trips = n;
		r->busy = perf_busy_share(&iso->busy[c]);
		r->p50 = perf_rtt_pct(rtt, n, 0.5);
		r->p99 = perf_rtt_pct(rtt, n, 0.99);
		r->p999 = perf_rtt_pct(rtt, n, 0.999);
		r->max = n ? (double)rtt[n - 1] / 1e3 : 0;
		for (r->slow = 0; r->slow < n && rtt[n - 1 - r->slow] > ISO_SLOW_US * 1000ull;)
			r->slow++;
		r->flood_gbps = r->secs > 0 ? (double)r->flood_bytes * 8 / (r->secs * 1e9) : 0;
		if (r->ok && n == 0) {
			r->ok = false;
			snprintf(r->err, sizeof(r->err), "no round trip completed");
		}
	}
	for (c = 0; c < ISO_NB; c++) {
		res[c].p50_ratio = res[c].p50 / res[ISO_QUIET].p50;
		res[c].p99_ratio = res[c].p99 / res[ISO_QUIET].p99;
	}
}

/* The ping-pong connection: VM 5's guest connects, the host accepts. 0 or -errno. */
static int pp_open(struct iso *iso)
{
	struct pconn *pp = &iso->pp;
	int lfd = dp_listen(&iso->peer, PORT_RR, SOCK_STREAM);

	memset(pp, 0, sizeof(*pp));
	pp->fd = -1;
	pp->h = -1;
	pp->bad_at = UINT64_MAX;
	pp->base = 104729;
	if (lfd < 0)
		return lfd;
	pp->gc = dp_guest_connect(&iso->peer, PORT_RR, VIRTIO_VSOCK_TYPE_STREAM, STEP_TIMEOUT_MS);
	if (pp->gc != NULL && pp->gc->state == VFE_GC_ESTABLISHED)
		pp->fd = dp_accept(&iso->peer, lfd, STEP_TIMEOUT_MS);
	close(lfd);
	return pp->fd >= 0 ? 0 : -ECONNREFUSED;
}

static bool pp_closed(struct iso *iso)
{
	vfe_guest_recv(&iso->peer.g, iso->pp.gc, NULL, vfe_guest_rx_avail(iso->pp.gc));
	return iso->pp.gc->state == VFE_GC_CLOSED;
}

/* The host closes; the guest answers and forgets the connection. */
static void pp_close(struct iso *iso)
{
	struct pconn *pp = &iso->pp;

	if (pp->fd >= 0)
		close(pp->fd);
	pp->fd = -1;
	if (pp->gc != NULL) {
		DP_WAIT(&iso->peer, pp_closed(iso), STEP_TIMEOUT_MS);
		vfe_guest_release(&iso->peer.g, pp->gc);
	}
	pp->gc = NULL;
}

/* The part between the app's start and stop: attach, connect, warm up, the slices. */
static bool measure(struct perf_run *run, struct iso *iso, char *err, size_t len)
{
	const struct variant *var = &run->plan.variants[0];
	struct dp_env *peer = &iso->peer;
	bool packed = var->ring == R_PACKED;
	struct vfe_guest_conf g3 = perf_guest_conf(M_G2H, ISO_FLOOD_PAYLOAD);
	struct vfe_guest_conf g5 = perf_guest_conf(M_RR, ISO_PING);
	unsigned int s, k;
	uint64_t end;
	int rc;

	memcpy(peer->sock, run->env.sock5, sizeof(peer->sock));
	app_proc_path(&run->env.dp.app, "vm5.vsock", peer->uds, sizeof(peer->uds));
	if (perf_attach(run, &run->env.dp, packed, &g3, err, len) < 0 ||
	    perf_attach(run, peer, packed, &g5, err, len) < 0)
		return false;
	/* The engine takes each device over asynchronously; connect refuses until then. */
	if (!DP_WAIT(peer, perf_vm_running(run, DP_CID) && perf_vm_running(run, ISO_PEER_CID),
		     STEP_TIMEOUT_MS)) {
		snprintf(err, len, "the engine did not start polling both guests");
		return false;
	}
	if (!one_lcore(run, err, len))
		return false;
	perf_guest_polling(run, &run->env.dp);
	perf_guest_polling(run, peer);
	rc = perf_open_conns(run, M_G2H, run->plan.flood_conns);
	if (rc < 0) {
		snprintf(err, len, "VM 3's %u flood connections: %s", run->plan.flood_conns,
			 strerror(-rc));
		return false;
	}
	if (pp_open(iso) < 0) {
		snprintf(err, len, "VM 5's ping-pong connection refused");
		return false;
	}
	/* Warm up, neither measured: quiet round trips, then a slice's worth of flood. */
	for (k = 0; k < ISO_WARM_RTTS; k++)
		if (pp_once(run, iso, perf_now_ns() + STALL_TIMEOUT_NS) == 0) {
			snprintf(err, len, "warm-up: a round trip of VM 5 did not complete");
			return false;
		}
	end = perf_now_ns() + (uint64_t)(run->plan.secs * 1e9);
	while (perf_now_ns() < end) {
		flood_turn(run, true);
		if (pp_once(run, iso, perf_now_ns() + STALL_TIMEOUT_NS) == 0) {
			snprintf(err, len, "warm-up: a round trip of VM 5 stalled in the flood");
			return false;
		}
	}
	end = perf_now_ns() + STALL_TIMEOUT_NS;
	while (!flood_drained(run) && perf_now_ns() < end)
		flood_turn(run, false);
	/* Quiet, flood, quiet, flood ...: each pair shares one state of the machine. */
	for (s = 0; s < 2 * run->plan.reps; s++)
		if (!slice(run, iso, s % 2 ? ISO_FLOOD : ISO_QUIET, err, len))
			return false;
	return books(run, iso, err, len);
}

bool perf_iso_run(struct perf_run *run)
{
	const struct variant *var = &run->plan.variants[0];
	struct iso_result *res = run->iso.results;
	struct iso *iso = calloc(1, sizeof(*iso));
	char err[160] = "";
	bool ok = false, clean;
	unsigned int c;

	memset(res, 0, sizeof(run->iso.results));
	run->iso.nb = ISO_NB;
	if (iso == NULL) {
		snprintf(err, sizeof(err), "no memory for the part");
		goto report;
	}
	/* Nothing open yet: what the closing below finds unset, it leaves alone. */
	iso->pp.fd = -1;
	for (c = 0; c < run->plan.flood_conns; c++) {
		memset(&run->pconns[c], 0, sizeof(run->pconns[c]));
		run->pconns[c].fd = -1;
		run->pconns[c].h = -1;
	}
	for (c = 0; c < ISO_NB; c++) {
		iso->rtt[c] = calloc(RTT_MAX, sizeof(*iso->rtt[c]));
		if (iso->rtt[c] == NULL) {
			snprintf(err, sizeof(err), "no memory for the round trips");
			goto report;
		}
	}
	run->host = H_UDS;
	if (ops_start(&run->env, true, true, var->args) < 0) {
		snprintf(err, sizeof(err), "the app did not start with VMs 3 and 5");
		goto report;
	}
	perf_pin(0);
	if (!ops_cmd(&run->env, "set record-core-cycles on", "record-core-cycles on",
		     STEP_TIMEOUT_MS, NULL))
		fprintf(stderr, "vsock-perf: no busy share (record-core-cycles refused)\n");
	ok = measure(run, iso, err, sizeof(err));
	if (iso->peer.attached)
		pp_close(iso);
	if (run->env.dp.attached)
		perf_close_conns(run, run->plan.flood_conns);
	dp_detach(&iso->peer);
	clean = ops_stop(&run->env) >= 0;
	if (!clean && ok) {
		ok = false;
		snprintf(err, sizeof(err), "the app did not exit cleanly");
	}
report:
	for (c = 0; c < ISO_NB; c++) {
		res[c].ok = ok;
		snprintf(res[c].err, sizeof(res[c].err), "%s", ok ? "" : err);
	}
	if (iso != NULL)
		finish(run, iso);
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &res[c];

		fprintf(stderr, "  isolation %-5s: %llu round trips, p50 %.2f us, p99 %.2f us, max "
			"%.2f us, flood %.2f Gbit/s%s%s\n", iso_cond_name[c],
			(unsigned long long)r->round_trips, r->p50, r->p99, r->max, r->flood_gbps,
			r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
		if (iso != NULL)
			free(iso->rtt[c]);
	}
	free(iso);
	return ok;
}

/* VM 5's round trips in each condition. */
void perf_iso_print(const struct perf_run *run, FILE *f)
{
	const struct plan *plan = &run->plan;
	const struct variant *var = &plan->variants[0];
	const struct iso_result *res = run->iso.results;
	const struct iso_result *q = &res[ISO_QUIET], *fl = &res[ISO_FLOOD];
	unsigned int c, s;

	if (run->iso.nb == 0)
		return;
	fprintf(f, "\nisolation: VM %d ping-pongs %u B while VM %d streams %u KiB g2h on %u "
		"connections,\nboth on one worker lcore; quiet and flood slices alternated, %u of "
		"each, %.2f s each\n(variant %s, %s rings, ring %u)\n", ISO_PEER_CID, ISO_PING,
		DP_CID, ISO_FLOOD_PAYLOAD / 1024, plan->flood_conns, plan->reps, plan->secs,
		var->name, ring_name[var->ring], plan->ring);
	fprintf(f, "%-9s %11s %8s %8s %9s %7s %12s %11s %9s %9s\n", "condition",
		"round trips", "p50 us", "p99 us", "max us", ">1 ms", "flood Gbit/s",
		"worker busy", "p50/quiet", "p99/quiet");
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &res[c];

		fprintf(f, "%-9s %11llu %8.2f %8.2f %9.2f %7llu %12.2f %10.1f%% %8.2fx "
			"%8.2fx%s%s\n", iso_cond_name[c], (unsigned long long)r->round_trips,
			r->p50, r->p99, r->max, (unsigned long long)r->slow, r->flood_gbps,
			r->busy * 100, r->p50_ratio, r->p99_ratio,
			r->ok ? "" : "  FAILED: ", r->ok ? "" : r->err);
	}
	for (c = 0; c < ISO_NB; c++) {
		const struct iso_result *r = &res[c];

		fprintf(f, "%s slices, p50 us:", iso_cond_name[c]);
		for (s = 0; s < r->slices && s < MAX_REPS; s++)
			fprintf(f, " %.1f", r->slice_p50[s]);
		fprintf(f, "\n");
	}
	/* The targets, for the reader; this part only measures. */
	fprintf(f, "(targets: flood p50 within 2x the quiet one: %.2fx; flood p99 under 100 us: "
		"%.2f us)\n(>1 ms: round trips over %d us, stalls; worker busy: its cycles in "
		"rounds that moved packets, of the slices' time)\n", fl->p50 / q->p50, fl->p99,
		ISO_SLOW_US);
}

/* One record per condition, VM 5's round trips ("direction"). */
void perf_iso_write_json(const struct perf_run *run, FILE *f, bool *first)
{
	const struct plan *plan = &run->plan;
	const struct variant *var = &plan->variants[0];
	unsigned int i, v;

	for (i = 0; i < run->iso.nb; i++) {
		const struct iso_result *r = &run->iso.results[i];

		perf_json_next(f, first);
		fprintf(f, "    {\"part\": \"isolation\", \"condition\": \"%s\", \"variant\": "
			"\"%s\", \"host\": \"%s\", \"ring\": \"%s\", \"direction\": \"rr\", "
			"\"payload\": %u, \"cid\": %d, \"flood_cid\": %d, "
			"\"flood_direction\": \"g2h\", \"flood_payload\": %u, \"flood_conns\": %u, "
			"\"flood\": %s, \"ok\": %s, \"error\": \"%s\", \"slices\": %u, "
			"\"slice_seconds\": %g, \"seconds\": %.4f, \"round_trips\": %llu, ",
			iso_cond_name[i], var->name, host_name[var->host], ring_name[var->ring],
			ISO_PING, ISO_PEER_CID, DP_CID, ISO_FLOOD_PAYLOAD, plan->flood_conns,
			i == ISO_FLOOD ? "true" : "false", r->ok ? "true" : "false",
			r->ok ? "" : r->err, r->slices, plan->secs, r->secs,
			(unsigned long long)r->round_trips);
		perf_json_num(f, "rtt_p50_us", r->p50, true);
		perf_json_num(f, "rtt_p99_us", r->p99, true);
		perf_json_num(f, "rtt_p999_us", r->p999, true);
		perf_json_num(f, "rtt_max_us", r->max, true);
		/* ISO_SLOW_US is 1000. */
		fprintf(f, "\"rtt_over_1ms\": %llu, \"flood_bytes\": %llu, "
			"\"min_slice_round_trips\": %llu, \"min_slice_flood_bytes\": %llu, ",
			(unsigned long long)r->slow, (unsigned long long)r->flood_bytes,
			(unsigned long long)r->min_slice_rtts,
			(unsigned long long)r->min_slice_flood_bytes);
		perf_json_num(f, "flood_gbps", r->flood_gbps, true);
		perf_json_num(f, "worker_busy_share", r->busy, true);
		perf_json_num(f, "p50_over_quiet", r->p50_ratio, true);
		perf_json_num(f, "p99_over_quiet", r->p99_ratio, true);
		fprintf(f, "\"slice_p50_us\": [");
		for (v = 0; v < r->slices && v < MAX_REPS; v++)
			fprintf(f, "%s%.3f", v ? ", " : "", r->slice_p50[v]);
		fprintf(f, "]}");
	}
}
