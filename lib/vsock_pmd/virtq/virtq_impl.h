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
 * A chain of one descriptor (neither NEXT nor INDIRECT in @p flags) whose buffer lies inside
 * one region of guest memory, as every Linux driver's rx buffers and small tx packets are:
 * its one piece straight into @p c, without a walk. False for anything else (an empty
 * buffer, one across two regions or outside guest memory), which a walk then takes and, if
 * the guest broke a rule, names. One descriptor needs no other check of the walk: its
 * length is below 4 GiB, there is no order to keep, and it makes one piece.
 */
static inline bool virtq_chain_one(const struct virtq *vq, struct virtq_chain *c,
		uint64_t addr, uint32_t len, uint16_t flags)
{
	const struct guest_mem_region *r = guest_mem_find(vq->mem, addr);
	uint64_t off;

	if (unlikely(r == NULL))
		return false;
	/* Not past the region's end, and not empty: len - 1 wraps for 0. */
	off = addr - r->gpa;
	if (unlikely((uint64_t)len - 1 >= r->size - off))
		return false;
	c->pieces[0].addr = (void *)(uintptr_t)(r->hva + off);
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
