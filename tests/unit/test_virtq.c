/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtqueue engine, device side, driven by a fake guest driver, on the
 * ring layout VFE_RING names (as for the frontend tests: split unless it
 * says packed; meson runs this program once for each). Rings and buffers
 * live in malloc'd memory whose guest-physical addresses differ from the
 * host ones; each ring is its own exact-size allocation and each region its
 * own buffer, so that an out-of-bounds read shows up under ASan.
 *
 * The split_ cases drive a split ring (descriptor table, avail and used
 * rings), the packed_ cases a packed one (one ring, wrap counters, event
 * structures); what does not depend on the layout runs on both.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "tap.h"
#include "vfe.h"
#include "virtq.h"
#include "fake_guest.h"

/* A sentinel the device must neither read as data nor write: where empty descriptors point. */
#define SENTINEL 0xee

/* One buffer of a chain a fake driver posts. */
struct buf {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;		/* WRITE, INDIRECT, or extra bits for hostile cases */
};

/* Packed ring descriptor flags, and the wrap counter of an encoded position. */
#define AVAIL	(1u << VRING_PACKED_DESC_F_AVAIL)
#define USED	(1u << VRING_PACKED_DESC_F_USED)
#define WRAP	VIRTQ_PACKED_WRAP

/*
 * After a first dequeue of @p n chains from a ring set up to break the rule @p what names:
 * nothing taken, the queue broken for @p err and counted once, its position still @p start,
 * and nothing more to take from it.
 */
static void check_broken(struct virtq *vq, uint16_t n, uint16_t start, enum virtq_err err,
		const char *what)
{
	struct virtq_chain c[8];

	tap_ok(n == 0 && vq->broken && vq->broken_reason == err && vq->stats.errors[err] == 1 &&
			vq->last_avail_idx == start && vq_dequeue_burst(vq, c, 8) == 0 &&
			!vq_avail_pending(vq),
			"broken: %s -> %s (got %s, n=%u)", what, virtq_err_str(err),
			virtq_err_str(vq->broken_reason), n);
}

/*
 * The random-ring tests' outcome: some chains accepted, some queues broken, and no fault in
 * any accepted chain (chain_faults()).
 */
static void random_verdict(unsigned int good, unsigned int broken, unsigned int bad)
{
	tap_diag("random rings: %u chains accepted, %u queues broken", good, broken);
	tap_ok(bad == 0 && good > 0 && broken > 0,
			"random rings: every accepted chain consistent and inside memory");
}

/* ---- Split rings ---- */
/* The fake guest: its rings and its view of the indices. */
struct split_drv {
	struct virtq vq;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t size;
	uint16_t avail_idx;
	uint64_t next_gpa;
};

static struct split_drv *split_drv_new(uint16_t size, uint16_t start, uint64_t features)
{
	struct split_drv *d = xalloc(64, sizeof(*d));

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

static void split_drv_free(struct split_drv *d)
{
	free(d->desc);
	free(d->avail);
	free(d->used);
	free(d);
}

static void split_set_desc(struct vring_desc *t, uint16_t i, uint64_t gpa, uint32_t len,
		uint16_t flags, uint16_t next)
{
	t[i].addr = htole64(gpa);
	t[i].len = htole32(len);
	t[i].flags = htole16(flags);
	t[i].next = htole16(next);
}

static void split_post(struct split_drv *d, uint16_t head)
{
	d->avail->ring[d->avail_idx & (d->size - 1)] = htole16(head);
	d->avail_idx++;
	__atomic_store_n(&d->avail->idx, htole16(d->avail_idx), __ATOMIC_RELEASE);
}

static uint16_t split_used_idx(const struct split_drv *d)
{
	return le16toh(__atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE));
}

static void split_set_used_event(struct split_drv *d, uint16_t v)
{
	d->avail->ring[d->size] = htole16(v);
}

static void split_test_init(void)
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

static void split_test_basic(void)
{
	struct split_drv *d = split_drv_new(8, 0, 0);
	struct virtq_chain c[8];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x10);
	uint64_t pay = gbuf(&d->next_gpa, 100, 0x10 + 44);
	uint64_t rx = gbuf(&d->next_gpa, 4096, 0);
	uint8_t buf[144], out[50];
	unsigned int i;

	split_set_desc(d->desc, 0, hdr, 44, NEXT, 3);
	split_set_desc(d->desc, 3, pay, 100, 0, 0);
	split_set_desc(d->desc, 5, rx, 4096, WRITE, 0);
	split_post(d, 0);
	split_post(d, 5);

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
	tap_ok(split_used_idx(d) == 0 && d->vq.stats.used_idx_stores == 0,
			"shadow: completions invisible before the flush");
	virtq_split_flush(&d->vq);
	tap_ok(split_used_idx(d) == 2 && d->vq.stats.used_idx_stores == 1 &&
			d->vq.last_used_idx == 2,
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
	split_drv_free(d);
}

/* Free-running indices that wrap 65535 -> 0 in the middle of a burst. */
static void split_test_wrap(void)
{
	struct split_drv *d = split_drv_new(8, 65533, 0);
	struct virtq_chain c[8];
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 8; i++)
		d->used->ring[i].id = htole32(0xdeadbeef);
	for (i = 0; i < 6; i++) {
		split_set_desc(d->desc, i, gbuf(&d->next_gpa, 16, i), 16, 0, 0);
		split_post(d, i);
	}
	tap_ok(le16toh(d->avail->idx) == 3, "wrap: avail->idx wrapped to 3");
	n = virtq_split_dequeue_burst(&d->vq, c, 8);
	for (i = 0; i < n; i++)
		ok &= c[i].head == i && c[i].readable_len == 16;
	tap_ok(n == 6 && ok && d->vq.last_avail_idx == 3,
			"wrap: six chains across the 16-bit wrap, in order");
	for (i = 0; i < 6; i++)
		virtq_split_complete(&d->vq, c[i].head, 10u * i + 1);
	tap_ok(split_used_idx(d) == 65533, "wrap: used->idx untouched before the flush");
	virtq_split_flush(&d->vq);
	tap_ok(split_used_idx(d) == 3 && d->vq.stats.used_idx_stores == 1,
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
	split_drv_free(d);
}

static void split_test_shadow_full(void)
{
	struct split_drv *d = split_drv_new(8, 100, 0);
	uint16_t i;

	for (i = 0; i < 7; i++)
		virtq_split_complete(&d->vq, i, i);
	tap_ok(split_used_idx(d) == 100 && d->vq.stats.used_idx_stores == 0,
			"shadow: 7 of 8 entries stay in the shadow");
	virtq_split_complete(&d->vq, 7, 7);
	tap_ok(split_used_idx(d) == 108 && d->vq.stats.used_idx_stores == 1 &&
			d->vq.shadow_count == 0,
			"shadow: the 8th entry (ring size) forces one flush");
	tap_ok(le32toh(d->used->ring[(100 + 7) & 7].id) == 7, "shadow: last entry in its slot");

	virtq_split_complete(&d->vq, 1, 1);
	virtq_split_complete(&d->vq, 2, 2);
	virtq_split_set_per_entry_publish(&d->vq, true);
	tap_ok(split_used_idx(d) == 110 && d->vq.stats.used_idx_stores == 2,
			"per-entry: switching on flushes what was pending");
	for (i = 0; i < 3; i++) {
		virtq_split_complete(&d->vq, i, 0);
		if (split_used_idx(d) != 111 + i)
			break;
	}
	tap_ok(i == 3 && d->vq.stats.used_idx_stores == 5,
			"per-entry: each completion is one used->idx store");
	split_drv_free(d);
}

static void split_test_burst_and_unget(void)
{
	struct split_drv *d = split_drv_new(64, 65500, 0);
	struct virtq_chain *c = xalloc(64, sizeof(*c) * 64);
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 40; i++) {
		split_set_desc(d->desc, i, gbuf(&d->next_gpa, 8, i), 8, 0, 0);
		split_post(d, i);
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
	split_drv_free(d);
}

static void split_test_indirect(void)
{
	struct split_drv *d = split_drv_new(8, 0, F_INDIRECT);
	struct virtq_chain c[4];
	struct vring_desc t[3];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 1), pay = gbuf(&d->next_gpa, 20, 45);
	uint64_t rx = gbuf(&d->next_gpa, 64, 0);
	uint64_t tgpa = R1_GPA + 0x100;
	uint8_t buf[64];

	/* Table order 0 -> 2 -> 1: next pointers index the table, not the ring. */
	split_set_desc(t, 0, hdr, 44, NEXT, 2);
	split_set_desc(t, 2, pay, 20, NEXT, 1);
	split_set_desc(t, 1, rx, 64, WRITE, 0);
	memcpy(hva(tgpa), t, sizeof(t));
	/* WRITE on the indirect descriptor itself must be ignored (spec). */
	split_set_desc(d->desc, 4, tgpa, sizeof(t), INDIR | WRITE, 0);
	split_post(d, 4);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].head == 4 &&
			c[0].nr_readable == 2 && c[0].nr_pieces == 3 &&
			c[0].readable_len == 64 && c[0].writable_len == 64,
			"indirect: table walked, 2 readable + 1 writable");
	tap_ok(c[0].pieces[2].addr == hva(rx) && virtq_chain_read(&c[0], 0, buf, 64) == 64 &&
			check_bytes(buf, 64, 1), "indirect: bytes readable through the pieces");

	/* A direct header followed by an indirect table (no NEXT on it). */
	split_set_desc(t, 0, rx, 64, WRITE, 0);
	memcpy(hva(tgpa), t, sizeof(t[0]));
	split_set_desc(d->desc, 1, hdr, 44, NEXT, 2);
	split_set_desc(d->desc, 2, tgpa, 16, INDIR, 0);
	split_post(d, 1);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].nr_readable == 1 &&
			c[0].nr_pieces == 2 && c[0].readable_len == 44 && c[0].writable_len == 64,
			"indirect: direct descriptor chained to a table");

	/* A table straddling the R0|R1 boundary: descriptor 1 is cut in half. */
	{
		struct guest_mem_piece p[2];
		uint8_t flat[sizeof(t)];
		uint64_t sgpa = R1_GPA - 24;

		split_set_desc(t, 0, hdr, 10, NEXT, 1);
		split_set_desc(t, 1, pay, 20, NEXT, 2);
		split_set_desc(t, 2, rx, 30, WRITE, 0);
		memcpy(flat, t, sizeof(t));
		if (guest_mem_translate(&mem, sgpa, sizeof(t), p, 2) != 2)
			abort();
		memcpy(p[0].addr, flat, p[0].len);
		memcpy(p[1].addr, flat + p[0].len, p[1].len);
		split_set_desc(d->desc, 0, sgpa, sizeof(t), INDIR, 0);
		split_post(d, 0);
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
		split_set_desc(d->desc, 6, R1_GPA - 10, 30, 0, 0);
		split_post(d, 6);
		tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 1 && c[0].nr_pieces == 2 &&
				c[0].pieces[0].len == 10 && c[0].pieces[1].len == 20 &&
				virtq_chain_read(&c[0], 0, buf, 30) == 30 &&
				check_bytes(buf, 30, 0x40),
				"split buffer: two pieces, bytes in order");
	}
	tap_ok(!d->vq.broken, "indirect: queue still healthy");
	split_drv_free(d);
}

/* Post one chain built by fn into a fresh queue; expect it to break with err. */
static void split_expect_broken(uint64_t features, void (*fn)(struct split_drv *),
		enum virtq_err err, const char *what)
{
	struct split_drv *d = split_drv_new(8, 0, features);
	struct virtq_chain c[4];
	uint16_t n;

	fn(d);
	n = virtq_split_dequeue_burst(&d->vq, c, 4);
	check_broken(&d->vq, n, 0, err, what);
	split_drv_free(d);
}

static void split_b_avail_jump(struct split_drv *d)
{
	d->avail->idx = htole16(d->size + 1);
}

static void split_b_avail_back(struct split_drv *d)
{
	d->avail->idx = htole16(0xffff);
}

static void split_b_head(struct split_drv *d)
{
	split_post(d, 8);
}

static void split_b_head_max(struct split_drv *d)
{
	split_post(d, 0xffff);
}

static void split_b_next(struct split_drv *d)
{
	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 8);
	split_post(d, 0);
}

static void split_b_loop(struct split_drv *d)
{
	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 1);
	split_set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 0);
	split_post(d, 0);
}

static void split_b_self_loop(struct split_drv *d)
{
	split_set_desc(d->desc, 3, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 3);
	split_post(d, 3);
}

/* An indirect table of n entries at the end of R1 (ASan guards what follows). */
static struct vring_desc *split_table_at_end(struct split_drv *d, unsigned int n,
		uint16_t ring_slot)
{
	uint64_t gpa = R1_GPA + R1_SIZE - n * sizeof(struct vring_desc);

	split_set_desc(d->desc, ring_slot, gpa, n * sizeof(struct vring_desc), INDIR, 0);
	return hva(gpa);
}

static void split_b_ind_loop(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, 2, 0);

	split_set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 1);
	split_set_desc(t, 1, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 0);
	split_post(d, 0);
}

static void split_b_ind_next(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, 2, 0);

	split_set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, NEXT, 2);
	split_post(d, 0);
}

static void split_b_ind_nested(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, 1, 0);

	split_set_desc(t, 0, R0_GPA, 16, INDIR, 0);
	split_post(d, 0);
}

static void split_b_ind_with_next(struct split_drv *d)
{
	split_table_at_end(d, 1, 0);
	d->desc[0].flags = htole16(INDIR | NEXT);
	d->desc[0].next = htole16(1);
	split_set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
}

static void split_b_ind_len0(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R1_GPA, 0, INDIR, 0);
	split_post(d, 0);
}

static void split_b_ind_len24(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R1_GPA, 24, INDIR, 0);
	split_post(d, 0);
}

static void split_b_ind_outside(struct split_drv *d)
{
	split_set_desc(d->desc, 0, GAP_GPA, 32, INDIR, 0);
	split_post(d, 0);
}

static void split_b_ind_past_end(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R1_GPA + R1_SIZE - 16, 32, INDIR, 0);
	split_post(d, 0);
}

static void split_b_ind_unnegotiated(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, 1, 0);

	split_set_desc(t, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
}

static void split_b_ind_pieces(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint64_t b = gbuf(&d->next_gpa, 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		split_set_desc(t, i, b, 1, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0, i + 1);
	split_post(d, 0);
}

static void split_b_addr_outside(struct split_drv *d)
{
	split_set_desc(d->desc, 0, GAP_GPA, 8, 0, 0);
	split_post(d, 0);
}

static void split_b_addr_past_end(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R1_GPA + R1_SIZE - 4, 8, 0, 0);
	split_post(d, 0);
}

/* An empty writable descriptor before a readable one: the order rule holds for empties too. */
static void split_b_order_empty(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R0_GPA, 0, WRITE | NEXT, 1);
	split_set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
}

/* An empty readable descriptor after a writable one. */
static void split_b_order_empty_after(struct split_drv *d)
{
	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, WRITE | NEXT, 1);
	split_set_desc(d->desc, 1, R0_GPA, 0, 0, 0);
	split_post(d, 0);
}

/* 64 one-byte buffers and one empty descriptor: the empty one takes the 65th piece's room. */
static void split_b_pieces_empty(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint64_t b = gbuf(&d->next_gpa, 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		split_set_desc(t, i, b, i == 10 ? 0 : 1, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0,
				i + 1);
	split_post(d, 0);
}

/* 65 empty descriptors: bounded like 65 pieces, whatever the table's size. */
static void split_b_empties(struct split_drv *d)
{
	struct vring_desc *t = split_table_at_end(d, VIRTQ_CHAIN_MAX_PIECES + 1, 0);
	uint16_t i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		split_set_desc(t, i, R0_GPA, 0, i < VIRTQ_CHAIN_MAX_PIECES ? NEXT : 0, i + 1);
	split_post(d, 0);
}

/* A loop of empty descriptors still ends as a loop. */
static void split_b_empty_loop(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R0_GPA, 0, NEXT, 1);
	split_set_desc(d->desc, 1, R0_GPA, 0, NEXT, 0);
	split_post(d, 0);
}

/* An empty descriptor does not excuse a bad next. */
static void split_b_empty_next(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R0_GPA, 0, NEXT, 8);
	split_post(d, 0);
}

static void split_b_len_4g_small(struct split_drv *d)
{
	split_set_desc(d->desc, 0, R0_GPA, UINT32_MAX, 0, 0);
	split_post(d, 0);
}

static void split_b_len_4g_total(struct split_drv *d)
{
	split_set_desc(d->desc, 0, BIG_GPA, UINT32_MAX, NEXT, 1);
	split_set_desc(d->desc, 1, BIG_GPA, 1, 0, 0);
	split_post(d, 0);
}

static void split_b_len_4g_writable(struct split_drv *d)
{
	split_set_desc(d->desc, 0, BIG_GPA, 0x80000000u, WRITE | NEXT, 1);
	split_set_desc(d->desc, 1, BIG_GPA, 0x80000000u, WRITE, 0);
	split_post(d, 0);
}

static void split_b_order(struct split_drv *d)
{
	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, WRITE | NEXT, 1);
	split_set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
}

static void split_test_broken(void)
{
	split_expect_broken(0, split_b_avail_jump, VIRTQ_ERR_AVAIL_IDX,
			"avail->idx ahead by size + 1");
	split_expect_broken(0, split_b_avail_back, VIRTQ_ERR_AVAIL_IDX,
			"avail->idx moved backwards");
	split_expect_broken(0, split_b_head, VIRTQ_ERR_HEAD, "head == size");
	split_expect_broken(0, split_b_head_max, VIRTQ_ERR_HEAD, "head 0xffff");
	split_expect_broken(0, split_b_next, VIRTQ_ERR_NEXT, "next == size");
	split_expect_broken(0, split_b_loop, VIRTQ_ERR_LOOP, "direct loop 0 -> 1 -> 0");
	split_expect_broken(0, split_b_self_loop, VIRTQ_ERR_LOOP, "descriptor pointing at itself");
	split_expect_broken(F_INDIRECT, split_b_ind_loop, VIRTQ_ERR_LOOP,
			"loop inside an indirect table");
	split_expect_broken(F_INDIRECT, split_b_ind_next, VIRTQ_ERR_NEXT,
			"next beyond the indirect table");
	split_expect_broken(F_INDIRECT, split_b_ind_nested, VIRTQ_ERR_INDIRECT_NESTED,
			"indirect in indirect");
	split_expect_broken(F_INDIRECT, split_b_ind_with_next, VIRTQ_ERR_INDIRECT_NEXT,
			"indirect descriptor with NEXT");
	split_expect_broken(F_INDIRECT, split_b_ind_len0, VIRTQ_ERR_INDIRECT_LEN,
			"indirect length 0");
	split_expect_broken(F_INDIRECT, split_b_ind_len24, VIRTQ_ERR_INDIRECT_LEN,
			"indirect length 24");
	split_expect_broken(F_INDIRECT, split_b_ind_outside, VIRTQ_ERR_INDIRECT_ADDR,
			"indirect table outside memory");
	split_expect_broken(F_INDIRECT, split_b_ind_past_end, VIRTQ_ERR_INDIRECT_ADDR,
			"indirect table running off the end of memory");
	split_expect_broken(0, split_b_ind_unnegotiated, VIRTQ_ERR_INDIRECT_FEATURE,
			"indirect without the feature");
	split_expect_broken(F_INDIRECT, split_b_ind_pieces, VIRTQ_ERR_PIECES,
			"65 buffers in one chain");
	split_expect_broken(0, split_b_addr_outside, VIRTQ_ERR_DESC_ADDR, "buffer outside memory");
	split_expect_broken(0, split_b_addr_past_end, VIRTQ_ERR_DESC_ADDR,
			"buffer running off the end");
	split_expect_broken(0, split_b_order_empty, VIRTQ_ERR_DESC_ORDER,
			"readable after empty writable");
	split_expect_broken(0, split_b_order_empty_after, VIRTQ_ERR_DESC_ORDER,
			"empty readable after writable");
	split_expect_broken(F_INDIRECT, split_b_pieces_empty, VIRTQ_ERR_PIECES,
			"64 buffers and one empty descriptor");
	split_expect_broken(F_INDIRECT, split_b_empties, VIRTQ_ERR_PIECES, "65 empty descriptors");
	split_expect_broken(0, split_b_empty_loop, VIRTQ_ERR_LOOP, "loop of empty descriptors");
	split_expect_broken(0, split_b_empty_next, VIRTQ_ERR_NEXT,
			"empty descriptor with next == size");
	split_expect_broken(0, split_b_len_4g_small, VIRTQ_ERR_DESC_ADDR,
			"4 GiB - 1 buffer in 64 KiB");
	split_expect_broken(0, split_b_len_4g_total, VIRTQ_ERR_CHAIN_LEN,
			"readable total of 4 GiB");
	split_expect_broken(0, split_b_len_4g_writable, VIRTQ_ERR_CHAIN_LEN,
			"writable total of 4 GiB");
	split_expect_broken(0, split_b_order, VIRTQ_ERR_DESC_ORDER, "readable after writable");
}

static void split_test_big_ok(void)
{
	struct split_drv *d = split_drv_new(8, 0, 0);
	struct virtq_chain c[1];

	split_set_desc(d->desc, 0, BIG_GPA, UINT32_MAX, 0, 0);
	split_post(d, 0);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 1) == 1 && c[0].readable_len == UINT32_MAX &&
			c[0].pieces[0].addr == big, "4 GiB - 1 buffer inside memory accepted");
	split_drv_free(d);
}

static void split_test_partial_burst(void)
{
	struct split_drv *d = split_drv_new(8, 0, 0);
	struct virtq_chain c[4];

	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_set_desc(d->desc, 1, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
	split_post(d, 1);
	split_post(d, 9);
	split_post(d, 0);
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 2 && c[0].head == 0 && c[1].head == 1 &&
			d->vq.broken && d->vq.broken_reason == VIRTQ_ERR_HEAD &&
			d->vq.last_avail_idx == 2,
			"partial: the two good chains before a bad head are returned");
	tap_ok(virtq_split_dequeue_burst(&d->vq, c, 4) == 0, "partial: then nothing");
	virtq_split_complete(&d->vq, 0, 0);
	virtq_split_complete(&d->vq, 1, 0);
	virtq_split_flush(&d->vq);
	tap_ok(split_used_idx(d) == 2, "partial: the good chains can still be completed");
	split_drv_free(d);
}

static void split_publish(struct split_drv *d, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		virtq_split_complete(&d->vq, 0, 0);
	virtq_split_flush(&d->vq);
}

static void split_test_event_idx(void)
{
	struct split_drv *d = split_drv_new(8, 0, F_EVENT_IDX);
	unsigned int i;

	split_publish(d, 1);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: first decision notifies");
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx: nothing new, no notify");
	split_set_used_event(d, 1);
	split_publish(d, 2);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: 1 -> 3 passes used_event 1");
	split_set_used_event(d, 10);
	split_publish(d, 2);
	tap_ok(!virtq_split_should_notify(&d->vq),
			"event_idx: 3 -> 5 does not reach used_event 10");
	split_publish(d, 6);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx: 5 -> 11 passes used_event 10");
	tap_ok(d->vq.stats.notify_yes == 3 && d->vq.stats.notify_no == 2,
			"event_idx: decisions counted");
	split_drv_free(d);

	d = split_drv_new(8, 65530, F_EVENT_IDX);
	split_publish(d, 1);
	virtq_split_should_notify(&d->vq);
	split_set_used_event(d, 65535);
	split_publish(d, 4);
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx wrap: 65531 -> 65535 not past 65535");
	split_publish(d, 2);
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx wrap: 65535 -> 1 passes 65535");
	split_set_used_event(d, 3);
	split_publish(d, 1);
	tap_ok(!virtq_split_should_notify(&d->vq), "event_idx wrap: 1 -> 2 not past 3");
	split_drv_free(d);

	/* 65536 entries published with no decision in between: the guard must fire. */
	d = split_drv_new(1024, 100, F_EVENT_IDX);
	split_publish(d, 1);
	virtq_split_should_notify(&d->vq);
	split_set_used_event(d, 101 + 30000);
	for (i = 0; i < 64; i++)
		split_publish(d, 1024);
	tap_ok(d->vq.last_used_idx == 101 && !d->vq.signalled_used_valid,
			"event_idx guard: a full 16-bit lap invalidates signalled_used");
	tap_ok(virtq_split_should_notify(&d->vq), "event_idx guard: then the guest is notified");
	split_drv_free(d);
}

static void split_test_no_event_idx(void)
{
	struct split_drv *d = split_drv_new(8, 0, 0);
	uint16_t avail_event;

	d->avail->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	split_publish(d, 1);
	tap_ok(!virtq_split_should_notify(&d->vq), "flags: NO_INTERRUPT honoured");
	d->avail->flags = 0;
	tap_ok(!virtq_split_should_notify(&d->vq), "flags: nothing new since, no notify");
	split_publish(d, 1);
	tap_ok(virtq_split_should_notify(&d->vq), "flags: interrupts wanted, notify");
	tap_ok(d->vq.stats.notify_yes == 1 && d->vq.stats.notify_no == 2, "flags: counted");
	virtq_split_disable_guest_kicks(&d->vq);
	tap_ok(le16toh(d->used->flags) == VRING_USED_F_NO_NOTIFY, "kicks: NO_NOTIFY set");
	split_drv_free(d);

	d = split_drv_new(8, 500, F_EVENT_IDX);
	split_set_desc(d->desc, 0, gbuf(&d->next_gpa, 8, 0), 8, 0, 0);
	split_post(d, 0);
	split_post(d, 0);
	split_post(d, 0);
	{
		struct virtq_chain c[3];

		virtq_split_dequeue_burst(&d->vq, c, 3);
	}
	virtq_split_disable_guest_kicks(&d->vq);
	memcpy(&avail_event, &d->used->ring[8], sizeof(avail_event));
	tap_ok(le16toh(avail_event) == 502 &&
			le16toh(d->used->flags) == VRING_USED_F_NO_NOTIFY,
			"kicks: avail_event one behind what was consumed (502)");
	split_drv_free(d);
}

static void split_rnd_descs(struct vring_desc *t, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		split_set_desc(t, i, rnd_addr(), rnd_len(), rnd() % 8, rnd() % (n + 2));
}

/*
 * Random rings (random descriptors, indirect tables, heads and indices):
 * a chain either comes out consistent and inside guest memory or the queue
 * breaks; under ASan any read outside the rings or regions aborts the test.
 */
static void split_test_random(void)
{
	struct split_drv *d = split_drv_new(8, 0, F_INDIRECT);
	struct virtq_chain c[8];
	unsigned int iter, good = 0, broken = 0, bad = 0;

	for (iter = 0; iter < 20000; iter++) {
		uint16_t start = rnd(), n, i;

		split_rnd_descs(d->desc, 8);
		split_rnd_descs(hva(R1_GPA + R1_SIZE - 256), 16);
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
	random_verdict(good, broken, bad);
	split_drv_free(d);
}


/* ---- Packed rings ---- */
#define AVAIL	(1u << VRING_PACKED_DESC_F_AVAIL)
#define USED	(1u << VRING_PACKED_DESC_F_USED)
#define WRAP	VIRTQ_PACKED_WRAP

/* The fake driver: its ring, event structures, and positions (index + wrap). */
struct packed_drv {
	struct virtq vq;
	struct vring_packed_desc *desc;
	struct vring_packed_desc_event *drv_ev;
	struct vring_packed_desc_event *dev_ev;
	uint16_t size;
	uint16_t avail;		/* next position to make available, encoded */
	uint16_t used;		/* next position to read a used descriptor at, encoded */
	uint64_t next_gpa;
};

static uint16_t packed_padd(uint16_t pos, unsigned int n, uint16_t size)
{
	unsigned int idx = (pos & 0x7fff) + n;

	if (idx >= size) {
		idx -= size;
		pos ^= WRAP;
	}
	return (uint16_t)((pos & WRAP) | idx);
}

static struct packed_drv *packed_drv_new(uint16_t size, uint16_t start, uint64_t features)
{
	struct packed_drv *d = xalloc(64, sizeof(*d));

	d->size = size;
	d->desc = xalloc(16, sizeof(*d->desc) * size);
	d->drv_ev = xalloc(4, sizeof(*d->drv_ev));
	d->dev_ev = xalloc(4, sizeof(*d->dev_ev));
	d->avail = start;
	d->used = start;
	d->next_gpa = R0_GPA;
	if (virtq_packed_init(&d->vq, &mem, d->desc, d->drv_ev, d->dev_ev, size, start, start,
			features) != 0)
		abort();
	return d;
}

static void packed_drv_free(struct packed_drv *d)
{
	free(d->desc);
	free(d->drv_ev);
	free(d->dev_ev);
	free(d);
}

static uint16_t packed_avail_flags(uint16_t pos)
{
	return (pos & WRAP) ? AVAIL : USED;
}

/*
 * Make a chain of @p n buffers available with buffer id @p id, as a driver
 * does: every descriptor but the first, then the first one's flags with
 * release. Returns the ring index of its first descriptor.
 */
static uint16_t packed_post(struct packed_drv *d, const struct buf *b, unsigned int n,
		uint16_t id)
{
	uint16_t first = d->avail, pos = d->avail, head_flags = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct vring_packed_desc *e = &d->desc[pos & 0x7fff];
		uint16_t f = b[i].flags | packed_avail_flags(pos) | (i + 1 < n ? NEXT : 0);

		e->addr = htole64(b[i].gpa);
		e->len = htole32(b[i].len);
		e->id = htole16(id);
		if (i == 0)
			head_flags = f;
		else
			e->flags = htole16(f);
		pos = packed_padd(pos, 1, d->size);
	}
	__atomic_store_n(&d->desc[first & 0x7fff].flags, htole16(head_flags), __ATOMIC_RELEASE);
	d->avail = pos;
	return first & 0x7fff;
}

static uint16_t packed_post1(struct packed_drv *d, uint64_t gpa, uint32_t len, uint16_t flags,
		uint16_t id)
{
	struct buf b = { gpa, len, flags };

	return packed_post(d, &b, 1, id);
}

/* Whether a used descriptor waits at the driver's next used position. */
static bool packed_used_ready(const struct packed_drv *d)
{
	uint16_t f = le16toh(__atomic_load_n(&d->desc[d->used & 0x7fff].flags, __ATOMIC_ACQUIRE));
	bool w = d->used & WRAP;

	return !!(f & AVAIL) == w && !!(f & USED) == w;
}

/* Consume a used descriptor that stands for @p ndescs ring slots: its id, or -1. */
static int packed_get_used(struct packed_drv *d, uint16_t ndescs, uint32_t *len)
{
	const struct vring_packed_desc *e = &d->desc[d->used & 0x7fff];

	if (!packed_used_ready(d))
		return -1;
	if (len != NULL)
		*len = le32toh(e->len);
	d->used = packed_padd(d->used, ndescs, d->size);
	return le16toh(e->id);
}

static void packed_test_init(void)
{
	struct vring_packed_desc *desc = xalloc(16, 16 * 8);
	struct vring_packed_desc_event *ev = xalloc(4, 8);
	struct virtq *vq = xalloc(64, sizeof(*vq));

	tap_ok(virtq_packed_init(vq, &mem, desc, ev, ev + 1, 0, WRAP, WRAP, 0) == -EINVAL,
			"init: size 0 refused");
	tap_ok(virtq_packed_init(vq, &mem, desc, ev, ev + 1, 6, WRAP | 6, WRAP, 0) == -EINVAL,
			"init: avail position past the ring refused");
	tap_ok(virtq_packed_init(vq, &mem, desc, ev, ev + 1, 6, WRAP, 7, 0) == -EINVAL,
			"init: used position past the ring refused");
	tap_ok(virtq_packed_init(vq, &mem, (void *)((uint8_t *)desc + 8), ev, ev + 1, 4, 0, 0,
			0) == -EFAULT, "init: misaligned ring refused");
	tap_ok(virtq_packed_init(vq, &mem, desc, (void *)((uint8_t *)ev + 2), ev + 1, 4, 0, 0,
			0) == -EFAULT, "init: misaligned event structure refused");
	tap_ok(virtq_packed_init(vq, NULL, desc, ev, ev + 1, 4, 0, 0, 0) == -EFAULT,
			"init: no memory refused");
	tap_ok(virtq_packed_init(vq, &mem, desc, ev, ev + 1, 6, 3, WRAP | 5,
			F_EVENT_IDX | F_INDIRECT) == 0 && vq->packed && vq->size == 6 &&
			vq->last_avail_idx == 3 && vq->last_used_idx == (WRAP | 5) &&
			vq->event_idx && vq->indirect && vq->shadow_cap == 6,
			"init: size 6 (not a power of 2) and encoded positions kept");
	tap_ok(virtq_split_init(vq, &mem, (void *)desc, (void *)ev, (void *)(ev + 1), 4, 0, 0,
			0) == 0 && !vq->packed,
			"init: virtq_split_init() on the same struct makes it split again");
	free(desc);
	free(ev);
	free(vq);
}

static void packed_test_basic(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint8_t buf[256], out[64];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x10);
	uint64_t pay = gbuf(&d->next_gpa, 100, 0x10 + 44);
	uint64_t rx = gbuf(&d->next_gpa, 4096, 0);
	struct buf tx[2] = { { hdr, 44, 0 }, { pay, 100, 0 } };
	uint32_t len;
	int id;

	packed_post(d, tx, 2, 5);
	packed_post1(d, rx, 4096, WRITE, 3);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 2, "basic: two chains dequeued");
	tap_ok(c[0].head == 5 && c[0].ndescs == 2 && c[0].nr_readable == 2 &&
			c[0].nr_pieces == 2 && c[0].readable_len == 144 && c[0].writable_len == 0,
			"basic: tx chain: id 5 from its last descriptor, 2 descriptors, 144 bytes");
	tap_ok(virtq_chain_read(&c[0], 0, buf, 144) == 144 && check_bytes(buf, 144, 0x10),
			"basic: chain_read across the two descriptors");
	tap_ok(c[1].head == 3 && c[1].ndescs == 1 && c[1].nr_readable == 0 &&
			c[1].writable_len == 4096 && c[1].pieces[0].addr == hva(rx),
			"basic: rx chain: one writable descriptor");
	tap_ok(d->vq.last_avail_idx == (WRAP | 3), "basic: avail position moved by 3 descriptors");
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 0, "basic: nothing more available");

	memset(out, 0xab, sizeof(out));
	virtq_chain_write(&c[1], 0, out, 64);
	vq_complete(&d->vq, &c[0], 0);
	vq_complete(&d->vq, &c[1], 64);
	tap_ok(!packed_used_ready(d) && d->vq.last_used_idx == WRAP,
			"shadow: nothing used before the flush");
	vq_flush(&d->vq);
	tap_ok(d->vq.last_used_idx == (WRAP | 3) && d->vq.stats.used_idx_stores == 1,
			"flush: used position moved by the chains' descriptors (3)");
	id = packed_get_used(d, 2, &len);
	tap_ok(id == 5 && len == 0 && !(le16toh(d->desc[0].flags) & WRITE),
			"flush: first used descriptor at slot 0: id 5, len 0, no WRITE");
	id = packed_get_used(d, 1, &len);
	tap_ok(id == 3 && len == 64 && (le16toh(d->desc[2].flags) & WRITE),
			"flush: second at slot 2 (slot 1 skipped): id 3, len 64, WRITE");
	tap_ok(le16toh(d->desc[1].flags) == AVAIL,
			"flush: the skipped slot keeps the driver's descriptor");
	tap_ok(!packed_used_ready(d), "flush: nothing past the batch looks used");
	vq_flush(&d->vq);
	tap_ok(d->vq.stats.used_idx_stores == 1, "flush: empty flush writes nothing");
	tap_ok(d->vq.stats.dequeued == 2 && d->vq.stats.completed == 2, "basic: counters");

	virtq_packed_complete(&d->vq, 8, 1, 0);
	virtq_packed_complete(&d->vq, 1, 0, 0);
	virtq_packed_complete(&d->vq, 1, 9, 0);
	tap_ok(d->vq.shadow_count == 0 && d->vq.stats.errors[VIRTQ_ERR_USED_ID] == 3 &&
			!d->vq.broken, "complete: id >= size, 0 or > size descriptors dropped");

	/* An rx buffer completed as written into: WRITE even with nothing written. */
	packed_post1(d, rx, 4096, WRITE, 6);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 1 && c[0].head == 6, "written: rx chain dequeued");
	vq_complete_written(&d->vq, &c[0], 0);
	vq_flush(&d->vq);
	tap_ok((le16toh(d->desc[3].flags) & WRITE) && packed_get_used(d, 1, &len) == 6 && len == 0,
			"written: used descriptor id 6, len 0, WRITE");
	packed_drv_free(d);
}

/* Round after round across the end of the ring: wrap counters flip on both sides. */
static void packed_test_wrap(void)
{
	struct packed_drv *d = packed_drv_new(5, WRAP | 3, 0);
	struct virtq_chain c[8];
	unsigned int round, ok = 1, flips = 0;
	uint64_t b = gbuf(&d->next_gpa, 64, 1);

	for (round = 0; round < 12; round++) {
		struct buf two[2] = { { b, 8, 0 }, { b + 8, 56, WRITE } };
		uint16_t n, i, before = d->vq.last_avail_idx;

		packed_post(d, two, 2, 0);
		packed_post1(d, b, 16, 0, 4);
		n = vq_dequeue_burst(&d->vq, c, 8);
		if (n != 2 || c[0].head != 0 || c[0].ndescs != 2 || c[1].head != 4 ||
				d->vq.last_avail_idx != d->avail)
			ok = 0;
		flips += (before ^ d->vq.last_avail_idx) >> 15;
		for (i = 0; i < n; i++)
			vq_complete(&d->vq, &c[i], i == 0 ? 7 : 0);
		vq_flush(&d->vq);
		if (packed_get_used(d, 2, NULL) != 0 || packed_get_used(d, 1, NULL) != 4 ||
				d->vq.last_used_idx != d->used)
			ok = 0;
	}
	tap_ok(ok, "wrap: 12 rounds of 3 descriptors over a ring of 5 stay in step");
	tap_ok(flips == 7, "wrap: the avail wrap counter flipped 7 times (%u)", flips);
	packed_drv_free(d);
}

/* A chain whose descriptors straddle the end of the ring. */
static void packed_test_chain_across_end(void)
{
	struct packed_drv *d = packed_drv_new(4, WRAP | 3, 0);
	struct virtq_chain c[2];
	uint64_t b = gbuf(&d->next_gpa, 48, 7);
	struct buf three[3] = { { b, 16, 0 }, { b + 16, 16, 0 }, { b + 32, 16, 0 } };
	uint8_t tmp[48];

	packed_post(d, three, 3, 2);
	tap_ok(le16toh(d->desc[0].flags) == (NEXT | USED) &&
			le16toh(d->desc[3].flags) == (NEXT | AVAIL),
			"across end: slot 3 flagged for wrap 1, slots 0-1 for wrap 0");
	tap_ok(vq_dequeue_burst(&d->vq, c, 2) == 1 && c[0].ndescs == 3 && c[0].head == 2 &&
			virtq_chain_read(&c[0], 0, tmp, 48) == 48 && check_bytes(tmp, 48, 7) &&
			d->vq.last_avail_idx == 2, "across end: one chain of 3, position 2 wrap 0");
	vq_complete(&d->vq, &c[0], 0);
	vq_flush(&d->vq);
	tap_ok(packed_get_used(d, 3, NULL) == 2 && d->used == 2 && d->vq.last_used_idx == 2,
			"across end: used at slot 3 with wrap 1 flags, next used position 2");
	packed_drv_free(d);
}

static void packed_test_shadow_full(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint64_t b = gbuf(&d->next_gpa, 16, 0);
	uint16_t i, n;

	for (i = 0; i < 8; i++)
		packed_post1(d, b, 16, 0, i);
	n = vq_dequeue_burst(&d->vq, c, 8);
	for (i = 0; i < 7; i++)
		vq_complete(&d->vq, &c[i], 0);
	tap_ok(n == 8 && !packed_used_ready(d) && d->vq.stats.used_idx_stores == 0,
			"shadow: 7 completions of a ring of 8 stay hidden");
	vq_complete(&d->vq, &c[7], 0);
	tap_ok(d->vq.stats.used_idx_stores == 1 && d->vq.shadow_count == 0 &&
			d->vq.last_used_idx == 0, "shadow: the 8th (ring size) flushes");
	for (i = 0; i < 8 && packed_get_used(d, 1, NULL) == i; i++)
		;
	tap_ok(i == 8, "shadow: all 8 used descriptors in order");

	vq_set_per_entry_publish(&d->vq, true);
	packed_post1(d, b, 16, 0, 1);
	packed_post1(d, b, 16, 0, 2);
	n = vq_dequeue_burst(&d->vq, c, 8);
	vq_complete(&d->vq, &c[0], 0);
	tap_ok(n == 2 && packed_get_used(d, 1, NULL) == 1 && !packed_used_ready(d) &&
			d->vq.stats.used_idx_stores == 2, "per-entry: each completion published");
	vq_complete(&d->vq, &c[1], 0);
	tap_ok(packed_get_used(d, 1, NULL) == 2 && d->vq.stats.used_idx_stores == 3,
			"per-entry: the next one too");
	packed_drv_free(d);
}

static void packed_test_burst_and_unget(void)
{
	struct packed_drv *d = packed_drv_new(64, WRAP | 60, 0);
	struct virtq_chain c[64];
	uint64_t b = gbuf(&d->next_gpa, 16, 0);
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 20; i++) {
		struct buf two[2] = { { b, 8, 0 }, { b + 8, 8, 0 } };

		if (i % 3 == 0)
			packed_post(d, two, 2, i);
		else
			packed_post1(d, b, 16, 0, i);
	}
	n = vq_dequeue_burst(&d->vq, c, 2);
	tap_ok(n == 2 && c[0].head == 0 && c[1].head == 1, "burst: max 2 honoured");
	n = vq_dequeue_burst(&d->vq, c, 64);
	for (i = 0; i < n; i++)
		ok &= c[i].head == i + 2;
	tap_ok(n == 18 && ok && d->vq.last_avail_idx == d->avail,
			"burst: the other 18 (27 descriptors, across the end)");
	tap_ok(vq_unget(&d->vq, 4) == 4 && vq_dequeue_burst(&d->vq, c, 64) == 4 &&
			c[0].head == 16 && c[1].head == 17 && c[3].head == 19 &&
			c[2].ndescs == 2 && d->vq.last_avail_idx == d->avail,
			"unget: 4 given back and dequeued again, same chains");
	tap_ok(vq_unget(&d->vq, 10) == 4 && vq_unget(&d->vq, 1) == 0,
			"unget: clamped to the last dequeue");
	tap_ok(vq_dequeue_burst(&d->vq, c, 1) == 1 && c[0].head == 16 &&
			vq_unget(&d->vq, 1) == 1 &&
			d->vq.last_avail_idx == (uint16_t)(d->avail - 5),
			"unget: position back at the chain's first descriptor (same lap: 5 back)");
	tap_ok(d->vq.stats.ungot == 9 && !d->vq.broken, "unget: counted");
	packed_drv_free(d);
}

static void packed_test_indirect(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, F_INDIRECT);
	struct virtq_chain c[4];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 1), rx = gbuf(&d->next_gpa, 64, 0);
	uint64_t tgpa = gbuf(&d->next_gpa, 3 * 16, 0);
	struct vring_packed_desc *t = hva(tgpa);
	uint8_t tmp[64];

	t[0] = (struct vring_packed_desc){ htole64(hdr), htole32(44), htole16(77), 0 };
	t[1] = (struct vring_packed_desc){ htole64(rx), htole32(32), 0, htole16(WRITE | NEXT) };
	t[2] = (struct vring_packed_desc){ htole64(rx + 32), htole32(32), 0, htole16(WRITE) };
	packed_post1(d, tgpa, 48, INDIR | WRITE, 6);
	tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 1 && c[0].head == 6 && c[0].ndescs == 1 &&
			c[0].nr_readable == 1 && c[0].nr_pieces == 3 && c[0].writable_len == 64 &&
			virtq_chain_read(&c[0], 0, tmp, 44) == 44 && check_bytes(tmp, 44, 1),
			"indirect: 3 entries, id from the ring descriptor, NEXT ignored in tables");

	/* A table split across the two regions (adjacent in guest space only). */
	{
		uint64_t tg = R1_GPA - 16;
		struct vring_packed_desc *lo = hva(tg), *hi = hva(R1_GPA);
		uint64_t b = gbuf(&d->next_gpa, 30, 9);

		*lo = (struct vring_packed_desc){ htole64(b), htole32(10), 0, 0 };
		*hi = (struct vring_packed_desc){ htole64(b + 10), htole32(20), 0, 0 };
		packed_post1(d, tg, 32, INDIR, 2);
		tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 1 && c[0].readable_len == 30 &&
				virtq_chain_read(&c[0], 0, tmp, 30) == 30 &&
				check_bytes(tmp, 30, 9),
				"indirect: table across two regions read in pieces");
		memset(lo, 0, 16);
		memset(hi, 0, 16);
	}
	tap_ok(!d->vq.broken, "indirect: queue still healthy");
	packed_drv_free(d);
}

/* Post what fn builds into a fresh queue; expect it to break with err. */
static void packed_expect_broken(uint64_t features, void (*fn)(struct packed_drv *),
		enum virtq_err err, const char *what)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, features);
	struct virtq_chain c[8];
	uint16_t n;

	fn(d);
	n = vq_dequeue_burst(&d->vq, c, 8);
	check_broken(&d->vq, n, WRAP, err, what);
	packed_drv_free(d);
}

static void packed_b_id(struct packed_drv *d)
{
	packed_post1(d, gbuf(&d->next_gpa, 8, 0), 8, 0, 8);
}

static void packed_b_id_last(struct packed_drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	packed_post(d, two, 2, 3);
	d->desc[1].id = htole16(0xffff);	/* the id that counts is the last one's */
}

static void packed_b_chain_avail(struct packed_drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	packed_post(d, two, 2, 0);
	d->desc[1].flags = htole16(USED);	/* second descriptor never made available */
}

static void packed_b_chain_used(struct packed_drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	packed_post(d, two, 2, 0);
	d->desc[1].flags = htole16(AVAIL | USED);	/* looks used */
}

/* NEXT on every descriptor of the ring: the walk comes back to its own head. */
static void packed_b_chain_all(struct packed_drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	uint16_t i;

	for (i = 0; i < d->size; i++) {
		d->desc[i] = (struct vring_packed_desc){ htole64(g), htole32(8), 0,
			htole16(AVAIL | NEXT) };
	}
}

static struct vring_packed_desc *packed_table(struct packed_drv *d, unsigned int n, uint64_t *gpa)
{
	d->next_gpa = R0_GPA + 0x8000;
	return hva(*gpa = gbuf(&d->next_gpa, n * 16, 0));
}

static void packed_b_ind_feature(struct packed_drv *d)
{
	uint64_t t;

	packed_table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	packed_post1(d, t, 16, INDIR, 0);
}

static void packed_b_ind_nested(struct packed_drv *d)
{
	uint64_t t;
	struct vring_packed_desc *e = packed_table(d, 2, &t);

	e[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	e[1] = (struct vring_packed_desc){ htole64(t), htole32(32), 0, htole16(INDIR) };
	packed_post1(d, t, 32, INDIR, 0);
}

static void packed_b_ind_with_next(struct packed_drv *d)
{
	uint64_t t;
	struct buf two[2];

	packed_table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	two[0] = (struct buf){ t, 16, INDIR };
	two[1] = (struct buf){ R0_GPA, 8, 0 };
	packed_post(d, two, 2, 0);
}

static void packed_b_ind_after_next(struct packed_drv *d)
{
	uint64_t t;
	struct buf two[2];

	packed_table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	two[0] = (struct buf){ R0_GPA, 8, 0 };
	two[1] = (struct buf){ t, 16, INDIR };
	packed_post(d, two, 2, 0);
}

static void packed_b_ind_len0(struct packed_drv *d)
{
	packed_post1(d, R0_GPA, 0, INDIR, 0);
}

static void packed_b_ind_len24(struct packed_drv *d)
{
	packed_post1(d, R0_GPA, 24, INDIR, 0);
}

static void packed_b_ind_outside(struct packed_drv *d)
{
	packed_post1(d, GAP_GPA, 32, INDIR, 0);
}

static void packed_b_ind_past_end(struct packed_drv *d)
{
	packed_post1(d, R1_GPA + R1_SIZE - 16, 32, INDIR, 0);
}

static void packed_b_ind_pieces(struct packed_drv *d)
{
	uint64_t t, b = R0_GPA;
	struct vring_packed_desc *e = packed_table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(b), htole32(1), 0, 0 };
	packed_post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

/* 64 one-byte entries and one empty one: the empty one takes the 65th piece's room. */
static void packed_b_ind_pieces_empty(struct packed_drv *d)
{
	uint64_t t, b = R0_GPA;
	struct vring_packed_desc *e = packed_table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(b), htole32(i == 7 ? 0 : 1), 0, 0 };
	packed_post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

/* 65 empty entries: bounded like 65 pieces, whatever the table's size. */
static void packed_b_ind_empties(struct packed_drv *d)
{
	uint64_t t;
	struct vring_packed_desc *e = packed_table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(R0_GPA), 0, 0, 0 };
	packed_post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

static void packed_b_addr_outside(struct packed_drv *d)
{
	packed_post1(d, GAP_GPA, 8, 0, 0);
}

static void packed_b_addr_past_end(struct packed_drv *d)
{
	packed_post1(d, R1_GPA + R1_SIZE - 4, 8, 0, 0);
}

/* An empty writable descriptor before a readable one: the order rule holds for empties too. */
static void packed_b_order_empty(struct packed_drv *d)
{
	struct buf two[2] = { { R0_GPA, 0, WRITE }, { gbuf(&d->next_gpa, 8, 0), 8, 0 } };

	packed_post(d, two, 2, 0);
}

/* An empty readable descriptor after a writable one. */
static void packed_b_order_empty_after(struct packed_drv *d)
{
	struct buf two[2] = { { gbuf(&d->next_gpa, 8, 0), 8, WRITE }, { R0_GPA, 0, 0 } };

	packed_post(d, two, 2, 0);
}

/* An empty descriptor does not excuse a bad buffer id. */
static void packed_b_empty_id(struct packed_drv *d)
{
	packed_post1(d, R0_GPA, 0, 0, 8);
}

static void packed_b_len_4g_total(struct packed_drv *d)
{
	struct buf two[2] = { { BIG_GPA, UINT32_MAX, 0 }, { BIG_GPA, 1, 0 } };

	packed_post(d, two, 2, 0);
}

static void packed_b_order(struct packed_drv *d)
{
	struct buf two[2] = { { gbuf(&d->next_gpa, 8, 0), 8, WRITE },
		{ gbuf(&d->next_gpa, 8, 0), 8, 0 } };

	packed_post(d, two, 2, 0);
}

static void packed_test_broken(void)
{
	packed_expect_broken(0, packed_b_id, VIRTQ_ERR_HEAD, "buffer id = size");
	packed_expect_broken(0, packed_b_id_last, VIRTQ_ERR_HEAD, "last descriptor's id 0xffff");
	packed_expect_broken(0, packed_b_chain_avail, VIRTQ_ERR_CHAIN_AVAIL,
			"NEXT into a free descriptor");
	packed_expect_broken(0, packed_b_chain_used, VIRTQ_ERR_CHAIN_AVAIL,
			"NEXT into a used descriptor");
	packed_expect_broken(0, packed_b_chain_all, VIRTQ_ERR_CHAIN_AVAIL,
			"NEXT all round the ring");
	packed_expect_broken(0, packed_b_ind_feature, VIRTQ_ERR_INDIRECT_FEATURE,
			"indirect not negotiated");
	packed_expect_broken(F_INDIRECT, packed_b_ind_nested, VIRTQ_ERR_INDIRECT_NESTED,
			"nested table");
	packed_expect_broken(F_INDIRECT, packed_b_ind_with_next, VIRTQ_ERR_INDIRECT_NEXT,
			"INDIRECT|NEXT");
	packed_expect_broken(F_INDIRECT, packed_b_ind_after_next, VIRTQ_ERR_INDIRECT_NEXT,
			"table at the end of a NEXT chain");
	packed_expect_broken(F_INDIRECT, packed_b_ind_len0, VIRTQ_ERR_INDIRECT_LEN,
			"table of 0 bytes");
	packed_expect_broken(F_INDIRECT, packed_b_ind_len24, VIRTQ_ERR_INDIRECT_LEN,
			"table of 24 bytes");
	packed_expect_broken(F_INDIRECT, packed_b_ind_outside, VIRTQ_ERR_INDIRECT_ADDR,
			"table in the gap");
	packed_expect_broken(F_INDIRECT, packed_b_ind_past_end, VIRTQ_ERR_INDIRECT_ADDR,
			"table past memory's end");
	packed_expect_broken(F_INDIRECT, packed_b_ind_pieces, VIRTQ_ERR_PIECES,
			"65 entries, 65 pieces");
	packed_expect_broken(F_INDIRECT, packed_b_ind_pieces_empty, VIRTQ_ERR_PIECES,
			"64 entries and one empty entry");
	packed_expect_broken(F_INDIRECT, packed_b_ind_empties, VIRTQ_ERR_PIECES,
			"65 empty entries");
	packed_expect_broken(0, packed_b_addr_outside, VIRTQ_ERR_DESC_ADDR, "buffer in the gap");
	packed_expect_broken(0, packed_b_addr_past_end, VIRTQ_ERR_DESC_ADDR,
			"buffer past memory's end");
	packed_expect_broken(0, packed_b_order_empty, VIRTQ_ERR_DESC_ORDER,
			"readable after empty writable");
	packed_expect_broken(0, packed_b_order_empty_after, VIRTQ_ERR_DESC_ORDER,
			"empty readable after writable");
	packed_expect_broken(0, packed_b_empty_id, VIRTQ_ERR_HEAD, "empty buffer with id = size");
	packed_expect_broken(0, packed_b_len_4g_total, VIRTQ_ERR_CHAIN_LEN,
			"readable total of 4 GiB");
	packed_expect_broken(0, packed_b_order, VIRTQ_ERR_DESC_ORDER, "readable after writable");
}

/*
 * A table of 4100 entries starting 4 entries before the end of region 0:
 * entries are read across the two regions and the walk ends at the piece
 * limit, not at the table's end.
 */
static void packed_test_indirect_bounded(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, F_INDIRECT);
	struct virtq_chain c[2];
	uint64_t t = R1_GPA - 4 * 16;
	struct vring_packed_desc *e = hva(t);
	uint16_t i;

	for (i = 0; i < 4; i++)
		e[i] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(1), 0, 0 };
	memset(hva(R1_GPA), 0, 65 * 16);
	for (i = 0; i < 65; i++)
		((struct vring_packed_desc *)hva(R1_GPA))[i] =
			(struct vring_packed_desc){ htole64(R0_GPA), htole32(1), 0, 0 };
	packed_post1(d, t, 64 + R1_SIZE, INDIR, 1);
	tap_ok(vq_dequeue_burst(&d->vq, c, 2) == 0 && d->vq.broken_reason == VIRTQ_ERR_PIECES,
			"indirect: 4100-entry table across two regions stops at the piece limit");
	memset(hva(R1_GPA), 0, 65 * 16);
	packed_drv_free(d);
}

static void packed_test_partial_burst(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, 0);
	struct virtq_chain c[4];
	uint64_t b = gbuf(&d->next_gpa, 8, 0);

	packed_post1(d, b, 8, 0, 0);
	packed_post1(d, b, 8, 0, 1);
	packed_post1(d, GAP_GPA, 8, 0, 2);
	tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 2 && c[0].head == 0 && c[1].head == 1 &&
			d->vq.broken && d->vq.broken_reason == VIRTQ_ERR_DESC_ADDR,
			"partial: the chains before the bad one still returned");
	tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 0, "partial: then nothing");
	vq_complete(&d->vq, &c[0], 0);
	vq_complete(&d->vq, &c[1], 0);
	vq_flush(&d->vq);
	tap_ok(packed_get_used(d, 1, NULL) == 0 && packed_get_used(d, 1, NULL) == 1,
			"partial: the good chains can still be completed");
	packed_drv_free(d);
}

/* Complete n one-descriptor chains in one flush. */
static void packed_publish(struct packed_drv *d, unsigned int n)
{
	struct virtq_chain c[16];
	uint64_t b = R0_GPA;
	unsigned int i;

	for (i = 0; i < n; i++)
		packed_post1(d, b, 8, 0, (uint16_t)i);
	if (vq_dequeue_burst(&d->vq, c, 16) != n)
		abort();
	for (i = 0; i < n; i++)
		vq_complete(&d->vq, &c[i], 0);
	vq_flush(&d->vq);
	while (packed_get_used(d, 1, NULL) >= 0)
		;
}

static void packed_set_event(struct packed_drv *d, uint16_t flags, uint16_t off_wrap)
{
	d->drv_ev->off_wrap = htole16(off_wrap);
	d->drv_ev->flags = htole16(flags);
}

static void packed_test_event_idx(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, F_EVENT_IDX);

	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 1);
	packed_publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "desc: first decision notifies");
	tap_ok(!vq_should_notify(&d->vq), "desc: nothing new, no notify");
	packed_publish(d, 2);
	tap_ok(vq_should_notify(&d->vq), "desc: 1 -> 3 passes event at 1");
	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, 2);		/* next lap */
	packed_publish(d, 2);
	tap_ok(!vq_should_notify(&d->vq), "desc: 3 -> 5 does not reach 2 of the next lap");
	packed_publish(d, 4);
	tap_ok(!vq_should_notify(&d->vq), "desc: 5 -> 1' stops short of 2'");
	packed_publish(d, 2);
	tap_ok(vq_should_notify(&d->vq), "desc: 1' -> 3' writes the descriptor at 2'");
	packed_drv_free(d);
}

/* The driver makes a slot available again before it got it back: the ring overflows. */
static void packed_test_outstanding(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint16_t i;

	for (i = 0; i < 8; i++)
		packed_post1(d, R0_GPA, 8, 0, i);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 8 && d->vq.last_avail_idx == 0,
			"outstanding: the whole ring taken");
	packed_post1(d, R0_GPA, 8, 0, 0);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 0 && d->vq.broken &&
			d->vq.broken_reason == VIRTQ_ERR_AVAIL_IDX,
			"outstanding: a 9th descriptor before any came back breaks the queue");
	packed_drv_free(d);
}

static void packed_test_event_modes(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, F_EVENT_IDX);

	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DISABLE, 0);
	packed_publish(d, 1);
	tap_ok(!vq_should_notify(&d->vq), "disable: no notify");
	packed_set_event(d, VRING_PACKED_EVENT_FLAG_ENABLE, 0);
	tap_ok(!vq_should_notify(&d->vq), "enable: nothing new, no notify");
	packed_publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "enable: notify");
	tap_ok(d->vq.stats.notify_yes == 1 && d->vq.stats.notify_no == 2, "modes: counted");
	packed_drv_free(d);

	d = packed_drv_new(8, WRAP, 0);
	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 6);
	packed_publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "desc without EVENT_IDX: taken as enable");
	tap_ok(vq_call_used_idx(&d->vq) == d->vq.last_used_idx,
			"call position: last used without EVENT_IDX");
	packed_drv_free(d);
}

static void packed_test_event_wrap(void)
{
	struct packed_drv *d = packed_drv_new(8, WRAP | 5, F_EVENT_IDX);

	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 6);
	packed_publish(d, 1);		/* 5 -> 6 */
	tap_ok(vq_should_notify(&d->vq), "wrap: first decision notifies");
	packed_publish(d, 1);		/* 6 -> 7: passes 6 */
	tap_ok(vq_should_notify(&d->vq), "wrap: 6 -> 7 passes event 6");
	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, 1);	/* index 1 of the next lap */
	packed_publish(d, 2);		/* 7 -> 1 (wrap 0) */
	tap_ok(!vq_should_notify(&d->vq), "wrap: 7 -> 1' stops short of 1'");
	packed_publish(d, 1);		/* 1' -> 2' */
	tap_ok(vq_should_notify(&d->vq), "wrap: 1' -> 2' passes 1'");
	tap_ok(vq_call_used_idx(&d->vq) == 2, "call position: just past the event (2')");
	/* Two laps on: behind us. */
	packed_set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 1);
	packed_publish(d, 3);
	tap_ok(!vq_should_notify(&d->vq), "wrap: an event behind us is not passed");

	/* Publishing two laps without a decision leaves no reference: notify. */
	packed_publish(d, 8);
	packed_publish(d, 8);
	tap_ok(!d->vq.signalled_used_valid && vq_should_notify(&d->vq),
			"wrap guard: two laps without a decision, then notify");
	packed_drv_free(d);
}

static void packed_rnd_descs(struct vring_packed_desc *t, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		t[i].addr = htole64(rnd_addr());
		t[i].len = htole32(rnd_len());
		t[i].id = htole16(rnd() % 4 == 0 ? rnd() : rnd() % 8);
		t[i].flags = htole16((rnd() % 8) | (rnd() % 2 ? AVAIL : 0) |
				(rnd() % 3 == 0 ? USED : 0));
	}
}

/* Random rings: every accepted chain consistent and inside memory, or the queue breaks. */
static void packed_test_random(void)
{
	struct packed_drv *d = packed_drv_new(7, WRAP, F_INDIRECT);
	struct virtq_chain c[8];
	unsigned int iter, good = 0, broken = 0, bad = 0;

	for (iter = 0; iter < 20000; iter++) {
		uint16_t start = (uint16_t)((rnd() % 7) | (rnd() % 2 ? WRAP : 0)), n, i;
		uint32_t ndescs = 0;

		packed_rnd_descs(d->desc, 7);
		/* Mostly an available head, so that the walks get somewhere. */
		if (rnd() % 4 != 0) {
			struct vring_packed_desc *h = &d->desc[start & 0x7fff];

			h->flags = htole16((le16toh(h->flags) & (NEXT | WRITE | INDIR)) |
					packed_avail_flags(start));
		}
		packed_rnd_descs(hva(R1_GPA + R1_SIZE - 256), 16);
		if (virtq_packed_init(&d->vq, &mem, d->desc, d->drv_ev, d->dev_ev, 7, start,
				start, F_INDIRECT) != 0)
			abort();
		n = vq_dequeue_burst(&d->vq, c, 8);
		broken += d->vq.broken;
		good += n;
		for (i = 0; i < n; i++) {
			ndescs += c[i].ndescs;
			if (c[i].ndescs == 0)
				bad++;
			bad += chain_faults(&c[i], 7);
		}
		if (ndescs > 7)
			bad++;
		for (i = 0; i < n; i++)
			vq_complete(&d->vq, &c[i], 1);
		vq_flush(&d->vq);
	}
	random_verdict(good, broken, bad);
	packed_drv_free(d);
}

/* Whether two chains are the same: id, descriptors, lengths, every piece. */
static bool chain_same(const struct virtq_chain *a, const struct virtq_chain *b)
{
	unsigned int j;

	if (a->head != b->head || a->ndescs != b->ndescs || a->nr_readable != b->nr_readable ||
			a->nr_pieces != b->nr_pieces || a->readable_len != b->readable_len ||
			a->writable_len != b->writable_len)
		return false;
	for (j = 0; j < a->nr_pieces && j < VIRTQ_CHAIN_MAX_PIECES; j++)
		if (a->pieces[j].addr != b->pieces[j].addr || a->pieces[j].len != b->pieces[j].len)
			return false;
	return true;
}

/*
 * One slot of a random ring for packed_test_batches(): mostly a chain of one descriptor in
 * region 0, else (one chance in eight) what ends a batch of four: not available (or
 * looking used), NEXT, INDIRECT (a table of two buffers at @p tgpa), an id >= size, an
 * empty buffer, a buffer across two regions or outside guest memory; or just WRITE flipped.
 */
static void packed_rnd_slot(struct vring_packed_desc *e, uint16_t pos, uint16_t size,
		uint64_t tgpa)
{
	uint64_t addr = R0_GPA + 0x8000 + (rnd() % 256) * 16;
	uint32_t len = 1 + (uint32_t)(rnd() % 64);
	uint16_t flags = (rnd() % 2 ? WRITE : 0) | packed_avail_flags(pos);
	uint16_t id = (uint16_t)(rnd() % size);

	if (rnd() % 8 == 0) {
		switch (rnd() % 9) {
		case 0:
			flags ^= AVAIL | USED;
			break;
		case 7:
			flags ^= USED;
			break;
		case 1:
			flags |= NEXT;
			break;
		case 2:
			addr = tgpa;
			len = 32;
			flags |= INDIR;
			break;
		case 3:
			id = (uint16_t)(size + rnd() % 4);
			break;
		case 4:
			len = 0;
			break;
		case 5:
			addr = R1_GPA - 8;
			len = 16;
			break;
		case 6:
			addr = GAP_GPA;
			break;
		default:
			flags ^= WRITE;
			break;
		}
	}
	e->addr = htole64(addr);
	e->len = htole32(len);
	e->id = htole16(id);
	e->flags = htole16(flags);
}

/*
 * The packed engine takes four one-descriptor chains of one cache line at a time where the
 * ring allows, and writes four used descriptors with one barrier: the same ring taken in
 * bursts as long as the ring and one chain per call (never a batch) must give the same
 * chains, the same error at the same chain and the same positions; and the used
 * descriptors one flush writes for the burst must be those that per-entry publication
 * writes one by one, each with its id, length and flags. Rings of 8, 12 and 16 (whole
 * batches) and 6 and 7 (a tail that never batches), the used position a random number of
 * descriptors behind the avail one (a full ring too; now and then the driver reuses its
 * slots, which breaks the queue), completions in random order.
 */
static void packed_test_batches(void)
{
	static const uint16_t sizes[] = { 8, 12, 16, 6, 7 };
	struct vring_packed_desc *ra = xalloc(16, 16 * 16), *rb = xalloc(16, 16 * 16);
	struct vring_packed_desc_event *ev = xalloc(4, 16);
	struct virtq *va = xalloc(64, sizeof(*va)), *vb = xalloc(64, sizeof(*vb));
	struct virtq_chain *ca = xalloc(64, 16 * sizeof(*ca)), *cb = xalloc(64, 16 * sizeof(*cb));
	uint64_t tgpa = R0_GPA + 0x9000;
	unsigned int iter, same = 1, used_ok = 1, taken = 0, broken = 0, batched = 0;
	struct vring_packed_desc *tbl = hva(tgpa);

	tbl[0] = (struct vring_packed_desc){ htole64(R0_GPA + 0x8000), htole32(20), 0, 0 };
	tbl[1] = (struct vring_packed_desc){ htole64(R0_GPA + 0x8100), htole32(30),
			0, htole16(WRITE) };
	for (iter = 0; iter < 6000; iter++) {
		uint16_t size = sizes[iter % 5];
		/* Half the time from the first slot of a cache line, half the time none in flight. */
		uint16_t avail = (uint16_t)((rnd() % size & (rnd() % 2 ? ~3u : ~0u)) |
				(rnd() % 2 ? WRAP : 0));
		uint16_t behind = (uint16_t)(rnd() % 2 ? 0 : rnd() % (size + 1));
		uint16_t used, pos, i, na, nb = 0;
		uint16_t max = (uint16_t)(1 + rnd() % 16), order[16], starts[17];
		uint64_t features = rnd() % 2 ? F_INDIRECT : 0;
		uint32_t lens[16];

		/* The used position @p behind descriptors back: forward two laps less that. */
		used = packed_padd(packed_padd(avail, size, size), size - behind, size);
		/*
		 * A driver makes available what the device gave back, size - behind slots;
		 * now and then one makes every slot available, reusing those in flight.
		 */
		for (i = 0, pos = avail; i < size; i++, pos = packed_padd(pos, 1, size)) {
			packed_rnd_slot(&ra[pos & 0x7fff], pos, size, tgpa);
			if (i >= size - behind && iter % 4 != 0)
				ra[pos & 0x7fff].flags ^= htole16(AVAIL | USED);
		}
		memcpy(rb, ra, size * sizeof(*ra));
		if (virtq_packed_init(va, &mem, ra, ev, ev + 1, size, avail, used, features) != 0 ||
				virtq_packed_init(vb, &mem, rb, ev + 2, ev + 3, size, avail, used,
						features) != 0)
			abort();

		na = vq_dequeue_burst(va, ca, max);
		for (;;) {
			starts[nb] = vb->last_avail_idx;
			if (nb == max || vb->broken || vq_dequeue_burst(vb, &cb[nb], 1) != 1)
				break;
			nb++;
		}
		if (na != nb || va->broken != vb->broken || va->broken_reason != vb->broken_reason ||
				va->last_avail_idx != vb->last_avail_idx ||
				va->stats.dequeued != vb->stats.dequeued)
			same = 0;
		for (i = 0; i < na && i < nb; i++)
			if (!chain_same(&ca[i], &cb[i]) || chain_faults(&ca[i], size))
				same = 0;
		/*
		 * Unget of the last u chains: back where the u-th from the end began; unless
		 * the queue broke, the same u chains come again.
		 */
		if (na != 0) {
			uint16_t u = (uint16_t)(1 + rnd() % na);

			if (vq_unget(va, u) != u || va->last_avail_idx != starts[na - u])
				same = 0;
			if (!va->broken && (vq_dequeue_burst(va, &ca[na - u], u) != u ||
					va->last_avail_idx != starts[na]))
				same = 0;
			for (i = na - u; i < na; i++)
				if (!chain_same(&ca[i], &cb[i]))
					same = 0;
		}
		taken += na;
		broken += va->broken;
		batched += (avail & 3) == 0 && na >= 4 && (avail & 0x7fff) + 4 <= size;

		/* Completions in a random order; A flushes once, B publishes each. */
		for (i = 0; i < na; i++)
			order[i] = i;
		for (i = na; i > 1; i--) {
			uint16_t j = (uint16_t)(rnd() % i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		vq_set_per_entry_publish(vb, true);
		for (i = 0; i < na; i++) {
			lens[i] = rnd() % 3 == 0 ? 0 : (uint32_t)(1 + rnd() % 100000);
			vq_complete(va, &ca[order[i]], lens[i]);
			vq_complete(vb, &cb[order[i]], lens[i]);
		}
		vq_flush(va);
		if (memcmp(ra, rb, size * sizeof(*ra)) != 0 || va->last_used_idx != vb->last_used_idx ||
				va->shadow_count != 0)
			used_ok = 0;
		/* Each used descriptor where the driver looks for it, as the spec has it. */
		for (i = 0, pos = used; i < na; i++) {
			const struct vring_packed_desc *e = &ra[pos & 0x7fff];
			uint16_t want = (pos & WRAP ? AVAIL | USED : 0) | (lens[i] ? WRITE : 0);

			if (le16toh(e->id) != ca[order[i]].head || le16toh(e->flags) != want ||
					(lens[i] && le32toh(e->len) != lens[i]))
				used_ok = 0;
			pos = packed_padd(pos, ca[order[i]].ndescs, size);
		}
		if (pos != va->last_used_idx)
			used_ok = 0;
	}
	tap_diag("batches: %u chains taken, %u bursts of 4 or more from an aligned slot, "
			"%u queues broken", taken, batched, broken);
	tap_ok(same && batched > 1000 && broken > 500,
			"batches: a burst and one chain per call take the same chains and errors");
	tap_ok(used_ok, "batches: one flush writes what per-entry publication writes");
	free(ra);
	free(rb);
	free(ev);
	free(va);
	free(vb);
	free(ca);
	free(cb);
}

/* Flags of the used descriptor at @p pos for a completion of @p len bytes. */
static uint16_t packed_used_flags(uint16_t pos, uint32_t len)
{
	return (pos & WRAP ? AVAIL | USED : 0) | (len ? WRITE : 0);
}

/*
 * Whether the used descriptor at @p pos is id @p id, length @p len, with the flags of its
 * position: what a driver that polls there reads.
 */
static bool packed_used_is(const struct packed_drv *d, uint16_t pos, uint16_t id, uint32_t len)
{
	const struct vring_packed_desc *e = &d->desc[pos & 0x7fff];

	return le16toh(e->id) == id && le32toh(e->len) == len &&
	       le16toh(e->flags) == packed_used_flags(pos, len);
}

/*
 * The edges of the batches of four, each set up so that a batch taken or written where it
 * must not be gives other chains or other used descriptors than one at a time does.
 *
 * Wrap: a ring of 10 in memory for 12, the two slots past its end holding what looks like
 * two more available descriptors; from slot 8, six buffers: 8 and 9, then the wrap, then
 * 0-3 (a whole group again). Taken and written back one at a time up to the end, the wrap
 * counter flipped at slot 0, the two slots past the end never read as descriptors nor
 * written.
 */
static void packed_test_batch_wrap(void)
{
	struct packed_drv *d = packed_drv_new(10, WRAP | 8, 0);
	struct vring_packed_desc decoy[2];
	struct virtq_chain c[8];
	uint64_t gpa[6];
	unsigned int i, ok = 1;
	uint16_t pos;

	free(d->desc);
	d->desc = xalloc(16, sizeof(*d->desc) * 12);
	if (virtq_packed_init(&d->vq, &mem, d->desc, d->drv_ev, d->dev_ev, 10, WRAP | 8,
			WRAP | 8, 0) != 0)
		abort();
	for (i = 0; i < 2; i++) {
		decoy[i] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(64), htole16(9),
				htole16(AVAIL) };
		d->desc[10 + i] = decoy[i];
	}
	for (i = 0; i < 6; i++) {
		gpa[i] = gbuf(&d->next_gpa, 32, (uint8_t)(i * 40));
		packed_post1(d, gpa[i], 32, i % 2 ? WRITE : 0, (uint16_t)i);
	}
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 6 && d->vq.last_avail_idx == 4,
			"batch wrap: six chains from slot 8 over the end, position 4 wrap 0");
	for (i = 0; i < 6; i++)
		if (c[i].head != i || c[i].ndescs != 1 || c[i].nr_pieces != 1 ||
				c[i].pieces[0].addr != hva(gpa[i]) || c[i].pieces[0].len != 32 ||
				c[i].nr_readable != (i % 2 ? 0 : 1))
			ok = 0;
	tap_ok(ok, "batch wrap: each chain its own buffer, in ring order");
	for (i = 0; i < 6; i++)
		vq_complete(&d->vq, &c[i], i % 2 ? 32 - i : 0);
	vq_flush(&d->vq);
	for (i = 0, pos = WRAP | 8; i < 6; i++, pos = packed_padd(pos, 1, 10))
		if (!packed_used_is(d, pos, (uint16_t)i, i % 2 ? 32 - i : 0))
			ok = 0;
	tap_ok(ok && d->vq.last_used_idx == 4,
			"batch wrap: used at 8, 9 with wrap 1 flags, at 0-3 with wrap 0 flags");
	tap_ok(!memcmp(&d->desc[10], decoy, sizeof(decoy)),
			"batch wrap: the memory past the ring's end untouched");
	packed_drv_free(d);
}

/*
 * One descriptor in the middle of an aligned group of four that is not a chain of its own
 * buffer: the two before it taken, then what one at a time does with it. @p bad is what
 * the third descriptor gets: an address outside guest memory, an id past the ring, no
 * AVAIL flag yet, or an empty buffer (legal).
 */
enum batch_bad { BAD_ADDR, BAD_ID, BAD_NOT_AVAIL, BAD_EMPTY };

static void packed_batch_bad(enum batch_bad bad, const char *what)
{
	struct packed_drv *d = packed_drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint64_t gpa = gbuf(&d->next_gpa, 64, 3);
	uint16_t i, n;
	bool ok;

	for (i = 0; i < 4; i++)
		packed_post1(d, gpa, 64, WRITE, i);
	if (bad == BAD_ADDR)
		d->desc[2].addr = htole64(GAP_GPA);
	else if (bad == BAD_ID)
		d->desc[2].id = htole16(8);
	else if (bad == BAD_NOT_AVAIL)
		d->desc[2].flags = htole16(WRITE | USED);
	else
		d->desc[2].len = 0;
	n = vq_dequeue_burst(&d->vq, c, 8);
	ok = n >= 2 && c[0].head == 0 && c[1].head == 1 && c[0].writable_len == 64 &&
	     c[1].pieces[0].addr == hva(gpa);
	switch (bad) {
	case BAD_ADDR:
	case BAD_ID:
		ok = ok && n == 2 && d->vq.broken && d->vq.last_avail_idx == (WRAP | 2) &&
		     d->vq.broken_reason == (bad == BAD_ID ? VIRTQ_ERR_HEAD : VIRTQ_ERR_DESC_ADDR) &&
		     d->vq.stats.errors[d->vq.broken_reason] == 1;
		break;
	case BAD_NOT_AVAIL:
		ok = ok && n == 2 && !d->vq.broken && d->vq.last_avail_idx == (WRAP | 2);
		/* The driver makes it available: the next burst takes it and the fourth. */
		__atomic_store_n(&d->desc[2].flags, htole16(WRITE | AVAIL), __ATOMIC_RELEASE);
		ok = ok && vq_dequeue_burst(&d->vq, c, 8) == 2 && c[0].head == 2 &&
		     c[1].head == 3 && d->vq.last_avail_idx == (WRAP | 4);
		break;
	case BAD_EMPTY:
		ok = ok && n == 4 && !d->vq.broken && c[2].head == 2 && c[2].nr_pieces == 0 &&
		     c[2].writable_len == 0 && c[3].head == 3 && c[3].writable_len == 64 &&
		     d->vq.last_avail_idx == (WRAP | 4);
		break;
	}
	tap_ok(ok, "batch with a bad third: %s", what);
	packed_drv_free(d);
}

/*
 * Chains of two inside aligned groups: slots 1-2 (inside the group 0-3), then 7-8 (across
 * two groups, so that 8-11 is no batch either); single buffers everywhere else, 12-15 a
 * whole group. Every chain as the driver made it; then completed in ring order and written
 * back, a chain's second slot skipped and keeping the driver's descriptor.
 */
static void packed_test_batch_chains(void)
{
	static const uint8_t first[] = { 0, 1, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15 };
	const unsigned int n = sizeof(first) / sizeof(first[0]);
	struct packed_drv *d = packed_drv_new(16, WRAP, 0);
	struct virtq_chain c[16];
	uint64_t gpa = gbuf(&d->next_gpa, 64, 5);
	unsigned int i, ok = 1;
	uint16_t pos;

	for (i = 0; i < n; i++) {
		struct buf two[2] = { { gpa, 16, 0 }, { gpa + 16, 48, WRITE } };
		bool chain = first[i] == 1 || first[i] == 7;

		packed_post(d, chain ? two : &two[1], chain ? 2 : 1, (uint16_t)(15 - i));
	}
	tap_ok(vq_dequeue_burst(&d->vq, c, 16) == n && d->vq.last_avail_idx == 0,
			"batch chains: %u chains over 16 slots, position 0 wrap 0", n);
	for (i = 0; i < n; i++) {
		bool chain = first[i] == 1 || first[i] == 7;

		if (c[i].head != 15 - i || c[i].ndescs != (chain ? 2 : 1) ||
				c[i].nr_pieces != (chain ? 2 : 1) || c[i].nr_readable != chain ||
				c[i].readable_len != (chain ? 16 : 0) || c[i].writable_len != 48 ||
				c[i].pieces[chain].addr != hva(gpa + 16))
			ok = 0;
	}
	tap_ok(ok, "batch chains: each chain its descriptors, id from its last one");
	for (i = 0; i < n; i++)
		vq_complete(&d->vq, &c[i], 40 + i);
	vq_flush(&d->vq);
	for (i = 0, pos = WRAP; i < n; i++) {
		if (!packed_used_is(d, pos, (uint16_t)(15 - i), 40 + i) || (pos & 0x7fff) != first[i])
			ok = 0;
		pos = packed_padd(pos, c[i].ndescs, 16);
	}
	tap_ok(ok && d->vq.last_used_idx == 0 && le16toh(d->desc[2].flags) == (WRITE | AVAIL) &&
			le16toh(d->desc[8].flags) == (WRITE | AVAIL),
			"batch chains: used at each chain's first slot, its second one skipped");
	packed_drv_free(d);
}

#if defined(__x86_64__)
/*
 * The stores of one flush into a ring, in the order the CPU makes them, recorded by
 * running the flush with the ring's page read-only: each store faults, the handler lets
 * it through with the page writable and the trap flag set, and after the one instruction
 * the trap handler notes the bytes that changed and makes the page read-only again. On
 * x86 stores become visible in program order, so this is the order a driver on another
 * CPU can see them in.
 */
#define TRACE_MAX 256
static struct {
	uint8_t *page;
	uint8_t before[4096];
	struct {
		uint16_t from, to;	/* bytes [from, to) of the page changed by one store */
	} st[TRACE_MAX];
	unsigned int n;
} trace;

static void trace_segv(int sig, siginfo_t *si, void *uc)
{
	uint8_t *a = si->si_addr;

	(void)sig;
	if (a < trace.page || a >= trace.page + 4096 || trace.n == TRACE_MAX)
		abort();
	mprotect(trace.page, 4096, PROT_READ | PROT_WRITE);
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL] |= 0x100;
}

static void trace_trap(int sig, siginfo_t *si, void *uc)
{
	unsigned int i, from = 4096, to = 0;

	(void)sig;
	(void)si;
	for (i = 0; i < 4096; i++)
		if (trace.page[i] != trace.before[i]) {
			from = from < i ? from : i;
			to = i + 1;
		}
	memcpy(trace.before, trace.page, 4096);
	trace.st[trace.n].from = (uint16_t)(from < to ? from : 0);
	trace.st[trace.n].to = (uint16_t)(from < to ? to : 0);
	trace.n++;
	mprotect(trace.page, 4096, PROT_READ);
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

/* vq_flush(@p vq) with its stores into @p page recorded in trace. */
static void trace_flush(struct virtq *vq, uint8_t *page)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO }, old_segv, old_trap;

	trace.page = page;
	trace.n = 0;
	memcpy(trace.before, page, 4096);
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = trace_segv;
	sigaction(SIGSEGV, &sa, &old_segv);
	sa.sa_sigaction = trace_trap;
	sigaction(SIGTRAP, &sa, &old_trap);
	mprotect(page, 4096, PROT_READ);
	vq_flush(vq);
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGTRAP, &old_trap, NULL);
}

/* The last recorded store that changed a byte of [from, to), or -1. */
static int trace_last(unsigned int from, unsigned int to)
{
	int i;

	for (i = (int)trace.n - 1; i >= 0; i--)
		if (trace.st[i].from < to && from < trace.st[i].to)
			return i;
	return -1;
}

/*
 * What a driver on another CPU may see of a flush, from the order of its stores: each used
 * descriptor's id and len written before its flags or with them, in one store, the first
 * one's flags (where the driver polls) the last store of all, and nothing written but the
 * used descriptors' id, len and flags. Three rounds over a ring of 16: from slot 0 (single entries, a chain of two
 * among them), from slot 15 over the end (a single entry, the wrap, single ones, a chain),
 * then from slot 6 over the end again with single entries only (the flush's path for a
 * burst of one-descriptor chains). The ring's id and len fields are scribbled over before
 * each flush, so that every store changes what it writes.
 */
static void packed_test_flush_order(void)
{
	static const uint8_t round_len[3][8] = { { 4, 2, 1, 1, 4, 3 }, { 1, 4, 2 }, { 4, 4, 4, 1 } };
	struct packed_drv *d = packed_drv_new(16, WRAP, 0);
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	uint64_t gpa = gbuf(&d->next_gpa, 64, 9);
	struct virtq_chain c[16];
	unsigned int r, ok = 1, stores = 0, entries = 0;

	if (page == MAP_FAILED)
		abort();
	free(d->desc);
	d->desc = (struct vring_packed_desc *)page;
	if (virtq_packed_init(&d->vq, &mem, d->desc, d->drv_ev, d->dev_ev, 16, WRAP, WRAP, 0) != 0)
		abort();
	for (r = 0; r < 3; r++) {
		struct buf two[2] = { { gpa, 16, 0 }, { gpa + 16, 48, WRITE } };
		bool written[16] = { false };
		uint16_t pos = d->vq.last_used_idx, first = pos & 0x7fff, id = 0, n, i;
		unsigned int g, k, b;

		/* Groups of single buffers, and a chain of two where the group says 2. */
		for (g = 0; round_len[r][g]; g++) {
			if (round_len[r][g] == 2)
				packed_post(d, two, 2, id++);
			else
				for (k = 0; k < round_len[r][g]; k++)
					packed_post(d, &two[1], 1, id++);
		}
		n = vq_dequeue_burst(&d->vq, c, 16);
		if (n != id)
			ok = 0;
		entries += n;
		for (i = 0; i < 16; i++) {
			d->desc[i].id = htole16(0xdead);
			d->desc[i].len = htole32(0xdeadbeef);
		}
		for (i = 0; i < n; i++)
			vq_complete(&d->vq, &c[i], i % 3 ? 40 + i : 0);
		trace_flush(&d->vq, page);
		stores += trace.n;
		for (i = 0; i < n; i++) {
			unsigned int s = pos & 0x7fff, base = s * 16;
			int tid = trace_last(base + 12, base + 14), tlen = trace_last(base + 8, base + 12);
			int tfl = trace_last(base + 14, base + 16);

			if (!packed_used_is(d, pos, i, i % 3 ? 40 + i : 0) || tfl < 0 || tid < 0 ||
					tlen < 0 || tid > tfl || tlen > tfl)
				ok = 0;
			if (s == first && tfl != (int)trace.n - 1)
				ok = 0;
			written[s] = true;
			pos = packed_padd(pos, c[i].ndescs, 16);
		}
		/* No store into what no used descriptor is: addresses, skipped slots. */
		for (i = 0; i < trace.n; i++)
			for (b = trace.st[i].from; b < trace.st[i].to; b++)
				if (b >= 16 * 16 || !written[b / 16] || b % 16 < 8)
					ok = 0;
		if (trace_last(0, 4096) != (int)trace.n - 1 || d->vq.last_used_idx != pos)
			ok = 0;
	}
	tap_diag("flush order: %u stores recorded", stores);
	/* At least one store per used descriptor: the trace saw the flush. */
	tap_ok(ok && entries == 33 && stores >= entries,
	       "flush order: ids and lens no later than flags, the first flags last");
	munmap(page, 4096);
	d->desc = NULL;
	packed_drv_free(d);
}
#else
static void packed_test_flush_order(void)
{
	tap_ok(1, "flush order # SKIP the store trace single-steps x86-64 only");
}
#endif

/* ---- Both layouts ---- */

/*
 * A fake driver of either layout, for the cases that do not depend on it: it posts chains
 * of buffers in ring order and reads back what was used. Split rings: each chain in the
 * descriptor slots after the last one's (wrapping), headed by its first slot; packed
 * rings: each with the next buffer id.
 */
struct drv {
	bool packed;
	struct split_drv *s;
	struct packed_drv *p;
	struct virtq *vq;
	uint64_t *next_gpa;
	uint16_t next;		/* split: next descriptor slot; packed: next buffer id */
	uint16_t used_seen;	/* split: used entries read so far */
};

static void drv_open(struct drv *d, bool packed, uint16_t size, uint64_t features)
{
	memset(d, 0, sizeof(*d));
	d->packed = packed;
	if (packed) {
		d->p = packed_drv_new(size, WRAP, features);
		d->vq = &d->p->vq;
		d->next_gpa = &d->p->next_gpa;
	} else {
		d->s = split_drv_new(size, 0, features);
		d->vq = &d->s->vq;
		d->next_gpa = &d->s->next_gpa;
	}
}

static void drv_close(struct drv *d)
{
	if (d->packed)
		packed_drv_free(d->p);
	else
		split_drv_free(d->s);
}

/* Make the chain of @p n buffers available; returns the head (split) or id (packed). */
static uint16_t drv_post(struct drv *d, const struct buf *b, unsigned int n)
{
	uint16_t head = d->next;
	unsigned int i;

	if (d->packed) {
		packed_post(d->p, b, n, d->next++);
		return head;
	}
	for (i = 0; i < n; i++) {
		uint16_t slot = (head + i) & (d->s->size - 1);

		split_set_desc(d->s->desc, slot, b[i].gpa, b[i].len,
				b[i].flags | (i + 1 < n ? NEXT : 0), (slot + 1) & (d->s->size - 1));
	}
	d->next = (head + n) & (d->s->size - 1);
	split_post(d->s, head);
	return head;
}

/*
 * The chain of @p n buffers as an indirect table at @p tgpa, made available as one INDIRECT
 * descriptor; returns its head or id.
 */
static uint16_t drv_post_indirect(struct drv *d, uint64_t tgpa, const struct buf *b,
		unsigned int n)
{
	struct buf ind = { tgpa, n * 16, INDIR };
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (d->packed)
			((struct vring_packed_desc *)hva(tgpa))[i] = (struct vring_packed_desc){
				htole64(b[i].gpa), htole32(b[i].len), 0, htole16(b[i].flags) };
		else
			split_set_desc(hva(tgpa), i, b[i].gpa, b[i].len,
					b[i].flags | (i + 1 < n ? NEXT : 0), i + 1 < n ? i + 1 : 0);
	}
	return drv_post(d, &ind, 1);
}

/* Whether a used entry waits for the driver. */
static bool drv_used_ready(const struct drv *d)
{
	if (d->packed)
		return packed_used_ready(d->p);
	return split_used_idx(d->s) != d->used_seen;
}

/* The next used entry, of a chain that took @p ndescs descriptors: its head or id, or -1. */
static int drv_get_used(struct drv *d, uint16_t ndescs, uint32_t *len)
{
	const struct vring_used_elem *e;

	if (d->packed)
		return packed_get_used(d->p, ndescs, len);
	if (!drv_used_ready(d))
		return -1;
	e = &d->s->used->ring[d->used_seen++ & (d->s->size - 1)];
	if (len != NULL)
		*len = le32toh(e->len);
	return (int)le32toh(e->id);
}

/*
 * Empty descriptors are legal (virtio does not forbid them; Linux vhost skips
 * them): a chain's bytes are those of its non-empty descriptors, wherever the
 * empty ones sit, and a chain of empty ones only is a chain with no bytes.
 */
static void test_zero_len(bool packed)
{
	struct drv dd, *d = &dd;
	struct virtq_chain c[8];
	uint64_t hdr, pay, h1, h2, sent, rx1, rx2, ok_buf, tgpa = R1_GPA + 0x200;
	uint8_t buf[160], out[96];
	uint16_t h[6];
	unsigned int i;
	uint32_t len;

	drv_open(d, packed, 16, F_INDIRECT);
	hdr = gbuf(d->next_gpa, 44, 0x20);
	pay = gbuf(d->next_gpa, 100, 0x20 + 44);
	h1 = gbuf(d->next_gpa, 20, 0x60);
	h2 = gbuf(d->next_gpa, 124, 0x60 + 20);
	sent = gbuf(d->next_gpa, 64, 0);
	rx1 = gbuf(d->next_gpa, 64, 0);
	rx2 = gbuf(d->next_gpa, 32, 0);
	ok_buf = gbuf(d->next_gpa, 44, 0x30);
	memset(hva(sent), SENTINEL, 64);
	{
		struct buf first[3] = { { sent, 0, 0 }, { hdr, 44, 0 }, { pay, 100, 0 } };
		struct buf middle[3] = { { h1, 20, 0 }, { sent, 0, 0 }, { h2, 124, 0 } };
		/* Its address is outside guest memory: an empty buffer's names no byte. */
		struct buf last[3] = { { hdr, 44, 0 }, { pay, 100, 0 }, { GAP_GPA, 0, 0 } };
		/* An indirect table holding one, between header and payload. */
		struct buf table[3] = { { hdr, 44, 0 }, { sent, 0, 0 }, { pay, 100, 0 } };
		/* Nothing but empty descriptors, then an ordinary chain behind it. */
		struct buf empty[2] = { { sent, 0, 0 }, { GAP_GPA, 0, 0 } };
		struct buf one = { ok_buf, 44, 0 };

		h[0] = drv_post(d, first, 3);
		h[1] = drv_post(d, middle, 3);
		h[2] = drv_post(d, last, 3);
		h[3] = drv_post_indirect(d, tgpa, table, 3);
		h[4] = drv_post(d, empty, 2);
		h[5] = drv_post(d, &one, 1);
	}

	tap_ok(vq_dequeue_burst(d->vq, c, 8) == 6 && !d->vq->broken,
			"zero-len: six chains dequeued, queue not broken");
	tap_ok(c[0].head == h[0] && (!packed || c[0].ndescs == 3) && c[0].nr_readable == 2 &&
			c[0].nr_pieces == 2 && c[0].readable_len == 144 &&
			c[0].pieces[0].addr == hva(hdr) &&
			virtq_chain_read(&c[0], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor first: the 144 bytes of the other two");
	tap_ok(c[1].head == h[1] && c[1].nr_pieces == 2 && c[1].readable_len == 144 &&
			virtq_chain_read(&c[1], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x60) && virtq_chain_read(&c[1], 10, buf, 40) == 40 &&
			check_bytes(buf, 40, 0x60 + 10),
			"zero-len: empty descriptor in the middle of a split header: bytes exact");
	tap_ok(virtq_chain_read(&c[1], 10, buf, 40) == 40 && check_bytes(buf, 40, 0x60 + 10),
			"zero-len: a read across the empty descriptor's place is seamless");
	tap_ok(c[2].head == h[2] && (!packed || c[2].ndescs == 3) && c[2].nr_pieces == 2 &&
			c[2].readable_len == 144 &&
			virtq_chain_read(&c[2], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor last (address outside memory): bytes exact");
	tap_ok(c[3].head == h[3] && (!packed || c[3].ndescs == 1) && c[3].nr_pieces == 2 &&
			c[3].readable_len == 144 &&
			virtq_chain_read(&c[3], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty entry in an indirect table: bytes exact");
	tap_ok(c[4].head == h[4] && (!packed || c[4].ndescs == 2) && c[4].nr_readable == 0 &&
			c[4].nr_pieces == 0 && c[4].readable_len == 0 && c[4].writable_len == 0 &&
			virtq_chain_read(&c[4], 0, buf, 44) == 0,
			"zero-len: a chain of empty descriptors only has no bytes");
	tap_ok(c[5].head == h[5] && c[5].readable_len == 44 &&
			virtq_chain_read(&c[5], 0, buf, 44) == 44 && check_bytes(buf, 44, 0x30),
			"zero-len: the chain behind it is served");
	for (i = 0; i < 6; i++)
		vq_complete(d->vq, &c[i], 0);
	vq_flush(d->vq);
	for (i = 0; i < 4; i++)
		drv_get_used(d, packed ? c[i].ndescs : 1, NULL);
	tap_ok(drv_get_used(d, 2, &len) == h[4] && len == 0 && drv_get_used(d, 1, NULL) == h[5] &&
			!drv_used_ready(d), "%s", packed ?
			"zero-len: the empty chain's id goes back used with len 0, in its place" :
			"zero-len: the empty chain's head goes back in the used ring with len 0");

	/* rx: empty writable descriptors add no room; bytes land only in the others. */
	{
		struct buf rx[5] = { { sent, 0, WRITE }, { rx1, 64, WRITE }, { sent, 0, WRITE },
			{ rx2, 32, WRITE }, { sent, 0, WRITE } };
		/* And an rx chain with no room at all. */
		struct buf none = { sent, 0, WRITE };

		h[0] = drv_post(d, rx, 5);
		h[1] = drv_post(d, &none, 1);
	}
	tap_ok(vq_dequeue_burst(d->vq, c, 8) == 2 && !d->vq->broken && c[0].head == h[0] &&
			(!packed || c[0].ndescs == 5) && c[0].nr_readable == 0 &&
			c[0].nr_pieces == 2 && c[0].writable_len == 96 &&
			c[0].pieces[0].addr == hva(rx1) && c[0].pieces[1].addr == hva(rx2),
			"zero-len rx: room is 64 + 32, empty descriptors add none");
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(0x90 + i);
	tap_ok(virtq_chain_write(&c[0], 0, out, sizeof(out)) == 96 &&
			check_bytes(hva(rx1), 64, 0x90) && check_bytes(hva(rx2), 32, 0x90 + 64),
			"zero-len rx: 96 bytes written, in order, into the two non-empty buffers");
	for (i = 0; i < 64; i++)
		if (((uint8_t *)hva(sent))[i] != SENTINEL)
			break;
	tap_ok(i == 64, "zero-len rx: nothing written where the empty descriptors point");
	tap_ok(c[1].head == h[1] && c[1].nr_pieces == 0 && c[1].writable_len == 0 &&
			virtq_chain_write(&c[1], 0, out, 1) == 0, "%s", packed ?
			"zero-len rx: a chain of one empty writable descriptor has no room" :
			"zero-len rx: a chain of empty writable descriptors has no room");
	vq_complete(d->vq, &c[0], 96);
	vq_complete(d->vq, &c[1], 0);
	vq_flush(d->vq);
	tap_ok(drv_get_used(d, 5, &len) == h[0] && len == 96 &&
			drv_get_used(d, 1, &len) == h[1] && len == 0,
			"zero-len rx: both used, 96 and 0 bytes");
	drv_close(d);
}

/*
 * A dequeue that finds nothing is a dequeue too: unget then refers to it, and gives back
 * nothing of the burst before it; the chains of that burst stay taken.
 */
static void test_unget_after_empty(bool packed)
{
	struct drv dd, *d = &dd;
	struct buf one = { R0_GPA, 8, 0 };
	struct virtq_chain c[4];
	uint16_t after;

	drv_open(d, packed, 8, 0);
	drv_post(d, &one, 1);
	drv_post(d, &one, 1);
	tap_ok(vq_dequeue_burst(d->vq, c, 4) == 2, "empty burst: two chains taken");
	after = d->vq->last_avail_idx;
	tap_ok(vq_dequeue_burst(d->vq, c, 4) == 0 && vq_unget(d->vq, 2) == 0 &&
			d->vq->last_avail_idx == after && vq_dequeue_burst(d->vq, c, 4) == 0,
			"empty burst: unget after it gives nothing back");
	drv_close(d);
}

/* Kicks off and on again (as a sleeping poll loop does), and the look for new buffers. */
static void test_kicks(bool packed)
{
	struct drv dd, *d = &dd;
	struct buf one = { R0_GPA, 8, 0 };
	uint16_t avail_event;

	drv_open(d, packed, 8, F_EVENT_IDX);
	vq_disable_guest_kicks(d->vq);
	if (packed) {
		tap_ok(le16toh(d->p->dev_ev->flags) == VRING_PACKED_EVENT_FLAG_DISABLE,
				"kicks: DISABLE in the device event structure");
	} else {
		memcpy(&avail_event, &d->s->used->ring[8], sizeof(avail_event));
		tap_ok(le16toh(d->s->used->flags) == VRING_USED_F_NO_NOTIFY &&
				le16toh(avail_event) == 65535,
				"kicks: NO_NOTIFY, and avail_event one behind our position");
	}
	vq_enable_guest_kicks(d->vq);
	if (packed) {
		tap_ok(le16toh(d->p->dev_ev->flags) == VRING_PACKED_EVENT_FLAG_ENABLE,
				"kicks: ENABLE when asked");
	} else {
		memcpy(&avail_event, &d->s->used->ring[8], sizeof(avail_event));
		tap_ok(d->s->used->flags == 0 && le16toh(avail_event) == 0,
				"kicks: when asked, flags cleared and avail_event at our position");
	}
	tap_ok(!vq_avail_pending(d->vq), "pending: nothing available");
	drv_post(d, &one, 1);
	tap_ok(vq_avail_pending(d->vq), "pending: a new descriptor seen");
	drv_close(d);
}

/*
 * A burst of chains of one buffer each, in one region, another, back, at a region's very
 * end, one byte across into the next region, in the big one, then one byte past a region's
 * end: each piece where its guest address is in our space (the engine remembers the region
 * of a burst's last buffer: one elsewhere must not be taken from it), and the last breaks
 * the queue.
 */
static void test_regions(bool packed)
{
	static const struct {
		uint64_t gpa;
		uint32_t len;
	} b[] = {
		{ R0_GPA + 0x100, 64 }, { R0_GPA + 0x200, 64 }, { R1_GPA + 0x100, 64 },
		{ R1_GPA + 0x180, 64 }, { R0_GPA + 0x300, 64 }, { R0_GPA + R0_SIZE - 64, 64 },
		{ R1_GPA - 15, 16 }, { R1_GPA + R1_SIZE - 64, 64 }, { BIG_GPA + 0x1000, 4096 },
		{ BIG_GPA + 0x3000, 4096 }, { R1_GPA + 0x200, 48 }, { R1_GPA + R1_SIZE - 63, 64 },
	};
	const unsigned int n = sizeof(b) / sizeof(b[0]);
	struct drv dd, *d = &dd;
	struct virtq_chain c[16];
	unsigned int i, got;
	int ok = 1;

	drv_open(d, packed, 16, 0);
	for (i = 0; i < n; i++) {
		struct buf one = { b[i].gpa, b[i].len, i % 2 ? WRITE : 0 };

		drv_post(d, &one, 1);
	}
	got = vq_dequeue_burst(d->vq, c, 16);
	for (i = 0; i < got && i < n; i++) {
		uint64_t split_at = R1_GPA - b[i].gpa;
		bool across = b[i].gpa < R1_GPA && b[i].gpa + b[i].len > R1_GPA;
		uint8_t *want = b[i].gpa >= BIG_GPA ? (uint8_t *)big + (b[i].gpa - BIG_GPA) :
			hva(b[i].gpa);

		if (c[i].nr_pieces != (across ? 2 : 1) || c[i].pieces[0].addr != want ||
				c[i].pieces[0].len != (across ? split_at : b[i].len) ||
				(across && (c[i].pieces[1].addr != hva(R1_GPA) ||
					    c[i].pieces[1].len != b[i].len - split_at)) ||
				c[i].nr_readable != (i % 2 ? 0 : c[i].nr_pieces) ||
				c[i].readable_len + c[i].writable_len != b[i].len)
			ok = 0;
	}
	tap_ok(got == n - 1 && ok, "regions: each of %u buffers where its guest address is (%u)",
			n - 1, got);
	tap_ok(d->vq->broken && d->vq->broken_reason == VIRTQ_ERR_DESC_ADDR,
			"regions: a buffer past a region's end breaks the queue");
	/* The bad buffer is still there, available: a broken queue shows nothing. */
	tap_ok(!vq_avail_pending(d->vq) && vq_dequeue_burst(d->vq, c, 16) == 0,
			"regions: nothing pending on the broken queue");
	drv_close(d);
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
	int packed = vfe_ring_env();

	if (packed < 0) {
		printf("Bail out! VFE_RING is neither split nor packed\n");
		return EXIT_FAILURE;
	}
	if (fake_guest_init() != 0)
		return EXIT_FAILURE;
	tap_diag("ring layout: %s", packed ? "packed" : "split");

	if (!packed) {
		split_test_init();
		split_test_basic();
		split_test_wrap();
		split_test_shadow_full();
		split_test_burst_and_unget();
		split_test_indirect();
		split_test_broken();
		test_zero_len(false);
		split_test_big_ok();
		split_test_partial_burst();
		split_test_event_idx();
		split_test_no_event_idx();
		test_kicks(false);
		test_unget_after_empty(false);
		split_test_random();
		test_regions(false);
	} else {
		packed_test_init();
		packed_test_basic();
		packed_test_wrap();
		packed_test_chain_across_end();
		packed_test_shadow_full();
		packed_test_burst_and_unget();
		packed_test_indirect();
		packed_test_indirect_bounded();
		test_zero_len(true);
		packed_test_broken();
		packed_test_partial_burst();
		packed_test_outstanding();
		packed_test_event_idx();
		packed_test_event_modes();
		packed_test_event_wrap();
		test_kicks(true);
		test_unget_after_empty(true);
		packed_test_random();
		packed_test_batches();
		packed_test_batch_wrap();
		packed_batch_bad(BAD_ADDR, "outside guest memory, the queue broken there");
		packed_batch_bad(BAD_ID, "id past the ring, the queue broken there");
		packed_batch_bad(BAD_NOT_AVAIL, "not available yet, taken when it is");
		packed_batch_bad(BAD_EMPTY, "empty, taken as a chain of no piece");
		packed_test_batch_chains();
		packed_test_flush_order();
		test_regions(true);
	}
	test_names();

	fake_guest_fini();
	return tap_done();
}
