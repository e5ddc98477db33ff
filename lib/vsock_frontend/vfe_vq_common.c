/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the split and the packed layout of vfe_vq share: the indirect tables,
 * the free list of buffer ids, the eventfds, and giving them back.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vfe_vq_common.h"

int vfe_vq_init_common(struct vfe_vq *vq, size_t desc_size, uint16_t indirect_max)
{
	uint16_t i;
	int rc;

	if (indirect_max > 0) {
		vq->indirect = vfe_mem_alloc(vq->mem, desc_size * vq->num * indirect_max, 16,
				&vq->indirect_gpa);
		if (vq->indirect == NULL)
			return -ENOMEM;
		vq->indirect_max = indirect_max;
	}
	vq->slot = calloc(vq->num, sizeof(*vq->slot));
	if (vq->slot == NULL)
		return -ENOMEM;
	/* slot[].next chains the free buffer ids. */
	for (i = 0; i < vq->num; i++)
		vq->slot[i].next = i + 1;
	vq->free_head = 0;
	vq->num_free = vq->num;
	vq->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	vq->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vq->kick_fd < 0 || vq->call_fd < 0) {
		rc = -errno;
		vfe_vq_fini(vq);
		return rc;
	}
	return 0;
}

void vfe_vq_fini(struct vfe_vq *vq)
{
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	vq->kick_fd = -1;
	vq->call_fd = -1;
	free(vq->slot);
	vq->slot = NULL;
	free(vq->pending);
	vq->pending = NULL;
}
