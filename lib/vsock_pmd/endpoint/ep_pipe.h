/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_PIPE_H
#define VSOCK_PMD_EP_PIPE_H

/**
 * The pipe: a vsock connection whose far side is not a host socket but a pair of
 * rte_rings of mbufs. Two users:
 * - guest-to-guest (ep_sibling.h): the far side is the same kind of connection in another
 *   VM's table, possibly on another lcore;
 * - the native host API (vsock_pmd_native.h): the far side is a host program's lcore.
 *
 * One pipe joins two sides: side 0 opened the connection (its initiator), side 1 accepts
 * it. Each side is one thread at a time: it is the only producer of r[side] and the only
 * consumer of r[!side], so both rte_rings are single-producer single-consumer, and it is the only
 * writer of flags[side]. Nothing else is shared: neither side ever touches the other's state.
 *
 * Data is mbufs (chains allowed), each segment's packet_type carrying MQ_EOM on the last
 * piece of a SEQPACKET message. A worker's side peeks the mbufs it reads (ep_pipe_readv()):
 * a chain it copied in part stays at the head of the rte_ring, its data start moved past
 * what was copied, and counts as the far side's until it is taken out. Events are flags, ordered after the data: a side enqueues its
 * last mbufs, then sets EP_PIPE_SHUT_SEND (release); the other side, once it has loaded the
 * flag (acquire) and found the rte_ring empty, has read everything.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ring.h>

#include "ep_queue.h"
#include "ep_waker.h"

/* flags[side]: what that side did. */
#define EP_PIPE_SHUT_SEND	(1u << 0)	/* sends no more: EOF once r[side] is drained */
#define EP_PIPE_SHUT_RCV	(1u << 1)	/* reads no more */
#define EP_PIPE_ACCEPTED	(1u << 2)	/* side 1 only: the connection is established */
#define EP_PIPE_RST		(1u << 3)	/* reset or refused: drop everything */
#define EP_PIPE_CLOSED		(1u << 4)	/* released its side: never looks again */

/* Source port the native API's connects use: above both guest ports and hybrid vsock's. */
#define EP_PIPE_NATIVE_PORT_FIRST (1u << 31)

struct ep_pipe {
	/* The connection, written by side 0 before it publishes the pipe. */
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint16_t type;		/* VIRTIO_VSOCK_TYPE_STREAM or _SEQPACKET */

	/* Pool bookkeeping. */
	uint16_t gen;		/* bumped on every allocation: stale native handles fail */
	uint16_t owner;		/* the VM whose share it counts in (ep_pipe_alloc()) */
	uint32_t idx;
	uint32_t refs;		/* sides still holding it */

	/* The native API's side, if a host program holds one (ep_native.c). */
	int8_t prog_side;	/* -1: none */
	uint8_t prog_open;	/* the program's handle is valid */
	uint8_t prog_owner;	/* the process holding the handle (native_proc.h) */
	struct rte_mbuf *msg_head, *msg_tail;	/* SEQPACKET message being reassembled */

	uint32_t flags[2] __rte_cache_aligned;
	struct rte_ring *r[2];
	/* The worker polling each side, if it may sleep; NULL for a program (it polls). */
	struct ep_waker *waker[2];
} __rte_cache_aligned;

/**
 * Create the pool: @p nb_shares VMs, VM i's share @p quotas[i] pipes, the pool their sum;
 * each rte_ring of @p r_size mbufs (a power of 2), on NUMA node @p socket.
 * @return 0 or a negative errno value.
 */
int ep_pipe_pool_init(const uint32_t *quotas, unsigned int nb_shares, unsigned int r_size,
		      int socket);

/** Free the pool; every pipe must be released (mbufs still in rte_rings are freed). */
void ep_pipe_pool_fini(void);

/** A secondary process: find the primary's pool. @return 0 or -ENODEV (none). */
int ep_pipe_pool_attach(void);

/** A secondary process: forget the pool (the primary keeps it). */
void ep_pipe_pool_detach(void);

/** pipe number @p idx of the pool, or NULL. */
struct ep_pipe *ep_pipe_at(uint32_t idx);

/**
 * A fresh pipe held by both sides (refs 2), empty rte_rings, no flags, counted in VM @p owner's
 * share (its index in the configuration) until the last side releases it. Any thread.
 * @return NULL when that share is used up (counted in its refused) or the pool is missing.
 */
struct ep_pipe *ep_pipe_alloc(unsigned int owner);

/** VM @p owner's pipes in use and the allocations its share refused. */
void ep_pipe_share_get(unsigned int owner, uint32_t *in_use, uint64_t *refused);

/** Wake the worker polling @p side of @p p if it sleeps: data or room for it, or flags. */
static inline void ep_pipe_wake(struct ep_pipe *p, unsigned int side)
{
	ep_wake(__atomic_load_n(&p->waker[side], __ATOMIC_RELAXED));
}

/**
 * @p side's poller is @p w (NULL: a program). Before any look at the rte_ring by that side's
 * poller: a far side that changes the rte_ring earlier finds no waker, and the poller's look
 * before its next sleep sees the change.
 */
static inline void ep_pipe_set_waker(struct ep_pipe *p, unsigned int side, struct ep_waker *w)
{
	__atomic_store_n(&p->waker[side], w, __ATOMIC_RELAXED);
}

/**
 * Set @p flag on @p side (release: everything enqueued before is visible with it), and
 * wake the other side's worker.
 */
static inline void ep_pipe_set(struct ep_pipe *p, unsigned int side, uint32_t flag)
{
	__atomic_fetch_or(&p->flags[side], flag, __ATOMIC_RELEASE);
	ep_pipe_wake(p, !side);
}

/** Flags of @p side (acquire: pairs with ep_pipe_set()). */
static inline uint32_t ep_pipe_flags(const struct ep_pipe *p, unsigned int side)
{
	return __atomic_load_n(&p->flags[side], __ATOMIC_ACQUIRE);
}

/**
 * @p side lets go: sets @p flags | EP_PIPE_CLOSED and drops its reference; the last side
 * frees the mbufs left in both rte_rings and returns the pipe to the pool. Once per side.
 */
void ep_pipe_release(struct ep_pipe *p, unsigned int side, uint32_t flags);

#endif /* VSOCK_PMD_EP_PIPE_H */
