/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn: the vsock state machine against real Unix sockets in a temporary directory, driven
 * through conn_from_guest/conn_to_guest/conn_poll_host with hand-built headers (no virtqueue).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "conn.h"
#include "conn_guest.h"
#include "ep_uds.h"
#include "tap.h"
#include "vsock_pkt.h"

#define BUF_ALLOC (256 * 1024)

static char dir[64];
static char uds[80];
static int listen_fd = -1;
static struct rte_mempool *pool;

static uint64_t now(void)
{
	return rte_get_tsc_cycles();
}

static void pump(struct conn_table *t)
{
	int i;

	for (i = 0; i < 4; i++)
		conn_poll_host(t, now(), 256);
}

static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, 2000) == 1;
}

static int host_listen(uint32_t port, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", uds, port);
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		return -1;
	return fd;
}

static int host_accept(int lfd)
{
	return wait_fd(lfd, POLLIN) ? accept(lfd, NULL, NULL) : -1;
}

/* Read exactly @len bytes with a timeout; returns bytes read. */
static size_t host_read(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len && wait_fd(fd, POLLIN)) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* True when the host side sees EOF (or reset) within the timeout. */
static int host_eof(int fd)
{
	char c;

	return wait_fd(fd, POLLIN) && read(fd, &c, 1) <= 0;
}

static int host_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", uds);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct conn_table *table(uint32_t max_conns, uint32_t buf_alloc, struct rte_mempool *mp)
{
	struct conn_table_conf conf;

	conn_table_conf_init(&conf);
	conf.guest_cid = GUEST_CID;
	conf.uds_path = uds;
	conf.listen_fd = listen_fd;
	conf.pool = mp;
	conf.socket_id = (int)rte_socket_id();
	conf.max_conns = max_conns;
	conf.buf_alloc = buf_alloc;
	conf.seqpacket = true;
	return conn_table_create(&conf);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static void test_guest_connect(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	static uint8_t buf[8192];
	int lfd = host_listen(1234, SOCK_STREAM), hfd;
	char pong[] = "pong!";

	tap_ok(conn_table_quiet(t), "a new table is quiet");
	tap_ok(guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 5000, 1234, 0, NULL, 0, 0) == 0,
	       "guest REQUEST to port 1234 consumed");
	tap_ok(!conn_table_quiet(t) && conn_table_idle(t) == CONN_OWES_GUEST,
	       "not quiet while the RESPONSE is owed: the guest's rx buffers have work");
	tap_ok(conn_has_output(t) && guest_recv(t, 4096) &&
	       is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 5000, 1234, STREAM, 0, 0) &&
	       g.h.buf_alloc == BUF_ALLOC && g.h.fwd_cnt == 0,
	       "RESPONSE 2:1234 -> 3:5000 with our buf_alloc");
	hfd = host_accept(lfd);
	tap_ok(hfd >= 0, "host listener at <uds>_1234 got the connection");
	tap_ok(!conn_has_output(t) && conn_count(t) == 1, "nothing more owed, one connection");
	tap_ok(conn_table_quiet(t) && conn_table_idle(t) == CONN_QUIET,
	       "quiet again: an established connection waits for events");

	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 5000, 1234, 0, "hello, host", 11, 0);
	memset(buf, 0, sizeof(buf));
	tap_ok(host_read(hfd, buf, 11) == 11 && memcmp(buf, "hello, host", 11) == 0,
	       "guest RW reaches the host socket byte for byte");

	tap_ok(write(hfd, pong, 5) == 5, "host writes 5 bytes");
	pump(t);
	tap_ok(!conn_table_quiet(t) && conn_table_idle(t) == CONN_OWES_GUEST,
	       "not quiet once the host's bytes are owed to the guest, and only them");
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RW, 5000, 1234, STREAM, 5, 0) &&
	       memcmp(g.data, "pong!", 5) == 0 && g.h.fwd_cnt == 11,
	       "host bytes reach the guest as RW, fwd_cnt 11");

	/* Half-close guest -> host: the host reads EOF after the data, and can still answer. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 5000, 1234, 0, "last", 4, 5);
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 5000, 1234, VIRTIO_VSOCK_SHUTDOWN_SEND,
		   NULL, 0, 5);
	tap_ok(host_read(hfd, buf, 4) == 4 && memcmp(buf, "last", 4) == 0 && host_eof(hfd),
	       "guest SHUTDOWN SEND: host reads the data, then EOF");
	tap_ok(write(hfd, "after", 5) == 5, "host still writes after the guest's SHUT_WR");
	pump(t);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RW, 5000, 1234, STREAM, 5, 0) &&
	       memcmp(g.data, "after", 5) == 0, "and the guest gets it");

	/* Host close: SHUTDOWN RCV|SEND once its data is out, then the guest's RST ends it. */
	tap_ok(write(hfd, "bye", 3) == 3, "host writes its last bytes");
	close(hfd);
	pump(t);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RW, 5000, 1234, STREAM, 3, 0) &&
	       memcmp(g.data, "bye", 3) == 0, "the last bytes come before the SHUTDOWN");
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_SHUTDOWN, 5000, 1234, STREAM, 0,
					     VIRTIO_VSOCK_SHUTDOWN_RCV |
					     VIRTIO_VSOCK_SHUTDOWN_SEND),
	       "host close -> SHUTDOWN RCV|SEND");
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 5000, 1234, 0, NULL, 0, 13);
	tap_ok(conn_count(t) == 0 && !conn_has_output(t) && st->conns_closed == 1,
	       "guest RST frees the connection, no reply");
	tap_ok(conn_table_quiet(t), "quiet once the connection is gone");
	close(lfd);
}

static void test_guest_close(struct conn_table *t)
{
	int lfd = host_listen(1235, SOCK_STREAM), hfd;
	char buf[16];

	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 5001, 1235, 0, NULL, 0, 0);
	guest_drain(t);
	hfd = host_accept(lfd);
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 5001, 1235, 0, "tail", 4, 0);
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 5001, 1235,
		   VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 5001, 1235, STREAM, 0, 0),
	       "guest close (SHUTDOWN RCV|SEND) answered with RST");
	tap_ok(host_read(hfd, buf, 4) == 4 && memcmp(buf, "tail", 4) == 0 && host_eof(hfd),
	       "host reads the data, then EOF");
	tap_ok(conn_count(t) == 0, "connection gone");
	close(hfd);
	close(lfd);
}

static void test_refused(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t refused = st->conns_refused;

	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 5002, 9999, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 5002, 9999, STREAM, 0, 0) &&
	       st->conns_refused == refused + 1 && conn_count(t) == 0,
	       "REQUEST to a port nobody listens on -> RST, counted as refused");
}

static void test_bad_packets(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t e_op = st->pkt_err[VSOCK_PKT_ERR_OP], e_src = st->pkt_err[VSOCK_PKT_ERR_SRC_CID];
	uint64_t e_type = st->pkt_err[VSOCK_PKT_ERR_TYPE];

	guest_send(t, 9, STREAM, 6000, 77, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 6000, 77, STREAM, 0, 0) &&
	       st->pkt_err[VSOCK_PKT_ERR_OP] == e_op + 1, "unknown op -> RST, op error counted");
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, 7, 6000, 77, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 6000, 77, 7, 0, 0) &&
	       st->pkt_err[VSOCK_PKT_ERR_TYPE] == e_type + 1, "unknown type -> RST, counted");
	guest_send_full(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 6000, 77, 0, NULL, 0, GUEST_BUF, 0,
			4, HOST_CID);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 6000, 77, STREAM, 0, 0) &&
	       st->pkt_err[VSOCK_PKT_ERR_SRC_CID] == e_src + 1, "wrong src_cid -> RST, counted");
	guest_send_full(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 6000, 77, 0, NULL, 0, GUEST_BUF, 0,
			GUEST_CID, 5);
	/* From the CID asked for: a Linux guest matches an RST to its socket by source. */
	tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_RST && g.h.src_cid == 5 &&
	       g.h.src_port == 77 && g.h.dst_port == 6000 && st->proto_err[CONN_ERR_ROUTE] == 1,
	       "dst_cid of another guest -> RST from that CID, counted");
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 6000, 77, 0, "x", 1, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 6000, 77, STREAM, 0, 0) &&
	       st->proto_err[CONN_ERR_NO_CONN] == 1, "RW without connection -> RST, counted");
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 6000, 77, 0, NULL, 0, 0);
	tap_ok(!conn_has_output(t), "RST without connection gets no answer");
	tap_ok(conn_count(t) == 0 && st->from_guest_pkts >= 6, "no connection created by any of them");
}

static void test_host_connect(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	char ok[32], buf[64];
	uint32_t hport;
	int fd = host_connect(), n;

	/* The payload follows the line in the same write. */
	tap_ok(fd >= 0 && write(fd, "CONNECT 52\nearly bytes", 22) == 22,
	       "host connects to <uds> and writes CONNECT 52 plus payload at once");
	pump(t);
	tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_REQUEST && g.h.dst_port == 52 &&
	       g.h.src_cid == HOST_CID && g.h.dst_cid == GUEST_CID && g.h.type == STREAM &&
	       g.h.src_port >= (1u << 30) && g.h.src_port < (1u << 31) && g.h.len == 0,
	       "guest gets REQUEST to port 52 from a host port in [2^30, 2^31)");
	hport = g.h.src_port;
	tap_ok(!conn_has_output(t), "payload waits for the guest's RESPONSE");
	tap_ok(!conn_table_quiet(t) && conn_table_idle(t) == CONN_BUSY,
	       "not quiet: the REQUEST's timeout is running");
	guest_send(t, VIRTIO_VSOCK_OP_RESPONSE, STREAM, 52, hport, 0, NULL, 0, 0);
	n = snprintf(ok, sizeof(ok), "OK %u\n", hport);
	memset(buf, 0, sizeof(buf));
	tap_ok(host_read(fd, buf, (size_t)n) == (size_t)n && memcmp(buf, ok, (size_t)n) == 0,
	       "guest RESPONSE -> host reads exactly \"OK %u\\n\"", hport);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RW, 52, hport, STREAM, 11, 0) &&
	       memcmp(g.data, "early bytes", 11) == 0,
	       "bytes after the CONNECT line reach the guest as payload");
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 52, hport, 0, "from guest", 10, 11);
	tap_ok(host_read(fd, buf, 10) == 10 && memcmp(buf, "from guest", 10) == 0,
	       "guest data reaches the host program after the OK line");
	tap_ok(st->conns_opened >= 1 && conn_count(t) == 1, "connection established");

	/* A second client, lowercase keyword; the guest refuses it. */
	{
		int fd2 = host_connect();

		tap_ok(write(fd2, "connect   53\r\n", 14) == 14, "lowercase, spaces, CRLF line");
		pump(t);
		tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_REQUEST &&
		       g.h.dst_port == 53 && g.h.src_port != hport, "REQUEST to port 53, new port");
		guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 53, g.h.src_port, 0, NULL, 0, 0);
		tap_ok(host_eof(fd2), "guest RST -> the host socket is closed");
		close(fd2);
	}
	tap_ok(conn_count(t) == 1, "the first connection is untouched");
	guest_send(t, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 52, hport,
		   VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0, 11);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 52, hport, STREAM, 0, 0) &&
	       host_eof(fd), "guest close ends it: RST to the guest, EOF to the host");
	close(fd);
}

/* Payload longer than what fits after the line in its 32-byte buffer; host half-close. */
static void test_host_long_payload(struct conn_table *t)
{
	static const char msg[] = "CONNECT 61\n0123456789abcdefghijklmnopqrstuvwxyzABCD";
	char in[64], line[32];
	uint32_t got = 0, hport;
	int fd = host_connect(), ok = 1, n;

	tap_ok(write(fd, msg, sizeof(msg) - 1) == (ssize_t)sizeof(msg) - 1,
	       "host writes CONNECT 61 and 40 payload bytes at once");
	pump(t);
	tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_REQUEST && g.h.dst_port == 61,
	       "REQUEST to port 61");
	hport = g.h.src_port;
	guest_send(t, VIRTIO_VSOCK_OP_RESPONSE, STREAM, 61, hport, 0, NULL, 0, 0);
	n = snprintf(line, sizeof(line), "OK %u\n", hport);
	tap_ok(host_read(fd, in, (size_t)n) == (size_t)n && memcmp(in, line, (size_t)n) == 0,
	       "OK line");
	shutdown(fd, SHUT_WR);
	pump(t);
	while (guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_RW) {
		ok &= got + g.h.len <= 40;
		if (ok)
			memcpy(in + got, g.data, g.h.len);
		got += g.h.len;
	}
	tap_ok(ok && got == 40 && memcmp(in, msg + 11, 40) == 0,
	       "all 40 payload bytes reach the guest in order");
	tap_ok(is_pkt(VIRTIO_VSOCK_OP_SHUTDOWN, 61, hport, STREAM, 0, VIRTIO_VSOCK_SHUTDOWN_SEND),
	       "host shutdown(SHUT_WR) -> SHUTDOWN SEND only, after the data");
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 61, hport, 0, "still", 5, 40);
	tap_ok(host_read(fd, in, 5) == 5 && memcmp(in, "still", 5) == 0,
	       "the guest can still write to the half-closed host");
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 61, hport, 0, NULL, 0, 40);
	tap_ok(host_eof(fd) && conn_count(t) == 0, "guest RST closes the host socket");
	close(fd);
}

static void test_bad_lines(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	uint64_t errs = st->proto_err[CONN_ERR_CONNECT_LINE];
	int good = host_connect(), bad = host_connect(), longl = host_connect();
	int abandon = host_connect(), slow = host_connect();
	char junk[40];

	memset(junk, 'A', sizeof(junk));
	tap_ok(write(bad, "HELLO 52\n", 9) == 9 && write(longl, junk, sizeof(junk)) == 40 &&
	       write(abandon, "CONNECT 5", 9) == 9 && write(slow, "CONN", 4) == 4 &&
	       write(good, "CONNECT 60\n", 11) == 11, "five clients write their lines");
	shutdown(abandon, SHUT_WR);
	pump(t);
	tap_ok(host_eof(bad), "malformed line: that socket is closed");
	tap_ok(host_eof(longl), "overlong line without newline: closed");
	tap_ok(host_eof(abandon), "line abandoned (EOF before newline): closed");
	tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_REQUEST && g.h.dst_port == 60 &&
	       !conn_has_output(t), "only the good client's REQUEST reaches the guest");
	tap_ok(conn_count(t) == 2, "the good one and the slow one remain");
	conn_poll_host(t, now() + 3 * rte_get_tsc_hz(), 256);
	tap_ok(host_eof(slow), "line not finished within the timeout: closed");
	tap_ok(guest_recv(t, 4096) && g.h.op == VIRTIO_VSOCK_OP_RST && g.h.dst_port == 60,
	       "the good one's unanswered REQUEST times out too: RST to the guest");
	tap_ok(host_eof(good), "and its host socket is closed");
	tap_ok(st->proto_err[CONN_ERR_CONNECT_LINE] == errs + 4 &&
	       st->proto_err[CONN_ERR_TIMEOUT] == 1 && conn_count(t) == 0,
	       "4 bad lines and 1 timeout counted, table empty");
	close(good);
	close(bad);
	close(longl);
	close(abandon);
	close(slow);
}

static void test_credit(struct conn_table *t)
{
	const struct conn_stats *st = conn_table_stats(t);
	static uint8_t out[3000], in[3000];
	int lfd = host_listen(1300, SOCK_STREAM), hfd;
	uint32_t got = 0, fwd = 0;
	uint64_t stalls = st->credit_stalls;

	/* The guest offers 1000 bytes of buffer. */
	guest_send_full(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 7000, 1300, 0, NULL, 0, 1000, 0,
			GUEST_CID, HOST_CID);
	guest_drain(t);
	hfd = host_accept(lfd);
	fill(out, sizeof(out), 1);
	tap_ok(write(hfd, out, sizeof(out)) == (ssize_t)sizeof(out), "host writes 3000 bytes");
	pump(t);
	while (guest_recv(t, 4096)) {
		memcpy(in + got, g.data, g.h.len);
		got += g.h.len;
	}
	tap_ok(got == 1000 && st->credit_stalls > stalls,
	       "guest with buf_alloc 1000 gets exactly 1000 bytes, then a credit stall");
	/* The guest reads 600: its CREDIT_UPDATE opens the window by that much. */
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 7000, 1300, 0, NULL, 0, 1000,
			600, GUEST_CID, HOST_CID);
	pump(t);
	while (guest_recv(t, 4096)) {
		memcpy(in + got, g.data, g.h.len);
		got += g.h.len;
	}
	tap_ok(got == 1600, "after CREDIT_UPDATE fwd_cnt 600: 600 more, never beyond (got %u)",
	       got);
	guest_send_full(t, VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 7000, 1300, 0, NULL, 0, 4096,
			1600, GUEST_CID, HOST_CID);
	pump(t);
	while (guest_recv(t, 4096)) {
		memcpy(in + got, g.data, g.h.len);
		got += g.h.len;
	}
	tap_ok(got == 3000 && memcmp(in, out, sizeof(out)) == 0,
	       "larger window: all 3000 bytes arrive, in order");

	/* CREDIT_REQUEST is answered with our counters. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 7000, 1300, 0, out, 100, 3000);
	fwd += 100;
	guest_send(t, VIRTIO_VSOCK_OP_CREDIT_REQUEST, STREAM, 7000, 1300, 0, NULL, 0, 3000);
	tap_ok(guest_recv(t, 4096) &&
	       is_pkt(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7000, 1300, STREAM, 0, 0) &&
	       g.h.buf_alloc == BUF_ALLOC && g.h.fwd_cnt == fwd,
	       "CREDIT_REQUEST -> CREDIT_UPDATE buf_alloc %u fwd_cnt %u", BUF_ALLOC, fwd);
	tap_ok(host_read(hfd, in, 100) == 100 && memcmp(in, out, 100) == 0, "host got the 100");
	close(hfd);
	pump(t);
	guest_drain(t);
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 7000, 1300, 0, NULL, 0, 0);
	tap_ok(conn_count(t) == 0, "closed");
	close(lfd);
}

static void guest_send_bulk(struct conn_table *t, uint32_t gport, uint32_t hport,
			    const uint8_t *data, uint32_t len, int *ok)
{
	uint32_t off = 0;

	while (off < len) {
		uint32_t n = RTE_MIN(len - off, VSOCK_PKT_MAX_PAYLOAD);

		*ok &= guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, gport, hport, 0, data + off, n,
				  0) == 0;
		off += n;
	}
}

/* The host stops reading: guest data backs up into mbufs; consumption brings credit back. */
static void test_backpressure(struct conn_table *t)
{
	static uint8_t out[2 * BUF_ALLOC], in[2 * BUF_ALLOC];
	int lfd = host_listen(1400, SOCK_STREAM), hfd;
	uint32_t got = 0, told = 0, total;
	int ok = 1;

	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 7100, 1400, 0, NULL, 0, 0);
	guest_drain(t);
	hfd = host_accept(lfd);
	fill(out, sizeof(out), 9);
	guest_send_bulk(t, 7100, 1400, out, BUF_ALLOC, &ok);
	tap_ok(ok, "guest sends its whole credit (256 KiB) while the host does not read");
	while (guest_recv(t, 4096))
		if (g.h.op == VIRTIO_VSOCK_OP_CREDIT_UPDATE)
			told = g.h.fwd_cnt;
	tap_ok(told > 0 && told < BUF_ALLOC,
	       "what the host socket took at once is announced (fwd_cnt %u)", told);
	/* The guest uses exactly the credit it was told about: now it is stalled. */
	guest_send_bulk(t, 7100, 1400, out + BUF_ALLOC, told, &ok);
	total = BUF_ALLOC + told;
	tap_ok(ok && !conn_has_output(t),
	       "guest sends %u more, all queued; no update owed while the host reads nothing",
	       told);
	while (got < total && wait_fd(hfd, POLLIN)) {
		ssize_t n = recv(hfd, in + got, total - got, MSG_DONTWAIT);

		if (n > 0)
			got += (uint32_t)n;
		pump(t);	/* EPOLLOUT: the queued rest follows */
	}
	tap_ok(got == total && memcmp(in, out, total) == 0,
	       "host then reads all %u bytes in order", total);
	tap_ok(guest_recv(t, 4096) &&
	       is_pkt(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7100, 1400, STREAM, 0, 0) &&
	       g.h.fwd_cnt == total && !conn_has_output(t),
	       "stalled guest gets one CREDIT_UPDATE with fwd_cnt %u", total);
	close(hfd);
	pump(t);
	guest_drain(t);
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 7100, 1400, 0, NULL, 0, 0);
	close(lfd);
}

static void test_seqpacket(struct conn_table *t)
{
	int lfd = host_listen(1500, SOCK_SEQPACKET), hfd;
	char buf[256];
	ssize_t n;

	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, SEQPACKET, 7200, 1500, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) &&
	       is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 7200, 1500, SEQPACKET, 0, 0),
	       "SEQPACKET REQUEST -> RESPONSE (SOCK_SEQPACKET listener)");
	hfd = host_accept(lfd);
	/* Message 1 in two packets, message 2 in one. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, SEQPACKET, 7200, 1500, 0, "first half,", 11, 0);
	/* Unix sockets deliver synchronously: a message sent would be there already. */
	tap_ok(recv(hfd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno == EAGAIN,
	       "nothing reaches the host before EOM");
	guest_send(t, VIRTIO_VSOCK_OP_RW, SEQPACKET, 7200, 1500,
		   VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR, " second half", 12, 0);
	guest_send(t, VIRTIO_VSOCK_OP_RW, SEQPACKET, 7200, 1500, VIRTIO_VSOCK_SEQ_EOM, "m2", 2,
		   0);
	n = wait_fd(hfd, POLLIN) ? recv(hfd, buf, sizeof(buf), 0) : -1;
	tap_ok(n == 23 && memcmp(buf, "first half, second half", 23) == 0,
	       "host receives message 1 whole (23 bytes)");
	n = wait_fd(hfd, POLLIN) ? recv(hfd, buf, sizeof(buf), 0) : -1;
	tap_ok(n == 2 && memcmp(buf, "m2", 2) == 0, "then message 2 (2 bytes)");

	tap_ok(send(hfd, "reply one", 9, 0) == 9 && send(hfd, "two", 3, 0) == 3,
	       "host sends two messages");
	pump(t);
	tap_ok(guest_recv(t, 4096) &&
	       is_pkt(VIRTIO_VSOCK_OP_RW, 7200, 1500, SEQPACKET, 9,
		      VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR) &&
	       memcmp(g.data, "reply one", 9) == 0, "guest gets message 1 with EOM|EOR");
	pump(t);
	/* A buffer with room for 2 payload bytes splits the 3-byte message. */
	tap_ok(guest_recv(t, VSOCK_HDR_SIZE + 2) &&
	       is_pkt(VIRTIO_VSOCK_OP_RW, 7200, 1500, SEQPACKET, 2, 0) &&
	       memcmp(g.data, "tw", 2) == 0, "small buffer: first piece without EOM");
	tap_ok(guest_recv(t, VSOCK_HDR_SIZE + 2) &&
	       is_pkt(VIRTIO_VSOCK_OP_RW, 7200, 1500, SEQPACKET, 1,
		      VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR) && g.data[0] == 'o',
	       "last piece carries EOM|EOR");
	close(hfd);
	pump(t);
	guest_drain(t);
	guest_send(t, VIRTIO_VSOCK_OP_RST, SEQPACKET, 7200, 1500, 0, NULL, 0, 0);
	close(lfd);
}

static void test_split(struct conn_table *t)
{
	static uint8_t out[1000], in[1000];
	int lfd = host_listen(1600, SOCK_STREAM), hfd;
	uint32_t got = 0, pkts = 0;
	int ok = 1;

	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 7300, 1600, 0, NULL, 0, 0);
	guest_drain(t);
	hfd = host_accept(lfd);
	fill(out, sizeof(out), 3);
	tap_ok(write(hfd, out, sizeof(out)) == 1000, "host writes 1000 bytes");
	pump(t);
	while (guest_recv(t, VSOCK_HDR_SIZE + 300)) {
		ok &= g.h.op == VIRTIO_VSOCK_OP_RW && g.h.len == (pkts < 3 ? 300u : 100u) &&
		      g.n == VSOCK_HDR_SIZE + g.h.len;
		memcpy(in + got, g.data, g.h.len);
		got += g.h.len;
		pkts++;
	}
	tap_ok(ok && pkts == 4 && got == 1000 && memcmp(in, out, 1000) == 0,
	       "split across 44+300-byte buffers: 300, 300, 300, 100, bytes intact");
	tap_ok(guest_recv(t, 30) == 0, "a buffer smaller than a header is not used");
	close(hfd);
	pump(t);
	guest_drain(t);
	guest_send(t, VIRTIO_VSOCK_OP_RST, STREAM, 7300, 1600, 0, NULL, 0, 0);
	close(lfd);
}

static void test_small_table(void)
{
	struct conn_table *t = table(2, 4096, pool);
	const struct conn_stats *st = conn_table_stats(t);
	int lfd = host_listen(1700, SOCK_STREAM), slfd = host_listen(1701, SOCK_SEQPACKET);
	static uint8_t big[4000];

	tap_ok(t != NULL, "table with 2 connections, buf_alloc 4096");
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1, 1700, 0, NULL, 0, 0);
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, SEQPACKET, 2, 1701, 0, NULL, 0, 0);
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 3, 1700, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 3, 1700, STREAM, 0, 0) &&
	       st->table_full == 1 && st->conns_refused == 1,
	       "third REQUEST beyond max_conns -> RST, table_full counted");
	tap_ok(guest_drain(t) == 2 && conn_count(t) == 2, "the first two were answered");
	/* A message is held until EOM: 3000 + 2000 exceeds the 4096 we offered. */
	guest_send(t, VIRTIO_VSOCK_OP_RW, SEQPACKET, 2, 1701, 0, big, 3000, 0);
	guest_send(t, VIRTIO_VSOCK_OP_RW, SEQPACKET, 2, 1701, 0, big, 2000, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RST, 2, 1701, SEQPACKET, 0, 0) &&
	       st->proto_err[CONN_ERR_CREDIT] == 1 && st->conns_reset == 1,
	       "guest exceeding our buf_alloc -> RST, credit error counted");

	/* The guest went away: every host socket sees EOF, the table is empty. */
	{
		int hfd = host_accept(lfd), cfd = host_connect();

		tap_ok(write(cfd, "CONNECT 9\n", 10) == 10, "a host client connects too");
		pump(t);
		tap_ok(conn_count(t) == 2 && conn_has_output(t), "two connections, REQUEST owed");
		conn_table_reset(t);
		tap_ok(conn_count(t) == 0 && !conn_has_output(t), "reset: table empty");
		tap_ok(host_eof(hfd) && host_eof(cfd), "reset: both host sockets read EOF");
		close(hfd);
		close(cfd);
	}
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 1, 1700, 0, NULL, 0, 0);
	tap_ok(guest_recv(t, 4096) && is_pkt(VIRTIO_VSOCK_OP_RESPONSE, 1, 1700, STREAM, 0, 0),
	       "the table serves the next guest after the reset");
	{
		int hfd = host_accept(lfd);

		conn_table_destroy(t);
		tap_ok(host_eof(hfd), "destroy closes the host sockets too");
		close(hfd);
	}
	close(lfd);
	close(slfd);
}

/* Mempool exhausted mid-packet: -EAGAIN, then the same packet again, no byte twice. */
static void test_pool_empty(void)
{
	struct rte_mempool *small = rte_pktmbuf_pool_create("conn_small", 8, 0, 0,
							    RTE_MBUF_DEFAULT_BUF_SIZE,
							    (int)rte_socket_id());
	struct conn_table *t = table(4, BUF_ALLOC, small);
	static uint8_t out[BUF_ALLOC], in[BUF_ALLOC];
	int lfd = host_listen(1800, SOCK_STREAM), hfd;
	uint32_t sent = 0, got = 0;
	unsigned int again = 0, rounds = 0;

	tap_ok(small && t, "table over an 8-mbuf pool");
	if (!small || !t)
		return;
	guest_send(t, VIRTIO_VSOCK_OP_REQUEST, STREAM, 8000, 1800, 0, NULL, 0, 0);
	guest_drain(t);
	hfd = host_accept(lfd);
	fill(out, sizeof(out), 5);
	while (sent < sizeof(out) && rounds++ < 10000) {
		ssize_t n;

		if (guest_send(t, VIRTIO_VSOCK_OP_RW, STREAM, 8000, 1800, 0, out + sent,
			       VSOCK_PKT_MAX_PAYLOAD, 0) == 0) {
			sent += VSOCK_PKT_MAX_PAYLOAD;
			continue;
		}
		/* Like the worker: leave the packet, let the host side move, retry it. */
		again++;
		n = recv(hfd, in + got, sizeof(in) - got, MSG_DONTWAIT);
		if (n > 0)
			got += (uint32_t)n;
		conn_poll_host(t, now(), 64);
	}
	tap_ok(again > 0 && conn_table_stats(t)->pool_empty >= again,
	       "pool exhausted mid-packet: -EAGAIN (%u times), each counted", again);
	tap_ok(sent == sizeof(out), "every packet taken in the end");
	while (got < sizeof(in) && wait_fd(hfd, POLLIN)) {
		ssize_t n = recv(hfd, in + got, sizeof(in) - got, MSG_DONTWAIT);

		if (n > 0)
			got += (uint32_t)n;
		conn_poll_host(t, now(), 64);
	}
	tap_ok(got == sizeof(in) && memcmp(in, out, sizeof(in)) == 0,
	       "host reads all 256 KiB once each, in order (%u)", got);
	guest_drain(t);
	conn_table_destroy(t);
	tap_ok(rte_mempool_avail_count(small) == 8, "all 8 mbufs returned");
	close(hfd);
	close(lfd);
	rte_mempool_free(small);
}

/*
 * hostile_host's case: more silent host clients than the table holds, connecting in batches
 * so that the timer list holds many deadlines. Each connection's line timeout closes it at
 * its own deadline, not one round earlier, and every one of them by the last deadline.
 *
 * A deadline counts from the TSC read when the connection is accepted; batch b is accepted
 * between lo[b] and hi[b], 10 ms after the one before. Expiry is driven with simulated
 * times: the accepting rounds pass the test's start as their clock (nothing expires there,
 * however slow the machine), the checks pass lo[b] + timeout - 1 (batch b and the later
 * ones still open) and hi[b] + timeout (batch b gone).
 */
#define SILENT 1100
#define SILENT_BATCH 100
#define SILENT_BATCHES ((SILENT + SILENT_BATCH - 1) / SILENT_BATCH)

static unsigned int silent_open(const int *fds)
{
	unsigned int i, n = 0;
	char c;

	for (i = 0; i < SILENT; i++)
		n += fds[i] >= 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
	return n;
}

static void test_many_silent(void)
{
	static int fds[SILENT];
	const uint64_t t0 = now();
	const unsigned int max = CONN_MAX_DEFAULT;
	struct conn_table *t = table(max, BUF_ALLOC, pool);
	const struct conn_stats *st = t ? conn_table_stats(t) : NULL;
	uint64_t timeout_tsc = conn_tsc_of_ms(rte_get_tsc_hz(), CONN_TIMEOUT_MS_DEFAULT);
	uint64_t lo[SILENT_BATCHES], hi[SILENT_BATCHES];
	unsigned int b, i, opened = 0, wrong = 0;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!tap_ok(t != NULL, "table of %u connections", CONN_MAX_DEFAULT))
		return;
	for (b = 0; b < SILENT_BATCHES; b++) {
		for (i = b * SILENT_BATCH; i < SILENT && i < (b + 1) * SILENT_BATCH; i++) {
			fds[i] = host_connect();
			opened += fds[i] >= 0;
		}
		usleep(10000);
		lo[b] = now();
		for (i = 0; i < 4; i++)
			conn_poll_host(t, t0, 256);
		hi[b] = now();
	}
	tap_ok(opened == SILENT && conn_count(t) == CONN_MAX_DEFAULT &&
	       st->table_full == SILENT - CONN_MAX_DEFAULT &&
	       silent_open(fds) == CONN_MAX_DEFAULT, "%u silent clients: the table holds %u, "
	       "the %u beyond it counted and closed", SILENT, CONN_MAX_DEFAULT,
	       SILENT - CONN_MAX_DEFAULT);
	/* Just before and at each batch's deadline: only the batches due are gone. */
	for (b = 0; b < SILENT_BATCHES; b++) {
		unsigned int due = RTE_MIN((b + 1) * SILENT_BATCH, max);
		unsigned int before = max - RTE_MIN(b * SILENT_BATCH, max);

		conn_poll_host(t, lo[b] + timeout_tsc - 1, 256);
		wrong += conn_count(t) != before || silent_open(fds) != before;
		conn_poll_host(t, hi[b] + timeout_tsc, 256);
		wrong += conn_count(t) != CONN_MAX_DEFAULT - due ||
			 silent_open(fds) != CONN_MAX_DEFAULT - due;
	}
	tap_ok(wrong == 0 && conn_count(t) == 0 && silent_open(fds) == 0 &&
	       st->proto_err[CONN_ERR_CONNECT_LINE] == CONN_MAX_DEFAULT,
	       "each silent connection closed at its own line timeout, none earlier, all by "
	       "the last (%u wrong of %u checks)", wrong, 2 * SILENT_BATCHES);
	for (i = 0; i < SILENT; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	conn_table_destroy(t);
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
			"--log-level=lib.eal:error" };
	struct conn_table *t;

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	snprintf(dir, sizeof(dir), "/tmp/test_conn_XXXXXX");
	if (!mkdtemp(dir)) {
		tap_ok(0, "mkdtemp");
		return tap_done();
	}
	snprintf(uds, sizeof(uds), "%s/vm.vsock", dir);
	listen_fd = ep_uds_listen(uds);
	pool = rte_pktmbuf_pool_create("conn_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	t = table(64, BUF_ALLOC, pool);
	tap_ok(listen_fd >= 0 && pool && t, "listener, mempool and table created");
	if (t) {
		test_guest_connect(t);
		test_guest_close(t);
		test_refused(t);
		test_bad_packets(t);
		test_host_connect(t);
		test_host_long_payload(t);
		test_bad_lines(t);
		test_credit(t);
		test_backpressure(t);
		test_seqpacket(t);
		test_split(t);
		tap_ok(rte_mempool_avail_count(pool) == 4095,
		       "every mbuf back in the pool once connections are gone");
		conn_table_destroy(t);
	}
	test_small_table();
	test_pool_empty();
	test_many_silent();
	close(listen_fd);
	{
		char cmd[96];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", dir);
	}
	rte_eal_cleanup();
	return tap_done();
}
