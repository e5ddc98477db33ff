/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_DATAPATH_H
#define VSOCK_PMD_DATAPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/virtio_vsock.h>

#include <vsock_pmd.h>

#include "virtq_common.h"

struct conn_table;

/* virtio-vsock queue indices as QEMU hands them to a vhost-user backend. */
#define VSOCK_VQ_RX 0	/* host -> guest */
#define VSOCK_VQ_TX 1	/* guest -> host */
#define VSOCK_NR_VQ 2

/** Counters of one device, written by its worker lcore only. */
struct dp_stats {
	uint64_t guest_notifications[VSOCK_NR_VQ];	/* interrupts sent to the guest */
	uint64_t bursts[VSOCK_NR_VQ];	/* bursts that moved at least one packet */
	uint64_t short_packets;		/* tx chains shorter than a vsock header */
	uint64_t small_rx_buffers;	/* rx buffers too small for a header, returned empty */
	uint64_t tx_backpressure;	/* bursts cut short: the connections could not take more */
	uint64_t rx_ring_full;		/* rounds with data owed and no guest rx buffer */
	uint64_t budget_cuts[VSOCK_NR_VQ];	/* bursts cut at the round's byte budget */
	/*
	 * --wait-mode notify/adaptive: guest kicks the sleeping worker drained from kick_fd
	 * (in poll mode the control side drains and counts them, in its own counter).
	 */
	uint64_t kicks[VSOCK_NR_VQ];
	/* Bursts by packets moved, while dp_dev.record_bursts is on. */
	uint64_t burst_hist[VSOCK_NR_VQ][VSOCK_PMD_BURST_MAX + 1];
};

/**
 * What the poll of one device works on: the dataplane's part of a device, which the control
 * plane's device embeds. Owners, by field group: the worker polling the device writes its
 * state and counters; the control side sets the rest, either while no worker polls the
 * device (worker_attach() and worker_detach() order those writes against the worker) or,
 * for the live settings, at any time with relaxed stores.
 */
struct dp_dev {
	/*
	 * The worker's while the device is attached to it; the control side loads them
	 * (and reads the final ring positions) while it is not.
	 */
	struct virtq vq[VSOCK_NR_VQ];
	struct conn_table *conns;
	/* Live settings, stored by the control side at any time, read with relaxed loads. */
	unsigned int burst;
	bool record_bursts;
	/* The worker's; the control side clears notify_pending and broken_reported on load. */
	bool notify_pending[VSOCK_NR_VQ];
	bool broken_reported[VSOCK_NR_VQ];
	bool poll_busy;		/* the last poll did some work */
	bool rx_only;		/* the last busy poll gave the guest packets, took none */
	uint16_t rx_ask;		/* rx chains a round asks for first: last round's + 1 */
	uint16_t tx_ask;		/* most tx chains a burst takes: fewer after a byte cut */
	/*
	 * The tx packet the connections took in part (conn_from_guest_partial()): its chain's
	 * head, and the header copy they counted it by, which the next burst passes again
	 * instead of a second copy of the guest's buffer.
	 */
	uint16_t tx_partial_head;
	struct virtio_vsock_hdr tx_partial_hdr;
	/*
	 * Its worker's: the device's host sockets are in the worker's set (else the poll asks
	 * the kernel itself), and that set said they have events not yet taken.
	 */
	bool host_watched;
	bool host_ready;
	/* Its worker's: this round reads the one socket connection unasked (conn_probe_host()). */
	bool host_probe;
	/*
	 * Its worker's: the device is cold (polled only on news, its kicks asked for,
	 * worker.c), whether it may be, its place in the worker's list of hot devices while it is not, and the
	 * last round it did work.
	 */
	bool cold;
	bool kicks_watched;	/* its kick eventfds are in the worker's set of news */
	uint16_t hot_slot;
	uint64_t busy_tsc;
	uint64_t answer_tsc;	/* its host look waits for the guest's answer until then */
	uint64_t host_epoll_tsc;	/* last socket readiness check */
	uint64_t host_epoll_interval;	/* TSC cycles between checks while busy */
	/*
	 * Set by the control side while no worker polls the device: the vhost device the poll
	 * signals the guest through (-1 while no frontend drives it), our dup of each ring's
	 * kick eventfd (or -1; read by the sleeping worker in notify and adaptive modes, by
	 * the control side in poll mode), and the VM's CID for the log.
	 */
	int vid;
	int kick_fd[VSOCK_NR_VQ];
	uint64_t cid;
	struct dp_stats stats;
};

/** Longest a busy device goes without asking the kernel which host sockets are ready. */
#define DP_HOST_EPOLL_BUSY_US 20

/** Host socket events served per device per round: keeps one busy VM from starving the others. */
#define DP_HOST_POLL_BUDGET 64

/** Pieces of the buffers handed to the connections at once: a tx run, an rx span. */
#define DP_IOV 1024

/**
 * Per-lcore scratch space for one poll: the chains of one burst, the tx headers copied out,
 * and the pieces of the chains handed to the connections at once (one half at a time).
 */
struct dp_scratch {
	struct virtq_chain chains[VSOCK_PMD_BURST_MAX];
	struct virtio_vsock_hdr hdrs[VSOCK_PMD_BURST_MAX];
	bool hdr_ok[VSOCK_PMD_BURST_MAX];	/* the chain holds a whole header */
	unsigned int iov_cnt[VSOCK_PMD_BURST_MAX];	/* pieces of each chain in iov */
	uint32_t cap[VSOCK_PMD_BURST_MAX];	/* rx: bytes each chain holds */
	uint32_t len[VSOCK_PMD_BURST_MAX];	/* rx: bytes written into each */
	struct iovec iov[DP_IOV];
};

/**
 * One round of work for one device on its worker lcore: a burst from the tx
 * ring into the connections, the host sockets, then a burst of packets owed
 * to the guest into the rx ring. Leaves no completion unpublished.
 *
 * @return how much work was done; 0 means the device was idle.
 */
unsigned int dp_dev_poll(struct dp_dev *dev, struct dp_scratch *s);

/**
 * --wait-mode notify or adaptive, before the worker sleeps: ask the guest to kick the tx ring
 * (and the rx ring if data waits for buffers), then look at the rings once more.
 *
 * @return true if work arrived meanwhile: do not sleep. Either way, call
 *   dp_dev_kicks_disarm() before the next poll.
 */
bool dp_dev_kicks_arm(struct dp_dev *dev);

/**
 * Whether @p dev, idle, wants its host sockets asked for events at the next round: it has
 * socket connections, whose bytes should not wait. Without any (its listener alone, native
 * and guest-to-guest pipes), every DP_HOST_EPOLL_BUSY_US is soon enough: a connect waits
 * that long at most, and an idle round saves a syscall.
 */
bool dp_dev_host_prompt(const struct dp_dev *dev);

/**
 * Whether @p dev, idle, can have its host sockets looked at by a read rather than an
 * epoll_wait: it has one socket connection, which dp_dev_poll() reads while host_probe is
 * set. What else its sockets say (listener, hang-ups, the writable side) waits for the next
 * epoll_wait, DP_HOST_EPOLL_BUSY_US at most.
 */
bool dp_dev_host_probe_ok(const struct dp_dev *dev);

/** Polling again: the guest need not kick us. */
void dp_dev_kicks_disarm(struct dp_dev *dev);

/**
 * Whether @p dev, idle, may stop being polled every round: nothing of its own to do (no
 * timer, no pipe, nothing pending), and the guest asked to kick each ring a buffer would
 * give work to (dp_dev_kicks_arm(), which found none meanwhile). On false its kicks are
 * off again.
 */
bool dp_dev_cool(struct dp_dev *dev);

/** Whether a cold @p dev has news its kicks and host sockets do not announce (a sweep). */
bool dp_dev_news(struct dp_dev *dev);

/**
 * A device created with no frontend: @p burst packets per burst, nothing polled yet.
 * Called once, before the device is first attached to a worker.
 */
void dp_dev_init(struct dp_dev *dev, uint64_t cid, unsigned int burst);

#endif /* VSOCK_PMD_DATAPATH_H */
