/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver side of a split virtqueue, as a guest's virtio_ring would do
 * it: descriptors from a free list, avail entries published with one index
 * store, used entries consumed in order. A packed ring goes to vfe_vq_packed.c.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vfe.h"
#include "vfe_vq_common.h"
#include "vfe_vq_packed.h"

#define VFE_POLL_SLEEP_NS 20000

/* avail_event sits right after the used ring's entries (virtio 1.x 2.7.8). */
static uint16_t *avail_event_ptr(const struct vfe_vq *vq)
{
	return (uint16_t *)(uintptr_t)((const uint8_t *)vq->used +
		offsetof(struct vring_used, ring) + sizeof(struct vring_used_elem) * vq->num);
}

int vfe_vq_init(struct vfe_vq *vq, struct vfe_mem *mem, uint16_t num, uint16_t start,
		uint16_t indirect_max)
{
	size_t avail_len = sizeof(struct vring_avail) + sizeof(uint16_t) * (num + 1u);
	size_t used_len = sizeof(struct vring_used) +
		sizeof(struct vring_used_elem) * num + sizeof(uint16_t);
	int rc;

	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = -1;
	vq->call_fd = -1;
	if (num == 0 || num > VFE_VQ_MAX || (num & (num - 1)) != 0)
		return -EINVAL;
	vq->mem = mem;
	vq->num = num;
	/* The alignments of the virtio 1.x split ring; desc on a page as Linux does. */
	vq->desc = vfe_mem_alloc(mem, sizeof(struct vring_desc) * num, 4096, &vq->desc_gpa);
	vq->avail = vfe_mem_alloc(mem, avail_len, 2, &vq->avail_gpa);
	vq->used = vfe_mem_alloc(mem, used_len, 4, &vq->used_gpa);
	if (vq->desc == NULL || vq->avail == NULL || vq->used == NULL)
		return -ENOMEM;
	rc = vfe_vq_init_common(vq, sizeof(struct vring_desc), indirect_max);
	if (rc < 0)
		return rc;
	vq->avail->idx = htole16(start);
	vq->used->idx = htole16(start);
	vq->avail_idx = start;
	vq->last_used = start;
	vq->kicked_avail = start;
	/* Ask for a call at the first used entry, as a driver with callbacks on. */
	vq->avail->ring[num] = htole16(start);
	vq->track_used_event = true;
	return 0;
}

uint16_t vfe_vq_base(const struct vfe_vq *vq)
{
	return vq->packed ? vfe_vqp_pos(vq, vq->avail_idx) : vq->avail_idx;
}

void vfe_vq_addr(const struct vfe_vq *vq, uint32_t index, struct vfe_vring_addr *addr)
{
	/* The backend translates these through the mem table's uaddr fields. */
	*addr = (struct vfe_vring_addr){
		.index = index,
		.desc = (uint64_t)(uintptr_t)vq->desc,
		.used = (uint64_t)(uintptr_t)vq->used,
		.avail = (uint64_t)(uintptr_t)vq->avail,
	};
}

void vfe_vq_push_avail(struct vfe_vq *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx & (vq->num - 1)] = htole16(head);
	vq->avail_idx++;
}

static void fill_desc(struct vring_desc *d, const struct vfe_buf *b, uint16_t flags, uint16_t next)
{
	d->addr = htole64(b->gpa);
	d->len = htole32(b->len);
	d->flags = htole16(flags | (b->writable ? VRING_DESC_F_WRITE : 0));
	d->next = htole16(next);
}

/* Take @p n descriptors off the free list; the chain follows slot[].next. */
static uint16_t take_desc(struct vfe_vq *vq, unsigned int n, void *cookie)
{
	uint16_t head = vq->free_head;
	uint16_t idx = head;
	unsigned int i;

	for (i = 0; i < n; i++)
		idx = vq->slot[idx].next;
	vq->free_head = idx;
	vq->num_free -= n;
	vq->slot[head].ndesc = n;
	vq->slot[head].cookie = cookie;
	return head;
}

int vfe_vq_add(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n, void *cookie)
{
	uint16_t head, idx;
	unsigned int i;

	if (vq->packed)
		return vfe_vqp_add(vq, bufs, n, cookie);
	if (n == 0)
		return -EINVAL;
	if (n > vq->num_free)
		return -ENOSPC;
	head = take_desc(vq, n, cookie);
	idx = head;
	for (i = 0; i < n; i++) {
		uint16_t next = vq->slot[idx].next;

		fill_desc(&vq->desc[idx], &bufs[i], i + 1 < n ? VRING_DESC_F_NEXT : 0,
			i + 1 < n ? next : 0);
		idx = next;
	}
	vfe_vq_push_avail(vq, head);
	return head;
}

int vfe_vq_add_indirect(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n,
		void *cookie)
{
	struct vring_desc *table;
	uint64_t table_gpa;
	uint16_t head;
	unsigned int i;

	if (vq->packed)
		return vfe_vqp_add_indirect(vq, bufs, n, cookie);
	if (n == 0 || n > vq->indirect_max)
		return -EINVAL;
	if (vq->num_free == 0)
		return -ENOSPC;
	head = take_desc(vq, 1, cookie);
	table = vq->indirect + (size_t)head * vq->indirect_max;
	table_gpa = vq->indirect_gpa + (uint64_t)head * vq->indirect_max * sizeof(*table);
	for (i = 0; i < n; i++)
		fill_desc(&table[i], &bufs[i], i + 1 < n ? VRING_DESC_F_NEXT : 0,
			i + 1 < n ? i + 1 : 0);
	vq->desc[head] = (struct vring_desc){
		.addr = htole64(table_gpa),
		.len = htole32(n * sizeof(*table)),
		.flags = htole16(VRING_DESC_F_INDIRECT),
	};
	vfe_vq_push_avail(vq, head);
	return head;
}

void vfe_vq_publish(struct vfe_vq *vq)
{
	if (vq->packed) {
		vfe_vqp_publish(vq);
		return;
	}
	/*
	 * Release: the descriptors and avail entries written before must be
	 * visible to the device before the index that hands them over.
	 */
	__atomic_store_n(&vq->avail->idx, htole16(vq->avail_idx), __ATOMIC_RELEASE);
}

bool vfe_vq_kick_needed(struct vfe_vq *vq)
{
	uint16_t old = vq->kicked_avail;
	uint16_t event;

	if (vq->packed)
		return vfe_vqp_kick_needed(vq);
	vq->kicked_avail = vq->avail_idx;
	/*
	 * Full barrier: the avail->idx store must be visible before we read
	 * whether the device wants a kick, or the device could go to sleep
	 * after we read a stale "no kick needed" (store-load ordering).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx) {
		event = le16toh(__atomic_load_n(avail_event_ptr(vq), __ATOMIC_RELAXED));
		return vring_need_event(event, vq->avail_idx, old);
	}
	return !(le16toh(__atomic_load_n(&vq->used->flags, __ATOMIC_RELAXED)) &
		VRING_USED_F_NO_NOTIFY);
}

int vfe_vq_kick(struct vfe_vq *vq)
{
	uint64_t one = 1;

	if (write(vq->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

uint16_t vfe_vq_used_pending(const struct vfe_vq *vq)
{
	uint16_t idx;

	if (vq->packed)
		return vfe_vqp_used_pending(vq);
	/* Acquire: used entries and buffer contents are read after the index. */
	idx = le16toh(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE));

	return (uint16_t)(idx - vq->last_used);
}

int vfe_vq_get_used(struct vfe_vq *vq, uint32_t *len, void **cookie)
{
	struct vring_used_elem *e;
	uint32_t id;
	uint16_t last;
	unsigned int i;

	if (vq->packed)
		return vfe_vqp_get_used(vq, len, cookie);
	if (vfe_vq_used_pending(vq) == 0)
		return -EAGAIN;
	e = &vq->used->ring[vq->last_used & (vq->num - 1)];
	id = le32toh(e->id);
	if (len != NULL)
		*len = le32toh(e->len);
	vq->last_used++;
	if (vq->event_idx && vq->track_used_event)
		__atomic_store_n(&vq->avail->ring[vq->num], htole16(vq->last_used),
			__ATOMIC_RELAXED);
	if (id >= vq->num || vq->slot[id].ndesc == 0)
		return -EIO;

	last = id;
	for (i = 1; i < vq->slot[id].ndesc; i++)
		last = vq->slot[last].next;
	vq->slot[last].next = vq->free_head;
	vq->free_head = id;
	vq->num_free += vq->slot[id].ndesc;
	vq->slot[id].ndesc = 0;
	if (cookie != NULL)
		*cookie = vq->slot[id].cookie;
	return (int)id;
}

int vfe_vq_wait_used(const struct vfe_vq *vq, unsigned int timeout_ms)
{
	const struct timespec pause = { .tv_nsec = VFE_POLL_SLEEP_NS };
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (vfe_vq_used_pending(vq) != 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
				(now.tv_nsec - start.tv_nsec) / 1000000 >= (long)timeout_ms)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

uint64_t vfe_vq_calls(struct vfe_vq *vq)
{
	uint64_t n;

	if (read(vq->call_fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

int vfe_vq_wait_call(struct vfe_vq *vq, unsigned int timeout_ms)
{
	struct pollfd pfd = { .fd = vq->call_fd, .events = POLLIN };

	if (poll(&pfd, 1, (int)timeout_ms) < 0)
		return -errno;
	return vfe_vq_calls(vq) != 0 ? 0 : -ETIMEDOUT;
}

void vfe_vq_set_no_interrupt(struct vfe_vq *vq, bool on)
{
	uint16_t flags;

	if (vq->packed) {
		vfe_vqp_set_no_interrupt(vq, on);
		return;
	}
	flags = le16toh(vq->avail->flags);
	flags = on ? flags | VRING_AVAIL_F_NO_INTERRUPT : flags & ~VRING_AVAIL_F_NO_INTERRUPT;
	__atomic_store_n(&vq->avail->flags, htole16(flags), __ATOMIC_RELAXED);
}

void vfe_vq_set_used_event(struct vfe_vq *vq, uint16_t idx)
{
	if (vq->packed) {
		vfe_vqp_set_used_event(vq, idx);
		return;
	}
	__atomic_store_n(&vq->avail->ring[vq->num], htole16(idx), __ATOMIC_RELAXED);
}

bool vfe_vq_kicks_asked(const struct vfe_vq *vq)
{
	if (vq->packed)
		return le16toh(__atomic_load_n(&vq->device_event->flags, __ATOMIC_RELAXED)) !=
		       VRING_PACKED_EVENT_FLAG_DISABLE;
	if (vq->event_idx)
		return vfe_vq_avail_event(vq) == vq->avail_idx;
	return !(le16toh(__atomic_load_n(&vq->used->flags, __ATOMIC_RELAXED)) &
		 VRING_USED_F_NO_NOTIFY);
}

uint16_t vfe_vq_avail_event(const struct vfe_vq *vq)
{
	if (vq->packed)
		return le16toh(__atomic_load_n(&vq->device_event->off_wrap, __ATOMIC_RELAXED));
	return le16toh(__atomic_load_n(avail_event_ptr(vq), __ATOMIC_RELAXED));
}
