/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host end of vsock-perf: the accelerator runs in this process
 * (include/vsock_pmd_native.h), its worker on lcore 1 (CPU 1), and the benchmark's thread,
 * the main lcore on CPU 0, plays the guest through the userspace frontend and the host
 * program through the native API. This file owns the EAL, the engine's start and stop and
 * the host program's mempool; the data path is in perf_conn.c beside the socket one.
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

#include "perf.h"

static struct rte_mempool *pool;
static char dir[64];
static bool running;

int perf_native_init(void)
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
	pool = rte_pktmbuf_pool_create_by_ops("perf_host", PERF_NATIVE_MBUFS, 256, 0,
					      RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id(),
					      "stack");
	if (pool == NULL)
		pool = rte_pktmbuf_pool_create("perf_host", PERF_NATIVE_MBUFS, 256, 0,
					       RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	snprintf(dir, sizeof(dir), "/tmp/vsock-perf-XXXXXX");
	if (pool == NULL || mkdtemp(dir) == NULL) {
		rte_eal_cleanup();
		return -ENOMEM;
	}
	return 0;
}

struct rte_mempool *perf_native_pool(void)
{
	return pool;
}

int perf_native_start(uint64_t cid, unsigned int burst, bool per_entry, bool notify,
		      char *sock, size_t len)
{
	struct vsock_pmd_conf conf;
	int rc;

	vsock_pmd_conf_init(&conf);
	conf.burst = burst;
	conf.used_per_entry = per_entry;
	conf.wait_mode = notify ? VSOCK_PMD_WAIT_NOTIFY : VSOCK_PMD_WAIT_POLL;
	conf.nb_vms = 1;
	conf.vms[0].cid = cid;
	snprintf(conf.vms[0].socket_path, sizeof(conf.vms[0].socket_path), "%s/vm.sock", dir);
	snprintf(conf.vms[0].uds_path, sizeof(conf.vms[0].uds_path), "%s/vm.vsock", dir);
	snprintf(sock, len, "%s", conf.vms[0].socket_path);
	rc = vsock_pmd_start(&conf);
	if (rc < 0)
		return rc;
	running = true;
	rc = vsock_pmd_set_record_core_cycles(true);
	if (rc < 0)
		perf_native_stop();
	return rc;
}

unsigned int perf_native_stop(void)
{
	if (running)
		vsock_pmd_stop();
	running = false;
	if (pool == NULL)
		return 0;
	/* Everything the program sent was copied to the guest or dropped with its connection. */
	return PERF_NATIVE_MBUFS - rte_mempool_avail_count(pool);
}

void perf_native_counters(uint64_t cid, struct perf_counters *c)
{
	/* 8 KiB of burst histograms: not on the stack of a thread that may be small. */
	static struct vsock_pmd_vm_stats st;
	struct vsock_pmd_lcore_stats ls;
	unsigned int q;

	memset(c, 0, sizeof(*c));
	if (vsock_pmd_vm_stats_get(cid, &st) < 0)
		return;
	c->ok = true;
	for (q = 0; q < VSOCK_PMD_NB_QUEUES; q++) {
		c->vq_pkts += st.q[q].packets;
		c->idx += st.q[q].used_idx_flushes;
		c->irq += st.q[q].interrupts;
		c->kicks += st.q[q].kicks;
	}
	c->from_guest = st.from_guest_pkts;
	c->to_guest = st.to_guest_pkts;
	if (vsock_pmd_lcore_stats_get(0, &ls) == 0) {
		c->busy_cycles = ls.busy_cycles;
		c->cycles_pkts = ls.cycles_pkts;
		c->busy_rounds = ls.busy_polls;
	} else {
		c->ok = false;
	}
}

const char *perf_native_dir(void)
{
	return dir;
}

void perf_native_fini(void)
{
	char path[96];
	unsigned int i;

	perf_native_stop();
	rte_mempool_free(pool);
	pool = NULL;
	rte_eal_cleanup();
	/* What perf stat wrote there (perf_probe.c). */
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/perf-syscalls-%u.txt", dir, i);
		unlink(path);
	}
	rmdir(dir);
}
