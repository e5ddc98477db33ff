/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the split virtqueue (device side) and the guest
 * memory translation under it. The input is a hostile guest plus a device
 * loop: a short header lays out guest memory (one or two malloc'd regions of
 * exact size, with a gap or adjacent in guest-physical space), the queue size
 * and the features; the rest is a sequence of operations, either guest writes
 * (descriptors, indirect tables in guest memory, avail ring, indices, flags)
 * or device calls (dequeue, complete, unget, flush, should_notify, chain
 * read/write, kick suppression, per-entry publication).
 *
 * After every operation the state is checked against a model kept here:
 * each dequeued chain equals what a separate, plainer walker finds in the
 * same tables; used ring and indices change only where the model says;
 * the device wrote nothing the guest owns except inside writable pieces;
 * a broken queue stays broken; the counters add up. Any mismatch aborts.
 *
 * Input layout (little endian, missing bytes read as zero):
 *   u8 cfg       bit0 EVENT_IDX, bit1 INDIRECT_DESC, bit2 second region,
 *                bit3 second region first in the table, bit4 per-entry
 *                publish, bit5 disable guest kicks at start
 *   u8 qlog      queue size = 1 << (qlog % 12)
 *   u8 r0_off    region 0 at GPA_BASE + 16 * r0_off
 *   u16 r0_size  1 + v % REGION_MAX
 *   u16 r1_size  1 + v % REGION_MAX
 *   u8 gap       region 1 at region 0's end + 16 * gap (0: adjacent)
 *   u16 avail0, u16 used0   starting indices
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
#include "virtq_split.h"

#define MAX_OPS		1024

struct fuzz {
	struct virtq vq;
	struct fguest g;
	uint16_t size;
	uint16_t burst;
	bool event_idx;
	bool indirect;

	/* Guest-owned rings and the model's copies. */
	struct vring_desc *desc, *desc_shadow;
	struct vring_avail *avail, *avail_shadow;
	size_t desc_bytes, avail_bytes, used_bytes;
	uint16_t avail_idx;	/* what the guest last stored in avail->idx */

	/* Device-owned used ring: the model's expected bytes. */
	struct vring_used *used, *used_model;

	/* Model of the engine's state. */
	uint16_t last_avail;
	uint16_t last_used;
	uint16_t shadow_cap;
	bool per_entry;
	bool broken;
	bool signalled_valid;
	uint16_t signalled;
	uint64_t since_signal;	/* entries published since the last decision */
	uint32_t repeat_budget;	/* keeps one input's run time bounded */
	uint32_t pending_n;
	struct vring_used_elem pending[VIRTQ_SHADOW_MAX];
	struct virtq_stats stats;

	struct outlist ol;
};

static struct fuzz F;

/*
 * Seven bytes describing one descriptor in a form the fuzzer can hit:
 * u8 mode, u16 addr, u16 len, u8 flags, u8 next. mode bit7 puts the address
 * just below 2^64 (wrap), bit6 makes the length huge, bits0-4 (with bit5)
 * give next a high byte.
 */
static void in_desc(struct input *in, struct vring_desc *d)
{
	uint8_t mode = in_u8(in);
	uint16_t addr = in_u16(in);
	uint16_t len = in_u16(in);
	uint8_t flags = in_u8(in);
	uint16_t next = in_u8(in);

	if (mode & 0x20)
		next |= (uint16_t)(mode & 0x1f) << 8;
	d->addr = htole64(mode & 0x80 ? ~(uint64_t)addr : GPA_BASE + addr);
	d->len = htole32(mode & 0x40 ? UINT32_MAX - len : len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

static bool ref_read_desc(bool indirect, uint64_t table, uint32_t idx, struct vring_desc *d)
{
	uint8_t *b = (uint8_t *)d;
	unsigned int i;

	if (!indirect) {
		*d = F.desc[idx];
		return true;
	}
	for (i = 0; i < sizeof(*d); i++)
		if (!fguest_peek(&F.g, table + (uint64_t)idx * sizeof(*d) + i, &b[i]))
			return false;
	return true;
}

/* The virtio 1.x rules plus the engine's documented limits, walked plainly. */
static bool ref_walk(uint16_t head, struct ref_chain *rc)
{
	uint64_t table = 0;
	uint32_t entries = F.size, idx = head, steps = 0;
	bool in_indirect = false;

	ref_chain_init(rc);
	if (head >= F.size)
		return false;
	for (;;) {
		struct vring_desc d;
		uint16_t flags;
		uint32_t len;
		uint64_t addr;

		if (++steps > entries)
			return false;
		if (!ref_read_desc(in_indirect, table, idx, &d))
			return false;
		flags = le16toh(d.flags);
		len = le32toh(d.len);
		addr = le64toh(d.addr);
		if (flags & VRING_DESC_F_INDIRECT) {
			struct ref_chain scratch;

			ref_chain_init(&scratch);

			if (!F.indirect || in_indirect || (flags & VRING_DESC_F_NEXT) ||
					len == 0 || len % sizeof(d) != 0 ||
					!ref_translate(&F.g, addr, len, &scratch))
				return false;
			in_indirect = true;
			table = addr;
			entries = len / sizeof(d);
			idx = 0;
			steps = 0;
			continue;
		}
		if (!ref_add(&F.g, rc, addr, len, flags & VRING_DESC_F_WRITE))
			return false;
		if (!(flags & VRING_DESC_F_NEXT))
			return true;
		idx = le16toh(d.next);
		if (idx >= entries)
			return false;
	}
}

static void check_chain(const struct virtq_chain *c, uint16_t slot_head)
{
	struct ref_chain rc;

	CHECK(c->head == slot_head);
	CHECK(c->head < F.size);
	CHECK(ref_walk(c->head, &rc));
	check_chain_pieces(&F.g, c, &rc);
}

/* Everything the guest owns is as the model left it; used is as predicted. */
static void check_memory(void)
{
	fguest_check_memory(&F.g);
	CHECK(memcmp(F.desc, F.desc_shadow, F.desc_bytes) == 0);
	CHECK(memcmp(F.avail, F.avail_shadow, F.avail_bytes) == 0);
	CHECK(memcmp(F.used, F.used_model, F.used_bytes) == 0);
}

static void check_state(void)
{
	check_memory();
	check_stats(&F.vq.stats, &F.stats);
	check_broken_count(&F.vq, F.broken);
}

/* The model's flush: pending entries reach used->ring, then used->idx. */
static void model_publish(void)
{
	uint32_t i;

	if (F.pending_n == 0)
		return;
	for (i = 0; i < F.pending_n; i++)
		F.used_model->ring[(uint16_t)(F.last_used + i) & (F.size - 1)] = F.pending[i];
	F.last_used += F.pending_n;
	F.used_model->idx = htole16(F.last_used);
	F.since_signal += F.pending_n;
	F.pending_n = 0;
	F.stats.used_idx_stores++;
}

static void do_dequeue(uint16_t max)
{
	uint16_t avail_idx = le16toh(F.avail->idx);
	uint16_t delta = avail_idx - F.last_avail;
	uint16_t want, got, i;
	struct virtq_chain *chains;
	bool expect_broken = F.broken;

	if (max > MAX_OUT - F.ol.nout)
		max = MAX_OUT - F.ol.nout;
	chains = fuzz_chains(max);
	got = virtq_split_dequeue_burst(&F.vq, chains, max);

	if (F.broken) {
		want = 0;
	} else if (delta > F.size) {
		want = 0;
		expect_broken = true;
	} else {
		struct ref_chain rc;

		want = delta < max ? delta : max;
		for (i = 0; i < want; i++) {
			uint16_t slot = (F.last_avail + i) & (F.size - 1);

			if (!ref_walk(le16toh(F.avail->ring[slot]), &rc)) {
				want = i;
				expect_broken = true;
				break;
			}
		}
	}
	CHECK(got == want);
	F.broken = expect_broken;
	outlist_dequeued(&F.ol, got);
	for (i = 0; i < got; i++) {
		uint16_t slot = (F.last_avail + i) & (F.size - 1);

		check_chain(&chains[i], le16toh(F.avail->ring[slot]));
		outlist_add(&F.ol, &chains[i], i);
	}
	F.last_avail += got;
	F.stats.dequeued += got;
}

static void complete_one(const struct virtq_chain *c, uint32_t len, uint32_t times)
{
	uint32_t i;

	for (i = 0; i < times; i++) {
		virtq_split_complete_chain(&F.vq, c, len);
		F.pending[F.pending_n].id = htole32(c->head);
		F.pending[F.pending_n].len = htole32(len);
		F.pending_n++;
		F.stats.completed++;
		if (F.per_entry || F.pending_n == F.shadow_cap)
			model_publish();
	}
}

static void do_complete(struct input *in)
{
	uint8_t k = in_u8(in), mode = in_u8(in);
	uint32_t raw = mode & 1 ? in_u32(in) : 0;
	struct outstanding *o;

	if (F.ol.nout == 0)
		return;
	o = &F.ol.out[k % F.ol.nout];
	complete_one(&o->c, mode & 1 ? raw : o->c.writable_len, 1);
	outlist_del(&F.ol, o);
}

static void do_unget(uint8_t n)
{
	uint16_t want, got;

	got = virtq_split_unget(&F.vq, outlist_unget_ask(&F.ol, n, &want));
	CHECK(got == want);
	outlist_ungot(&F.ol, got);
	F.last_avail -= got;
	F.stats.ungot += got;
}

static void do_should_notify(void)
{
	bool got = virtq_split_should_notify(&F.vq), want;

	if (F.signalled_valid && F.since_signal == 0) {
		want = false;
	} else if (F.event_idx) {
		uint16_t event = le16toh(F.avail->ring[F.size]);

		want = !F.signalled_valid || F.since_signal >= 65536 ||
			vring_need_event(event, F.last_used, F.signalled);
	} else {
		want = !(le16toh(F.avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	}
	CHECK(got == want);
	if (notify_decided(&F.stats, &F.signalled_valid, &F.since_signal, want))
		F.signalled = F.last_used;
}

enum {
	OP_SET_DESC,
	OP_SET_DESC_RAW,
	OP_SET_MEM_DESC,
	OP_SET_MEM,
	OP_POST,
	OP_POST_RUN,
	OP_AVAIL_IDX,
	OP_AVAIL_FLAGS,
	OP_USED_EVENT,
	OP_DEQUEUE,
	OP_COMPLETE,
	OP_COMPLETE_ALL,
	OP_COMPLETE_BAD,
	OP_UNGET,
	OP_FLUSH,
	OP_NOTIFY,
	OP_READ,
	OP_WRITE,
	OP_NO_KICKS,
	OP_PER_ENTRY,
	OP_COMPLETE_REPEAT,
	OP_MAX
};

/* Kicks off: used->flags, and avail_event one step behind what was taken. */
static void no_kicks(void)
{
	uint16_t ev = htole16((uint16_t)(F.last_avail - 1));

	virtq_split_disable_guest_kicks(&F.vq);
	F.used_model->flags = htole16(VRING_USED_F_NO_NOTIFY);
	if (F.event_idx)
		memcpy(&F.used_model->ring[F.size], &ev, sizeof(ev));
}

static void guest_store_avail(void)
{
	F.avail->idx = htole16(F.avail_idx);
	F.avail_shadow->idx = F.avail->idx;
}

static void guest_post(uint16_t head)
{
	uint16_t slot = F.avail_idx & (F.size - 1);

	F.avail->ring[slot] = htole16(head);
	F.avail_shadow->ring[slot] = F.avail->ring[slot];
	F.avail_idx++;
	guest_store_avail();
}

static void run_op(struct input *in)
{
	unsigned int op = in_u8(in) % OP_MAX;
	struct vring_desc d;
	uint16_t u, i;
	uint8_t n, step;
	uint64_t gpa;

	switch (op) {
	case OP_SET_DESC:
		u = in_u16(in) & (F.size - 1);
		in_desc(in, &d);
		F.desc[u] = d;
		F.desc_shadow[u] = d;
		break;
	case OP_SET_DESC_RAW:
		u = in_u16(in) & (F.size - 1);
		for (i = 0; i < sizeof(d); i++)
			((uint8_t *)&d)[i] = in_u8(in);
		F.desc[u] = d;
		F.desc_shadow[u] = d;
		break;
	case OP_SET_MEM_DESC:
		gpa = GPA_BASE + in_u16(in);
		in_desc(in, &d);
		for (i = 0; i < sizeof(d); i++)
			fguest_poke(&F.g, gpa + i, ((uint8_t *)&d)[i]);
		break;
	case OP_SET_MEM:
		gpa = GPA_BASE + in_u16(in);
		n = in_u8(in);
		for (i = 0; i < n; i++)
			fguest_poke(&F.g, gpa + i, in_u8(in));
		break;
	case OP_POST:
		guest_post(in_u16(in));
		break;
	case OP_POST_RUN:
		/* n heads first, first + step, ...: many chains for few bytes. */
		n = in_u8(in);
		u = in_u8(in);
		step = in_u8(in);
		for (i = 0; i < n; i++)
			guest_post((uint16_t)(u + i * step));
		break;
	case OP_AVAIL_IDX:
		F.avail_idx += in_u16(in);
		guest_store_avail();
		break;
	case OP_AVAIL_FLAGS:
		F.avail->flags = htole16(in_u16(in));
		F.avail_shadow->flags = F.avail->flags;
		break;
	case OP_USED_EVENT:
		F.avail->ring[F.size] = htole16(in_u16(in));
		F.avail_shadow->ring[F.size] = F.avail->ring[F.size];
		break;
	case OP_DEQUEUE:
		n = in_u8(in);
		do_dequeue(n == 0xff ? F.burst : n % (F.burst + 1));
		break;
	case OP_COMPLETE:
		do_complete(in);
		break;
	case OP_COMPLETE_ALL:
		while (F.ol.nout != 0) {
			static const uint8_t first[2] = { 0, 0 };
			struct input z = { first, sizeof(first) };

			do_complete(&z);
		}
		break;
	case OP_COMPLETE_BAD:
		u = F.size + in_u16(in) % (65536 - F.size);
		virtq_split_complete(&F.vq, u, in_u32(in));
		F.stats.errors[VIRTQ_ERR_USED_ID]++;
		break;
	case OP_UNGET:
		do_unget(in_u8(in));
		break;
	case OP_FLUSH:
		virtq_split_flush(&F.vq);
		model_publish();
		break;
	case OP_NOTIFY:
		do_should_notify();
		break;
	case OP_READ:
	case OP_WRITE:
		outlist_chain_io(&F.g, &F.ol, in, op == OP_WRITE);
		break;
	case OP_NO_KICKS:
		no_kicks();
		break;
	case OP_COMPLETE_REPEAT:
		/*
		 * One head completed again and again: a caller bug, but the cheap
		 * way to publish 65536 entries between two notify decisions.
		 */
		n = in_u8(in);
		u = in_u16(in);
		if (u > F.repeat_budget)
			u = F.repeat_budget;
		F.repeat_budget -= u;
		if (F.ol.nout != 0)
			complete_one(&F.ol.out[n % F.ol.nout].c,
					F.ol.out[n % F.ol.nout].c.writable_len, u);
		break;
	case OP_PER_ENTRY:
		F.per_entry = in_u8(in) & 1;
		virtq_split_set_per_entry_publish(&F.vq, F.per_entry);
		model_publish();
		break;
	}
}

static void setup(struct input *in)
{
	uint8_t cfg = in_u8(in), qlog = in_u8(in);
	struct fguest_layout l;
	uint16_t avail0, used0;
	uint8_t burst;
	uint64_t features = 0;

	fguest_layout_in(&l, in, cfg);
	avail0 = in_u16(in);
	used0 = in_u16(in);
	burst = in_u8(in);
	l.seed = in_u8(in);

	memset(&F, 0, offsetof(struct fuzz, ol.out));
	F.size = 1u << (qlog % 12);
	F.burst = 1 + burst % 128;
	F.event_idx = cfg & 1;
	F.indirect = cfg & 2;
	fguest_init(&F.g, &l);

	F.desc_bytes = sizeof(struct vring_desc) * F.size;
	F.avail_bytes = sizeof(uint16_t) * (3 + F.size);
	F.used_bytes = 4 + sizeof(struct vring_used_elem) * F.size + 2;
	F.desc = fuzz_xzalloc(16, F.desc_bytes);
	F.avail = fuzz_xzalloc(2, F.avail_bytes);
	F.used = fuzz_xzalloc(4, F.used_bytes);
	F.avail->idx = htole16(avail0);
	F.used->idx = htole16(used0);
	F.desc_shadow = fuzz_xdup(F.desc, F.desc_bytes);
	F.avail_shadow = fuzz_xdup(F.avail, F.avail_bytes);
	F.used_model = fuzz_xdup(F.used, F.used_bytes);
	F.avail_idx = avail0;
	F.last_avail = avail0;
	F.last_used = used0;
	F.shadow_cap = F.size < VIRTQ_SHADOW_MAX ? F.size : VIRTQ_SHADOW_MAX;
	F.repeat_budget = 2 * 65536;

	if (F.event_idx)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (F.indirect)
		features |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	CHECK(virtq_split_init(&F.vq, &F.g.mem, F.desc, F.avail, F.used, F.size, avail0, used0,
			features) == 0);
	if (cfg & 16) {
		F.per_entry = true;
		virtq_split_set_per_entry_publish(&F.vq, true);
	}
	if (cfg & 32)
		no_kicks();
}

static void teardown(void)
{
	fguest_fini(&F.g);
	free(F.desc);
	free(F.desc_shadow);
	free(F.avail);
	free(F.avail_shadow);
	free(F.used);
	free(F.used_model);
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
