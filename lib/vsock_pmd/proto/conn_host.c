/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host ends' side of the protocol: host programs and other guests connecting to our
 * guest, and serving each connection's host end when it has events (a socket's epoll edges)
 * or, having none, every round (a pipe): its bytes out of to_host and into to_guest. What
 * the guest's packets do is conn.c.
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "conn_credit.h"
#include "conn_table.h"

/* Host ports we hand out for host -> guest connections, as Firecracker: [2^30, 2^31). */
#define HOST_PORT_FIRST (1u << 30)
#define HOST_PORT_SPAN (1u << 30)

/* Endpoint events taken per conn_poll_host() call. */
#define EVENTS_MAX 64

/* Polled connections served per conn_service_host() call, round-robin; pipes accepted. */
#define POLL_BUDGET 64

/* ---- host connects ---- */

/* A host end said which guest port it wants (its CONNECT line), with bytes after it. */
static void line_done(struct conn_table *t, struct conn *c, uint32_t port, const char *early,
		      uint32_t early_len)
{
	struct rte_mbuf *m = NULL;
	uint32_t tries;

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
	if (early_len) {
		m = rte_pktmbuf_alloc(t->conf.pool);
		if (!m) {
			t->stats.pool_empty++;
			conn_free(t, c);
			return;
		}
		memcpy(rte_pktmbuf_mtod(m, char *), early, early_len);
		m->data_len = (uint16_t)early_len;
		m->pkt_len = early_len;
	}
	c->guest_port = port;
	c->type = VIRTIO_VSOCK_TYPE_STREAM;
	/* Round-robin over [2^30, 2^31), skipping pairs in use: at most nb_used of them. */
	for (tries = 0; tries <= t->nb_used; tries++) {
		uint32_t host_port = HOST_PORT_FIRST + (t->next_port++ % HOST_PORT_SPAN);

		if (conn_lookup(t, port, host_port, VSOCK_HOST_CID))
			continue;
		c->host_port = host_port;
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
		mq_push(&c->to_guest, m, &t->to_guest_held);
	c->state = CS_REQUEST;
	timer_set(t, c);
	ctl_add(t, c, CTL_REQUEST);
}

static void line_read(struct conn_table *t, struct conn *c)
{
	const char *early;
	uint32_t port, early_len;
	int ret = ep_handshake(&c->ep, &port, &early, &early_len);

	if (ret == 0)
		return;
	if (ret < 0) {
		t->stats.proto_err[CONN_ERR_CONNECT_LINE]++;
		conn_free(t, c);
		return;
	}
	line_done(t, c, port, early, early_len);
}

/* Host programs' connects on the listener: each says where it goes in its CONNECT line. */
static unsigned int accept_listener(struct conn_table *t, unsigned int budget)
{
	unsigned int done = 0;
	struct ep e;

	while (done < budget && ep_accept_listener(&t->host, &e) == 0) {
		struct conn *c = conn_alloc(t);

		done++;
		if (!c) {
			t->stats.table_full++;
			ep_close(&e, false, NULL);
			continue;
		}
		c->ep = e;
		if (ep_register(&t->host, &c->ep, conn_token(t, c)) < 0) {
			t->stats.table_full++;
			conn_free(t, c);
			continue;
		}
		c->state = CS_LINE;
		timer_set(t, c);
		/* The line may already be there; the edge of a fresh registration says so too. */
		work_add(t, c);
	}
	return done;
}

/* Connections other guests or host programs opened to our guest: each becomes a REQUEST. */
static unsigned int accept_incoming(struct conn_table *t, unsigned int budget)
{
	unsigned int done = 0;
	struct ep_addr a;
	struct ep e;

	while (done < budget && ep_accept_incoming(&t->host, &e, &a) == 0) {
		struct conn *c;

		done++;
		if (conn_lookup(t, a.dst_port, a.src_port, a.src_cid) || t->conf.no_guest ||
		    a.dst_cid != t->conf.guest_cid ||
		    (a.type == VIRTIO_VSOCK_TYPE_SEQPACKET && !t->conf.seqpacket) ||
		    (e.ev & EP_RESET)) {
			t->stats.conns_refused++;
			ep_close(&e, false, NULL);
			continue;
		}
		c = conn_alloc(t);
		if (!c) {
			t->stats.table_full++;
			ep_close(&e, false, NULL);
			continue;
		}
		c->guest_port = a.dst_port;
		c->host_port = a.src_port;
		c->peer_cid = a.src_cid;
		c->type = a.type;
		c->ep = e;
		if (conn_hash(t, c) < 0) {
			conn_free(t, c);
			continue;
		}
		ep_register(&t->host, &c->ep, conn_token(t, c));
		conn_ep_opened(t, c);
		c->state = CS_REQUEST;
		timer_set(t, c);
		ctl_add(t, c, CTL_REQUEST);
	}
	return done;
}

/* ---- serving host ends ---- */

/*
 * Read the host end into to_guest within the guest's credit and the mbuf quota. Returns
 * true when more can be read now; *@p moved gets the bytes read.
 */
static bool conn_read(struct conn_table *t, struct conn *c, uint32_t *moved)
{
	bool whole = c->ep.caps & EP_CAP_WHOLE_MSG;
	uint32_t want, lim;
	ssize_t n;

	*moved = 0;
	/*
	 * After the guest's SHUTDOWN(RCV) (EP_RD_SHUT) nothing more is read: a socket still hands
	 * out what was queued before our shutdown(SHUT_RD), and its edge for it says readable.
	 */
	if (!(c->ep.ev & EP_READABLE) || (c->ep.ev & (EP_EOF | EP_RD_SHUT)))
		return false;
	if (!can_read(c)) {
		/* The guest's window is full: its CREDIT_UPDATE puts us back to work. */
		credit_stall(t, c);
		return false;
	}
	c->stalled = 0;
	if (c->ep.caps & EP_CAP_READV) {
		/* Read once the guest's rx buffers are there, into them: direct_to_guest(). */
		data_update(t, c);
		return false;
	}
	/* A message's size is unknown until it is read: room for the largest. */
	want = whole ? READ_CHUNK :
	       RTE_MIN(peer_credit(c), TO_GUEST_MAX) - c->to_guest.bytes;
	lim = quota_left(t->to_guest_held, t->dir_quota);
	if (!whole) {
		uint32_t share = to_guest_share_left(t, c);

		/* At its share: data_to_guest() puts it back to work as the guest takes it. */
		if (share == 0)
			return false;
		lim = RTE_MIN(lim, share);
		if (lim == 0)
			goto quota;
	} else if ((want + t->io.room - 1) / t->io.room > lim && t->to_guest_held) {
		goto quota;	/* a message larger than the whole quota may still be read alone */
	}
	n = ep_recv(&c->ep, &t->io, &c->to_guest, &t->to_guest_held, want, lim);
	if (n == -ENOBUFS) {
		t->stats.pool_empty++;
		return true;	/* retry on the next poll */
	}
	if (n < 0) {
		conn_reset(t, c, n == -EMSGSIZE ? CONN_ERR_MSG_SIZE : CONN_ERR_HOST_IO);
		return false;
	}
	*moved = (uint32_t)n;
	t->stats.host_read_bytes += (uint64_t)n;
	/* More than the guest's window came (a pipe's burst, a whole message): it waits. */
	if (c->to_guest.bytes > peer_credit(c))
		credit_stall(t, c);
	data_update(t, c);
	host_shutdown_check(t, c);
	return (c->ep.ev & EP_READABLE) && !whole && c->to_guest.bytes < TO_GUEST_MAX;
quota:
	/* The table's host-side mbufs are used up: qwait_wake() puts it back to work. */
	if (!(c->ep.caps & EP_CAP_POLLED))
		qwait_add(t, c);
	return false;
}

/*
 * Serve one connection's host end: what it said, data both ways. Returns what happened:
 * SERVED_WORK when something moved or changed, SERVED_MORE when more can be done now.
 */
#define SERVED_WORK 1u
#define SERVED_MORE 2u

static unsigned int conn_service(struct conn_table *t, struct conn *c)
{
	uint32_t sent = 0, read = 0;
	bool opened = false, more;
	uint16_t ev0;

	if (c->state == CS_LINE) {
		line_read(t, c);
		return 0;
	}
	ev0 = c->ep.ev;
	ep_poll(&c->ep, &t->to_host_held);
	if (c->state == CS_ACCEPT_WAIT) {
		if (c->ep.ev & (EP_RESET | EP_GONE)) {
			t->stats.conns_refused++;
			conn_end(t, c);
			return SERVED_WORK;
		}
		if (!(c->ep.ev & EP_OPENED))
			return 0;
		timer_del(t, c);
		c->state = CS_ESTABLISHED;
		t->stats.conns_opened++;
		ctl_add(t, c, CTL_RESPONSE);
		opened = true;
	}
	if (c->state != CS_ESTABLISHED)
		return 0;
	if (c->ep.ev & EP_RESET) {
		t->stats.conns_reset++;
		conn_end(t, c);
		return SERVED_WORK;
	}
	if (c->to_host.nb && !conn_flush(t, c, &sent))
		return SERVED_WORK;
	if (c->state != CS_ESTABLISHED)
		return SERVED_WORK;
	more = conn_read(t, c, &read);
	/* Its shutdowns, once what it sent before them is all read. */
	host_shutdown_check(t, c);
	return (opened || sent || read || c->ep.ev != ev0 || c->state != CS_ESTABLISHED ?
		SERVED_WORK : 0) | (more ? SERVED_MORE : 0);
}

/*
 * An endpoint without events is polled: a few loads each. At most @p max of them per call,
 * taken from the front and put at the back.
 */
static unsigned int poll_ends(struct conn_table *t, uint32_t max)
{
	unsigned int i, work = 0;
	unsigned int n = RTE_MIN(t->nb_polled, max);

	for (i = 0; i < n && !TAILQ_EMPTY(&t->polled); i++) {
		struct conn *c = TAILQ_FIRST(&t->polled);

		TAILQ_REMOVE(&t->polled, c, poll_link);
		TAILQ_INSERT_TAIL(&t->polled, c, poll_link);
		work += conn_service(t, c) & SERVED_WORK;
	}
	return work;
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

bool conn_probe_host(struct conn_table *t)
{
	struct conn *c;

	if (conn_socket_count(t) != 1)
		return false;
	c = conn_of_token(t, t->probe_token);
	/*
	 * An edge-triggered socket is taken as readable until a read says otherwise (as at
	 * its registration): a wrong guess costs the recvmsg() that says EAGAIN. Ended, shut
	 * or out of credit, it is left to its events.
	 */
	if (!c || c->state != CS_ESTABLISHED || (c->lists & L_DATA) ||
	    (c->ep.caps & (EP_CAP_POLLED | EP_CAP_READV)) != EP_CAP_READV ||
	    (c->ep.ev & (EP_EOF | EP_RD_SHUT)) || c->to_guest.bytes || peer_credit(c) == 0)
		return false;
	c->ep.ev |= EP_READABLE;
	data_update(t, c);
	return true;
}

unsigned int conn_poll_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget)
{
	struct ep_event ev[EVENTS_MAX];
	unsigned int work = 0;
	int i, n;

	if (budget == 0)
		return 0;
	n = ep_host_events(&t->host, ev, (int)RTE_MIN(budget, (unsigned int)EVENTS_MAX));
	for (i = 0; i < n; i++) {
		struct conn *c;

		work++;
		if (ev[i].token == EP_TOKEN_LISTENER) {
			work += accept_listener(t, budget > work ? budget - work : 1);
			continue;
		}
		c = conn_of_token(t, ev[i].token);
		if (!c)
			continue;	/* closed since the event was queued */
		c->ep.ev |= ev[i].ev;
		if (ev[i].ev & EP_HUP)
			host_shutdown_check(t, c);
		work_add(t, c);
	}
	return work + conn_service_host(t, now_tsc, budget > work ? budget - work : 0);
}

unsigned int conn_service_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget)
{
	unsigned int work = 0;

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
		/* A polled end goes on from its own list. */
		if ((conn_service(t, c) & SERVED_MORE) && !(c->ep.caps & EP_CAP_POLLED) &&
		    c->state != CS_FREE)
			work_add(t, c);
		work++;
	}
	/*
	 * Polled ends have their own bound: a busy socket never starves them. Without pipes
	 * (every socket connection's round), neither call: their looks are inline.
	 */
	if (unlikely(ep_incoming_pending(&t->host)))
		work += accept_incoming(t, POLL_BUDGET);
	if (t->nb_polled)
		work += poll_ends(t, POLL_BUDGET);
	return work;
}

unsigned int conn_pipes_sweep(struct conn_table *t)
{
	return accept_incoming(t, POLL_BUDGET) + poll_ends(t, UINT32_MAX);
}
