/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where each VM is polled, and the payload mbufs of each NUMA node: decided and made once at
 * start (vsock_devs_place()), filled once every smaller allocation is made
 * (placement_pools_populate()), freed last.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <vsock_pmd.h>

#include "device.h"
#include "log.h"
#include "placement.h"
#include "worker.h"

/* Per-lcore mbuf cache; a small pool gets a smaller one (DPDK wants size >= 1.5 x cache). */
#define MBUF_CACHE 256u

/*
 * Heap a frontend's attach takes beside our tables: librte_vhost's device, its virtqueues,
 * memory table and guest page list. Kept free when the heap cannot grow.
 */
#define ATTACH_RESERVE (1u << 20)

/* Each VM's worker, by the index of its configuration (vsock_devs_place()). */
static struct worker *homes[VSOCK_PMD_MAX_VMS];
static struct rte_mempool *pools[RTE_MAX_NUMA_NODES];
/* mbufs each VM's connection table may hold: its share of its node's pool. */
static uint32_t quotas[RTE_MAX_NUMA_NODES];

struct worker *placement_home(unsigned int i)
{
	return homes[i];
}

struct rte_mempool *placement_pool(int node)
{
	return pools[node];
}

uint32_t placement_quota(int node)
{
	return quotas[node];
}

/*
 * Where each VM is polled, decided once for the life of the process: a pinned VM on its
 * lcore, the others in order on the worker with the fewest VMs so far. The device, its
 * connection table and its mbufs are then allocated on that lcore's NUMA node.
 */
static int devs_place(const struct vsock_pmd_conf *conf, struct worker **home)
{
	unsigned int load[RTE_MAX_LCORE] = { 0 };
	unsigned int i, j, nw = workers_count();

	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *vm = &conf->vms[i];

		home[i] = NULL;
		for (j = 0; j < nw && vm->pinned; j++) {
			if (worker_lcore(worker_at(j)) == vm->lcore) {
				home[i] = worker_at(j);
				load[j]++;
			}
		}
		if (vm->pinned && !home[i]) {
			VSOCK_LOG(ERR, "VM cid %" PRIu64 ": lcore %u is not a worker lcore of the "
				  "EAL core list (the main lcore only does control work)", vm->cid,
				  vm->lcore);
			return -EINVAL;
		}
	}
	for (i = 0; i < conf->nb_vms; i++) {
		unsigned int best = 0;

		if (home[i])
			continue;
		for (j = 1; j < nw; j++) {
			if (load[j] < load[best])
				best = j;
		}
		home[i] = worker_at(best);
		load[best]++;
	}
	return 0;
}

/* VMs polled from each NUMA node. */
static void vms_per_node(const struct vsock_pmd_conf *conf, struct worker *const *home,
			 unsigned int *per_node)
{
	unsigned int i;

	memset(per_node, 0, sizeof(*per_node) * RTE_MAX_NUMA_NODES);
	for (i = 0; i < conf->nb_vms; i++)
		per_node[rte_lcore_to_socket_id(worker_lcore(home[i]))]++;
}

/*
 * One payload mempool per NUMA node that polls VMs, sized for the VMs it polls; created
 * empty here (the connection tables need it) and filled by pools_populate() once every
 * smaller allocation is made, so that the big one is checked against what is left.
 *
 * Not rte_pktmbuf_pool_create(): its objects may not cross a page boundary, and with
 * --no-huge the pages are 4 KiB, so each 2.3 KiB mbuf would take a page of its own (twice
 * the memory). Nothing here gives an mbuf to a device for DMA: the CPU copies to and from
 * guest memory, so the objects need no IOVA-contiguity (RTE_MEMPOOL_F_NO_IOVA_CONTIG).
 */
static int pools_create(const struct vsock_pmd_conf *conf, struct worker *const *home)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE,
	};
	unsigned int per_node[RTE_MAX_NUMA_NODES];
	unsigned int i;

	vms_per_node(conf, home, per_node);
	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		char name[RTE_MEMPOOL_NAMESIZE];

		if (!per_node[i])
			continue;
		unsigned int n = conf->mbufs_per_vm * per_node[i] - 1;

		unsigned int cache = RTE_MIN(MBUF_CACHE, n / 8);
		/* What per-lcore caches may keep out of reach of the other lcores (1.5 x each). */
		unsigned int slack = rte_lcore_count() * cache * 3 / 2;

		snprintf(name, sizeof(name), "vsock_payload_%u", i);
		pools[i] = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) +
						    RTE_MBUF_DEFAULT_BUF_SIZE, cache, sizeof(priv),
						    (int)i, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
		if (pools[i] && rte_mempool_set_ops_byname(pools[i], rte_mbuf_best_mempool_ops(),
							   NULL) < 0) {
			rte_mempool_free(pools[i]);
			pools[i] = NULL;
		}
		if (!pools[i]) {
			VSOCK_LOG(ERR, "cannot create the payload mempool of NUMA node %u: %s", i,
				  rte_strerror(rte_errno));
			return -ENOMEM;
		}
		rte_pktmbuf_pool_init(pools[i], &priv);
		/*
		 * Every VM of the node gets an equal share of what the caches leave, so that
		 * none can hold the mbufs another needs: a VM that runs out of its own waits.
		 */
		quotas[i] = RTE_MAX((n > 2 * slack ? n - slack : n / 2) / per_node[i], 2u);
	}
	return 0;
}

/*
 * DPDK memory populating @p mp takes: its objects and (rte_ring mempool ops) the rte_ring
 * holding them.
 */
static uint64_t pool_fill_bytes(const struct rte_mempool *mp)
{
	uint64_t obj = (uint64_t)mp->header_size + mp->elt_size + mp->trailer_size;
	ssize_t free_list = rte_ring_get_memsize(rte_align32pow2(mp->size + 1));

	return obj * mp->size + (free_list > 0 ? (uint64_t)free_list : 0);
}

#define MIB ((uint64_t)1 << 20)

/*
 * Fill the payload pools. When the heap cannot grow (--no-huge: the EAL has exactly its -m
 * from the start), refuse before allocating if what they need, and what a frontend's
 * attach takes beside them, is not free: naming the figure and the fix beats DPDK's bare
 * "Cannot allocate memory". With hugepages the heap grows on demand as long as the kernel
 * has pages: only a failed attempt can tell, and then the same figure is named.
 */
int placement_pools_populate(const struct vsock_pmd_conf *conf)
{
	unsigned int per_node[RTE_MAX_NUMA_NODES];
	uint64_t need[RTE_MAX_NUMA_NODES] = { 0 }, total = 0, have = 0, used = 0;
	bool can_grow = rte_eal_has_hugepages();
	unsigned int i;

	vms_per_node(conf, homes, per_node);
	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		struct rte_malloc_socket_stats st;

		if (rte_malloc_get_socket_stats((int)i, &st) == 0) {
			have += st.heap_totalsz_bytes;
			used += st.heap_allocsz_bytes;
		}
		if (pools[i])
			need[i] = pool_fill_bytes(pools[i]) + per_node[i] * ATTACH_RESERVE;
		total += need[i];
	}
	total += used;
	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		struct rte_malloc_socket_stats st;
		bool short_here = !can_grow && need[i] &&
			(rte_malloc_get_socket_stats((int)i, &st) < 0 ||
			 st.heap_freesz_bytes < need[i]);

		if (short_here || (pools[i] && rte_mempool_populate_default(pools[i]) < 0)) {
			if (can_grow)
				VSOCK_LOG(ERR, "%u VM%s need %" PRIu64 " MiB of DPDK memory, the EAL "
					  "could not grow to it: reserve more hugepages, or pass a "
					  "smaller --mbufs (now %u per VM)", conf->nb_vms,
					  conf->nb_vms == 1 ? "" : "s", (total + MIB - 1) / MIB,
					  conf->mbufs_per_vm);
			else
				VSOCK_LOG(ERR, "%u VM%s need %" PRIu64 " MiB of DPDK memory, the EAL "
					  "has %" PRIu64 " MiB: pass -m %" PRIu64 ", or use hugepages,"
					  " or a smaller --mbufs (now %u per VM)", conf->nb_vms,
					  conf->nb_vms == 1 ? "" : "s", (total + MIB - 1) / MIB,
					  have / MIB, (uint64_t)RTE_ALIGN_CEIL(total, 64 * MIB) / MIB,
					  conf->mbufs_per_vm);
			return -ENOMEM;
		}
		if (pools[i])
			rte_mempool_obj_iter(pools[i], rte_pktmbuf_init, NULL);
	}
	return 0;
}

int vsock_devs_place(const struct vsock_pmd_conf *conf, int *nodes)
{
	unsigned int i;
	int rc;

	rc = devs_place(conf, homes);
	if (rc == 0)
		rc = pools_create(conf, homes);
	for (i = 0; rc == 0 && i < conf->nb_vms; i++)
		nodes[i] = (int)rte_lcore_to_socket_id(worker_lcore(homes[i]));
	return rc;
}

void vsock_devs_pools_free(void)
{
	unsigned int i;

	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		rte_mempool_free(pools[i]);
		pools[i] = NULL;
	}
}

void vsock_devs_mbufs(uint64_t *total, uint64_t *in_use)
{
	unsigned int i;

	*total = 0;
	*in_use = 0;
	for (i = 0; i < RTE_MAX_NUMA_NODES; i++) {
		if (!pools[i])
			continue;
		*total += pools[i]->size;
		*in_use += rte_mempool_in_use_count(pools[i]);
	}
}

static void add_chunk(struct rte_mempool *mp __rte_unused, void *arg,
		      struct rte_mempool_memhdr *memhdr, unsigned int idx __rte_unused)
{
	*(uint64_t *)arg += memhdr->len;
}

void vsock_devs_pools(struct vsock_pmd_memory *mem)
{
	unsigned int i;

	for (i = 0; i < RTE_MAX_NUMA_NODES && mem->nb_pools < VSOCK_PMD_MEM_POOLS_MAX; i++) {
		struct vsock_pmd_mem_pool *p = &mem->pools[mem->nb_pools];
		struct rte_mempool *mp = pools[i];
		char free_list[sizeof(RTE_RING_MZ_PREFIX) + RTE_MEMZONE_NAMESIZE];
		const struct rte_memzone *rz;
		uint64_t chunks = 0;

		if (!mp)
			continue;
		memset(p, 0, sizeof(*p));
		snprintf(p->name, sizeof(p->name), "%s", mp->name);
		p->socket = mp->socket_id;
		p->objects = mp->size;
		p->obj_bytes = mp->header_size + mp->elt_size + mp->trailer_size;
		p->in_use = rte_mempool_in_use_count(mp);
		rte_mempool_mem_iter(mp, add_chunk, &chunks);
		/* The free objects are in an rte_ring of its own memzone (rte_ring mempool ops). */
		snprintf(free_list, sizeof(free_list), "%s%s", RTE_RING_MZ_PREFIX, mp->mz->name);
		rz = rte_memzone_lookup(free_list);
		p->bytes = mp->mz->len + chunks + (rz ? rz->len : 0);
		mem->pools_bytes += p->bytes;
		mem->nb_pools++;
	}
}
