/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host end's engine (perf_native.c): the accelerator in this process, its
 * worker on lcore 1, the host program on the main lcore with the native API.
 */
#ifndef APP_VSOCK_PERF_PERF_NATIVE_H
#define APP_VSOCK_PERF_PERF_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rte_mempool;

/** Host program's mbufs (2 KiB of data each). */
#define PERF_NATIVE_MBUFS 16383u

struct perf_native {
	struct rte_mempool *pool;	/* the host program's mbufs */
	char dir[64];			/* the engine's sockets (and perf's output) */
	bool running;			/* between vsock_pmd_start() and vsock_pmd_stop() */
};

/** rte_eal_init() for lcores 0-1 without hugepages, the host mempool, a run directory. */
int perf_native_init(struct perf_native *n);
/** vsock_pmd_start() with VM @p cid; its vhost-user socket path in @p sock. 0 or -errno. */
int perf_native_start(struct perf_native *n, uint64_t cid, unsigned int burst, bool per_entry,
		      bool notify, char *sock, size_t len);
/** vsock_pmd_stop(); returns the host mbufs not back in their pool (0: none lost). */
unsigned int perf_native_stop(struct perf_native *n);
void perf_native_fini(struct perf_native *n);

#endif /* APP_VSOCK_PERF_PERF_NATIVE_H */
