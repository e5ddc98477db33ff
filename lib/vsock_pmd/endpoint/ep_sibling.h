/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_SIBLING_H
#define VSOCK_PMD_EP_SIBLING_H

/**
 * The guests' side of pipe connections (doc/multi-vm.md): the table of VMs by CID with their
 * groups and the rte_ring each VM's connection table takes new pipe connections from, from
 * another guest (ep_route.h) or a native program (ep_native.c). A guest's REQUEST
 * to another guest's CID becomes a pipe (ep_pipe.h) put on the target VM's incoming
 * rte_ring; the target's table offers it to its guest like a host connect. Both halves then
 * run the full protocol with their own guest, each on its own lcore.
 *
 * The table is built once at start, before any guest runs; afterwards only the running
 * flags change. Lookups are read-only and lock-free: any worker may route, and so may a
 * native API program in a secondary process.
 */

#include <stdbool.h>
#include <stdint.h>

#include <vsock_pmd.h>

struct ep_waker;
struct rte_ring;

/**
 * Build the table from @p conf: group names become bits, each VM gets its incoming rte_ring
 * (MP/SC) on NUMA node @p nodes[i], room for @p pipes connect requests: the whole pipe
 * pool, so that no VM's connects can fill another's rte_ring. @return 0 or a negative errno.
 */
int ep_sibling_setup(const struct vsock_pmd_conf *conf, const int *nodes, unsigned int pipes);

/** Free the incoming rte_rings; the tables that consumed them are gone. */
void ep_sibling_fini(void);

/** A secondary process: find the primary's table. @return 0 or -ENODEV (none). */
int ep_sibling_attach(void);

/** A secondary process: forget the table (the primary keeps it). */
void ep_sibling_detach(void);

/** VM @p cid's index in the configuration (its pipe share, ep_pipe_alloc()), or -ENOENT. */
int ep_sibling_index(uint64_t cid);

/** The incoming rte_ring of VM @p cid (to give its connection table), or NULL. */
struct rte_ring *ep_sibling_incoming(uint64_t cid);

/** The worker polling VM @p cid, if it may sleep (ep_pipe.h); set before any guest runs. */
void ep_sibling_set_waker(uint64_t cid, struct ep_waker *w);

/** After an enqueue on VM @p cid's incoming rte_ring: wake its worker if it sleeps. */
void ep_sibling_wake(uint64_t cid);

/** A guest driver attached to VM @p cid (true) or went away (false). */
void ep_sibling_set_running(uint64_t cid, bool running);

/** Whether VM @p cid exists (-ENOENT otherwise) and has a guest driver attached (1) or not (0). */
int ep_sibling_running(uint64_t cid);

/**
 * The incoming rte_ring of guest @p dst_cid for a REQUEST from guest @p src_cid (ep_route.h):
 * NULL unless both VMs share a group and @p dst_cid runs.
 */
struct rte_ring *ep_sibling_route(uint64_t src_cid, uint64_t dst_cid);

/** Whether a guest of @p src_cid may reach @p dst_cid at all (a shared group). */
bool ep_sibling_allowed(uint64_t src_cid, uint64_t dst_cid);

#endif /* VSOCK_PMD_EP_SIBLING_H */
