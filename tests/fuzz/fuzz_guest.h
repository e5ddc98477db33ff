/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FUZZ_GUEST_H
#define FUZZ_GUEST_H

/*
 * What the ring fuzzers (fuzz_virtq.c, fuzz_virtq_packed.c) share: a hostile guest's memory and the model's copy of it, and the checks of a dequeued chain that
 * do not depend on the ring layout (its pieces against a plain walk of the same buffers,
 * chain reads and writes against the bytes of guest memory).
 *
 * Guest memory is one or two exact-size malloc'd regions, adjacent or apart in
 * guest-physical space, listed in either order: a stray byte is an ASan report.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "virtq_common.h"

#define GPA_BASE	0x10000ull
#define REGION_MAX	8192

/* One guest memory region: the real buffer and the model's copy of it. */
struct fregion {
	uint64_t gpa;
	uint64_t size;
	uint8_t *buf;
	uint8_t *shadow;
};

struct fguest {
	struct guest_mem mem;
	unsigned int nreg;
	struct fregion reg[2];
};

/* The guest memory part of a target's input header. */
struct fguest_layout {
	bool two;		/* a second region */
	bool second_first;	/* listed first in the guest_mem table */
	uint8_t r0_off;		/* region 0 at GPA_BASE + 16 * r0_off */
	uint16_t r0_size;	/* 1 + v % REGION_MAX */
	uint16_t r1_size;
	uint8_t gap;		/* region 1 at region 0's end + 16 * gap (0: adjacent) */
	uint8_t seed;		/* initial guest memory pattern */
};

/* Zeroed memory of exactly @p len bytes (rounded up to the alignment). */
static inline void *fuzz_xzalloc(size_t align, size_t len)
{
	void *p = aligned_alloc(align, (len + align - 1) / align * align);

	CHECK(p != NULL);
	memset(p, 0, len);
	return p;
}

static inline void *fuzz_xdup(const void *src, size_t len)
{
	void *p = malloc(len);

	CHECK(p != NULL);
	memcpy(p, src, len);
	return p;
}

/* The layout's fields from r0_off to gap, in that order (the seed comes later). */
static inline void fguest_layout_in(struct fguest_layout *l, struct input *in, uint8_t cfg)
{
	l->two = cfg & 4;
	l->second_first = cfg & 8;
	l->r0_off = in_u8(in);
	l->r0_size = in_u16(in);
	l->r1_size = in_u16(in);
	l->gap = in_u8(in);
}

static inline void fguest_init(struct fguest *g, const struct fguest_layout *l)
{
	struct guest_mem_region gr[2];
	unsigned int i;
	size_t j;

	g->nreg = l->two ? 2 : 1;
	g->reg[0].gpa = GPA_BASE + 16ull * l->r0_off;
	g->reg[0].size = 1 + l->r0_size % REGION_MAX;
	g->reg[1].gpa = g->reg[0].gpa + g->reg[0].size + 16ull * l->gap;
	g->reg[1].size = 1 + l->r1_size % REGION_MAX;
	for (i = 0; i < g->nreg; i++) {
		struct fregion *r = &g->reg[i];
		unsigned int k = l->second_first ? g->nreg - 1 - i : i;

		/* Exact size: a byte past the end is an ASan report. */
		r->buf = malloc(r->size);
		CHECK(r->buf != NULL);
		/* The pattern repeats every 256 bytes: one period, then copies of it. */
		for (j = 0; j < r->size && j < 256; j++)
			r->buf[j] = (uint8_t)(l->seed + j * 7 + i);
		for (; j < r->size; j += 256)
			memcpy(r->buf + j, r->buf, r->size - j < 256 ? r->size - j : 256);
		r->shadow = fuzz_xdup(r->buf, r->size);
		gr[k].gpa = r->gpa;
		gr[k].size = r->size;
		gr[k].hva = (uintptr_t)r->buf;
	}
	CHECK(guest_mem_init(&g->mem, gr, g->nreg) == 0);
}

static inline void fguest_fini(struct fguest *g)
{
	unsigned int i;

	for (i = 0; i < g->nreg; i++) {
		free(g->reg[i].buf);
		free(g->reg[i].shadow);
	}
}

static inline struct fregion *fguest_region(struct fguest *g, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < g->nreg; i++)
		if (gpa >= g->reg[i].gpa && gpa < g->reg[i].gpa + g->reg[i].size)
			return &g->reg[i];
	return NULL;
}

/* A guest store of one byte: lands in memory and in the model, or nowhere. */
static inline void fguest_poke(struct fguest *g, uint64_t gpa, uint8_t v)
{
	struct fregion *r = fguest_region(g, gpa);

	if (r != NULL) {
		r->buf[gpa - r->gpa] = v;
		r->shadow[gpa - r->gpa] = v;
	}
}

static inline bool fguest_peek(struct fguest *g, uint64_t gpa, uint8_t *v)
{
	struct fregion *r = fguest_region(g, gpa);

	if (r == NULL)
		return false;
	*v = r->buf[gpa - r->gpa];
	return true;
}

/* Whether guest memory is as the model left it: the device wrote nothing the guest owns. */
static inline void fguest_check_memory(struct fguest *g)
{
	unsigned int i;

	for (i = 0; i < g->nreg; i++)
		CHECK(memcmp(g->reg[i].buf, g->reg[i].shadow, g->reg[i].size) == 0);
}

/* The walker's verdict on one chain, computed without the engine's code. */
struct ref_chain {
	uint16_t nr;
	uint16_t np;
	uint16_t empty;		/* empty descriptors: each takes one piece's room */
	bool seen_write;
	uint64_t rlen;
	uint64_t wlen;
	struct guest_mem_piece p[VIRTQ_CHAIN_MAX_PIECES];
};

static inline void ref_chain_init(struct ref_chain *rc)
{
	memset(rc, 0, offsetof(struct ref_chain, p));
}

/* Append the host pieces of guest range [gpa, gpa + len) to rc. */
static inline bool ref_translate(struct fguest *g, uint64_t gpa, uint32_t len,
		struct ref_chain *rc)
{
	uint64_t left = len;

	if (gpa + (left - 1) < gpa)
		return false;
	while (left != 0) {
		struct fregion *r = fguest_region(g, gpa);
		uint64_t chunk;

		if (r == NULL || rc->np + rc->empty == VIRTQ_CHAIN_MAX_PIECES)
			return false;
		chunk = r->gpa + r->size - gpa;
		if (chunk > left)
			chunk = left;
		rc->p[rc->np].addr = r->buf + (gpa - r->gpa);
		rc->p[rc->np].len = (uint32_t)chunk;
		rc->np++;
		gpa += chunk;
		left -= chunk;
	}
	return true;
}

/*
 * One buffer of a chain, by the virtio rules and the engine's documented limits: readable
 * ones before writable ones, totals below 4 GiB, every byte in guest memory, at most
 * VIRTQ_CHAIN_MAX_PIECES pieces with an empty buffer taking one piece's room (its address
 * unread).
 */
static inline bool ref_add(struct fguest *g, struct ref_chain *rc, uint64_t addr, uint32_t len,
		bool write)
{
	if (write) {
		rc->seen_write = true;
		rc->wlen += len;
	} else {
		if (rc->seen_write)
			return false;
		rc->rlen += len;
	}
	if (rc->rlen > UINT32_MAX || rc->wlen > UINT32_MAX)
		return false;
	if (len == 0 ? rc->np + rc->empty++ == VIRTQ_CHAIN_MAX_PIECES :
			!ref_translate(g, addr, len, rc))
		return false;
	if (!rc->seen_write)
		rc->nr = rc->np;
	return true;
}

static inline bool fguest_in_region(const struct fguest *g, const void *addr, uint32_t len)
{
	const uint8_t *a = addr;
	unsigned int i;

	for (i = 0; i < g->nreg; i++) {
		uintptr_t start = (uintptr_t)g->reg[i].buf;

		if ((uintptr_t)a >= start && len <= g->reg[i].size &&
				(uintptr_t)a - start <= g->reg[i].size - len)
			return true;
	}
	return false;
}

/* A dequeued chain: its pieces inside guest memory, and the very pieces the walker found. */
static inline void check_chain_pieces(const struct fguest *g, const struct virtq_chain *c,
		const struct ref_chain *rc)
{
	uint64_t rsum = 0, wsum = 0;
	unsigned int i;

	CHECK(c->nr_readable <= c->nr_pieces);
	/* A chain of empty descriptors has no piece. */
	CHECK(c->nr_pieces <= VIRTQ_CHAIN_MAX_PIECES);
	for (i = 0; i < c->nr_pieces; i++) {
		CHECK(c->pieces[i].len > 0);
		CHECK(fguest_in_region(g, c->pieces[i].addr, c->pieces[i].len));
		if (i < c->nr_readable)
			rsum += c->pieces[i].len;
		else
			wsum += c->pieces[i].len;
	}
	CHECK(rsum == c->readable_len);
	CHECK(wsum == c->writable_len);
	CHECK(rc->nr == c->nr_readable && rc->np == c->nr_pieces);
	CHECK(rc->rlen == c->readable_len && rc->wlen == c->writable_len);
	for (i = 0; i < rc->np; i++)
		CHECK(rc->p[i].addr == c->pieces[i].addr && rc->p[i].len == c->pieces[i].len);
}

/*
 * virtq_chain_read() of input-chosen offset and length: the expected count, and the guest's
 * own bytes, found piece by piece.
 */
static inline void check_chain_read(const struct virtq_chain *c, struct input *in)
{
	uint16_t off = in_u16(in), len = in_u16(in);
	uint32_t got, want, i, pos = 0;
	uint8_t *buf = malloc(len ? len : 1);

	CHECK(buf != NULL);
	got = virtq_chain_read(c, off, buf, len);
	want = off >= c->readable_len ? 0 : c->readable_len - off;
	if (want > len)
		want = len;
	CHECK(got == want);
	/* Byte b of the readable part is in the piece whose span covers it. */
	for (i = 0; i < c->nr_readable && got != 0; i++) {
		const uint8_t *p = c->pieces[i].addr;
		uint32_t j;

		for (j = 0; j < c->pieces[i].len; j++, pos++)
			if (pos >= off && pos - off < got)
				CHECK(buf[pos - off] == p[j]);
	}
	free(buf);
}

static inline bool in_writable(const struct virtq_chain *c, const uint8_t *a)
{
	unsigned int i;

	for (i = c->nr_readable; i < c->nr_pieces; i++) {
		const uint8_t *p = c->pieces[i].addr;

		if (a >= p && a < p + c->pieces[i].len)
			return true;
	}
	return false;
}

/*
 * virtq_chain_write() of an input-chosen pattern, offset and length: the expected count, and
 * no byte of guest memory changed outside this chain's writable pieces.
 */
static inline void check_chain_write(struct fguest *g, const struct virtq_chain *c,
		struct input *in)
{
	uint8_t v = in_u8(in);
	uint16_t off = in_u16(in), len = in_u16(in);
	uint32_t got, want, i;
	uint8_t *buf = malloc(len ? len : 1);
	uint64_t j;

	CHECK(buf != NULL);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(v + i);
	got = virtq_chain_write(c, off, buf, len);
	want = off >= c->writable_len ? 0 : c->writable_len - off;
	if (want > len)
		want = len;
	CHECK(got == want);
	free(buf);
	for (i = 0; i < g->nreg; i++) {
		struct fregion *r = &g->reg[i];

		/* Block by block: most of guest memory is as it was. */
		for (j = 0; j < r->size; j += 64) {
			uint64_t k, end = r->size - j < 64 ? r->size : j + 64;

			if (memcmp(r->buf + j, r->shadow + j, end - j) == 0)
				continue;
			for (k = j; k < end; k++) {
				if (r->buf[k] == r->shadow[k])
					continue;
				CHECK(in_writable(c, &r->buf[k]));
				r->shadow[k] = r->buf[k];
			}
		}
	}
}

/* Chains handed out and not yet completed or given back, oldest first. */
#define MAX_OUT		512

struct outstanding {
	uint32_t batch;		/* its dequeue */
	uint16_t pos;		/* index within its dequeue */
	uint16_t start;		/* packed: its ring position */
	struct virtq_chain c;
};

/*
 * Room for @p max chains that ends where its allocation ends: a write past them is an ASan
 * report, as with an exact-size malloc. The allocation is made once: one of up to MAX_OUT
 * chains per dequeue is large enough for the allocator to map and unmap it each time, and
 * those munmaps' TLB flushes took half of each run. The fill is ASan's malloc's (0xbe over
 * the first 4 KiB): a field the engine leaves unset does not keep an old chain's value.
 */
static inline struct virtq_chain *fuzz_chains(uint16_t max)
{
	static struct virtq_chain *all;
	struct virtq_chain *c;
	size_t fill;

	if (all == NULL) {
		all = malloc(sizeof(*all) * MAX_OUT);
		CHECK(all != NULL);
	}
	CHECK(max <= MAX_OUT);
	c = all + (MAX_OUT - max);
	fill = sizeof(*all) * max;
	memset(c, 0xbe, fill < 4096 ? fill : 4096);
	return c;
}

struct outlist {
	uint32_t batch;		/* dequeues so far */
	uint16_t unget_max;	/* chains of the latest dequeue unget may still give back */
	unsigned int nout;
	struct outstanding out[MAX_OUT];
};

/* A new dequeue of @p got chains: the latest for unget from now on. */
static inline void outlist_dequeued(struct outlist *l, uint16_t got)
{
	l->unget_max = got;
	l->batch++;
}

static inline struct outstanding *outlist_add(struct outlist *l, const struct virtq_chain *c,
		uint16_t pos)
{
	struct outstanding *o = &l->out[l->nout++];

	o->batch = l->batch;
	o->pos = pos;
	o->c = *c;
	return o;
}

static inline void outlist_del(struct outlist *l, struct outstanding *o)
{
	memmove(o, o + 1, (size_t)(&l->out[l->nout] - (o + 1)) * sizeof(*o));
	l->nout--;
}

/*
 * What to ask unget for when the input says @p n, and what it must give back (*@p want):
 * only the last chains of the latest dequeue, still outstanding, may go back (the caller's
 * side of the contract).
 */
static inline uint16_t outlist_unget_ask(const struct outlist *l, uint16_t n, uint16_t *want)
{
	uint16_t run = 0;

	while (run < l->nout && run < l->unget_max) {
		const struct outstanding *o = &l->out[l->nout - 1 - run];

		if (o->batch != l->batch || o->pos != l->unget_max - 1 - run)
			break;
		run++;
	}
	if (run < l->unget_max && n > run)
		n = run;
	*want = n < l->unget_max ? n : l->unget_max;
	return n;
}

/* unget gave back @p got chains: the newest outstanding ones. */
static inline void outlist_ungot(struct outlist *l, uint16_t got)
{
	l->nout -= got;
	l->unget_max -= got;
}

/* A read or a write of one outstanding chain, the input picks which. */
static inline void outlist_chain_io(struct fguest *g, struct outlist *l, struct input *in,
		bool write)
{
	uint8_t k = in_u8(in);

	if (l->nout == 0)
		return;
	if (write)
		check_chain_write(g, &l->out[k % l->nout].c, in);
	else
		check_chain_read(&l->out[k % l->nout].c, in);
}

/*
 * A should_notify() decision in the model: none when nothing was published since the last
 * one (false), else counted, @p yes or no, and the count of what was published restarted.
 */
static inline bool notify_decided(struct virtq_stats *s, bool *valid, uint64_t *since,
		bool yes)
{
	if (*valid && *since == 0) {
		s->notify_no++;
		return false;
	}
	*valid = true;
	*since = 0;
	if (yes)
		s->notify_yes++;
	else
		s->notify_no++;
	return true;
}

/* The error counters of a queue: one breakage at most, counted once, with a known name. */
static inline void check_broken_count(const struct virtq *vq, bool broken)
{
	uint64_t errs = 0;
	unsigned int i;

	CHECK(vq->broken == broken);
	CHECK(vq->stats.errors[VIRTQ_ERR_NONE] == 0);
	for (i = VIRTQ_ERR_NONE + 1; i < VIRTQ_ERR_MAX; i++)
		if (i != VIRTQ_ERR_USED_ID)
			errs += vq->stats.errors[i];
	/* Marking broken happens once: a broken queue is never walked again. */
	CHECK(errs == (broken ? 1u : 0u));
	if (broken) {
		CHECK(vq->broken_reason != VIRTQ_ERR_NONE && vq->broken_reason < VIRTQ_ERR_MAX &&
		      vq->broken_reason != VIRTQ_ERR_USED_ID);
		CHECK(vq->stats.errors[vq->broken_reason] == 1);
		CHECK(strcmp(virtq_err_str(vq->broken_reason), "unknown") != 0);
	}
}

/* The counters both layouts keep, against the model's. */
static inline void check_stats(const struct virtq_stats *s, const struct virtq_stats *m)
{
	CHECK(s->dequeued == m->dequeued);
	CHECK(s->ungot == m->ungot);
	CHECK(s->completed == m->completed);
	CHECK(s->used_idx_stores == m->used_idx_stores);
	CHECK(s->notify_yes == m->notify_yes);
	CHECK(s->notify_no == m->notify_no);
	CHECK(s->errors[VIRTQ_ERR_USED_ID] == m->errors[VIRTQ_ERR_USED_ID]);
}

#endif /* FUZZ_GUEST_H */
