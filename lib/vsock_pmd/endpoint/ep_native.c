/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host API: the program's side of pipes (ep_pipe.h).
 *
 * A connection handle is a pipe's pool index and the low 15 bits of its generation, so
 * a handle outlives its connection harmlessly: the pipe stays in the pool, a new
 * connection in the same slot has another generation, and the check fails with -EBADF.
 * Listener handles work the same way over the listener table.
 *
 * The program's thread only touches its side: it produces into r[prog_side], consumes
 * r[!prog_side], writes flags[prog_side]. Listener changes serialise program threads with a
 * lock the workers never take; a worker reads a listener through its 'active' flag.
 *
 * Programs may run in DPDK secondary processes (native_proc.c): the listener table lives in
 * a named memzone, every handle records the process that holds it (its owner), and the lock
 * records its holder's owner too, so that the handles and the lock of a process that died
 * can be taken back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/virtio_vsock.h>

#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <vsock_pmd_native.h>

#include "ep_native.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "vsock_pkt.h"

#define HANDLE_GEN_MASK 0x7fff
#define HANDLE_IDX_BITS 16
/* Guests waiting for one listener's accept. */
#define BACKLOG_SIZE 256
#define REGION_MZ "vsock_native"

struct listener {
	uint64_t cid;
	uint32_t port;
	uint32_t active;	/* published with release once cid and port are set */
	uint32_t enqueuers;	/* workers between their look at active and their enqueue */
	uint16_t gen;
	uint8_t owner;		/* the process that listens */
	struct rte_ring *backlog;
};

/*
 * What every process of the group shares. Reserved by the first start and never freed, so
 * that a secondary still attached when the primary stops reads 'up' as 0, not freed memory.
 */
struct native_region {
	uint32_t up;		/* set last at start, cleared first at stop */
	uint32_t epoch;		/* one per start: a process attached to an older one is stale */
	uint32_t lock;		/* the listener table: 0 free, else holder's owner + 1 */
	uint32_t next_port;
	struct listener listeners[VSOCK_NATIVE_MAX_LISTENERS];
};

static struct native_region *region;
static uint32_t my_epoch;
static uint8_t my_owner;	/* this process, as handles record it */

static inline int make_handle(uint16_t gen, uint32_t idx)
{
	return (int)(((uint32_t)(gen & HANDLE_GEN_MASK) << HANDLE_IDX_BITS) | idx);
}

/* The API works in this process now: the primary runs the start this process knows. */
static inline bool native_up(void)
{
	/* Acquire pairs with the release in ep_native_init(): the table is set up. */
	return region && __atomic_load_n(&region->up, __ATOMIC_ACQUIRE) &&
	       region->epoch == my_epoch;
}

/* The connection behind handle @p h: 0, or -ENODEV (API not running) or -EBADF (no such handle). */
static int conn_of(int h, struct ep_pipe **pp)
{
	struct ep_pipe *p;

	if (!native_up())
		return -ENODEV;
	if (h < 0)
		return -EBADF;
	p = ep_pipe_at((uint32_t)h & ((1u << HANDLE_IDX_BITS) - 1));
	if (!p || !p->prog_open || make_handle(p->gen, p->idx) != h)
		return -EBADF;
	*pp = p;
	return 0;
}

static struct listener *listener_of(int h)
{
	uint32_t idx = (uint32_t)h & ((1u << HANDLE_IDX_BITS) - 1);
	struct listener *l;

	if (h < 0 || idx >= VSOCK_NATIVE_MAX_LISTENERS)
		return NULL;
	l = &region->listeners[idx];
	if (!__atomic_load_n(&l->active, __ATOMIC_ACQUIRE) || make_handle(l->gen, idx) != h)
		return NULL;
	return l;
}

static void table_lock(void)
{
	uint32_t free_lock = 0;

	/* Acquire: the previous holder's changes to the table are visible. */
	while (!__atomic_compare_exchange_n(&region->lock, &free_lock, my_owner + 1u, false,
					    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		free_lock = 0;
		rte_pause();
	}
}

static void table_unlock(void)
{
	/* Release: our changes to the table are visible to the next holder. */
	__atomic_store_n(&region->lock, 0, __ATOMIC_RELEASE);
}

int ep_native_init(int socket)
{
	const struct rte_memzone *mz = rte_memzone_lookup(REGION_MZ);
	unsigned int i;

	if (!mz)
		mz = rte_memzone_reserve(REGION_MZ, sizeof(*region), socket, 0);
	if (!mz)
		return -ENOMEM;
	region = mz->addr;
	region->lock = 0;
	for (i = 0; i < VSOCK_NATIVE_MAX_LISTENERS; i++) {
		struct listener *l = &region->listeners[i];
		char name[RTE_RING_NAMESIZE];

		l->active = 0;
		l->enqueuers = 0;
		snprintf(name, sizeof(name), "vsock_accept_%u", i);
		l->backlog = rte_ring_create(name, BACKLOG_SIZE, socket, RING_F_SC_DEQ);
		if (!l->backlog) {
			ep_native_fini();
			return -ENOMEM;
		}
	}
	my_owner = 0;
	my_epoch = region->epoch + 1;
	region->epoch = my_epoch;
	/* Release: a program that sees the API up sees the listener table set up. */
	__atomic_store_n(&region->up, 1, __ATOMIC_RELEASE);
	return 0;
}

int ep_native_attach(uint8_t owner)
{
	const struct rte_memzone *mz = rte_memzone_lookup(REGION_MZ);

	if (!mz)
		return -ENODEV;
	region = mz->addr;
	my_epoch = __atomic_load_n(&region->epoch, __ATOMIC_RELAXED);
	my_owner = owner;
	if (!native_up()) {
		region = NULL;
		return -ENODEV;
	}
	return 0;
}

void ep_native_detach(void)
{
	region = NULL;
}

/* Refuse every guest waiting on @p l: its REQUEST gets an RST from its table. */
static void accept_drain(struct listener *l)
{
	struct ep_pipe *p;

	while (rte_ring_dequeue(l->backlog, (void **)&p) == 0)
		ep_pipe_release(p, 1, EP_PIPE_RST);
}

/*
 * Stop @p l: no worker enqueues on it after this returns, and whatever was queued is
 * refused. A worker that saw it active before the store may still be enqueueing: it
 * announced itself in enqueuers first (ep_native_listener_enqueue()), and the wait is for
 * it, a few instructions on a lcore that never blocks.
 */
static void listener_stop(struct listener *l)
{
	/* Full fence (store->load): pairs with the enqueuer's between enqueuers and active. */
	__atomic_store_n(&l->active, 0, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&l->enqueuers, __ATOMIC_SEQ_CST))
		rte_pause();
	accept_drain(l);
}

void ep_native_fini(void)
{
	unsigned int i;

	if (!region)
		return;
	__atomic_store_n(&region->up, 0, __ATOMIC_RELEASE);
	for (i = 0; i < VSOCK_NATIVE_MAX_LISTENERS; i++) {
		struct listener *l = &region->listeners[i];

		if (l->backlog)
			listener_stop(l);
		rte_ring_free(l->backlog);
		l->backlog = NULL;
	}
	region = NULL;
}

/* The listener on host port @p port of VM @p cid, or NULL. */
static struct listener *listener_find(uint64_t cid, uint32_t port)
{
	unsigned int i;

	for (i = 0; region && i < VSOCK_NATIVE_MAX_LISTENERS; i++) {
		struct listener *l = &region->listeners[i];

		/* Acquire pairs with the release in vsock_native_listen(): cid and port are set. */
		if (__atomic_load_n(&l->active, __ATOMIC_ACQUIRE) && l->cid == cid &&
		    l->port == port)
			return l;
	}
	return NULL;
}

struct rte_ring *ep_native_listener_backlog(uint64_t cid, uint32_t port)
{
	struct listener *l = listener_find(cid, port);

	return l ? l->backlog : NULL;
}

int ep_native_listener_enqueue(uint64_t cid, uint32_t port, struct ep_pipe *p)
{
	struct listener *l = listener_find(cid, port);
	int rc = -ECONNREFUSED;

	if (!l)
		return rc;
	/* Full fence (store->load): pairs with listener_stop()'s between active and enqueuers. */
	__atomic_fetch_add(&l->enqueuers, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&l->active, __ATOMIC_SEQ_CST) && l->cid == cid && l->port == port)
		rc = rte_ring_mp_enqueue(l->backlog, p) < 0 ? -ENOBUFS : 0;
	/* Release: the enqueue is done before listener_stop() may drain the backlog. */
	__atomic_fetch_sub(&l->enqueuers, 1, __ATOMIC_RELEASE);
	return rc;
}

int vsock_native_listen(uint64_t cid, uint32_t port)
{
	struct listener *free_l = NULL;
	unsigned int i;
	int rc;

	if (!native_up())
		return -ENODEV;
	if (ep_sibling_running(cid) < 0)
		return -ENOENT;
	table_lock();
	for (i = 0; i < VSOCK_NATIVE_MAX_LISTENERS; i++) {
		struct listener *l = &region->listeners[i];

		if (!l->active) {
			if (!free_l)
				free_l = l;
		} else if (l->cid == cid && l->port == port) {
			table_unlock();
			return -EADDRINUSE;
		}
	}
	if (!free_l) {
		table_unlock();
		return -ENOSPC;
	}
	free_l->cid = cid;
	free_l->port = port;
	free_l->owner = my_owner;
	free_l->gen++;
	/* Release: a worker that sees the listener active sees its cid and port. */
	__atomic_store_n(&free_l->active, 1, __ATOMIC_RELEASE);
	rc = make_handle(free_l->gen, (uint32_t)(free_l - region->listeners));
	table_unlock();
	return rc;
}

int vsock_native_listen_close(int lh)
{
	struct listener *l;

	if (!native_up())
		return -ENODEV;
	table_lock();
	l = listener_of(lh);
	if (!l) {
		table_unlock();
		return -EBADF;
	}
	listener_stop(l);
	table_unlock();
	return 0;
}

int vsock_native_accept(int lh)
{
	struct listener *l;
	struct ep_pipe *p;

	if (!native_up())
		return -ENODEV;
	l = listener_of(lh);
	if (!l)
		return -EBADF;
	while (rte_ring_dequeue(l->backlog, (void **)&p) == 0) {
		/* The guest gave up waiting (its table timed out): nothing to accept. */
		if (ep_pipe_flags(p, 0) & (EP_PIPE_RST | EP_PIPE_CLOSED)) {
			ep_pipe_release(p, 1, EP_PIPE_RST);
			continue;
		}
		p->prog_side = 1;
		p->prog_owner = my_owner;
		/* Release: a reaper that sees the handle open sees its owner (release_owner()). */
		__atomic_store_n(&p->prog_open, 1, __ATOMIC_RELEASE);
		ep_pipe_set(p, 1, EP_PIPE_ACCEPTED);
		return make_handle(p->gen, p->idx);
	}
	return -EAGAIN;
}

int vsock_native_connect(uint64_t cid, uint32_t port, int type)
{
	struct rte_ring *in;
	struct ep_pipe *p;
	int running;

	if (!native_up())
		return -ENODEV;
	if (type != VSOCK_NATIVE_STREAM && type != VSOCK_NATIVE_SEQPACKET)
		return -EINVAL;
	running = ep_sibling_running(cid);
	if (running < 0)
		return -ENOENT;
	if (!running)
		return -ECONNREFUSED;
	in = ep_sibling_incoming(cid);
	/* A program's connect to a guest counts in that guest's share. */
	p = ep_pipe_alloc((unsigned int)ep_sibling_index(cid));
	if (!p)
		return -ENOBUFS;
	p->src_cid = VSOCK_HOST_CID;
	p->src_port = EP_PIPE_NATIVE_PORT_FIRST +
		      __atomic_fetch_add(&region->next_port, 1, __ATOMIC_RELAXED) %
		      (UINT32_MAX - EP_PIPE_NATIVE_PORT_FIRST);
	p->dst_cid = cid;
	p->dst_port = port;
	p->type = (uint16_t)type;
	p->prog_side = 0;
	p->prog_owner = my_owner;
	/* Release: a reaper that sees the handle open sees its owner (release_owner()). */
	__atomic_store_n(&p->prog_open, 1, __ATOMIC_RELEASE);
	/* The rte_ring's enqueue publishes every field above to the table that takes it. */
	if (rte_ring_mp_enqueue(in, p) < 0) {
		p->prog_open = 0;
		ep_pipe_release(p, 1, EP_PIPE_RST);
		ep_pipe_release(p, 0, EP_PIPE_RST);
		return -ENOBUFS;
	}
	ep_sibling_wake(cid);
	return make_handle(p->gen, p->idx);
}

/* The connection's state from the program's side, given both sides' flags. */
static int state_of(const struct ep_pipe *p, uint32_t mine, uint32_t peer, bool drained)
{
	if ((mine | peer) & EP_PIPE_RST)
		return VSOCK_NATIVE_RESET;
	if (p->prog_side == 0 && !(peer & EP_PIPE_ACCEPTED))
		return (peer & EP_PIPE_CLOSED) ? VSOCK_NATIVE_RESET : VSOCK_NATIVE_CONNECTING;
	if ((peer & EP_PIPE_SHUT_SEND) && drained)
		return (peer & EP_PIPE_CLOSED) ? VSOCK_NATIVE_CLOSED : VSOCK_NATIVE_PEER_SHUT;
	return VSOCK_NATIVE_ESTABLISHED;
}

int vsock_native_state(int h)
{
	struct ep_pipe *p;
	unsigned int s;
	uint32_t peer;
	int rc;

	rc = conn_of(h, &p);
	if (rc < 0)
		return rc;
	s = (unsigned int)p->prog_side;
	/* Flags first (acquire), then the rte_ring: empty after SHUT_SEND means drained. */
	peer = ep_pipe_flags(p, !s);
	return state_of(p, ep_pipe_flags(p, s), peer,
			rte_ring_empty(p->r[!s]) && !p->msg_head);
}

int vsock_native_info(int h, struct vsock_native_info *info)
{
	struct ep_pipe *p;
	int rc;

	rc = conn_of(h, &p);
	if (rc < 0)
		return rc;
	if (!info)
		return -EINVAL;
	*info = (struct vsock_native_info){
		.guest_cid = p->prog_side == 0 ? p->dst_cid : p->src_cid,
		.guest_port = p->prog_side == 0 ? p->dst_port : p->src_port,
		.host_port = p->prog_side == 0 ? p->src_port : p->dst_port,
		.type = p->type,
	};
	return 0;
}

/* -errno when the program cannot use @p p now, 0 when it can. */
static int usable(const struct ep_pipe *p, uint32_t mine, uint32_t peer)
{
	if ((mine | peer) & EP_PIPE_RST)
		return -ECONNRESET;
	if (p->prog_side == 0 && !(peer & EP_PIPE_ACCEPTED))
		return (peer & EP_PIPE_CLOSED) ? -ECONNRESET : -ENOTCONN;
	return 0;
}

/*
 * What both burst calls check first: the API is up, @p h is a live connection, the array is
 * there, and the connection can still move data. Fills the connection, its side and both
 * sides' flags (peer's read with acquire: everything sent before a SHUT_SEND is visible).
 */
static int burst_begin(int h, struct rte_mbuf **pkts, uint16_t n, struct ep_pipe **pp,
		       unsigned int *side, uint32_t *mine, uint32_t *peer)
{
	struct ep_pipe *p;
	int rc;

	rc = conn_of(h, &p);
	if (rc < 0)
		return rc;
	if (!pkts && n)
		return -EINVAL;
	*pp = p;
	*side = (unsigned int)p->prog_side;
	*mine = ep_pipe_flags(p, *side);
	*peer = ep_pipe_flags(p, !*side);
	return usable(p, *mine, *peer);
}

int vsock_native_send_burst(int h, struct rte_mbuf **pkts, uint16_t n)
{
	struct ep_pipe *p;
	struct rte_ring *out;
	uint32_t mine, peer;
	unsigned int s, i, room;
	int rc;

	rc = burst_begin(h, pkts, n, &p, &s, &mine, &peer);
	if (rc < 0)
		return rc;
	if ((mine & EP_PIPE_SHUT_SEND) || (peer & (EP_PIPE_SHUT_RCV | EP_PIPE_CLOSED)))
		return -EPIPE;
	out = p->r[s];
	room = rte_ring_free_count(out);
	if (n > room)
		n = (uint16_t)room;
	/* Message ends travel in each segment's packet_type (ep_pipe.h). */
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m;

		for (m = pkts[i]; m; m = m->next)
			m->packet_type = 0;
		if (p->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
			rte_pktmbuf_lastseg(pkts[i])->packet_type = MQ_EOM | MQ_EOR;
	}
	/* Single producer: every one of the n fits, as counted above. */
	n = (uint16_t)rte_ring_sp_enqueue_burst(out, (void **)pkts, n, NULL);
	if (n)
		ep_pipe_wake(p, !s);	/* the worker may sleep */
	return n;
}

/* SEQPACKET: pieces from the rte_ring become whole messages, one mbuf chain each. */
static int recv_messages(struct ep_pipe *p, struct rte_ring *in, struct rte_mbuf **pkts,
			 uint16_t n)
{
	struct rte_mbuf *m;
	int got = 0;

	while (got < n && rte_ring_sc_dequeue(in, (void **)&m) == 0) {
		if (!p->msg_head) {
			p->msg_head = m;
		} else {
			p->msg_tail->next = m;
			p->msg_head->nb_segs++;
			p->msg_head->pkt_len += m->data_len;
		}
		p->msg_tail = m;
		if (m->packet_type & MQ_EOM) {
			pkts[got++] = p->msg_head;
			p->msg_head = NULL;
			p->msg_tail = NULL;
		}
	}
	return got;
}

int vsock_native_recv_burst(int h, struct rte_mbuf **pkts, uint16_t n)
{
	struct ep_pipe *p;
	struct rte_ring *in;
	uint32_t mine, peer;
	unsigned int s;
	int rc, got;

	rc = burst_begin(h, pkts, n, &p, &s, &mine, &peer);
	if (rc < 0)
		return rc;
	in = p->r[!s];
	if (p->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
		got = recv_messages(p, in, pkts, n);
	else
		got = (int)rte_ring_sc_dequeue_burst(in, (void **)pkts, n, NULL);
	if (got == 0 && n && (peer & EP_PIPE_SHUT_SEND) && rte_ring_empty(in))
		return -ESHUTDOWN;
	/* Room in the rte_ring: the worker may sleep with the guest's data waiting for it. */
	if (got > 0)
		ep_pipe_wake(p, !s);
	return got;
}

int vsock_native_shutdown(int h, int how)
{
	struct ep_pipe *p;
	unsigned int s;
	int rc;

	rc = conn_of(h, &p);
	if (rc < 0)
		return rc;
	if (how & ~(VSOCK_NATIVE_SHUT_RD | VSOCK_NATIVE_SHUT_WR) || !how)
		return -EINVAL;
	s = (unsigned int)p->prog_side;
	rc = usable(p, ep_pipe_flags(p, s), ep_pipe_flags(p, !s));
	if (rc < 0)
		return rc == -ECONNRESET ? -ENOTCONN : rc;
	ep_pipe_set(p, s, ((how & VSOCK_NATIVE_SHUT_WR) ? EP_PIPE_SHUT_SEND : 0) |
			  ((how & VSOCK_NATIVE_SHUT_RD) ? EP_PIPE_SHUT_RCV : 0));
	return 0;
}

/* The program lets go of @p p, as close(2) would (vsock_native_close()). */
static void prog_close(struct ep_pipe *p)
{
	unsigned int s = (unsigned int)p->prog_side;
	uint32_t how;

	/* An unanswered connect is abandoned: the guest's half, if any, is reset. */
	how = usable(p, ep_pipe_flags(p, s), ep_pipe_flags(p, !s)) == -ENOTCONN ?
	      EP_PIPE_RST : EP_PIPE_SHUT_SEND | EP_PIPE_SHUT_RCV;
	p->prog_open = 0;
	rte_pktmbuf_free(p->msg_head);
	p->msg_head = NULL;
	p->msg_tail = NULL;
	ep_pipe_release(p, s, how);
}

int vsock_native_close(int h)
{
	struct ep_pipe *p;
	int rc;

	rc = conn_of(h, &p);
	if (rc < 0)
		return rc;
	prog_close(p);
	return 0;
}

unsigned int ep_native_release_owner(uint8_t owner, bool dead)
{
	unsigned int i, n = 0;
	struct ep_pipe *p;
	uint32_t held = owner + 1u;

	if (!native_up())
		return 0;
	/* A process that died holding the table's lock will not release it. */
	if (dead)
		__atomic_compare_exchange_n(&region->lock, &held, 0, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	table_lock();
	for (i = 0; i < VSOCK_NATIVE_MAX_LISTENERS; i++) {
		struct listener *l = &region->listeners[i];

		if (l->active && l->owner == owner) {
			listener_stop(l);
			n++;
		}
	}
	table_unlock();
	for (i = 0; (p = ep_pipe_at(i)) != NULL; i++) {
		/* Acquire pairs with the release in accept and connect: the owner is set. */
		if (__atomic_load_n(&p->prog_open, __ATOMIC_ACQUIRE) && p->prog_owner == owner) {
			prog_close(p);
			n++;
		}
	}
	return n;
}
