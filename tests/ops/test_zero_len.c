/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Empty descriptors through the app, on the ring layout VFE_RING names. Virtio
 * does not forbid a zero-length buffer and Linux vhost skips one, so they are
 * not an attack: the guest driver puts an empty descriptor before, between and
 * after the pieces of every tx and rx chain it posts, and
 *  - 1 MiB goes each way through one connection, every byte checked, with
 *    direct chains and again with indirect tables;
 *  - tx chains of nothing but empty descriptors hold no header: each is
 *    dropped, counted in short_packets and given back with used length 0;
 *  - no ring is marked broken, and a new connection works afterwards.
 * The counters are read through telemetry (the operator tests' environment).
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops_util.h"

#define MS 5000
#define XFER (1u << 20)
#define XFER_NS 20000000000ull

static struct ops_env env;
static struct dp_env *e = &env.dp;

static uint64_t
vm3(const char *path)
{
	return ops_tel_u64(&env, "/vsock/stats,3", path);
}

/* @p bytes both ways at once through one guest -> host connection, every byte checked. */
static void
transfer(const char *what, uint32_t port, uint64_t bytes)
{
	static struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c;
	uint64_t deadline;
	int lfd, fd;

	lfd = dp_listen(e, port, SOCK_STREAM);
	c = dp_guest_connect(e, port, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(e, lfd, MS);
	if (lfd >= 0)
		close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0, "%s: connected",
			what)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	dp_stream_init(&g2h, port, bytes);
	dp_stream_init(&hrx, port, bytes);
	dp_stream_init(&h2g, port + 1, bytes);
	dp_stream_init(&grx, port + 1, bytes);
	deadline = dp_now_ns() + XFER_NS;
	while ((hrx.done < bytes || grx.done < bytes) && hrx.bad_at == UINT64_MAX &&
	       grx.bad_at == UINT64_MAX && dp_now_ns() < deadline) {
		dp_guest_send(e, c, &g2h);
		dp_host_send(fd, &h2g);
		while (dp_host_recv(fd, &hrx) > 0)
			;
		vfe_guest_poll(&e->g);
		dp_guest_recv(e, c, &grx);
	}
	tap_ok(dp_stream_ok(&hrx) && hrx.fnv == g2h.fnv, "%s: guest->host %llu bytes exact "
		"(%llu, bad at %lld)", what, (unsigned long long)bytes,
		(unsigned long long)hrx.done, (long long)hrx.bad_at);
	tap_ok(dp_stream_ok(&grx) && grx.fnv == h2g.fnv, "%s: host->guest %llu bytes exact "
		"(%llu, bad at %lld)", what, (unsigned long long)bytes,
		(unsigned long long)grx.done, (long long)grx.bad_at);
	vfe_guest_shutdown(&e->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(DP_WAIT(e, c->state == VFE_GC_CLOSED, MS) && c->reset, "%s: closed", what);
	close(fd);
	vfe_guest_release(&e->g, c);
}

/* Two tx chains of empty descriptors only (1 and 5 of them): dropped, counted, given back. */
static void
empty_chains(const char *what)
{
	uint64_t before = vm3("short_packets"), completed = vm3("tx.packets");
	unsigned int free0 = vfe_guest_tx_free(&e->g);
	bool counted, back;

	if (!tap_ok(vfe_guest_send_empty(&e->g, 1) == 0 && vfe_guest_send_empty(&e->g, 5) == 0,
			"%s: two chains of empty descriptors put on the tx ring", what))
		return;
	counted = DP_WAIT(e, vm3("short_packets") == before + 2, MS);
	tap_ok(counted, "%s: both counted in short_packets (%llu -> %llu)", what,
		(unsigned long long)before, (unsigned long long)vm3("short_packets"));
	/* The driver checks each used length is 0 (dp_check_guest()); here, both came back. */
	back = DP_WAIT(e, vfe_guest_tx_free(&e->g) == free0, MS);
	completed = vm3("tx.packets") - completed;
	tap_ok(back && completed == 2,
		"%s: both given back in the used ring (%u of %u free, %llu completed)", what,
		vfe_guest_tx_free(&e->g), free0, (unsigned long long)completed);
}

static void
not_broken(const char *what)
{
	tap_ok(ops_tel_u64(&env, "/vsock/vms", "3.tx_ring_broken") == 0 &&
		ops_tel_u64(&env, "/vsock/vms", "3.rx_ring_broken") == 0 &&
		vm3("tx.ring_errors") == 0 && vm3("rx.ring_errors") == 0,
		"%s: neither ring broken, no ring error counted", what);
}

static void
layout(const char *what, const struct vfe_vsock_conf *vc, const struct vfe_guest_conf *gc,
		uint32_t port)
{
	char sub[96];

	if (dp_attach(e, vc, gc) < 0)
		return;
	transfer(what, port, XFER);
	empty_chains(what);
	not_broken(what);
	snprintf(sub, sizeof(sub), "%s, after the empty chains", what);
	transfer(sub, port + 2, 64u << 10);
	not_broken(sub);
	dp_check_guest(e, what);
	dp_detach(e);
}

int
main(void)
{
	const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 }, .indirect_max = 16 };
	/* Header in its own descriptor, payload over two; rx header piece apart. */
	const struct vfe_guest_conf chains = {
		.empty_descs = true, .tx_pieces = 2, .rx_pieces = 3, .rx_hdr_piece = true,
	};
	/* Header and payload in one piece; tables of 3 (tx) and 7 (rx) entries. */
	const struct vfe_guest_conf tables = {
		.empty_descs = true, .tx_indirect = true, .rx_pieces = 3, .rx_indirect = true,
	};
	int status;

	if (!tap_ok(ops_start(&env, false, false, NULL) == 0, "app started"))
		return tap_done();
	layout("empty descriptors in chains", &vc, &chains, 5000);
	layout("empty descriptors in indirect tables", &vc, &tables, 5010);
	if (tap_failed)
		app_proc_dump_log(&e->app);
	status = ops_stop(&env);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
