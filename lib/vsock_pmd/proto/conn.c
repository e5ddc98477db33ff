/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock connections of one device, bridged to host Unix sockets (hybrid vsock).
 *
 * Data flows one way in each direction:
 * - guest -> host: conn_from_guest() writes payload straight to the host socket while it takes
 *   it; the rest waits in the connection's txq (mbufs) for EPOLLOUT. Our fwd_cnt counts bytes
 *   handed to the host socket, so the guest's credit only comes back as the host consumes.
 * - host -> guest: conn_poll_host() reads a host socket into the connection's rxq only up to
 *   the guest's credit, and conn_to_guest() hands rxq bytes out one rx buffer at a time.
 *
 * Work is driven by lists, never by scanning the table: the ctl list (replies owed to the
 * guest), the data list (rxq bytes and guest credit), the work list (host socket events to
 * serve) and the timer list (one timeout value, so appending keeps it sorted).
 * Host sockets are registered edge-triggered once; READABLE/WRITABLE remember an edge that
 * could not be served yet (no credit, no mbuf) until the obstacle goes away.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>

#include "conn.h"
#include "ep_ring.h"
#include "ep_sibling.h"
#include "ep_uds.h"

#define HOST_CID 2u	/* VMADDR_CID_HOST */

/* Host ports we hand out for host -> guest connections, as Firecracker: [2^30, 2^31). */
#define HOST_PORT_FIRST (1u << 30)
#define HOST_PORT_SPAN (1u << 30)

/* RSTs for packets without a connection, waiting for a guest rx buffer. */
#define RST_RING_SIZE 256

/* Host -> guest bytes queued per connection: guest credit bounds it too. */
#define RXQ_MAX (64u * 1024)
/* With a quota, a connection's host reads may always fill this many mbufs, whatever its share. */
#define RX_SHARE_MIN 2u
/* One read from a host socket; SEQPACKET messages up to this size (larger ones reset). */
#define READ_CHUNK (64u * 1024)

/* epoll events taken per conn_poll_host() call. */
#define EVENTS_MAX 64

/* mbuf->packet_type of our queue mbufs (they never meet a NIC): SEQPACKET message ends here. */
#define MB_EOM VIRTIO_VSOCK_SEQ_EOM
#define MB_EOR VIRTIO_VSOCK_SEQ_EOR

enum conn_state {
	CS_FREE,
	CS_LINE,	/* host connected, CONNECT line being read; not hashed yet */
	CS_REQUEST,	/* REQUEST owed/sent to the guest for a host CONNECT */
	CS_ESTABLISHED,
	CS_CLOSING,	/* we sent SHUTDOWN RCV|SEND, host socket closed; waiting for guest RST */
	CS_DEAD,	/* RST owed to the guest; freed once it is written */
	CS_ACCEPT_WAIT,	/* guest REQUEST on a ring: waiting for the far side to accept */
};

/* Replies owed to the guest (conn.ctl_pending), emitted in this order of bits. */
#define CTL_RST		(1u << 0)
#define CTL_REQUEST	(1u << 1)
#define CTL_RESPONSE	(1u << 2)
#define CTL_SHUTDOWN	(1u << 3)
#define CTL_CREDIT	(1u << 4)

/* conn.host: what the host socket last told us. */
#define H_READABLE	(1u << 0)
#define H_WRITABLE	(1u << 1)
#define H_EOF		(1u << 2)	/* read returned end of stream */
#define H_HUP		(1u << 3)	/* both directions shut: nothing can be written either */
#define H_RDHUP		(1u << 4)
#define H_WR_SHUT	(1u << 5)	/* we did shutdown(SHUT_WR) */

/* conn.lists: list membership. */
#define L_WORK	(1u << 0)
#define L_CTL	(1u << 1)
#define L_DATA	(1u << 2)
#define L_TIMER	(1u << 3)
#define L_QWAIT	(1u << 4)	/* on the quota list (work_link): waits for mbufs to read */

/* Ring connections served per conn_service_host() call, round-robin; mbufs per dequeue. */
#define RING_BUDGET 64
#define RING_BURST 32

struct conn_key {
	uint32_t guest_port;
	uint32_t host_port;
};

/* Connections to another guest are told apart by its CID too (conn_table.sib_hash). */
struct sib_key {
	uint32_t guest_port;
	uint32_t host_port;	/* the other guest's port */
	uint64_t peer_cid;
};

struct mq {
	struct rte_mbuf *head, *tail;
	uint32_t bytes;
	uint32_t nb;		/* mbufs */
};

struct conn {
	TAILQ_ENTRY(conn) work_link;
	TAILQ_ENTRY(conn) ctl_link;
	TAILQ_ENTRY(conn) data_link;
	TAILQ_ENTRY(conn) timer_link;
	uint64_t deadline;
	struct mq txq;		/* guest -> host, waiting for the host socket */
	struct mq rxq;		/* host -> guest, waiting for an rx buffer and credit */
	int fd;
	uint32_t gen;		/* bumped on free: stale epoll events are ignored */
	uint32_t guest_port;
	uint32_t host_port;
	uint16_t type;
	uint8_t state;
	uint8_t lists;
	uint8_t ctl_pending;
	uint8_t shut_to_guest;	/* SHUTDOWN flags owed or sent to the guest */
	uint8_t guest_shut;	/* SHUTDOWN flags received from the guest */
	uint8_t host;
	uint8_t stalled;	/* counted one credit stall, not over yet */
	uint8_t hashed;
	/* Our receive side (guest -> host). */
	uint32_t rx_cnt;	/* bytes received from the guest */
	uint32_t fwd_cnt;	/* of those, written to the host socket */
	uint32_t fwd_sent;	/* fwd_cnt in our last header to the guest */
	uint32_t tx_skip;	/* bytes of a packet written before it returned -EAGAIN */
	/* The guest's receive side (host -> guest). */
	uint32_t tx_cnt;	/* bytes sent to the guest */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
	struct ep_uds_line line;
	/* Ring endpoint (ep_ring.h): the host side is another guest or a host program. */
	TAILQ_ENTRY(conn) ring_link;
	struct ep_ring *ring;	/* NULL: the host side is fd */
	uint64_t peer_cid;	/* HOST_CID, or the other guest's CID */
	uint8_t ring_side;
	uint16_t ring_held;	/* mbufs we put in the ring that the far side has not taken */
};

/* Idle cost per connection, beyond its queued mbufs. */
_Static_assert(sizeof(struct conn) <= 256, "struct conn grew past 256 bytes");

TAILQ_HEAD(conn_list, conn);

struct rst_entry {
	uint64_t peer_cid;
	uint32_t guest_port;
	uint32_t host_port;
	uint16_t type;
};

struct conn_table {
	struct conn_table_conf conf;
	char uds_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct rte_hash *hash;
	struct rte_hash *sib_hash;	/* connections whose peer is another guest */
	int epfd;
	uint64_t timeout_tsc, line_timeout_tsc, connect_timeout_tsc;
	uint64_t now;		/* now_tsc of the current conn_poll_host() */
	uint32_t room;		/* payload bytes per mbuf */
	uint32_t next_port;	/* next host port offset for host -> guest connections */
	uint32_t nb_used;
	uint32_t nb_free;
	uint32_t *free_idx;
	struct conn *conns;
	struct conn_list work, ctl, data, timers;
	struct conn_list rings;		/* every ring connection, served round-robin */
	uint32_t nb_rings;
	/*
	 * mbufs held per direction, against half of conf.mbuf_quota each (dir_quota): rxq
	 * (host -> guest), and txq plus ring_held (guest -> host). Kept apart so that neither
	 * direction can starve the other: rxq drains into the guest's rx ring whatever the tx
	 * side waits for, which rules out a cycle of waits between two VMs.
	 */
	uint32_t rx_held, tx_held;
	uint32_t dir_quota;		/* UINT32_MAX without a quota */
	struct conn_list qwait;		/* host reads waiting for rx_held to drop */
	struct rst_entry rst[RST_RING_SIZE];
	uint32_t rst_head, rst_count;
	unsigned int scratch_n;
	struct iovec *iov;		/* scratch: scratch_n entries */
	struct rte_mbuf **mbufs;	/* scratch: scratch_n entries */
	struct conn_stats stats;
};

static uint32_t conn_idx(const struct conn_table *t, const struct conn *c)
{
	return (uint32_t)(c - t->conns);
}

/* ---- small helpers over iovecs and mbuf queues ---- */

static size_t iov_total(const struct iovec *iov, unsigned int cnt)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy @len bytes starting @off bytes into @iov to @dst. */
static void iov_read(void *dst, const struct iovec *iov, unsigned int cnt, size_t off,
		     size_t len)
{
	unsigned int i;

	for (i = 0; i < cnt && len; i++) {
		size_t n;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = RTE_MIN(iov[i].iov_len - off, len);
		memcpy(dst, (const char *)iov[i].iov_base + off, n);
		dst = (char *)dst + n;
		len -= n;
		off = 0;
	}
}

/* Copy @len bytes from @src to @off bytes into @iov (the caller checked the room). */
static void iov_write(const struct iovec *iov, unsigned int cnt, size_t off, const void *src,
		      size_t len)
{
	unsigned int i;

	for (i = 0; i < cnt && len; i++) {
		size_t n;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = RTE_MIN(iov[i].iov_len - off, len);
		memcpy((char *)iov[i].iov_base + off, src, n);
		src = (const char *)src + n;
		len -= n;
		off = 0;
	}
}

/* Describe @len bytes from @off into @in with at most @max entries of @out; 0 if it needs more. */
static unsigned int iov_slice(struct iovec *out, unsigned int max, const struct iovec *in,
			      unsigned int cnt, size_t off, size_t len)
{
	unsigned int i, n = 0;

	for (i = 0; i < cnt && len; i++) {
		size_t l;

		if (off >= in[i].iov_len) {
			off -= in[i].iov_len;
			continue;
		}
		if (n == max)
			return 0;
		l = RTE_MIN(in[i].iov_len - off, len);
		out[n].iov_base = (char *)in[i].iov_base + off;
		out[n].iov_len = l;
		n++;
		len -= l;
		off = 0;
	}
	return n;
}

/* Each mbuf in a queue also counts in @p held, the table's count for its direction. */
static void mq_push(struct mq *q, struct rte_mbuf *m, uint32_t *held)
{
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += m->data_len;
	q->nb++;
	(*held)++;
}

/* Drop @n bytes (at most q->bytes) from the head of @q. */
static void mq_consume(struct mq *q, uint32_t n, uint32_t *held)
{
	q->bytes -= n;
	while (n) {
		struct rte_mbuf *m = q->head;

		if (n < m->data_len) {
			m->data_off += n;
			m->data_len -= n;
			return;
		}
		n -= m->data_len;
		q->head = m->next;
		if (!q->head)
			q->tail = NULL;
		q->nb--;
		(*held)--;
		rte_pktmbuf_free_seg(m);
	}
}

static void mq_free(struct mq *q, uint32_t *held)
{
	struct rte_mbuf *m = q->head, *next;

	while (m) {
		next = m->next;
		rte_pktmbuf_free_seg(m);
		m = next;
	}
	*held -= q->nb;
	*q = (struct mq){ 0 };
}

/* ---- lists ---- */

static void work_add(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_QWAIT) {
		/* Whatever brought it here may free mbufs (a flush): serve it now. */
		c->lists &= ~L_QWAIT;
		TAILQ_REMOVE(&t->qwait, c, work_link);
	}
	if (!(c->lists & L_WORK)) {
		c->lists |= L_WORK;
		TAILQ_INSERT_TAIL(&t->work, c, work_link);
	}
}

/*
 * The mbuf quota. Each direction may hold dir_quota mbufs; on the host side each
 * connection reads up to its equal share of that (at least RX_SHARE_MIN), so that
 * connections whose guest does not read cannot take every mbuf from the others, and a VM
 * cannot take more than its share of the pool from the other VMs.
 */
static uint32_t quota_left(uint32_t held, uint32_t quota)
{
	return held >= quota ? 0 : quota - held;
}

/* mbufs a host read may add to @p c's rxq now: 0 when it is at its share. */
static uint32_t rx_share_left(const struct conn_table *t, const struct conn *c)
{
	uint32_t share;

	if (t->dir_quota == UINT32_MAX)
		return UINT32_MAX;
	share = RTE_MAX(t->dir_quota / RTE_MAX(t->nb_used, 1u), RX_SHARE_MIN);
	return quota_left(c->rxq.nb, share);
}

/* @p c's host read waits for the table's rx mbufs to drop under the quota. */
static void qwait_add(struct conn_table *t, struct conn *c)
{
	if (c->lists & (L_QWAIT | L_WORK))
		return;
	c->lists |= L_QWAIT;
	TAILQ_INSERT_TAIL(&t->qwait, c, work_link);
	t->stats.pool_empty++;
}

/* Readers waiting for the quota, back to work as far as mbufs came back (at most @p max). */
static unsigned int qwait_wake(struct conn_table *t, unsigned int max)
{
	unsigned int n = RTE_MIN(quota_left(t->rx_held, t->dir_quota), max), done = 0;

	while (done < n && !TAILQ_EMPTY(&t->qwait)) {
		work_add(t, TAILQ_FIRST(&t->qwait));
		done++;
	}
	return done;
}

static void ctl_add(struct conn_table *t, struct conn *c, uint8_t bit)
{
	c->ctl_pending |= bit;
	if (!(c->lists & L_CTL)) {
		c->lists |= L_CTL;
		TAILQ_INSERT_TAIL(&t->ctl, c, ctl_link);
	}
}

static void ctl_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_CTL) {
		c->lists &= ~L_CTL;
		TAILQ_REMOVE(&t->ctl, c, ctl_link);
	}
}

static void data_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_DATA) {
		c->lists &= ~L_DATA;
		TAILQ_REMOVE(&t->data, c, data_link);
	}
}

static void timer_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_TIMER) {
		c->lists &= ~L_TIMER;
		TAILQ_REMOVE(&t->timers, c, timer_link);
	}
}

/*
 * The timer of @p c's state, kept in deadline order. Timeouts of one length land at the
 * tail at once; a shorter one walks back only past the longer ones set less than the
 * difference ago.
 */
static void timer_set(struct conn_table *t, struct conn *c)
{
	uint64_t len = c->state == CS_LINE ? t->line_timeout_tsc :
		       c->state == CS_CLOSING ? t->timeout_tsc : t->connect_timeout_tsc;
	struct conn *after;

	timer_del(t, c);
	c->deadline = t->now + len;
	c->lists |= L_TIMER;
	after = TAILQ_LAST(&t->timers, conn_list);
	while (after && after->deadline > c->deadline)
		after = TAILQ_PREV(after, conn_list, timer_link);
	if (after)
		TAILQ_INSERT_AFTER(&t->timers, after, c, timer_link);
	else
		TAILQ_INSERT_HEAD(&t->timers, c, timer_link);
}

/* ---- credit ---- */

/* Bytes the guest can still take: peer_buf_alloc - (tx_cnt - peer_fwd_cnt), never negative. */
static uint32_t peer_credit(const struct conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

/* Bytes of rxq the guest may be sent now. */
static uint32_t sendable(const struct conn *c)
{
	return RTE_MIN(peer_credit(c), c->rxq.bytes);
}

/* Whether host_read() would read now: guest window open and room in rxq. */
static bool can_read(const struct conn *c)
{
	uint32_t credit = peer_credit(c);

	if (c->state != CS_ESTABLISHED || !(c->host & H_READABLE) || (c->host & H_EOF))
		return false;
	/* A socket is read one whole message at a time; a ring brings pieces with their ends. */
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET && !c->ring)
		return c->rxq.bytes == 0 && credit > 0;
	return credit > c->rxq.bytes && c->rxq.bytes < RXQ_MAX;
}

static void data_update(struct conn_table *t, struct conn *c)
{
	bool want = c->state == CS_ESTABLISHED && sendable(c) > 0;

	if (want && !(c->lists & L_DATA)) {
		c->lists |= L_DATA;
		TAILQ_INSERT_TAIL(&t->data, c, data_link);
	} else if (!want) {
		data_del(t, c);
	}
}

/*
 * The guest stops sending when it believes our buffer is full, and it learns about freed space
 * only from our headers. Tell it once half of what it believes it may send is gone and the host
 * has taken something since our last header, so a sender never stalls on stale credit.
 */
static void credit_check(struct conn_table *t, struct conn *c)
{
	uint32_t believed_used = c->rx_cnt - c->fwd_sent;

	if (c->fwd_cnt != c->fwd_sent && believed_used > t->conf.buf_alloc / 2 &&
	    c->state == CS_ESTABLISHED)
		ctl_add(t, c, CTL_CREDIT);
}

/* ---- connection life ---- */

static void ring_attach(struct conn_table *t, struct conn *c, struct ep_ring *p,
			unsigned int side)
{
	c->ring = p;
	c->ring_side = (uint8_t)side;
	ep_ring_set_waker(p, side, t->conf.waker);
	TAILQ_INSERT_TAIL(&t->rings, c, ring_link);
	t->nb_rings++;
}

/* Let go of the ring's far side, telling it @p how we ended (ep_ring_release()). */
static void ring_detach(struct conn_table *t, struct conn *c, uint32_t how)
{
	if (!c->ring)
		return;
	TAILQ_REMOVE(&t->rings, c, ring_link);
	t->nb_rings--;
	/* The last side to let go frees what is left in the ring. */
	t->tx_held -= c->ring_held;
	c->ring_held = 0;
	ep_ring_release(c->ring, c->ring_side, how);
	c->ring = NULL;
}

static struct conn *conn_alloc(struct conn_table *t, int fd)
{
	struct conn *c;
	struct epoll_event ev;
	uint32_t gen;

	if (t->nb_free == 0)
		return NULL;
	c = &t->conns[t->free_idx[--t->nb_free]];
	gen = c->gen;
	memset(c, 0, sizeof(*c));
	c->gen = gen;
	c->fd = fd;
	c->peer_cid = HOST_CID;
	ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.u64 = ((uint64_t)c->gen << 32) | (conn_idx(t, c) + 1);
	/* fd -1: a ring connection, which has no socket to watch. */
	if (fd >= 0 && epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		t->free_idx[t->nb_free++] = conn_idx(t, c);
		return NULL;
	}
	/* Edge-triggered: assume both ways ready until a syscall says otherwise. */
	c->host = H_READABLE | H_WRITABLE;
	t->nb_used++;
	return c;
}

static int conn_hash(struct conn_table *t, struct conn *c)
{
	struct conn_key k = { .guest_port = c->guest_port, .host_port = c->host_port };
	struct sib_key sk = { .guest_port = c->guest_port, .host_port = c->host_port,
			      .peer_cid = c->peer_cid };
	int ret = c->peer_cid == HOST_CID ? rte_hash_add_key_data(t->hash, &k, c) :
		  rte_hash_add_key_data(t->sib_hash, &sk, c);

	if (ret == 0)
		c->hashed = 1;
	return ret;
}

static void close_fd(struct conn *c)
{
	if (c->fd >= 0) {
		/* close() also removes it from the epoll set: we never dup these fds. */
		close(c->fd);
		c->fd = -1;
	}
}

static void conn_free(struct conn_table *t, struct conn *c)
{
	if (c->hashed) {
		struct conn_key k = { .guest_port = c->guest_port, .host_port = c->host_port };
		struct sib_key sk = { .guest_port = c->guest_port, .host_port = c->host_port,
				      .peer_cid = c->peer_cid };

		if (c->peer_cid == HOST_CID)
			rte_hash_del_key(t->hash, &k);
		else
			rte_hash_del_key(t->sib_hash, &sk);
	}
	/* Unless it ended cleanly before, the far side of a ring sees a reset. */
	ring_detach(t, c, EP_RING_RST);
	if (c->lists & L_WORK)
		TAILQ_REMOVE(&t->work, c, work_link);
	else if (c->lists & L_QWAIT)
		TAILQ_REMOVE(&t->qwait, c, work_link);
	ctl_del(t, c);
	data_del(t, c);
	timer_del(t, c);
	close_fd(c);
	mq_free(&c->txq, &t->tx_held);
	mq_free(&c->rxq, &t->rx_held);
	c->state = CS_FREE;
	c->lists = 0;
	c->hashed = 0;
	c->gen++;
	t->free_idx[t->nb_free++] = conn_idx(t, c);
	t->nb_used--;
}

/*
 * End a connection with an RST to the guest: the host socket closes now, the slot lives on
 * (CS_DEAD) until the RST is written so that the guest learns about it even when the stand-alone
 * RST ring is full, and so that a late packet of this connection is not mistaken for a new one.
 */
static void conn_end(struct conn_table *t, struct conn *c)
{
	close_fd(c);
	/* A clean end for the far side: it reads what we sent, then EOF (unless reset first). */
	ring_detach(t, c, EP_RING_SHUT_SEND | EP_RING_SHUT_RCV);
	mq_free(&c->txq, &t->tx_held);
	mq_free(&c->rxq, &t->rx_held);
	data_del(t, c);
	timer_del(t, c);
	c->state = CS_DEAD;
	c->ctl_pending = 0;
	ctl_add(t, c, CTL_RST);
}

static void conn_reset(struct conn_table *t, struct conn *c, enum conn_err why)
{
	if (c->ring)
		ep_ring_set(c->ring, c->ring_side, EP_RING_RST);
	t->stats.proto_err[why]++;
	t->stats.conns_reset++;
	conn_end(t, c);
}

/*
 * RST for a packet that has no connection (or must not get one), from @p peer_cid: the
 * guest it was for when that guest is reachable, so that the sender's socket recognises it.
 */
static void rst_queue_from(struct conn_table *t, const struct vsock_hdr *h, uint64_t peer_cid)
{
	struct rst_entry *e;

	if (h->op == VIRTIO_VSOCK_OP_RST)
		return;
	if (t->rst_count == RST_RING_SIZE) {
		t->stats.rst_dropped++;
		return;
	}
	e = &t->rst[(t->rst_head + t->rst_count++) % RST_RING_SIZE];
	e->peer_cid = peer_cid;
	e->guest_port = h->src_port;
	e->host_port = h->dst_port;
	e->type = h->type;
}

/* The host answers everything else, malformed or unroutable packets included. */
static void rst_queue(struct conn_table *t, const struct vsock_hdr *h)
{
	rst_queue_from(t, h, HOST_CID);
}

/* Tell the guest what the host side did, once the data before it is delivered. */
static void host_shutdown_check(struct conn_table *t, struct conn *c)
{
	uint8_t want = 0, add;

	if (c->state != CS_ESTABLISHED)
		return;
	if ((c->host & H_EOF) && c->rxq.bytes == 0)
		want |= VIRTIO_VSOCK_SHUTDOWN_SEND;
	/* A ring's far side that reads no more says so at once, not only after its EOF. */
	if ((c->host & H_HUP) && ((want & VIRTIO_VSOCK_SHUTDOWN_SEND) || c->ring))
		want |= VIRTIO_VSOCK_SHUTDOWN_RCV;
	add = want & ~c->shut_to_guest;
	if (!add)
		return;
	c->shut_to_guest |= add;
	ctl_add(t, c, CTL_SHUTDOWN);
	if (c->shut_to_guest == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)) {
		/* The host is gone both ways: only the guest's RST is left to wait for. */
		c->state = CS_CLOSING;
		close_fd(c);
		ring_detach(t, c, EP_RING_SHUT_SEND | EP_RING_SHUT_RCV);
		mq_free(&c->txq, &t->tx_held);
		timer_set(t, c);
	}
}

/* The guest's SHUTDOWN flags, applied once the bytes queued before them reached the host. */
static void guest_shutdown_apply(struct conn_table *t, struct conn *c)
{
	if (c->state != CS_ESTABLISHED || c->txq.bytes)
		return;
	if (c->guest_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)) {
		/* Guest close(): the host reads EOF, the guest gets the RST it waits for. */
		t->stats.conns_closed++;
		conn_end(t, c);
		return;
	}
	if ((c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) && !(c->host & H_WR_SHUT)) {
		if (c->ring)
			ep_ring_set(c->ring, c->ring_side, EP_RING_SHUT_SEND);
		else
			shutdown(c->fd, SHUT_WR);
		c->host |= H_WR_SHUT;
	}
}

/* ---- ring endpoints (ep_ring.h): the host side is another guest or a host program ---- */

static struct rte_mbuf *mq_pop(struct mq *q)
{
	struct rte_mbuf *m = q->head;

	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= m->data_len;
	q->nb--;
	m->next = NULL;
	m->nb_segs = 1;
	m->pkt_len = m->data_len;
	return m;
}

/* The far side took some of the mbufs we put in the ring: they are no longer ours. */
static void ring_uncharge(struct conn_table *t, struct conn *c)
{
	/* Only we enqueue, so the count can only have dropped since our last write. */
	uint32_t in = c->ring_held ? rte_ring_count(c->ring->r[c->ring_side]) : 0;

	if (in < c->ring_held) {
		t->tx_held -= c->ring_held - in;
		c->ring_held = (uint16_t)in;
	}
}

/*
 * Queued guest bytes into the ring, as far as it has room: a host socket's write. The mbufs
 * move whole, no copy. A far side that reads no more gets nothing: the bytes are dropped as
 * a shut socket would, so that the guest's credit keeps flowing until it sees our SHUTDOWN.
 */
static bool ring_write(struct conn_table *t, struct conn *c)
{
	struct rte_ring *out = c->ring->r[c->ring_side];
	bool drop = ep_ring_flags(c->ring, !c->ring_side) & (EP_RING_SHUT_RCV | EP_RING_CLOSED);
	unsigned int room = drop ? UINT_MAX : rte_ring_free_count(out);
	bool moved = false;

	while (c->txq.head && room) {
		struct rte_mbuf *m = mq_pop(&c->txq);

		c->fwd_cnt += m->data_len;
		t->stats.host_tx_bytes += m->data_len;
		/* In the ring it still counts against our quota, until the far side takes it. */
		if (drop) {
			rte_pktmbuf_free_seg(m);
			t->tx_held--;
		} else {
			rte_ring_sp_enqueue(out, m);	/* single producer: room was counted */
			c->ring_held++;
		}
		room--;
		moved = true;
	}
	if (moved) {
		if (!drop)
			ep_ring_wake(c->ring, !c->ring_side);
		credit_check(t, c);
	}
	guest_shutdown_apply(t, c);
	return moved;
}

/* One mbuf (chain) from the far side into rxq, segment by segment. */
static void rxq_take(struct conn_table *t, struct conn *c, struct rte_mbuf *m)
{
	while (m) {
		struct rte_mbuf *next = m->next;
		struct rte_mbuf *tail = c->rxq.tail;

		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		if (m->data_len) {
			t->stats.host_rx_bytes += m->data_len;
			mq_push(&c->rxq, m, &t->rx_held);
		} else {
			/* An empty last piece still ends the message before it. */
			if ((m->packet_type & MB_EOM) && tail && !(tail->packet_type & MB_EOM))
				tail->packet_type |= m->packet_type & (MB_EOM | MB_EOR);
			rte_pktmbuf_free_seg(m);
		}
		m = next;
	}
}

/* mbufs from the ring into rxq within the guest's credit: a host socket's read. */
static bool ring_read(struct conn_table *t, struct conn *c)
{
	struct rte_ring *in = c->ring->r[!c->ring_side];
	struct rte_mbuf *m[RING_BURST];
	bool moved = false;

	for (;;) {
		/* Within the connection's share of the quota and what is left of it. */
		uint32_t lim = RTE_MIN(RTE_MIN(rx_share_left(t, c),
					       quota_left(t->rx_held, t->dir_quota)),
				       (uint32_t)RING_BURST);
		unsigned int i, n;

		if (!can_read(c) || lim == 0)
			break;
		n = rte_ring_sc_dequeue_burst(in, (void **)m, lim, NULL);
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
			rxq_take(t, c, m[i]);
		moved = true;
	}
	if (moved) {
		/* Room in the ring: a far side whose queue waits for it may go on. */
		ep_ring_wake(c->ring, !c->ring_side);
		data_update(t, c);
	}
	/*
	 * More than the guest's window is waiting (a burst may bring more than it): the ring
	 * backs up, and so does the far side, until the guest's credit update.
	 */
	if (c->rxq.bytes > peer_credit(c) || (!can_read(c) && !rte_ring_empty(in))) {
		if (!c->stalled)
			t->stats.credit_stalls++;
		c->stalled = 1;
	} else {
		c->stalled = 0;
	}
	return moved;
}

/* Serve one ring connection: the far side's answer, data both ways, its shutdowns. */
static bool ring_service(struct conn_table *t, struct conn *c)
{
	/* Acquire: whatever the far side enqueued before setting these flags is visible. */
	uint32_t peer = ep_ring_flags(c->ring, !c->ring_side);
	bool done = false;

	ring_uncharge(t, c);
	if (c->state == CS_ACCEPT_WAIT) {
		if (peer & (EP_RING_RST | EP_RING_CLOSED)) {
			t->stats.conns_refused++;
			conn_end(t, c);
			return true;
		}
		if (!(peer & EP_RING_ACCEPTED))
			return false;
		timer_del(t, c);
		c->state = CS_ESTABLISHED;
		t->stats.conns_opened++;
		ctl_add(t, c, CTL_RESPONSE);
		done = true;
	}
	if (c->state != CS_ESTABLISHED)
		return done;
	if (peer & EP_RING_RST) {
		t->stats.conns_reset++;
		conn_end(t, c);
		return true;
	}
	if (c->txq.bytes)
		done |= ring_write(t, c);
	if (c->state != CS_ESTABLISHED || !c->ring)
		return true;
	done |= ring_read(t, c);
	/* Its shutdowns, once what it sent before them is all read. */
	if ((peer & (EP_RING_SHUT_RCV | EP_RING_CLOSED)) && !(c->host & H_HUP)) {
		c->host |= H_HUP;
		host_shutdown_check(t, c);
		done = true;
	}
	if (c->ring && (peer & EP_RING_SHUT_SEND) && !(c->host & H_EOF) &&
	    rte_ring_empty(c->ring->r[!c->ring_side])) {
		c->host |= H_EOF;
		host_shutdown_check(t, c);
		done = true;
	}
	return done;
}

/*
 * The far side of every ring connection is polled, not signalled: a few loads each. At most
 * RING_BUDGET of them per call, taken from the front and put at the back.
 */
static unsigned int ring_poll(struct conn_table *t, uint32_t max)
{
	unsigned int i, work = 0;

	unsigned int n = RTE_MIN(t->nb_rings, max);

	for (i = 0; i < n && !TAILQ_EMPTY(&t->rings); i++) {
		struct conn *c = TAILQ_FIRST(&t->rings);

		TAILQ_REMOVE(&t->rings, c, ring_link);
		TAILQ_INSERT_TAIL(&t->rings, c, ring_link);
		work += ring_service(t, c);
	}
	return work;
}

/* Connections other guests or host programs opened to our guest: each becomes a REQUEST. */
static unsigned int ring_accept(struct conn_table *t, unsigned int budget)
{
	unsigned int done = 0;
	struct ep_ring *p;

	while (done < budget && t->conf.incoming &&
	       rte_ring_sc_dequeue(t->conf.incoming, (void **)&p) == 0) {
		struct sib_key sk = { .guest_port = p->dst_port, .host_port = p->src_port,
				      .peer_cid = p->src_cid };
		struct conn_key k = { .guest_port = p->dst_port, .host_port = p->src_port };
		struct conn *c;
		bool taken;

		done++;
		taken = p->src_cid == HOST_CID ? rte_hash_lookup(t->hash, &k) >= 0 :
			rte_hash_lookup(t->sib_hash, &sk) >= 0;
		if (taken || t->conf.no_guest || p->dst_cid != t->conf.guest_cid ||
		    (p->type == VIRTIO_VSOCK_TYPE_SEQPACKET && !t->conf.seqpacket) ||
		    (ep_ring_flags(p, 0) & (EP_RING_RST | EP_RING_CLOSED))) {
			t->stats.conns_refused++;
			ep_ring_release(p, 1, EP_RING_RST);
			continue;
		}
		c = conn_alloc(t, -1);
		if (!c) {
			t->stats.table_full++;
			ep_ring_release(p, 1, EP_RING_RST);
			continue;
		}
		c->guest_port = p->dst_port;
		c->host_port = p->src_port;
		c->peer_cid = p->src_cid;
		c->type = p->type;
		if (conn_hash(t, c) < 0) {
			conn_free(t, c);
			ep_ring_release(p, 1, EP_RING_RST);
			continue;
		}
		ring_attach(t, c, p, 1);
		c->state = CS_REQUEST;
		timer_set(t, c);
		ctl_add(t, c, CTL_REQUEST);
	}
	return done;
}

/* A guest REQUEST for another guest or a native listener: hand it over on @p to. */
static void guest_request_ring(struct conn_table *t, const struct vsock_hdr *h,
			       struct rte_ring *to)
{
	struct ep_ring *p = t->nb_free ? ep_ring_alloc() : NULL;
	struct conn *c;

	if (!p) {
		if (!t->nb_free)
			t->stats.table_full++;
		t->stats.conns_refused++;
		rst_queue_from(t, h, h->dst_cid);
		return;
	}
	/* The source is the guest's own CID: vsock_pkt_validate() refused any other. */
	p->src_cid = t->conf.guest_cid;
	p->src_port = h->src_port;
	p->dst_cid = h->dst_cid;
	p->dst_port = h->dst_port;
	p->type = h->type;
	c = conn_alloc(t, -1);
	c->guest_port = h->src_port;
	c->host_port = h->dst_port;
	c->peer_cid = h->dst_cid;
	c->type = h->type;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	ring_attach(t, c, p, 0);
	/* The enqueue publishes p's fields to the side that dequeues it. */
	if (conn_hash(t, c) < 0 || rte_ring_mp_enqueue(to, p) < 0) {
		ep_ring_release(p, 1, EP_RING_RST);
		conn_free(t, c);
		t->stats.conns_refused++;
		rst_queue_from(t, h, h->dst_cid);
		return;
	}
	c->state = CS_ACCEPT_WAIT;
	timer_set(t, c);
	/* The other guest's worker may sleep. */
	ep_sibling_wake(h->dst_cid);
}

/* ---- guest -> host ---- */

/* Write queued guest bytes to the host socket. Returns false when the connection was reset. */
static bool txq_flush(struct conn_table *t, struct conn *c)
{
	bool seq = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET;

	while (c->txq.bytes && (c->host & H_WRITABLE)) {
		struct msghdr mh = { .msg_iov = t->iov };
		struct rte_mbuf *m;
		size_t want = 0;
		ssize_t n;

		bool whole = !seq;

		for (m = c->txq.head; m && mh.msg_iovlen < t->scratch_n; m = m->next) {
			t->iov[mh.msg_iovlen].iov_base = rte_pktmbuf_mtod(m, void *);
			t->iov[mh.msg_iovlen++].iov_len = m->data_len;
			want += m->data_len;
			/* SEQPACKET: exactly one complete message per sendmsg(). */
			if (m->packet_type & MB_EOM) {
				whole = true;
				break;
			}
		}
		if (!whole)
			break;	/* the rest of the message is still in the guest */
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->host &= ~H_WRITABLE;
				break;
			}
			if (errno == EINTR)
				continue;
			conn_reset(t, c, errno == EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
			return false;
		}
		mq_consume(&c->txq, (uint32_t)n, &t->tx_held);
		c->fwd_cnt += (uint32_t)n;
		t->stats.host_tx_bytes += (uint64_t)n;
		if ((size_t)n < want)
			c->host &= ~H_WRITABLE;
	}
	credit_check(t, c);
	guest_shutdown_apply(t, c);
	return true;
}

/* Copy @len bytes at @off of the guest payload to the txq. -EAGAIN: no mbuf, nothing queued. */
static int txq_copy(struct conn_table *t, struct conn *c, const struct iovec *p, unsigned int cnt,
		    size_t off, uint32_t len, uint32_t eom_flags)
{
	struct rte_mbuf *tail = c->txq.tail;
	uint32_t in_tail = 0, left, nb, i;

	/* Fill the tail mbuf first, unless it ends a message. */
	if (tail && !(tail->packet_type & MB_EOM))
		in_tail = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(tail), len);
	left = len - in_tail;
	nb = (left + t->room - 1) / t->room;
	/* Past the quota; a packet larger than all of it may still be queued alone. */
	if (nb > t->scratch_n || (nb > quota_left(t->tx_held, t->dir_quota) && t->tx_held) ||
	    (nb && rte_pktmbuf_alloc_bulk(t->conf.pool, t->mbufs, nb) != 0)) {
		t->stats.pool_empty++;
		return -EAGAIN;
	}
	if (in_tail) {
		iov_read(rte_pktmbuf_mtod_offset(tail, char *, tail->data_len), p, cnt, off,
			 in_tail);
		tail->data_len += in_tail;
		c->txq.bytes += in_tail;
		off += in_tail;
	}
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = t->mbufs[i];
		uint32_t l = RTE_MIN(left, t->room);

		iov_read(rte_pktmbuf_mtod(m, char *), p, cnt, off, l);
		m->data_len = (uint16_t)l;
		m->pkt_len = l;
		mq_push(&c->txq, m, &t->tx_held);
		off += l;
		left -= l;
	}
	/* An empty last piece ends the message queued before it, if there is one. */
	if (eom_flags && c->txq.tail && (len || !(c->txq.tail->packet_type & MB_EOM)))
		c->txq.tail->packet_type |= eom_flags;
	return 0;
}

/* Try to write @len payload bytes at @off to the host socket at once; returns bytes written. */
static ssize_t direct_write(struct conn_table *t, struct conn *c, const struct iovec *p,
			    unsigned int cnt, size_t off, uint32_t len)
{
	struct msghdr mh = { .msg_iov = t->iov };
	ssize_t n;

	mh.msg_iovlen = iov_slice(t->iov, t->scratch_n, p, cnt, off, len);
	if (mh.msg_iovlen == 0)
		return 0;
	do {
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			c->host &= ~H_WRITABLE;
			return 0;
		}
		if (errno == EMSGSIZE)
			return -EMSGSIZE;
		return -EIO;
	}
	if ((uint32_t)n < len)
		c->host &= ~H_WRITABLE;
	return n;
}

static int guest_rw(struct conn_table *t, struct conn *c, const struct vsock_hdr *h,
		    const struct iovec *p, unsigned int cnt)
{
	bool seq = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	uint32_t eom = seq ? h->flags & VIRTIO_VSOCK_SEQ_EOM : 0;
	uint32_t off = c->tx_skip;
	int ret;

	if (c->state == CS_CLOSING)
		return 0;	/* raced with our SHUTDOWN: the host is gone */
	if (c->state != CS_ESTABLISHED || (c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND)) {
		conn_reset(t, c, CONN_ERR_STATE);
		return 0;
	}
	/* buf_used + len <= buf_alloc, as the guest itself must check before sending. */
	if (h->len > t->conf.buf_alloc - (c->rx_cnt + off - c->fwd_cnt)) {
		conn_reset(t, c, CONN_ERR_CREDIT);
		return 0;
	}
	/*
	 * Straight from guest memory when nothing is queued before it. A SEQPACKET message goes
	 * out whole or not at all, so only a complete one (EOM, nothing of it queued) can.
	 */
	if (!c->ring && c->txq.bytes == 0 && h->len > off && (!seq || eom)) {
		ssize_t n = direct_write(t, c, p, cnt, off, h->len - off);

		if (n < 0) {
			conn_reset(t, c, n == -EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
			return 0;
		}
		off += (uint32_t)n;
		c->fwd_cnt += (uint32_t)n;
		t->stats.host_tx_bytes += (uint64_t)n;
	}
	if (off < h->len || (seq && eom && c->txq.bytes)) {
		/* EOR too: a ring's far side (another guest) hands it on as MSG_EOR. */
		ret = txq_copy(t, c, p, cnt, off, h->len - off,
			       eom ? h->flags & (MB_EOM | MB_EOR) : 0);
		if (ret < 0) {
			/* Stream bytes already written must not be written twice on the retry. */
			c->tx_skip = off;
			return ret;
		}
	}
	c->tx_skip = 0;
	c->rx_cnt += h->len;
	t->stats.rx_bytes += h->len;
	/* A message just completed in txq goes out now if the socket has room. */
	/* A ring takes the mbufs as they are; a socket a completed message, if it has room. */
	if (c->ring) {
		ring_write(t, c);
		return 0;
	}
	if (seq && eom && c->txq.bytes && (c->host & H_WRITABLE) && !txq_flush(t, c))
		return 0;
	credit_check(t, c);
	return 0;
}

static void guest_request(struct conn_table *t, const struct vsock_hdr *h)
{
	struct conn *c;
	int fd;

	if (t->nb_free == 0) {
		t->stats.table_full++;
		t->stats.conns_refused++;
		rst_queue(t, h);
		return;
	}
	fd = ep_uds_connect(t->uds_path, h->dst_port, h->type == VIRTIO_VSOCK_TYPE_SEQPACKET);
	if (fd < 0) {
		t->stats.conns_refused++;
		rst_queue(t, h);
		return;
	}
	c = conn_alloc(t, fd);
	if (!c) {
		close(fd);
		t->stats.conns_refused++;
		rst_queue(t, h);
		return;
	}
	c->guest_port = h->src_port;
	c->host_port = h->dst_port;
	c->type = h->type;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	if (conn_hash(t, c) < 0) {
		conn_free(t, c);
		t->stats.conns_refused++;
		rst_queue(t, h);
		return;
	}
	c->state = CS_ESTABLISHED;
	t->stats.conns_opened++;
	ctl_add(t, c, CTL_RESPONSE);
}

/* The guest accepted a host CONNECT: answer the host program, start the stream. */
static void guest_response(struct conn_table *t, struct conn *c)
{
	char ok[EP_UDS_OK_MAX];
	size_t len = ep_uds_format_ok(ok, c->host_port);
	ssize_t n;

	timer_del(t, c);
	if (c->ring) {
		/* The far side learns it from the flag; data may follow at once. */
		ep_ring_set(c->ring, c->ring_side, EP_RING_ACCEPTED);
		c->state = CS_ESTABLISHED;
		t->stats.conns_opened++;
		data_update(t, c);
		return;
	}
	/* A fresh socket's send buffer is empty: a short write means the host program is gone. */
	n = send(c->fd, ok, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)len) {
		conn_reset(t, c, CONN_ERR_HOST_IO);
		return;
	}
	c->state = CS_ESTABLISHED;
	t->stats.conns_opened++;
	/* Bytes sent after the CONNECT line may wait in rxq; the guest's credit is known now. */
	data_update(t, c);
	host_shutdown_check(t, c);
	if (c->host & (H_READABLE | H_WRITABLE))
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
	if ((c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_RCV) && (c->fd >= 0 || c->ring)) {
		/* The guest reads no more: neither do we, and the host's writes fail. */
		if (c->ring)
			ep_ring_set(c->ring, c->ring_side, EP_RING_SHUT_RCV);
		else
			shutdown(c->fd, SHUT_RD);
		mq_free(&c->rxq, &t->rx_held);
		data_del(t, c);
		c->host &= ~H_READABLE;
	}
	guest_shutdown_apply(t, c);
}

void conn_table_set_seqpacket(struct conn_table *t, bool on)
{
	t->conf.seqpacket = on;
}

void conn_table_set_guest(struct conn_table *t, bool attached)
{
	t->conf.no_guest = !attached;
}

int conn_from_guest(struct conn_table *t, const struct virtio_vsock_hdr *raw_hdr,
		    const struct iovec *payload, unsigned int iovcnt)
{
	const struct vsock_pkt_policy pol = {
		.guest_cid = t->conf.guest_cid,
		.seqpacket = t->conf.seqpacket,
	};
	size_t plen = iov_total(payload, iovcnt);
	struct conn_key k;
	struct sib_key sk;
	struct vsock_hdr h;
	enum vsock_pkt_err err;
	struct conn *c;
	void *data;
	int ret = 0;

	vsock_pkt_parse(raw_hdr, VSOCK_HDR_SIZE, &h);
	err = vsock_pkt_validate(&h, (uint32_t)RTE_MIN(plen, (size_t)UINT32_MAX - VSOCK_HDR_SIZE) +
				 VSOCK_HDR_SIZE, &pol);
	if (err != VSOCK_PKT_OK) {
		t->stats.pkt_err[err]++;
		rst_queue(t, &h);
		goto out;
	}
	k.guest_port = h.src_port;
	k.host_port = h.dst_port;
	sk = (struct sib_key){ .guest_port = h.src_port, .host_port = h.dst_port,
			       .peer_cid = h.dst_cid };
	if ((h.dst_cid == HOST_CID ? rte_hash_lookup_data(t->hash, &k, &data) :
	     rte_hash_lookup_data(t->sib_hash, &sk, &data)) < 0) {
		/* A native listener, another guest, or (for the host) hybrid vsock. */
		struct rte_ring *to = t->conf.route && (h.op == VIRTIO_VSOCK_OP_REQUEST ||
							h.dst_cid != HOST_CID) ?
				      t->conf.route(t->conf.guest_cid, h.dst_cid, h.dst_port) :
				      NULL;

		if (h.dst_cid != HOST_CID && !to) {
			/*
			 * No shared group, or the other guest is not running. The RST comes
			 * from the CID asked for: a Linux guest ignores one from elsewhere.
			 */
			t->stats.proto_err[CONN_ERR_ROUTE]++;
			rst_queue_from(t, &h, h.dst_cid);
		} else if (h.op == VIRTIO_VSOCK_OP_REQUEST) {
			if (to)
				guest_request_ring(t, &h, to);
			else
				guest_request(t, &h);
		} else if (h.op != VIRTIO_VSOCK_OP_RST) {
			t->stats.proto_err[CONN_ERR_NO_CONN]++;
			rst_queue_from(t, &h, h.dst_cid);
		}
		goto out;
	}
	c = data;
	if (c->state == CS_DEAD)
		goto out;	/* our RST is on its way */
	if (h.op == VIRTIO_VSOCK_OP_RST) {
		/* conn_free() passes the reset on to a ring's far side. */
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
		/* New credit may unblock a read the guest's window had stopped. */
		if (can_read(c)) {
			c->stalled = 0;
			work_add(t, c);
		}
	}
out:
	if (ret == 0)
		t->stats.rx_pkts++;
	return ret;
}

/*
 * The common case of conn_from_guest_run(): every packet a valid stream RW for the same
 * established connection, nothing queued before them. @p lens gets each payload length.
 * Returns that connection, or NULL for the packet-by-packet path.
 */
static struct conn *run_conn(struct conn_table *t, const struct virtio_vsock_hdr *raw,
			     const struct iovec *iov, const unsigned int *iovcnt, unsigned int n,
			     uint32_t *lens)
{
	const struct vsock_pkt_policy pol = {
		.guest_cid = t->conf.guest_cid,
		.seqpacket = t->conf.seqpacket,
	};
	struct conn *c = NULL;
	uint64_t queued = 0;
	unsigned int i;

	for (i = 0; i < n; iov += iovcnt[i], i++) {
		size_t plen = iov_total(iov, iovcnt[i]);
		struct conn_key k;
		struct vsock_hdr h;
		void *data;

		vsock_pkt_parse(&raw[i], VSOCK_HDR_SIZE, &h);
		if (vsock_pkt_validate(&h, (uint32_t)RTE_MIN(plen, (size_t)UINT32_MAX -
				       VSOCK_HDR_SIZE) + VSOCK_HDR_SIZE, &pol) != VSOCK_PKT_OK ||
		    h.dst_cid != HOST_CID || h.op != VIRTIO_VSOCK_OP_RW ||
		    h.type != VIRTIO_VSOCK_TYPE_STREAM)
			return NULL;
		if (i == 0) {
			k.guest_port = h.src_port;
			k.host_port = h.dst_port;
			if (rte_hash_lookup_data(t->hash, &k, &data) < 0)
				return NULL;
			c = data;
			if (c->state != CS_ESTABLISHED || c->type != h.type || c->txq.bytes ||
			    c->ring ||
			    c->tx_skip || (c->guest_shut & VIRTIO_VSOCK_SHUTDOWN_SEND))
				return NULL;
		} else if (h.src_port != c->guest_port || h.dst_port != c->host_port) {
			return NULL;
		}
		/* A credit violation takes the slow path, which resets the connection. */
		queued += h.len;
		if (queued > t->conf.buf_alloc - (c->rx_cnt - c->fwd_cnt))
			return NULL;
		lens[i] = h.len;
	}
	return c;
}

unsigned int conn_from_guest_run(struct conn_table *t, const struct virtio_vsock_hdr *raw,
				 const struct iovec *iov, const unsigned int *iovcnt,
				 unsigned int n)
{
	uint32_t lens[VSOCK_PMD_BURST_MAX];
	struct msghdr mh = { .msg_iov = t->iov };
	const struct iovec *p;
	uint64_t total = 0, done = 0, written;
	unsigned int i;
	struct conn *c = n <= VSOCK_PMD_BURST_MAX ?
			 run_conn(t, raw, iov, iovcnt, n, lens) : NULL;
	struct vsock_hdr h;
	ssize_t w;

	for (i = 0, p = iov; c && i < n; p += iovcnt[i], i++) {
		unsigned int got = iov_slice(t->iov + mh.msg_iovlen,
					     t->scratch_n - (unsigned int)mh.msg_iovlen, p,
					     iovcnt[i], 0, lens[i]);

		if (got == 0 && lens[i])
			c = NULL;	/* more pieces than one sendmsg() takes */
		mh.msg_iovlen += got;
		total += lens[i];
	}
	if (!c) {
		for (i = 0, p = iov; i < n; p += iovcnt[i], i++)
			if (conn_from_guest(t, &raw[i], p, iovcnt[i]) == -EAGAIN)
				break;
		return i;
	}
	/* The whole run in one sendmsg(): the syscall is paid per burst, not per packet. */
	do {
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (w < 0 && errno == EINTR);
	if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
		conn_reset(t, c, errno == EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
		t->stats.rx_pkts += n;
		return n;
	}
	written = w < 0 ? 0 : (uint64_t)w;
	if (written < total)
		c->host &= ~H_WRITABLE;
	c->fwd_cnt += (uint32_t)written;
	t->stats.host_tx_bytes += written;
	/* What the socket did not take waits in txq, as conn_from_guest() would queue it. */
	for (i = 0, p = iov; i < n; p += iovcnt[i], i++) {
		uint32_t in_sock = (uint32_t)RTE_MIN(written - RTE_MIN(written, done),
						     (uint64_t)lens[i]);

		if (in_sock < lens[i] &&
		    txq_copy(t, c, p, iovcnt[i], in_sock, lens[i] - in_sock, 0) < 0) {
			/* This packet comes again: its bytes already written are not rewritten. */
			c->tx_skip = in_sock;
			break;
		}
		done += lens[i];
		c->rx_cnt += lens[i];
		t->stats.rx_bytes += lens[i];
		t->stats.rx_pkts++;
	}
	if (i == 0)
		return 0;
	/* Every header carries the guest's receive window: the last one taken is the newest. */
	vsock_pkt_parse(&raw[i - 1], VSOCK_HDR_SIZE, &h);
	c->peer_buf_alloc = h.buf_alloc;
	c->peer_fwd_cnt = h.fwd_cnt;
	credit_check(t, c);
	data_update(t, c);
	if (can_read(c)) {
		c->stalled = 0;
		work_add(t, c);
	}
	return i;
}

/* ---- host -> guest ---- */

static void hdr_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int cnt,
			 uint64_t peer_cid, uint32_t guest_port, uint32_t host_port, uint16_t type,
			 uint16_t op, uint32_t len, uint32_t flags, uint32_t fwd_cnt)
{
	const struct vsock_flow f = {
		.src_cid = peer_cid,
		.dst_cid = t->conf.guest_cid,
		.src_port = host_port,
		.dst_port = guest_port,
		.type = type,
	};
	struct virtio_vsock_hdr raw;
	struct vsock_hdr h;

	vsock_pkt_build(&h, &f, op, len, flags, t->conf.buf_alloc, fwd_cnt);
	vsock_pkt_encode(&h, &raw);
	iov_write(buf, cnt, 0, &raw, sizeof(raw));
	t->stats.tx_pkts++;
	t->stats.tx_bytes += len;
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

static uint32_t data_to_guest(struct conn_table *t, struct conn *c, const struct iovec *buf,
			      unsigned int cnt, size_t cap)
{
	uint32_t n = RTE_MIN(sendable(c), (uint32_t)RTE_MIN(cap - VSOCK_HDR_SIZE,
							      (size_t)VSOCK_PKT_MAX_PAYLOAD));
	uint32_t done = 0, flags = 0;
	struct rte_mbuf *m;

	/* Copy up to n bytes; a SEQPACKET piece stops at its message's end. */
	for (m = c->rxq.head; m && done < n; m = m->next) {
		uint32_t l = RTE_MIN((uint32_t)m->data_len, n - done);

		iov_write(buf, cnt, VSOCK_HDR_SIZE + done, rte_pktmbuf_mtod(m, void *), l);
		done += l;
		if (l == m->data_len && (m->packet_type & MB_EOM)) {
			flags = m->packet_type & (MB_EOM | MB_EOR);
			break;
		}
	}
	mq_consume(&c->rxq, done, &t->rx_held);
	hdr_to_guest(t, buf, cnt, c->peer_cid, c->guest_port, c->host_port, c->type,
		     VIRTIO_VSOCK_OP_RW, done, flags, c->fwd_cnt);
	c->fwd_sent = c->fwd_cnt;
	c->tx_cnt += done;
	/* The header just sent carries our credit: no separate update owed. */
	if (c->ctl_pending == CTL_CREDIT)
		ctl_del(t, c);
	c->ctl_pending &= (uint8_t)~CTL_CREDIT;
	/* Round-robin: to the back of the line, or out of it. */
	data_del(t, c);
	data_update(t, c);
	if (c->rxq.bytes == 0)
		host_shutdown_check(t, c);
	if (can_read(c)) {
		c->stalled = 0;
		work_add(t, c);
	}
	return VSOCK_HDR_SIZE + done;
}

uint32_t conn_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int iovcnt)
{
	size_t cap = iov_total(buf, iovcnt);

	if (cap < VSOCK_HDR_SIZE)
		return 0;
	if (t->rst_count) {
		const struct rst_entry *e = &t->rst[t->rst_head];

		hdr_to_guest(t, buf, iovcnt, e->peer_cid, e->guest_port, e->host_port, e->type,
			     VIRTIO_VSOCK_OP_RST, 0, 0, 0);
		t->rst_head = (t->rst_head + 1) % RST_RING_SIZE;
		t->rst_count--;
		return VSOCK_HDR_SIZE;
	}
	if (!TAILQ_EMPTY(&t->ctl))
		return ctl_to_guest(t, TAILQ_FIRST(&t->ctl), buf, iovcnt);
	if (!TAILQ_EMPTY(&t->data) && cap > VSOCK_HDR_SIZE)
		return data_to_guest(t, TAILQ_FIRST(&t->data), buf, iovcnt, cap);
	return 0;
}

bool conn_has_output(const struct conn_table *t)
{
	return t->rst_count || !TAILQ_EMPTY(&t->ctl) || !TAILQ_EMPTY(&t->data);
}

/* ---- host sockets ---- */

/* Read host bytes into rxq within the guest's credit. Returns true when more can be read now. */
static bool host_read(struct conn_table *t, struct conn *c)
{
	bool seq = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	struct msghdr mh = { .msg_iov = t->iov };
	uint32_t want, nb, i, left;
	ssize_t n;

	if (!(c->host & H_READABLE) || (c->host & H_EOF))
		return false;
	if (!can_read(c))
		goto stall;
	/* A SEQPACKET message's size is unknown until it is read: room for the largest. */
	want = seq ? READ_CHUNK :
	       RTE_MIN(RTE_MIN(peer_credit(c), RXQ_MAX) - c->rxq.bytes, READ_CHUNK);
	nb = (want + t->room - 1) / t->room;
	if (nb > t->scratch_n)
		nb = t->scratch_n;
	if (!seq) {
		uint32_t lim = rx_share_left(t, c);

		/* At its share: data_to_guest() puts it back to work as the guest takes it. */
		if (lim == 0)
			return false;
		lim = RTE_MIN(lim, quota_left(t->rx_held, t->dir_quota));
		if (lim == 0)
			goto quota;
		if (nb > lim) {
			nb = lim;
			want = nb * t->room;
		}
	} else if (nb > quota_left(t->rx_held, t->dir_quota) && t->rx_held) {
		goto quota;	/* a message larger than the whole quota may still be read alone */
	}
	if (rte_pktmbuf_alloc_bulk(t->conf.pool, t->mbufs, nb) != 0) {
		/* A stream can make progress with a single mbuf; a message needs all. */
		nb = 1;
		if (seq || rte_pktmbuf_alloc_bulk(t->conf.pool, t->mbufs, nb) != 0) {
			t->stats.pool_empty++;
			return true;	/* retry on the next poll */
		}
		want = RTE_MIN(want, t->room);
	}
	for (i = 0, left = want; i < nb; i++) {
		t->iov[i].iov_base = rte_pktmbuf_mtod(t->mbufs[i], void *);
		t->iov[i].iov_len = RTE_MIN(left, t->room);
		left -= (uint32_t)t->iov[i].iov_len;
	}
	mh.msg_iovlen = nb;
	do {
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0 || (seq && (mh.msg_flags & MSG_TRUNC))) {
		rte_pktmbuf_free_bulk(t->mbufs, nb);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->host &= ~H_READABLE;
			return false;
		}
		conn_reset(t, c, n < 0 ? CONN_ERR_HOST_IO : CONN_ERR_MSG_SIZE);
		return false;
	}
	/*
	 * 0 is the end of the stream; on SEQPACKET it can also be an empty message, which vsock
	 * cannot carry: only the hang-up edge tells them apart.
	 */
	if (n == 0 && (!seq || (c->host & (H_RDHUP | H_HUP)))) {
		rte_pktmbuf_free_bulk(t->mbufs, nb);
		c->host = (uint8_t)((c->host | H_EOF) & ~H_READABLE);
		host_shutdown_check(t, c);
		return false;
	}
	t->stats.host_rx_bytes += (uint64_t)n;
	for (i = 0, left = (uint32_t)n; i < nb; i++) {
		struct rte_mbuf *m = t->mbufs[i];

		if (left == 0) {
			rte_pktmbuf_free_seg(m);
			continue;
		}
		m->data_len = (uint16_t)RTE_MIN(left, t->room);
		m->pkt_len = m->data_len;
		left -= m->data_len;
		if (seq && left == 0)
			m->packet_type = MB_EOM | MB_EOR;
		mq_push(&c->rxq, m, &t->rx_held);
	}
	/*
	 * A short stream read emptied the socket: the next bytes bring a new edge. An end of
	 * stream already signalled brings none, so keep reading until it shows as 0.
	 */
	if (!seq && (uint32_t)n < want && !(c->host & (H_RDHUP | H_HUP)))
		c->host &= ~H_READABLE;
	data_update(t, c);
	return (c->host & H_READABLE) && (seq ? false : c->rxq.bytes < RXQ_MAX);
stall:
	/* The guest's window is full: its CREDIT_UPDATE puts us back on the work list. */
	if (!c->stalled) {
		c->stalled = 1;
		t->stats.credit_stalls++;
	}
	return false;
quota:
	/* The table's host-side mbufs are used up: qwait_wake() puts it back to work. */
	qwait_add(t, c);
	return false;
}

static void line_done(struct conn_table *t, struct conn *c, uint32_t port, size_t line_len)
{
	uint32_t tries, extra = c->line.len - (uint32_t)line_len;
	struct rte_mbuf *m = NULL;

	/*
	 * No guest to send the REQUEST to: answer as Firecracker does when the guest refuses
	 * (RST), a close without OK, rather than keep the client waiting for a guest that
	 * may never come.
	 */
	if (t->conf.no_guest) {
		t->stats.conns_refused++;
		conn_free(t, c);
		return;
	}
	if (extra) {
		m = rte_pktmbuf_alloc(t->conf.pool);
		if (!m) {
			t->stats.pool_empty++;
			conn_free(t, c);
			return;
		}
		memcpy(rte_pktmbuf_mtod(m, char *), c->line.buf + line_len, extra);
		m->data_len = (uint16_t)extra;
		m->pkt_len = extra;
	}
	c->guest_port = port;
	c->type = VIRTIO_VSOCK_TYPE_STREAM;
	/* Round-robin over [2^30, 2^31), skipping pairs in use: at most nb_used of them. */
	for (tries = 0; tries <= t->nb_used; tries++) {
		struct conn_key k = { .guest_port = port };

		k.host_port = HOST_PORT_FIRST + (t->next_port++ % HOST_PORT_SPAN);
		if (rte_hash_lookup(t->hash, &k) >= 0)
			continue;
		c->host_port = k.host_port;
		if (conn_hash(t, c) == 0)
			break;
	}
	if (!c->hashed) {
		if (m)
			rte_pktmbuf_free(m);
		conn_free(t, c);
		return;
	}
	if (m)
		mq_push(&c->rxq, m, &t->rx_held);
	c->state = CS_REQUEST;
	timer_set(t, c);
	ctl_add(t, c, CTL_REQUEST);
}

static void line_read(struct conn_table *t, struct conn *c)
{
	size_t line_len;
	uint32_t port;
	int ret = ep_uds_line_read(c->fd, &c->line, &port, &line_len);

	if (ret == 0)
		return;
	if (ret < 0) {
		t->stats.proto_err[CONN_ERR_CONNECT_LINE]++;
		conn_free(t, c);
		return;
	}
	line_done(t, c, port, line_len);
}

/* Serve one connection's host socket. Returns true when it has more to do right now. */
static bool conn_service(struct conn_table *t, struct conn *c)
{
	if (c->ring) {
		/* Its far side is polled from the ring list, not this one. */
		ring_service(t, c);
		return false;
	}
	switch (c->state) {
	case CS_LINE:
		line_read(t, c);
		return false;
	case CS_ESTABLISHED:
		if (c->txq.bytes && !txq_flush(t, c))
			return false;
		if (c->state != CS_ESTABLISHED)
			return false;
		return host_read(t, c);
	default:
		return false;
	}
}

static unsigned int accept_host(struct conn_table *t, unsigned int budget)
{
	unsigned int done = 0;

	while (done < budget) {
		struct conn *c;
		int fd = ep_uds_accept(t->conf.listen_fd);

		if (fd < 0)
			break;
		done++;
		c = conn_alloc(t, fd);
		if (!c) {
			t->stats.table_full++;
			close(fd);
			continue;
		}
		c->state = CS_LINE;
		timer_set(t, c);
		/* The line may already be there; the edge of a fresh registration says so too. */
		work_add(t, c);
	}
	return done;
}

static void timer_expire(struct conn_table *t, struct conn *c)
{
	timer_del(t, c);
	switch (c->state) {
	case CS_LINE:
		t->stats.proto_err[CONN_ERR_CONNECT_LINE]++;
		conn_free(t, c);
		break;
	case CS_REQUEST:
	case CS_CLOSING:
	case CS_ACCEPT_WAIT:
		conn_reset(t, c, CONN_ERR_TIMEOUT);
		break;
	default:
		break;
	}
}

unsigned int conn_poll_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget)
{
	struct epoll_event ev[EVENTS_MAX];
	unsigned int work = 0;
	int i, n;

	if (budget == 0)
		return 0;
	t->now = now_tsc;
	n = epoll_wait(t->epfd, ev, (int)RTE_MIN(budget, (unsigned int)EVENTS_MAX), 0);
	for (i = 0; i < n; i++) {
		uint32_t idx = (uint32_t)ev[i].data.u64;
		uint32_t e = ev[i].events;
		struct conn *c;

		work++;
		if (idx == 0) {
			work += accept_host(t, budget > work ? budget - work : 1);
			continue;
		}
		c = &t->conns[idx - 1];
		if (c->state == CS_FREE || c->gen != (uint32_t)(ev[i].data.u64 >> 32))
			continue;	/* closed since the event was queued */
		if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
			c->host |= H_READABLE;
		if (e & (EPOLLOUT | EPOLLERR))
			c->host |= H_WRITABLE;
		if (e & EPOLLRDHUP)
			c->host |= H_RDHUP;
		if (e & EPOLLHUP) {
			c->host |= H_HUP;
			host_shutdown_check(t, c);
		}
		work_add(t, c);
	}
	return work + conn_service_host(t, now_tsc, budget > work ? budget - work : 0);
}

unsigned int conn_service_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget)
{
	unsigned int work = 0;

	t->now = now_tsc;
	while (!TAILQ_EMPTY(&t->timers) && TAILQ_FIRST(&t->timers)->deadline <= now_tsc) {
		timer_expire(t, TAILQ_FIRST(&t->timers));
		work++;
	}
	if (unlikely(!TAILQ_EMPTY(&t->qwait)))
		qwait_wake(t, budget > work ? budget - work : 0);
	while (work < budget && !TAILQ_EMPTY(&t->work)) {
		struct conn *c = TAILQ_FIRST(&t->work);

		TAILQ_REMOVE(&t->work, c, work_link);
		c->lists &= ~L_WORK;
		if (conn_service(t, c) && c->state != CS_FREE)
			work_add(t, c);
		work++;
	}
	/* Ring connections have their own bound: a busy socket never starves them. */
	return work + ring_accept(t, RING_BUDGET) + ring_poll(t, RING_BUDGET);
}

unsigned int conn_rings_sweep(struct conn_table *t)
{
	return ring_accept(t, RING_BUDGET) + ring_poll(t, UINT32_MAX);
}

/* ---- table ---- */

void conn_table_conf_init(struct conn_table_conf *conf)
{
	*conf = (struct conn_table_conf){
		.listen_fd = -1,
		.socket_id = SOCKET_ID_ANY,
		.max_conns = CONN_MAX_DEFAULT,
		.buf_alloc = CONN_BUF_ALLOC_DEFAULT,
		.timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
		.line_timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
		.connect_timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
	};
}

static void table_clear(struct conn_table *t)
{
	struct ep_ring *p;
	uint32_t i;

	for (i = 0; i < t->conf.max_conns; i++) {
		struct conn *c = &t->conns[i];

		if (c->state != CS_FREE) {
			close_fd(c);
			mq_free(&c->txq, &t->tx_held);
			mq_free(&c->rxq, &t->rx_held);
			c->gen++;
		}
		/* Our guest is gone: the far sides of its rings see a reset. */
		if (c->ring)
			ep_ring_release(c->ring, c->ring_side, EP_RING_RST);
		c->ring = NULL;
		c->ring_held = 0;
		c->state = CS_FREE;
		c->lists = 0;
		c->hashed = 0;
		t->free_idx[i] = t->conf.max_conns - 1 - i;
	}
	t->nb_free = t->conf.max_conns;
	t->nb_used = 0;
	TAILQ_INIT(&t->work);
	TAILQ_INIT(&t->ctl);
	TAILQ_INIT(&t->data);
	TAILQ_INIT(&t->timers);
	TAILQ_INIT(&t->rings);
	TAILQ_INIT(&t->qwait);
	t->nb_rings = 0;
	/* What the rings still held is freed by their far sides now. */
	t->rx_held = 0;
	t->tx_held = 0;
	t->rst_head = 0;
	t->rst_count = 0;
	rte_hash_reset(t->hash);
	rte_hash_reset(t->sib_hash);
	/* Connections still waiting for this guest are refused. */
	while (t->conf.incoming && rte_ring_sc_dequeue(t->conf.incoming, (void **)&p) == 0)
		ep_ring_release(p, 1, EP_RING_RST);
}

void conn_table_reset(struct conn_table *t)
{
	table_clear(t);
}

struct conn_table *conn_table_create(const struct conn_table_conf *conf)
{
	static uint32_t table_seq;
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = RTE_MAX(conf->max_conns, 8u),
		.key_len = sizeof(struct conn_key),
		.hash_func = rte_jhash,
		.socket_id = conf->socket_id,
		/* The extendable table guarantees room for every one of max_conns keys. */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct conn_table *t;
	uint32_t i;

	if (!conf->uds_path || strlen(conf->uds_path) >= sizeof(t->uds_path) || !conf->pool ||
	    conf->max_conns == 0 || conf->buf_alloc == 0 || conf->timeout_ms == 0 ||
	    conf->line_timeout_ms == 0 || conf->connect_timeout_ms == 0 ||
	    rte_pktmbuf_data_room_size(conf->pool) <= RTE_PKTMBUF_HEADROOM) {
		rte_errno = EINVAL;
		return NULL;
	}
	t = rte_zmalloc_socket("vsock_conn_table", sizeof(*t), RTE_CACHE_LINE_SIZE,
			       conf->socket_id);
	if (!t) {
		rte_errno = ENOMEM;
		return NULL;
	}
	t->conf = *conf;
	t->epfd = -1;
	strcpy(t->uds_path, conf->uds_path);
	t->conf.uds_path = t->uds_path;
	t->room = rte_pktmbuf_data_room_size(conf->pool) - RTE_PKTMBUF_HEADROOM;
	t->dir_quota = conf->mbuf_quota ? RTE_MAX(conf->mbuf_quota / 2, 1u) : UINT32_MAX;
	t->timeout_tsc = rte_get_tsc_hz() * conf->timeout_ms / 1000;
	t->line_timeout_tsc = rte_get_tsc_hz() * conf->line_timeout_ms / 1000;
	t->connect_timeout_tsc = rte_get_tsc_hz() * conf->connect_timeout_ms / 1000;
	/* Scratch big enough for a whole SEQPACKET message either way, or one read. */
	t->scratch_n = (RTE_MAX(conf->buf_alloc, READ_CHUNK) + t->room - 1) / t->room + 2;
	t->scratch_n = RTE_MIN(t->scratch_n, (unsigned int)IOV_MAX);
	t->iov = rte_zmalloc_socket("vsock_conn_iov", sizeof(*t->iov) * t->scratch_n, 0,
				    conf->socket_id);
	t->mbufs = rte_zmalloc_socket("vsock_conn_mbufs", sizeof(*t->mbufs) * t->scratch_n, 0,
				      conf->socket_id);
	t->conns = rte_zmalloc_socket("vsock_conns", sizeof(*t->conns) * conf->max_conns,
				      RTE_CACHE_LINE_SIZE, conf->socket_id);
	t->free_idx = rte_zmalloc_socket("vsock_conn_free", sizeof(*t->free_idx) * conf->max_conns,
					 0, conf->socket_id);
	snprintf(name, sizeof(name), "vsock_conn_%u",
		 __atomic_fetch_add(&table_seq, 1, __ATOMIC_RELAXED));
	if (t->iov && t->mbufs && t->conns && t->free_idx)
		t->hash = rte_hash_create(&hp);
	snprintf(name, sizeof(name), "vsock_sib_%u",
		 __atomic_fetch_add(&table_seq, 1, __ATOMIC_RELAXED));
	hp.key_len = sizeof(struct sib_key);
	if (t->hash)
		t->sib_hash = rte_hash_create(&hp);
	if (!t->sib_hash) {
		conn_table_destroy(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0) {
		int err = errno;

		conn_table_destroy(t);
		rte_errno = err;
		return NULL;
	}
	if (conf->listen_fd >= 0) {
		/* Level-triggered: accepting stops at the budget and resumes on the next poll. */
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };

		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, conf->listen_fd, &ev) < 0) {
			int err = errno;

			conn_table_destroy(t);
			rte_errno = err;
			return NULL;
		}
	}
	for (i = 0; i < conf->max_conns; i++)
		t->conns[i].fd = -1;
	table_clear(t);
	return t;
}

void conn_table_destroy(struct conn_table *t)
{
	if (!t)
		return;
	if (t->hash && t->conns)
		table_clear(t);
	rte_hash_free(t->hash);
	rte_hash_free(t->sib_hash);
	if (t->epfd >= 0)
		close(t->epfd);
	rte_free(t->free_idx);
	rte_free(t->conns);
	rte_free(t->mbufs);
	rte_free(t->iov);
	rte_free(t);
}

const char *conn_err_str(enum conn_err err)
{
	static const char *const names[CONN_ERR_MAX] = {
		[CONN_ERR_ROUTE] = "route",
		[CONN_ERR_NO_CONN] = "no_conn",
		[CONN_ERR_STATE] = "state",
		[CONN_ERR_CREDIT] = "credit",
		[CONN_ERR_MSG_SIZE] = "msg_size",
		[CONN_ERR_CONNECT_LINE] = "connect_line",
		[CONN_ERR_TIMEOUT] = "timeout",
		[CONN_ERR_HOST_IO] = "host_io",
	};

	return (unsigned int)err < CONN_ERR_MAX ? names[err] : "unknown";
}

int conn_table_epoll_fd(const struct conn_table *t)
{
	return t->epfd;
}

uint32_t conn_count(const struct conn_table *t)
{
	return t->nb_used;
}

uint32_t conn_table_mbufs(const struct conn_table *t)
{
	return t->rx_held + t->tx_held;
}

const struct conn_stats *conn_table_stats(const struct conn_table *t)
{
	return &t->stats;
}

/* ---- snapshot for operators ---- */

static const char *state_name(uint8_t state)
{
	switch (state) {
	case CS_LINE:
		return "connect_line";
	case CS_REQUEST:
		return "connecting";
	case CS_ESTABLISHED:
		return "established";
	case CS_CLOSING:
		return "closing";
	case CS_DEAD:
		return "reset";
	case CS_ACCEPT_WAIT:
		return "accepting";
	default:
		return "free";
	}
}

uint32_t conn_table_snapshot(const struct conn_table *t, struct vsock_pmd_conn_info *out,
			     uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->conf.max_conns && n < max; i++) {
		const struct conn *c = &t->conns[i];
		uint32_t held = c->rx_cnt - c->fwd_cnt;
		struct vsock_pmd_conn_info *o;

		if (c->state == CS_FREE)
			continue;
		o = &out[n++];
		*o = (struct vsock_pmd_conn_info){
			.guest_port = c->guest_port,
			.host_port = c->host_port,
			.peer_cid = c->peer_cid,
			.from_guest_bytes = c->rx_cnt,
			.to_guest_bytes = c->tx_cnt,
			.guest_credit = held >= t->conf.buf_alloc ? 0 : t->conf.buf_alloc - held,
			.our_buf_alloc = t->conf.buf_alloc,
			.host_credit = peer_credit(c),
			.peer_buf_alloc = c->peer_buf_alloc,
			.queued_to_host = c->txq.bytes,
			.queued_to_guest = c->rxq.bytes,
		};
		snprintf(o->type, sizeof(o->type), "%s",
			 c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? "seqpacket" : "stream");
		snprintf(o->state, sizeof(o->state), "%s", state_name(c->state));
	}
	return t->nb_used;
}
