/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_PLACEMENT_H
#define VSOCK_PMD_PLACEMENT_H

/*
 * Where each VM is polled and the payload pools (placement.c), for device.c. The public
 * side of it (vsock_devs_place(), vsock_devs_pools_free(), the memory figures) is in
 * device.h with the other device-table calls.
 */

#include <stdint.h>

struct rte_mempool;
struct vsock_pmd_conf;
struct worker;

/** The worker that polls the VM of configuration index @p i (after vsock_devs_place()). */
struct worker *placement_home(unsigned int i);

/** The payload pool of NUMA node @p node, and each of its VMs' share of it. */
struct rte_mempool *placement_pool(int node);
uint32_t placement_quota(int node);

/**
 * Fill the payload pools, once every smaller allocation is made; refuse with the figure
 * and the fix when the memory is not there. @return 0 or -ENOMEM.
 */
int placement_pools_populate(const struct vsock_pmd_conf *conf);

#endif /* VSOCK_PMD_PLACEMENT_H */
