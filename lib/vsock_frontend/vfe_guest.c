/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest's virtio-vsock driver, in the test process (see vfe_guest.h).
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vfe_guest.h"

#define RX_BUF_DEFAULT (4096u + VFE_GUEST_HDR_LEN)
#define BUF_ALLOC_DEFAULT (256u * 1024)
#define FIRST_LOCAL_PORT 20000u
/* Control packets waiting for tx descriptors. */
#define CTL_Q_SIZE 4096
#define HASH_SIZE 4096
#define SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

struct ctl_entry {
	uint32_t local_port, peer_port;
	uint16_t type, op;
	uint32_t flags;
	int conn;	/* index, or -1 for an RST to no connection */
};

struct vfe_guest_priv {
	/* FIFO, so that every tx buffer takes its turn (layout tests place some oddly). */
	struct vfe_guest_slot **tx_free;
	unsigned int tx_head, tx_nfree, tx_num;
	struct ctl_entry ctl[CTL_Q_SIZE];
	unsigned int ctl_head, ctl_count;
	int hash[HASH_SIZE];
	int hnext[VFE_GUEST_MAX_CONNS];
};

static void breach(struct vfe_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void breach(struct vfe_guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->errors++ != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(g->err, sizeof(g->err), fmt, ap);
	va_end(ap);
}

static unsigned int hash_of(uint32_t local, uint32_t peer)
{
	return (local * 2654435761u ^ peer * 40503u) % HASH_SIZE;
}

static struct vfe_guest_conn *conn_find(const struct vfe_guest *g, uint32_t local, uint32_t peer)
{
	int i;

	for (i = g->priv->hash[hash_of(local, peer)]; i >= 0; i = g->priv->hnext[i]) {
		struct vfe_guest_conn *c = &g->conns[i];

		if (c->local_port == local && c->peer_port == peer)
			return c;
	}
	return NULL;
}

static struct vfe_guest_conn *conn_new(struct vfe_guest *g, uint32_t local, uint32_t peer,
		uint16_t type)
{
	struct vfe_guest_conn *c = NULL;
	unsigned int i, h;

	for (i = 0; i < VFE_GUEST_MAX_CONNS; i++) {
		if (g->conns[i].state == VFE_GC_FREE) {
			c = &g->conns[i];
			break;
		}
	}
	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->buf_alloc = g->conf.buf_alloc;
	c->rxq = malloc(c->buf_alloc);
	if (c->rxq == NULL)
		return NULL;
	c->type = type;
	c->local_port = local;
	c->peer_port = peer;
	c->auto_credit = true;
	h = hash_of(local, peer);
	g->priv->hnext[i] = g->priv->hash[h];
	g->priv->hash[h] = (int)i;
	return c;
}

void vfe_guest_release(struct vfe_guest *g, struct vfe_guest_conn *c)
{
	int idx = (int)(c - g->conns);
	int *p = &g->priv->hash[hash_of(c->local_port, c->peer_port)];
	unsigned int i;

	while (*p >= 0 && *p != idx)
		p = &g->priv->hnext[*p];
	if (*p == idx)
		*p = g->priv->hnext[idx];
	/* Control packets still queued for it go out as connection-less. */
	for (i = 0; i < g->priv->ctl_count; i++) {
		struct ctl_entry *e = &g->priv->ctl[(g->priv->ctl_head + i) % CTL_Q_SIZE];

		if (e->conn == idx)
			e->conn = -1;
	}
	free(c->rxq);
	memset(c, 0, sizeof(*c));
}

/* ---- buffers ---- */

static void *alloc_piece(struct vfe_guest *g, size_t len, char what, unsigned int slot,
		unsigned int piece, uint64_t *gpa)
{
	if (g->conf.alloc != NULL)
		return g->conf.alloc(g->conf.alloc_ctx, &g->v->mem, len, what, slot, piece, gpa);
	return vfe_mem_alloc(&g->v->mem, len, 64, gpa);
}

/* Split @p total bytes over @p n pieces, the header first if @p hdr_piece. */
static int slot_init(struct vfe_guest *g, struct vfe_guest_slot *s, char what, unsigned int idx,
		uint32_t total, unsigned int n, bool hdr_piece)
{
	uint32_t left = total, each;
	unsigned int p = 0;

	s->npieces = (uint8_t)n;
	if (hdr_piece) {
		s->len[p++] = VFE_GUEST_HDR_LEN;
		left -= VFE_GUEST_HDR_LEN;
	}
	each = (left + (n - p) - 1) / (n - p);
	for (; p < n; p++) {
		s->len[p] = left < each ? left : each;
		left -= s->len[p];
	}
	for (p = 0; p < n; p++) {
		s->ptr[p] = alloc_piece(g, s->len[p], what, idx, p, &s->gpa[p]);
		if (s->ptr[p] == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* Descriptors a chain of @p n pieces takes (conf.empty_descs adds n + 1 empty ones). */
static unsigned int chain_descs(const struct vfe_guest *g, unsigned int n)
{
	return g->conf.empty_descs ? 2 * n + 1 : n;
}

/* Append piece @p b to chain @p d of *n descriptors; with empty_descs, an empty one after it. */
static void chain_add(const struct vfe_guest *g, struct vfe_buf *d, unsigned int *n,
		struct vfe_buf b)
{
	/* Empty descriptors point at the piece, in its direction: nothing there may be touched. */
	const struct vfe_buf empty = { .gpa = b.gpa, .len = 0, .writable = b.writable };

	if (g->conf.empty_descs && *n == 0)
		d[(*n)++] = empty;
	d[(*n)++] = b;
	if (g->conf.empty_descs)
		d[(*n)++] = empty;
}

static int rx_post(struct vfe_guest *g, struct vfe_guest_slot *s)
{
	struct vfe_vq *rx = &g->v->vq[VFE_VSOCK_RX];
	struct vfe_buf b[VFE_GUEST_MAX_DESCS];
	unsigned int i, n = 0;

	for (i = 0; i < s->npieces; i++)
		chain_add(g, b, &n, (struct vfe_buf){ .gpa = s->gpa[i], .len = s->len[i],
			.writable = true });
	if (g->conf.rx_indirect)
		return vfe_vq_add_indirect(rx, b, n, s);
	return vfe_vq_add(rx, b, n, s);
}

/* Publish what was added to queue @p q (VFE_VSOCK_RX or _TX); kick if the device asks. */
static void queue_kick(struct vfe_guest *g, unsigned int q)
{
	struct vfe_vq *vq = &g->v->vq[q];

	vfe_vq_publish(vq);
	if (vfe_vq_kick_needed(vq)) {
		vfe_vq_kick(vq);
		g->kicks++;
	}
}

/* slot_copy() across pieces. */
static void pieces_copy(const struct vfe_guest_slot *s, uint32_t off, void *flat, uint32_t len,
		bool to_slot)
{
	unsigned int i;

	for (i = 0; i < s->npieces && len; i++) {
		uint32_t n;

		if (off >= s->len[i]) {
			off -= s->len[i];
			continue;
		}
		n = s->len[i] - off < len ? s->len[i] - off : len;
		if (to_slot)
			memcpy((uint8_t *)s->ptr[i] + off, flat, n);
		else
			memcpy(flat, (uint8_t *)s->ptr[i] + off, n);
		flat = (uint8_t *)flat + n;
		len -= n;
		off = 0;
	}
}

/*
 * Copy between a slot's pieces and a flat buffer, @p off bytes into the slot. Inline: most
 * buffers are one piece (Linux's), or the bytes sit in the first, and a header's copy is
 * then a few moves where a call cost more than the copy.
 */
static inline void slot_copy(const struct vfe_guest_slot *s, uint32_t off, void *flat,
		uint32_t len, bool to_slot)
{
	if (off + len > s->len[0])
		pieces_copy(s, off, flat, len, to_slot);
	else if (to_slot)
		memcpy((uint8_t *)s->ptr[0] + off, flat, len);
	else
		memcpy(flat, (uint8_t *)s->ptr[0] + off, len);
}

int vfe_guest_init(struct vfe_guest *g, struct vfe_vsock *v, const struct vfe_guest_conf *conf)
{
	static const struct vfe_guest_conf defaults;
	uint16_t num = v->vq[VFE_VSOCK_RX].num;
	unsigned int i, n;
	uint32_t room;
	int rc;

	memset(g, 0, sizeof(*g));
	g->v = v;
	g->cid = v->cid;
	g->conf = conf != NULL ? *conf : defaults;
	if (g->conf.rx_buf_len == 0)
		g->conf.rx_buf_len = RX_BUF_DEFAULT;
	if (g->conf.rx_pieces == 0)
		g->conf.rx_pieces = 1;
	if (g->conf.tx_max_payload == 0)
		g->conf.tx_max_payload = VFE_GUEST_MAX_PKT;
	if (g->conf.buf_alloc == 0)
		g->conf.buf_alloc = BUF_ALLOC_DEFAULT;
	if (g->conf.rx_bufs == 0 || g->conf.rx_bufs > num)
		g->conf.rx_bufs = num;
	if (g->conf.rx_pieces > VFE_GUEST_MAX_PIECES || g->conf.tx_pieces >= VFE_GUEST_MAX_PIECES ||
	    (g->conf.rx_hdr_piece && g->conf.rx_pieces < 2) ||
	    g->conf.rx_buf_len <= VFE_GUEST_HDR_LEN ||
	    g->conf.tx_max_payload > VFE_GUEST_MAX_PKT)
		return -EINVAL;
	/* Without indirect tables a whole chain must fit in the ring (virtio 2.7.13.1). */
	if (!g->conf.rx_indirect)
		g->conf.rx_bufs = (uint16_t)(num / chain_descs(g, g->conf.rx_pieces) <
			g->conf.rx_bufs ? num / chain_descs(g, g->conf.rx_pieces) :
			g->conf.rx_bufs);
	g->next_port = FIRST_LOCAL_PORT;

	g->priv = calloc(1, sizeof(*g->priv));
	g->conns = calloc(VFE_GUEST_MAX_CONNS, sizeof(*g->conns));
	g->rx_slot = calloc(num, sizeof(*g->rx_slot));
	g->tx_slot = calloc(num, sizeof(*g->tx_slot));
	if (g->priv == NULL || g->conns == NULL || g->rx_slot == NULL || g->tx_slot == NULL) {
		vfe_guest_fini(g);
		return -ENOMEM;
	}
	g->priv->tx_free = calloc(num, sizeof(*g->priv->tx_free));
	if (g->priv->tx_free == NULL) {
		vfe_guest_fini(g);
		return -ENOMEM;
	}
	memset(g->priv->hash, 0xff, sizeof(g->priv->hash));
	g->priv->tx_num = num;

	/* tx slots: header and payload, in pieces as the test asked. */
	n = g->conf.tx_pieces ? g->conf.tx_pieces + 1u : 1u;
	room = VFE_GUEST_HDR_LEN + g->conf.tx_max_payload;
	g->tx_room = room;
	for (i = 0; i < num; i++) {
		rc = slot_init(g, &g->tx_slot[i], 't', i, room, n, g->conf.tx_pieces != 0);
		if (rc < 0) {
			vfe_guest_fini(g);
			return rc;
		}
		g->priv->tx_free[g->priv->tx_nfree++] = &g->tx_slot[i];
	}
	for (i = 0; i < g->conf.rx_bufs; i++) {
		rc = slot_init(g, &g->rx_slot[i], 'r', i, g->conf.rx_buf_len, g->conf.rx_pieces,
				g->conf.rx_hdr_piece);
		if (rc == 0)
			rc = rx_post(g, &g->rx_slot[i]) < 0 ? -ENOSPC : 0;
		if (rc < 0) {
			vfe_guest_fini(g);
			return rc;
		}
	}
	queue_kick(g, VFE_VSOCK_RX);
	return 0;
}

void vfe_guest_fini(struct vfe_guest *g)
{
	unsigned int i;

	if (g->conns != NULL)
		for (i = 0; i < VFE_GUEST_MAX_CONNS; i++)
			free(g->conns[i].rxq);
	if (g->priv != NULL)
		free(g->priv->tx_free);
	free(g->priv);
	free(g->conns);
	free(g->rx_slot);
	free(g->tx_slot);
	g->priv = NULL;
	g->conns = NULL;
	g->rx_slot = NULL;
	g->tx_slot = NULL;
}

/* ---- tx ---- */

unsigned int vfe_guest_tx_free(const struct vfe_guest *g)
{
	unsigned int d = g->v->vq[VFE_VSOCK_TX].num_free;

	return d < g->priv->tx_nfree ? d : g->priv->tx_nfree;
}

/* Descriptors a packet of @p len payload bytes needs. */
static unsigned int tx_desc_needed(const struct vfe_guest *g, const struct vfe_guest_slot *s,
		uint32_t len)
{
	uint32_t left = VFE_GUEST_HDR_LEN + len;
	unsigned int i;

	if (g->conf.tx_indirect)
		return 1;
	for (i = 0; i < s->npieces && left; i++)
		left -= left < s->len[i] ? left : s->len[i];
	return chain_descs(g, i);
}

/*
 * Put one packet on the tx ring (not published), @p h its header @p pkt encoded.
 * -ENOSPC when out of descriptors.
 */
static int tx_put(struct vfe_guest *g, const struct vfe_vsock_pkt *pkt,
		const struct virtio_vsock_hdr *h, const void *payload)
{
	struct vfe_vq *tx = &g->v->vq[VFE_VSOCK_TX];
	struct vfe_guest_priv *p = g->priv;
	struct vfe_buf b[VFE_GUEST_MAX_DESCS];
	struct vfe_guest_slot *s;
	uint32_t left = VFE_GUEST_HDR_LEN + pkt->len;
	unsigned int i, n = 0;
	int rc;

	if (p->tx_nfree == 0)
		return -ENOSPC;
	s = p->tx_free[p->tx_head];
	if (tx->num_free < tx_desc_needed(g, s, pkt->len))
		return -ENOSPC;
	slot_copy(s, 0, (void *)(uintptr_t)h, VFE_GUEST_HDR_LEN, true);
	if (pkt->len)
		slot_copy(s, VFE_GUEST_HDR_LEN, (void *)(uintptr_t)payload, pkt->len, true);
	for (i = 0; i < s->npieces && left; i++) {
		uint32_t l = left < s->len[i] ? left : s->len[i];

		chain_add(g, b, &n, (struct vfe_buf){ .gpa = s->gpa[i], .len = l });
		left -= l;
	}
	rc = g->conf.tx_indirect ? vfe_vq_add_indirect(tx, b, n, s) : vfe_vq_add(tx, b, n, s);
	if (rc < 0)
		return rc;
	p->tx_head = (p->tx_head + 1) % p->tx_num;
	p->tx_nfree--;
	g->tx_pkts++;
	g->tx_bytes += pkt->len;
	if (g->conf.tx_hook != NULL)
		g->conf.tx_hook(g->conf.hook_ctx, pkt);
	return 0;
}

static int tx_packet(struct vfe_guest *g, const struct vfe_vsock_pkt *pkt, const void *payload)
{
	struct virtio_vsock_hdr h;

	vfe_vsock_build(&h, pkt);
	return tx_put(g, pkt, &h, payload);
}

int vfe_guest_send_empty(struct vfe_guest *g, unsigned int n)
{
	struct vfe_vq *tx = &g->v->vq[VFE_VSOCK_TX];
	struct vfe_guest_priv *p = g->priv;
	struct vfe_buf b[VFE_GUEST_MAX_DESCS];
	struct vfe_guest_slot *s;
	unsigned int i;
	int rc;

	if (n == 0 || n > VFE_GUEST_MAX_DESCS)
		return -EINVAL;
	if (p->tx_nfree == 0 || tx->num_free < n)
		return -ENOSPC;
	/* A slot all the same: its completion gives it back like any packet's. */
	s = p->tx_free[p->tx_head];
	for (i = 0; i < n; i++)
		b[i] = (struct vfe_buf){ .gpa = s->gpa[0], .len = 0 };
	rc = vfe_vq_add(tx, b, n, s);
	if (rc < 0)
		return rc;
	p->tx_head = (p->tx_head + 1) % p->tx_num;
	p->tx_nfree--;
	queue_kick(g, VFE_VSOCK_TX);
	return 0;
}

static struct vfe_vsock_pkt hdr_for(const struct vfe_guest *g, const struct vfe_guest_conn *c,
		uint16_t op, uint32_t len, uint32_t flags)
{
	return (struct vfe_vsock_pkt){
		.src_cid = g->cid, .dst_cid = VFE_GUEST_HOST_CID,
		.src_port = c->local_port, .dst_port = c->peer_port,
		.len = len, .type = c->type, .op = op, .flags = flags,
		.buf_alloc = c->buf_alloc, .fwd_cnt = c->fwd_cnt,
	};
}

static int ctl_send_now(struct vfe_guest *g, const struct ctl_entry *e)
{
	struct vfe_guest_conn *c = e->conn >= 0 ? &g->conns[e->conn] : NULL;
	struct vfe_vsock_pkt pkt;
	int rc;

	if (c != NULL) {
		pkt = hdr_for(g, c, e->op, 0, e->flags);
	} else {
		pkt = (struct vfe_vsock_pkt){
			.src_cid = g->cid, .dst_cid = VFE_GUEST_HOST_CID,
			.src_port = e->local_port, .dst_port = e->peer_port,
			.type = e->type, .op = e->op, .flags = e->flags,
		};
	}
	rc = tx_packet(g, &pkt, NULL);
	if (rc == 0 && c != NULL) {
		c->fwd_sent = c->fwd_cnt;
		if (e->op == VIRTIO_VSOCK_OP_CREDIT_UPDATE)
			c->credit_updates_tx++;
	}
	return rc;
}

/* Send now, or queue behind earlier control packets when the ring is full. */
static int ctl_send(struct vfe_guest *g, const struct ctl_entry *e)
{
	struct vfe_guest_priv *p = g->priv;

	if (p->ctl_count == 0 && ctl_send_now(g, e) == 0) {
		queue_kick(g, VFE_VSOCK_TX);
		return 0;
	}
	if (p->ctl_count == CTL_Q_SIZE)
		return -ENOSPC;
	p->ctl[(p->ctl_head + p->ctl_count++) % CTL_Q_SIZE] = *e;
	return 0;
}

static void ctl_flush(struct vfe_guest *g)
{
	struct vfe_guest_priv *p = g->priv;
	bool sent = false;

	while (p->ctl_count && ctl_send_now(g, &p->ctl[p->ctl_head]) == 0) {
		p->ctl_head = (p->ctl_head + 1) % CTL_Q_SIZE;
		p->ctl_count--;
		sent = true;
	}
	if (sent)
		queue_kick(g, VFE_VSOCK_TX);
}

static int conn_ctl(struct vfe_guest *g, struct vfe_guest_conn *c, uint16_t op, uint32_t flags)
{
	struct ctl_entry e = {
		.local_port = c->local_port, .peer_port = c->peer_port,
		.type = c->type, .op = op, .flags = flags, .conn = (int)(c - g->conns),
	};

	return ctl_send(g, &e);
}

int vfe_guest_send_ctl(struct vfe_guest *g, struct vfe_guest_conn *c, uint16_t op, uint32_t flags)
{
	return conn_ctl(g, c, op, flags);
}

uint32_t vfe_guest_credit(const struct vfe_guest_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

/* len bytes of data went on the tx queue, with our fwd_cnt in their headers. */
static void tx_counted(struct vfe_guest_conn *c, uint32_t len)
{
	c->tx_cnt += len;
	c->fwd_sent = c->fwd_cnt;
}

static int rw_packet(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf, uint32_t len,
		uint32_t flags)
{
	struct vfe_vsock_pkt pkt = hdr_for(g, c, VIRTIO_VSOCK_OP_RW, len, flags);
	int rc = tx_packet(g, &pkt, buf);

	if (rc == 0)
		tx_counted(c, len);
	return rc;
}

long vfe_guest_send(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf, size_t len)
{
	struct vfe_vsock_pkt pkt = hdr_for(g, c, VIRTIO_VSOCK_OP_RW, 0, 0);
	const uint8_t *p = buf;
	struct virtio_vsock_hdr h;
	uint32_t credit;
	size_t done = 0;

	if (c->state != VFE_GC_ESTABLISHED)
		return -ENOTCONN;
	/* Data must not overtake control packets queued before it (a SHUTDOWN). */
	if (g->priv->ctl_count)
		return 0;
	/*
	 * The packets of one call differ in their length alone (fwd_cnt moves only when the
	 * test consumes): the header is encoded once and each packet's length stamped in it.
	 * The peer's credit, too, moves only when we poll: taken once, less what we send.
	 */
	vfe_vsock_build(&h, &pkt);
	credit = vfe_guest_credit(c);
	while (done < len) {
		uint32_t n = credit - (uint32_t)done;

		if (n > len - done)
			n = (uint32_t)(len - done);
		if (n > g->conf.tx_max_payload)
			n = g->conf.tx_max_payload;
		if (n == 0)
			break;
		if (n != pkt.len) {
			pkt.len = n;
			h.len = htole32(n);
		}
		if (tx_put(g, &pkt, &h, p + done) < 0)
			break;
		done += n;
	}
	if (done) {
		tx_counted(c, (uint32_t)done);
		queue_kick(g, VFE_VSOCK_TX);
	}
	return (long)done;
}

int vfe_guest_send_msg(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf, size_t len)
{
	const uint32_t eom = VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR;
	unsigned int pkts = len ? (unsigned int)((len + g->conf.tx_max_payload - 1) /
		g->conf.tx_max_payload) : 1;
	const uint8_t *p = buf;
	size_t done = 0;

	if (c->state != VFE_GC_ESTABLISHED)
		return -ENOTCONN;
	if (c->type != VIRTIO_VSOCK_TYPE_SEQPACKET)
		return -EINVAL;
	/* Whole or nothing: enough credit and enough descriptors for every piece. */
	if (g->priv->ctl_count || vfe_guest_credit(c) < len ||
	    g->priv->tx_nfree < pkts ||
	    g->v->vq[VFE_VSOCK_TX].num_free < pkts * tx_desc_needed(g, &g->tx_slot[0],
			len < g->conf.tx_max_payload ? (uint32_t)len : g->conf.tx_max_payload))
		return 0;
	do {
		uint32_t n = len - done > g->conf.tx_max_payload ? g->conf.tx_max_payload :
			(uint32_t)(len - done);

		if (rw_packet(g, c, p + done, n, done + n == len ? eom : 0) < 0)
			return -EIO;	/* counted above: cannot happen */
		done += n;
	} while (done < len);
	queue_kick(g, VFE_VSOCK_TX);
	return 1;
}

int vfe_guest_send_raw(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf,
		uint32_t len, uint32_t flags)
{
	int rc;

	if (len > g->conf.tx_max_payload)
		return -EINVAL;
	rc = rw_packet(g, c, buf, len, flags);
	if (rc == 0)
		queue_kick(g, VFE_VSOCK_TX);
	return rc;
}

struct vfe_guest_conn *vfe_guest_connect(struct vfe_guest *g, uint32_t port, uint16_t type)
{
	struct vfe_guest_conn *c;
	uint32_t local;

	do {
		local = g->next_port++;
	} while (g->listening[local & 0xffff] || conn_find(g, local, port) != NULL);
	c = conn_new(g, local, port, type);
	if (c == NULL)
		return NULL;
	c->state = VFE_GC_CONNECTING;
	if (conn_ctl(g, c, VIRTIO_VSOCK_OP_REQUEST, 0) < 0) {
		vfe_guest_release(g, c);
		return NULL;
	}
	return c;
}

void vfe_guest_listen(struct vfe_guest *g, uint32_t port, bool on)
{
	g->listening[port & 0xffff] = on;
}

struct vfe_guest_conn *vfe_guest_accept(struct vfe_guest *g)
{
	uint16_t idx;

	if (g->accept_count == 0)
		return NULL;
	idx = g->accept_q[g->accept_head];
	g->accept_head = (g->accept_head + 1) % VFE_GUEST_MAX_CONNS;
	g->accept_count--;
	return &g->conns[idx];
}

int vfe_guest_shutdown(struct vfe_guest *g, struct vfe_guest_conn *c, uint32_t flags)
{
	if (c->state != VFE_GC_ESTABLISHED)
		return -ENOTCONN;
	c->our_shut |= flags;
	return conn_ctl(g, c, VIRTIO_VSOCK_OP_SHUTDOWN, flags);
}

/* ---- rx ---- */

uint32_t vfe_guest_rx_avail(const struct vfe_guest_conn *c)
{
	return c->rx_cnt - c->fwd_cnt;
}

/* Linux answers a full shutdown with RST once nothing is left to read. */
static void close_check(struct vfe_guest *g, struct vfe_guest_conn *c)
{
	if (c->state == VFE_GC_ESTABLISHED && c->peer_shut == SHUT_BOTH &&
	    vfe_guest_rx_avail(c) == 0) {
		conn_ctl(g, c, VIRTIO_VSOCK_OP_RST, 0);
		c->state = VFE_GC_CLOSED;
	}
}

static uint32_t credit_threshold(const struct vfe_guest *g, const struct vfe_guest_conn *c)
{
	if (g->conf.credit_threshold)
		return g->conf.credit_threshold;
	return c->buf_alloc / 2 < VFE_GUEST_MAX_PKT ? c->buf_alloc / 2 : VFE_GUEST_MAX_PKT;
}

size_t vfe_guest_recv(struct vfe_guest *g, struct vfe_guest_conn *c, void *buf, size_t len)
{
	uint32_t avail = vfe_guest_rx_avail(c);
	uint32_t off, n, first;
	bool msg_done = false;

	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET) {
		if (c->msg_count == 0)
			return 0;
		avail = c->msg_end[c->msg_head] - c->fwd_cnt;
	}
	n = len < avail ? (uint32_t)len : avail;
	off = c->fwd_cnt % c->buf_alloc;
	first = c->buf_alloc - off < n ? c->buf_alloc - off : n;
	if (buf != NULL) {
		memcpy(buf, c->rxq + off, first);
		memcpy((uint8_t *)buf + first, c->rxq, n - first);
	}
	c->fwd_cnt += n;
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET && c->fwd_cnt == c->msg_end[c->msg_head]) {
		c->msg_head = (c->msg_head + 1) % VFE_GUEST_MAX_MSGS;
		c->msg_count--;
		msg_done = true;
	}
	/*
	 * Tell the peer about the room as Linux 6.1 does: after every whole
	 * message (virtio_transport_seqpacket_do_dequeue), else once it may
	 * believe less than the threshold is free (..._stream_do_dequeue). A
	 * message reader that waited for the threshold could hold part of a
	 * message that straddles the window, and wait for the rest forever.
	 */
	if (n && c->auto_credit && c->state == VFE_GC_ESTABLISHED &&
	    (msg_done || c->buf_alloc - (c->rx_cnt - c->fwd_sent) < credit_threshold(g, c)))
		conn_ctl(g, c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
	close_check(g, c);
	return n;
}

long vfe_guest_next_msg(const struct vfe_guest_conn *c, uint32_t *flags)
{
	if (c->msg_count == 0)
		return -EAGAIN;
	if (flags != NULL)
		*flags = c->msg_flags[c->msg_head];
	return (long)(c->msg_end[c->msg_head] - c->fwd_cnt);
}

/* Header checks every packet from the device must pass, whatever its connection. */
static bool hdr_valid(struct vfe_guest *g, const struct vfe_vsock_pkt *h, uint32_t used_len,
		uint32_t cap)
{
	if (used_len < VFE_GUEST_HDR_LEN || used_len > cap) {
		breach(g, "used len %u outside [44, %u]", used_len, cap);
		return false;
	}
	if (h->len != used_len - VFE_GUEST_HDR_LEN) {
		breach(g, "hdr len %u but used len %u (op %u)", h->len, used_len, h->op);
		return false;
	}
	if (h->src_cid != VFE_GUEST_HOST_CID || h->dst_cid != g->cid) {
		breach(g, "cids %llu -> %llu, want 2 -> %llu", (unsigned long long)h->src_cid,
			(unsigned long long)h->dst_cid, (unsigned long long)g->cid);
		return false;
	}
	if (h->type != VIRTIO_VSOCK_TYPE_STREAM && h->type != VIRTIO_VSOCK_TYPE_SEQPACKET) {
		breach(g, "type %u", h->type);
		return false;
	}
	if (h->op < VIRTIO_VSOCK_OP_REQUEST || h->op > VIRTIO_VSOCK_OP_CREDIT_REQUEST) {
		breach(g, "op %u", h->op);
		return false;
	}
	if (h->len != 0 && h->op != VIRTIO_VSOCK_OP_RW) {
		breach(g, "op %u with %u payload bytes", h->op, h->len);
		return false;
	}
	/* Only a SEQPACKET message's end may come alone, as Linux sends an empty message. */
	if (h->op == VIRTIO_VSOCK_OP_RW && h->len == 0 &&
	    !(h->type == VIRTIO_VSOCK_TYPE_SEQPACKET && (h->flags & VIRTIO_VSOCK_SEQ_EOM))) {
		breach(g, "empty RW packet %u -> %u", h->src_port, h->dst_port);
		return false;
	}
	if ((h->op == VIRTIO_VSOCK_OP_SHUTDOWN && (h->flags & ~SHUT_BOTH)) ||
	    (h->op == VIRTIO_VSOCK_OP_SHUTDOWN && h->flags == 0) ||
	    (h->op == VIRTIO_VSOCK_OP_RW && h->type == VIRTIO_VSOCK_TYPE_STREAM && h->flags) ||
	    (h->op == VIRTIO_VSOCK_OP_RW && (h->flags & ~3u)) ||
	    (h->op == VIRTIO_VSOCK_OP_RW && h->flags == VIRTIO_VSOCK_SEQ_EOR) ||
	    (h->op != VIRTIO_VSOCK_OP_RW && h->op != VIRTIO_VSOCK_OP_SHUTDOWN && h->flags)) {
		breach(g, "flags %#x on op %u type %u", h->flags, h->op, h->type);
		return false;
	}
	return true;
}

static void rx_rw(struct vfe_guest *g, struct vfe_guest_conn *c, const struct vfe_guest_slot *s,
		const struct vfe_vsock_pkt *h)
{
	uint32_t off, first;

	if (c->state != VFE_GC_ESTABLISHED) {
		breach(g, "RW on %u -> %u in state %d", h->src_port, h->dst_port, c->state);
		return;
	}
	if (c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) {
		breach(g, "RW on %u -> %u after SHUTDOWN SEND", h->src_port, h->dst_port);
		return;
	}
	if (c->our_shut & VIRTIO_VSOCK_SHUTDOWN_RCV) {
		breach(g, "RW on %u -> %u after our SHUTDOWN RCV", h->src_port, h->dst_port);
		return;
	}
	/* The credit we granted: buf_alloc - (rx_cnt - fwd_sent) by the peer's count. */
	if (h->len > c->buf_alloc - (c->rx_cnt - c->fwd_cnt) ||
	    c->rx_cnt + h->len - c->fwd_sent > c->buf_alloc) {
		breach(g, "credit exceeded on %u -> %u: %u bytes, %u unread, buf_alloc %u, "
			"fwd_cnt told %u", h->src_port, h->dst_port, h->len, c->rx_cnt - c->fwd_cnt,
			c->buf_alloc, c->fwd_sent);
		return;
	}
	off = c->rx_cnt % c->buf_alloc;
	first = c->buf_alloc - off < h->len ? c->buf_alloc - off : h->len;
	slot_copy(s, VFE_GUEST_HDR_LEN, c->rxq + off, first, false);
	if (h->len > first)
		slot_copy(s, VFE_GUEST_HDR_LEN + first, c->rxq, h->len - first, false);
	c->rx_cnt += h->len;
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET && (h->flags & VIRTIO_VSOCK_SEQ_EOM)) {
		unsigned int i = (c->msg_head + c->msg_count) % VFE_GUEST_MAX_MSGS;

		if (c->msg_count == VFE_GUEST_MAX_MSGS) {
			breach(g, "more than %u messages queued", VFE_GUEST_MAX_MSGS);
			return;
		}
		c->msg_end[i] = c->rx_cnt;
		c->msg_flags[i] = (uint8_t)h->flags;
		c->msg_count++;
	}
}

static void rx_packet(struct vfe_guest *g, const struct vfe_guest_slot *s, uint32_t used_len)
{
	struct virtio_vsock_hdr raw;
	struct vfe_vsock_pkt h;
	struct vfe_guest_conn *c;
	uint32_t cap = 0, old_fwd;
	unsigned int i;

	for (i = 0; i < s->npieces; i++)
		cap += s->len[i];
	/* The header is decoded where it lies when its first piece holds it all. */
	if (s->len[0] >= sizeof(raw)) {
		vfe_vsock_parse(s->ptr[0], sizeof(raw), &h);
	} else {
		slot_copy(s, 0, &raw, sizeof(raw), false);
		vfe_vsock_parse(&raw, sizeof(raw), &h);
	}
	if (g->conf.rx_hook != NULL)
		g->conf.rx_hook(g->conf.hook_ctx, &h, used_len);
	g->rx_pkts++;
	if (!hdr_valid(g, &h, used_len, cap))
		return;
	g->rx_bytes += h.len;
	c = conn_find(g, h.dst_port, h.src_port);
	if (c == NULL) {
		struct ctl_entry e = {
			.local_port = h.dst_port, .peer_port = h.src_port,
			.type = h.type, .op = VIRTIO_VSOCK_OP_RST, .conn = -1,
		};

		if (h.op == VIRTIO_VSOCK_OP_RST) {
			g->rst_rx++;
			return;
		}
		if (h.op == VIRTIO_VSOCK_OP_REQUEST && g->listening[h.dst_port & 0xffff] &&
		    (c = conn_new(g, h.dst_port, h.src_port, h.type)) != NULL) {
			c->state = VFE_GC_ESTABLISHED;
			c->peer_buf_alloc = h.buf_alloc;
			c->peer_fwd_cnt = h.fwd_cnt;
			c->rx_pkts++;
			conn_ctl(g, c, VIRTIO_VSOCK_OP_RESPONSE, 0);
			g->accept_q[(g->accept_head + g->accept_count++) % VFE_GUEST_MAX_CONNS] =
				(uint16_t)(c - g->conns);
			return;
		}
		g->unknown_rx++;
		ctl_send(g, &e);
		return;
	}
	c->rx_pkts++;
	if (h.type != c->type) {
		breach(g, "type %u on a type %u connection", h.type, c->type);
		return;
	}
	if (c->state == VFE_GC_CLOSED) {
		/* Linux drops anything after its RST; a peer RST crossing ours is fine. */
		if (h.op != VIRTIO_VSOCK_OP_RST)
			breach(g, "op %u on %u -> %u after RST", h.op, h.src_port, h.dst_port);
		return;
	}
	/* fwd_cnt only moves forward, and never past what we sent. */
	old_fwd = c->peer_fwd_cnt;
	if (h.op != VIRTIO_VSOCK_OP_RST &&
	    (h.fwd_cnt - old_fwd > c->tx_cnt - old_fwd)) {
		breach(g, "fwd_cnt %u on %u -> %u: was %u, we sent %u", h.fwd_cnt, h.src_port,
			h.dst_port, old_fwd, c->tx_cnt);
		return;
	}
	if (h.op != VIRTIO_VSOCK_OP_RST) {
		c->peer_buf_alloc = h.buf_alloc;
		c->peer_fwd_cnt = h.fwd_cnt;
	}
	switch (h.op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->state != VFE_GC_CONNECTING)
			breach(g, "RESPONSE on an established %u -> %u", h.src_port, h.dst_port);
		c->state = VFE_GC_ESTABLISHED;
		break;
	case VIRTIO_VSOCK_OP_RST:
		g->rst_rx++;
		c->reset = true;
		c->state = VFE_GC_CLOSED;
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (c->state != VFE_GC_ESTABLISHED)
			breach(g, "SHUTDOWN while connecting %u -> %u", h.src_port, h.dst_port);
		c->peer_shut |= h.flags;
		close_check(g, c);
		break;
	case VIRTIO_VSOCK_OP_RW:
		rx_rw(g, c, s, &h);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		c->credit_updates_rx++;
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		conn_ctl(g, c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
		break;
	default:	/* REQUEST on an existing connection */
		breach(g, "op %u on existing %u -> %u", h.op, h.src_port, h.dst_port);
		break;
	}
}

unsigned int vfe_guest_poll(struct vfe_guest *g)
{
	struct vfe_vq *rx = &g->v->vq[VFE_VSOCK_RX];
	struct vfe_vq *tx = &g->v->vq[VFE_VSOCK_TX];
	unsigned int done = 0, reposted = 0;
	uint32_t len;
	void *cookie;
	int id;

	if (g->conf.count_calls) {
		g->rx_calls += vfe_vq_calls(rx);
		g->tx_calls += vfe_vq_calls(tx);
	}
	while ((id = vfe_vq_get_used(tx, &len, &cookie)) != -EAGAIN) {
		done++;
		if (id < 0) {
			breach(g, "tx used id not in flight");
			continue;
		}
		if (len != 0)
			breach(g, "tx used len %u for a device-readable chain", len);
		g->priv->tx_free[(g->priv->tx_head + g->priv->tx_nfree++) % g->priv->tx_num] =
			cookie;
	}
	while ((id = vfe_vq_get_used(rx, &len, &cookie)) != -EAGAIN) {
		done++;
		if (id < 0) {
			breach(g, "rx used id not in flight");
			continue;
		}
		rx_packet(g, cookie, len);
		/* The same buffer goes back at once, as Linux refills after each batch. */
		if (rx_post(g, cookie) >= 0)
			reposted++;
	}
	if (reposted)
		queue_kick(g, VFE_VSOCK_RX);
	ctl_flush(g);
	return done;
}
