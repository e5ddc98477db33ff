/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datapath environment of the tests and vsock-perf: one app with one VM
 * (CID 3), the frontend attached with a vfe_guest driver on it, the host
 * side's Unix sockets, and checked pattern streams over both. Everything runs
 * in the caller's one thread: waiting means polling the guest driver and the
 * host sockets until a condition holds or a deadline passes. What reports to
 * TAP is the tests' (tests/integration/test_datapath_util.h).
 */
#ifndef VSOCK_HARNESS_DP_ENV_H
#define VSOCK_HARNESS_DP_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include "app_proc.h"
#include "pattern.h"
#include "vfe.h"
#include "vfe_guest.h"

#define DP_CID 3
/** The app's buf_alloc per connection (CONN_BUF_ALLOC_DEFAULT). */
#define DP_APP_BUF_ALLOC (256u * 1024)
/** First host port the app hands out for CONNECTs. */
#define DP_HOST_PORT_FIRST (1u << 30)
#define DP_STAGE 65536

struct dp_env {
	struct app_proc app;
	char sock[128];
	char uds[128];
	struct vfe_vsock v;
	struct vfe_guest g;
	bool attached;
};

/** A checked pattern stream: what one end sends or expects. */
struct dp_stream {
	struct pattern pat;
	uint64_t fnv;
	uint64_t total;		/* bytes to send or expect */
	uint64_t done;		/* bytes sent (accepted by the transport) or checked */
	uint64_t bad_at;	/* first mismatching offset, or UINT64_MAX */
	/* Sender: bytes generated but not accepted yet. */
	uint8_t stage[DP_STAGE];
	size_t stage_off, stage_len;
};

uint64_t dp_now_ns(void);

/**
 * Raise this process's open file limit to @p want (the app, its child, inherits it), or as
 * far as the hard limit allows: 0, or -errno (-EMFILE: the hard limit is lower).
 */
int dp_raise_fd_limit(unsigned int want);

/** Start the app with one VM: 0 or -1. */
int dp_app_start(struct dp_env *e);
/** Detach, SIGTERM the app: its wait status. The log is printed if @p dump_log or bad exit. */
int dp_app_stop(struct dp_env *e, bool dump_log);
/** Attach the frontend and its guest driver (either conf may be NULL): 0 or -errno. */
int dp_attach_quiet(struct dp_env *e, const struct vfe_vsock_conf *vc,
		const struct vfe_guest_conf *gc);

void dp_detach(struct dp_env *e);

/**
 * One round of the test's loop: poll the guest driver; pause briefly when it
 * had nothing to do. Returns false once @p deadline (dp_now_ns()) passed.
 */
bool dp_tick(struct dp_env *e, uint64_t deadline);

/** Evaluate @p cond, ticking between tries, for up to @p ms: its last value. */
#define DP_WAIT(e, cond, ms) ({ \
	uint64_t dp_deadline_ = dp_now_ns() + (uint64_t)(ms) * 1000000u; \
	bool dp_ok_; \
	while (!(dp_ok_ = (cond)) && dp_tick((e), dp_deadline_)) \
		; \
	dp_ok_; })

/** Listener at "<uds>_<port>" of @p type (SOCK_STREAM/SOCK_SEQPACKET), non-blocking. */
int dp_listen(const struct dp_env *e, uint32_t port, int type);
/** Accept on @p lfd within @p ms while the guest is polled: a non-blocking fd or -errno. */
int dp_accept(struct dp_env *e, int lfd, unsigned int ms);
/** Connect to the VM's uds path and write "CONNECT <port>\n": a non-blocking fd or -errno. */
int dp_host_connect(const struct dp_env *e, uint32_t port);
/**
 * Read the "OK <port>\n" reply within @p ms: 0 with *host_port, -ENODATA
 * on EOF (the guest refused), -EPROTO on anything else.
 */
int dp_read_ok(struct dp_env *e, int fd, uint32_t *host_port, unsigned int ms);
/** Guest connect to host port @p port; waits for RESPONSE or RST. NULL on failure. */
struct vfe_guest_conn *dp_guest_connect(struct dp_env *e, uint32_t port, uint16_t type,
		unsigned int ms);
/**
 * Host connects with CONNECT, the guest (listening on @p port) accepts:
 * returns the host fd with the OK line read and *gc the guest side, or -errno.
 */
int dp_host_to_guest(struct dp_env *e, uint32_t port, struct vfe_guest_conn **gc,
		uint32_t *host_port, unsigned int ms);

void dp_stream_init(struct dp_stream *s, uint64_t seed, uint64_t total);
/** Check @p len received bytes against the stream; false at the first mismatch. */
bool dp_stream_check(struct dp_stream *s, const void *buf, size_t len);
/** Whether all was sent/checked without a mismatch. */
bool dp_stream_ok(const struct dp_stream *s);

/** Host fd -> stream: write what the socket takes. Bytes written, or -errno. */
long dp_host_send(int fd, struct dp_stream *s);
/**
 * Stream <- host fd: read and check what is there. Bytes read, 0 on EOF,
 * -EAGAIN when nothing is there, or -errno.
 */
long dp_host_recv(int fd, struct dp_stream *s);
/** Guest connection <- stream: send within credit. Bytes sent. */
long dp_guest_send(struct dp_env *e, struct vfe_guest_conn *c, struct dp_stream *s);
/** Stream <- guest connection: consume and check what was received. Bytes. */
size_t dp_guest_recv(struct dp_env *e, struct vfe_guest_conn *c, struct dp_stream *s);

/** Packets seen by the guest driver, in order, when its hooks are dp_log_rx/dp_log_tx. */
#define DP_LOG_MAX 65536
struct dp_log_entry {
	struct vfe_vsock_pkt p;
	uint32_t used_len;	/* rx: the used entry's len */
	bool tx;		/* sent by the guest */
};
struct dp_log {
	unsigned int n;
	bool overflow;
	struct dp_log_entry e[DP_LOG_MAX];
};
extern struct dp_log dp_log;
void dp_log_rx(void *ctx, const struct vfe_vsock_pkt *pkt, uint32_t used_len);
void dp_log_tx(void *ctx, const struct vfe_vsock_pkt *pkt);
void dp_log_clear(void);

#endif /* VSOCK_HARNESS_DP_ENV_H */
