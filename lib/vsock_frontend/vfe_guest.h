/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfe_guest: the guest's virtio-vsock driver, on top of a vfe_vsock device.
 *
 * It does what the Linux driver (net/vmw_vsock/virtio_transport*.c) does on
 * the wire, without sockets: it keeps the rx ring full of buffers, sends
 * packets on the tx ring with the descriptor layout a test asks for, and
 * runs each connection's state and credit (buf_alloc, fwd_cnt, CREDIT_UPDATE
 * once the peer may believe too little room is left).
 *
 * Every packet the device writes is checked against the protocol: addresses,
 * used length, type, op, flags, and that it never exceeds the credit we
 * granted. Any breach is counted in vfe_guest.errors with the first one
 * described in vfe_guest.err, so a test only has to assert errors == 0.
 *
 * Single-threaded and non-blocking: nothing happens between calls to
 * vfe_guest_poll(), which the test calls from its own loop.
 */
#ifndef VSOCK_FRONTEND_VFE_GUEST_H
#define VSOCK_FRONTEND_VFE_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VFE_GUEST_HOST_CID 2
#define VFE_GUEST_HDR_LEN 44u
/** Largest payload of one packet (VIRTIO_VSOCK_MAX_PKT_BUF_SIZE). */
#define VFE_GUEST_MAX_PKT 65536u
/** Descriptors one buffer may be split into (header piece included). */
#define VFE_GUEST_MAX_PIECES 8
/** Descriptors of one chain: its pieces, and with empty_descs an empty one around each. */
#define VFE_GUEST_MAX_DESCS (2 * VFE_GUEST_MAX_PIECES + 1)
/** Connections one guest can hold. */
#define VFE_GUEST_MAX_CONNS 1024
/** SEQPACKET message ends remembered per connection. */
#define VFE_GUEST_MAX_MSGS 4096

/**
 * Where one buffer piece of @p len bytes goes in guest memory: return its
 * address in this process and its guest-physical address, or NULL when
 * memory is exhausted. @p what is 'r' (rx) or 't' (tx), @p slot the head,
 * @p piece its index in the buffer. NULL hook: vfe_mem_alloc().
 */
typedef void *(*vfe_guest_alloc_fn)(void *ctx, struct vfe_mem *m, size_t len, char what,
		unsigned int slot, unsigned int piece, uint64_t *gpa);

/** Called for every packet the device wrote into an rx buffer, before it is handled. */
typedef void (*vfe_guest_rx_hook)(void *ctx, const struct vfe_vsock_pkt *pkt,
		uint32_t used_len);

/** Called for every packet put on the tx ring. */
typedef void (*vfe_guest_tx_hook)(void *ctx, const struct vfe_vsock_pkt *pkt);

struct vfe_guest_conf {
	/** Bytes per rx buffer, header included; 0 means 4096 + 44 (Linux). */
	uint32_t rx_buf_len;
	/** Descriptors per rx buffer: 1 (Linux), or up to VFE_GUEST_MAX_PIECES. */
	uint8_t rx_pieces;
	/** The first rx piece is exactly the 44-byte header (rx_pieces >= 2). */
	bool rx_hdr_piece;
	/** Post rx buffers as indirect tables (needs vfe_vsock_conf.indirect_max). */
	bool rx_indirect;
	/** rx buffers posted; 0 means the whole ring. */
	uint16_t rx_bufs;
	/**
	 * Payload descriptors per tx packet: 0 puts header and payload in one
	 * descriptor; n >= 1 gives the header its own and splits the payload
	 * over n (Linux: 1).
	 */
	uint8_t tx_pieces;
	/** Send tx packets as indirect tables. */
	bool tx_indirect;
	/**
	 * Put an empty (zero-length) descriptor before, between and after the
	 * pieces of every chain posted, tx and rx (virtio allows them; they
	 * count against ring and indirect table sizes).
	 */
	bool empty_descs;
	/** Largest payload per tx packet; 0 means 64 KiB. */
	uint32_t tx_max_payload;
	/** buf_alloc advertised by new connections; 0 means 256 KiB (Linux). */
	uint32_t buf_alloc;
	/**
	 * Send CREDIT_UPDATE when the peer may believe less than this is free
	 * (Linux: 64 KiB); 0 means min(64 KiB, buf_alloc / 2).
	 */
	uint32_t credit_threshold;
	/**
	 * Read the call eventfds in every vfe_guest_poll() and count the
	 * interrupts (rx_calls, tx_calls); off, the eventfds are left alone
	 * (two syscalls less per poll).
	 */
	bool count_calls;
	vfe_guest_alloc_fn alloc;
	void *alloc_ctx;
	vfe_guest_rx_hook rx_hook;
	vfe_guest_tx_hook tx_hook;
	void *hook_ctx;
};

enum vfe_guest_state {
	VFE_GC_FREE,
	VFE_GC_CONNECTING,	/* REQUEST sent */
	VFE_GC_ESTABLISHED,
	VFE_GC_CLOSED,		/* RST seen or sent: nothing more on the wire */
};

struct vfe_guest_conn {
	enum vfe_guest_state state;
	uint16_t type;
	uint32_t local_port;
	uint32_t peer_port;
	/** The peer refused (RST while connecting) or reset us later. */
	bool reset;
	/** SHUTDOWN flags received from the peer, and sent by us. */
	uint32_t peer_shut;
	uint32_t our_shut;
	/* Our receive side. */
	uint32_t buf_alloc;
	uint32_t rx_cnt;	/* payload bytes received */
	uint32_t fwd_cnt;	/* of those, consumed by the test */
	uint32_t fwd_sent;	/* fwd_cnt in our last header */
	uint8_t *rxq;		/* buf_alloc bytes, a ring indexed by rx_cnt / fwd_cnt */
	uint32_t msg_end[VFE_GUEST_MAX_MSGS];	/* SEQPACKET: rx_cnt at each EOM */
	uint8_t msg_flags[VFE_GUEST_MAX_MSGS];
	uint32_t msg_head, msg_count;
	/** Auto CREDIT_UPDATE when consuming (vfe_guest_conf.credit_threshold). */
	bool auto_credit;
	/* Our send side. */
	uint32_t tx_cnt;	/* payload bytes sent */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
	/* What the peer told us, for tests to check. */
	uint64_t rx_pkts;
	uint64_t credit_updates_rx;
	uint64_t credit_updates_tx;
};

struct vfe_guest_slot {
	/* Pieces of the buffer posted at this head. */
	uint8_t npieces;
	void *ptr[VFE_GUEST_MAX_PIECES];
	uint64_t gpa[VFE_GUEST_MAX_PIECES];
	uint32_t len[VFE_GUEST_MAX_PIECES];
};

struct vfe_guest_priv;

struct vfe_guest {
	struct vfe_vsock *v;
	/** Free lists, pending control packets, the connection hash. */
	struct vfe_guest_priv *priv;
	struct vfe_guest_conf conf;
	uint64_t cid;
	/* One buffer per head, reused: the ring's free list decides which is free. */
	struct vfe_guest_slot *rx_slot;
	struct vfe_guest_slot *tx_slot;
	/* Room for one packet per tx slot and a bounce area for gathers. */
	uint32_t tx_room;
	struct vfe_guest_conn *conns;	/* VFE_GUEST_MAX_CONNS */
	bool listening[65536];
	/** Connections accepted from host REQUESTs, not yet taken by vfe_guest_accept(). */
	uint16_t accept_q[VFE_GUEST_MAX_CONNS];
	uint32_t accept_head, accept_count;
	uint32_t next_port;
	/* Counters. */
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_calls, tx_calls;	/* interrupts seen by vfe_guest_poll(), if count_calls */
	uint64_t kicks;
	uint64_t rst_rx;		/* RSTs received */
	uint64_t unknown_rx;		/* packets for no connection (answered with RST) */
	/** Protocol breaches by the device; err describes the first. */
	uint64_t errors;
	char err[256];
};

/**
 * Set up the driver over an attached @p v: lay out and post the rx buffers.
 * @p conf may be NULL for Linux's defaults.
 */
int vfe_guest_init(struct vfe_guest *g, struct vfe_vsock *v, const struct vfe_guest_conf *conf);
void vfe_guest_fini(struct vfe_guest *g);

/**
 * Do everything pending: take the device's rx packets and tx completions,
 * repost rx buffers, count the interrupts (vfe_guest_conf.count_calls).
 * @return the number of used entries consumed (0 when idle).
 */
unsigned int vfe_guest_poll(struct vfe_guest *g);

/** Accept REQUESTs to @p port (answer RESPONSE) or stop (answer RST). */
void vfe_guest_listen(struct vfe_guest *g, uint32_t port, bool on);

/** Next connection accepted on a listening port, or NULL. */
struct vfe_guest_conn *vfe_guest_accept(struct vfe_guest *g);

/**
 * Send a REQUEST from a fresh local port to host port @p port.
 * @return the connection (state CONNECTING), or NULL (table or ring full).
 */
struct vfe_guest_conn *vfe_guest_connect(struct vfe_guest *g, uint32_t port, uint16_t type);

/** Free tx descriptors, so a caller can tell a full ring from missing credit. */
unsigned int vfe_guest_tx_free(const struct vfe_guest *g);

/** Bytes the peer lets us send now: peer_buf_alloc - (tx_cnt - peer_fwd_cnt). */
uint32_t vfe_guest_credit(const struct vfe_guest_conn *c);

/**
 * Send up to @p len stream bytes within the peer's credit, in packets of at
 * most tx_max_payload. @return bytes queued on the tx ring (0: no credit or
 * no descriptors), or -ENOTCONN.
 */
long vfe_guest_send(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf, size_t len);

/**
 * Send one SEQPACKET message whole (EOM|EOR on its last packet): nothing is
 * sent unless the credit and the ring take it all. @return 1 sent, 0 not now,
 * or a negative errno value.
 */
int vfe_guest_send_msg(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf,
		size_t len);

/**
 * Send one RW packet of @p len bytes with @p flags, ignoring the peer's
 * credit (hostile tests). @return 0, -ENOSPC (ring), -EINVAL.
 */
int vfe_guest_send_raw(struct vfe_guest *g, struct vfe_guest_conn *c, const void *buf,
		uint32_t len, uint32_t flags);

/**
 * Put a tx chain of @p n (1..VFE_GUEST_MAX_DESCS) empty descriptors on the
 * ring: no bytes at all, so no header (a device drops it). @return 0,
 * -ENOSPC (ring), -EINVAL.
 */
int vfe_guest_send_empty(struct vfe_guest *g, unsigned int n);

/** Send a control packet (no payload) on @p c: op and flags as given. */
int vfe_guest_send_ctl(struct vfe_guest *g, struct vfe_guest_conn *c, uint16_t op,
		uint32_t flags);

/** Bytes received and not consumed yet. */
uint32_t vfe_guest_rx_avail(const struct vfe_guest_conn *c);

/**
 * Consume up to @p len received bytes into @p buf (NULL: drop them), which
 * returns credit to the peer (CREDIT_UPDATE as Linux decides, if auto_credit).
 * On SEQPACKET stops at a message end. @return bytes consumed.
 */
size_t vfe_guest_recv(struct vfe_guest *g, struct vfe_guest_conn *c, void *buf, size_t len);

/**
 * SEQPACKET: length of the next complete message and its flags (EOM/EOR of
 * its last packet), or -EAGAIN when none is complete.
 */
long vfe_guest_next_msg(const struct vfe_guest_conn *c, uint32_t *flags);

/** SHUTDOWN with @p flags (VIRTIO_VSOCK_SHUTDOWN_RCV/SEND). */
int vfe_guest_shutdown(struct vfe_guest *g, struct vfe_guest_conn *c, uint32_t flags);

/** Forget a closed connection (its slot and port become free). */
void vfe_guest_release(struct vfe_guest *g, struct vfe_guest_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_FRONTEND_VFE_GUEST_H */
