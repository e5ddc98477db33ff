/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start and stop the accelerator, the composition root: workers first up, last down; the
 * devices placed on them; the endpoints every connection table routes through; then the
 * devices, their vhost-user sockets, and the poll of the host sockets of devices no worker
 * polls.
 */
#include <errno.h>
#include <string.h>

#include <rte_lcore.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

#include "api.h"
#include "detached_host_poll.h"
#include "device.h"
#include "ep_native.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "log.h"
#include "native_proc.h"
#include "vhost_user.h"
#include "worker.h"

static bool started;

void vsock_pmd_conf_init(struct vsock_pmd_conf *conf)
{
	*conf = (struct vsock_pmd_conf){
		.burst = VSOCK_PMD_BURST_DEFAULT,
		.mbufs_per_vm = VSOCK_PMD_MBUFS_DEFAULT,
	};
}

/* A limit left at 0 takes its default (vsock_pmd.h); any other must be in its range. */
static bool vm_limits_valid(const struct vsock_pmd_vm_conf *vm)
{
	return (!vm->tx_buffer_size || (vm->tx_buffer_size >= VSOCK_PMD_TX_BUFFER_MIN &&
					vm->tx_buffer_size <= VSOCK_PMD_TX_BUFFER_MAX)) &&
	       vm->queue_size <= VSOCK_PMD_QUEUE_SIZE_MAX &&
	       vm->max_conns <= VSOCK_PMD_MAX_CONNS_MAX &&
	       vm->max_pipes <= VSOCK_PMD_MAX_PIPES_MAX &&
	       vm->line_timeout_ms <= VSOCK_PMD_TIMEOUT_MS_MAX &&
	       vm->connect_timeout_ms <= VSOCK_PMD_TIMEOUT_MS_MAX;
}

/*
 * The pipes, before the connection tables: guest-to-guest routing (its incoming rte_rings
 * on each VM's node) and the native API (on the main lcore's). The pool holds every VM's
 * share, the incoming rte_rings room for the whole pool.
 */
static int endpoints_open(const struct vsock_pmd_conf *conf, const int *nodes)
{
	uint32_t shares[VSOCK_PMD_MAX_VMS];
	unsigned int i, pipes = 0;
	int rc;

	for (i = 0; i < conf->nb_vms; i++) {
		shares[i] = vm_max_pipes(&conf->vms[i], conf->nb_vms);
		pipes += shares[i];
	}
	rc = ep_sibling_setup(conf, nodes, pipes);
	if (rc == 0)
		rc = ep_pipe_pool_init(shares, conf->nb_vms, VSOCK_NATIVE_RING_SIZE,
				       (int)rte_socket_id());
	if (rc < 0)
		VSOCK_LOG(ERR, "cannot create the pool of %u pipe connections (the VMs' "
			  "max-pipes): %s", pipes, strerror(-rc));
	if (rc == 0)
		rc = ep_native_init((int)rte_socket_id());
	return rc;
}

/* Once the tables released their pipes: listeners' queued guests go, then the routes. */
static void endpoints_close(void)
{
	ep_native_fini();
	ep_pipe_pool_fini();
	ep_sibling_fini();
}

/* Everything vsock_devs_place() and after made, in reverse; harmless for what was not. */
static void devs_teardown(void)
{
	detached_host_poll_stop();
	vsock_vhost_stop();
	vsock_devs_destroy();
	endpoints_close();
	vsock_devs_pools_free();
}

int vsock_pmd_start(const struct vsock_pmd_conf *conf)
{
	int nodes[VSOCK_PMD_MAX_VMS];
	char err[512];
	unsigned int i;
	int rc;

	if (started)
		return -EALREADY;
	if (conf->nb_vms == 0 || conf->nb_vms > VSOCK_PMD_MAX_VMS ||
	    conf->burst < 1 || conf->burst > VSOCK_PMD_BURST_MAX ||
	    conf->mbufs_per_vm < VSOCK_PMD_MBUFS_MIN || conf->mbufs_per_vm > VSOCK_PMD_MBUFS_MAX ||
	    conf->idle_us > VSOCK_PMD_IDLE_US_MAX)
		return -EINVAL;
	for (i = 0; i < conf->nb_vms; i++) {
		if (!vm_limits_valid(&conf->vms[i]))
			return -EINVAL;
	}
	if (rte_lcore_id() != rte_get_main_lcore())
		return -EPERM;
	rc = vsock_pmd_conf_check_paths(conf, err, sizeof(err));
	if (rc < 0) {
		VSOCK_LOG(ERR, "%s", err);
		return rc;
	}

	/* Workers run before any device exists, so every new_device finds one to hand over to. */
	rc = workers_start();
	if (rc < 0)
		return rc;
	/* Secondaries may attach as soon as the devices open the API: be ready for them. */
	rc = native_proc_start();
	/* Before any waker is handed out (worker_waker()): the tables keep theirs. */
	workers_set_wait_mode(conf->wait_mode, conf->idle_us);
	if (rc == 0)
		rc = vsock_devs_place(conf, nodes);
	if (rc == 0)
		rc = endpoints_open(conf, nodes);
	if (rc == 0)
		rc = vsock_devs_create(conf);
	if (rc == 0)
		rc = vsock_vhost_start();
	if (rc < 0) {
		devs_teardown();
		native_proc_stop();
		workers_stop();
		return rc;
	}
	/* Every table is ready: host programs may connect before any frontend does. */
	detached_host_poll_start();
	vsock_api_open(conf->burst);
	vsock_telemetry_register();
	started = true;
	return 0;
}

void vsock_pmd_stop(void)
{
	if (!started)
		return;
	/* Operators' calls first: none may still read a device being destroyed. */
	vsock_api_close();
	/* No secondary is reaped while the API's tables go away under it. */
	native_proc_stop();
	devs_teardown();
	workers_stop();
	started = false;
}
