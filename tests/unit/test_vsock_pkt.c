/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock_pkt: wire layout and round trips of the 44-byte header, every
 * validation error kind, and the reply builder.
 */
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "vsock_pkt.h"

#define GUEST_CID 3

static const struct vsock_pkt_policy pol = { .guest_cid = GUEST_CID, .seqpacket = true };

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = (v << 8) | p[n];
	return v;
}

static int hdr_eq(const struct vsock_hdr *a, const struct vsock_hdr *b)
{
	return a->src_cid == b->src_cid && a->dst_cid == b->dst_cid &&
		a->src_port == b->src_port && a->dst_port == b->dst_port && a->len == b->len &&
		a->type == b->type && a->op == b->op && a->flags == b->flags &&
		a->buf_alloc == b->buf_alloc && a->fwd_cnt == b->fwd_cnt;
}

static void test_layout(void)
{
	const struct vsock_hdr h = {
		.src_cid = 0x1122334455667788ull, .dst_cid = 0x99aabbccddeeff00ull,
		.src_port = 0x01020304, .dst_port = 0x05060708, .len = 0x0a0b0c0d,
		.type = 0x1234, .op = 0x5678, .flags = 0x9abcdef0,
		.buf_alloc = 0x0fedcba9, .fwd_cnt = 0x87654321,
	};
	uint8_t raw[VSOCK_HDR_SIZE + 2];
	struct vsock_hdr back;

	memset(raw, 0xee, sizeof(raw));
	vsock_pkt_encode(&h, raw + 1);	/* odd address: encode must not assume alignment */
	tap_ok(raw[0] == 0xee && raw[VSOCK_HDR_SIZE + 1] == 0xee,
			"encode writes exactly 44 bytes");
	tap_ok(get_le(raw + 1, 8) == h.src_cid && get_le(raw + 1 + 8, 8) == h.dst_cid,
			"wire: le64 cids at 0 and 8");
	tap_ok(get_le(raw + 1 + 16, 4) == h.src_port && get_le(raw + 1 + 20, 4) == h.dst_port &&
			get_le(raw + 1 + 24, 4) == h.len, "wire: le32 ports at 16, 20, len at 24");
	tap_ok(get_le(raw + 1 + 28, 2) == h.type && get_le(raw + 1 + 30, 2) == h.op,
			"wire: le16 type at 28, op at 30");
	tap_ok(get_le(raw + 1 + 32, 4) == h.flags && get_le(raw + 1 + 36, 4) == h.buf_alloc &&
			get_le(raw + 1 + 40, 4) == h.fwd_cnt,
			"wire: le32 flags, buf_alloc, fwd_cnt at 32, 36, 40");

	tap_ok(vsock_pkt_parse(raw + 1, VSOCK_HDR_SIZE, &back) == VSOCK_PKT_OK &&
			hdr_eq(&back, &h), "round trip: parse(encode(h)) == h");
	tap_ok(vsock_pkt_parse(raw + 1, VSOCK_HDR_SIZE - 1, &back) == VSOCK_PKT_ERR_SHORT_HDR,
			"parse: 43 bytes is a short header");
}

static struct vsock_hdr good(uint16_t op, uint16_t type, uint32_t len, uint32_t flags)
{
	struct vsock_hdr h = {
		.src_cid = GUEST_CID, .dst_cid = 2, .src_port = 1234, .dst_port = 5678,
		.len = len, .type = type, .op = op, .flags = flags,
		.buf_alloc = 262144, .fwd_cnt = 0,
	};

	return h;
}

#define STREAM VIRTIO_VSOCK_TYPE_STREAM
#define SEQPKT VIRTIO_VSOCK_TYPE_SEQPACKET

static void expect(const struct vsock_hdr *h, uint32_t readable, const struct vsock_pkt_policy *p,
		enum vsock_pkt_err want, const char *what)
{
	enum vsock_pkt_err got = vsock_pkt_validate(h, readable, p);

	tap_ok(got == want, "validate %s: %s (got %s)", what, vsock_pkt_err_str(want),
			vsock_pkt_err_str(got));
}

static void test_valid(void)
{
	struct vsock_hdr h;
	uint16_t op;

	for (op = VIRTIO_VSOCK_OP_REQUEST; op <= VIRTIO_VSOCK_OP_CREDIT_REQUEST; op++) {
		h = good(op, STREAM, 0, 0);
		expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_OK, "control op, no payload");
	}
	h = good(VIRTIO_VSOCK_OP_RW, STREAM, 100, 0);
	expect(&h, VSOCK_HDR_SIZE + 100, &pol, VSOCK_PKT_OK, "stream RW, exact length");
	expect(&h, VSOCK_HDR_SIZE + 4096, &pol, VSOCK_PKT_OK, "stream RW, spare bytes after");
	h = good(VIRTIO_VSOCK_OP_RW, STREAM, VSOCK_PKT_MAX_PAYLOAD, 0);
	expect(&h, VSOCK_HDR_SIZE + VSOCK_PKT_MAX_PAYLOAD, &pol, VSOCK_PKT_OK, "RW of 64 KiB");
	h = good(VIRTIO_VSOCK_OP_RW, SEQPKT, 10, VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR);
	expect(&h, VSOCK_HDR_SIZE + 10, &pol, VSOCK_PKT_OK, "seqpacket RW EOM|EOR");
	h = good(VIRTIO_VSOCK_OP_RW, SEQPKT, 10, 0);
	expect(&h, VSOCK_HDR_SIZE + 10, &pol, VSOCK_PKT_OK, "seqpacket RW mid-message");
	h = good(VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 0,
			VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_OK, "shutdown RCV|SEND");
	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 0, 0);
	h.dst_cid = 4;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_OK, "request to a sibling CID");
}

static void test_errors(void)
{
	const struct vsock_pkt_policy noseq = { .guest_cid = GUEST_CID, .seqpacket = false };
	struct vsock_hdr h;

	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 0, 0);
	expect(&h, VSOCK_HDR_SIZE - 1, &pol, VSOCK_PKT_ERR_SHORT_HDR, "43 readable bytes");
	expect(&h, 0, &pol, VSOCK_PKT_ERR_SHORT_HDR, "0 readable bytes");

	h.op = VIRTIO_VSOCK_OP_INVALID;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_OP, "op 0 (INVALID)");
	h.op = VIRTIO_VSOCK_OP_CREDIT_REQUEST + 1;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_OP, "op 8");
	h.op = 0xffff;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_OP, "op 0xffff");

	h = good(VIRTIO_VSOCK_OP_REQUEST, 0, 0, 0);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_TYPE, "type 0");
	h.type = 3;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_TYPE, "type 3 (dgram)");
	h = good(VIRTIO_VSOCK_OP_REQUEST, SEQPKT, 0, 0);
	expect(&h, VSOCK_HDR_SIZE, &noseq, VSOCK_PKT_ERR_SEQPACKET, "seqpacket not negotiated");

	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 0, 0);
	h.src_cid = 4;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_SRC_CID, "src_cid of another VM");
	h.src_cid = GUEST_CID | (1ull << 32);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_SRC_CID, "src_cid with upper bits");
	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 0, 0);
	h.dst_cid = GUEST_CID;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_DST_CID, "dst_cid is the guest");
	h.dst_cid = 0xffffffffull;
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_DST_CID, "dst_cid ANY");
	h.dst_cid = 2 | (1ull << 32);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_DST_CID, "dst_cid with upper bits");

	h = good(VIRTIO_VSOCK_OP_RW, STREAM, VSOCK_PKT_MAX_PAYLOAD + 1, 0);
	expect(&h, UINT32_MAX, &pol, VSOCK_PKT_ERR_LEN_MAX, "len 64 KiB + 1");
	h.len = UINT32_MAX;
	expect(&h, UINT32_MAX, &pol, VSOCK_PKT_ERR_LEN_MAX, "len 4 GiB - 1");
	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 1, 0);
	expect(&h, VSOCK_HDR_SIZE + 1, &pol, VSOCK_PKT_ERR_LEN_CONTROL, "payload on REQUEST");
	h = good(VIRTIO_VSOCK_OP_CREDIT_UPDATE, STREAM, 8, 0);
	expect(&h, VSOCK_HDR_SIZE + 8, &pol, VSOCK_PKT_ERR_LEN_CONTROL,
			"payload on CREDIT_UPDATE");
	h = good(VIRTIO_VSOCK_OP_RW, STREAM, 100, 0);
	expect(&h, VSOCK_HDR_SIZE + 99, &pol, VSOCK_PKT_ERR_LEN_TRUNCATED,
			"RW one byte short");
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_LEN_TRUNCATED, "RW header only");

	h = good(VIRTIO_VSOCK_OP_REQUEST, STREAM, 0, 1);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_FLAGS, "flags on REQUEST");
	h = good(VIRTIO_VSOCK_OP_SHUTDOWN, STREAM, 0, 4);
	expect(&h, VSOCK_HDR_SIZE, &pol, VSOCK_PKT_ERR_FLAGS, "shutdown flag 4");
	h = good(VIRTIO_VSOCK_OP_RW, STREAM, 1, VIRTIO_VSOCK_SEQ_EOM);
	expect(&h, VSOCK_HDR_SIZE + 1, &pol, VSOCK_PKT_ERR_FLAGS, "EOM on a stream");
	h = good(VIRTIO_VSOCK_OP_RW, SEQPKT, 1, VIRTIO_VSOCK_SEQ_EOR);
	expect(&h, VSOCK_HDR_SIZE + 1, &pol, VSOCK_PKT_ERR_FLAGS, "EOR without EOM");
	h = good(VIRTIO_VSOCK_OP_RW, SEQPKT, 1, VIRTIO_VSOCK_SEQ_EOM | 4);
	expect(&h, VSOCK_HDR_SIZE + 1, &pol, VSOCK_PKT_ERR_FLAGS, "unknown RW flag");
}

static void test_build(void)
{
	const struct vsock_flow f = {
		.src_cid = 2, .dst_cid = GUEST_CID, .src_port = 1073741824, .dst_port = 22,
		.type = STREAM,
	};
	struct vsock_hdr h, back;
	uint8_t raw[VSOCK_HDR_SIZE];

	vsock_pkt_build(&h, &f, VIRTIO_VSOCK_OP_RW, 512, 0, 65536, 4096);
	vsock_pkt_encode(&h, raw);
	tap_ok(vsock_pkt_parse(raw, sizeof(raw), &back) == VSOCK_PKT_OK &&
			back.src_cid == 2 && back.dst_cid == GUEST_CID &&
			back.src_port == 1073741824 && back.dst_port == 22 &&
			back.type == STREAM && back.op == VIRTIO_VSOCK_OP_RW && back.len == 512 &&
			back.flags == 0 && back.buf_alloc == 65536 && back.fwd_cnt == 4096,
			"build: every field of an RW header survives encode/parse");
}

static void test_names(void)
{
	unsigned int i, j;
	int distinct = 1;

	for (i = 0; i < VSOCK_PKT_ERR_MAX; i++)
		for (j = 0; j < i; j++)
			if (strcmp(vsock_pkt_err_str(i), vsock_pkt_err_str(j)) == 0 ||
					strcmp(vsock_pkt_err_str(i), "unknown") == 0)
				distinct = 0;
	tap_ok(distinct, "every error kind has its own name");
	tap_ok(strcmp(vsock_pkt_err_str(VSOCK_PKT_ERR_MAX), "unknown") == 0,
			"out-of-range kind is 'unknown'");
}

int main(void)
{
	test_layout();
	test_valid();
	test_errors();
	test_build();
	test_names();
	return tap_done();
}
