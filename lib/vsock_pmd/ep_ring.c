/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pool of ring endpoints. Everything is allocated once, at start: a connection's
 * setup takes an ep_ring from a lock-free free list and never calls the allocator, so a
 * worker lcore can open one between two packets.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ep_ring.h"

static struct ep_ring *pool;
static uint8_t *ring_mem;
static size_t ring_bytes;
static unsigned int pool_n;
static struct rte_ring *free_list;

bool ep_ring_pool_ready(void)
{
	return pool != NULL;
}

struct ep_ring *ep_ring_at(uint32_t idx)
{
	return pool && idx < pool_n ? &pool[idx] : NULL;
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
	unsigned int i, s;
	ssize_t sz = rte_ring_get_memsize(ring_size);

	if (pool)
		return -EALREADY;
	if (nb == 0 || sz < 0)
		return -EINVAL;
	ring_bytes = RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE);
	pool = rte_zmalloc_socket("vsock_ep_ring", sizeof(*pool) * nb, RTE_CACHE_LINE_SIZE,
				  socket);
	ring_mem = rte_zmalloc_socket("vsock_ep_ring_mem", ring_bytes * 2 * nb,
				      RTE_CACHE_LINE_SIZE, socket);
	free_list = rte_ring_create("vsock_ep_ring_free", rte_align32pow2(nb + 1), socket, 0);
	if (!pool || !ring_mem || !free_list) {
		ep_ring_pool_fini();
		return -ENOMEM;
	}
	pool_n = nb;
	for (i = 0; i < nb; i++) {
		struct ep_ring *p = &pool[i];

		p->idx = i;
		p->prog_side = -1;
		for (s = 0; s < 2; s++) {
			char name[RTE_RING_NAMESIZE];

			/* Not looked up by name: the name only has to fit. */
			snprintf(name, sizeof(name), "vsock_epr_%u_%u", i, s);
			p->r[s] = (struct rte_ring *)(ring_mem + ring_bytes * (2 * i + s));
			if (rte_ring_init(p->r[s], name, ring_size,
					  RING_F_SP_ENQ | RING_F_SC_DEQ) < 0) {
				ep_ring_pool_fini();
				return -rte_errno;
			}
		}
		rte_ring_enqueue(free_list, p);
	}
	return 0;
}

void ep_ring_pool_fini(void)
{
	unsigned int i;

	for (i = 0; pool && ring_mem && i < pool_n; i++) {
		ring_drain(pool[i].r[0]);
		ring_drain(pool[i].r[1]);
		rte_pktmbuf_free(pool[i].msg_head);
	}
	rte_ring_free(free_list);
	rte_free(ring_mem);
	rte_free(pool);
	free_list = NULL;
	ring_mem = NULL;
	pool = NULL;
	pool_n = 0;
}

struct ep_ring *ep_ring_alloc(void)
{
	struct ep_ring *p;

	if (!free_list || rte_ring_dequeue(free_list, (void **)&p) < 0)
		return NULL;
	p->gen++;
	p->flags[0] = 0;
	p->flags[1] = 0;
	p->prog_side = -1;
	p->prog_open = 0;
	p->msg_head = NULL;
	p->msg_tail = NULL;
	p->waker[0] = NULL;
	p->waker[1] = NULL;
	p->refs = 2;
	return p;
}

void ep_waker_wake(struct ep_waker *w)
{
	uint64_t one = 1;

	ssize_t rc;

	/* The first far side to see the announcement writes; the sleeper clears it anyway. */
	if (!__atomic_exchange_n(&w->sleeping, 0, __ATOMIC_RELAXED))
		return;
	/* Only EAGAIN can fail it: the counter is full, so the worker wakes anyway. */
	rc = write(w->fd, &one, sizeof(one));
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
	rte_ring_enqueue(free_list, p);
}
