/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For tests that make the userspace guest driver (vfe_guest, which talks to CID 2 only)
 * talk to other guests: its tx hook runs after a chain is added and before it is published,
 * so the header can still be rewritten in place.
 */
#ifndef TESTS_COMMON_VFE_SHIM_H
#define TESTS_COMMON_VFE_SHIM_H

#include <endian.h>

#include <linux/virtio_vsock.h>

#include "vfe.h"

/** Header of the chain the driver just added to @p vq: it always starts a chain with it. */
static inline struct virtio_vsock_hdr *vfe_shim_chain_just_added(const struct vfe_vq *vq)
{
	uint64_t gpa;

	if (vq->packed) {
		gpa = le64toh(vq->pdesc[vq->pending[vq->npending - 1].idx].addr);
	} else {
		uint16_t head = le16toh(vq->avail->ring[(uint16_t)(vq->avail_idx - 1) &
							  (vq->num - 1)]);

		gpa = le64toh(vq->desc[head].addr);
	}
	return vfe_mem_ptr(vq->mem, gpa, sizeof(struct virtio_vsock_hdr));
}

#endif /* TESTS_COMMON_VFE_SHIM_H */
