/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtq_packed (packed ring, device side) driven by a fake guest driver, as
 * test_virtq.c does for split rings: rings and buffers in malloc'd memory,
 * guest-physical addresses unlike the host ones, each ring its own exact-size
 * allocation so that ASan catches a read past it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "virtq.h"
#include "fake_guest.h"

#define AVAIL	(1u << VRING_PACKED_DESC_F_AVAIL)
#define USED	(1u << VRING_PACKED_DESC_F_USED)
#define WRAP	VIRTQ_PACKED_WRAP

/* The fake driver: its ring, event structures, and positions (index + wrap). */
struct drv {
	struct virtq vq;
	struct vring_packed_desc *desc;
	struct vring_packed_desc_event *drv_ev;
	struct vring_packed_desc_event *dev_ev;
	uint16_t size;
	uint16_t avail;		/* next position to make available, encoded */
	uint16_t used;		/* next position to read a used descriptor at, encoded */
	uint64_t next_gpa;
};

struct buf {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;		/* WRITE, INDIRECT, or extra bits for hostile cases */
};

static uint16_t padd(uint16_t pos, unsigned int n, uint16_t size)
{
	unsigned int idx = (pos & 0x7fff) + n;

	if (idx >= size) {
		idx -= size;
		pos ^= WRAP;
	}
	return (uint16_t)((pos & WRAP) | idx);
}

static struct drv *drv_new(uint16_t size, uint16_t start, uint64_t features)
{
	struct drv *d = xalloc(64, sizeof(*d));

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

static void drv_free(struct drv *d)
{
	free(d->desc);
	free(d->drv_ev);
	free(d->dev_ev);
	free(d);
}

static uint16_t avail_flags(uint16_t pos)
{
	return (pos & WRAP) ? AVAIL : USED;
}

/*
 * Make a chain of @p n buffers available with buffer id @p id, as a driver
 * does: every descriptor but the first, then the first one's flags with
 * release. Returns the ring index of its first descriptor.
 */
static uint16_t post(struct drv *d, const struct buf *b, unsigned int n, uint16_t id)
{
	uint16_t first = d->avail, pos = d->avail, head_flags = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct vring_packed_desc *e = &d->desc[pos & 0x7fff];
		uint16_t f = b[i].flags | avail_flags(pos) | (i + 1 < n ? NEXT : 0);

		e->addr = htole64(b[i].gpa);
		e->len = htole32(b[i].len);
		e->id = htole16(id);
		if (i == 0)
			head_flags = f;
		else
			e->flags = htole16(f);
		pos = padd(pos, 1, d->size);
	}
	__atomic_store_n(&d->desc[first & 0x7fff].flags, htole16(head_flags), __ATOMIC_RELEASE);
	d->avail = pos;
	return first & 0x7fff;
}

static uint16_t post1(struct drv *d, uint64_t gpa, uint32_t len, uint16_t flags, uint16_t id)
{
	struct buf b = { gpa, len, flags };

	return post(d, &b, 1, id);
}

/* Whether a used descriptor waits at the driver's next used position. */
static bool used_ready(const struct drv *d)
{
	uint16_t f = le16toh(__atomic_load_n(&d->desc[d->used & 0x7fff].flags, __ATOMIC_ACQUIRE));
	bool w = d->used & WRAP;

	return !!(f & AVAIL) == w && !!(f & USED) == w;
}

/* Consume a used descriptor that stands for @p ndescs ring slots: its id, or -1. */
static int get_used(struct drv *d, uint16_t ndescs, uint32_t *len)
{
	const struct vring_packed_desc *e = &d->desc[d->used & 0x7fff];

	if (!used_ready(d))
		return -1;
	if (len != NULL)
		*len = le32toh(e->len);
	d->used = padd(d->used, ndescs, d->size);
	return le16toh(e->id);
}

static void test_init(void)
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

static void test_basic(void)
{
	struct drv *d = drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint8_t buf[256], out[64];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x10);
	uint64_t pay = gbuf(&d->next_gpa, 100, 0x10 + 44);
	uint64_t rx = gbuf(&d->next_gpa, 4096, 0);
	struct buf tx[2] = { { hdr, 44, 0 }, { pay, 100, 0 } };
	uint32_t len;
	int id;

	post(d, tx, 2, 5);
	post1(d, rx, 4096, WRITE, 3);
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
	tap_ok(!used_ready(d) && d->vq.last_used_idx == WRAP,
			"shadow: nothing used before the flush");
	vq_flush(&d->vq);
	tap_ok(d->vq.last_used_idx == (WRAP | 3) && d->vq.stats.used_idx_stores == 1,
			"flush: used position moved by the chains' descriptors (3)");
	id = get_used(d, 2, &len);
	tap_ok(id == 5 && len == 0 && !(le16toh(d->desc[0].flags) & WRITE),
			"flush: first used descriptor at slot 0: id 5, len 0, no WRITE");
	id = get_used(d, 1, &len);
	tap_ok(id == 3 && len == 64 && (le16toh(d->desc[2].flags) & WRITE),
			"flush: second at slot 2 (slot 1 skipped): id 3, len 64, WRITE");
	tap_ok(le16toh(d->desc[1].flags) == AVAIL,
			"flush: the skipped slot keeps the driver's descriptor");
	tap_ok(!used_ready(d), "flush: nothing past the batch looks used");
	vq_flush(&d->vq);
	tap_ok(d->vq.stats.used_idx_stores == 1, "flush: empty flush writes nothing");
	tap_ok(d->vq.stats.dequeued == 2 && d->vq.stats.completed == 2, "basic: counters");

	vq_complete(&d->vq, &(struct virtq_chain){ .head = 8, .ndescs = 1 }, 0);
	vq_complete(&d->vq, &(struct virtq_chain){ .head = 1, .ndescs = 0 }, 0);
	vq_complete(&d->vq, &(struct virtq_chain){ .head = 1, .ndescs = 9 }, 0);
	tap_ok(d->vq.shadow_count == 0 && d->vq.stats.errors[VIRTQ_ERR_USED_ID] == 3 &&
			!d->vq.broken, "complete: id >= size, 0 or > size descriptors dropped");
	drv_free(d);
}

/* Round after round across the end of the ring: wrap counters flip on both sides. */
static void test_wrap(void)
{
	struct drv *d = drv_new(5, WRAP | 3, 0);
	struct virtq_chain c[8];
	unsigned int round, ok = 1, flips = 0;
	uint64_t b = gbuf(&d->next_gpa, 64, 1);

	for (round = 0; round < 12; round++) {
		struct buf two[2] = { { b, 8, 0 }, { b + 8, 56, WRITE } };
		uint16_t n, i, before = d->vq.last_avail_idx;

		post(d, two, 2, 0);
		post1(d, b, 16, 0, 4);
		n = vq_dequeue_burst(&d->vq, c, 8);
		if (n != 2 || c[0].head != 0 || c[0].ndescs != 2 || c[1].head != 4 ||
				d->vq.last_avail_idx != d->avail)
			ok = 0;
		flips += (before ^ d->vq.last_avail_idx) >> 15;
		for (i = 0; i < n; i++)
			vq_complete(&d->vq, &c[i], i == 0 ? 7 : 0);
		vq_flush(&d->vq);
		if (get_used(d, 2, NULL) != 0 || get_used(d, 1, NULL) != 4 ||
				d->vq.last_used_idx != d->used)
			ok = 0;
	}
	tap_ok(ok, "wrap: 12 rounds of 3 descriptors over a ring of 5 stay in step");
	tap_ok(flips == 7, "wrap: the avail wrap counter flipped 7 times (%u)", flips);
	drv_free(d);
}

/* A chain whose descriptors straddle the end of the ring. */
static void test_chain_across_end(void)
{
	struct drv *d = drv_new(4, WRAP | 3, 0);
	struct virtq_chain c[2];
	uint64_t b = gbuf(&d->next_gpa, 48, 7);
	struct buf three[3] = { { b, 16, 0 }, { b + 16, 16, 0 }, { b + 32, 16, 0 } };
	uint8_t tmp[48];

	post(d, three, 3, 2);
	tap_ok(le16toh(d->desc[0].flags) == (NEXT | USED) &&
			le16toh(d->desc[3].flags) == (NEXT | AVAIL),
			"across end: slot 3 flagged for wrap 1, slots 0-1 for wrap 0");
	tap_ok(vq_dequeue_burst(&d->vq, c, 2) == 1 && c[0].ndescs == 3 && c[0].head == 2 &&
			virtq_chain_read(&c[0], 0, tmp, 48) == 48 && check_bytes(tmp, 48, 7) &&
			d->vq.last_avail_idx == 2, "across end: one chain of 3, position 2 wrap 0");
	vq_complete(&d->vq, &c[0], 0);
	vq_flush(&d->vq);
	tap_ok(get_used(d, 3, NULL) == 2 && d->used == 2 && d->vq.last_used_idx == 2,
			"across end: used at slot 3 with wrap 1 flags, next used position 2");
	drv_free(d);
}

static void test_shadow_full(void)
{
	struct drv *d = drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint64_t b = gbuf(&d->next_gpa, 16, 0);
	uint16_t i, n;

	for (i = 0; i < 8; i++)
		post1(d, b, 16, 0, i);
	n = vq_dequeue_burst(&d->vq, c, 8);
	for (i = 0; i < 7; i++)
		vq_complete(&d->vq, &c[i], 0);
	tap_ok(n == 8 && !used_ready(d) && d->vq.stats.used_idx_stores == 0,
			"shadow: 7 completions of a ring of 8 stay hidden");
	vq_complete(&d->vq, &c[7], 0);
	tap_ok(d->vq.stats.used_idx_stores == 1 && d->vq.shadow_count == 0 &&
			d->vq.last_used_idx == 0, "shadow: the 8th (ring size) flushes");
	for (i = 0; i < 8 && get_used(d, 1, NULL) == i; i++)
		;
	tap_ok(i == 8, "shadow: all 8 used descriptors in order");

	vq_set_per_entry_publish(&d->vq, true);
	post1(d, b, 16, 0, 1);
	post1(d, b, 16, 0, 2);
	n = vq_dequeue_burst(&d->vq, c, 8);
	vq_complete(&d->vq, &c[0], 0);
	tap_ok(n == 2 && get_used(d, 1, NULL) == 1 && !used_ready(d) &&
			d->vq.stats.used_idx_stores == 2, "per-entry: each completion published");
	vq_complete(&d->vq, &c[1], 0);
	tap_ok(get_used(d, 1, NULL) == 2 && d->vq.stats.used_idx_stores == 3,
			"per-entry: the next one too");
	drv_free(d);
}

static void test_burst_and_unget(void)
{
	struct drv *d = drv_new(64, WRAP | 60, 0);
	struct virtq_chain c[64];
	uint64_t b = gbuf(&d->next_gpa, 16, 0);
	uint16_t i, n;
	int ok = 1;

	for (i = 0; i < 20; i++) {
		struct buf two[2] = { { b, 8, 0 }, { b + 8, 8, 0 } };

		if (i % 3 == 0)
			post(d, two, 2, i);
		else
			post1(d, b, 16, 0, i);
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
	drv_free(d);
}

static void test_indirect(void)
{
	struct drv *d = drv_new(8, WRAP, F_INDIRECT);
	struct virtq_chain c[4];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 1), rx = gbuf(&d->next_gpa, 64, 0);
	uint64_t tgpa = gbuf(&d->next_gpa, 3 * 16, 0);
	struct vring_packed_desc *t = hva(tgpa);
	uint8_t tmp[64];

	t[0] = (struct vring_packed_desc){ htole64(hdr), htole32(44), htole16(77), 0 };
	t[1] = (struct vring_packed_desc){ htole64(rx), htole32(32), 0, htole16(WRITE | NEXT) };
	t[2] = (struct vring_packed_desc){ htole64(rx + 32), htole32(32), 0, htole16(WRITE) };
	post1(d, tgpa, 48, INDIR | WRITE, 6);
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
		post1(d, tg, 32, INDIR, 2);
		tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 1 && c[0].readable_len == 30 &&
				virtq_chain_read(&c[0], 0, tmp, 30) == 30 &&
				check_bytes(tmp, 30, 9),
				"indirect: table across two regions read in pieces");
		memset(lo, 0, 16);
		memset(hi, 0, 16);
	}
	tap_ok(!d->vq.broken, "indirect: queue still healthy");
	drv_free(d);
}

/* Post what fn builds into a fresh queue; expect it to break with err. */
static void expect_broken(uint64_t features, void (*fn)(struct drv *), enum virtq_err err,
		const char *what)
{
	struct drv *d = drv_new(8, WRAP, features);
	struct virtq_chain c[8];
	uint16_t n;

	fn(d);
	n = vq_dequeue_burst(&d->vq, c, 8);
	tap_ok(n == 0 && d->vq.broken && d->vq.broken_reason == err &&
			d->vq.stats.errors[err] == 1 && d->vq.last_avail_idx == WRAP &&
			vq_dequeue_burst(&d->vq, c, 8) == 0 && !vq_avail_pending(&d->vq),
			"broken: %s -> %s (got %s, n=%u)", what, virtq_err_str(err),
			virtq_err_str(d->vq.broken_reason), n);
	drv_free(d);
}

static void b_id(struct drv *d)
{
	post1(d, gbuf(&d->next_gpa, 8, 0), 8, 0, 8);
}

static void b_id_last(struct drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	post(d, two, 2, 3);
	d->desc[1].id = htole16(0xffff);	/* the id that counts is the last one's */
}

static void b_chain_avail(struct drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	post(d, two, 2, 0);
	d->desc[1].flags = htole16(USED);	/* second descriptor never made available */
}

static void b_chain_used(struct drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	struct buf two[2] = { { g, 8, 0 }, { g, 8, 0 } };

	post(d, two, 2, 0);
	d->desc[1].flags = htole16(AVAIL | USED);	/* looks used */
}

/* NEXT on every descriptor of the ring: the walk comes back to its own head. */
static void b_chain_all(struct drv *d)
{
	uint64_t g = gbuf(&d->next_gpa, 8, 0);
	uint16_t i;

	for (i = 0; i < d->size; i++) {
		d->desc[i] = (struct vring_packed_desc){ htole64(g), htole32(8), 0,
			htole16(AVAIL | NEXT) };
	}
}

static struct vring_packed_desc *table(struct drv *d, unsigned int n, uint64_t *gpa)
{
	d->next_gpa = R0_GPA + 0x8000;
	return hva(*gpa = gbuf(&d->next_gpa, n * 16, 0));
}

static void b_ind_feature(struct drv *d)
{
	uint64_t t;

	table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	post1(d, t, 16, INDIR, 0);
}

static void b_ind_nested(struct drv *d)
{
	uint64_t t;
	struct vring_packed_desc *e = table(d, 2, &t);

	e[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	e[1] = (struct vring_packed_desc){ htole64(t), htole32(32), 0, htole16(INDIR) };
	post1(d, t, 32, INDIR, 0);
}

static void b_ind_with_next(struct drv *d)
{
	uint64_t t;
	struct buf two[2];

	table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	two[0] = (struct buf){ t, 16, INDIR };
	two[1] = (struct buf){ R0_GPA, 8, 0 };
	post(d, two, 2, 0);
}

static void b_ind_after_next(struct drv *d)
{
	uint64_t t;
	struct buf two[2];

	table(d, 1, &t)[0] = (struct vring_packed_desc){ htole64(R0_GPA), htole32(8), 0, 0 };
	two[0] = (struct buf){ R0_GPA, 8, 0 };
	two[1] = (struct buf){ t, 16, INDIR };
	post(d, two, 2, 0);
}

static void b_ind_len0(struct drv *d)
{
	post1(d, R0_GPA, 0, INDIR, 0);
}

static void b_ind_len24(struct drv *d)
{
	post1(d, R0_GPA, 24, INDIR, 0);
}

static void b_ind_outside(struct drv *d)
{
	post1(d, GAP_GPA, 32, INDIR, 0);
}

static void b_ind_past_end(struct drv *d)
{
	post1(d, R1_GPA + R1_SIZE - 16, 32, INDIR, 0);
}

static void b_ind_pieces(struct drv *d)
{
	uint64_t t, b = R0_GPA;
	struct vring_packed_desc *e = table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(b), htole32(1), 0, 0 };
	post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

/* 64 one-byte entries and one empty one: the empty one takes the 65th piece's room. */
static void b_ind_pieces_empty(struct drv *d)
{
	uint64_t t, b = R0_GPA;
	struct vring_packed_desc *e = table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(b), htole32(i == 7 ? 0 : 1), 0, 0 };
	post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

/* 65 empty entries: bounded like 65 pieces, whatever the table's size. */
static void b_ind_empties(struct drv *d)
{
	uint64_t t;
	struct vring_packed_desc *e = table(d, VIRTQ_CHAIN_MAX_PIECES + 1, &t);
	unsigned int i;

	for (i = 0; i <= VIRTQ_CHAIN_MAX_PIECES; i++)
		e[i] = (struct vring_packed_desc){ htole64(R0_GPA), 0, 0, 0 };
	post1(d, t, (VIRTQ_CHAIN_MAX_PIECES + 1) * 16, INDIR, 0);
}

static void b_addr_outside(struct drv *d)
{
	post1(d, GAP_GPA, 8, 0, 0);
}

static void b_addr_past_end(struct drv *d)
{
	post1(d, R1_GPA + R1_SIZE - 4, 8, 0, 0);
}

/* An empty writable descriptor before a readable one: the order rule holds for empties too. */
static void b_order_empty(struct drv *d)
{
	struct buf two[2] = { { R0_GPA, 0, WRITE }, { gbuf(&d->next_gpa, 8, 0), 8, 0 } };

	post(d, two, 2, 0);
}

/* An empty readable descriptor after a writable one. */
static void b_order_empty_after(struct drv *d)
{
	struct buf two[2] = { { gbuf(&d->next_gpa, 8, 0), 8, WRITE }, { R0_GPA, 0, 0 } };

	post(d, two, 2, 0);
}

/* An empty descriptor does not excuse a bad buffer id. */
static void b_empty_id(struct drv *d)
{
	post1(d, R0_GPA, 0, 0, 8);
}

static void b_len_4g_total(struct drv *d)
{
	struct buf two[2] = { { BIG_GPA, UINT32_MAX, 0 }, { BIG_GPA, 1, 0 } };

	post(d, two, 2, 0);
}

static void b_order(struct drv *d)
{
	struct buf two[2] = { { gbuf(&d->next_gpa, 8, 0), 8, WRITE },
		{ gbuf(&d->next_gpa, 8, 0), 8, 0 } };

	post(d, two, 2, 0);
}

static void test_broken(void)
{
	expect_broken(0, b_id, VIRTQ_ERR_HEAD, "buffer id = size");
	expect_broken(0, b_id_last, VIRTQ_ERR_HEAD, "last descriptor's id 0xffff");
	expect_broken(0, b_chain_avail, VIRTQ_ERR_CHAIN_AVAIL, "NEXT into a free descriptor");
	expect_broken(0, b_chain_used, VIRTQ_ERR_CHAIN_AVAIL, "NEXT into a used descriptor");
	expect_broken(0, b_chain_all, VIRTQ_ERR_CHAIN_AVAIL, "NEXT all round the ring");
	expect_broken(0, b_ind_feature, VIRTQ_ERR_INDIRECT_FEATURE, "indirect not negotiated");
	expect_broken(F_INDIRECT, b_ind_nested, VIRTQ_ERR_INDIRECT_NESTED, "nested table");
	expect_broken(F_INDIRECT, b_ind_with_next, VIRTQ_ERR_INDIRECT_NEXT, "INDIRECT|NEXT");
	expect_broken(F_INDIRECT, b_ind_after_next, VIRTQ_ERR_INDIRECT_NEXT,
			"table at the end of a NEXT chain");
	expect_broken(F_INDIRECT, b_ind_len0, VIRTQ_ERR_INDIRECT_LEN, "table of 0 bytes");
	expect_broken(F_INDIRECT, b_ind_len24, VIRTQ_ERR_INDIRECT_LEN, "table of 24 bytes");
	expect_broken(F_INDIRECT, b_ind_outside, VIRTQ_ERR_INDIRECT_ADDR, "table in the gap");
	expect_broken(F_INDIRECT, b_ind_past_end, VIRTQ_ERR_INDIRECT_ADDR,
			"table past memory's end");
	expect_broken(F_INDIRECT, b_ind_pieces, VIRTQ_ERR_PIECES, "65 entries, 65 pieces");
	expect_broken(F_INDIRECT, b_ind_pieces_empty, VIRTQ_ERR_PIECES,
			"64 entries and one empty entry");
	expect_broken(F_INDIRECT, b_ind_empties, VIRTQ_ERR_PIECES, "65 empty entries");
	expect_broken(0, b_addr_outside, VIRTQ_ERR_DESC_ADDR, "buffer in the gap");
	expect_broken(0, b_addr_past_end, VIRTQ_ERR_DESC_ADDR, "buffer past memory's end");
	expect_broken(0, b_order_empty, VIRTQ_ERR_DESC_ORDER, "readable after empty writable");
	expect_broken(0, b_order_empty_after, VIRTQ_ERR_DESC_ORDER,
			"empty readable after writable");
	expect_broken(0, b_empty_id, VIRTQ_ERR_HEAD, "empty buffer with id = size");
	expect_broken(0, b_len_4g_total, VIRTQ_ERR_CHAIN_LEN, "readable total of 4 GiB");
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
	struct drv *d = drv_new(16, WRAP, F_INDIRECT);
	struct virtq_chain c[8];
	uint64_t hdr = gbuf(&d->next_gpa, 44, 0x20), pay = gbuf(&d->next_gpa, 100, 0x20 + 44);
	uint64_t h1 = gbuf(&d->next_gpa, 20, 0x60), h2 = gbuf(&d->next_gpa, 124, 0x60 + 20);
	uint64_t sent = gbuf(&d->next_gpa, 64, 0), rx1 = gbuf(&d->next_gpa, 64, 0);
	uint64_t rx2 = gbuf(&d->next_gpa, 32, 0), ok_buf = gbuf(&d->next_gpa, 44, 0x30);
	uint64_t tgpa = R1_GPA + 0x200;
	struct buf first[3] = { { sent, 0, 0 }, { hdr, 44, 0 }, { pay, 100, 0 } };
	struct buf middle[3] = { { h1, 20, 0 }, { sent, 0, 0 }, { h2, 124, 0 } };
	struct buf last[3] = { { hdr, 44, 0 }, { pay, 100, 0 }, { GAP_GPA, 0, 0 } };
	struct buf empty[2] = { { sent, 0, 0 }, { GAP_GPA, 0, 0 } };
	struct buf rx[5] = { { sent, 0, WRITE }, { rx1, 64, WRITE }, { sent, 0, WRITE },
		{ rx2, 32, WRITE }, { sent, 0, WRITE } };
	struct vring_packed_desc *t = hva(tgpa);
	uint8_t buf[160], out[96];
	unsigned int i;
	uint32_t len;
	int id;

	memset(hva(sent), SENTINEL, 64);
	t[0] = (struct vring_packed_desc){ htole64(hdr), htole32(44), 0, 0 };
	t[1] = (struct vring_packed_desc){ htole64(sent), 0, 0, 0 };
	t[2] = (struct vring_packed_desc){ htole64(pay), htole32(100), 0, 0 };
	post(d, first, 3, 0);
	post(d, middle, 3, 1);
	/* The last one's address is outside guest memory: an empty buffer's names no byte. */
	post(d, last, 3, 2);
	post1(d, tgpa, 3 * 16, INDIR, 3);
	post(d, empty, 2, 4);
	post1(d, ok_buf, 44, 0, 5);

	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 6 && !d->vq.broken,
			"zero-len: six chains dequeued, queue not broken");
	tap_ok(c[0].head == 0 && c[0].ndescs == 3 && c[0].nr_readable == 2 &&
			c[0].nr_pieces == 2 && c[0].readable_len == 144 &&
			virtq_chain_read(&c[0], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor first: the 144 bytes of the other two");
	tap_ok(c[1].head == 1 && c[1].nr_pieces == 2 && c[1].readable_len == 144 &&
			virtq_chain_read(&c[1], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x60) &&
			virtq_chain_read(&c[1], 10, buf, 40) == 40 && check_bytes(buf, 40, 0x60 + 10),
			"zero-len: empty descriptor in the middle of a split header: bytes exact");
	tap_ok(c[2].head == 2 && c[2].ndescs == 3 && c[2].nr_pieces == 2 &&
			c[2].readable_len == 144 &&
			virtq_chain_read(&c[2], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty descriptor last (address outside memory): bytes exact");
	tap_ok(c[3].head == 3 && c[3].ndescs == 1 && c[3].nr_pieces == 2 &&
			c[3].readable_len == 144 &&
			virtq_chain_read(&c[3], 0, buf, sizeof(buf)) == 144 &&
			check_bytes(buf, 144, 0x20),
			"zero-len: empty entry in an indirect table: bytes exact");
	tap_ok(c[4].head == 4 && c[4].ndescs == 2 && c[4].nr_pieces == 0 &&
			c[4].readable_len == 0 && c[4].writable_len == 0 &&
			virtq_chain_read(&c[4], 0, buf, 44) == 0,
			"zero-len: a chain of empty descriptors only has no bytes");
	tap_ok(c[5].head == 5 && c[5].readable_len == 44 &&
			virtq_chain_read(&c[5], 0, buf, 44) == 44 && check_bytes(buf, 44, 0x30),
			"zero-len: the chain behind it is served");
	for (i = 0; i < 6; i++)
		vq_complete(&d->vq, &c[i], 0);
	vq_flush(&d->vq);
	for (i = 0; i < 4; i++)
		get_used(d, c[i].ndescs, NULL);
	id = get_used(d, 2, &len);
	tap_ok(id == 4 && len == 0 && get_used(d, 1, NULL) == 5,
			"zero-len: the empty chain's id goes back used with len 0, in its place");

	/* rx: empty writable descriptors add no room; bytes land only in the others. */
	post(d, rx, 5, 6);
	post1(d, sent, 0, WRITE, 7);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 2 && !d->vq.broken && c[0].head == 6 &&
			c[0].ndescs == 5 && c[0].nr_readable == 0 && c[0].nr_pieces == 2 &&
			c[0].writable_len == 96 && c[0].pieces[0].addr == hva(rx1) &&
			c[0].pieces[1].addr == hva(rx2),
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
	tap_ok(c[1].head == 7 && c[1].nr_pieces == 0 && c[1].writable_len == 0 &&
			virtq_chain_write(&c[1], 0, out, 1) == 0,
			"zero-len rx: a chain of one empty writable descriptor has no room");
	vq_complete(&d->vq, &c[0], 96);
	vq_complete(&d->vq, &c[1], 0);
	vq_flush(&d->vq);
	tap_ok(get_used(d, 5, &len) == 6 && len == 96 && get_used(d, 1, &len) == 7 && len == 0,
			"zero-len rx: both used, 96 and 0 bytes");
	drv_free(d);
}

/*
 * A table of 4100 entries starting 4 entries before the end of region 0:
 * entries are read across the two regions and the walk ends at the piece
 * limit, not at the table's end.
 */
static void test_indirect_bounded(void)
{
	struct drv *d = drv_new(8, WRAP, F_INDIRECT);
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
	post1(d, t, 64 + R1_SIZE, INDIR, 1);
	tap_ok(vq_dequeue_burst(&d->vq, c, 2) == 0 && d->vq.broken_reason == VIRTQ_ERR_PIECES,
			"indirect: 4100-entry table across two regions stops at the piece limit");
	memset(hva(R1_GPA), 0, 65 * 16);
	drv_free(d);
}

static void test_partial_burst(void)
{
	struct drv *d = drv_new(8, WRAP, 0);
	struct virtq_chain c[4];
	uint64_t b = gbuf(&d->next_gpa, 8, 0);

	post1(d, b, 8, 0, 0);
	post1(d, b, 8, 0, 1);
	post1(d, GAP_GPA, 8, 0, 2);
	tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 2 && c[0].head == 0 && c[1].head == 1 &&
			d->vq.broken && d->vq.broken_reason == VIRTQ_ERR_DESC_ADDR,
			"partial: the chains before the bad one still returned");
	tap_ok(vq_dequeue_burst(&d->vq, c, 4) == 0, "partial: then nothing");
	vq_complete(&d->vq, &c[0], 0);
	vq_complete(&d->vq, &c[1], 0);
	vq_flush(&d->vq);
	tap_ok(get_used(d, 1, NULL) == 0 && get_used(d, 1, NULL) == 1,
			"partial: the good chains can still be completed");
	drv_free(d);
}

/* Complete n one-descriptor chains in one flush. */
static void publish(struct drv *d, unsigned int n)
{
	struct virtq_chain c[16];
	uint64_t b = R0_GPA;
	unsigned int i;

	for (i = 0; i < n; i++)
		post1(d, b, 8, 0, (uint16_t)i);
	if (vq_dequeue_burst(&d->vq, c, 16) != n)
		abort();
	for (i = 0; i < n; i++)
		vq_complete(&d->vq, &c[i], 0);
	vq_flush(&d->vq);
	while (get_used(d, 1, NULL) >= 0)
		;
}

static void set_event(struct drv *d, uint16_t flags, uint16_t off_wrap)
{
	d->drv_ev->off_wrap = htole16(off_wrap);
	d->drv_ev->flags = htole16(flags);
}

static void test_event_idx(void)
{
	struct drv *d = drv_new(8, WRAP, F_EVENT_IDX);

	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 1);
	publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "desc: first decision notifies");
	tap_ok(!vq_should_notify(&d->vq), "desc: nothing new, no notify");
	publish(d, 2);
	tap_ok(vq_should_notify(&d->vq), "desc: 1 -> 3 passes event at 1");
	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, 2);		/* next lap */
	publish(d, 2);
	tap_ok(!vq_should_notify(&d->vq), "desc: 3 -> 5 does not reach 2 of the next lap");
	publish(d, 4);
	tap_ok(!vq_should_notify(&d->vq), "desc: 5 -> 1' stops short of 2'");
	publish(d, 2);
	tap_ok(vq_should_notify(&d->vq), "desc: 1' -> 3' writes the descriptor at 2'");
	drv_free(d);
}

/* The driver makes a slot available again before it got it back: the ring overflows. */
static void test_outstanding(void)
{
	struct drv *d = drv_new(8, WRAP, 0);
	struct virtq_chain c[8];
	uint16_t i;

	for (i = 0; i < 8; i++)
		post1(d, R0_GPA, 8, 0, i);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 8 && d->vq.last_avail_idx == 0,
			"outstanding: the whole ring taken");
	post1(d, R0_GPA, 8, 0, 0);
	tap_ok(vq_dequeue_burst(&d->vq, c, 8) == 0 && d->vq.broken &&
			d->vq.broken_reason == VIRTQ_ERR_AVAIL_IDX,
			"outstanding: a 9th descriptor before any came back breaks the queue");
	drv_free(d);
}

static void test_event_modes(void)
{
	struct drv *d = drv_new(8, WRAP, F_EVENT_IDX);

	set_event(d, VRING_PACKED_EVENT_FLAG_DISABLE, 0);
	publish(d, 1);
	tap_ok(!vq_should_notify(&d->vq), "disable: no notify");
	set_event(d, VRING_PACKED_EVENT_FLAG_ENABLE, 0);
	tap_ok(!vq_should_notify(&d->vq), "enable: nothing new, no notify");
	publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "enable: notify");
	tap_ok(d->vq.stats.notify_yes == 1 && d->vq.stats.notify_no == 2, "modes: counted");
	drv_free(d);

	d = drv_new(8, WRAP, 0);
	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 6);
	publish(d, 1);
	tap_ok(vq_should_notify(&d->vq), "desc without EVENT_IDX: taken as enable");
	tap_ok(vq_call_used_idx(&d->vq) == d->vq.last_used_idx,
			"call position: last used without EVENT_IDX");
	drv_free(d);
}

static void test_event_wrap(void)
{
	struct drv *d = drv_new(8, WRAP | 5, F_EVENT_IDX);

	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 6);
	publish(d, 1);		/* 5 -> 6 */
	tap_ok(vq_should_notify(&d->vq), "wrap: first decision notifies");
	publish(d, 1);		/* 6 -> 7: passes 6 */
	tap_ok(vq_should_notify(&d->vq), "wrap: 6 -> 7 passes event 6");
	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, 1);	/* index 1 of the next lap */
	publish(d, 2);		/* 7 -> 1 (wrap 0) */
	tap_ok(!vq_should_notify(&d->vq), "wrap: 7 -> 1' stops short of 1'");
	publish(d, 1);		/* 1' -> 2' */
	tap_ok(vq_should_notify(&d->vq), "wrap: 1' -> 2' passes 1'");
	tap_ok(vq_call_used_idx(&d->vq) == 2, "call position: just past the event (2')");
	set_event(d, VRING_PACKED_EVENT_FLAG_DESC, WRAP | 1);	/* two laps on: behind us */
	publish(d, 3);
	tap_ok(!vq_should_notify(&d->vq), "wrap: an event behind us is not passed");

	/* Publishing two laps without a decision leaves no reference: notify. */
	publish(d, 8);
	publish(d, 8);
	tap_ok(!d->vq.signalled_used_valid && vq_should_notify(&d->vq),
			"wrap guard: two laps without a decision, then notify");
	drv_free(d);
}

static void test_kicks(void)
{
	struct drv *d = drv_new(8, WRAP, F_EVENT_IDX);

	vq_disable_guest_kicks(&d->vq);
	tap_ok(le16toh(d->dev_ev->flags) == VRING_PACKED_EVENT_FLAG_DISABLE,
			"kicks: DISABLE in the device event structure");
	vq_enable_guest_kicks(&d->vq);
	tap_ok(le16toh(d->dev_ev->flags) == VRING_PACKED_EVENT_FLAG_ENABLE,
			"kicks: ENABLE when asked");
	tap_ok(!vq_avail_pending(&d->vq), "pending: nothing available");
	post1(d, R0_GPA, 8, 0, 0);
	tap_ok(vq_avail_pending(&d->vq), "pending: a new descriptor seen");
	drv_free(d);
}

static void rnd_descs(struct vring_packed_desc *t, unsigned int n)
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
static void test_random(void)
{
	struct drv *d = drv_new(7, WRAP, F_INDIRECT);
	struct virtq_chain c[8];
	unsigned int iter, good = 0, broken = 0, bad = 0;

	for (iter = 0; iter < 20000; iter++) {
		uint16_t start = (uint16_t)((rnd() % 7) | (rnd() % 2 ? WRAP : 0)), n, i;
		uint32_t ndescs = 0;

		rnd_descs(d->desc, 7);
		/* Mostly an available head, so that the walks get somewhere. */
		if (rnd() % 4 != 0) {
			struct vring_packed_desc *h = &d->desc[start & 0x7fff];

			h->flags = htole16((le16toh(h->flags) & (NEXT | WRITE | INDIR)) |
					avail_flags(start));
		}
		rnd_descs(hva(R1_GPA + R1_SIZE - 256), 16);
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
	tap_diag("random rings: %u chains accepted, %u queues broken", good, broken);
	tap_ok(bad == 0 && good > 0 && broken > 0,
			"random rings: every accepted chain consistent and inside memory");
	drv_free(d);
}

int main(void)
{
	if (fake_guest_init() != 0)
		return EXIT_FAILURE;

	test_init();
	test_basic();
	test_wrap();
	test_chain_across_end();
	test_shadow_full();
	test_burst_and_unget();
	test_indirect();
	test_indirect_bounded();
	test_zero_len();
	test_broken();
	test_partial_burst();
	test_outstanding();
	test_event_idx();
	test_event_modes();
	test_event_wrap();
	test_kicks();
	test_random();

	fake_guest_fini();
	return tap_done();
}
