/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One polling loop per worker lcore, and the handshake through which the
 * control thread hands devices to it and takes them back.
 *
 * The worker owns its device list outright: only the worker reads or writes
 * it. The control thread asks for a change through a one-slot mailbox and
 * waits until the worker acknowledges it, so when worker_detach() returns the
 * worker has finished its last access to the device and will not touch it
 * again. That is what makes freeing the memory table safe afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "datapath.h"
#include "device.h"
#include "log.h"
#include "worker.h"

/* Devices one lcore can poll; VSOCK_PMD_MAX_VMS keeps every placement possible. */
#define WORKER_MAX_DEVS VSOCK_PMD_MAX_VMS

enum worker_op { WORKER_ATTACH, WORKER_DETACH };

struct worker {
	/* Read by the worker on every round: keep it on its own line. */
	uint32_t req_seq;	/* control stores (release) after filling req_* */
	bool stop;
	enum worker_op req_op;
	struct vsock_dev *req_dev;

	uint32_t ack_seq __rte_cache_aligned;	/* worker stores (release) when done */

	/* Worker-private. */
	struct vsock_dev *devs[WORKER_MAX_DEVS] __rte_cache_aligned;
	unsigned int nb_devs;
	struct datapath_scratch *scratch;
	uint32_t seen_seq;

	/* Control-private, under ctl_lock. */
	pthread_mutex_t ctl_lock;
	unsigned int lcore_id;
	unsigned int nb_assigned;
	bool running;
};

static struct worker *workers[RTE_MAX_LCORE];
static unsigned int nb_workers;

unsigned int worker_lcore(const struct worker *w)
{
	return w->lcore_id;
}

static void apply_request(struct worker *w, enum worker_op op, struct vsock_dev *dev)
{
	unsigned int i;

	if (op == WORKER_ATTACH) {
		RTE_VERIFY(w->nb_devs < WORKER_MAX_DEVS);
		w->devs[w->nb_devs++] = dev;
		return;
	}
	for (i = 0; i < w->nb_devs; i++) {
		if (w->devs[i] == dev) {
			w->devs[i] = w->devs[--w->nb_devs];
			return;
		}
	}
}

static inline void serve_mailbox(struct worker *w)
{
	/* Acquire pairs with the control thread's release of req_seq: req_op and req_dev are visible. */
	uint32_t seq = __atomic_load_n(&w->req_seq, __ATOMIC_ACQUIRE);

	if (likely(seq == w->seen_seq))
		return;
	apply_request(w, w->req_op, w->req_dev);
	w->seen_seq = seq;
	/* Release: every access to a detached device happens before the control thread sees the ack. */
	__atomic_store_n(&w->ack_seq, seq, __ATOMIC_RELEASE);
}

static int worker_loop(void *arg)
{
	struct worker *w = arg;

	VSOCK_LOG(INFO, "lcore %u polling", w->lcore_id);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		unsigned int i, work = 0;

		serve_mailbox(w);
		for (i = 0; i < w->nb_devs; i++)
			work += vsock_dev_poll(w->devs[i], w->scratch);
		if (work == 0)
			rte_pause();
	}
	return 0;
}

/* Post one request and wait until the worker has carried it out. */
static void worker_call(struct worker *w, enum worker_op op, struct vsock_dev *dev)
{
	uint64_t warn_at;
	uint32_t seq;

	pthread_mutex_lock(&w->ctl_lock);
	if (!w->running) {
		/* No loop runs: the control thread is the only user of the list. */
		apply_request(w, op, dev);
		goto out;
	}
	w->req_op = op;
	w->req_dev = dev;
	seq = w->req_seq + 1;
	/* Release: req_op and req_dev are written before the worker can see the new sequence. */
	__atomic_store_n(&w->req_seq, seq, __ATOMIC_RELEASE);

	warn_at = rte_get_timer_cycles() + rte_get_timer_hz();
	/* Acquire pairs with the worker's release of ack_seq. */
	while (__atomic_load_n(&w->ack_seq, __ATOMIC_ACQUIRE) != seq) {
		usleep(10);
		if (rte_get_timer_cycles() > warn_at) {
			VSOCK_LOG(WARNING, "lcore %u slow to answer the control thread",
				  w->lcore_id);
			warn_at = rte_get_timer_cycles() + rte_get_timer_hz();
		}
	}
out:
	if (op == WORKER_ATTACH)
		w->nb_assigned++;
	else
		w->nb_assigned--;
	pthread_mutex_unlock(&w->ctl_lock);
}

void worker_attach(struct worker *w, struct vsock_dev *dev)
{
	worker_call(w, WORKER_ATTACH, dev);
}

void worker_detach(struct worker *w, struct vsock_dev *dev)
{
	worker_call(w, WORKER_DETACH, dev);
}

struct worker *worker_pick(void)
{
	struct worker *best = NULL;
	unsigned int i;

	for (i = 0; i < nb_workers; i++) {
		if (!best || workers[i]->nb_assigned < best->nb_assigned)
			best = workers[i];
	}
	return best;
}

int workers_start(void)
{
	unsigned int lcore;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		struct worker *w = rte_zmalloc_socket("vsock_worker", sizeof(*w),
						      RTE_CACHE_LINE_SIZE,
						      rte_lcore_to_socket_id(lcore));

		if (w)
			w->scratch = rte_malloc_socket("vsock_scratch", sizeof(*w->scratch),
						       RTE_CACHE_LINE_SIZE,
						       rte_lcore_to_socket_id(lcore));
		if (!w || !w->scratch) {
			rte_free(w);
			workers_stop();
			return -ENOMEM;
		}
		pthread_mutex_init(&w->ctl_lock, NULL);
		w->lcore_id = lcore;
		workers[nb_workers++] = w;
	}
	if (nb_workers == 0) {
		VSOCK_LOG(ERR, "no worker lcore: give the EAL at least two cores (e.g. -l 0-1); "
			  "the main lcore only does control work");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < nb_workers; i++) {
		struct worker *w = workers[i];

		w->running = true;
		if (rte_eal_remote_launch(worker_loop, w, w->lcore_id) < 0) {
			w->running = false;
			VSOCK_LOG(ERR, "cannot launch lcore %u", w->lcore_id);
			workers_stop();
			return -EBUSY;
		}
	}
	return 0;
}

void workers_stop(void)
{
	unsigned int i;

	for (i = 0; i < nb_workers; i++)
		__atomic_store_n(&workers[i]->stop, true, __ATOMIC_RELAXED);
	for (i = 0; i < nb_workers; i++) {
		struct worker *w = workers[i];

		if (w->running) {
			rte_eal_wait_lcore(w->lcore_id);
			pthread_mutex_lock(&w->ctl_lock);
			w->running = false;
			pthread_mutex_unlock(&w->ctl_lock);
		}
		if (w->nb_devs)
			VSOCK_LOG(WARNING, "lcore %u stopped with %u devices", w->lcore_id,
				  w->nb_devs);
		pthread_mutex_destroy(&w->ctl_lock);
		rte_free(w->scratch);
		rte_free(w);
		workers[i] = NULL;
	}
	nb_workers = 0;
}
