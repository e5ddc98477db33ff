/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "virtq_impl.h"
#include "virtq_split.h"

/* Avail entries read (and their descriptors prefetched) ahead of the walk. */
#define VIRTQ_SPLIT_BATCH 32

int virtq_split_init(struct virtq *vq, const struct guest_mem *mem, struct vring_desc *desc,
		struct vring_avail *avail, struct vring_used *used, uint16_t size,
		uint16_t last_avail_idx, uint16_t last_used_idx, uint64_t features)
{
	if (size == 0 || size > VIRTQ_MAX_SIZE || (size & (size - 1)) != 0)
		return -EINVAL;
	if (mem == NULL || desc == NULL || avail == NULL || used == NULL ||
			((uintptr_t)desc & (VRING_DESC_ALIGN_SIZE - 1)) != 0 ||
			((uintptr_t)avail & (VRING_AVAIL_ALIGN_SIZE - 1)) != 0 ||
			((uintptr_t)used & (VRING_USED_ALIGN_SIZE - 1)) != 0)
		return -EFAULT;

	virtq_init_common(vq, mem, size, last_avail_idx, last_used_idx, features);
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	vq->mask = size - 1;
	return 0;
}

/* Where the descriptors of the table being walked live. */
struct desc_table {
	const uint8_t *base;	/* host-contiguous table, or NULL if scattered */
	struct guest_mem_piece pieces[GUEST_MEM_MAX_REGIONS];
	unsigned int npieces;	/* for a scattered indirect table */
	uint32_t entries;
};

/*
 * Load descriptor idx (< t->entries) once into *d. The guest may rewrite it
 * concurrently; validating and using only the copy closes that window.
 */
static inline void desc_load(const struct desc_table *t, uint32_t idx, struct vring_desc *d)
{
	if (likely(t->base != NULL))
		memcpy(d, t->base + (size_t)idx * sizeof(*d), sizeof(*d));
	else
		virtq_pieces_copy(t->pieces, t->npieces, idx * sizeof(*d), d, sizeof(*d), false);
	compiler_barrier();
}

/*
 * Walk the chain at head into c. Every descriptor is copied before use,
 * every index bounded by its table, every buffer translated; the walk visits
 * at most one table's worth of descriptors per table (more means a loop).
 */
static noinline enum virtq_err split_walk(const struct virtq *vq, uint16_t head,
					  struct virtq_chain *c)
{
	struct virtq_walk w = { .lim = VIRTQ_CHAIN_MAX_PIECES };
	struct desc_table t;
	uint32_t idx = head, visited = 0;
	bool in_indirect = false;

	if (unlikely(head >= vq->size))
		return VIRTQ_ERR_HEAD;
	t.base = (const uint8_t *)vq->desc;
	t.entries = vq->size;

	for (;;) {
		struct vring_desc d;
		enum virtq_err err;
		uint16_t flags;
		uint32_t len;
		int k;

		if (unlikely(++visited > t.entries))
			return VIRTQ_ERR_LOOP;
		desc_load(&t, idx, &d);
		flags = le16toh(d.flags);
		len = le32toh(d.len);

		if (unlikely(flags & VRING_DESC_F_INDIRECT)) {
			/* Its WRITE flag is ignored, as the spec tells the device. */
			if (!vq->indirect)
				return VIRTQ_ERR_INDIRECT_FEATURE;
			if (in_indirect)
				return VIRTQ_ERR_INDIRECT_NESTED;
			if (flags & VRING_DESC_F_NEXT)
				return VIRTQ_ERR_INDIRECT_NEXT;
			if (len == 0 || len % sizeof(struct vring_desc) != 0)
				return VIRTQ_ERR_INDIRECT_LEN;
			k = guest_mem_translate(vq->mem, le64toh(d.addr), len, t.pieces,
					GUEST_MEM_MAX_REGIONS);
			if (k < 0)
				return VIRTQ_ERR_INDIRECT_ADDR;
			t.npieces = k;
			t.base = k == 1 ? t.pieces[0].addr : NULL;
			t.entries = len / sizeof(struct vring_desc);
			in_indirect = true;
			idx = 0;
			visited = 0;
			continue;
		}

		err = virtq_walk_add(vq, c, &w, le64toh(d.addr), len, flags);
		if (unlikely(err != VIRTQ_ERR_NONE))
			return err;
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		idx = le16toh(d.next);
		if (unlikely(idx >= t.entries))
			return VIRTQ_ERR_NEXT;
	}
	c->head = head;
	virtq_walk_done(&w, c);
	return VIRTQ_ERR_NONE;
}

/*
 * The chain of descriptor @p d if it is one descriptor in one region (virtq_chain_one()):
 * false sends it to split_walk(), which reads it again and checks everything. Each field is
 * loaded once, so what is checked is what is used.
 */
static always_inline bool split_one(struct virtq_burst *b, const struct vring_desc *d,
				    struct virtq_chain *c)
{
	uint16_t flags = le16toh(__atomic_load_n(&d->flags, __ATOMIC_RELAXED));

	if (unlikely(flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)))
		return false;
	return virtq_chain_one(b, c, le64toh(__atomic_load_n(&d->addr, __ATOMIC_RELAXED)),
			le32toh(__atomic_load_n(&d->len, __ATOMIC_RELAXED)), flags);
}

uint16_t virtq_split_dequeue_burst(struct virtq *vq, struct virtq_chain *chains, uint16_t max)
{
	const struct vring_desc *desc = vq->desc;
	const uint16_t *ring = vq->avail->ring;
	const unsigned int mask = vq->mask;
	const uint16_t start = vq->last_avail_idx;
	struct virtq_burst b;
	unsigned int n, done = 0;
	uint16_t avail_idx;

	/* Whatever the outcome, unget now refers to this burst only. */
	vq->unget_max = 0;
	if (unlikely(vq->broken))
		return 0;
	/*
	 * Acquire pairs with the driver's write barrier before its avail->idx
	 * store: the ring entries and descriptors it published up to this
	 * index are visible to every load below. One load per burst.
	 */
	avail_idx = le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
	n = (uint16_t)(avail_idx - start);
	if (unlikely(n > vq->size)) {
		virtq_mark_broken(vq, VIRTQ_ERR_AVAIL_IDX);
		return 0;
	}
	if (n > max)
		n = max;
	virtq_burst_init(&b, vq);

	while (done < n) {
		uint16_t heads[VIRTQ_SPLIT_BATCH];
		unsigned int k = n - done < VIRTQ_SPLIT_BATCH ? n - done : VIRTQ_SPLIT_BATCH;
		unsigned int i;

		/* Read the heads once, in a row, and start fetching their descriptors. */
		for (i = 0; i < k; i++) {
			heads[i] = le16toh(__atomic_load_n(&ring[(start + done + i) & mask],
					__ATOMIC_RELAXED));
			__builtin_prefetch(&desc[heads[i] & mask]);
		}
		for (i = 0; i < k; i++, done++) {
			struct virtq_chain *c = &chains[done];
			enum virtq_err err;

			if (likely(heads[i] < b.size) && split_one(&b, &desc[heads[i]], c)) {
				c->head = heads[i];
				continue;
			}
			err = split_walk(vq, heads[i], c);
			if (unlikely(err != VIRTQ_ERR_NONE)) {
				virtq_mark_broken(vq, err);
				goto out;
			}
		}
	}
out:
	return virtq_dequeued(vq, (uint16_t)(start + done), done);
}

uint16_t virtq_split_unget(struct virtq *vq, uint16_t n)
{
	n = virtq_ungot(vq, n);
	vq->last_avail_idx -= n;
	return n;
}

void virtq_split_flush(struct virtq *vq)
{
	uint16_t n = vq->shadow_count;
	uint16_t old = vq->last_used_idx;
	uint16_t new = old + n;
	uint16_t start = old & vq->mask;
	uint16_t first = vq->size - start;

	if (n == 0)
		return;
	if (first > n)
		first = n;
	memcpy(&vq->used->ring[start], vq->shadow, first * sizeof(vq->shadow[0]));
	if (n > first)
		memcpy(&vq->used->ring[0], vq->shadow + first,
				(n - first) * sizeof(vq->shadow[0]));
	/*
	 * Release: the entries copied above are visible no later than the
	 * index that exposes them; pairs with the driver's read barrier after
	 * it loads used->idx. The only used->idx store of the flush.
	 */
	__atomic_store_n(&vq->used->idx, htole16(new), __ATOMIC_RELEASE);
	vq->last_used_idx = new;
	vq->shadow_count = 0;
	vq->stats.used_idx_stores++;
	/*
	 * If we just moved past signalled_used, the 16-bit index has gone all
	 * the way round since the guest was last told: vring_need_event() can
	 * no longer order the two, so the next decision must notify.
	 */
	if (unlikely((uint16_t)(new - vq->signalled_used) < n))
		vq->signalled_used_valid = false;
}

bool virtq_split_should_notify(struct virtq *vq)
{
	uint16_t old = vq->signalled_used;
	uint16_t new = vq->last_used_idx;
	bool notify;

	if (vq->signalled_used_valid && old == new) {
		/* Nothing published since the last decision. */
		vq->stats.notify_no++;
		return false;
	}
	/*
	 * Full fence (store->load): our used->idx store must be visible before
	 * we read used_event or avail->flags. Otherwise the load may complete
	 * first (x86 allows it), we see a stale used_event and skip the
	 * interrupt while the driver, having written used_event and re-read the
	 * old used->idx, waits for one: a lost wakeup. Pairs with the driver's
	 * full barrier between those two steps.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx) {
		uint16_t event = le16toh(__atomic_load_n(&vq->avail->ring[vq->size],
				__ATOMIC_RELAXED));

		notify = !vq->signalled_used_valid || vring_need_event(event, new, old);
	} else {
		uint16_t flags = le16toh(__atomic_load_n(&vq->avail->flags, __ATOMIC_RELAXED));

		notify = !(flags & VRING_AVAIL_F_NO_INTERRUPT);
	}
	vq->signalled_used = new;
	vq->signalled_used_valid = true;
	if (notify)
		vq->stats.notify_yes++;
	else
		vq->stats.notify_no++;
	return notify;
}

void virtq_split_disable_guest_kicks(struct virtq *vq)
{
	__atomic_store_n(&vq->used->flags, htole16(VRING_USED_F_NO_NOTIFY), __ATOMIC_RELAXED);
	/*
	 * Under EVENT_IDX the driver ignores used->flags and kicks when its
	 * avail->idx crosses avail_event. Put that one step behind what we have
	 * consumed: the driver gets there only 65535 buffers later, and such a
	 * rare stray kick costs a poller nothing. Leaving the old value could
	 * sit just ahead and draw a kick at once. No ordering needed: a late
	 * kick is harmless.
	 */
	if (vq->event_idx)
		__atomic_store_n((uint16_t *)&vq->used->ring[vq->size],
				htole16((uint16_t)(vq->last_avail_idx - 1)), __ATOMIC_RELAXED);
}

void virtq_split_set_per_entry_publish(struct virtq *vq, bool on)
{
	virtq_split_flush(vq);
	vq->per_entry_publish = on;
}
