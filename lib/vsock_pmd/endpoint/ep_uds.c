/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unix socket side of hybrid vsock: connect, accept, the CONNECT line and the OK reply, and
 * the bytes of a socket endpoint (ep.h) both ways. doc/hybrid-vsock.md describes the
 * convention and why we answer the way we do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "ep.h"
#include "ep_uds.h"

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	return 0;
}

int ep_uds_clear_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	/* A symlink is not followed, whatever it names: only what the path itself is counts. */
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int ep_uds_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd, ret;

	ret = fill_addr(&sa, path);
	if (ret < 0)
		return ret;
	ret = ep_uds_clear_stale(path);
	if (ret < 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int ep_uds_connect(const char *uds_path, uint32_t port, bool seqpacket)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct sockaddr_un sa;
	int fd, ret, n;

	n = snprintf(path, sizeof(path), "%s_%u", uds_path, port);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	ret = fill_addr(&sa, path);
	if (ret < 0)
		return ret;
	fd = socket(AF_UNIX, (seqpacket ? SOCK_SEQPACKET : SOCK_STREAM) |
		    SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/*
	 * A Unix connect completes or fails at once; a non-blocking one fails with EAGAIN instead
	 * of waiting for room in a full backlog, so it never leaves a connect in progress.
	 */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int ep_uds_accept(int listen_fd)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int ep_uds_parse_connect(const char *line, size_t len, uint32_t *port)
{
	static const char kw[] = "CONNECT";
	const size_t kwlen = sizeof(kw) - 1;
	uint64_t v = 0;
	size_t i, digits = 0;

	if (len < kwlen + 3 || line[len - 1] != '\n')
		return -EPROTO;
	len--;
	if (line[len - 1] == '\r')
		len--;
	if (strncasecmp(line, kw, kwlen) != 0 || line[kwlen] != ' ')
		return -EPROTO;
	for (i = kwlen; i < len && line[i] == ' '; i++)
		;
	for (; i < len; i++, digits++) {
		if (line[i] < '0' || line[i] > '9')
			return -EPROTO;
		v = v * 10 + (uint64_t)(line[i] - '0');
		if (v > UINT32_MAX)
			return -EPROTO;
	}
	if (digits == 0)
		return -EPROTO;
	*port = (uint32_t)v;
	return 0;
}

int ep_uds_line_read(int fd, struct ep_uds_line *l, uint32_t *port, size_t *line_len)
{
	char *nl = NULL;
	ssize_t n;

	/*
	 * Until the socket says EAGAIN: it is edge-triggered, and one edge may cover both the
	 * start of the line and the client's shutdown. Each pass takes at least one byte of the
	 * line buffer, so the loop ends within EP_UDS_LINE_MAX passes.
	 */
	while (!nl) {
		if (l->len == sizeof(l->buf))
			return -EPROTO;
		n = recv(fd, l->buf + l->len, sizeof(l->buf) - l->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (n == 0)
			return -ECONNRESET;
		l->len += (uint8_t)n;
		nl = memchr(l->buf, '\n', l->len);
	}
	*line_len = (size_t)(nl - l->buf) + 1;
	if (ep_uds_parse_connect(l->buf, *line_len, port) < 0)
		return -EPROTO;
	return 1;
}

size_t ep_uds_format_ok(char *buf, uint32_t port)
{
	return (size_t)snprintf(buf, EP_UDS_OK_MAX, "OK %u\n", port);
}

/* ---- the bytes of a socket endpoint (ep.h) ---- */

/*
 * Ask for EPOLLOUT (@p on) or stop asking (sock_register() says why it is not always asked
 * for). The modification reports the socket at once if it is writable already, so no room
 * made between the short write and this call is missed. Should it fail, the endpoint stays
 * writable: the next round writes again rather than waiting for an edge that never comes.
 */
static void sock_want_out(struct ep *e, const struct ep_io *io, bool on)
{
	struct epoll_event ev = {
		.events = EP_SOCK_EVENTS | (on ? EPOLLOUT : 0),
		.data.u64 = e->token,
	};

	if (e->want_out == on)
		return;
	if (epoll_ctl(io->epfd, EPOLL_CTL_MOD, e->fd, &ev) == 0)
		e->want_out = on;
	else if (on)
		e->ev |= EP_WRITABLE;
}

/* The socket took less than offered: the next bytes wait for EPOLLOUT. */
static void sock_full(struct ep *e, const struct ep_io *io)
{
	e->ev &= ~EP_WRITABLE;
	sock_want_out(e, io, true);
}

ssize_t ep_sock_writev(struct ep *e, struct ep_io *io, const struct iovec *iov, unsigned int n,
		       size_t len)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = n };
	ssize_t w;

	do {
		w = sendmsg(e->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (w < 0 && errno == EINTR);
	if (w < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			sock_full(e, io);
			return 0;
		}
		return errno == EMSGSIZE ? -EMSGSIZE : -EIO;
	}
	if ((size_t)w < len)
		sock_full(e, io);
	return w;
}

int ep_sock_send(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held, uint32_t *moved)
{
	bool whole_msg = e->caps & EP_CAP_WHOLE_MSG;

	while (q->bytes && (e->ev & EP_WRITABLE)) {
		unsigned int cnt = 0;
		struct rte_mbuf *m;
		bool whole = !whole_msg;
		size_t want = 0;
		ssize_t n;

		for (m = q->head; m && cnt < io->n; m = m->next) {
			io->iov[cnt].iov_base = rte_pktmbuf_mtod(m, void *);
			io->iov[cnt++].iov_len = m->data_len;
			want += m->data_len;
			/* SEQPACKET: exactly one complete message per sendmsg(). */
			if (m->packet_type & MQ_EOM) {
				whole = true;
				break;
			}
		}
		if (!whole)
			break;	/* the rest of the message is still in the guest */
		n = ep_sock_writev(e, io, io->iov, cnt, want);
		if (n < 0)
			return (int)n;
		mq_consume(q, (uint32_t)n, held);
		*moved += (uint32_t)n;
	}
	/* All out: the far side's reads are of no interest again until a write is short. */
	if (!q->bytes)
		sock_want_out(e, io, false);
	return 0;
}

/*
 * recvmsg() without waiting. @return bytes (0: the end, or an empty message), -EAGAIN with
 * EP_READABLE cleared when nothing waits, or -EIO.
 */
static ssize_t sock_recvmsg(struct ep *e, struct msghdr *mh)
{
	ssize_t n;

	do {
		n = recvmsg(e->fd, mh, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		return -EIO;
	e->ev &= ~EP_READABLE;
	return -EAGAIN;
}

ssize_t ep_sock_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = n };
	ssize_t r = sock_recvmsg(e, &mh);

	if (r <= 0) {
		if (r == 0)
			e->ev = (uint16_t)((e->ev | EP_EOF) & ~EP_READABLE);
		return r == -EAGAIN ? 0 : r;
	}
	/*
	 * A short read emptied the socket: the next bytes bring a new edge. An end of stream
	 * already signalled brings none, so keep reading until it shows as 0.
	 */
	if ((size_t)r < len && !(e->ev & (EP_RDHUP | EP_HUP)))
		e->ev &= ~EP_READABLE;
	return r;
}

ssize_t ep_sock_recv(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
		     uint32_t want, uint32_t max_mbufs)
{
	/* Messages only: a stream socket is read with ep_readv(), straight where it goes. */
	uint32_t nb = RTE_MIN((want + io->room - 1) / io->room, io->n), i, left;
	struct msghdr mh = { .msg_iov = io->iov, .msg_iovlen = nb };
	ssize_t n;

	RTE_SET_USED(max_mbufs);	/* a message takes the mbufs it needs */
	if (rte_pktmbuf_alloc_bulk(io->pool, io->mbufs, nb) != 0)
		return -ENOBUFS;
	for (i = 0, left = want; i < nb; i++) {
		io->iov[i].iov_base = rte_pktmbuf_mtod(io->mbufs[i], void *);
		io->iov[i].iov_len = RTE_MIN(left, io->room);
		left -= (uint32_t)io->iov[i].iov_len;
	}
	n = sock_recvmsg(e, &mh);
	if (n >= 0 && (mh.msg_flags & MSG_TRUNC))
		n = -EMSGSIZE;
	/*
	 * 0 is the end of the stream, or an empty message, which vsock cannot carry: only the
	 * hang-up edge tells them apart.
	 */
	if (n == 0 && (e->ev & (EP_RDHUP | EP_HUP)))
		e->ev = (uint16_t)((e->ev | EP_EOF) & ~EP_READABLE);
	if (n <= 0) {
		rte_pktmbuf_free_bulk(io->mbufs, nb);
		return n == -EAGAIN ? 0 : n;
	}
	for (i = 0, left = (uint32_t)n; i < nb; i++) {
		struct rte_mbuf *m = io->mbufs[i];

		if (left == 0) {
			rte_pktmbuf_free_seg(m);
			continue;
		}
		m->data_len = (uint16_t)RTE_MIN(left, io->room);
		m->pkt_len = m->data_len;
		left -= m->data_len;
		if (left == 0)
			m->packet_type = MQ_EOM | MQ_EOR;
		mq_push(q, m, held);
	}
	return n;
}
