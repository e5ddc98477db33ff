/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connections of a case (perf_conn.c), both ends: the guest's through the frontend's
 * vfe_guest driver, the host's on a Unix socket of the app or on the native API, and each
 * direction's stream as checked against the pattern.
 */
#ifndef APP_VSOCK_PERF_PERF_CONN_H
#define APP_VSOCK_PERF_PERF_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_args.h"
#include "perf_refs.h"
#include "vfe_guest.h"

struct perf_run;
struct rte_mbuf;

/* The host ports of each mode's connections. */
#define PORT_G2H 5000
#define PORT_H2G 6000
#define PORT_RR 7000
/* Connections of one case, at most (--conns). */
#define MAX_CONNS 1024
/* Native host end: mbufs per send or receive call, payload bytes per mbuf. */
#define NATIVE_BURST 32
#define NATIVE_SEG 2048u
/*
 * mbufs a send fills before it hands them over: HOST_BATCH bytes, what the Unix socket host
 * end writes a syscall in a stream, so that native/uds compares backends, not clients. The
 * worker copies them into the guest while the next ones are filled, as a reader of a Unix
 * socket takes the first part of a large send() while the kernel still copies the rest,
 * where a whole send filled first would make a round trip wait for all of it.
 */
#define NATIVE_FILL (HOST_BATCH / NATIVE_SEG)
/*
 * Stream bytes a Unix socket host end lets the guest move between two of its syscalls while
 * the socket's queue holds enough to keep the worker busy: a syscall costs this client
 * microseconds (a 64 B packet's worth of the worker's time many times over), so one per
 * round would make the client, not the backend, what a small-packet case measures.
 */
#define HOST_BATCH 32768u

/* One connection of a case: both ends, and each direction's stream as checked. */
struct pconn {
	struct vfe_guest_conn *gc;
	int fd;			/* uds host end */
	int h;			/* native host end: connection handle */
	int herr;		/* native: the first error a data call returned */
	/* Native: mbufs filled and offered, not taken yet (the ring was full). */
	struct rte_mbuf *held[NATIVE_FILL];
	uint16_t held_len[NATIVE_FILL];
	uint16_t nb_held, held_off;
	uint64_t base;		/* pattern offset of this connection's stream */
	uint64_t sent, rcvd;	/* bytes handed to the transport, checked at the other end */
	uint64_t send_at;	/* uds host -> guest: rcvd at which the host end writes again */
	uint64_t bad_at;	/* UINT64_MAX: every byte matched */
};

/* The guest driver's buffers for mode @p m at @p payload bytes a packet. */
struct vfe_guest_conf perf_guest_conf(enum mode m, uint32_t payload);
/* Check @p n bytes that arrived on @p pc against the pattern; whether all matched so far. */
bool perf_stream_check(const struct perf_run *run, struct pconn *pc, const uint8_t *buf,
		       size_t n);
/* Host end -> guest: up to @p len pattern bytes from stream offset @p at. Bytes taken. */
long perf_host_send(struct perf_run *run, struct pconn *pc, uint64_t at, uint64_t len);
/* Guest -> host end: read and check what arrived, at most @p max bytes. Bytes. */
long perf_host_recv(struct perf_run *run, struct pconn *pc, uint64_t max);
/* Open run->pconns[0 .. n - 1] in mode @p m, both ends. 0 or -errno. */
int perf_open_conns(struct perf_run *run, enum mode m, unsigned int n);
/* Close them: the host ends first, then the guest answers and forgets each. */
void perf_close_conns(struct perf_run *run, unsigned int n);
/* Every byte sent on the first @p n has arrived, checked. */
bool perf_all_received(const struct perf_run *run, unsigned int n);
/*
 * The books of @p pc at the end: every byte sent arrived and matched. If not, false, and
 * @p err says so, as "<what> <i>: sent ..., received ..., first bad byte ...".
 */
bool perf_pconn_ok(const struct pconn *pc, const char *what, unsigned int i, char *err,
		   size_t len);
uint64_t perf_total_rcvd(const struct perf_run *run, unsigned int n);

#endif /* APP_VSOCK_PERF_PERF_CONN_H */
