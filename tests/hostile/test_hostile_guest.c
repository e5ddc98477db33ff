/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile guest against the rings, on the ring layout HOSTILE_RING names for VM 3 ("split",
 * the default, or "packed": meson runs this source once for each, as hostile_guest and
 * hostile_guest_packed). VM 5 follows VFE_RING (unset: split rings), so the packed run puts a
 * split VM next to the packed one on the same lcore. The abuse: bad indices, heads, next links
 * and buffer ids, loops and chains that never end, bad indirect tables, buffers outside guest
 * memory or across a region's end, overflowing lengths, flags with the wrong wrap counter bits
 * (packed), buffers of the wrong direction, and a thread that rewrites descriptors while the
 * app walks them.
 *
 * Every case runs on a fresh attachment of VM 3. First one valid REQUEST to a port nobody
 * listens on proves the ring is served (exact RST). Then the case's descriptors are made
 * available, and the app must do exactly what lib/vsock_pmd/virtq/ says:
 *   - a bad chain stops that one queue: one log line naming VM 3 and the reason, telemetry's
 *     ring_broken flag and the errors.ring_<reason> counter; the app completes nothing of the
 *     bad chain, writes nothing into a packed ring, nor into guest memory no descriptor names;
 *   - a packed descriptor whose flags are not those of an available one on this lap is not
 *     taken, and nothing after it: the queue waits for it, it is not stopped;
 *   - a buffer of the wrong direction is given back empty and counted (short_packets,
 *     small_rx_buffers), the queue goes on;
 *   - empty (zero-length) descriptors are legal: a packet is read from the others, a chain
 *     of nothing else is a short packet, an empty rx buffer has no room; the queue goes on.
 * After each case the app is alive and VM 5 does a checked exchange with the host. At the end
 * the app exits 0 on SIGTERM.
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
/* How long a queue gets to do what it must not. */
#define IDLE_MS 100
/* Both layouts' descriptors are 16 bytes, in rings and in indirect tables. */
#define DESC_LEN 16u

#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED (1u << VRING_PACKED_DESC_F_USED)

_Static_assert(sizeof(struct vring_desc) == DESC_LEN &&
	sizeof(struct vring_packed_desc) == DESC_LEN, "16-byte descriptors");

static struct hu_env env;
static struct rawg g;
/* VM 3's layout (HOSTILE_RING). */
static bool packed;
static uint32_t next_gport;
/*
 * The case's ring size, and its middle: on split rings the first descriptor of the bad
 * chains (the free list hands out low indices first), on packed rings their valid buffer id.
 */
static uint16_t ring = RING_DEFAULT;
static uint16_t mid = RING_DEFAULT / 2;
/* Guest memory that no descriptor names: the app must never write it. */
static uint8_t *canary;

/* ---- packed ring arithmetic (vfe.h: a count c is index c % num, wrap counter 1 on even laps) */

static bool
lap_wrap(const struct vfe_vq *q, uint16_t c)
{
	return !((c / q->num) & 1);
}

/* Flag bits that make the descriptor at count @p c available. */
static uint16_t
avail_bits(const struct vfe_vq *q, uint16_t c)
{
	return lap_wrap(q, c) ? F_AVAIL : F_USED;
}

/* Available on the other lap: what a driver with its wrap counter wrong would write. */
static uint16_t
other_lap_bits(const struct vfe_vq *q, uint16_t c)
{
	return lap_wrap(q, c) ? F_USED : F_AVAIL;
}

/* Used on this lap: both bits equal to the wrap counter. */
static uint16_t
used_bits(const struct vfe_vq *q, uint16_t c)
{
	return lap_wrap(q, c) ? F_AVAIL | F_USED : 0;
}

static struct vring_packed_desc *
desc_at(const struct vfe_vq *q, uint16_t c)
{
	return &q->pdesc[c & (q->num - 1)];
}

/*
 * ---- hand-made chains ----
 * Split: descriptors from mid on, linked by next, the head pushed on the avail ring. Packed:
 * descriptors from the ring's next position, buffer id mid, the head's flags written last.
 */

static struct {
	uint16_t n;
	uint16_t head_flags;
} chain;

/* Split descriptor @p i, as the case writes it. */
static void
setd(struct vfe_vq *q, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	q->desc[i].addr = htole64(addr);
	q->desc[i].len = htole32(len);
	q->desc[i].flags = htole16(flags);
	q->desc[i].next = htole16(next);
}

/* Split indirect table entry @p i, as the case writes it. */
static void
sett(struct vring_desc *t, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		uint16_t next)
{
	t[i].addr = htole64(addr);
	t[i].len = htole32(len);
	t[i].flags = htole16(flags);
	t[i].next = htole16(next);
}

/* Packed descriptor @p k of the chain: @p flags plus the bits that make it available. */
static void
putd_id(struct vfe_vq *q, uint16_t k, uint64_t addr, uint32_t len, uint16_t flags, uint16_t id)
{
	uint16_t c = (uint16_t)(q->avail_idx + k);
	struct vring_packed_desc *d = desc_at(q, c);

	d->addr = htole64(addr);
	d->len = htole32(len);
	d->id = htole16(id);
	flags |= avail_bits(q, c);
	if (k == 0)
		chain.head_flags = flags;
	else
		d->flags = htole16(flags);
	if (k >= chain.n)
		chain.n = k + 1;
}

/* Descriptor @p k of the chain, on either layout (split: NEXT leads to descriptor k + 1). */
static void
putd(struct vfe_vq *q, uint16_t k, uint64_t addr, uint32_t len, uint16_t flags)
{
	if (packed) {
		putd_id(q, k, addr, len, flags, mid);
		return;
	}
	setd(q, mid + k, addr, len, flags, mid + k + 1);
	if (k >= chain.n)
		chain.n = k + 1;
}

/* Replace the availability bits of packed descriptor @p k with @p bits. */
static void
set_bits(struct vfe_vq *q, uint16_t k, uint16_t bits)
{
	struct vring_packed_desc *d = desc_at(q, (uint16_t)(q->avail_idx + k));

	if (k == 0)
		chain.head_flags = (chain.head_flags & ~(F_AVAIL | F_USED)) | bits;
	else
		d->flags = htole16((le16toh(d->flags) & ~(F_AVAIL | F_USED)) | bits);
}

/*
 * Make what the case wrote available. Packed: the head's flags last, with release (the rest
 * of the chain is written before); the driver counts its descriptors as in flight, so that
 * rg_poll() would see (as bad_used) anything the app wrote there. Split: the chain putd()
 * wrote is pushed (a split-only case may have pushed its own head), then published.
 */
static void
chain_go(struct vfe_vq *q)
{
	if (packed) {
		struct vring_packed_desc *head = desc_at(q, q->avail_idx);

		q->avail_idx += chain.n;
		q->num_free -= chain.n;
		__atomic_store_n(&head->flags, htole16(chain.head_flags), __ATOMIC_RELEASE);
	} else {
		if (chain.n > 0)
			vfe_vq_push_avail(q, mid);
		vfe_vq_publish(q);
	}
	vfe_vq_kick(q);
	chain.n = 0;
}

/* A valid buffer in guest memory for bad chains to point at. */
static uint64_t
buf_gpa(void)
{
	return g.tx_gpa[ring - 1];
}

/* An indirect table of @p n entries in guest memory. */
static void *
table(unsigned int n, uint64_t *gpa)
{
	return vfe_mem_alloc(&g.v.mem, n * DESC_LEN, 16, gpa);
}

/*
 * Entry @p i of an indirect table of @p n buffers in order: split entries lead to the next
 * by NEXT, packed ones are in order by definition (NEXT means nothing there).
 */
static void
tput(void *t, unsigned int i, unsigned int n, uint64_t addr, uint32_t len, uint16_t flags)
{
	struct vring_packed_desc *p = t;

	if (!packed) {
		sett(t, i, addr, len, flags | (i + 1 < n ? VRING_DESC_F_NEXT : 0),
			i + 1 < n ? i + 1 : 0);
		return;
	}
	p[i].addr = htole64(addr);
	p[i].len = htole32(len);
	p[i].id = 0;
	p[i].flags = htole16(flags);
}

/*
 * A REQUEST from a fresh port to nowhere in a raw guest tx buffer, added in @p npieces
 * descriptors (the header cut after 20 bytes for 2) or as an indirect table, not made
 * available yet. Returns the buffer id or -errno; the guest port goes to *gport.
 */
static int
add_req(unsigned int npieces, bool indirect, uint32_t *gport)
{
	struct vfe_vq *tx = &g.v.vq[VFE_VSOCK_TX];
	struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	struct virtio_vsock_hdr hdr;
	struct vfe_buf b[2];
	uint16_t i;
	int id;

	if (g.tx_nfree == 0)
		return -ENOSPC;
	i = g.tx_free[--g.tx_nfree];
	vfe_vsock_build(&hdr, &req);
	memcpy(g.tx_buf[i], &hdr, sizeof(hdr));
	b[0] = (struct vfe_buf){ .gpa = g.tx_gpa[i], .len = npieces == 2 ? 20 : 44 };
	b[1] = (struct vfe_buf){ .gpa = g.tx_gpa[i] + 20, .len = 24 };
	id = indirect ? vfe_vq_add_indirect(tx, b, npieces, (void *)(uintptr_t)(i + 1u)) :
		vfe_vq_add(tx, b, npieces, (void *)(uintptr_t)(i + 1u));
	if (id < 0)
		g.tx_free[g.tx_nfree++] = i;
	*gport = next_gport;
	return id;
}

/* Publish what add_req() added. */
static void
tx_publish(void)
{
	vfe_vq_publish(&g.v.vq[VFE_VSOCK_TX]);
	vfe_vq_kick(&g.v.vq[VFE_VSOCK_TX]);
}

/* Whether the exact RST answering a REQUEST from @p gport arrived (from log entry @p from). */
static bool
got_rst(uint32_t gport, unsigned int from, char *why, size_t len)
{
	int k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, gport, NO_LISTENER);

	return rg_is_rst(&g, k, gport, NO_LISTENER, VIRTIO_VSOCK_TYPE_STREAM, why, len);
}

/* ---- each case's frame ---- */

/*
 * Attach VM 3 on its layout (@p conf NULL: rg_conf_default), fill a canary, and prove its
 * rings work: REQUEST to nowhere, exact RST back.
 */
static bool
fresh_attacker(const char *what, const struct vfe_vsock_conf *conf)
{
	struct vfe_vsock_conf c = conf != NULL ? *conf : rg_conf_default;
	struct vfe_vsock_pkt req;
	char why[160];

	c.packed = packed;
	c.ring_fixed = true;
	if (c.ring_size == 0)
		c.ring_size = RING_DEFAULT;
	ring = c.ring_size;
	mid = ring / 2;
	chain.n = 0;
	if (!tap_ok(rg_attach(&g, &env, &c) == 0 && g.v.vq[VFE_VSOCK_TX].packed == packed &&
			!(g.v.features & (1ULL << VIRTIO_F_RING_PACKED)) == !packed,
			"%s: VM 3 attached on %s rings", what, packed ? "packed" : "split")) {
		tap_diag("%s", env.why);
		return false;
	}
	canary = vfe_mem_alloc(&g.v.mem, CANARY_LEN, 64, NULL);
	if (canary != NULL)
		memset(canary, 0x5a, CANARY_LEN);
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	rg_send(&g, &req, NULL);
	RG_WAIT(&g, rg_find(&g, 0, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	if (!tap_ok(got_rst(next_gport, 0, why, sizeof(why)) && g.tx_completed == 1,
			"%s: a valid REQUEST first gets its RST", what))
		tap_diag("%s (tx completed %llu)", why, (unsigned long long)g.tx_completed);
	return true;
}

/* The app is alive, the canary intact; VM 3 goes away, VM 5 must still work. */
static void
case_end(const char *what)
{
	unsigned int i = 0;

	tap_ok(hu_app_alive(&env), "%s: the app is alive", what);
	while (canary != NULL && i < CANARY_LEN && canary[i] == 0x5a)
		i++;
	tap_ok(canary != NULL && i == CANARY_LEN,
		"%s: guest memory no descriptor names is untouched (%u)", what, i);
	rg_close(&g);
	canary = NULL;
	if (!tap_ok(hu_peer_check(&env) == 0, "%s: VM 5 on the same lcore still works", what))
		tap_diag("%s", env.why);
}

/* ---- bad chains: the queue is stopped ---- */

struct ring_snap {
	struct vring_packed_desc d[RING_DEFAULT];
};

static void
snap(const struct vfe_vq *q, struct ring_snap *s)
{
	memcpy(s->d, q->pdesc, q->num * sizeof(s->d[0]));
}

/*
 * Queue @p q ("rx"/"tx") must be stopped for @p reason: one log line naming VM 3, telemetry's
 * ring_broken flag and errors.ring_<reason> (@p before it), no completion, and (packed) not
 * one byte written into the ring since @p s.
 */
static void
expect_broken(const char *what, long mark, const char *q, const char *reason,
		uint64_t before, const struct ring_snap *s)
{
	const struct vfe_vq *vq = &g.v.vq[strcmp(q, "rx") == 0 ? VFE_VSOCK_RX : VFE_VSOCK_TX];
	uint64_t completed = g.tx_completed;
	unsigned int nlog = g.nlog;
	char line[128], path[48];
	uint64_t after;

	snprintf(line, sizeof(line), "VM cid 3: %s queue stopped: guest broke the ring (%s)",
		q, reason);
	if (!tap_ok(hu_log_wait(&env, mark, line, MS), "%s: log says '%s'", what, line))
		app_proc_dump_log(&env.o.dp.app);
	snprintf(path, sizeof(path), "3.%s_ring_broken", q);
	tap_ok(ops_tel_u64(&env.o, "/vsock/vms", path) == 1, "%s: telemetry %s is 1", what, path);
	snprintf(path, sizeof(path), "errors.ring_%s", reason);
	after = hu_stat(&env, 3, path);
	tap_ok(after == before + 1, "%s: counted in %s (%llu -> %llu)", what, path,
		(unsigned long long)before, (unsigned long long)after);
	/* Give the app time to do what it must not. */
	RG_WAIT(&g, false, IDLE_MS);
	tap_ok(g.tx_completed == completed && g.bad_used == 0 &&
		(strcmp(q, "rx") != 0 || g.nlog == nlog),
		"%s: the bad chain was not completed (tx %llu -> %llu, bad used %llu)", what,
		(unsigned long long)completed, (unsigned long long)g.tx_completed,
		(unsigned long long)g.bad_used);
	if (packed)
		tap_ok(memcmp(s->d, vq->pdesc, vq->num * sizeof(s->d[0])) == 0,
			"%s: the app wrote nothing into the %s ring", what, q);
	tap_ok(ops_log_count(&env.o, mark, "queue stopped") == 1, "%s: reported once", what);
}

typedef void (*build_fn)(struct vfe_vq *q);

/* ---- bad tx chains on either layout ---- */

static void
b_outside(struct vfe_vq *q)
{
	putd(q, 0, RG_FAR_AWAY, 44, 0);
}

static void
b_gap(struct vfe_vq *q)
{
	putd(q, 0, RG_REGION0_END - 16, 64, 0);
}

static void
b_gap_second(struct vfe_vq *q)
{
	/* A good header piece, then a piece in the hole between the regions. */
	putd(q, 0, buf_gpa(), 44, VRING_DESC_F_NEXT);
	putd(q, 1, RG_REGION0_END + 4096, 100, 0);
}

static void
b_past_end(struct vfe_vq *q)
{
	/* The last 16 bytes of guest memory and 16 more. */
	putd(q, 0, RG_MEM_END - 16, 32, 0);
}

static void
b_wrap(struct vfe_vq *q)
{
	putd(q, 0, 0xfffffffffffff000ull, 0x2000, 0);
}

static void
b_wrap_max(struct vfe_vq *q)
{
	putd(q, 0, UINT64_MAX, 2, 0);
}

static void
b_len_4g(struct vfe_vq *q)
{
	putd(q, 0, buf_gpa(), 0xffffffffu, 0);
}

static void
b_chain_4g(struct vfe_vq *q)
{
	uint16_t i;

	/* 33 readable buffers of 128 MiB each (guest memory of 256 MiB): 4 GiB at the 32nd. */
	for (i = 0; i < 33; i++)
		putd(q, i, 0, 128u << 20, i < 32 ? VRING_DESC_F_NEXT : 0);
}

static void
b_order(struct vfe_vq *q)
{
	putd(q, 0, buf_gpa(), 44, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT);
	putd(q, 1, buf_gpa(), 44, 0);
}

static void
b_ind_len_odd(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(2, &tg);

	tput(t, 0, 1, buf_gpa(), 44, 0);
	putd(q, 0, tg, 24, VRING_DESC_F_INDIRECT);
}

static void
b_ind_len_zero(struct vfe_vq *q)
{
	uint64_t tg;

	table(1, &tg);
	putd(q, 0, tg, 0, VRING_DESC_F_INDIRECT);
}

static void
b_ind_len_huge(struct vfe_vq *q)
{
	uint64_t tg;

	table(1, &tg);
	/* 268 million entries: a multiple of 16, far beyond guest memory. */
	putd(q, 0, tg, 0xfffffff0u, VRING_DESC_F_INDIRECT);
}

static void
b_ind_outside(struct vfe_vq *q)
{
	putd(q, 0, RG_FAR_AWAY, 4 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_gap(struct vfe_vq *q)
{
	/* Starts in region 0, ends in the hole after it. */
	putd(q, 0, RG_REGION0_END - 32, 4 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_nested(struct vfe_vq *q)
{
	uint64_t tg, ig;
	void *t = table(2, &tg), *inner = table(1, &ig);

	tput(inner, 0, 1, buf_gpa(), 44, 0);
	/* The inner table is the first entry on split rings, after a buffer on packed ones. */
	if (packed) {
		tput(t, 0, 2, buf_gpa(), 44, 0);
		tput(t, 1, 2, ig, DESC_LEN, VRING_DESC_F_INDIRECT);
	} else {
		tput(t, 0, 1, ig, DESC_LEN, VRING_DESC_F_INDIRECT);
	}
	putd(q, 0, tg, 2 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_next_flag(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(1, &tg);

	tput(t, 0, 1, buf_gpa(), 44, 0);
	putd(q, 0, tg, DESC_LEN, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT);
	putd(q, 1, buf_gpa(), 44, 0);
}

static void
b_ind_entry_outside(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(2, &tg);

	tput(t, 0, 2, buf_gpa(), 44, 0);
	tput(t, 1, 2, RG_FAR_AWAY, 100, 0);
	putd(q, 0, tg, 2 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_pieces(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(70, &tg);
	unsigned int i;

	/* 70 one-byte buffers: more host pieces than one chain may use. */
	for (i = 0; i < 70; i++)
		tput(t, i, 70, buf_gpa() + i, 1, 0);
	putd(q, 0, tg, 70 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

/* ---- bad tx chains on split rings only: the avail ring and next links ---- */

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
	setd(q, mid, buf_gpa(), 44, VRING_DESC_F_NEXT, ring);
	vfe_vq_push_avail(q, mid);
}

static void
b_loop_self(struct vfe_vq *q)
{
	setd(q, mid, buf_gpa(), 44, VRING_DESC_F_NEXT, mid);
	vfe_vq_push_avail(q, mid);
}

static void
b_loop_two(struct vfe_vq *q)
{
	setd(q, mid, buf_gpa(), 44, VRING_DESC_F_NEXT, mid + 1);
	setd(q, mid + 1, buf_gpa(), 44, VRING_DESC_F_NEXT, mid);
	vfe_vq_push_avail(q, mid);
}

static void
b_loop_long(struct vfe_vq *q)
{
	uint16_t i;

	/* 64 good links, then back to the start. */
	for (i = 0; i < 64; i++)
		setd(q, mid + i, buf_gpa(), 1, VRING_DESC_F_NEXT, i == 63 ? mid : mid + i + 1);
	vfe_vq_push_avail(q, mid);
}

static void
b_ind_loop(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(4, &tg);

	sett(t, 0, buf_gpa(), 44, VRING_DESC_F_NEXT, 1);
	sett(t, 1, buf_gpa(), 8, VRING_DESC_F_NEXT, 2);
	sett(t, 2, buf_gpa(), 8, VRING_DESC_F_NEXT, 0);
	setd(q, mid, tg, 4 * DESC_LEN, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, mid);
}

static void
b_ind_next_range(struct vfe_vq *q)
{
	uint64_t tg;
	struct vring_desc *t = table(2, &tg);

	sett(t, 0, buf_gpa(), 44, VRING_DESC_F_NEXT, 2);
	sett(t, 1, buf_gpa(), 44, 0, 0);
	setd(q, mid, tg, 2 * DESC_LEN, VRING_DESC_F_INDIRECT, 0);
	vfe_vq_push_avail(q, mid);
}

/* ---- bad tx chains on packed rings only: availability bits, buffer ids, tables ---- */

/* NEXT on every descriptor of the ring, each available on its lap. */
static void
b_no_end(struct vfe_vq *q)
{
	uint16_t i;

	for (i = 0; i < ring; i++)
		putd(q, i, buf_gpa() + i, 1, VRING_DESC_F_NEXT);
}

static void
b_second_other_lap(struct vfe_vq *q)
{
	putd(q, 0, buf_gpa(), 20, VRING_DESC_F_NEXT);
	putd(q, 1, buf_gpa() + 20, 24, 0);
	set_bits(q, 1, other_lap_bits(q, (uint16_t)(q->avail_idx + 1)));
}

static void
b_second_used(struct vfe_vq *q)
{
	putd(q, 0, buf_gpa(), 20, VRING_DESC_F_NEXT);
	putd(q, 1, buf_gpa() + 20, 24, 0);
	set_bits(q, 1, used_bits(q, (uint16_t)(q->avail_idx + 1)));
}

static void
b_id_ring(struct vfe_vq *q)
{
	putd_id(q, 0, buf_gpa(), 44, 0, ring);
}

static void
b_id_max(struct vfe_vq *q)
{
	putd_id(q, 0, buf_gpa(), 44, 0, 0xffff);
}

static void
b_id_last(struct vfe_vq *q)
{
	/* The id is the last descriptor's: a good one on the head does not help. */
	putd(q, 0, buf_gpa(), 20, VRING_DESC_F_NEXT);
	putd_id(q, 1, buf_gpa() + 20, 24, 0, ring + 1);
}

static void
b_ind_after_next(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(1, &tg);

	tput(t, 0, 1, buf_gpa(), 24, 0);
	putd(q, 0, buf_gpa(), 20, VRING_DESC_F_NEXT);
	putd(q, 1, tg, DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_order(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(2, &tg);

	tput(t, 0, 2, buf_gpa(), 44, VRING_DESC_F_WRITE);
	tput(t, 1, 2, buf_gpa(), 44, 0);
	putd(q, 0, tg, 2 * DESC_LEN, VRING_DESC_F_INDIRECT);
}

static void
b_ind_plain(struct vfe_vq *q)
{
	uint64_t tg;
	void *t = table(1, &tg);

	tput(t, 0, 1, buf_gpa(), 44, 0);
	putd(q, 0, tg, DESC_LEN, VRING_DESC_F_INDIRECT);
}

enum mem_kind { MEM_DEFAULT, MEM_BIG, MEM_NO_INDIRECT };
/* The layouts a case runs on. */
enum { ON_BOTH, ON_SPLIT, ON_PACKED };

struct ring_case {
	const char *name;
	const char *reason;
	build_fn build;
	enum mem_kind mem;	/* 0: MEM_DEFAULT */
	uint16_t ring;		/* 0: RING_DEFAULT */
	int on;
};

static const struct ring_case tx_cases[] = {
	{ "buffer outside guest memory", "desc_addr", b_outside, .on = ON_BOTH },
	{ "buffer straddling a region end into a hole", "desc_addr", b_gap, .on = ON_BOTH },
	{ "second buffer in a hole", "desc_addr", b_gap_second, .on = ON_BOTH },
	{ "buffer past the end of guest memory", "desc_addr", b_past_end, .on = ON_BOTH },
	{ "gpa + len wraps", "desc_addr", b_wrap, .on = ON_BOTH },
	{ "gpa UINT64_MAX", "desc_addr", b_wrap_max, .on = ON_BOTH },
	{ "buffer of 4 GiB - 1", "desc_addr", b_len_4g, .on = ON_BOTH },
	{ "chain of 4 GiB", "chain_len", b_chain_4g, .mem = MEM_BIG },
	{ "readable after writable", "desc_order", b_order, .on = ON_BOTH },
	{ "indirect table of 24 bytes", "indirect_len", b_ind_len_odd, .on = ON_BOTH },
	{ "indirect table of 0 bytes", "indirect_len", b_ind_len_zero, .on = ON_BOTH },
	{ "indirect table of 4 GiB - 16", "indirect_addr", b_ind_len_huge, .on = ON_BOTH },
	{ "indirect table outside guest memory", "indirect_addr", b_ind_outside, .on = ON_BOTH },
	{ "indirect table running into a hole", "indirect_addr", b_ind_gap, .on = ON_BOTH },
	{ "indirect inside indirect", "indirect_nested", b_ind_nested, .on = ON_BOTH },
	{ "indirect with NEXT", "indirect_next", b_ind_next_flag, .on = ON_BOTH },
	{ "indirect entry outside guest memory", "desc_addr", b_ind_entry_outside, .on = ON_BOTH },
	{ "70 buffers in one chain", "pieces", b_ind_pieces, .on = ON_SPLIT },
	{ "indirect table of 70 buffers", "pieces", b_ind_pieces, .on = ON_PACKED },

	{ "avail index jumps by ring size + 1", "avail_idx", b_avail_jump, .on = ON_SPLIT },
	{ "avail index goes back by one", "avail_idx", b_avail_back, .on = ON_SPLIT },
	{ "head equal to the ring size", "head", b_head, .on = ON_SPLIT },
	{ "head 0xffff", "head", b_head_max, .on = ON_SPLIT },
	{ "next beyond the ring", "next", b_next, .on = ON_SPLIT },
	/*
	 * A chain can hold 64 pieces: on a ring larger than that, a loop is refused at its 65th
	 * buffer, before it could be told from a long chain. On a smaller ring it is a loop.
	 */
	{ "descriptor pointing at itself", "pieces", b_loop_self, .on = ON_SPLIT },
	{ "64-descriptor loop", "pieces", b_loop_long, .on = ON_SPLIT },
	{ "descriptor pointing at itself, 16-entry ring", "loop",
		b_loop_self, .ring = 16, .on = ON_SPLIT },
	{ "two descriptors pointing at each other, 16-entry ring", "loop",
		b_loop_two, .ring = 16, .on = ON_SPLIT },
	{ "loop inside an indirect table", "loop", b_ind_loop, .on = ON_SPLIT },
	{ "next beyond an indirect table", "next", b_ind_next_range, .on = ON_SPLIT },

	/*
	 * A chain that never ends: a descriptor after the first must be available too, so
	 * the walk ends where the ring wraps (chain_avail). A chain holds 64 pieces: on a
	 * ring larger than that the 65th buffer ends it first.
	 */
	{ "NEXT on all 128 descriptors", "pieces", b_no_end, .on = ON_PACKED },
	{ "NEXT on all 16 descriptors of a 16-entry ring", "chain_avail",
		b_no_end, .ring = 16, .on = ON_PACKED },
	{ "NEXT into a descriptor available on the other lap", "chain_avail",
		b_second_other_lap, .on = ON_PACKED },
	{ "NEXT into a descriptor marked used", "chain_avail", b_second_used, .on = ON_PACKED },
	{ "buffer id equal to the ring size", "head", b_id_ring, .on = ON_PACKED },
	{ "buffer id 0xffff", "head", b_id_max, .on = ON_PACKED },
	{ "bad buffer id on the last descriptor of a chain", "head",
		b_id_last, .on = ON_PACKED },
	{ "indirect after a NEXT", "indirect_next", b_ind_after_next, .on = ON_PACKED },
	{ "readable after writable in an indirect table", "desc_order",
		b_ind_order, .on = ON_PACKED },
	{ "indirect table without VIRTIO_RING_F_INDIRECT_DESC", "indirect_feature",
		b_ind_plain, .mem = MEM_NO_INDIRECT, .on = ON_PACKED },
};

/* Whether case @p c runs on this layout. */
static bool
runs_here(const struct ring_case *c)
{
	return c->on == ON_BOTH || (c->on == ON_PACKED) == packed;
}

static const struct vfe_vsock_conf *
case_conf(enum mem_kind mem, uint16_t ring_size)
{
	static struct vfe_vsock_conf c;

	c = rg_conf_default;
	c.ring_size = ring_size ? ring_size : RING_DEFAULT;
	if (mem == MEM_BIG)
		c.mem = (struct vfe_mem_conf){ .size = 256u << 20, .nregions = 1 };
	if (mem == MEM_NO_INDIRECT)
		c.driver_features = VFE_VSOCK_DRIVER_FEATURES &
			~(1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	return &c;
}

static void
run_tx_case(const struct ring_case *c)
{
	struct vfe_vq *tx;
	struct ring_snap s;
	char path[48];
	uint64_t before;
	long mark = ops_log_mark(&env.o);

	if (!fresh_attacker(c->name, case_conf(c->mem, c->ring))) {
		case_end(c->name);
		return;
	}
	tx = &g.v.vq[VFE_VSOCK_TX];
	if (c->mem == MEM_NO_INDIRECT)
		tap_ok(!(g.v.features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC)),
			"%s: negotiated without indirect descriptors", c->name);
	snprintf(path, sizeof(path), "errors.ring_%s", c->reason);
	before = hu_stat(&env, 3, path);
	c->build(tx);
	if (packed) {
		/* What the ring must still hold afterwards: the chain, its head available. */
		snap(tx, &s);
		s.d[tx->avail_idx & (tx->num - 1)].flags = htole16(chain.head_flags);
	}
	chain_go(tx);
	expect_broken(c->name, mark, "tx", c->reason, before, &s);
	case_end(c->name);
}

/* ---- the rx ring: bad buffers are found when the app has something to deliver ---- */

/* The split head of the rx buffer the app takes next. */
static uint16_t
rx_next_head(const struct vfe_vq *q)
{
	return le16toh(q->avail->ring[q->last_used & (ring - 1)]);
}

/* The rx descriptor the app will take next: every one before it was used and reposted. */
static struct vring_packed_desc *
rx_next(struct vfe_vq *q)
{
	return desc_at(q, q->last_used);
}

/* Change the address or the length of the rx buffer the app takes next. */
static void
rx_next_set_addr(struct vfe_vq *q, uint64_t addr)
{
	if (packed)
		rx_next(q)->addr = htole64(addr);
	else
		q->desc[rx_next_head(q)].addr = htole64(addr);
}

static void
rx_next_set_len(struct vfe_vq *q, uint32_t len)
{
	if (packed)
		rx_next(q)->len = htole32(len);
	else
		q->desc[rx_next_head(q)].len = htole32(len);
}

static void
rx_outside(struct vfe_vq *q)
{
	rx_next_set_addr(q, RG_REGION0_END - 100);
}

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
	uint16_t h = rx_next_head(q);

	q->desc[h].flags = htole16(VRING_DESC_F_WRITE | VRING_DESC_F_NEXT);
	q->desc[h].next = htole16(h);
}

static void
rx_id(struct vfe_vq *q)
{
	rx_next(q)->id = htole16(ring + 5);
}

static void
rx_second_other_lap(struct vfe_vq *q)
{
	/*
	 * NEXT into the following buffer, whose flags are made those of the other lap. Both
	 * descriptors are the guest's posted buffers: only their flags change.
	 */
	struct vring_packed_desc *d = rx_next(q), *e = desc_at(q, (uint16_t)(q->last_used + 1));

	e->flags = htole16(VRING_DESC_F_WRITE | other_lap_bits(q, (uint16_t)(q->last_used + 1)));
	d->flags = htole16(le16toh(d->flags) | VRING_DESC_F_NEXT);
}

static const struct ring_case rx_cases[] = {
	{ "rx buffer running into a hole", "desc_addr", rx_outside, .on = ON_BOTH },
	{ "rx avail index jumps by ring size + 1", "avail_idx", rx_avail_jump, .on = ON_SPLIT },
	{ "rx head past the ring", "head", rx_head, .on = ON_SPLIT },
	{ "rx buffer pointing at itself", "pieces", rx_loop, .on = ON_SPLIT },
	{ "rx buffer id past the ring", "head", rx_id, .on = ON_PACKED },
	{ "rx NEXT into a buffer available on the other lap", "chain_avail",
		rx_second_other_lap, .on = ON_PACKED },
};

static void
run_rx_case(const struct ring_case *c)
{
	long mark = ops_log_mark(&env.o);
	struct vfe_vsock_pkt req;
	struct vfe_vq *rx;
	struct ring_snap s;
	char path[48];
	uint64_t before;

	if (!fresh_attacker(c->name, NULL)) {
		case_end(c->name);
		return;
	}
	rx = &g.v.vq[VFE_VSOCK_RX];
	snprintf(path, sizeof(path), "errors.ring_%s", c->reason);
	before = hu_stat(&env, 3, path);
	/* Every rx buffer used so far was reposted: the app reads none until it owes one. */
	RG_WAIT(&g, false, 20);
	c->build(rx);
	if (packed)
		snap(rx, &s);
	/* Something owed to the guest makes the app take an rx buffer: another RST. */
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	rg_send(&g, &req, NULL);
	RG_WAIT(&g, g.tx_completed == 2, MS);
	tap_ok(g.tx_completed == 2, "%s: the tx ring still takes packets", c->name);
	expect_broken(c->name, mark, "rx", c->reason, before, &s);
	tap_ok(rg_find(&g, 0, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) < 0,
		"%s: nothing written through the broken rx ring", c->name);
	case_end(c->name);
}

/* ---- what is not a broken ring ---- */

/* Neither queue stopped, nothing logged about it. */
static void
expect_served(const char *what, long mark)
{
	tap_ok(!ops_log_has(&env.o, mark, "queue stopped") &&
		ops_tel_u64(&env.o, "/vsock/vms", "3.tx_ring_broken") == 0 &&
		ops_tel_u64(&env.o, "/vsock/vms", "3.rx_ring_broken") == 0,
		"%s: no queue stopped", what);
}

/*
 * A chain whose head has the flags of another lap (@p used: of a used descriptor) is not
 * available: the app takes neither it nor the valid chain after it, until its flags are
 * right. Then both are answered, in order.
 */
static void
test_head_not_avail(bool used)
{
	const char *what = used ? "head flags of a used descriptor" :
		"head flags available on the other lap";
	struct ring_snap ts, rs;
	struct vfe_vq *tx;
	long mark = ops_log_mark(&env.o);
	uint32_t p1 = 0, p2 = 0;
	unsigned int from;
	uint16_t c, bits;
	char why[160];
	int k1, k2;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	tx = &g.v.vq[VFE_VSOCK_TX];
	from = g.nlog;
	c = tx->avail_idx;
	if (!tap_ok(add_req(1, false, &p1) >= 0 && add_req(1, false, &p2) >= 0,
			"%s: two REQUESTs added", what)) {
		case_end(what);
		return;
	}
	bits = used ? used_bits(tx, c) : other_lap_bits(tx, c);
	/* The second chain's flags are right; the first one's wrong. */
	__atomic_store_n(&desc_at(tx, (uint16_t)(c + 1))->flags,
		htole16(tx->pending[1].flags), __ATOMIC_RELEASE);
	__atomic_store_n(&desc_at(tx, c)->flags, htole16(bits), __ATOMIC_RELEASE);
	vfe_vq_kick(tx);
	/*
	 * Not polled meanwhile (our own driver would take a head that looks used): whatever
	 * the app did would show in the rings, a used descriptor or an RST in an rx buffer.
	 */
	snap(tx, &ts);
	snap(&g.v.vq[VFE_VSOCK_RX], &rs);
	usleep(IDLE_MS * 1000);
	tap_ok(memcmp(ts.d, tx->pdesc, ring * sizeof(ts.d[0])) == 0 &&
		memcmp(rs.d, g.v.vq[VFE_VSOCK_RX].pdesc, ring * sizeof(rs.d[0])) == 0,
		"%s: neither it nor the chain after it taken: the app wrote no ring", what);
	expect_served(what, mark);
	/* Right flags on both (the first one's last): the queue goes on. */
	tx_publish();
	RG_WAIT(&g, g.tx_completed == 3 && g.nlog >= from + 2, MS);
	k1 = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, p1, NO_LISTENER);
	k2 = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, p2, NO_LISTENER);
	if (!tap_ok(g.tx_completed == 3 && got_rst(p1, from, why, sizeof(why)) &&
			got_rst(p2, from, why, sizeof(why)) && k1 < k2,
			"%s: made available, both answered in order", what))
		tap_diag("%s (completed %llu, RSTs at %d, %d)", why,
			(unsigned long long)g.tx_completed, k1, k2);
	expect_served(what, mark);
	case_end(what);
}

/*
 * A valid REQUEST added in @p npieces descriptors (@p indirect: as a table), changed by
 * @p change in a way that leaves it valid, then published: it must be answered, and the
 * queue go on. @p added and @p answered name the two steps.
 */
static void
valid_req(const char *what, unsigned int npieces, bool indirect,
		void (*change)(struct vfe_vq *tx, uint16_t c, int id), const char *added,
		const char *answered)
{
	struct vfe_vq *tx;
	long mark = ops_log_mark(&env.o);
	unsigned int from;
	uint32_t port = 0;
	char why[160];
	uint16_t c;
	int id;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	tx = &g.v.vq[VFE_VSOCK_TX];
	from = g.nlog;
	c = tx->avail_idx;
	id = add_req(npieces, indirect, &port);
	if (!tap_ok(id >= 0, "%s: %s", what, added)) {
		case_end(what);
		return;
	}
	change(tx, c, id);
	tx_publish();
	RG_WAIT(&g, g.tx_completed == 2 && g.nlog > from, MS);
	if (!tap_ok(got_rst(port, from, why, sizeof(why)) && g.tx_completed == 2 &&
			g.bad_used == 0, "%s: %s", what, answered))
		tap_diag("%s", why);
	expect_served(what, mark);
	case_end(what);
}

static void
id_on_first(struct vfe_vq *tx, uint16_t c, int id)
{
	(void)id;
	desc_at(tx, c)->id = htole16(0xffff);
}

static void
next_in_table(struct vfe_vq *tx, uint16_t c, int id)
{
	struct vring_packed_desc *t = (struct vring_packed_desc *)tx->indirect +
		(size_t)id * tx->indirect_max;

	(void)c;
	/* The header's second part is in the last entry: with NEXT it would point past it. */
	t[1].flags = htole16(VRING_DESC_F_NEXT);
}

/* The buffer id is the last descriptor's: a bad one on the first is not looked at. */
static void
test_id_first_only(void)
{
	valid_req("bad buffer id on the first descriptor only", 2, false, id_on_first,
		"REQUEST added", "answered, completed under the last one's id");
}

/* NEXT means nothing inside a packed indirect table: every entry is a buffer, in order. */
static void
test_indirect_next_ignored(void)
{
	valid_req("NEXT set and not set inside an indirect table", 2, true, next_in_table,
		"REQUEST added as a table of two entries",
		"the header read whole from both entries, answered");
}

/* A tx buffer the device may only write: no header to read, dropped as a short packet. */
static void
test_tx_write_only(void)
{
	const char *what = "write-only buffer on the tx queue";
	uint64_t before = hu_stat(&env, 3, "short_packets");
	struct vfe_vq *tx;
	long mark = ops_log_mark(&env.o);
	struct vfe_buf b;
	unsigned int from;
	struct vring_packed_desc d;
	uint8_t image[44];
	uint32_t port = 0;
	char why[160];
	uint16_t c, i;
	int id;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	tx = &g.v.vq[VFE_VSOCK_TX];
	from = g.nlog;
	c = tx->avail_idx;
	/* A valid REQUEST header, in a buffer marked device-writable. */
	i = g.tx_free[--g.tx_nfree];
	vfe_vsock_build((struct virtio_vsock_hdr *)image,
		&(struct vfe_vsock_pkt){ .src_cid = HU_ATTACKER_CID, .dst_cid = HU_HOST_CID,
			.src_port = ++next_gport, .dst_port = NO_LISTENER,
			.type = VIRTIO_VSOCK_TYPE_STREAM, .op = VIRTIO_VSOCK_OP_REQUEST });
	memcpy(g.tx_buf[i], image, sizeof(image));
	b = (struct vfe_buf){ .gpa = g.tx_gpa[i], .len = 44, .writable = true };
	id = vfe_vq_add(tx, &b, 1, (void *)(uintptr_t)(i + 1u));
	tx_publish();
	RG_WAIT(&g, g.tx_completed == 2, MS);
	RG_WAIT(&g, false, IDLE_MS);
	/* The used descriptor stays in the ring until the driver adds the next one. */
	d = *desc_at(tx, c);
	tap_ok(id >= 0 && g.tx_completed == 2 && g.nlog == from && le16toh(d.id) == id &&
		le32toh(d.len) == 0 && le16toh(d.flags) == used_bits(tx, c),
		"%s: given back with used length 0, nothing sent back (id %u len %u flags %#x, "
		"%u packets)", what, le16toh(d.id), le32toh(d.len), le16toh(d.flags),
		g.nlog - from);
	tap_ok(memcmp(g.tx_buf[i], image, sizeof(image)) == 0, "%s: its bytes not written", what);
	tap_ok(hu_stat(&env, 3, "short_packets") == before + 1, "%s: counted in short_packets",
		what);
	if (before == 0)
		tap_ok(hu_log_wait(&env, mark, "VM cid 3: dropped a tx packet of 0 bytes", MS),
			"%s: logged as the VM's first short packet", what);
	expect_served(what, mark);
	/* The queue goes on. */
	from = g.nlog;
	if (!tap_ok(add_req(1, false, &port) >= 0, "%s: another REQUEST added", what)) {
		case_end(what);
		return;
	}
	tx_publish();
	RG_WAIT(&g, rg_find(&g, from, VIRTIO_VSOCK_OP_RST, port, NO_LISTENER) >= 0, MS);
	if (!tap_ok(got_rst(port, from, why, sizeof(why)), "%s: the next REQUEST is answered",
			what))
		tap_diag("%s", why);
	case_end(what);
}

/*
 * The rx buffer the app takes next was made unusable (no room for a header): a REQUEST's
 * RST must skip it, which comes back used with length 0, counted in small_rx_buffers.
 */
static void
rx_unusable(const char *what)
{
	uint64_t before = hu_stat(&env, 3, "small_rx_buffers");
	unsigned int from = g.nlog;
	struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	char why[160];
	int k;

	rg_send(&g, &req, NULL);
	RG_WAIT(&g, g.nlog >= from + 2, MS);
	k = rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER);
	tap_ok(g.nlog >= from + 1 && g.log[from].used_len == 0,
		"%s: given back with used length 0", what);
	if (!tap_ok(k == (int)from + 1 && got_rst(next_gport, from, why, sizeof(why)),
			"%s: the RST is in the next buffer", what))
		tap_diag("%s (at %d)", why, k);
	tap_ok(hu_stat(&env, 3, "small_rx_buffers") == before + 1,
		"%s: counted in small_rx_buffers", what);
	tap_ok(g.bad_used == 0, "%s: every used descriptor named a buffer in flight", what);
}

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
	long mark = ops_log_mark(&env.o);
	struct vfe_vsock_pkt req;
	struct vring_packed_desc d;
	struct vfe_vq *tx;
	unsigned int from;
	char why[160];
	uint16_t c;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	tx = &g.v.vq[VFE_VSOCK_TX];
	/* One empty descriptor: no header, dropped, given back; nothing answers it. */
	from = g.nlog;
	c = tx->avail_idx;
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_raw(&g, &req, 0) == 0, "%s: a chain of one empty descriptor sent", what);
	RG_WAIT(&g, g.tx_completed == 2, MS);
	tap_ok(g.tx_completed == 2 && hu_stat(&env, 3, "short_packets") == shorts + 1,
		"%s: the empty chain given back, counted in short_packets (tx %llu)", what,
		(unsigned long long)g.tx_completed);
	if (packed) {
		/* The used descriptor stays in the ring until the driver adds the next one. */
		d = *desc_at(tx, c);
		tap_ok(le32toh(d.len) == 0 && le16toh(d.flags) == used_bits(tx, c),
			"%s: the empty chain used with length 0 (len %u flags %#x)", what,
			le32toh(d.len), le16toh(d.flags));
	}
	/* A header cut in two around empty descriptors, then the same in an indirect table. */
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_empties(&g, &req, NULL, false) == 0,
		"%s: REQUEST with empty descriptors around its parts", what);
	RG_WAIT(&g, rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	if (!tap_ok(g.nlog == from + 1 && got_rst(next_gport, from, why, sizeof(why)),
			"%s: the header read whole, answered (and only it)", what))
		tap_diag("%s (%u packets)", why, g.nlog - from);
	req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++next_gport, NO_LISTENER);
	tap_ok(rg_send_empties(&g, &req, NULL, true) == 0, "%s: the same in an indirect table",
		what);
	RG_WAIT(&g, rg_find(&g, from, VIRTIO_VSOCK_OP_RST, next_gport, NO_LISTENER) >= 0, MS);
	if (!tap_ok(got_rst(next_gport, from, why, sizeof(why)) && g.tx_completed == 4,
			"%s: from the indirect table too, answered", what))
		tap_diag("%s", why);

	/* The next rx buffer made empty: it has no room. */
	RG_WAIT(&g, false, 20);
	rx_next_set_len(&g.v.vq[VFE_VSOCK_RX], 0);
	rx_unusable(what);
	expect_served(what, mark);
	case_end(what);
}

/* An rx buffer the device may only read: given back empty, the packet goes to the next. */
static void
test_rx_read_only(void)
{
	const char *what = "read-only buffer on the rx queue";
	long mark = ops_log_mark(&env.o);
	struct vfe_vq *rx;
	uint16_t c;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	rx = &g.v.vq[VFE_VSOCK_RX];
	RG_WAIT(&g, false, 20);
	c = rx->last_used;
	desc_at(rx, c)->flags = htole16(avail_bits(rx, c));
	rx_unusable(what);
	expect_served(what, mark);
	case_end(what);
}


/* ---- a thread rewriting descriptors while the app walks them ---- */

struct flipper {
	pthread_t th;
	volatile bool stop;
	/* Only lengths that keep every chain valid (header and buffers stay in place). */
	bool benign;
	/* The rx and tx descriptor rings, of either layout. */
	void *desc[2];
	uint64_t good_gpa[8];
	uint64_t flips;
};

static void *
flip_main(void *arg)
{
	struct flipper *f = arg;
	uint64_t r = PATTERN_SEED_DEFAULT;

	while (!f->stop) {
		struct vring_packed_desc *p;
		struct vring_desc *s;
		/* The fields' types differ in name (__le vs __virtio) only. */
		__u16 *flags, *index, bits = 0;
		struct hu_flip w;
		__u64 *addr;
		__u32 *len;

		r = pattern_xorshift(r);
		w = hu_flip_choose(r, f->benign, ring, f->good_gpa);
		if (packed) {
			p = (struct vring_packed_desc *)f->desc[w.queue] + w.desc;
			addr = &p->addr;
			len = &p->len;
			flags = &p->flags;
			index = &p->id;
			/* With the availability bits, any mix. */
			bits = ((r >> 27) & 1 ? F_AVAIL : 0) | ((r >> 28) & 1 ? F_USED : 0);
		} else {
			s = (struct vring_desc *)f->desc[w.queue] + w.desc;
			addr = &s->addr;
			len = &s->len;
			flags = &s->flags;
			index = &s->next;
		}
		/* Relaxed atomics: the app sees torn-free values changing at any moment. */
		switch (w.field) {
		case HU_FLIP_ADDR:
			__atomic_store_n(addr, htole64(w.value), __ATOMIC_RELAXED);
			break;
		case HU_FLIP_LEN:
			__atomic_store_n(len, htole32((uint32_t)w.value), __ATOMIC_RELAXED);
			break;
		case HU_FLIP_FLAGS:
			__atomic_store_n(flags, htole16((uint16_t)(w.value | bits)),
				__ATOMIC_RELAXED);
			break;
		case HU_FLIP_INDEX:
			__atomic_store_n(index, htole16((uint16_t)w.value), __ATOMIC_RELAXED);
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
	unsigned int i;

	if (!fresh_attacker(what, NULL)) {
		case_end(what);
		return;
	}
	f.desc[0] = packed ? (void *)g.v.vq[VFE_VSOCK_RX].pdesc : (void *)g.v.vq[VFE_VSOCK_RX].desc;
	f.desc[1] = packed ? (void *)g.v.vq[VFE_VSOCK_TX].pdesc : (void *)g.v.vq[VFE_VSOCK_TX].desc;
	for (i = 0; i < 8; i++)
		f.good_gpa[i] = i < 4 ? g.tx_gpa[i * 8] : g.rx_gpa[i * 8];
	if (!tap_ok(pthread_create(&f.th, NULL, flip_main, &f) == 0, "%s: thread", what)) {
		case_end(what);
		return;
	}
	sent = rg_request_storm(&g, &next_gport, NO_LISTENER, 1500);
	f.stop = true;
	pthread_join(f.th, NULL);
	tap_diag("%s: %llu flips, %llu packets sent, %llu completed, %u rx packets, "
		"%llu bad used ids", what, (unsigned long long)f.flips, (unsigned long long)sent,
		(unsigned long long)g.tx_completed, g.nlog, (unsigned long long)g.bad_used);
	tap_ok(ops_tel_u64(&env.o, "/vsock/vms", "3.cid") == 3, "%s: the app still answers",
		what);
	if (benign) {
		unsigned int rst = 0;

		/* Whatever length each walk saw, every packet was valid: each gets its RST. */
		RG_WAIT(&g, g.tx_completed == sent + 1 && g.nlog == sent + 1, MS);
		for (i = 0; i < g.nlog; i++)
			rst += g.log[i].p.op == VIRTIO_VSOCK_OP_RST;
		tap_ok(!ops_log_has(&env.o, mark, "queue stopped") && g.tx_completed == sent + 1 &&
			rst == sent + 1 && g.bad_used == 0,
			"%s: no queue stopped, every packet answered (%u RSTs)", what, rst);
	} else if (ops_log_has(&env.o, mark, "queue stopped")) {
		tap_diag("%s: %s", what, ops_log_has(&env.o, mark, "VM cid 3: tx queue stopped") ?
			"tx queue broken" : "rx queue broken");
	}
	tap_ok(!ops_log_has(&env.o, mark, "VM cid 5"), "%s: nothing about VM 5 in the log",
		what);
	case_end(what);
}

int
main(void)
{
	const char *layout = getenv("HOSTILE_RING");
	unsigned int i;
	int status, l3, l5;

	packed = layout != NULL && strcmp(layout, "packed") == 0;
	if (!tap_ok(layout == NULL || packed || strcmp(layout, "split") == 0,
			"HOSTILE_RING is split or packed (%s)", layout ? layout : "unset: split"))
		return tap_done();
	next_gport = packed ? 50000 : 20000;
	if (!tap_ok(hu_start(&env) == 0, "app started with VM 3 and VM 5")) {
		tap_diag("%s", env.why);
		hu_stop(&env, true);
		return tap_done();
	}
	tap_diag("VM 3 on %s rings, VM 5 on %s rings", packed ? "packed" : "split",
		env.peer.v.vq[0].packed ? "packed" : "split");
	if (fresh_attacker("before any attack", NULL)) {
		l3 = hu_vm_lcore(&env, 3);
		l5 = hu_vm_lcore(&env, 5);
		tap_ok(l3 >= 0 && l3 == l5, "VM 3 and VM 5 share worker lcore %d (and %d)", l3,
			l5);
	}
	case_end("before any attack");

	/* The packed layout's own cases: wrap bits, buffer ids, its indirect tables. */
	if (packed) {
		/* First: the app logs only the VM's first short packet. */
		test_tx_write_only();
		test_rx_read_only();
	}
	test_zero_len();
	if (packed) {
		test_head_not_avail(false);
		test_head_not_avail(true);
		test_id_first_only();
		test_indirect_next_ignored();
	}
	for (i = 0; i < sizeof(tx_cases) / sizeof(tx_cases[0]); i++)
		if (runs_here(&tx_cases[i]))
			run_tx_case(&tx_cases[i]);
	for (i = 0; i < sizeof(rx_cases) / sizeof(rx_cases[0]); i++)
		if (runs_here(&rx_cases[i]))
			run_rx_case(&rx_cases[i]);
	test_rewrite(true);
	test_rewrite(false);

	status = hu_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
