/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_QUEUE_H
#define VSOCK_PMD_EP_QUEUE_H

/**
 * A queue of payload mbufs, one direction of one connection: what the protocol holds
 * between the guest and an endpoint (ep.h). Single-segment mbufs linked through next; a
 * SEQPACKET message's last piece carries MQ_EOM (and MQ_EOR) in packet_type, as a pipe
 * carries them too (ep_pipe.h), so that mbufs move between the two as they are.
 *
 * Each mbuf in a queue also counts in a @p held counter of its owner, the mbuf quota of
 * its direction (conn.c).
 */

#include <stdint.h>

#include <rte_mbuf.h>

/* packet_type bits of a SEQPACKET message's last piece (VIRTIO_VSOCK_SEQ_EOM/EOR). */
#define MQ_EOM		(1u << 0)
#define MQ_EOR		(1u << 1)

struct mq {
	struct rte_mbuf *head, *tail;
	uint32_t bytes;
	uint32_t nb;		/* mbufs */
};

static inline void mq_push(struct mq *q, struct rte_mbuf *m, uint32_t *held)
{
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += m->data_len;
	q->nb++;
	(*held)++;
}

/** The head mbuf, out of the queue (its owner still counts it in held). */
static inline struct rte_mbuf *mq_pop(struct mq *q)
{
	struct rte_mbuf *m = q->head;

	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= m->data_len;
	q->nb--;
	m->next = NULL;
	m->nb_segs = 1;
	m->pkt_len = m->data_len;
	return m;
}

/** Drop @p n bytes (at most q->bytes) from the head of @p q. */
static inline void mq_consume(struct mq *q, uint32_t n, uint32_t *held)
{
	q->bytes -= n;
	while (n) {
		struct rte_mbuf *m = q->head;

		if (n < m->data_len) {
			m->data_off += n;
			m->data_len -= n;
			return;
		}
		n -= m->data_len;
		q->head = m->next;
		if (!q->head)
			q->tail = NULL;
		q->nb--;
		(*held)--;
		rte_pktmbuf_free_seg(m);
	}
}

static inline void mq_free(struct mq *q, uint32_t *held)
{
	struct rte_mbuf *m = q->head, *next;

	while (m) {
		next = m->next;
		rte_pktmbuf_free_seg(m);
		m = next;
	}
	*held -= q->nb;
	*q = (struct mq){ 0 };
}

#endif /* VSOCK_PMD_EP_QUEUE_H */
