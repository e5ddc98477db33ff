/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver side of a packed virtqueue, as Linux's virtio_ring does it:
 * buffer ids from a free list, descriptors written in ring order with the
 * first one's flags last, used descriptors read in ring order, skipping the
 * descriptors of each chain.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vfe_vq_common.h"
#include "vfe_vq_packed.h"

#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED (1u << VRING_PACKED_DESC_F_USED)

uint16_t vfe_vqp_pos(const struct vfe_vq *vq, uint16_t count)
{
	/*
	 * num is a power of 2: the lap's parity is count's bit num (no division on every
	 * descriptor), and it survives the 16-bit wrap of count.
	 */
	bool odd_lap = count & vq->num;

	return (uint16_t)((count & (vq->num - 1)) | (odd_lap ? 0 : VFE_PACKED_WRAP));
}

/* Descriptor count of an encoded position (within two laps: what the mapping keeps). */
static uint16_t pos_count(const struct vfe_vq *vq, uint16_t pos)
{
	return (uint16_t)((pos & 0x7fff) + ((pos & VFE_PACKED_WRAP) ? 0 : vq->num));
}

int vfe_vq_init_packed(struct vfe_vq *vq, struct vfe_mem *mem, uint16_t num, uint16_t start,
		uint16_t indirect_max)
{
	uint16_t i;
	int rc;

	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = -1;
	vq->call_fd = -1;
	if (num == 0 || num > VFE_VQ_MAX || (num & (num - 1)) != 0 || (start & 0x7fff) >= num)
		return -EINVAL;
	vq->mem = mem;
	vq->num = num;
	vq->packed = true;
	/* The ring on a page as Linux does; the event structures 4-aligned (virtio 2.8.10.1). */
	vq->pdesc = vfe_mem_alloc(mem, sizeof(struct vring_packed_desc) * num, 4096,
		&vq->desc_gpa);
	vq->driver_event = vfe_mem_alloc(mem, sizeof(*vq->driver_event), 4, &vq->avail_gpa);
	vq->device_event = vfe_mem_alloc(mem, sizeof(*vq->device_event), 4, &vq->used_gpa);
	if (vq->pdesc == NULL || vq->driver_event == NULL || vq->device_event == NULL)
		return -ENOMEM;
	vq->pending = calloc(num, sizeof(*vq->pending));
	if (vq->pending == NULL)
		return -ENOMEM;
	rc = vfe_vq_init_common(vq, sizeof(struct vring_packed_desc), indirect_max);
	if (rc < 0)
		return rc;
	vq->avail_idx = pos_count(vq, start);
	vq->last_used = vq->avail_idx;
	vq->kicked_avail = vq->avail_idx;
	/*
	 * A zeroed descriptor looks used to a driver on a lap with wrap counter
	 * 0. Give each slot the flags of a descriptor used on the lap before the
	 * one we next reach it on, so that nothing stale ever looks used.
	 */
	for (i = 0; i < num; i++) {
		uint16_t c = (uint16_t)(vq->avail_idx + ((i - vq->avail_idx) & (num - 1)));

		if (!(vfe_vqp_pos(vq, c) & VFE_PACKED_WRAP))
			vq->pdesc[i].flags = htole16(F_AVAIL | F_USED);
	}
	vq->track_used_event = true;
	return 0;
}

/* Flags that make a descriptor at descriptor count @p count available. */
static uint16_t avail_flags(const struct vfe_vq *vq, uint16_t count)
{
	return (vfe_vqp_pos(vq, count) & VFE_PACKED_WRAP) ? F_AVAIL : F_USED;
}

static uint16_t take_id(struct vfe_vq *vq, unsigned int ndesc, void *cookie)
{
	uint16_t id = vq->free_head;

	vq->free_head = vq->slot[id].next;
	vq->num_free -= ndesc;
	vq->slot[id].ndesc = ndesc;
	vq->slot[id].cookie = cookie;
	return id;
}

/*
 * Write @p n descriptors from the next available position, all but the
 * first one's flags; that one is remembered for vfe_vqp_publish().
 */
static void put_descs(struct vfe_vq *vq, const struct vring_packed_desc *d, unsigned int n)
{
	struct vfe_vq_pending *p = &vq->pending[vq->npending++];
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint16_t idx = vq->avail_idx & (vq->num - 1);
		struct vring_packed_desc *r = &vq->pdesc[idx];
		uint16_t flags = le16toh(d[i].flags) | avail_flags(vq, vq->avail_idx);

		r->addr = d[i].addr;
		r->len = d[i].len;
		r->id = d[i].id;
		if (i == 0) {
			p->idx = idx;
			p->flags = flags;
		} else {
			r->flags = htole16(flags);
		}
		vq->avail_idx++;
	}
}

int vfe_vqp_add(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n, void *cookie)
{
	struct vring_packed_desc d[64];
	uint16_t id;
	unsigned int i;

	if (n == 0 || n > 64)
		return -EINVAL;
	if (n > vq->num_free)
		return -ENOSPC;
	id = take_id(vq, n, cookie);
	for (i = 0; i < n; i++) {
		d[i] = (struct vring_packed_desc){
			.addr = htole64(bufs[i].gpa),
			.len = htole32(bufs[i].len),
			/* Linux puts the id in every descriptor; the device reads the last. */
			.id = htole16(id),
			.flags = htole16((i + 1 < n ? VRING_DESC_F_NEXT : 0) |
				(bufs[i].writable ? VRING_DESC_F_WRITE : 0)),
		};
	}
	put_descs(vq, d, n);
	return id;
}

int vfe_vqp_add_indirect(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n,
		void *cookie)
{
	struct vring_packed_desc *table, d;
	uint64_t table_gpa;
	uint16_t id;
	unsigned int i;

	if (n == 0 || n > vq->indirect_max)
		return -EINVAL;
	if (vq->num_free == 0)
		return -ENOSPC;
	id = take_id(vq, 1, cookie);
	table = (struct vring_packed_desc *)vq->indirect + (size_t)id * vq->indirect_max;
	table_gpa = vq->indirect_gpa + (uint64_t)id * vq->indirect_max * sizeof(*table);
	for (i = 0; i < n; i++)
		table[i] = (struct vring_packed_desc){
			.addr = htole64(bufs[i].gpa),
			.len = htole32(bufs[i].len),
			.flags = htole16(bufs[i].writable ? VRING_DESC_F_WRITE : 0),
		};
	d = (struct vring_packed_desc){
		.addr = htole64(table_gpa),
		.len = htole32(n * sizeof(*table)),
		.id = htole16(id),
		.flags = htole16(VRING_DESC_F_INDIRECT),
	};
	put_descs(vq, &d, 1);
	return id;
}

void vfe_vqp_publish(struct vfe_vq *vq)
{
	/*
	 * Release: each chain's other descriptors were written before its first
	 * one's flags. Last chain first, the first chain last: the device polls
	 * only its next position, so the whole batch appears at once.
	 */
	while (vq->npending > 0) {
		const struct vfe_vq_pending *p = &vq->pending[--vq->npending];

		__atomic_store_n(&vq->pdesc[p->idx].flags, htole16(p->flags), __ATOMIC_RELEASE);
	}
}

bool vfe_vqp_kick_needed(struct vfe_vq *vq)
{
	uint16_t old = vq->kicked_avail, flags, event;
	uint16_t two = (uint16_t)(2 * vq->num - 1);

	vq->kicked_avail = vq->avail_idx;
	/* Full barrier: the flags stores before the read of the device's wish (store-load). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	flags = le16toh(__atomic_load_n(&vq->device_event->flags, __ATOMIC_RELAXED));
	if (flags == VRING_PACKED_EVENT_FLAG_DISABLE)
		return false;
	if (flags != VRING_PACKED_EVENT_FLAG_DESC || !vq->event_idx)
		return true;
	event = le16toh(__atomic_load_n(&vq->device_event->off_wrap, __ATOMIC_RELAXED));
	/* Within two laps (2 * num divides 65536): was the event's descriptor published now? */
	return ((uint16_t)(pos_count(vq, event) - old) & two) <
		((uint16_t)(vq->avail_idx - old) & two);
}

/* Whether the descriptor at count @p c is used (acquire: its id and len are read after). */
static bool is_used(const struct vfe_vq *vq, uint16_t c, const struct vring_packed_desc **d)
{
	uint16_t pos = vfe_vqp_pos(vq, c);
	bool wrap = pos & VFE_PACKED_WRAP;
	uint16_t flags;

	*d = &vq->pdesc[pos & 0x7fff];
	flags = le16toh(__atomic_load_n(&(*d)->flags, __ATOMIC_ACQUIRE));
	return !!(flags & F_AVAIL) == wrap && !!(flags & F_USED) == wrap;
}

/* Descriptors the used descriptor @p d stands for: its chain's, 1 for a bad id. */
static uint16_t used_span(const struct vfe_vq *vq, const struct vring_packed_desc *d)
{
	uint16_t id = le16toh(d->id);

	return id < vq->num && vq->slot[id].ndesc ? vq->slot[id].ndesc : 1;
}

uint16_t vfe_vqp_used_pending(const struct vfe_vq *vq)
{
	const struct vring_packed_desc *d;
	uint16_t c = vq->last_used, n = 0;

	/* Only descriptors in flight can be used: at most num of them. */
	while ((uint16_t)(c - vq->last_used) < (uint16_t)(vq->num - vq->num_free) &&
			is_used(vq, c, &d)) {
		c += used_span(vq, d);
		n++;
	}
	return n;
}

int vfe_vqp_get_used(struct vfe_vq *vq, uint32_t *len, void **cookie)
{
	const struct vring_packed_desc *d;
	uint16_t id, n;

	if (vq->num_free == vq->num || !is_used(vq, vq->last_used, &d))
		return -EAGAIN;
	id = le16toh(d->id);
	if (len != NULL)
		*len = le32toh(d->len);
	n = used_span(vq, d);
	vq->last_used += n;
	if (vq->event_idx && vq->track_used_event)
		__atomic_store_n(&vq->driver_event->off_wrap,
			htole16(vfe_vqp_pos(vq, vq->last_used)), __ATOMIC_RELAXED);
	if (id >= vq->num || vq->slot[id].ndesc == 0)
		return -EIO;
	vq->slot[id].next = vq->free_head;
	vq->free_head = id;
	vq->num_free += n;
	vq->slot[id].ndesc = 0;
	if (cookie != NULL)
		*cookie = vq->slot[id].cookie;
	return id;
}

void vfe_vqp_set_no_interrupt(struct vfe_vq *vq, bool on)
{
	uint16_t flags = on ? VRING_PACKED_EVENT_FLAG_DISABLE :
		vq->event_idx ? VRING_PACKED_EVENT_FLAG_DESC : VRING_PACKED_EVENT_FLAG_ENABLE;

	__atomic_store_n(&vq->driver_event->flags, htole16(flags), __ATOMIC_RELAXED);
}

void vfe_vqp_set_used_event(struct vfe_vq *vq, uint16_t idx)
{
	/* off_wrap before flags (release): the device reads them in the other order. */
	__atomic_store_n(&vq->driver_event->off_wrap, htole16(vfe_vqp_pos(vq, idx)),
		__ATOMIC_RELAXED);
	__atomic_store_n(&vq->driver_event->flags, htole16(VRING_PACKED_EVENT_FLAG_DESC),
		__ATOMIC_RELEASE);
}
