/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waking a sleeping worker lcore from the far side of its pipe connections (ep_waker.h):
 * each process knows the workers' eventfds by lcore.
 */
#include <unistd.h>

#include <rte_common.h>
#include <rte_lcore.h>

#include "ep_waker.h"

/* This process's eventfd for each worker lcore's ep_waker, plus one (0: none known). */
static int waker_fds[RTE_MAX_LCORE];

void ep_waker_set_fd(unsigned int lcore, int fd)
{
	waker_fds[lcore] = fd < 0 ? 0 : fd + 1;
}

int ep_waker_fd(unsigned int lcore)
{
	return lcore < RTE_MAX_LCORE ? waker_fds[lcore] - 1 : -1;
}

void ep_waker_wake(struct ep_waker *w)
{
	uint64_t one = 1;
	ssize_t rc;
	int fd;

	/* The first far side to see the announcement writes; the sleeper clears it anyway. */
	if (!__atomic_exchange_n(&w->sleeping, 0, __ATOMIC_RELAXED))
		return;
	/*
	 * A process that was given no eventfd for this worker cannot wake it: the worker's
	 * epoll timeout bounds the wait instead.
	 */
	fd = ep_waker_fd(w->lcore);
	if (fd < 0)
		return;
	/* Only EAGAIN can fail it: the counter is full, so the worker wakes anyway. */
	rc = write(fd, &one, sizeof(one));
	RTE_SET_USED(rc);
}
