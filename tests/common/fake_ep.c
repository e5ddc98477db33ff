/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake endpoint room (fake_ep.h): ep.h implemented over struct fake_end. An end's fd
 * (a socket) or its pipe pointer (a pipe) is its index + 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_vsock.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "fake_ep.h"

#define FAKE_CHECK(c) do {						\
	if (!(c)) {							\
		fprintf(stderr, "fake_ep: %s:%d: %s\n", __FILE__, __LINE__, #c); \
		abort();						\
	}								\
} while (0)

/* Events waiting for ep_host_events(), one per token as epoll keeps them. */
#define FAKE_EVENTS 64

struct fake_end fake_ends[FAKE_ENDS];
int fake_next_connect;
uint8_t fake_next_caps;
bool fake_real_caps;
uint64_t fake_total_taken, fake_total_read;
unsigned int fake_pipe_slots;
void (*fake_took)(struct fake_end *f, size_t off, const uint8_t *p, size_t len, bool eom);
void (*fake_fill)(struct fake_end *f, size_t off, uint8_t *dst, size_t len);

static struct ep_event queued[FAKE_EVENTS];
static int nb_queued;
static int listen_fd = -1;
static struct rte_ring *incoming_ring;

static struct {
	uint32_t port;
	int line;
	uint32_t early;
} listens[FAKE_PENDING];
static unsigned int nb_listens;

static struct {
	struct ep_addr a;
	bool reset;
} incomings[FAKE_PENDING];
static unsigned int nb_incomings;

struct fake_end *fake_end_of(const struct ep *e)
{
	int i = e->kind == EP_PIPE ? (int)(uintptr_t)e->pipe - 1 :
		e->kind == EP_SOCK ? e->fd - 1 : -1;

	return i >= 0 && i < FAKE_ENDS ? &fake_ends[i] : NULL;
}

/* The end behind @p e, which must be open. */
static struct fake_end *open_end(const struct ep *e)
{
	struct fake_end *f = fake_end_of(e);

	FAKE_CHECK(f != NULL && f->used && !f->closed);
	return f;
}

static int end_new(struct ep *e, bool polled, uint16_t type)
{
	struct fake_end *f;
	int i;

	for (i = 0; i < FAKE_ENDS; i++)
		if (!fake_ends[i].used)
			break;
	if (i == FAKE_ENDS)
		return -ENFILE;
	f = &fake_ends[i];
	memset(f, 0, offsetof(struct fake_end, to_host));
	f->used = true;
	f->line = 2;
	f->polled = polled;
	f->type = type;
	f->room = FAKE_SIDE;
	f->hold = polled && fake_pipe_slots;
	f->pipe_slots = fake_pipe_slots;
	ep_init(e);
	if (polled) {
		e->kind = EP_PIPE;
		e->caps = EP_CAP_POLLED | EP_CAP_READV;
		e->pipe = (struct ep_pipe *)(uintptr_t)(i + 1);
	} else {
		e->kind = EP_SOCK;
		e->fd = i + 1;
	}
	return i;
}

void fake_ep_reset(void)
{
	unsigned int i;

	for (i = 0; i < FAKE_ENDS; i++) {
		FAKE_CHECK(!fake_ends[i].used);
		memset(&fake_ends[i], 0, offsetof(struct fake_end, to_host));
	}
	nb_queued = 0;
	nb_listens = 0;
	fake_total_taken = 0;
	fake_total_read = 0;
	while (nb_incomings) {
		void *x;

		if (incoming_ring)
			rte_ring_dequeue(incoming_ring, &x);
		nb_incomings--;
	}
}

/* What it took: stored, or shown to the took hook. */
static void sink(struct fake_end *f, const void *p, size_t len, bool eom)
{
	if (fake_took)
		fake_took(f, f->taken, p, len, eom);
	else if (f->taken < FAKE_SIDE)
		memcpy(f->to_host + f->taken, p, RTE_MIN(len, FAKE_SIDE - f->taken));
	f->taken += len;
	fake_total_taken += len;
}

/* What a pipe whose far side reads no more dropped: taken, never seen. */
static void drop(struct fake_end *f, size_t len)
{
	f->taken += len;
	fake_total_taken += len;
}

/* @p len bytes of its stream from @p off. */
static void fill(struct fake_end *f, size_t off, uint8_t *dst, size_t len)
{
	if (fake_fill) {
		fake_fill(f, off, dst, len);
		return;
	}
	FAKE_CHECK(off + len <= FAKE_SIDE);
	memcpy(dst, f->to_guest + off, len);
}

/* Bytes from @p off to the end of the message they are in (SEQPACKET), or to the end. */
static size_t msg_left(const struct fake_end *f, size_t off)
{
	unsigned int i;

	if (f->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
		for (i = 0; i < f->nmsg; i++)
			if (f->msg_end[i] > off)
				return f->msg_end[i] - off;
	return f->offered - off;
}

/* @p f was read up to @p off: messages before it are gone. */
static void read_to(struct fake_end *f, size_t off)
{
	f->read = off;
	while (f->nmsg && f->msg_end[0] <= off)
		memmove(f->msg_end, f->msg_end + 1, sizeof(f->msg_end[0]) * --f->nmsg);
}

bool fake_offer(struct fake_end *f, size_t len, bool msg)
{
	/* We shut our read side: its sends fail (EPIPE), what it sent before stays. */
	if (f->shut_rd || (msg && f->nmsg == FAKE_MSGS))
		return false;
	f->offered += len;
	if (msg)
		f->msg_end[f->nmsg++] = f->offered;
	return true;
}

/* All read: nothing more now, and the end of the stream if it said so. */
static void drained(struct fake_end *f, struct ep *e)
{
	if (f->read == f->offered) {
		e->ev &= ~EP_READABLE;
		if (f->eof)
			e->ev |= EP_EOF;
	}
}

void fake_event(uint64_t token, uint16_t ev)
{
	int i;

	for (i = 0; i < nb_queued; i++)
		if (queued[i].token == token) {
			queued[i].ev |= ev;
			return;
		}
	if (nb_queued < FAKE_EVENTS)
		queued[nb_queued++] = (struct ep_event){ .token = token, .ev = ev };
}

static void events_drop(uint64_t token)
{
	int i;

	for (i = 0; i < nb_queued; i++)
		if (queued[i].token == token) {
			memmove(&queued[i], &queued[i + 1], sizeof(queued[0]) * (size_t)(nb_queued - i - 1));
			nb_queued--;
			return;
		}
}

bool fake_listen(uint32_t port, int line, uint32_t early)
{
	if (listen_fd < 0 || nb_listens == FAKE_PENDING)
		return false;
	listens[nb_listens].port = port;
	listens[nb_listens].line = line;
	listens[nb_listens++].early = early;
	return true;
}

bool fake_incoming(const struct ep_addr *a, bool reset)
{
	if (nb_incomings == FAKE_PENDING ||
	    (incoming_ring && rte_ring_enqueue(incoming_ring, (void *)(uintptr_t)1) != 0))
		return false;
	incomings[nb_incomings].a = *a;
	incomings[nb_incomings++].reset = reset;
	return true;
}

unsigned int fake_pending(void)
{
	return nb_listens + nb_incomings;
}

static void held_free(struct fake_end *f, unsigned int n)
{
	while (n-- && f->held_head) {
		struct rte_mbuf *m = f->held_head;

		f->held_head = m->next;
		if (!f->held_head)
			f->held_tail = NULL;
		f->nheld--;
		rte_pktmbuf_free_seg(m);
	}
}

void fake_far_take(struct fake_end *f, unsigned int n)
{
	held_free(f, n);
}

unsigned int fake_open_ends(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < FAKE_ENDS; i++)
		n += fake_ends[i].used;
	return n;
}

unsigned int fake_freed_unpolled(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < FAKE_ENDS; i++)
		if (fake_ends[i].used)
			n += fake_ends[i].ep_held - fake_ends[i].nheld;
	return n;
}

/* ---- the facade, faked ---- */

int ep_host_init(struct ep_host *h, const char *uds_path, int lfd, struct rte_ring *incoming,
		 struct ep_waker *waker)
{
	(void)uds_path;
	(void)waker;
	h->listen_fd = lfd;
	h->incoming = incoming;
	h->epfd = -1;
	listen_fd = lfd;
	incoming_ring = incoming;
	return 0;
}

void ep_host_fini(struct ep_host *h)
{
	(void)h;
}

void ep_host_refuse_incoming(struct ep_host *h)
{
	void *x;

	(void)h;
	for (; nb_incomings; nb_incomings--)
		if (incoming_ring)
			rte_ring_dequeue(incoming_ring, &x);
}

int ep_host_events(struct ep_host *h, struct ep_event *out, int max)
{
	int n = 0, k;

	/* The listener is level-triggered: its event stays while connects wait. */
	if (h->listen_fd >= 0 && nb_listens && max > 0)
		out[n++] = (struct ep_event){ .token = EP_TOKEN_LISTENER, .ev = EP_READABLE };
	k = RTE_MIN(max - n, nb_queued);
	memcpy(out + n, queued, sizeof(*out) * (size_t)k);
	memmove(queued, queued + k, sizeof(queued[0]) * (size_t)(nb_queued - k));
	nb_queued -= k;
	return n + k;
}

int ep_connect(struct ep_host *h, struct ep *e, uint64_t token, const struct ep_addr *a,
	       struct rte_ring *to)
{
	bool seq = a->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	int i, ret = fake_next_connect;

	(void)h;
	if (ret < 0)
		return ret;
	i = end_new(e, to != NULL, a->type);
	if (i < 0)
		return i;
	fake_ends[i].port = a->dst_port;
	fake_ends[i].token = token;
	if (to) {
		e->ev = EP_WRITABLE;
		return 1;
	}
	e->caps = fake_real_caps ? (seq ? EP_CAP_WHOLE_MSG : EP_CAP_READV) : fake_next_caps;
	e->ev = EP_READABLE | EP_WRITABLE;
	return 0;
}

int ep_accept_listener(struct ep_host *h, struct ep *e)
{
	int i;

	(void)h;
	if (nb_listens == 0)
		return -EAGAIN;
	/* Out of descriptors: accept4() fails, the connect waits. */
	i = end_new(e, false, VIRTIO_VSOCK_TYPE_STREAM);
	if (i < 0)
		return -EAGAIN;
	e->caps = EP_CAP_READV;
	fake_ends[i].port = listens[0].port;
	fake_ends[i].line = listens[0].line;
	fake_ends[i].early = listens[0].early;
	fake_ends[i].offered = listens[0].early;
	memmove(listens, listens + 1, sizeof(listens[0]) * --nb_listens);
	return 0;
}

int ep_accept_incoming(struct ep_host *h, struct ep *e, struct ep_addr *a)
{
	void *x;
	int i;

	(void)h;
	if (nb_incomings == 0)
		return -EAGAIN;
	i = end_new(e, true, incomings[0].a.type);
	if (i < 0)
		return -EAGAIN;
	*a = incomings[0].a;
	fake_ends[i].port = a->dst_port;
	if (incomings[0].reset)
		e->ev |= EP_RESET;
	memmove(incomings, incomings + 1, sizeof(incomings[0]) * --nb_incomings);
	if (incoming_ring)
		rte_ring_dequeue(incoming_ring, &x);
	return 0;
}

int ep_register(struct ep_host *h, struct ep *e, uint64_t token)
{
	(void)h;
	open_end(e)->token = token;
	e->ev |= e->kind == EP_SOCK ? EP_READABLE | EP_WRITABLE : EP_WRITABLE;
	return 0;
}

int ep_handshake(struct ep *e, uint32_t *port, const char **early, uint32_t *early_len)
{
	static uint8_t line[EP_UDS_LINE_MAX];
	struct fake_end *f = open_end(e);

	FAKE_CHECK(e->kind == EP_SOCK && f->line != 2);
	if (f->line <= 0)
		return f->line;
	f->line = 2;	/* read: asked again is a bug */
	FAKE_CHECK(f->early <= sizeof(line));
	fill(f, 0, line, f->early);
	read_to(f, f->early);
	*port = f->port;
	*early = (const char *)line;
	*early_len = f->early;
	return 1;
}

int ep_established(struct ep *e, uint32_t host_port)
{
	struct fake_end *f = open_end(e);

	f->established = true;
	f->host_port = host_port;
	return f->est_fail;
}

void ep_shutdown(struct ep *e, int how)
{
	struct fake_end *f = open_end(e);

	if (how == SHUT_WR)
		f->shut_wr = true;
	else
		f->shut_rd = true;
	e->ev |= how == SHUT_WR ? EP_WR_SHUT : EP_RD_SHUT;
}

void ep_reset(struct ep *e)
{
	/* As ep.c: an end already let go of has nobody left to tell. */
	if (e->kind == EP_NONE)
		return;
	open_end(e)->reset = true;
}

void ep_close(struct ep *e, bool clean, uint32_t *held)
{
	struct fake_end *f = open_end(e);

	if (held)
		*held -= e->held;
	held_free(f, f->nheld);
	f->ep_held = 0;
	events_drop(f->token);
	f->closed = true;
	f->clean = clean;
	f->used = false;
	e->kind = EP_NONE;
	e->fd = -1;
	e->pipe = NULL;
	e->held = 0;
}

/* What the end takes of @p len bytes now; clears EP_WRITABLE when it took less. */
static size_t end_take(struct ep *e, size_t len)
{
	struct fake_end *f = fake_end_of(e);
	size_t n = RTE_MIN(len, f->room);

	f->room -= n;
	if (n < len)
		e->ev &= ~EP_WRITABLE;
	return n;
}

ssize_t ep_sock_writev(struct ep *e, struct ep_io *io __rte_unused, const struct iovec *iov,
		       unsigned int n, size_t len)
{
	struct fake_end *f = open_end(e);
	bool whole = e->caps & EP_CAP_WHOLE_MSG;
	size_t take, left;
	unsigned int i;

	if (f->fail)
		return f->fail;
	f->writes++;
	/* A message goes whole or waits. */
	if (whole && len > f->room) {
		e->ev &= ~EP_WRITABLE;
		return 0;
	}
	take = end_take(e, len);
	for (i = 0, left = take; i < n && left; i++) {
		size_t l = RTE_MIN(iov[i].iov_len, left);

		left -= l;
		sink(f, iov[i].iov_base, l, whole && left == 0);
	}
	return (ssize_t)take;
}

/* Queued bytes to a socket-like end, as far as it takes them; messages whole. */
static int end_send(struct ep *e, struct mq *q, uint32_t *held, uint32_t *moved)
{
	struct fake_end *f = fake_end_of(e);
	bool whole = e->caps & EP_CAP_WHOLE_MSG;
	size_t take = q->bytes;
	struct rte_mbuf *m;

	if (f->fail)
		return f->fail;
	if (whole) {
		/* The first complete message, if there is one and it fits. */
		take = 0;
		for (m = q->head; m; m = m->next) {
			take += m->data_len;
			if (m->packet_type & MQ_EOM)
				break;
		}
		if (!m)
			return 0;
		if (take > f->room) {
			e->ev &= ~EP_WRITABLE;
			return 0;
		}
	}
	take = end_take(e, take);
	*moved = (uint32_t)take;
	for (m = q->head; m && take; m = m->next) {
		size_t l = RTE_MIN((size_t)m->data_len, take);

		take -= l;
		sink(f, rte_pktmbuf_mtod(m, void *), l, whole && take == 0);
	}
	mq_consume(q, *moved, held);
	return 0;
}

int ep_sock_send(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held, uint32_t *moved)
{
	uint32_t more;
	int ret;

	(void)io;
	open_end(e);
	if (!(e->caps & EP_CAP_WHOLE_MSG))
		return end_send(e, q, held, moved);
	/* One message per sendmsg(), while the end takes them. */
	do {
		more = 0;
		ret = end_send(e, q, held, &more);
		*moved += more;
	} while (ret == 0 && more && q->bytes);
	return ret;
}

/* Bytes of the end's stream into fresh mbufs of @p mp, at most @p chunk each. */
static struct rte_mbuf *end_mbuf(struct fake_end *f, struct rte_mempool *mp, uint32_t chunk)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	size_t l;

	if (!m)
		return NULL;
	l = RTE_MIN(RTE_MIN((size_t)rte_pktmbuf_tailroom(m), (size_t)chunk),
		    msg_left(f, f->read));
	fill(f, f->read, rte_pktmbuf_mtod(m, uint8_t *), l);
	m->data_len = (uint16_t)l;
	m->pkt_len = (uint32_t)l;
	if (f->type == VIRTIO_VSOCK_TYPE_SEQPACKET && l == msg_left(f, f->read))
		m->packet_type = MQ_EOM | MQ_EOR;
	read_to(f, f->read + l);
	return m;
}

/* What the end offered into @p q: at most @p want bytes in @p max_mbufs mbufs. */
static ssize_t end_recv(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
			uint32_t want, uint32_t max_mbufs)
{
	struct fake_end *f = open_end(e);
	size_t n = 0;

	if (f->rfail)
		return f->rfail;
	while (n < want && max_mbufs && f->read < f->offered) {
		struct rte_mbuf *m = end_mbuf(f, io->pool, want - (uint32_t)n);

		if (!m && !n)
			return -ENOBUFS;
		if (!m)
			break;
		mq_push(q, m, held);
		n += m->data_len;
		max_mbufs--;
	}
	fake_total_read += n;
	drained(f, e);
	return (ssize_t)n;
}

/* A SEQPACKET socket: one whole message, or -EMSGSIZE (and it is gone) when over @p want. */
static ssize_t end_recv_msg(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
			    uint32_t want)
{
	struct fake_end *f = open_end(e);
	/* As recvmsg() into room for @p want bytes: every mbuf first. */
	uint32_t nb = RTE_MIN((want + io->room - 1) / io->room, io->n);
	size_t len, n = 0;

	if (f->rfail)
		return f->rfail;
	if (rte_pktmbuf_alloc_bulk(io->pool, io->mbufs, nb) != 0)
		return -ENOBUFS;
	rte_pktmbuf_free_bulk(io->mbufs, nb);
	if (f->read == f->offered) {
		drained(f, e);
		return 0;
	}
	len = msg_left(f, f->read);
	if (len > want) {
		read_to(f, f->read + len);
		drained(f, e);
		return -EMSGSIZE;
	}
	/* Freed and taken again at once: the same mbufs, the pool had them. */
	while (n < len) {
		struct rte_mbuf *m = end_mbuf(f, io->pool, UINT32_MAX);

		FAKE_CHECK(m != NULL);
		mq_push(q, m, held);
		n += m->data_len;
	}
	fake_total_read += n;
	drained(f, e);
	return (ssize_t)n;
}

ssize_t ep_sock_recv(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
		     uint32_t want, uint32_t max_mbufs)
{
	/* A byte stream that can be read straight where it goes is read only that way. */
	FAKE_CHECK(!(e->caps & EP_CAP_READV));
	if (e->caps & EP_CAP_WHOLE_MSG)
		return end_recv_msg(e, io, q, held, want);
	return end_recv(e, io, q, held, want, max_mbufs);
}

/* A stream end read straight into the caller's memory (EP_CAP_READV). */
ssize_t ep_sock_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len)
{
	struct fake_end *f = open_end(e);
	size_t got = 0;
	unsigned int i;

	FAKE_CHECK(e->caps & EP_CAP_READV);
	if (f->rfail)
		return f->rfail;
	f->reads++;
	for (i = 0; i < n && got < len && f->read < f->offered; i++) {
		size_t l = RTE_MIN(RTE_MIN(iov[i].iov_len, len - got), f->offered - f->read);

		fill(f, f->read, iov[i].iov_base, l);
		read_to(f, f->read + l);
		got += l;
	}
	fake_total_read += got;
	drained(f, e);
	return (ssize_t)got;
}

/* A pipe whose far side reads no more drops what we send, as a shut socket would. */
static bool far_shut(const struct fake_end *f)
{
	return f->far & (EP_SHUT_RD | EP_GONE);
}

/* @p m went into the pipe: it stays there, still ours, or the far side takes it now. */
static void pipe_put(struct fake_end *f, struct ep *e, struct rte_mbuf *m, uint32_t *held,
		     bool counted)
{
	if (!f->hold) {
		if (counted)
			(*held)--;
		rte_pktmbuf_free_seg(m);
		return;
	}
	m->next = NULL;
	if (f->held_tail)
		f->held_tail->next = m;
	else
		f->held_head = m;
	f->held_tail = m;
	f->nheld++;
	f->ep_held++;
	e->held++;
	if (!counted)
		(*held)++;
}

/* mbufs the pipe has room for now. */
static unsigned int pipe_room(const struct fake_end *f)
{
	return f->hold ? f->pipe_slots - f->nheld : UINT32_MAX;
}

/* Stream bytes into fresh mbufs on the pipe (a SEQPACKET pipe's go through the queue). */
ssize_t ep_pipe_writev(struct ep *e, struct ep_io *io, const struct iovec *iov, unsigned int n,
		       size_t len, uint32_t *held, uint32_t max_mbufs)
{
	struct fake_end *f = open_end(e);
	size_t want, done = 0, off = 0;
	unsigned int nb, i, piece = 0;

	if (f->fail)
		return f->fail;
	if (f->type != VIRTIO_VSOCK_TYPE_STREAM || len == 0)
		return 0;
	f->writes++;
	if (far_shut(f)) {
		drop(f, len);
		return (ssize_t)len;
	}
	want = RTE_MIN(len, f->room);
	nb = (unsigned int)RTE_MIN((want + io->room - 1) / io->room, (size_t)io->n);
	nb = RTE_MIN(RTE_MIN(nb, pipe_room(f)), max_mbufs);
	if (nb == 0 || rte_pktmbuf_alloc_bulk(io->pool, io->mbufs, nb) != 0)
		return 0;
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = io->mbufs[i];
		uint8_t *dst = rte_pktmbuf_mtod(m, uint8_t *);
		size_t l = RTE_MIN(want - done, (size_t)io->room), got = 0;

		while (got < l && piece < n) {
			size_t k = RTE_MIN(iov[piece].iov_len - off, l - got);

			memcpy(dst + got, (const uint8_t *)iov[piece].iov_base + off, k);
			got += k;
			off += k;
			if (off == iov[piece].iov_len) {
				piece++;
				off = 0;
			}
		}
		m->data_len = (uint16_t)got;
		m->pkt_len = (uint32_t)got;
		done += got;
		sink(f, dst, got, false);
		pipe_put(f, e, m, held, false);
	}
	f->room -= done;
	return (ssize_t)done;
}

int ep_pipe_send(struct ep *e, struct mq *q, uint32_t *held, uint32_t *moved)
{
	struct fake_end *f = open_end(e);
	unsigned int room = pipe_room(f);
	bool shut = far_shut(f);

	if (f->fail)
		return f->fail;
	while (q->head && (shut || (room && q->head->data_len <= f->room))) {
		struct rte_mbuf *m = mq_pop(q);

		*moved += m->data_len;
		if (shut) {
			drop(f, m->data_len);
			(*held)--;
			rte_pktmbuf_free_seg(m);
			continue;
		}
		f->room -= m->data_len;
		sink(f, rte_pktmbuf_mtod(m, void *), m->data_len,
		     m->packet_type & MQ_EOM);
		pipe_put(f, e, m, held, true);
		room--;
	}
	return 0;
}

/* As ep_pipe.c: whether the far side's mbufs wait, and its EOF once they are all read. */
static void pipe_readable(struct fake_end *f, struct ep *e)
{
	if (f->read < f->offered) {
		if (!(e->ev & EP_RD_SHUT))
			e->ev |= EP_READABLE;
	} else if (e->ev & EP_FIN) {
		e->ev = (uint16_t)((e->ev | EP_EOF) & ~EP_READABLE);
	} else {
		e->ev &= ~EP_READABLE;
	}
}

/*
 * The far side's bytes straight into @p iov, as ep_pipe.c copies them out of its mbufs: at
 * most @p len, and a SEQPACKET read stops at its message's end, marked as the far side's
 * last mbuf of it is (MQ_EOM | MQ_EOR).
 */
ssize_t ep_pipe_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len,
		      uint32_t *eom)
{
	struct fake_end *f = open_end(e);
	size_t got = 0, msg = msg_left(f, f->read);
	unsigned int i;

	if (f->rfail)
		return f->rfail;
	f->reads++;
	len = RTE_MIN(len, msg);
	for (i = 0; i < n && got < len; i++) {
		size_t l = RTE_MIN(iov[i].iov_len, len - got);

		fill(f, f->read, iov[i].iov_base, l);
		read_to(f, f->read + l);
		got += l;
	}
	if (f->type == VIRTIO_VSOCK_TYPE_SEQPACKET && got && got == msg)
		*eom = MQ_EOM | MQ_EOR;
	fake_total_read += got;
	pipe_readable(f, e);
	return (ssize_t)got;
}

void ep_pipe_poll(struct ep *e, uint32_t *held)
{
	struct fake_end *f = open_end(e);

	/* The far side took some of the mbufs we put in the pipe: no longer ours. */
	if (f->ep_held > f->nheld) {
		*held -= f->ep_held - f->nheld;
		e->held = (uint16_t)f->nheld;
		f->ep_held = f->nheld;
	}
	e->ev |= f->far;
	pipe_readable(f, e);
}
