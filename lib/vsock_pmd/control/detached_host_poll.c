/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host programs still connect to a VM that no worker polls (booting, rebooting, QEMU
 * gone). Its connection table is then the control side's, under the device lock: the
 * worker handshake hands it to the worker at new_device and back at destroy_device (and
 * around a memory table change). So the EAL alarm thread serves it here, slowly, and the
 * workers' loop stays as it is; the table refuses what needs a guest
 * (conn_table_set_guest()), so a CONNECT line gets its close at once and an unfinished one
 * its timeout. A worker could serve these tables as well, but only with a second, slower
 * list in its loop and the table reset moved onto its lcore, for a case off the datapath.
 */
#include <stdbool.h>
#include <string.h>

#include <rte_alarm.h>
#include <rte_common.h>
#include <rte_cycles.h>

#include "conn.h"
#include "datapath.h"
#include "detached_host_poll.h"
#include "device.h"
#include "log.h"

/* The poll is due (armed), or must not be armed again (stopping). Under the device lock. */
static bool armed;
static bool stopping;

/* Whether no worker polls @p dev: no frontend drives it, or its rings are being replaced. */
static bool vsock_dev_off_worker(const struct vsock_dev *dev)
{
	return !dev->running || dev->remapping;
}

static void detached_host_poll(void *arg __rte_unused)
{
	bool again = false;
	unsigned int i;

	vsock_devs_lock();
	armed = false;
	for (i = 0; i < vsock_devs_count(); i++) {
		struct vsock_dev *dev = vsock_dev_at(i);

		if (!dev->dp.conns || !vsock_dev_off_worker(dev))
			continue;
		conn_poll_host(dev->dp.conns, rte_get_tsc_cycles(), DP_HOST_POLL_BUDGET);
		again = true;
	}
	if (again)
		detached_host_poll_arm();
	vsock_devs_unlock();
}

void detached_host_poll_arm(void)
{
	int rc;

	if (armed || stopping)
		return;
	rc = rte_eal_alarm_set(DETACHED_HOST_POLL_US, detached_host_poll, NULL);
	if (rc < 0)
		VSOCK_LOG(ERR, "cannot serve host sockets of detached VMs: %s", strerror(-rc));
	else
		armed = true;
}

void detached_host_poll_start(void)
{
	vsock_devs_lock();
	stopping = false;
	detached_host_poll_arm();
	vsock_devs_unlock();
}

void detached_host_poll_stop(void)
{
	vsock_devs_lock();
	stopping = true;
	vsock_devs_unlock();
	/* Cancelling waits for a poll that runs: not under the device lock, which it takes. */
	rte_eal_alarm_cancel(detached_host_poll, (void *)-1);
	vsock_devs_lock();
	armed = false;
	vsock_devs_unlock();
}
