/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_CONN_H
#define VSOCK_PMD_CONN_H

/**
 * The vsock connection table of one device: the per-connection state machine and credit
 * accounting both ways, between the guest's packets and the host ends (endpoint/facade/ep.h:
 * hybrid vsock sockets, pipes to other guests and native programs).
 *
 * One table belongs to one device and is used by one lcore at a time: no call takes a lock.
 * The polling worker drives it with three calls:
 * - conn_from_guest_run() for the packets of each burst dequeued from the tx ring;
 * - conn_to_guest_burst() for the rx buffers of each burst while conn_has_output() says so;
 * - conn_poll_host() once per round, for the host sockets and the timers.
 * Nothing here blocks: every socket is non-blocking and every call does bounded work.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/virtio_vsock.h>

#include <vsock_pmd.h>

#include "vsock_pkt.h"

struct ep_waker;
struct rte_mempool;
struct rte_ring;
struct conn_table;

/** Defaults for struct conn_table_conf. */
#define CONN_MAX_DEFAULT VSOCK_PMD_MAX_CONNS_DEFAULT
#define CONN_BUF_ALLOC_DEFAULT VSOCK_PMD_TX_BUFFER_DEFAULT
#define CONN_TIMEOUT_MS_DEFAULT VSOCK_PMD_TIMEOUT_MS_DEFAULT

/**
 * TSC cycles of a timeout of @p ms, never fewer than the time: DPDK measures the TSC rate and
 * rounds it to the nearest 10 MHz, so the real rate may be up to 5 MHz higher (a deadline of
 * the rounded rate alone came 0.2% early on a 2694.888 MHz machine: 699 ms of 700 set).
 */
static inline uint64_t conn_tsc_of_ms(uint64_t hz, uint64_t ms)
{
	return (hz + 5000000) * ms / 1000;
}

/** What conn_table_create() needs; conn_table_conf_init() fills the defaults. */
struct conn_table_conf {
	uint64_t guest_cid;
	/** Hybrid vsock path: guest connects to host port P go to "<uds_path>_<P>". */
	const char *uds_path;
	/**
	 * Listening socket on uds_path for host -> guest CONNECTs, non-blocking; created and owned
	 * (closed, unlinked) by the caller. -1: the host cannot connect to the guest.
	 */
	int listen_fd;
	/** Mbufs for queued payload, both ways; the table takes and returns them one lcore. */
	struct rte_mempool *pool;
	/**
	 * Most mbufs the table may hold at once (its VM's share of a pool shared with other
	 * VMs), half for each direction; 0: no limit. When a direction's half is used up, host
	 * reads wait and guest packets stay in the tx ring: backpressure, never loss.
	 */
	uint32_t mbuf_quota;
	int socket_id;
	/** Connections, CONNECT lines in progress included. */
	uint32_t max_conns;
	/** Our receive buffer per connection, advertised to the guest as buf_alloc. */
	uint32_t buf_alloc;
	/** Guest RST after our full SHUTDOWN. */
	uint32_t timeout_ms;
	/** A host program's CONNECT line. */
	uint32_t line_timeout_ms;
	/** The guest's answer to our REQUEST; a pipe's far side's accept of the guest's REQUEST. */
	uint32_t connect_timeout_ms;
	/** VIRTIO_VSOCK_F_SEQPACKET negotiated; conn_table_set_seqpacket() changes it later. */
	bool seqpacket;
	/**
	 * No guest drives the table yet (a device before its first frontend);
	 * conn_table_set_guest() changes it later. conn_table_conf_init(): false, a guest is there.
	 */
	bool no_guest;
	/**
	 * Pipe connections (ep_pipe.h), whose far side is another guest or a host program:
	 * where a guest REQUEST that no host socket takes goes (ep_route(): an rte_ring to put the
	 * pipe on, or NULL), and the rte_ring (MP/SC) others put their connections to this
	 * guest on. Both NULL: host sockets only.
	 */
	struct rte_ring *(*route)(uint64_t src_cid, uint64_t dst_cid, uint32_t dst_port);
	struct rte_ring *incoming;
	/**
	 * The worker polling this table, for the far sides of its pipe connections to wake
	 * when it sleeps (ep_pipe.h); NULL when it never sleeps.
	 */
	struct ep_waker *waker;
};

/**
 * Protocol errors beyond a malformed header (those count in conn_stats.pkt_err by
 * enum vsock_pkt_err). Each is answered with an RST unless the packet was an RST.
 */
enum conn_err {
	CONN_ERR_ROUTE,		/* dst_cid is a guest this one may not reach (no shared group) */
	CONN_ERR_NO_CONN,	/* packet other than REQUEST for a connection that does not exist */
	CONN_ERR_STATE,		/* op not valid in the connection's state (RW before RESPONSE) */
	CONN_ERR_CREDIT,	/* the guest sent more than our buf_alloc allows */
	CONN_ERR_MSG_SIZE,	/* SEQPACKET message too large for the other side */
	CONN_ERR_CONNECT_LINE,	/* malformed, overlong, unfinished or abandoned CONNECT line */
	CONN_ERR_TIMEOUT,	/* the guest answered neither our REQUEST nor our SHUTDOWN in time */
	CONN_ERR_HOST_IO,	/* host socket error: peer gone while we write, reset, ... */
	CONN_ERR_MAX
};

/** Short stable name of @p err ("route", "no_conn", ...), for stats and telemetry. */
const char *conn_err_str(enum conn_err err);

/** Counters of one table; monotonic, never reset by conn_table_reset(). */
struct conn_stats {
	uint64_t conns_opened;		/* reached ESTABLISHED */
	uint64_t conns_closed;		/* ended by SHUTDOWN/RST exchange or host close */
	uint64_t conns_reset;		/* ended by an RST we sent for an error or a timeout */
	/* guest REQUEST: nothing listening, or table full; host connect while no guest is there */
	uint64_t conns_refused;
	uint64_t table_full;		/* REQUESTs or host connects refused for max_conns */
	uint64_t credit_stalls;		/* host data waiting because the guest has no credit */
	uint64_t pkt_err[VSOCK_PKT_ERR_MAX];	/* malformed guest headers, by kind */
	uint64_t proto_err[CONN_ERR_MAX];
	uint64_t rst_dropped;		/* RST for a packet without connection lost: queue full */
	uint64_t pool_empty;		/* no mbuf: mempool or the table's quota used up */
	uint64_t from_guest_pkts, from_guest_bytes;	/* packets taken, payload bytes */
	uint64_t to_guest_pkts, to_guest_bytes;		/* packets written, payload bytes */
	uint64_t host_read_bytes;	/* read from host ends */
	uint64_t host_written_bytes;	/* written to host ends (guest data) */
};

/** Fill @p conf with the defaults; the caller still sets guest_cid, uds_path, listen_fd, pool. */
void conn_table_conf_init(struct conn_table_conf *conf);

/**
 * Create a table. @return NULL with rte_errno set on failure (bad conf, no memory, epoll).
 */
struct conn_table *conn_table_create(const struct conn_table_conf *conf);

/** Close every host socket (not the listener), free everything. NULL is allowed. */
void conn_table_destroy(struct conn_table *t);

/**
 * The guest went away (device destroyed, guest reboot): close every host socket (the host side
 * reads EOF), drop every queued byte and pending reply. The table is then empty and ready for
 * the next guest. The listener stays.
 */
void conn_table_reset(struct conn_table *t);

/** Accept SEQPACKET from the guest or not, as the device negotiated. Between packets only. */
void conn_table_set_seqpacket(struct conn_table *t, bool on);

/**
 * Whether a guest drives the table. Without one, host connects get the answer of a connect
 * to an absent peer at once: a complete CONNECT line closes its socket without an OK (the
 * client reads EOF), and connections on the incoming rte_ring are refused; both count in
 * conns_refused. Lines still in progress stay, and go on to the guest if one comes first.
 * From the table's lcore, between calls.
 */
void conn_table_set_guest(struct conn_table *t, bool attached);

/**
 * Take one packet from the guest's tx ring. @p raw_hdr and the @p payload pieces (hdr.len
 * bytes in all, possibly more) point into guest memory and are used only during the call.
 *
 * @return 0 when the packet is consumed (its descriptor can be completed), whatever its
 *   outcome; -EAGAIN when it cannot be taken now (mempool exhausted): the caller leaves it in
 *   the ring and presents this same packet again, before any other from this ring. Stream data
 *   is never dropped. When part of it was written already (conn_from_guest_partial()), the
 *   packet presented again must carry the header bytes passed the first time; the packet
 *   presented next, whatever it is, is taken to be that one.
 */
int conn_from_guest(struct conn_table *t, const struct virtio_vsock_hdr *raw_hdr,
		    const struct iovec *payload, unsigned int iovcnt);

/**
 * conn_from_guest() for @p n consecutive packets of any kind (@p raw[i], payload in the next
 * @p iovcnt[i] entries of @p iov). Each run among them of stream data for one connection goes
 * to its host end in one call (one sendmsg() on a socket); anything else is taken packet by
 * packet.
 *
 * @return the packets consumed, from the first; fewer than @p n means the next one could not
 *   be taken now (as -EAGAIN above): it and the rest are presented again later.
 */
unsigned int conn_from_guest_run(struct conn_table *t, const struct virtio_vsock_hdr *raw,
				 const struct iovec *iov, const unsigned int *iovcnt,
				 unsigned int n);

/**
 * True when the packet that conn_from_guest() or conn_from_guest_run() could not take was
 * written in part: what was counted of it (credit, fwd_cnt) came from the header passed
 * then, so the caller presents it again with that header, not one read again from guest
 * memory, which the guest may have rewritten meanwhile. O(1).
 */
bool conn_from_guest_partial(const struct conn_table *t);

/**
 * The packet written in part cannot be presented again (the guest replaced its descriptors):
 * its connection, whose stream now has a hole, is reset (proto_err state). No other is
 * touched.
 */
void conn_from_guest_abandon(struct conn_table *t);

/**
 * Fill guest rx buffers, in order, with the packets owed to the guest: control packets first,
 * then data round-robin across connections, never beyond the guest's credit. Buffer i is the
 * next @p iovcnt[i] entries of @p iov (its writable pieces: header first, payload after) and
 * holds @p cap[i] bytes, at least a header. A stream host end is read straight into the
 * payload of as many consecutive buffers as one read fills (one recvmsg() for them all).
 *
 * @return the buffers filled, from the first, each with its bytes (sizeof(struct
 *   virtio_vsock_hdr) + payload) in @p len[i]; fewer than @p n when nothing more is owed now.
 */
unsigned int conn_to_guest_burst(struct conn_table *t, const struct iovec *iov,
				 const unsigned int *iovcnt, const uint32_t *cap, unsigned int n,
				 uint32_t *len);

/**
 * conn_to_guest_burst() for one buffer (writable pieces @p buf) of any size; one smaller
 * than a header is left unused. @return bytes written, 0 when nothing is owed.
 */
uint32_t conn_to_guest(struct conn_table *t, const struct iovec *buf, unsigned int iovcnt);

/** True when conn_to_guest() has a packet to write. O(1). */
bool conn_has_output(const struct conn_table *t);

/**
 * True when nothing is left for conn_service_host() or conn_to_guest() until the guest or a
 * host end acts: no timer, no queued work, nothing owed to the guest, no end that must be
 * polled, no pipe waiting to be accepted. O(1), a few cache lines: a worker skips such a
 * table on rounds where neither its guest's ring nor its host sockets have anything new.
 */
bool conn_table_quiet(const struct conn_table *t);

/** What conn_table_idle() says of a table. */
enum conn_idle {
	CONN_BUSY,		/* conn_service_host() has work: a timer, queued work, a pipe */
	CONN_QUIET,		/* conn_table_quiet() */
	CONN_OWES_GUEST,	/* quiet but for packets owed to the guest (conn_has_output()) */
};

/**
 * conn_table_quiet() and conn_has_output() in one look: a table whose only work is for the
 * guest's rx buffers waits for nothing else while its guest has none. O(1).
 */
enum conn_idle conn_table_idle(const struct conn_table *t);

/**
 * Connections whose host end is not a polled pipe: a socket, whose events come through the
 * table's epoll set (its listener's too, but a new connection may wait). O(1).
 */
uint32_t conn_socket_count(const struct conn_table *t);

/**
 * An idle round's look at the host without asking epoll first: when the table's one socket
 * connection is a stream its guest may be sent bytes on, it goes on the data list as if
 * readable, so that the next conn_to_guest_burst() reads it (one recvmsg(), which finds it
 * empty or brings the bytes) where an epoll_wait() would have had to come first. Its epoll
 * edges stay queued for the next conn_poll_host(), which takes listeners, hang-ups and the
 * writable side as before. @return whether the connection will be read.
 */
bool conn_probe_host(struct conn_table *t);

/**
 * Serve the host side: accept connections, read CONNECT lines, move bytes between host sockets
 * and the per-connection queues within credit, notice host closes, expire timers. At most
 * @p budget units of work (socket events and connection services).
 *
 * @param now_tsc rte_get_tsc_cycles() of the caller's round: timers due by then expire. (A
 *        timer's deadline counts from when it is set, whatever the last round's clock.)
 * @return the work done (0 when idle).
 */
unsigned int conn_poll_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget);

/**
 * conn_poll_host() without asking the kernel for new socket events: serve the connections
 * already known to have work, and the timers. For rounds where a readiness syscall would cost
 * more than it could bring.
 */
unsigned int conn_service_host(struct conn_table *t, uint64_t now_tsc, unsigned int budget);

/**
 * Serve every pipe connection and the incoming rte_ring once, without the per-round budget:
 * for a worker about to sleep, after it announced it (ep_waker), so that nothing a far
 * side did before it saw the announcement stays unseen. @return the work done.
 */
unsigned int conn_pipes_sweep(struct conn_table *t);

/**
 * The epoll descriptor of the table's host sockets and listener: readable when
 * conn_poll_host() has events to take. For a worker that sleeps while idle.
 */
int conn_table_epoll_fd(const struct conn_table *t);

/** Open connections, CONNECT lines in progress included. */
uint32_t conn_count(const struct conn_table *t);

/** The table's counters. */
const struct conn_stats *conn_table_stats(const struct conn_table *t);

struct vsock_pmd_conn_info;

/**
 * Describe the open connections (CONNECT lines in progress included), in slot order: up to
 * @p max into @p out. On the table's lcore only, between packets.
 * @return the number of open connections, which may exceed @p max.
 */
uint32_t conn_table_snapshot(const struct conn_table *t, struct vsock_pmd_conn_info *out,
			     uint32_t max);

#endif /* VSOCK_PMD_CONN_H */
