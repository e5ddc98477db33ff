/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_ROUTE_H
#define VSOCK_PMD_EP_ROUTE_H

/**
 * The router (doc/multi-vm.md, doc/native-api.md): who takes a guest's REQUEST that no host
 * socket takes, a native listener (ep_native.h) or another guest (ep_sibling.h). It uses
 * both; neither uses it.
 */

#include <stdint.h>

struct rte_ring;

/**
 * Where a guest's REQUEST from @p src_cid to @p dst_cid port @p dst_port goes when it is not
 * for a host socket (struct conn_table_conf.route):
 * - @p dst_cid is the host: the backlog of a native listener on that port, or NULL
 *   (hybrid vsock then);
 * - another guest: its incoming rte_ring if both VMs share a group and it runs, else NULL.
 * Any worker, lock-free.
 */
struct rte_ring *ep_route(uint64_t src_cid, uint64_t dst_cid, uint32_t dst_port);

#endif /* VSOCK_PMD_EP_ROUTE_H */
