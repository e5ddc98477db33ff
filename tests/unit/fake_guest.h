/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake guest behind the virtq unit test (test_virtq.c, run on split and
 * on packed rings): its memory, buffers in it, and the random addresses and
 * checks of the random-ring tests. What depends on the ring layout (the
 * driver's rings, posting, reading used entries) stays in the test's split_
 * and packed_ parts. Like tap.h, the state here is static: include it from the one
 * source file of a test program.
 */
#ifndef TESTS_UNIT_FAKE_GUEST_H
#define TESTS_UNIT_FAKE_GUEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "virtq_common.h"

/*
 * Guest-physical addresses unlike any host one, so that a missed
 * translation cannot pass by accident. Region 1 follows region 0 in guest
 * space but not in ours: a buffer or table across R1_GPA comes out in two
 * pieces. Each region is its own exact-size allocation, so that under ASan
 * a read past either end aborts the test.
 */
#define R0_GPA		0x40000000ull
#define R0_SIZE		0x10000ull
#define R1_GPA		(R0_GPA + R0_SIZE)	/* adjacent in guest space, not in ours */
#define R1_SIZE		0x10000ull
#define GAP_GPA		0x1000ull		/* in no region */
#define BIG_GPA		0x100000000ull		/* 8 GiB reserved, never touched */
#define BIG_SIZE	(8ull << 30)

#define F_EVENT_IDX	(1ull << VIRTIO_RING_F_EVENT_IDX)
#define F_INDIRECT	(1ull << VIRTIO_RING_F_INDIRECT_DESC)

#define NEXT	VRING_DESC_F_NEXT
#define WRITE	VRING_DESC_F_WRITE
#define INDIR	VRING_DESC_F_INDIRECT

static uint8_t *r0, *r1;
/* PROT_NONE: lengths of 4 GiB fit in guest memory, but no byte is ever read. */
static void *big;
static struct guest_mem mem;

/** Zeroed memory of len bytes aligned to align; aborts rather than fail a test. */
static inline void *xalloc(size_t align, size_t len)
{
	void *p;

	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, len) != 0)
		abort();
	memset(p, 0, len);
	return p;
}

/** Set up the three regions in mem; -1 if the big one cannot be reserved. */
static inline int fake_guest_init(void)
{
	struct guest_mem_region r[3];

	r0 = xalloc(4096, R0_SIZE);
	r1 = xalloc(4096, R1_SIZE);
	big = mmap(NULL, BIG_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (big == MAP_FAILED)
		return -1;
	r[0] = (struct guest_mem_region){ R0_GPA, R0_SIZE, (uintptr_t)r0 };
	r[1] = (struct guest_mem_region){ R1_GPA, R1_SIZE, (uintptr_t)r1 };
	r[2] = (struct guest_mem_region){ BIG_GPA, BIG_SIZE, (uintptr_t)big };
	return guest_mem_init(&mem, r, 3) == 0 ? 0 : -1;
}

static inline void fake_guest_fini(void)
{
	munmap(big, BIG_SIZE);
	free(r0);
	free(r1);
}

/** Host address of gpa; the tests only ask for addresses they placed in memory. */
static inline void *hva(uint64_t gpa)
{
	struct guest_mem_piece p;

	if (guest_mem_translate(&mem, gpa, 1, &p, 1) != 1)
		abort();
	return p.addr;
}

/*
 * A guest buffer of len bytes in region 0 at *next_gpa, filled with a
 * pattern from seed (see check_bytes()); *next_gpa moves past it, 16-byte
 * aligned so that the buffer can also hold a descriptor table.
 */
static inline uint64_t gbuf(uint64_t *next_gpa, uint32_t len, uint8_t seed)
{
	uint64_t gpa = *next_gpa;
	uint8_t *p = hva(gpa);
	uint32_t i;

	*next_gpa += (len + 15) & ~15u;
	if (*next_gpa > R0_GPA + R0_SIZE)
		abort();
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i);
	return gpa;
}

/** Whether p holds gbuf()'s pattern for seed. */
static inline int check_bytes(const uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed + i))
			return 0;
	return 1;
}

/* Fixed seed: a failing random test fails the same way on the next run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * A guest address likely to hit an edge (region ends, the gap, the table area) plus up to
 * 31 bytes, or, now and then, any address at all. Never inside the big region: it is
 * reserved without access, so a table or buffer the engine rightly accepts there could
 * not be read.
 */
static inline uint64_t rnd_addr(void)
{
	static const uint64_t edge[] = {
		R0_GPA, R1_GPA - 8, R1_GPA + R1_SIZE - 256, R1_GPA + R1_SIZE - 8, GAP_GPA,
		R1_GPA + R1_SIZE - 16, 0,
	};
	const unsigned int n = sizeof(edge) / sizeof(edge[0]);
	uint64_t r = rnd();

	if (r % (n + 1) == n)
		return rnd();
	return edge[r % n] + (rnd() % 32);
}

/*
 * A length at or just past an edge: empty, one descriptor (16), a vsock
 * header (44), a page, 4 GiB - 1 (which the extra bytes wrap round).
 */
static inline uint32_t rnd_len(void)
{
	static const uint32_t lens[] = { 0, 1, 16, 32, 44, 48, 4096, UINT32_MAX };

	return lens[rnd() % 8] + (rnd() % 4 == 0 ? (uint32_t)(rnd() % 64) : 0);
}

/** Whether a piece lies wholly inside one region's host buffer. */
static inline int in_memory(const struct guest_mem_piece *p)
{
	unsigned int i;

	for (i = 0; i < mem.nregions; i++) {
		uint64_t a = (uintptr_t)p->addr, h = mem.regions[i].hva;

		if (a >= h && p->len <= mem.regions[i].size - (a - h))
			return 1;
	}
	return 0;
}

/*
 * What is wrong with a chain the engine accepted from a random ring of
 * size entries: whatever the ring held, the chain must be consistent and
 * each of its pieces non-empty and wholly inside guest memory. A chain of
 * empty descriptors has no piece at all, and is consistent.
 */
static inline unsigned int chain_faults(const struct virtq_chain *c, uint16_t size)
{
	unsigned int bad = 0, j;
	uint64_t rl = 0, wl = 0;

	if (c->head >= size || c->nr_readable > c->nr_pieces ||
			c->nr_pieces > VIRTQ_CHAIN_MAX_PIECES)
		bad++;
	for (j = 0; j < c->nr_pieces && j < VIRTQ_CHAIN_MAX_PIECES; j++) {
		if (!in_memory(&c->pieces[j]) || c->pieces[j].len == 0)
			bad++;
		if (j < c->nr_readable)
			rl += c->pieces[j].len;
		else
			wl += c->pieces[j].len;
	}
	if (rl != c->readable_len || wl != c->writable_len)
		bad++;
	return bad;
}

#endif /* TESTS_UNIT_FAKE_GUEST_H */
