/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_H
#define VSOCK_VIRTQ_H

/**
 * The virtqueue as the datapath sees it: split (virtq_split.h) or packed
 * (virtq_packed.h), chosen per device when the features are negotiated.
 * Each vq_*() call below is one branch on vq->packed, inlined, and then the
 * layout's own function: the branch is predicted (one layout per device), so
 * supporting both costs a poll a few instructions. Semantics are those of the
 * split engine's calls of the same name (virtq_split_*()).
 */
#include <endian.h>

#include "virtq_common.h"
#include "virtq_packed.h"
#include "virtq_split.h"

#define VQ_PACKED(vq) __builtin_expect((vq)->packed, 0)

static inline bool vq_avail_pending(const struct virtq *vq);

static inline uint16_t vq_dequeue_burst(struct virtq *vq, struct virtq_chain *chains,
					uint16_t max)
{
	/*
	 * Nothing available (or the queue broken), what most polls of a queue find: answered
	 * here, without a call. A relaxed look; the layout's burst loads what it takes with
	 * acquire.
	 */
	if (!vq_avail_pending(vq)) {
		vq->unget_max = 0;
		return 0;
	}
	if (VQ_PACKED(vq))
		return virtq_packed_dequeue_burst(vq, chains, max);
	return virtq_split_dequeue_burst(vq, chains, max);
}

/**
 * Complete chain @p c with @p len bytes written into it. @p c must be a chain this queue's
 * dequeue returned (and not given back): its id and descriptor count, checked where the
 * chain was made, are not checked again (virtq_*_complete_chain()).
 */
static inline void vq_complete(struct virtq *vq, const struct virtq_chain *c, uint32_t len)
{
	if (VQ_PACKED(vq))
		virtq_packed_complete_chain(vq, c, len);
	else
		virtq_split_complete_chain(vq, c, len);
}

/**
 * As vq_complete(), for a chain the device wrote into (an rx buffer): a packed ring marks its
 * used descriptor WRITE whatever @p len, 0 included, without testing it.
 */
static inline void vq_complete_written(struct virtq *vq, const struct virtq_chain *c,
				       uint32_t len)
{
	if (VQ_PACKED(vq))
		virtq_packed_complete_written(vq, c, len);
	else
		virtq_split_complete_chain(vq, c, len);
}

static inline uint16_t vq_unget(struct virtq *vq, uint16_t n)
{
	if (VQ_PACKED(vq))
		return virtq_packed_unget(vq, n);
	return virtq_split_unget(vq, n);
}

static inline void vq_flush(struct virtq *vq)
{
	if (VQ_PACKED(vq))
		virtq_packed_flush(vq);
	else
		virtq_split_flush(vq);
}

static inline bool vq_should_notify(struct virtq *vq)
{
	if (VQ_PACKED(vq))
		return virtq_packed_should_notify(vq);
	return virtq_split_should_notify(vq);
}

/**
 * The used index to hand rte_vhost_set_vring_base() before an interrupt:
 * last_used_idx, except on a packed ring (virtq_packed_call_pos()).
 */
static inline uint16_t vq_call_used_idx(const struct virtq *vq)
{
	if (VQ_PACKED(vq))
		return virtq_packed_call_pos(vq);
	return vq->last_used_idx;
}

static inline void vq_disable_guest_kicks(struct virtq *vq)
{
	if (VQ_PACKED(vq))
		virtq_packed_disable_guest_kicks(vq);
	else
		virtq_split_disable_guest_kicks(vq);
}

/**
 * Ask for a kick at the next buffer the guest makes available (used->flags
 * cleared and, with EVENT_IDX, avail_event at our position; packed: ENABLE).
 * The caller fences before it looks at the ring again.
 */
static inline void vq_enable_guest_kicks(struct virtq *vq)
{
	if (VQ_PACKED(vq)) {
		virtq_packed_enable_guest_kicks(vq);
		return;
	}
	__atomic_store_n(&vq->used->flags, 0, __ATOMIC_RELAXED);
	if (vq->event_idx)
		__atomic_store_n((uint16_t *)&vq->used->ring[vq->size],
				 htole16(vq->last_avail_idx), __ATOMIC_RELAXED);
}

/** Whether the guest made a buffer available that we have not taken (relaxed look). */
static inline bool vq_avail_pending(const struct virtq *vq)
{
	if (VQ_PACKED(vq))
		return virtq_packed_avail_pending(vq);
	return !vq->broken &&
	       le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_RELAXED)) != vq->last_avail_idx;
}

static inline void vq_set_per_entry_publish(struct virtq *vq, bool on)
{
	if (VQ_PACKED(vq))
		virtq_packed_set_per_entry_publish(vq, on);
	else
		virtq_split_set_per_entry_publish(vq, on);
}

#endif /* VSOCK_VIRTQ_H */
