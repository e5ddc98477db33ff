/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_H
#define VSOCK_PMD_H

/**
 * dpdk-vsock: a poll-mode vhost-user backend for virtio-vsock.
 *
 * A program initialises the EAL, fills a struct vsock_pmd_conf and calls
 * vsock_pmd_start() on the main lcore. Every worker lcore of the EAL core
 * list then polls the virtqueues of the devices assigned to it; the main
 * lcore stays free for control work. vsock_pmd_stop() undoes everything.
 */

#include <stdint.h>
#include <sys/un.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most vhost-user devices (VMs) one process serves. */
#define VSOCK_PMD_MAX_VMS 64
/** Packets handled per virtqueue per poll, as testpmd's "set burst". */
#define VSOCK_PMD_BURST_DEFAULT 32
#define VSOCK_PMD_BURST_MAX 512

/** Longest usable Unix socket path, without the terminating NUL. */
#define VSOCK_PMD_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/** One VM: its context ID and where its sockets live. */
struct vsock_pmd_vm_conf {
	/** The guest's CID, returned by VHOST_USER_GET_CONFIG. */
	uint64_t cid;
	/** vhost-user socket QEMU connects to (the app is the server). */
	char socket_path[VSOCK_PMD_PATH_MAX + 1];
	/** Hybrid vsock Unix socket (Firecracker convention). */
	char uds_path[VSOCK_PMD_PATH_MAX + 1];
};

/** Everything vsock_pmd_start() needs. */
struct vsock_pmd_conf {
	/** Packets per virtqueue per poll, 1..VSOCK_PMD_BURST_MAX. */
	unsigned int burst;
	unsigned int nb_vms;
	struct vsock_pmd_vm_conf vms[VSOCK_PMD_MAX_VMS];
};

/** Fill @p conf with the defaults: no VM, burst VSOCK_PMD_BURST_DEFAULT. */
void vsock_pmd_conf_init(struct vsock_pmd_conf *conf);

/**
 * Register every VM's vhost-user socket and start polling on all worker
 * lcores. Call once, on the main lcore, after rte_eal_init().
 *
 * @return 0, or a negative errno value; on failure nothing is left behind
 *   (no socket file, no lcore running).
 */
int vsock_pmd_start(const struct vsock_pmd_conf *conf);

/**
 * Detach every guest, stop the worker lcores and remove the sockets.
 * Safe to call when vsock_pmd_start() failed or was never called.
 */
void vsock_pmd_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_PMD_H */
