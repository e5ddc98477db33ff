/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_WORKER_H
#define VSOCK_PMD_WORKER_H

struct vsock_dev;
struct worker;

/** Create one worker per EAL worker lcore and launch its polling loop. */
int workers_start(void);

/** Stop every polling loop and wait for it; devices must be detached first. */
void workers_stop(void);

/** The worker serving the fewest devices, for a device about to run. */
struct worker *worker_pick(void);

/** lcore a worker runs on, for log lines and placement decisions. */
unsigned int worker_lcore(const struct worker *w);

/** Returns once @p w polls @p dev. Control thread only. */
void worker_attach(struct worker *w, struct vsock_dev *dev);

/** Returns once @p w no longer touches @p dev. Control thread only. */
void worker_detach(struct worker *w, struct vsock_dev *dev);

#endif /* VSOCK_PMD_WORKER_H */
