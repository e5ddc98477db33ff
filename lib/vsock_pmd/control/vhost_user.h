/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_VHOST_USER_H
#define VSOCK_PMD_VHOST_USER_H

/* librte_vhost's side of the devices (vhost_user.c): one vhost-user socket per VM. */

/**
 * Register and start every device's vhost-user socket, with its features, callbacks and
 * permissions: after vsock_devs_create(), so that no frontend comes before its device's
 * table and mbufs. On failure call vsock_vhost_stop(). @return 0 or a negative errno.
 */
int vsock_vhost_start(void);

/**
 * Unregister (and so remove) every device's socket: DPDK closes its connection, which takes
 * the device off its worker. Harmless for a device never registered. Device lock NOT held
 * (the callbacks take it).
 */
void vsock_vhost_stop(void);

#endif /* VSOCK_PMD_VHOST_USER_H */
