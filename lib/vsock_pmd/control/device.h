/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DEVICE_H
#define VSOCK_PMD_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <vsock_pmd.h>

#include "datapath.h"
#include "guest_mem.h"
#include "virtq_common.h"

struct rte_mempool;
struct rte_vhost_memory;
struct worker;

/** What the control side keeps for a device across frontends, under the device lock. */
struct vsock_dev_history {
	struct virtq_stats vq[VSOCK_NR_VQ];	/* ring counters of earlier attachments */
	/*
	 * Poll mode: guest kicks the control side drained from dp.kick_fd (in notify and
	 * adaptive modes the worker drains them, into dp.stats.kicks).
	 */
	uint64_t kicks[VSOCK_NR_VQ];
};

/** One VM's vhost-user device: its configuration and its current frontend connection. */
struct vsock_dev {
	/* What the poll works on, and who writes it when: struct dp_dev (datapath.h). */
	struct dp_dev dp;

	struct vsock_pmd_vm_conf conf;
	bool registered;	/* rte_vhost_driver_register() succeeded */
	int listen_fd;		/* hybrid vsock listener on conf.uds_path, -1 if none */
	struct guest_mem gmem;

	/* Control state, under the device table lock (the frontend's vid is dp.vid). */
	bool running;		/* between new_device and destroy_device */
	/* vhost-user connections open, at most VSOCK_PMD_FRONTEND_CONNS (new_connection). */
	unsigned int frontend_conns;
	/*
	 * The frontend is changing the memory table or a ring of the running device: the
	 * worker is off it until its rings load again (post_msg_handle).
	 */
	bool remapping;
	bool rebase[VSOCK_NR_VQ];	/* SET_VRING_BASE while running: take the new position */
	uint64_t features;
	struct rte_vhost_memory *mem;
	/* Placed by vsock_devs_create() for the life of the process; polls it while running. */
	struct worker *worker;
	int numa_node;		/* of that worker's lcore: the device's memory and mbufs */
	struct vsock_dev_history history;
};

/**
 * Place every VM on a worker lcore for the life of the process and create the payload pools,
 * empty; @p nodes gets each VM's NUMA node (by its index in @p conf).
 */
int vsock_devs_place(const struct vsock_pmd_conf *conf, int *nodes);

/**
 * Create every VM's device, its hybrid vsock listener and connection table, then fill the
 * pools. After vsock_devs_place() and the endpoints' setup (the tables route through them);
 * before vsock_vhost_start(). On failure call vsock_devs_destroy().
 */
int vsock_devs_create(const struct vsock_pmd_conf *conf);

/** The pipes VM @p vm of @p nb_vms may hold: its max_pipes, or the default share. */
uint32_t vm_max_pipes(const struct vsock_pmd_vm_conf *vm, unsigned int nb_vms);

/**
 * Close every device's listener and connection table and free every device: after
 * vsock_vhost_stop(), which detached every guest.
 */
void vsock_devs_destroy(void);

/** Free the payload pools: after the endpoints' teardown, which frees the mbufs they hold. */
void vsock_devs_pools_free(void);

/**
 * The device table as the control side (stats, console) sees it: hold vsock_devs_lock()
 * around vsock_devs_count() and vsock_dev_at() and every use of the device's control state.
 */
void vsock_devs_lock(void);
void vsock_devs_unlock(void);
unsigned int vsock_devs_count(void);
struct vsock_dev *vsock_dev_at(unsigned int i);

/**
 * Poll mode: count the guest kicks waiting in @p dev's kick eventfds into its history (in
 * notify and adaptive modes the worker counts them). Device lock held.
 */
void vsock_dev_kicks_drain(struct vsock_dev *dev);

/**
 * Map the frontend's memory table and rings into @p dev's virtqueues, each checked to lie in
 * guest memory. @p resume keeps the ring positions the worker reached (memory table or ring
 * replaced under a running device) unless SET_VRING_BASE gave a new one (dev->rebase);
 * otherwise they come from SET_VRING_BASE. Device lock held, no worker polling @p dev.
 * @return 0, or a negative errno, logged.
 */
int vsock_dev_load_rings(struct vsock_dev *dev, bool resume);

/**
 * No worker polls @p dev any more (or its rings are about to be set up again): fold the ring
 * counters into its history, count the kicks and close the kick eventfds. Harmless when
 * repeated. Device lock held.
 */
void vsock_dev_rings_detached(struct vsock_dev *dev);

/** Payload mbufs of every pool, and how many are out of the pools (caches count as free). */
void vsock_devs_mbufs(uint64_t *total, uint64_t *in_use);

/** Append the payload mempools to @p mem->pools, with their bytes (caller holds the lock). */
void vsock_devs_pools(struct vsock_pmd_memory *mem);

#endif /* VSOCK_PMD_DEVICE_H */
