/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile guest against the vsock protocol: headers shorter than 44 bytes, len beyond the
 * buffer, unknown ops and types, spoofed CIDs, packets without a connection, data past our
 * credit, and more connection requests than the table holds.
 *
 * Each bad packet must get the protocol's answer (an RST with exact header fields, counted)
 * or, for a header too short to answer, be dropped and counted; the queue keeps working. After
 * every case VM 5, on the same worker lcore, does a checked exchange with the host. At the end
 * the app exits 0 on SIGTERM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile_util.h"
#include "pattern.h"
#include "tap.h"

#define MS 3000
#define NO_LISTENER 1
#define CREDIT_PORT 6001
#define FLOOD_PORT 6002
#define FLOOD_N 1100
#define FLOOD_GPORT 40000

static struct hu_env env;
static struct rawg g;
static uint32_t next_gport = 30000;

static void
peer_check(const char *what)
{
	if (!tap_ok(hu_peer_check(&env) == 0, "%s: VM 5 on the same lcore still works", what))
		tap_diag("%s", env.why);
}

/* The queue still works: a REQUEST to nowhere gets its RST. */
static void
still_served(const char *what)
{
	struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	unsigned int from = g.nlog;
	char why[160];
	int k = -1;

	rg_send(&g, &req, NULL);
	RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER)) >= 0,
		MS);
	if (!tap_ok(rg_is_rst(&g, k, next_gport, NO_LISTENER, VIRTIO_VSOCK_TYPE_STREAM, why,
			sizeof(why)), "%s: VM 3's queue still served", what))
		tap_diag("%s", why);
}

/*
 * Send @p pkt in a buffer of @p buf_len bytes (0: header + pkt->len): the app must answer
 * with exactly one RST of type @p rst_type, and count it in @p stat.
 */
static void
expect_rst(const char *what, const struct vfe_vsock_pkt *pkt, uint32_t buf_len,
		uint16_t rst_type, const char *stat)
{
	uint64_t before = hu_stat(&env, 3, stat), after;
	uint64_t completed = g.tx_completed;
	/* An RST for a VM the guest may not reach comes from that VM, as a Linux guest expects. */
	uint64_t rst_from = pkt->dst_cid == HU_PEER_CID ? HU_PEER_CID : HU_HOST_CID;
	unsigned int from = g.nlog;
	char why[160];
	int k = -1, rc;

	rc = buf_len ? rg_send_raw(&g, pkt, buf_len) : rg_send(&g, pkt, NULL);
	if (!tap_ok(rc == 0, "%s: sent", what))
		return;
	RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, pkt->src_port,
		pkt->dst_port)) >= 0 && g.tx_completed > completed, MS);
	if (!tap_ok(rg_is_rst_from(&g, k, rst_from, pkt->src_port, pkt->dst_port, rst_type, why,
				   sizeof(why)),
			"%s: RST %llu:%u -> 3:%u", what, (unsigned long long)rst_from,
			pkt->dst_port, pkt->src_port))
		tap_diag("%s", why);
	/* Nothing else comes for it. */
	RG_WAIT(&g, false, 30);
	tap_ok(g.nlog == from + 1 && g.tx_completed == completed + 1,
		"%s: one tx completion, one packet back (%u)", what, g.nlog - from);
	after = hu_stat(&env, 3, stat);
	tap_ok(after == before + 1, "%s: counted in %s (%llu -> %llu)", what, stat,
		(unsigned long long)before, (unsigned long long)after);
	peer_check(what);
}

static void
test_short_header(void)
{
	const char *what = "header of 20 bytes";
	struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	uint64_t before = hu_stat(&env, 3, "short_packets");
	uint64_t completed = g.tx_completed;
	long mark = ops_log_mark(&env.o);
	unsigned int from = g.nlog;

	/* Too short to name a connection: nothing to answer, the buffer is given back. */
	rg_send_raw(&g, &req, 20);
	RG_WAIT(&g, g.tx_completed > completed, MS);
	RG_WAIT(&g, false, 50);
	tap_ok(g.tx_completed == completed + 1 && g.nlog == from,
		"%s: completed, nothing sent back (%u packets)", what, g.nlog - from);
	tap_ok(hu_stat(&env, 3, "short_packets") == before + 1, "%s: counted in short_packets",
		what);
	tap_ok(hu_log_wait(&env, mark, "VM cid 3: dropped a tx packet of 20 bytes", MS),
		"%s: the log names VM 3 and the reason", what);
	still_served(what);
	peer_check(what);

	/* The next one is counted, not logged again: a guest cannot flood the log. */
	mark = ops_log_mark(&env.o);
	req.src_port = ++next_gport;
	rg_send_raw(&g, &req, 1);
	RG_WAIT(&g, hu_stat(&env, 3, "short_packets") == before + 2, MS);
	tap_ok(hu_stat(&env, 3, "short_packets") == before + 2 &&
		!ops_log_has(&env.o, mark, "dropped a tx packet"),
		"header of 1 byte: counted, not logged again");
}

static void
test_split_header(void)
{
	/* Not hostile: a header split across descriptors is legal and must be read whole. */
	const char *what = "header split 20 + 24 over two descriptors";
	struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	struct vfe_vq *tx = &g.v.vq[VFE_VSOCK_TX];
	struct virtio_vsock_hdr hdr;
	struct vfe_buf b[2];
	unsigned int from = g.nlog;
	uint8_t *p1, *p2;
	char why[160];
	int k = -1;

	vfe_vsock_build(&hdr, &req);
	p1 = vfe_mem_alloc(&g.v.mem, 20, 8, &b[0].gpa);
	p2 = vfe_mem_alloc(&g.v.mem, 24, 8, &b[1].gpa);
	memcpy(p1, &hdr, 20);
	memcpy(p2, (uint8_t *)&hdr + 20, 24);
	b[0].len = 20;
	b[1].len = 24;
	b[0].writable = b[1].writable = false;
	vfe_vq_add(tx, b, 2, RG_FOREIGN);
	vfe_vq_publish(tx);
	RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, req.src_port, NO_LISTENER)) >= 0,
		MS);
	if (!tap_ok(rg_is_rst(&g, k, req.src_port, NO_LISTENER, VIRTIO_VSOCK_TYPE_STREAM, why,
			sizeof(why)), "%s: RST", what))
		tap_diag("%s", why);
}

static void
test_bad_headers(void)
{
	struct vfe_vsock_pkt p;

	p = rg_hdr(VIRTIO_VSOCK_OP_RW, ++next_gport, NO_LISTENER);
	p.len = 1000;
	expect_rst("len 1000 in a buffer of 44 + 10", &p, 44 + 10, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_len_truncated");
	p = rg_hdr(VIRTIO_VSOCK_OP_RW, ++next_gport, NO_LISTENER);
	p.len = 0xffffffffu;
	expect_rst("len 4 GiB - 1 in a buffer of 44", &p, 44, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_len_max");
	p = rg_hdr(VIRTIO_VSOCK_OP_RW, ++next_gport, NO_LISTENER);
	p.len = 65537;
	expect_rst("len 64 KiB + 1", &p, 44 + 65536, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_len_max");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.len = 16;
	expect_rst("REQUEST carrying 16 payload bytes", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_len_control");
	p = rg_hdr(0, ++next_gport, NO_LISTENER);
	expect_rst("op 0", &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.hdr_op");
	p = rg_hdr(8, ++next_gport, NO_LISTENER);
	expect_rst("op 8", &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.hdr_op");
	p = rg_hdr(0xffff, ++next_gport, NO_LISTENER);
	expect_rst("op 0xffff", &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.hdr_op");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.type = 3;
	expect_rst("type 3 (the RST keeps it)", &p, 0, 3, "errors.hdr_type");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.type = 0;
	expect_rst("type 0", &p, 0, 0, "errors.hdr_type");
	p = rg_hdr(VIRTIO_VSOCK_OP_SHUTDOWN, ++next_gport, NO_LISTENER);
	p.flags = 0x80;
	expect_rst("SHUTDOWN with unknown flags", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_flags");
}

static void
test_cids(void)
{
	/* Its own connections end with RSTs (rst_rx): count only packets for no connection. */
	uint64_t peer_unknown = env.peer.g.unknown_rx;
	struct vfe_vsock_pkt p;

	/* Whatever the guest claims, answers go to the guest itself (dst_cid 3). */
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.src_cid = HU_PEER_CID;
	expect_rst("source CID spoofed as VM 5", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_src_cid");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.src_cid = HU_HOST_CID;
	expect_rst("source CID spoofed as the host", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_src_cid");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.src_cid = (1ull << 32) | HU_ATTACKER_CID;
	expect_rst("source CID 3 with the upper half set", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_src_cid");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.dst_cid = HU_PEER_CID;
	expect_rst("destination VM 5", &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.conn_route");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.dst_cid = HU_ATTACKER_CID;
	expect_rst("destination itself", &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.hdr_dst_cid");
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	p.dst_cid = (1ull << 32) | HU_HOST_CID;
	expect_rst("destination 2 with the upper half set", &p, 0, VIRTIO_VSOCK_TYPE_STREAM,
		"errors.hdr_dst_cid");
	tap_ok(env.peer.g.unknown_rx == peer_unknown && env.peer.g.errors == 0,
		"spoofed CIDs: VM 5 received nothing of them");
}

static void
test_no_connection(void)
{
	static const struct {
		uint16_t op;
		const char *name;
	} ops[] = {
		{ VIRTIO_VSOCK_OP_RW, "data without a connection" },
		{ VIRTIO_VSOCK_OP_RESPONSE, "RESPONSE without a connection" },
		{ VIRTIO_VSOCK_OP_SHUTDOWN, "SHUTDOWN without a connection" },
		{ VIRTIO_VSOCK_OP_CREDIT_UPDATE, "CREDIT_UPDATE without a connection" },
		{ VIRTIO_VSOCK_OP_CREDIT_REQUEST, "CREDIT_REQUEST without a connection" },
	};
	struct vfe_vsock_pkt p;
	unsigned int i, from;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		p = rg_hdr(ops[i].op, ++next_gport, NO_LISTENER);
		if (ops[i].op == VIRTIO_VSOCK_OP_RW)
			p.len = 100;
		expect_rst(ops[i].name, &p, 0, VIRTIO_VSOCK_TYPE_STREAM, "errors.conn_no_conn");
	}
	/* An RST is never answered: two ends must not bounce RSTs forever. */
	p = rg_hdr(VIRTIO_VSOCK_OP_RST, ++next_gport, NO_LISTENER);
	from = g.nlog;
	rg_send(&g, &p, NULL);
	RG_WAIT(&g, false, 50);
	tap_ok(g.nlog == from, "RST without a connection: not answered");
}

/* Accept on @p lfd while the raw guest is polled. */
static int
accept_polling(int lfd)
{
	int fd = -1;

	RG_WAIT(&g, (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0, MS);
	return fd;
}

static void
test_credit(void)
{
	const char *what = "data past our credit";
	static uint8_t chunk[65536], rbuf[65536];
	uint64_t before = hu_stat(&env, 3, "errors.conn_credit");
	uint32_t gport = ++next_gport;
	struct vfe_vsock_pkt p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, gport, CREDIT_PORT);
	uint64_t accepted = 0, got = 0;
	struct pattern tx_pat, rx_pat;
	unsigned int from = g.nlog, i;
	int lfd, fd, k = -1, inq = -1;
	char why[160];
	ssize_t n;
	bool intact = true;

	lfd = dp_listen(&env.o.dp, CREDIT_PORT, SOCK_STREAM);
	rg_send(&g, &p, NULL);
	RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RESPONSE, gport, CREDIT_PORT)) >= 0,
		MS);
	fd = accept_polling(lfd);
	if (!tap_ok(k >= 0 && fd >= 0, "%s: connected", what)) {
		close(lfd);
		return;
	}
	/* The host never reads; the guest ignores the credit it was given. */
	pattern_init(&tx_pat, 77);
	for (i = 0; i < 64; i++) {
		uint64_t completed = g.tx_completed;

		pattern_fill(&tx_pat, chunk, sizeof(chunk));
		p = rg_hdr(VIRTIO_VSOCK_OP_RW, gport, CREDIT_PORT);
		p.len = sizeof(chunk);
		rg_send(&g, &p, chunk);
		RG_WAIT(&g, g.tx_completed > completed, MS);
		RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, gport, CREDIT_PORT)) >= 0,
			5);
		if (k >= 0)
			break;
		accepted += sizeof(chunk);
	}
	if (!tap_ok(rg_is_rst(&g, k, gport, CREDIT_PORT, VIRTIO_VSOCK_TYPE_STREAM, why,
			sizeof(why)), "%s: RST 2:%u -> 3:%u", what, CREDIT_PORT, gport))
		tap_diag("%s", why);
	tap_ok(hu_stat(&env, 3, "errors.conn_credit") == before + 1,
		"%s: counted in errors.conn_credit", what);
	/* What the host socket holds is our fwd_cnt: the last packet went past the window. */
	ioctl(fd, FIONREAD, &inq);
	tap_ok(inq >= 0 && accepted <= HU_APP_BUF_ALLOC + (uint64_t)inq &&
		accepted + sizeof(chunk) > HU_APP_BUF_ALLOC + (uint64_t)inq,
		"%s: reset at the first packet beyond buf_alloc (%llu accepted, host holds %d)",
		what, (unsigned long long)accepted, inq);
	/* The host gets the bytes it was given, in order, then the end of the stream. */
	pattern_init(&rx_pat, 77);
	for (;;) {
		RG_WAIT(&g, (n = recv(fd, rbuf, sizeof(rbuf), MSG_DONTWAIT)) >= 0 ||
			errno != EAGAIN, MS);
		if (n <= 0)
			break;
		intact = intact && pattern_check(&rx_pat, rbuf, (size_t)n) == (size_t)n;
		got += (uint64_t)n;
	}
	tap_ok((n == 0 || (n < 0 && errno == ECONNRESET)) && intact && got == (uint64_t)inq,
		"%s: host reads the %llu bytes it held intact, then the end (recv %zd)", what,
		(unsigned long long)got, n);
	close(fd);
	close(lfd);
	peer_check(what);
}

static void
test_flood(void)
{
	const char *what = "connection flood";
	uint64_t full_before = hu_stat(&env, 3, "conns_table_full");
	unsigned int from = g.nlog, sent = 0, resp = 0, rst = 0, rst_ok = 0, i;
	struct vfe_vsock_pkt p;
	char why[160];
	int lfd, k = -1;
	bool done;

	/* A backlog above the table's size: the app's connects all succeed, unaccepted. */
	lfd = dp_listen(&env.o.dp, FLOOD_PORT, SOCK_STREAM);
	if (lfd < 0 || listen(lfd, 2048) < 0) {
		tap_ok(0, "%s: listener", what);
		return;
	}
	done = RG_WAIT(&g, ({
		while (sent < FLOOD_N) {
			p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, FLOOD_GPORT + sent, FLOOD_PORT);
			if (rg_send(&g, &p, NULL) < 0)
				break;
			sent++;
		}
		g.nlog - from >= FLOOD_N; }), 15000);
	for (i = from; i < g.nlog; i++) {
		const struct rg_pkt *e = &g.log[i];

		if (e->p.op == VIRTIO_VSOCK_OP_RESPONSE)
			resp++;
		else if (e->p.op == VIRTIO_VSOCK_OP_RST && rg_is_rst(&g, (int)i, e->p.dst_port,
				FLOOD_PORT, VIRTIO_VSOCK_TYPE_STREAM, why, sizeof(why)) &&
				e->p.dst_port >= FLOOD_GPORT + HU_APP_MAX_CONNS)
			rst_ok++;
		if (e->p.op == VIRTIO_VSOCK_OP_RST)
			rst++;
	}
	tap_ok(done && resp == HU_APP_MAX_CONNS && rst == FLOOD_N - HU_APP_MAX_CONNS &&
		rst_ok == rst, "%s: %u REQUESTs: %u RESPONSE, %u RST (%u of the excess)", what,
		sent, resp, rst, rst_ok);
	tap_ok(hu_stat(&env, 3, "conns_table_full") == full_before + FLOOD_N - HU_APP_MAX_CONNS,
		"%s: the excess counted in conns_table_full", what);
	tap_ok(ops_tel_u64(&env.o, "/vsock/vms", "3.conns") == HU_APP_MAX_CONNS,
		"%s: the table holds %u connections", what, HU_APP_MAX_CONNS);
	peer_check(what);

	/* The guest resets one of its connections: the slot serves a new one. */
	p = rg_hdr(VIRTIO_VSOCK_OP_RST, FLOOD_GPORT, FLOOD_PORT);
	rg_send(&g, &p, NULL);
	from = g.nlog;
	p = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, FLOOD_GPORT + 2000, FLOOD_PORT);
	rg_send(&g, &p, NULL);
	RG_WAIT(&g, (k = rg_find(&g, from, VIRTIO_VSOCK_OP_RESPONSE, FLOOD_GPORT + 2000,
		FLOOD_PORT)) >= 0, MS);
	tap_ok(k >= 0, "%s: a freed slot takes a new connection", what);
	close(lfd);
}

int
main(void)
{
	int status;

	/* The app keeps one fd per connection: this process and its child may open them. */
	dp_raise_fd_limit(4096);
	if (!tap_ok(hu_start(&env) == 0, "app started with VM 3 and VM 5")) {
		tap_diag("%s", env.why);
		hu_stop(&env, true);
		return tap_done();
	}
	if (!tap_ok(rg_attach(&g, &env, NULL) == 0, "VM 3 attached")) {
		tap_diag("%s", env.why);
	} else {
		tap_diag("VM 3 on %s rings", g.v.vq[0].packed ? "packed" : "split");
		tap_ok(hu_vm_lcore(&env, 3) == hu_vm_lcore(&env, 5) && hu_vm_lcore(&env, 3) >= 0,
			"VM 3 and VM 5 share a worker lcore");
		test_short_header();
		test_split_header();
		test_bad_headers();
		test_cids();
		test_no_connection();
		test_credit();
		test_flood();
		tap_ok(g.bad_used == 0, "every used entry named a chain in flight");
		rg_close(&g);
		peer_check("after VM 3 left with 1023 connections");
	}
	status = hu_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
