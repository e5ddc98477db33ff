/* SPDX-License-Identifier: BSD-3-Clause */
#include <linux/vm_sockets.h>

#include "vsock_pkt.h"

static const char *const vsock_pkt_err_names[VSOCK_PKT_ERR_MAX] = {
	[VSOCK_PKT_OK] = "ok",
	[VSOCK_PKT_ERR_SHORT_HDR] = "short_hdr",
	[VSOCK_PKT_ERR_OP] = "op",
	[VSOCK_PKT_ERR_TYPE] = "type",
	[VSOCK_PKT_ERR_SEQPACKET] = "seqpacket",
	[VSOCK_PKT_ERR_SRC_CID] = "src_cid",
	[VSOCK_PKT_ERR_DST_CID] = "dst_cid",
	[VSOCK_PKT_ERR_LEN_MAX] = "len_max",
	[VSOCK_PKT_ERR_LEN_CONTROL] = "len_control",
	[VSOCK_PKT_ERR_LEN_TRUNCATED] = "len_truncated",
	[VSOCK_PKT_ERR_FLAGS] = "flags",
};

const char *vsock_pkt_err_str(enum vsock_pkt_err err)
{
	if ((unsigned int)err >= VSOCK_PKT_ERR_MAX)
		return "unknown";
	return vsock_pkt_err_names[err];
}

/*
 * Flags a sender may set for this op and type. Linux sets SEQ_EOR only on
 * the packet that also carries SEQ_EOM (a record ends a message), and sets
 * no flags on other ops.
 */
static bool vsock_pkt_flags_ok(const struct vsock_hdr *h)
{
	switch (h->op) {
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		return (h->flags & ~(uint32_t)(VIRTIO_VSOCK_SHUTDOWN_RCV |
				VIRTIO_VSOCK_SHUTDOWN_SEND)) == 0;
	case VIRTIO_VSOCK_OP_RW:
		if (h->type == VIRTIO_VSOCK_TYPE_STREAM)
			return h->flags == 0;
		if (h->flags & ~(uint32_t)(VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR))
			return false;
		return !(h->flags & VIRTIO_VSOCK_SEQ_EOR) || (h->flags & VIRTIO_VSOCK_SEQ_EOM);
	default:
		return h->flags == 0;
	}
}

enum vsock_pkt_err vsock_pkt_validate(const struct vsock_hdr *h, uint32_t readable,
		const struct vsock_pkt_policy *pol)
{
	if (readable < VSOCK_HDR_SIZE)
		return VSOCK_PKT_ERR_SHORT_HDR;
	if (h->op < VIRTIO_VSOCK_OP_REQUEST || h->op > VIRTIO_VSOCK_OP_CREDIT_REQUEST)
		return VSOCK_PKT_ERR_OP;
	if (h->type != VIRTIO_VSOCK_TYPE_STREAM && h->type != VIRTIO_VSOCK_TYPE_SEQPACKET)
		return VSOCK_PKT_ERR_TYPE;
	if (h->type == VIRTIO_VSOCK_TYPE_SEQPACKET && !pol->seqpacket)
		return VSOCK_PKT_ERR_SEQPACKET;
	if (h->src_cid != pol->guest_cid)
		return VSOCK_PKT_ERR_SRC_CID;
	/* CIDs are 32-bit in sockaddr_vm; the wire's upper half must be zero. */
	if (h->dst_cid >= (uint64_t)VMADDR_CID_ANY || h->dst_cid == pol->guest_cid)
		return VSOCK_PKT_ERR_DST_CID;
	if (h->len > VSOCK_PKT_MAX_PAYLOAD)
		return VSOCK_PKT_ERR_LEN_MAX;
	if (h->len != 0 && h->op != VIRTIO_VSOCK_OP_RW)
		return VSOCK_PKT_ERR_LEN_CONTROL;
	if (h->len > readable - VSOCK_HDR_SIZE)
		return VSOCK_PKT_ERR_LEN_TRUNCATED;
	if (!vsock_pkt_flags_ok(h))
		return VSOCK_PKT_ERR_FLAGS;
	return VSOCK_PKT_OK;
}
