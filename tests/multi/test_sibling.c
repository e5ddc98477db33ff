/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest-to-guest connections through two connection tables, packet by packet: the test
 * plays both guests' drivers (headers in, headers out) and routes as ep_route() would,
 * so every step of the protocol is visible: REQUEST handed to the other guest, RESPONSE
 * back, data both ways with the CIDs of the two guests, credit stall and recovery,
 * SEQPACKET boundaries, shutdowns, refusals and resets, a guest going away.
 */
#include <stdio.h>
#include <string.h>

#include <linux/virtio_vsock.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "conn.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "tap.h"
#include "vsock_pkt.h"

#define CID_A 3
#define CID_B 4
#define CID_C 5		/* shares no group with A */
#define BUF 4096

static struct conn_table *ta, *tb;
static struct rte_ring *in_a, *in_b;
static uint8_t payload[65536], rxbuf[VSOCK_HDR_SIZE + BUF];

/* A and B share a group; C shares none. */
static struct rte_ring *route(uint64_t src, uint64_t dst, uint32_t port)
{
	(void)port;
	if (src == CID_A && dst == CID_B)
		return in_b;
	if (src == CID_B && dst == CID_A)
		return in_a;
	return NULL;
}

static struct conn_table *table(uint64_t cid, struct rte_ring *in, struct rte_mempool *mp)
{
	struct conn_table_conf conf;

	conn_table_conf_init(&conf);
	conf.guest_cid = cid;
	conf.uds_path = "/nonexistent/vm.vsock";
	conf.pool = mp;
	conf.socket_id = (int)rte_socket_id();
	conf.max_conns = 64;
	conf.seqpacket = true;
	conf.route = route;
	conf.incoming = in;
	return conn_table_create(&conf);
}

/* Guest @p src_cid sends one packet. */
static int tx(struct conn_table *t, uint64_t src_cid, uint32_t sport, uint64_t dst_cid,
	      uint32_t dport, uint16_t type, uint16_t op, const void *data, uint32_t len,
	      uint32_t flags, uint32_t buf_alloc, uint32_t fwd_cnt)
{
	const struct vsock_flow f = { .src_cid = src_cid, .dst_cid = dst_cid, .src_port = sport,
				      .dst_port = dport, .type = type };
	struct virtio_vsock_hdr raw;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)data, .iov_len = len };
	struct vsock_hdr h;

	vsock_pkt_build(&h, &f, op, len, flags, buf_alloc, fwd_cnt);
	vsock_pkt_encode(&h, &raw);
	return conn_from_guest(t, &raw, &iov, len ? 1 : 0);
}

/* Both tables' host side, a few rounds. */
static void poll_both(void)
{
	int i;

	for (i = 0; i < 4; i++) {
		conn_service_host(ta, rte_get_tsc_cycles(), 64);
		conn_service_host(tb, rte_get_tsc_cycles(), 64);
	}
}

/* The next packet @p t owes its guest into @p h (payload in rxbuf after the header). */
static bool rx(struct conn_table *t, struct vsock_hdr *h)
{
	struct iovec iov = { .iov_base = rxbuf, .iov_len = sizeof(rxbuf) };

	poll_both();
	if (!conn_has_output(t) || conn_to_guest(t, &iov, 1) == 0)
		return false;
	vsock_pkt_parse(rxbuf, VSOCK_HDR_SIZE, h);
	return true;
}

static bool is(const struct vsock_hdr *h, uint64_t sc, uint32_t sp, uint64_t dc, uint32_t dp,
	       uint16_t op)
{
	return h->src_cid == sc && h->src_port == sp && h->dst_cid == dc && h->dst_port == dp &&
	       h->op == op;
}

/* A connects to B's port @p port from @p aport; B's guest answers @p accept. */
static bool connect_ab(uint32_t aport, uint32_t port, uint16_t type, uint32_t b_buf)
{
	struct vsock_hdr h;

	tx(ta, CID_A, aport, CID_B, port, type, VIRTIO_VSOCK_OP_REQUEST, NULL, 0, 0, 256 * 1024,
	   0);
	if (!rx(tb, &h) || !is(&h, CID_A, aport, CID_B, port, VIRTIO_VSOCK_OP_REQUEST) ||
	    h.type != type)
		return false;
	tx(tb, CID_B, port, CID_A, aport, type, VIRTIO_VSOCK_OP_RESPONSE, NULL, 0, 0, b_buf, 0);
	return rx(ta, &h) && is(&h, CID_B, port, CID_A, aport, VIRTIO_VSOCK_OP_RESPONSE);
}

/* Collect RW payload @p t owes its guest until @p want bytes or nothing more comes. */
static uint32_t drain(struct conn_table *t, uint8_t *out, uint32_t want, uint32_t *pkts,
		      uint32_t *eoms, uint64_t src_cid)
{
	struct vsock_hdr h;
	uint32_t got = 0;

	while (got < want && rx(t, &h)) {
		if (h.op != VIRTIO_VSOCK_OP_RW || h.src_cid != src_cid)
			continue;
		memcpy(out + got, rxbuf + VSOCK_HDR_SIZE, h.len);
		got += h.len;
		if (pkts)
			(*pkts)++;
		if (eoms && (h.flags & VIRTIO_VSOCK_SEQ_EOM))
			(*eoms)++;
	}
	return got;
}

static void test_stream(void)
{
	static uint8_t got[65536];
	struct vsock_hdr h;
	uint32_t n;

	tap_ok(connect_ab(1000, 6000, VIRTIO_VSOCK_TYPE_STREAM, 256 * 1024),
	       "stream: A's REQUEST reaches B as 3:1000 -> 4:6000, B's RESPONSE reaches A");
	tx(ta, CID_A, 1000, CID_B, 6000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RW, payload,
	   5000, 0, 256 * 1024, 0);
	n = drain(tb, got, 5000, NULL, NULL, CID_A);
	tap_ok(n == 5000 && memcmp(got, payload, 5000) == 0,
	       "stream A->B: 5000 bytes, intact, from CID 3 (%u)", n);
	tx(tb, CID_B, 6000, CID_A, 1000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RW,
	   payload + 7, 3000, 0, 256 * 1024, 5000);
	n = drain(ta, got, 3000, NULL, NULL, CID_B);
	tap_ok(n == 3000 && memcmp(got, payload + 7, 3000) == 0,
	       "stream B->A: 3000 bytes, intact, from CID 4 (%u)", n);

	/* A shuts down sending: B's guest reads EOF after the data. */
	tx(ta, CID_A, 1000, CID_B, 6000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_SHUTDOWN,
	   NULL, 0, VIRTIO_VSOCK_SHUTDOWN_SEND, 256 * 1024, 3000);
	tap_ok(rx(tb, &h) && is(&h, CID_A, 1000, CID_B, 6000, VIRTIO_VSOCK_OP_SHUTDOWN) &&
	       h.flags == VIRTIO_VSOCK_SHUTDOWN_SEND, "A's SHUTDOWN(SEND) reaches B");
	/* B still sends, then closes: A reads the bytes, then SHUTDOWN(RCV|SEND). */
	tx(tb, CID_B, 6000, CID_A, 1000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RW, payload,
	   100, 0, 256 * 1024, 5000);
	tx(tb, CID_B, 6000, CID_A, 1000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_SHUTDOWN,
	   NULL, 0, VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, 256 * 1024, 5000);
	tap_ok(rx(tb, &h) && is(&h, CID_A, 1000, CID_B, 6000, VIRTIO_VSOCK_OP_RST),
	       "B's close: B gets the RST that ends it");
	n = drain(ta, got, 100, NULL, NULL, CID_B);
	tap_ok(n == 100 && rx(ta, &h) && is(&h, CID_B, 6000, CID_A, 1000,
					     VIRTIO_VSOCK_OP_SHUTDOWN) &&
	       h.flags == (VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV),
	       "A reads B's last 100 bytes, then SHUTDOWN(RCV|SEND)");
	tx(ta, CID_A, 1000, CID_B, 6000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RST, NULL, 0, 0,
	   256 * 1024, 3100);
	poll_both();
	tap_ok(conn_count(ta) == 0 && conn_count(tb) == 0, "both tables empty after the close");
}

static void test_credit(void)
{
	static uint8_t got[65536];
	uint32_t n;

	/* B's guest has a 4 KiB buffer: A's 16 KiB wait in the app until B gives credit. */
	tap_ok(connect_ab(1001, 6001, VIRTIO_VSOCK_TYPE_STREAM, BUF), "credit: connected");
	tx(ta, CID_A, 1001, CID_B, 6001, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RW, payload,
	   16384, 0, 256 * 1024, 0);
	n = drain(tb, got, 16384, NULL, NULL, CID_A);
	tap_ok(n == BUF, "B gets exactly its 4096 bytes of credit (%u)", n);
	tap_ok(conn_table_stats(tb)->credit_stalls >= 1, "the stall is counted (%lu)",
	       (unsigned long)conn_table_stats(tb)->credit_stalls);
	tx(tb, CID_B, 6001, CID_A, 1001, VIRTIO_VSOCK_TYPE_STREAM,
	   VIRTIO_VSOCK_OP_CREDIT_UPDATE, NULL, 0, 0, BUF, BUF);
	n += drain(tb, got + n, 16384 - n, NULL, NULL, CID_A);
	tap_ok(n == 2 * BUF, "a CREDIT_UPDATE lets 4096 more through (%u)", n);
	tx(tb, CID_B, 6001, CID_A, 1001, VIRTIO_VSOCK_TYPE_STREAM,
	   VIRTIO_VSOCK_OP_CREDIT_UPDATE, NULL, 0, 0, 64 * 1024, 2 * BUF);
	n += drain(tb, got + n, 16384 - n, NULL, NULL, CID_A);
	tap_ok(n == 16384 && memcmp(got, payload, 16384) == 0,
	       "a larger window lets the rest through, intact (%u)", n);
	/* A resets: B's guest gets an RST from CID 3. */
	tx(ta, CID_A, 1001, CID_B, 6001, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RST, NULL, 0, 0,
	   256 * 1024, 0);
	{
		struct vsock_hdr h;

		tap_ok(rx(tb, &h) && is(&h, CID_A, 1001, CID_B, 6001, VIRTIO_VSOCK_OP_RST),
		       "A's RST mid-connection reaches B as an RST from CID 3");
	}
	poll_both();
	tap_ok(conn_count(ta) == 0 && conn_count(tb) == 0, "both tables empty after the reset");
}

static void test_seqpacket(void)
{
	static uint8_t got[65536];
	uint32_t n, pkts = 0, eoms = 0;

	tap_ok(connect_ab(1002, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, 256 * 1024),
	       "seqpacket: connected");
	/* Messages of 100, 5000 (in two pieces) and 1 bytes. */
	tx(ta, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, VIRTIO_VSOCK_OP_RW,
	   payload, 100, VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR, 256 * 1024, 0);
	tx(ta, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, VIRTIO_VSOCK_OP_RW,
	   payload + 100, 3000, 0, 256 * 1024, 0);
	tx(ta, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, VIRTIO_VSOCK_OP_RW,
	   payload + 3100, 2000, VIRTIO_VSOCK_SEQ_EOM, 256 * 1024, 0);
	tx(ta, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, VIRTIO_VSOCK_OP_RW,
	   payload + 5100, 1, VIRTIO_VSOCK_SEQ_EOM, 256 * 1024, 0);
	n = drain(tb, got, 5101, &pkts, &eoms, CID_A);
	tap_ok(n == 5101 && memcmp(got, payload, 5101) == 0 && eoms == 3,
	       "three messages A->B, 5101 bytes intact, 3 message ends (%u bytes, %u ends)", n,
	       eoms);
	tx(ta, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_TYPE_SEQPACKET, VIRTIO_VSOCK_OP_RST, NULL,
	   0, 0, 256 * 1024, 0);
	{
		struct vsock_hdr h;

		tap_ok(rx(tb, &h) && is(&h, CID_A, 1002, CID_B, 6002, VIRTIO_VSOCK_OP_RST),
		       "A's RST reaches B");
	}
	poll_both();
	tap_ok(conn_count(ta) == 0 && conn_count(tb) == 0, "both tables empty");
}

static void test_refusals(void)
{
	struct vsock_hdr h;
	uint64_t route_err = conn_table_stats(ta)->proto_err[CONN_ERR_ROUTE];

	/* No shared group: RST from the CID it asked for, counted, nothing reaches C. */
	tx(ta, CID_A, 1003, CID_C, 7000, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_REQUEST, NULL,
	   0, 0, 256 * 1024, 0);
	tap_ok(rx(ta, &h) && is(&h, CID_C, 7000, CID_A, 1003, VIRTIO_VSOCK_OP_RST),
	       "REQUEST to CID 5 (no shared group): RST from 5:7000");
	tap_ok(conn_table_stats(ta)->proto_err[CONN_ERR_ROUTE] == route_err + 1,
	       "counted as a routing error");
	/* Spoofing: a packet claiming another source CID is refused before routing. */
	tx(ta, CID_C, 1004, CID_B, 7001, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_REQUEST, NULL,
	   0, 0, 256 * 1024, 0);
	poll_both();
	tap_ok(!conn_has_output(tb) && conn_count(tb) == 0,
	       "REQUEST from A claiming CID 5 never reaches B");
	while (rx(ta, &h))
		;
	/* B's guest refuses: A gets the RST, from B. */
	tx(ta, CID_A, 1005, CID_B, 7002, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_REQUEST, NULL,
	   0, 0, 256 * 1024, 0);
	tap_ok(rx(tb, &h) && h.op == VIRTIO_VSOCK_OP_REQUEST, "B's guest gets the REQUEST");
	tx(tb, CID_B, 7002, CID_A, 1005, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RST, NULL, 0, 0,
	   256 * 1024, 0);
	tap_ok(rx(ta, &h) && is(&h, CID_B, 7002, CID_A, 1005, VIRTIO_VSOCK_OP_RST),
	       "B's guest refuses: A gets an RST from 4:7002");
	poll_both();
	tap_ok(conn_count(ta) == 0 && conn_count(tb) == 0, "both tables empty");
}

static void test_guest_gone(void)
{
	struct vsock_hdr h;

	tap_ok(connect_ab(1006, 6006, VIRTIO_VSOCK_TYPE_STREAM, 256 * 1024), "connected again");
	/* B's guest goes away (device destroyed): A's guest is reset. */
	conn_table_reset(tb);
	tap_ok(rx(ta, &h) && is(&h, CID_B, 6006, CID_A, 1006, VIRTIO_VSOCK_OP_RST),
	       "B's guest goes away: A gets an RST from 4:6006");
	poll_both();
	tap_ok(conn_count(ta) == 0, "A's table empty");
	/* Many connections at once, then all of them reset by A's departure. */
	{
		unsigned int i, ok = 0;

		for (i = 0; i < 40; i++)
			ok += connect_ab(2000 + i, 6100, VIRTIO_VSOCK_TYPE_STREAM, 256 * 1024);
		tap_ok(ok == 40 && conn_count(ta) == 40 && conn_count(tb) == 40,
		       "40 connections to one port of B (%u)", ok);
		conn_table_reset(ta);
		for (i = 0, ok = 0; i < 40; i++)
			ok += rx(tb, &h) && h.op == VIRTIO_VSOCK_OP_RST && h.src_cid == CID_A;
		poll_both();
		tap_ok(ok == 40 && conn_count(tb) == 0,
		       "A's guest goes away: B's guest gets 40 RSTs from CID 3 (%u)", ok);
	}
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
			"--log-level=lib.eal:error" };
	/* Each VM's share of the pipes: what ep_connect() finds by the guest's CID. */
	static const uint32_t shares[2] = { 64, 64 };
	static struct vsock_pmd_conf conf = { .nb_vms = 2, .vms = { { .cid = CID_A },
								    { .cid = CID_B } } };
	const int nodes[2] = { SOCKET_ID_ANY, SOCKET_ID_ANY };
	struct rte_mempool *mp;
	unsigned int i;

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 8));
	mp = rte_pktmbuf_pool_create("sib_test", 8191, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	in_a = rte_ring_create("sib_in_a", 256, (int)rte_socket_id(), RING_F_SC_DEQ);
	in_b = rte_ring_create("sib_in_b", 256, (int)rte_socket_id(), RING_F_SC_DEQ);
	tap_ok(mp && in_a && in_b && ep_sibling_setup(&conf, nodes, 128) == 0 &&
	       ep_pipe_pool_init(shares, 2, 256, (int)rte_socket_id()) == 0,
	       "mempool, incoming rings, the VMs' table and the pipe pool");
	ta = table(CID_A, in_a, mp);
	tb = table(CID_B, in_b, mp);
	if (ta && tb) {
		poll_both();
		test_stream();
		test_credit();
		test_seqpacket();
		test_refusals();
		test_guest_gone();
	}
	conn_table_destroy(ta);
	conn_table_destroy(tb);
	ep_pipe_pool_fini();
	ep_sibling_fini();
	tap_ok(mp && rte_mempool_avail_count(mp) == 8191, "every mbuf back in the pool (%u)",
	       mp ? rte_mempool_avail_count(mp) : 0);
	return tap_done();
}
