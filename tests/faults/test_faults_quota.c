/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mbuf quota: VMs 3 and 5 share one worker lcore and so one payload pool. VM 3's guest
 * accepts NCONNS host->guest connections, then stops taking its rx ring; each host program
 * writes HOST_BYTES, more than the app may queue for it. Without a cap, 1000 backlogged
 * connections x 64 KiB would take every mbuf of the pool and VM 5's host data could not be
 * read. Run twice: with the default --mbufs (8192 per VM), where each connection's share
 * of VM 3's quota bounds it, and with --mbufs 2048, where 1000 connections want more than
 * VM 3's whole quota and wait for it. Each time:
 * - the mbufs in use (/vsock/resources) stay within VM 3's share of the pool, and VM 5
 *   never finds it empty (its mempool_exhausted unchanged);
 * - VM 5 moves checked bytes both ways at once, while VM 3 is backlogged;
 * - nothing is lost: once VM 3's guest reads again, every byte arrives, checked;
 * - mbufs, descriptors and connections return to their start values.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faults_util.h"
#include "pattern.h"
#include "tap.h"

#define NCONNS 1000
#define HOST_BYTES (96u * 1024)
#define PORT 6300
#define WAIT_MS 5000
#define RUN_MS 60000
#define BACKLOG_MS 1500
#define FD_LIMIT 4096

struct qconn {
	struct vfe_guest_conn *gc;
	int fd;
	struct pattern tx, rx;
	uint32_t sent, rcvd;
	bool bad;
};

static struct fx_env env;
static struct qconn conns[NCONNS];

static struct dp_env *
vm3(void)
{
	return &env.o.dp;
}

/* Host CONNECT to the guest's port, the guest accepts: 0 or -1. */
static int
open_conn(struct qconn *c, unsigned int k)
{
	uint32_t host_port;

	c->fd = dp_host_connect(vm3(), PORT);
	pattern_init(&c->tx, 0x5151 + k);
	pattern_init(&c->rx, 0x5151 + k);
	if (c->fd < 0 || dp_read_ok(vm3(), c->fd, &host_port, WAIT_MS) < 0)
		return -1;
	return FX_WAIT(&env, (c->gc = vfe_guest_accept(&vm3()->g)) != NULL, WAIT_MS) ? 0 : -1;
}

/* Write what the socket takes, up to HOST_BYTES. */
static void
host_write(struct qconn *c)
{
	static uint8_t buf[HOST_BYTES];

	while (c->sent < HOST_BYTES) {
		struct pattern p = c->tx;
		uint32_t len = HOST_BYTES - c->sent;
		ssize_t n;

		pattern_fill(&p, buf, len);
		n = send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n <= 0)
			return;
		pattern_fill(&c->tx, buf, (size_t)n);
		c->sent += (uint32_t)n;
	}
}

static void
guest_read(struct qconn *c)
{
	static uint8_t buf[HOST_BYTES];
	size_t n;

	while (vfe_guest_rx_avail(c->gc) > 0) {
		n = vfe_guest_recv(&vm3()->g, c->gc, buf, sizeof(buf));
		if (pattern_check(&c->rx, buf, n) != n || c->rcvd + n > HOST_BYTES)
			c->bad = true;
		c->rcvd += (uint32_t)n;
	}
}

/* One app, one backlog of NCONNS connections on VM 3; @p mbufs per VM (NULL: default). */
static void
run(const char *mbufs, unsigned int per_vm)
{
	const char *const extra[] = { "--mbufs", mbufs, NULL };
	struct fx_res base = { 0 }, now = { 0 };
	uint64_t ex3, ex5, t0, peer_ms, most = 0;
	unsigned int k, opened = 0, done, bad, written, closed = 0;
	int status, rc;

	memset(conns, 0, sizeof(conns));
	for (k = 0; k < NCONNS; k++)
		conns[k].fd = -1;
	if (!tap_ok(fx_start(&env, mbufs ? extra : NULL) == 0, "[%u] app started with VMs 3 "
		"and 5 on one lcore", per_vm)) {
		tap_diag("%s", env.why);
		return;
	}
	if (!tap_ok(dp_attach_quiet(vm3(), NULL, NULL) == 0, "[%u] VM 3 attached", per_vm))
		goto out;
	FX_WAIT(&env, false, 50);
	rc = fx_res(&env, &base);
	tap_ok(rc == 0 && base.mbufs_total == 2 * per_vm - 1, "[%u] start: %llu of %llu mbufs "
		"in use", per_vm, (unsigned long long)base.mbufs_in_use,
		(unsigned long long)base.mbufs_total);
	ex3 = fx_stat(&env, FX_CID, "mempool_exhausted");
	ex5 = fx_stat(&env, FX_PEER_CID, "mempool_exhausted");

	vfe_guest_listen(&vm3()->g, PORT, true);
	for (k = 0; k < NCONNS && open_conn(&conns[k], k) == 0; k++)
		opened++;
	if (!tap_ok(opened == NCONNS, "[%u] %u host->guest connections to VM 3 open", per_vm,
		opened))
		goto out;

	/* VM 3's guest stops taking its rx ring; every host program writes. */
	vm3()->attached = false;
	t0 = fx_now_ms();
	while (fx_now_ms() - t0 < BACKLOG_MS) {
		for (k = 0; k < NCONNS; k++)
			host_write(&conns[k]);
		fx_tick(&env);
		if (fx_res(&env, &now) == 0 && now.mbufs_in_use > most)
			most = now.mbufs_in_use;
	}
	for (k = 0, written = 0; k < NCONNS; k++)
		written += conns[k].sent == HOST_BYTES;
	tap_diag("[%u] backlog: %u of %u host programs wrote all %u KiB; VM 3 waited for "
		"mbufs %llu times", per_vm, written, NCONNS, HOST_BYTES / 1024,
		(unsigned long long)(fx_stat(&env, FX_CID, "mempool_exhausted") - ex3));
	tap_ok(most <= base.mbufs_total / 2, "[%u] backlog: mbufs in use stay within VM 3's "
		"share of the pool (peak %llu of %llu)", per_vm, (unsigned long long)most,
		(unsigned long long)base.mbufs_total);
	tap_ok(fx_stat(&env, FX_PEER_CID, "mempool_exhausted") == ex5,
		"[%u] backlog: VM 5 never found the pool empty (mempool_exhausted +%llu)", per_vm,
		(unsigned long long)(fx_stat(&env, FX_PEER_CID, "mempool_exhausted") - ex5));

	/* The other VM of the pool moves data at once. */
	t0 = fx_now_ms();
	rc = fx_peer_check(&env);
	peer_ms = fx_now_ms() - t0;
	/* Each step of the check has its own bound of seconds: a starved VM 5 fails it. */
	if (!tap_ok(rc == 0, "[%u] backlog: VM 5 moves checked bytes both ways meanwhile "
		"(%llu ms)", per_vm, (unsigned long long)peer_ms))
		tap_diag("%s", env.why);

	/* VM 3's guest reads again: every byte of every connection arrives. */
	vm3()->attached = true;
	t0 = fx_now_ms();
	do {
		for (k = 0, done = 0, bad = 0; k < NCONNS; k++) {
			host_write(&conns[k]);
			guest_read(&conns[k]);
			done += conns[k].rcvd == HOST_BYTES;
			bad += conns[k].bad;
		}
		fx_tick(&env);
	} while (done < NCONNS && bad == 0 && fx_now_ms() - t0 < RUN_MS);
	tap_ok(done == NCONNS && bad == 0, "[%u] resume: all %u connections got their %u KiB "
		"byte-exact (%u done, %u wrong, %llu ms)", per_vm, NCONNS, HOST_BYTES / 1024, done,
		bad, (unsigned long long)(fx_now_ms() - t0));

	for (k = 0; k < NCONNS; k++)
		vfe_guest_shutdown(&vm3()->g, conns[k].gc,
			VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	FX_WAIT(&env, ({
		for (k = 0, closed = 0; k < NCONNS; k++)
			closed += conns[k].gc->state == VFE_GC_CLOSED;
		closed == NCONNS; }), RUN_MS);
	tap_ok(closed == NCONNS, "[%u] close: %u of %u connections closed", per_vm, closed,
		NCONNS);
	for (k = 0; k < NCONNS; k++) {
		vfe_guest_release(&vm3()->g, conns[k].gc);
		close(conns[k].fd);
		conns[k].fd = -1;
	}
	if (!tap_ok(fx_res_back(&env, &base, WAIT_MS, &now), "[%u] end: mbufs in use, fds and "
		"connections back to their start values", per_vm))
		tap_diag("%s", env.why);
	dp_check_guest(vm3(), "VM 3");
out:
	for (k = 0; k < NCONNS; k++)
		if (conns[k].fd >= 0)
			close(conns[k].fd);
	status = fx_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"[%u] app exits 0 on SIGTERM (status %#x)", per_vm, status);
}

int
main(void)
{
	int rc = dp_raise_fd_limit(FD_LIMIT);

	if (!tap_ok(rc == 0, "open file limit raised to %u (rc %d)", FD_LIMIT, rc))
		return tap_done();
	run(NULL, 8192);
	run("2048", 2048);
	return tap_done();
}
