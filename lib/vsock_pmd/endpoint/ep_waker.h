/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_WAKER_H
#define VSOCK_PMD_EP_WAKER_H

#include <stdint.h>

/**
 * How a worker lcore that sleeps while idle (--wait-mode notify) is woken by the far sides
 * of its pipe connections: it sets @p sleeping, then looks at every pipe once more, then
 * sleeps on its eventfd. A far side that changes a pipe (its rte_rings or flags) and then
 * finds @p sleeping set writes the eventfd. One of the two always sees the other's store (both fence in
 * between), so no change is missed; and a polling lcore costs a far side a fence and a load,
 * no syscall. The eventfd is found by @p lcore in a per-process table: a secondary process
 * has its own descriptor for it (native_proc.c).
 */
struct ep_waker {
	uint32_t sleeping;
	uint32_t lcore;		/* the worker's lcore: its eventfd in ep_waker_fd() */
};

/** In this process, the worker of @p lcore is woken through eventfd @p fd (-1: none now). */
void ep_waker_set_fd(unsigned int lcore, int fd);

/** This process's eventfd for the worker of @p lcore, or -1. */
int ep_waker_fd(unsigned int lcore);

/** Slow path of ep_wake(): clear @p w->sleeping and write its eventfd once. */
void ep_waker_wake(struct ep_waker *w);

/** After a change the lcore behind @p w must see: wake it if it announced a sleep. */
static inline void ep_wake(struct ep_waker *w)
{
	if (w == NULL)
		return;
	/*
	 * Full fence (store->load): the pipe we just changed is visible before we read
	 * sleeping. Pairs with the worker's fence between its store of sleeping and its last
	 * look at the pipes (worker_sleep()).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED))
		ep_waker_wake(w);
}

#endif /* VSOCK_PMD_EP_WAKER_H */
