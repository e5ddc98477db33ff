/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtq (split ring, device side) driven by a fake guest driver: rings and
 * buffers live in malloc'd memory whose guest-physical addresses differ from
 * the host ones. Each ring is its own exact-size allocation and each region
 * its own buffer, so an out-of-bounds read shows up under ASan.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "virtq_split.h"
#include "fake_guest.h"

/* The fake guest: its rings and its view of the indices. */
struct drv {
	struct virtq vq;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t size;
	uint16_t avail_idx;
	uint64_t next_gpa;
};

static struct drv *drv_new(uint16_t size, uint16_t start, uint64_t features)
{
	struct drv *d = xalloc(64, sizeof(*d));

	d->size = size;
	d->desc = xalloc(16, sizeof(struct vring_desc) * size);
	/* flags, idx, ring[size], used_event */
	d->avail = xalloc(2, sizeof(uint16_t) * (3 + size));
	/* flags, idx, ring[size], avail_event */
	d->used = xalloc(4, 4 + sizeof(struct vring_used_elem) * size + 2);
	d->avail->idx = htole16(start);
	d->used->idx = htole16(start);
	d->avail_idx = start;
	d->next_gpa = R0_GPA;
	if (virtq_split_init(&d->vq, &mem, d->desc, d->avail, d->used, size, start, start,
			features) != 0)
		abort();
	return d;
}

static void drv_free(struct drv *d)
{
	free(d->desc);
	free(d->avail);
	free(d->used);
	free(d);
}

static void set_desc(struct vring_desc *t, uint16_t i, uint64_t gpa, uint32_t len,
		uint16_t flags, uint16_t next)
{
	t[i].addr = htole64(gpa);
	t[i].len = htole32(len);
	t[i].flags = htole16(flags);
	t[i].next = htole16(next);
}

static void post(struct drv *d, uint16_t head)
{
	d->avail->ring[d->avail_idx & (d->size - 1)] = htole16(head);
	d->avail_idx++;
	__atomic_store_n(&d->avail->idx, htole16(d->avail_idx), __ATOMIC_RELEASE);
}

static uint16_t used_idx(const struct drv *d)
{
	return le16toh(__atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE));
}

static void set_used_event(struct drv *d, uint16_t v)
{
	d->avail->ring[d->size] = htole16(v);
}

static void test_init(void)
{
	static struct vring_desc desc[4] __attribute__((aligned(16)));
	static uint16_t avail[8];
	static uint32_t used[8];
	struct virtq *vq = xalloc(64, sizeof(*vq));
	struct vring_avail *a = (struct vring_avail *)avail;
	struct vring_used *u = (struct vring_used *)used;

	tap_ok(virtq_split_init(vq, &mem, desc, a, u, 0, 0, 0, 0) == -EINVAL,
			"init: size 0 refused");
	tap_ok(virtq_split_init(vq, &mem, desc, a, u, 3, 0, 0, 0) == -EINVAL,
			"init: size 3 refused");
	tap_ok(virtq_split_init(vq, &mem, desc, a, u, 100, 0, 0, 0) == -EINVAL,
			"init: size 100 (not a power of two) refused");
	tap_ok(virtq_split_init(vq, &mem, desc, a, u, 65535, 0, 0, 0) == -EINVAL,
			"init: size 65535 refused");
	tap_ok(virtq_split_init(vq, &mem, (struct vring_desc *)((uint8_t *)desc + 8), a, u, 4, 0, 0,
			0) == -EFAULT, "init: misaligned descriptor table refused");
	tap_ok(virtq_split_init(vq, &mem, desc, (struct vring_avail *)((uint8_t *)avail + 1), u, 4,
			0, 0, 0) == -EFAULT, "init: misaligned avail ring refused");
	tap_ok(virtq_split_init(vq, &mem, desc, a, (struct vring_used *)((uint8_t *)used + 2), 4,
			0, 0, 0) == -EFAULT, "init: misaligned used ring refused");
	tap_ok(virtq_split_init(vq, NULL, desc, a, u, 4, 0, 0, 0) == -EFAULT,
			"init: no memory refused");
	tap_ok(virtq_split_init(vq, &mem, desc, a, u, VIRTQ_MAX_SIZE, 7, 9,
			F_EVENT_IDX | F_INDIRECT) == 0 && vq->shadow_cap == VIRTQ_SHADOW_MAX &&
			vq->last_avail_idx == 7 && vq->last_used_idx == 9 && vq->event_idx &&
			vq->indirect && !vq->broken, "init: size 32768, indices and features kept");
	tap_ok(virtq_split_init(vq, &mem, desc, a, u, 4, 0, 0, F_EVENT_IDX) == 0 &&
			vq->shadow_cap == 4 && !vq->indirect,
			"init: shadow capacity is the ring size");
	free(vq);
}

static void test_basic(void)
{
	struct drv *d = drv_new(8, 0, 0);
	struct virtq_chain c[8];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x10);
	uint64_t pay = gbuf(&d->next_gpa, 100, 0x10 + 44);
	uint64_t rx = gbuf(&d->next_gpa, 4096, 0);
	uint8_t buf[144], out[50];
	unsigned int i;

	set_desc(d->desc, 0, hdr, 44, NEXT, 3);
	set_desc(d->desc, 3, pay, 100, 0, 0);
	set_desc(d->desc, 5, rx, 4096, WRITE, 0);
	post(d, 0);
	post(d, 5);

	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 8) == 2, "basic: two chains dequeued");
	tap_ok(c[0].head == 0 && c[0].nr_readable == 2 && c[0].nr_pieces == 2 &&
			c[0].readable_len == 144 && c[0].writable_len == 0,
			"basic: tx chain has two readable pieces, 144 bytes");
	tap_ok(c[0].pieces[0].addr == hva(hdr) && c[0].pieces[0].len == 44 &&
			c[0].pieces[1].addr == hva(pay) && c[0].pieces[1].len == 100,
			"basic: pieces point at the guest buffers");
	tap_ok(virtq_chain_read(&c[0], 0, buf, 144) == 144 && check_bytes(buf, 144, 0x10),
			"basic: chain_read of the whole chain");
	tap_ok(virtq_chain_read(&c[0], 40, buf, 10) == 10 && check_bytes(buf, 10, 0x10 + 40),
			"basic: chain_read across the header/payload boundary");
	tap_ok(virtq_chain_read(&c[0], 140, buf, 10) == 4 && check_bytes(buf, 4, 0x10 + 140),
			"basic: chain_read past the end is short");
	tap_ok(virtq_chain_write(&c[0], 0, buf, 1) == 0, "basic: no writable part to write");

	tap_ok(c[1].head == 5 && c[1].nr_readable == 0 && c[1].nr_pieces == 1 &&
			c[1].readable_len == 0 && c[1].writable_len == 4096,
			"basic: rx chain has one writable piece");
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(0x80 + i);
	tap_ok(virtq_chain_write(&c[1], 100, out, 50) == 50 &&
			check_bytes((uint8_t *)hva(rx) + 100, 50, 0x80),
			"basic: chain_write lands at the offset");
	tap_ok(virtq_chain_write(&c[1], 4090, out, 50) == 6, "basic: chain_write stops at the end");
	tap_ok(virtq_chain_read(&c[1], 0, buf, 1) == 0, "basic: no readable part to read");

	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 8) == 0 && d->vq.last_avail_idx == 2,
			"basic: nothing more to dequeue");

	d->used->ring[2].id = htole32(0xdeadbeef);
	virtq_split_complete(&d->vq, 5, 150);
	virtq_split_complete(&d->vq, 0, 0);
	tap_ok(used_idx(d) == 0 && d->vq.stats.used_idx_stores == 0,
			"shadow: completions invisible before the flush");
	virtq_split_flush(&d->vq);
	tap_ok(used_idx(d) == 2 && d->vq.stats.used_idx_stores == 1 && d->vq.last_used_idx == 2,
			"shadow: one used->idx store publishes both");
	tap_ok(le32toh(d->used->ring[0].id) == 5 && le32toh(d->used->ring[0].len) == 150 &&
			le32toh(d->used->ring[1].id) == 0 && le32toh(d->used->ring[1].len) == 0,
			"shadow: used entries carry head and length in order");
	tap_ok(le32toh(d->used->ring[2].id) == 0xdeadbeef, "shadow: the next slot untouched");
	virtq_split_flush(&d->vq);
	tap_ok(d->vq.stats.used_idx_stores == 1, "shadow: empty flush stores nothing");
	tap_ok(d->vq.stats.dequeued == 2 && d->vq.stats.completed == 2,
			"counters: dequeued and completed");

	virtq_split_complete(&d->vq, 8, 1);
	tap_ok(d->vq.shadow_count == 0 && d->vq.stats.errors[VIRTQ_ERR_USED_ID] == 1 &&
			!d->vq.broken, "complete: head >= size dropped and counted");
	drv_free(d);
}

/* Free-running indices that wrap 65535 -> 0 in the middle of a burst. */
static void test_wrap(void)
{
	struct drv *d = drv_new(8, 65533, 0);
	struct virtq_chain c[8];
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 8; i++)
		d->used->ring[i].id = htole32(0xdeadbeef);
	for (i = 0; i < 6; i++) {
		set_desc(d->desc, i, gbuf(&d->next_gpa, 16, i), 16, 0, 0);
		post(d, i);
	}
	tap_ok(le16toh(d->avail->idx) == 3, "wrap: avail->idx wrapped to 3");
	n = virtq_split_dequeue_burst(&d->vq, c, 8);
	for (i = 0; i < n; i++)
		ok &= c[i].head == i && c[i].readable_len == 16;
	tap_ok(n == 6 && ok && d->vq.last_avail_idx == 3,
			"wrap: six chains across the 16-bit wrap, in order");
	for (i = 0; i < 6; i++)
		virtq_split_complete(&d->vq, c[i].head, 10u * i + 1);
	tap_ok(used_idx(d) == 65533, "wrap: used->idx untouched before the flush");
	virtq_split_flush(&d->vq);
	tap_ok(used_idx(d) == 3 && d->vq.stats.used_idx_stores == 1,
			"wrap: one store moves used->idx 65533 -> 3");
	/* Slots 5, 6, 7 then 0, 1, 2: the copy is split at the ring's end. */
	for (i = 0; i < 6; i++) {
		const struct vring_used_elem *e = &d->used->ring[(65533 + i) & 7];

		ok &= le32toh(e->id) == i && le32toh(e->len) == 10u * i + 1;
	}
	tap_ok(ok, "wrap: used entries in slots 5,6,7,0,1,2");
	tap_ok(le32toh(d->used->ring[3].id) == 0xdeadbeef &&
			le32toh(d->used->ring[4].id) == 0xdeadbeef,
			"wrap: slots 3 and 4 untouched");
	drv_free(d);
}

static void test_shadow_full(void)
{
	struct drv *d = drv_new(8, 100, 0);
	uint16_t i;

	for (i = 0; i < 7; i++)
		virtq_split_complete(&d->vq, i, i);
	tap_ok(used_idx(d) == 100 && d->vq.stats.used_idx_stores == 0,
			"shadow: 7 of 8 entries stay in the shadow");
	virtq_split_complete(&d->vq, 7, 7);
	tap_ok(used_idx(d) == 108 && d->vq.stats.used_idx_stores == 1 && d->vq.shadow_count == 0,
			"shadow: the 8th entry (ring size) forces one flush");
	tap_ok(le32toh(d->used->ring[(100 + 7) & 7].id) == 7, "shadow: last entry in its slot");

	virtq_split_complete(&d->vq, 1, 1);
	virtq_split_complete(&d->vq, 2, 2);
	virtq_split_set_per_entry_publish(&d->vq, true);
	tap_ok(used_idx(d) == 110 && d->vq.stats.used_idx_stores == 2,
			"per-entry: switching on flushes what was pending");
	for (i = 0; i < 3; i++) {
		virtq_split_complete(&d->vq, i, 0);
		if (used_idx(d) != 111 + i)
			break;
	}
	tap_ok(i == 3 && d->vq.stats.used_idx_stores == 5,
			"per-entry: each completion is one used->idx store");
	drv_free(d);
}

static void test_burst_and_unget(void)
{
	struct drv *d = drv_new(64, 65500, 0);
	struct virtq_chain *c = xalloc(64, sizeof(*c) * 64);
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 40; i++) {
		set_desc(d->desc, i, gbuf(&d->next_gpa, 8, i), 8, 0, 0);
		post(d, i);
	}
	n = virtq_split_dequeue_burst(&d->vq, c, 2);
	tap_ok(n == 2 && c[0].head == 0 && c[1].head == 1, "burst: max 2 honoured");
	n = virtq_split_dequeue_burst(&d->vq, c, 64);
	for (i = 0; i < n; i++)
		ok &= c[i].head == i + 2;
	tap_ok(n == 38 && ok, "burst: 38 more in one call (more than one prefetch batch)");

	tap_ok(virtq_split_unget(&d->vq, 3) == 3 && d->vq.last_avail_idx == (uint16_t)(65500 + 37),
			"unget: three chains given back");
	n = virtq_split_dequeue_burst(&d->vq, c, 64);
	tap_ok(n == 3 && c[0].head == 37 && c[1].head == 38 && c[2].head == 39,
			"unget: the same chains come again, in order");
	tap_ok(virtq_split_unget(&d->vq, 10) == 3, "unget: clamped to the last dequeue");
	tap_ok(virtq_split_unget(&d->vq, 1) == 0, "unget: nothing left to give back");
	tap_ok(d->vq.stats.ungot == 6 && d->vq.stats.dequeued == 43, "unget: counters");

	/* A burst that ends at once (here: the queue broke) resets what unget may take. */
	n = virtq_split_dequeue_burst(&d->vq, c, 64);
	d->avail_idx += 100;
	__atomic_store_n(&d->avail->idx, htole16(d->avail_idx), __ATOMIC_RELEASE);
	tap_ok(n == 3 && virtq_split_dequeue_burst(&d->vq, c, 64) == 0 && d->vq.broken &&
			virtq_split_unget(&d->vq, 1) == 0,
			"unget: nothing from a burst before an empty one");
	free(c);
	drv_free(d);
}

static void test_indirect(void)
{
	struct drv *d = drv_new(8, 0, F_INDIRECT);
	struct virtq_chain c[4];
	struct vring_desc t[3];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 1), pay = gbuf(&d->next_gpa, 20, 45);
	uint64_t rx = gbuf(&d->next_gpa, 64, 0);
	uint64_t tgpa = R1_GPA + 0x100;
	uint8_t buf[64];

	/* Table order 0 -> 2 -> 1: next pointers index the table, not the ring. */
	set_desc(t, 0, hdr, 44, NEXT, 2);
	set_desc(t, 2, pay, 20, NEXT, 1);
	set_desc(t, 1, rx, 64, WRITE, 0);
	memcpy(hva(tgpa), t, sizeof(t));
	/* WRITE on the indirect descriptor itself must be ignored (spec). */
	set_desc(d->desc, 4, tgpa, sizeof(t), INDIR | WRITE, 0);
	post(d, 4);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].head == 4 &&
			c[0].nr_readable == 2 && c[0].nr_pieces == 3 &&
			c[0].readable_len == 64 && c[0].writable_len == 64,
			"indirect: table walked, 2 readable + 1 writable");
	tap_ok(c[0].pieces[2].addr == hva(rx) && virtq_chain_read(&c[0], 0, buf, 64) == 64 &&
			check_bytes(buf, 64, 1), "indirect: bytes readable through the pieces");

	/* A direct header followed by an indirect table (no NEXT on it). */
	set_desc(t, 0, rx, 64, WRITE, 0);
	memcpy(hva(tgpa), t, sizeof(t[0]));
	set_desc(d->desc, 1, hdr, 44, NEXT, 2);
	set_desc(d->desc, 2, tgpa, 16, INDIR, 0);
	post(d, 1);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].nr_readable == 1 &&
			c[0].nr_pieces == 2 && c[0].readable_len == 44 && c[0].writable_len == 64,
			"indirect: direct descriptor chained to a table");

	/* A table straddling the R0|R1 boundary: descriptor 1 is cut in half. */
	{
		struct guest_mem_piece p[2];
		uint8_t flat[sizeof(t)];
		uint64_t sgpa = R1_GPA - 24;

		set_desc(t, 0, hdr, 10, NEXT, 1);
		set_desc(t, 1, pay, 20, NEXT, 2);
		set_desc(t, 2, rx, 30, WRITE, 0);
		memcpy(flat, t, sizeof(t));
		if (guest_mem_translate(&mem, sgpa, sizeof(t), p, 2) != 2)
			abort();
		memcpy(p[0].addr, flat, p[0].len);
		memcpy(p[1].addr, flat + p[0].len, p[1].len);
		set_desc(d->desc, 0, sgpa, sizeof(t), INDIR, 0);
		post(d, 0);
		tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].readable_len == 30 &&
				c[0].writable_len == 30 && c[0].nr_pieces == 3 &&
				c[0].pieces[1].addr == hva(pay),
				"indirect: table split across two regions walked");
	}

	/* A buffer crossing the R0|R1 boundary becomes two pieces. */
	{
		uint8_t *a = hva(R1_GPA - 10), *b = hva(R1_GPA);
		unsigned int i;

		for (i = 0; i < 10; i++)
			a[i] = (uint8_t)(0x40 + i);
		for (i = 0; i < 20; i++)
			b[i] = (uint8_t)(0x40 + 10 + i);
		set_desc(d->desc, 6, R1_GPA - 10, 30, 0, 0);
		post(d, 6);
		tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].nr_pieces == 2 &&
				c[0].pieces[0].len == 10 && c[0].pieces[1].len == 20 &&
				virtq_chain_read(&c[0], 0, buf, 30) == 30 &&
				check_bytes(buf, 30, 0x40),
				"split buffer: two pieces, bytes in order");
	}
	tap_ok(!d->vq.broken, "indirect: queue still healthy");
	drv_free(d);
}

/* Post one chain built by fn into a fresh queue; expect it to break with err. */
static void expect_broken(uint64_t features, void (*fn)(struct drv *), enum virtq_err err,
		const char *what)
{
	struct drv *d = drv_new(8, 0, features);
	struct virtq_chain c[4];
	uint16_t n;

	fn(d);
	n = virtq_split_dequeue_burst(&d->vq, c, 4);
	tap_ok(n == 0 && d->vq.broken && d->vq.broken_reason == err &&
			d->vq.stats.errors[err] == 1 && d->vq.last_avail_idx == 0 &&
			virtq_split_dequeue_burst(&d->vq, c, 4) == 0,
			"broken: %s -> %s (got %s, n=%u)", what, virtq_err_str(err),
			virtq_err_str(d->vq.broken_reason), n);
	drv_free(d);
}

static void b_avail_jump(struct drv *d)
{
	d->avail->idx = htole16(d->size + 1);
}

static void b_avail_back(struct drv *d)
{
	d->avail->idx = htole16(0xffff);
}

static void b_head(struct drv *d)
{
	post(d, 8);
}

static void b_head_max(struct drv *d)
{
	post(d, 0xffff);
}

static void b_next(struct drv *d)
{
	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 8);
	post(d, 0);
}

static void b_loop(struct drv *d)
{
	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 1);
	set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 0);
	post(d, 0);
}

static void b_self_loop(struct drv *d)
{
	set_desc(d->desc, 3, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 3);
	post(d, 3);
}

/* An indirect table of n entries at the end of R1 (ASan guards what follows). */
static struct vring_desc *table_at_end(struct drv *d, unsigned int n, uint16_t ring_slot)
{
	uint64_t gpa = R1_GPA + R1_SIZE - n * sizeof(struct vring_desc);

	set_desc(d->desc, ring_slot, gpa, n * sizeof(struct vring_desc), INDIR, 0);
	return hva(gpa);
}

static void b_ind_loop(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, 2, 0);

	set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 1);
	set_desc(t, 1, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 0);
	post(d, 0);
}

static void b_ind_next(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, 2, 0);

	set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 2);
	post(d, 0);
}

static void b_ind_nested(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, 1, 0);

	set_desc(t, 0, R0_GPA, 16, INDIR, 0);
	post(d, 0);
}

static void b_ind_with_next(struct drv *d)
{
	table_at_end(d, 1, 0);
	d->desc[0].flags = htole16(INDIR | NEXT);
	d->desc[0].next = htole16(1);
	set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
}

static void b_ind_len0(struct drv *d)
{
	set_desc(d->desc, 0, R1_GPA, 0, INDIR, 0);
	post(d, 0);
}

static void b_ind_len24(struct drv *d)
{
	set_desc(d->desc, 0, R1_GPA, 24, INDIR, 0);
	post(d, 0);
}

static void b_ind_outside(struct drv *d)
{
	set_desc(d->desc, 0, GAP_GPA, 32, INDIR, 0);
	post(d, 0);
}

static void b_ind_past_end(struct drv *d)
{
	set_desc(d->desc, 0, R1_GPA + R1_SIZE - 16, 32, INDIR, 0);
	post(d, 0);
}

static void b_ind_unnegotiated(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, 1, 0);

	set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
}

static void b_ind_pieces(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint64_t b = gbuf(&d->next_gpa, 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		set_desc(t, i, b, 1, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0, i + 1);
	post(d, 0);
}

static void b_addr_outside(struct drv *d)
{
	set_desc(d->desc, 0, GAP_GPA, 8, 0, 0);
	post(d, 0);
}

static void b_addr_past_end(struct drv *d)
{
	set_desc(d->desc, 0, R1_GPA + R1_SIZE - 4, 8, 0, 0);
	post(d, 0);
}

/* An empty writable descriptor before a readable one: the order rule holds for empties too. */
static void b_order_empty(struct drv *d)
{
	set_desc(d->desc, 0, R0_GPA, 0, WRITE | NEXT, 1);
	set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
}

/* An empty readable descriptor after a writable one. */
static void b_order_empty_after(struct drv *d)
{
	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, WRITE | NEXT, 1);
	set_desc(d->desc, 1, R0_GPA, 0, 0, 0);
	post(d, 0);
}

/* 64 one-byte buffers and one empty descriptor: the empty one takes the 65th piece's room. */
static void b_pieces_empty(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint64_t b = gbuf(&d->next_gpa, 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		set_desc(t, i, b, i == 10 ? 0 : 1, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0, i + 1);
	post(d, 0);
}

/* 65 empty descriptors: bounded like 65 pieces, whatever the table's size. */
static void b_empties(struct drv *d)
{
	struct vring_desc *t = table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		set_desc(t, i, R0_GPA, 0, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0, i + 1);
	post(d, 0);
}

/* A loop of empty descriptors still ends as a loop. */
static void b_empty_loop(struct drv *d)
{
	set_desc(d->desc, 0, R0_GPA, 0, NEXT, 1);
	set_desc(d->desc, 1, R0_GPA, 0, NEXT, 0);
	post(d, 0);
}

/* An empty descriptor does not excuse a bad next. */
static void b_empty_next(struct drv *d)
{
	set_desc(d->desc, 0, R0_GPA, 0, NEXT, 8);
	post(d, 0);
}

static void b_len_4g_small(struct drv *d)
{
	set_desc(d->desc, 0, R0_GPA, UINT32_MAX, 0, 0);
	post(d, 0);
}

static void b_len_4g_total(struct drv *d)
{
	set_desc(d->desc, 0, BIG_GPA, UINT32_MAX, NEXT, 1);
	set_desc(d->desc, 1, BIG_GPA, 1, 0, 0);
	post(d, 0);
}

static void b_len_4g_writable(struct drv *d)
{
	set_desc(d->desc, 0, BIG_GPA, 0x80000000u, WRITE | NEXT, 1);
	set_desc(d->desc, 1, BIG_GPA, 0x80000000u, WRITE, 0);
	post(d, 0);
}

static void b_order(struct drv *d)
{
	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, WRITE | NEXT, 1);
	set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
}

static void test_broken(void)
{
	expect_broken(0, b_avail_jump, VIRTQ_ERR_AVAIL_IDX, "avail->idx ahead by size + 1");
	expect_broken(0, b_avail_back, VIRTQ_ERR_AVAIL_IDX, "avail->idx moved backwards");
	expect_broken(0, b_head, VIRTQ_ERR_HEAD, "head == size");
	expect_broken(0, b_head_max, VIRTQ_ERR_HEAD, "head 0xffff");
	expect_broken(0, b_next, VIRTQ_ERR_NEXT, "next == size");
	expect_broken(0, b_loop, VIRTQ_ERR_LOOP, "direct loop 0 -> 1 -> 0");
	expect_broken(0, b_self_loop, VIRTQ_ERR_LOOP, "descriptor pointing at itself");
	expect_broken(F_INDIRECT, b_ind_loop, VIRTQ_ERR_LOOP, "loop inside an indirect table");
	expect_broken(F_INDIRECT, b_ind_next, VIRTQ_ERR_NEXT, "next beyond the indirect table");
	expect_broken(F_INDIRECT, b_ind_nested, VIRTQ_ERR_INDIRECT_NESTED, "indirect in indirect");
	expect_broken(F_INDIRECT, b_ind_with_next, VIRTQ_ERR_INDIRECT_NEXT,
			"indirect descriptor with NEXT");
	expect_broken(F_INDIRECT, b_ind_len0, VIRTQ_ERR_INDIRECT_LEN, "indirect length 0");
	expect_broken(F_INDIRECT, b_ind_len24, VIRTQ_ERR_INDIRECT_LEN, "indirect length 24");
	expect_broken(F_INDIRECT, b_ind_outside, VIRTQ_ERR_INDIRECT_ADDR,
			"indirect table outside memory");
	expect_broken(F_INDIRECT, b_ind_past_end, VIRTQ_ERR_INDIRECT_ADDR,
			"indirect table running off the end of memory");
	expect_broken(0, b_ind_unnegotiated, VIRTQ_ERR_INDIRECT_FEATURE,
			"indirect without the feature");
	expect_broken(F_INDIRECT, b_ind_pieces, VIRTQ_ERR_PIECES, "65 buffers in one chain");
	expect_broken(0, b_addr_outside, VIRTQ_ERR_DESC_ADDR, "buffer outside memory");
	expect_broken(0, b_addr_past_end, VIRTQ_ERR_DESC_ADDR, "buffer running off the end");
	expect_broken(0, b_order_empty, VIRTQ_ERR_DESC_ORDER, "readable after empty writable");
	expect_broken(0, b_order_empty_after, VIRTQ_ERR_DESC_ORDER,
			"empty readable after writable");
	expect_broken(F_INDIRECT, b_pieces_empty, VIRTQ_ERR_PIECES,
			"64 buffers and one empty descriptor");
	expect_broken(F_INDIRECT, b_empties, VIRTQ_ERR_PIECES, "65 empty descriptors");
	expect_broken(0, b_empty_loop, VIRTQ_ERR_LOOP, "loop of empty descriptors");
	expect_broken(0, b_empty_next, VIRTQ_ERR_NEXT, "empty descriptor with next == size");
	expect_broken(0, b_len_4g_small, VIRTQ_ERR_DESC_ADDR, "4 GiB - 1 buffer in 64 KiB");
	expect_broken(0, b_len_4g_total, VIRTQ_ERR_CHAIN_LEN, "readable total of 4 GiB");
	expect_broken(0, b_len_4g_writable, VIRTQ_ERR_CHAIN_LEN, "writable total of 4 GiB");
	expect_broken(0, b_order, VIRTQ_ERR_DESC_ORDER, "readable after writable");
}

/* A sentinel the device must neither read as data nor write: where empty descriptors point. */
#define SENTINEL 0xee

/*
 * Empty descriptors are legal (virtio does not forbid them; Linux vhost skips
 * them): a chain's bytes are those of its non-empty descriptors, wherever the
 * empty ones sit, and a chain of empty ones only is a chain with no bytes.
 */
static void test_zero_len(void)
{
	struct drv *d = drv_new(16, 0, F_INDIRECT);
	struct virtq_chain c[8];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x20), pay = gbuf(&d->next_gpa, 100, 0x20 + 44);
	uint64_t h1 = gbuf(&d->next_gpa, 20, 0x60), h2 = gbuf(&d->next_gpa, 124, 0x60 + 20);
	uint64_t sent = gbuf(&d->next_gpa, 64, 0), rx1 = gbuf(&d->next_gpa, 64, 0);
	uint64_t rx2 = gbuf(&d->next_gpa, 32, 0), tgpa = R1_GPA + 0x200;
	uint64_t ok_buf = gbuf(&d->next_gpa, 44, 0x30);
	struct vring_desc t[4];
	uint8_t buf[160], out[96];
	unsigned int i;
	uint32_t len;

	memset(hva(sent), SENTINEL, 64);
	/* First: 0 -> 1 -> 2, the empty one first. */
	set_desc(d->desc, 0, sent, 0, NEXT, 1);
	set_desc(d->desc, 1, hdr, 44, NEXT, 2);
	set_desc(d->desc, 2, pay, 100, 0, 0);
	/* Middle, with the header split around it: 3 -> 4 -> 5. */
	set_desc(d->desc, 3, h1, 20, NEXT, 4);
	set_desc(d->desc, 4, sent, 0, NEXT, 5);
	set_desc(d->desc, 5, h2, 124, 0, 0);
	/* Last, pointing outside guest memory: an empty buffer's address names no byte. */
	set_desc(d->desc, 6, hdr, 44, NEXT, 7);
	set_desc(d->desc, 7, pay, 100, NEXT, 8);
	set_desc(d->desc, 8, GAP_GPA, 0, 0, 0);
	/* An indirect table holding one, between header and payload. */
	set_desc(t, 0, hdr, 44, NEXT, 1);
	set_desc(t, 1, sent, 0, NEXT, 2);
	set_desc(t, 2, pay, 100, 0, 0);
	memcpy(hva(tgpa), t, 3 * sizeof(t[0]));
	set_desc(d->desc, 9, tgpa, 3 * sizeof(t[0]), INDIR, 0);
	/* Nothing but empty descriptors, then an ordinary chain behind it. */
	set_desc(d->desc, 10, sent, 0, NEXT, 11);
	set_desc(d->desc, 11, GAP_GPA, 0, 0, 0);
	set_desc(d->desc, 12, ok_buf, 44, 0, 0);
	post(d, 0);
	post(d, 3);
	post(d, 6);
	post(d, 9);
	post(d, 10);
	post(d, 12);

	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 8) == 6 && !d->vq.broken,
			"zero-len: six chains dequeued, queue not broken");
	tap_ok(c[0].head == 0 && c[0].nr_readable == 2 && c[0].nr_pieces == 2 &&
			c[0].readable_len == 144 && c[0].pieces[0].addr == hva(hdr) &&
			virtq_chain_read(&c[0], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor first: the 144 bytes of the other two");
	tap_ok(c[1].head == 3 && c[1].nr_pieces == 2 && c[1].readable_len == 144 &&
			virtq_chain_read(&c[1], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x60),
			"zero-len: empty descriptor in the middle of a split header: bytes exact");
	tap_ok(virtq_chain_read(&c[1], 10, buf, 40) == 40 && check_bytes(buf, 40, 0x60 + 10),
			"zero-len: a read across the empty descriptor's place is seamless");
	tap_ok(c[2].head == 6 && c[2].nr_pieces == 2 && c[2].readable_len == 144 &&
			virtq_chain_read(&c[2], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor last (address outside memory): bytes exact");
	tap_ok(c[3].head == 9 && c[3].nr_pieces == 2 && c[3].readable_len == 144 &&
			virtq_chain_read(&c[3], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty entry in an indirect table: bytes exact");
	tap_ok(c[4].head == 10 && c[4].nr_readable == 0 && c[4].nr_pieces == 0 &&
			c[4].readable_len == 0 && c[4].writable_len == 0 &&
			virtq_chain_read(&c[4], 0, buf, 44) == 0,
			"zero-len: a chain of empty descriptors only has no bytes");
	tap_ok(c[5].head == 12 && c[5].readable_len == 44 &&
			virtq_chain_read(&c[5], 0, buf, 44) == 44 && check_bytes(buf, 44, 0x30),
			"zero-len: the chain behind it is served");
	for (i = 0; i < 6; i++)
		virtq_split_complete(&d->vq, c[i].head, 0);
	virtq_split_flush(&d->vq);
	tap_ok(used_idx(d) == 6 && le32toh(d->used->ring[4].id) == 10 &&
			le32toh(d->used->ring[4].len) == 0,
			"zero-len: the empty chain's head goes back in the used ring with len 0");

	/* rx: empty writable descriptors add no room; bytes land only in the others. */
	set_desc(d->desc, 13, sent, 0, WRITE | NEXT, 14);
	set_desc(d->desc, 14, rx1, 64, WRITE | NEXT, 15);
	set_desc(d->desc, 15, sent, 0, WRITE | NEXT, 0);
	set_desc(d->desc, 0, rx2, 32, WRITE | NEXT, 1);
	set_desc(d->desc, 1, sent, 0, WRITE, 0);
	/* And an rx chain with no room at all. */
	set_desc(d->desc, 2, sent, 0, WRITE, 0);
	post(d, 13);
	post(d, 2);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 8) == 2 && !d->vq.broken && c[0].head == 13 &&
			c[0].nr_readable == 0 && c[0].nr_pieces == 2 && c[0].writable_len == 96 &&
			c[0].pieces[0].addr == hva(rx1) && c[0].pieces[1].addr == hva(rx2),
			"zero-len rx: room is 64 + 32, empty descriptors add none");
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(0x90 + i);
	len = virtq_chain_write(&c[0], 0, out, sizeof(out));
	tap_ok(len == 96 && check_bytes(hva(rx1), 64, 0x90) && check_bytes(hva(rx2), 32, 0x90 + 64),
			"zero-len rx: 96 bytes written, in order, into the two non-empty buffers");
	for (i = 0; i < 64; i++)
		if (((uint8_t *)hva(sent))[i] != SENTINEL)
			break;
	tap_ok(i == 64, "zero-len rx: nothing written where the empty descriptors point");
	tap_ok(c[1].head == 2 && c[1].nr_pieces == 0 && c[1].writable_len == 0 &&
			virtq_chain_write(&c[1], 0, out, 1) == 0,
			"zero-len rx: a chain of empty writable descriptors has no room");
	drv_free(d);
}

static void test_big_ok(void)
{
	struct drv *d = drv_new(8, 0, 0);
	struct virtq_chain c[1];

	set_desc(d->desc, 0, BIG_GPA, UINT32_MAX, 0, 0);
	post(d, 0);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 1) == 1 && c[0].readable_len == UINT32_MAX &&
			c[0].pieces[0].addr == big, "4 GiB - 1 buffer inside memory accepted");
	drv_free(d);
}

static void test_partial_burst(void)
{
	struct drv *d = drv_new(8, 0, 0);
	struct virtq_chain c[4];

	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
	post(d, 1);
	post(d, 9);
	post(d, 0);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 2 && c[0].head == 0 && c[1].head == 1 &&
			d->vq.broken && d->vq.broken_reason == VIRTQ_ERR_HEAD &&
			d->vq.last_avail_idx == 2,
			"partial: the two good chains before a bad head are returned");
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 0, "partial: then nothing");
	virtq_split_complete(&d->vq, 0, 0);
	virtq_split_complete(&d->vq, 1, 0);
	virtq_split_flush(&d->vq);
	tap_ok(used_idx(d) == 2, "partial: the good chains can still be completed");
	drv_free(d);
}

static void publish(struct drv *d, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		virtq_split_complete(&d->vq, 0, 0);
	virtq_split_flush(&d->vq);
}

static void test_event_idx(void)
{
	struct drv *d = drv_new(8, 0, F_EVENT_IDX);
	unsigned int i;

	publish(d, 1);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: first decision notifies");
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx: nothing new, no notify");
	set_used_event(d, 1);
	publish(d, 2);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: 1 -> 3 passes used_event 1");
	set_used_event(d, 10);
	publish(d, 2);
	tap_ok(!virtq_split_should_notify(&d->vq),
			"event_idx: 3 -> 5 does not reach used_event 10");
	publish(d, 6);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: 5 -> 11 passes used_event 10");
	tap_ok(d->vq.stats.notify_yes == 3 && d->vq.stats.notify_no == 2,
			"event_idx: decisions counted");
	drv_free(d);

	d = drv_new(8, 65530, F_EVENT_IDX);
	publish(d, 1);
	virtq_split_should_notify(&d->vq);
	set_used_event(d, 65535);
	publish(d, 4);
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx wrap: 65531 -> 65535 not past 65535");
	publish(d, 2);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx wrap: 65535 -> 1 passes 65535");
	set_used_event(d, 3);
	publish(d, 1);
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx wrap: 1 -> 2 not past 3");
	drv_free(d);

	/* 65536 entries published with no decision in between: the guard must fire. */
	d = drv_new(1024, 100, F_EVENT_IDX);
	publish(d, 1);
	virtq_split_should_notify(&d->vq);
	set_used_event(d, 101 + 30000);
	for (i = 0; i < 64; i++)
		publish(d, 1024);
	tap_ok(d->vq.last_used_idx == 101 && !d->vq.signalled_used_valid,
			"event_idx guard: a full 16-bit lap invalidates signalled_used");
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx guard: then the guest is notified");
	drv_free(d);
}

static void test_no_event_idx(void)
{
	struct drv *d = drv_new(8, 0, 0);
	uint16_t avail_event;

	d->avail->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	publish(d, 1);
	tap_ok(!virtq_split_should_notify(&d->vq), "flags: NO_INTERRUPT honoured");
	d->avail->flags = 0;
	tap_ok(!virtq_split_should_notify(&d->vq), "flags: nothing new since, no notify");
	publish(d, 1);
	tap_ok(virtq_split_should_notify(&d->vq), "flags: interrupts wanted, notify");
	tap_ok(d->vq.stats.notify_yes == 1 && d->vq.stats.notify_no == 2, "flags: counted");
	virtq_split_disable_guest_kicks(&d->vq);
	tap_ok(le16toh(d->used->flags) == VRING_USED_F_NO_NOTIFY, "kicks: NO_NOTIFY set");
	drv_free(d);

	d = drv_new(8, 500, F_EVENT_IDX);
	set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	post(d, 0);
	post(d, 0);
	post(d, 0);
	{
		struct virtq_chain c[3];

		virtq_split_dequeue_burst(&d->vq, c, 3);
	}
	virtq_split_disable_guest_kicks(&d->vq);
	memcpy(&avail_event, &d->used->ring[8], sizeof(avail_event));
	tap_ok(le16toh(avail_event) == 502 &&
			le16toh(d->used->flags) == VRING_USED_F_NO_NOTIFY,
			"kicks: avail_event one behind what was consumed (502)");
	drv_free(d);
}

static void rnd_descs(struct vring_desc *t, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		set_desc(t, i, rnd_addr(), rnd_len(), rnd() % 8, rnd() % (n + 2));
}

/*
 * Random rings (random descriptors, indirect tables, heads and indices):
 * a chain either comes out consistent and inside guest memory or the queue
 * breaks; under ASan any read outside the rings or regions aborts the test.
 */
static void test_random(void)
{
	struct drv *d = drv_new(8, 0, F_INDIRECT);
	struct virtq_chain c[8];
	unsigned int iter, good = 0, broken = 0, bad = 0;

	for (iter = 0; iter < 20000; iter++) {
		uint16_t start = rnd(), n, i;

		rnd_descs(d->desc, 8);
		rnd_descs(hva(R1_GPA + R1_SIZE - 256), 16);
		for (i = 0; i < 8; i++)
			d->avail->ring[i] = htole16(rnd() % 4 == 0 ? rnd() : rnd() % 8);
		d->avail->idx = htole16(start + rnd() % 10);
		if (virtq_split_init(&d->vq, &mem, d->desc, d->avail, d->used, 8, start, start,
				F_INDIRECT) != 0)
			abort();
		n = virtq_split_dequeue_burst(&d->vq, c, 8);
		broken += d->vq.broken;
		good += n;
		for (i = 0; i < n; i++)
			bad += chain_faults(&c[i], 8);
	}
	tap_diag("random rings: %u chains accepted, %u queues broken", good, broken);
	tap_ok(bad == 0 && good > 0 && broken > 0,
			"random rings: every accepted chain consistent and inside memory");
	drv_free(d);
}

static void test_names(void)
{
	unsigned int i, j;
	int distinct = 1;

	for (i = 0; i < VIRTQ_ERR_MAX; i++)
		for (j = 0; j < i; j++)
			if (strcmp(virtq_err_str(i), virtq_err_str(j)) == 0 ||
					strcmp(virtq_err_str(i), "unknown") == 0)
				distinct = 0;
	tap_ok(distinct, "every error kind has its own name");
}

int main(void)
{
	if (fake_guest_init() != 0)
		return EXIT_FAILURE;

	test_init();
	test_basic();
	test_wrap();
	test_shadow_full();
	test_burst_and_unget();
	test_indirect();
	test_broken();
	test_zero_len();
	test_big_ok();
	test_partial_burst();
	test_event_idx();
	test_no_event_idx();
	test_random();
	test_names();

	fake_guest_fini();
	return tap_done();
}
