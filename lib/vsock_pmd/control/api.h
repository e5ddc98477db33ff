/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_API_H
#define VSOCK_PMD_API_H

/**
 * The control API: statistics read (the device's totals across frontends are device.c's),
 * "clear" as a baseline subtracted on read (the workers' counters are never written here),
 * and the live settings (burst, pause, recording). It uses the device table, never the
 * other way round. The public functions are declared in vsock_pmd.h.
 */

#include <stdint.h>

/* The scalar counters of the public structs, by name: telemetry prints them, clear subtracts. */
#define VSOCK_VM_COUNTERS(X) \
	X(from_guest_pkts) X(from_guest_bytes) X(to_guest_pkts) X(to_guest_bytes) \
	X(host_read_bytes) X(host_written_bytes) X(conns_opened) X(conns_closed) \
	X(conns_reset) X(conns_refused) X(conns_table_full) X(pipes_refused) X(credit_stalls) \
	X(mempool_exhausted) X(tx_backpressure) X(rx_ring_full) X(rst_dropped) \
	X(short_packets) X(small_rx_buffers) X(errors_total)
#define VSOCK_QUEUE_COUNTERS(X) \
	X(packets) X(bursts) X(used_idx_flushes) X(interrupts) X(kicks) X(ring_errors) \
	X(budget_cuts)
#define VSOCK_LCORE_COUNTERS(X) \
	X(polls) X(busy_polls) X(lost_kicks) X(wakeups) X(cycles) X(busy_cycles) X(cycles_pkts)

/** Open the control API once the devices exist; @p burst is the configured burst size. */
void vsock_api_open(unsigned int burst);

/** Close it before the devices go: waits for the call in progress, later ones get -ENODEV. */
void vsock_api_close(void);

/** Register the /vsock/... telemetry commands (telemetry.c); once per process. */
void vsock_telemetry_register(void);

#endif /* VSOCK_PMD_API_H */
