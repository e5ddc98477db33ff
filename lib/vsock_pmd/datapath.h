/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DATAPATH_H
#define VSOCK_PMD_DATAPATH_H

#include <vsock_pmd.h>

#include "virtq_split.h"

struct vsock_dev;

/** Per-lcore scratch space for one poll: the chains of one burst. */
struct datapath_scratch {
	struct virtq_chain chains[VSOCK_PMD_BURST_MAX];
};

/**
 * One round of work for one device on its worker lcore: a burst from the tx
 * ring into the connections, the host sockets, then a burst of packets owed
 * to the guest into the rx ring. Leaves no completion unpublished.
 *
 * @return how much work was done; 0 means the device was idle.
 */
unsigned int vsock_dev_poll(struct vsock_dev *dev, struct datapath_scratch *s);

#endif /* VSOCK_PMD_DATAPATH_H */
