/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host API (include/vsock_pmd_native.h) in one process: this test starts the
 * accelerator itself (one worker lcore), attaches the userspace frontend with its guest
 * driver to VM 3, and plays the host program on the main lcore with mbufs. Checked: accept
 * and connect (the guest's connect completes only on accept), bytes both ways end to end,
 * half-close in each direction, refusal and reset, credit stall and recovery seen as short
 * sends, SEQPACKET boundaries, many connections at once, a listener closed while guests
 * connect to it, the guest going away, and every kind of misuse answered with its error code.
 * The VM's connect timeout is an hour: a guest's connect is answered by what the program
 * does, never by a timer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

#include "native_io.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define CID 3
#define WAIT_MS 3000
#define CHUNK 1000	/* payload bytes per mbuf the test sends */

static char dir[64];
static struct vfe_vsock v;
static struct vfe_guest g;
static bool attached;
static struct rte_mempool *mp;
static uint8_t pat[1 << 20];

/* One round of the guest driver; a short pause when it had nothing to do. */
static void tick(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };

	if (!attached || vfe_guest_poll(&g) == 0)
		nanosleep(&pause, NULL);
}

#define WAIT(cond, ms) POLL_WAIT(cond, ms, tick())

static int attach_with(const struct vfe_guest_conf *gc)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	char sock[96];
	int rc;

	snprintf(sock, sizeof(sock), "%s/vm3.sock", dir);
	rc = vfe_vsock_attach(&v, sock, &vc);
	if (rc == 0)
		rc = vfe_guest_init(&g, &v, gc);
	attached = rc == 0;
	/* Under load the engine's takeover came after a test's first connect. */
	if (rc == 0 && !WAIT(native_io_vm_running(0), WAIT_MS))
		rc = -ETIMEDOUT;
	return rc;
}

static int attach(uint32_t buf_alloc)
{
	const struct vfe_guest_conf gc = { .buf_alloc = buf_alloc };

	return attach_with(&gc);
}

static void detach(void)
{
	if (!attached)
		return;
	vfe_vsock_detach(&v, NULL, false);
	vfe_guest_fini(&g);
	vfe_vsock_close(&v);
	attached = false;
}

/* Send @p len bytes of pat from @p off as CHUNK-byte mbufs; returns bytes taken now. */
static long native_send(int h, size_t off, size_t len)
{
	return native_io_send(h, mp, pat + off, len, CHUNK);
}

/*
 * Idle: neither the guest nor the program does anything for COLD_MS, far longer than the
 * worker waits before it stops polling an idle VM's rings (worker.c). In poll mode a
 * polling device never asks for kicks; one that did has stopped polling the ring.
 */
#define COLD_MS 300

static bool go_cold(void)
{
	const struct timespec t = { .tv_nsec = COLD_MS * 1000000L };
	const struct timespec pause = { .tv_nsec = 1000000 };

	nanosleep(&t, NULL);
	return POLL_WAIT(vfe_vq_kicks_asked(&v.vq[VFE_VSOCK_TX]), WAIT_MS,
			 nanosleep(&pause, NULL));
}

/* @p len bytes of pat from @p off: program -> guest on (h, gc), checked at the guest. */
static bool to_guest_ok(int h, struct vfe_guest_conn *gc, size_t off, size_t len)
{
	static uint8_t got[65536];
	size_t sent = 0, rcvd = 0;
	long rc;

	WAIT(((sent < len && (rc = native_send(h, off + sent, len - sent)) > 0 ?
	       sent += (size_t)rc : 0),
	      rcvd += vfe_guest_recv(&g, gc, got + rcvd, sizeof(got) - rcvd), rcvd >= len),
	     WAIT_MS);
	return rcvd == len && memcmp(got, pat + off, len) == 0;
}

/* @p len bytes of pat from @p off: guest -> program on (gc, h), checked at the program. */
static bool to_program_ok(int h, struct vfe_guest_conn *gc, size_t off, size_t len)
{
	static uint8_t got[65536];
	size_t sent = 0, rcvd = 0;

	WAIT((sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + off + sent, len - sent), 0L),
	      native_io_recv(h, got, &rcvd, sizeof(got), NULL), rcvd >= len), WAIT_MS);
	return rcvd == len && memcmp(got, pat + off, len) == 0;
}

/* The guest shuts down, the program reads the end of the stream and closes. */
static bool cold_close(int h, struct vfe_guest_conn *gc)
{
	bool ok;

	vfe_guest_shutdown(&g, gc, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	ok = WAIT(vsock_native_recv_burst(h, (struct rte_mbuf *[1]){ NULL }, 1) == -ESHUTDOWN,
		  WAIT_MS);
	ok &= vsock_native_close(h) == 0 && WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_release(&g, gc);
	return ok;
}

/*
 * A VM idle long enough that its worker stopped polling its rings: the program's connect
 * (a pipe on the VM's incoming ring, no kick, no socket) and the guest's (a kick) both go
 * through, and bytes flow both ways intact on each.
 */
static void test_cold(void)
{
	struct vfe_guest_conn *gc = NULL;
	int l, h = -EAGAIN;

	vfe_guest_listen(&g, 6010, true);
	tap_ok(go_cold(), "cold: after %d ms idle the VM asks the guest for tx kicks", COLD_MS);
	h = vsock_native_connect(CID, 6010, VSOCK_NATIVE_STREAM);
	tap_ok(h >= 0 && WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS) &&
	       WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS),
	       "cold: a program connects to the guest (%d)", h);
	if (gc) {
		tap_ok(to_guest_ok(h, gc, 7, 50000) && to_program_ok(h, gc, 11, 50000),
		       "cold: 50000 bytes each way on it, intact");
		tap_ok(cold_close(h, gc), "cold: it closes");
	}
	vfe_guest_listen(&g, 6010, false);

	l = vsock_native_listen(CID, 5010);
	tap_ok(l >= 0 && go_cold(), "cold: idle again with a program listening");
	gc = vfe_guest_connect(&g, 5010, VIRTIO_VSOCK_TYPE_STREAM);
	h = -EAGAIN;
	tap_ok(gc && WAIT((h = vsock_native_accept(l)) != -EAGAIN, WAIT_MS) && h >= 0 &&
	       WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "cold: the guest connects to the program (%d)", h);
	if (gc && h >= 0) {
		tap_ok(to_program_ok(h, gc, 13, 50000) && to_guest_ok(h, gc, 17, 50000),
		       "cold: 50000 bytes each way on it, intact");
		tap_ok(cold_close(h, gc), "cold: it closes");
	}
	vsock_native_listen_close(l);
}

static void test_misuse_unstarted(void)
{
	struct rte_mbuf *m = NULL;

	tap_ok(vsock_native_listen(CID, 1) == -ENODEV && vsock_native_connect(CID, 1, 1) ==
	       -ENODEV && vsock_native_send_burst(0, &m, 1) == -ENODEV &&
	       vsock_native_close(0) == -ENODEV, "before vsock_pmd_start(): -ENODEV");
}

/* Guest connects to a native listener; bytes both ways; half-closes; close. */
static void test_accept(void)
{
	static uint8_t got[32 * 9196];
	struct vsock_native_info info;
	struct vfe_guest_conn *gc;
	size_t sent = 0, rcvd = 0;
	int l, h, rc = 0;

	l = vsock_native_listen(CID, 5000);
	tap_ok(l >= 0, "listen on VM 3 port 5000 (%d)", l);
	tap_ok(vsock_native_listen(CID, 5000) == -EADDRINUSE, "a second listener: -EADDRINUSE");
	tap_ok(vsock_native_listen(99, 5000) == -ENOENT, "listen on a VM that does not exist: "
	       "-ENOENT");
	tap_ok(vsock_native_accept(l) == -EAGAIN, "accept with nobody waiting: -EAGAIN");
	gc = vfe_guest_connect(&g, 5000, VIRTIO_VSOCK_TYPE_STREAM);
	h = -EAGAIN;
	WAIT((h = vsock_native_accept(l)) != -EAGAIN, WAIT_MS);
	tap_ok(gc && gc->state == VFE_GC_CONNECTING && h >= 0,
	       "the guest's connect waits for accept; accept returns its handle (%d)", h);
	tap_ok(WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS), "the guest is connected once "
	       "accepted");
	rc = vsock_native_info(h, &info);
	tap_ok(rc == 0 && info.guest_cid == CID &&
	       info.guest_port == gc->local_port && info.host_port == 5000 &&
	       info.type == VSOCK_NATIVE_STREAM, "info: cid 3, guest port %u, host port %u",
	       info.guest_port, info.host_port);
	tap_ok(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, "state ESTABLISHED");

	/* 256 KiB guest -> host, checked byte for byte. */
	WAIT((sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + sent,
						      RTE_MIN((size_t)65536, 262144 - sent)), 0L),
	      native_io_recv(h, got, &rcvd, sizeof(got), NULL), rcvd >= 262144), 20000);
	tap_ok(rcvd == 262144 && memcmp(got, pat, rcvd) == 0,
	       "256 KiB guest -> host through recv_burst, intact (%zu)", rcvd);

	/* 256 KiB host -> guest. */
	sent = rcvd = 0;
	WAIT(((sent < 262144 && (rc = (int)native_send(h, sent, 262144 - sent)) > 0 ?
	       sent += (size_t)rc : 0),
	      rcvd += vfe_guest_recv(&g, gc, got + rcvd, sizeof(got) - rcvd), rcvd >= 262144),
	     20000);
	tap_ok(rcvd == 262144 && memcmp(got, pat, rcvd) == 0,
	       "256 KiB host -> guest through send_burst, intact (%zu)", rcvd);

	/* The host shuts down writing: the guest reads EOF, and can still send. */
	tap_ok(vsock_native_shutdown(h, VSOCK_NATIVE_SHUT_WR) == 0, "host shutdown(SHUT_WR)");
	tap_ok(WAIT(gc->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND, WAIT_MS),
	       "the guest gets SHUTDOWN(SEND)");
	tap_ok(native_send(h, 0, 10) == -EPIPE, "send after SHUT_WR: -EPIPE");
	rcvd = 0;
	vfe_guest_send(&g, gc, pat, 1000);
	tap_ok(WAIT((native_io_recv(h, got, &rcvd, sizeof(got), NULL), rcvd >= 1000), WAIT_MS) &&
	       memcmp(got, pat, 1000) == 0, "the guest still sends: 1000 bytes arrive");
	/* The guest shuts down too: the host drains, then reads the end of the stream. */
	vfe_guest_shutdown(&g, gc, VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(WAIT(vsock_native_recv_burst(h, (struct rte_mbuf *[1]){ NULL }, 1) == -ESHUTDOWN,
		    WAIT_MS), "guest SHUTDOWN(SEND): recv_burst returns -ESHUTDOWN");
	tap_ok(vsock_native_state(h) == VSOCK_NATIVE_PEER_SHUT, "state PEER_SHUT");
	tap_ok(vsock_native_close(h) == 0, "close");
	tap_ok(WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS), "the guest's connection ends");
	vfe_guest_release(&g, gc);
	tap_ok(vsock_native_close(h) == -EBADF && vsock_native_state(h) == -EBADF &&
	       native_send(h, 0, 1) == -EBADF, "the closed handle: -EBADF everywhere");
	tap_ok(vsock_native_listen_close(l) == 0 && vsock_native_listen_close(l) == -EBADF &&
	       vsock_native_accept(l) == -EBADF, "listener closed; its handle: -EBADF");
	gc = vfe_guest_connect(&g, 5000, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(gc && WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS) && gc->reset,
	       "a guest connect to the closed port is refused");
	if (gc)
		vfe_guest_release(&g, gc);
}

/* Host connects to a guest port; refusal; reset by the guest. */
static void test_connect(void)
{
	static uint8_t got[70000];
	struct vfe_guest_conn *gc = NULL;
	size_t rcvd = 0;
	int h, st;

	vfe_guest_listen(&g, 6000, true);
	h = vsock_native_connect(CID, 6000, VSOCK_NATIVE_STREAM);
	tap_ok(h >= 0 && vsock_native_state(h) == VSOCK_NATIVE_CONNECTING,
	       "connect to guest port 6000: CONNECTING (%d)", h);
	tap_ok(native_send(h, 0, 10) == -ENOTCONN &&
	       vsock_native_recv_burst(h, (struct rte_mbuf *[1]){ NULL }, 1) == -ENOTCONN,
	       "send and recv while connecting: -ENOTCONN");
	tap_ok(WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS) &&
	       WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS),
	       "the guest accepts: ESTABLISHED");
	tap_ok(native_send(h, 0, 50000) == 32 * CHUNK, "send_burst takes a burst of 32 mbufs");
	WAIT((rcvd += vfe_guest_recv(&g, gc, got + rcvd, sizeof(got) - rcvd), rcvd >= 32000),
	     WAIT_MS);
	tap_ok(rcvd == 32000 && memcmp(got, pat, 32000) == 0, "the guest reads them, intact");
	/* The guest resets the connection. */
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	tap_ok(WAIT(vsock_native_state(h) == VSOCK_NATIVE_RESET, WAIT_MS),
	       "guest RST: state RESET");
	tap_ok(native_send(h, 0, 10) == -ECONNRESET &&
	       vsock_native_recv_burst(h, (struct rte_mbuf *[1]){ NULL }, 1) == -ECONNRESET,
	       "send and recv after the reset: -ECONNRESET");
	tap_ok(vsock_native_close(h) == 0, "close of a reset connection");
	vfe_guest_release(&g, gc);

	/* Nobody listens on 6001: the guest refuses. */
	h = vsock_native_connect(CID, 6001, VSOCK_NATIVE_STREAM);
	st = 0;
	tap_ok(h >= 0 && WAIT((st = vsock_native_state(h)) == VSOCK_NATIVE_RESET, WAIT_MS),
	       "connect to a port nobody listens on: RESET (%d)", st);
	vsock_native_close(h);
	tap_ok(vsock_native_connect(CID, 1, 7) == -EINVAL &&
	       vsock_native_connect(99, 1, VSOCK_NATIVE_STREAM) == -ENOENT,
	       "connect with a bad type: -EINVAL; to no such VM: -ENOENT");
}

/* The guest gives no credit: sends come back short, then flow again once it reads. */
static void test_credit(void)
{
	static uint8_t got[1 << 20];
	struct vfe_guest_conn *gc = NULL;
	size_t sent = 0, rcvd = 0, total = sizeof(got);
	bool short_send = false;
	long n;
	int h;

	h = vsock_native_connect(CID, 6000, VSOCK_NATIVE_STREAM);
	WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS);
	WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS);
	tap_ok(h >= 0 && gc, "connected for the credit test");
	if (!gc)
		return;
	/* The guest reads nothing: its 256 KiB window fills, then the ring, then sends stop. */
	WAIT(((n = native_send(h, sent, total - sent)) > 0 ? sent += (size_t)n : 0,
	      short_send = n == 0), 10000);
	tap_ok(short_send && sent < total,
	       "no credit: send_burst takes nothing after %zu bytes (backpressure)", sent);
	tap_ok(vfe_guest_credit(gc) > 0 || vfe_guest_rx_avail(gc) > 0,
	       "meanwhile the guest holds %u unread bytes", vfe_guest_rx_avail(gc));
	/* The guest reads: credit updates let everything through, intact. */
	WAIT(((sent < total && (n = native_send(h, sent, total - sent)) > 0) ?
	      sent += (size_t)n : 0,
	      rcvd += vfe_guest_recv(&g, gc, got + rcvd, total - rcvd), rcvd >= total), 30000);
	tap_ok(rcvd == total && memcmp(got, pat, total) == 0,
	       "the guest reads: all 1 MiB arrives, intact (%zu)", rcvd);

	/* The other way: the host reads nothing, so the guest runs out of credit. */
	sent = rcvd = 0;
	WAIT((n = vfe_guest_send(&g, gc, pat + sent, RTE_MIN((size_t)65536, total - sent)),
	      sent += (size_t)RTE_MAX(n, 0L), vfe_guest_credit(gc) == 0 && sent < total), 10000);
	tap_ok(vfe_guest_credit(gc) == 0 && sent < total,
	       "the host reads nothing: the guest's credit runs out after %zu bytes", sent);
	WAIT(((n = vfe_guest_send(&g, gc, pat + sent, RTE_MIN((size_t)65536, total - sent))) >
	      0 ? sent += (size_t)n : 0, native_io_recv(h, got, &rcvd, total, NULL),
	      rcvd >= total), 30000);
	tap_ok(rcvd == total && memcmp(got, pat, total) == 0,
	       "the host reads: credit comes back, all 1 MiB arrives, intact (%zu)", rcvd);
	vsock_native_close(h);
	WAIT(gc->state == VFE_GC_CLOSED || (gc->peer_shut == 3 && (vfe_guest_send_ctl(&g, gc,
		VIRTIO_VSOCK_OP_RST, 0), true)), WAIT_MS);
	vfe_guest_release(&g, gc);
}

static void test_seqpacket(void)
{
	static uint8_t got[20000];
	struct vfe_guest_conn *gc;
	struct rte_mbuf *m[4];
	size_t rcvd = 0;
	unsigned int msgs = 0, i;
	uint32_t flags;
	long len;
	int l, h = -1;

	l = vsock_native_listen(CID, 5001);
	gc = vfe_guest_connect(&g, 5001, VIRTIO_VSOCK_TYPE_SEQPACKET);
	WAIT((h = vsock_native_accept(l)) >= 0, WAIT_MS);
	tap_ok(gc && h >= 0 && WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "seqpacket connection accepted");
	if (!gc || h < 0)
		return;
	/* Three messages guest -> host: one mbuf chain each. */
	vfe_guest_send_msg(&g, gc, pat, 100);
	vfe_guest_send_msg(&g, gc, pat + 100, 9000);
	vfe_guest_send_msg(&g, gc, pat + 9100, 1);
	WAIT((native_io_recv(h, got, &rcvd, sizeof(got), &msgs), msgs >= 3), WAIT_MS);
	tap_ok(msgs == 3 && rcvd == 9101 && memcmp(got, pat, rcvd) == 0,
	       "3 messages guest -> host, as 3 mbuf chains, intact (%u, %zu bytes)", msgs, rcvd);
	/* Two messages host -> guest, the second a 3-segment chain. */
	for (i = 0; i < 4; i++) {
		m[i] = rte_pktmbuf_alloc(mp);
		memcpy(rte_pktmbuf_append(m[i], 500), pat + 500 * i, 500);
	}
	rte_pktmbuf_chain(m[1], m[2]);
	rte_pktmbuf_chain(m[1], m[3]);
	tap_ok(vsock_native_send_burst(h, m, 2) == 2, "send 2 messages (500 and 1500 bytes)");
	rcvd = 0;
	tap_ok(WAIT((len = vfe_guest_next_msg(gc, &flags)) >= 0, WAIT_MS) && len == 500 &&
	       vfe_guest_recv(&g, gc, got, sizeof(got)) == 500, "the guest reads a 500-byte "
	       "message");
	tap_ok(WAIT((len = vfe_guest_next_msg(gc, &flags)) >= 0, WAIT_MS) && len == 1500 &&
	       vfe_guest_recv(&g, gc, got + 500, sizeof(got)) == 1500 &&
	       memcmp(got, pat, 2000) == 0, "then a 1500-byte one, intact");
	vsock_native_close(h);
	vsock_native_listen_close(l);
	WAIT(gc->peer_shut == 3, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	vfe_guest_release(&g, gc);
}

/*
 * SEQPACKET message ends that come alone, as the spec allows (Linux sends an empty message
 * so): a message whose bytes went into the pipe before its end came in an empty packet stays
 * one message, and an empty message reaches the far side as one, both ways.
 */
static void test_seqpacket_ends_alone(void)
{
	struct rte_mbuf *m[3];
	struct vfe_guest_conn *gc;
	uint8_t got[600];
	unsigned int free0, i, n = 0;
	uint32_t lens[3] = { 0 }, flags[3] = { 0 };
	int l, h = -EAGAIN, rc;
	long len;
	bool intact = true;

	l = vsock_native_listen(CID, 5005);
	gc = vfe_guest_connect(&g, 5005, VIRTIO_VSOCK_TYPE_SEQPACKET);
	WAIT((h = vsock_native_accept(l)) != -EAGAIN, WAIT_MS);
	tap_ok(gc && h >= 0 && WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "seqpacket connection for ends that come alone");
	if (!gc || h < 0)
		return;
	/* Guest -> host: 300 bytes without an end, taken; then their end alone; then 200. */
	free0 = vfe_guest_tx_free(&g);
	tap_ok(vfe_guest_send_raw(&g, gc, pat, 300, 0) == 0 &&
	       WAIT(vfe_guest_tx_free(&g) == free0, WAIT_MS) &&
	       vfe_guest_send_raw(&g, gc, NULL, 0, VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR)
	       == 0 && vfe_guest_send_msg(&g, gc, pat + 300, 200) == 1 &&
	       vfe_guest_send_raw(&g, gc, NULL, 0, VIRTIO_VSOCK_SEQ_EOM) == 0,
	       "the guest sends 300 bytes, their end alone once taken, 200 bytes, an empty message");
	while (n < 3 && WAIT((rc = vsock_native_recv_burst(h, m, (uint16_t)(3 - n))) != 0,
			     WAIT_MS) && rc > 0) {
		for (i = 0; i < (unsigned int)rc; i++, n++) {
			lens[n] = m[i]->pkt_len;
			if (m[i]->pkt_len <= sizeof(got))
				intact &= memcmp(rte_pktmbuf_read(m[i], 0, m[i]->pkt_len, got),
						 pat + (n ? 300 : 0), m[i]->pkt_len) == 0;
			rte_pktmbuf_free(m[i]);
		}
	}
	tap_ok(n == 3 && lens[0] == 300 && lens[1] == 200 && lens[2] == 0 && intact,
	       "the program receives 3 messages, of 300, 200 and 0 bytes (%u: %u, %u, %u), intact",
	       n, lens[0], lens[1], lens[2]);
	/* Host -> guest: 100 bytes, an empty message, 50 bytes. */
	for (i = 0; i < 3; i++) {
		m[i] = rte_pktmbuf_alloc(mp);
		if (m[i] && i != 1)
			memcpy(rte_pktmbuf_append(m[i], i ? 50 : 100), pat + 100 * i, i ? 50 : 100);
	}
	tap_ok(m[0] && m[1] && m[2] && vsock_native_send_burst(h, m, 3) == 3,
	       "the program sends 100 bytes, an empty message, 50 bytes");
	for (i = 0, intact = true; i < 3; i++) {
		if (!WAIT((len = vfe_guest_next_msg(gc, &flags[i])) >= 0, WAIT_MS))
			break;
		lens[i] = (uint32_t)len;
		intact &= vfe_guest_recv(&g, gc, got, sizeof(got)) == (size_t)len &&
			  memcmp(got, pat + 100 * i, (size_t)len) == 0;
	}
	tap_ok(i == 3 && lens[0] == 100 && lens[1] == 0 && lens[2] == 50 && intact &&
	       flags[1] == (VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR),
	       "the guest reads 3 messages, of 100, 0 and 50 bytes (%u: %u, %u, %u), the empty one "
	       "with EOM and EOR (%#x)", i, lens[0], lens[1], lens[2], flags[1]);
	vsock_native_close(h);
	vsock_native_listen_close(l);
	WAIT(gc->peer_shut == 3, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	vfe_guest_release(&g, gc);
}

/* Payload mbufs of the engine's pools that hold data now (per-lcore caches count as free). */
static uint64_t mbufs_in_use(void)
{
	struct vsock_pmd_resources res;

	return vsock_pmd_resources_get(&res) == 0 ? res.mbufs_in_use : UINT64_MAX;
}

/*
 * Small guest packets to a native stream: copied straight into mbufs the program takes,
 * each packed full whatever the packets' sizes, with the pipe's ring full at times (the
 * rest queued). Every mbuf comes back and the quota is whole again once the program read.
 */
static void test_small_packets(void)
{
	static uint8_t got[1 << 18];
	const size_t total = sizeof(got), room = RTE_MBUF_DEFAULT_DATAROOM;
	struct vfe_guest_conn *gc;
	size_t sent = 0, rcvd = 0, nb = 0, bad = 0;
	uint64_t base = mbufs_in_use();
	int l, h = -EAGAIN;

	l = vsock_native_listen(CID, 5100);
	gc = vfe_guest_connect(&g, 5100, VIRTIO_VSOCK_TYPE_STREAM);
	WAIT((h = vsock_native_accept(l)) != -EAGAIN, WAIT_MS);
	tap_ok(l >= 0 && gc && h >= 0 && WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "connected for small packets");
	/* The program reads nothing yet: the pipe fills, then the guest's credit runs out. */
	WAIT((sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + sent, RTE_MIN((size_t)64,
						     total - sent)), 0L),
	      sent == total || vfe_guest_credit(gc) == 0), 20000);
	tap_ok(sent > 0 && WAIT(mbufs_in_use() > base, WAIT_MS),
	       "%zu bytes in 64-byte packets wait in mbufs for the program", sent);
	while (rcvd < total) {
		struct rte_mbuf *m[32];
		int i, n;

		if (!WAIT((sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + sent,
							       RTE_MIN((size_t)64, total - sent)),
							0L),
			   (n = vsock_native_recv_burst(h, m, RTE_DIM(m))) != 0), WAIT_MS))
			break;
		for (i = 0; i < n; i++) {
			if (m[i]->nb_segs != 1 || m[i]->data_len == 0 || m[i]->data_len > room ||
			    rcvd + m[i]->data_len > total)
				bad++;
			else
				memcpy(got + rcvd, rte_pktmbuf_mtod(m[i], void *), m[i]->data_len);
			rcvd += m[i]->data_len;
			nb++;
		}
		if (n > 0)
			rte_pktmbuf_free_bulk(m, (unsigned int)n);
		else
			break;
	}
	tap_ok(rcvd == total && bad == 0 && memcmp(got, pat, total) == 0,
	       "%zu bytes of %zu 64-byte packets in %zu single-segment mbufs, intact", rcvd,
	       total / 64, nb);
	tap_ok(WAIT(mbufs_in_use() == base, WAIT_MS), "every payload mbuf back once read "
	       "(%" PRIu64 " in use, %" PRIu64 " before)", mbufs_in_use(), base);
	vsock_native_close(h);
	vsock_native_listen_close(l);
	tap_ok(WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS), "closed");
}

/* 100 guest connects queued at once, accepted, each with its own bytes. */
static void test_many(void)
{
	enum { N = 100 };
	struct vfe_guest_conn *gc[N];
	int h[N], l = vsock_native_listen(CID, 5002);
	unsigned int i, j, accepted = 0, good = 0;

	for (i = 0; i < N; i++)
		gc[i] = vfe_guest_connect(&g, 5002, VIRTIO_VSOCK_TYPE_STREAM);
	WAIT(({ int a = vsock_native_accept(l);

		if (a >= 0)
			h[accepted++] = a;
		accepted == N; }), WAIT_MS);
	tap_ok(accepted == N, "%u of %d guest connects queued and accepted", accepted, N);
	/* Handles come in arrival order: pair them with the guest's side by port. */
	for (i = 0; i < accepted; i++) {
		struct vsock_native_info info = { 0 };

		vsock_native_info(h[i], &info);
		for (j = 0; j < N; j++) {
			if (gc[j] && gc[j]->local_port == info.guest_port) {
				WAIT(gc[j]->state == VFE_GC_ESTABLISHED, WAIT_MS);
				vfe_guest_send(&g, gc[j], pat + j, 100 + j);
				break;
			}
		}
		if (j == N)
			h[i] = -1;
	}
	for (i = 0; i < accepted; i++) {
		struct vsock_native_info info = { 0 };
		uint8_t got[256];
		size_t rcvd = 0;

		vsock_native_info(h[i], &info);
		for (j = 0; j < N && (!gc[j] || gc[j]->local_port != info.guest_port); j++)
			;
		WAIT((native_io_recv(h[i], got, &rcvd, sizeof(got), NULL), rcvd >= 100 + j),
		     WAIT_MS);
		good += j < N && rcvd == 100 + j && memcmp(got, pat + j, rcvd) == 0;
	}
	tap_ok(good == N, "%u of %d connections each deliver their own bytes", good, N);
	for (i = 0; i < accepted; i++)
		vsock_native_close(h[i]);
	vsock_native_listen_close(l);
	WAIT(({ unsigned int k, closed = 0;

		for (k = 0; k < N; k++) {
			if (gc[k] && gc[k]->peer_shut == 3 && gc[k]->state != VFE_GC_CLOSED)
				vfe_guest_send_ctl(&g, gc[k], VIRTIO_VSOCK_OP_RST, 0);
			closed += !gc[k] || gc[k]->state == VFE_GC_CLOSED;
		}
		closed == N; }), WAIT_MS);
	for (i = 0; i < N; i++) {
		if (gc[i])
			vfe_guest_release(&g, gc[i]);
	}
}

/*
 * A listener opened and closed again and again while the guest connects to it: a worker may
 * find the listener and be about to queue a guest's REQUEST on its accept ring just as the
 * program closes it. None may be left on the closed listener's ring: every connect is
 * answered (RST, or RESPONSE when accepted), and in the end the VM holds no pipe.
 */
static void test_listener_close_race(void)
{
	struct vfe_guest_conn *gc[64];
	unsigned int i, rounds = 0, answered = 0, accepted = 0;
	struct vsock_pmd_vm_info vi = { 0 };
	uint64_t end = now_ms() + 1000;
	bool ok;

	while (now_ms() < end) {
		int l = vsock_native_listen(CID, 5100), h;

		for (i = 0; i < RTE_DIM(gc); i++)
			gc[i] = vfe_guest_connect(&g, 5100, VIRTIO_VSOCK_TYPE_STREAM);
		/* The worker takes the REQUESTs while the listener closes, at various points. */
		for (i = 0; i < rounds % 64; i++)
			vfe_guest_poll(&g);
		if ((h = vsock_native_accept(l)) >= 0) {
			vsock_native_close(h);
			accepted++;
		}
		vsock_native_listen_close(l);
		for (i = 0; i < RTE_DIM(gc); i++) {
			if (!gc[i] || !WAIT(gc[i]->state != VFE_GC_CONNECTING, WAIT_MS))
				continue;
			answered++;
			if (gc[i]->state == VFE_GC_ESTABLISHED) {
				vfe_guest_shutdown(&g, gc[i], 3);
				WAIT(gc[i]->state == VFE_GC_CLOSED, WAIT_MS);
			}
			vfe_guest_release(&g, gc[i]);
		}
		rounds++;
	}
	tap_ok(answered == rounds * RTE_DIM(gc),
	       "%u rounds of %zu connects to a listener closed meanwhile: each answered (%u of "
	       "%u; %u accepted)", rounds, RTE_DIM(gc), answered,
	       (unsigned int)(rounds * RTE_DIM(gc)), accepted);
	ok = WAIT(vsock_pmd_vm_info_get(0, &vi) == 0 && vi.pipes == 0 && vi.conns == 0, WAIT_MS);
	tap_ok(ok, "no pipe left behind: the VM holds none (%u), its table is empty (%u)",
	       vi.pipes, vi.conns);
}

/* A wait in which the guest does nothing: it takes no used buffer and posts none. */
#define WAIT_IDLE(cond, ms) POLL_WAIT(cond, ms, usleep(200))

/* What the engine reports of VM 3's connection from guest port @p port (zeros: none). */
static struct vsock_pmd_conn_info conn_info(uint32_t port)
{
	static struct vsock_pmd_conn_info ci[64];
	int i, n = vsock_pmd_conns_get(CID, ci, RTE_DIM(ci));

	for (i = 0; i < n; i++)
		if (ci[i].guest_port == port)
			return ci[i];
	return (struct vsock_pmd_conn_info){ 0 };
}

/* A chain of segments @p lens[0..n) from mp, filled from pat at @p off; NULL: no mbuf. */
static struct rte_mbuf *chain_of(size_t off, const uint16_t *lens, unsigned int n)
{
	struct rte_mbuf *head = NULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);

		if (!m || (head && rte_pktmbuf_chain(head, m) < 0)) {
			rte_pktmbuf_free(m);
			rte_pktmbuf_free(head);
			return NULL;
		}
		if (!head)
			head = m;
		memcpy(rte_pktmbuf_append(m, lens[i]), pat + off, lens[i]);
		off += lens[i];
	}
	return head;
}

/*
 * Chain number @p k of the host -> guest stream, from pat at @p off: odd sizes, chains of
 * two and three segments, an empty segment inside a chain and at its end, so that the
 * guest's buffers and its window end inside segments and chains. NULL: out of mbufs.
 */
static struct rte_mbuf *direct_chain(unsigned int k, size_t off, size_t *len)
{
	static const struct {
		uint16_t n, lens[3];
	} shapes[] = {
		{ 1, { 1 } }, { 1, { 1777 } }, { 3, { 300, 0, 900 } }, { 1, { 64 } },
		{ 2, { 2000, 1500 } }, { 1, { 2047 } }, { 3, { 7, 600, 0 } },
	};
	unsigned int s = k % RTE_DIM(shapes), i;

	for (i = 0, *len = 0; i < shapes[s].n; i++)
		*len += shapes[s].lens[i];
	return chain_of(off, shapes[s].lens, shapes[s].n);
}

/* Offer the stream's next chain, if the pipe has room: bytes taken (0: none, or the end). */
static size_t direct_send(int h, unsigned int *k, size_t *sent, size_t total)
{
	struct rte_mbuf *m;
	size_t len;

	if (*sent >= total || !(m = direct_chain(*k, *sent, &len)))
		return 0;
	if (*sent + len > total || vsock_native_send_burst(h, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return 0;
	}
	(*k)++;
	*sent += len;
	return len;
}

/*
 * Host -> guest straight from the program's mbufs into the guest's rx buffers (3000 bytes
 * in 3 pieces each, 4 of them posted, a 20000-byte window): chains of odd sizes, empty
 * segments, buffers and the window ending inside segments, reads crossing bursts of the
 * pipe. Bytes wait in the program's pipe, never in the VM's queue, while the guest has
 * credit but no buffer; the guest sees its window kept and every byte in order; every mbuf
 * comes back, also those left in the pipe, one read in part, when the connection ends.
 * SEQPACKET: each message in packets of its own, its end and EOR as the program sent them.
 */
static void test_h2g_direct(void)
{
	const struct vfe_guest_conf conf = {
		.buf_alloc = 20000, .rx_bufs = 4, .rx_pieces = 3, .rx_buf_len = 3000,
	};
	const uint32_t room = conf.rx_buf_len - VFE_GUEST_HDR_LEN;
	/* 32 rounds of direct_chain()'s 7 shapes, 9196 bytes each. */
	const size_t total = 32 * 9196;
	static const uint32_t msgs[] = { 1, 2956, 5000, 1200, 3000, 100, 2957, 2600, 4100 };
	static uint8_t got[32 * 9196];
	unsigned int avail0 = rte_mempool_avail_count(mp), k = 0, i, good = 0, eor = 0;
	struct vsock_pmd_vm_info vi = { 0 };
	struct vsock_pmd_conn_info ci = { 0 };
	struct vfe_guest_conn *gc = NULL;
	bool ok;
	size_t sent = 0, rcvd = 0;
	int l, h;

	detach();
	if (!tap_ok(attach_with(&conf) == 0, "guest attached again: 4 rx buffers of 3 pieces, "
		    "a 20000-byte window"))
		return;
	vfe_guest_listen(&g, 6003, true);
	h = vsock_native_connect(CID, 6003, VSOCK_NATIVE_STREAM);
	tap_ok(h >= 0 && WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS) &&
	       WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS),
	       "stream connected for the direct host -> guest path");
	if (!gc)
		return;
	/* The guest sleeps: its 4 buffers fill, the rest waits in the pipe. */
	while (direct_send(h, &k, &sent, total))
		;
	ok = WAIT_IDLE((ci = conn_info(gc->local_port), ci.to_guest_bytes == 4 * room), WAIT_MS);
	tap_ok(sent > 4 * room && ok, "%zu bytes sent in %u chains; the guest's 4 buffers took %u",
	       sent, k, ci.to_guest_bytes);
	ci = conn_info(gc->local_port);
	tap_ok(ci.host_credit > 0 && ci.queued_to_guest == 0,
	       "with %u bytes of credit left and no buffer, nothing waits in the VM's queue (%u)",
	       ci.host_credit, ci.queued_to_guest);
	/* The guest reads: the rest follows, the window kept, every byte in order. */
	WAIT((sent < total ? (void)direct_send(h, &k, &sent, total) : (void)0,
	      rcvd += vfe_guest_recv(&g, gc, got + rcvd, total - rcvd), rcvd >= total), 30000);
	tap_ok(rcvd == total && memcmp(got, pat, total) == 0,
	       "%zu bytes of %u chains arrive intact through 3-piece buffers", rcvd, k);
	tap_ok(g.errors == 0, "the guest's window and the protocol kept (%lu: %s)",
	       (unsigned long)g.errors, g.err);
	tap_ok(WAIT(rte_mempool_avail_count(mp) == avail0, WAIT_MS),
	       "every chain freed once copied (%u free, %u before)", rte_mempool_avail_count(mp),
	       avail0);
	/*
	 * The guest reads no more, having told its whole window: it is sent exactly that, the
	 * rest waits in the pipe, one chain of it read in part.
	 */
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
	sent = 0;
	while (direct_send(h, &k, &sent, 60000))
		;
	ok = WAIT(vfe_guest_rx_avail(gc) == conf.buf_alloc, WAIT_MS);
	tap_ok(sent > conf.buf_alloc && ok &&
	       memcmp(gc->rxq + gc->fwd_cnt % conf.buf_alloc, pat,
		      conf.buf_alloc - gc->fwd_cnt % conf.buf_alloc) == 0 && g.errors == 0,
	       "a guest that reads nothing gets exactly its %u-byte window of %zu, intact (%u)",
	       conf.buf_alloc, sent, vfe_guest_rx_avail(gc));
	vsock_native_close(h);
	WAIT(gc->peer_shut & VIRTIO_VSOCK_SHUTDOWN_RCV, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_release(&g, gc);
	tap_ok(WAIT(rte_mempool_avail_count(mp) == avail0 && vsock_pmd_vm_info_get(0, &vi) == 0 &&
		    vi.pipes == 0, WAIT_MS),
	       "closed with a chain read in part and more in the pipe: every mbuf back (%u of "
	       "%u), no pipe held (%u)", rte_mempool_avail_count(mp), avail0, vi.pipes);

	/* SEQPACKET: messages around the buffer size, one a chain with an empty segment. */
	l = vsock_native_listen(CID, 5004);
	gc = vfe_guest_connect(&g, 5004, VIRTIO_VSOCK_TYPE_SEQPACKET);
	h = -EAGAIN;
	WAIT((h = vsock_native_accept(l)) != -EAGAIN, WAIT_MS);
	tap_ok(gc && h >= 0 && WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "seqpacket connected for the direct path");
	if (!gc || h < 0)
		return;
	for (i = 0, sent = 0; i < 40; i++) {
		uint32_t len = msgs[i % RTE_DIM(msgs)], left = len;
		uint16_t lens[8];
		unsigned int n = 0;
		struct rte_mbuf *m;

		/* Pieces of at most 2000 bytes; an empty segment after the first or at the end. */
		while (left) {
			lens[n] = (uint16_t)RTE_MIN(left, 2000u);
			left -= lens[n++];
			if (n == 1 && i % 3 == 0)
				lens[n++] = 0;
		}
		if (i % 3 == 1)
			lens[n++] = 0;
		m = chain_of(sent, lens, n);
		if (!m || !WAIT(vsock_native_send_burst(h, &m, 1) == 1, WAIT_MS)) {
			rte_pktmbuf_free(m);
			break;
		}
		sent += len;
	}
	tap_ok(i == 40, "40 messages of 1 to 5000 bytes sent, with empty segments inside and at "
	       "the end");
	for (i = 0, rcvd = 0; i < 40; i++) {
		uint32_t len = msgs[i % RTE_DIM(msgs)], flags = 0;
		long n = -1;

		if (!WAIT((n = vfe_guest_next_msg(gc, &flags)) >= 0, WAIT_MS))
			break;
		good += n == len && vfe_guest_recv(&g, gc, got, sizeof(got)) == len &&
			memcmp(got, pat + rcvd, len) == 0;
		eor += (flags & VIRTIO_VSOCK_SEQ_EOR) != 0;
		rcvd += len;
	}
	tap_ok(good == 40 && eor == 40, "the guest reads 40 messages, each whole and alone (%u), "
	       "each with EOR (%u)", good, eor);
	vsock_native_close(h);
	vsock_native_listen_close(l);
	WAIT(gc->peer_shut == 3, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	WAIT(gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_release(&g, gc);
	tap_ok(WAIT(rte_mempool_avail_count(mp) == avail0 && vsock_pmd_vm_info_get(0, &vi) == 0 &&
		    vi.pipes == 0 && vi.conns == 0, WAIT_MS),
	       "every mbuf back (%u of %u), no pipe (%u) nor connection (%u) left",
	       rte_mempool_avail_count(mp), avail0, vi.pipes, vi.conns);
}

static void test_misuse(void)
{
	struct rte_mbuf *m[1] = { NULL };
	int l;

	tap_ok(vsock_native_state(-1) == -EBADF && vsock_native_state(123456789) == -EBADF &&
	       vsock_native_close(0x7fff0000) == -EBADF, "handles never issued: -EBADF");
	tap_ok(vsock_native_send_burst(0x10000, NULL, 1) <= 0 &&
	       vsock_native_recv_burst(-5, m, 1) == -EBADF, "send/recv on bad handles fail");
	tap_ok(vsock_native_listen_close(-1) == -EBADF && vsock_native_accept(999) == -EBADF,
	       "bad listener handles: -EBADF");
	l = vsock_native_listen(CID, 5009);
	tap_ok(vsock_native_shutdown(l, 3) == -EBADF,
	       "a listener handle is not a connection: -EBADF");
	vsock_native_listen_close(l);
}

static void test_guest_gone(void)
{
	struct vfe_guest_conn *gc;
	int h;

	vfe_guest_listen(&g, 6002, true);
	h = vsock_native_connect(CID, 6002, VSOCK_NATIVE_STREAM);
	tap_ok(WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS) &&
	       WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS),
	       "connected before the guest goes away");
	detach();
	tap_ok(WAIT(vsock_native_state(h) == VSOCK_NATIVE_RESET, WAIT_MS),
	       "the guest goes away: state RESET");
	tap_ok(vsock_native_close(h) == 0, "close after the guest went away");
	tap_ok(vsock_native_connect(CID, 6002, VSOCK_NATIVE_STREAM) == -ECONNREFUSED,
	       "connect with no guest attached: -ECONNREFUSED");
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l",
			"0-1", "--log-level=lib.eal:error", "--log-level=lib.vhost.*:error",
			"--log-level=vsock:warning" };
	struct vsock_pmd_conf conf;
	unsigned int i;

	(void)argc;
	test_misuse_unstarted();
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	test_misuse_unstarted();
	for (i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 131 + (i >> 9));
	snprintf(dir, sizeof(dir), "/tmp/vsock-native-XXXXXX");
	mp = rte_pktmbuf_pool_create("native_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	vsock_pmd_conf_init(&conf);
	conf.nb_vms = 1;
	conf.vms[0].cid = CID;
	conf.vms[0].connect_timeout_ms = 3600000;
	if (!mkdtemp(dir) || !mp) {
		tap_ok(0, "run directory and mempool");
		return tap_done();
	}
	snprintf(conf.vms[0].socket_path, sizeof(conf.vms[0].socket_path), "%s/vm3.sock", dir);
	snprintf(conf.vms[0].uds_path, sizeof(conf.vms[0].uds_path), "%s/vm3.vsock", dir);
	if (!tap_ok(vsock_pmd_start(&conf) == 0, "accelerator started in this process") ||
	    !tap_ok(attach(0) == 0, "frontend and guest driver attached to VM 3")) {
		vsock_pmd_stop();
		return tap_done();
	}
	test_accept();
	test_connect();
	test_credit();
	test_seqpacket();
	test_seqpacket_ends_alone();
	test_small_packets();
	test_many();
	test_listener_close_race();
	test_misuse();
	test_h2g_direct();
	test_cold();
	tap_ok(g.errors == 0, "every packet the guest got follows the protocol (%lu: %s)",
	       (unsigned long)g.errors, g.err);
	test_guest_gone();
	vsock_pmd_stop();
	test_misuse_unstarted();
	tap_ok(rte_mempool_avail_count(mp) == 4095, "every mbuf the test sent came back (%u)",
	       rte_mempool_avail_count(mp));
	rmdir(dir);
	return tap_done();
}
