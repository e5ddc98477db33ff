/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packed layout of vfe_vq: vfe_vq.c's public calls hand a packed ring
 * to these. Private to the frontend library.
 */
#ifndef VSOCK_FRONTEND_VFE_VQ_PACKED_H
#define VSOCK_FRONTEND_VFE_VQ_PACKED_H

#include "vfe.h"

int vfe_vqp_add(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n, void *cookie);
int vfe_vqp_add_indirect(struct vfe_vq *vq, const struct vfe_buf *bufs, unsigned int n,
		void *cookie);
void vfe_vqp_publish(struct vfe_vq *vq);
bool vfe_vqp_kick_needed(struct vfe_vq *vq);
uint16_t vfe_vqp_used_pending(const struct vfe_vq *vq);
int vfe_vqp_get_used(struct vfe_vq *vq, uint32_t *len, void **cookie);
void vfe_vqp_set_no_interrupt(struct vfe_vq *vq, bool on);
void vfe_vqp_set_used_event(struct vfe_vq *vq, uint16_t idx);
/** Encoded position (index | wrap << 15) of descriptor count @p count. */
uint16_t vfe_vqp_pos(const struct vfe_vq *vq, uint16_t count);

#endif /* VSOCK_FRONTEND_VFE_VQ_PACKED_H */
