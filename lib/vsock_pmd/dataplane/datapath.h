/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DATAPATH_H
#define VSOCK_PMD_DATAPATH_H

#include <stdbool.h>
#include <sys/uio.h>

#include <linux/virtio_vsock.h>

#include <vsock_pmd.h>

#include "virtq_common.h"

struct vsock_dev;

/** Host socket events served per device per round: keeps one busy VM from starving the others. */
#define HOST_POLL_BUDGET 64

/** Payload pieces of one run of tx packets handed to the host socket at once. */
#define DATAPATH_RUN_IOV 1024

/** Per-lcore scratch space for one poll: the chains of one burst, the tx headers copied out. */
struct datapath_scratch {
	struct virtq_chain chains[VSOCK_PMD_BURST_MAX];
	struct virtio_vsock_hdr hdrs[VSOCK_PMD_BURST_MAX];
	bool hdr_ok[VSOCK_PMD_BURST_MAX];	/* the chain holds a whole header */
	unsigned int run_cnt[VSOCK_PMD_BURST_MAX];
	struct iovec run_iov[DATAPATH_RUN_IOV];
};

/**
 * One round of work for one device on its worker lcore: a burst from the tx
 * ring into the connections, the host sockets, then a burst of packets owed
 * to the guest into the rx ring. Leaves no completion unpublished.
 *
 * @return how much work was done; 0 means the device was idle.
 */
unsigned int vsock_dev_poll(struct vsock_dev *dev, struct datapath_scratch *s);

/**
 * --wait-mode notify or adaptive, before the worker sleeps: ask the guest to kick the tx ring (and the
 * rx ring if data waits for buffers), then look at the rings once more.
 *
 * @return true if work arrived meanwhile: do not sleep. Either way, call
 *   vsock_dev_kicks_disarm() before the next poll.
 */
bool vsock_dev_kicks_arm(struct vsock_dev *dev);

/** Polling again: the guest need not kick us. */
void vsock_dev_kicks_disarm(struct vsock_dev *dev);

#endif /* VSOCK_PMD_DATAPATH_H */
