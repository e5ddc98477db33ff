/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the connection table (the proto room: conn.c, conn_host.c,
 * conn_table.c) against the fake endpoint room (tests/common/fake_ep.c). The input is a
 * hostile guest and a host side in turns: guest packets of every op and both socket types,
 * with edge header fields, windows and payload layouts, presented in bursts as the dataplane
 * does (one that cannot be taken comes again first); rx buffers of any size drained; host
 * ends that accept, refuse, take a little or nothing, offer bytes and messages, end, hang up,
 * fail, reset; host programs and other guests connecting; pipes whose far side takes our
 * mbufs late; service rounds with a simulated clock; the guest leaving and coming back.
 *
 * After every step the model checks:
 * - credit: what we hold of a connection's guest bytes is exactly what its end has not
 *   taken, never over the buf_alloc we advertise; fwd_cnt is what the end took; every RW to
 *   the guest fits the window of a header the guest sent;
 * - bytes: each end takes the guest's stream of that connection in order, each RW brings
 *   the end's stream in order; SEQPACKET pieces never cross a message's end and carry EOM
 *   exactly where one ends, both ways; no RW after the guest's SHUTDOWN(RCV);
 * - states and lists: each slot in one state, on exactly the lists its bits say, with the
 *   lists each state allows, in the hash under its address, its end open exactly when the
 *   state has one; free slots clean; timers in deadline order;
 * - resources: held mbufs are the queues' and the pipes', the pool's in-use count is the
 *   table's; every open end belongs to one connection;
 * - counters: packets and bytes both ways, malformed headers, bytes taken and read.
 * At the end every connection is closed (the guest resets each, timers expire) and the
 * pool, the ends and the table are back where they started.
 *
 * The fake endpoint keeps the facade's contract as the real rooms do (fake_ep.h) and aborts
 * on a call for an end already let go of. FUZZ_CONN_TRACE=1 prints each step.
 *
 * Input layout (little endian, missing bytes read as zero):
 *   u8 cfg        bit0 SEQPACKET, bit1 small mbufs, bit2 no guest at start, bit3 pipes
 *                 hold our mbufs, bit4 a listener, bit5 small buf_alloc
 *   u8 max_conns  1 + v % 8
 *   u16 buf_alloc 1 + v with bit5, else the default
 *   u8 quota      mbuf quota: 0 none, else 2 + v % 96
 *   u8 timeouts   three of them: 1 + v ms each
 *   u8 slots      a holding pipe's mbufs, 1 + v % 32
 *   u8 gbuf       the guest's own buf_alloc (its window), picked from a few
 *   then ops: u8 opcode % OP_MAX and its arguments (see run_op()).
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "conn_table.h"
#include "fake_ep.h"
#include "fuzz_input.h"
#include "iov.h"
#include "vsock_pkt.h"

#define MAX_OPS		512
#define GUEST_CID	3
#define OTHER_CID	5		/* a guest ours may reach: pipes */
#define NATIVE_PORT	7000		/* a native listener on the host: pipes */
#define NATIVE_SRC_PORT	(1u << 31)	/* a native program's first source port (ep_native.c) */
#define TXQ_MAX		32		/* guest packets waiting in its tx ring */
#define PIECES_MAX	16
#define FLOWS_MAX	256
#define TOKENS_MAX	256
#define BOUNDS_MAX	128
#define MSGS_MAX	32		/* SEQPACKET message ends the guest sent, not taken yet */
#define RX_MAX		16
#define FLOOD_MAX	300
#define POOL_BIG	512
#define POOL_SMALL	1024

static const uint32_t gports[4] = { 1024, 1025, 40000, UINT32_MAX };
static const uint32_t hports[4] = { 5000, 5001, NATIVE_PORT, 1u << 30 };
static const uint64_t cids[4] = { VSOCK_HOST_CID, OTHER_CID, 9, GUEST_CID };
static const uint32_t guest_bufs[8] = { 64 * 1024, 256 * 1024, 4096, 1, 0, 100000, 65535,
					UINT32_MAX };

/* A connection's address as the guest sees it. */
struct key {
	uint32_t gport, hport;
	uint64_t peer;
};

/* What the guest knows of one address. */
struct gflow {
	struct key k;
	uint32_t tx_off;	/* stream offset of its next RW payload */
	uint32_t rx_off;	/* bytes it received, and read at once */
	uint32_t ba, fwd;	/* its window in the last packet taken */
	bool pend;		/* a packet presented and not taken yet, and its window */
	uint32_t pba, pfwd;
	bool rcv_shut;		/* it said SHUTDOWN(RCV): no more data for it */
	/* Its REQUESTs put in the ring and taken: equal when no new instance is on its way. */
	uint32_t req_queued, req_taken;
	/*
	 * SEQPACKET: where the messages of its latest instance end in its stream; lost: more
	 * than MSGS_MAX.
	 */
	unsigned int nmsg, head;
	bool lost;
	uint32_t msg_end[MSGS_MAX];
};

/* One connection instance, by its endpoint token: where its stream to the guest is. */
struct tok {
	uint64_t token;
	struct key k;
	uint64_t delivered;	/* of the end's stream, in RWs the guest received */
	/*
	 * A host connect whose address the guest had packets queued for already: what it
	 * takes of them was written for an earlier instance, its offsets unknown.
	 */
	bool unverified;
	unsigned int nb, head;	/* message ends offered and not delivered past yet */
	uint64_t bound[BOUNDS_MAX];
};

/* A packet in the guest's tx ring. */
struct gpkt {
	struct virtio_vsock_hdr raw;
	struct iovec iov[PIECES_MAX];
	unsigned int cnt;
	uint8_t *buf;
	int flow;		/* index in S.flows */
	bool valid;
	uint16_t op;
	uint32_t ba, fwd;
};

/* Bytes a buffer holds before anything is written to it. */
#define UNTOUCHED	0xa5
#define BUF_MAX		(VSOCK_HDR_SIZE + VSOCK_PKT_MAX_PAYLOAD + 256)

static struct rte_mempool *pool_big, *pool_small;
static uint8_t untouched[BUF_MAX];
/* FUZZ_CONN_TRACE=1: each step and packet on stderr, to read a failing input. */
static bool trace;

#define TRACE(...) do {					\
	if (trace)					\
		fprintf(stderr, __VA_ARGS__);		\
} while (0)
static struct rte_ring *incoming;
static uint64_t hz;

static struct {
	struct conn_table *t;
	struct rte_mempool *pool;
	uint32_t buf_alloc;
	uint32_t guest_buf;
	bool seqpacket;
	bool attached;
	/*
	 * Simulated time: how far the input moved the clock ahead of the TSC. The table sets
	 * its deadlines from the TSC itself (timer_set()), so a round's clock is the TSC plus
	 * this, and only the input's own steps let a deadline pass.
	 */
	uint64_t skew;
	unsigned int in_use0;

	unsigned int nflows;	/* the 64 fixed addresses, then host-initiated ones */
	struct gflow flows[FLOWS_MAX];

	unsigned int ntxq;
	struct gpkt txq[TXQ_MAX];

	/* What the guest saw: packets and bytes both ways, malformed ones it sent. */
	uint64_t pkts_taken, pkts_bad, rx_pkts, rx_bytes;

	unsigned int ntoks;	/* recorded, a ring of TOKENS_MAX */
	uint64_t slot_token[16];
	/* Not cleared for each input: read only as far as ntoks says. */
	struct tok toks[TOKENS_MAX];
} S;

/* The clock of the table's rounds (see S.skew). */
static uint64_t now(void)
{
	return rte_get_tsc_cycles() + S.skew;
}

/* ---- byte patterns: a stream's byte at an offset, per address or per end ---- */

static uint32_t key_salt(const struct key *k)
{
	return k->gport * 0x9e3779b1u ^ k->hport * 0x85ebca6bu ^ (uint32_t)k->peer * 0xc2b2ae35u;
}

static uint8_t pat(uint32_t salt, uint64_t off)
{
	uint32_t x = (uint32_t)off * 0x2545f491u + salt + (uint32_t)(off >> 16) * 0x9e37u;

	return (uint8_t)(x >> 24 ^ x >> 13);
}

/* @p len bytes at @p p are those of stream @p salt from @p off. */
static void check_pat(const uint8_t *p, size_t len, uint32_t salt, uint64_t off)
{
	static uint8_t want[BUF_MAX];
	size_t i, done, l;

	for (done = 0; done < len; done += l) {
		l = RTE_MIN(len - done, sizeof(want));
		for (i = 0; i < l; i++)
			want[i] = pat(salt, off + done + i);
		CHECK(memcmp(p + done, want, l) == 0);
	}
}

static bool key_eq(const struct key *a, const struct key *b)
{
	return a->gport == b->gport && a->hport == b->hport && a->peer == b->peer;
}

static struct tok *tok_find(uint64_t token);

static struct gflow *flow_find(const struct key *k);

/* An end took guest bytes: those of its connection's stream at that offset, in order. */
static void took(struct fake_end *f, size_t off, const uint8_t *p, size_t len, bool eom)
{
	struct conn *c = conn_of_token(S.t, f->token);
	struct tok *t = tok_find(f->token);
	struct gflow *fl;
	struct key k;

	CHECK(c != NULL && c->state == CS_ESTABLISHED);
	k = (struct key){ c->guest_port, c->host_port, c->peer_cid };
	if (t && t->unverified)
		return;
	check_pat(p, len, key_salt(&k), off);
	fl = flow_find(&k);
	/*
	 * The message ends known are those of the guest's latest instance; while a REQUEST of
	 * a newer one waits in its ring, the connection taking may be the one before.
	 */
	if (c->type != VIRTIO_VSOCK_TYPE_SEQPACKET || !fl || fl->lost ||
	    fl->req_queued != fl->req_taken)
		return;
	/*
	 * A piece never crosses the end of a message, and only a mark ends one. A piece of a
	 * message whose end the guest has not sent yet may go ahead of it (a pipe's far side
	 * waits for the mark), without one; so may the last piece of a message whose end came
	 * in an empty packet, its mark then following alone. An end that takes whole messages
	 * gets no empty ones.
	 */
	while (fl->nmsg && (fl->msg_end[fl->head] < off ||
			    (fl->msg_end[fl->head] == off && len && (c->ep.caps & EP_CAP_WHOLE_MSG)))) {
		fl->head = (fl->head + 1) % MSGS_MAX;
		fl->nmsg--;
	}
	if (fl->nmsg == 0) {
		CHECK(!eom);
		return;
	}
	CHECK(off + len <= fl->msg_end[fl->head]);
	if (eom) {
		CHECK(off + len == fl->msg_end[fl->head]);
		fl->head = (fl->head + 1) % MSGS_MAX;
		fl->nmsg--;
	}
}

static uint32_t end_salt(uint64_t token)
{
	return (uint32_t)(token * 0x9e3779b97f4a7c15ull >> 32);
}

/* An end's stream to the guest: a pattern of its connection's token. */
static void fill(struct fake_end *f, size_t off, uint8_t *dst, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] = pat(end_salt(f->token), off + i);
}

/* ---- the guest's addresses ---- */

static struct gflow *flow_find(const struct key *k)
{
	unsigned int i;

	for (i = 0; i < S.nflows; i++)
		if (key_eq(&S.flows[i].k, k))
			return &S.flows[i];
	return NULL;
}

/* A new instance's stream from the guest: from offset 0, no message sent yet. */
static void flow_restart(struct gflow *fl)
{
	fl->tx_off = 0;
	fl->nmsg = 0;
	fl->head = 0;
	fl->lost = false;
}

/*
 * An address the host side opened a connection on, a new instance: its window unknown
 * until the guest's next packet for it, nothing sent either way yet.
 */
static struct gflow *flow_learn(const struct key *k)
{
	struct gflow *fl = flow_find(k);

	if (!fl) {
		/* Host connects stop before the table is full (room_for_connect()). */
		CHECK(S.nflows < FLOWS_MAX);
		fl = &S.flows[S.nflows++];
		fl->k = *k;
	}
	flow_restart(fl);
	fl->rx_off = 0;
	fl->ba = 0;
	fl->fwd = 0;
	fl->rcv_shut = false;
	return fl;
}

static struct gflow *flow_pick(uint8_t sel)
{
	if ((sel & 0x80) && S.nflows > 64)
		return &S.flows[64 + sel % (S.nflows - 64)];
	return &S.flows[sel % 64];
}

/* ---- the connection instances, by endpoint token ---- */

static struct tok *tok_find(uint64_t token)
{
	unsigned int i, n = RTE_MIN(S.ntoks, (unsigned int)TOKENS_MAX);

	for (i = 1; i <= n; i++) {
		struct tok *k = &S.toks[(S.ntoks - i) % TOKENS_MAX];

		if (k->token == token)
			return k;
	}
	return NULL;
}

/* The newest instance of address @p k. */
static struct tok *tok_of_key(const struct key *k)
{
	unsigned int i, n = RTE_MIN(S.ntoks, (unsigned int)TOKENS_MAX);

	for (i = 1; i <= n; i++) {
		struct tok *t = &S.toks[(S.ntoks - i) % TOKENS_MAX];

		if (key_eq(&t->k, k))
			return t;
	}
	return NULL;
}

/*
 * A connection seen for the first time. One the host side opened (in CS_REQUEST: one the
 * guest opened never is) starts a new instance of its address for the guest.
 */
static void tok_record(const struct conn *c, uint64_t token)
{
	struct tok *t = &S.toks[S.ntoks++ % TOKENS_MAX];
	unsigned int i;

	t->token = token;
	t->k = (struct key){ c->guest_port, c->host_port, c->peer_cid };
	t->delivered = 0;
	t->nb = 0;
	t->head = 0;
	t->unverified = false;
	if (c->state == CS_REQUEST) {
		struct gflow *fl = flow_learn(&t->k);

		for (i = 0; i < S.ntxq; i++)
			t->unverified |= S.txq[i].flow == (int)(fl - S.flows);
	}
}

static struct fake_end *end_of_token(uint64_t token)
{
	unsigned int i;

	for (i = 0; i < FAKE_ENDS; i++)
		if ((fake_ends[i].used || fake_ends[i].closed) && fake_ends[i].token == token)
			return &fake_ends[i];
	return NULL;
}

/* ---- invariants ---- */

static unsigned int list_count(const struct conn_list *l, const struct conn *c, size_t link)
{
	const struct conn *x;
	unsigned int n = 0;

	for (x = TAILQ_FIRST(l); x; x = *(struct conn *const *)((const char *)x + link))
		n += x == c;
	return n;
}

#define ON(list, c, field) list_count(&S.t->list, c, offsetof(struct conn, field.tqe_next))

/* Every mbuf holds bytes, but a SEQPACKET message's end that came alone (@p marks). */
static void check_mq(const struct mq *q, bool marks)
{
	const struct rte_mbuf *m, *last = NULL;
	uint32_t bytes = 0, nb = 0;

	for (m = q->head; m; m = m->next) {
		CHECK(m->data_len > 0 || (marks && (m->packet_type & MQ_EOM)));
		bytes += m->data_len;
		nb++;
		last = m;
		CHECK(nb <= 1u << 20);
	}
	CHECK(q->tail == last && bytes == q->bytes && nb == q->nb);
}

static void check_conn(const struct conn *c, uint32_t *to_guest_nb, uint32_t *to_host_nb,
		       unsigned int *open_eps)
{
	const struct conn_table *t = S.t;
	bool open = ep_is_open(&c->ep);
	unsigned int i;

	/* The work and quota lists share a link: one of them at most. */
	CHECK(!((c->lists & L_WORK) && (c->lists & L_QWAIT)));
	CHECK(ON(work, c, work_link) == !!(c->lists & L_WORK));
	CHECK(ON(qwait, c, work_link) == !!(c->lists & L_QWAIT));
	CHECK(ON(ctl, c, ctl_link) == !!(c->lists & L_CTL));
	CHECK(ON(data, c, data_link) == !!(c->lists & L_DATA));
	CHECK(ON(timers, c, timer_link) == !!(c->lists & L_TIMER));
	CHECK(ON(polled, c, poll_link) == !!(c->lists & L_POLLED));
	if (c->state == CS_FREE) {
		CHECK(c->lists == 0 && !c->hashed && !open && c->to_host.nb == 0 &&
		      c->to_guest.nb == 0);
		return;
	}
	check_mq(&c->to_host, c->type == VIRTIO_VSOCK_TYPE_SEQPACKET);
	check_mq(&c->to_guest, false);
	*to_guest_nb += c->to_guest.nb;
	*to_host_nb += c->to_host.nb + (open && c->ep.kind == EP_PIPE ? c->ep.held : 0);
	CHECK(!!(c->lists & L_CTL) == (c->ctl_pending != 0));
	CHECK(!!(c->lists & L_POLLED) == (open && (c->ep.caps & EP_CAP_POLLED)));
	CHECK(!(c->lists & L_TIMER) || c->state == CS_LINE || c->state == CS_REQUEST ||
	      c->state == CS_CLOSING || c->state == CS_ACCEPT_WAIT);
	CHECK(!(c->lists & L_DATA) || c->state == CS_ESTABLISHED || c->state == CS_CLOSING);
	if (c->hashed)
		CHECK(conn_lookup(t, c->guest_port, c->host_port, c->peer_cid) == c);
	if (open) {
		struct fake_end *f = fake_end_of(&c->ep);

		CHECK(f != NULL && f->used && !f->closed && f->token == conn_token(t, c));
		(*open_eps)++;
	}
	switch (c->state) {
	case CS_LINE:
		CHECK(!c->hashed && open && (c->lists & L_TIMER));
		break;
	case CS_REQUEST:
		CHECK(c->hashed && open && (c->lists & L_TIMER) && c->from_guest_cnt == 0);
		break;
	case CS_ACCEPT_WAIT:
		CHECK(c->hashed && open && (c->lists & L_TIMER) && c->from_guest_cnt == 0 &&
		      c->to_guest.nb == 0);
		break;
	case CS_ESTABLISHED:
		CHECK(c->hashed && open && !(c->lists & L_TIMER));
		/* Credit: what we hold is what the end has not taken, within our buf_alloc. */
		CHECK(c->from_guest_cnt - c->fwd_cnt == c->to_host.bytes);
		CHECK(c->to_host.bytes <= S.buf_alloc);
		CHECK(c->fwd_cnt == (uint32_t)fake_end_of(&c->ep)->taken);
		break;
	case CS_CLOSING:
		CHECK(c->hashed && !open && (c->lists & L_TIMER) && c->to_host.nb == 0);
		break;
	case CS_DEAD:
		CHECK(c->hashed && !open && c->ctl_pending == CTL_RST && c->to_host.nb == 0 &&
		      c->to_guest.nb == 0 && !(c->lists & (L_DATA | L_TIMER)));
		break;
	default:
		CHECK(0);
	}
	/* Record the instance: its address and token. */
	i = (unsigned int)(c - t->conns);
	if (c->hashed && open && S.slot_token[i] != conn_token(t, c)) {
		S.slot_token[i] = conn_token(t, c);
		tok_record(c, S.slot_token[i]);
	}
}

static void check_table(void)
{
	const struct conn_table *t = S.t;
	uint32_t i, used = 0, to_guest_nb = 0, to_host_nb = 0;
	unsigned int open_eps = 0, polled = 0;
	const struct conn *c;
	uint64_t bad = 0;
	bool seen[16] = { false };

	for (i = 0; i < t->conf.max_conns; i++) {
		c = &t->conns[i];
		used += c->state != CS_FREE;
		check_conn(c, &to_guest_nb, &to_host_nb, &open_eps);
	}
	CHECK(used == t->nb_used && used + t->nb_free == t->conf.max_conns);
	for (i = 0; i < t->nb_free; i++) {
		CHECK(t->free_idx[i] < t->conf.max_conns && !seen[t->free_idx[i]]);
		seen[t->free_idx[i]] = true;
		CHECK(t->conns[t->free_idx[i]].state == CS_FREE);
	}
	TAILQ_FOREACH(c, &t->polled, poll_link)
		polled++;
	CHECK(polled == t->nb_polled);
	TAILQ_FOREACH(c, &t->timers, timer_link)
		CHECK(!TAILQ_NEXT(c, timer_link) ||
		      TAILQ_NEXT(c, timer_link)->deadline >= c->deadline);
	CHECK(t->rst_count <= RST_QUEUE_SIZE && t->rst_head < RST_QUEUE_SIZE);
	/* mbufs: the queues' and the pipes'; the pool's in-use count is the table's. */
	CHECK(t->to_guest_held == to_guest_nb && t->to_host_held == to_host_nb);
	CHECK(rte_mempool_in_use_count(S.pool) ==
	      S.in_use0 + t->to_guest_held + t->to_host_held - fake_freed_unpolled());
	CHECK(open_eps == fake_open_ends());
	/* Counters against what the guest and the ends saw. */
	for (i = 0; i < VSOCK_PKT_ERR_MAX; i++)
		bad += t->stats.pkt_err[i];
	CHECK(bad == S.pkts_bad);
	CHECK(t->stats.from_guest_pkts == S.pkts_taken);
	CHECK(t->stats.to_guest_pkts == S.rx_pkts && t->stats.to_guest_bytes == S.rx_bytes);
	CHECK(t->stats.host_written_bytes == fake_total_taken);
	CHECK(t->stats.host_read_bytes == fake_total_read);
	CHECK(conn_count(t) == t->nb_used);
	CHECK(!conn_table_quiet(t) || !conn_has_output(t));
}

/* ---- the guest's packets ---- */

static void txq_drop(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		free(S.txq[i].buf);
	memmove(S.txq, S.txq + n, sizeof(S.txq[0]) * (S.ntxq - n));
	S.ntxq -= n;
}

/* The packets taken: their windows are the guest's now; the next one's may be. */
static void taken(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct gpkt *p = &S.txq[i];
		struct gflow *fl = &S.flows[p->flow];

		S.pkts_taken++;
		if (!p->valid) {
			S.pkts_bad++;
			continue;
		}
		if (p->op == VIRTIO_VSOCK_OP_REQUEST) {
			fl->rx_off = 0;
			fl->rcv_shut = false;
			fl->req_taken++;
		}
		if (p->op == VIRTIO_VSOCK_OP_SHUTDOWN &&
		    (le32toh(p->raw.flags) & VIRTIO_VSOCK_SHUTDOWN_RCV))
			fl->rcv_shut = true;
		fl->ba = p->ba;
		fl->fwd = p->fwd;
		fl->pend = false;
	}
	if (n < S.ntxq && S.txq[n].valid) {
		struct gflow *fl = &S.flows[S.txq[n].flow];

		fl->pend = true;
		fl->pba = S.txq[n].ba;
		fl->pfwd = S.txq[n].fwd;
	}
	txq_drop(n);
}

/* The dataplane's burst: up to @p max packets of the tx ring, as many as are taken. */
static void tx(unsigned int max)
{
	struct virtio_vsock_hdr raw[TXQ_MAX];
	struct iovec iov[TXQ_MAX * PIECES_MAX];
	unsigned int cnt[TXQ_MAX], i, n = RTE_MIN(max, S.ntxq), niov = 0, got;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		raw[i] = S.txq[i].raw;
		cnt[i] = S.txq[i].cnt;
		memcpy(&iov[niov], S.txq[i].iov, sizeof(iov[0]) * cnt[i]);
		niov += cnt[i];
	}
	got = conn_from_guest_run(S.t, raw, iov, cnt, n);
	TRACE("tx: %u of %u taken\n", got, n);
	CHECK(got <= n);
	taken(got);
}

/* Payload @p total bytes (@p len of them the stream's) in pieces as @p mode says. */
static void payload(struct gpkt *p, uint32_t salt, uint32_t off, uint32_t len, uint32_t total,
		    uint8_t mode)
{
	uint32_t i, pos = 0, n = mode % 4 == 3 ? PIECES_MAX : 1 + (mode >> 2) % 3;

	p->buf = malloc(total ? total : 1);
	CHECK(p->buf != NULL);
	for (i = 0; i < total; i++)
		p->buf[i] = i < len ? pat(salt, off + i) : 0xee;
	p->cnt = 0;
	/* Guest buffers are never empty: no empty piece. */
	for (i = 0; i < n && pos < total; i++) {
		uint32_t even = (total - pos) / (n - i), less = (mode >> 4) % 7;
		uint32_t l = i + 1 == n ? total - pos : even > less ? even - less : 1;

		p->iov[p->cnt].iov_base = p->buf + pos;
		p->iov[p->cnt++].iov_len = l;
		pos += l;
	}
}

static uint32_t in_flags(struct input *in, uint8_t m, uint16_t op, uint16_t type)
{
	if (m == 3)
		return in_u32(in);
	if (op == VIRTIO_VSOCK_OP_SHUTDOWN)
		return m + 1u;
	if (op == VIRTIO_VSOCK_OP_RW && type == VIRTIO_VSOCK_TYPE_SEQPACKET)
		return m == 0 ? 0 : m == 1 ? VIRTIO_VSOCK_SEQ_EOM :
		       VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR;
	return 0;
}

/* A packet into the guest's tx ring (presented first if the ring is full). */
static void g_pkt(struct input *in)
{
	uint8_t opsel = in_u8(in), fsel = in_u8(in), kind = in_u8(in);
	uint16_t v = in_u16(in);
	uint8_t wmode = in_u8(in), pmode = in_u8(in);
	struct gflow *fl = flow_pick(fsel);
	const struct vsock_pkt_policy pol = { .guest_cid = GUEST_CID, .seqpacket = S.seqpacket };
	uint16_t op = opsel % 9, type = kind & 2 ? 7 : kind & 1 ? VIRTIO_VSOCK_TYPE_SEQPACKET :
			VIRTIO_VSOCK_TYPE_STREAM;
	uint32_t len, total, ba, fwd;
	struct vsock_hdr h;
	struct gpkt *p;

	if (S.ntxq == TXQ_MAX)
		tx(TXQ_MAX);
	if (S.ntxq == TXQ_MAX)
		return;	/* the ring is full and the head cannot be taken: the guest waits */
	if (op == VIRTIO_VSOCK_OP_RW)
		len = kind & 0x10 ? VSOCK_PKT_MAX_PAYLOAD + (v & 0xff) : v;
	else
		len = kind & 0x20 ? 1 + v % 64 : 0;
	switch (wmode % 4) {
	case 0:		/* honest: its buffer, and all it received is read */
		ba = S.guest_buf;
		fwd = fl->rx_off;
		break;
	case 1:		/* no room */
		ba = 0;
		fwd = fl->rx_off;
		break;
	case 2:
		ba = in_u32(in);
		fwd = in_u32(in);
		break;
	default:	/* stale: it read less than it received */
		ba = S.guest_buf;
		fwd = fl->rx_off - (wmode >> 2) * 97u;
		break;
	}
	switch (pmode % 3) {
	case 0:
		total = len;
		break;
	case 1:		/* truncated */
		total = len ? len - 1 - RTE_MIN(len - 1, (uint32_t)(pmode >> 2)) : 0;
		break;
	default:	/* more than len */
		total = len + 1 + (pmode >> 2);
		break;
	}
	h = (struct vsock_hdr){
		.src_cid = kind & 0x40 ? GUEST_CID + 1 : GUEST_CID, .dst_cid = fl->k.peer,
		.src_port = fl->k.gport, .dst_port = fl->k.hport, .len = len, .type = type,
		.op = op, .flags = in_flags(in, (kind >> 2) & 3, op, type), .buf_alloc = ba,
		.fwd_cnt = fwd,
	};
	p = &S.txq[S.ntxq++];
	vsock_pkt_encode(&h, &p->raw);
	p->flow = (int)(fl - S.flows);
	p->op = op;
	p->ba = ba;
	p->fwd = fwd;
	p->valid = vsock_pkt_validate(&h, total + VSOCK_HDR_SIZE, &pol) == VSOCK_PKT_OK;
	TRACE("txq: op %u %u:%u -> %lu:%u type %u len %u/%u flags %x ba %u fwd %u%s\n", op,
	      (unsigned int)h.src_cid, h.src_port, (unsigned long)h.dst_cid, h.dst_port, type,
	      len, total, h.flags, ba, fwd, p->valid ? "" : " (malformed)");
	if (p->valid && op == VIRTIO_VSOCK_OP_REQUEST) {
		flow_restart(fl);
		fl->req_queued++;
	}
	payload(p, key_salt(&fl->k), fl->tx_off, len, total, pmode);
	if (p->valid && op == VIRTIO_VSOCK_OP_RW)
		fl->tx_off += len;
	if (p->valid && op == VIRTIO_VSOCK_OP_RW && type == VIRTIO_VSOCK_TYPE_SEQPACKET &&
	    (h.flags & VIRTIO_VSOCK_SEQ_EOM)) {
		if (fl->nmsg == MSGS_MAX)
			fl->lost = true;
		else
			fl->msg_end[(fl->head + fl->nmsg++) % MSGS_MAX] = fl->tx_off;
	}
}

/* Many packets no connection owns (RSTs owed), straight to the table after the ring. */
static void g_flood(struct input *in)
{
	uint16_t n = in_u16(in) % FLOOD_MAX, op = in_u8(in) % 9;
	struct vsock_hdr h = {
		.src_cid = GUEST_CID, .dst_cid = cids[in_u8(in) % 4], .src_port = in_u32(in),
		.dst_port = 9999, .type = VIRTIO_VSOCK_TYPE_STREAM, .op = op,
	};
	const struct vsock_pkt_policy pol = { .guest_cid = GUEST_CID, .seqpacket = S.seqpacket };
	bool valid = vsock_pkt_validate(&h, VSOCK_HDR_SIZE, &pol) == VSOCK_PKT_OK;
	struct virtio_vsock_hdr raw[16];
	struct iovec none[1];
	unsigned int cnt[16] = { 0 }, i, k;

	tx(TXQ_MAX);
	if (S.ntxq)
		return;
	/* A REQUEST would open a connection the model does not know of. */
	if (op == VIRTIO_VSOCK_OP_REQUEST)
		return;
	for (i = 0; i < 16; i++)
		vsock_pkt_encode(&h, &raw[i]);
	while (n) {
		k = conn_from_guest_run(S.t, raw, none, cnt, RTE_MIN(n, 16u));
		CHECK(k == RTE_MIN(n, 16u));
		S.pkts_taken += k;
		S.pkts_bad += valid ? 0 : k;
		n -= (uint16_t)k;
	}
}

/* ---- the guest's rx buffers ---- */

static uint32_t credit(uint32_t ba, uint32_t fwd, uint32_t sent)
{
	uint32_t in_flight = sent - fwd;

	return in_flight >= ba ? 0 : ba - in_flight;
}

/* An RW the guest received: within a window it gave, the end's bytes in order. */
static void rx_rw(const struct vsock_hdr *h, const uint8_t *data)
{
	struct key k = { h->dst_port, h->src_port, h->src_cid };
	struct gflow *fl = flow_find(&k);
	struct tok *t = tok_of_key(&k);
	struct fake_end *f;
	bool seq = h->type == VIRTIO_VSOCK_TYPE_SEQPACKET;

	CHECK(h->len > 0);
	CHECK(fl != NULL);
	/* The guest said it reads no more: no more data for it (spec: SHUTDOWN_RCV). */
	CHECK(!fl->rcv_shut);
	CHECK(h->len <= RTE_MAX(credit(fl->ba, fl->fwd, fl->rx_off),
				fl->pend ? credit(fl->pba, fl->pfwd, fl->rx_off) : 0));
	fl->rx_off += h->len;
	CHECK(t != NULL);
	check_pat(data, h->len, end_salt(t->token), t->delivered);
	f = end_of_token(t->token);
	if (f)
		CHECK(t->delivered + h->len <= f->read);
	if (!seq) {
		CHECK(h->flags == 0);
	} else {
		/* A piece never crosses a message's end, and says so when it is the last. */
		while (t->nb && t->bound[t->head] <= t->delivered) {
			t->head = (t->head + 1) % BOUNDS_MAX;
			t->nb--;
		}
		CHECK(t->nb != 0);
		CHECK(t->delivered + h->len <= t->bound[t->head]);
		CHECK(!!(h->flags & VIRTIO_VSOCK_SEQ_EOM) ==
		      (t->delivered + h->len == t->bound[t->head]));
		CHECK((h->flags & ~(VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR)) == 0);
		CHECK(!(h->flags & VIRTIO_VSOCK_SEQ_EOR) || (h->flags & VIRTIO_VSOCK_SEQ_EOM));
	}
	t->delivered += h->len;
}

/* One packet the guest received in a buffer of @p cap bytes, @p n of them written. */
static void rx_one(const uint8_t *buf, uint32_t n, uint32_t cap)
{
	struct vsock_hdr h;

	CHECK(n >= VSOCK_HDR_SIZE && n <= cap);
	vsock_pkt_parse(buf, n, &h);
	CHECK(n == VSOCK_HDR_SIZE + h.len);
	CHECK(h.dst_cid == GUEST_CID && h.buf_alloc == S.buf_alloc);
	S.rx_pkts++;
	S.rx_bytes += h.len;
	TRACE("rx: op %u %lu:%u -> %u len %u flags %x type %u ba %u fwd %u\n", h.op,
	      (unsigned long)h.src_cid, h.src_port, h.dst_port, h.len, h.flags, h.type,
	      h.buf_alloc, h.fwd_cnt);
	switch (h.op) {
	case VIRTIO_VSOCK_OP_RW:
		rx_rw(&h, buf + VSOCK_HDR_SIZE);
		break;
	case VIRTIO_VSOCK_OP_REQUEST:
		/* A host connect, learned when it opened. */
		CHECK(h.len == 0 && h.flags == 0 &&
		      flow_find(&(struct key){ h.dst_port, h.src_port, h.src_cid }));
		break;
	case VIRTIO_VSOCK_OP_RESPONSE:
	case VIRTIO_VSOCK_OP_RST:
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		CHECK(h.len == 0 && h.flags == 0);
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		CHECK(h.len == 0 && h.flags != 0 &&
		      (h.flags & ~(uint32_t)(VIRTIO_VSOCK_SHUTDOWN_RCV |
					     VIRTIO_VSOCK_SHUTDOWN_SEND)) == 0);
		break;
	default:
		CHECK(0);	/* we never send CREDIT_REQUEST or anything else */
	}
}

/*
 * One rx buffer: @p cap bytes of one exact-size allocation (a write past it is an ASan
 * report), handed over in pieces; a write into the wrong piece shows as misplaced bytes.
 */
struct rxbuf {
	struct iovec iov[PIECES_MAX];
	unsigned int cnt;
	uint32_t cap;
	uint8_t *mem;
};

/* Payload bytes one rx burst offers at most: a guest's ring of 64 KiB buffers, in part. */
#define RX_BYTES_MAX	(256u * 1024)

static uint32_t rx_cap(uint8_t mode, unsigned int i, struct input *in)
{
	switch (mode % 6) {
	case 0:
		return VSOCK_HDR_SIZE;
	case 1:
		return VSOCK_HDR_SIZE + 1 + (i * 7) % 64;
	case 2:
		return VSOCK_HDR_SIZE + 4096;
	case 3:
		return VSOCK_HDR_SIZE + VSOCK_PKT_MAX_PAYLOAD;
	case 4:
		return i % 3 == 0 ? VSOCK_HDR_SIZE : i % 3 == 1 ? VSOCK_HDR_SIZE + 4096 :
		       VSOCK_HDR_SIZE + VSOCK_PKT_MAX_PAYLOAD;
	default:
		return VSOCK_HDR_SIZE + in_u16(in);
	}
}

/* Buffer @p b of @p cap bytes, all UNTOUCHED, in pieces as @p split says. */
static void rxbuf_make(struct rxbuf *b, uint32_t cap, uint8_t split)
{
	uint32_t pos = 0, piece = split % 3 == 2 ? RTE_MAX(cap / PIECES_MAX + 1, 1u) :
			split % 3 == 1 ? 20 : cap;

	b->cap = cap;
	b->cnt = 0;
	b->mem = malloc(cap ? cap : 1);
	CHECK(b->mem != NULL);
	memset(b->mem, UNTOUCHED, cap);
	while (pos < cap) {
		uint32_t l = b->cnt + 1 == PIECES_MAX ? cap - pos : RTE_MIN(piece, cap - pos);

		b->iov[b->cnt].iov_base = b->mem + pos;
		b->iov[b->cnt++].iov_len = l;
		pos += l;
		if (split % 3 == 1)
			piece = cap;
	}
}

/* What came into @p b: @p n bytes, nothing past them. */
static void rxbuf_take(struct rxbuf *b, uint32_t n)
{
	CHECK(memcmp(b->mem + n, untouched, b->cap - n) == 0);
	if (n)
		rx_one(b->mem, n, b->cap);
	free(b->mem);
}

/* One rx burst of @p n buffers. @return the buffers filled. */
static unsigned int rx(unsigned int n, uint8_t mode, uint8_t split, struct input *in)
{
	struct rxbuf b[RX_MAX];
	struct iovec iov[RX_MAX * PIECES_MAX];
	unsigned int cnt[RX_MAX], i, k, niov = 0;
	uint32_t cap[RX_MAX], len[RX_MAX], bytes;

	for (i = 0, bytes = 0; i < n; i++) {
		uint32_t c = rx_cap(mode, i, in);

		if (i && bytes + c > RX_BYTES_MAX) {
			n = i;
			break;
		}
		bytes += c;
		rxbuf_make(&b[i], c, split);
		cap[i] = b[i].cap;
		cnt[i] = b[i].cnt;
		memcpy(&iov[niov], b[i].iov, sizeof(iov[0]) * b[i].cnt);
		niov += b[i].cnt;
	}
	k = conn_to_guest_burst(S.t, iov, cnt, cap, n, len);
	CHECK(k <= n);
	for (i = 0; i < n; i++)
		rxbuf_take(&b[i], i < k ? len[i] : 0);
	return k;
}

static void rx_single(uint16_t cap, uint8_t split)
{
	struct rxbuf b;
	uint32_t n;

	rxbuf_make(&b, cap, split);
	n = conn_to_guest(S.t, b.iov, b.cnt);
	CHECK(cap >= VSOCK_HDR_SIZE || n == 0);
	rxbuf_take(&b, n);
}

/* ---- the host side ---- */

static struct fake_end *end_pick(uint8_t sel)
{
	unsigned int i, n = fake_open_ends(), k;

	if (n == 0)
		return NULL;
	k = sel % n;
	for (i = 0; i < FAKE_ENDS; i++)
		if (fake_ends[i].used && k-- == 0)
			return &fake_ends[i];
	return NULL;
}

/*
 * An edge for a token recorded earlier: one epoll queued before its connection closed, or
 * a live socket's. Never a pipe's: they are not in the epoll set.
 */
static void stale_event(uint64_t token, uint16_t ev)
{
	const struct conn *c = conn_of_token(S.t, token);

	if (!c || (ep_is_open(&c->ep) && !(c->ep.caps & EP_CAP_POLLED)))
		fake_event(token, ev);
}

/* Bytes for the guest: a message of its own on a SEQPACKET end. */
static void h_offer(struct fake_end *f, uint32_t len, uint8_t flags)
{
	bool msg = f->type == VIRTIO_VSOCK_TYPE_SEQPACKET;
	struct tok *t = tok_find(f->token);

	if (len == 0 || (msg && (!t || t->nb == BOUNDS_MAX)) || !fake_offer(f, len, msg))
		return;
	if (msg)
		t->bound[(t->head + t->nb++) % BOUNDS_MAX] = f->offered;
	if (!f->polled && !(flags & 1))
		fake_event(f->token, EP_READABLE);
}

enum {
	OP_G_PKT,
	OP_G_TX,
	OP_G_FLOOD,
	OP_G_RX,
	OP_G_RX1,
	OP_H_EVENT,
	OP_H_OFFER,
	OP_H_ROOM,
	OP_H_EOF,
	OP_H_HUP,
	OP_H_FAIL,
	OP_H_FAR,
	OP_H_FAR_TAKE,
	OP_H_LISTEN,
	OP_H_LINE,
	OP_H_INCOMING,
	OP_H_CONNECT,
	OP_T_POLL,
	OP_T_SERVICE,
	OP_T_SWEEP,
	OP_T_TIME,
	OP_T_SEQPACKET,
	OP_T_GUEST,
	OP_T_RESET,
	OP_T_QUIET,
	OP_ROUND,
	OP_T_PROBE,
	OP_MAX
};

/* A host connect may come: each brings one address the guest learns at most. */
static bool room_for_connect(void)
{
	return S.nflows + fake_pending() + conn_count(S.t) + 1 < FLOWS_MAX;
}

/* The guest left (reboot, device reset): its rings and everything it knew are gone. */
static void guest_gone(void)
{
	unsigned int i;

	txq_drop(S.ntxq);
	for (i = 0; i < S.nflows; i++) {
		S.flows[i].pend = false;
		S.flows[i].req_taken = S.flows[i].req_queued;
	}
}

static void run_op(struct input *in)
{
	unsigned int op = in_u8(in) % OP_MAX;
	static const int connect_ret[4] = { 0, -ECONNREFUSED, -ENOENT, -EAGAIN };
	struct fake_end *f;
	uint8_t a, b, c;
	uint16_t v;
	struct ep_addr addr;

	TRACE("op %u\n", op);
	switch (op) {
	case OP_G_PKT:
		g_pkt(in);
		break;
	case OP_G_TX:
		tx(1 + in_u8(in) % TXQ_MAX);
		break;
	case OP_G_FLOOD:
		g_flood(in);
		break;
	case OP_G_RX:
		a = in_u8(in);
		b = in_u8(in);
		c = in_u8(in);
		rx(1 + a % RX_MAX, b, c, in);
		break;
	case OP_G_RX1:
		v = in_u16(in);
		rx_single(v % (VSOCK_HDR_SIZE + 4200), in_u8(in));
		break;
	case OP_H_EVENT:
		/* An edge for an end, or for a token no longer open. */
		a = in_u8(in);
		v = in_u16(in) & (EP_READABLE | EP_WRITABLE | EP_RDHUP | EP_HUP);
		f = end_pick(a);
		if (a & 0x80 && S.ntoks)
			stale_event(S.toks[(S.ntoks - 1 - a % RTE_MIN(S.ntoks, 8u)) % TOKENS_MAX].token,
				    v);
		else if (f && !f->polled)
			fake_event(f->token, v);
		break;
	case OP_H_OFFER:
		f = end_pick(in_u8(in));
		v = in_u16(in);
		a = in_u8(in);
		if (f)
			h_offer(f, a & 2 ? 65536u + v % 8192 : v, a);
		break;
	case OP_H_ROOM:
		f = end_pick(in_u8(in));
		v = in_u16(in);
		if (!f)
			break;
		f->room = v & 1 ? (size_t)v * 16 : v;
		if (!f->polled)
			fake_event(f->token, EP_WRITABLE);
		break;
	case OP_H_EOF:
		/* It sends no more: a socket's RDHUP edge, a pipe's SHUT_SEND. */
		f = end_pick(in_u8(in));
		if (!f)
			break;
		f->eof = true;
		if (f->polled)
			f->far |= EP_FIN;
		else
			fake_event(f->token, EP_READABLE | EP_RDHUP);
		break;
	case OP_H_HUP:
		/* It closed: writes fail, its EOF after what it sent; a pipe's far side let go. */
		f = end_pick(in_u8(in));
		a = in_u8(in);
		if (!f)
			break;
		f->eof = true;
		if (f->polled) {
			f->far |= EP_GONE | EP_SHUT_RD | EP_FIN | (a & 1 ? EP_RESET : 0);
		} else {
			f->fail = -EIO;
			fake_event(f->token, EP_READABLE | EP_WRITABLE | EP_RDHUP | EP_HUP);
		}
		break;
	case OP_H_FAIL:
		f = end_pick(in_u8(in));
		a = in_u8(in);
		if (!f || f->polled)
			break;
		switch (a % 4) {
		case 0:
			f->fail = -EIO;
			break;
		case 1:
			f->fail = -EMSGSIZE;
			break;
		case 2:
			f->rfail = -EIO;
			break;
		default:
			f->est_fail = -EIO;
			break;
		}
		fake_event(f->token, EP_READABLE | EP_WRITABLE);
		break;
	case OP_H_FAR:
		/* A pipe's far side: accepts, refuses or resets, reads no more. */
		f = end_pick(in_u8(in));
		a = in_u8(in);
		if (f && f->polled)
			f->far |= a % 3 == 0 ? EP_OPENED : a % 3 == 1 ? EP_RESET : EP_SHUT_RD;
		break;
	case OP_H_FAR_TAKE:
		f = end_pick(in_u8(in));
		a = in_u8(in);
		if (f)
			fake_far_take(f, a);
		break;
	case OP_H_LISTEN:
		a = in_u8(in);
		b = in_u8(in);
		c = in_u8(in);
		if (room_for_connect())
			fake_listen(a & 0x80 ? in_u32(in) : gports[a % 4],
			    b % 4 == 0 ? 0 : b % 4 == 1 ? 1 : b % 4 == 2 ? -EPROTO : -ECONNRESET,
			    c % 21);
		break;
	case OP_H_LINE:
		/* A CONNECT line not complete yet comes whole, or broken. */
		f = end_pick(in_u8(in));
		a = in_u8(in);
		if (f && !f->polled && f->line == 0 && f->token) {
			f->line = a & 1 ? 1 : -EPROTO;
			fake_event(f->token, EP_READABLE);
		}
		break;
	case OP_H_INCOMING:
		a = in_u8(in);
		b = in_u8(in);
		addr = (struct ep_addr){
			.src_cid = a & 1 ? OTHER_CID : 7,
			.dst_cid = a & 2 ? GUEST_CID + 1 : GUEST_CID,
			.src_port = a & 4 ? NATIVE_SRC_PORT + b : 5000,
			.dst_port = gports[b % 4],
			.type = a & 8 ? VIRTIO_VSOCK_TYPE_SEQPACKET : VIRTIO_VSOCK_TYPE_STREAM,
		};
		if (room_for_connect())
			fake_incoming(&addr, a & 16);
		break;
	case OP_H_CONNECT:
		fake_next_connect = connect_ret[in_u8(in) % 4];
		break;
	case OP_T_POLL:
		conn_poll_host(S.t, now(), in_u8(in));
		break;
	case OP_T_SERVICE:
		conn_service_host(S.t, now(), in_u8(in));
		break;
	case OP_T_SWEEP:
		conn_pipes_sweep(S.t);
		break;
	case OP_T_TIME:
		v = in_u16(in);
		S.skew += hz / 1000 * (v & 0x8000 ? (v & 0x7fff) * 10u : v % 300u) + 1;
		break;
	case OP_T_SEQPACKET:
		/* Negotiated again between packets: the ring is empty. */
		if (S.ntxq == 0) {
			S.seqpacket = !S.seqpacket;
			conn_table_set_seqpacket(S.t, S.seqpacket);
		}
		break;
	case OP_T_GUEST:
		S.attached = !S.attached;
		conn_table_set_guest(S.t, S.attached);
		break;
	case OP_T_RESET:
		conn_table_reset(S.t);
		guest_gone();
		break;
	case OP_T_QUIET:
		/* Nothing to do when quiet: a worker skips such a table. */
		if (conn_table_quiet(S.t)) {
			CHECK(conn_service_host(S.t, now(), 64) == 0);
			CHECK(rx(4, 3, 0, in) == 0);
		}
		break;
	case OP_ROUND:
		/* A dataplane round: the tx burst, the rx buffers, the host side. */
		tx(TXQ_MAX);
		rx(8, 4, 0, in);
		conn_poll_host(S.t, now(), 64);
		break;
	case OP_T_PROBE:
		/* An idle round reads the one socket connection without its event. */
		conn_probe_host(S.t);
		break;
	}
}

/* ---- one input ---- */

/*
 * Where a guest's REQUEST that no host socket takes goes: the other guest and the native
 * listener are pipes (the ring is never used: the fake's ep_connect() only asks whether
 * there is one); any other guest is out of reach.
 */
static struct rte_ring *route(uint64_t src_cid, uint64_t dst_cid, uint32_t dst_port)
{
	CHECK(src_cid == GUEST_CID);
	return dst_cid == OTHER_CID || (dst_cid == VSOCK_HOST_CID && dst_port == NATIVE_PORT) ?
	       incoming : NULL;
}

static void setup(struct input *in)
{
	uint8_t cfg = in_u8(in), max_conns = in_u8(in);
	uint16_t ba = in_u16(in);
	uint8_t quota = in_u8(in), tmo[3] = { in_u8(in), in_u8(in), in_u8(in) };
	uint8_t slots = in_u8(in), gbuf = in_u8(in);
	struct conn_table_conf conf;
	unsigned int i;

	memset(&S, 0, offsetof(typeof(S), toks));
	S.pool = cfg & 2 ? pool_small : pool_big;
	S.seqpacket = cfg & 1;
	S.attached = !(cfg & 4);
	S.buf_alloc = cfg & 32 ? 1u + ba : CONN_BUF_ALLOC_DEFAULT;
	S.guest_buf = guest_bufs[gbuf % 8];
	S.skew = 0;
	for (i = 0; i < 64; i++)
		S.flows[i].k = (struct key){ gports[i % 4], hports[i / 4 % 4], cids[i / 16] };
	S.nflows = 64;

	fake_ep_reset();
	fake_next_connect = 0;
	fake_pipe_slots = cfg & 8 ? 1 + slots % 32 : 0;
	S.in_use0 = rte_mempool_in_use_count(S.pool);

	conn_table_conf_init(&conf);
	conf.guest_cid = GUEST_CID;
	conf.uds_path = "/nonexistent/fuzz";
	conf.listen_fd = cfg & 16 ? 1000 : -1;	/* never used as a descriptor by the fake */
	conf.pool = S.pool;
	conf.mbuf_quota = quota ? 2u + quota % 96 : 0;
	conf.max_conns = 1 + max_conns % 8;
	conf.buf_alloc = S.buf_alloc;
	conf.timeout_ms = 1u + tmo[0];
	conf.line_timeout_ms = 1u + tmo[1];
	conf.connect_timeout_ms = 1u + tmo[2];
	conf.seqpacket = S.seqpacket;
	conf.no_guest = !S.attached;
	conf.incoming = incoming;
	conf.route = route;
	S.t = conn_table_create(&conf);
	CHECK(S.t != NULL);
}

/* Drain the rx side with big buffers until nothing more comes. */
static void rx_drain(void)
{
	struct input none = { NULL, 0 };
	unsigned int rounds;

	for (rounds = 0; rounds < 64 && rx(RX_MAX, 2, 0, &none) != 0; rounds++)
		;
}

/*
 * The end of the input: the guest resets every connection it has, the far sides read what
 * is in their pipes, timers expire; then nothing may be left.
 */
static void drain(void)
{
	struct conn_table *t = S.t;
	unsigned int round, i;

	txq_drop(S.ntxq);
	/* A guest that can say RST to every connection, whatever it negotiated last. */
	S.attached = true;
	conn_table_set_guest(t, true);
	S.seqpacket = true;
	conn_table_set_seqpacket(t, true);
	for (round = 0; round < 8; round++) {
		for (i = 0; i < FAKE_ENDS; i++)
			if (fake_ends[i].used)
				fake_far_take(&fake_ends[i], UINT32_MAX);
		conn_poll_host(t, now(), 1024);
		conn_pipes_sweep(t);
		check_table();
		rx_drain();
		for (i = 0; i < t->conf.max_conns; i++) {
			const struct conn *c = &t->conns[i];
			struct vsock_hdr h = {
				.src_cid = GUEST_CID, .dst_cid = c->peer_cid,
				.src_port = c->guest_port, .dst_port = c->host_port,
				.type = c->type, .op = VIRTIO_VSOCK_OP_RST,
			};
			struct virtio_vsock_hdr raw;
			struct iovec none[1];

			if (!c->hashed || c->state == CS_DEAD)
				continue;
			vsock_pkt_encode(&h, &raw);
			CHECK(conn_from_guest(t, &raw, none, 0) == 0);
			S.pkts_taken++;
		}
		check_table();
		S.skew += hz / 1000 * 300;
		if (conn_count(t) == 0 && fake_open_ends() == 0 && fake_pending() == 0 &&
		    !conn_has_output(t))
			break;
	}
	CHECK(conn_count(t) == 0);
	CHECK(fake_open_ends() == 0 && fake_pending() == 0);
	CHECK(t->to_guest_held + t->to_host_held == 0);
	CHECK(rte_mempool_in_use_count(S.pool) == S.in_use0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *eal[] = { (*argv)[0], "--no-huge", "-m", "128", "--no-pci", "--no-shconf",
			"--no-telemetry", "-l", "0", "--log-level=*:error" };
	cpu_set_t cpus;

	(void)argc;
	/*
	 * The EAL pins this thread to lcore 0's CPU, where a machine's DPDK programs put their
	 * main lcore too; a campaign beside them ran at half speed. Nothing here polls: the
	 * thread goes back to every CPU it had.
	 */
	CHECK(sched_getaffinity(0, sizeof(cpus), &cpus) == 0);
	CHECK(rte_eal_init(RTE_DIM(eal), eal) >= 0);
	CHECK(sched_setaffinity(0, sizeof(cpus), &cpus) == 0);
	pool_big = rte_pktmbuf_pool_create("fz_big", POOL_BIG, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   (int)rte_socket_id());
	pool_small = rte_pktmbuf_pool_create("fz_small", POOL_SMALL, 0, 0,
					     128 + RTE_PKTMBUF_HEADROOM, (int)rte_socket_id());
	incoming = rte_ring_create("fz_incoming", 32, (int)rte_socket_id(),
				   RING_F_SP_ENQ | RING_F_SC_DEQ);
	CHECK(pool_big && pool_small && incoming);
	hz = rte_get_tsc_hz();
	trace = getenv("FUZZ_CONN_TRACE") != NULL;
	memset(untouched, UNTOUCHED, sizeof(untouched));
	fake_real_caps = true;
	fake_took = took;
	fake_fill = fill;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };

	setup(&in);
	fuzz_run(&in, MAX_OPS, run_op, check_table);
	drain();
	conn_table_destroy(S.t);
	return 0;
}
