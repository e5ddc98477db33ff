/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-vsock protocol of one device: the state machine per connection, credit both
 * ways, the mbuf quota, between the guest's packets and the host ends (ep.h). Which kind of
 * host end is behind a connection, a Unix socket or a pipe, is the endpoint facade's
 * business: here an endpoint moves bytes and reports events, and we count them.
 *
 * Data flows one way in each direction:
 * - guest -> host: conn_from_guest() hands payload straight to the host end while it takes
 *   it (ep_writev()); the rest waits in the connection's to_host queue for the endpoint.
 *   Our fwd_cnt counts bytes the host end took, so the guest's credit only comes back as the
 *   host consumes.
 * - host -> guest: an end that can be (a Unix stream socket, a pipe: EP_CAP_READV) is read
 *   straight into the guest's rx buffers, one read for as many as it fills, within the
 *   guest's credit (direct_to_guest()); other ends are read into the connection's to_guest
 *   queue up to the guest's credit (conn_read(), conn_host.c), handed out one rx buffer
 *   at a time.
 *   conn_to_guest_burst() serves both, after control packets.
 *
 * Work is driven by lists (conn_table.c), never by scanning the table. Socket events are
 * edges: EP_READABLE / EP_WRITABLE remember one that could not be served yet (no credit, no
 * mbuf) until the obstacle goes away.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>

#include "conn_credit.h"
#include "conn_table.h"
#include "iov.h"

/* The guest's SEQPACKET bits travel in mbufs as they are. */
_Static_assert(MQ_EOM == VIRTIO_VSOCK_SEQ_EOM && MQ_EOR == VIRTIO_VSOCK_SEQ_EOR,
	       "mbuf message bits are the header's");

/* ---- connection life ---- */

/*
 * End a connection with an RST to the guest: the host end closes now, the slot lives on
 * (CS_DEAD) until the RST is written so that the guest learns about it even when the stand-alone
 * RST queue is full, and so that a late packet of this connection is not mistaken for a new one.
 */
void conn_end(struct conn_table *t, struct conn *c)
{
	/* A clean end for the far side: it reads what we sent, then EOF (unless reset first). */
	conn_ep_close(t, c, true);
	mq_free(&c->to_host, &t->to_host_held);
	mq_free(&c->to_guest, &t->to_guest_held);
	data_del(t, c);
	timer_del(t, c);
	c->state = CS_DEAD;
	c->ctl_pending = 0;
	ctl_add(t, c, CTL_RST);
}

void conn_reset(struct conn_table *t, struct conn *c, enum conn_err why)
{
	ep_reset(&c->ep);
	t->stats.proto_err[why]++;
	t->stats.conns_reset++;
	conn_end(t, c);
}

/* The host answers everything else, malformed or unroutable packets included. */
static void rst_queue(struct conn_table *t, const struct vsock_hdr *h)
{
	rst_queue_from(t, h, VSOCK_HOST_CID);
}

/* Tell the guest what the host end did, once the data before it is delivered. */
void host_shutdown_check(struct conn_table *t, struct conn *c)
{
	uint16_t ev = c->ep.ev;
	uint8_t want = 0, add;

	if (c->state != CS_ESTABLISHED)
		return;
	if ((ev & EP_EOF) && c->to_guest.bytes == 0)
		want |= VIRTIO_VSOCK_SHUTDOWN_SEND;
	if ((ev & EP_SHUT_RD) || ((ev & EP_HUP) && (want & VIRTIO_VSOCK_SHUTDOWN_SEND)))
		want |= VIRTIO_VSOCK_SHUTDOWN_RCV;
	add = want & ~c->shut_to_guest;
	if (!add)
		return;
	c->shut_to_guest |= add;
	ctl_add(t, c, CTL_SHUTDOWN);
	if (c->shut_to_guest == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)) {
		/* The host is gone both ways: only the guest's RST is left to wait for. */
		c->state = CS_CLOSING;
		conn_ep_close(t, c, true);
		mq_free(&c->to_host, &t->to_host_held);
		timer_set(t, c);
	}
}

/* The guest's SHUTDOWN flags, applied once the bytes queued before them reached the host. */
static void guest_shutdown_apply(struct conn_table *t, struct conn *c)
{
	if (c->state != CS_ESTABLISHED || c->to_host.nb)
		return;
	if (c->guest_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)) {
		/* Guest close(): the host reads EOF, the guest gets the RST it waits for. */
		t->stats.conns_closed++;
		conn_end(t, c);
		return;
	}
	if ((c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) && !(c->ep.ev & EP_WR_SHUT))
		ep_shutdown(&c->ep, SHUT_WR);
}

/* ---- the host end's bytes ---- */

/*
 * Queued guest bytes to the host end. *@p moved gets what it took. Returns false when the
 * connection was reset.
 */
bool conn_flush(struct conn_table *t, struct conn *c, uint32_t *moved)
{
	int ret = ep_send(&c->ep, &t->io, &c->to_host, &t->to_host_held, moved);

	c->fwd_cnt += *moved;
	t->stats.host_written_bytes += *moved;
	if (ret < 0) {
		conn_reset(t, c, ret == -EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
		return false;
	}
	credit_check(t, c);
	guest_shutdown_apply(t, c);
	return true;
}

/* ---- guest -> host ---- */

/*
 * Copy @len bytes at @off of the guest payload to to_host, with the message's end marks
 * @eom_flags (SEQPACKET) on its last piece. -EAGAIN: no mbuf, nothing queued.
 */
static int to_host_copy(struct conn_table *t, struct conn *c, const struct iovec *p,
			unsigned int cnt, size_t off, uint32_t len, uint32_t eom_flags)
{
	struct mq *q = &c->to_host;
	struct rte_mbuf *tail = q->tail;
	uint32_t in_tail = 0, left, nb, i, room = t->io.room;
	/*
	 * A message's end in an empty packet, nothing of it queued: a pipe took its pieces
	 * already (they go ahead of the mark), or it is an empty message. The mark goes in an
	 * empty mbuf of its own. An end that takes whole messages only has none open; an
	 * empty message, which vsock carries but a socket's write would not, is dropped there.
	 */
	bool mark_alone = eom_flags && !len && !(c->ep.caps & EP_CAP_WHOLE_MSG) &&
			  (!tail || (tail->packet_type & MQ_EOM));

	/* Fill the tail mbuf first, unless it ends a message. */
	if (tail && !(tail->packet_type & MQ_EOM))
		in_tail = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(tail), len);
	left = len - in_tail;
	nb = (left + room - 1) / room + mark_alone;
	/* Past the quota; a packet larger than all of it may still be queued alone. */
	if (nb > t->io.n || (nb > quota_left(t->to_host_held, t->dir_quota) && t->to_host_held) ||
	    (nb && rte_pktmbuf_alloc_bulk(t->conf.pool, t->io.mbufs, nb) != 0)) {
		t->stats.pool_empty++;
		return -EAGAIN;
	}
	if (in_tail) {
		iov_read(rte_pktmbuf_mtod_offset(tail, char *, tail->data_len), p, cnt, off,
			 in_tail);
		tail->data_len += in_tail;
		q->bytes += in_tail;
		off += in_tail;
	}
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = t->io.mbufs[i];
		uint32_t l = RTE_MIN(left, room);

		iov_read(rte_pktmbuf_mtod(m, char *), p, cnt, off, l);
		m->data_len = (uint16_t)l;
		m->pkt_len = l;
		mq_push(q, m, &t->to_host_held);
		off += l;
		left -= l;
	}
	/* The last piece ends the message: an empty one that of the piece before it. */
	if (eom_flags && q->tail && (len || !(q->tail->packet_type & MQ_EOM)))
		q->tail->packet_type |= eom_flags;
	return 0;
}

/*
 * The first @p n pieces of t->io.iov, @p len bytes, straight to @p c's host end: a pipe takes
 * them in mbufs of the table's scratch, within the to_host quota. @return bytes written.
 */
static ssize_t host_writev(struct conn_table *t, struct conn *c, unsigned int n, size_t len)
{
	return ep_writev(&c->ep, &t->io, t->io.iov, n, len, &t->to_host_held,
			 quota_left(t->to_host_held, t->dir_quota));
}

/* Bytes of @p c's packet taken from the guest: in from_guest_cnt, as fwd_cnt counts them. */
static inline void from_guest_count(struct conn_table *t, struct conn *c, uint32_t n)
{
	c->from_guest_cnt += n;
	t->stats.from_guest_bytes += n;
}

/*
 * @p c's packet was written in part, its first @p off bytes of which @p done were counted
 * before, and the rest could not be queued. It comes again (with the header parsed the first
 * time): what was written is counted now, so that from_guest_cnt never trails fwd_cnt and a
 * guest that rewrites the packet meanwhile cannot change it, and is not written twice.
 * Nothing written, nothing to remember.
 */
static void partial_set(struct conn_table *t, struct conn *c, uint32_t done, uint32_t off)
{
	from_guest_count(t, c, off - done);
	if (off) {
		t->partial = c;
		t->partial_off = off;
	}
}

bool conn_from_guest_partial(const struct conn_table *t)
{
	return t->partial != NULL;
}

void conn_from_guest_abandon(struct conn_table *t)
{
	struct conn *c = t->partial;

	if (!c)
		return;
	t->partial = NULL;
	/* Its stream has a hole now: it alone pays, as for any packet out of place. */
	if (c->state == CS_ESTABLISHED)
		conn_reset(t, c, CONN_ERR_STATE);
}

/* Write @len payload bytes at @off straight to the host end; returns bytes written. */
static ssize_t direct_write(struct conn_table *t, struct conn *c, const struct iovec *p,
			    unsigned int cnt, size_t off, uint32_t len)
{
	unsigned int n = iov_slice(t->io.iov, t->io.n, p, cnt, off, len);

	return n ? host_writev(t, c, n, len) : 0;
}

static int guest_rw(struct conn_table *t, struct conn *c, const struct vsock_hdr *h,
		    const struct iovec *p, unsigned int cnt)
{
	bool seq = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	uint32_t eom = seq ? h->flags & VIRTIO_VSOCK_SEQ_EOM : 0;
	/* Of a packet written in part before: the bytes written and counted. */
	uint32_t done = t->partial == c ? t->partial_off : 0, off = done, moved;
	int ret;

	if (c->state == CS_CLOSING)
		return 0;	/* raced with our SHUTDOWN: the host is gone */
	if (c->state != CS_ESTABLISHED || (c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) ||
	    h->len < done) {
		conn_reset(t, c, CONN_ERR_STATE);
		return 0;
	}
	/* What is left of it within the room its counted part left: the whole packet fits. */
	if (h->len - done > from_guest_room(t, c)) {
		conn_reset(t, c, CONN_ERR_CREDIT);
		return 0;
	}
	/*
	 * Straight from guest memory when nothing is queued before it. A SEQPACKET message goes
	 * out whole or not at all, so only a complete one (EOM, nothing of it queued) can.
	 */
	if (c->to_host.nb == 0 && h->len > off && (!seq || eom)) {
		ssize_t n = direct_write(t, c, p, cnt, off, h->len - off);

		if (n < 0) {
			conn_reset(t, c, n == -EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
			return 0;
		}
		off += (uint32_t)n;
		c->fwd_cnt += (uint32_t)n;
		t->stats.host_written_bytes += (uint64_t)n;
	}
	if (off < h->len || (seq && eom)) {
		/* EOR too: a pipe's far side (another guest) hands it on as MSG_EOR. */
		ret = to_host_copy(t, c, p, cnt, off, h->len - off,
				   eom ? h->flags & (MQ_EOM | MQ_EOR) : 0);
		if (ret < 0) {
			/* Stream bytes already written must not be written twice on the retry. */
			partial_set(t, c, done, off);
			return ret;
		}
	}
	if (t->partial == c)
		t->partial = NULL;
	from_guest_count(t, c, h->len - done);
	/* What was queued goes on as far as the host end takes it now. */
	if (c->to_host.nb && (c->ep.ev & EP_WRITABLE) && !conn_flush(t, c, &moved))
		return 0;
	credit_check(t, c);
	return 0;
}

/* A guest REQUEST: open the host end, a pipe when @p to is one (ep_connect()). */
static void guest_request(struct conn_table *t, const struct vsock_hdr *h, struct rte_ring *to)
{
	const struct ep_addr a = {
		.src_cid = t->conf.guest_cid, .dst_cid = h->dst_cid,
		.src_port = h->src_port, .dst_port = h->dst_port, .type = h->type,
	};
	struct conn *c = conn_alloc(t);
	int ret;

	if (!c) {
		t->stats.table_full++;
		t->stats.conns_refused++;
		rst_queue_from(t, h, h->dst_cid);
		return;
	}
	c->guest_port = h->src_port;
	c->host_port = h->dst_port;
	c->peer_cid = h->dst_cid;
	c->type = h->type;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	ret = conn_hash(t, c);
	if (ret == 0)
		ret = ep_connect(&t->host, &c->ep, conn_token(t, c), &a, to);
	if (ret < 0) {
		conn_free(t, c);
		t->stats.conns_refused++;
		rst_queue_from(t, h, h->dst_cid);
		return;
	}
	conn_ep_opened(t, c);
	if (ret > 0) {
		/* The far side has yet to accept: conn_service() sees its answer. */
		c->state = CS_ACCEPT_WAIT;
		timer_set(t, c);
		return;
	}
	c->state = CS_ESTABLISHED;
	t->stats.conns_opened++;
	ctl_add(t, c, CTL_RESPONSE);
}

/* The guest accepted a host connect: answer the host end, start the stream. */
static void guest_response(struct conn_table *t, struct conn *c)
{
	timer_del(t, c);
	if (ep_established(&c->ep, c->host_port) < 0) {
		conn_reset(t, c, CONN_ERR_HOST_IO);
		return;
	}
	c->state = CS_ESTABLISHED;
	t->stats.conns_opened++;
	/* Bytes sent after the CONNECT line may wait in to_guest; the guest's credit is known now. */
	data_update(t, c);
	host_shutdown_check(t, c);
	if (c->ep.ev & (EP_READABLE | EP_WRITABLE))
		work_add(t, c);
}

static void guest_shutdown(struct conn_table *t, struct conn *c, uint32_t flags)
{
	if (c->state == CS_CLOSING) {
		/* A guest that still had data to read when we shut down closes now. */
		if ((flags & VIRTIO_VSOCK_SHUTDOWN_RCV) && (flags & VIRTIO_VSOCK_SHUTDOWN_SEND)) {
			t->stats.conns_closed++;
			conn_end(t, c);
		}
		return;
	}
	if (c->state != CS_ESTABLISHED) {
		conn_reset(t, c, CONN_ERR_STATE);
		return;
	}
	c->guest_shut |= (uint8_t)(flags & (VIRTIO_VSOCK_SHUTDOWN_RCV |
					    VIRTIO_VSOCK_SHUTDOWN_SEND));
	if ((c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_RCV) && ep_is_open(&c->ep)) {
		/* The guest reads no more: neither do we, and the host's writes fail. */
		ep_shutdown(&c->ep, SHUT_RD);
		mq_free(&c->to_guest, &t->to_guest_held);
		data_del(t, c);
		c->ep.ev &= ~EP_READABLE;
	}
	guest_shutdown_apply(t, c);
}

/* Decode and check a guest header; @p plen is the payload the descriptors hold. */
static enum vsock_pkt_err guest_hdr(const struct conn_table *t,
				    const struct virtio_vsock_hdr *raw, size_t plen,
				    struct vsock_hdr *h)
{
	const struct vsock_pkt_policy pol = {
		.guest_cid = t->conf.guest_cid,
		.seqpacket = t->conf.seqpacket,
	};

	vsock_pkt_parse(raw, VSOCK_HDR_SIZE, h);
	/* The readable length clamps at what fits in 32 bits with the header. */
	return vsock_pkt_validate(h, (uint32_t)RTE_MIN(plen, (size_t)UINT32_MAX - VSOCK_HDR_SIZE) +
				  VSOCK_HDR_SIZE, &pol);
}

/* A packet for no connection: a new one, or an answer. */
static void guest_unknown(struct conn_table *t, const struct vsock_hdr *h)
{
	/* A native listener, another guest, or (for the host) hybrid vsock. */
	struct rte_ring *to = t->conf.route && (h->op == VIRTIO_VSOCK_OP_REQUEST ||
						h->dst_cid != VSOCK_HOST_CID) ?
			      t->conf.route(t->conf.guest_cid, h->dst_cid, h->dst_port) : NULL;

	if (h->dst_cid != VSOCK_HOST_CID && !to) {
		/*
		 * No shared group, or the other guest is not running. The RST comes from the
		 * CID asked for: a Linux guest ignores one from elsewhere.
		 */
		t->stats.proto_err[CONN_ERR_ROUTE]++;
		rst_queue_from(t, h, h->dst_cid);
	} else if (h->op == VIRTIO_VSOCK_OP_REQUEST) {
		guest_request(t, h, to);
	} else if (h->op != VIRTIO_VSOCK_OP_RST) {
		t->stats.proto_err[CONN_ERR_NO_CONN]++;
		rst_queue_from(t, h, h->dst_cid);
	}
}

int conn_from_guest(struct conn_table *t, const struct virtio_vsock_hdr *raw_hdr,
		    const struct iovec *payload, unsigned int iovcnt)
{
	struct vsock_hdr h;
	enum vsock_pkt_err err = guest_hdr(t, raw_hdr, iov_total(payload, iovcnt), &h);
	/* Set: this is the packet written in part, presented again (conn_from_guest_partial()). */
	struct conn *partial = t->partial;
	struct conn *c;
	int ret = 0;

	if (err != VSOCK_PKT_OK) {
		t->stats.pkt_err[err]++;
		rst_queue(t, &h);
		goto out;
	}
	c = conn_lookup(t, h.src_port, h.dst_port, h.dst_cid);
	if (!c) {
		guest_unknown(t, &h);
		goto out;
	}
	if (c->state == CS_DEAD)
		goto out;	/* our RST is on its way */
	if (h.op == VIRTIO_VSOCK_OP_RST) {
		/* conn_free() passes the reset on to a pipe's far side. */
		if (c->state == CS_REQUEST)
			t->stats.conns_refused++;
		else
			t->stats.conns_closed++;
		conn_free(t, c);
		goto out;
	}
	if (h.type != c->type || h.op == VIRTIO_VSOCK_OP_REQUEST) {
		conn_reset(t, c, CONN_ERR_STATE);
		goto out;
	}
	/* Every header carries the guest's receive window. */
	c->peer_buf_alloc = h.buf_alloc;
	c->peer_fwd_cnt = h.fwd_cnt;

	switch (h.op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->state == CS_REQUEST)
			guest_response(t, c);
		else
			conn_reset(t, c, CONN_ERR_STATE);
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		guest_shutdown(t, c, h.flags);
		break;
	case VIRTIO_VSOCK_OP_RW:
		ret = guest_rw(t, c, &h, payload, iovcnt);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		if (c->state == CS_ESTABLISHED)
			ctl_add(t, c, CTL_CREDIT);
		break;
	default:	/* CREDIT_UPDATE: recorded above */
		break;
	}
	if (c->state == CS_ESTABLISHED) {
		data_update(t, c);
		credit_resume(t, c);
	}
out:
	/* It ended otherwise than taken whole or waiting again: its connection cannot go on. */
	if (unlikely(partial != NULL) && ret != -EAGAIN && t->partial == partial)
		conn_from_guest_abandon(t);
	if (ret == 0)
		t->stats.from_guest_pkts++;
	return ret;
}

/*
 * What data_run() found: stream data of one connection, its payload the @p cnt pieces at
 * @p iov, the caller's own pieces when each packet's are exactly its payload (no copy of
 * them), else t->io.iov.
 */
struct data_run {
	struct conn *c;
	const struct iovec *iov;
	const struct iovec *next;	/* the caller's pieces after the run's packets */
	unsigned int n;		/* packets, from the first */
	unsigned int cnt;	/* pieces in iov */
	uint64_t total;		/* payload bytes */
};

/* The fields that make consecutive packets one run, compared before any is decoded. */
static inline bool same_flow(const struct virtio_vsock_hdr *a, const struct virtio_vsock_hdr *b)
{
	return a->op == b->op && a->src_port == b->src_port && a->dst_port == b->dst_port;
}

/* 8 header bytes at @p off, as they are on the wire. */
static inline uint64_t hdr_word(const struct virtio_vsock_hdr *h, size_t off)
{
	uint64_t w;

	memcpy(&w, (const char *)h + off, sizeof(w));
	return w;
}

/*
 * The header bytes that must repeat in a run: CIDs, ports (bytes 0-23), type, op and flags
 * (28-35), everything guest_hdr() checks but the length. (buf_alloc and fwd_cnt are the
 * guest's to say.)
 */
struct hdr_key {
	uint64_t w[4];
};

static inline struct hdr_key hdr_key(const struct virtio_vsock_hdr *h)
{
	RTE_BUILD_BUG_ON(offsetof(struct virtio_vsock_hdr, src_cid) != 0 ||
			 offsetof(struct virtio_vsock_hdr, dst_cid) != 8 ||
			 offsetof(struct virtio_vsock_hdr, src_port) != 16 ||
			 offsetof(struct virtio_vsock_hdr, dst_port) != 20 ||
			 offsetof(struct virtio_vsock_hdr, type) != 28 ||
			 offsetof(struct virtio_vsock_hdr, op) != 30 ||
			 offsetof(struct virtio_vsock_hdr, flags) != 32);
	return (struct hdr_key){ { hdr_word(h, 0), hdr_word(h, 8), hdr_word(h, 16),
				   hdr_word(h, 28) } };
}

/* Whether @p b's header has the key @p k, byte for byte. */
static inline bool hdr_key_eq(const struct hdr_key *k, const struct virtio_vsock_hdr *b)
{
	return ((k->w[0] ^ hdr_word(b, 0)) | (k->w[1] ^ hdr_word(b, 8)) |
		(k->w[2] ^ hdr_word(b, 16)) | (k->w[3] ^ hdr_word(b, 28))) == 0;
}

/*
 * The common case of conn_from_guest_run(): packets from the first that are each a valid
 * stream RW for the same established connection to the host, nothing queued before them,
 * within its credit and within one sendmsg(). True when at least two of them make a run.
 *
 * The first header is checked whole (guest_hdr()); a later one that repeats its CIDs, ports,
 * type, op and flags passes the same checks but those of its length, done here. Any other
 * ends the run, and conn_from_guest() checks it whole.
 */
static bool data_run(struct conn_table *t, const struct virtio_vsock_hdr *raw,
		     const struct iovec *iov, const unsigned int *iovcnt, unsigned int n,
		     struct data_run *r)
{
	const struct iovec *in = iov;
	const unsigned int max = t->io.n;
	unsigned int i, got, cnt = 0;
	uint64_t room, total = 0;
	bool own = false;	/* the pieces are in t->io.iov */
	struct hdr_key key;
	struct vsock_hdr h;
	struct conn *c;

	/* Interleaved connections and control packets cost this one compare. */
	if (n < 2 || le16toh(raw[0].op) != VIRTIO_VSOCK_OP_RW || !same_flow(&raw[0], &raw[1]))
		return false;
	if (guest_hdr(t, &raw[0], iov_total(iov, iovcnt[0]), &h) != VSOCK_PKT_OK ||
	    h.dst_cid != VSOCK_HOST_CID || h.type != VIRTIO_VSOCK_TYPE_STREAM)
		return false;
	c = conn_lookup(t, h.src_port, h.dst_port, VSOCK_HOST_CID);
	if (!c || c->state != CS_ESTABLISHED || c->type != h.type || c->to_host.nb ||
	    c == t->partial || (c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND))
		return false;
	/* A credit violation takes the slow path, which resets the connection. */
	room = from_guest_room(t, c);
	key = hdr_key(&raw[0]);
	n = RTE_MIN(n, (unsigned int)VSOCK_PMD_BURST_MAX);
	for (i = 0; i < n; iov += iovcnt[i], i++) {
		size_t plen = iov_total(iov, iovcnt[i]);
		uint32_t len = le32toh(raw[i].len);

		if (i > 0 && (!hdr_key_eq(&key, &raw[i]) || len > VSOCK_PKT_MAX_PAYLOAD ||
			      len > plen))
			break;
		if (total + len > room)
			break;
		if (!own && plen == len && cnt + iovcnt[i] <= max) {
			cnt += iovcnt[i];	/* its pieces, in place */
		} else {
			/* Cut to its length: the run goes on in t->io.iov. */
			if (!own) {
				memcpy(t->io.iov, in, cnt * sizeof(*in));
				own = true;
			}
			got = iov_slice(t->io.iov + cnt, max - cnt, iov, iovcnt[i], 0, len);
			if (got == 0 && len)
				break;	/* more pieces than one sendmsg() takes */
			cnt += got;
		}
		total += len;
	}
	r->c = c;
	r->iov = own ? t->io.iov : in;
	r->next = iov;
	r->n = i;
	r->cnt = cnt;
	r->total = total;
	return i > 1;
}

/* A run to its host end: returns the packets taken, as conn_from_guest_run(). */
static unsigned int data_run_to_host(struct conn_table *t, const struct data_run *r,
				     const struct virtio_vsock_hdr *raw, const struct iovec *iov,
				     const unsigned int *iovcnt)
{
	struct conn *c = r->c;
	const unsigned int n = r->n;
	uint64_t done = 0, written;
	const struct iovec *p;
	struct vsock_hdr h;
	unsigned int i;
	uint32_t moved;
	ssize_t w;

	/* The whole run in one call: the syscall is paid per burst, not per packet. */
	w = ep_writev(&c->ep, &t->io, r->iov, r->cnt, r->total, &t->to_host_held,
		      quota_left(t->to_host_held, t->dir_quota));
	if (w < 0) {
		conn_reset(t, c, w == -EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
		t->stats.from_guest_pkts += n;
		return n;
	}
	written = (uint64_t)w;
	c->fwd_cnt += (uint32_t)written;
	t->stats.host_written_bytes += written;
	if (written == r->total) {
		/* All of it: counted as one. */
		from_guest_count(t, c, (uint32_t)written);
		t->stats.from_guest_pkts += n;
		i = n;
	} else {
		/* What the host end did not take waits in to_host, as conn_from_guest() queues it. */
		for (i = 0, p = iov; i < n; p += iovcnt[i], i++) {
			/* Our copy of the header, as data_run() read it. */
			uint32_t len = le32toh(raw[i].len);
			uint32_t taken = (uint32_t)RTE_MIN(written - RTE_MIN(written, done),
							   (uint64_t)len);

			if (taken < len &&
			    to_host_copy(t, c, p, iovcnt[i], taken, len - taken, 0) < 0) {
				/* This packet comes again: its bytes written are not rewritten. */
				partial_set(t, c, 0, taken);
				break;
			}
			done += len;
			from_guest_count(t, c, len);
			t->stats.from_guest_pkts++;
		}
		if (i == 0)
			return 0;
	}
	/* Every header carries the guest's receive window: the last one taken is the newest. */
	vsock_pkt_parse(&raw[i - 1], VSOCK_HDR_SIZE, &h);
	c->peer_buf_alloc = h.buf_alloc;
	c->peer_fwd_cnt = h.fwd_cnt;
	/* What a pipe's rte_ring or quota did not take was queued: it goes on as soon as it can. */
	if (c->to_host.nb && (c->ep.ev & EP_WRITABLE) && !conn_flush(t, c, &moved))
		return i;
	credit_check(t, c);
	data_update(t, c);
	credit_resume(t, c);
	return i;
}

unsigned int conn_from_guest_run(struct conn_table *t, const struct virtio_vsock_hdr *raw,
				 const struct iovec *iov, const unsigned int *iovcnt,
				 unsigned int n)
{
	unsigned int i = 0, j, k, taken;
	struct data_run r;

	while (i < n) {
		if (data_run(t, &raw[i], iov, &iovcnt[i], n - i, &r)) {
			k = r.n;
			taken = data_run_to_host(t, &r, &raw[i], iov, &iovcnt[i]);
			if (taken == k) {
				iov = r.next;	/* the run's walk found where it ends */
				i += taken;
				continue;
			}
		} else {
			k = 1;
			taken = conn_from_guest(t, &raw[i], iov, iovcnt[i]) == -EAGAIN ? 0 : 1;
		}
		for (j = 0; j < taken; j++)
			iov += iovcnt[i + j];
		i += taken;
		if (taken < k)
			break;
	}
	return i;
}

/* ---- host -> guest ---- */

/*
 * A header to the guest, encoded with len 0: the packets of one connection in one burst
 * differ only in their lengths (and the last in a message's end), so it is built once and
 * hdr_put() stamps each length.
 */
static __rte_always_inline void
hdr_init(const struct conn_table *t, struct virtio_vsock_hdr *raw, uint64_t peer_cid,
	 uint32_t guest_port, uint32_t host_port, uint16_t type, uint16_t op, uint32_t flags,
	 uint32_t fwd_cnt)
{
	const struct vsock_flow f = {
		.src_cid = peer_cid,
		.dst_cid = t->conf.guest_cid,
		.src_port = host_port,
		.dst_port = guest_port,
		.type = type,
	};
	struct vsock_hdr h;

	vsock_pkt_build(&h, &f, op, 0, flags, t->conf.buf_alloc, fwd_cnt);
	vsock_pkt_encode(&h, raw);
}

/*
 * @p raw with its length @p len into the guest's buffer @p buf (@p cnt pieces): one 44-byte
 * copy when its first piece holds it whole, as in nearly every buffer.
 */
static __rte_always_inline void
hdr_put(struct virtio_vsock_hdr *raw, const struct iovec *buf, unsigned int cnt, uint32_t len)
{
	raw->len = htole32(len);
	if (likely(buf[0].iov_len >= sizeof(*raw)))
		memcpy(buf[0].iov_base, raw, sizeof(*raw));
	else
		iov_write(buf, cnt, 0, raw, sizeof(*raw));
}

/* A header into the guest's buffer @p buf, counted. */
static __rte_always_inline void
hdr_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int cnt, uint64_t peer_cid,
	     uint32_t guest_port, uint32_t host_port, uint16_t type, uint16_t op, uint32_t len,
	     uint32_t flags, uint32_t fwd_cnt)
{
	struct virtio_vsock_hdr raw;

	hdr_init(t, &raw, peer_cid, guest_port, host_port, type, op, flags, fwd_cnt);
	hdr_put(&raw, buf, cnt, len);
	t->stats.to_guest_pkts++;
	t->stats.to_guest_bytes += len;
}

static uint32_t ctl_to_guest(struct conn_table *t, struct conn *c, const struct iovec *buf,
			     unsigned int cnt)
{
	uint8_t bit = c->ctl_pending & (uint8_t)-c->ctl_pending;	/* lowest first */
	uint16_t op;
	uint32_t flags = 0;

	c->ctl_pending &= (uint8_t)~bit;
	switch (bit) {
	case CTL_RST:
		op = VIRTIO_VSOCK_OP_RST;
		break;
	case CTL_REQUEST:
		op = VIRTIO_VSOCK_OP_REQUEST;
		break;
	case CTL_RESPONSE:
		op = VIRTIO_VSOCK_OP_RESPONSE;
		break;
	case CTL_SHUTDOWN:
		op = VIRTIO_VSOCK_OP_SHUTDOWN;
		flags = c->shut_to_guest;
		break;
	default:
		op = VIRTIO_VSOCK_OP_CREDIT_UPDATE;
		break;
	}
	hdr_to_guest(t, buf, cnt, c->peer_cid, c->guest_port, c->host_port, c->type, op, 0,
		     flags, c->fwd_cnt);
	c->fwd_sent = c->fwd_cnt;
	if (bit == CTL_RST)
		conn_free(t, c);
	else if (!c->ctl_pending)
		ctl_del(t, c);
	return VSOCK_HDR_SIZE;
}

/*
 * RW packets with @p bytes of payload went to the guest: counted, and their headers carried
 * our credit, so no separate update is owed. Round-robin: to the back of the line, or out of it.
 */
static void data_sent(struct conn_table *t, struct conn *c, uint32_t bytes)
{
	c->fwd_sent = c->fwd_cnt;
	c->to_guest_cnt += bytes;
	if (c->ctl_pending == CTL_CREDIT)
		ctl_del(t, c);
	c->ctl_pending &= (uint8_t)~CTL_CREDIT;
	data_del(t, c);
	data_update(t, c);
}

static uint32_t data_to_guest(struct conn_table *t, struct conn *c, const struct iovec *buf,
			      unsigned int cnt, size_t cap)
{
	uint32_t n = RTE_MIN(sendable(c), (uint32_t)RTE_MIN(cap - VSOCK_HDR_SIZE,
							      (size_t)VSOCK_PKT_MAX_PAYLOAD));
	uint32_t done = 0, flags = 0;
	struct rte_mbuf *m;

	/* Copy up to n bytes; a SEQPACKET piece stops at its message's end. */
	for (m = c->to_guest.head; m && done < n; m = m->next) {
		uint32_t l = RTE_MIN((uint32_t)m->data_len, n - done);

		iov_write(buf, cnt, VSOCK_HDR_SIZE + done, rte_pktmbuf_mtod(m, void *), l);
		done += l;
		if (l == m->data_len && (m->packet_type & MQ_EOM)) {
			flags = m->packet_type & (MQ_EOM | MQ_EOR);
			break;
		}
	}
	mq_consume(&c->to_guest, done, &t->to_guest_held);
	hdr_to_guest(t, buf, cnt, c->peer_cid, c->guest_port, c->host_port, c->type,
		     VIRTIO_VSOCK_OP_RW, done, flags, c->fwd_cnt);
	data_sent(t, c, done);
	if (c->to_guest.bytes == 0)
		host_shutdown_check(t, c);
	credit_resume(t, c);
	return VSOCK_HDR_SIZE + done;
}

/* Attempts per conn_to_guest_burst() call that find a stream end with nothing for the guest. */
#define DIRECT_MISSES_MAX 8

/*
 * Read @p c's host end straight into the payload of buffers [0, @p n) (buffer i: the next
 * @p cnt[i] pieces of @p iov, @p cap[i] bytes): one read fills them in order, each up to its
 * room, within the guest's credit and TO_GUEST_MAX, the most one connection gets before the
 * next one's turn. The kernel's copy (a stream socket) or ours out of a pipe's mbufs is the
 * only one. A SEQPACKET pipe's read fills one buffer, as a message's end ends its packet
 * (EOM, and EOR as the far side marked it). Each buffer filled gets its header.
 * @return buffers filled (their lengths in @p len); 0 when nothing came, and then @p c is off
 *   the data list unless a first buffer too small for payload stopped it.
 */
static unsigned int direct_to_guest(struct conn_table *t, struct conn *c, const struct iovec *iov,
				    const unsigned int *cnt, const uint32_t *cap, unsigned int n,
				    uint32_t *len)
{
	uint32_t want = RTE_MIN(peer_credit(c), TO_GUEST_MAX), unasked = want, left, eom;
	struct iovec *out = t->io.iov;
	const unsigned int max = t->io.n;
	const struct iovec *b;
	unsigned int i, niov = 0;
	struct virtio_vsock_hdr raw;
	ssize_t got;

	if (c->state != CS_ESTABLISHED || !direct_ready(c)) {
		data_del(t, c);	/* its window or its end changed since it joined the line */
		return 0;
	}
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
		n = 1;
	/*
	 * Lay out the payload room of as many buffers as the read may fill; a buffer of more
	 * pieces than the read's vector has left gets what fits of it.
	 */
	for (i = 0, b = iov; i < n && unasked && niov < max; b += cnt[i], i++) {
		size_t l = RTE_MIN(RTE_MIN(cap[i] - VSOCK_HDR_SIZE, VSOCK_PKT_MAX_PAYLOAD),
				   unasked);

		/*
		 * Every Linux rx buffer is one piece holding header and payload: its room is
		 * what follows the header, within the piece, no piece walk for it.
		 */
		if (likely(cnt[i] == 1 && b->iov_len > VSOCK_HDR_SIZE)) {
			l = RTE_MIN(l, b->iov_len - VSOCK_HDR_SIZE);
			if (unlikely(l == 0))
				break;
			out[niov].iov_base = (char *)b->iov_base + VSOCK_HDR_SIZE;
			out[niov++].iov_len = l;
		} else {
			niov += iov_slice_part(&out[niov], max - niov, b, cnt[i], VSOCK_HDR_SIZE,
					       &l);
			if (l == 0)
				break;	/* no payload room */
		}
		len[i] = (uint32_t)l;
		unasked -= (uint32_t)l;
	}
	if (unasked == want)
		return 0;
	got = ep_readv(&c->ep, out, niov, want - unasked, &eom);
	if (got < 0) {
		conn_reset(t, c, CONN_ERR_HOST_IO);
		return 0;
	}
	t->stats.host_read_bytes += (uint64_t)got;
	/* A socket that brought bytes is the one an idle round reads first (conn_probe_host()). */
	if (got && !(c->ep.caps & EP_CAP_POLLED))
		t->probe_token = conn_token(t, c);
	/* A pipe's message end with no bytes before it in this read: an empty RW says it. */
	if (got == 0 && !eom) {
		data_update(t, c);	/* empty or ended: out of the line */
		host_shutdown_check(t, c);
		return 0;
	}
	/* One header for the run, its length stamped per buffer filled. */
	hdr_init(t, &raw, c->peer_cid, c->guest_port, c->host_port, c->type, VIRTIO_VSOCK_OP_RW,
		 0, c->fwd_cnt);
	for (i = 0, b = iov, left = (uint32_t)got; left > len[i]; b += cnt[i], i++) {
		hdr_put(&raw, b, cnt[i], len[i]);
		left -= len[i];
		len[i] += VSOCK_HDR_SIZE;
	}
	/* The last buffer filled, in part or whole: a message's end is there. */
	raw.flags = htole32(eom);
	hdr_put(&raw, b, cnt[i], left);
	len[i++] = VSOCK_HDR_SIZE + left;
	t->stats.to_guest_pkts += i;
	t->stats.to_guest_bytes += (uint64_t)got;
	data_sent(t, c, (uint32_t)got);
	/* Bytes may still wait and the guest has no room: its CREDIT_UPDATE resumes. */
	if ((c->ep.ev & EP_READABLE) && peer_credit(c) == 0)
		credit_stall(t, c);
	host_shutdown_check(t, c);
	return i;
}

/*
 * One packet owed to the guest into buffer @p buf (@p cnt pieces, @p cap bytes): a queued RST,
 * a control packet, or data queued in to_guest. @return its length, 0 when none of these is
 * owed (data a stream end has not read yet is direct_to_guest()'s).
 */
static uint32_t pkt_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int cnt,
			     uint32_t cap)
{
	struct conn *c;

	if (t->rst_count) {
		const struct rst_entry *e = &t->rst[t->rst_head];

		hdr_to_guest(t, buf, cnt, e->peer_cid, e->guest_port, e->host_port, e->type,
			     VIRTIO_VSOCK_OP_RST, 0, 0, 0);
		t->rst_head = (t->rst_head + 1) % RST_QUEUE_SIZE;
		t->rst_count--;
		return VSOCK_HDR_SIZE;
	}
	if (!TAILQ_EMPTY(&t->ctl))
		return ctl_to_guest(t, TAILQ_FIRST(&t->ctl), buf, cnt);
	c = TAILQ_FIRST(&t->data);
	if (c && c->to_guest.bytes && cap > VSOCK_HDR_SIZE)
		return data_to_guest(t, c, buf, cnt, cap);
	return 0;
}

unsigned int conn_to_guest_burst(struct conn_table *t, const struct iovec *iov,
				 const unsigned int *cnt, const uint32_t *cap, unsigned int n,
				 uint32_t *len)
{
	unsigned int i = 0, off = 0, misses = 0;

	while (i < n) {
		struct conn *c;
		unsigned int k;

		len[i] = pkt_to_guest(t, &iov[off], cnt[i], cap[i]);
		if (len[i]) {
			off += cnt[i++];
			continue;
		}
		c = TAILQ_FIRST(&t->data);
		if (!c || c->to_guest.bytes)
			break;	/* nothing owed, or a buffer too small for data */
		k = direct_to_guest(t, c, &iov[off], &cnt[i], &cap[i], n - i, &len[i]);
		if (k == 0) {
			/*
			 * Nothing came: the end was empty (an old edge), ended or failed, and
			 * left the data list; what it did may be owed now (SHUTDOWN, RST).
			 */
			if ((c->lists & L_DATA) || ++misses == DIRECT_MISSES_MAX)
				break;
			continue;
		}
		for (; k; k--)
			off += cnt[i++];
	}
	return i;
}

uint32_t conn_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int iovcnt)
{
	size_t total = iov_total(buf, iovcnt);
	uint32_t cap = (uint32_t)RTE_MIN(total, (size_t)UINT32_MAX), len;

	if (cap < VSOCK_HDR_SIZE)
		return 0;
	return conn_to_guest_burst(t, buf, &iovcnt, &cap, 1, &len) ? len : 0;
}
