/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn_ep: the protocol against a fake endpoint, no socket and no pipe. This program links
 * the protocol room without the endpoint room and with the fake one of tests/common/fake_ep.c
 * instead: each host end is a pair of byte buffers with a capacity, its events are whatever
 * the test says. What is checked is the protocol's side of the seam: the bytes the endpoint
 * is handed and in which order, fwd_cnt and credit as the endpoint takes them, states and
 * replies to the guest for each event an endpoint can report.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>

#include "conn.h"
#include "conn_guest.h"
#include "conn_table.h"
#include "ep.h"
#include "fake_ep.h"
#include "tap.h"

#define BUF_ALLOC (64 * 1024)
#define SIDE FAKE_SIDE

static struct rte_mempool *pool;
static struct rte_ring *route_to;

/* ---- the test ---- */

static uint8_t payload[SIDE];

static void pump(struct conn_table *t)
{
	int i;

	for (i = 0; i < 4; i++)
		conn_poll_host(t, rte_get_tsc_cycles(), 256);
}

/* mbufs the table holds (its queues, and what pipe ends have not taken yet). */
static uint32_t table_mbufs(const struct conn_table *t)
{
	return t->to_guest_held + t->to_host_held;
}

/* The socket-like end's event, as epoll would report it. */
static void event(struct fake_end *f, uint16_t ev)
{
	fake_event(f->token, ev);
}

static struct rte_ring *route(uint64_t src_cid, uint64_t dst_cid, uint32_t dst_port)
{
	(void)src_cid;
	(void)dst_cid;
	return dst_port == 7000 ? route_to : NULL;
}

static struct conn_table *table(void)
{
	struct conn_table_conf conf;

	conn_table_conf_init(&conf);
	conf.guest_cid = GUEST_CID;
	conf.uds_path = "/nonexistent/fake";
	conf.pool = pool;
	conf.buf_alloc = BUF_ALLOC;
	conf.route = route;
	return conn_table_create(&conf);
}

/* The end that ep_connect() or ep_accept_incoming() opened for port @p port, or NULL. */
static struct fake_end *end_for_port(uint32_t port)
{
	int i;

	for (i = 0; i < FAKE_ENDS; i++)
		if (fake_ends[i].used && fake_ends[i].port == port)
			return &fake_ends[i];
	return NULL;
}

/* A guest connect to host port @p port: the end it opened, after our RESPONSE. */
static struct fake_end *open_conn(struct conn_table *t, uint32_t gport, uint32_t port)
{
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, gport, port, 0, NULL, 0, 0);
	if (!guest_recv(t, sizeof(g.data)) ||
	    !is_pkt(VIRTIO_VSOCK_OP_RESPONSE, gport, port, STREAM, 0, 0))
		return NULL;
	return end_for_port(port);
}

static void test_g2h(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	struct fake_end *f = open_conn(t, 1000, 5000);
	uint32_t sent = 0;
	int credit_updates = 0;

	if (!tap_ok(f != NULL && conn_count(t) == 1, "REQUEST: one end opened, RESPONSE"))
		return;
	/* The end takes 10000 bytes, then is full: the rest waits in the table. */
	f->room = 10000;
	while (sent < 40000) {
		guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1000, 5000, 0, payload + sent, 4000, 0);
		sent += 4000;
	}
	/* The guest believes more than half its window used and the end took some: told. */
	tap_ok(f->taken == 10000 && memcmp(f->to_host, payload, 10000) == 0 &&
	       guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_CREDIT_UPDATE &&
	       g.h.fwd_cnt == 10000 && !guest_recv(t, sizeof(g.data)),
	       "the end took what it had room for, in order; one CREDIT_UPDATE, fwd_cnt %u",
	       g.h.fwd_cnt);
	/* Room again, and its edge: the table flushes the rest. */
	f->room = SIDE;
	event(f, EP_WRITABLE);
	pump(t);
	tap_ok(f->taken == 40000 && memcmp(f->to_host, payload, 40000) == 0 &&
	       !guest_recv(t, sizeof(g.data)),
	       "after its writable edge all 40000 bytes, in order (%zu); the guest believes "
	       "under half used: no update owed", f->taken);
	/* One more packet goes straight to the end; now more than half is believed used. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1000, 5000, 0, payload + sent, 4000, 0);
	while (guest_recv(t, sizeof(g.data)))
		credit_updates += g.h.op == VIRTIO_VSOCK_OP_CREDIT_UPDATE;
	tap_ok(f->taken == 44000 && memcmp(f->to_host, payload, 44000) == 0 &&
	       credit_updates == 1 && g.h.fwd_cnt == 44000,
	       "the next 4000 straight through; one CREDIT_UPDATE with fwd_cnt %u", g.h.fwd_cnt);
	tap_ok(st->host_written_bytes == 44000 && st->from_guest_bytes == 44000,
	       "counted: 44000 from the guest, 44000 written to the end");
	/* Guest SHUTDOWN(SEND): the end's write side shuts; guest close: RST, clean close. */
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1000, 5000, VIRTIO_VSOCK_SHUTDOWN_SEND,
		   NULL, 0, 0);
	tap_ok(f->shut_wr && !f->closed, "guest SHUTDOWN(SEND): the end is shut for writing");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1000, 5000,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1000, 5000, STREAM, 0, 0) && f->closed && f->clean &&
	       conn_count(t) == 0, "guest close: its RST, the end closed cleanly, table empty");
}

static void test_h2g(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t stalls = st->credit_stalls;
	static uint8_t got[SIDE];
	struct fake_end *f = open_conn(t, 1001, 5001);
	size_t n = 0;

	if (!tap_ok(f != NULL, "second connection opened"))
		return;
	/* The end has 20000 bytes and then its EOF; the guest's window is 8192. */
	memcpy(f->to_guest, payload, 20000);
	f->offered = 20000;
	f->eof = true;
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1001, 5001, 0, NULL, 0, 8192, 0,
			GUEST_CID, HOST_CID);
	event(f, EP_READABLE);
	pump(t);
	while (guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_RW) {
		memcpy(got + n, g.data, g.h.len);
		n += g.h.len;
	}
	pump(t);
	tap_ok(n == 8192 && memcmp(got, payload, n) == 0 && st->credit_stalls == stalls + 1,
	       "the guest gets exactly its 8192 bytes of window; the stall is counted (%zu)", n);
	/* The guest read it all: the rest, then SHUTDOWN(SEND) for the end's EOF. */
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1001, 5001, 0, NULL, 0, 8192,
			8192, GUEST_CID, HOST_CID);
	for (int round = 0; round < 8 && n < 20000; round++) {
		pump(t);
		while (guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_RW) {
			memcpy(got + n, g.data, g.h.len);
			n += g.h.len;
			guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1001, 5001, 0,
					NULL, 0, 8192, (uint32_t)n, GUEST_CID, HOST_CID);
		}
	}
	tap_ok(n == 20000 && memcmp(got, payload, n) == 0 && st->host_read_bytes >= 20000,
	       "with credit back, all 20000 bytes in order (%zu)", n);
	pump(t);
	if (g.h.op != VIRTIO_VSOCK_OP_SHUTDOWN)
		guest_recv(t, sizeof(g.data));
	tap_ok(g.h.op == VIRTIO_VSOCK_OP_SHUTDOWN && g.h.flags == VIRTIO_VSOCK_SHUTDOWN_SEND,
	       "the end's EOF: SHUTDOWN(SEND) after the last byte");
	/* Its hang-up: now it reads no more either; we are closing, the end closed. */
	event(f, EP_HUP);
	pump(t);
	tap_ok(guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_SHUTDOWN &&
	       g.h.flags == (VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV) &&
	       f->closed && f->clean, "its hang-up: SHUTDOWN(RCV|SEND), the end closed cleanly");
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 1001, 5001, 0, NULL, 0, 0);
	tap_ok(conn_count(t) == 0, "the guest's RST frees the slot");
}

/* The guest's rx burst: @p n buffers of a header and 4 KiB, each header split in two pieces. */
#define RX_BUF (VSOCK_HDR_SIZE + 4096)
static uint8_t rx_bufs[8][RX_BUF];
static struct vsock_hdr rx_hdr[8];
static uint32_t rx_len[8];

static unsigned int rx_burst(struct conn_table *t, unsigned int n)
{
	struct iovec iov[16];
	unsigned int cnt[8], i, k;
	uint32_t cap[8];

	for (i = 0; i < n; i++) {
		iov[2 * i] = (struct iovec){ .iov_base = rx_bufs[i], .iov_len = 20 };
		iov[2 * i + 1] = (struct iovec){ .iov_base = rx_bufs[i] + 20,
						 .iov_len = RX_BUF - 20 };
		cnt[i] = 2;
		cap[i] = RX_BUF;
	}
	memset(rx_bufs, 0xa5, sizeof(rx_bufs));
	k = conn_to_guest_burst(t, iov, cnt, cap, n, rx_len);
	for (i = 0; i < k; i++)
		vsock_pkt_parse(rx_bufs[i], VSOCK_HDR_SIZE, &rx_hdr[i]);
	return k;
}

/* Appends the payload of rx_burst()'s RW packets [0, k) to @p got at *@p n; false if one is not. */
static bool rx_take(unsigned int k, uint8_t *got, size_t *n)
{
	unsigned int i;

	for (i = 0; i < k; i++) {
		if (rx_hdr[i].op != VIRTIO_VSOCK_OP_RW ||
		    rx_len[i] != VSOCK_HDR_SIZE + rx_hdr[i].len)
			return false;
		memcpy(got + *n, rx_bufs[i] + VSOCK_HDR_SIZE, rx_hdr[i].len);
		*n += rx_hdr[i].len;
	}
	return true;
}

/*
 * A stream end that can be read into any memory (a Unix stream socket) is read straight
 * into the guest's rx buffers: nothing before the buffers are there, one read for as many
 * as it fills, within the window; no mbuf.
 */
static void test_h2g_direct(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t stalls = st->credit_stalls, rd = st->host_read_bytes;
	uint64_t io = st->proto_err[CONN_ERR_HOST_IO];
	static uint8_t got[SIDE];
	struct fake_end *f, *e;
	size_t n = 0;
	unsigned int k;

	fake_next_caps = EP_CAP_READV;
	f = open_conn(t, 1004, 5004);
	fake_next_caps = 0;
	if (!tap_ok(f != NULL, "a connection to an end read into any memory"))
		return;
	/* 20000 bytes and then its EOF; the guest's window is 10000. */
	memcpy(f->to_guest, payload, 20000);
	f->offered = 20000;
	f->eof = true;
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1004, 5004, 0, NULL, 0, 10000,
			0, GUEST_CID, HOST_CID);
	event(f, EP_READABLE);
	pump(t);
	tap_ok(f->reads == 0 && f->read == 0 && conn_has_output(t) && table_mbufs(t) == 0,
	       "readable: owed to the guest, nothing read before its buffers are there");
	k = rx_burst(t, 8);
	tap_ok(k == 3 && rx_take(k, got, &n) && n == 10000 && memcmp(got, payload, n) == 0 &&
	       rx_hdr[0].len == 4096 && rx_hdr[2].len == 10000 - 8192 && f->reads == 1 &&
	       st->host_read_bytes == rd + 10000 && st->credit_stalls == stalls + 1,
	       "one read fills 3 buffers with exactly the 10000-byte window, in order; the "
	       "stall counted (%u buffers, %zu bytes, %u reads)", k, n, f->reads);
	tap_ok(rx_burst(t, 8) == 0 && f->reads == 1 && !conn_has_output(t),
	       "no window left: nothing owed, no read");
	/* The guest read it all: the rest, and SHUTDOWN(SEND) after its last byte. */
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1004, 5004, 0, NULL, 0, 10000,
			10000, GUEST_CID, HOST_CID);
	pump(t);
	k = rx_burst(t, 8);
	tap_ok(k == 4 && rx_take(3, got, &n) && n == 20000 && memcmp(got, payload, n) == 0 &&
	       rx_hdr[3].op == VIRTIO_VSOCK_OP_SHUTDOWN &&
	       rx_hdr[3].flags == VIRTIO_VSOCK_SHUTDOWN_SEND && f->reads == 2 &&
	       table_mbufs(t) == 0,
	       "with the window open again, the other 10000 in one read, then SHUTDOWN(SEND) "
	       "in the next buffer; no mbuf was ever taken (%u buffers, %zu bytes)", k, n);
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1004, 5004,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(rx_burst(t, 8) == 1 && rx_hdr[0].op == VIRTIO_VSOCK_OP_RST && f->closed &&
	       conn_count(t) == 0, "guest close: its RST, table empty");
	/* A read error: RST in the buffer the read was for, host_io counted. */
	fake_next_caps = EP_CAP_READV;
	e = open_conn(t, 1005, 5005);
	fake_next_caps = 0;
	if (!tap_ok(e != NULL, "another such connection"))
		return;
	e->offered = 100;
	e->rfail = -EIO;
	event(e, EP_READABLE);
	pump(t);
	tap_ok(rx_burst(t, 8) == 1 && rx_hdr[0].op == VIRTIO_VSOCK_OP_RST &&
	       rx_hdr[0].dst_port == 1005 && st->proto_err[CONN_ERR_HOST_IO] == io + 1 &&
	       e->closed && conn_count(t) == 0,
	       "a read error: RST to the guest in that burst, host_io counted, the end closed");
}

/*
 * An idle round's read without epoll (conn_probe_host()): the table's one socket connection
 * is read as if readable, whatever events wait. Bytes that came with no event taken yet go to
 * the guest in order and once; an empty end costs a read and leaves nothing owed; its end of
 * stream found by such a read is the guest's SHUTDOWN(SEND); two connections, none.
 */
static void test_h2g_probe(struct conn_table *t)
{
	static uint8_t got[SIDE];
	struct fake_end *f, *e;
	unsigned int k;
	size_t n = 0;
	bool ok;

	fake_next_caps = EP_CAP_READV;
	f = open_conn(t, 1006, 5006);
	fake_next_caps = 0;
	if (!tap_ok(f != NULL && conn_count(t) == 1, "one connection read into any memory"))
		return;
	memcpy(f->to_guest, payload, 3000);
	tap_ok(!conn_probe_host(t) && !conn_has_output(t) && f->reads == 0,
	       "never read yet: no probe, its events first");
	f->offered = 1000;
	event(f, EP_READABLE);
	pump(t);
	k = rx_burst(t, 8);
	ok = rx_take(k, got, &n);
	tap_ok(ok && k == 1 && n == 1000 && f->reads == 1,
	       "its first bytes through its event (%u buffers, %zu bytes)", k, n);
	/* 2000 more, their edge not taken: an idle round reads them anyway. */
	f->offered = 3000;
	tap_ok(conn_probe_host(t) && conn_has_output(t), "probe: owed to the guest unasked");
	k = rx_burst(t, 8);
	ok = rx_take(k, got, &n);
	tap_ok(ok && k == 1 && n == 3000 && memcmp(got, payload, n) == 0 && f->reads == 2,
	       "the bytes that came with no event, in order (%zu in all)", n);
	tap_ok(conn_probe_host(t) && rx_burst(t, 8) == 0 && f->reads == 3 && !conn_has_output(t),
	       "an empty end: one read, nothing owed after it");
	event(f, EP_READABLE);
	pump(t);
	k = rx_burst(t, 8);
	tap_ok(k == 0 && f->read == 3000 && f->reads == 4 && !conn_has_output(t),
	       "the edge the probe ran ahead of, taken later: a read that finds nothing");
	/* A second connection: the epoll_wait is worth it again. */
	fake_next_caps = EP_CAP_READV;
	e = open_conn(t, 1007, 5007);
	fake_next_caps = 0;
	tap_ok(e != NULL && !conn_probe_host(t) && !conn_has_output(t),
	       "two socket connections: no probe");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1007, 5007,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(rx_burst(t, 8) == 1 && rx_hdr[0].op == VIRTIO_VSOCK_OP_RST && conn_count(t) == 1,
	       "the second one closed: its RST");
	/* Its end of stream, no hang-up event yet: the probe's read finds it. */
	f->eof = true;
	tap_ok(conn_probe_host(t), "the one connection left is probed again");
	k = rx_burst(t, 8);
	tap_ok(k == 1 && rx_hdr[0].op == VIRTIO_VSOCK_OP_SHUTDOWN &&
	       rx_hdr[0].flags == VIRTIO_VSOCK_SHUTDOWN_SEND && f->reads == 5 &&
	       !conn_probe_host(t), "end of stream found by the probe: SHUTDOWN(SEND), then "
	       "no more probes");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1006, 5006,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(rx_burst(t, 8) == 1 && rx_hdr[0].op == VIRTIO_VSOCK_OP_RST && f->closed &&
	       conn_count(t) == 0, "guest close: its RST, table empty");
}

/*
 * rx buffers of any layout: buffer i is the pieces of lay[i] (lengths, 0 ends), apart in
 * memory (LAY_GAP bytes between them), seen gathered in lay_view[i]; lay_gaps_ok tells that
 * nothing was written between them.
 */
#define LAY_BUFS 6
#define LAY_PIECES 4
#define LAY_GAP 16
static uint8_t lay_mem[LAY_BUFS][1024], lay_view[LAY_BUFS][1024];
static struct vsock_hdr lay_hdr[LAY_BUFS];
static uint32_t lay_len[LAY_BUFS], lay_cap[LAY_BUFS];
static bool lay_gaps_ok;

static unsigned int lay_burst(struct conn_table *t, const uint32_t lay[][LAY_PIECES],
			      unsigned int n)
{
	struct iovec iov[LAY_BUFS * LAY_PIECES];
	unsigned int cnt[LAY_BUFS], i, j, k, niov = 0;
	size_t at, v, g;

	memset(lay_mem, 0xa5, sizeof(lay_mem));
	memset(lay_view, 0xa5, sizeof(lay_view));
	for (i = 0; i < n; i++) {
		for (j = 0, at = 0, lay_cap[i] = 0; j < LAY_PIECES && lay[i][j]; j++) {
			iov[niov++] = (struct iovec){ .iov_base = lay_mem[i] + at,
						      .iov_len = lay[i][j] };
			at += lay[i][j] + LAY_GAP;
			lay_cap[i] += lay[i][j];
		}
		cnt[i] = j;
	}
	k = conn_to_guest_burst(t, iov, cnt, lay_cap, n, lay_len);
	lay_gaps_ok = true;
	for (i = 0; i < n; i++) {
		for (j = 0, at = 0, v = 0; j < cnt[i]; j++) {
			memcpy(lay_view[i] + v, lay_mem[i] + at, lay[i][j]);
			v += lay[i][j];
			at += lay[i][j];
			for (g = 0; g < LAY_GAP; g++)
				lay_gaps_ok &= lay_mem[i][at++] == 0xa5;
		}
		if (i < k)
			vsock_pkt_parse(lay_view[i], VSOCK_HDR_SIZE, &lay_hdr[i]);
	}
	return k;
}

/*
 * lay_burst()'s buffer @p i holds an RW of @p len bytes of the end's stream from @p off, all
 * of its header's fields what connection 1006 <-> 5006 owes with @p fwd_cnt; the rest of the
 * buffer untouched.
 */
static bool lay_rw(unsigned int i, uint32_t len, size_t off, uint32_t fwd_cnt)
{
	const struct vsock_hdr *h = &lay_hdr[i];
	uint32_t b;

	for (b = VSOCK_HDR_SIZE + len; b < lay_cap[i]; b++)
		if (lay_view[i][b] != 0xa5)
			return false;
	return h->src_cid == HOST_CID && h->dst_cid == GUEST_CID && h->src_port == 5006 &&
	       h->dst_port == 1006 && h->type == STREAM && h->op == VIRTIO_VSOCK_OP_RW &&
	       h->len == len && h->flags == 0 && h->buf_alloc == BUF_ALLOC &&
	       h->fwd_cnt == fwd_cnt && lay_len[i] == VSOCK_HDR_SIZE + len &&
	       memcmp(lay_view[i] + VSOCK_HDR_SIZE, payload + off, len) == 0;
}

/*
 * One read into buffers of mixed layouts: one-piece buffers (the usual, laid out without a
 * piece walk) around one whose payload goes on in a second piece and one whose header is
 * split over the first two of three, a one-piece buffer with no room past its header, the
 * window ending inside a buffer and a short read ending inside one whose header is its first
 * piece. Every header whole, every byte in its place, nothing written outside the pieces.
 */
static void test_h2g_layouts(struct conn_table *t)
{
	static const uint32_t a[][LAY_PIECES] = {
		{ 144 }, { 60, 40 }, { 20, 30, 200 }, { 144 }, { 144 },
	};
	static const uint32_t b[][LAY_PIECES] = { { VSOCK_HDR_SIZE }, { 144 } };
	static const uint32_t c[][LAY_PIECES] = { { 344 }, { VSOCK_HDR_SIZE, 300 }, { 344 } };
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t pkts, bytes;
	struct fake_end *f;
	unsigned int k, reads;

	fake_next_caps = EP_CAP_READV;
	f = open_conn(t, 1006, 5006);
	fake_next_caps = 0;
	if (!tap_ok(f != NULL, "a connection read into the guest's buffers"))
		return;
	/* 10 bytes from the guest first, so that our headers carry a fwd_cnt of 10. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1006, 5006, 0, payload, 10, 0);
	guest_drain(t);
	memcpy(f->to_guest, payload, 1000);
	f->offered = 1000;
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1006, 5006, 0, NULL, 0, 456, 0,
			GUEST_CID, HOST_CID);
	event(f, EP_READABLE);
	pump(t);
	pkts = st->to_guest_pkts;
	bytes = st->to_guest_bytes;
	reads = f->reads;
	k = lay_burst(t, a, RTE_DIM(a));
	tap_ok(k == 4 && f->reads == reads + 1 && f->read == 456 && lay_gaps_ok && lay_rw(0, 100, 0, 10) &&
	       lay_rw(1, 56, 100, 10) && lay_rw(2, 206, 156, 10) && lay_rw(3, 94, 362, 10) &&
	       st->to_guest_pkts == pkts + 4 && st->to_guest_bytes == bytes + 456,
	       "a 456-byte window over one-piece buffers, one with its payload over 2 pieces and "
	       "one with its header over 2 of 3: one read, 4 packets of 100, 56, 206, 94 bytes, "
	       "each header whole (%u buffers, %zu read)",
	       k, f->read);
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 1006, 5006, 0, NULL, 0, 4096,
			456, GUEST_CID, HOST_CID);
	reads = f->reads;
	tap_ok(lay_burst(t, b, RTE_DIM(b)) == 0 && f->reads == reads && conn_has_output(t),
	       "a first buffer of a header's room alone: nothing read, still owed");
	k = lay_burst(t, c, RTE_DIM(c));
	tap_ok(k == 2 && f->reads == reads + 1 && f->read == 1000 && lay_rw(0, 300, 456, 10) &&
	       lay_rw(1, 244, 756, 10) && lay_gaps_ok && lay_mem[2][0] == 0xa5 &&
	       !conn_has_output(t),
	       "the end's last 544 bytes: 300, then 244 into a buffer whose header is its "
	       "first piece; the third buffer untouched (%u buffers)", k);
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 1006, 5006, 0, NULL, 0, 0);
	tap_ok(f->closed && conn_count(t) == 0, "the guest's RST: closed, table empty");
}

/*
 * A SEQPACKET host socket's message waits while the guest's window is shut; then the guest
 * says SHUTDOWN(RCV). Our shutdown(SHUT_RD) makes the socket readable (EPOLLIN | EPOLLRDHUP)
 * and the kernel still hands out what was queued before it: none of it may reach the guest,
 * which said it reads no more.
 */
static void test_seq_rcv_shut(struct conn_table *t)
{
	struct fake_end *f = NULL;
	int i;

	conn_table_set_seqpacket(t, true);
	fake_next_caps = EP_CAP_WHOLE_MSG;
	guest_send_full(t, VIRTIO_VSOCK_OP_REQUEST, SEQPACKET, 1020, 5020, 0, NULL, 0, 0, 0,
			GUEST_CID, HOST_CID);
	fake_next_caps = 0;
	for (i = 0; i < FAKE_ENDS; i++)
		if (fake_ends[i].used && fake_ends[i].port == 5020)
			f = &fake_ends[i];
	if (!tap_ok(f && guest_recv(t, sizeof(g.data)) &&
		    is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 1020, 5020, SEQPACKET, 0, 0),
		    "a SEQPACKET connection, the guest's window shut"))
		return;
	memcpy(f->to_guest, payload, 100);
	fake_offer(f, 100, true);
	event(f, EP_READABLE);
	pump(t);
	tap_ok(!guest_recv(t, sizeof(g.data)) && f->read == 0,
	       "the end's message waits in its socket: no window");
	guest_send_full(t, VIRTIO_VSOCK_OP_SHUTDOWN, SEQPACKET, 1020, 5020,
			VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, GUEST_BUF, 0, GUEST_CID, HOST_CID);
	event(f, EP_READABLE | EP_RDHUP);
	pump(t);
	tap_ok(f->shut_rd && !guest_recv(t, sizeof(g.data)) && f->read == 0,
	       "after the guest's SHUTDOWN(RCV) and the socket's edge for it: nothing for the "
	       "guest, nothing read (%zu bytes)", f->read);
	guest_send(t, VIRTIO_VSOCK_OP_RST, SEQPACKET, 1020, 5020, 0, NULL, 0, 0);
	tap_ok(f->closed && conn_count(t) == 0 && guest_drain(t) == 0,
	       "the guest's RST: the end closed, table empty");
	conn_table_set_seqpacket(t, false);
}

static void test_errors(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t io = st->proto_err[CONN_ERR_HOST_IO], refused = st->conns_refused;
	struct fake_end *f = open_conn(t, 1002, 5002);

	if (!tap_ok(f != NULL, "third connection opened"))
		return;
	f->fail = -EIO;
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1002, 5002, 0, payload, 100, 0);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1002, 5002, STREAM, 0, 0) &&
	       st->proto_err[CONN_ERR_HOST_IO] == io + 1 && f->reset && f->closed,
	       "a write error of the end: RST to the guest, host_io counted, the end reset");
	fake_next_connect = -ECONNREFUSED;
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1003, 5003, 0, NULL, 0, 0);
	fake_next_connect = 0;
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1003, 5003, STREAM, 0, 0) &&
	       st->conns_refused == refused + 1 && conn_count(t) == 0,
	       "a refused open: RST, counted, no slot kept");
}

static void test_polled(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t reset = st->conns_reset;
	struct fake_end *f;

	/* Port 7000 routes to a pipe-like end without events: it accepts later. */
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1004, 7000, 0, NULL, 0, 0);
	f = end_for_port(7000);
	pump(t);
	tap_ok(f && f->polled && !guest_recv(t, sizeof(g.data)) && conn_count(t) == 1,
	       "a polled end: no RESPONSE before its far side accepts");
	if (!f)
		return;
	f->far = EP_OPENED;
	pump(t);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 1004, 7000, STREAM, 0, 0),
	       "its far side accepts: RESPONSE, found by polling with no event");
	/* Data both ways without one event. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1004, 7000, 0, payload, 3000, 0);
	memcpy(f->to_guest, payload + 3000, 500);
	f->offered = 500;
	pump(t);
	tap_ok(f->taken == 3000 && memcmp(f->to_host, payload, 3000) == 0 &&
	       guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_RW &&
	       g.h.len == 500 && memcmp(g.data, payload + 3000, 500) == 0,
	       "3000 bytes to it and 500 from it, polled");
	f->far |= EP_RESET;
	pump(t);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1004, 7000, STREAM, 0, 0) &&
	       st->conns_reset == reset + 1 && f->closed,
	       "its far side resets: RST to the guest, counted, the end let go");
	guest_drain(t);
}

/* A tx burst laid out as the dataplane hands it to conn_from_guest_run(). */
struct burst {
	struct virtio_vsock_hdr raw[8];
	struct iovec iov[16];
	unsigned int cnt[8], n, niov;
};

/* One more packet: @p len bytes of the payload from @p off, guest port @p gport. */
static void burst_add(struct burst *b, uint16_t op, uint32_t gport, uint32_t hport,
		      uint32_t off, uint32_t len)
{
	b->cnt[b->n] = guest_pkt(&b->raw[b->n], &b->iov[b->niov], op, STREAM, gport, hport, 0,
				 payload + off, len, GUEST_BUF, 0, GUEST_CID, HOST_CID);
	b->niov += b->cnt[b->n++];
}

/*
 * A tx burst as the dataplane hands it over, two connections and a control packet mixed:
 * each run of one connection's data goes to its end in one write, the rest packet by packet,
 * in order. Then a run that ends where the guest oversteps its credit.
 */
static void test_runs(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t credit = st->proto_err[CONN_ERR_CREDIT], pkts;
	struct fake_end *a = open_conn(t, 1010, 5010), *b = open_conn(t, 1011, 5011);
	struct burst x = { .n = 0 };
	unsigned int n;
	int got;

	if (!tap_ok(a && b && guest_drain(t) == 0, "two connections for the bursts"))
		return;
	pkts = st->from_guest_pkts;
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 0, 1000);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 1000, 1000);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 2000, 1000);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1011, 5011, 10000, 500);
	burst_add(&x, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 1010, 5010, 0, 0);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 3000, 700);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 3700, 300);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1011, 5011, 10500, 500);
	n = conn_from_guest_run(t, x.raw, x.iov, x.cnt, x.n);
	tap_ok(n == 8 && a->taken == 4000 && memcmp(a->to_host, payload, 4000) == 0 &&
	       a->writes == 2 && b->taken == 1000 &&
	       memcmp(b->to_host, payload + 10000, 1000) == 0 && b->writes == 2 &&
	       st->from_guest_pkts == pkts + 8,
	       "a mixed burst: all 8 taken (%u); 4000 bytes to one end in 2 writes (%zu, %u), "
	       "1000 in order to the other (%zu, %u)", n, a->taken, a->writes, b->taken,
	       b->writes);
	got = guest_recv(t, sizeof(g.data));
	tap_ok(got && is_pkt(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 1010, 5010, STREAM, 0, 0) &&
	       g.h.fwd_cnt == 4000 && guest_drain(t) == 0,
	       "the CREDIT_REQUEST between the runs is answered: CREDIT_UPDATE, fwd_cnt %u",
	       g.h.fwd_cnt);
	/* The end takes nothing now: 2 x 30000 fit the 64 KiB window, a third does not. */
	a->room = 0;
	x.n = x.niov = 0;
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 4000, 30000);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 34000, 30000);
	burst_add(&x, VIRTIO_VSOCK_OP_RW, 1010, 5010, 64000, 30000);
	n = conn_from_guest_run(t, x.raw, x.iov, x.cnt, x.n);
	tap_ok(n == 3 && a->writes == 3 && st->proto_err[CONN_ERR_CREDIT] == credit + 1 &&
	       guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1010, 5010, STREAM, 0, 0) && a->closed,
	       "beyond the credit: the two within it as one run, the third is a credit error: "
	       "RST, the end closed");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1011, 5011,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1011, 5011, STREAM, 0, 0) && conn_count(t) == 0,
	       "the other closes: table empty");
}

/* One more packet to @p b as burst_add(), with its flags, source CID and readable bytes. */
static void burst_add_as(struct burst *b, uint32_t off, uint32_t len, uint32_t flags,
			 uint64_t src_cid, int readable_extra)
{
	b->cnt[b->n] = guest_pkt(&b->raw[b->n], &b->iov[b->niov], VIRTIO_VSOCK_OP_RW, STREAM,
				 1012, 5012, flags, payload + off, len, GUEST_BUF, 0, src_cid,
				 HOST_CID);
	b->niov += b->cnt[b->n++];
	b->iov[b->niov - 1].iov_len += readable_extra;
}

/*
 * A run checks the first header whole and of the next ones what can differ once their
 * flow, op, type and flags are the first's: their lengths. A header that differs in
 * anything else, or whose length its pieces do not hold, ends the run and is checked whole,
 * counted by its own error. Pieces holding more than the length give the length only.
 */
static void test_run_checks(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t trunc = st->pkt_err[VSOCK_PKT_ERR_LEN_TRUNCATED];
	uint64_t flags = st->pkt_err[VSOCK_PKT_ERR_FLAGS];
	uint64_t src = st->pkt_err[VSOCK_PKT_ERR_SRC_CID];
	struct fake_end *a = open_conn(t, 1012, 5012);
	struct burst x = { .n = 0 };
	uint8_t want[3000];
	unsigned int n;

	if (!tap_ok(a && guest_drain(t) == 0, "a connection for the checked runs"))
		return;
	burst_add_as(&x, 0, 1000, 0, GUEST_CID, 0);
	burst_add_as(&x, 1000, 1000, 0, GUEST_CID, 50);		/* 50 bytes beyond len */
	burst_add_as(&x, 2000, 1000, 0, GUEST_CID, -100);	/* len beyond its pieces */
	burst_add_as(&x, 2000, 1000, VIRTIO_VSOCK_SEQ_EOM, GUEST_CID, 0);
	burst_add_as(&x, 2000, 1000, 0, GUEST_CID + 1, 0);
	burst_add_as(&x, 2000, 500, 0, GUEST_CID, 0);
	burst_add_as(&x, 2500, 500, 0, GUEST_CID, 0);
	n = conn_from_guest_run(t, x.raw, x.iov, x.cnt, x.n);
	memcpy(want, payload, sizeof(want));
	tap_ok(n == 7 && a->taken == 3000 && memcmp(a->to_host, want, 3000) == 0 &&
	       a->writes == 2, "the good packets as two runs, 3000 bytes in 2 writes (%u, %zu, "
	       "%u), the bytes beyond a length not written", n, a->taken, a->writes);
	tap_ok(st->pkt_err[VSOCK_PKT_ERR_LEN_TRUNCATED] == trunc + 1 &&
	       st->pkt_err[VSOCK_PKT_ERR_FLAGS] == flags + 1 &&
	       st->pkt_err[VSOCK_PKT_ERR_SRC_CID] == src + 1,
	       "inside a run: a truncated packet, stream flags, another source CID, each "
	       "checked whole and counted by its error");
	guest_drain(t);
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1012, 5012,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	guest_drain(t);
	tap_ok(conn_count(t) == 0, "closed: table empty");
}

/* Take every mbuf of the pool into @p h (at most @p max): the table can queue nothing. */
static unsigned int pool_hoard(struct rte_mbuf **h, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && (h[n] = rte_pktmbuf_alloc(pool)) != NULL)
		n++;
	return n;
}

static void pool_unhoard(struct rte_mbuf **h, unsigned int n)
{
	while (n > 0)
		rte_pktmbuf_free(h[--n]);
}

/* Guest bytes the table counts for its connection (guest_port, host_port), and its credit. */
static bool conn_books(struct conn_table *t, uint32_t gport, uint32_t hport,
		       struct vsock_pmd_conn_info *out)
{
	static struct vsock_pmd_conn_info info[FAKE_ENDS];
	uint32_t i, n = conn_table_snapshot(t, info, FAKE_ENDS);

	for (i = 0; i < n && i < FAKE_ENDS; i++) {
		if (info[i].guest_port == gport && info[i].host_port == hport) {
			*out = info[i];
			return true;
		}
	}
	return false;
}

/*
 * A packet the end takes in part while no mbuf can hold the rest: it waits (-EAGAIN) with
 * what was written remembered, comes again with the same header and the rest follows, each
 * byte once, the books as if it had gone at once. Another packet in its place resets its
 * connection alone, as conn_from_guest_abandon() does.
 */
static void test_partial(struct conn_table *t)
{
	static struct rte_mbuf *hoard[4096];
	const struct conn_stats *st = conn_table_stats(t);
	struct fake_end *a = open_conn(t, 1030, 5030), *b = open_conn(t, 1031, 5031), *c;
	uint64_t state_err = st->proto_err[CONN_ERR_STATE], bytes = st->from_guest_bytes;
	struct vsock_pmd_conn_info info = { 0 };
	struct virtio_vsock_hdr raw;
	bool books;
	struct iovec iov[2];
	unsigned int cnt, nh;
	int r1, r2, r3;

	if (!tap_ok(a && b && guest_drain(t) == 0, "two connections for the partial writes"))
		return;
	a->room = 1000;
	cnt = guest_pkt(&raw, iov, VIRTIO_VSOCK_OP_RW, STREAM, 1030, 5030, 0, payload, 3000,
			GUEST_BUF, 0, GUEST_CID, HOST_CID);
	nh = pool_hoard(hoard, RTE_DIM(hoard));
	r1 = conn_from_guest(t, &raw, iov, cnt);
	r2 = conn_from_guest(t, &raw, iov, cnt);
	tap_ok(r1 == -EAGAIN && r2 == -EAGAIN && a->taken == 1000 &&
	       memcmp(a->to_host, payload, 1000) == 0 && conn_from_guest_partial(t),
	       "3000 bytes, the end takes 1000 and no mbuf holds the rest: the packet waits, "
	       "written in part, and again; nothing written twice (%zu)", a->taken);
	books = conn_books(t, 1030, 5030, &info);
	tap_ok(books && info.from_guest_bytes == 1000 && info.guest_credit == BUF_ALLOC,
	       "meanwhile its books count the 1000 bytes written, received and taken: the "
	       "guest's credit is its buf_alloc, no more (%u, %u)", info.from_guest_bytes,
	       info.guest_credit);
	pool_unhoard(hoard, nh);
	r3 = conn_from_guest(t, &raw, iov, cnt);
	a->room = SIDE;
	event(a, EP_WRITABLE);
	pump(t);
	tap_ok(r3 == 0 && !conn_from_guest_partial(t) && a->taken == 3000 &&
	       memcmp(a->to_host, payload, 3000) == 0 &&
	       st->from_guest_bytes == bytes + 3000,
	       "mbufs again: presented once more it is taken, the end gets the 3000 bytes once "
	       "each, in order (%zu)", a->taken);
	books = conn_books(t, 1030, 5030, &info);
	tap_ok(books && info.from_guest_bytes == 3000 &&
	       info.queued_to_host == 0 && info.guest_credit == info.our_buf_alloc &&
	       info.our_buf_alloc == BUF_ALLOC,
	       "its books: 3000 bytes from the guest, all taken, the guest's credit its whole "
	       "buf_alloc (%u of %u)", info.guest_credit, info.our_buf_alloc);
	guest_drain(t);

	/* Written in part again; then a packet of the other connection comes in its place. */
	a->room = 500;
	nh = pool_hoard(hoard, RTE_DIM(hoard));
	r1 = conn_from_guest(t, &raw, iov, cnt);
	r2 = guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 1031, 5031, 0, payload + 5000, 100, 0);
	pool_unhoard(hoard, nh);
	tap_ok(r1 == -EAGAIN && r2 == 0 && !conn_from_guest_partial(t) && b->taken == 100 &&
	       memcmp(b->to_host, payload + 5000, 100) == 0 && !b->closed,
	       "written in part, then another connection's packet in its place: that one is "
	       "taken whole");
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1030, 5030, STREAM, 0, 0) && a->closed &&
	       st->proto_err[CONN_ERR_STATE] == state_err + 1 && guest_drain(t) == 0,
	       "the connection written in part is reset (RST, proto_err state), and only it");

	/* The caller cannot present it again: conn_from_guest_abandon(). */
	c = open_conn(t, 1032, 5032);
	if (!tap_ok(c != NULL && guest_drain(t) == 0, "a third connection"))
		return;
	c->room = 10;
	cnt = guest_pkt(&raw, iov, VIRTIO_VSOCK_OP_RW, STREAM, 1032, 5032, 0, payload, 2000,
			GUEST_BUF, 0, GUEST_CID, HOST_CID);
	nh = pool_hoard(hoard, RTE_DIM(hoard));
	r1 = conn_from_guest(t, &raw, iov, cnt);
	pool_unhoard(hoard, nh);
	conn_from_guest_abandon(t);
	tap_ok(r1 == -EAGAIN && !conn_from_guest_partial(t) && c->closed &&
	       guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1032, 5032, STREAM, 0, 0) &&
	       st->proto_err[CONN_ERR_STATE] == state_err + 2 && !b->closed,
	       "abandoned: that connection reset, the other open");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1031, 5031,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1031, 5031, STREAM, 0, 0) && conn_count(t) == 0,
	       "the other closes: table empty");
}

/* Longer than every timeout of the table (CONN_TIMEOUT_MS_DEFAULT each). */
#define QUIET_S 10

/*
 * Deadlines after quiet rounds. A worker skips a quiet table altogether, so the last round
 * that called the table may be long past when the guest's next packet comes. Time is
 * simulated here: the last round that did work ran QUIET_S seconds ago, a REQUEST arrives
 * now, and what is checked is when its deadline falls: the whole connect timeout after the
 * REQUEST (between @p before and @p after it), whatever the last round's clock was.
 */
static void test_quiet_clock(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	const uint64_t hz = rte_get_tsc_hz(), tmo = conn_tsc_of_ms(hz, CONN_TIMEOUT_MS_DEFAULT);
	uint64_t timeouts = st->proto_err[CONN_ERR_TIMEOUT], before, after;
	struct ep_addr from4;
	struct fake_end *f;

	/* A guest-to-guest connect: the far side accepts just before the deadline. */
	conn_poll_host(t, rte_get_tsc_cycles() - QUIET_S * hz, 256);
	before = rte_get_tsc_cycles();
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1020, 7000, 0, NULL, 0, 0);
	after = rte_get_tsc_cycles();
	f = end_for_port(7000);
	conn_service_host(t, after, 256);
	tap_ok(f && !f->closed && !guest_recv(t, sizeof(g.data)) && conn_count(t) == 1 &&
	       st->proto_err[CONN_ERR_TIMEOUT] == timeouts,
	       "a REQUEST after %d s of quiet rounds waits for the far side, no RST", QUIET_S);
	conn_service_host(t, before + tmo - 1, 256);
	tap_ok(f && !f->closed && !guest_recv(t, sizeof(g.data)) && conn_count(t) == 1,
	       "it waits the whole connect timeout, counted from the REQUEST");
	if (!f)
		return;
	f->far = EP_OPENED;
	conn_service_host(t, before + tmo - 1, 256);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 1020, 7000, STREAM, 0, 0),
	       "the far side accepts at the end of the timeout: RESPONSE");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 1020, 7000,
		   VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, 0);
	guest_drain(t);

	/* The far side never answers: the timeout fires, once, at its time. */
	conn_poll_host(t, rte_get_tsc_cycles() - QUIET_S * hz, 256);
	before = rte_get_tsc_cycles();
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1021, 7000, 0, NULL, 0, 0);
	after = rte_get_tsc_cycles();
	f = end_for_port(7000);
	conn_service_host(t, before + tmo - 1, 256);
	tap_ok(f && !f->closed && !guest_recv(t, sizeof(g.data)) &&
	       st->proto_err[CONN_ERR_TIMEOUT] == timeouts,
	       "another REQUEST after quiet: no answer yet, still waiting just before its deadline");
	conn_service_host(t, after + tmo, 256);
	tap_ok(guest_recv(t, sizeof(g.data)) &&
	       is_pkt(VIRTIO_VSOCK_OP_RST, 1021, 7000, STREAM, 0, 0) && f && f->closed &&
	       st->proto_err[CONN_ERR_TIMEOUT] == timeouts + 1 && conn_count(t) == 0,
	       "the far side never answers: RST at the connect timeout, counted once");

	/*
	 * Another guest connects while the worker is about to sleep: conn_pipes_sweep() takes it
	 * between rounds, after quiet ones. The guest gets the REQUEST, not an RST.
	 */
	conn_poll_host(t, rte_get_tsc_cycles() - QUIET_S * hz, 256);
	from4 = (struct ep_addr){ .src_cid = 4, .dst_cid = GUEST_CID, .src_port = 5555,
				  .dst_port = 6000, .type = STREAM };
	fake_incoming(&from4, false);
	before = rte_get_tsc_cycles();
	conn_pipes_sweep(t);
	f = end_for_port(6000);
	conn_service_host(t, rte_get_tsc_cycles(), 256);
	tap_ok(f && !f->closed && guest_recv(t, sizeof(g.data)) &&
	       g.h.op == VIRTIO_VSOCK_OP_REQUEST && g.h.src_cid == 4 && g.h.src_port == 5555 &&
	       g.h.dst_port == 6000 && conn_count(t) == 1,
	       "a guest-to-guest connect taken by the pre-sleep sweep after quiet: the guest gets "
	       "the REQUEST");
	conn_service_host(t, before + tmo - 1, 256);
	guest_send_full(t, VIRTIO_VSOCK_OP_RESPONSE, STREAM, 6000, 5555, 0, NULL, 0, GUEST_BUF, 0,
			GUEST_CID, 4);
	tap_ok(f && f->established && !f->closed && !guest_recv(t, sizeof(g.data)) &&
	       st->proto_err[CONN_ERR_TIMEOUT] == timeouts + 1,
	       "the guest answers at the end of the timeout: established");
	guest_send_full(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 6000, 5555,
			VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0, GUEST_BUF, 0,
			GUEST_CID, 4);
	tap_ok(guest_recv(t, sizeof(g.data)) && g.h.op == VIRTIO_VSOCK_OP_RST &&
	       conn_count(t) == 0, "the guest closes it: RST, table empty");
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
			"--log-level=lib.eal:error" };
	struct conn_table *t;
	unsigned int i;

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	pool = rte_pktmbuf_pool_create("conn_ep", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	route_to = (struct rte_ring *)(uintptr_t)0x1;	/* never dereferenced: the fake's */
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + i / 251);
	t = pool ? table() : NULL;
	if (!tap_ok(t != NULL, "table created with the fake endpoint"))
		return tap_done();
	test_g2h(t);
	test_h2g(t);
	test_h2g_direct(t);
	test_h2g_probe(t);
	test_h2g_layouts(t);
	test_errors(t);
	test_seq_rcv_shut(t);
	test_polled(t);
	test_runs(t);
	test_run_checks(t);
	test_quiet_clock(t);
	test_partial(t);
	tap_ok(table_mbufs(t) == 0 && conn_count(t) == 0,
	       "every mbuf back, table empty (%u mbufs held)", table_mbufs(t));
	conn_table_destroy(t);
	tap_ok(rte_mempool_avail_count(pool) == 2047, "the pool is whole again");
	return tap_done();
}
