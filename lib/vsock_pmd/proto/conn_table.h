/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_CONN_TABLE_H
#define VSOCK_PMD_CONN_TABLE_H

/*
 * Inside the connection table (conn_table.c: slots, lookup, lists, timers, the RST queue):
 * the state the protocol's files share, conn.c (the guest's packets) and conn_host.c (the
 * host ends). Credit and the mbuf quota are conn_credit.h.
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
	/* The socket connection last read into the guest's buffers: conn_probe_host()'s. */
	uint64_t probe_token;
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

/* RST from @p peer_cid for a packet that has no connection (or must not get one). */
void rst_queue_from(struct conn_table *t, const struct vsock_hdr *h, uint64_t peer_cid);

/* ---- conn.c, for conn_host.c ---- */

/* End with an RST to the guest; the slot lives on until it is written. */
void conn_end(struct conn_table *t, struct conn *c);
void conn_reset(struct conn_table *t, struct conn *c, enum conn_err why);
/* Tell the guest what the host end did, once the data before it is delivered. */
void host_shutdown_check(struct conn_table *t, struct conn *c);
/* Queued guest bytes to the host end. False: the connection was reset. */
bool conn_flush(struct conn_table *t, struct conn *c, uint32_t *moved);

#endif /* VSOCK_PMD_CONN_TABLE_H */
