/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_CONN_CREDIT_H
#define VSOCK_PMD_CONN_CREDIT_H

/*
 * Credit both ways and the mbuf quota, inline: the protocol's files use them on every
 * packet. What the guest may still send us (from_guest_room()) and when to tell it more
 * (credit_check()); what we may still send it (peer_credit()) and whether a host end is read
 * now (can_read(), the quota's shares).
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>

#include "conn_table.h"

/*
 * Bytes the guest can still take: peer_buf_alloc - (to_guest_cnt - peer_fwd_cnt), never
 * negative.
 */
static inline uint32_t peer_credit(const struct conn *c)
{
	uint32_t in_flight = c->to_guest_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

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

/* Host bytes wait because the guest has no credit: counted once until it has again. */
static inline void credit_stall(struct conn_table *t, struct conn *c)
{
	if (!c->stalled) {
		c->stalled = 1;
		t->stats.credit_stalls++;
	}
}

#endif /* VSOCK_PMD_CONN_CREDIT_H */
