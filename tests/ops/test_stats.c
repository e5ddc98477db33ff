/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters against traffic whose every packet the test knows, read through
 * telemetry (exact values), the console and the connection list:
 *  - refused connects and a connection with data both ways: packets, bytes,
 *    connections, kicks, ring completions match what the guest driver counted;
 *  - show conn / /vsock/conns: ports, state, bytes, credit both ways, queues;
 *  - clear restarts from zero without touching what comes after;
 *  - stop keeps the guest's packets in the ring until start;
 *  - set burst takes effect at once (burst histogram), a burst takes half a ring at
 *    most, and, switched under a two-way transfer, set burst loses no byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define NO_LISTENER_PORT 1234
#define DATA_PORT 5000
#define BULK_PORT 5001
#define BULK_BYTES (2u << 20)

static struct ops_env env;
static struct dp_env *e = &env.dp;
static char json[OPS_TEL_MAX];
/* Kicks the test made itself, beside the guest driver's. */
static uint64_t raw_kicks;

static uint64_t
tel(const char *cmd, const char *path)
{
	return ops_tel_u64(&env, cmd, path);
}

static uint64_t
vm3(const char *path)
{
	return tel("/vsock/stats,3", path);
}

static bool
probes(unsigned int n)
{
	unsigned int i, refused = 0;

	for (i = 0; i < n; i++) {
		struct vfe_guest_conn *c = dp_guest_connect(e, NO_LISTENER_PORT,
				VIRTIO_VSOCK_TYPE_STREAM, MS);

		if (c != NULL && c->reset)
			refused++;
		if (c != NULL)
			vfe_guest_release(&e->g, c);
	}
	return refused == n;
}

/* The guest driver's counters since @p base, as the app must count them. */
struct gcount {
	uint64_t tx_pkts, rx_pkts, tx_bytes, rx_bytes, kicks;
};

static struct gcount
gnow(void)
{
	return (struct gcount){ e->g.tx_pkts, e->g.rx_pkts, e->g.tx_bytes, e->g.rx_bytes,
		e->g.kicks + raw_kicks };
}

/* Wait until the app has counted every packet the guest sent and received since @p b. */
static bool
settled(const struct gcount *b)
{
	return DP_WAIT(e, vm3("from_guest_pkts") == e->g.tx_pkts - b->tx_pkts &&
		vm3("to_guest_pkts") == e->g.rx_pkts - b->rx_pkts, MS);
}

static void
check_totals(const char *what, const struct gcount *b)
{
	struct gcount n = gnow();
	uint64_t v[8];

	tap_ok(settled(b), "%s: packets settled", what);
	if (ops_tel(&env, "/vsock/stats,3", json, sizeof(json)) < 0) {
		tap_ok(0, "%s: /vsock/stats,3", what);
		return;
	}
	ops_json_u64(json, "from_guest_pkts", &v[0]);
	ops_json_u64(json, "to_guest_pkts", &v[1]);
	ops_json_u64(json, "from_guest_bytes", &v[2]);
	ops_json_u64(json, "to_guest_bytes", &v[3]);
	ops_json_u64(json, "tx.packets", &v[4]);
	ops_json_u64(json, "rx.packets", &v[5]);
	ops_json_u64(json, "tx.kicks", &v[6]);
	ops_json_u64(json, "rx.kicks", &v[7]);
	tap_ok(v[0] == n.tx_pkts - b->tx_pkts && v[4] == v[0],
		"%s: guest->host packets %llu, tx ring chains %llu (guest sent %llu)", what,
		(unsigned long long)v[0], (unsigned long long)v[4],
		(unsigned long long)(n.tx_pkts - b->tx_pkts));
	tap_ok(v[1] == n.rx_pkts - b->rx_pkts && v[5] == v[1],
		"%s: host->guest packets %llu, rx ring chains %llu (guest got %llu)", what,
		(unsigned long long)v[1], (unsigned long long)v[5],
		(unsigned long long)(n.rx_pkts - b->rx_pkts));
	tap_ok(v[2] == n.tx_bytes - b->tx_bytes && v[3] == n.rx_bytes - b->rx_bytes,
		"%s: payload bytes %llu from and %llu to the guest (guest: %llu, %llu)", what,
		(unsigned long long)v[2], (unsigned long long)v[3],
		(unsigned long long)(n.tx_bytes - b->tx_bytes),
		(unsigned long long)(n.rx_bytes - b->rx_bytes));
	tap_ok(v[6] + v[7] == n.kicks - b->kicks, "%s: kicks %llu + %llu (guest kicked %llu)",
		what, (unsigned long long)v[6], (unsigned long long)v[7],
		(unsigned long long)(n.kicks - b->kicks));
}

static void
test_exact(void)
{
	struct gcount zero = { 0 };
	struct dp_stream gs, hr, hs, gr;
	struct vfe_guest_conn *c;
	char key[96], state[32];
	uint64_t v, kicks_tx0, kicks_rx0;
	int lfd, hfd = -1, i;

	tap_ok(probes(5), "5 guest connects refused");
	check_totals("refused connects", &zero);
	tap_ok(vm3("conns_refused") == 5 && vm3("conns_opened") == 0 &&
		vm3("from_guest_bytes") == 0 && vm3("errors_total") == 0,
		"refused connects: 5 refused, none opened, no payload, no error");
	tap_ok(vm3("rx.interrupts") >= e->g.rx_calls && vm3("rx.interrupts") > 0,
		"refused connects: interrupts sent (%llu) cover those seen (%llu)",
		(unsigned long long)vm3("rx.interrupts"), (unsigned long long)e->g.rx_calls);
	kicks_tx0 = vm3("tx.kicks");
	kicks_rx0 = vm3("rx.kicks");

	/* We poll, so the guest is asked not to kick; one that kicks anyway is counted. */
	for (i = 0; i < 3; i++)
		vfe_vq_kick(&e->v.vq[VFE_VSOCK_TX]);
	vfe_vq_kick(&e->v.vq[VFE_VSOCK_RX]);
	raw_kicks += 4;
	tap_ok(vm3("tx.kicks") == 3 + kicks_tx0 && vm3("rx.kicks") == 1 + kicks_rx0,
		"3 tx and 1 rx kicks counted (tx %llu, rx %llu)",
		(unsigned long long)vm3("tx.kicks"), (unsigned long long)vm3("rx.kicks"));

	lfd = dp_listen(e, DATA_PORT, SOCK_STREAM);
	c = dp_guest_connect(e, DATA_PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0)
		hfd = dp_accept(e, lfd, MS);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && hfd >= 0,
			"connection to a host listener"))
		return;
	dp_stream_init(&gs, 11, 600);
	dp_stream_init(&hr, 11, 600);
	dp_stream_init(&hs, 12, 1000);
	dp_stream_init(&gr, 12, 1000);
	tap_ok(DP_WAIT(e, (dp_guest_send(e, c, &gs), dp_host_recv(hfd, &hr), hr.done == 600), MS)
		&& dp_stream_ok(&hr), "600 bytes guest -> host");
	tap_ok(DP_WAIT(e, (dp_host_send(hfd, &hs), dp_guest_recv(e, c, &gr), gr.done == 1000), MS)
		&& dp_stream_ok(&gr), "1000 bytes host -> guest");
	check_totals("connection", &zero);
	tap_ok(vm3("from_guest_bytes") == 600 && vm3("to_guest_bytes") == 1000 &&
		vm3("host_written_bytes") == 600 && vm3("host_read_bytes") == 1000,
		"connection: 600 bytes written to the host socket, 1000 read from it");
	tap_ok(vm3("conns_opened") == 1, "connection: counted as opened");

	/* The connection as the worker sees it, read between two polls. */
	if (!tap_ok(ops_tel(&env, "/vsock/conns,3", json, sizeof(json)) == 0 &&
			ops_json_u64(json, "count", &v) == 0 && v == 1,
			"/vsock/conns,3: one connection"))
		tap_diag("%s", json);
	snprintf(key, sizeof(key), "conns.%u_%u.state", c->local_port, DATA_PORT);
	tap_ok(ops_json_str(json, key, state, sizeof(state)) == 0 &&
		strcmp(state, "established") == 0, "conn %u:%u established", c->local_port,
		DATA_PORT);
#define CONN_FIELD(f) (snprintf(key, sizeof(key), "conns.%u_%u." f, c->local_port, DATA_PORT), \
	ops_json_u64(json, key, &v) == 0 ? v : UINT64_MAX)
	tap_ok(CONN_FIELD("from_guest_bytes") == 600 && CONN_FIELD("to_guest_bytes") == 1000,
		"conn: 600 bytes from, 1000 to the guest");
	tap_ok(CONN_FIELD("queued_to_host") == 0 && CONN_FIELD("queued_to_guest") == 0,
		"conn: nothing queued");
	tap_ok(CONN_FIELD("our_buf_alloc") == DP_APP_BUF_ALLOC &&
		CONN_FIELD("guest_credit") == DP_APP_BUF_ALLOC,
		"conn: the guest may send a full buffer again");
	tap_ok(CONN_FIELD("peer_buf_alloc") == c->buf_alloc &&
		CONN_FIELD("host_credit") == c->buf_alloc - (1000 - c->fwd_sent),
		"conn: host credit %llu = guest buf_alloc %u - (1000 - fwd_cnt %u)",
		(unsigned long long)CONN_FIELD("host_credit"), c->buf_alloc, c->fwd_sent);
#undef CONN_FIELD
	snprintf(key, sizeof(key), "%-10u %-10u stream    established", c->local_port, DATA_PORT);
	tap_ok(ops_cmd(&env, "show conn 3", key, MS, NULL), "show conn 3 lists it");

	vfe_guest_send_ctl(&e->g, c, VIRTIO_VSOCK_OP_RST, 0);
	tap_ok(DP_WAIT(e, vm3("conns_closed") == 1, MS) &&
		tel("/vsock/conns,3", "count") == 0, "guest RST: connection closed and gone");
	vfe_guest_release(&e->g, c);
	close(hfd);
	close(lfd);
}

static void
test_clear(void)
{
	struct gcount base;

	tap_ok(ops_cmd(&env, "clear stats 3", "cleared", MS, NULL), "clear stats 3");
	tap_ok(vm3("from_guest_pkts") == 0 && vm3("to_guest_bytes") == 0 &&
		vm3("conns_opened") == 0 && vm3("conns_closed") == 0 && vm3("tx.packets") == 0 &&
		vm3("rx.kicks") == 0 && vm3("tx.used_idx_flushes") == 0,
		"after clear: every counter reads 0");
	base = gnow();
	probes(2);
	check_totals("after clear", &base);
	tap_ok(vm3("conns_refused") == 2, "after clear: exactly the 2 new refusals");
}

static void
test_pause(void)
{
	struct vfe_guest_conn *c;
	uint64_t before = vm3("tx.packets");

	tap_ok(ops_cmd(&env, "stop", "Polling stopped", MS, NULL), "stop");
	c = vfe_guest_connect(&e->g, NO_LISTENER_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	DP_WAIT(e, false, 300);
	tap_ok(c != NULL && c->state == VFE_GC_CONNECTING && vm3("tx.packets") == before,
		"stopped: the guest's request stays in the ring");
	tap_ok(ops_cmd(&env, "show conn 3", "VM cid 3: 0 connections", MS, NULL),
		"stopped: show conn still answers");
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "start");
	tap_ok(c != NULL && DP_WAIT(e, c->state != VFE_GC_CONNECTING, MS) && c->reset &&
		vm3("tx.packets") == before + 1, "started: the request is served (RST)");
	if (c != NULL)
		vfe_guest_release(&e->g, c);
}

static void
test_burst_effect(void)
{
	struct vfe_guest_conn *c[8];
	unsigned int i, served = 0;
	uint64_t hist;

	tap_ok(ops_cmd(&env, "set record-burst-stats on", "record-burst-stats on", MS, NULL) &&
		ops_cmd(&env, "set burst 4", "Burst size set to 4", MS, NULL) &&
		ops_cmd(&env, "stop", "Polling stopped", MS, NULL) &&
		ops_cmd(&env, "clear stats 3", "cleared", MS, NULL), "burst 4, recording, stopped");
	for (i = 0; i < 8; i++)
		c[i] = vfe_guest_connect(&e->g, NO_LISTENER_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "start with 8 requests queued");
	for (i = 0; i < 8; i++) {
		if (c[i] != NULL && DP_WAIT(e, c[i]->state != VFE_GC_CONNECTING, MS) && c[i]->reset)
			served++;
		if (c[i] != NULL)
			vfe_guest_release(&e->g, c[i]);
	}
	tap_ok(served == 8, "8 requests served");
	if (ops_tel(&env, "/vsock/stats,3", json, sizeof(json)) == 0 &&
			ops_json_u64(json, "tx.burst_hist.4", &hist) == 0) {
		tap_ok(hist == 2 && vm3("tx.bursts") == 2 && vm3("tx.packets") == 8,
			"burst 4: 8 queued requests taken in exactly 2 bursts of 4");
	} else {
		tap_ok(0, "burst histogram in /vsock/stats,3");
		tap_diag("%s", json);
	}
	ops_cmd(&env, "set burst 32", "Burst size set to 32", MS, NULL);
}

/*
 * A burst larger than the ring takes half of it at most: a whole ring of requests queued
 * while stopped goes in exactly two bursts of half, each ring entry once.
 */
static void
test_burst_half_ring(void)
{
	const unsigned int num = e->g.v->vq[VFE_VSOCK_TX].num, half = num / 2;
	struct vfe_guest_conn **c = calloc(num, sizeof(*c));
	unsigned int i, queued = 0, served = 0;
	char path[32];

	if (!tap_ok(c != NULL, "room for %u connections", num))
		return;

	tap_ok(ops_cmd(&env, "set burst 512", "Burst size set to 512", MS, NULL) &&
		ops_cmd(&env, "stop", "Polling stopped", MS, NULL) &&
		ops_cmd(&env, "clear stats 3", "cleared", MS, NULL), "burst 512, stopped");
	for (i = 0; i < num; i++) {
		c[i] = vfe_guest_connect(&e->g, NO_LISTENER_PORT, VIRTIO_VSOCK_TYPE_STREAM);
		queued += c[i] != NULL;
	}
	tap_ok(queued == num && vfe_guest_tx_free(&e->g) == 0,
		"the tx ring's %u entries hold %u requests", num, queued);
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "start with the ring full");
	for (i = 0; i < num; i++) {
		if (c[i] != NULL && DP_WAIT(e, c[i]->state != VFE_GC_CONNECTING, MS) && c[i]->reset)
			served++;
		if (c[i] != NULL)
			vfe_guest_release(&e->g, c[i]);
	}
	tap_ok(served == num, "%u of %u requests refused with RST", served, num);
	snprintf(path, sizeof(path), "tx.burst_hist.%u", half);
	tap_ok(vm3(path) == 2 && vm3("tx.bursts") == 2 && vm3("tx.packets") == num,
		"burst 512 on %u entries: 2 bursts of %u (%llu of %u, %llu bursts, %llu packets)",
		num, half, (unsigned long long)vm3(path), half, (unsigned long long)vm3("tx.bursts"),
		(unsigned long long)vm3("tx.packets"));
	ops_cmd(&env, "set burst 32", "Burst size set to 32", MS, NULL);
	free(c);
}

static void
test_burst_under_traffic(void)
{
	static const char *const cmds[] = {
		"set burst 1", "set burst 512", "set burst 7", "set burst 64", "set burst 2",
		"set burst 32",
	};
	static struct dp_stream gs, hr, hs, gr;
	struct vfe_guest_conn *c;
	unsigned int next = 0;
	struct gcount base;
	uint64_t deadline;
	long mark;
	int lfd, hfd = -1;

	lfd = dp_listen(e, BULK_PORT, SOCK_STREAM);
	c = dp_guest_connect(e, BULK_PORT, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (lfd >= 0)
		hfd = dp_accept(e, lfd, MS);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && hfd >= 0,
			"bulk connection"))
		return;
	ops_cmd(&env, "clear stats 3", "cleared", MS, NULL);
	base = gnow();
	mark = ops_log_mark(&env);
	dp_stream_init(&gs, 21, BULK_BYTES);
	dp_stream_init(&hr, 21, BULK_BYTES);
	dp_stream_init(&hs, 22, BULK_BYTES);
	dp_stream_init(&gr, 22, BULK_BYTES);
	deadline = dp_now_ns() + 60ull * 1000000000u;
	while ((hr.done < BULK_BYTES || gr.done < BULK_BYTES) && dp_tick(e, deadline)) {
		dp_guest_send(e, c, &gs);
		dp_host_recv(hfd, &hr);
		dp_host_send(hfd, &hs);
		dp_guest_recv(e, c, &gr);
		/* A new burst size every sixth of the way, while both directions flow. */
		if (next < 6 && hr.done + gr.done >= (uint64_t)(next + 1) * 2 * BULK_BYTES / 7)
			app_proc_send(&e->app, cmds[next++]);
	}
	tap_ok(hr.done == BULK_BYTES && dp_stream_ok(&hr),
		"burst switched 6 times: guest -> host %u bytes, all checked (%llu)", BULK_BYTES,
		(unsigned long long)hr.done);
	tap_ok(gr.done == BULK_BYTES && dp_stream_ok(&gr),
		"burst switched 6 times: host -> guest %u bytes, all checked (%llu)", BULK_BYTES,
		(unsigned long long)gr.done);
	tap_ok(DP_WAIT(e, ops_log_count(&env, mark, "Burst size set to") == 6, MS) &&
		tel("/vsock/config", "burst") == 32, "the 6 changes were applied, burst 32 last");
	check_totals("bulk", &base);
	tap_ok(vm3("from_guest_bytes") == BULK_BYTES && vm3("to_guest_bytes") == BULK_BYTES,
		"bulk: exactly %u payload bytes each way counted", BULK_BYTES);
	dp_check_guest(e, "bulk");
	vfe_guest_send_ctl(&e->g, c, VIRTIO_VSOCK_OP_RST, 0);
	close(hfd);
	close(lfd);
}

int
main(void)
{
	if (!tap_ok(ops_start(&env, false, true, NULL) == 0, "app started with -i"))
		return tap_done();
	if (dp_attach(e, NULL, NULL) == 0) {
		test_exact();
		test_clear();
		test_pause();
		test_burst_effect();
		test_burst_half_ring();
		test_burst_under_traffic();
	}
	ops_finish(&env);
	return tap_done();
}
