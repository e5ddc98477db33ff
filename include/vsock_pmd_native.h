/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_NATIVE_H
#define VSOCK_PMD_NATIVE_H

/**
 * The native poll-mode host API (doc/native-api.md): a host DPDK program talks vsock to the
 * guests with mbufs, without a socket or a syscall. The program runs the accelerator in its
 * own process, or it is a DPDK secondary process of the one that does (dpdk-vsock-app
 * included) and calls vsock_native_attach() first.
 *
 * Each connection is a pair of single-producer single-consumer rte_rings between the
 * program's thread and the worker lcore polling the VM. The program gives mbufs to
 * vsock_native_send_burst() and takes mbufs from vsock_native_recv_burst(); the worker copies
 * them into and out of the guest's virtqueues under the vsock protocol's credit. Nothing
 * blocks: a full ring (the guest gives no credit, or reads slowly) shows as a short send,
 * an empty one as 0 received, and the connection's fate as a negative errno value.
 *
 * Rules:
 * - every function may be called once vsock_pmd_start() succeeded and until vsock_pmd_stop()
 *   (in a secondary process: between vsock_native_attach() and vsock_native_detach(), while
 *   the primary runs); before and after, they return -ENODEV;
 * - a connection handle is used by one thread at a time (its rings are single-producer,
 *   single-consumer); different connections may be used from different threads;
 * - listen, accept, connect and close allocate nothing, take no lock shared with the workers
 *   and make no syscall either; send and receive touch only the connection's two rings;
 * - a handle that was closed, or never was, gets -EBADF, never a crash.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;

/**
 * In a DPDK secondary process (EAL --proc-type=secondary, the primary's --file-prefix): use
 * the primary's accelerator. Call after rte_eal_init(), before any other call here. The
 * process's lcore ids must differ from the primary's and other attached secondaries' (EAL
 * --lcores, e.g. --lcores 8@1): mempool caches are per lcore id across the whole group.
 * Handles the process still holds when it exits are closed by the primary (within 0.2 s).
 *
 * @return 0, or -EINVAL (not a secondary process), -EALREADY, -ENODEV (the primary has not
 *   started the accelerator), -EBUSY (an lcore id in use by another process of the group),
 *   -ENOSPC (VSOCK_NATIVE_MAX_PROCS attached), -ETIMEDOUT (the primary does not answer).
 */
int vsock_native_attach(void);

/**
 * Close every handle of this secondary process (as vsock_native_close() and
 * vsock_native_listen_close() would) and leave the primary. No other thread of the process
 * may be in a call of this API meanwhile. @return 0 or -ENODEV.
 */
int vsock_native_detach(void);

/** Connection types, as virtio-vsock numbers them. */
#define VSOCK_NATIVE_STREAM 1
#define VSOCK_NATIVE_SEQPACKET 2

/** vsock_native_shutdown() directions. */
#define VSOCK_NATIVE_SHUT_RD 1	/**< we read no more: the guest's writes fail */
#define VSOCK_NATIVE_SHUT_WR 2	/**< we send no more: the guest reads EOF */

/** Most listeners at once, over every VM. */
#define VSOCK_NATIVE_MAX_LISTENERS 64
/** Secondary processes attached at once. */
#define VSOCK_NATIVE_MAX_PROCS 15
/** mbufs each direction of a connection holds before the sender sees backpressure. */
#define VSOCK_NATIVE_RING_SIZE 256

/** Where a connection goes. */
enum vsock_native_state {
	VSOCK_NATIVE_CONNECTING = 1,	/**< connect sent, the guest has not answered */
	VSOCK_NATIVE_ESTABLISHED,	/**< data flows both ways (as far as not shut down) */
	VSOCK_NATIVE_PEER_SHUT,		/**< the guest sends no more: all received */
	VSOCK_NATIVE_RESET,		/**< refused, reset, or the guest went away */
	VSOCK_NATIVE_CLOSED,		/**< the guest closed both ways: only close is left */
};

/** Both ends of a connection. */
struct vsock_native_info {
	uint64_t guest_cid;
	uint32_t guest_port;
	uint32_t host_port;	/**< our port, as the guest sees it (its peer on CID 2) */
	int type;		/**< VSOCK_NATIVE_STREAM or VSOCK_NATIVE_SEQPACKET */
};

/**
 * Accept guest connects to host port @p port of VM @p cid: a guest connecting to CID 2 port
 * @p port reaches this listener instead of the hybrid vsock socket "<uds>_<port>". Both
 * stream and seqpacket connections arrive; vsock_native_info() tells them apart.
 *
 * @return a listener handle (>= 0), or -ENODEV, -ENOENT (no VM @p cid), -EADDRINUSE (a
 *   listener on that port already), -ENOSPC (VSOCK_NATIVE_MAX_LISTENERS).
 */
int vsock_native_listen(uint64_t cid, uint32_t port);

/**
 * Stop listening. Connections accepted earlier stay; guests still waiting to be accepted
 * are refused (RST). @return 0, -ENODEV, -EBADF.
 */
int vsock_native_listen_close(int listener);

/**
 * Take the next guest connection waiting on @p listener. The guest's connect() completes
 * (RESPONSE) only now; a guest not accepted within its timeout (2 s) is refused.
 *
 * @return a connection handle (>= 0), or -EAGAIN (none waiting), -ENODEV, -EBADF.
 */
int vsock_native_accept(int listener);

/**
 * Connect to port @p port of the guest of VM @p cid; returns at once, the connection in
 * VSOCK_NATIVE_CONNECTING until the guest answers (vsock_native_state()).
 *
 * @return a connection handle (>= 0), or -ENODEV, -ENOENT (no VM @p cid), -EINVAL (type),
 *   -ECONNREFUSED (no guest attached to that VM now), -ENOBUFS (the VM's max_pipes in use,
 *   counted in its pipes_refused).
 */
int vsock_native_connect(uint64_t cid, uint32_t port, int type);

/** Where connection @p conn is now: an enum vsock_native_state, or -ENODEV, -EBADF. */
int vsock_native_state(int conn);

/** Both ends of @p conn. @return 0, -ENODEV, -EBADF. */
int vsock_native_info(int conn, struct vsock_native_info *info);

/**
 * Hand up to @p n mbufs to the guest; those taken belong to the library (freed once copied
 * into the guest), the rest stay the caller's. Any mbuf (chain) is fine: a stream sends its
 * bytes, a seqpacket connection sends each mbuf chain as one message (an mbuf of no bytes:
 * an empty message).
 *
 * @return mbufs taken: fewer than @p n (0 included) when the connection's ring is full,
 *   which is the guest's backpressure: try again later. Or -ENOTCONN (still connecting),
 *   -EPIPE (we shut down writing, or the guest shut down reading or closed),
 *   -ECONNRESET, -ENODEV, -EBADF, -EINVAL (NULL array with @p n > 0).
 */
int vsock_native_send_burst(int conn, struct rte_mbuf **pkts, uint16_t n);

/**
 * Take up to @p n mbufs the guest sent. A stream's mbufs are single segments in stream order;
 * a seqpacket connection returns one mbuf chain per whole message (of no bytes: an empty
 * message). The caller frees them.
 * Taking them is what returns credit to the guest.
 *
 * @return mbufs stored: 0 when nothing is there yet; -ESHUTDOWN once everything the guest
 *   sent was received and it sends no more (end of stream); -ENOTCONN (still connecting),
 *   -ECONNRESET, -ENODEV, -EBADF, -EINVAL.
 */
int vsock_native_recv_burst(int conn, struct rte_mbuf **pkts, uint16_t n);

/**
 * Shut down one or both directions (VSOCK_NATIVE_SHUT_RD | VSOCK_NATIVE_SHUT_WR), as
 * shutdown(2): after SHUT_WR the guest reads what was sent, then EOF.
 * @return 0, -ENOTCONN, -ENODEV, -EBADF, -EINVAL.
 */
int vsock_native_shutdown(int conn, int how);

/**
 * Release the handle. A connection still established is closed as close(2) would: the guest
 * reads what was sent, then SHUTDOWN both ways (its writes fail). One still connecting is
 * abandoned (the guest gets an RST). mbufs not received are freed. @return 0, -ENODEV, -EBADF.
 */
int vsock_native_close(int conn);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_PMD_NATIVE_H */
