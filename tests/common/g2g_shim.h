/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A userspace guest (vfe_guest) that talks to other guests. vfe_guest only talks to the
 * host (CID 2); the shim sits in its hooks: every header it queues gets the peer's CID
 * (g2g_tx_hook), and every header it receives from a guest is checked against the CID of
 * its connection, logged, then shown to the driver as coming from CID 2 (g2g_rx_hook). The
 * driver runs everything else: states, credit, SEQPACKET message ends, and its checks of
 * what the app writes. Like tap.h, include it from the one source file of a test program.
 */
#ifndef TESTS_COMMON_G2G_SHIM_H
#define TESTS_COMMON_G2G_SHIM_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_vsock.h>

#include "vfe.h"
#include "vfe_guest.h"
#include "vfe_shim.h"

#define G2G_MAX_PEERS VFE_GUEST_MAX_CONNS
/* Control packets a shim remembers, the newest ones. */
#define G2G_SEEN_MAX 256

/* A connection-level packet a guest received, with the source CID the app wrote. */
struct g2g_seen {
	uint64_t src_cid;
	struct vfe_vsock_pkt p;
};

/* One guest's side of the shim: give &shim as vfe_guest_conf.hook_ctx (g2g_guest_conf()). */
struct g2g_shim {
	struct vfe_vsock *v;
	/* The guest at the far end of each (local port, peer port). */
	struct {
		uint32_t local, peer;
		uint64_t cid;
	} peers[G2G_MAX_PEERS];
	unsigned int npeers;
	/** Peer of the next REQUEST this guest sends (g2g_connect()). */
	uint64_t connect_cid;
	/** Non-zero: the next REQUEST claims this source CID. */
	uint64_t spoof_src;
	/** Packets with no known peer, or from a CID other than their connection's. */
	unsigned int errors;
	/* A ring: entry i % G2G_SEEN_MAX of the nseen seen so far. */
	struct g2g_seen seen[G2G_SEEN_MAX];
	unsigned int nseen;
};

static inline uint64_t g2g_peer_of(const struct g2g_shim *s, uint32_t local, uint32_t peer)
{
	unsigned int i;

	for (i = 0; i < s->npeers; i++)
		if (s->peers[i].local == local && s->peers[i].peer == peer)
			return s->peers[i].cid;
	return 0;
}

static inline void g2g_peer_set(struct g2g_shim *s, uint32_t local, uint32_t peer, uint64_t cid)
{
	unsigned int i;

	for (i = 0; i < s->npeers; i++)
		if (s->peers[i].local == local && s->peers[i].peer == peer)
			break;
	if (i == G2G_MAX_PEERS) {
		s->errors++;
		return;
	}
	s->peers[i].local = local;
	s->peers[i].peer = peer;
	s->peers[i].cid = cid;
	if (i == s->npeers)
		s->npeers++;
}

static inline void g2g_tx_hook(void *ctx, const struct vfe_vsock_pkt *pkt)
{
	struct g2g_shim *s = ctx;
	struct virtio_vsock_hdr *h = vfe_shim_chain_just_added(&s->v->vq[VFE_VSOCK_TX]);
	uint64_t cid;

	if (pkt->op == VIRTIO_VSOCK_OP_REQUEST && s->connect_cid) {
		g2g_peer_set(s, pkt->src_port, pkt->dst_port, s->connect_cid);
		s->connect_cid = 0;
	}
	cid = g2g_peer_of(s, pkt->src_port, pkt->dst_port);
	if (h == NULL || cid == 0) {
		s->errors++;
		return;
	}
	h->dst_cid = htole64(cid);
	if (pkt->op == VIRTIO_VSOCK_OP_REQUEST && s->spoof_src) {
		h->src_cid = htole64(s->spoof_src);
		s->spoof_src = 0;
	}
}

static inline void g2g_rx_hook(void *ctx, const struct vfe_vsock_pkt *pkt, uint32_t used_len)
{
	struct g2g_shim *s = ctx;
	/* The driver's own copy of the header, which it checks after this hook. */
	struct vfe_vsock_pkt *h = (struct vfe_vsock_pkt *)(uintptr_t)pkt;

	(void)used_len;
	if (h->op == VIRTIO_VSOCK_OP_REQUEST || h->op == VIRTIO_VSOCK_OP_RESPONSE ||
	    h->op == VIRTIO_VSOCK_OP_RST || h->op == VIRTIO_VSOCK_OP_SHUTDOWN)
		s->seen[s->nseen++ % G2G_SEEN_MAX] = (struct g2g_seen){ .src_cid = h->src_cid,
									 .p = *h };
	if (h->src_cid == VFE_GUEST_HOST_CID) {
		/* A host program's connect: the guest's answers go back to the host. */
		if (h->op == VIRTIO_VSOCK_OP_REQUEST)
			g2g_peer_set(s, h->dst_port, h->src_port, VFE_GUEST_HOST_CID);
		return;
	}
	if (h->op == VIRTIO_VSOCK_OP_REQUEST)
		g2g_peer_set(s, h->dst_port, h->src_port, h->src_cid);
	else if (g2g_peer_of(s, h->dst_port, h->src_port) != h->src_cid)
		s->errors++;
	h->src_cid = VFE_GUEST_HOST_CID;
}

/** Hook @p gc up to the shim of the guest driven through @p v. */
static inline void g2g_guest_conf(struct g2g_shim *s, struct vfe_vsock *v,
				  struct vfe_guest_conf *gc)
{
	s->v = v;
	gc->tx_hook = g2g_tx_hook;
	gc->rx_hook = g2g_rx_hook;
	gc->hook_ctx = s;
}

/** Connect guest @p g (its shim @p s) to port @p port of guest @p cid. */
static inline struct vfe_guest_conn *g2g_connect(struct g2g_shim *s, struct vfe_guest *g,
						 uint64_t cid, uint32_t port, uint16_t type)
{
	s->connect_cid = cid;
	return vfe_guest_connect(g, port, type);
}

/*
 * Source CID of the last packet @p op the guest received for (local, peer), among the
 * G2G_SEEN_MAX newest control packets, or 0.
 */
static inline uint64_t g2g_seen_from(const struct g2g_shim *s, uint16_t op, uint32_t local,
				     uint32_t peer, uint32_t *flags)
{
	unsigned int i = s->nseen, oldest = s->nseen > G2G_SEEN_MAX ? s->nseen - G2G_SEEN_MAX : 0;

	while (i-- > oldest) {
		const struct g2g_seen *e = &s->seen[i % G2G_SEEN_MAX];

		if (e->p.op == op && e->p.dst_port == local && e->p.src_port == peer) {
			if (flags)
				*flags = e->p.flags;
			return e->src_cid;
		}
	}
	return 0;
}

#endif /* TESTS_COMMON_G2G_SHIM_H */
