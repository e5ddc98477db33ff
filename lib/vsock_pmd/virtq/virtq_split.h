/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_SPLIT_H
#define VSOCK_VIRTQ_SPLIT_H

/**
 * Device side of a split virtqueue, for a polling backend.
 *
 * The guest owns the descriptor table and the avail ring and may rewrite
 * them at any time, so every value read from them is loaded once into a
 * local, validated, and only then used. A chain that breaks a rule marks the
 * queue broken (as Linux vhost's vq_err): the device stops taking buffers
 * from it, and the reason is kept and counted.
 *
 * Completions go to a shadow used ring first and reach the guest in one
 * virtq_split_flush(): one copy into used->ring (two at the wrap), one release
 * store of used->idx. virtq_split_should_notify() then decides whether the guest
 * wants an interrupt; the caller does the eventfd write.
 *
 * One virtq belongs to one lcore at a time; nothing here is thread-safe.
 * Only VIRTIO 1.x little-endian rings are supported.
 */

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtq_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set up @p vq over rings already mapped in our address space (host VAs),
 * resuming at the given free-running indices. @p features is the negotiated
 * feature bitmap; VIRTIO_RING_F_EVENT_IDX and VIRTIO_RING_F_INDIRECT_DESC are
 * honoured. @p mem must outlive the queue (or until the next init).
 * Returns 0, or -EINVAL if size is 0, above 32768 or not a power of two
 * (split rings must be: virtio 1.x "Queue Size"), or -EFAULT if a ring
 * pointer or @p mem is NULL or a ring is misaligned (desc 16, avail 2, used 4).
 */
int virtq_split_init(struct virtq *vq, const struct guest_mem *mem, struct vring_desc *desc,
		struct vring_avail *avail, struct vring_used *used, uint16_t size,
		uint16_t last_avail_idx, uint16_t last_used_idx, uint64_t features);

/**
 * Take up to @p max new chains, each fully validated and translated.
 * Returns how many were written to @p chains. On a bad chain the queue is
 * marked broken and the chains before it are still returned; a broken queue
 * returns 0.
 */
uint16_t virtq_split_dequeue_burst(struct virtq *vq, struct virtq_chain *chains, uint16_t max);

/**
 * Give back the last @p n chains of the latest dequeue (not completed), so
 * that the next dequeue returns them again. Returns how many were given back:
 * at most what that dequeue returned minus earlier ungets.
 */
uint16_t virtq_split_unget(struct virtq *vq, uint16_t n);

/** Publish every shadow entry: one used->idx store, none if empty. */
void virtq_split_flush(struct virtq *vq);

/* A completion into the shadow, its head known good. */
static inline void virtq_split_shadow_add(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem *e = &vq->shadow[vq->shadow_count++];

	e->id = htole32(head);
	e->len = htole32(len);
	vq->stats.completed++;
	if (vq->per_entry_publish || vq->shadow_count == vq->shadow_cap)
		virtq_split_flush(vq);
}

/**
 * Record that chain @p c, as this ring's dequeue returned it, is done and @p len bytes were
 * written into its writable part (0 for a chain with only readable buffers). Not visible to
 * the guest before virtq_split_flush(), which happens here when the shadow is full or in
 * per-entry mode. The dequeue checked the head (below the ring size) where it made the chain.
 */
static inline void virtq_split_complete_chain(struct virtq *vq, const struct virtq_chain *c,
					      uint32_t len)
{
	virtq_split_shadow_add(vq, c->head, len);
}

/**
 * As virtq_split_complete_chain(), for a head that did not come from this ring's dequeue:
 * one not below the ring size is counted (VIRTQ_ERR_USED_ID) and dropped.
 */
static inline void virtq_split_complete(struct virtq *vq, uint16_t head, uint32_t len)
{
	if (__builtin_expect(head >= vq->size, 0)) {
		vq->stats.errors[VIRTQ_ERR_USED_ID]++;
		return;
	}
	virtq_split_shadow_add(vq, head, len);
}

/**
 * After a flush: does the guest want an interrupt for what was published
 * since the last call? Honours EVENT_IDX (used_event) or, without it,
 * VRING_AVAIL_F_NO_INTERRUPT. Entries still in the shadow do not count.
 */
bool virtq_split_should_notify(struct virtq *vq);

/** Ask the guest not to kick us: we poll. */
void virtq_split_disable_guest_kicks(struct virtq *vq);

/**
 * Set per-entry publication (one used->idx store per completion, as Linux's
 * vhost-vsock publishes: the benchmark's reference); flushes first.
 */
void virtq_split_set_per_entry_publish(struct virtq *vq, bool on);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_VIRTQ_SPLIT_H */
