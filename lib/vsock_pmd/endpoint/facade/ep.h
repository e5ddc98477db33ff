/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PMD_EP_H
#define VSOCK_PMD_EP_H

/**
 * The host end of a vsock connection, as the protocol (proto/conn.c) sees it: something that
 * moves bytes and reports events. Two kinds are behind it:
 * - a Unix socket (hybrid vsock, ep_uds.h), whose events are epoll edges; a stream one is
 *   read straight into the guest's rx buffers (EP_CAP_READV), a message one into mbufs;
 * - a pipe of mbufs (ep_pipe.h) whose far side is another guest or a native program, with
 *   no events: it is polled every round (EP_CAP_POLLED), and its mbufs are copied straight
 *   into the guest's rx buffers (EP_CAP_READV), a message's end with them.
 *
 * The protocol calls the functions below and reads ep.ev; it never asks which kind is behind
 * an endpoint, only what it can do (ep.caps). Each call is one switch, inline, as the virtqueue
 * facade (vq_*): no function pointer on the per-packet path.
 *
 * Counting is the protocol's: an endpoint reports the bytes it moved and the caller adds them
 * to fwd_cnt, credit and statistics. The mbufs an endpoint takes or gives count in the
 * caller's @p held counter of their direction (the mbuf quota); an endpoint adjusts it as
 * mbufs come and go. One endpoint is used by one lcore at a time, like its table.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <rte_ring.h>

#include "ep_queue.h"

struct ep_pipe;
struct ep_waker;
struct rte_mempool;

enum ep_kind {
	EP_NONE,
	EP_SOCK,
	EP_PIPE,
};

/* ep.ev: what the far side last told us (and what we did to it). */
#define EP_READABLE	(1u << 0)	/* ep_readv() or ep_recv() may bring bytes, or the end */
#define EP_WRITABLE	(1u << 1)	/* ep_send() and ep_writev() may move bytes */
#define EP_EOF		(1u << 2)	/* the far side sends no more, and all it sent is read */
#define EP_HUP		(1u << 3)	/* hung up: it reads no more, said with its EOF */
#define EP_SHUT_RD	(1u << 4)	/* it reads no more, said at once */
#define EP_RDHUP	(1u << 5)	/* it shut its write side (its EOF is on the way) */
#define EP_WR_SHUT	(1u << 6)	/* we shut our write side (ep_shutdown(SHUT_WR)) */
#define EP_OPENED	(1u << 7)	/* it accepted our connect (ep_connect() returned 1) */
#define EP_RESET	(1u << 8)	/* it reset the connection, or refused it */
#define EP_GONE		(1u << 9)	/* it let go: never looks again */
#define EP_FIN		(1u << 10)	/* it said it sends no more: EP_EOF once drained */
#define EP_RD_SHUT	(1u << 11)	/* we shut our read side (ep_shutdown(SHUT_RD)) */

/* ep.caps: what the endpoint can do, fixed when it opens. */
#define EP_CAP_POLLED	(1u << 0)	/* no readiness events: serve it every round */
#define EP_CAP_WHOLE_MSG (1u << 1)	/* SEQPACKET: one whole message per read and write */
#define EP_CAP_READV	(1u << 2)	/* ep_readv() reads it into any memory, never ep_recv() */

/** Longest CONNECT line we accept, '\n' included ("CONNECT 4294967295\n" is 19 bytes). */
#define EP_UDS_LINE_MAX 32

/**
 * A CONNECT line being read from one host socket (ep_uds.h): here, as struct ep holds it,
 * so that the protocol needs no kind's header.
 */
struct ep_uds_line {
	uint8_t len;			/* bytes in buf */
	char buf[EP_UDS_LINE_MAX];
};

struct ep {
	union {
		struct ep_pipe *pipe;	/* EP_PIPE: the pipe, of which we are side @p side */
		uint64_t token;		/* EP_SOCK: its token in the host's epoll set */
	};
	int fd;			/* EP_SOCK: the socket; -1 otherwise */
	uint16_t ev;
	uint8_t kind;
	uint8_t caps;
	uint8_t side;
	bool want_out;		/* EP_SOCK: EPOLLOUT asked for, a write waiting for room */
	uint16_t held;		/* EP_PIPE: mbufs we put in the pipe that the far side has not taken */
	struct ep_uds_line line;	/* EP_SOCK from the listener: its CONNECT line */
};

/**
 * The table's scratch for endpoint I/O: one socket call's vector, one read's mbufs; and the
 * epoll set of its host (ep_host), where a socket's EPOLLOUT is asked for and dropped.
 */
struct ep_io {
	struct iovec *iov;
	struct rte_mbuf **mbufs;
	unsigned int n;			/* entries of each */
	struct rte_mempool *pool;
	uint32_t room;			/* payload bytes per mbuf */
	int epfd;			/* ep_host.epfd, -1 before it is set up */
};

/** The host side of one table: where its endpoints come from and how their events come. */
struct ep_host {
	/* First: a quiet round reads incoming (ep_incoming_pending()), not the path. */
	struct rte_ring *incoming;	/* pipes others open to our guest (MP/SC) */
	struct ep_waker *waker;		/* the worker polling our pipes, or NULL */
	int listen_fd;		/* the caller's: never closed here */
	int epfd;
	char uds_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/** A connection's addresses, as the side that opens it sees them. */
struct ep_addr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint16_t type;
};

/** One readiness event of ep_host_events(): the token of an ep_register() and EP_* bits. */
struct ep_event {
	uint64_t token;
	uint16_t ev;
};

/** ep_host_events()' token of the listener. */
#define EP_TOKEN_LISTENER 0

/**
 * Set @p h up: an epoll set, with @p listen_fd (>= 0) in it. @p uds_path names the host
 * sockets guest connects go to. @return 0 or a negative errno value.
 */
int ep_host_init(struct ep_host *h, const char *uds_path, int listen_fd,
		 struct rte_ring *incoming, struct ep_waker *waker);

/** Close the epoll set (the listener stays the caller's). */
void ep_host_fini(struct ep_host *h);

/** Refuse every pipe still waiting on the incoming rte_ring: our guest is gone. */
void ep_host_refuse_incoming(struct ep_host *h);

/**
 * Up to @p max readiness events of the sockets registered with @p h, without waiting.
 * @return the number in @p out.
 */
int ep_host_events(struct ep_host *h, struct ep_event *out, int max);

/** An endpoint not open yet (fd -1, nothing behind it). */
static inline void ep_init(struct ep *e)
{
	*e = (struct ep){ .fd = -1 };
}

static inline bool ep_is_open(const struct ep *e)
{
	return e->kind != EP_NONE;
}

/**
 * Open the host end of a guest's connect to @p a: a pipe put on @p to when it is not NULL
 * (another guest or a native listener takes it), else the hybrid vsock socket
 * "<uds_path>_<dst_port>". @p token comes back with its events.
 * @return 0 when open, 1 when the far side has yet to accept (EP_OPENED or EP_RESET follow),
 *   or a negative errno value: refused, nothing of it left.
 */
int ep_connect(struct ep_host *h, struct ep *e, uint64_t token, const struct ep_addr *a,
	       struct rte_ring *to);

/**
 * A host program's connect on the listener: an endpoint that has yet to say where it goes
 * (ep_handshake()), not registered yet. @return 0 or -EAGAIN (none waiting).
 */
int ep_accept_listener(struct ep_host *h, struct ep *e);

/**
 * A pipe another guest or a native program opened to our guest, with its addresses in @p a;
 * EP_RESET in e->ev when its far side gave up already. Not registered yet.
 * @return 0 or -EAGAIN (none waiting).
 */
int ep_accept_incoming(struct ep_host *h, struct ep *e, struct ep_addr *a);

/** Whether a pipe waits on the incoming rte_ring: ep_accept_incoming() has one to take. */
static inline bool ep_incoming_pending(const struct ep_host *h)
{
	return h->incoming && !rte_ring_empty(h->incoming);
}

/** Take an accepted endpoint on: its events come with @p token. @return 0 or -errno. */
int ep_register(struct ep_host *h, struct ep *e, uint64_t token);

/**
 * Read more of the CONNECT line of a listener's endpoint.
 * @return 1 with *port and the bytes sent after the line (*early, *early_len) set, 0 when
 *   it is not complete yet, or a negative errno value (malformed, closed, too long).
 */
int ep_handshake(struct ep *e, uint32_t *port, const char **early, uint32_t *early_len);

/** The guest accepted a host connect on @p host_port: tell the far side. @return 0 or -EIO. */
int ep_established(struct ep *e, uint32_t host_port);

/* Per kind; the facade below picks one. */
ssize_t ep_sock_writev(struct ep *e, struct ep_io *io, const struct iovec *iov, unsigned int n,
		       size_t len);
ssize_t ep_sock_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len);
int ep_sock_send(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held, uint32_t *moved);
ssize_t ep_sock_recv(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
		     uint32_t want, uint32_t max_mbufs);
ssize_t ep_pipe_writev(struct ep *e, struct ep_io *io, const struct iovec *iov, unsigned int n,
		       size_t len, uint32_t *held, uint32_t max_mbufs);
int ep_pipe_send(struct ep *e, struct mq *q, uint32_t *held, uint32_t *moved);
ssize_t ep_pipe_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len,
		      uint32_t *eom);
void ep_pipe_poll(struct ep *e, uint32_t *held);

/**
 * Write @p len bytes of @p iov (@p n pieces) straight out, without queueing: what the far
 * side takes now. A socket writes them (and clears EP_WRITABLE when it took less); a stream
 * pipe copies them into fresh mbufs of @p io, at most @p max_mbufs of them and as many as its
 * rte_ring has room for, each counted in @p held until the far side takes it. A SEQPACKET pipe
 * takes nothing: a message's end travels in its last mbuf, through the queue (ep_send()).
 * @return bytes written, or -EMSGSIZE / -EIO (the connection is lost).
 */
static inline ssize_t ep_writev(struct ep *e, struct ep_io *io, const struct iovec *iov,
				unsigned int n, size_t len, uint32_t *held, uint32_t max_mbufs)
{
	switch (e->kind) {
	case EP_SOCK:
		return ep_sock_writev(e, io, iov, n, len);
	case EP_PIPE:
		return ep_pipe_writev(e, io, iov, n, len, held, max_mbufs);
	default:
		return 0;
	}
}

/**
 * Read up to @p len bytes (EP_CAP_READV) straight into @p iov (@p n pieces), without queueing:
 * the only copy is the kernel's (a stream socket) or ours out of the far side's mbufs (a
 * pipe). A pipe's read stops at the end of a message (SEQPACKET) and gives its MQ_EOM and
 * MQ_EOR marks in *@p eom, 0 otherwise; a message is never read with the next one. Clears
 * EP_READABLE when nothing more is waiting and sets EP_EOF at the end. Without
 * EP_CAP_READV: 0.
 * @return bytes read (0: nothing now, the end, or with *@p eom set a message's end alone), or
 *   -EIO: the connection is lost.
 */
static inline ssize_t ep_readv(struct ep *e, const struct iovec *iov, unsigned int n, size_t len,
			       uint32_t *eom)
{
	*eom = 0;
	if (!(e->caps & EP_CAP_READV))
		return 0;
	return e->kind == EP_PIPE ? ep_pipe_readv(e, iov, n, len, eom) :
	       ep_sock_readv(e, iov, n, len);
}

/**
 * Move queued bytes of @p q out, as far as the far side takes them (EP_CAP_WHOLE_MSG: whole
 * messages only). *@p moved gets the bytes taken from @p q, an error or not.
 * @return 0, or -EMSGSIZE / -EIO: the connection is lost.
 */
static inline int ep_send(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
			  uint32_t *moved)
{
	*moved = 0;
	switch (e->kind) {
	case EP_SOCK:
		return ep_sock_send(e, io, q, held, moved);
	case EP_PIPE:
		return ep_pipe_send(e, q, held, moved);
	default:
		return 0;
	}
}

/**
 * Bring up to @p want bytes into @p q in at most @p max_mbufs mbufs (EP_CAP_WHOLE_MSG: one
 * whole message of at most @p want bytes, whatever @p max_mbufs). An end that can be read
 * with ep_readv() (EP_CAP_READV: a stream socket, a pipe) is read only that way. Clears
 * EP_READABLE when nothing more is waiting and sets EP_EOF at the end.
 * @return bytes added (0: nothing now, or the end), -ENOBUFS (no mbuf: try again later),
 *   -EMSGSIZE (a message larger than @p want) or -EIO: the connection is lost.
 */
static inline ssize_t ep_recv(struct ep *e, struct ep_io *io, struct mq *q, uint32_t *held,
			      uint32_t want, uint32_t max_mbufs)
{
	return e->kind == EP_SOCK ? ep_sock_recv(e, io, q, held, want, max_mbufs) : 0;
}

/**
 * Bring ev up to date for an endpoint without events (EP_CAP_POLLED): what the far side did
 * and took since the last look; its mbufs taken leave @p held.
 */
static inline void ep_poll(struct ep *e, uint32_t *held)
{
	if (e->kind == EP_PIPE)
		ep_pipe_poll(e, held);
}

/**
 * Shut our side one way, as shutdown(2): SHUT_WR (the far side reads EOF after what we
 * sent) or SHUT_RD (its writes fail or are dropped).
 */
void ep_shutdown(struct ep *e, int how);

/** The connection is being reset: tell the far side, before ep_close(). */
void ep_reset(struct ep *e);

/**
 * Let go of the far side, cleanly (it reads what we sent, then EOF) unless reset before,
 * or with a reset when not @p clean. Our mbufs it has not taken leave @p held.
 */
void ep_close(struct ep *e, bool clean, uint32_t *held);

#endif /* VSOCK_PMD_EP_H */
