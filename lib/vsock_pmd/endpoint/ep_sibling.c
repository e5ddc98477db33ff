/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The routing table of guest-to-guest connections. Written by the control thread before any
 * device runs, read by every worker: the CIDs, group masks and rte_rings never change while
 * workers run, only the running flags (relaxed: a REQUEST racing a guest's departure is
 * refused by the departing table's reset instead).
 *
 * The table is a named memzone: the native API in a secondary process (native_proc.c) looks
 * VMs up in it, as the primary's workers do.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "ep_sibling.h"
#include "ep_waker.h"
#include "log.h"

#define TABLE_MZ "vsock_sibling"

struct sibling_vm {
	uint64_t cid;
	uint64_t groups;	/* bit g: member of group g */
	struct rte_ring *incoming;
	struct ep_waker *waker;
	bool running;
};

struct sibling_table {
	unsigned int nb_vms;
	struct sibling_vm vms[VSOCK_PMD_MAX_VMS];
};

static const struct rte_memzone *table_mz;	/* the primary's: it frees it */
static struct sibling_table *table;

static struct sibling_vm *vm_by_cid(uint64_t cid)
{
	unsigned int i;

	for (i = 0; table && i < table->nb_vms; i++) {
		if (table->vms[i].cid == cid)
			return &table->vms[i];
	}
	return NULL;
}

int ep_sibling_setup(const struct vsock_pmd_conf *conf, const int *nodes, unsigned int pipes)
{
	/* Group names become bits in order of first appearance. */
	static char names[VSOCK_PMD_MAX_GROUPS][VSOCK_PMD_GROUP_NAME_MAX];
	unsigned int i, g, bit, nb_names = 0;

	if (table)
		return -EALREADY;
	table_mz = rte_memzone_reserve(TABLE_MZ, sizeof(*table), SOCKET_ID_ANY, 0);
	if (!table_mz)
		return -ENOMEM;
	table = table_mz->addr;
	memset(table, 0, sizeof(*table));
	for (i = 0; i < conf->nb_vms; i++) {
		const struct vsock_pmd_vm_conf *vc = &conf->vms[i];
		struct sibling_vm *v = &table->vms[i];
		char name[RTE_RING_NAMESIZE];

		memset(v, 0, sizeof(*v));
		v->cid = vc->cid;
		for (g = 0; g < vc->nb_groups; g++) {
			for (bit = 0; bit < nb_names; bit++) {
				if (strcmp(names[bit], vc->groups[g]) == 0)
					break;
			}
			if (bit == VSOCK_PMD_MAX_GROUPS) {
				VSOCK_LOG(ERR, "more than %d distinct group names",
					  VSOCK_PMD_MAX_GROUPS);
				ep_sibling_fini();
				return -EINVAL;
			}
			if (bit == nb_names)
				snprintf(names[nb_names++], sizeof(names[0]), "%s", vc->groups[g]);
			v->groups |= 1ULL << bit;
		}
		snprintf(name, sizeof(name), "vsock_in_%" PRIu64, vc->cid);
		v->incoming = rte_ring_create(name, rte_align32pow2(pipes + 1), nodes[i],
					      RING_F_SC_DEQ);
		table->nb_vms = i + 1;
		if (!v->incoming) {
			VSOCK_LOG(ERR,
				  "VM cid %" PRIu64 ": cannot create its incoming rte_ring: %s",
				  vc->cid, rte_strerror(rte_errno));
			ep_sibling_fini();
			return -ENOMEM;
		}
	}
	return 0;
}

void ep_sibling_fini(void)
{
	unsigned int i;

	if (!table_mz)
		return;
	for (i = 0; i < table->nb_vms; i++)
		rte_ring_free(table->vms[i].incoming);
	rte_memzone_free(table_mz);
	table_mz = NULL;
	table = NULL;
}

int ep_sibling_attach(void)
{
	const struct rte_memzone *mz = rte_memzone_lookup(TABLE_MZ);

	if (!mz)
		return -ENODEV;
	table = mz->addr;
	return 0;
}

void ep_sibling_detach(void)
{
	table = NULL;
}

int ep_sibling_index(uint64_t cid)
{
	struct sibling_vm *v = vm_by_cid(cid);

	return v ? (int)(v - table->vms) : -ENOENT;
}

struct rte_ring *ep_sibling_incoming(uint64_t cid)
{
	struct sibling_vm *v = vm_by_cid(cid);

	return v ? v->incoming : NULL;
}

void ep_sibling_set_waker(uint64_t cid, struct ep_waker *w)
{
	struct sibling_vm *v = vm_by_cid(cid);

	if (v)
		v->waker = w;
}

void ep_sibling_wake(uint64_t cid)
{
	struct sibling_vm *v = vm_by_cid(cid);

	if (v)
		ep_wake(v->waker);
}

void ep_sibling_set_running(uint64_t cid, bool running)
{
	struct sibling_vm *v = vm_by_cid(cid);

	if (v)
		__atomic_store_n(&v->running, running, __ATOMIC_RELAXED);
}

int ep_sibling_running(uint64_t cid)
{
	struct sibling_vm *v = vm_by_cid(cid);

	return v ? __atomic_load_n(&v->running, __ATOMIC_RELAXED) : -ENOENT;
}

bool ep_sibling_allowed(uint64_t src_cid, uint64_t dst_cid)
{
	struct sibling_vm *src, *dst;

	if (src_cid == dst_cid)
		return false;
	src = vm_by_cid(src_cid);
	dst = vm_by_cid(dst_cid);
	return src && dst && (src->groups & dst->groups) != 0;
}

struct rte_ring *ep_sibling_route(uint64_t src_cid, uint64_t dst_cid)
{
	struct sibling_vm *dst;

	if (!ep_sibling_allowed(src_cid, dst_cid))
		return NULL;
	dst = vm_by_cid(dst_cid);
	return __atomic_load_n(&dst->running, __ATOMIC_RELAXED) ? dst->incoming : NULL;
}
