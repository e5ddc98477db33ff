/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native API in DPDK secondary processes: who is attached, and what each one needs that
 * shared memory cannot give it.
 *
 * Everything a program touches on the data path is already in hugepage memory at the same
 * address in every process (the pipe pool, the listener table, the routing table, the
 * mbuf pools), so a secondary runs the very same code as the primary. Three things are not:
 * - the eventfds that wake a worker sleeping in notify mode: the primary hands copies to each
 *   secondary over DPDK's multi-process channel (rte_mp) when it attaches;
 * - a mempool's per-lcore caches, indexed by lcore id: a secondary whose lcore ids are also
 *   the primary's (or another secondary's) would share a cache with a lcore of another
 *   process, so such a secondary is refused;
 * - the end of a process: a secondary that exits without detaching would keep its listeners
 *   and connections forever, so the primary holds a pidfd of each (taken when it attaches),
 *   looks at them periodically from DPDK's alarm thread (never a worker), and closes a dead
 *   one's handles as vsock_native_close() would. A pidfd, unlike the pid, cannot come to
 *   mean another process, and it reads as ended as soon as the process exits (a zombie too).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memzone.h>
#include <rte_string_fns.h>

#include <vsock_pmd_native.h>

#include "ep_native.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "log.h"
#include "native_proc.h"

#define PROCS_MZ "vsock_native_procs"
#define ATTACH_ACTION "vsock_native_attach"
#define ATTACH_TIMEOUT_S 5
#define REAP_PERIOD_US (200 * 1000)
#define LCORE_WORDS ((RTE_MAX_LCORE + 63) / 64)

/* Slot 0 is the primary; secondaries claim 1 .. VSOCK_NATIVE_MAX_PROCS. */
struct native_proc {
	int32_t pid;		/* 0: free; claimed with a compare-and-swap */
	uint32_t ready;		/* lcores written (release) */
	uint64_t lcores[LCORE_WORDS];
};

/* Reserved by the first start and never freed, like the listener table (ep_native.c). */
struct native_procs {
	struct native_proc proc[1 + VSOCK_NATIVE_MAX_PROCS];
};

/* The attach request asks for worker eventfds from lcore 'first' on. */
struct attach_req {
	uint32_t first;
	uint32_t slot;		/* the requester's, claimed in the table */
	int32_t pid;
};

struct attach_reply {
	uint32_t nb;			/* eventfds in the message */
	uint32_t next;			/* ask again from here; RTE_MAX_LCORE: that was all */
	uint32_t lcore[RTE_MP_MAX_FD_NUM];
};

static struct native_procs *procs;
static bool serving;		/* primary: the action and the reaper run */
static int my_slot = -1;	/* secondary: attached as procs->proc[my_slot] */

/* Primary: a pidfd of each attached secondary, shared by the mp and alarm threads. */
static struct {
	int fd;			/* -1: none */
	int32_t pid;		/* the process it refers to */
} watch[1 + VSOCK_NATIVE_MAX_PROCS];
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Under watch_lock. */
static void watch_drop(unsigned int slot)
{
	if (watch[slot].fd >= 0)
		close(watch[slot].fd);
	watch[slot].fd = -1;
	watch[slot].pid = 0;
}

/* Primary, mp thread: watch the secondary that claimed @p slot as process @p pid. */
static void watch_add(uint32_t slot, int32_t pid)
{
	if (slot < 1 || slot > VSOCK_NATIVE_MAX_PROCS || pid <= 0 ||
	    __atomic_load_n(&procs->proc[slot].pid, __ATOMIC_ACQUIRE) != pid)
		return;
	pthread_mutex_lock(&watch_lock);
	watch_drop(slot);
	watch[slot].fd = pidfd_open(pid, 0);
	if (watch[slot].fd >= 0)
		watch[slot].pid = pid;
	else
		VSOCK_LOG(ERR, "native API: cannot watch secondary process %d: %s", pid,
			  strerror(errno));
	pthread_mutex_unlock(&watch_lock);
}

/* Whether the process in @p slot is gone. Under watch_lock. */
static bool slot_dead(unsigned int slot, int32_t pid)
{
	struct pollfd pfd = { .fd = watch[slot].fd, .events = POLLIN };

	/* The slot changed hands since we looked: the old pidfd means nothing now. */
	if (watch[slot].fd >= 0 && watch[slot].pid != pid)
		watch_drop(slot);
	if (watch[slot].fd >= 0)
		return poll(&pfd, 1, 0) == 1;
	/* Not watched yet (it died between claiming the slot and asking us): its pid. */
	return kill(pid, 0) < 0 && errno == ESRCH;
}

static void lcores_of_this_process(uint64_t *mask)
{
	unsigned int lcore;

	memset(mask, 0, sizeof(uint64_t) * LCORE_WORDS);
	RTE_LCORE_FOREACH(lcore)
		mask[lcore / 64] |= 1ULL << (lcore % 64);
}

static struct native_procs *procs_find(bool create)
{
	const struct rte_memzone *mz = rte_memzone_lookup(PROCS_MZ);

	if (!mz && create)
		mz = rte_memzone_reserve(PROCS_MZ, sizeof(struct native_procs), SOCKET_ID_ANY, 0);
	return mz ? mz->addr : NULL;
}

/* Primary, multi-process thread: give a secondary the workers' eventfds. */
static int on_attach(const struct rte_mp_msg *msg, const void *peer)
{
	const struct attach_req *req = (const void *)msg->param;
	struct rte_mp_msg out = { .len_param = sizeof(struct attach_reply) };
	struct attach_reply *rep = (void *)out.param;
	uint32_t lcore;

	strlcpy(out.name, ATTACH_ACTION, sizeof(out.name));
	rep->next = RTE_MAX_LCORE;
	if (msg->len_param == sizeof(*req) && req->first == 0)
		watch_add(req->slot, req->pid);
	for (lcore = msg->len_param == sizeof(*req) ? req->first : RTE_MAX_LCORE;
	     lcore < RTE_MAX_LCORE; lcore++) {
		int fd = ep_waker_fd(lcore);

		if (fd < 0)
			continue;
		if (rep->nb == RTE_MP_MAX_FD_NUM) {
			rep->next = lcore;
			break;
		}
		rep->lcore[rep->nb] = lcore;
		out.fds[rep->nb++] = fd;
	}
	out.num_fds = (int)rep->nb;
	return rte_mp_reply(&out, peer);
}

/* Primary, alarm thread: close the handles of secondaries that exited without detaching. */
static void reap(void *arg)
{
	unsigned int i;

	RTE_SET_USED(arg);
	pthread_mutex_lock(&watch_lock);
	for (i = 1; i <= VSOCK_NATIVE_MAX_PROCS; i++) {
		struct native_proc *p = &procs->proc[i];
		int32_t pid = __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);

		if (pid <= 0) {
			watch_drop(i);	/* detached, if it was watched */
			continue;
		}
		if (!slot_dead(i, pid))
			continue;
		VSOCK_LOG(WARNING, "native API: secondary process %d exited without detaching: "
			  "%u handles closed", pid, ep_native_release_owner((uint8_t)i, true));
		watch_drop(i);
		__atomic_store_n(&p->ready, 0, __ATOMIC_RELAXED);
		/* Release: the slot is reused only after its handles are closed. */
		__atomic_compare_exchange_n(&p->pid, &pid, 0, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&watch_lock);
	if (rte_eal_alarm_set(REAP_PERIOD_US, reap, NULL) < 0)
		VSOCK_LOG(ERR, "native API: cannot re-arm the secondary process check");
}

int native_proc_start(void)
{
	unsigned int i;

	procs = procs_find(true);
	if (!procs)
		return -ENOMEM;
	for (i = 0; i <= VSOCK_NATIVE_MAX_PROCS; i++)
		watch[i].fd = -1;
	/* Secondaries of an earlier start are stale (ep_native.c's epoch): forget them. */
	memset(procs, 0, sizeof(*procs));
	procs->proc[0].pid = getpid();
	lcores_of_this_process(procs->proc[0].lcores);
	procs->proc[0].ready = 1;
	if (rte_mp_action_register(ATTACH_ACTION, on_attach) < 0) {
		/* --no-shconf or --in-memory: there can be no secondary process anyway. */
		VSOCK_LOG(INFO, "native API: no secondary processes (%s)",
			  rte_strerror(rte_errno));
		return 0;
	}
	if (rte_eal_alarm_set(REAP_PERIOD_US, reap, NULL) < 0) {
		rte_mp_action_unregister(ATTACH_ACTION);
		return -ENOMEM;
	}
	serving = true;
	return 0;
}

void native_proc_stop(void)
{
	unsigned int i;

	if (!serving)
		return;
	rte_eal_alarm_cancel(reap, NULL);
	rte_mp_action_unregister(ATTACH_ACTION);
	pthread_mutex_lock(&watch_lock);
	for (i = 0; i <= VSOCK_NATIVE_MAX_PROCS; i++)
		watch_drop(i);
	pthread_mutex_unlock(&watch_lock);
	serving = false;
}

static bool lcores_clash(unsigned int slot)
{
	const uint64_t *mine = procs->proc[slot].lcores;
	unsigned int i, w;

	for (i = 0; i <= VSOCK_NATIVE_MAX_PROCS; i++) {
		const struct native_proc *p = &procs->proc[i];

		if (i == slot || !__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE))
			continue;
		for (w = 0; w < LCORE_WORDS; w++) {
			if (p->lcores[w] & mine[w]) {
				VSOCK_LOG(ERR, "native API: lcore %u of this process is also used by "
					  "%s %d: give each process its own lcore ids (EAL "
					  "--lcores, e.g. --lcores 8@1)",
					  w * 64 + (unsigned int)__builtin_ctzll(p->lcores[w] & mine[w]),
					  i ? "secondary process" : "the primary process", p->pid);
				return true;
			}
		}
	}
	return false;
}

static int slot_claim(void)
{
	unsigned int i;

	for (i = 1; i <= VSOCK_NATIVE_MAX_PROCS; i++) {
		struct native_proc *p = &procs->proc[i];
		int32_t free_slot = 0;

		if (!__atomic_compare_exchange_n(&p->pid, &free_slot, getpid(), false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		lcores_of_this_process(p->lcores);
		/* Release: a process that sees us ready sees our lcores. */
		__atomic_store_n(&p->ready, 1, __ATOMIC_RELEASE);
		/*
		 * Full fence (store->load) before reading the others' flags: of two processes
		 * attaching at once, at least one sees the other and refuses itself.
		 */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (lcores_clash(i)) {
			__atomic_store_n(&p->ready, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&p->pid, 0, __ATOMIC_RELEASE);
			return -EBUSY;
		}
		return (int)i;
	}
	VSOCK_LOG(ERR, "native API: %d secondary processes attached already",
		  VSOCK_NATIVE_MAX_PROCS);
	return -ENOSPC;
}

static void slot_free(unsigned int slot)
{
	int32_t me = getpid();

	/* A primary that restarted since forgot us: the slot may be someone else's now. */
	if (__atomic_load_n(&procs->proc[slot].pid, __ATOMIC_RELAXED) != me)
		return;
	__atomic_store_n(&procs->proc[slot].ready, 0, __ATOMIC_RELAXED);
	__atomic_compare_exchange_n(&procs->proc[slot].pid, &me, 0, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

static void wake_fds_close(void)
{
	unsigned int lcore;

	for (lcore = 0; lcore < RTE_MAX_LCORE; lcore++) {
		int fd = ep_waker_fd(lcore);

		if (fd >= 0) {
			close(fd);
			ep_waker_set_fd(lcore, -1);
		}
	}
}

/* Ask the primary for its workers' eventfds, RTE_MP_MAX_FD_NUM at a time. */
static int wake_fds_fetch(unsigned int slot)
{
	uint32_t first = 0;

	while (first < RTE_MAX_LCORE) {
		struct rte_mp_msg req = { .len_param = sizeof(struct attach_req) };
		struct timespec ts = { .tv_sec = ATTACH_TIMEOUT_S };
		struct rte_mp_reply reply = { 0 };
		const struct attach_reply *rep;
		const struct rte_mp_msg *m;
		uint32_t i;

		strlcpy(req.name, ATTACH_ACTION, sizeof(req.name));
		*(struct attach_req *)req.param = (struct attach_req){
			.first = first, .slot = slot, .pid = getpid(),
		};
		if (rte_mp_request_sync(&req, &reply, &ts) < 0 || reply.nb_received != 1) {
			VSOCK_LOG(ERR, "native API: the primary process does not answer (%s)",
				  rte_strerror(rte_errno));
			free(reply.msgs);
			return -ETIMEDOUT;
		}
		m = &reply.msgs[0];
		rep = (const void *)m->param;
		if (m->len_param != sizeof(*rep) || rep->nb != (uint32_t)m->num_fds ||
		    rep->next <= first) {
			for (i = 0; i < (uint32_t)m->num_fds; i++)
				close(m->fds[i]);
			free(reply.msgs);
			return -EPROTO;
		}
		for (i = 0; i < rep->nb; i++) {
			if (rep->lcore[i] < RTE_MAX_LCORE && ep_waker_fd(rep->lcore[i]) < 0)
				ep_waker_set_fd(rep->lcore[i], m->fds[i]);
			else
				close(m->fds[i]);
		}
		first = rep->next;
		free(reply.msgs);
	}
	return 0;
}

int vsock_native_attach(void)
{
	int rc, slot;

	if (rte_eal_process_type() != RTE_PROC_SECONDARY)
		return -EINVAL;
	if (my_slot >= 0)
		return -EALREADY;
	procs = procs_find(false);
	if (!procs || ep_pipe_pool_attach() < 0 || ep_sibling_attach() < 0) {
		rc = -ENODEV;
		goto fail;
	}
	slot = slot_claim();
	if (slot < 0) {
		rc = slot;
		goto fail;
	}
	rc = ep_native_attach((uint8_t)slot);
	if (rc == 0)
		rc = wake_fds_fetch((unsigned int)slot);
	if (rc < 0) {
		ep_native_detach();
		wake_fds_close();
		slot_free((unsigned int)slot);
		goto fail;
	}
	my_slot = slot;
	VSOCK_LOG(INFO, "native API: attached as secondary process %d", slot);
	return 0;
fail:
	ep_sibling_detach();
	ep_pipe_pool_detach();
	procs = NULL;
	return rc;
}

int vsock_native_detach(void)
{
	if (my_slot < 0)
		return -ENODEV;
	/* Our handles, unless the primary stopped: then they are gone already. */
	ep_native_release_owner((uint8_t)my_slot, false);
	ep_native_detach();
	ep_sibling_detach();
	ep_pipe_pool_detach();
	wake_fds_close();
	slot_free((unsigned int)my_slot);
	procs = NULL;
	my_slot = -1;
	return 0;
}
