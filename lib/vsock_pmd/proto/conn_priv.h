/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_CONN_PRIV_H
#define VSOCK_PMD_CONN_PRIV_H

/*
 * Inside the connection table: the state both halves of the protocol share, conn_table.c
 * (slots, lookup, lists, timers, the RST queue) and conn.c (the state machine and credit).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rte_hash.h>

#include "conn.h"
#include "ep.h"

/* One read from a host socket; SEQPACKET messages up to this size (larger ones reset). */
#define READ_CHUNK (64u * 1024)

/* RSTs for packets without a connection, waiting for a guest rx buffer. */
#define RST_QUEUE_SIZE 256

enum conn_state {
	CS_FREE,
	CS_LINE,	/* host connected, CONNECT line being read; not hashed yet */
	CS_REQUEST,	/* REQUEST owed/sent to the guest for a host CONNECT */
	CS_ESTABLISHED,
	CS_CLOSING,	/* we sent SHUTDOWN RCV|SEND, host end closed; waiting for guest RST */
	CS_DEAD,	/* RST owed to the guest; freed once it is written */
	CS_ACCEPT_WAIT,	/* guest REQUEST to a pipe: waiting for the far side to accept */
};

/* Replies owed to the guest (conn.ctl_pending), emitted in this order of bits. */
#define CTL_RST		(1u << 0)
#define CTL_REQUEST	(1u << 1)
#define CTL_RESPONSE	(1u << 2)
#define CTL_SHUTDOWN	(1u << 3)
#define CTL_CREDIT	(1u << 4)

/* conn.lists: list membership. */
#define L_WORK		(1u << 0)
#define L_CTL		(1u << 1)
#define L_DATA		(1u << 2)
#define L_TIMER		(1u << 3)
#define L_QWAIT		(1u << 4)	/* on the quota list (work_link): waits for mbufs to read */
#define L_POLLED	(1u << 5)	/* on the polled list: its endpoint has no events */

/*
 * One vsock connection. Its counters and queues are named by the way their bytes go
 * (README.md here): the spec names its counters from the sender's side (tx_cnt), which for
 * the device is the reverse of virtio's tx and rx rings.
 */
struct conn {
	TAILQ_ENTRY(conn) work_link;
	TAILQ_ENTRY(conn) ctl_link;
	TAILQ_ENTRY(conn) data_link;
	TAILQ_ENTRY(conn) timer_link;
	TAILQ_ENTRY(conn) poll_link;
	uint64_t deadline;
	uint64_t peer_cid;	/* VSOCK_HOST_CID, or the other guest's CID */
	struct mq to_host;	/* guest -> host, waiting for the endpoint to take it */
	struct mq to_guest;	/* host -> guest, waiting for an rx buffer and credit */
	struct ep ep;		/* the host end */
	uint32_t gen;		/* bumped on free: stale endpoint events are ignored */
	uint32_t guest_port;
	uint32_t host_port;
	uint16_t type;
	uint8_t state;
	uint8_t lists;
	uint8_t ctl_pending;
	uint8_t shut_to_guest;	/* SHUTDOWN flags owed or sent to the guest */
	uint8_t guest_shut;	/* SHUTDOWN flags received from the guest */
	uint8_t stalled;	/* counted one credit stall, not over yet */
	uint8_t hashed;
	/* Guest -> host: our receive buffer. */
	uint32_t from_guest_cnt;	/* bytes taken from the guest */
	uint32_t fwd_cnt;	/* of those, taken by the host end */
	uint32_t fwd_sent;	/* fwd_cnt in our last header to the guest */
	/* Host -> guest: the guest's receive buffer. */
	uint32_t to_guest_cnt;	/* bytes sent to the guest */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
};

/* Idle cost per connection, beyond its queued mbufs. */
_Static_assert(sizeof(struct conn) <= 256, "struct conn grew past 256 bytes");

TAILQ_HEAD(conn_list, conn);

struct rst_entry {
	uint64_t peer_cid;
	uint32_t guest_port;
	uint32_t host_port;
	uint16_t type;
};

struct conn_table {
	/*
	 * What every round reads, conn_table_quiet() first, together at the start: an idle
	 * VM's round costs these two cache lines, not one in each part of the table.
	 */
	struct conn_list work, ctl, data, timers;
	struct conn_list polled;	/* every connection whose endpoint has no events */
	struct conn_list qwait;		/* host reads waiting for to_guest_held to drop */
	uint32_t rst_head, rst_count;
	uint32_t nb_polled;
	uint32_t nb_used;
	struct ep_host host;	/* its first field, incoming, still in the second line */

	struct conn_table_conf conf;
	struct ep_io io;		/* scratch: io.n entries */
	struct rte_hash *hash;		/* (guest_port, host_port, peer_cid) -> conn */
	uint64_t timeout_tsc, line_timeout_tsc, connect_timeout_tsc;
	uint32_t next_port;	/* next host port offset for host -> guest connections */
	uint32_t nb_free;
	uint32_t *free_idx;
	struct conn *conns;
	/*
	 * mbufs held per direction, against half of conf.mbuf_quota each (dir_quota):
	 * to_guest_held (the to_guest queues), and to_host_held (the to_host queues and the
	 * mbufs endpoints have not taken yet). Kept apart so that neither direction can starve
	 * the other: to_guest drains into the guest's rx ring whatever guest -> host waits for,
	 * which rules out a cycle of waits between two VMs.
	 */
	uint32_t to_guest_held, to_host_held;
	uint32_t dir_quota;		/* UINT32_MAX without a quota */
	/*
	 * The guest packet written in part when the rest could not be queued (-EAGAIN): its
	 * connection and the bytes already written. The caller presents that packet again
	 * first, with the header it parsed the first time (conn_from_guest_partial()); at most
	 * one per table, since the packets after it wait behind it.
	 */
	struct conn *partial;
	uint32_t partial_off;
	struct rst_entry rst[RST_QUEUE_SIZE];
	struct conn_stats stats;
};

/* ---- conn_table.c ---- */

/* A free slot, or NULL: the table is full. The caller opens its endpoint. */
struct conn *conn_alloc(struct conn_table *t);
/* The token an endpoint's events come back with. */
uint64_t conn_token(const struct conn_table *t, const struct conn *c);
/* The connection behind an event's token; NULL when it closed since. */
struct conn *conn_of_token(struct conn_table *t, uint64_t token);
int conn_hash(struct conn_table *t, struct conn *c);
/* The connection of (guest_port, host_port) with @p peer_cid, or NULL. */
struct conn *conn_lookup(const struct conn_table *t, uint32_t guest_port, uint32_t host_port,
			 uint64_t peer_cid);
/* Its endpoint let go, off every list, mbufs back: the slot is free again. */
void conn_free(struct conn_table *t, struct conn *c);
/* Let go of the endpoint (ep_close()), off the polled list. */
void conn_ep_close(struct conn_table *t, struct conn *c, bool clean);
/* After the endpoint opened: on the polled list if it has no events. */
void conn_ep_opened(struct conn_table *t, struct conn *c);

void work_add(struct conn_table *t, struct conn *c);
void qwait_add(struct conn_table *t, struct conn *c);
unsigned int qwait_wake(struct conn_table *t, unsigned int max);
void ctl_add(struct conn_table *t, struct conn *c, uint8_t bit);
void ctl_del(struct conn_table *t, struct conn *c);
void data_del(struct conn_table *t, struct conn *c);
void timer_del(struct conn_table *t, struct conn *c);
void timer_set(struct conn_table *t, struct conn *c);

/* ---- conn.c, for conn_host.c ---- */

/* End with an RST to the guest; the slot lives on until it is written. */
void conn_end(struct conn_table *t, struct conn *c);
void conn_reset(struct conn_table *t, struct conn *c, enum conn_err why);
/* Tell the guest what the host end did, once the data before it is delivered. */
void host_shutdown_check(struct conn_table *t, struct conn *c);
/* Queued guest bytes to the host end. False: the connection was reset. */
bool conn_flush(struct conn_table *t, struct conn *c, uint32_t *moved);
/* The host end into to_guest within credit and quota. True: more can be read now. */
bool conn_read(struct conn_table *t, struct conn *c, uint32_t *moved);

/* RST from @p peer_cid for a packet that has no connection (or must not get one). */
void rst_queue_from(struct conn_table *t, const struct vsock_hdr *h, uint64_t peer_cid);

/*
 * Bytes the guest can still take: peer_buf_alloc - (to_guest_cnt - peer_fwd_cnt), never
 * negative.
 */
static inline uint32_t peer_credit(const struct conn *c)
{
	uint32_t in_flight = c->to_guest_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

/* ---- credit (conn.c and conn_host.c) ---- */

/* mbufs left under @p quota when @p held are taken. */
static inline uint32_t quota_left(uint32_t held, uint32_t quota)
{
	return held >= quota ? 0 : quota - held;
}

/* Host -> guest bytes queued per connection: guest credit bounds it too. */
#define TO_GUEST_MAX (64u * 1024)
/* With a quota, a connection's host reads may always fill this many mbufs, whatever its share. */
#define TO_GUEST_SHARE_MIN 2u

/* Bytes of to_guest the guest may be sent now. */
static inline uint32_t sendable(const struct conn *c)
{
	return RTE_MIN(peer_credit(c), c->to_guest.bytes);
}

/* Whether conn_read() would read now: guest window open and room in to_guest. */
static inline bool can_read(const struct conn *c)
{
	uint32_t credit = peer_credit(c);

	if (c->state != CS_ESTABLISHED || !(c->ep.ev & EP_READABLE) || (c->ep.ev & EP_EOF))
		return false;
	/* One whole message at a time; a pipe brings pieces with their ends. */
	if (c->ep.caps & EP_CAP_WHOLE_MSG)
		return c->to_guest.bytes == 0 && credit > 0;
	return credit > c->to_guest.bytes && c->to_guest.bytes < TO_GUEST_MAX;
}

/*
 * A stream end read straight into the guest's rx buffers (direct_to_guest()) once to_guest is
 * empty: bytes may be waiting in it, the guest has room for some and still reads.
 */
static inline bool direct_ready(const struct conn *c)
{
	return (c->ep.caps & EP_CAP_READV) && c->to_guest.bytes == 0 &&
	       (c->ep.ev & (EP_READABLE | EP_EOF | EP_RD_SHUT)) == EP_READABLE &&
	       peer_credit(c) > 0;
}

/* On the data list while the guest may be sent bytes. */
static inline void data_update(struct conn_table *t, struct conn *c)
{
	bool want = c->state == CS_ESTABLISHED && (sendable(c) > 0 || direct_ready(c));

	if (want && !(c->lists & L_DATA)) {
		c->lists |= L_DATA;
		TAILQ_INSERT_TAIL(&t->data, c, data_link);
	} else if (!want) {
		data_del(t, c);
	}
}

/*
 * The guest stops sending when it believes our buffer is full, and it learns about freed space
 * only from our headers. Tell it once half of what it believes it may send is gone and the host
 * has taken something since our last header, so a sender never stalls on stale credit.
 */
static inline void credit_check(struct conn_table *t, struct conn *c)
{
	uint32_t believed_used = c->from_guest_cnt - c->fwd_sent;

	if (c->fwd_cnt != c->fwd_sent && believed_used > t->conf.buf_alloc / 2 &&
	    c->state == CS_ESTABLISHED)
		ctl_add(t, c, CTL_CREDIT);
}

/* The guest's window may have opened: a read it stopped goes on. */
static inline void credit_resume(struct conn_table *t, struct conn *c)
{
	if (can_read(c)) {
		c->stalled = 0;
		work_add(t, c);
	}
}

/* Bytes the guest may still send: buf_used + len <= buf_alloc, as it must check itself. */
static inline uint32_t from_guest_room(const struct conn_table *t, const struct conn *c)
{
	return t->conf.buf_alloc - (c->from_guest_cnt - c->fwd_cnt);
}

/*
 * The mbuf quota. Each direction may hold dir_quota mbufs; on the host side each
 * connection reads up to its equal share of that (at least TO_GUEST_SHARE_MIN), so that
 * connections whose guest does not read cannot take every mbuf from the others, and a VM
 * cannot take more than its share of the pool from the other VMs.
 */
static inline uint32_t to_guest_share_left(const struct conn_table *t, const struct conn *c)
{
	uint32_t share;

	if (t->dir_quota == UINT32_MAX)
		return UINT32_MAX;
	share = RTE_MAX(t->dir_quota / RTE_MAX(t->nb_used, 1u), TO_GUEST_SHARE_MIN);
	return quota_left(c->to_guest.nb, share);
}


#endif /* VSOCK_PMD_CONN_PRIV_H */
