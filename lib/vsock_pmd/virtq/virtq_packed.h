/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_PACKED_H
#define VSOCK_VIRTQ_PACKED_H

/**
 * Device side of a packed virtqueue (VIRTIO_F_RING_PACKED), for a polling
 * backend, with the contract of the split engine (virtq_split.h): bursts of
 * validated chains, unget, completions in a shadow published in one flush,
 * should_notify after the flush. Only what differs is described here.
 *
 * Positions. One ring of descriptors, read and rewritten in place. A
 * position is an index below the ring size plus a wrap counter; here both
 * travel in one uint16_t, index in bits 0-14 and wrap counter in bit 15, as
 * vhost-user's SET/GET_VRING_BASE and rte_vhost_{get,set}_vring_base carry
 * them. struct virtq's last_avail_idx and last_used_idx hold that encoding.
 * A descriptor is available when its AVAIL flag equals the wrap counter of
 * its position and its USED flag does not.
 *
 * Chains. A chain is the descriptors linked by NEXT in ring order, or one
 * INDIRECT descriptor whose table holds the buffers (NEXT is ignored inside
 * a table, as the spec says). The buffer id comes from the chain's last
 * descriptor and must be below the ring size (every known driver uses ids as
 * indices; the spec's own example asserts it). struct virtq_chain.head is that
 * id and .ndescs the ring descriptors the chain took.
 *
 * Completions. A used descriptor (id, len, flags AVAIL = USED = wrap) is
 * written at the next used position, which then moves on by the chain's
 * ndescs. virtq_packed_flush() writes each shadow entry's len, id and flags
 * with one 64-bit store (they are bytes 8-15 of the descriptor), so that no
 * driver sees the flags without the rest, and the first entry last of all
 * with a release store: a driver reads used descriptors in ring order from
 * that first one, so the whole burst appears to it at once.
 *
 * Batches. Where four chains of one descriptor each fill one cache line of
 * the ring (the line's first slot, none past the end), a dequeue checks their
 * four flags in one pass and orders them before the rest with one barrier;
 * anywhere else, and for any descriptor that is not such a chain, one at a
 * time. A flush whose entries are all of one descriptor (consecutive slots)
 * writes them in one or two runs, with no test per entry; with a longer
 * chain among them, it finds each entry's slot from the chains' lengths.
 *
 * Notifications: the driver event suppression structure (ENABLE, DISABLE,
 * DESC with off_wrap under VIRTIO_RING_F_EVENT_IDX); kicks are turned off
 * with DISABLE in ours.
 *
 * The ring size need not be a power of two (it must be 1..32768).
 */

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtq_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Wrap counter bit of an encoded position. */
#define VIRTQ_PACKED_WRAP 0x8000u
/** Index bits of an encoded position. */
#define VIRTQ_PACKED_IDX_MASK 0x7fffu
/** Descriptors taken and written back as one batch: the four of one 64-byte cache line. */
#define VIRTQ_PACKED_BATCH 4

/**
 * Set up @p vq over a packed ring already mapped in our address space,
 * resuming at the encoded positions @p last_avail and @p last_used (a new
 * ring starts at VIRTQ_PACKED_WRAP, i.e. index 0, wrap counter 1). Returns
 * 0, -EINVAL for a size of 0 or above 32768 or a position whose index is not
 * below the size, or -EFAULT for a NULL pointer or a misaligned part (ring
 * 16, event structures 4).
 */
int virtq_packed_init(struct virtq *vq, const struct guest_mem *mem,
		      struct vring_packed_desc *desc, struct vring_packed_desc_event *driver_event,
		      struct vring_packed_desc_event *device_event, uint16_t size,
		      uint16_t last_avail, uint16_t last_used, uint64_t features);

/** As virtq_split_dequeue_burst(); at most VIRTQ_SHADOW_MAX chains per call. */
uint16_t virtq_packed_dequeue_burst(struct virtq *vq, struct virtq_chain *chains, uint16_t max);

/** As virtq_split_unget(). */
uint16_t virtq_packed_unget(struct virtq *vq, uint16_t n);

/** Publish every shadow entry, the first one's flags last; nothing if empty. */
void virtq_packed_flush(struct virtq *vq);

/*
 * A used descriptor's bytes 8-15, its len, id and flags, as one little-endian word: a 64-bit
 * store of it makes all three visible at once.
 */
static inline uint64_t virtq_packed_used_tail(uint16_t id, uint32_t len, uint16_t flags)
{
	return htole64((uint64_t)len | (uint64_t)id << 32 | (uint64_t)flags << 48);
}

/*
 * A completion into the shadow, its id and descriptor count known good, @p flags its WRITE
 * bit (AVAIL and USED come with the position, in the flush).
 */
static inline void virtq_packed_shadow_add(struct virtq *vq, uint16_t id, uint16_t ndescs,
					   uint32_t len, uint16_t flags)
{
	uint16_t n = vq->shadow_count;

	vq->pshadow[n] = virtq_packed_used_tail(id, len, flags);
	vq->pndescs[n] = ndescs;
	vq->shadow_count = ++n;
	vq->shadow_descs += ndescs;
	vq->stats.completed++;
	if (vq->per_entry_publish || n == vq->shadow_cap)
		virtq_packed_flush(vq);
}

/**
 * Record that chain @p c, as this ring's dequeue returned it, is done with @p len bytes
 * written (WRITE set if @p len is not 0). The dequeue checked its id (below the ring size)
 * and its descriptor count (1 to the room the ring had, never above the size) where it made
 * the chain, from the descriptors it loaded once; the flush's slot arithmetic relies on both.
 */
static inline void virtq_packed_complete_chain(struct virtq *vq, const struct virtq_chain *c,
					       uint32_t len)
{
	virtq_packed_shadow_add(vq, c->head, c->ndescs, len, len ? VRING_DESC_F_WRITE : 0);
}

/**
 * As virtq_packed_complete_chain() for a buffer the device writes into (an rx buffer):
 * WRITE whatever @p len, 0 included, which the spec reads as "0 bytes written" (DPDK's
 * vhost marks every used rx descriptor so). One test fewer per packet.
 */
static inline void virtq_packed_complete_written(struct virtq *vq, const struct virtq_chain *c,
						 uint32_t len)
{
	virtq_packed_shadow_add(vq, c->head, c->ndescs, len, VRING_DESC_F_WRITE);
}

/**
 * As virtq_packed_complete_chain(), for a buffer id and descriptor count that did not come
 * from this ring's dequeue: an id not below the ring size or an ndescs of 0 or above it is
 * counted (VIRTQ_ERR_USED_ID) and dropped.
 */
static inline void virtq_packed_complete(struct virtq *vq, uint16_t id, uint16_t ndescs,
					 uint32_t len)
{
	/* ndescs - 1 wraps for 0: one compare refuses 0 and more than the ring. */
	if (__builtin_expect(id >= vq->size || (unsigned int)ndescs - 1 >= vq->size, 0)) {
		vq->stats.errors[VIRTQ_ERR_USED_ID]++;
		return;
	}
	virtq_packed_shadow_add(vq, id, ndescs, len, len ? VRING_DESC_F_WRITE : 0);
}

/** As virtq_split_should_notify(), from the driver event suppression structure. */
bool virtq_packed_should_notify(struct virtq *vq);

/**
 * The used position to show librte_vhost before rte_vhost_vring_call*() once
 * virtq_packed_should_notify() said yes. DPDK decides again from the driver's
 * off_wrap, measured from the position of its own last call and only within
 * one lap of the ring: after a lap without interrupts it would stay silent
 * for an event we know was passed. The position just past the driver's event
 * makes its check pass; without a DESC event it is last_used_idx.
 */
uint16_t virtq_packed_call_pos(const struct virtq *vq);

/** Ask the driver not to kick us (DISABLE in the device event structure). */
void virtq_packed_disable_guest_kicks(struct virtq *vq);

/** Ask the driver to kick us for its next buffer (ENABLE). */
void virtq_packed_enable_guest_kicks(struct virtq *vq);

/** The AVAIL and USED flags of a packed descriptor. */
#define VIRTQ_PACKED_F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define VIRTQ_PACKED_F_USED (1u << VRING_PACKED_DESC_F_USED)

/*
 * AVAIL and USED of a descriptor the driver made available at a position whose wrap counter
 * is @p wrap: AVAIL equal to the counter, USED not. Crossing the ring's end flips both.
 */
static inline uint16_t virtq_packed_avail_bits(bool wrap)
{
	return wrap ? VIRTQ_PACKED_F_AVAIL : VIRTQ_PACKED_F_USED;
}

/* Whether @p flags are those of an available descriptor (avail_bits() of its position). */
static inline bool virtq_packed_desc_avail(uint16_t flags, uint16_t want)
{
	return (flags & (VIRTQ_PACKED_F_AVAIL | VIRTQ_PACKED_F_USED)) == want;
}

/**
 * Whether the next descriptor is available (a relaxed look, for sleep decisions). Inline:
 * a round that finds nothing asks it every time.
 */
static inline bool virtq_packed_avail_pending(const struct virtq *vq)
{
	/* A broken ring's avail_want matches no flags. */
	return virtq_packed_desc_avail(le16toh(__atomic_load_n(vq->next_flags, __ATOMIC_RELAXED)),
				       vq->avail_want);
}

/** As virtq_split_set_per_entry_publish(). */
void virtq_packed_set_per_entry_publish(struct virtq *vq, bool on);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_VIRTQ_PACKED_H */
