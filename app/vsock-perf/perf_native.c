/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host end of vsock-perf: the accelerator runs in this process
 * (include/vsock_pmd_native.h), its worker on lcore 1 (CPU 1), and the benchmark's thread,
 * the main lcore on CPU 0, plays the guest through the userspace frontend and the host
 * program through the native API. This file owns the EAL, the engine's start and stop and
 * the host program's mempool; the data path is in perf_conn.c beside the socket one, the
 * counters in perf_probe.c beside telemetry's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>

#include "perf_native.h"

int perf_native_init(struct perf_native *n)
{
	char prefix[48];
	/* What the tests give the app: no hugepages, no devices, worker lcore 1. */
	char *eal[] = { "vsock-perf", "--no-huge", "-m", "512", "--no-pci", "--no-shconf",
			"--no-telemetry", "-l", "0-1", prefix, "--log-level=lib.eal:error",
			"--log-level=lib.vhost.*:error", "--log-level=vsock:warning" };

	snprintf(prefix, sizeof(prefix), "--file-prefix=vsock-perf-%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0)
		return -rte_errno;
	/*
	 * Cached per lcore: the worker frees on lcore 1 what the program allocates on 0. A
	 * stack, not a ring: what the program fills next is what came back last, still in
	 * cache, where a FIFO would cycle through all of its 37 MiB before it reused an mbuf
	 * (doc/performance.md, the native host end). The ring where no stack driver is loaded.
	 */
	n->pool = rte_pktmbuf_pool_create_by_ops("perf_host", PERF_NATIVE_MBUFS, 256, 0,
						 RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id(),
						 "stack");
	if (n->pool == NULL)
		n->pool = rte_pktmbuf_pool_create("perf_host", PERF_NATIVE_MBUFS, 256, 0,
						  RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	snprintf(n->dir, sizeof(n->dir), "/tmp/vsock-perf-XXXXXX");
	if (n->pool == NULL || mkdtemp(n->dir) == NULL) {
		rte_eal_cleanup();
		return -ENOMEM;
	}
	return 0;
}

int perf_native_start(struct perf_native *n, uint64_t cid, unsigned int burst, bool per_entry,
		      bool notify, char *sock, size_t len)
{
	struct vsock_pmd_conf conf;
	int rc;

	vsock_pmd_conf_init(&conf);
	conf.burst = burst;
	conf.used_per_entry = per_entry;
	conf.wait_mode = notify ? VSOCK_PMD_WAIT_NOTIFY : VSOCK_PMD_WAIT_POLL;
	conf.nb_vms = 1;
	conf.vms[0].cid = cid;
	snprintf(conf.vms[0].socket_path, sizeof(conf.vms[0].socket_path), "%s/vm.sock", n->dir);
	snprintf(conf.vms[0].uds_path, sizeof(conf.vms[0].uds_path), "%s/vm.vsock", n->dir);
	snprintf(sock, len, "%s", conf.vms[0].socket_path);
	rc = vsock_pmd_start(&conf);
	if (rc < 0)
		return rc;
	n->running = true;
	rc = vsock_pmd_set_record_core_cycles(true);
	if (rc < 0)
		perf_native_stop(n);
	return rc;
}

unsigned int perf_native_stop(struct perf_native *n)
{
	if (n->running)
		vsock_pmd_stop();
	n->running = false;
	if (n->pool == NULL)
		return 0;
	/* Everything the program sent was copied to the guest or dropped with its connection. */
	return PERF_NATIVE_MBUFS - rte_mempool_avail_count(n->pool);
}

void perf_native_fini(struct perf_native *n)
{
	perf_native_stop(n);
	rte_mempool_free(n->pool);
	n->pool = NULL;
	rte_eal_cleanup();
	rmdir(n->dir);
}
