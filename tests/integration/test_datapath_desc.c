/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Descriptor layouts a driver may use, with VIRTIO_RING_F_INDIRECT_DESC
 * negotiated; for each, 4 MiB each way through one connection, every byte
 * and every header checked:
 *  - chains: header in its own descriptor, payload over 3 more (tx), rx
 *    buffers of a 44-byte header descriptor and 2 payload descriptors;
 *  - indirect tables for tx and rx, 4 and 5 entries;
 *  - buffers that cross the boundary of two adjacent memory regions (the app
 *    maps each region separately), one of them cutting through a header;
 *  - chains whose pieces lie in different regions with holes between them,
 *    through indirect tables;
 *  - Linux 7's driver: rx buffers of 3776 bytes, header included (a 4 KiB page with
 *    the skb's overhead), and a tx packet as a header descriptor and its payload's
 *    fragments (tests/qemu's -newest suite runs that driver itself).
 * Each layout is a new attach of the frontend to the same app.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define MS 5000
#define XFER (4u << 20)
#define XFER_NS 20000000000ull
#define REGION (4u << 20)

static struct dp_env env;

/* Pieces placed across a region boundary: how many, and where. */
struct straddle {
	unsigned int tx, rx;
};

/* Adjacent regions: some pieces are placed so that a boundary cuts them. */
static void *
straddle_alloc(void *ctx, struct vfe_mem *m, size_t len, char what, unsigned int slot,
		unsigned int piece, uint64_t *gpa)
{
	struct straddle *st = ctx;
	unsigned int i;

	(void)piece;
	/* Every 32nd tx buffer and the first rx buffers, as long as boundaries last. */
	if ((what == 't' && slot % 32 == 0) || (what == 'r' && slot < 3)) {
		for (i = 0; i + 1 < m->nregions; i++) {
			size_t end = m->region[i].offset + m->region[i].size;
			/* rx slot 1: the boundary falls inside the 44-byte header. */
			size_t cut = what == 'r' && slot == 1 ? 20 : len / 2;

			if (end - cut < m->brk)
				continue;
			m->brk = end - cut + len;
			*gpa = m->region[i].gpa + (end - cut - m->region[i].offset);
			if (what == 't')
				st->tx++;
			else
				st->rx++;
			return m->base + end - cut;
		}
	}
	return vfe_mem_alloc(m, len, 64, gpa);
}

/* Regions with holes: piece p of buffer s goes to region (s + p) % nregions. */
struct spread {
	size_t cur[VFE_MAX_REGIONS];
	bool init;
};

static void *
spread_alloc(void *ctx, struct vfe_mem *m, size_t len, char what, unsigned int slot,
		unsigned int piece, uint64_t *gpa)
{
	struct spread *sp = ctx;
	unsigned int r = (slot + piece + (what == 'r')) % m->nregions;
	size_t off;

	if (!sp->init) {
		unsigned int i;

		for (i = 0; i < m->nregions; i++)
			sp->cur[i] = m->brk > m->region[i].offset ? m->brk : m->region[i].offset;
		sp->init = true;
		/* Nothing else allocates after the guest driver's buffers. */
		m->brk = m->size;
	}
	off = (sp->cur[r] + 63) & ~(size_t)63;
	if (off + len > m->region[r].offset + m->region[r].size)
		return NULL;
	sp->cur[r] = off + len;
	*gpa = m->region[r].gpa + (off - m->region[r].offset);
	return m->base + off;
}

/* Both ways at once through one guest -> host connection. */
static void
transfer(const char *what, uint32_t port)
{
	struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c;
	uint64_t deadline;
	int lfd, fd;

	lfd = dp_listen(&env, port, SOCK_STREAM);
	c = dp_guest_connect(&env, port, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0, "%s: connected",
			what))
		return;
	dp_stream_init(&g2h, port, XFER);
	dp_stream_init(&hrx, port, XFER);
	dp_stream_init(&h2g, port + 1, XFER);
	dp_stream_init(&grx, port + 1, XFER);
	deadline = dp_now_ns() + XFER_NS;
	while ((hrx.done < XFER || grx.done < XFER) && hrx.bad_at == UINT64_MAX &&
	       grx.bad_at == UINT64_MAX && dp_now_ns() < deadline) {
		dp_guest_send(&env, c, &g2h);
		dp_host_send(fd, &h2g);
		while (dp_host_recv(fd, &hrx) > 0)
			;
		vfe_guest_poll(&env.g);
		dp_guest_recv(&env, c, &grx);
	}
	tap_ok(dp_stream_ok(&hrx) && hrx.fnv == g2h.fnv, "%s: guest->host 4 MiB exact "
		"(%llu, bad at %lld)", what, (unsigned long long)hrx.done, (long long)hrx.bad_at);
	tap_ok(dp_stream_ok(&grx) && grx.fnv == h2g.fnv, "%s: host->guest 4 MiB exact "
		"(%llu, bad at %lld)", what, (unsigned long long)grx.done, (long long)grx.bad_at);
	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && c->reset,
		"%s: closed", what);
	close(fd);
	vfe_guest_release(&env.g, c);
}

static void
layout(const char *what, const struct vfe_vsock_conf *vc, const struct vfe_guest_conf *gc,
		uint32_t port)
{
	if (dp_attach(&env, vc, gc) < 0)
		return;
	if (vc->indirect_max)
		tap_ok(!!(env.v.features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC)),
			"%s: VIRTIO_RING_F_INDIRECT_DESC negotiated", what);
	transfer(what, port);
	dp_check_guest(&env, what);
	dp_detach(&env);
}

int
main(void)
{
	static struct straddle st;
	static struct spread sp;
	const struct vfe_vsock_conf flat = { .mem = { .size = 32u << 20 } };
	const struct vfe_vsock_conf ind = { .mem = { .size = 32u << 20 }, .indirect_max = 8 };
	const struct vfe_vsock_conf adjacent = {
		.mem = { .size = 8 * REGION, .nregions = 8, .gpa_base = 1ULL << 32 },
	};
	const struct vfe_vsock_conf holes = {
		.mem = { .size = 4 * 2 * REGION, .nregions = 4, .gpa_base = 1ULL << 20,
			 .gap = 1u << 20 },
		.indirect_max = 8,
	};
	const struct vfe_guest_conf chains = {
		.tx_pieces = 3, .rx_pieces = 3, .rx_hdr_piece = true,
	};
	const struct vfe_guest_conf tables = {
		.tx_pieces = 3, .tx_indirect = true,
		.rx_pieces = 5, .rx_hdr_piece = true, .rx_indirect = true,
	};
	const struct vfe_guest_conf cross = {
		.alloc = straddle_alloc, .alloc_ctx = &st,
	};
	const struct vfe_guest_conf linux7 = { .rx_buf_len = 3776, .tx_pieces = 4 };
	const struct vfe_guest_conf spread = {
		.tx_pieces = 2, .tx_indirect = true, .rx_pieces = 3, .rx_indirect = true,
		.alloc = spread_alloc, .alloc_ctx = &sp,
	};

	if (dp_start(&env) < 0)
		return tap_done();
	layout("chains", &flat, &chains, 5000);
	layout("indirect", &ind, &tables, 5010);
	layout("region boundary", &adjacent, &cross, 5020);
	tap_ok(st.tx == 4 && st.rx == 3, "region boundary: %u tx and %u rx buffers cut by a "
		"boundary", st.tx, st.rx);
	layout("regions with holes", &holes, &spread, 5030);
	layout("Linux 7's buffers", &flat, &linux7, 5040);
	dp_stop(&env);
	return tap_done();
}
