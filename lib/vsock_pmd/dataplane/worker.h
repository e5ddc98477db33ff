/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_WORKER_H
#define VSOCK_PMD_WORKER_H

#include <stdbool.h>
#include <stdint.h>

struct dp_dev;
struct worker;

/** Counters of one worker lcore, written by that lcore only. */
struct worker_stats {
	uint64_t polls;		/* rounds over its devices (not counted while paused) */
	uint64_t busy_polls;	/* rounds that found work */
	uint64_t lost_kicks;	/* sleeps to their timeout over a tx buffer no kick announced */
	uint64_t wakeups;	/* sleeps the wake eventfd ended (ep_wake(), control requests) */
	/* While record-core-cycles is on: */
	uint64_t cycles;	/* TSC cycles of every round */
	uint64_t busy_cycles;	/* of those, rounds that found work */
	uint64_t cycles_pkts;	/* packets those busy rounds moved */
};

#include <vsock_pmd.h>

/**
 * How idle workers wait (vsock_pmd_conf.wait_mode, and idle_us for adaptive, 0 for the
 * default); set before the first device attaches.
 */
void workers_set_wait_mode(enum vsock_pmd_wait_mode mode, unsigned int idle_us);

/** Whether workers may sleep on kick eventfds (notify and adaptive modes). */
bool workers_may_sleep(void);

/** Create one worker per EAL worker lcore and launch its polling loop. */
int workers_start(void);

/** Stop every polling loop and wait for it; devices must be detached first. */
void workers_stop(void);

/** lcore a worker runs on, for log lines and placement decisions. */
unsigned int worker_lcore(const struct worker *w);

struct ep_waker;

/**
 * What wakes @p w from its sleep for a pipe connection (ep_pipe.h), or NULL when workers
 * never sleep. Valid after workers_set_wait_mode().
 */
struct ep_waker *worker_waker(struct worker *w);

/** Returns once @p w polls @p dev. Control thread only. */
void worker_attach(struct worker *w, struct dp_dev *dev);

/** Returns once @p w no longer touches @p dev. Control thread only. */
void worker_detach(struct worker *w, struct dp_dev *dev);

/**
 * Run @p fn(@p arg) on @p w's lcore between two polls and return once it has run: the way to
 * read worker-owned state (a device's connections). Runs it here if the loop is not running.
 * @p fn NULL makes a bare handshake. Control thread only.
 */
void worker_run(struct worker *w, void (*fn)(void *arg), void *arg);

/**
 * Stop or resume polling on @p w. When pausing, returns once no poll is in progress and none
 * will start: the rings keep their descriptors, attach and detach still work.
 */
void worker_set_paused(struct worker *w, bool paused);

/** Measure the cycles of every round (record-core-cycles). Takes effect on the next round. */
void worker_set_record_cycles(struct worker *w, bool on);

/** Workers started by workers_start(), for the control side. */
unsigned int workers_count(void);
struct worker *worker_at(unsigned int i);

/** Read @p w's counters (relaxed loads) and how many devices it serves. */
void worker_stats_read(struct worker *w, struct worker_stats *st, unsigned int *nb_devs);

#endif /* VSOCK_PMD_WORKER_H */
