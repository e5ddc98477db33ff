/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both layouts of vfe_vq share (vfe_vq_common.c): the split ring's file
 * (vfe_vq.c) and the packed one's (vfe_vq_packed.c) each use it, it uses
 * neither. Private to the frontend library.
 */
#ifndef VSOCK_FRONTEND_VFE_VQ_COMMON_H
#define VSOCK_FRONTEND_VFE_VQ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "vfe.h"

/* Largest ring of either layout (virtio's limit). */
#define VFE_VQ_MAX 32768

/*
 * Once a layout's init placed its rings: the indirect tables (@p desc_size
 * bytes an entry), the free list of buffer ids and the eventfds. On an
 * eventfd error the queue is finied (vfe_vq_fini(), here too).
 */
int vfe_vq_init_common(struct vfe_vq *vq, size_t desc_size, uint16_t indirect_max);

#endif /* VSOCK_FRONTEND_VFE_VQ_COMMON_H */
