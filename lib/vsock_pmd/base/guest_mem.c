/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "guest_mem.h"

int guest_mem_init(struct guest_mem *mem, const struct guest_mem_region *regions,
		unsigned int n)
{
	unsigned int i, j;

	if (n > GUEST_MEM_MAX_REGIONS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct guest_mem_region *r = &regions[i];

		/* The "- 1" forms let a region end exactly at 2^64. */
		if (r->size == 0 || r->gpa + (r->size - 1) < r->gpa ||
				r->hva + (r->size - 1) < r->hva)
			return -EINVAL;
		for (j = 0; j < i; j++) {
			const struct guest_mem_region *o = &regions[j];

			if (r->gpa - o->gpa < o->size || o->gpa - r->gpa < r->size)
				return -EINVAL;
		}
	}
	mem->nregions = n;
	if (n != 0)
		memcpy(mem->regions, regions, n * sizeof(*regions));
	return 0;
}
