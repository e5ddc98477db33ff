/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf: the benchmark of dpdk-vsock (doc/performance.md).
 *
 * One process plays the guest (the userspace frontend and its vfe_guest driver, polling)
 * and the host programs (the app's Unix sockets, or the native API of the engine running
 * in this process), on one CPU; the backend's worker lcore has the other.
 * Shared between the measurement files.
 */
#ifndef APP_VSOCK_PERF_PERF_H
#define APP_VSOCK_PERF_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bytes of the reference pattern before it repeats (a prime: no power-of-two alias). */
#define PERF_PAT_PERIOD 1048573u
/** Longest contiguous run read from the pattern at any offset. */
#define PERF_PAT_RUN 65536u

/** The pattern, PERF_PAT_PERIOD + PERF_PAT_RUN bytes: byte k is pattern[k % PERIOD]. */
extern uint8_t *perf_pat;

void perf_pat_init(void);

/** The next @p len stream bytes at stream offset @p off: a pointer into perf_pat. */
static inline const uint8_t *perf_pat_at(uint64_t off)
{
	return perf_pat + off % PERF_PAT_PERIOD;
}

/**
 * Position-dependent checksum of a byte stream (Fletcher-style over 64-bit words), fed in
 * chunks of any size: the same bytes give the same sum however they were cut.
 */
struct perf_csum {
	uint64_t s1, s2;
	uint64_t carry;
	unsigned int carry_n;
	uint64_t bytes;
};

void perf_csum_init(struct perf_csum *c);
void perf_csum_add(struct perf_csum *c, const void *buf, size_t len);
/** The final value (the partial word and the length folded in). */
uint64_t perf_csum_value(const struct perf_csum *c);

uint64_t perf_now_ns(void);
/** Pin the calling thread to @p cpu; 0 or -errno. */
int perf_pin(int cpu);

/* Reference limits, measured with the app not running (its worker would share CPU 1). */

/** Single-core memcpy of @p payload-byte blocks over a ring-sized working set: Gbit/s. */
double perf_ref_memcpy_gbps(uint32_t payload, double secs);
/** Cache line bounced between CPU 0 and CPU 1: nanoseconds per round trip. */
double perf_ref_cacheline_rtt_ns(unsigned int rounds);
/** Unix stream socket, writer on CPU 0 (@p payload-byte writes), reader on CPU 1: Gbit/s. */
double perf_ref_unix_gbps(uint32_t payload, double secs);

/**
 * Unix stream socket ping-pong between two processes (CPU 0 and CPU 1), both spinning on
 * non-blocking sockets: median round trip of @p payload bytes each way, microseconds.
 * The floor of the app's rr case, whose host end makes the same two syscalls.
 */
double perf_ref_unix_rtt_us(uint32_t payload, unsigned int rounds);

/* The backend's counters over a measured window, however they are read. */
struct perf_counters {
	uint64_t vq_pkts;	/* used entries, both rings */
	uint64_t idx, irq, kicks;	/* used->idx stores, guest interrupts, guest kicks */
	uint64_t busy_cycles, cycles_pkts;	/* the worker's busy rounds, what they moved */
	uint64_t busy_rounds;	/* the worker's rounds that moved something */
	uint64_t from_guest, to_guest;	/* vsock packets */
	bool ok;		/* every counter was read */
};

/*
 * The native host end (perf_native.c): the accelerator in this process, its worker on
 * lcore 1, the host program on the main lcore with the native API.
 */

/** Host program's mbufs (2 KiB of data each). */
#define PERF_NATIVE_MBUFS 16383u

/** rte_eal_init() for lcores 0-1 without hugepages, the host mempool, a run directory. */
int perf_native_init(void);
struct rte_mempool *perf_native_pool(void);
/** vsock_pmd_start() with VM @p cid; its vhost-user socket path in @p sock. 0 or -errno. */
int perf_native_start(uint64_t cid, unsigned int burst, bool per_entry, bool notify,
		      char *sock, size_t len);
/** vsock_pmd_stop(); returns the host mbufs not back in their pool (0: none lost). */
unsigned int perf_native_stop(void);
/** The counters of VM @p cid and of the worker, from the public statistics API. */
void perf_native_counters(uint64_t cid, struct perf_counters *c);
/** Where the engine's sockets (and perf's output) go. */
const char *perf_native_dir(void);
void perf_native_fini(void);

#endif /* APP_VSOCK_PERF_PERF_H */
