/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Credit stalls, and their recovery, both ways:
 *  - the guest advertises 16 KiB and stops reading: exactly 16 KiB arrives,
 *    then nothing; after it reads part and says so (CREDIT_UPDATE) exactly
 *    that part more arrives; reading on, the whole 1 MiB arrives;
 *  - the host stops reading: the guest's credit (buf_alloc 256 KiB) runs out
 *    with exactly 256 KiB beyond the app's fwd_cnt, and fwd_cnt is exactly
 *    what the host socket holds; the host reads and everything arrives;
 *  - a guest that sends beyond the app's credit gets RST.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define MS 5000
#define SMALL 16384u
#define HOST_BYTES (1u << 20)
#define GUEST_BYTES (2u << 20)
/* How long "nothing more arrives" is watched. */
#define QUIET_MS 300

static struct dp_env env;

static void
guest_stops_reading(void)
{
	const char *what = "guest stops reading";
	struct vfe_guest_conn *c = NULL;
	static uint8_t buf[SMALL];
	struct dp_stream h2g, grx;
	uint64_t rx_pkts, credits;
	uint32_t hp;
	size_t n;
	int fd;

	/* buf_alloc is read when a connection is made. */
	env.g.conf.buf_alloc = SMALL;
	vfe_guest_listen(&env.g, 6000, true);
	fd = dp_host_to_guest(&env, 6000, &c, &hp, MS);
	env.g.conf.buf_alloc = DP_APP_BUF_ALLOC;
	if (!tap_ok(fd >= 0, "%s: connected with buf_alloc %u", what, SMALL))
		return;
	c->auto_credit = false;
	dp_stream_init(&h2g, 61, HOST_BYTES);
	dp_stream_init(&grx, 61, HOST_BYTES);

	/* The host writes what its socket takes; the app may pass on only 16 KiB. */
	DP_WAIT(&env, (dp_host_send(fd, &h2g), vfe_guest_rx_avail(c) >= SMALL), MS);
	rx_pkts = c->rx_pkts;
	DP_WAIT(&env, (dp_host_send(fd, &h2g), false), QUIET_MS);
	tap_ok(vfe_guest_rx_avail(c) == SMALL && c->rx_pkts == rx_pkts && env.g.errors == 0,
		"%s: exactly %u bytes arrive, then nothing for %u ms (%u, host wrote %llu)", what,
		SMALL, QUIET_MS, vfe_guest_rx_avail(c), (unsigned long long)h2g.done);

	/* Read 5000 without telling: the app cannot know, so still nothing. */
	n = vfe_guest_recv(&env.g, c, buf, 5000);
	dp_stream_check(&grx, buf, n);
	DP_WAIT(&env, (dp_host_send(fd, &h2g), false), QUIET_MS);
	tap_ok(vfe_guest_rx_avail(c) == SMALL - 5000 && c->rx_pkts == rx_pkts,
		"%s: reading without CREDIT_UPDATE brings nothing", what);
	credits = c->credit_updates_tx;
	vfe_guest_send_ctl(&env.g, c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
	DP_WAIT(&env, (dp_host_send(fd, &h2g), vfe_guest_rx_avail(c) >= SMALL), MS);
	DP_WAIT(&env, (dp_host_send(fd, &h2g), false), QUIET_MS);
	tap_ok(c->credit_updates_tx == credits + 1u && vfe_guest_rx_avail(c) == SMALL,
		"%s: after CREDIT_UPDATE exactly 5000 more (%u unread)", what,
		vfe_guest_rx_avail(c));

	/* Reading as Linux does from here: the rest of the 1 MiB comes. */
	c->auto_credit = true;
	DP_WAIT(&env, (dp_host_send(fd, &h2g), dp_guest_recv(&env, c, &grx),
		grx.done == HOST_BYTES || grx.bad_at != UINT64_MAX), 20000);
	tap_ok(dp_stream_ok(&grx) && grx.fnv == h2g.fnv, "%s: all %u bytes arrive, exact "
		"(%llu, bad at %lld)", what, HOST_BYTES, (unsigned long long)grx.done,
		(long long)grx.bad_at);
	close(fd);
	DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS);
	vfe_guest_release(&env.g, c);
	vfe_guest_listen(&env.g, 6000, false);
}

/*
 * Send until the app's credit is gone for good: CREDIT_REQUEST until the
 * fwd_cnt it reports stops moving and no credit is left.
 */
static bool
fill_credit(struct vfe_guest_conn *c, struct dp_stream *s)
{
	uint32_t last_fwd = ~0u;
	unsigned int tries;

	for (tries = 0; tries < 100; tries++) {
		uint64_t before = c->credit_updates_rx;

		DP_WAIT(&env, (dp_guest_send(&env, c, s), vfe_guest_credit(c) == 0), MS);
		vfe_guest_send_ctl(&env.g, c, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
		if (!DP_WAIT(&env, c->credit_updates_rx > before, MS))
			return false;
		if (vfe_guest_credit(c) == 0 && c->peer_fwd_cnt == last_fwd)
			return true;
		last_fwd = c->peer_fwd_cnt;
	}
	return false;
}

static void
host_stops_reading(void)
{
	const char *what = "host stops reading";
	struct dp_stream g2h, hrx;
	struct vfe_guest_conn *c;
	int lfd, fd, queued = -1;

	lfd = dp_listen(&env, 5000, SOCK_STREAM);
	c = dp_guest_connect(&env, 5000, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0, "%s: connected",
			what))
		return;
	dp_stream_init(&g2h, 51, GUEST_BYTES);
	dp_stream_init(&hrx, 51, GUEST_BYTES);
	tap_ok(fill_credit(c, &g2h), "%s: the guest's credit runs out and stays out", what);
	ioctl(fd, FIONREAD, &queued);
	tap_ok(c->peer_buf_alloc == DP_APP_BUF_ALLOC && c->tx_cnt - c->peer_fwd_cnt ==
		DP_APP_BUF_ALLOC, "%s: exactly buf_alloc (%u) in flight beyond fwd_cnt (sent %u, "
		"fwd_cnt %u)", what, c->peer_buf_alloc, c->tx_cnt, c->peer_fwd_cnt);
	tap_ok(queued >= 0 && (uint32_t)queued == c->peer_fwd_cnt,
		"%s: fwd_cnt %u is exactly what the host socket holds (%d)", what, c->peer_fwd_cnt,
		queued);
	tap_diag("%s: stalled after %u bytes", what, c->tx_cnt);

	DP_WAIT(&env, (dp_guest_send(&env, c, &g2h), dp_host_recv(fd, &hrx),
		hrx.done == GUEST_BYTES || hrx.bad_at != UINT64_MAX), 20000);
	tap_ok(dp_stream_ok(&hrx) && hrx.fnv == g2h.fnv, "%s: host reads again, all %u bytes "
		"arrive exact (%llu, bad at %lld)", what, GUEST_BYTES,
		(unsigned long long)hrx.done, (long long)hrx.bad_at);
	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS);
	close(fd);
	vfe_guest_release(&env.g, c);
}

static void
guest_exceeds_credit(void)
{
	const char *what = "guest beyond credit";
	struct dp_stream g2h;
	struct vfe_guest_conn *c;
	uint64_t rst = env.g.rst_rx;
	int lfd, fd;
	long r = -1;
	char b = 0;

	lfd = dp_listen(&env, 5001, SOCK_STREAM);
	c = dp_guest_connect(&env, 5001, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0, "%s: connected",
			what))
		return;
	dp_stream_init(&g2h, 71, UINT64_MAX);
	tap_ok(fill_credit(c, &g2h) && c->state == VFE_GC_ESTABLISHED && env.g.rst_rx == rst,
		"%s: up to the credit is fine", what);
	vfe_guest_send_raw(&env.g, c, &b, 1, 0);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && c->reset &&
		env.g.rst_rx == rst + 1, "%s: one byte more is answered with RST", what);
	/* The app closed the host socket: what it had written is followed by EOF. */
	tap_ok(DP_WAIT(&env, (r = recv(fd, (char[65536]){ 0 }, 65536, MSG_DONTWAIT)) == 0 ||
		(r < 0 && errno != EAGAIN), MS), "%s: host socket closed (%ld)", what, r);
	close(fd);
	vfe_guest_release(&env.g, c);
}

int
main(void)
{
	if (dp_start(&env) < 0)
		return tap_done();
	if (dp_attach(&env, NULL, NULL) == 0) {
		guest_stops_reading();
		host_stops_reading();
		guest_exceeds_credit();
		dp_check_guest(&env, "credit");
	}
	dp_stop(&env);
	return tap_done();
}
