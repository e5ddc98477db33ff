/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pipes: their pool, and their bytes as an endpoint (ep.h): the guest's bytes go into the
 * pipe's rte_ring in the to_host queue's mbufs or in fresh ones, the far side's are copied
 * out of its mbufs straight into the guest's rx buffers; the far side's flags become events.
 *
 * The pool of pipes. Everything is allocated once, at start: a connection's
 * setup takes a pipe from a lock-free free list and never calls the allocator, so a
 * worker lcore can open one between two packets.
 *
 * The pool is one named memzone, so that a DPDK secondary process running the native API
 * (native_proc.c) finds it: the pipes, their rte_rings and the free list are at the same
 * addresses in every process of the group.
 *
 * Every pipe belongs to one VM's share (ep_pipe_alloc()'s owner), and the pool holds exactly
 * the sum of the shares: a VM at its share is refused, and no VM can take a pipe another
 * is owed, whatever its guest or a native program does.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <linux/virtio_vsock.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>

#include <vsock_pmd.h>

#include "ep.h"
#include "ep_pipe.h"

#define POOL_MZ "vsock_ep_pool"
#define FREE_LIST "vsock_ep_pipe_free"

/* One VM's share; in_use and refused change from any thread of any process. */
struct ep_share {
	uint32_t quota;
	uint32_t in_use;
	uint64_t refused;
};

/* The memzone's head; the pipes, then their rte_rings, follow it. */
struct ep_pool {
	unsigned int nb;
	size_t r_bytes;
	struct rte_ring *free_list;
	unsigned int nb_shares;
	struct ep_share share[VSOCK_PMD_MAX_VMS];
	struct ep_pipe ep[] __rte_cache_aligned;
};

static const struct rte_memzone *pool_mz;	/* the primary's: it frees it */
static struct ep_pool *pool;

struct ep_pipe *ep_pipe_at(uint32_t idx)
{
	return pool && idx < pool->nb ? &pool->ep[idx] : NULL;
}

static void mbufs_drain(struct rte_ring *r)
{
	struct rte_mbuf *m[32];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(r, (void **)m, RTE_DIM(m), NULL)) > 0)
		rte_pktmbuf_free_bulk(m, n);
}

int ep_pipe_pool_init(const uint32_t *quotas, unsigned int nb_shares, unsigned int r_size,
		      int socket)
{
	ssize_t sz = rte_ring_get_memsize(r_size);
	size_t r_bytes, ep_bytes;
	unsigned int i, s, nb = 0;
	uint8_t *r_mem;

	if (pool)
		return -EALREADY;
	for (i = 0; i < nb_shares; i++)
		nb += quotas[i];
	if (nb == 0 || nb_shares > VSOCK_PMD_MAX_VMS || sz < 0)
		return -EINVAL;
	r_bytes = RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE);
	ep_bytes = RTE_ALIGN_CEIL(sizeof(*pool) + sizeof(pool->ep[0]) * nb, RTE_CACHE_LINE_SIZE);
	pool_mz = rte_memzone_reserve_aligned(POOL_MZ, ep_bytes + r_bytes * 2 * nb, socket,
					      0, RTE_CACHE_LINE_SIZE);
	if (!pool_mz)
		return -ENOMEM;
	pool = pool_mz->addr;
	memset(pool, 0, ep_bytes);
	pool->nb = nb;
	pool->r_bytes = r_bytes;
	pool->nb_shares = nb_shares;
	for (i = 0; i < nb_shares; i++)
		pool->share[i].quota = quotas[i];
	pool->free_list = rte_ring_create(FREE_LIST, rte_align32pow2(nb + 1), socket, 0);
	if (!pool->free_list) {
		ep_pipe_pool_fini();
		return -ENOMEM;
	}
	r_mem = (uint8_t *)pool + ep_bytes;
	for (i = 0; i < nb; i++) {
		struct ep_pipe *p = &pool->ep[i];

		p->idx = i;
		p->prog_side = -1;
		for (s = 0; s < 2; s++) {
			struct rte_ring *r = (void *)(r_mem + r_bytes * (2 * i + s));
			char name[RTE_RING_NAMESIZE];

			/* Not looked up by name: the name only has to fit. */
			snprintf(name, sizeof(name), "vsock_epr_%u_%u", i, s);
			if (rte_ring_init(r, name, r_size, RING_F_SP_ENQ | RING_F_SC_DEQ) < 0) {
				ep_pipe_pool_fini();
				return -rte_errno;
			}
			p->r[s] = r;
		}
		rte_ring_enqueue(pool->free_list, p);
	}
	return 0;
}

int ep_pipe_pool_attach(void)
{
	const struct rte_memzone *mz = rte_memzone_lookup(POOL_MZ);

	if (!mz)
		return -ENODEV;
	pool = mz->addr;
	return 0;
}

void ep_pipe_pool_detach(void)
{
	pool = NULL;
}

void ep_pipe_pool_fini(void)
{
	unsigned int i;

	if (!pool_mz)
		return;
	for (i = 0; i < pool->nb; i++) {
		/* Where a failed init stopped. */
		if (!pool->ep[i].r[0] || !pool->ep[i].r[1])
			break;
		mbufs_drain(pool->ep[i].r[0]);
		mbufs_drain(pool->ep[i].r[1]);
		rte_pktmbuf_free(pool->ep[i].msg_head);
	}
	rte_ring_free(pool->free_list);
	rte_memzone_free(pool_mz);
	pool_mz = NULL;
	pool = NULL;
}

struct ep_pipe *ep_pipe_alloc(unsigned int owner)
{
	struct ep_share *sh;
	struct ep_pipe *p;

	if (!pool || owner >= pool->nb_shares)
		return NULL;
	sh = &pool->share[owner];
	/* Taken before the pipe, given back if over: never more than the share at once. */
	if (__atomic_add_fetch(&sh->in_use, 1, __ATOMIC_RELAXED) > sh->quota) {
		__atomic_sub_fetch(&sh->in_use, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&sh->refused, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	/* The pool holds every share whole: a VM within its own always finds a pipe. */
	if (rte_ring_dequeue(pool->free_list, (void **)&p) < 0) {
		__atomic_sub_fetch(&sh->in_use, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	p->owner = (uint16_t)owner;
	p->gen++;
	p->flags[0] = 0;
	p->flags[1] = 0;
	p->prog_side = -1;
	p->prog_open = 0;
	p->prog_owner = 0;
	p->msg_head = NULL;
	p->msg_tail = NULL;
	p->waker[0] = NULL;
	p->waker[1] = NULL;
	p->refs = 2;
	return p;
}

void ep_pipe_release(struct ep_pipe *p, unsigned int side, uint32_t flags)
{
	ep_pipe_set(p, side, flags | EP_PIPE_CLOSED);
	/* acq_rel: the last side sees every access the other side made before letting go. */
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	mbufs_drain(p->r[0]);
	mbufs_drain(p->r[1]);
	rte_pktmbuf_free(p->msg_head);
	p->msg_head = NULL;
	p->msg_tail = NULL;
	rte_ring_enqueue(pool->free_list, p);
	__atomic_sub_fetch(&pool->share[p->owner].in_use, 1, __ATOMIC_RELAXED);
}

void ep_pipe_share_get(unsigned int owner, uint32_t *in_use, uint64_t *refused)
{
	const struct ep_share *sh = pool && owner < pool->nb_shares ? &pool->share[owner] : NULL;

	*in_use = sh ? __atomic_load_n(&sh->in_use, __ATOMIC_RELAXED) : 0;
	*refused = sh ? __atomic_load_n(&sh->refused, __ATOMIC_RELAXED) : 0;
}

/* ---- a pipe as an endpoint (ep.h) ---- */

/* mbufs per dequeue. */
#define PIPE_BURST 32

/*
 * Whether the far side's mbufs wait, and its EOF: a far side that said it sends no more
 * (EP_FIN, loaded before this look) has nothing left once the rte_ring is empty.
 */
static void pipe_readable(struct ep *e, struct rte_ring *in)
{
	if (!rte_ring_empty(in)) {
		/* Once we read no more, what is left waits for the release. */
		if (!(e->ev & EP_RD_SHUT))
			e->ev |= EP_READABLE;
	} else if (e->ev & EP_FIN)
		e->ev = (uint16_t)((e->ev | EP_EOF) & ~EP_READABLE);
	else
		e->ev &= ~EP_READABLE;
}

void ep_pipe_poll(struct ep *e, uint32_t *held)
{
	struct rte_ring *in = e->pipe->r[!e->side];
	/* Only we enqueue, so the count can only have dropped since our last write. */
	uint32_t left = e->held ? rte_ring_count(e->pipe->r[e->side]) : 0;
	/* Acquire: whatever the far side enqueued before setting these flags is visible. */
	uint32_t peer = ep_pipe_flags(e->pipe, !e->side);

	/* The far side took some of the mbufs we put in the pipe: they are no longer ours. */
	if (left < e->held) {
		*held -= e->held - left;
		e->held = (uint16_t)left;
	}
	if (peer & EP_PIPE_ACCEPTED)
		e->ev |= EP_OPENED;
	if (peer & EP_PIPE_RST)
		e->ev |= EP_RESET;
	if (peer & EP_PIPE_CLOSED)
		e->ev |= EP_GONE;
	if (peer & (EP_PIPE_SHUT_RCV | EP_PIPE_CLOSED))
		e->ev |= EP_SHUT_RD;
	if (peer & EP_PIPE_SHUT_SEND)
		e->ev |= EP_FIN;
	pipe_readable(e, in);
}

/*
 * Queued guest bytes into the pipe, as far as it has room: a host socket's write. A far side
 * that reads no more gets nothing: the bytes are dropped as a shut socket would, so that the
 * guest's credit keeps flowing until it sees our SHUTDOWN.
 */
int ep_pipe_send(struct ep *e, struct mq *q, uint32_t *held, uint32_t *moved)
{
	struct rte_ring *out = e->pipe->r[e->side];
	bool drop = ep_pipe_flags(e->pipe, !e->side) & (EP_PIPE_SHUT_RCV | EP_PIPE_CLOSED);
	unsigned int room = drop ? UINT_MAX : rte_ring_free_count(out);

	while (q->head && room) {
		struct rte_mbuf *m = mq_pop(q);

		*moved += m->data_len;
		/* In the pipe it still counts against our quota, until the far side takes it. */
		if (drop) {
			rte_pktmbuf_free_seg(m);
			(*held)--;
		} else {
			rte_ring_sp_enqueue(out, m);	/* single producer: room was counted */
			e->held++;
		}
		room--;
	}
	if (*moved && !drop)
		ep_pipe_wake(e->pipe, !e->side);
	return 0;
}

/* A place in a vector of pieces: piece @p i of @p iov, @p off bytes into it. */
struct iov_at {
	const struct iovec *iov;
	unsigned int n, i;
	size_t off;
};

/*
 * Up to @p len bytes between @p buf and the pieces from @p at (into them when @p to_iov), @p at
 * moved past them: a run of copies walks the vector once. glibc's memcpy, not rte_memcpy:
 * it picks the CPU's widest moves at run time, where rte_memcpy has the build's (corei7:
 * twice the instructions for a 4 KiB copy). @return bytes copied, fewer at the vector's end.
 */
static inline size_t iov_at_copy(struct iov_at *at, void *buf, size_t len, bool to_iov)
{
	size_t done = 0;

	while (done < len && at->i < at->n) {
		const struct iovec *v = &at->iov[at->i];
		size_t k = RTE_MIN(v->iov_len - at->off, len - done);

		if (to_iov)
			memcpy((uint8_t *)v->iov_base + at->off, (const uint8_t *)buf + done, k);
		else
			memcpy((uint8_t *)buf + done, (const uint8_t *)v->iov_base + at->off, k);
		done += k;
		at->off += k;
		if (at->off == v->iov_len) {
			at->i++;
			at->off = 0;
		}
	}
	return done;
}

/* mbufs handed to the far side at a time while a write fills them: it starts on the first. */
#define WRITEV_CHUNK 4

/*
 * Guest bytes straight into fresh mbufs on the rte_ring, without the to_host queue: one copy,
 * each mbuf filled to its room, whatever the packets' sizes (a run of small packets shares
 * one). A far side that reads no more gets nothing, as in ep_pipe_send().
 */
ssize_t ep_pipe_writev(struct ep *e, struct ep_io *io, const struct iovec *iov, unsigned int n,
		       size_t len, uint32_t *held, uint32_t max_mbufs)
{
	struct ep_pipe *p = e->pipe;
	struct rte_ring *out = p->r[e->side];
	struct iov_at at = { .iov = iov, .n = n };
	unsigned int i, nb, ready = 0;
	size_t done = 0;

	if (p->type != VIRTIO_VSOCK_TYPE_STREAM || len == 0)
		return 0;
	if (ep_pipe_flags(p, !e->side) & (EP_PIPE_SHUT_RCV | EP_PIPE_CLOSED))
		return (ssize_t)len;
	nb = (unsigned int)RTE_MIN((len + io->room - 1) / io->room, (size_t)io->n);
	nb = RTE_MIN(RTE_MIN(nb, rte_ring_free_count(out)), max_mbufs);
	if (nb == 0 || rte_pktmbuf_alloc_bulk(io->pool, io->mbufs, nb) != 0)
		return 0;
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = io->mbufs[i];
		/* The pieces from where the previous mbuf stopped. */
		uint32_t got = (uint32_t)iov_at_copy(&at, rte_pktmbuf_mtod(m, void *),
						     RTE_MIN(len - done, (size_t)io->room), false);

		m->data_len = (uint16_t)got;
		m->pkt_len = got;
		done += got;
		/* Single producer: every one of the nb fits, as counted above. */
		if (i + 1 - ready == WRITEV_CHUNK || i + 1 == nb) {
			rte_ring_sp_enqueue_bulk(out, (void **)&io->mbufs[ready], i + 1 - ready,
						 NULL);
			ready = i + 1;
		}
	}
	/* In the pipe they count against our quota, until the far side takes them. */
	e->held = (uint16_t)(e->held + nb);
	*held += nb;
	ep_pipe_wake(p, !e->side);
	return (ssize_t)done;
}

/*
 * What is left of mbuf chain @p m to @p at, at most @p room bytes; what is copied leaves the
 * segments (their data start moves past it), so that a chain copied in part goes on from
 * there at the next read. A segment that ends a message (MQ_EOM) stops the copy, its marks in
 * *@p eom; the empty segments after the last byte copied are passed too, as they may carry
 * that end. @return bytes copied; *@p whole: nothing is left of the chain.
 */
static uint32_t chain_read(struct rte_mbuf *m, struct iov_at *at, uint32_t room, uint32_t *eom,
			   bool *whole)
{
	uint32_t done = 0;
	struct rte_mbuf *s;

	for (s = m; s; s = s->next) {
		/* What the vector took: the rest of the segment waits, whatever the caller said. */
		uint16_t k = (uint16_t)iov_at_copy(at, rte_pktmbuf_mtod(s, void *),
						   RTE_MIN((uint32_t)s->data_len, room - done), true);

		s->data_off += k;
		s->data_len -= k;
		m->pkt_len -= k;
		done += k;
		if (s->data_len) {
			*whole = false;
			return done;
		}
		/* A passed segment's marks are read once: the next read starts after them. */
		if (s->packet_type & MQ_EOM) {
			*eom = s->packet_type & (MQ_EOM | MQ_EOR);
			s->packet_type = 0;
			*whole = s->next == NULL;
			return done;
		}
	}
	*whole = true;
	return done;
}

/*
 * The far side's mbufs straight into the guest's buffers: a host socket's read. Each burst
 * is peeked (rte_ring's peek API: the mbufs stay in the rte_ring until the finish), copied,
 * and only the chains copied whole are taken out and freed: one copied in part stays at the
 * head, still the far side's in its count, to go on at the next read. The mbufs never count
 * in our quota. A message's end with nothing before it in this read (the end of one whose
 * pieces were read before, or an empty message) ends a read of 0 bytes with its marks.
 */
ssize_t ep_pipe_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len,
		      uint32_t *eom)
{
	struct rte_ring *in = e->pipe->r[!e->side];
	struct iov_at at = { .iov = iov, .n = n };
	struct rte_mbuf *m[PIPE_BURST];
	uint32_t got = 0, want = (uint32_t)RTE_MIN(len, (size_t)UINT32_MAX);
	bool moved = false, part = false;

	while (got < want && !*eom && !part) {
		unsigned int i, taken = 0, nb;

		nb = rte_ring_dequeue_burst_start(in, (void **)m, PIPE_BURST, NULL);
		if (nb == 0) {
			rte_ring_dequeue_finish(in, 0);
			break;
		}
		for (i = 0; i < nb && got < want; i++) {
			uint32_t end = 0;
			bool whole;

			got += chain_read(m[i], &at, want - got, &end, &whole);
			if (!whole) {
				part = true;
				break;
			}
			taken++;
			if (end) {
				*eom = end;
				break;
			}
		}
		rte_ring_dequeue_finish(in, taken);
		if (taken) {
			rte_pktmbuf_free_bulk(m, taken);
			moved = true;
		}
	}
	/* Room in the pipe: a far side whose queue waits for it may go on. */
	if (moved)
		ep_pipe_wake(e->pipe, !e->side);
	pipe_readable(e, in);
	return got;
}
