/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * guest_mem: region table checks, translation inside one region, across two
 * regions adjacent in guest-physical space but not in ours, and refusal of
 * gaps, wrap-around, out-of-range bytes and zero lengths.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "guest_mem.h"

#define RA_GPA	0x100000ull
#define RA_SIZE	0x4000ull
#define RB_GPA	(RA_GPA + RA_SIZE)	/* adjacent to A in guest-physical space */
#define RB_SIZE	0x2000ull
#define RC_GPA	0x200000ull		/* after a gap */
#define RC_SIZE	0x1000ull

static uint8_t *ra, *rb, *rc;

static struct guest_mem_region region(uint64_t gpa, uint64_t size, void *hva)
{
	struct guest_mem_region r = { .gpa = gpa, .size = size, .hva = (uintptr_t)hva };

	return r;
}

static void test_init(void)
{
	struct guest_mem_region r[GUEST_MEM_MAX_REGIONS + 1];
	struct guest_mem mem;
	unsigned int i;

	for (i = 0; i < GUEST_MEM_MAX_REGIONS + 1; i++)
		r[i] = region(0x10000 * (i + 1), 0x1000, ra);
	tap_ok(guest_mem_init(&mem, r, GUEST_MEM_MAX_REGIONS) == 0, "init: 8 regions accepted");
	tap_ok(mem.nregions == GUEST_MEM_MAX_REGIONS, "init: 8 regions stored");
	tap_ok(guest_mem_init(&mem, r, GUEST_MEM_MAX_REGIONS + 1) == -EINVAL,
			"init: 9 regions refused");

	r[0] = region(0x1000, 0, ra);
	tap_ok(guest_mem_init(&mem, r, 1) == -EINVAL, "init: zero size refused");
	r[0] = region(UINT64_MAX - 0xfff, 0x2000, ra);
	tap_ok(guest_mem_init(&mem, r, 1) == -EINVAL, "init: gpa wrap refused");
	r[0] = region(0x1000, 0x2000, (void *)(uintptr_t)(UINT64_MAX - 0xfff));
	tap_ok(guest_mem_init(&mem, r, 1) == -EINVAL, "init: hva wrap refused");
	r[0] = region(UINT64_MAX - 0xfff, 0x1000, ra);
	tap_ok(guest_mem_init(&mem, r, 1) == 0, "init: region ending at 2^64 accepted");

	r[0] = region(0x1000, 0x2000, ra);
	r[1] = region(0x2fff, 0x1000, rb);
	tap_ok(guest_mem_init(&mem, r, 2) == -EINVAL, "init: overlap by one byte refused");
	r[1] = region(0x0, 0x1001, rb);
	tap_ok(guest_mem_init(&mem, r, 2) == -EINVAL, "init: overlap from below refused");
	r[1] = region(0x3000, 0x1000, rb);
	tap_ok(guest_mem_init(&mem, r, 2) == 0, "init: touching regions accepted");

	tap_ok(guest_mem_init(&mem, r, 0) == 0 && mem.nregions == 0, "init: empty table");
	{
		struct guest_mem_piece p[2];

		tap_ok(guest_mem_translate(&mem, 0x1000, 1, p, 2) == -EFAULT,
				"empty table translates nothing");
	}
}

static void setup(struct guest_mem *mem)
{
	struct guest_mem_region r[3] = {
		region(RA_GPA, RA_SIZE, ra),
		region(RB_GPA, RB_SIZE, rb),
		region(RC_GPA, RC_SIZE, rc),
	};

	if (guest_mem_init(mem, r, 3) != 0)
		abort();
}

static void test_single(const struct guest_mem *mem)
{
	struct guest_mem_piece p[4];
	int n;

	n = guest_mem_translate(mem, RA_GPA + 0x10, 100, p, 4);
	tap_ok(n == 1 && p[0].addr == ra + 0x10 && p[0].len == 100,
			"single region: one piece at the right host address");
	n = guest_mem_translate(mem, RA_GPA, RA_SIZE, p, 4);
	tap_ok(n == 1 && p[0].addr == ra && p[0].len == RA_SIZE, "whole region: one piece");
	n = guest_mem_translate(mem, RC_GPA + RC_SIZE - 1, 1, p, 1);
	tap_ok(n == 1 && p[0].addr == rc + RC_SIZE - 1 && p[0].len == 1,
			"last byte of a region");
	tap_ok(guest_mem_translate(mem, RA_GPA, 0, p, 4) == -EINVAL, "len 0: -EINVAL");
	tap_ok(guest_mem_translate(mem, RC_GPA + RC_SIZE, 1, p, 4) == -EFAULT,
			"just past a region's end, in no region: -EFAULT");
}

static void test_split(const struct guest_mem *mem)
{
	struct guest_mem_piece p[4];
	uint8_t flat[64], back[64];
	unsigned int i, off;
	int n;

	n = guest_mem_translate(mem, RB_GPA - 24, 64, p, 4);
	tap_ok(n == 2, "split: range across A|B gives two pieces (%d)", n);
	tap_ok(p[0].addr == ra + RA_SIZE - 24 && p[0].len == 24, "split: first piece ends A");
	tap_ok(p[1].addr == rb && p[1].len == 40, "split: second piece starts B");

	/* Bytes written through the pieces land where the guest would see them. */
	for (i = 0; i < sizeof(flat); i++)
		flat[i] = (uint8_t)(i * 7 + 1);
	for (i = 0, off = 0; i < (unsigned int)n; off += p[i].len, i++)
		memcpy(p[i].addr, flat + off, p[i].len);
	memcpy(back, ra + RA_SIZE - 24, 24);
	memcpy(back + 24, rb, 40);
	tap_ok(memcmp(flat, back, sizeof(flat)) == 0, "split: bytes land in both regions");

	tap_ok(guest_mem_translate(mem, RB_GPA - 24, 64, p, 1) == -ENOSPC,
			"split: one piece allowed -> ENOSPC");
	tap_ok(guest_mem_translate(mem, RA_GPA, RA_SIZE + RB_SIZE, p, 2) == 2 &&
			p[0].len == RA_SIZE && p[1].len == RB_SIZE, "split: A and B whole");
}

static void test_refusals(const struct guest_mem *mem)
{
	struct guest_mem_piece p[4];

	tap_ok(guest_mem_translate(mem, RA_GPA, 0, p, 4) == -EINVAL, "len 0 refused");
	tap_ok(guest_mem_translate(mem, RB_GPA + RB_SIZE - 8, 16, p, 4) == -EFAULT,
			"gap: range running off B into the gap refused");
	tap_ok(guest_mem_translate(mem, RB_GPA + RB_SIZE, 1, p, 4) == -EFAULT,
			"gap: first byte after B refused");
	tap_ok(guest_mem_translate(mem, RC_GPA - 1, 2, p, 4) == -EFAULT,
			"gap: range starting one byte before C refused");
	tap_ok(guest_mem_translate(mem, RA_GPA - 1, 1, p, 4) == -EFAULT,
			"outside: byte before A refused");
	tap_ok(guest_mem_translate(mem, RC_GPA + RC_SIZE, 0x100, p, 4) == -EFAULT,
			"outside: after the last region refused");
	tap_ok(guest_mem_translate(mem, 0, 1, p, 4) == -EFAULT, "outside: gpa 0 refused");
	tap_ok(guest_mem_translate(mem, UINT64_MAX - 0xf, 0x20, p, 4) == -EFAULT,
			"overflow: gpa + len wraps refused");
	tap_ok(guest_mem_translate(mem, RA_GPA, UINT32_MAX, p, 4) == -EFAULT,
			"4 GiB - 1 from A refused");
}

static void test_top_of_space(void)
{
	struct guest_mem_region r = region(UINT64_MAX - 0xfff, 0x1000, ra);
	struct guest_mem_piece p[2];
	struct guest_mem mem;

	guest_mem_init(&mem, &r, 1);
	tap_ok(guest_mem_translate(&mem, UINT64_MAX - 0xf, 0x10, p, 2) == 1 &&
			p[0].addr == ra + 0xff0 && p[0].len == 0x10,
			"region ending at 2^64: last 16 bytes translate");
	tap_ok(guest_mem_translate(&mem, UINT64_MAX - 0xf, 0x11, p, 2) == -EFAULT,
			"region ending at 2^64: one byte more wraps, refused");
}

int main(void)
{
	struct guest_mem mem;

	ra = calloc(1, RA_SIZE);
	rb = calloc(1, RB_SIZE);
	rc = calloc(1, RC_SIZE);
	if (ra == NULL || rb == NULL || rc == NULL)
		return EXIT_FAILURE;

	test_init();
	setup(&mem);
	test_single(&mem);
	test_split(&mem);
	test_refusals(&mem);
	test_top_of_space();

	free(ra);
	free(rb);
	free(rc);
	return tap_done();
}
