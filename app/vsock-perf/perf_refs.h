/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every measurement of vsock-perf verifies against and stands beside (perf_refs.c):
 * the pattern of each stream, the clock, CPU pinning, and the reference
 * limits measured on this machine without the backend.
 */
#ifndef APP_VSOCK_PERF_PERF_REFS_H
#define APP_VSOCK_PERF_PERF_REFS_H

#include <stdint.h>

#include "perf_args.h"

/** Bytes of the reference pattern before it repeats (a prime: no power-of-two alias). */
#define PERF_PAT_PERIOD 1048573u
/** Longest contiguous run read from the pattern at any offset. */
#define PERF_PAT_RUN 65536u

/**
 * The pattern, PERF_PAT_PERIOD + PERF_PAT_RUN bytes: byte k is pattern[k % PERIOD]. NULL
 * without memory; free() it.
 */
uint8_t *perf_pat_new(void);

/** The next @p len stream bytes at stream offset @p off: a pointer into @p pat. */
static inline const uint8_t *perf_pat_at(const uint8_t *pat, uint64_t off)
{
	return pat + off % PERF_PAT_PERIOD;
}

uint64_t perf_now_ns(void);
/** Pin the calling thread to @p cpu; 0 or -errno. */
int perf_pin(int cpu);

/* Reference limits, measured with the app not running (its worker would share CPU 1). */

/** Single-core memcpy of @p payload-byte blocks over a ring-sized working set: Gbit/s. */
double perf_ref_memcpy_gbps(uint32_t payload, double secs);
/** Cache line bounced between CPU 0 and CPU 1: nanoseconds per round trip. */
double perf_ref_cacheline_rtt_ns(unsigned int rounds);
/**
 * Unix stream socket, writer on CPU 0 (@p payload-byte writes of @p pat), reader on CPU 1:
 * Gbit/s.
 */
double perf_ref_unix_gbps(const uint8_t *pat, uint32_t payload, double secs);

/**
 * Unix stream socket ping-pong between two processes (CPU 0 and CPU 1), both spinning on
 * non-blocking sockets: median round trip of @p payload bytes each way, microseconds.
 * The floor of the app's rr case, whose host end makes the same two syscalls.
 */
double perf_ref_unix_rtt_us(uint32_t payload, unsigned int rounds);

/* The reference figures (--refs): what the machine does without the backend. */
struct refs {
	double cl_rtt_ns;
	double unix_rtt_us[MAX_LIST];
	double memcpy_gbps[MAX_LIST];
	double unix_gbps[MAX_LIST];
};

/** Every reference of @p plan's payloads (briefly with --smoke); this thread ends on CPU 0. */
void perf_refs_measure(const struct plan *plan, const uint8_t *pat, struct refs *refs);

#endif /* APP_VSOCK_PERF_PERF_REFS_H */
