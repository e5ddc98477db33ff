/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host API under --wait-mode notify: the worker sleeps while idle, and a ring
 * connection has no eventfd of its own, so the program's send must wake it (ep_wake()).
 * Ping-pong between the program (main lcore) and the userspace guest driver, with a pause
 * before every ping so that the worker is asleep when it comes. The worker fell asleep as the
 * previous reply left it; without the wake a ping would wait for its 10 ms sleep timeout. The
 * worker counts the sleeps a wake ended (its lcore's wakeups): the program's pings must have
 * ended some, whatever the machine's speed (the round-trip times are printed, not checked).
 * Then the same through a guest's connect to a listener (accept wakes the worker), and bytes
 * checked both ways.
 */
#include <errno.h>
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
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define CID 3
#define WAIT_MS 3000
#define ROUNDS 200
#define MSG 64
/* Idle time before each ping: the worker goes to sleep (it does after one idle round). */
#define IDLE_US 1000

static char dir[64];
static struct vfe_vsock v;
static struct vfe_guest g;
static struct rte_mempool *mp;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#define WAIT(cond, ms) ({ \
	uint64_t end_ = now_us() + (uint64_t)(ms) * 1000; \
	bool ok_; \
	while (!(ok_ = (cond)) && now_us() < end_) \
		vfe_guest_poll(&g); \
	ok_; })

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The program sends MSG bytes, the guest echoes them, the program reads them: microseconds. */
static int64_t ping(int h, struct vfe_guest_conn *gc, unsigned int round)
{
	uint8_t out[MSG], back[MSG], echo[MSG];
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	size_t got = 0, echoed = 0;
	uint64_t t0, end;
	unsigned int i;

	if (!m)
		return -1;
	for (i = 0; i < MSG; i++)
		out[i] = (uint8_t)(round * 7 + i);
	memcpy(rte_pktmbuf_append(m, MSG), out, MSG);
	t0 = now_us();
	if (vsock_native_send_burst(h, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return -1;
	}
	end = t0 + WAIT_MS * 1000;
	while (got < MSG && now_us() < end) {
		struct rte_mbuf *r[4];
		int n, k;

		vfe_guest_poll(&g);
		if (echoed < MSG) {
			size_t l = vfe_guest_recv(&g, gc, echo + echoed, MSG - echoed);

			if (l && vfe_guest_send(&g, gc, echo + echoed, l) != (long)l)
				return -1;
			echoed += l;
		}
		n = vsock_native_recv_burst(h, r, RTE_DIM(r));
		for (k = 0; k < n; k++) {
			struct rte_mbuf *s;

			for (s = r[k]; s; s = s->next) {
				void *d = rte_pktmbuf_mtod(s, void *);

				if (got + s->data_len <= MSG)
					memcpy(back + got, d, s->data_len);
				got += s->data_len;
			}
			rte_pktmbuf_free(r[k]);
		}
	}
	if (got != MSG || memcmp(back, out, MSG) != 0)
		return -1;
	return (int64_t)(now_us() - t0);
}

/* Sleeps of the one worker that a wake ended. */
static uint64_t wakeups(void)
{
	struct vsock_pmd_lcore_stats ls = { 0 };

	vsock_pmd_lcore_stats_get(0, &ls);
	return ls.wakeups;
}

static void ping_pong(int h, struct vfe_guest_conn *gc, const char *what)
{
	static uint64_t rtt[ROUNDS];
	struct timespec idle = { .tv_nsec = IDLE_US * 1000 };
	uint64_t woken = wakeups();
	unsigned int i, ok = 0;

	for (i = 0; i < ROUNDS; i++) {
		int64_t us;

		nanosleep(&idle, NULL);
		us = ping(h, gc, i);
		if (us < 0)
			break;
		rtt[ok++] = (uint64_t)us;
	}
	if (!tap_ok(ok == ROUNDS, "%s: %u of %d round trips of %d bytes echoed intact", what,
		    ok, ROUNDS, MSG))
		return;
	qsort(rtt, ok, sizeof(rtt[0]), cmp_u64);
	tap_diag("%s: round trip after %d us idle: p50 %lu us, p90 %lu us, max %lu us", what,
		 IDLE_US, (unsigned long)rtt[ok / 2], (unsigned long)rtt[ok * 9 / 10],
		 (unsigned long)rtt[ok - 1]);
	woken = wakeups() - woken;
	tap_ok(woken > 0, "%s: the program's pings wake the sleeping worker (%lu wakes over %d "
	       "round trips)", what, (unsigned long)woken, ROUNDS);
}

/* The program connects to a listening guest; the connect itself must wake the worker. */
static void test_connect(void)
{
	struct vfe_guest_conn *gc = NULL;
	struct timespec idle = { .tv_nsec = IDLE_US * 1000 };
	uint64_t t0;
	bool ok;
	int h;

	vfe_guest_listen(&g, 6000, true);
	nanosleep(&idle, NULL);
	t0 = now_us();
	h = vsock_native_connect(CID, 6000, VSOCK_NATIVE_STREAM);
	ok = h >= 0 && WAIT((gc = vfe_guest_accept(&g)) != NULL, WAIT_MS) &&
	     WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS);
	tap_ok(ok, "connect to a listening guest: ESTABLISHED after %lu us",
	       (unsigned long)(now_us() - t0));
	if (!gc)
		return;
	ping_pong(h, gc, "connect");
	vsock_native_close(h);
	WAIT(gc->peer_shut == 3 || gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	vfe_guest_release(&g, gc);
}

/* The VM's one connection is a guest connect waiting for the native listener's accept. */
static bool accepting(void)
{
	struct vsock_pmd_conn_info ci;

	return vsock_pmd_conns_get(CID, &ci, 1) == 1 && strcmp(ci.state, "accepting") == 0;
}

/* A guest connects to a native listener; accept must wake the worker to answer it. */
static void test_accept(void)
{
	struct vfe_guest_conn *gc;
	int l = vsock_native_listen(CID, 5000), h = -EAGAIN;
	uint64_t t0;
	bool ok;

	gc = vfe_guest_connect(&g, 5000, VIRTIO_VSOCK_TYPE_STREAM);
	/* Its REQUEST reaches the listener: the VM's connection waits for our accept... */
	ok = gc && WAIT(accepting(), WAIT_MS);
	if (!tap_ok(ok, "accept: the guest's REQUEST waits at the listener"))
		return;
	/* ... and the worker, with nothing left, sleeps. */
	WAIT(false, IDLE_US / 1000);
	t0 = now_us();
	h = vsock_native_accept(l);
	ok = h >= 0 && WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS);
	tap_ok(ok, "accept: the guest's connect completes %lu us later",
	       (unsigned long)(now_us() - t0));
	if (h < 0)
		return;
	ping_pong(h, gc, "accept");
	vsock_native_close(h);
	vsock_native_listen_close(l);
	WAIT(gc->peer_shut == 3 || gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_send_ctl(&g, gc, VIRTIO_VSOCK_OP_RST, 0);
	vfe_guest_release(&g, gc);
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l",
			"0-1", "--log-level=lib.eal:error", "--log-level=lib.vhost.*:error",
			"--log-level=vsock:warning" };
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	struct vsock_pmd_conf conf;
	char sock[96];
	int rc;

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	snprintf(dir, sizeof(dir), "/tmp/vsock-notify-XXXXXX");
	mp = rte_pktmbuf_pool_create("notify_test", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	if (!mkdtemp(dir) || !mp) {
		tap_ok(0, "run directory and mempool");
		return tap_done();
	}
	vsock_pmd_conf_init(&conf);
	conf.wait_mode = VSOCK_PMD_WAIT_NOTIFY;
	conf.nb_vms = 1;
	conf.vms[0].cid = CID;
	snprintf(conf.vms[0].socket_path, sizeof(conf.vms[0].socket_path), "%s/vm3.sock", dir);
	snprintf(conf.vms[0].uds_path, sizeof(conf.vms[0].uds_path), "%s/vm3.vsock", dir);
	if (!tap_ok(vsock_pmd_start(&conf) == 0, "accelerator started, --wait-mode notify")) {
		rmdir(dir);
		return tap_done();
	}
	snprintf(sock, sizeof(sock), "%s/vm3.sock", dir);
	rc = vfe_vsock_attach(&v, sock, &vc);
	if (rc == 0)
		rc = vfe_guest_init(&g, &v, NULL);
	/* The engine takes the device on after the frontend's last message: wait for it. */
	if (tap_ok(rc == 0 && WAIT(native_io_vm_running(0), WAIT_MS),
		   "frontend and guest driver attached to VM 3, the device running (%d)", rc)) {
		test_connect();
		test_accept();
		tap_ok(g.errors == 0, "every packet the guest got follows the protocol (%lu: %s)",
		       (unsigned long)g.errors, g.err);
		vfe_vsock_detach(&v, NULL, false);
		vfe_guest_fini(&g);
		vfe_vsock_close(&v);
	}
	vsock_pmd_stop();
	tap_ok(rte_mempool_avail_count(mp) == 1023, "every mbuf the test sent came back (%u)",
	       rte_mempool_avail_count(mp));
	rmdir(dir);
	return tap_done();
}
