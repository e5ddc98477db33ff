/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the packed virtqueue (device side), as fuzz_virtq.c is for the split
 * one. The input is a hostile guest plus a device loop: a short header lays out guest memory
 * (fuzz_guest.h), the ring size, the starting positions and the features; the rest is a
 * sequence of operations, either guest writes (descriptors anywhere in the ring with any
 * flags, chains posted at the driver's position with its wrap counter, indirect tables in
 * guest memory, the driver's event suppression structure) or device calls (dequeue,
 * complete, unget, flush, should_notify and call_pos, avail_pending, chain read/write, kick
 * suppression, per-entry publication).
 *
 * After every operation the state is checked against a model kept here: each dequeued chain
 * equals what a separate, plainer walker finds in the ring and the tables (its buffers, its
 * buffer id, the descriptors it took); descriptors taken and not yet published never exceed
 * the ring; the ring changes only where used descriptors are published, with the id, length
 * and flags the spec gives them; the driver's event structure is never written, ours only by
 * kick suppression; the device wrote nothing in guest memory but inside writable pieces; a
 * broken queue stays broken; the counters add up. Any mismatch aborts.
 *
 * Input layout (little endian, missing bytes read as zero):
 *   u8 cfg       bit0 EVENT_IDX, bit1 INDIRECT_DESC, bit2 second region,
 *                bit3 second region first in the table, bit4 per-entry
 *                publish, bit5 disable guest kicks at start
 *   u16 qsize    ring size = 1 + v % QSIZE_MAX (need not be a power of two)
 *   u8 r0_off, u16 r0_size, u16 r1_size, u8 gap    guest memory (fuzz_guest.h)
 *   u16 avail0, u16 used0   starting positions: index (bits 0-14) % size, wrap bit 15
 *   u8 burst     largest dequeue burst, 1 + v % 128
 *   u8 seed      initial guest memory pattern
 *   then ops: u8 opcode % OP_MAX and its arguments (see run_op()).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_guest.h"
#include "virtq_packed.h"

#define MAX_OPS		1024
#define QSIZE_MAX	1024
/* CYCLE rounds per input: keeps one input's run time bounded. */
#define CYCLE_BUDGET	4096

#define F_AVAIL		(1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED		(1u << VRING_PACKED_DESC_F_USED)
#define POS_WRAP	0x8000u

/* A position as the model keeps it: index and wrap counter apart. */
struct mpos {
	uint16_t idx;
	bool wrap;
};

/* A completion the model will publish, as the driver must then see it. */
struct model_used {
	uint16_t id;
	uint16_t ndescs;
	uint32_t len;
	bool written;	/* completed as an rx buffer: WRITE whatever len */
};

struct fuzz {
	struct virtq vq;
	struct fguest g;
	uint16_t size;
	uint16_t burst;
	bool event_idx;
	bool indirect;

	/* The ring (the guest's and ours in turn) and the model's copy of it. */
	struct vring_packed_desc *ring, *ring_model;
	struct vring_packed_desc_event *drv_ev, *drv_ev_model;
	struct vring_packed_desc_event *dev_ev, *dev_ev_model;
	struct mpos drv;	/* where the guest driver posts next */

	/* Model of the engine's state. */
	struct mpos last_avail;
	struct mpos last_used;
	/*
	 * Descriptors taken by dequeues and descriptors published used, since the start; a
	 * resumed ring may start with more out than it has (any dequeue then breaks it).
	 */
	uint64_t taken, published, taken0;
	uint16_t shadow_cap;
	bool per_entry;
	bool broken;
	bool signalled_valid;
	struct mpos signalled;
	uint64_t since_signal;	/* descriptors published since the last decision */
	uint32_t cycle_budget;
	uint32_t pending_n;
	struct model_used pending[VIRTQ_SHADOW_MAX];
	struct virtq_stats stats;

	struct outlist ol;
};

static struct fuzz F;

static struct mpos mpos_of(uint16_t v)
{
	return (struct mpos){ .idx = (uint16_t)((v & 0x7fff) % F.size), .wrap = v & POS_WRAP };
}

static uint16_t mpos_enc(struct mpos p)
{
	return (uint16_t)(p.idx | (p.wrap ? POS_WRAP : 0));
}

static bool mpos_eq(struct mpos a, struct mpos b)
{
	return a.idx == b.idx && a.wrap == b.wrap;
}

/* One step forward: the wrap counter flips past the ring's last descriptor. */
static struct mpos mpos_next(struct mpos p)
{
	if (++p.idx == F.size) {
		p.idx = 0;
		p.wrap = !p.wrap;
	}
	return p;
}

static struct mpos mpos_fwd(struct mpos p, uint32_t n)
{
	while (n--)
		p = mpos_next(p);
	return p;
}

/* The spec's test: AVAIL equal to the position's wrap counter, USED not. */
static bool avail_at(struct mpos p)
{
	uint16_t flags = le16toh(F.ring_model[p.idx].flags);

	return !!(flags & F_AVAIL) == p.wrap && !!(flags & F_USED) != p.wrap;
}

/*
 * Seven bytes describing one descriptor in a form the fuzzer can hit: u8 mode, u16 addr,
 * u16 len, u8 flags, u8 id. mode bit7 puts the address just below 2^64 (wrap), bit6 makes
 * the length huge, bit5 gives the id the high bits mode & 15 (ids past the ring). flags:
 * NEXT, WRITE and INDIRECT as they are; AVAIL and USED are bits 3 and 4 when @p raw, else
 * those of a driver making it available at a position of wrap counter @p wrap.
 */
static void in_desc(struct input *in, struct vring_packed_desc *d, bool raw, bool wrap,
		bool next)
{
	uint8_t mode = in_u8(in);
	uint16_t addr = in_u16(in);
	uint16_t len = in_u16(in);
	uint8_t f = in_u8(in);
	uint16_t id = in_u8(in);
	uint16_t flags = (f & 7) ^ (next ? VRING_DESC_F_NEXT : 0);

	if (mode & 0x20)
		id |= (uint16_t)(mode & 15) << 8;
	if (raw)
		flags |= (f & 8 ? F_AVAIL : 0) | (f & 16 ? F_USED : 0);
	else
		flags |= wrap ? F_AVAIL : F_USED;
	d->addr = htole64(mode & 0x80 ? ~(uint64_t)addr : GPA_BASE + addr);
	d->len = htole32(mode & 0x40 ? UINT32_MAX - len : len);
	d->id = htole16(id);
	d->flags = htole16(flags);
}

static void guest_set_desc(uint16_t idx, const struct vring_packed_desc *d)
{
	F.ring[idx] = *d;
	F.ring_model[idx] = *d;
}

/*
 * The walker: the chain at @p p by the spec's rules, written plainly. Ring descriptors
 * linked by NEXT in ring order, each available; or one INDIRECT descriptor alone, whose
 * table's entries are all buffers. The buffer id is the last ring descriptor's.
 */
static bool ref_walk(struct mpos p, struct ref_chain *rc, uint16_t *id, uint16_t *ndescs)
{
	uint32_t n = 0;

	ref_chain_init(rc);
	for (;;) {
		const struct vring_packed_desc *d = &F.ring_model[p.idx];
		uint16_t flags = le16toh(d->flags);
		uint32_t len = le32toh(d->len);
		uint64_t addr = le64toh(d->addr);

		if (!avail_at(p) || ++n > F.size)
			return false;
		*id = le16toh(d->id);
		if (flags & VRING_DESC_F_INDIRECT) {
			struct ref_chain table;
			uint32_t i, j;

			ref_chain_init(&table);
			if (!F.indirect || n > 1 || (flags & VRING_DESC_F_NEXT) || len == 0 ||
					len % sizeof(*d) != 0 || !ref_translate(&F.g, addr, len, &table))
				return false;
			for (i = 0; i < len / sizeof(*d); i++) {
				struct vring_packed_desc e;
				uint8_t *b = (uint8_t *)&e;

				for (j = 0; j < sizeof(e); j++)
					CHECK(fguest_peek(&F.g, addr + i * sizeof(e) + j, &b[j]));
				if ((le16toh(e.flags) & VRING_DESC_F_INDIRECT) ||
						!ref_add(&F.g, rc, le64toh(e.addr), le32toh(e.len),
							le16toh(e.flags) & VRING_DESC_F_WRITE))
					return false;
			}
			break;
		}
		if (!ref_add(&F.g, rc, addr, len, flags & VRING_DESC_F_WRITE))
			return false;
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		p = mpos_next(p);
	}
	*ndescs = (uint16_t)n;
	return *id < F.size;
}

static void check_state(void)
{
	fguest_check_memory(&F.g);
	CHECK(memcmp(F.ring, F.ring_model, sizeof(*F.ring) * F.size) == 0);
	CHECK(memcmp(F.drv_ev, F.drv_ev_model, sizeof(*F.drv_ev)) == 0);
	CHECK(memcmp(F.dev_ev, F.dev_ev_model, sizeof(*F.dev_ev)) == 0);
	CHECK(F.vq.last_avail_idx == mpos_enc(F.last_avail));
	CHECK(F.vq.last_used_idx == mpos_enc(F.last_used));
	CHECK(F.vq.shadow_count == F.pending_n);
	/* Never more descriptors out than the ring has. */
	CHECK(F.taken - F.published <= (F.taken0 > F.size ? F.taken0 : F.size));
	check_stats(&F.vq.stats, &F.stats);
	check_broken_count(&F.vq, F.broken);
}

/*
 * The model's flush: each entry a used descriptor at the next used position (id, len,
 * AVAIL = USED = that position's wrap counter, WRITE when it carries bytes or was completed
 * as written into; the address
 * untouched), the position moving on by the chain's descriptors.
 */
static void model_publish(void)
{
	uint32_t i;

	if (F.pending_n == 0)
		return;
	for (i = 0; i < F.pending_n; i++) {
		struct vring_packed_desc *d = &F.ring_model[F.last_used.idx];
		const struct model_used *e = &F.pending[i];

		d->id = htole16(e->id);
		d->len = htole32(e->len);
		d->flags = htole16((F.last_used.wrap ? F_AVAIL | F_USED : 0) |
				(e->len || e->written ? VRING_DESC_F_WRITE : 0));
		F.last_used = mpos_fwd(F.last_used, e->ndescs);
		F.published += e->ndescs;
		F.since_signal += e->ndescs;
	}
	/* Two laps since the decision: the position it was taken at is passed again. */
	if (F.since_signal >= 2u * F.size)
		F.signalled_valid = false;
	F.pending_n = 0;
	F.stats.used_idx_stores++;
}

static uint16_t do_dequeue(uint16_t max)
{
	uint16_t want = 0, got;
	struct mpos p = F.last_avail;
	struct virtq_chain *chains;
	bool expect_broken = F.broken;
	uint64_t taken = F.taken;

	if (max > MAX_OUT - F.ol.nout)
		max = MAX_OUT - F.ol.nout;
	chains = fuzz_chains(max);
	got = virtq_packed_dequeue_burst(&F.vq, chains, max);
	outlist_dequeued(&F.ol, got);

	/* The walker's chains, each compared with the engine's as it goes. */
	while (!F.broken && want < max && avail_at(p)) {
		struct ref_chain rc;
		uint16_t id, ndescs;

		if (!ref_walk(p, &rc, &id, &ndescs) || taken - F.published + ndescs > F.size) {
			expect_broken = true;
			break;
		}
		CHECK(want < got);
		CHECK(chains[want].head == id && chains[want].ndescs == ndescs);
		/* What virtq_packed_complete_chain() takes on trust from the dequeue. */
		CHECK(id < F.size && ndescs >= 1 && ndescs <= F.size);
		check_chain_pieces(&F.g, &chains[want], &rc);
		outlist_add(&F.ol, &chains[want], want)->start = mpos_enc(p);
		taken += ndescs;
		p = mpos_fwd(p, ndescs);
		want++;
	}
	CHECK(got == want);
	F.broken = expect_broken;
	F.last_avail = p;
	F.taken = taken;
	F.stats.dequeued += got;
	return got;
}

static void complete_one(const struct virtq_chain *c, uint32_t len, bool written)
{
	struct model_used *e = &F.pending[F.pending_n++];

	if (written)
		virtq_packed_complete_written(&F.vq, c, len);
	else
		virtq_packed_complete_chain(&F.vq, c, len);
	e->written = written;
	e->id = c->head;
	e->ndescs = c->ndescs;
	e->len = len;
	F.stats.completed++;
	if (F.per_entry || F.pending_n == F.shadow_cap)
		model_publish();
}

static void do_complete(unsigned int k, uint8_t mode, uint32_t raw)
{
	struct outstanding *o;

	if (F.ol.nout == 0)
		return;
	o = &F.ol.out[k % F.ol.nout];
	complete_one(&o->c, mode & 1 ? raw : o->c.writable_len, mode & 2);
	outlist_del(&F.ol, o);
}

/* A caller's bad completion: an id past the ring, no descriptor, more than the ring. */
static void do_complete_bad(uint8_t mode, uint16_t v, uint32_t len)
{
	uint16_t id = 0, ndescs = 1;

	switch (mode % 3) {
	case 0:
		id = (uint16_t)(F.size + v % (65536 - F.size));
		break;
	case 1:
		ndescs = 0;
		break;
	default:
		ndescs = (uint16_t)(F.size + 1 + v % (65535 - F.size));
		break;
	}
	virtq_packed_complete(&F.vq, id, ndescs, len);
	F.stats.errors[VIRTQ_ERR_USED_ID]++;
}

static void do_unget(uint8_t n)
{
	uint16_t want, got, i;

	got = virtq_packed_unget(&F.vq, outlist_unget_ask(&F.ol, n, &want));
	CHECK(got == want);
	if (got == 0)
		return;
	/* Back to where the first chain given back started. */
	F.last_avail = mpos_of(F.ol.out[F.ol.nout - got].start);
	for (i = 0; i < got; i++)
		F.taken -= F.ol.out[F.ol.nout - 1 - i].c.ndescs;
	outlist_ungot(&F.ol, got);
	F.stats.ungot += got;
}

/* Whether position @p e is among the @p n from @p from on. */
static bool passed(struct mpos from, uint64_t n, struct mpos e)
{
	uint64_t i;

	for (i = 0; i < n; i++, from = mpos_next(from))
		if (mpos_eq(from, e))
			return true;
	return false;
}

static void do_should_notify(void)
{
	uint16_t flags = le16toh(F.drv_ev_model->flags);
	uint16_t off_wrap = le16toh(F.drv_ev_model->off_wrap);
	bool desc_event = flags == VRING_PACKED_EVENT_FLAG_DESC && F.event_idx;
	/* An event index past the ring names no descriptor: either answer is safe. */
	bool bad_event = desc_event && (off_wrap & 0x7fff) >= F.size;
	bool got = virtq_packed_should_notify(&F.vq), want;
	uint16_t call = virtq_packed_call_pos(&F.vq);

	if (F.signalled_valid && F.since_signal == 0) {
		want = false;
	} else if (flags == VRING_PACKED_EVENT_FLAG_DISABLE) {
		want = false;
	} else if (desc_event) {
		struct mpos e = { .idx = off_wrap & 0x7fff, .wrap = off_wrap & POS_WRAP };

		want = !F.signalled_valid || passed(F.signalled, F.since_signal, e);
	} else {
		want = true;
	}
	CHECK(got == want || (bad_event && F.signalled_valid && F.since_signal != 0));
	/* The position that makes DPDK's own check pass: just past the event, or last used. */
	if (desc_event && !bad_event)
		CHECK(call == mpos_enc(mpos_next(mpos_of(off_wrap))));
	else
		CHECK(call == mpos_enc(F.last_used));
	if (notify_decided(&F.stats, &F.signalled_valid, &F.since_signal, got))
		F.signalled = F.last_used;
}

/* The guest posts a chain of @p n descriptors at its position, then moves on. */
static void guest_post(struct input *in, uint8_t n, bool raw)
{
	struct mpos p = F.drv;
	uint8_t i;

	for (i = 0; i < n; i++, p = mpos_next(p)) {
		struct vring_packed_desc d;

		in_desc(in, &d, raw, p.wrap, i + 1 < n);
		guest_set_desc(p.idx, &d);
	}
	F.drv = p;
}

/* A chain of one buffer, @p off bytes into guest memory, at the driver's position. */
static void guest_post_one(uint16_t id, uint16_t flags, uint16_t off, uint16_t len)
{
	struct vring_packed_desc d = {
		.addr = htole64(F.g.reg[0].gpa + off),
		.len = htole32(len),
		.id = htole16(id),
		.flags = htole16((flags & (VRING_DESC_F_WRITE | VRING_DESC_F_INDIRECT)) |
				(F.drv.wrap ? F_AVAIL : F_USED)),
	};

	guest_set_desc(F.drv.idx, &d);
	F.drv = mpos_next(F.drv);
}

static void kicks(bool off)
{
	if (off)
		virtq_packed_disable_guest_kicks(&F.vq);
	else
		virtq_packed_enable_guest_kicks(&F.vq);
	F.dev_ev_model->flags = htole16(off ? VRING_PACKED_EVENT_FLAG_DISABLE :
			VRING_PACKED_EVENT_FLAG_ENABLE);
}

enum {
	OP_SET_DESC,
	OP_POST,
	OP_POST_RAW,
	OP_POST_RUN,
	OP_DRV_POS,
	OP_SET_MEM_DESC,
	OP_SET_MEM,
	OP_DRIVER_EVENT,
	OP_DEQUEUE,
	OP_COMPLETE,
	OP_COMPLETE_ALL,
	OP_COMPLETE_BAD,
	OP_UNGET,
	OP_FLUSH,
	OP_NOTIFY,
	OP_READ,
	OP_WRITE,
	OP_KICKS,
	OP_PER_ENTRY,
	OP_PENDING,
	OP_CYCLE,
	OP_MAX
};

/*
 * The device loop of fuzz_virtq.c, op for op where the layouts share one, on purpose: each
 * case calls its own layout's functions and models; what the two share is in fuzz_guest.h.
 */
static void run_op(struct input *in)
{
	unsigned int op = in_u8(in) % OP_MAX;
	struct vring_packed_desc d;
	uint16_t u, v;
	uint8_t n, k, step, f;
	uint64_t gpa;
	uint32_t i;

	switch (op) {
	case OP_SET_DESC:
		/* Anywhere in the ring; AVAIL/USED as given, or as the driver's next lap there. */
		u = in_u16(in) % F.size;
		n = in_u8(in);
		in_desc(in, &d, n & 1, u >= F.drv.idx ? F.drv.wrap : !F.drv.wrap, false);
		guest_set_desc(u, &d);
		break;
	case OP_POST:
		n = in_u8(in);
		guest_post(in, (uint8_t)(1 + n % 8), false);
		break;
	case OP_POST_RAW:
		n = in_u8(in);
		guest_post(in, (uint8_t)(1 + n % 8), true);
		break;
	case OP_POST_RUN:
		/* n chains of one buffer, ids first, first + step, ...: many chains for few bytes. */
		n = in_u8(in);
		k = in_u8(in);
		step = in_u8(in);
		f = in_u8(in);
		u = in_u16(in);
		v = in_u16(in);
		for (i = 0; i < n; i++)
			guest_post_one((uint16_t)(k + i * step), f, (uint16_t)(u + i * 16), v);
		break;
	case OP_DRV_POS:
		F.drv = mpos_of(in_u16(in));
		break;
	case OP_SET_MEM_DESC:
		gpa = GPA_BASE + in_u16(in);
		in_desc(in, &d, true, false, false);
		for (i = 0; i < sizeof(d); i++)
			fguest_poke(&F.g, gpa + i, ((uint8_t *)&d)[i]);
		break;
	case OP_SET_MEM:
		gpa = GPA_BASE + in_u16(in);
		n = in_u8(in);
		for (i = 0; i < n; i++)
			fguest_poke(&F.g, gpa + i, in_u8(in));
		break;
	case OP_DRIVER_EVENT:
		/* Mostly the four flag values, sometimes anything. */
		n = in_u8(in);
		u = n & 0x80 ? in_u16(in) : n % 4;
		F.drv_ev->flags = htole16(u);
		F.drv_ev->off_wrap = htole16(in_u16(in));
		*F.drv_ev_model = *F.drv_ev;
		break;
	case OP_DEQUEUE:
		n = in_u8(in);
		do_dequeue(n == 0xff ? F.burst : n % (F.burst + 1));
		break;
	case OP_COMPLETE:
		k = in_u8(in);
		n = in_u8(in);
		do_complete(k, n, n & 1 ? in_u32(in) : 0);
		break;
	case OP_COMPLETE_ALL:
		/* Newest first: nothing to move up in the list. */
		while (F.ol.nout != 0)
			do_complete(F.ol.nout - 1, 0, 0);
		break;
	case OP_COMPLETE_BAD:
		n = in_u8(in);
		u = in_u16(in);
		do_complete_bad(n, u, in_u32(in));
		break;
	case OP_UNGET:
		do_unget(in_u8(in));
		break;
	case OP_FLUSH:
		virtq_packed_flush(&F.vq);
		model_publish();
		break;
	case OP_NOTIFY:
		do_should_notify();
		break;
	case OP_READ:
	case OP_WRITE:
		outlist_chain_io(&F.g, &F.ol, in, op == OP_WRITE);
		break;
	case OP_KICKS:
		kicks(in_u8(in) & 1);
		break;
	case OP_PER_ENTRY:
		F.per_entry = in_u8(in) & 1;
		virtq_packed_set_per_entry_publish(&F.vq, F.per_entry);
		model_publish();
		break;
	case OP_PENDING:
		CHECK(virtq_packed_avail_pending(&F.vq) == (!F.broken && avail_at(F.last_avail)));
		break;
	case OP_CYCLE:
		/*
		 * A well-behaved guest and device going round: post one buffer, take it,
		 * complete it, publish. The cheap way to laps of the ring between decisions.
		 */
		u = in_u16(in);
		for (i = 0; i < u && F.cycle_budget != 0 && !F.broken; i++, F.cycle_budget--) {
			guest_post_one(0, VRING_DESC_F_WRITE, 0, 1);
			check_state();
			if (do_dequeue(1) == 0)
				break;
			do_complete(F.ol.nout - 1, 0, 0);
			virtq_packed_flush(&F.vq);
			model_publish();
			check_state();
		}
		break;
	}
}

static void setup(struct input *in)
{
	uint8_t cfg = in_u8(in);
	uint16_t qsize = in_u16(in);
	struct fguest_layout l;
	uint16_t avail0, used0;
	uint8_t burst;
	uint64_t features = 0;
	size_t ring_bytes;

	fguest_layout_in(&l, in, cfg);
	avail0 = in_u16(in);
	used0 = in_u16(in);
	burst = in_u8(in);
	l.seed = in_u8(in);

	memset(&F, 0, offsetof(struct fuzz, ol.out));
	F.size = (uint16_t)(1 + qsize % QSIZE_MAX);
	F.burst = 1 + burst % 128;
	F.event_idx = cfg & 1;
	F.indirect = cfg & 2;
	fguest_init(&F.g, &l);

	ring_bytes = sizeof(*F.ring) * F.size;
	F.ring = fuzz_xzalloc(16, ring_bytes);
	F.ring_model = fuzz_xzalloc(16, ring_bytes);
	F.drv_ev = fuzz_xzalloc(4, sizeof(*F.drv_ev));
	F.drv_ev_model = fuzz_xzalloc(4, sizeof(*F.drv_ev));
	F.dev_ev = fuzz_xzalloc(4, sizeof(*F.dev_ev));
	F.dev_ev_model = fuzz_xzalloc(4, sizeof(*F.dev_ev));
	F.last_avail = mpos_of(avail0);
	F.last_used = mpos_of(used0);
	F.drv = F.last_avail;
	/*
	 * Resuming with descriptors out already (a reconnect): as many as lie from the used
	 * position to the avail one, on a line of two laps.
	 */
	F.taken = (F.last_avail.idx + (F.last_avail.wrap ? 0u : F.size) + 2u * F.size -
		   F.last_used.idx - (F.last_used.wrap ? 0u : F.size)) % (2u * F.size);
	F.taken0 = F.taken;
	F.shadow_cap = F.size < VIRTQ_SHADOW_MAX ? F.size : VIRTQ_SHADOW_MAX;
	F.cycle_budget = CYCLE_BUDGET;

	if (F.event_idx)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (F.indirect)
		features |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	CHECK(virtq_packed_init(&F.vq, &F.g.mem, F.ring, F.drv_ev, F.dev_ev, F.size,
			mpos_enc(F.last_avail), mpos_enc(F.last_used), features) == 0);
	if (cfg & 16) {
		F.per_entry = true;
		virtq_packed_set_per_entry_publish(&F.vq, true);
	}
	if (cfg & 32)
		kicks(true);
}

static void teardown(void)
{
	fguest_fini(&F.g);
	free(F.ring);
	free(F.ring_model);
	free(F.drv_ev);
	free(F.drv_ev_model);
	free(F.dev_ev);
	free(F.dev_ev_model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };

	setup(&in);
	fuzz_run(&in, MAX_OPS, run_op, check_state);
	teardown();
	return 0;
}
