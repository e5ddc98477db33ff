/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TEST_FAKE_EP_H
#define TEST_FAKE_EP_H

/*
 * A fake endpoint room: the endpoint facade (ep.h) implemented without a socket or a pipe,
 * for programs that link the protocol room alone (tests/unit/test_conn_ep.c,
 * tests/fuzz/fuzz_conn.c). Each host end is a struct fake_end: what it takes from the
 * protocol and what it has for it, with a capacity, its errors and its events set by the
 * program. It keeps the facade's contract as ep_uds.c and ep_pipe.c do:
 * - a socket (EP_SOCK) gets its events from fake_event(), as epoll edges; a stream one is
 *   read with ep_readv() (EP_CAP_READV) or into mbufs, a SEQPACKET one (EP_CAP_WHOLE_MSG)
 *   moves whole messages both ways;
 * - a pipe (EP_PIPE, EP_CAP_POLLED) has no events: its far side's doings (far) show at
 *   ep_pipe_poll(); a stream pipe takes writes into fresh mbufs, a SEQPACKET one takes
 *   queued mbufs whole, and both are read with ep_readv(), a SEQPACKET read stopping at
 *   each message's end (MQ_EOM | MQ_EOR);
 * - host connects come from fake_listen() (a socket on the listener, with its CONNECT line)
 *   and fake_incoming() (a pipe opened by another guest or a program).
 *
 * A call on an end that is not open, or a second close, aborts: the protocol must never use
 * a descriptor it let go of.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "ep.h"

#define FAKE_ENDS 16
/* Bytes an end stores of what it took and offers from fake_end.to_guest (no hooks). */
#define FAKE_SIDE (256 * 1024)
/* Messages an end offers at once (SEQPACKET). */
#define FAKE_MSGS 64
/* Host connects waiting on the listener or on the incoming ring. */
#define FAKE_PENDING 16

struct fake_end {
	bool used, polled, closed, clean, reset, established;
	bool shut_wr, shut_rd;
	uint16_t type;			/* VIRTIO_VSOCK_TYPE_* of the connection */
	uint32_t port;			/* what ep_connect() or the CONNECT line asked for */
	uint32_t host_port;		/* what ep_established() said */
	uint64_t token;
	size_t taken;			/* bytes it took from us (a shut pipe's dropped ones too) */
	unsigned int writes;		/* ep_writev() calls that reached it */
	size_t room;			/* what it takes before it is full */
	int fail;			/* the error of its next write */
	int est_fail;			/* ep_established()'s answer */
	size_t offered, read;		/* what it has for the guest, and what was taken of it */
	unsigned int reads;		/* ep_readv() calls that reached it */
	int rfail;			/* the error of its next read */
	bool eof;			/* nothing after what it offered */
	uint16_t far;			/* polled: events its far side gives */
	/* Ends of the messages it offered (offsets in the stream), oldest first. */
	unsigned int nmsg;
	size_t msg_end[FAKE_MSGS];
	/*
	 * A listener's end: its CONNECT line (0: not complete yet, 1: complete, < 0: error);
	 * 2: read, or an end without one.
	 */
	int line;
	uint32_t early;			/* stream bytes sent after the line */
	/*
	 * A pipe holds what we put in it (counted in our held) until its far side takes it
	 * (fake_far_take()); otherwise the far side takes everything at once.
	 */
	bool hold;
	unsigned int pipe_slots;	/* mbufs the pipe holds at most (hold) */
	struct rte_mbuf *held_head, *held_tail;
	unsigned int nheld;		/* mbufs still in the pipe */
	unsigned int ep_held;		/* the ep's own count of them, as of its last poll */
	/* Not cleared by a reuse of the slot: what the program may read back in place. */
	uint8_t to_host[FAKE_SIDE];	/* what the end took from us (no took hook) */
	uint8_t to_guest[FAKE_SIDE];	/* what it has for the guest (no fill hook) */
};

extern struct fake_end fake_ends[FAKE_ENDS];
/* ep_connect(): 0 open, < 0 refused (the pipe or socket choice is the route's). */
extern int fake_next_connect;
/* ep_connect(): a socket's caps; with fake_real_caps, those ep_uds gives its type. */
extern uint8_t fake_next_caps;
extern bool fake_real_caps;
/*
 * Bytes every end took (a shut pipe's dropped ones too) and bytes read from every end
 * (not those a CONNECT line brought), since fake_ep_reset().
 */
extern uint64_t fake_total_taken, fake_total_read;
/* New pipes hold mbufs (fake_end.hold) in this many slots; 0: they do not. */
extern unsigned int fake_pipe_slots;

/*
 * Hooks for a program that checks bytes instead of storing them: @p took sees every piece
 * an end takes, at offset @p off of what it took, @p eom when the piece ends a message;
 * @p fill writes @p len bytes of the end's stream from @p off. NULL: fake_end.to_host and
 * fake_end.to_guest (their first FAKE_SIDE bytes).
 */
extern void (*fake_took)(struct fake_end *f, size_t off, const uint8_t *p, size_t len,
			 bool eom);
extern void (*fake_fill)(struct fake_end *f, size_t off, uint8_t *dst, size_t len);

/* Forget every end and everything pending (a fresh start; the ends must all be closed). */
void fake_ep_reset(void);

/* The socket-like end's event, as epoll would report it (EP_TOKEN_LISTENER: the listener). */
void fake_event(uint64_t token, uint16_t ev);

/*
 * @p len more bytes for the guest; a message of its own when @p msg (SEQPACKET). False
 * when it has FAKE_MSGS messages waiting already, or when we shut our read side (a
 * socket's sender gets EPIPE, a pipe's far side drops them).
 */
bool fake_offer(struct fake_end *f, size_t len, bool msg);

/*
 * A host program connects on the listener, its CONNECT line for guest port @p port in the
 * state @p line with @p early stream bytes after it. False: too many pending.
 */
bool fake_listen(uint32_t port, int line, uint32_t early);

/* Another guest or a program opens a pipe to ours, addresses @p a; already reset if @p reset. */
bool fake_incoming(const struct ep_addr *a, bool reset);

/* Connects never taken: the listener's and the incoming ring's. */
unsigned int fake_pending(void);

/* The far side of pipe @p f takes @p n of the mbufs we put in it (shows at its next poll). */
void fake_far_take(struct fake_end *f, unsigned int n);

/* Ends open now. */
unsigned int fake_open_ends(void);

/*
 * mbufs we put in pipes that their far sides freed before our next poll: still in the
 * tables' held counters, no longer in the pool's in-use count.
 */
unsigned int fake_freed_unpolled(void);

/* The end behind @p e (NULL if none). */
struct fake_end *fake_end_of(const struct ep *e);

#endif /* TEST_FAKE_EP_H */
