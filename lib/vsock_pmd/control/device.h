/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DEVICE_H
#define VSOCK_PMD_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <vsock_pmd.h>

#include "guest_mem.h"
#include "virtq_common.h"

struct conn_table;
struct rte_mempool;
struct rte_vhost_memory;
struct worker;

/* virtio-vsock queue indices as QEMU hands them to a vhost-user backend. */
#define VSOCK_VQ_RX 0	/* host -> guest */
#define VSOCK_VQ_TX 1	/* guest -> host */
#define VSOCK_NR_VQ 2

/** Counters of one device, written by its worker lcore only. */
struct vsock_dev_stats {
	uint64_t guest_notifications[VSOCK_NR_VQ];	/* interrupts sent to the guest */
	uint64_t bursts[VSOCK_NR_VQ];	/* bursts that moved at least one packet */
	uint64_t short_packets;		/* tx chains shorter than a vsock header */
	uint64_t small_rx_buffers;	/* rx buffers too small for a header, returned empty */
	uint64_t tx_backpressure;	/* bursts cut short: the connections could not take more */
	uint64_t rx_ring_full;		/* rounds with data owed and no guest rx buffer */
	/* Bursts by packets moved, while vsock_dev.record_bursts is on. */
	uint64_t burst_hist[VSOCK_NR_VQ][VSOCK_PMD_BURST_MAX + 1];
};

/** What the control side keeps for a device across frontends (stats.c, under the device lock). */
struct vsock_dev_history {
	struct virtq_stats vq[VSOCK_NR_VQ];	/* ring counters of earlier attachments */
	uint64_t kicks[VSOCK_NR_VQ];		/* guest kicks drained from kick_fd */
	int kick_fd[VSOCK_NR_VQ];		/* our dup of each ring's kick eventfd, or -1 */
};

/** One VM's vhost-user device: its configuration and its current frontend connection. */
struct vsock_dev {
	/* Datapath state: the worker's while the device is attached to it. */
	struct virtq vq[VSOCK_NR_VQ];
	struct conn_table *conns;
	/* Set by the control side at any time: the worker reads them with relaxed loads. */
	unsigned int burst;
	bool record_bursts;
	bool notify_pending[VSOCK_NR_VQ];
	bool broken_reported[VSOCK_NR_VQ];
	bool rings_busy;		/* the last poll did some work */
	bool rx_filled_all;		/* the last rx burst filled every chain it asked for */
	uint64_t host_epoll_tsc;	/* last socket readiness check */
	uint64_t host_epoll_interval;	/* TSC cycles between checks while busy */
	/* --wait-mode notify/adaptive: our dup of each ring's kick eventfd (the worker sleeps on it). */
	int kick_fd[VSOCK_NR_VQ];
	struct vsock_dev_stats stats;

	struct vsock_pmd_vm_conf conf;
	bool registered;	/* rte_vhost_driver_register() succeeded */
	int listen_fd;		/* hybrid vsock listener on conf.uds_path, -1 if none */
	struct guest_mem gmem;

	/* Control state, under the device table lock. */
	int vid;		/* -1 while no frontend is connected */
	bool running;		/* between new_device and destroy_device */
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

/** Register and start every VM's vhost-user socket; on failure nothing is left registered. */
int vsock_devs_create(const struct vsock_pmd_conf *conf);

/** Detach every guest and unregister (and so remove) every socket. */
void vsock_devs_destroy(void);

/**
 * The device table as the control side (stats, console) sees it: hold vsock_devs_lock()
 * around vsock_devs_count() and vsock_dev_at() and every use of the device's control state.
 */
void vsock_devs_lock(void);
void vsock_devs_unlock(void);
unsigned int vsock_devs_count(void);
struct vsock_dev *vsock_dev_at(unsigned int i);

/** Payload mbufs of every pool, and how many are out of the pools (caches count as free). */
void vsock_devs_mbufs(uint64_t *total, uint64_t *in_use);

/** Append the payload mempools to @p mem->pools, with their bytes (caller holds the lock). */
void vsock_devs_pools(struct vsock_pmd_memory *mem);

#endif /* VSOCK_PMD_DEVICE_H */
