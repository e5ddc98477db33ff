/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_COMMON_H
#define VSOCK_VIRTQ_COMMON_H

/**
 * What the two virtqueue layouts share: the queue (struct virtq), the
 * validated chain a dequeue hands out and the copies in and out of it, the
 * error kinds and the counters. The split engine is virtq_split.h, the
 * packed one virtq_packed.h, the facade over both virtq.h.
 */

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/virtio_ring.h>

#include "guest_mem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest queue the spec allows, of either layout. */
#define VIRTQ_MAX_SIZE 32768
/**
 * Host-contiguous pieces one chain may use, an empty descriptor counting as
 * one; more marks the queue broken.
 */
#define VIRTQ_CHAIN_MAX_PIECES 64
/** Shadow used entries kept before a forced flush (and at most the ring size). */
#define VIRTQ_SHADOW_MAX 1024

/** An avail_want no descriptor's AVAIL and USED bits equal: a broken packed ring's. */
#define VIRTQ_AVAIL_WANT_NONE 0xffffu

/** Why a queue was marked broken (or a completion refused). */
enum virtq_err {
	VIRTQ_ERR_NONE = 0,
	VIRTQ_ERR_AVAIL_IDX,		/**< avail->idx moved ahead by more than size */
	VIRTQ_ERR_HEAD,			/**< avail ring entry >= size */
	VIRTQ_ERR_NEXT,			/**< next >= size (or >= indirect table entries) */
	VIRTQ_ERR_LOOP,			/**< chain longer than its table: a loop */
	VIRTQ_ERR_INDIRECT_FEATURE,	/**< INDIRECT flag, feature not negotiated */
	VIRTQ_ERR_INDIRECT_NESTED,	/**< INDIRECT inside an indirect table */
	VIRTQ_ERR_INDIRECT_NEXT,	/**< INDIRECT and NEXT on one descriptor */
	VIRTQ_ERR_INDIRECT_LEN,		/**< table length 0 or not a multiple of 16 */
	VIRTQ_ERR_INDIRECT_ADDR,	/**< table not inside guest memory */
	VIRTQ_ERR_DESC_ADDR,		/**< buffer not inside guest memory */
	VIRTQ_ERR_DESC_ORDER,		/**< device-readable after device-writable */
	VIRTQ_ERR_PIECES,		/**< more than VIRTQ_CHAIN_MAX_PIECES pieces (empties included) */
	VIRTQ_ERR_CHAIN_LEN,		/**< readable or writable total >= 4 GiB */
	VIRTQ_ERR_USED_ID,		/**< caller completed a head >= size (dropped) */
	VIRTQ_ERR_CHAIN_AVAIL,		/**< packed: NEXT into a descriptor not available */
	VIRTQ_ERR_MAX
};

/** Short, stable name of an error kind ("avail_idx", "head", ...). */
const char *virtq_err_str(enum virtq_err err);

struct virtq_stats {
	uint64_t dequeued;		/**< chains handed out by dequeue */
	uint64_t ungot;			/**< chains given back by unget */
	uint64_t completed;		/**< used entries recorded */
	uint64_t used_idx_stores;	/**< used->idx stores (= non-empty flushes) */
	uint64_t notify_yes;		/**< should_notify() said interrupt */
	uint64_t notify_no;		/**< should_notify() said no */
	uint64_t errors[VIRTQ_ERR_MAX];
};

/**
 * One validated descriptor chain: readable pieces first, then writable. An
 * empty descriptor leaves no piece, so a chain of empty ones has none (and
 * lengths 0): the caller treats it as a buffer too small for its use.
 */
struct virtq_chain {
	uint16_t head;
	uint16_t nr_readable;		/**< pieces[0, nr_readable) */
	uint16_t nr_pieces;		/**< pieces[nr_readable, nr_pieces) writable */
	/** Packed rings: ring descriptors the chain took (what its completion skips). */
	uint16_t ndescs;
	uint32_t readable_len;
	uint32_t writable_len;
	struct guest_mem_piece pieces[VIRTQ_CHAIN_MAX_PIECES];
};

/*
 * One queue of either layout. virtq_split_init() (virtq_split.h) sets up a
 * split ring, virtq_packed_init() (virtq_packed.h) a packed one; the
 * layout-independent vq_*() calls in virtq.h dispatch on @p packed. The split
 * engine never reads the packed members.
 */
struct virtq {
	/* Hot fields, read on every burst. */
	union {
		struct vring_desc *desc;
		struct vring_packed_desc *pdesc;		/**< packed: the ring */
	};
	union {
		struct vring_avail *avail;
		struct vring_packed_desc_event *driver_event;	/**< packed: driver's suppression */
	};
	union {
		struct vring_used *used;
		struct vring_packed_desc_event *device_event;	/**< packed: ours */
	};
	const struct guest_mem *mem;
	/**
	 * Packed: the flags of the next descriptor to take, and their AVAIL and USED bits
	 * when it is available (VIRTQ_AVAIL_WANT_NONE once broken): a poll's look, ready.
	 */
	const uint16_t *next_flags;
	uint16_t avail_want;
	uint16_t size;
	uint16_t mask;
	/**
	 * Next avail ring slot to read (free-running). Packed ring: the next
	 * descriptor to read, index in bits 0-14 and wrap counter in bit 15 (the
	 * vhost-user vring base encoding).
	 */
	uint16_t last_avail_idx;
	/** Value of used->idx as last published by us (free-running); packed: as above. */
	uint16_t last_used_idx;
	uint16_t shadow_count;
	uint16_t shadow_cap;
	/** Packed: ring descriptors the shadow's entries took (shadow_count if one each). */
	uint32_t shadow_descs;
	/** Chains of the last dequeue that unget may still give back. */
	uint16_t unget_max;
	/** used index the guest was last told about (EVENT_IDX). */
	uint16_t signalled_used;
	bool signalled_used_valid;
	bool event_idx;
	bool indirect;
	/** Publish each completion at once (one used->idx store per entry). */
	bool per_entry_publish;
	bool broken;
	/** Packed layout (VIRTIO_F_RING_PACKED): see virtq_packed.h. */
	bool packed;
	enum virtq_err broken_reason;
	struct virtq_stats stats;
	union {
		struct vring_used_elem shadow[VIRTQ_SHADOW_MAX];
		struct {
			/**
			 * Packed: each completion's used descriptor from its len on, as the
			 * flush stores it (virtq_packed_used_tail()), but AVAIL and USED.
			 */
			uint64_t pshadow[VIRTQ_SHADOW_MAX];
			/** Packed: ring descriptors each completion's chain took. */
			uint16_t pndescs[VIRTQ_SHADOW_MAX];
			/** Ring position of each chain of the last dequeue, for unget. */
			uint16_t pstart[VIRTQ_SHADOW_MAX];
		};
	};
};

/**
 * What virtq_split_init() and virtq_packed_init() share, after their own checks: everything
 * before the shadow cleared (shadow_count guards the shadow itself), the positions, the
 * shadow's capacity and the negotiated ring features. The caller sets the ring pointers.
 */
static inline void virtq_init_common(struct virtq *vq, const struct guest_mem *mem,
		uint16_t size, uint16_t last_avail_idx, uint16_t last_used_idx,
		uint64_t features)
{
	memset(vq, 0, offsetof(struct virtq, shadow));
	vq->mem = mem;
	vq->size = size;
	vq->last_avail_idx = last_avail_idx;
	vq->last_used_idx = last_used_idx;
	vq->shadow_cap = size < VIRTQ_SHADOW_MAX ? size : VIRTQ_SHADOW_MAX;
	vq->event_idx = (features >> VIRTIO_RING_F_EVENT_IDX) & 1;
	vq->indirect = (features >> VIRTIO_RING_F_INDIRECT_DESC) & 1;
}

/** Stop using @p vq for good: the guest broke a rule of the ring, counted under @p err. */
static inline void virtq_mark_broken(struct virtq *vq, enum virtq_err err)
{
	vq->broken = true;
	vq->avail_want = VIRTQ_AVAIL_WANT_NONE;
	vq->broken_reason = err;
	vq->stats.errors[err]++;
}

/**
 * The end of a dequeue of @p done chains, the next position @p next: what a later unget may
 * give back, and the count. Returns @p done.
 */
static inline uint16_t virtq_dequeued(struct virtq *vq, uint16_t next, unsigned int done)
{
	vq->last_avail_idx = next;
	vq->unget_max = (uint16_t)done;
	vq->stats.dequeued += done;
	return (uint16_t)done;
}

/**
 * How many of the last dequeue's chains an unget of @p n gives back (at most those it
 * took), taken off what a later unget may give back and counted.
 */
static inline uint16_t virtq_ungot(struct virtq *vq, uint16_t n)
{
	if (n > vq->unget_max)
		n = vq->unget_max;
	vq->unget_max -= n;
	vq->stats.ungot += n;
	return n;
}

/**
 * Copy between a flat buffer and bytes [off, off + len) of a piece list, in
 * either direction. Bounded by @p n pieces; returns the bytes copied.
 */
uint32_t virtq_pieces_copy(const struct guest_mem_piece *p, unsigned int n, uint32_t off,
		void *buf, uint32_t len, bool to_pieces);

/**
 * Copy @p len bytes from the readable part of @p c, starting @p off bytes in,
 * to @p dst. Returns the bytes copied: less than @p len only if the readable
 * part ends first.
 */
static inline uint32_t virtq_chain_read(const struct virtq_chain *c, uint32_t off, void *dst,
		uint32_t len)
{
	/*
	 * A packet's header in its first buffer, as every Linux driver puts it:
	 * one copy, of a constant size where the caller's is.
	 */
	if (__builtin_expect(c->nr_readable != 0 && (uint64_t)off + len <= c->pieces[0].len, 1)) {
		memcpy(dst, (const uint8_t *)c->pieces[0].addr + off, len);
		return len;
	}
	return virtq_pieces_copy(c->pieces, c->nr_readable, off, dst, len, false);
}

/**
 * Copy @p len bytes from @p src into the writable part of @p c, starting
 * @p off bytes in. Returns the bytes copied (less if the writable part ends).
 */
uint32_t virtq_chain_write(const struct virtq_chain *c, uint32_t off, const void *src,
		uint32_t len);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_VIRTQ_COMMON_H */
