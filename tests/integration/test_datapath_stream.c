/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream connections through the app, both ways, against real Unix sockets:
 *  - guest -> host and host -> guest: connect, bytes both ways, close from
 *    each side, every header field the protocol fixes checked;
 *  - SHUT_WR from each side while the other direction keeps working;
 *  - refused connections end with RST (no listener, stale socket file,
 *    CONNECT to a guest port nobody accepts);
 *  - 256 connections at once, each with its own checked data both ways.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define MS 5000
#define NCONC 128	/* per direction */
#define CONC_BYTES (128u * 1024)

static struct dp_env env;

/* Index in the log of the last rx packet of (local, peer) with @p op since @p from, or -1. */
static int
last_rx(unsigned int from, uint32_t local, uint32_t peer, uint16_t op)
{
	int found = -1;
	unsigned int i;

	for (i = from; i < dp_log.n; i++) {
		const struct dp_log_entry *l = &dp_log.e[i];

		if (!l->tx && l->p.dst_port == local && l->p.src_port == peer && l->p.op == op)
			found = (int)i;
	}
	return found;
}

/* The fields every packet of the connection must carry. */
static bool
fixed_fields_ok(const struct dp_log_entry *l, uint32_t local, uint32_t peer, uint16_t op,
		uint32_t fwd_cnt)
{
	return l->p.src_cid == 2 && l->p.dst_cid == DP_CID && l->p.src_port == peer &&
		l->p.dst_port == local && l->p.type == VIRTIO_VSOCK_TYPE_STREAM &&
		l->p.op == op && l->p.buf_alloc == DP_APP_BUF_ALLOC && l->p.fwd_cnt == fwd_cnt &&
		l->used_len == 44 + l->p.len;
}

static void
diag_pkt(const struct dp_log_entry *l)
{
	tap_diag("pkt %llu:%u -> %llu:%u type %u op %u flags %#x len %u buf_alloc %u fwd_cnt %u "
		"used %u", (unsigned long long)l->p.src_cid, l->p.src_port,
		(unsigned long long)l->p.dst_cid, l->p.dst_port, l->p.type, l->p.op, l->p.flags,
		l->p.len, l->p.buf_alloc, l->p.fwd_cnt, l->used_len);
}

/* Host reads exactly @p n more bytes of @p s; with @p idle, nothing (not even EOF) follows. */
static bool
host_read_n(int fd, struct dp_stream *s, uint64_t n, bool idle)
{
	uint64_t want = s->done + n;
	long r = -EAGAIN;
	char b;

	DP_WAIT(&env, (r = dp_host_recv(fd, s)) == 0 || s->done >= want ||
		s->bad_at != UINT64_MAX, MS);
	return s->done == want && s->bad_at == UINT64_MAX &&
		(!idle || (recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN));
}

static bool
host_read_exact(int fd, struct dp_stream *s, uint64_t n)
{
	return host_read_n(fd, s, n, true);
}

static bool
guest_read_exact(struct vfe_guest_conn *c, struct dp_stream *s, uint64_t n)
{
	uint64_t want = s->done + n;

	DP_WAIT(&env, (dp_guest_recv(&env, c, s), s->done >= want || s->bad_at != UINT64_MAX), MS);
	return s->done == want && s->bad_at == UINT64_MAX && vfe_guest_rx_avail(c) == 0;
}

static bool
host_write_all(int fd, struct dp_stream *s, uint64_t n)
{
	uint64_t want = s->done + n;
	uint64_t save = s->total;

	s->total = want;
	DP_WAIT(&env, (dp_host_send(fd, s), s->done >= want), MS);
	s->total = save;
	return s->done == want;
}

static bool
guest_write_all(struct vfe_guest_conn *c, struct dp_stream *s, uint64_t n)
{
	uint64_t want = s->done + n;
	uint64_t save = s->total;

	s->total = want;
	DP_WAIT(&env, (dp_guest_send(&env, c, s), s->done >= want), MS);
	s->total = save;
	return s->done == want;
}

/*
 * Bytes both ways, with the app's fwd_cnt followed: it counts the guest's
 * bytes the host socket took, and shows in every header.
 */
static void
exchange(int fd, struct vfe_guest_conn *c, const char *what)
{
	struct dp_stream g2h, h2g, hrx, grx;
	uint64_t credits = c->credit_updates_rx;
	unsigned int mark, i, rw = 0;
	uint32_t sum = 0;
	bool fields = true;
	int k;

	dp_stream_init(&g2h, 11, UINT64_MAX);
	dp_stream_init(&hrx, 11, UINT64_MAX);
	dp_stream_init(&h2g, 12, UINT64_MAX);
	dp_stream_init(&grx, 12, UINT64_MAX);

	tap_ok(guest_write_all(c, &g2h, 1000) && host_read_exact(fd, &hrx, 1000),
		"%s: host reads exactly the guest's 1000 bytes", what);
	vfe_guest_send_ctl(&env.g, c, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	DP_WAIT(&env, c->credit_updates_rx > credits, MS);
	k = last_rx(0, c->local_port, c->peer_port, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	if (!tap_ok(k >= 0 && fixed_fields_ok(&dp_log.e[k], c->local_port, c->peer_port,
			VIRTIO_VSOCK_OP_CREDIT_UPDATE, 1000) && dp_log.e[k].p.len == 0 &&
			dp_log.e[k].p.flags == 0,
			"%s: CREDIT_REQUEST answered by CREDIT_UPDATE, fwd_cnt 1000", what) && k >= 0)
		diag_pkt(&dp_log.e[k]);

	mark = dp_log.n;
	tap_ok(host_write_all(fd, &h2g, 3000) && guest_read_exact(c, &grx, 3000),
		"%s: guest reads exactly the host's 3000 bytes", what);
	for (i = mark; i < dp_log.n; i++) {
		const struct dp_log_entry *l = &dp_log.e[i];

		if (l->tx || l->p.dst_port != c->local_port || l->p.op != VIRTIO_VSOCK_OP_RW)
			continue;
		rw++;
		sum += l->p.len;
		if (!fixed_fields_ok(l, c->local_port, c->peer_port, VIRTIO_VSOCK_OP_RW, 1000) ||
		    l->p.flags != 0) {
			if (fields)
				diag_pkt(l);
			fields = false;
		}
	}
	tap_ok(fields && rw > 0 && sum == 3000,
		"%s: %u RW packets carry 3000 bytes, flags 0, buf_alloc and fwd_cnt 1000", what,
		rw);

	tap_ok(guest_write_all(c, &g2h, 5000) && host_read_exact(fd, &hrx, 5000),
		"%s: host reads exactly 5000 more", what);
	mark = dp_log.n;
	tap_ok(host_write_all(fd, &h2g, 10) && guest_read_exact(c, &grx, 10),
		"%s: guest reads exactly 10 more", what);
	k = last_rx(mark, c->local_port, c->peer_port, VIRTIO_VSOCK_OP_RW);
	if (!tap_ok(k >= 0 && fixed_fields_ok(&dp_log.e[k], c->local_port, c->peer_port,
			VIRTIO_VSOCK_OP_RW, 6000) && dp_log.e[k].p.len == 10,
			"%s: fwd_cnt moved to 6000 with the host's reads", what) && k >= 0)
		diag_pkt(&dp_log.e[k]);
}

/* Guest close(): SHUTDOWN RCV|SEND, the app answers RST, the host reads EOF. */
static void
guest_closes(int fd, struct vfe_guest_conn *c, const char *what)
{
	char b;
	long r = -1;
	int k;

	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && c->reset,
		"%s: guest close answered with RST", what);
	k = last_rx(0, c->local_port, c->peer_port, VIRTIO_VSOCK_OP_RST);
	if (!tap_ok(k >= 0 && dp_log.e[k].p.src_cid == 2 && dp_log.e[k].p.dst_cid == DP_CID &&
			dp_log.e[k].p.type == VIRTIO_VSOCK_TYPE_STREAM && dp_log.e[k].p.len == 0 &&
			dp_log.e[k].p.flags == 0 && dp_log.e[k].used_len == 44,
			"%s: RST header", what) && k >= 0)
		diag_pkt(&dp_log.e[k]);
	tap_ok(DP_WAIT(&env, (r = recv(fd, &b, 1, MSG_DONTWAIT)) >= 0 || errno != EAGAIN, MS) &&
		r == 0, "%s: host reads EOF (recv %ld)", what, r);
	close(fd);
	vfe_guest_release(&env.g, c);
}

/* Host close(): SHUTDOWN RCV|SEND to the guest, which answers RST (as Linux). */
static void
host_closes(int fd, struct vfe_guest_conn *c, const char *what)
{
	unsigned int mark = dp_log.n, i;
	uint32_t flags = 0;
	bool fields = true, rst_sent = false;

	close(fd);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && !c->reset &&
		c->peer_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND),
		"%s: host close reaches the guest as SHUTDOWN RCV|SEND", what);
	for (i = mark; i < dp_log.n; i++) {
		const struct dp_log_entry *l = &dp_log.e[i];

		if (l->p.op == VIRTIO_VSOCK_OP_RST && l->tx && l->p.src_port == c->local_port)
			rst_sent = true;
		if (l->tx || l->p.dst_port != c->local_port ||
		    l->p.op != VIRTIO_VSOCK_OP_SHUTDOWN)
			continue;
		flags |= l->p.flags;
		if (l->p.src_cid != 2 || l->p.src_port != c->peer_port || l->p.len != 0 ||
		    l->p.buf_alloc != DP_APP_BUF_ALLOC || l->used_len != 44)
			fields = false;
	}
	tap_ok(fields && flags == 3 && rst_sent, "%s: SHUTDOWN headers, guest RST sent", what);
	vfe_guest_release(&env.g, c);
}

static void
test_guest_to_host(bool guest_close, uint32_t port)
{
	char what[64];
	struct vfe_guest_conn *c;
	unsigned int mark = dp_log.n;
	int lfd, fd, k;

	snprintf(what, sizeof(what), "guest->host %u", port);
	lfd = dp_listen(&env, port, SOCK_STREAM);
	c = dp_guest_connect(&env, port, VIRTIO_VSOCK_TYPE_STREAM, MS);
	if (!tap_ok(lfd >= 0 && c != NULL && c->state == VFE_GC_ESTABLISHED,
			"%s: RESPONSE to REQUEST", what))
		return;
	k = last_rx(mark, c->local_port, port, VIRTIO_VSOCK_OP_RESPONSE);
	if (!tap_ok(k >= 0 && fixed_fields_ok(&dp_log.e[k], c->local_port, port,
			VIRTIO_VSOCK_OP_RESPONSE, 0) && dp_log.e[k].p.len == 0 &&
			dp_log.e[k].p.flags == 0, "%s: RESPONSE header", what) && k >= 0)
		diag_pkt(&dp_log.e[k]);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(fd >= 0, "%s: host listener accepted", what))
		return;
	exchange(fd, c, what);
	if (guest_close)
		guest_closes(fd, c, what);
	else
		host_closes(fd, c, what);
}

static void
test_host_to_guest(bool guest_close, uint32_t port, bool first)
{
	char what[64];
	struct vfe_guest_conn *c = NULL;
	unsigned int mark = dp_log.n;
	uint32_t hp = 0;
	int fd, k;

	snprintf(what, sizeof(what), "host->guest %u", port);
	vfe_guest_listen(&env.g, port, true);
	fd = dp_host_to_guest(&env, port, &c, &hp, MS);
	if (!tap_ok(fd >= 0, "%s: host reads OK after the guest's RESPONSE (%d)", what, fd))
		return;
	k = last_rx(mark, port, hp, VIRTIO_VSOCK_OP_REQUEST);
	if (!tap_ok(k >= 0 && fixed_fields_ok(&dp_log.e[k], port, hp, VIRTIO_VSOCK_OP_REQUEST, 0) &&
			dp_log.e[k].p.len == 0 && dp_log.e[k].p.flags == 0,
			"%s: REQUEST header from 2:%u", what, hp) && k >= 0)
		diag_pkt(&dp_log.e[k]);
	tap_ok(hp >= DP_HOST_PORT_FIRST && hp < 2 * DP_HOST_PORT_FIRST && (!first ||
		hp == DP_HOST_PORT_FIRST), "%s: OK %u is the REQUEST's source port, in [2^30, 2^31)",
		what, hp);
	exchange(fd, c, what);
	if (guest_close)
		guest_closes(fd, c, what);
	else
		host_closes(fd, c, what);
	vfe_guest_listen(&env.g, port, false);
}

/* SHUT_WR by the guest: the host reads EOF, then still writes to the guest. */
static void
test_guest_shut_wr(void)
{
	const char *what = "guest SHUT_WR";
	struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c;
	int lfd, fd;
	long r = -1;
	char b;

	lfd = dp_listen(&env, 5100, SOCK_STREAM);
	c = dp_guest_connect(&env, 5100, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0, "%s: connected", what))
		return;
	dp_stream_init(&g2h, 21, UINT64_MAX);
	dp_stream_init(&hrx, 21, UINT64_MAX);
	dp_stream_init(&h2g, 22, UINT64_MAX);
	dp_stream_init(&grx, 22, UINT64_MAX);
	guest_write_all(c, &g2h, 10000);
	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(host_read_n(fd, &hrx, 10000, false), "%s: host reads the 10000 bytes sent before",
		what);
	tap_ok(DP_WAIT(&env, (r = recv(fd, &b, 1, MSG_DONTWAIT)) >= 0 || errno != EAGAIN, MS) &&
		r == 0, "%s: then EOF", what);
	tap_ok(host_write_all(fd, &h2g, 300000) && guest_read_exact(c, &grx, 300000),
		"%s: host -> guest still carries 300000 bytes", what);
	tap_ok(c->state == VFE_GC_ESTABLISHED && c->peer_shut == 0,
		"%s: the guest was not told to stop receiving", what);
	host_closes(fd, c, what);
}

/* SHUT_WR by the host: the guest sees SHUTDOWN SEND only, and still writes to the host. */
static void
test_host_shut_wr(void)
{
	const char *what = "host SHUT_WR";
	struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c = NULL;
	uint32_t hp;
	int fd;

	vfe_guest_listen(&env.g, 5200, true);
	fd = dp_host_to_guest(&env, 5200, &c, &hp, MS);
	vfe_guest_listen(&env.g, 5200, false);
	if (!tap_ok(fd >= 0, "%s: connected", what))
		return;
	dp_stream_init(&g2h, 31, UINT64_MAX);
	dp_stream_init(&hrx, 31, UINT64_MAX);
	dp_stream_init(&h2g, 32, UINT64_MAX);
	dp_stream_init(&grx, 32, UINT64_MAX);
	host_write_all(fd, &h2g, 10000);
	shutdown(fd, SHUT_WR);
	tap_ok(guest_read_exact(c, &grx, 10000), "%s: guest reads the 10000 bytes sent before",
		what);
	tap_ok(DP_WAIT(&env, c->peer_shut != 0, MS) && c->peer_shut == VIRTIO_VSOCK_SHUTDOWN_SEND,
		"%s: then SHUTDOWN with SEND only (flags %#x)", what, c->peer_shut);
	tap_ok(guest_write_all(c, &g2h, 300000) && host_read_exact(fd, &hrx, 300000),
		"%s: guest -> host still carries 300000 bytes", what);
	guest_closes(fd, c, what);
}

static void
test_refused(void)
{
	struct vfe_guest_conn *c;
	unsigned int mark;
	uint64_t unknown;
	uint32_t hp;
	int fd, k, lfd;

	/* Nothing at <uds>_7999. */
	mark = dp_log.n;
	c = dp_guest_connect(&env, 7999, VIRTIO_VSOCK_TYPE_STREAM, MS);
	tap_ok(c != NULL && c->state == VFE_GC_CLOSED && c->reset,
		"no listener: guest REQUEST refused with RST");
	k = c != NULL ? last_rx(mark, c->local_port, 7999, VIRTIO_VSOCK_OP_RST) : -1;
	if (!tap_ok(k >= 0 && dp_log.e[k].p.src_cid == 2 && dp_log.e[k].p.dst_cid == DP_CID &&
			dp_log.e[k].p.type == VIRTIO_VSOCK_TYPE_STREAM && dp_log.e[k].p.len == 0 &&
			dp_log.e[k].p.flags == 0 && dp_log.e[k].used_len == 44,
			"no listener: RST from 2:7999 to the guest's port") && k >= 0)
		diag_pkt(&dp_log.e[k]);
	if (c != NULL)
		vfe_guest_release(&env.g, c);

	/* A socket file nobody listens on any more. */
	lfd = dp_listen(&env, 7998, SOCK_STREAM);
	close(lfd);
	c = dp_guest_connect(&env, 7998, VIRTIO_VSOCK_TYPE_STREAM, MS);
	tap_ok(lfd >= 0 && c != NULL && c->state == VFE_GC_CLOSED && c->reset,
		"stale socket file: guest REQUEST refused with RST");
	if (c != NULL)
		vfe_guest_release(&env.g, c);

	/* CONNECT to a guest port nobody listens on: the guest answers RST. */
	unknown = env.g.unknown_rx;
	mark = dp_log.n;
	fd = dp_host_connect(&env, 8999);
	k = fd >= 0 ? dp_read_ok(&env, fd, &hp, MS) : fd;
	tap_ok(k == -ENODATA, "CONNECT to a closed guest port: host reads EOF, no OK line "
		"(%d)", k);
	tap_ok(env.g.unknown_rx == unknown + 1, "CONNECT to a closed guest port: one REQUEST "
		"reached the guest and was answered RST");
	k = -1;
	for (unsigned int i = mark; i < dp_log.n; i++)
		if (dp_log.e[i].tx && dp_log.e[i].p.op == VIRTIO_VSOCK_OP_RST &&
		    dp_log.e[i].p.src_port == 8999)
			k = (int)i;
	tap_ok(k >= 0 && dp_log.e[k].p.dst_port >= DP_HOST_PORT_FIRST,
		"CONNECT to a closed guest port: guest RST went to the host port");
	if (fd >= 0)
		close(fd);
}

struct conc {
	int fd;
	struct vfe_guest_conn *c;
	struct dp_stream g2h, hrx, h2g, grx;
	bool eof;
};

static struct conc conc[2 * NCONC];

static void
test_concurrent(void)
{
	unsigned int i, est = 0, ok = 0, fnv_ok = 0;
	int lfd[NCONC];
	uint64_t t0 = dp_now_ns();
	bool done;

	vfe_guest_listen(&env.g, 10000, true);
	for (i = 0; i < NCONC; i++) {
		lfd[i] = dp_listen(&env, 9000 + i, SOCK_STREAM);
		conc[i].c = vfe_guest_connect(&env.g, 9000 + i, VIRTIO_VSOCK_TYPE_STREAM);
		conc[i].fd = -1;
	}
	/* Host CONNECTs: each OK line names the guest connection it belongs to. */
	for (i = NCONC; i < 2 * NCONC; i++)
		conc[i].fd = dp_host_connect(&env, 10000);
	for (i = 0; i < NCONC; i++) {
		conc[i].fd = dp_accept(&env, lfd[i], MS);
		close(lfd[i]);
		if (conc[i].fd >= 0 && conc[i].c != NULL &&
		    DP_WAIT(&env, conc[i].c->state != VFE_GC_CONNECTING, MS) &&
		    conc[i].c->state == VFE_GC_ESTABLISHED)
			est++;
	}
	for (i = NCONC; i < 2 * NCONC; i++) {
		uint32_t hp = 0;
		unsigned int j;

		conc[i].c = NULL;
		if (conc[i].fd < 0 || dp_read_ok(&env, conc[i].fd, &hp, MS) < 0)
			continue;
		for (j = 0; j < VFE_GUEST_MAX_CONNS; j++) {
			struct vfe_guest_conn *c = &env.g.conns[j];

			if (c->state == VFE_GC_ESTABLISHED && c->local_port == 10000 &&
			    c->peer_port == hp)
				conc[i].c = c;
		}
		if (conc[i].c != NULL)
			est++;
	}
	while (vfe_guest_accept(&env.g) != NULL)
		;
	if (!tap_ok(est == 2 * NCONC, "%u connections established at once (%u)", 2 * NCONC, est))
		return;
	for (i = 0; i < 2 * NCONC; i++) {
		dp_stream_init(&conc[i].g2h, 1000 + i, CONC_BYTES);
		dp_stream_init(&conc[i].hrx, 1000 + i, CONC_BYTES);
		dp_stream_init(&conc[i].h2g, 5000 + i, CONC_BYTES);
		dp_stream_init(&conc[i].grx, 5000 + i, CONC_BYTES);
	}
	do {
		done = true;
		for (i = 0; i < 2 * NCONC; i++) {
			struct conc *x = &conc[i];

			dp_guest_send(&env, x->c, &x->g2h);
			dp_host_send(x->fd, &x->h2g);
			while (dp_host_recv(x->fd, &x->hrx) > 0)
				;
			dp_guest_recv(&env, x->c, &x->grx);
			done &= x->hrx.done == CONC_BYTES && x->grx.done == CONC_BYTES;
			if (x->hrx.bad_at != UINT64_MAX || x->grx.bad_at != UINT64_MAX)
				done = true;
		}
	} while (!done && dp_tick(&env, t0 + 30000000000ull));
	for (i = 0; i < 2 * NCONC; i++) {
		struct conc *x = &conc[i];

		ok += dp_stream_ok(&x->hrx) && dp_stream_ok(&x->grx);
		fnv_ok += x->hrx.fnv == x->g2h.fnv && x->grx.fnv == x->h2g.fnv;
		if (!dp_stream_ok(&x->hrx) || !dp_stream_ok(&x->grx))
			if (ok + 3 > i)	/* a few, not 256 lines */
				tap_diag("conn %u: host got %llu (bad at %lld), guest got %llu "
					"(bad at %lld)", i, (unsigned long long)x->hrx.done,
					(long long)x->hrx.bad_at, (unsigned long long)x->grx.done,
					(long long)x->grx.bad_at);
	}
	tap_ok(ok == 2 * NCONC, "%u connections: every byte arrived both ways (%u ok)",
		2 * NCONC, ok);
	tap_ok(fnv_ok == 2 * NCONC, "%u connections: checksums match both ways", 2 * NCONC);
	tap_diag("%u connections x %u KiB each way in %.2f s", 2 * NCONC, CONC_BYTES / 1024,
		(double)(dp_now_ns() - t0) / 1e9);

	/* Half closed by the guest, half by the host. */
	for (i = 0; i < 2 * NCONC; i++) {
		if (i % 2)
			vfe_guest_shutdown(&env.g, conc[i].c, VIRTIO_VSOCK_SHUTDOWN_RCV |
				VIRTIO_VSOCK_SHUTDOWN_SEND);
		else
			close(conc[i].fd);
	}
	ok = 0;
	for (i = 0; i < 2 * NCONC; i++) {
		char b;
		long r = -1;

		if (DP_WAIT(&env, conc[i].c->state == VFE_GC_CLOSED, MS) && (i % 2 == 0 ||
		    (DP_WAIT(&env, (r = recv(conc[i].fd, &b, 1, MSG_DONTWAIT)) >= 0 ||
		    errno != EAGAIN, MS) && r == 0)))
			ok++;
		if (i % 2)
			close(conc[i].fd);
		vfe_guest_release(&env.g, conc[i].c);
	}
	tap_ok(ok == 2 * NCONC, "%u connections closed from both sides (%u)", 2 * NCONC, ok);
	vfe_guest_listen(&env.g, 10000, false);
}

int
main(void)
{
	struct vfe_guest_conf gc = { .rx_hook = dp_log_rx, .tx_hook = dp_log_tx };

	if (dp_start(&env) < 0)
		return tap_done();
	if (dp_attach(&env, NULL, &gc) == 0) {
		/* First: the app's first host port is 2^30. */
		test_host_to_guest(false, 6000, true);
		test_host_to_guest(true, 6001, false);
		test_guest_to_host(true, 5000);
		test_guest_to_host(false, 5001);
		test_guest_shut_wr();
		test_host_shut_wr();
		test_refused();
		dp_log_clear();
		test_concurrent();
		dp_check_guest(&env, "stream");
	}
	dp_stop(&env);
	return tap_done();
}
