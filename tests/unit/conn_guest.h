/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TEST_CONN_GUEST_H
#define TEST_CONN_GUEST_H

/*
 * A guest for the connection table's unit tests: hand-built headers into conn_from_guest()
 * (or a burst of them into conn_from_guest_run()), rx buffers out of conn_to_guest(), no
 * virtqueue. The last packet received is in g.
 */

#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "conn.h"
#include "vsock_pkt.h"

#define GUEST_CID 3
#define HOST_CID VSOCK_HOST_CID
#define GUEST_BUF (64 * 1024)	/* the guest's buf_alloc in our headers */
#define STREAM VIRTIO_VSOCK_TYPE_STREAM
#define SEQPACKET VIRTIO_VSOCK_TYPE_SEQPACKET

/* What a guest received: one rx buffer. */
struct gpkt {
	struct vsock_hdr h;
	uint32_t n;		/* bytes written into the buffer */
	uint8_t data[VSOCK_PKT_MAX_PAYLOAD];
};

static struct gpkt g __attribute__((unused));

/*
 * One guest tx packet as the dataplane hands it over: its header in @p raw, its payload in
 * two pieces of @p iov to exercise the split. Returns the pieces.
 */
static inline unsigned int guest_pkt(struct virtio_vsock_hdr *raw, struct iovec *iov,
				     uint16_t op, uint16_t type, uint32_t gport, uint32_t hport,
				     uint32_t flags, const void *data, uint32_t len,
				     uint32_t buf_alloc, uint32_t fwd_cnt, uint64_t src_cid,
				     uint64_t dst_cid)
{
	const struct vsock_flow f = {
		.src_cid = src_cid, .dst_cid = dst_cid, .src_port = gport, .dst_port = hport,
		.type = type,
	};
	struct vsock_hdr h;
	uint32_t half = len / 3;

	vsock_pkt_build(&h, &f, op, len, flags, buf_alloc, fwd_cnt);
	vsock_pkt_encode(&h, raw);
	iov[0].iov_base = (void *)(uintptr_t)data;
	iov[0].iov_len = half;
	iov[1].iov_base = (uint8_t *)(uintptr_t)data + half;
	iov[1].iov_len = len - half;
	return len ? 2 : 0;
}

static inline int guest_send_full(struct conn_table *t, uint16_t op, uint16_t type,
				  uint32_t gport, uint32_t hport, uint32_t flags,
				  const void *data, uint32_t len, uint32_t buf_alloc,
				  uint32_t fwd_cnt, uint64_t src_cid, uint64_t dst_cid)
{
	struct virtio_vsock_hdr raw;
	struct iovec iov[2];
	unsigned int cnt = guest_pkt(&raw, iov, op, type, gport, hport, flags, data, len,
				     buf_alloc, fwd_cnt, src_cid, dst_cid);

	return conn_from_guest(t, &raw, iov, cnt);
}

static inline int guest_send(struct conn_table *t, uint16_t op, uint16_t type, uint32_t gport,
			     uint32_t hport, uint32_t flags, const void *data, uint32_t len,
			     uint32_t fwd_cnt)
{
	return guest_send_full(t, op, type, gport, hport, flags, data, len, GUEST_BUF, fwd_cnt,
			       GUEST_CID, HOST_CID);
}

/* Fill one guest rx buffer of @cap bytes (header split over two pieces). 1 if one came. */
static inline int guest_recv(struct conn_table *t, size_t cap)
{
	static uint8_t buf[VSOCK_HDR_SIZE + VSOCK_PKT_MAX_PAYLOAD];
	struct iovec iov[2] = {
		{ .iov_base = buf, .iov_len = 20 },
		{ .iov_base = buf + 20, .iov_len = cap - 20 },
	};

	memset(buf, 0xa5, cap);
	g.n = conn_to_guest(t, iov, 2);
	if (g.n == 0)
		return 0;
	vsock_pkt_parse(buf, VSOCK_HDR_SIZE, &g.h);
	memcpy(g.data, buf + VSOCK_HDR_SIZE, g.n - VSOCK_HDR_SIZE);
	return 1;
}

static inline int is_pkt(uint16_t op, uint32_t gport, uint32_t hport, uint16_t type,
			 uint32_t len, uint32_t flags)
{
	return g.h.op == op && g.h.src_cid == HOST_CID && g.h.dst_cid == GUEST_CID &&
	       g.h.src_port == hport && g.h.dst_port == gport && g.h.type == type &&
	       g.h.len == len && g.h.flags == flags && g.n == VSOCK_HDR_SIZE + len;
}

/* Drain everything owed to the guest; returns the number of packets. */
static inline int guest_drain(struct conn_table *t)
{
	int n = 0;

	while (guest_recv(t, sizeof(g.data)))
		n++;
	return n;
}

#endif /* TEST_CONN_GUEST_H */
