/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_NATIVE_H
#define VSOCK_PMD_EP_NATIVE_H

/**
 * The library side of the native host API (include/vsock_pmd_native.h): its listeners, as
 * the workers see them when a guest connects to the host.
 */

#include <stdbool.h>
#include <stdint.h>

struct rte_ring;

/**
 * The primary: create the listeners' backlogs (rte_rings) on NUMA node @p socket and open
 * the API to every process of the group. @return 0 or -ENOMEM.
 */
int ep_native_init(int socket);

/** Refuse what still waits on listeners, free their backlogs; the API returns -ENODEV after. */
void ep_native_fini(void);

/**
 * A secondary process (native_proc.c): use the primary's API, the handles it makes recorded
 * as @p owner's. @return 0 or -ENODEV (the primary's API is not up).
 */
int ep_native_attach(uint8_t owner);

/** A secondary process: stop using the primary's API (its calls return -ENODEV). */
void ep_native_detach(void);

/**
 * Close every listener and connection handle of process @p owner: it detaches (none of its
 * threads uses the API meanwhile), or it is @p dead, and then the table's lock is taken
 * back too if it died holding it. @return handles closed.
 */
unsigned int ep_native_release_owner(uint8_t owner, bool dead);

/**
 * The backlog (an rte_ring of struct ep_pipe *, MP/SC) of the listener on host port @p port
 * of VM @p cid, or NULL when no program listens there. Any worker, lock-free.
 */
struct rte_ring *ep_native_listener_backlog(uint64_t cid, uint32_t port);

struct ep_pipe;

/**
 * Put @p p on the backlog of the listener on host port @p port of VM @p cid, if one still
 * listens there: against vsock_native_listen_close(), which waits for an enqueue in progress
 * before it drains the backlog, so that no pipe is ever left on the backlog of a closed
 * listener. Any worker, lock-free. @return 0, -ECONNREFUSED (no listener now) or -ENOBUFS
 * (its backlog is full).
 */
int ep_native_listener_enqueue(uint64_t cid, uint32_t port, struct ep_pipe *p);

#endif /* VSOCK_PMD_EP_NATIVE_H */
