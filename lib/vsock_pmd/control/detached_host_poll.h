/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DETACHED_HOST_POLL_H
#define VSOCK_PMD_DETACHED_HOST_POLL_H

/*
 * The host sockets of the devices no worker polls, served every DETACHED_HOST_POLL_US on
 * the EAL alarm thread (detached_host_poll.c says why there).
 */

/** How often the host sockets of a device off its worker are served. */
#define DETACHED_HOST_POLL_US (20 * 1000)

/**
 * Once every device's table is ready: allow the poll and arm it. Takes the device lock.
 */
void detached_host_poll_start(void);

/**
 * A device just left its worker (or may have): serve it on the alarm thread, unless the poll
 * is due already or stopping. Device lock held.
 */
void detached_host_poll_arm(void);

/**
 * Before the devices go: no poll may serve a table from here on, and one that runs is waited
 * for. Device lock NOT held (the poll takes it).
 */
void detached_host_poll_stop(void);

#endif /* VSOCK_PMD_DETACHED_HOST_POLL_H */
