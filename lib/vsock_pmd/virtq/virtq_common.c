/* SPDX-License-Identifier: BSD-3-Clause */
/* What both layouts share (virtq_common.h): error names and the copies in and out of a chain. */
#include <stddef.h>
#include <string.h>

#include "virtq_common.h"

static const char *const virtq_err_names[VIRTQ_ERR_MAX] = {
	[VIRTQ_ERR_NONE] = "none",
	[VIRTQ_ERR_AVAIL_IDX] = "avail_idx",
	[VIRTQ_ERR_HEAD] = "head",
	[VIRTQ_ERR_NEXT] = "next",
	[VIRTQ_ERR_LOOP] = "loop",
	[VIRTQ_ERR_INDIRECT_FEATURE] = "indirect_feature",
	[VIRTQ_ERR_INDIRECT_NESTED] = "indirect_nested",
	[VIRTQ_ERR_INDIRECT_NEXT] = "indirect_next",
	[VIRTQ_ERR_INDIRECT_LEN] = "indirect_len",
	[VIRTQ_ERR_INDIRECT_ADDR] = "indirect_addr",
	[VIRTQ_ERR_DESC_ADDR] = "desc_addr",
	[VIRTQ_ERR_DESC_ORDER] = "desc_order",
	[VIRTQ_ERR_PIECES] = "pieces",
	[VIRTQ_ERR_CHAIN_LEN] = "chain_len",
	[VIRTQ_ERR_USED_ID] = "used_id",
	[VIRTQ_ERR_CHAIN_AVAIL] = "chain_avail",
};

const char *virtq_err_str(enum virtq_err err)
{
	if ((unsigned int)err >= VIRTQ_ERR_MAX)
		return "unknown";
	return virtq_err_names[err];
}

uint32_t virtq_pieces_copy(const struct guest_mem_piece *p, unsigned int n, uint32_t off,
		void *buf, uint32_t len, bool to_pieces)
{
	uint8_t *b = buf;
	uint32_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		uint32_t chunk;

		if (off >= p[i].len) {
			off -= p[i].len;
			continue;
		}
		chunk = p[i].len - off;
		if (chunk > len - done)
			chunk = len - done;
		if (to_pieces)
			memcpy((uint8_t *)p[i].addr + off, b + done, chunk);
		else
			memcpy(b + done, (const uint8_t *)p[i].addr + off, chunk);
		done += chunk;
		off = 0;
	}
	return done;
}

uint32_t virtq_chain_write(const struct virtq_chain *c, uint32_t off, const void *src,
		uint32_t len)
{
	return virtq_pieces_copy(c->pieces + c->nr_readable, c->nr_pieces - c->nr_readable, off,
			(void *)(uintptr_t)src, len, true);
}
