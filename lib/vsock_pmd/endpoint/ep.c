/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint facade's slow path: opening, accepting, handshakes, shutdowns and closes of
 * both kinds, and the epoll set of a table's sockets. The per-packet calls are inline in
 * ep.h; the bytes move in ep_uds.c (sockets) and ep_pipe.c (pipes).
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include <rte_common.h>
#include <rte_ring.h>

#include "ep.h"
#include "ep_native.h"
#include "ep_pipe.h"
#include "ep_sibling.h"
#include "ep_uds.h"
#include "vsock_pkt.h"

int ep_host_init(struct ep_host *h, const char *uds_path, int listen_fd,
		 struct rte_ring *incoming, struct ep_waker *waker)
{
	if (strlen(uds_path) >= sizeof(h->uds_path))
		return -ENAMETOOLONG;
	strcpy(h->uds_path, uds_path);
	h->listen_fd = listen_fd;
	h->incoming = incoming;
	h->waker = waker;
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (h->epfd < 0)
		return -errno;
	if (listen_fd >= 0) {
		/* Level-triggered: accepting stops at the budget and resumes on the next poll. */
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EP_TOKEN_LISTENER };

		if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, listen_fd, &ev) < 0) {
			int err = -errno;

			ep_host_fini(h);
			return err;
		}
	}
	return 0;
}

void ep_host_fini(struct ep_host *h)
{
	if (h->epfd >= 0)
		close(h->epfd);
	h->epfd = -1;
}

void ep_host_refuse_incoming(struct ep_host *h)
{
	struct ep_pipe *p;

	while (h->incoming && rte_ring_sc_dequeue(h->incoming, (void **)&p) == 0)
		ep_pipe_release(p, 1, EP_PIPE_RST);
}

int ep_host_events(struct ep_host *h, struct ep_event *out, int max)
{
	struct epoll_event ev[64];
	int i, n = epoll_wait(h->epfd, ev, RTE_MIN(max, (int)RTE_DIM(ev)), 0);

	for (i = 0; i < n; i++) {
		uint32_t e = ev[i].events;
		uint16_t bits = 0;

		if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
			bits |= EP_READABLE;
		if (e & (EPOLLOUT | EPOLLERR))
			bits |= EP_WRITABLE;
		if (e & EPOLLRDHUP)
			bits |= EP_RDHUP;
		if (e & EPOLLHUP)
			bits |= EP_HUP;
		out[i].token = ev[i].data.u64;
		out[i].ev = bits;
	}
	return n < 0 ? 0 : n;
}

/*
 * Edge-triggered, without EPOLLOUT until a write finds the socket full (ep_sock_writev()):
 * registered for it, a socket raises an edge each time the far side reads, an epoll_wait
 * with nothing to do, on a round trip's path. Firecracker's and vhost-device-vsock's
 * muxers ask for EPOLLOUT the same way, only while bytes wait for room.
 */
static int sock_register(struct ep_host *h, struct ep *e, uint64_t token)
{
	struct epoll_event ev = { .events = EP_SOCK_EVENTS, .data.u64 = token };

	if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, e->fd, &ev) < 0)
		return -errno;
	e->token = token;
	e->want_out = false;
	/* Assume both ways ready until a syscall says otherwise. */
	e->ev |= EP_READABLE | EP_WRITABLE;
	return 0;
}

static void pipe_take(struct ep_host *h, struct ep *e, struct ep_pipe *p, unsigned int side)
{
	e->kind = EP_PIPE;
	/* Its mbufs carry their messages' ends: both types are read straight where they go. */
	e->caps = EP_CAP_POLLED | EP_CAP_READV;
	e->pipe = p;
	e->side = (uint8_t)side;
	/* A pipe has room or not at each write: never wait for an edge. */
	e->ev |= EP_WRITABLE;
	ep_pipe_set_waker(p, side, h->waker);
}

int ep_connect(struct ep_host *h, struct ep *e, uint64_t token, const struct ep_addr *a,
	       struct rte_ring *to)
{
	bool seq = a->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	struct ep_pipe *p;
	int fd, ret;

	if (!to) {
		fd = ep_uds_connect(h->uds_path, a->dst_port, seq);
		if (fd < 0)
			return fd;
		e->kind = EP_SOCK;
		e->fd = fd;
		e->caps = seq ? EP_CAP_WHOLE_MSG : EP_CAP_READV;
		ret = sock_register(h, e, token);
		if (ret < 0)
			ep_close(e, false, NULL);
		return ret;
	}
	/* The guest that connects pays: its share, never the one it connects to. */
	p = ep_pipe_alloc((unsigned int)ep_sibling_index(a->src_cid));
	if (!p)
		return -ENOBUFS;
	p->src_cid = a->src_cid;
	p->src_port = a->src_port;
	p->dst_cid = a->dst_cid;
	p->dst_port = a->dst_port;
	p->type = a->type;
	pipe_take(h, e, p, 0);
	/*
	 * The enqueue publishes p's fields to the side that dequeues it. A native listener's
	 * rte_ring (the host's CID) only while the listener is still open.
	 */
	if (a->dst_cid == VSOCK_HOST_CID ?
	    ep_native_listener_enqueue(a->src_cid, a->dst_port, p) < 0 :
	    rte_ring_mp_enqueue(to, p) < 0) {
		/* Nobody saw it: both references go. */
		ep_pipe_release(p, 1, EP_PIPE_RST);
		ep_close(e, false, NULL);
		return -ECONNREFUSED;
	}
	/* The other guest's worker may sleep. */
	ep_sibling_wake(a->dst_cid);
	return 1;
}

int ep_accept_listener(struct ep_host *h, struct ep *e)
{
	int fd = ep_uds_accept(h->listen_fd);

	if (fd < 0)
		return -EAGAIN;
	ep_init(e);
	e->kind = EP_SOCK;
	e->fd = fd;
	/* Hybrid vsock's host connects are streams. */
	e->caps = EP_CAP_READV;
	return 0;
}

int ep_accept_incoming(struct ep_host *h, struct ep *e, struct ep_addr *a)
{
	struct ep_pipe *p;

	if (!h->incoming || rte_ring_sc_dequeue(h->incoming, (void **)&p) != 0)
		return -EAGAIN;
	ep_init(e);
	e->kind = EP_PIPE;
	e->caps = EP_CAP_POLLED | EP_CAP_READV;
	e->pipe = p;
	e->side = 1;
	*a = (struct ep_addr){
		.src_cid = p->src_cid, .dst_cid = p->dst_cid,
		.src_port = p->src_port, .dst_port = p->dst_port, .type = p->type,
	};
	if (ep_pipe_flags(p, 0) & (EP_PIPE_RST | EP_PIPE_CLOSED))
		e->ev |= EP_RESET;
	return 0;
}

int ep_register(struct ep_host *h, struct ep *e, uint64_t token)
{
	if (e->kind == EP_SOCK)
		return sock_register(h, e, token);
	pipe_take(h, e, e->pipe, e->side);
	return 0;
}

int ep_handshake(struct ep *e, uint32_t *port, const char **early, uint32_t *early_len)
{
	size_t line_len;
	int ret = ep_uds_line_read(e->fd, &e->line, port, &line_len);

	if (ret <= 0)
		return ret;
	*early = e->line.buf + line_len;
	*early_len = e->line.len - (uint32_t)line_len;
	return 1;
}

int ep_established(struct ep *e, uint32_t host_port)
{
	char ok[EP_UDS_OK_MAX];
	size_t len;

	if (e->kind == EP_PIPE) {
		/* The far side learns it from the flag; data may follow at once. */
		ep_pipe_set(e->pipe, e->side, EP_PIPE_ACCEPTED);
		return 0;
	}
	len = ep_uds_format_ok(ok, host_port);
	/* A fresh socket's send buffer is empty: a short write means the host program is gone. */
	return send(e->fd, ok, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : -EIO;
}

void ep_shutdown(struct ep *e, int how)
{
	if (e->kind == EP_PIPE)
		ep_pipe_set(e->pipe, e->side, how == SHUT_WR ? EP_PIPE_SHUT_SEND :
			    EP_PIPE_SHUT_RCV);
	else if (e->kind == EP_SOCK)
		shutdown(e->fd, how);
	e->ev |= how == SHUT_WR ? EP_WR_SHUT : EP_RD_SHUT;
}

void ep_reset(struct ep *e)
{
	/* A socket's reset is its close. */
	if (e->kind == EP_PIPE)
		ep_pipe_set(e->pipe, e->side, EP_PIPE_RST);
}

void ep_close(struct ep *e, bool clean, uint32_t *held)
{
	if (e->kind == EP_SOCK && e->fd >= 0) {
		/* close() also removes it from the epoll set: we never dup these fds. */
		close(e->fd);
	} else if (e->kind == EP_PIPE) {
		/* The last side to let go frees what is left in the pipe. */
		if (held)
			*held -= e->held;
		ep_pipe_release(e->pipe, e->side, clean ? EP_PIPE_SHUT_SEND | EP_PIPE_SHUT_RCV :
				EP_PIPE_RST);
	}
	e->kind = EP_NONE;
	e->fd = -1;
	e->pipe = NULL;
	e->held = 0;
}
