/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pressure that lasts: the app started with the smallest mempool (--mbufs 64 per VM) and
 * several streams both ways while the host reads slowly; a connection whose guest stops
 * reading; a guest that stops taking its rx ring for seconds; a guest that has not posted a
 * single rx buffer yet. Data waits (in the guest's ring, in the host socket, within credit)
 * and none is lost: every byte is checked once the pressure ends. VM 5 keeps working, and
 * the app's mbufs in use, open descriptors and connections return to their start values.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faults_checks.h"
#include "faults_util.h"
#include "tap.h"

#define MBUFS "64"
#define NSTREAMS 4
#define PORT_G2H 6100
#define PORT_H2G 6200
#define STREAM_BYTES (2u << 20)
#define WAIT_MS 5000
#define RUN_MS 30000
#define FREEZE_MS 3000
/* The app's RXQ_MAX: host bytes it queues per connection beyond what the guest took. */
#define APP_RXQ_MAX (64u * 1024)

static struct fx_env env;

struct conn_pair {
	struct vfe_guest_conn *gc;
	int fd;
	uint32_t port, host_port;	/* host->guest: the guest's port, the OK line's */
	struct dp_stream tx, rx;
};

static struct dp_env *
vm3(void)
{
	return &env.o.dp;
}

/* Guest connects to host port @p port (listener @p lfd): 0 or -1. */
static int
open_g2h(struct conn_pair *p, int lfd, uint32_t port, uint64_t seed, uint64_t total)
{
	uint64_t deadline = fx_now_ms() + WAIT_MS;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	dp_stream_init(&p->tx, seed, total);
	dp_stream_init(&p->rx, seed, total);
	p->gc = vfe_guest_connect(&vm3()->g, port, VIRTIO_VSOCK_TYPE_STREAM);
	if (p->gc == NULL)
		return -1;
	while (p->fd < 0 && fx_now_ms() < deadline) {
		p->fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		fx_tick(&env);
	}
	return p->fd >= 0 && FX_WAIT(&env, p->gc->state == VFE_GC_ESTABLISHED, WAIT_MS) ? 0 : -1;
}

/* Host CONNECTs to guest port @p port (listening): 0 or -1. */
static int
open_h2g(struct conn_pair *p, uint32_t port, uint64_t seed, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->port = port;
	dp_stream_init(&p->tx, seed, total);
	dp_stream_init(&p->rx, seed, total);
	vfe_guest_listen(&vm3()->g, port, true);
	p->fd = dp_host_connect(vm3(), port);
	if (p->fd < 0 || dp_read_ok(vm3(), p->fd, &p->host_port, WAIT_MS) < 0)
		return -1;
	return FX_WAIT(&env, (p->gc = vfe_guest_accept(&vm3()->g)) != NULL, WAIT_MS) ? 0 : -1;
}

static void
close_pair(struct conn_pair *p)
{
	if (p->gc != NULL) {
		vfe_guest_shutdown(&vm3()->g, p->gc,
			VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
		FX_WAIT(&env, p->gc->state == VFE_GC_CLOSED, WAIT_MS);
		vfe_guest_release(&vm3()->g, p->gc);
	}
	if (p->fd >= 0)
		close(p->fd);
	p->gc = NULL;
	p->fd = -1;
}

/*
 * NSTREAMS guest->host streams whose host reader takes a burst every 10 ms, and NSTREAMS
 * host->guest streams, through a pool of 127 mbufs shared with VM 5.
 */
static void
case_mempool(const struct fx_res *base)
{
	struct conn_pair g2h[NSTREAMS], h2g[NSTREAMS];
	uint64_t exhausted0 = fx_stat(&env, FX_CID, "mempool_exhausted");
	uint64_t backp0 = fx_stat(&env, FX_CID, "tx_backpressure");
	uint64_t deadline, next_read = 0, t0 = fx_now_ms();
	int lfd = dp_listen(vm3(), PORT_G2H, SOCK_STREAM);
	bool all_done = false, ok = lfd >= 0;
	unsigned int i, bad = 0;

	for (i = 0; ok && i < NSTREAMS; i++)
		ok = open_g2h(&g2h[i], lfd, PORT_G2H, 100 + i, STREAM_BYTES) == 0 &&
		     open_h2g(&h2g[i], PORT_H2G + i, 200 + i, STREAM_BYTES) == 0;
	if (!tap_ok(ok, "mempool: %u connections each way open", NSTREAMS))
		return;
	deadline = fx_now_ms() + RUN_MS;
	while (!all_done && fx_now_ms() < deadline) {
		bool reading = fx_now_ms() >= next_read;

		all_done = true;
		for (i = 0; i < NSTREAMS; i++) {
			dp_guest_send(vm3(), g2h[i].gc, &g2h[i].tx);
			dp_host_send(h2g[i].fd, &h2g[i].tx);
			dp_guest_recv(vm3(), h2g[i].gc, &h2g[i].rx);
			if (reading)
				dp_host_recv(g2h[i].fd, &g2h[i].rx);
			all_done &= g2h[i].rx.done == STREAM_BYTES &&
				    h2g[i].rx.done == STREAM_BYTES;
		}
		/* A slow host reader: the app must queue the guest's bytes, then wait. */
		if (reading)
			next_read = fx_now_ms() + 10;
		fx_tick(&env);
	}
	for (i = 0; i < NSTREAMS; i++)
		bad += !dp_stream_ok(&g2h[i].rx) || !dp_stream_ok(&h2g[i].rx);
	tap_ok(all_done && bad == 0, "mempool: %u x %u MiB each way arrived byte-exact through "
		"127 mbufs (%u streams short or wrong, %llu ms)", NSTREAMS, STREAM_BYTES >> 20, bad,
		(unsigned long long)(fx_now_ms() - t0));
	tap_ok(fx_stat(&env, FX_CID, "mempool_exhausted") > exhausted0,
		"mempool: the pool ran out (mempool_exhausted %llu) and the app waited",
		(unsigned long long)(fx_stat(&env, FX_CID, "mempool_exhausted") - exhausted0));
	tap_diag("mempool: tx_backpressure +%llu",
		(unsigned long long)(fx_stat(&env, FX_CID, "tx_backpressure") - backp0));
	for (i = 0; i < NSTREAMS; i++) {
		close_pair(&g2h[i]);
		close_pair(&h2g[i]);
		vfe_guest_listen(&vm3()->g, PORT_H2G + i, false);
	}
	close(lfd);
	fx_check_peer(&env, "mempool");
	fx_check_back(&env, base, WAIT_MS, "mempool");
}

/* One connection's guest reads nothing: its host data waits within credit, the other flows. */
static void
case_credit_stall(const struct fx_res *base)
{
	struct conn_pair stalled, other;
	uint64_t stalls0 = fx_stat(&env, FX_CID, "credit_stalls");
	uint64_t written;
	bool ok;

	ok = open_h2g(&stalled, PORT_H2G, 300, STREAM_BYTES) == 0 &&
	     open_h2g(&other, PORT_H2G + 1, 301, STREAM_BYTES) == 0;
	if (!tap_ok(ok, "credit: two host->guest connections open"))
		return;
	/* The stalled one's host writes what the app and its socket take; the other flows. */
	FX_WAIT(&env, (dp_host_send(stalled.fd, &stalled.tx), dp_host_send(other.fd, &other.tx),
		dp_guest_recv(vm3(), other.gc, &other.rx), other.rx.done == STREAM_BYTES), RUN_MS);
	FX_WAIT(&env, (dp_host_send(stalled.fd, &stalled.tx), false), 200);
	written = stalled.tx.done;
	tap_ok(dp_stream_ok(&other.rx), "credit: the other connection moved %u MiB byte-exact "
		"meanwhile", STREAM_BYTES >> 20);
	tap_ok(vfe_guest_rx_avail(stalled.gc) <= stalled.gc->buf_alloc &&
		vfe_guest_rx_avail(stalled.gc) > 0 && written < STREAM_BYTES,
		"credit: the stalled guest holds %u bytes (buf_alloc %u); the host wrote %llu "
		"and waits", vfe_guest_rx_avail(stalled.gc), stalled.gc->buf_alloc,
		(unsigned long long)written);
	tap_ok(fx_stat(&env, FX_CID, "credit_stalls") > stalls0,
		"credit: counted as a credit stall");
	/* It reads again: everything arrives. */
	FX_WAIT(&env, (dp_host_send(stalled.fd, &stalled.tx),
		dp_guest_recv(vm3(), stalled.gc, &stalled.rx),
		stalled.rx.done == STREAM_BYTES || stalled.rx.bad_at != UINT64_MAX), RUN_MS);
	tap_ok(dp_stream_ok(&stalled.rx), "credit: once the guest reads, all %u MiB arrive "
		"byte-exact", STREAM_BYTES >> 20);
	close_pair(&stalled);
	close_pair(&other);
	vfe_guest_listen(&vm3()->g, PORT_H2G, false);
	vfe_guest_listen(&vm3()->g, PORT_H2G + 1, false);
	fx_check_back(&env, base, WAIT_MS, "credit");
}

/*
 * The guest stops taking its rx ring for seconds while host programs keep writing. Three
 * connections' credit (3 x 256 KiB) is more than the ring's 128 x 4 KiB buffers hold, so
 * the ring fills before the credit runs out.
 */
#define NFULL 3
static void
case_rx_ring_full(const struct fx_res *base)
{
	struct conn_pair p[NFULL];
	uint64_t full0 = fx_stat(&env, FX_CID, "rx_ring_full");
	uint64_t queued, most = 0;
	bool ok = true, all, good;
	uint64_t t0;
	int i;

	for (i = 0; ok && i < NFULL; i++)
		ok = open_h2g(&p[i], PORT_H2G + i, 400 + i, STREAM_BYTES) == 0;
	if (!tap_ok(ok, "rx full: %d host->guest connections open", NFULL))
		return;
	/* Frozen: VM 3's driver is not polled, so its rx ring fills and stays full. */
	vm3()->attached = false;
	t0 = fx_now_ms();
	while (fx_now_ms() - t0 < FREEZE_MS) {
		for (i = 0; i < NFULL; i++)
			dp_host_send(p[i].fd, &p[i].tx);
		fx_tick(&env);
	}
	fx_check_peer(&env, "rx full, during the freeze");
	tap_ok(fx_stat(&env, FX_CID, "rx_ring_full") > full0,
		"rx full: the app saw the ring full (rx_ring_full +%llu)",
		(unsigned long long)(fx_stat(&env, FX_CID, "rx_ring_full") - full0));
	for (i = 0; i < NFULL; i++) {
		char path[64];

		snprintf(path, sizeof(path), "conns.%u_%u.queued_to_guest", p[i].port,
			p[i].host_port);
		queued = ops_tel_u64(&env.o, "/vsock/conns,3", path);
		most = queued > most ? queued : most;
	}
	tap_ok(most <= APP_RXQ_MAX, "rx full: the app queues at most %u KiB per connection "
		"meanwhile (most: %llu bytes)", APP_RXQ_MAX / 1024, (unsigned long long)most);
	for (i = 0, all = true; i < NFULL; i++)
		all &= p[i].tx.done < STREAM_BYTES;
	tap_ok(all, "rx full: the host writers wait (%llu bytes taken from the first)",
		(unsigned long long)p[0].tx.done);
	vm3()->attached = true;
	t0 = fx_now_ms();
	do {
		for (i = 0, all = true, good = true; i < NFULL; i++) {
			dp_host_send(p[i].fd, &p[i].tx);
			dp_guest_recv(vm3(), p[i].gc, &p[i].rx);
			all &= p[i].rx.done == STREAM_BYTES;
			good &= p[i].rx.bad_at == UINT64_MAX;
		}
		fx_tick(&env);
	} while (!all && good && fx_now_ms() - t0 < RUN_MS);
	tap_ok(all && good, "rx full: once the guest takes its ring again, all %d streams of "
		"%u MiB arrive byte-exact", NFULL, STREAM_BYTES >> 20);
	for (i = 0; i < NFULL; i++) {
		close_pair(&p[i]);
		vfe_guest_listen(&vm3()->g, PORT_H2G + i, false);
	}
	fx_check_back(&env, base, WAIT_MS, "rx full");
}

/* Attached, but the driver has not posted one rx buffer: host connects wait, then time out. */
static void
case_no_rx_buffers(const struct fx_res *base)
{
	static const struct vfe_vsock_conf big = { .mem = { .size = 32u << 20 } };
	struct dp_env *e = vm3();
	uint64_t timeouts0 = fx_stat(&env, FX_CID, "errors.conn_timeout");
	struct conn_pair p;
	uint64_t t0;
	int fd, rc, gone;

	dp_detach(e);
	rc = vfe_vsock_attach(&e->v, e->sock, &big);
	if (!tap_ok(rc == 0, "no rx: VM 3 attached without a driver (rc %d)", rc))
		return;
	fd = dp_host_connect(e, PORT_H2G);
	t0 = fx_now_ms();
	gone = fx_host_gone(&env, fd, WAIT_MS);
	tap_ok(gone == 0 || gone == -ECONNRESET, "no rx: a host CONNECT to it is closed without "
		"OK after %llu ms (its REQUEST could not be delivered)",
		(unsigned long long)(fx_now_ms() - t0));
	close(fd);
	tap_ok(fx_stat(&env, FX_CID, "errors.conn_timeout") > timeouts0,
		"no rx: counted as a timeout");
	fx_check_peer(&env, "no rx");
	/* The driver starts and posts its buffers: the stale RST arrives, new connections work. */
	rc = vfe_guest_init(&e->g, &e->v, NULL);
	if (!tap_ok(rc == 0, "no rx: the driver posts its rx buffers (rc %d)", rc))
		return;
	e->attached = true;
	rc = open_h2g(&p, PORT_H2G, 500, 256 * 1024);
	FX_WAIT(&env, (dp_host_send(p.fd, &p.tx), dp_guest_recv(e, p.gc, &p.rx),
		p.rx.done == p.rx.total || p.rx.bad_at != UINT64_MAX), RUN_MS);
	tap_ok(rc == 0 && dp_stream_ok(&p.rx), "no rx: then a host CONNECT works and 256 KiB "
		"arrive byte-exact");
	close_pair(&p);
	vfe_guest_listen(&e->g, PORT_H2G, false);
	fx_check_back(&env, base, WAIT_MS, "no rx");
}

int
main(void)
{
	const char *const extra[] = { "--mbufs", MBUFS, NULL };
	struct fx_res base = { 0 };
	int status, rc;

	if (!tap_ok(fx_start(&env, extra) == 0, "app started with --mbufs " MBUFS)) {
		tap_diag("%s", env.why);
		return tap_done();
	}
	if (!tap_ok(dp_attach_quiet(vm3(), NULL, NULL) == 0, "VM 3 attached"))
		goto out;
	FX_WAIT(&env, false, 50);
	rc = fx_res(&env, &base);
	tap_ok(rc == 0 && base.mbufs_total == 127, "start: %llu of %llu mbufs in use, %llu fds",
		(unsigned long long)base.mbufs_in_use, (unsigned long long)base.mbufs_total,
		(unsigned long long)base.open_fds);
	case_mempool(&base);
	case_credit_stall(&base);
	case_rx_ring_full(&base);
	case_no_rx_buffers(&base);
	dp_check_guest(vm3(), "VM 3");
out:
	status = fx_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
