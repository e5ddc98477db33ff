/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pool of ring endpoints. Everything is allocated once, at start: a connection's
 * setup takes an ep_ring from a lock-free free list and never calls the allocator, so a
 * worker lcore can open one between two packets.
 *
 * The pool is one named memzone, so that a DPDK secondary process running the native API
 * (native_proc.c) finds it: the ep_rings, their rte_rings and the free list are at the same
 * addresses in every process of the group.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>

#include "ep_ring.h"

#define POOL_MZ "vsock_ep_pool"
#define FREE_LIST "vsock_ep_ring_free"

/* The memzone's head; the ep_rings, then their rte_rings, follow it. */
struct ep_pool {
	unsigned int nb;
	size_t ring_bytes;
	struct rte_ring *free_list;
	struct ep_ring ep[] __rte_cache_aligned;
};

static const struct rte_memzone *pool_mz;	/* the primary's: it frees it */
static struct ep_pool *pool;

/* This process's eventfd for each worker lcore's ep_waker, plus one (0: none known). */
static int waker_fds[RTE_MAX_LCORE];

struct ep_ring *ep_ring_at(uint32_t idx)
{
	return pool && idx < pool->nb ? &pool->ep[idx] : NULL;
}

static void ring_drain(struct rte_ring *r)
{
	struct rte_mbuf *m[32];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(r, (void **)m, RTE_DIM(m), NULL)) > 0)
		rte_pktmbuf_free_bulk(m, n);
}

int ep_ring_pool_init(unsigned int nb, unsigned int ring_size, int socket)
{
	ssize_t sz = rte_ring_get_memsize(ring_size);
	size_t ring_bytes, ep_bytes;
	unsigned int i, s;
	uint8_t *ring_mem;

	if (pool)
		return -EALREADY;
	if (nb == 0 || sz < 0)
		return -EINVAL;
	ring_bytes = RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE);
	ep_bytes = RTE_ALIGN_CEIL(sizeof(*pool) + sizeof(pool->ep[0]) * nb, RTE_CACHE_LINE_SIZE);
	pool_mz = rte_memzone_reserve_aligned(POOL_MZ, ep_bytes + ring_bytes * 2 * nb, socket,
					      0, RTE_CACHE_LINE_SIZE);
	if (!pool_mz)
		return -ENOMEM;
	pool = pool_mz->addr;
	memset(pool, 0, ep_bytes);
	pool->nb = nb;
	pool->ring_bytes = ring_bytes;
	pool->free_list = rte_ring_create(FREE_LIST, rte_align32pow2(nb + 1), socket, 0);
	if (!pool->free_list) {
		ep_ring_pool_fini();
		return -ENOMEM;
	}
	ring_mem = (uint8_t *)pool + ep_bytes;
	for (i = 0; i < nb; i++) {
		struct ep_ring *p = &pool->ep[i];

		p->idx = i;
		p->prog_side = -1;
		for (s = 0; s < 2; s++) {
			struct rte_ring *r = (void *)(ring_mem + ring_bytes * (2 * i + s));
			char name[RTE_RING_NAMESIZE];

			/* Not looked up by name: the name only has to fit. */
			snprintf(name, sizeof(name), "vsock_epr_%u_%u", i, s);
			if (rte_ring_init(r, name, ring_size, RING_F_SP_ENQ | RING_F_SC_DEQ) < 0) {
				ep_ring_pool_fini();
				return -rte_errno;
			}
			p->r[s] = r;
		}
		rte_ring_enqueue(pool->free_list, p);
	}
	return 0;
}

int ep_ring_pool_attach(void)
{
	const struct rte_memzone *mz = rte_memzone_lookup(POOL_MZ);

	if (!mz)
		return -ENODEV;
	pool = mz->addr;
	return 0;
}

void ep_ring_pool_detach(void)
{
	pool = NULL;
}

void ep_ring_pool_fini(void)
{
	unsigned int i;

	if (!pool_mz)
		return;
	for (i = 0; i < pool->nb; i++) {
		/* Where a failed init stopped. */
		if (!pool->ep[i].r[0] || !pool->ep[i].r[1])
			break;
		ring_drain(pool->ep[i].r[0]);
		ring_drain(pool->ep[i].r[1]);
		rte_pktmbuf_free(pool->ep[i].msg_head);
	}
	rte_ring_free(pool->free_list);
	rte_memzone_free(pool_mz);
	pool_mz = NULL;
	pool = NULL;
}

struct ep_ring *ep_ring_alloc(void)
{
	struct ep_ring *p;

	if (!pool || rte_ring_dequeue(pool->free_list, (void **)&p) < 0)
		return NULL;
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

void ep_waker_set_fd(unsigned int lcore, int fd)
{
	waker_fds[lcore] = fd < 0 ? 0 : fd + 1;
}

int ep_waker_fd(unsigned int lcore)
{
	return lcore < RTE_MAX_LCORE ? waker_fds[lcore] - 1 : -1;
}

void ep_waker_wake(struct ep_waker *w)
{
	uint64_t one = 1;
	ssize_t rc;
	int fd;

	/* The first far side to see the announcement writes; the sleeper clears it anyway. */
	if (!__atomic_exchange_n(&w->sleeping, 0, __ATOMIC_RELAXED))
		return;
	/*
	 * A process that was given no eventfd for this worker cannot wake it: the worker's
	 * epoll timeout bounds the wait instead.
	 */
	fd = ep_waker_fd(w->lcore);
	if (fd < 0)
		return;
	/* Only EAGAIN can fail it: the counter is full, so the worker wakes anyway. */
	rc = write(fd, &one, sizeof(one));
	RTE_SET_USED(rc);
}

void ep_ring_release(struct ep_ring *p, unsigned int side, uint32_t flags)
{
	ep_ring_set(p, side, flags | EP_RING_CLOSED);
	/* acq_rel: the last side sees every access the other side made before letting go. */
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	ring_drain(p->r[0]);
	ring_drain(p->r[1]);
	rte_pktmbuf_free(p->msg_head);
	p->msg_head = NULL;
	p->msg_tail = NULL;
	rte_ring_enqueue(pool->free_list, p);
}
