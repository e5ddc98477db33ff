/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_IMPL_H
#define VSOCK_VIRTQ_IMPL_H

/*
 * What the sources of the two layouts share inside this room: branch hints,
 * the barrier that keeps guest memory read once, and the steps of a chain
 * walk that do not depend on the layout. Not for other rooms: they have
 * DPDK's rte_branch_prediction.h, which this room, built without DPDK too
 * (vsock_core), cannot use.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtq_common.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/*
 * For the walks, which take what is not a chain of one descriptor in one region: out of
 * line, so that the burst loops around that common case keep their registers. Not cold: a
 * driver that chains a header and fragments takes the walk at every packet.
 */
#define noinline __attribute__((noinline))
/* For the steps of that common case, inlined into every loop that takes it. */
#define always_inline inline __attribute__((always_inline))

/* Keeps the compiler from re-reading guest memory in place of a local copy. */
#define compiler_barrier() __asm__ volatile("" ::: "memory")

/* What a chain walk has gathered so far. */
struct virtq_walk {
	uint64_t rlen, wlen;
	unsigned int np, nr;
	/* Pieces the chain may still take: an empty descriptor uses one (see below). */
	unsigned int lim;
	bool writing;
};

/* One buffer of the chain: checked, translated, appended to c's pieces. */
static inline enum virtq_err virtq_walk_add(const struct virtq *vq, struct virtq_chain *c,
		struct virtq_walk *w, uint64_t addr, uint32_t len, uint16_t flags)
{
	int k;

	/* Direction counts for an empty descriptor too: the spec's order rule. */
	if (flags & VRING_DESC_F_WRITE) {
		w->wlen += len;
		w->writing = true;
	} else {
		if (unlikely(w->writing))
			return VIRTQ_ERR_DESC_ORDER;
		w->rlen += len;
	}
	if (unlikely((w->rlen | w->wlen) > UINT32_MAX))
		return VIRTQ_ERR_CHAIN_LEN;
	if (unlikely(len == 0)) {
		/*
		 * An empty buffer is legal (the spec does not forbid it; Linux vhost
		 * skips it): no piece, and its address, naming no byte, is not looked
		 * at. It still takes one piece's room, so that a chain costs at most
		 * VIRTQ_CHAIN_MAX_PIECES descriptors of work whatever it holds.
		 */
		if (unlikely(w->lim == w->np))
			return VIRTQ_ERR_PIECES;
		w->lim--;
		return VIRTQ_ERR_NONE;
	}
	k = guest_mem_translate(vq->mem, addr, len, &c->pieces[w->np], w->lim - w->np);
	if (unlikely(k < 0))
		return k == -ENOSPC ? VIRTQ_ERR_PIECES : VIRTQ_ERR_DESC_ADDR;
	w->np += k;
	if (!w->writing)
		w->nr = w->np;
	return VIRTQ_ERR_NONE;
}

/*
 * What a burst checks its chains of one descriptor against, in the burst's locals: the
 * compiler must assume that every store into a chain may change these in memory, and
 * would load them again for each descriptor. @p hint is the region of guest memory the
 * burst's last such buffer was in (none at first): a burst's buffers mostly share one.
 */
struct virtq_burst {
	const struct guest_mem *mem;
	struct guest_mem_region hint;
	uint16_t size;
};

static inline void virtq_burst_init(struct virtq_burst *b, const struct virtq *vq)
{
	b->mem = vq->mem;
	b->hint = (struct guest_mem_region){ 0, 0, 0 };
	b->size = vq->size;
}

/*
 * A chain of one descriptor (neither NEXT nor INDIRECT in @p flags) whose buffer lies inside
 * one region of guest memory, as every Linux driver's rx buffers and small tx packets are:
 * its one piece straight into @p c, without a walk. False for anything else (an empty
 * buffer, one across two regions or outside guest memory), which a walk then takes and, if
 * the guest broke a rule, names. One descriptor needs no other check of the walk: its
 * length is below 4 GiB, there is no order to keep, and it makes one piece.
 */
static always_inline bool virtq_chain_one(struct virtq_burst *b, struct virtq_chain *c,
		uint64_t addr, uint32_t len, uint16_t flags)
{
	uint64_t off = addr - b->hint.gpa;

	/* Inside the hint's region, and not empty: len - 1 wraps for 0. */
	if (unlikely(off >= b->hint.size || (uint64_t)len - 1 >= b->hint.size - off)) {
		const struct guest_mem_region *r = guest_mem_find(b->mem, addr);

		if (unlikely(r == NULL))
			return false;
		off = addr - r->gpa;
		if (unlikely((uint64_t)len - 1 >= r->size - off))
			return false;
		b->hint = *r;
	}
	c->pieces[0].addr = (void *)(uintptr_t)(b->hint.hva + off);
	c->pieces[0].len = len;
	c->nr_pieces = 1;
	if (flags & VRING_DESC_F_WRITE) {
		c->nr_readable = 0;
		c->readable_len = 0;
		c->writable_len = len;
	} else {
		c->nr_readable = 1;
		c->readable_len = len;
		c->writable_len = 0;
	}
	return true;
}

/* The walk's totals into @p c: all bounded by the walk (pieces <= 64, lengths < 4 GiB). */
static inline void virtq_walk_done(const struct virtq_walk *w, struct virtq_chain *c)
{
	c->nr_readable = (uint16_t)w->nr;
	c->nr_pieces = (uint16_t)w->np;
	c->readable_len = (uint32_t)w->rlen;
	c->writable_len = (uint32_t)w->wlen;
}

#endif /* VSOCK_VIRTQ_IMPL_H */
