/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round's byte budget (VSOCK_PMD_ROUND_BYTES per queue), on the ring layout VFE_RING
 * names, with a guest whose rx buffers hold 64 KiB of payload. Work is queued while polling
 * is stopped, so that the first round after start finds all of it:
 *  - guest -> host: four 64 KiB packets on the tx ring; 3 of 65580 bytes fit in 256 KiB,
 *    so the first burst takes 3 and is counted as cut, the next takes the 4th;
 *  - host -> guest: 64 KiB waiting in each of four host sockets; the first burst fills 3
 *    rx buffers and is cut, the next fills the 4th;
 *  - then 4 MiB each way at once on four connections, the cuts never losing a byte.
 * Every byte is checked against its stream's pattern; the bursts come from the burst
 * histogram, read through telemetry.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vsock_pmd.h>

#include "ops_util.h"

#define MS 5000
#define NCONN 4
#define PORT 5000
#define PKT (64u << 10)
#define HDR ((uint32_t)sizeof(struct virtio_vsock_hdr))
/* Chains of one header and 64 KiB that fit in one round: the first burst of each check. */
#define FIT (VSOCK_PMD_ROUND_BYTES / (PKT + HDR))
#define BULK (4u << 20)
#define BULK_NS 60000000000ull

static struct ops_env env;
static struct dp_env *e = &env.dp;

struct pair {
	struct vfe_guest_conn *gc;
	int fd;
	struct dp_stream g2h, hrx, h2g, grx;
};

static struct pair pairs[NCONN];

static uint64_t
vm3(const char *path)
{
	return ops_tel_u64(&env, "/vsock/stats,3", path);
}

/* Bursts of queue @p q ("rx"/"tx") that moved exactly @p n packets. */
static uint64_t
hist(const char *q, unsigned int n)
{
	char path[48];

	snprintf(path, sizeof(path), "%s.burst_hist.%u", q, n);
	return vm3(path);
}

static bool
open_pairs(uint32_t port, uint64_t bytes)
{
	unsigned int i;
	bool ok = true;
	int lfd;

	lfd = dp_listen(e, port, SOCK_STREAM);
	for (i = 0; i < NCONN; i++) {
		struct pair *p = &pairs[i];

		p->gc = dp_guest_connect(e, port, VIRTIO_VSOCK_TYPE_STREAM, MS);
		p->fd = lfd >= 0 ? dp_accept(e, lfd, MS) : -1;
		ok = ok && p->gc != NULL && p->gc->state == VFE_GC_ESTABLISHED && p->fd >= 0;
		dp_stream_init(&p->g2h, port * 10 + i, bytes);
		dp_stream_init(&p->hrx, port * 10 + i, bytes);
		dp_stream_init(&p->h2g, port * 10 + NCONN + i, bytes);
		dp_stream_init(&p->grx, port * 10 + NCONN + i, bytes);
	}
	if (lfd >= 0)
		close(lfd);
	return tap_ok(ok, "port %u: %u connections", port, NCONN);
}

static void
close_pairs(void)
{
	unsigned int i;

	for (i = 0; i < NCONN; i++) {
		struct pair *p = &pairs[i];

		if (p->gc != NULL) {
			vfe_guest_send_ctl(&e->g, p->gc, VIRTIO_VSOCK_OP_RST, 0);
			vfe_guest_release(&e->g, p->gc);
		}
		if (p->fd >= 0)
			close(p->fd);
		memset(p, 0, sizeof(*p));
	}
}

/* Until every stream whose total is set has arrived whole, or a byte was wrong. */
static bool
move_all(uint64_t deadline)
{
	unsigned int i;
	bool done;

	do {
		done = true;
		for (i = 0; i < NCONN; i++) {
			struct pair *p = &pairs[i];

			dp_guest_send(e, p->gc, &p->g2h);
			dp_host_send(p->fd, &p->h2g);
			while (dp_host_recv(p->fd, &p->hrx) > 0)
				;
			dp_guest_recv(e, p->gc, &p->grx);
			if (p->hrx.bad_at != UINT64_MAX || p->grx.bad_at != UINT64_MAX)
				return false;
			done = done && p->hrx.done == p->hrx.total && p->grx.done == p->grx.total;
		}
	} while (!done && dp_tick(e, deadline));
	return done;
}

static bool
streams_exact(void)
{
	unsigned int i;
	bool ok = true;

	for (i = 0; i < NCONN; i++)
		ok = ok && dp_stream_ok(&pairs[i].hrx) && pairs[i].hrx.fnv == pairs[i].g2h.fnv &&
		     dp_stream_ok(&pairs[i].grx) && pairs[i].grx.fnv == pairs[i].h2g.fnv;
	return ok;
}

static bool
stop_and_clear(void)
{
	return ops_cmd(&env, "stop", "Polling stopped", MS, NULL) &&
	       ops_cmd(&env, "clear stats 3", "cleared", MS, NULL);
}

/* Four 64 KiB packets queued on one connection, the peer's whole credit: bursts 3 and 1. */
static void
tx_cut(void)
{
	struct pair *p = &pairs[0];
	unsigned int i, queued = 0;

	if (!open_pairs(PORT, 0))
		goto out;
	dp_stream_init(&p->g2h, PORT, NCONN * PKT);
	dp_stream_init(&p->hrx, PORT, NCONN * PKT);
	tap_ok(stop_and_clear(), "tx: polling stopped, counters cleared");
	/* The stream is staged 64 KiB at a time: one packet per call. */
	for (i = 0; i < NCONN; i++)
		queued += dp_guest_send(e, p->gc, &p->g2h) == PKT;
	tap_ok(queued == NCONN, "tx: %u packets of 64 KiB on the ring while stopped", queued);
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "tx: started");
	tap_ok(move_all(dp_now_ns() + BULK_NS) && streams_exact(),
		"tx: %u x 64 KiB arrived, every byte checked", NCONN);
	tap_ok(vm3("tx.packets") == NCONN && vm3("tx.bursts") == 2 && hist("tx", FIT) == 1 &&
		hist("tx", NCONN - FIT) == 1 && vm3("tx.budget_cuts") == 1,
		"tx: a burst of %u cut at the round's %u bytes, then %u (packets %llu, bursts "
		"%llu, cuts %llu)", FIT, VSOCK_PMD_ROUND_BYTES, NCONN - FIT,
		(unsigned long long)vm3("tx.packets"), (unsigned long long)vm3("tx.bursts"),
		(unsigned long long)vm3("tx.budget_cuts"));
out:
	close_pairs();
}

/* 64 KiB waiting in each of four host sockets: bursts 3 and 1, each stream exact. */
static void
rx_cut(void)
{
	unsigned int i, written = 0;

	if (!open_pairs(PORT + 1, 0))
		goto out;
	for (i = 0; i < NCONN; i++) {
		dp_stream_init(&pairs[i].h2g, PORT + 1 + i, PKT);
		dp_stream_init(&pairs[i].grx, PORT + 1 + i, PKT);
	}
	tap_ok(stop_and_clear(), "rx: polling stopped, counters cleared");
	for (i = 0; i < NCONN; i++)
		written += dp_host_send(pairs[i].fd, &pairs[i].h2g) == PKT;
	tap_ok(written == NCONN, "rx: 64 KiB in each of %u host sockets while stopped", written);
	tap_ok(ops_cmd(&env, "start", "Polling started", MS, NULL), "rx: started");
	tap_ok(move_all(dp_now_ns() + BULK_NS) && streams_exact(),
		"rx: %u x 64 KiB arrived, every byte checked", NCONN);
	tap_ok(vm3("rx.packets") == NCONN && vm3("rx.bursts") == 2 && hist("rx", FIT) == 1 &&
		hist("rx", NCONN - FIT) == 1 && vm3("rx.budget_cuts") == 1,
		"rx: a burst of %u cut at the round's bytes, then %u (packets %llu, bursts %llu, "
		"cuts %llu)", FIT, NCONN - FIT, (unsigned long long)vm3("rx.packets"),
		(unsigned long long)vm3("rx.bursts"), (unsigned long long)vm3("rx.budget_cuts"));
out:
	close_pairs();
}

/* Both ways at once on four connections: whatever the cuts, every byte arrives, in order. */
static void
bulk(void)
{
	uint64_t cuts_tx = vm3("tx.budget_cuts"), cuts_rx = vm3("rx.budget_cuts");

	if (!open_pairs(PORT + 2, BULK))
		goto out;
	tap_ok(move_all(dp_now_ns() + BULK_NS) && streams_exact(),
		"bulk: %u MiB each way on %u connections, every byte checked", BULK >> 20,
		NCONN);
	tap_diag("bulk: budget cuts tx %llu, rx %llu",
		(unsigned long long)(vm3("tx.budget_cuts") - cuts_tx),
		(unsigned long long)(vm3("rx.budget_cuts") - cuts_rx));
out:
	close_pairs();
}

int
main(void)
{
	const struct vfe_vsock_conf vc = { .mem = { .size = 64u << 20 } };
	const struct vfe_guest_conf gc = { .rx_buf_len = PKT + HDR };

	if (!tap_ok(ops_start(&env, false, true, NULL) == 0, "app started with -i"))
		return tap_done();
	if (dp_attach(e, &vc, &gc) == 0) {
		tap_ok(ops_cmd(&env, "set record-burst-stats on", "record-burst-stats on", MS,
			NULL), "burst histogram on");
		tx_cut();
		rx_cut();
		bulk();
		dp_check_guest(e, "round budget");
	}
	ops_finish(&env);
	return tap_done();
}
