/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DEVICE_H
#define VSOCK_PMD_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <vsock_pmd.h>

struct rte_vhost_memory;
struct worker;

/* virtio-vsock queue indices as QEMU hands them to a vhost-user backend. */
#define VSOCK_VQ_RX 0	/* host -> guest */
#define VSOCK_VQ_TX 1	/* guest -> host */
#define VSOCK_NR_VQ 2

/** One VM's vhost-user device: its configuration and its current frontend connection. */
struct vsock_dev {
	struct vsock_pmd_vm_conf conf;
	bool registered;	/* rte_vhost_driver_register() succeeded */

	/* Control state, under the device table lock. */
	int vid;		/* -1 while no frontend is connected */
	bool running;		/* between new_device and destroy_device */
	bool remapping;		/* SET_MEM_TABLE in progress: the worker is off the device */
	uint64_t features;
	struct rte_vhost_memory *mem;
	struct worker *worker;
	uint16_t last_avail[VSOCK_NR_VQ];
	uint16_t last_used[VSOCK_NR_VQ];
};

/** Register and start every VM's vhost-user socket; on failure nothing is left registered. */
int vsock_devs_create(const struct vsock_pmd_conf *conf);

/** Detach every guest and unregister (and so remove) every socket. */
void vsock_devs_destroy(void);

#endif /* VSOCK_PMD_DEVICE_H */
