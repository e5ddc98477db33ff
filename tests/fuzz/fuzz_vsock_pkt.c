/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the virtio-vsock header codec: parse, validate,
 * encode, build and reply on arbitrary bytes under arbitrary policies.
 *
 * Input layout (little endian):
 *   u8 cfg        bit0 SEQPACKET negotiated, bit1 readable length given
 *                 explicitly (else: the packet bytes present), bit2 64-bit
 *                 guest CID (else one byte)
 *   guest CID     u64 or u8, as cfg says
 *   u32 readable  only with cfg bit1
 *   u8 op, u32 flags, u32 buf_alloc, u32 fwd_cnt   for the reply
 *   the rest      the packet as the guest wrote it (any length)
 *
 * Invariants: a parse of 44 or more bytes decodes each field as an
 * independent byte-wise little-endian read does, and encodes back to the
 * same 44 bytes; a shorter one fails and leaves the output alone; validate
 * accepts exactly the headers that break none of the documented rules and
 * otherwise names one rule that is broken; replies swap addresses, carry no
 * payload, and survive an encode/parse round trip.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "vsock_pkt.h"

static uint64_t in_le(struct input *in, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes && in->n != 0; i++, in->n--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

static uint64_t le_at(const uint8_t *p, unsigned int off, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[off + i] << (8 * i);
	return v;
}

static bool hdr_eq(const struct vsock_hdr *a, const struct vsock_hdr *b)
{
	return a->src_cid == b->src_cid && a->dst_cid == b->dst_cid &&
		a->src_port == b->src_port && a->dst_port == b->dst_port &&
		a->len == b->len && a->type == b->type && a->op == b->op &&
		a->flags == b->flags && a->buf_alloc == b->buf_alloc &&
		a->fwd_cnt == b->fwd_cnt;
}

/* Bit e set: rule e is broken. Written from the rules, not from the code. */
static uint32_t broken_rules(const struct vsock_hdr *h, uint32_t readable,
		const struct vsock_pkt_policy *pol)
{
	uint32_t bad = 0;
	bool seq = h->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	uint32_t any_flag = VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR;

	if (readable < 44)
		bad |= 1u << VSOCK_PKT_ERR_SHORT_HDR;
	else if (44ull + h->len > readable)
		bad |= 1u << VSOCK_PKT_ERR_LEN_TRUNCATED;
	if (h->op == 0 || h->op > 7)
		bad |= 1u << VSOCK_PKT_ERR_OP;
	if (h->type != VIRTIO_VSOCK_TYPE_STREAM && !seq)
		bad |= 1u << VSOCK_PKT_ERR_TYPE;
	if (seq && !pol->seqpacket)
		bad |= 1u << VSOCK_PKT_ERR_SEQPACKET;
	if (h->src_cid != pol->guest_cid)
		bad |= 1u << VSOCK_PKT_ERR_SRC_CID;
	if (h->dst_cid > 0xfffffffeull || h->dst_cid == pol->guest_cid)
		bad |= 1u << VSOCK_PKT_ERR_DST_CID;
	if (h->len > 65536)
		bad |= 1u << VSOCK_PKT_ERR_LEN_MAX;
	if (h->len != 0 && h->op != VIRTIO_VSOCK_OP_RW)
		bad |= 1u << VSOCK_PKT_ERR_LEN_CONTROL;
	if (h->op == VIRTIO_VSOCK_OP_SHUTDOWN) {
		if (h->flags > 3)
			bad |= 1u << VSOCK_PKT_ERR_FLAGS;
	} else if (h->op == VIRTIO_VSOCK_OP_RW && seq) {
		/* An end of record only on the packet that ends the message. */
		if ((h->flags & ~any_flag) != 0 || h->flags == VIRTIO_VSOCK_SEQ_EOR)
			bad |= 1u << VSOCK_PKT_ERR_FLAGS;
	} else if (h->flags != 0) {
		bad |= 1u << VSOCK_PKT_ERR_FLAGS;
	}
	return bad;
}

static void check_parse(const uint8_t *raw, uint32_t raw_len, struct vsock_hdr *h)
{
	struct vsock_hdr sentinel, again;
	uint8_t out[44];
	enum vsock_pkt_err e;

	memset(&sentinel, 0xa5, sizeof(sentinel));
	*h = sentinel;
	e = vsock_pkt_parse(raw, raw_len, h);
	if (raw_len < 44) {
		CHECK(e == VSOCK_PKT_ERR_SHORT_HDR);
		CHECK(memcmp(h, &sentinel, sizeof(*h)) == 0);
		return;
	}
	CHECK(e == VSOCK_PKT_OK);
	CHECK(h->src_cid == le_at(raw, 0, 8));
	CHECK(h->dst_cid == le_at(raw, 8, 8));
	CHECK(h->src_port == le_at(raw, 16, 4));
	CHECK(h->dst_port == le_at(raw, 20, 4));
	CHECK(h->len == le_at(raw, 24, 4));
	CHECK(h->type == le_at(raw, 28, 2));
	CHECK(h->op == le_at(raw, 30, 2));
	CHECK(h->flags == le_at(raw, 32, 4));
	CHECK(h->buf_alloc == le_at(raw, 36, 4));
	CHECK(h->fwd_cnt == le_at(raw, 40, 4));
	vsock_pkt_encode(h, out);
	CHECK(memcmp(out, raw, sizeof(out)) == 0);
	CHECK(vsock_pkt_parse(out, sizeof(out), &again) == VSOCK_PKT_OK);
	CHECK(hdr_eq(h, &again));
}

static void check_validate(const struct vsock_hdr *h, uint32_t readable,
		const struct vsock_pkt_policy *pol)
{
	enum vsock_pkt_err e = vsock_pkt_validate(h, readable, pol);
	uint32_t bad = broken_rules(h, readable, pol);

	CHECK((unsigned int)e < VSOCK_PKT_ERR_MAX);
	CHECK(strcmp(vsock_pkt_err_str(e), "unknown") != 0);
	if (bad == 0)
		CHECK(e == VSOCK_PKT_OK);
	else
		CHECK(e != VSOCK_PKT_OK && (bad & (1u << e)) != 0);
}

/* A payload-less answer to @p in (RESPONSE, RST, CREDIT_UPDATE, ...): addresses swapped. */
static void reply(struct vsock_hdr *h, const struct vsock_hdr *in, uint16_t op, uint32_t flags,
		uint32_t buf_alloc, uint32_t fwd_cnt)
{
	const struct vsock_flow back = {
		.src_cid = in->dst_cid,
		.dst_cid = in->src_cid,
		.src_port = in->dst_port,
		.dst_port = in->src_port,
		.type = in->type,
	};

	vsock_pkt_build(h, &back, op, 0, flags, buf_alloc, fwd_cnt);
}

/* Reply to h and back again: addresses swap twice, nothing else leaks over. */
static void check_reply(const struct vsock_hdr *h, uint16_t op, uint32_t flags,
		uint32_t buf_alloc, uint32_t fwd_cnt, bool seqpacket)
{
	struct vsock_hdr r, rr, parsed;
	struct vsock_pkt_policy peer = { .guest_cid = h->dst_cid, .seqpacket = seqpacket };
	uint8_t wire[44];

	reply(&r, h, op, flags, buf_alloc, fwd_cnt);
	CHECK(r.src_cid == h->dst_cid && r.dst_cid == h->src_cid);
	CHECK(r.src_port == h->dst_port && r.dst_port == h->src_port);
	CHECK(r.type == h->type && r.op == op && r.len == 0);
	CHECK(r.flags == flags && r.buf_alloc == buf_alloc && r.fwd_cnt == fwd_cnt);
	vsock_pkt_encode(&r, wire);
	CHECK(vsock_pkt_parse(wire, sizeof(wire), &parsed) == VSOCK_PKT_OK);
	CHECK(hdr_eq(&r, &parsed));
	reply(&rr, &r, h->op, h->flags, h->buf_alloc, h->fwd_cnt);
	CHECK(rr.src_cid == h->src_cid && rr.dst_cid == h->dst_cid);
	CHECK(rr.src_port == h->src_port && rr.dst_port == h->dst_port);
	/* A reply, seen by the peer's own validator, breaks only the rules its fields do. */
	check_validate(&r, sizeof(wire), &peer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct vsock_pkt_policy pol;
	struct vsock_hdr h, built, parsed;
	struct vsock_flow f;
	uint8_t cfg = (uint8_t)in_le(&in, 1);
	uint32_t readable, flags, buf_alloc, fwd_cnt;
	uint16_t op;
	uint8_t *raw, wire[44];

	pol.seqpacket = cfg & 1;
	pol.guest_cid = in_le(&in, cfg & 4 ? 8 : 1);
	readable = cfg & 2 ? (uint32_t)in_le(&in, 4) : 0;
	op = (uint16_t)in_le(&in, 1);
	flags = (uint32_t)in_le(&in, 4);
	buf_alloc = (uint32_t)in_le(&in, 4);
	fwd_cnt = (uint32_t)in_le(&in, 4);
	if (!(cfg & 2))
		readable = (uint32_t)in.n;

	/* Exactly the bytes left: a read past them is an ASan report. */
	raw = malloc(in.n ? in.n : 1);
	CHECK(raw != NULL);
	memcpy(raw, in.p, in.n);
	check_parse(raw, (uint32_t)in.n, &h);
	free(raw);
	if (in.n < 44)
		return 0;

	check_validate(&h, readable, &pol);
	check_reply(&h, op, flags, buf_alloc, fwd_cnt, pol.seqpacket);

	/* A packet built from any flow round-trips through the wire format. */
	f.src_cid = h.dst_cid;
	f.dst_cid = h.src_cid;
	f.src_port = h.fwd_cnt;
	f.dst_port = h.buf_alloc;
	f.type = h.type;
	vsock_pkt_build(&built, &f, op, h.len, flags, buf_alloc, fwd_cnt);
	vsock_pkt_encode(&built, wire);
	CHECK(vsock_pkt_parse(wire, sizeof(wire), &parsed) == VSOCK_PKT_OK);
	CHECK(hdr_eq(&built, &parsed));
	CHECK(parsed.src_cid == f.src_cid && parsed.dst_cid == f.dst_cid &&
	      parsed.src_port == f.src_port && parsed.dst_port == f.dst_port &&
	      parsed.type == f.type && parsed.op == op && parsed.len == h.len);
	return 0;
}
