/* SPDX-License-Identifier: BSD-3-Clause */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "virtq_impl.h"
#include "virtq_packed.h"

static inline uint16_t pos_idx(uint16_t pos)
{
	return pos & VIRTQ_PACKED_IDX_MASK;
}

static inline bool pos_wrap(uint16_t pos)
{
	return pos & VIRTQ_PACKED_WRAP;
}

/* @p pos moved on by @p n <= size descriptors; the wrap counter flips at the end of the ring. */
static inline uint16_t pos_add(uint16_t pos, uint32_t n, uint16_t size)
{
	uint32_t idx = pos_idx(pos) + n;

	if (idx >= size) {
		idx -= size;
		pos ^= VIRTQ_PACKED_WRAP;
	}
	return (uint16_t)((pos & VIRTQ_PACKED_WRAP) | idx);
}

/*
 * A position on a line of two laps, [0, 2 * size): the wrap counter starts
 * at 1, so the first lap is the one with the counter set.
 */
static inline uint32_t pos_lin(uint16_t pos, uint16_t size)
{
	return pos_idx(pos) + (pos_wrap(pos) ? 0u : size);
}

/* Descriptors from @p a forward to @p b, modulo two laps. */
static inline uint32_t pos_dist(uint16_t a, uint16_t b, uint16_t size)
{
	uint32_t la = pos_lin(a, size), lb = pos_lin(b, size);

	return lb >= la ? lb - la : lb + 2u * size - la;
}

/*
 * The next descriptor to take is at @p pos: its flags and their available bits for
 * virtq_packed_avail_pending(), which a round asks far more often than anything moves.
 */
static void packed_next(struct virtq *vq, uint16_t pos)
{
	vq->last_avail_idx = pos;
	vq->next_flags = &vq->pdesc[pos_idx(pos)].flags;
	vq->avail_want = vq->broken ? VIRTQ_AVAIL_WANT_NONE : virtq_packed_avail_bits(pos_wrap(pos));
}

int virtq_packed_init(struct virtq *vq, const struct guest_mem *mem,
		      struct vring_packed_desc *desc, struct vring_packed_desc_event *driver_event,
		      struct vring_packed_desc_event *device_event, uint16_t size,
		      uint16_t last_avail, uint16_t last_used, uint64_t features)
{
	if (size == 0 || size > VIRTQ_MAX_SIZE || pos_idx(last_avail) >= size ||
	    pos_idx(last_used) >= size)
		return -EINVAL;
	if (mem == NULL || desc == NULL || driver_event == NULL || device_event == NULL ||
	    ((uintptr_t)desc & 15) != 0 || ((uintptr_t)driver_event & 3) != 0 ||
	    ((uintptr_t)device_event & 3) != 0)
		return -EFAULT;

	/* The shadow arrays need no clearing: shadow_count and unget_max guard them. */
	virtq_init_common(vq, mem, size, last_avail, last_used, features);
	vq->packed = true;
	vq->pdesc = desc;
	vq->driver_event = driver_event;
	vq->device_event = device_event;
	packed_next(vq, last_avail);
	return 0;
}

/*
 * The buffers of an indirect table: every entry in order (NEXT and the id
 * are reserved there). Each entry is copied before use. The walk ends within
 * VIRTQ_CHAIN_MAX_PIECES + 1 entries whatever the table's length: every
 * entry either fails or takes at least one piece's room (an empty one too).
 */
static enum virtq_err packed_walk_indirect(const struct virtq *vq, struct virtq_chain *c,
					   struct virtq_walk *w, uint64_t addr, uint32_t len)
{
	struct guest_mem_piece tp[GUEST_MEM_MAX_REGIONS];
	uint32_t i, entries;
	int k;

	if (len == 0 || len % sizeof(struct vring_packed_desc) != 0)
		return VIRTQ_ERR_INDIRECT_LEN;
	k = guest_mem_translate(vq->mem, addr, len, tp, GUEST_MEM_MAX_REGIONS);
	if (k < 0)
		return VIRTQ_ERR_INDIRECT_ADDR;
	entries = len / sizeof(struct vring_packed_desc);
	for (i = 0; i < entries; i++) {
		struct vring_packed_desc d;
		enum virtq_err err;
		uint16_t flags;

		if (likely(k == 1))
			memcpy(&d, (const uint8_t *)tp[0].addr + (size_t)i * sizeof(d), sizeof(d));
		else
			virtq_pieces_copy(tp, (unsigned int)k, i * (uint32_t)sizeof(d), &d,
					  sizeof(d), false);
		compiler_barrier();
		flags = le16toh(d.flags);
		if (unlikely(flags & VRING_DESC_F_INDIRECT))
			return VIRTQ_ERR_INDIRECT_NESTED;
		err = virtq_walk_add(vq, c, w, le64toh(d.addr), le32toh(d.len), flags);
		if (unlikely(err != VIRTQ_ERR_NONE))
			return err;
	}
	return VIRTQ_ERR_NONE;
}

/*
 * Walk the chain whose first descriptor is at @p pos and whose flags were
 * loaded (with acquire) as @p head_flags. Every descriptor is copied once
 * before use; a descriptor after the first must be available too (the spec
 * wants every flag of a chain set right), which also ends the walk within
 * one ring's worth of descriptors. Its last steps (virtq_walk_add(), the end at
 * a descriptor without NEXT) read as split_walk()'s on purpose: what is shared
 * is in virtq_common.c, and the loops around differ in how the next descriptor
 * is found and checked.
 */
static noinline enum virtq_err packed_walk(const struct virtq *vq, uint16_t pos,
					   uint16_t head_flags, struct virtq_chain *c)
{
	struct virtq_walk w = { .lim = VIRTQ_CHAIN_MAX_PIECES };
	uint32_t n = 0;
	uint16_t id;

	for (;;) {
		struct vring_packed_desc d;
		enum virtq_err err;
		uint16_t flags;
		uint32_t len;

		memcpy(&d, &vq->pdesc[pos_idx(pos)], sizeof(d));
		compiler_barrier();
		if (n == 0) {
			flags = head_flags;
		} else {
			flags = le16toh(d.flags);
			if (unlikely(!virtq_packed_desc_avail(flags,
							      virtq_packed_avail_bits(pos_wrap(pos)))))
				return VIRTQ_ERR_CHAIN_AVAIL;
		}
		if (unlikely(++n > vq->size))
			return VIRTQ_ERR_LOOP;
		len = le32toh(d.len);
		id = le16toh(d.id);

		if (unlikely(flags & VRING_DESC_F_INDIRECT)) {
			/* A table stands alone: never chained by NEXT, either side. */
			if (!vq->indirect)
				return VIRTQ_ERR_INDIRECT_FEATURE;
			if (n > 1 || (flags & VRING_DESC_F_NEXT))
				return VIRTQ_ERR_INDIRECT_NEXT;
			err = packed_walk_indirect(vq, c, &w, le64toh(d.addr), len);
			if (err != VIRTQ_ERR_NONE)
				return err;
			break;
		}
		err = virtq_walk_add(vq, c, &w, le64toh(d.addr), len, flags);
		if (unlikely(err != VIRTQ_ERR_NONE))
			return err;
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		pos = pos_add(pos, 1, vq->size);
	}
	/* The id is the last descriptor's; used descriptors are written with it. */
	if (unlikely(id >= vq->size))
		return VIRTQ_ERR_HEAD;
	c->head = id;
	c->ndescs = (uint16_t)n;
	virtq_walk_done(&w, c);
	return VIRTQ_ERR_NONE;
}

/*
 * The chain at @p d if it is one descriptor (neither NEXT nor INDIRECT in @p flags, which
 * the caller loaded and ordered before these loads) in one region (virtq_chain_one()) with
 * an id below the ring size: false sends it to packed_walk(), which reads it again and
 * checks everything. Each field is loaded once, so what is checked is what is used.
 */
static always_inline bool packed_one(struct virtq_burst *b, const struct vring_packed_desc *d,
				     uint16_t flags, struct virtq_chain *c)
{
	uint16_t id = le16toh(__atomic_load_n(&d->id, __ATOMIC_RELAXED));

	if (unlikely(id >= b->size))
		return false;
	if (unlikely(!virtq_chain_one(b, c, le64toh(__atomic_load_n(&d->addr, __ATOMIC_RELAXED)),
				      le32toh(__atomic_load_n(&d->len, __ATOMIC_RELAXED)), flags)))
		return false;
	c->head = id;
	c->ndescs = 1;
	return true;
}

/*
 * The four descriptors of one cache line at @p d, each a chain of its own, taken together:
 * their flags in one pass (each available, none NEXT or INDIRECT), one barrier, then each
 * as packed_one() takes it. False when any of them is not such a chain: the caller then
 * takes them one at a time, which finds where the available ones end or which rule one
 * breaks, and overwrites what was written into @p c here. Out of line: inlined into the
 * burst loop, its four steps left the loop's registers spilled.
 */
static noinline bool packed_batch(struct virtq_burst *b, const struct vring_packed_desc *d,
				  uint16_t want, struct virtq_chain *c)
{
	uint16_t flags[VIRTQ_PACKED_BATCH], diff = 0;
	unsigned int k;

#pragma GCC unroll 4
	for (k = 0; k < VIRTQ_PACKED_BATCH; k++) {
		flags[k] = le16toh(__atomic_load_n(&d[k].flags, __ATOMIC_RELAXED));
		diff |= flags[k] ^ want;
	}
	if (diff & (VIRTQ_PACKED_F_AVAIL | VIRTQ_PACKED_F_USED | VRING_DESC_F_NEXT |
		    VRING_DESC_F_INDIRECT))
		return false;
	/*
	 * Acquire: the four flags loads above come before every load of the descriptors
	 * below. Pairs with the driver's write barrier before each flags store, as the
	 * acquire load of one descriptor's flags does in the one-at-a-time path.
	 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#pragma GCC unroll 4
	for (k = 0; k < VIRTQ_PACKED_BATCH; k++)
		if (!packed_one(b, &d[k], flags[k], &c[k]))
			return false;
	return true;
}

uint16_t virtq_packed_dequeue_burst(struct virtq *vq, struct virtq_chain *chains, uint16_t max)
{
	const struct vring_packed_desc *ring = vq->pdesc;
	uint16_t *pstart = vq->pstart;
	const unsigned int size = vq->size;
	unsigned int idx = pos_idx(vq->last_avail_idx), done = 0, taken, room, k;
	uint16_t wrap = vq->last_avail_idx & VIRTQ_PACKED_WRAP;
	uint16_t want = virtq_packed_avail_bits(wrap);
	struct virtq_burst b;

	/* Whatever the outcome, unget now refers to this burst only. */
	vq->unget_max = 0;
	if (unlikely(vq->broken))
		return 0;
	if (max > VIRTQ_SHADOW_MAX)
		max = VIRTQ_SHADOW_MAX;
	/*
	 * Descriptors taken and not yet published as used can never exceed the ring: more
	 * means the driver reused a slot it was not given back (the split ring's avail->idx
	 * jump). @p room is what the burst may still take, counted down chain by chain.
	 */
	taken = pos_dist(vq->last_used_idx, vq->last_avail_idx, size);
	room = taken < size ? size - taken : 0;
	virtq_burst_init(&b, vq);

	while (done < max) {
		const struct vring_packed_desc *d = &ring[idx];
		struct virtq_chain *c = &chains[done];
		uint16_t pos = (uint16_t)(wrap | idx), flags;

		if ((idx & (VIRTQ_PACKED_BATCH - 1)) == 0 && idx + VIRTQ_PACKED_BATCH <= size &&
		    max - done >= VIRTQ_PACKED_BATCH && room >= VIRTQ_PACKED_BATCH &&
		    packed_batch(&b, d, want, c)) {
#pragma GCC unroll 4
			for (k = 0; k < VIRTQ_PACKED_BATCH; k++)
				pstart[done + k] = (uint16_t)(pos + k);
			done += VIRTQ_PACKED_BATCH;
			room -= VIRTQ_PACKED_BATCH;
			idx += VIRTQ_PACKED_BATCH;
		} else {
			/*
			 * Acquire pairs with the driver's write barrier before it stores
			 * the first descriptor's flags: the rest of the chain, written
			 * before, is visible to the loads of the walk.
			 */
			flags = le16toh(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE));
			if (!virtq_packed_desc_avail(flags, want))
				break;
			if (unlikely(flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)) ||
			    unlikely(room == 0) || !packed_one(&b, d, flags, c)) {
				enum virtq_err err = packed_walk(vq, pos, flags, c);

				if (likely(err == VIRTQ_ERR_NONE) && unlikely(c->ndescs > room))
					err = VIRTQ_ERR_AVAIL_IDX;
				if (unlikely(err != VIRTQ_ERR_NONE)) {
					virtq_mark_broken(vq, err);
					break;
				}
			}
			pstart[done++] = pos;
			room -= c->ndescs;
			idx += c->ndescs;
		}
		if (idx >= size) {
			idx -= size;
			wrap ^= VIRTQ_PACKED_WRAP;
			want ^= VIRTQ_PACKED_F_AVAIL | VIRTQ_PACKED_F_USED;
		}
	}
	packed_next(vq, (uint16_t)(wrap | idx));
	return virtq_dequeued(vq, (uint16_t)(wrap | idx), done);
}

uint16_t virtq_packed_unget(struct virtq *vq, uint16_t n)
{
	n = virtq_ungot(vq, n);
	if (n)
		packed_next(vq, vq->pstart[vq->unget_max]);
	return n;
}

/*
 * A used descriptor's len, id and flags, bytes 8-15 of it: written with one store. The ring is
 * 16-byte aligned (virtq_packed_init()), so the store is aligned and single-copy atomic; the
 * type may alias the descriptor's own fields, which the rest of this file reads.
 */
typedef uint64_t __attribute__((may_alias)) used_tail_t;

_Static_assert(offsetof(struct vring_packed_desc, len) == 8 &&
	       offsetof(struct vring_packed_desc, id) == 12 &&
	       offsetof(struct vring_packed_desc, flags) == 14, "packed descriptor layout");

static always_inline used_tail_t *used_tail(struct vring_packed_desc *d)
{
	return (used_tail_t *)&d->len;
}

/* AVAIL and USED both set, in a used tail: a lap with the wrap counter set. */
#define USED_TAIL_AVAIL_USED \
	htole64((uint64_t)(VIRTQ_PACKED_F_AVAIL | VIRTQ_PACKED_F_USED) << 48)

/*
 * @p n shadow entries of one descriptor each into consecutive slots from @p d on, of a lap
 * whose used tail bits are @p used. Relaxed: the flush's last store publishes them all.
 */
static always_inline void used_run(struct vring_packed_desc *d, const uint64_t *e,
				   unsigned int n, uint64_t used)
{
	unsigned int k;

#pragma GCC unroll 4
	for (k = 0; k < n; k++)
		__atomic_store_n(used_tail(&d[k]), e[k] | used, __ATOMIC_RELAXED);
}

void virtq_packed_flush(struct virtq *vq)
{
	const uint64_t *e = vq->pshadow;
	struct vring_packed_desc *ring = vq->pdesc;
	const unsigned int size = vq->size, n = vq->shadow_count;
	unsigned int idx = pos_idx(vq->last_used_idx), adv = vq->shadow_descs, i, m;
	uint16_t wrap = vq->last_used_idx & VIRTQ_PACKED_WRAP;
	uint64_t used = wrap ? USED_TAIL_AVAIL_USED : 0;
	used_tail_t *first = used_tail(&ring[idx]);
	uint64_t first_tail;

	if (n == 0)
		return;
	first_tail = e[0] | used;
	/*
	 * The driver polls only its next used position, the first entry's, and reads its
	 * flags before anything else of the burst: the first entry is written last of all,
	 * with release, so that until it lands the driver sees none of the burst and after
	 * it all of it. Each entry's len and id come with its flags, in one store.
	 */
	if (likely(adv == n)) {
		/*
		 * Every entry one descriptor, as a burst of one-descriptor chains completes:
		 * consecutive slots, in two runs if the ring's end comes first (m >= 1 as
		 * idx < size).
		 */
		m = size - idx < n ? size - idx : n;
		used_run(&ring[idx + 1], e + 1, m - 1, used);
		used_run(ring, e + m, n - m, used ^ USED_TAIL_AVAIL_USED);
		idx += n;
	} else {
		/* Chains of several descriptors among them: each entry's slot from the last. */
		for (i = 0; i < n; i++) {
			if (i)
				__atomic_store_n(used_tail(&ring[idx]), e[i] | used,
						 __ATOMIC_RELAXED);
			idx += vq->pndescs[i];
			if (idx >= size) {
				idx -= size;
				wrap ^= VIRTQ_PACKED_WRAP;
				used ^= USED_TAIL_AVAIL_USED;
			}
		}
	}
	/*
	 * Release: every entry stored above is visible before the first one's flags. Pairs
	 * with the driver's read barrier between a used descriptor's flags and what it reads
	 * next (its id and len, then the following descriptors).
	 */
	__atomic_store_n(first, first_tail, __ATOMIC_RELEASE);
	if (idx >= size) {
		idx -= size;
		wrap ^= VIRTQ_PACKED_WRAP;
	}
	vq->last_used_idx = (uint16_t)(wrap | idx);
	vq->shadow_count = 0;
	vq->shadow_descs = 0;
	vq->stats.used_idx_stores++;
	/*
	 * Passing signalled_used again (positions compare within two laps)
	 * leaves the next event check without a reference: notify then.
	 */
	if (unlikely(adv >= 2u * size || pos_dist(vq->signalled_used, vq->last_used_idx, size) < adv))
		vq->signalled_used_valid = false;
}

bool virtq_packed_should_notify(struct virtq *vq)
{
	uint16_t old = vq->signalled_used;
	uint16_t new = vq->last_used_idx;
	uint16_t flags;
	bool notify;

	if (vq->signalled_used_valid && old == new) {
		/* Nothing published since the last decision. */
		vq->stats.notify_no++;
		return false;
	}
	/*
	 * Full fence (store->load): our used flags must be visible before we
	 * read the driver's event structure, or the driver could re-enable
	 * events after our read and then miss our descriptors on its re-check
	 * (a lost wakeup). Pairs with the driver's full barrier between writing
	 * its event structure and re-reading the ring.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Acquire: the driver writes off_wrap before it switches flags to DESC. */
	flags = le16toh(__atomic_load_n(&vq->driver_event->flags, __ATOMIC_ACQUIRE));
	if (flags == VRING_PACKED_EVENT_FLAG_DISABLE) {
		notify = false;
	} else if (flags == VRING_PACKED_EVENT_FLAG_DESC && vq->event_idx) {
		uint16_t event = le16toh(__atomic_load_n(&vq->driver_event->off_wrap,
							 __ATOMIC_RELAXED));

		/* Notify if the event's descriptor is among those used since the last decision. */
		notify = !vq->signalled_used_valid ||
			 pos_dist(old, event, vq->size) < pos_dist(old, new, vq->size);
	} else {
		/* ENABLE; or a reserved value, or DESC without EVENT_IDX: an extra call is safe. */
		notify = true;
	}
	vq->signalled_used = new;
	vq->signalled_used_valid = true;
	if (notify)
		vq->stats.notify_yes++;
	else
		vq->stats.notify_no++;
	return notify;
}

uint16_t virtq_packed_call_pos(const struct virtq *vq)
{
	uint16_t flags = le16toh(__atomic_load_n(&vq->driver_event->flags, __ATOMIC_RELAXED));
	uint16_t event;

	if (flags != VRING_PACKED_EVENT_FLAG_DESC || !vq->event_idx)
		return vq->last_used_idx;
	event = le16toh(__atomic_load_n(&vq->driver_event->off_wrap, __ATOMIC_RELAXED));
	if (pos_idx(event) >= vq->size)
		return vq->last_used_idx;
	return pos_add(event, 1, vq->size);
}

void virtq_packed_disable_guest_kicks(struct virtq *vq)
{
	/* No ordering needed: a kick that comes late costs a poller nothing. */
	__atomic_store_n(&vq->device_event->flags, htole16(VRING_PACKED_EVENT_FLAG_DISABLE),
			 __ATOMIC_RELAXED);
}

void virtq_packed_enable_guest_kicks(struct virtq *vq)
{
	/* The caller fences before it looks at the ring again. */
	__atomic_store_n(&vq->device_event->flags, htole16(VRING_PACKED_EVENT_FLAG_ENABLE),
			 __ATOMIC_RELAXED);
}

void virtq_packed_set_per_entry_publish(struct virtq *vq, bool on)
{
	virtq_packed_flush(vq);
	vq->per_entry_publish = on;
}
