/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_GUEST_MEM_H
#define VSOCK_GUEST_MEM_H

/**
 * Guest memory as the vhost-user frontend shared it: up to eight regions,
 * each a guest-physical range mapped contiguously somewhere in our address
 * space. Every address a guest hands us (descriptor buffers, indirect tables)
 * goes through guest_mem_translate(), which refuses any byte outside the
 * regions and splits a range that crosses from one region into the next
 * (adjacent in guest-physical space does not mean adjacent in ours).
 *
 * No DPDK dependency: device.c builds the table from rte_vhost_memory.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** DPDK 22.11 accepts at most 8 regions (no CONFIGURE_MEM_SLOTS). */
#define GUEST_MEM_MAX_REGIONS 8

struct guest_mem_region {
	uint64_t gpa;	/**< guest-physical start */
	uint64_t size;	/**< bytes, > 0 */
	uint64_t hva;	/**< our virtual address of gpa */
};

struct guest_mem {
	unsigned int nregions;
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
};

/** One host-contiguous part of a guest buffer. */
struct guest_mem_piece {
	void *addr;
	uint32_t len;
};

/**
 * Build @p mem from @p n regions (copied). Rejects with -EINVAL: n > 8,
 * a zero size, a range that wraps in either address space, or two regions
 * overlapping in guest-physical space (a translation would be ambiguous).
 * n == 0 is accepted and makes every translation fail.
 */
int guest_mem_init(struct guest_mem *mem, const struct guest_mem_region *regions,
		unsigned int n);

/* Region holding byte gpa, or NULL. Unsigned wrap makes gpa < r->gpa fail too. */
static inline const struct guest_mem_region *
guest_mem_find(const struct guest_mem *mem, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < mem->nregions; i++) {
		const struct guest_mem_region *r = &mem->regions[i];

		if (gpa - r->gpa < r->size)
			return r;
	}
	return NULL;
}

/**
 * Translate the guest range [gpa, gpa + len) into at most @p max pieces.
 * Returns the number of pieces (>= 1), or
 *   -EINVAL  len == 0,
 *   -EFAULT  some byte lies outside guest memory, or gpa + len wraps,
 *   -ENOSPC  the range needs more than @p max pieces (nothing is usable).
 * Regions are scanned linearly: there are at most eight and the table is
 * read-only here, so one table can serve several lcores without a cache
 * line bouncing between them.
 */
static inline int guest_mem_translate(const struct guest_mem *mem, uint64_t gpa, uint32_t len,
		struct guest_mem_piece *pieces, unsigned int max)
{
	unsigned int n = 0;
	uint64_t left = len;

	if (len == 0)
		return -EINVAL;
	if (gpa + (left - 1) < gpa)
		return -EFAULT;
	/* Each round consumes at least one byte and one piece: bounded by max. */
	while (left != 0) {
		const struct guest_mem_region *r = guest_mem_find(mem, gpa);
		uint64_t off, chunk;

		if (r == NULL)
			return -EFAULT;
		if (n == max)
			return -ENOSPC;
		off = gpa - r->gpa;
		chunk = r->size - off;
		if (chunk > left)
			chunk = left;
		pieces[n].addr = (void *)(uintptr_t)(r->hva + off);
		pieces[n].len = (uint32_t)chunk;
		n++;
		gpa += chunk;
		left -= chunk;
	}
	return (int)n;
}

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_GUEST_MEM_H */
