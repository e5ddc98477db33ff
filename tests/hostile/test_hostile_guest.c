/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile guest against the rings: bad indices, bad heads and next links, loops, bad
 * indirect tables, buffers outside guest memory or wrapping, impossible lengths, and a thread
 * that rewrites descriptors while the app walks them.
 *
 * Every case runs on a fresh attachment of VM 3. First one valid REQUEST to a port nobody
 * listens on proves the ring is served (exact RST). Then the bad chain is published; the app
 * must mark that one queue broken, say so in its log naming the VM and the reason, leave the
 * bad chain alone, and keep serving everything else: after every case VM 5, polled by the same
 * worker lcore, does a checked exchange with the host. Empty (zero-length) descriptors are no
 * attack: the packets around them are served and no queue stops. At the end the app exits 0
 * on SIGTERM.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile_util.h"
#include "pattern.h"
#include "tap.h"

#define MS 3000
#define NO_LISTENER 1
#define RING_DEFAULT 128
#define CANARY_LEN 65536u

static struct hu_env env;
static struct rawg g;
static uint32_t next_gport = 20000;
/* The case's ring size, and the first descriptor of its bad chains (the free list hands out
 * low indices first). */
static uint16_t ring = RING_DEFAULT;
static uint16_t bad = RING_DEFAULT / 2;

static void
setd(struct vfe_vq *q, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	q->desc[i].addr = htole64(addr);
	q->desc[i].len = htole32(len);
	q->desc[i].flags = htole16(flags);
	q->desc[i].next = htole16(next);
}

static void
sett(struct vring_desc *t, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		uint16_t next)
{
	t[i].addr = htole64(addr);
	t[i].len = htole32(len);
	t[i].flags = htole16(flags);
	t[i].next = htole16(next);
}

/* A valid buffer in guest memory for bad chains to point at. */
static uint64_t
buf_gpa(void)
{
	return g.tx_gpa[ring - 1];
}

/* An indirect table of @p n entries in guest memory. */
static struct vring_desc *
table(unsigned int n, uint64_t *gpa)
{
	return vfe_mem_alloc(&g.v.mem, n * sizeof(struct vring_desc), 16, gpa);
}

/*
 * Attach VM 3 (@p conf NULL: rg_conf_default) on split rings whatever VFE_RING says (the cases
 * write split-ring structures; test_hostile_guest_packed.c has the packed ones), and prove its
 * rings work: REQUEST to nowhere, exact RST back.
 */
static bool
fresh_attacker(const char *what, const struct vfe_vsock_conf *conf)
{
	struct vfe_vsock_conf c = conf != NULL ? *conf : rg_conf_default;
	struct vfe_vsock_pkt req;
	char why[160];
	int k;

	c.packed = false;
	c.ring_fixed = true;
	if (!tap_ok(rg_attach(&g, &env, &c) == 0, "%s: VM 3 attached", what)) {
		tap_diag("%s", env.why);
		return false;
	}
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	rg_send(&g, &req, NULL);
	RG_WAIT(&g, rg_find(&g, 0, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	k = rg_find(&g, 0, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER);
	if (!tap_ok(rg_is_rst(&g, k, next_gport, NO_LISTENER, VIRTIO_VSOCK_TYPE_STREAM, why,
			sizeof(why)) && g.tx_completed == 1,
			"%s: a valid REQUEST first gets its RST", what))
		tap_diag("%s (tx completed %llu)", why, (unsigned long long)g.tx_completed);
	return true;
}

static void
peer_check(const char *what)
{
	if (!tap_ok(hu_peer_check(&env) == 0, "%s: VM 5 on the same lcore still works", what))
		tap_diag("%s", env.why);
}

/*
 * The queue @p q must be marked broken for @p reason: one log line naming VM 3, telemetry
 * says so, and no completion for the bad chain (nor anything after it).
 */
static void
expect_broken(const char *what, long mark, const char *q, const char *reason)
{
	char line[128], path[32];
	uint64_t completed = g.tx_completed;
	unsigned int nlog = g.nlog;

	snprintf(line, sizeof(line), "VM cid 3: %s queue stopped: guest broke the ring (%s)",
		q, reason);
	if (!tap_ok(hu_log_wait(&env, mark, line, MS), "%s: log says '%s'", what, line))
		app_proc_dump_log(&env.o.dp.app);
	snprintf(path, sizeof(path), "3.%s_ring_broken", q);
	tap_ok(ops_tel_u64(&env.o, "/vsock/vms", path) == 1, "%s: telemetry %s is 1", what, path);
	/* Give the app time to do what it must not. */
	RG_WAIT(&g, false, 50);
	tap_ok(g.tx_completed == completed && g.bad_used == 0 &&
		(strcmp(q, "rx") != 0 || g.nlog == nlog),
		"%s: the bad chain was not completed (tx %llu -> %llu, bad used %llu)", what,
		(unsigned long long)completed, (unsigned long long)g.tx_completed,
		(unsigned long long)g.bad_used);
	tap_ok(ops_log_count(&env.o, mark, "queue stopped") == 1, "%s: reported once", what);
}

/* Publish what the case wrote on the tx ring. */
static void
tx_go(void)
{
	vfe_vq_publish(&g.v.vq[VFE_VSOCK_TX]);
	vfe_vq_kick(&g.v.vq[VFE_VSOCK_TX]);
}

typedef void (*build_fn)(struct vfe_vq *q);

/* ---- the bad chains (tx ring) ---- */

static void
b_avail_jump(struct vfe_vq *q)
{
	/* One more than the ring can hold, with nothing but garbage behind it. */
	q->avail_idx += ring + 1;
}

static void
b_avail_back(struct vfe_vq *q)
{
	/* Going back one entry reads as 65535 new ones. */
	q->avail_idx -= 1;
}

static void
b_head(struct vfe_vq *q)
{
	vfe_vq_push_avail(q, ring);
}

static void
b_head_max(struct vfe_vq *q)
{
	vfe_vq_push_avail(q, 0xffff);
}

static void
b_next(struct vfe_vq *q)
{
	setd(q, bad, buf_gpa(), 44, VRING_DESC_F_NEXT, ring);
	vfe_vq_push_avail(q, bad);
}

static void
b_loop_self(struct vfe_vq *q)
{
	setd(q, bad, buf_gpa(), 44, VRING_DESC_F_NEXT, bad);
	vfe_vq_push_avail(q, bad);
}

static void
b_loop_two(struct vfe_vq *q)
{
	setd(q, bad, buf_gpa(), 44, VRING_DESC_F_NEXT, bad + 1);
	setd(q, bad + 1, buf_gpa(), 44, VRING_DESC_F_NEXT, bad);
	vfe_vq_push_avail(q, bad);
}

static void
b_loop_long(struct vfe_vq *q)
{
	uint16_t i;

	/* 64 good links, then back to the start. */
	for (i = 0; i < 64; i++)
		setd(q, bad + i, buf_gpa(), 1, VRING_DESC_F_NEXT, i == 63 ? bad : bad + i + 1);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_loop(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(4, &tg);

	sett(t, 0, buf_gpa(), 44, VRING_DESC_F_NEXT, 1);
	sett(t, 1, buf_gpa(), 8, VRING_DESC_F_NEXT, 2);
	sett(t, 2, buf_gpa(), 8, VRING_DESC_F_NEXT, 0);
	setd(q, bad, tg, 4 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_nested(struct vfe_vq *q)
{
	uint64_t tg, ig;
	struct vring_desc *t = table(2, &tg), *inner = table(1, &ig);

	sett(inner, 0, buf_gpa(), 44, 0, 0);
	sett(t, 0, ig, 16, VRING_DESC_F_INDIRECT, 0);
	setd(q, bad, tg, 2 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_next_flag(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(1, &tg);

	sett(t, 0, buf_gpa(), 44, 0, 0);
	setd(q, bad, tg, 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, bad + 1);
	setd(q, bad + 1, buf_gpa(), 44, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_next_range(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(2, &tg);

	sett(t, 0, buf_gpa(), 44, VRING_DESC_F_NEXT, 2);
	sett(t, 1, buf_gpa(), 44, 0, 0);
	setd(q, bad, tg, 2 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_len_odd(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(2, &tg);

	sett(t, 0, buf_gpa(), 44, 0, 0);
	setd(q, bad, tg, 24, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_len_zero(struct vfe_vq *q)
{
	uint64_t tg;

	table(1, &tg);
	setd(q, bad, tg, 0, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_len_huge(struct vfe_vq *q)
{
	uint64_t tg;

	table(1, &tg);
	/* 268 million entries: a multiple of 16, far beyond guest memory. */
	setd(q, bad, tg, 0xfffffff0u, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_outside(struct vfe_vq *q)
{
	setd(q, bad, RG_FAR_AWAY, 4 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_gap(struct vfe_vq *q)
{
	/* Starts in region 0, ends in the hole after it. */
	setd(q, bad, RG_REGION0_END - 32, 4 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_ind_entry_outside(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(2, &tg);

	sett(t, 0, buf_gpa(), 44, VRING_DESC_F_NEXT, 1);
	sett(t, 1, RG_FAR_AWAY, 100, 0, 0);
	setd(q, bad, tg, 2 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_pieces(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(70, &tg);
	uint16_t i;

	/* 70 one-piece buffers: more host pieces than one chain may use. */
	for (i = 0; i < 70; i++)
		sett(t, i, buf_gpa() + i, 1, i < 69 ? VRING_DESC_F_NEXT : 0, i + 1);
	setd(q, bad, tg, 70 * 16, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_outside(struct vfe_vq *q)
{
	setd(q, bad, RG_FAR_AWAY, 44, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_gap(struct vfe_vq *q)
{
	setd(q, bad, RG_REGION0_END - 16, 64, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_gap_second(struct vfe_vq *q)
{
	/* A good header piece, then a piece in the hole between the regions. */
	setd(q, bad, buf_gpa(), 44, VRING_DESC_F_NEXT, bad + 1);
	setd(q, bad + 1, RG_REGION0_END + 4096, 100, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_past_end(struct vfe_vq *q)
{
	/* Region 1 is [17 MiB, 33 MiB): the last 16 bytes and 16 more. */
	setd(q, bad, (33ull << 20) - 16, 32, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_wrap(struct vfe_vq *q)
{
	setd(q, bad, 0xfffffffffffff000ull, 0x2000, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_wrap_max(struct vfe_vq *q)
{
	setd(q, bad, UINT64_MAX, 2, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_len_4g(struct vfe_vq *q)
{
	setd(q, bad, buf_gpa(), 0xffffffffu, 0, 0);
	vfe_vq_push_avail(q, bad);
}

static void
b_chain_4g(struct vfe_vq *q)
{
	uint16_t i;

	/* 33 readable buffers of 128 MiB each (guest memory of 256 MiB): 4 GiB at the 32nd. */
	for (i = 0; i < 33; i++)
		setd(q, bad + i, 0, 128u << 20, i < 32 ? VRING_DESC_F_NEXT : 0, bad + i + 1);
	vfe_vq_push_avail(q, bad);
}

static void
b_order(struct vfe_vq *q)
{
	setd(q, bad, buf_gpa(), 44, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, bad + 1);
	setd(q, bad + 1, buf_gpa(), 44, 0, 0);
	vfe_vq_push_avail(q, bad);
}

struct ring_case {
	const char *name;
	const char *reason;
	build_fn build;
	bool big_mem;
	uint16_t ring;	/* 0: RING_DEFAULT */
};

static const struct ring_case tx_cases[] = {
	{ "avail index jumps by ring size + 1", "avail_idx", b_avail_jump, false, 0 },
	{ "avail index goes back by one", "avail_idx", b_avail_back, false, 0 },
	{ "head equal to the ring size", "head", b_head, false, 0 },
	{ "head 0xffff", "head", b_head_max, false, 0 },
	{ "next beyond the ring", "next", b_next, false, 0 },
	/*
	 * A chain can hold 64 pieces: on a ring larger than that, a loop is refused at its 65th
	 * buffer, before it could be told from a long chain. On a smaller ring it is a loop.
	 */
	{ "descriptor pointing at itself", "pieces", b_loop_self, false, 0 },
	{ "64-descriptor loop", "pieces", b_loop_long, false, 0 },
	{ "descriptor pointing at itself, 16-entry ring", "loop", b_loop_self, false, 16 },
	{ "two descriptors pointing at each other, 16-entry ring", "loop", b_loop_two, false,
		16 },
	{ "loop inside an indirect table", "loop", b_ind_loop, false, 0 },
	{ "indirect inside indirect", "indirect_nested", b_ind_nested, false, 0 },
	{ "indirect with NEXT", "indirect_next", b_ind_next_flag, false, 0 },
	{ "next beyond an indirect table", "next", b_ind_next_range, false, 0 },
	{ "indirect table of 24 bytes", "indirect_len", b_ind_len_odd, false, 0 },
	{ "indirect table of 0 bytes", "indirect_len", b_ind_len_zero, false, 0 },
	{ "indirect table of 4 GiB - 16", "indirect_addr", b_ind_len_huge, false, 0 },
	{ "indirect table outside guest memory", "indirect_addr", b_ind_outside, false, 0 },
	{ "indirect table running into a hole", "indirect_addr", b_ind_gap, false, 0 },
	{ "indirect entry outside guest memory", "desc_addr", b_ind_entry_outside, false, 0 },
	{ "70 buffers in one chain", "pieces", b_pieces, false, 0 },
	{ "buffer outside guest memory", "desc_addr", b_outside, false, 0 },
	{ "buffer straddling a region end into a hole", "desc_addr", b_gap, false, 0 },
	{ "second buffer in a hole", "desc_addr", b_gap_second, false, 0 },
	{ "buffer past the end of guest memory", "desc_addr", b_past_end, false, 0 },
	{ "gpa + len wraps", "desc_addr", b_wrap, false, 0 },
	{ "gpa UINT64_MAX", "desc_addr", b_wrap_max, false, 0 },
	{ "buffer of 4 GiB - 1", "desc_addr", b_len_4g, false, 0 },
	{ "chain of 4 GiB", "chain_len", b_chain_4g, true, 0 },
	{ "readable after writable", "desc_order", b_order, false, 0 },
};

static void
run_tx_case(const struct ring_case *c)
{
	static const struct vfe_vsock_conf big = {
		.indirect_max = 8,
		.mem = { .size = 256u << 20, .nregions = 1 },
	};
	struct vfe_vsock_conf small = {
		.indirect_max = 8,
		.mem = { .size = 32u << 20, .nregions = 2, .gap = 1u << 20 },
	};
	long mark = ops_log_mark(&env.o);
	bool ok;

	ring = c->ring ? c->ring : RING_DEFAULT;
	bad = ring / 2;
	small.ring_size = ring;
	ok = fresh_attacker(c->name, c->big_mem ? &big : c->ring ? &small : NULL);
	if (!ok) {
		peer_check(c->name);
		return;
	}
	c->build(&g.v.vq[VFE_VSOCK_TX]);
	tx_go();
	expect_broken(c->name, mark, "tx", c->reason);
	rg_close(&g);
	ring = RING_DEFAULT;
	bad = ring / 2;
	peer_check(c->name);
}

/* ---- the rx ring: bad buffers are found when the app has something to deliver ---- */

static void
rx_avail_jump(struct vfe_vq *q)
{
	q->avail_idx += ring + 1;
	vfe_vq_publish(q);
}

static void
rx_head(struct vfe_vq *q)
{
	/* The next entry the app will read names a head past the ring. */
	q->avail->ring[q->last_used & (ring - 1)] = htole16(ring + 5);
}

static void
rx_loop(struct vfe_vq *q)
{
	uint16_t h = le16toh(q->avail->ring[q->last_used & (ring - 1)]);

	q->desc[h].flags = htole16(VRING_DESC_F_WRITE | VRING_DESC_F_NEXT);
	q->desc[h].next = htole16(h);
}

static void
rx_outside(struct vfe_vq *q)
{
	uint16_t h = le16toh(q->avail->ring[q->last_used & (ring - 1)]);

	q->desc[h].addr = htole64(RG_REGION0_END - 100);
}

static const struct ring_case rx_cases[] = {
	{ "rx avail index jumps by ring size + 1", "avail_idx", rx_avail_jump, false, 0 },
	{ "rx head past the ring", "head", rx_head, false, 0 },
	{ "rx buffer pointing at itself", "pieces", rx_loop, false, 0 },
	{ "rx buffer running into a hole", "desc_addr", rx_outside, false, 0 },
};

static void
run_rx_case(const struct ring_case *c)
{
	long mark = ops_log_mark(&env.o);
	struct vfe_vsock_pkt req;

	if (!fresh_attacker(c->name, NULL)) {
		peer_check(c->name);
		return;
	}
	/* Every rx buffer consumed so far was reposted: the ring is full again. */
	RG_WAIT(&g, false, 20);
	c->build(&g.v.vq[VFE_VSOCK_RX]);
	/* Something owed to the guest makes the app take an rx buffer: another RST. */
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	rg_send(&g, &req, NULL);
	RG_WAIT(&g, g.tx_completed == 2, MS);
	tap_ok(g.tx_completed == 2, "%s: the tx ring still takes packets", c->name);
	expect_broken(c->name, mark, "rx", c->reason);
	tap_ok(rg_find(&g, 0, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) < 0,
		"%s: nothing written through the broken rx ring", c->name);
	rg_close(&g);
	peer_check(c->name);
}

/* ---- empty buffers are legal: no queue stops ---- */

/*
 * Zero-length descriptors (virtio does not forbid them; Linux vhost skips them): a packet
 * is read from the chain's other descriptors, a chain of nothing else is a short packet,
 * an empty rx buffer has no room. The queues go on.
 */
static void
test_zero_len(void)
{
	const char *what = "zero-length descriptors";
	uint64_t shorts = hu_stat(&env, 3, "short_packets");
	uint64_t smalls = hu_stat(&env, 3, "small_rx_buffers");
	long mark = ops_log_mark(&env.o);
	struct vfe_vsock_pkt req;
	struct vfe_vq *rx;
	unsigned int from;
	char why[160];
	uint16_t h;
	int k;

	if (!fresh_attacker(what, NULL)) {
		peer_check(what);
		return;
	}
	/* One empty descriptor: no header, dropped, given back; nothing answers it. */
	from = g.nlog;
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_raw(&g, &req, 0) == 0, "%s: a chain of one empty descriptor sent", what);
	RG_WAIT(&g, g.tx_completed == 2, MS);
	tap_ok(g.tx_completed == 2 && hu_stat(&env, 3, "short_packets") == shorts + 1,
		"%s: the empty chain given back, counted in short_packets (tx %llu)", what,
		(unsigned long long)g.tx_completed);
	/* A header cut in two around empty descriptors, then the same in an indirect table. */
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_empties(&g, &req, NULL, false) == 0,
		"%s: REQUEST with empty descriptors around its parts", what);
	RG_WAIT(&g, rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER);
	if (!tap_ok(g.nlog == from + 1 && rg_is_rst(&g, k, next_gport, NO_LISTENER,
			VIRTIO_VSOCK_TYPE_STREAM, why, sizeof(why)),
			"%s: the header read whole, answered (and only it)", what))
		tap_diag("%s (%u packets)", why, g.nlog - from);
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_empties(&g, &req, NULL, true) == 0, "%s: the same in an indirect table",
		what);
	RG_WAIT(&g, rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER);
	if (!tap_ok(rg_is_rst(&g, k, next_gport, NO_LISTENER, VIRTIO_VSOCK_TYPE_STREAM, why,
			sizeof(why)) && g.tx_completed == 4,
			"%s: from the indirect table too, answered", what))
		tap_diag("%s", why);

	/* The next rx buffer made empty: given back with 0 bytes, the RST in the one after. */
	rx = &g.v.vq[VFE_VSOCK_RX];
	RG_WAIT(&g, false, 20);
	h = le16toh(rx->avail->ring[rx->last_used & (ring - 1)]);
	rx->desc[h].len = 0;
	from = g.nlog;
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	rg_send(&g, &req, NULL);
	RG_WAIT(&g, g.nlog >= from + 2, MS);
	k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER);
	tap_ok(g.nlog >= from + 1 && g.log[from].used_len == 0,
		"%s: an empty rx buffer given back with used length 0", what);
	if (!tap_ok(k == (int)from + 1 && rg_is_rst(&g, k, next_gport, NO_LISTENER,
			VIRTIO_VSOCK_TYPE_STREAM, why, sizeof(why)),
			"%s: the RST is in the next rx buffer", what))
		tap_diag("%s (at %d)", why, k);
	tap_ok(hu_stat(&env, 3, "small_rx_buffers") == smalls + 1,
		"%s: the empty rx buffer counted in small_rx_buffers", what);
	tap_ok(g.bad_used == 0, "%s: every used entry named a chain in flight", what);
	tap_ok(!ops_log_has(&env.o, mark, "queue stopped") &&
		ops_tel_u64(&env.o, "/vsock/vms", "3.tx_ring_broken") == 0 &&
		ops_tel_u64(&env.o, "/vsock/vms", "3.rx_ring_broken") == 0,
		"%s: no queue stopped", what);
	rg_close(&g);
	peer_check(what);
}

/* ---- a thread rewriting descriptors while the app walks them ---- */

struct flipper {
	pthread_t th;
	volatile bool stop;
	/* Only lengths that keep every chain valid (header and buffers stay in place). */
	bool benign;
	struct vring_desc *desc[2];
	uint64_t good_gpa[8];
	uint64_t flips;
};

static void *
flip_main(void *arg)
{
	struct flipper *f = arg;
	uint64_t r = PATTERN_SEED_DEFAULT;

	while (!f->stop) {
		struct hu_flip w;
		struct vring_desc *d;

		r = pattern_xorshift(r);
		w = hu_flip_choose(r, f->benign, ring, f->good_gpa);
		d = &f->desc[w.queue][w.desc];
		/* Relaxed atomics: the app sees torn-free values changing at any moment. */
		switch (w.field) {
		case HU_FLIP_ADDR:
			__atomic_store_n(&d->addr, htole64(w.value), __ATOMIC_RELAXED);
			break;
		case HU_FLIP_LEN:
			__atomic_store_n(&d->len, htole32((uint32_t)w.value), __ATOMIC_RELAXED);
			break;
		case HU_FLIP_FLAGS:
			__atomic_store_n(&d->flags, htole16((uint16_t)w.value), __ATOMIC_RELAXED);
			break;
		case HU_FLIP_INDEX:
			__atomic_store_n(&d->next, htole16((uint16_t)w.value), __ATOMIC_RELAXED);
			break;
		}
		f->flips++;
	}
	return NULL;
}

static void
test_rewrite(bool benign)
{
	const char *what = benign ? "lengths rewritten (always valid) during the walk" :
		"descriptors rewritten during the walk";
	struct flipper f = { .stop = false, .benign = benign };
	long mark = ops_log_mark(&env.o);
	uint64_t sent;
	uint8_t *canary;
	unsigned int i;

	if (!fresh_attacker(what, NULL)) {
		peer_check(what);
		return;
	}
	/* Guest memory no descriptor ever names: the app must leave it alone. */
	canary = vfe_mem_alloc(&g.v.mem, CANARY_LEN, 64, NULL);
	memset(canary, 0x5a, CANARY_LEN);
	f.desc[0] = g.v.vq[VFE_VSOCK_RX].desc;
	f.desc[1] = g.v.vq[VFE_VSOCK_TX].desc;
	for (i = 0; i < 8; i++)
		f.good_gpa[i] = i < 4 ? g.tx_gpa[i * 8] : g.rx_gpa[i * 8];
	if (!tap_ok(pthread_create(&f.th, NULL, flip_main, &f) == 0, "%s: thread", what)) {
		rg_close(&g);
		return;
	}
	sent = rg_request_storm(&g, &next_gport, NO_LISTENER, 1500);
	f.stop = true;
	pthread_join(f.th, NULL);
	tap_diag("%s: %llu flips, %llu packets sent, %llu completed, %u rx packets, "
		"%llu bad used ids", what, (unsigned long long)f.flips, (unsigned long long)sent,
		(unsigned long long)g.tx_completed, g.nlog, (unsigned long long)g.bad_used);
	tap_ok(hu_app_alive(&env), "%s: the app is alive", what);
	for (i = 0; i < CANARY_LEN && canary[i] == 0x5a; i++)
		;
	tap_ok(i == CANARY_LEN, "%s: guest memory no descriptor named is untouched (%u)", what,
		i);
	tap_ok(ops_tel_u64(&env.o, "/vsock/vms", "3.cid") == 3, "%s: the app still answers",
		what);
	if (benign) {
		unsigned int rst = 0;

		/* Whatever length each walk saw, every packet was valid: each gets its RST. */
		RG_WAIT(&g, g.tx_completed == sent + 1 && g.nlog == sent + 1, MS);
		for (i = 0; i < g.nlog; i++)
			rst += g.log[i].p.op == VIRTIO_VSOCK_OP_RST;
		tap_ok(!ops_log_has(&env.o, mark, "queue stopped") && g.tx_completed == sent + 1 &&
			rst == sent + 1, "%s: no queue stopped, every packet answered (%u RSTs)",
			what, rst);
	} else if (ops_log_has(&env.o, mark, "queue stopped")) {
		tap_diag("%s: %s", what, ops_log_has(&env.o, mark, "VM cid 3: tx queue stopped") ?
			"tx queue broken" : "rx queue broken");
	}
	tap_ok(!ops_log_has(&env.o, mark, "VM cid 5"), "%s: nothing about VM 5 in the log",
		what);
	rg_close(&g);
	peer_check(what);
}

int
main(void)
{
	struct vfe_vsock_conf split;
	unsigned int i;
	int status, l3, l5;

	if (!tap_ok(hu_start(&env) == 0, "app started with VM 3 and VM 5")) {
		tap_diag("%s", env.why);
		hu_stop(&env, true);
		return tap_done();
	}
	peer_check("before any attack");
	split = rg_conf_default;
	split.ring_fixed = true;
	if (rg_attach(&g, &env, &split) == 0) {
		l3 = hu_vm_lcore(&env, 3);
		l5 = hu_vm_lcore(&env, 5);
		tap_ok(l3 >= 0 && l3 == l5, "VM 3 and VM 5 share worker lcore %d (and %d)", l3,
			l5);
		rg_close(&g);
	}

	for (i = 0; i < sizeof(tx_cases) / sizeof(tx_cases[0]); i++)
		run_tx_case(&tx_cases[i]);
	for (i = 0; i < sizeof(rx_cases) / sizeof(rx_cases[0]); i++)
		run_rx_case(&rx_cases[i]);
	test_zero_len();
	test_rewrite(true);
	test_rewrite(false);

	status = hu_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
