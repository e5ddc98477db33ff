/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VSOCK_PKT_H
#define VSOCK_PKT_H

/**
 * The 44-byte virtio-vsock header: parse (little endian on the wire to a
 * host-endian struct), validate what a guest sent, build what we send.
 * Pure functions over memory the caller owns; no guest memory is touched
 * here (copy the header out of the chain first, once).
 */

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <linux/virtio_vsock.h>
#include <linux/vm_sockets.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VSOCK_HDR_SIZE		((uint32_t)sizeof(struct virtio_vsock_hdr))
/** The host's CID: the guests' peer on hybrid vsock and native connections. */
#define VSOCK_HOST_CID		((uint64_t)VMADDR_CID_HOST)
/** Largest payload one packet may carry (VIRTIO_VSOCK_MAX_PKT_BUF_SIZE). */
#define VSOCK_PKT_MAX_PAYLOAD	(64u * 1024)

_Static_assert(sizeof(struct virtio_vsock_hdr) == 44, "virtio_vsock_hdr is 44 bytes");

/** Host-endian copy of struct virtio_vsock_hdr. */
struct vsock_hdr {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t len;
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc;
	uint32_t fwd_cnt;
};

/** Both ends and the socket type of a packet, from its sender's side. */
struct vsock_flow {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint16_t type;
};

/** Why a guest's header was refused; one counter per kind. */
enum vsock_pkt_err {
	VSOCK_PKT_OK = 0,
	VSOCK_PKT_ERR_SHORT_HDR,	/**< fewer than 44 readable bytes */
	VSOCK_PKT_ERR_OP,		/**< op not REQUEST..CREDIT_REQUEST (1..7) */
	VSOCK_PKT_ERR_TYPE,		/**< type neither STREAM nor SEQPACKET */
	VSOCK_PKT_ERR_SEQPACKET,	/**< SEQPACKET without the negotiated feature */
	VSOCK_PKT_ERR_SRC_CID,		/**< src_cid is not the guest's CID */
	VSOCK_PKT_ERR_DST_CID,		/**< dst_cid is the guest itself, ANY, or > 32 bits */
	VSOCK_PKT_ERR_LEN_MAX,		/**< len above 64 KiB */
	VSOCK_PKT_ERR_LEN_CONTROL,	/**< payload on an op other than RW */
	VSOCK_PKT_ERR_LEN_TRUNCATED,	/**< fewer readable bytes after the header than len */
	VSOCK_PKT_ERR_FLAGS,		/**< flags not meaningful for op and type */
	VSOCK_PKT_ERR_MAX
};

/** What the device accepts from its guest. */
struct vsock_pkt_policy {
	uint64_t guest_cid;
	bool seqpacket;		/**< VIRTIO_VSOCK_F_SEQPACKET negotiated */
};

/** Short, stable name of an error kind ("short_hdr", "op", ...). */
const char *vsock_pkt_err_str(enum vsock_pkt_err err);

/**
 * Decode @p raw_len bytes at @p raw (any alignment) into @p h.
 * VSOCK_PKT_ERR_SHORT_HDR if raw_len < 44, else VSOCK_PKT_OK.
 */
static inline enum vsock_pkt_err vsock_pkt_parse(const void *raw, uint32_t raw_len,
		struct vsock_hdr *h)
{
	struct virtio_vsock_hdr w;

	if (raw_len < VSOCK_HDR_SIZE)
		return VSOCK_PKT_ERR_SHORT_HDR;
	memcpy(&w, raw, sizeof(w));
	h->src_cid = le64toh(w.src_cid);
	h->dst_cid = le64toh(w.dst_cid);
	h->src_port = le32toh(w.src_port);
	h->dst_port = le32toh(w.dst_port);
	h->len = le32toh(w.len);
	h->type = le16toh(w.type);
	h->op = le16toh(w.op);
	h->flags = le32toh(w.flags);
	h->buf_alloc = le32toh(w.buf_alloc);
	h->fwd_cnt = le32toh(w.fwd_cnt);
	return VSOCK_PKT_OK;
}

/** Encode @p h into the 44 wire bytes at @p raw (any alignment). */
static inline void vsock_pkt_encode(const struct vsock_hdr *h, void *raw)
{
	struct virtio_vsock_hdr w;

	w.src_cid = htole64(h->src_cid);
	w.dst_cid = htole64(h->dst_cid);
	w.src_port = htole32(h->src_port);
	w.dst_port = htole32(h->dst_port);
	w.len = htole32(h->len);
	w.type = htole16(h->type);
	w.op = htole16(h->op);
	w.flags = htole32(h->flags);
	w.buf_alloc = htole32(h->buf_alloc);
	w.fwd_cnt = htole32(h->fwd_cnt);
	memcpy(raw, &w, sizeof(w));
}

/**
 * Check a parsed guest header against @p pol. @p readable is the chain's
 * whole device-readable length, header included. Readable bytes beyond
 * 44 + len are tolerated (Linux vhost reads exactly len and ignores them).
 */
enum vsock_pkt_err vsock_pkt_validate(const struct vsock_hdr *h, uint32_t readable,
		const struct vsock_pkt_policy *pol);

/** Fill @p h for a packet on flow @p f; the caller encodes it. */
static inline void vsock_pkt_build(struct vsock_hdr *h, const struct vsock_flow *f,
		uint16_t op, uint32_t len, uint32_t flags, uint32_t buf_alloc, uint32_t fwd_cnt)
{
	h->src_cid = f->src_cid;
	h->dst_cid = f->dst_cid;
	h->src_port = f->src_port;
	h->dst_port = f->dst_port;
	h->type = f->type;
	h->op = op;
	h->len = len;
	h->flags = flags;
	h->buf_alloc = buf_alloc;
	h->fwd_cnt = fwd_cnt;
}

#ifdef __cplusplus
}
#endif

#endif /* VSOCK_PKT_H */
