/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-device poll: data flows one way through each half.
 *
 *   guest -> host: tx ring -> validated chains -> header copied out once ->
 *                  conn_from_guest_run() -> completion into the shadow used ring
 *   host -> guest: conn_poll_host() fills per-connection queues ->
 *                  conn_to_guest() writes into rx buffers -> shadow used ring
 *
 * Each half ends with one flush (one used->idx store) and, if the guest
 * asked for it, one interrupt. Nothing is left in a shadow ring when the
 * poll returns, so a device can be detached or sit idle at any point
 * between polls without hiding completions from the guest.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/uio.h>

#include <linux/virtio_vsock.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_vhost.h>

#include "conn.h"
#include "datapath.h"
#include "log.h"
#include "virtq.h"
#include "vsock_pkt.h"

/*
 * Bytes of the guest's buffers one device moves per direction in one round; what is beyond
 * waits for its next round. A whole burst of large packets is a long copy while every other
 * VM on the lcore waits for the round to end: the burst bounds a round's packets, this its
 * bytes (the kernel's vhost weighs its work by both, too). It stays large enough that the
 * round's one sendmsg() or recvmsg() costs little beside its copy (doc/performance.md, the
 * isolation part, has the figures).
 */
#define ROUND_BYTES VSOCK_PMD_ROUND_BYTES

/*
 * Whether a packet of @p bytes fits in what is left of a round's ROUND_BYTES, @p room. The
 * first packet of a round always does, however large: every round makes progress.
 */
static inline bool round_fits(uint64_t room, uint64_t bytes)
{
	return bytes <= room || room == ROUND_BYTES;
}

/* What is left of @p room after a packet of @p bytes. */
static inline uint64_t round_take(uint64_t room, uint64_t bytes)
{
	return room - RTE_MIN(room, bytes);
}

/*
 * DPDK signals through its own copy of the used index, so it is brought up to
 * date first. The trylock variant never makes the lcore wait for the control
 * thread; a notification it could not send stays pending for the next round.
 */
static inline void send_notification(struct dp_dev *dev, uint16_t q)
{
	struct virtq *vq = &dev->vq[q];

	/* Packed rings: the used position DPDK's own event check needs (vq_call_used_idx()). */
	rte_vhost_set_vring_base(dev->vid, q, vq->last_avail_idx, vq_call_used_idx(vq));
	if (rte_vhost_vring_call_nonblock(dev->vid, q) != -EAGAIN) {
		dev->notify_pending[q] = false;
		dev->stats.guest_notifications[q]++;
	}
}

/* After a flush: interrupt the guest if its used_event (or NO_INTERRUPT flag) asks for it. */
static inline void notify_guest(struct dp_dev *dev, uint16_t q)
{
	if (vq_should_notify(&dev->vq[q]))
		dev->notify_pending[q] = true;
	if (dev->notify_pending[q])
		send_notification(dev, q);
}

/*
 * A queue the guest broke (bad index, loop, address outside its memory) is
 * no longer used; say so once, with the reason, and leave the rest of the
 * device and every other VM running.
 */
static void report_broken(struct dp_dev *dev, uint16_t q)
{
	if (dev->broken_reported[q])
		return;
	dev->broken_reported[q] = true;
	VSOCK_LOG(ERR, "VM cid %" PRIu64 ": %s queue stopped: guest broke the ring (%s)",
		  dev->cid, q == VSOCK_VQ_RX ? "rx" : "tx",
		  virtq_err_str(dev->vq[q].broken_reason));
}

/*
 * A packet too short to hold a header names no connection, so there is nobody to answer:
 * it is dropped and counted, and only the first one of the device is logged, so that a
 * guest cannot flood the log.
 */
static void report_short(struct dp_dev *dev, uint32_t len)
{
	if (dev->stats.short_packets++ == 0)
		VSOCK_LOG(ERR, "VM cid %" PRIu64 ": dropped a tx packet of %u bytes, shorter than "
			  "the %u-byte header (counted in short_packets, logged once)",
			  dev->cid, len, VSOCK_HDR_SIZE);
}

/* The burst size the control side last set ("set burst"): any value in 1..BURST_MAX is safe. */
static inline uint16_t burst_size(const struct dp_dev *dev)
{
	return (uint16_t)__atomic_load_n(&dev->burst, __ATOMIC_RELAXED);
}

/*
 * The most a burst takes off @p vq: the burst size, at most half the ring. Its entries go back
 * only when the burst ends: one that took the whole ring leaves the guest nothing to post into
 * meanwhile, and then the worker waits for the guest.
 */
static inline uint16_t burst_for(const struct dp_dev *dev, const struct virtq *vq)
{
	return RTE_MIN(burst_size(dev), RTE_MAX(vq->size / 2, 1));
}

/* A burst that moved @p n packets; the histogram costs a branch unless switched on. */
static inline void count_burst(struct dp_dev *dev, uint16_t q, uint16_t n)
{
	if (n == 0)
		return;
	dev->stats.bursts[q]++;
	if (unlikely(__atomic_load_n(&dev->record_bursts, __ATOMIC_RELAXED)))
		dev->stats.burst_hist[q][n]++;
}

/* The readable bytes of @p c after @p skip, as an iovec. */
static inline unsigned int chain_readable_iov(const struct virtq_chain *c, uint32_t skip,
					      struct iovec *iov)
{
	unsigned int i, n = 0;

	for (i = 0; i < c->nr_readable; i++) {
		const struct guest_mem_piece *p = &c->pieces[i];

		if (skip >= p->len) {
			skip -= p->len;
			continue;
		}
		iov[n].iov_base = (uint8_t *)p->addr + skip;
		iov[n].iov_len = p->len - skip;
		skip = 0;
		n++;
	}
	return n;
}

static inline unsigned int chain_writable_iov(const struct virtq_chain *c, struct iovec *iov)
{
	unsigned int i, n = 0;

	for (i = c->nr_readable; i < c->nr_pieces; i++) {
		iov[n].iov_base = c->pieces[i].addr;
		iov[n].iov_len = c->pieces[i].len;
		n++;
	}
	return n;
}

/*
 * Packets [i, i + k) with whole headers, their payloads laid out in s->iov for one
 * conn_from_guest_run(), which finds the runs of one connection among them.
 */
static uint16_t tx_span(struct dp_scratch *s, uint16_t i, uint16_t n)
{
	const struct virtq_chain *c = &s->chains[i], *end = &s->chains[n];
	struct iovec *iov = s->iov, *iov_end = &s->iov[RTE_DIM(s->iov)];
	const bool *ok = &s->hdr_ok[i];
	unsigned int *cnt = s->iov_cnt, k;

	/* One chain always fits: a span is never empty. */
	RTE_BUILD_BUG_ON(DP_IOV < VIRTQ_CHAIN_MAX_PIECES);
	for (; c < end && *ok && c->nr_readable <= (size_t)(iov_end - iov); c++, ok++) {
		const struct guest_mem_piece *p = c->pieces;

		/*
		 * The two layouts of nearly every packet, without the loop: header and payload
		 * in one piece (hdr_ok: it holds the header), or the header alone in the first
		 * (Linux's driver).
		 */
		if (c->nr_readable == 1) {
			iov->iov_base = (uint8_t *)p->addr + VSOCK_HDR_SIZE;
			iov->iov_len = p->len - VSOCK_HDR_SIZE;
			k = p->len > VSOCK_HDR_SIZE;
		} else if (c->nr_readable == 2 && p->len == VSOCK_HDR_SIZE) {
			iov->iov_base = p[1].addr;
			iov->iov_len = p[1].len;
			k = p[1].len != 0;
		} else {
			k = chain_readable_iov(c, VSOCK_HDR_SIZE, iov);
		}
		iov += k;
		*cnt++ = k;
	}
	return (uint16_t)(c - &s->chains[i]);
}

/*
 * A burst of @p n chains of which only the first @p kept fit in the round's ROUND_BYTES: the
 * rest go back to the ring. Next time the burst asks for one chain more than it kept: while
 * the packets stay this large, one chain is walked twice per round, not the rest of a burst.
 */
static void tx_round_cut(struct dp_dev *dev, struct virtq *vq, uint16_t kept, uint16_t n)
{
	vq_unget(vq, n - kept);
	dev->tx_ask = kept + 1;
	dev->stats.budget_cuts[VSOCK_VQ_TX]++;
}

/*
 * The first chain of the burst should be the packet the connections took in part last
 * round: it gets the header they counted it by. Any other chain there, or one now too short
 * for a header, means the guest rewrote descriptors it had made available: the connection
 * of the packet taken in part is reset, and the chain is taken as it is.
 */
static void tx_partial_again(struct dp_dev *dev, struct dp_scratch *s)
{
	if (s->chains[0].head == dev->tx_partial_head &&
	    s->chains[0].readable_len >= VSOCK_HDR_SIZE) {
		s->hdrs[0] = dev->tx_partial_hdr;
		s->hdr_ok[0] = true;
	} else {
		conn_from_guest_abandon(dev->conns);
	}
}

static unsigned int guest_to_host(struct dp_dev *dev, struct dp_scratch *s)
{
	struct virtq *vq = &dev->vq[VSOCK_VQ_TX];
	uint16_t i, j, k, n, taken;
	uint64_t bytes = 0;

	n = vq_dequeue_burst(vq, s->chains, RTE_MIN(burst_for(dev, vq), dev->tx_ask));
	if (unlikely(vq->broken))
		report_broken(dev, VSOCK_VQ_TX);
	if (n == 0)
		return 0;	/* nothing completed: nothing to flush */
	/* One copy of each header: the guest may rewrite its buffer while we parse it. */
	for (i = 0; i < n; i++) {
		/* round_fits() on a running sum, its cheapest form: this runs for every packet. */
		bytes += s->chains[i].readable_len;
		if (unlikely(bytes > ROUND_BYTES) && i > 0)
			break;
		s->hdr_ok[i] = virtq_chain_read(&s->chains[i], 0, &s->hdrs[i], VSOCK_HDR_SIZE) ==
			       VSOCK_HDR_SIZE;
	}
	if (unlikely(i < n)) {
		tx_round_cut(dev, vq, i, n);
		n = i;
	} else if (unlikely(n == dev->tx_ask)) {
		dev->tx_ask = VSOCK_PMD_BURST_MAX;	/* smaller packets: whole bursts again */
	}
	if (unlikely(conn_from_guest_partial(dev->conns)))
		tx_partial_again(dev, s);
	for (i = 0; i < n; i += k) {
		if (unlikely(!s->hdr_ok[i])) {
			report_short(dev, s->chains[i].readable_len);
			vq_complete(vq, &s->chains[i], 0);
			k = 1;
			continue;
		}
		k = tx_span(s, i, n);
		taken = (uint16_t)conn_from_guest_run(dev->conns, &s->hdrs[i], s->iov,
						      s->iov_cnt, k);
		for (j = 0; j < taken; j++)
			vq_complete(vq, &s->chains[i + j], 0);
		if (taken < k) {
			/* Backpressure: this packet and the rest stay in the ring. */
			if (conn_from_guest_partial(dev->conns)) {
				dev->tx_partial_head = s->chains[i + taken].head;
				dev->tx_partial_hdr = s->hdrs[i + taken];
			}
			vq_unget(vq, n - (i + taken));
			dev->stats.tx_backpressure++;
			n = i + taken;
			break;
		}
	}
	/* End of burst: the guest may be waiting for these buffers to send more. */
	vq_flush(vq);
	count_burst(dev, VSOCK_VQ_TX, n);
	if (n)
		notify_guest(dev, VSOCK_VQ_TX);
	return n;
}

/*
 * Chains [i, i + k) that hold a header, their writable pieces laid out in s->iov for one
 * conn_to_guest_burst(): as many as the round's @p room holds if each is filled. None when
 * the first does not fit in the room.
 */
static uint16_t rx_span(struct dp_scratch *s, uint16_t i, uint16_t n, uint64_t room)
{
	const struct virtq_chain *c = &s->chains[i], *end = &s->chains[n];
	struct iovec *iov = s->iov, *iov_end = &s->iov[RTE_DIM(s->iov)];
	unsigned int *cnt = s->iov_cnt;
	uint32_t *caps = s->cap;

	for (; c < end; c++) {
		const uint32_t cap = c->writable_len;
		const unsigned int np = c->nr_pieces - c->nr_readable;

		if (cap < VSOCK_HDR_SIZE || !round_fits(room, cap) || np > (size_t)(iov_end - iov))
			break;
		/* Every Linux rx buffer is one piece: no loop for it. */
		if (likely(np == 1)) {
			const struct guest_mem_piece p = c->pieces[c->nr_readable];

			iov->iov_base = p.addr;
			iov->iov_len = p.len;
		} else {
			chain_writable_iov(c, iov);
		}
		iov += np;
		*cnt++ = np;
		*caps++ = cap;
		room = round_take(room, cap);
	}
	return (uint16_t)(c - &s->chains[i]);
}

/*
 * Fill the @p n rx chains dequeued into s->chains with what the connections owe, within the
 * round's @p room: what is left of it comes back, 0 once spent. @return chains used; fewer
 * than @p n when nothing more was owed or the room ran out (the rest went back to the ring).
 */
static uint16_t rx_fill(struct dp_dev *dev, struct virtq *vq, struct dp_scratch *s,
			uint16_t n, uint64_t *room)
{
	uint16_t i = 0, j, k, filled;
	uint64_t used;

	while (i < n) {
		if (unlikely(s->chains[i].writable_len < VSOCK_HDR_SIZE)) {
			/* Too small for a header: back empty rather than wedging the ring. */
			dev->stats.small_rx_buffers++;
			vq_complete(vq, &s->chains[i++], 0);
			continue;
		}
		k = rx_span(s, i, n, *room);
		if (unlikely(k == 0)) {
			*room = 0;	/* the next buffer would overrun it: the round is over */
			break;
		}
		filled = (uint16_t)conn_to_guest_burst(dev->conns, s->iov, s->iov_cnt, s->cap, k,
						       s->len);
		for (j = 0, used = 0; j < filled; j++) {
			vq_complete_written(vq, &s->chains[i + j], s->len[j]);
			used += s->len[j];
		}
		*room = round_take(*room, used);	/* as packet by packet: it stops at 0 */
		i += filled;
		if (filled < k)
			break;	/* nothing more owed */
	}
	/* Keep the rest of the guest's buffers for later. */
	if (i < n)
		vq_unget(vq, n - i);
	return i;
}

/*
 * How many packets the connections owe is known only by filling buffers (a socket's bytes are
 * counted by reading them), and every rx chain dequeued and given back unused is walked,
 * checked and translated twice. So a round first asks for one chain more than the last round
 * filled (rx_ask): while the rate holds, one chain per round goes back. A dequeue that
 * fills all it asked for is followed by one of twice as many, up to the burst: a rate that
 * grows costs a few more dequeues, never a burst given back. It asks for two at least: a
 * socket read that fills the one buffer it had cannot tell that it emptied the socket, and
 * the read after it costs a syscall that finds nothing, where one that fills part of two
 * buffers says it (a round trip whose guest posts buffers of its message's size, after
 * idle rounds that read nothing).
 */
static unsigned int host_to_guest(struct dp_dev *dev, struct dp_scratch *s)
{
	struct virtq *vq = &dev->vq[VSOCK_VQ_RX];
	uint16_t want = burst_for(dev, vq), n = 0, done = 0, filled = 0;
	uint16_t ask = RTE_MIN(RTE_MAX(dev->rx_ask, 2), want);
	uint64_t room = ROUND_BYTES;

	if (!conn_has_output(dev->conns))
		return 0;
	for (;;) {
		n = vq_dequeue_burst(vq, s->chains, ask);
		if (unlikely(vq->broken))
			report_broken(dev, VSOCK_VQ_RX);
		filled = rx_fill(dev, vq, s, n, &room);
		done += filled;
		if (filled < ask || room == 0 || done == want)
			break;
		ask = RTE_MIN(2 * ask, want - done);
	}
	/* A ring without buffers says nothing of what is owed: the last measure stays. */
	if (done || n)
		dev->rx_ask = done + 1;
	if (unlikely(room == 0) && done < want && conn_has_output(dev->conns))
		dev->stats.budget_cuts[VSOCK_VQ_RX]++;
	if (done == 0) {
		/* Nothing completed. No buffer at all, and nothing asked the connections. */
		if (n == 0)
			dev->stats.rx_ring_full++;
		return 0;
	}
	/* End of burst: the guest reads nothing until used->idx moves. */
	vq_flush(vq);
	count_burst(dev, VSOCK_VQ_RX, done);
	notify_guest(dev, VSOCK_VQ_RX);
	return done;
}

void dp_dev_init(struct dp_dev *dev, uint64_t cid, unsigned int burst)
{
	dev->vid = -1;
	dev->kick_fd[VSOCK_VQ_RX] = -1;
	dev->kick_fd[VSOCK_VQ_TX] = -1;
	dev->cid = cid;
	dev->burst = burst;
	dev->tx_ask = VSOCK_PMD_BURST_MAX;
	dev->rx_ask = VSOCK_PMD_BURST_MAX;
	dev->host_epoll_interval = rte_get_tsc_hz() / 1000000 * DP_HOST_EPOLL_BUSY_US;
}

bool dp_dev_kicks_arm(struct dp_dev *dev)
{
	bool want_rx = conn_has_output(dev->conns);

	if (dev->notify_pending[VSOCK_VQ_RX] || dev->notify_pending[VSOCK_VQ_TX])
		return true;
	vq_enable_guest_kicks(&dev->vq[VSOCK_VQ_TX]);
	if (want_rx)
		vq_enable_guest_kicks(&dev->vq[VSOCK_VQ_RX]);
	/*
	 * Full fence (store->load): the kick request must be visible before we read avail->idx
	 * again. Pairs with the driver's barrier between its avail->idx store and its read of
	 * our flags or avail_event: either we see its buffer now, or it sees the request and
	 * kicks.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_avail_pending(&dev->vq[VSOCK_VQ_TX]) ||
	       (want_rx && vq_avail_pending(&dev->vq[VSOCK_VQ_RX]));
}

bool dp_dev_host_prompt(const struct dp_dev *dev)
{
	return conn_socket_count(dev->conns) != 0;
}

bool dp_dev_host_probe_ok(const struct dp_dev *dev)
{
	return dev->host_watched && conn_socket_count(dev->conns) == 1;
}

void dp_dev_kicks_disarm(struct dp_dev *dev)
{
	vq_disable_guest_kicks(&dev->vq[VSOCK_VQ_RX]);
	vq_disable_guest_kicks(&dev->vq[VSOCK_VQ_TX]);
}

/*
 * Nothing can be done this round: the last one found nothing, the guest queued no tx buffer
 * since, the worker saw no event on the host sockets, and the connections have nothing of
 * their own to do (no timer, nothing owed to the guest, no polled end). Such a round reads a
 * few cache lines instead of making every call of a round: with many idle VMs on one lcore,
 * their rounds are what the active VM waits for. So is a round whose only work is packets
 * owed to a guest that has no rx buffer for them (one that does not read, or not yet): the
 * whole round would find its rx ring empty and count that (rx_ring_full), as this one does.
 */
static inline bool dp_dev_quiet(struct dp_dev *dev)
{
	if (dev->poll_busy || !dev->host_watched || dev->host_ready ||
	    dev->notify_pending[VSOCK_VQ_RX] || dev->notify_pending[VSOCK_VQ_TX] ||
	    vq_avail_pending(&dev->vq[VSOCK_VQ_TX]))
		return false;
	switch (conn_table_idle(dev->conns)) {
	case CONN_QUIET:
		return true;
	case CONN_OWES_GUEST:
		if (vq_avail_pending(&dev->vq[VSOCK_VQ_RX]))
			return false;
		dev->stats.rx_ring_full++;
		return true;
	default:
		return false;
	}
}

bool dp_dev_cool(struct dp_dev *dev)
{
	/*
	 * Only a device whose news all come with an event: a guest kick, a host socket in the
	 * worker's set. A timer, a pipe (polled, it has no event) or anything queued keeps it
	 * hot, so a cold device has no deadline to miss. What arrives on its incoming ring (a
	 * guest or a native program opening a pipe to it) is found by the worker's sweep.
	 */
	if (dev->poll_busy || !dev->host_watched || dev->host_ready ||
	    conn_table_idle(dev->conns) == CONN_BUSY)
		return false;
	if (!dp_dev_kicks_arm(dev))
		return true;
	dp_dev_kicks_disarm(dev);
	return false;
}

bool dp_dev_news(struct dp_dev *dev)
{
	return !dp_dev_quiet(dev);
}

unsigned int dp_dev_poll(struct dp_dev *dev, struct dp_scratch *s)
{
	unsigned int work, tx, rx;
	uint64_t now;

	if (dev->host_probe) {
		dev->host_probe = false;
		/* Without an rx buffer there is nowhere to read to: the socket keeps its bytes. */
		if (vq_avail_pending(&dev->vq[VSOCK_VQ_RX]))
			conn_probe_host(dev->conns);
	}
	if (dp_dev_quiet(dev))
		return 0;
	tx = guest_to_host(dev, s);
	work = tx;
	now = rte_get_tsc_cycles();
	/*
	 * Socket readiness costs an epoll_wait syscall. While the rings are busy it
	 * would take a third of the lcore at every round, so it is asked at most every
	 * host_epoll_interval then; idle rounds ask every time and react at once. A
	 * device its worker watches asks only once the worker saw it has events.
	 */
	if ((!dev->poll_busy || now - dev->host_epoll_tsc >= dev->host_epoll_interval) &&
	    (dev->host_ready || !dev->host_watched)) {
		dev->host_ready = false;
		dev->host_epoll_tsc = now;
		work += conn_poll_host(dev->conns, now, DP_HOST_POLL_BUDGET);
	} else {
		work += conn_service_host(dev->conns, now, DP_HOST_POLL_BUDGET);
	}
	rx = host_to_guest(dev, s);
	work += rx;
	dev->rx_only = rx && !tx;
	dev->poll_busy = work != 0;
	/* A notification the control thread's lock deferred is retried even when idle. */
	if (unlikely(dev->notify_pending[VSOCK_VQ_RX]))
		send_notification(dev, VSOCK_VQ_RX);
	if (unlikely(dev->notify_pending[VSOCK_VQ_TX]))
		send_notification(dev, VSOCK_VQ_TX);
	return work;
}
