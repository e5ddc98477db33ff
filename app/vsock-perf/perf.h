/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-perf: the benchmark of dpdk-vsock-app (doc/performance.md).
 *
 * One process plays the guest (the userspace frontend and its vfe_guest driver, polling)
 * and the host programs (Unix sockets), on one CPU; the app's worker lcore has the other.
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

#endif /* APP_VSOCK_PERF_PERF_H */
