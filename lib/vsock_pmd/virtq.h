/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_VIRTQ_H
#define VSOCK_VIRTQ_H

/*
 * The virtqueue layout the engine uses. Only split rings exist today; a
 * packed ring would get its own virtq_packed.h behind this header.
 */
#include "virtq_split.h"

#endif /* VSOCK_VIRTQ_H */
