/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VIRTIO_RING_F_EVENT_IDX: the app interrupts the guest only when used_event
 * asks, and never misses a wakeup the guest asked for.
 *  - rx and tx: used_event left behind, 20 used entries bring no interrupt;
 *  - used_event set N entries ahead: nothing for the first N entries, one
 *    interrupt when entry N is used, no more after it;
 *  - an interrupt-driven guest (re-arm, recheck, sleep on the call eventfd)
 *    receives 4 MiB: every sleep ends with an interrupt, never a timeout.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define MS 5000
#define QUIET_MS 200
#define CHUNK 100
#define WAKE_BYTES (4u << 20)
#define WAKE_MS 2000
#define WAKE_STEP 8192

static struct dp_env env;

/* Guest reads one host write of CHUNK bytes as one used entry. */
static bool
host_chunk(int fd, struct vfe_guest_conn *c, struct dp_stream *h2g, struct dp_stream *grx)
{
	uint64_t want = grx->done + CHUNK;
	uint64_t save = h2g->total;

	h2g->total = h2g->done + CHUNK;
	DP_WAIT(&env, (dp_host_send(fd, h2g), dp_guest_recv(&env, c, grx), grx->done >= want),
		MS);
	h2g->total = save;
	return grx->done == want;
}

/* Guest sends CHUNK bytes in one packet; waits until the app completed it. */
static bool
guest_chunk(int fd, struct vfe_guest_conn *c, struct dp_stream *g2h, struct dp_stream *hrx)
{
	struct vfe_vq *tx = &env.v.vq[VFE_VSOCK_TX];
	uint16_t used = tx->last_used;
	uint64_t want = hrx->done + CHUNK;
	uint64_t save = g2h->total;

	g2h->total = g2h->done + CHUNK;
	DP_WAIT(&env, (dp_guest_send(&env, c, g2h), dp_host_recv(fd, hrx), hrx->done >= want &&
		tx->last_used != used), MS);
	g2h->total = save;
	return hrx->done == want;
}

static void
rx_suppression(int fd, struct vfe_guest_conn *c)
{
	struct vfe_vq *rx = &env.v.vq[VFE_VSOCK_RX];
	struct dp_stream h2g, grx;
	uint64_t calls;
	uint16_t start, event;
	unsigned int i, ok = 0;

	dp_stream_init(&h2g, 81, UINT64_MAX);
	dp_stream_init(&grx, 81, UINT64_MAX);
	vfe_guest_poll(&env.g);
	/* Just behind: crossed only after 65535 more entries. */
	vfe_vq_set_used_event(rx, (uint16_t)(rx->last_used - 1));
	vfe_guest_poll(&env.g);
	calls = env.g.rx_calls;
	start = rx->last_used;
	for (i = 0; i < 20; i++)
		ok += host_chunk(fd, c, &h2g, &grx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 20 && (uint16_t)(rx->last_used - start) == 20 && env.g.rx_calls == calls,
		"rx: used_event behind: 20 used entries, no interrupt (%llu)",
		(unsigned long long)(env.g.rx_calls - calls));

	event = (uint16_t)(rx->last_used + 4);
	vfe_vq_set_used_event(rx, event);
	start = rx->last_used;
	for (i = 0, ok = 0; i < 4; i++)
		ok += host_chunk(fd, c, &h2g, &grx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 4 && (uint16_t)(rx->last_used - start) == 4 && env.g.rx_calls == calls,
		"rx: used_event 4 ahead: none for the first 4 entries (%llu)",
		(unsigned long long)(env.g.rx_calls - calls));
	ok = host_chunk(fd, c, &h2g, &grx);
	tap_ok(ok && DP_WAIT(&env, env.g.rx_calls > calls, MS) && env.g.rx_calls == calls + 1,
		"rx: one interrupt when entry %u is used", event);
	for (i = 0, ok = 0; i < 5; i++)
		ok += host_chunk(fd, c, &h2g, &grx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 5 && env.g.rx_calls == calls + 1,
		"rx: no more interrupts past used_event (%llu)",
		(unsigned long long)(env.g.rx_calls - calls));
}

static void
tx_suppression(int fd, struct vfe_guest_conn *c)
{
	struct vfe_vq *tx = &env.v.vq[VFE_VSOCK_TX];
	struct dp_stream g2h, hrx;
	uint64_t calls;
	uint16_t start, event;
	unsigned int i, ok = 0;

	dp_stream_init(&g2h, 82, UINT64_MAX);
	dp_stream_init(&hrx, 82, UINT64_MAX);
	vfe_guest_poll(&env.g);
	vfe_vq_set_used_event(tx, (uint16_t)(tx->last_used - 1));
	vfe_guest_poll(&env.g);
	calls = env.g.tx_calls;
	start = tx->last_used;
	for (i = 0; i < 20; i++)
		ok += guest_chunk(fd, c, &g2h, &hrx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 20 && (uint16_t)(tx->last_used - start) >= 20 && env.g.tx_calls == calls,
		"tx: used_event behind: %u completions, no interrupt (%llu)",
		(uint16_t)(tx->last_used - start), (unsigned long long)(env.g.tx_calls - calls));

	/* One tx packet per chunk (no control packets go out meanwhile): entries are exact. */
	event = (uint16_t)(tx->last_used + 2);
	vfe_vq_set_used_event(tx, event);
	start = tx->last_used;
	for (i = 0, ok = 0; i < 2; i++)
		ok += guest_chunk(fd, c, &g2h, &hrx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 2 && (uint16_t)(tx->last_used - start) == 2 && env.g.tx_calls == calls,
		"tx: used_event 2 ahead: none for the first 2 completions (%llu)",
		(unsigned long long)(env.g.tx_calls - calls));
	ok = guest_chunk(fd, c, &g2h, &hrx);
	tap_ok(ok && DP_WAIT(&env, env.g.tx_calls > calls, MS) && env.g.tx_calls == calls + 1,
		"tx: one interrupt when entry %u is used", event);
	for (i = 0, ok = 0; i < 5; i++)
		ok += guest_chunk(fd, c, &g2h, &hrx);
	DP_WAIT(&env, false, QUIET_MS);
	tap_ok(ok == 5 && env.g.tx_calls == calls + 1,
		"tx: no more interrupts past used_event (%llu)",
		(unsigned long long)(env.g.tx_calls - calls));
}

/*
 * As Linux's virtqueue_enable_cb_prepare()/virtqueue_poll(): after a batch,
 * ask for an interrupt at the next entry, look again, and sleep only if the
 * ring is still empty. A wakeup the app fails to send leaves the sleep to
 * time out while data is owed.
 */
static void
no_lost_wakeup(int fd, struct vfe_guest_conn *c)
{
	struct vfe_vq *rx = &env.v.vq[VFE_VSOCK_RX];
	struct pollfd pfd = { .fd = rx->call_fd, .events = POLLIN };
	struct dp_stream h2g, grx;
	unsigned int sleeps = 0, lost = 0;
	uint16_t start = rx->last_used;
	uint64_t calls = env.g.rx_calls;
	uint64_t t0 = dp_now_ns();

	dp_stream_init(&h2g, 83, WAKE_BYTES);
	dp_stream_init(&grx, 83, WAKE_BYTES);
	while (grx.done < WAKE_BYTES && grx.bad_at == UINT64_MAX && lost == 0 &&
	       dp_now_ns() < t0 + 30000000000ull) {
		uint64_t owed;

		/* Small writes, so that the guest often finds the ring empty and sleeps. */
		h2g.total = h2g.done + WAKE_STEP < WAKE_BYTES ? h2g.done + WAKE_STEP : WAKE_BYTES;
		dp_host_send(fd, &h2g);
		vfe_vq_set_used_event(rx, rx->last_used);
		/* The used_event store must be visible before used->idx is read again. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		owed = h2g.done - grx.done - vfe_guest_rx_avail(c);
		if (vfe_vq_used_pending(rx) == 0 && owed > 0) {
			sleeps++;
			if (poll(&pfd, 1, WAKE_MS) != 1) {
				lost++;
				tap_diag("no interrupt in %u ms with %llu bytes owed, used %u, "
					"used_event %u", WAKE_MS, (unsigned long long)owed,
					le16toh(rx->used->idx), rx->last_used);
			}
		}
		vfe_guest_poll(&env.g);
		dp_guest_recv(&env, c, &grx);
	}
	h2g.total = WAKE_BYTES;
	grx.total = WAKE_BYTES;
	tap_ok(lost == 0 && dp_stream_ok(&grx), "interrupt-driven guest: 4 MiB exact, %u sleeps, "
		"every one woken (%u lost)", sleeps, lost);
	tap_diag("%u used entries, %llu interrupts, %u sleeps", (uint16_t)(rx->last_used - start),
		(unsigned long long)(env.g.rx_calls - calls), sleeps);
	tap_ok(env.g.rx_calls - calls <= (uint16_t)(rx->last_used - start),
		"interrupt-driven guest: at most one interrupt per used entry");
}

int
main(void)
{
	struct vfe_guest_conf gc = { .count_calls = true };
	struct vfe_guest_conn *c = NULL;
	uint32_t hp;
	int fd;

	if (dp_start(&env) < 0)
		return tap_done();
	if (dp_attach(&env, NULL, &gc) < 0)
		goto out;
	tap_ok(!!(env.v.features & (1ULL << VIRTIO_RING_F_EVENT_IDX)),
		"VIRTIO_RING_F_EVENT_IDX negotiated");
	/* The test sets used_event itself from here on. */
	env.v.vq[VFE_VSOCK_RX].track_used_event = false;
	env.v.vq[VFE_VSOCK_TX].track_used_event = false;
	vfe_guest_listen(&env.g, 6000, true);
	fd = dp_host_to_guest(&env, 6000, &c, &hp, MS);
	if (!tap_ok(fd >= 0, "connected"))
		goto out;
	rx_suppression(fd, c);
	tx_suppression(fd, c);
	no_lost_wakeup(fd, c);
	close(fd);
	DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS);
	dp_check_guest(&env, "event_idx");
out:
	dp_stop(&env);
	return tap_done();
}
