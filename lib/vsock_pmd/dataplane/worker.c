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
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "conn.h"
#include "datapath.h"
#include "ep_waker.h"
#include "log.h"
#include "virtq.h"
#include "worker.h"

/* Devices one lcore can poll; VSOCK_PMD_MAX_VMS keeps every placement possible. */
#define WORKER_MAX_DEVS VSOCK_PMD_MAX_VMS

enum worker_op { WORKER_ATTACH, WORKER_DETACH, WORKER_RUN };

/*
 * --wait-mode notify: what an idle worker sleeps on. An event's data is the device with
 * the ring index of a kick eventfd, or WAIT_HOST for its host sockets; NULL is the wake fd.
 */
#define WAIT_HOST 2u
#define WAIT_TAGS 3u
#define WAIT_EVENTS 32
/* Bounds how late a connection timer fires while the worker sleeps. */
#define WAIT_TIMEOUT_MS 10
/*
 * --wait-mode adaptive: most pause instructions between two polls while backing off, which
 * bounds how late that phase sees a packet (the CPU's pause latency sets how long that is).
 */
#define BACKOFF_MAX_PAUSES 1024u

/*
 * Devices with news. A quiet device still costs each round a few cache lines (its
 * connection table's, its own, its ring's avail index): with hundreds of idle VMs on one
 * lcore those rounds are what an active VM waits for. So a device that found no work for
 * COLD_AFTER_US, far longer than a round, goes cold: the guest is asked to kick its rings
 * (dp_dev_cool(), the enable-fence-look-again pattern), and the round skips it. Its kick
 * eventfds are in the worker's host_epfd beside its host sockets, so the one epoll_wait
 * of host_events() tells which cold devices have news; those go hot again, their kicks
 * off. The kick eventfds are there edge-triggered from attach to detach, whatever the
 * device's state: in poll mode nobody drains them but the statistics, and each kick is an
 * edge, so a counter left high neither hides a kick nor wakes a device that had none;
 * adding them at each cooling would cost two syscalls and report stale counts at once.
 * A cold device has no timer and no pipe connection (dp_dev_cool()), so no deadline waits
 * for it. What comes with no event, a pipe another guest or a native program opens to it,
 * or a kick whose eventfd a read drained before epoll reported it (the statistics in poll
 * mode; the sleeping worker, which tells it itself), is found by a sweep of the cold
 * devices every COLD_SWEEP_US: it waits that long at most, and nothing waits forever.
 */
#define COLD_AFTER_US 200
#define COLD_SWEEP_US 1000
/*
 * After a round that gave the guest packets and took none from it, the guest's answer is the
 * likeliest news, and it comes on the ring: for ANSWER_WAIT_US the device's idle rounds poll
 * its rings without the host look (a syscall of about 2 us, which would hold an answer that
 * came meanwhile; doc/performance.md, the round trip's timeline), until the answer comes.
 * Its host bytes wait that long at most, and the other devices' looks are not held.
 */
#define ANSWER_WAIT_US 4
/* host_epfd events: the device, tagged with what spoke. */
#define NEWS_HOST 0u
#define NEWS_KICK 1u
#define NEWS_TAGS 1u

/* One request to the worker: a device to take or drop, or a function to run between polls. */
struct worker_req {
	enum worker_op op;
	struct dp_dev *dev;
	void (*fn)(void *arg);
	void *arg;
};

struct worker {
	/* Read by the worker on every round: keep it on its own line. */
	uint32_t req_seq;	/* control stores (release) after filling req */
	bool stop;
	/* Set by the control side at any time, read with relaxed loads: worker_set_paused(). */
	bool paused;
	bool record_cycles;
	struct worker_req req;

	uint32_t ack_seq __rte_cache_aligned;	/* worker stores (release) when done */

	/* Worker-private; the counters are read by the control side (aligned 64-bit loads). */
	struct dp_dev *devs[WORKER_MAX_DEVS] __rte_cache_aligned;
	unsigned int nb_devs;
	/* The devices a round polls: every one that is not cold (dp_dev.hot_slot). */
	struct dp_dev *hot[WORKER_MAX_DEVS];
	unsigned int nb_hot;
	uint64_t sweep_tsc;	/* last look at every cold device */
	struct dp_scratch *scratch;
	uint32_t seen_seq;
	struct worker_stats stats;
	int epfd;		/* notify mode: kick eventfds, host sockets, wake_fd */
	/*
	 * Every attached device's host sockets, one epoll set of their tables' epoll sets:
	 * one epoll_wait tells which devices have host events (host_events()).
	 */
	int host_epfd;
	uint64_t host_tsc;	/* last host_events() */
	uint64_t now;		/* TSC at the start of this round */
	uint64_t host_interval;	/* TSC cycles between them while every device is busy */
	/* Last round, a device with socket connections found no work, or none with cold ones. */
	bool idle_seen;
	/*
	 * Last round's idle device with socket connections when it was the only one, every
	 * device hot and it with one connection (dp_dev_host_probe_ok()); else NULL.
	 */
	struct dp_dev *probe;
	unsigned int nb_prompt;	/* idle devices with socket connections this round */
	int wake_fd;		/* eventfd the control side writes after a request or stop */
	/* Adaptive mode: TSC at the first round without work since the last busy one, or 0. */
	uint64_t idle_since;
	unsigned int backoff;	/* pauses between polls while backing off */
	/* Read by the far sides of pipe connections on every change: a line of its own. */
	struct ep_waker waker __rte_cache_aligned;

	/* Control-private, under ctl_lock. */
	pthread_mutex_t ctl_lock;
	unsigned int lcore_id;
	unsigned int nb_assigned;
	bool running;
};

static struct worker *workers[RTE_MAX_LCORE];
static unsigned int nb_workers;
static enum vsock_pmd_wait_mode wait_mode;
static uint64_t idle_cycles;	/* adaptive: idle time before the backoff, and its length */
static uint64_t cold_cycles, sweep_cycles, answer_cycles;	/* the *_US above */

void workers_set_wait_mode(enum vsock_pmd_wait_mode mode, unsigned int idle_us)
{
	wait_mode = mode;
	idle_cycles = rte_get_tsc_hz() / 1000000 *
		      (idle_us ? idle_us : VSOCK_PMD_IDLE_US_DEFAULT);
}

bool workers_may_sleep(void)
{
	return wait_mode != VSOCK_PMD_WAIT_POLL;
}

/* Notify mode: add (EPOLL_CTL_ADD) or remove (EPOLL_CTL_DEL) what wakes the worker for @p dev. */
static void watch_dev(struct worker *w, struct dp_dev *dev, int op)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint16_t q;

	RTE_BUILD_BUG_ON(alignof(struct dp_dev) < 4);
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		if (dev->kick_fd[q] < 0)
			continue;
		ev.data.u64 = (uintptr_t)dev | q;
		if (epoll_ctl(w->epfd, op, dev->kick_fd[q], &ev) < 0)
			VSOCK_LOG(ERR, "lcore %u: cannot watch a kick eventfd: %s", w->lcore_id,
				  strerror(errno));
	}
	ev.data.u64 = (uintptr_t)dev | WAIT_HOST;
	if (epoll_ctl(w->epfd, op, conn_table_epoll_fd(dev->conns), &ev) < 0)
		VSOCK_LOG(ERR, "lcore %u: cannot watch host sockets: %s", w->lcore_id,
			  strerror(errno));
}

/*
 * Watch (EPOLL_CTL_ADD) or stop watching (EPOLL_CTL_DEL) @p dev's host sockets and kick
 * eventfds in the worker's set of news. A device whose sockets cannot be watched asks the
 * kernel itself (dp_dev_poll()); one whose kicks cannot be is never cold.
 */
static void watch_host(struct worker *w, struct dp_dev *dev, int op)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uintptr_t)dev | NEWS_HOST };
	struct epoll_event kick = { .events = EPOLLIN | EPOLLET,
				    .data.u64 = (uintptr_t)dev | NEWS_KICK };
	uint16_t q;

	if (op == EPOLL_CTL_DEL) {
		if (dev->host_watched)
			epoll_ctl(w->host_epfd, op, conn_table_epoll_fd(dev->conns), &ev);
		for (q = 0; dev->kicks_watched && q < VSOCK_NR_VQ; q++)
			epoll_ctl(w->host_epfd, op, dev->kick_fd[q], &kick);
		dev->host_watched = false;
		dev->kicks_watched = false;
		return;
	}
	dev->host_ready = true;	/* whatever came before the attach */
	dev->host_watched = epoll_ctl(w->host_epfd, op, conn_table_epoll_fd(dev->conns), &ev) == 0;
	if (!dev->host_watched)
		VSOCK_LOG(ERR, "lcore %u: VM cid %" PRIu64 ": cannot watch its host sockets (%s); "
			  "it asks for their events every round", w->lcore_id, dev->cid,
			  strerror(errno));
	for (q = 0; q < VSOCK_NR_VQ; q++) {
		if (dev->kick_fd[q] < 0 || epoll_ctl(w->host_epfd, op, dev->kick_fd[q], &kick) < 0)
			break;
	}
	dev->kicks_watched = q == VSOCK_NR_VQ;
	while (!dev->kicks_watched && q-- > 0)
		epoll_ctl(w->host_epfd, EPOLL_CTL_DEL, dev->kick_fd[q], &kick);
}

/* On the hot list, busy as of @now: polled every round for COLD_AFTER_US at least. */
static void hot_add(struct worker *w, struct dp_dev *dev, uint64_t now)
{
	dev->cold = false;
	dev->busy_tsc = now;
	dev->hot_slot = (uint16_t)w->nb_hot;
	w->hot[w->nb_hot++] = dev;
}

/* A cold device had news: polled every round again, the guest need not kick. */
static void dev_warm(struct worker *w, struct dp_dev *dev)
{
	if (!dev->cold)
		return;
	dp_dev_kicks_disarm(dev);
	hot_add(w, dev, w->now);
}

/* Off the hot list (the device at its end takes its slot). */
static void hot_remove(struct worker *w, struct dp_dev *dev)
{
	struct dp_dev *last = w->hot[--w->nb_hot];

	w->hot[dev->hot_slot] = last;
	last->hot_slot = dev->hot_slot;
}

/*
 * Every COLD_SWEEP_US, every cold device is looked at as a round would (dp_dev_news()):
 * what announces itself with no event (a pipe on its incoming ring) waits that long at most.
 */
static void sweep_cold(struct worker *w)
{
	unsigned int i;

	if (w->nb_hot == w->nb_devs || w->now - w->sweep_tsc < sweep_cycles)
		return;
	w->sweep_tsc = w->now;
	for (i = 0; i < w->nb_devs; i++)
		if (w->devs[i]->cold && dp_dev_news(w->devs[i]))
			dev_warm(w, w->devs[i]);
}

/*
 * Which devices have host socket events, and which cold ones a guest kicked: one epoll_wait
 * for all of them, where each idle device would make its own. Asked at the start of every
 * round after one in which a device with socket connections was idle (their bytes should
 * not wait), or with cold devices one without work, else every host_interval, as a busy
 * device asks (dp_dev_poll()). An inner set stays readable while it holds events, so a
 * device that took only part of them is told again.
 */
static void host_events(struct worker *w)
{
	struct epoll_event ev[WORKER_MAX_DEVS * (1 + VSOCK_NR_VQ)];
	int i, n;

	if (!w->idle_seen) {
		if (w->now - w->host_tsc < w->host_interval)
			return;
	} else if (w->probe && w->now - w->host_tsc < w->host_interval) {
		/*
		 * One connection to look at: its read costs what the epoll_wait would, and
		 * brings the bytes a syscall sooner (a round trip's critical path). The
		 * epoll_wait still comes every host_interval for everything else.
		 */
		w->idle_seen = false;
		w->probe->host_probe = true;
		return;
	}
	w->host_tsc = w->now;
	w->idle_seen = false;
	n = epoll_wait(w->host_epfd, ev, RTE_DIM(ev), 0);
	for (i = 0; i < n; i++) {
		uint64_t data = ev[i].data.u64;
		struct dp_dev *dev = (void *)(uintptr_t)(data & ~(uint64_t)NEWS_TAGS);

		if ((data & NEWS_TAGS) == NEWS_HOST)
			dev->host_ready = true;
		dev_warm(w, dev);
	}
}

/*
 * One device's round; an idle one with socket connections has the next round ask the kernel,
 * unless it waits for its guest's answer (ANSWER_WAIT_US). One idle for COLD_AFTER_US goes
 * cold if it may. @return whether it stays hot.
 */
static inline bool poll_dev(struct worker *w, struct dp_dev *dev, unsigned int *work)
{
	unsigned int n = dp_dev_poll(dev, w->scratch);

	*work += n;
	if (n) {
		dev->busy_tsc = w->now;
		/* Any other work, the answer itself most often, ends the wait. */
		dev->answer_tsc = dev->rx_only ? rte_get_tsc_cycles() + answer_cycles : 0;
		return true;
	}
	if (dp_dev_host_prompt(dev) && w->now >= dev->answer_tsc) {
		w->idle_seen = true;
		w->probe = dev;
		w->nb_prompt++;
	}
	if (likely(w->now - dev->busy_tsc < cold_cycles))
		return true;
	/* Not now: try again after as long (a timer or a pipe may keep it for a while). */
	dev->busy_tsc = w->now;
	if (!dev->kicks_watched || !dp_dev_cool(dev))
		return true;
	dev->cold = true;
	hot_remove(w, dev);
	return false;
}

/* Packets the device's rings completed so far, for cycles per packet. */
static inline uint64_t dp_dev_packets(const struct dp_dev *dev)
{
	return dev->vq[VSOCK_VQ_RX].stats.completed + dev->vq[VSOCK_VQ_TX].stats.completed;
}

/* A round over the hot devices; @p pkts counts their packets unless NULL. */
static unsigned int poll_hot(struct worker *w, uint64_t *pkts)
{
	unsigned int i = 0, work = 0;

	w->now = rte_get_tsc_cycles();
	host_events(w);
	sweep_cold(w);
	w->probe = NULL;
	w->nb_prompt = 0;
	while (i < w->nb_hot) {
		struct dp_dev *dev = w->hot[i];
		uint64_t before = pkts ? dp_dev_packets(dev) : 0;
		bool hot = poll_dev(w, dev, &work);

		if (pkts)
			*pkts += dp_dev_packets(dev) - before;
		/* A device that went cold left its slot to the last one: poll that one now. */
		i += hot;
	}
	/* The cold devices' kicks are worth the kernel's time as soon as the worker idles. */
	w->idle_seen |= work == 0 && w->nb_hot != w->nb_devs;
	/* A cold device's kicks, or a second device's sockets, are for the epoll_wait alone. */
	if (w->nb_prompt != 1 || w->nb_hot != w->nb_devs || !dp_dev_host_probe_ok(w->probe))
		w->probe = NULL;
	return work;
}

/* Wake a worker sleeping in notify mode; harmless otherwise. */
static void wake(struct worker *w)
{
	uint64_t one = 1;

	if (workers_may_sleep() && write(w->wake_fd, &one, sizeof(one)) < 0)
		VSOCK_LOG(ERR, "lcore %u: cannot wake: %s", w->lcore_id, strerror(errno));
}

unsigned int worker_lcore(const struct worker *w)
{
	return w->lcore_id;
}

struct ep_waker *worker_waker(struct worker *w)
{
	return workers_may_sleep() ? &w->waker : NULL;
}

static void apply_request(struct worker *w, const struct worker_req *req)
{
	unsigned int i;

	switch (req->op) {
	case WORKER_ATTACH:
		RTE_VERIFY(w->nb_devs < WORKER_MAX_DEVS);
		w->devs[w->nb_devs++] = req->dev;
		/* Hot: its rings were loaded with kicks off (vsock_dev_load_rings()). */
		hot_add(w, req->dev, rte_get_tsc_cycles());
		watch_host(w, req->dev, EPOLL_CTL_ADD);
		if (workers_may_sleep())
			watch_dev(w, req->dev, EPOLL_CTL_ADD);
		break;
	case WORKER_DETACH:
		/* The next round asks epoll, as after any change of the list. */
		w->probe = NULL;
		req->dev->host_probe = false;
		for (i = 0; i < w->nb_devs; i++) {
			if (w->devs[i] == req->dev) {
				w->devs[i] = w->devs[--w->nb_devs];
				/* Leaves as it came: hot, kicks off, nothing in our sets. */
				if (req->dev->cold) {
					req->dev->cold = false;
					dp_dev_kicks_disarm(req->dev);
				} else {
					hot_remove(w, req->dev);
				}
				watch_host(w, req->dev, EPOLL_CTL_DEL);
				if (workers_may_sleep())
					watch_dev(w, req->dev, EPOLL_CTL_DEL);
				break;
			}
		}
		break;
	case WORKER_RUN:
		if (req->fn)
			req->fn(req->arg);
		break;
	}
}

static inline void serve_mailbox(struct worker *w)
{
	/* Acquire pairs with the control thread's release of req_seq: the request is visible. */
	uint32_t seq = __atomic_load_n(&w->req_seq, __ATOMIC_ACQUIRE);

	if (likely(seq == w->seen_seq))
		return;
	apply_request(w, &w->req);
	w->seen_seq = seq;
	/* Release: every access to a detached device happens before the control thread sees the ack. */
	__atomic_store_n(&w->ack_seq, seq, __ATOMIC_RELEASE);
}

/* One round with its cost measured: only while record-core-cycles is on. */
static unsigned int poll_round_timed(struct worker *w)
{
	uint64_t start = rte_rdtsc(), pkts = 0, cycles;
	unsigned int work = poll_hot(w, &pkts);

	cycles = rte_rdtsc() - start;
	w->stats.cycles += cycles;
	if (work) {
		w->stats.busy_cycles += cycles;
		w->stats.cycles_pkts += pkts;
	}
	return work;
}

/*
 * A sleep ran to its timeout: a tx buffer the guest made available meanwhile must have come
 * with a kick, since dp_dev_kicks_arm() asked for one before its last look at the ring.
 * A buffer without one is a lost kick (a packet that waited the whole timeout); a kick
 * that came as the wait timed out is taken and counted as the wait would have.
 */
static void worker_sleep_timed_out(struct worker *w)
{
	unsigned int i;

	for (i = 0; i < w->nb_devs; i++) {
		struct dp_dev *dev = w->devs[i];
		struct pollfd kick = { .fd = dev->kick_fd[VSOCK_VQ_TX], .events = POLLIN };
		uint64_t v;

		if (!vq_avail_pending(&dev->vq[VSOCK_VQ_TX]))
			continue;
		/* The eventfd may block (it is QEMU's): read it only once it is readable. */
		if (poll(&kick, 1, 0) == 1 && read(kick.fd, &v, sizeof(v)) == sizeof(v))
			dev->stats.kicks[VSOCK_VQ_TX] += v;	/* its only writer, as below */
		else
			w->stats.lost_kicks++;
		dev_warm(w, dev);	/* as below */
	}
}

/*
 * Notify mode, after a round without work: ask every guest for kicks, and sleep unless work
 * arrived meanwhile. The kicks we read are counted as the statistics would have (this
 * worker is then the eventfds' only reader: the control side drains them in poll mode
 * only).
 */
static void worker_sleep(struct worker *w)
{
	struct epoll_event ev[WAIT_EVENTS];
	bool ready = false;
	unsigned int i;
	int n;

	/* A cold device's kicks are on already. */
	for (i = 0; i < w->nb_hot; i++)
		ready |= dp_dev_kicks_arm(w->hot[i]);
	/*
	 * Pipe connections have no kick: announce the sleep, then look at every one of them
	 * once more. A far side that changes one after this look finds the announcement and
	 * writes wake_fd (ep_wake()).
	 */
	__atomic_store_n(&w->waker.sleeping, 1, __ATOMIC_RELAXED);
	/* Full fence (store->load): pairs with the one in ep_wake(). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < w->nb_devs; i++) {
		struct dp_dev *dev = w->devs[i];

		if (conn_pipes_sweep(dev->conns) == 0)
			continue;
		ready = true;
		/* Something to do for it now (a pipe accepted): no sleep, the next round polls it. */
		dev_warm(w, dev);
	}
	/* A request posted after this load also writes wake_fd, which ends the wait. */
	if (!ready && __atomic_load_n(&w->req_seq, __ATOMIC_ACQUIRE) == w->seen_seq &&
	    !__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		n = epoll_wait(w->epfd, ev, WAIT_EVENTS, WAIT_TIMEOUT_MS);
		if (n == 0) {
			worker_sleep_timed_out(w);
			/*
			 * Nothing for a whole timeout: the lcore is idle, so cold devices cost no
			 * one anything while hot. The next sleep asks each guest for kicks again
			 * (dp_dev_kicks_arm()), as every sleep did before devices went cold.
			 */
			for (i = 0; i < w->nb_devs; i++)
				dev_warm(w, w->devs[i]);
		}
		for (i = 0; n > 0 && i < (unsigned int)n; i++) {
			uint64_t data = ev[i].data.u64;
			struct dp_dev *dev = (void *)(uintptr_t)(data & ~(uint64_t)WAIT_TAGS);
			unsigned int tag = (unsigned int)(data & WAIT_TAGS);
			uint64_t v;

			/* Host socket events stay queued for the next conn_poll_host(). */
			if (dev && tag == WAIT_HOST)
				continue;
			if (read(dev ? dev->kick_fd[tag] : w->wake_fd, &v, sizeof(v)) != sizeof(v))
				continue;
			/* This worker is the counters' only writer (dp_stats.kicks, wakeups). */
			/*
			 * Drained, the eventfd no longer reports its edge in host_epfd (epoll
			 * looks at a file again before it reports it): the kick is told here.
			 */
			if (dev) {
				dev->stats.kicks[tag] += v;
				dev_warm(w, dev);
			} else {
				w->stats.wakeups++;
			}
		}
	}
	__atomic_store_n(&w->waker.sleeping, 0, __ATOMIC_RELAXED);
	for (i = 0; i < w->nb_hot; i++)
		dp_dev_kicks_disarm(w->hot[i]);
}

/*
 * Adaptive mode, after every round: poll while there is work and for idle_cycles after it;
 * then poll with more and more pause instructions in between, for idle_cycles again; then
 * sleep as notify mode does. After a wakeup the first round that finds work starts over at
 * full polling, and a round that finds none sleeps again at once.
 */
static void worker_adapt(struct worker *w, bool busy)
{
	uint64_t now, idle;
	unsigned int i;

	if (busy) {
		w->idle_since = 0;
		w->backoff = 0;
		return;
	}
	now = rte_get_tsc_cycles();
	if (w->idle_since == 0)
		w->idle_since = now;
	idle = now - w->idle_since;
	if (idle < idle_cycles) {
		rte_pause();
	} else if (idle < 2 * idle_cycles) {
		w->backoff = RTE_MIN(RTE_MAX(w->backoff * 2, 1u), BACKOFF_MAX_PAUSES);
		for (i = 0; i < w->backoff; i++)
			rte_pause();
	} else {
		worker_sleep(w);
	}
}

static int worker_loop(void *arg)
{
	struct worker *w = arg;

	VSOCK_LOG(INFO, "lcore %u polling", w->lcore_id);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		unsigned int work;

		serve_mailbox(w);
		/* Paused: the rings keep their descriptors, the mailbox is still served. */
		if (unlikely(__atomic_load_n(&w->paused, __ATOMIC_RELAXED))) {
			rte_pause();
			continue;
		}
		if (unlikely(__atomic_load_n(&w->record_cycles, __ATOMIC_RELAXED)))
			work = poll_round_timed(w);
		else
			work = poll_hot(w, NULL);
		w->stats.polls++;
		if (work)
			w->stats.busy_polls++;
		if (wait_mode == VSOCK_PMD_WAIT_ADAPTIVE)
			worker_adapt(w, work != 0);
		else if (!work && wait_mode == VSOCK_PMD_WAIT_NOTIFY)
			worker_sleep(w);
		else if (!work)
			rte_pause();
	}
	return 0;
}

/* Post one request and wait until the worker has carried it out. */
static void worker_call(struct worker *w, const struct worker_req *req)
{
	uint64_t warn_at;
	uint32_t seq;

	pthread_mutex_lock(&w->ctl_lock);
	if (!w->running) {
		/* No loop runs: the control thread is the only user of the list. */
		apply_request(w, req);
		goto out;
	}
	w->req = *req;
	seq = w->req_seq + 1;
	/* Release: the request is written before the worker can see the new sequence. */
	__atomic_store_n(&w->req_seq, seq, __ATOMIC_RELEASE);
	wake(w);

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
	if (req->op == WORKER_ATTACH)
		w->nb_assigned++;
	else if (req->op == WORKER_DETACH)
		w->nb_assigned--;
	pthread_mutex_unlock(&w->ctl_lock);
}

void worker_attach(struct worker *w, struct dp_dev *dev)
{
	worker_call(w, &(struct worker_req){ .op = WORKER_ATTACH, .dev = dev });
}

void worker_detach(struct worker *w, struct dp_dev *dev)
{
	worker_call(w, &(struct worker_req){ .op = WORKER_DETACH, .dev = dev });
}

void worker_run(struct worker *w, void (*fn)(void *arg), void *arg)
{
	worker_call(w, &(struct worker_req){ .op = WORKER_RUN, .fn = fn, .arg = arg });
}

void worker_set_paused(struct worker *w, bool paused)
{
	__atomic_store_n(&w->paused, paused, __ATOMIC_RELAXED);
	/*
	 * The flag is stored before the request is released, and the worker reads it after
	 * acquiring the request: once the (empty) request is acknowledged, the poll that was
	 * running has ended and the next round sees the flag.
	 */
	worker_run(w, NULL, NULL);
}

void worker_set_record_cycles(struct worker *w, bool on)
{
	__atomic_store_n(&w->record_cycles, on, __ATOMIC_RELAXED);
}

unsigned int workers_count(void)
{
	return nb_workers;
}

struct worker *worker_at(unsigned int i)
{
	return i < nb_workers ? workers[i] : NULL;
}

static inline uint64_t load_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void worker_stats_read(struct worker *w, struct worker_stats *st, unsigned int *nb_devs)
{
	st->polls = load_u64(&w->stats.polls);
	st->busy_polls = load_u64(&w->stats.busy_polls);
	st->lost_kicks = load_u64(&w->stats.lost_kicks);
	st->wakeups = load_u64(&w->stats.wakeups);
	st->cycles = load_u64(&w->stats.cycles);
	st->busy_cycles = load_u64(&w->stats.busy_cycles);
	st->cycles_pkts = load_u64(&w->stats.cycles_pkts);
	pthread_mutex_lock(&w->ctl_lock);
	*nb_devs = w->nb_assigned;
	pthread_mutex_unlock(&w->ctl_lock);
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
		w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		w->waker.lcore = lcore;
		ep_waker_set_fd(lcore, w->wake_fd);
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->host_epfd = epoll_create1(EPOLL_CLOEXEC);
		w->host_interval = rte_get_tsc_hz() / 1000000 * DP_HOST_EPOLL_BUSY_US;
		cold_cycles = rte_get_tsc_hz() / 1000000 * COLD_AFTER_US;
		answer_cycles = rte_get_tsc_hz() / 1000000 * ANSWER_WAIT_US;
		sweep_cycles = rte_get_tsc_hz() / 1000000 * COLD_SWEEP_US;
		w->idle_seen = true;
		if (w->wake_fd < 0 || w->epfd < 0 || w->host_epfd < 0 ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd,
			      &(struct epoll_event){ .events = EPOLLIN }) < 0) {
			int rc = -errno;

			workers_stop();
			return rc;
		}
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

	for (i = 0; i < nb_workers; i++) {
		__atomic_store_n(&workers[i]->stop, true, __ATOMIC_RELAXED);
		wake(workers[i]);
	}
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
		if (w->epfd >= 0)
			close(w->epfd);
		if (w->host_epfd >= 0)
			close(w->host_epfd);
		ep_waker_set_fd(w->lcore_id, -1);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		rte_free(w->scratch);
		rte_free(w);
		workers[i] = NULL;
	}
	nb_workers = 0;
}
