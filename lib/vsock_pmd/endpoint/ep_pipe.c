/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bytes of a pipe endpoint (ep.h): mbufs move whole between a connection's queues and
 * the pipe's two rings (ep_ring.h), no copy; the far side's flags become events.
 */
#include <limits.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ep.h"

/* mbufs per dequeue. */
#define PIPE_BURST 32

/*
 * Whether the far side's mbufs wait, and its EOF: a far side that said it sends no more
 * (EP_FIN, loaded before this look) has nothing left once the ring is empty.
 */
static void pipe_readable(struct ep *e, struct rte_ring *in)
{
	if (!rte_ring_empty(in)) {
		/* Once we read no more, what is left waits for the release. */
		if (!(e->ev & EP_RD_SHUT))
			e->ev |= EP_READABLE;
	} else if (e->ev & EP_FIN)
		e->ev = (uint16_t)((e->ev | EP_EOF) & ~EP_READABLE);
	else
		e->ev &= ~EP_READABLE;
}

void ep_pipe_poll(struct ep *e, uint32_t *held)
{
	struct rte_ring *in = e->ring->r[!e->side];
	/* Only we enqueue, so the count can only have dropped since our last write. */
	uint32_t left = e->held ? rte_ring_count(e->ring->r[e->side]) : 0;
	/* Acquire: whatever the far side enqueued before setting these flags is visible. */
	uint32_t peer = ep_ring_flags(e->ring, !e->side);

	/* The far side took some of the mbufs we put in the pipe: they are no longer ours. */
	if (left < e->held) {
		*held -= e->held - left;
		e->held = (uint16_t)left;
	}
	if (peer & EP_RING_ACCEPTED)
		e->ev |= EP_OPENED;
	if (peer & EP_RING_RST)
		e->ev |= EP_RESET;
	if (peer & EP_RING_CLOSED)
		e->ev |= EP_GONE;
	if (peer & (EP_RING_SHUT_RCV | EP_RING_CLOSED))
		e->ev |= EP_SHUT_RD;
	if (peer & EP_RING_SHUT_SEND)
		e->ev |= EP_FIN;
	pipe_readable(e, in);
}

/*
 * Queued guest bytes into the pipe, as far as it has room: a host socket's write. A far side
 * that reads no more gets nothing: the bytes are dropped as a shut socket would, so that the
 * guest's credit keeps flowing until it sees our SHUTDOWN.
 */
int ep_pipe_send(struct ep *e, struct mq *q, uint32_t *held, uint32_t *moved)
{
	struct rte_ring *out = e->ring->r[e->side];
	bool drop = ep_ring_flags(e->ring, !e->side) & (EP_RING_SHUT_RCV | EP_RING_CLOSED);
	unsigned int room = drop ? UINT_MAX : rte_ring_free_count(out);

	while (q->head && room) {
		struct rte_mbuf *m = mq_pop(q);

		*moved += m->data_len;
		/* In the pipe it still counts against our quota, until the far side takes it. */
		if (drop) {
			rte_pktmbuf_free_seg(m);
			(*held)--;
		} else {
			rte_ring_sp_enqueue(out, m);	/* single producer: room was counted */
			e->held++;
		}
		room--;
	}
	if (*moved && !drop)
		ep_ring_wake(e->ring, !e->side);
	return 0;
}

/* One mbuf (chain) from the far side into @p q, segment by segment. */
static void pipe_take(struct mq *q, uint32_t *held, struct rte_mbuf *m)
{
	while (m) {
		struct rte_mbuf *next = m->next;
		struct rte_mbuf *tail = q->tail;

		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		if (m->data_len) {
			mq_push(q, m, held);
		} else {
			/* An empty last piece still ends the message before it. */
			if ((m->packet_type & EP_RING_EOM) && tail &&
			    !(tail->packet_type & EP_RING_EOM))
				tail->packet_type |= m->packet_type & (EP_RING_EOM | EP_RING_EOR);
			rte_pktmbuf_free_seg(m);
		}
		m = next;
	}
}

/* mbufs from the pipe while @p q has less than @p want new bytes: a host socket's read. */
ssize_t ep_pipe_recv(struct ep *e, struct mq *q, uint32_t *held, uint32_t want,
		     uint32_t max_mbufs)
{
	struct rte_ring *in = e->ring->r[!e->side];
	uint32_t bytes0 = q->bytes, nb0 = q->nb;
	struct rte_mbuf *m[PIPE_BURST];
	bool moved = false;

	while (q->bytes - bytes0 < want && q->nb - nb0 < max_mbufs) {
		unsigned int i, n = RTE_MIN(max_mbufs - (q->nb - nb0), (uint32_t)PIPE_BURST);

		n = rte_ring_sc_dequeue_burst(in, (void **)m, n, NULL);
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
			pipe_take(q, held, m[i]);
		moved = true;
	}
	/* Room in the pipe: a far side whose queue waits for it may go on. */
	if (moved)
		ep_ring_wake(e->ring, !e->side);
	pipe_readable(e, in);
	return q->bytes - bytes0;
}
