/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frontend goes away in the middle of a transfer both ways, as a killed QEMU
 * (the socket closed without a word) and as a guest reset (GET_VRING_BASE, then the
 * rings set up afresh on the same connection). Each time: the host programs of the
 * lost guest see their sockets close (EOF or ECONNRESET) within a timeout after
 * receiving only bytes the guest sent; the app's mbufs in use, open descriptors and
 * connections return to their start values; VM 5 on the same worker never notices;
 * VM 3 then transfers again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faults_checks.h"
#include "faults_util.h"
#include "tap.h"

#define G2H_PORT 6000
#define H2G_PORT 6001
#define BIG (64u << 20)		/* more than moves before the fault */
#define MID (512u * 1024)	/* moved each way before the fault */
#define SMALL (200u * 1024)
#define WAIT_MS 5000
#define GONE_MS 3000

static struct fx_env env;

struct xfer {
	struct vfe_guest_conn *gc_g2h, *gc_h2g;
	int fd_g2h, fd_h2g, lfd;
	struct dp_stream g2h_tx, g2h_rx, h2g_tx, h2g_rx;
};

/* One connection each way on VM 3 (guest to host port G2H_PORT, host to guest H2G_PORT). */
static bool
xfer_open(struct xfer *x, uint64_t seed, uint64_t total)
{
	struct dp_env *e = &env.o.dp;
	uint32_t host_port;
	uint64_t deadline;

	memset(x, 0, sizeof(*x));
	x->fd_g2h = x->fd_h2g = -1;
	dp_stream_init(&x->g2h_tx, seed, total);
	dp_stream_init(&x->g2h_rx, seed, total);
	dp_stream_init(&x->h2g_tx, seed + 1, total);
	dp_stream_init(&x->h2g_rx, seed + 1, total);
	x->lfd = dp_listen(e, G2H_PORT, SOCK_STREAM);
	x->gc_g2h = x->lfd >= 0 ? vfe_guest_connect(&e->g, G2H_PORT, VIRTIO_VSOCK_TYPE_STREAM) :
		NULL;
	if (x->gc_g2h == NULL)
		return false;
	deadline = fx_now_ms() + WAIT_MS;
	while (x->fd_g2h < 0 && fx_now_ms() < deadline) {
		x->fd_g2h = accept4(x->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		fx_tick(&env);
	}
	if (x->fd_g2h < 0 || !FX_WAIT(&env, x->gc_g2h->state == VFE_GC_ESTABLISHED, WAIT_MS))
		return false;
	vfe_guest_listen(&e->g, H2G_PORT, true);
	x->fd_h2g = dp_host_connect(e, H2G_PORT);
	if (x->fd_h2g < 0 || dp_read_ok(e, x->fd_h2g, &host_port, WAIT_MS) < 0)
		return false;
	return FX_WAIT(&env, (x->gc_h2g = vfe_guest_accept(&e->g)) != NULL, WAIT_MS);
}

/* Move data both ways until @p until bytes were checked at each end (or all of it). */
static bool
xfer_run(struct xfer *x, uint64_t until)
{
	struct dp_env *e = &env.o.dp;

	FX_WAIT(&env, (dp_guest_send(e, x->gc_g2h, &x->g2h_tx), dp_host_recv(x->fd_g2h, &x->g2h_rx),
		dp_host_send(x->fd_h2g, &x->h2g_tx), dp_guest_recv(e, x->gc_h2g, &x->h2g_rx),
		(x->g2h_rx.done >= until && x->h2g_rx.done >= until) ||
		x->g2h_rx.bad_at != UINT64_MAX || x->h2g_rx.bad_at != UINT64_MAX), 20000);
	return x->g2h_rx.done >= until && x->h2g_rx.done >= until &&
	       x->g2h_rx.bad_at == UINT64_MAX && x->h2g_rx.bad_at == UINT64_MAX;
}

/*
 * The host stops reading the guest's stream while both sides keep sending: once its socket
 * buffer is full the app queues the guest's bytes in mbufs. Returns the mbufs then in use.
 */
static uint64_t
xfer_pile_up(struct xfer *x, const struct fx_res *base)
{
	struct dp_env *e = &env.o.dp;
	uint64_t deadline = fx_now_ms() + WAIT_MS;
	struct fx_res now = { 0 };

	while (fx_now_ms() < deadline) {
		FX_WAIT(&env, (dp_guest_send(e, x->gc_g2h, &x->g2h_tx),
			dp_host_send(x->fd_h2g, &x->h2g_tx), false), 20);
		if (fx_res(&env, &now) == 0 && now.mbufs_in_use > base->mbufs_in_use + 32)
			break;
	}
	return now.mbufs_in_use;
}

static void
xfer_close(struct xfer *x)
{
	if (x->fd_g2h >= 0)
		close(x->fd_g2h);
	if (x->fd_h2g >= 0)
		close(x->fd_h2g);
	if (x->lfd >= 0)
		close(x->lfd);
	x->fd_g2h = x->fd_h2g = x->lfd = -1;
}

/*
 * After the fault: both host sockets must close, the guest-to-host one after delivering
 * only a prefix of what the guest sent (checked byte by byte).
 */
static void
check_host_side(struct xfer *x, const char *what)
{
	uint64_t t0 = fx_now_ms();
	int a, b;

	/* Whatever is still in flight must be the guest's bytes, in order. */
	a = fx_host_gone(&env, x->fd_g2h, GONE_MS);
	b = fx_host_gone(&env, x->fd_h2g, GONE_MS);
	tap_ok(a != -ETIMEDOUT && b != -ETIMEDOUT, "%s: both host sockets closed within %u ms "
		"(guest->host %s, host->guest %s, %llu ms)", what, GONE_MS,
		a == 0 ? "EOF" : a == -ECONNRESET ? "ECONNRESET" : "open",
		b == 0 ? "EOF" : b == -ECONNRESET ? "ECONNRESET" : "open",
		(unsigned long long)(fx_now_ms() - t0));
	tap_ok(x->g2h_rx.bad_at == UINT64_MAX && x->g2h_rx.done >= MID &&
		x->g2h_rx.done < x->g2h_tx.total,
		"%s: the host received a clean prefix of the guest's stream (%llu bytes)", what,
		(unsigned long long)x->g2h_rx.done);
}

/* A fresh exchange on VM 3 after the fault: connections both ways, every byte checked. */
static void
check_vm3_again(uint64_t seed, const char *what)
{
	struct dp_env *e = &env.o.dp;
	struct xfer x;
	bool ok = xfer_open(&x, seed, SMALL) && xfer_run(&x, SMALL);

	tap_ok(ok, "%s: VM 3 transfers %u checked bytes each way again (%llu, %llu)", what, SMALL,
		(unsigned long long)x.g2h_rx.done, (unsigned long long)x.h2g_rx.done);
	vfe_guest_shutdown(&e->g, x.gc_g2h, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	vfe_guest_shutdown(&e->g, x.gc_h2g, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	FX_WAIT(&env, x.gc_g2h->state == VFE_GC_CLOSED && x.gc_h2g->state == VFE_GC_CLOSED,
		WAIT_MS);
	xfer_close(&x);
	vfe_guest_release(&e->g, x.gc_g2h);
	vfe_guest_release(&e->g, x.gc_h2g);
	vfe_guest_listen(&e->g, H2G_PORT, false);
}

/* QEMU killed: the vhost-user socket closes with the rings full of work. */
static void
case_kill(void)
{
	struct dp_env *e = &env.o.dp;
	struct fx_res base = { 0 };
	uint64_t held;
	struct xfer x;
	bool ok;
	int rc;

	rc = fx_res(&env, &base);
	if (!tap_ok(rc == 0, "kill: start resources read (%llu mbufs, %llu fds)",
		(unsigned long long)base.mbufs_in_use, (unsigned long long)base.open_fds))
		return;
	if (!tap_ok(dp_attach_quiet(e, NULL, NULL) == 0, "kill: VM 3 attached"))
		return;
	ok = xfer_open(&x, 11, BIG) && xfer_run(&x, MID);
	tap_ok(ok, "kill: transfer both ways under way (%llu, %llu bytes checked)",
		(unsigned long long)x.g2h_rx.done, (unsigned long long)x.h2g_rx.done);
	held = xfer_pile_up(&x, &base);
	tap_ok(held > base.mbufs_in_use, "kill: the app holds %llu mbufs of queued data",
		(unsigned long long)held);
	vfe_guest_fini(&e->g);
	vfe_vsock_close(&e->v);
	e->attached = false;
	check_host_side(&x, "kill");
	xfer_close(&x);
	fx_check_peer(&env, "kill");
	fx_check_back(&env, &base, WAIT_MS, "kill");

	if (!tap_ok(dp_attach_quiet(e, NULL, NULL) == 0, "kill: a new frontend attaches"))
		return;
	check_vm3_again(12, "kill");
	dp_detach(e);
	fx_check_back(&env, &base, WAIT_MS, "kill, after the new frontend detached");
}

/*
 * Rings re-created on the same connection, as QEMU does when the guest resets the device:
 * new rings of the same layout, each starting at the start of a new ring.
 */
static int
reset_rings(struct vfe_vsock *v)
{
	unsigned int q;
	int rc = 0;

	for (q = 0; q < VFE_VSOCK_NQ && rc == 0; q++) {
		uint16_t num = v->vq[q].num;
		bool packed = v->vq[q].packed;

		vfe_vq_fini(&v->vq[q]);
		rc = packed ? vfe_vq_init_packed(&v->vq[q], &v->mem, num, VFE_PACKED_WRAP, 0) :
			vfe_vq_init(&v->vq[q], &v->mem, num, 0, 0);
	}
	return rc == 0 ? vfe_vsock_start(v, NULL) : rc;
}

static void
case_reset(void)
{
	struct dp_env *e = &env.o.dp;
	struct fx_res base = { 0 };
	uint64_t held;
	struct xfer x;
	bool ok;
	int rc;

	if (!tap_ok(dp_attach_quiet(e, NULL, NULL) == 0, "reset: VM 3 attached"))
		return;
	/* Attached: DPDK and we hold the rings' eventfds and the memory fd; they are replaced. */
	FX_WAIT(&env, false, 50);
	rc = fx_res(&env, &base);
	if (!tap_ok(rc == 0, "reset: start resources read (%llu mbufs, %llu fds)",
		(unsigned long long)base.mbufs_in_use, (unsigned long long)base.open_fds))
		return;
	ok = xfer_open(&x, 21, BIG) && xfer_run(&x, MID);
	tap_ok(ok, "reset: transfer both ways under way (%llu, %llu bytes checked)",
		(unsigned long long)x.g2h_rx.done, (unsigned long long)x.h2g_rx.done);
	held = xfer_pile_up(&x, &base);
	tap_ok(held > base.mbufs_in_use, "reset: the app holds %llu mbufs of queued data",
		(unsigned long long)held);
	rc = vfe_vsock_stop(&e->v, NULL);
	tap_ok(rc == 0, "reset: GET_VRING_BASE answered mid-transfer (rc %d %s)", rc,
		e->v.conn.err);
	vfe_guest_fini(&e->g);
	e->attached = false;
	check_host_side(&x, "reset");
	xfer_close(&x);
	fx_check_peer(&env, "reset");

	rc = reset_rings(&e->v);
	if (rc == 0)
		rc = vfe_guest_init(&e->g, &e->v, NULL);
	if (!tap_ok(rc == 0, "reset: the rings start again on the same connection (rc %d %s)", rc,
		e->v.conn.err))
		return;
	e->attached = true;
	fx_check_back(&env, &base, WAIT_MS, "reset");
	check_vm3_again(22, "reset");
	fx_check_back(&env, &base, WAIT_MS, "reset, after the new exchange");
	dp_check_guest(e, "reset");
	dp_detach(e);
}

int
main(void)
{
	int status;

	if (!tap_ok(fx_start(&env, NULL) == 0, "app started with VMs 3 and 5")) {
		tap_diag("%s", env.why);
		return tap_done();
	}
	case_kill();
	case_reset();
	status = fx_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
