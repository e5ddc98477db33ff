/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connections of a case, both ends: the guest's through the frontend's vfe_guest
 * driver, the host's on a Unix socket of the app or on the native API, and the pattern
 * each direction is checked against.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include <vsock_pmd_native.h>

#include "perf.h"
#include "perf_conn.h"

struct vfe_guest_conf perf_guest_conf(enum mode m, uint32_t payload)
{
	struct vfe_guest_conf gc = { 0 };

	/* Guest -> host: one packet per payload. */
	gc.tx_max_payload = payload;
	/*
	 * Host -> guest: rx buffers of exactly one header and one payload, so the app must
	 * write one packet per payload: per-packet cost, not the host socket's coalescing.
	 */
	if (m != M_G2H)
		gc.rx_buf_len = VFE_GUEST_HDR_LEN + payload;
	return gc;
}

/*
 * Every byte against the pattern at its stream offset: with the byte counts equal (verify()),
 * what arrived is what was sent, byte for byte. A checksum of the received bytes compared
 * with the sender's could fail only where this compare fails already; it was a second pass
 * over every byte on the client's CPU, so there is none.
 */
bool perf_stream_check(const struct perf_run *run, struct pconn *pc, const uint8_t *buf,
		       size_t n)
{
	size_t i = 0;

	while (pc->bad_at == UINT64_MAX && i < n) {
		uint64_t off = pc->base + pc->rcvd + i;
		const uint8_t *want = perf_pat_at(run->pat, off);
		size_t len = n - i;

		if (len > PERF_PAT_RUN)
			len = PERF_PAT_RUN;
		if (memcmp(buf + i, want, len) != 0) {
			size_t k = 0;

			while (buf[i + k] == want[k])
				k++;
			pc->bad_at = pc->rcvd + i + k;
		}
		i += len;
	}
	pc->rcvd += n;
	return pc->bad_at == UINT64_MAX;
}

/* ---- the host end: a Unix socket of the app, or the native API in this process ---- */

/*
 * Native: offer the guest @p len bytes of the pattern from @p at, in NATIVE_SEG-byte mbufs,
 * NATIVE_FILL filled and handed over at a time, until the pipe takes fewer than offered. What
 * it does not take stays held and is offered first next time, so @p at must then be where
 * the held bytes start. Returns bytes taken.
 */
static long native_send(const struct perf_run *run, struct pconn *pc, uint64_t at, uint64_t len)
{
	unsigned int i, k;
	long taken = 0;
	int n;

	for (;;) {
		if (pc->held_off == pc->nb_held) {
			uint64_t left = len - (uint64_t)taken;
			unsigned int nb = (unsigned int)RTE_MIN(
				(left + NATIVE_SEG - 1) / NATIVE_SEG, (uint64_t)NATIVE_FILL);

			pc->nb_held = pc->held_off = 0;
			if (nb == 0 || rte_pktmbuf_alloc_bulk(run->native.pool, pc->held, nb) != 0)
				return taken;
			for (i = 0; i < nb; i++) {
				uint16_t l = (uint16_t)RTE_MIN(left - (uint64_t)i * NATIVE_SEG,
							       (uint64_t)NATIVE_SEG);
				uint64_t off = at + (uint64_t)taken + (uint64_t)i * NATIVE_SEG;

				/* The host program's one copy: the pattern into the mbuf. */
				memcpy(rte_pktmbuf_mtod(pc->held[i], void *),
				       perf_pat_at(run->pat, off), l);
				pc->held[i]->data_len = l;
				pc->held[i]->pkt_len = l;
				pc->held_len[i] = l;
			}
			pc->nb_held = (uint16_t)nb;
		}
		n = vsock_native_send_burst(pc->h, pc->held + pc->held_off,
					    (uint16_t)(pc->nb_held - pc->held_off));
		if (n < 0) {
			if (pc->herr == 0)
				pc->herr = n;
			return taken;
		}
		/* Taken mbufs are the library's now: their lengths were noted before. */
		for (k = 0; k < (unsigned int)n; k++)
			taken += pc->held_len[pc->held_off + k];
		pc->held_off = (uint16_t)(pc->held_off + n);
		if (pc->held_off < pc->nb_held)
			return taken;
	}
}

/* Native: take and check what the guest sent, bursts until @p max bytes. Returns bytes. */
static long native_recv(const struct perf_run *run, struct pconn *pc, uint64_t max)
{
	struct rte_mbuf *m[NATIVE_BURST];
	long got = 0;
	int i, n;

	do {
		n = vsock_native_recv_burst(pc->h, m, NATIVE_BURST);
		for (i = 0; i < n; i++) {
			const struct rte_mbuf *seg;

			for (seg = m[i]; seg != NULL; seg = seg->next) {
				perf_stream_check(run, pc, rte_pktmbuf_mtod(seg, const uint8_t *),
						  seg->data_len);
				got += seg->data_len;
			}
		}
		if (n > 0)
			rte_pktmbuf_free_bulk(m, (unsigned int)n);
	} while (n == NATIVE_BURST && (uint64_t)got < max);
	if (n < 0 && pc->herr == 0)
		pc->herr = n;
	return got;
}

long perf_host_send(struct perf_run *run, struct pconn *pc, uint64_t at, uint64_t len)
{
	ssize_t w;

	if (run->host == H_NATIVE)
		return native_send(run, pc, at, len);
	w = send(pc->fd, perf_pat_at(run->pat, at), len, MSG_DONTWAIT | MSG_NOSIGNAL);
	return w > 0 ? w : 0;
}

long perf_host_recv(struct perf_run *run, struct pconn *pc, uint64_t max)
{
	long got = 0;

	if (run->host == H_NATIVE)
		return native_recv(run, pc, max);
	while ((uint64_t)got < max) {
		size_t want = RTE_MIN((uint64_t)sizeof(run->rbuf), max - (uint64_t)got);
		ssize_t r = recv(pc->fd, run->rbuf, want, MSG_DONTWAIT);

		if (r <= 0)
			break;
		perf_stream_check(run, pc, run->rbuf, (size_t)r);
		got += r;
		/*
		 * A stream socket's recv() copies until the buffer is full or its queue is
		 * empty: a short read emptied it, and another would return EAGAIN, a syscall
		 * per round for nothing.
		 */
		if ((size_t)r < want)
			break;
	}
	return got;
}

/*
 * Native: open one connection of a case. A guest's connect completes once we accept it,
 * ours once the guest accepts.
 */
static int native_open(struct perf_run *run, struct pconn *pc, enum mode m, int listener)
{
	struct dp_env *e = &run->env.dp;

	if (m == M_H2G) {
		pc->h = vsock_native_connect(DP_CID, PORT_H2G, VSOCK_NATIVE_STREAM);
		if (pc->h < 0)
			return pc->h;
		DP_WAIT(e, (pc->gc = vfe_guest_accept(&e->g)) != NULL, STEP_TIMEOUT_MS);
		DP_WAIT(e, vsock_native_state(pc->h) == VSOCK_NATIVE_ESTABLISHED, STEP_TIMEOUT_MS);
	} else {
		pc->gc = vfe_guest_connect(&e->g, m == M_G2H ? PORT_G2H : PORT_RR,
					   VIRTIO_VSOCK_TYPE_STREAM);
		if (pc->gc == NULL)
			return -ENOMEM;
		DP_WAIT(e, (pc->h = vsock_native_accept(listener)) != -EAGAIN, STEP_TIMEOUT_MS);
		if (pc->h < 0)
			return pc->h;
		DP_WAIT(e, pc->gc->state == VFE_GC_ESTABLISHED, STEP_TIMEOUT_MS);
	}
	return vsock_native_state(pc->h) == VSOCK_NATIVE_ESTABLISHED ? 0 : -ECONNREFUSED;
}

int perf_open_conns(struct perf_run *run, enum mode m, unsigned int n)
{
	struct dp_env *e = &run->env.dp;
	unsigned int i;
	int lfd = -1, nl = -1;

	if (run->host == H_NATIVE && m != M_H2G) {
		nl = vsock_native_listen(DP_CID, m == M_G2H ? PORT_G2H : PORT_RR);
		if (nl < 0)
			return nl;
	} else if (run->host == H_NATIVE) {
		vfe_guest_listen(&e->g, PORT_H2G, true);
	} else if (m == M_G2H || m == M_RR) {
		lfd = dp_listen(e, m == M_G2H ? PORT_G2H : PORT_RR, SOCK_STREAM);
		if (lfd < 0)
			return lfd;
	} else {
		vfe_guest_listen(&e->g, PORT_H2G, true);
	}
	for (i = 0; i < n; i++) {
		struct pconn *pc = &run->pconns[i];
		uint32_t hp;

		memset(pc, 0, sizeof(*pc));
		pc->fd = -1;
		pc->h = -1;
		pc->bad_at = UINT64_MAX;
		pc->base = (uint64_t)i * 7919;
		if (run->host == H_NATIVE) {
			int rc = native_open(run, pc, m, nl);

			if (rc < 0 || pc->gc == NULL || pc->gc->state != VFE_GC_ESTABLISHED) {
				if (nl >= 0)
					vsock_native_listen_close(nl);
				return rc < 0 ? rc : -ECONNREFUSED;
			}
			continue;
		}
		if (m == M_H2G) {
			pc->fd = dp_host_to_guest(e, PORT_H2G, &pc->gc, &hp, STEP_TIMEOUT_MS);
		} else {
			pc->gc = dp_guest_connect(e, m == M_G2H ? PORT_G2H : PORT_RR,
						  VIRTIO_VSOCK_TYPE_STREAM, STEP_TIMEOUT_MS);
			if (pc->gc && pc->gc->state == VFE_GC_ESTABLISHED)
				pc->fd = dp_accept(e, lfd, STEP_TIMEOUT_MS);
		}
		if (pc->fd < 0 || pc->gc == NULL || pc->gc->state != VFE_GC_ESTABLISHED) {
			if (lfd >= 0)
				close(lfd);
			return -ECONNREFUSED;
		}
	}
	if (lfd >= 0)
		close(lfd);
	/* Connections accepted stay when their listener goes. */
	if (nl >= 0)
		vsock_native_listen_close(nl);
	return 0;
}

/* Take what is left and say whether the connection is over (the guest sent its RST). */
static bool guest_closed(struct perf_run *run, struct vfe_guest_conn *c)
{
	vfe_guest_recv(&run->env.dp.g, c, NULL, vfe_guest_rx_avail(c));
	return c->state == VFE_GC_CLOSED;
}

void perf_close_conns(struct perf_run *run, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct pconn *pc = &run->pconns[i];

		if (pc->fd >= 0)
			close(pc->fd);
		pc->fd = -1;
		if (pc->h >= 0) {
			rte_pktmbuf_free_bulk(pc->held + pc->held_off,
					      (unsigned int)(pc->nb_held - pc->held_off));
			pc->nb_held = pc->held_off = 0;
			vsock_native_close(pc->h);
		}
		pc->h = -1;
	}
	/* Host closes end every connection; the guest answers and forgets them. */
	for (i = 0; i < n; i++) {
		struct vfe_guest_conn *c = run->pconns[i].gc;

		if (c == NULL)
			continue;
		DP_WAIT(&run->env.dp, guest_closed(run, c), STEP_TIMEOUT_MS);
		vfe_guest_release(&run->env.dp.g, c);
		run->pconns[i].gc = NULL;
	}
	vfe_guest_listen(&run->env.dp.g, PORT_H2G, false);
}

bool perf_all_received(const struct perf_run *run, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct pconn *pc = &run->pconns[i];

		if (pc->rcvd < pc->sent || pc->bad_at != UINT64_MAX)
			return false;
	}
	return true;
}

bool perf_pconn_ok(const struct pconn *pc, const char *what, unsigned int i, char *err,
		   size_t len)
{
	if (pc->bad_at == UINT64_MAX && pc->rcvd == pc->sent)
		return true;
	snprintf(err, len, "%s %u: sent %llu, received %llu, first bad byte %lld", what, i,
		 (unsigned long long)pc->sent, (unsigned long long)pc->rcvd,
		 (long long)pc->bad_at);
	return false;
}

uint64_t perf_total_rcvd(const struct perf_run *run, unsigned int n)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		t += run->pconns[i].rcvd;
	return t;
}
