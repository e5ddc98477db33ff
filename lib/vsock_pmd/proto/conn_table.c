/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection table of one device: slots, the lookup by address, the lists that drive
 * the work (never a scan of the table), timers, the RST queue, and the operator's view.
 * The protocol itself is conn.c.
 *
 * Lists: ctl (replies owed to the guest), data (to_guest bytes and guest credit), work
 * (endpoint events to serve), qwait (host reads waiting for the mbuf quota), polled
 * (endpoints without events, served round-robin) and timers (deadline order).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>

#include "conn_credit.h"
#include "conn_table.h"

/* A connection's address in the table; the peer's CID tells guests apart. */
struct conn_key {
	uint32_t guest_port;
	uint32_t host_port;	/* the host's port, or the other guest's */
	uint64_t peer_cid;
};

static uint32_t conn_idx(const struct conn_table *t, const struct conn *c)
{
	return (uint32_t)(c - t->conns);
}

uint64_t conn_token(const struct conn_table *t, const struct conn *c)
{
	/* 0 is the listener's (EP_TOKEN_LISTENER). */
	return ((uint64_t)c->gen << 32) | (conn_idx(t, c) + 1);
}

struct conn *conn_of_token(struct conn_table *t, uint64_t token)
{
	uint32_t idx = (uint32_t)token;
	struct conn *c;

	if (idx == 0 || idx > t->conf.max_conns)
		return NULL;
	c = &t->conns[idx - 1];
	if (c->state == CS_FREE || c->gen != (uint32_t)(token >> 32))
		return NULL;	/* closed since the event was queued */
	return c;
}

/* ---- lists ---- */

void work_add(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_QWAIT) {
		/* Whatever brought it here may free mbufs (a flush): serve it now. */
		c->lists &= ~L_QWAIT;
		TAILQ_REMOVE(&t->qwait, c, work_link);
	}
	if (!(c->lists & L_WORK)) {
		c->lists |= L_WORK;
		TAILQ_INSERT_TAIL(&t->work, c, work_link);
	}
}

/* @p c's host read waits for the table's to_guest mbufs to drop under the quota. */
void qwait_add(struct conn_table *t, struct conn *c)
{
	if (c->lists & (L_QWAIT | L_WORK))
		return;
	c->lists |= L_QWAIT;
	TAILQ_INSERT_TAIL(&t->qwait, c, work_link);
	t->stats.pool_empty++;
}

/* Readers waiting for the quota, back to work as far as mbufs came back (at most @p max). */
unsigned int qwait_wake(struct conn_table *t, unsigned int max)
{
	unsigned int n = RTE_MIN(quota_left(t->to_guest_held, t->dir_quota), max), done = 0;

	while (done < n && !TAILQ_EMPTY(&t->qwait)) {
		work_add(t, TAILQ_FIRST(&t->qwait));
		done++;
	}
	return done;
}

void ctl_add(struct conn_table *t, struct conn *c, uint8_t bit)
{
	c->ctl_pending |= bit;
	if (!(c->lists & L_CTL)) {
		c->lists |= L_CTL;
		TAILQ_INSERT_TAIL(&t->ctl, c, ctl_link);
	}
}

void ctl_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_CTL) {
		c->lists &= ~L_CTL;
		TAILQ_REMOVE(&t->ctl, c, ctl_link);
	}
}

void data_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_DATA) {
		c->lists &= ~L_DATA;
		TAILQ_REMOVE(&t->data, c, data_link);
	}
}

void timer_del(struct conn_table *t, struct conn *c)
{
	if (c->lists & L_TIMER) {
		c->lists &= ~L_TIMER;
		TAILQ_REMOVE(&t->timers, c, timer_link);
	}
}

/*
 * The timer of @p c's state, kept in deadline order. Timeouts of one length land at the
 * tail at once; a shorter one walks back only past the longer ones set less than the
 * difference ago.
 *
 * The deadline counts from the clock read here, never from a round's: a worker skips the
 * rounds of a quiet table, and pipe sweeps and guest packets set timers between rounds, so
 * the last round's clock may be seconds old. A state change costs one TSC read more.
 */
void timer_set(struct conn_table *t, struct conn *c)
{
	uint64_t len = c->state == CS_LINE ? t->line_timeout_tsc :
		       c->state == CS_CLOSING ? t->timeout_tsc : t->connect_timeout_tsc;
	struct conn *after;

	timer_del(t, c);
	c->deadline = rte_get_tsc_cycles() + len;
	c->lists |= L_TIMER;
	after = TAILQ_LAST(&t->timers, conn_list);
	while (after && after->deadline > c->deadline)
		after = TAILQ_PREV(after, conn_list, timer_link);
	if (after)
		TAILQ_INSERT_AFTER(&t->timers, after, c, timer_link);
	else
		TAILQ_INSERT_HEAD(&t->timers, c, timer_link);
}

/* ---- slots ---- */

struct conn *conn_alloc(struct conn_table *t)
{
	struct conn *c;
	uint32_t gen;

	if (t->nb_free == 0)
		return NULL;
	c = &t->conns[t->free_idx[--t->nb_free]];
	gen = c->gen;
	memset(c, 0, sizeof(*c));
	c->gen = gen;
	ep_init(&c->ep);
	c->peer_cid = VSOCK_HOST_CID;
	t->nb_used++;
	return c;
}

static struct conn_key conn_key(uint32_t guest_port, uint32_t host_port, uint64_t peer_cid)
{
	/* Built whole, padding included: the hash reads every byte of the key. */
	struct conn_key k;

	memset(&k, 0, sizeof(k));
	k.guest_port = guest_port;
	k.host_port = host_port;
	k.peer_cid = peer_cid;
	return k;
}

int conn_hash(struct conn_table *t, struct conn *c)
{
	struct conn_key k = conn_key(c->guest_port, c->host_port, c->peer_cid);
	int ret = rte_hash_add_key_data(t->hash, &k, c);

	if (ret == 0)
		c->hashed = 1;
	return ret;
}

struct conn *conn_lookup(const struct conn_table *t, uint32_t guest_port, uint32_t host_port,
			 uint64_t peer_cid)
{
	struct conn_key k = conn_key(guest_port, host_port, peer_cid);
	void *data;

	return rte_hash_lookup_data(t->hash, &k, &data) < 0 ? NULL : data;
}

void conn_ep_opened(struct conn_table *t, struct conn *c)
{
	if ((c->ep.caps & EP_CAP_POLLED) && !(c->lists & L_POLLED)) {
		c->lists |= L_POLLED;
		TAILQ_INSERT_TAIL(&t->polled, c, poll_link);
		t->nb_polled++;
	}
}

void conn_ep_close(struct conn_table *t, struct conn *c, bool clean)
{
	if (c->lists & L_POLLED) {
		c->lists &= ~L_POLLED;
		TAILQ_REMOVE(&t->polled, c, poll_link);
		t->nb_polled--;
	}
	if (ep_is_open(&c->ep))
		ep_close(&c->ep, clean, &t->to_host_held);
}

void conn_free(struct conn_table *t, struct conn *c)
{
	if (c->hashed) {
		struct conn_key k = conn_key(c->guest_port, c->host_port, c->peer_cid);

		rte_hash_del_key(t->hash, &k);
	}
	/* Unless it ended cleanly before, the far side of a pipe sees a reset. */
	conn_ep_close(t, c, false);
	if (c->lists & L_WORK)
		TAILQ_REMOVE(&t->work, c, work_link);
	else if (c->lists & L_QWAIT)
		TAILQ_REMOVE(&t->qwait, c, work_link);
	ctl_del(t, c);
	data_del(t, c);
	timer_del(t, c);
	mq_free(&c->to_host, &t->to_host_held);
	mq_free(&c->to_guest, &t->to_guest_held);
	if (t->partial == c)
		t->partial = NULL;
	c->state = CS_FREE;
	c->lists = 0;
	c->hashed = 0;
	c->gen++;
	t->free_idx[t->nb_free++] = conn_idx(t, c);
	t->nb_used--;
}

/* ---- RSTs without a connection ---- */

/*
 * RST for a packet that has no connection (or must not get one), from @p peer_cid: the
 * guest it was for when that guest is reachable, so that the sender's socket recognises it.
 */
void rst_queue_from(struct conn_table *t, const struct vsock_hdr *h, uint64_t peer_cid)
{
	struct rst_entry *e;

	if (h->op == VIRTIO_VSOCK_OP_RST)
		return;
	if (t->rst_count == RST_QUEUE_SIZE) {
		t->stats.rst_dropped++;
		return;
	}
	e = &t->rst[(t->rst_head + t->rst_count++) % RST_QUEUE_SIZE];
	e->peer_cid = peer_cid;
	e->guest_port = h->src_port;
	e->host_port = h->dst_port;
	e->type = h->type;
}

/* ---- table ---- */

void conn_table_conf_init(struct conn_table_conf *conf)
{
	*conf = (struct conn_table_conf){
		.listen_fd = -1,
		.socket_id = SOCKET_ID_ANY,
		.max_conns = CONN_MAX_DEFAULT,
		.buf_alloc = CONN_BUF_ALLOC_DEFAULT,
		.timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
		.line_timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
		.connect_timeout_ms = CONN_TIMEOUT_MS_DEFAULT,
	};
}

static void table_clear(struct conn_table *t)
{
	uint32_t i;

	for (i = 0; i < t->conf.max_conns; i++) {
		struct conn *c = &t->conns[i];

		/* Our guest is gone: host sockets close, the far sides of pipes see a reset. */
		if (ep_is_open(&c->ep))
			ep_close(&c->ep, false, NULL);
		if (c->state != CS_FREE) {
			mq_free(&c->to_host, &t->to_host_held);
			mq_free(&c->to_guest, &t->to_guest_held);
			c->gen++;
		}
		c->state = CS_FREE;
		c->lists = 0;
		c->hashed = 0;
		t->free_idx[i] = t->conf.max_conns - 1 - i;
	}
	t->nb_free = t->conf.max_conns;
	t->nb_used = 0;
	TAILQ_INIT(&t->work);
	TAILQ_INIT(&t->ctl);
	TAILQ_INIT(&t->data);
	TAILQ_INIT(&t->timers);
	TAILQ_INIT(&t->polled);
	TAILQ_INIT(&t->qwait);
	t->nb_polled = 0;
	/* What the pipes still held is freed by their far sides now. */
	t->to_guest_held = 0;
	t->to_host_held = 0;
	t->rst_head = 0;
	t->rst_count = 0;
	rte_hash_reset(t->hash);
	/* Connections still waiting for this guest are refused. */
	ep_host_refuse_incoming(&t->host);
}

void conn_table_reset(struct conn_table *t)
{
	table_clear(t);
}

struct conn_table *conn_table_create(const struct conn_table_conf *conf)
{
	static uint32_t table_seq;
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = RTE_MAX(conf->max_conns, 8u),
		.key_len = sizeof(struct conn_key),
		.hash_func = rte_jhash,
		.socket_id = conf->socket_id,
		/* The extendable table guarantees room for every one of max_conns keys. */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct conn_table *t;
	uint32_t i;
	int ret;

	/* conn_table_quiet()'s fields in the table's first two cache lines (its layout). */
	RTE_BUILD_BUG_ON(offsetof(struct conn_table, host) + sizeof(void *) >
			 2 * RTE_CACHE_LINE_SIZE);
	if (!conf->uds_path || strlen(conf->uds_path) >= sizeof(t->host.uds_path) || !conf->pool ||
	    conf->max_conns == 0 || conf->buf_alloc == 0 || conf->timeout_ms == 0 ||
	    conf->line_timeout_ms == 0 || conf->connect_timeout_ms == 0 ||
	    rte_pktmbuf_data_room_size(conf->pool) <= RTE_PKTMBUF_HEADROOM) {
		rte_errno = EINVAL;
		return NULL;
	}
	t = rte_zmalloc_socket("vsock_conn_table", sizeof(*t), RTE_CACHE_LINE_SIZE,
			       conf->socket_id);
	if (!t) {
		rte_errno = ENOMEM;
		return NULL;
	}
	t->conf = *conf;
	t->host.epfd = -1;
	t->io.epfd = -1;
	t->io.pool = conf->pool;
	t->io.room = rte_pktmbuf_data_room_size(conf->pool) - RTE_PKTMBUF_HEADROOM;
	t->dir_quota = conf->mbuf_quota ? RTE_MAX(conf->mbuf_quota / 2, 1u) : UINT32_MAX;
	t->timeout_tsc = conn_tsc_of_ms(rte_get_tsc_hz(), conf->timeout_ms);
	t->line_timeout_tsc = conn_tsc_of_ms(rte_get_tsc_hz(), conf->line_timeout_ms);
	t->connect_timeout_tsc = conn_tsc_of_ms(rte_get_tsc_hz(), conf->connect_timeout_ms);
	/* Scratch big enough for a whole SEQPACKET message either way, or one read. */
	t->io.n = (RTE_MAX(conf->buf_alloc, READ_CHUNK) + t->io.room - 1) / t->io.room + 2;
	t->io.n = RTE_MIN(t->io.n, (unsigned int)IOV_MAX);
	t->io.iov = rte_zmalloc_socket("vsock_conn_iov", sizeof(*t->io.iov) * t->io.n, 0,
				       conf->socket_id);
	t->io.mbufs = rte_zmalloc_socket("vsock_conn_mbufs", sizeof(*t->io.mbufs) * t->io.n, 0,
					 conf->socket_id);
	t->conns = rte_zmalloc_socket("vsock_conns", sizeof(*t->conns) * conf->max_conns,
				      RTE_CACHE_LINE_SIZE, conf->socket_id);
	t->free_idx = rte_zmalloc_socket("vsock_conn_free", sizeof(*t->free_idx) * conf->max_conns,
					 0, conf->socket_id);
	snprintf(name, sizeof(name), "vsock_conn_%u",
		 __atomic_fetch_add(&table_seq, 1, __ATOMIC_RELAXED));
	if (t->io.iov && t->io.mbufs && t->conns && t->free_idx)
		t->hash = rte_hash_create(&hp);
	if (!t->hash) {
		conn_table_destroy(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	ret = ep_host_init(&t->host, conf->uds_path, conf->listen_fd, conf->incoming,
			   conf->waker);
	if (ret < 0) {
		conn_table_destroy(t);
		rte_errno = -ret;
		return NULL;
	}
	t->conf.uds_path = t->host.uds_path;
	t->io.epfd = t->host.epfd;
	for (i = 0; i < conf->max_conns; i++)
		ep_init(&t->conns[i].ep);
	table_clear(t);
	return t;
}

void conn_table_destroy(struct conn_table *t)
{
	if (!t)
		return;
	if (t->hash && t->conns)
		table_clear(t);
	rte_hash_free(t->hash);
	ep_host_fini(&t->host);
	rte_free(t->free_idx);
	rte_free(t->conns);
	rte_free(t->io.mbufs);
	rte_free(t->io.iov);
	rte_free(t);
}

const char *conn_err_str(enum conn_err err)
{
	static const char *const names[CONN_ERR_MAX] = {
		[CONN_ERR_ROUTE] = "route",
		[CONN_ERR_NO_CONN] = "no_conn",
		[CONN_ERR_STATE] = "state",
		[CONN_ERR_CREDIT] = "credit",
		[CONN_ERR_MSG_SIZE] = "msg_size",
		[CONN_ERR_CONNECT_LINE] = "connect_line",
		[CONN_ERR_TIMEOUT] = "timeout",
		[CONN_ERR_HOST_IO] = "host_io",
	};

	return (unsigned int)err < CONN_ERR_MAX ? names[err] : "unknown";
}

void conn_table_set_seqpacket(struct conn_table *t, bool on)
{
	t->conf.seqpacket = on;
}

void conn_table_set_guest(struct conn_table *t, bool attached)
{
	t->conf.no_guest = !attached;
}

bool conn_has_output(const struct conn_table *t)
{
	return t->rst_count || !TAILQ_EMPTY(&t->ctl) || !TAILQ_EMPTY(&t->data);
}

uint32_t conn_socket_count(const struct conn_table *t)
{
	return t->nb_used - t->nb_polled;
}

enum conn_idle conn_table_idle(const struct conn_table *t)
{
	if (!TAILQ_EMPTY(&t->timers) || !TAILQ_EMPTY(&t->work) || !TAILQ_EMPTY(&t->polled) ||
	    !TAILQ_EMPTY(&t->qwait) || ep_incoming_pending(&t->host))
		return CONN_BUSY;
	return conn_has_output(t) ? CONN_OWES_GUEST : CONN_QUIET;
}

bool conn_table_quiet(const struct conn_table *t)
{
	return conn_table_idle(t) == CONN_QUIET;
}

int conn_table_epoll_fd(const struct conn_table *t)
{
	return t->host.epfd;
}

uint32_t conn_count(const struct conn_table *t)
{
	return t->nb_used;
}

const struct conn_stats *conn_table_stats(const struct conn_table *t)
{
	return &t->stats;
}

/* ---- snapshot for operators ---- */

static const char *state_name(uint8_t state)
{
	switch (state) {
	case CS_LINE:
		return "connect_line";
	case CS_REQUEST:
		return "connecting";
	case CS_ESTABLISHED:
		return "established";
	case CS_CLOSING:
		return "closing";
	case CS_DEAD:
		return "reset";
	case CS_ACCEPT_WAIT:
		return "accepting";
	default:
		return "free";
	}
}

uint32_t conn_table_snapshot(const struct conn_table *t, struct vsock_pmd_conn_info *out,
			     uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->conf.max_conns && n < max; i++) {
		const struct conn *c = &t->conns[i];
		uint32_t held = c->from_guest_cnt - c->fwd_cnt;
		struct vsock_pmd_conn_info *o;

		if (c->state == CS_FREE)
			continue;
		o = &out[n++];
		*o = (struct vsock_pmd_conn_info){
			.guest_port = c->guest_port,
			.host_port = c->host_port,
			.peer_cid = c->peer_cid,
			.from_guest_bytes = c->from_guest_cnt,
			.to_guest_bytes = c->to_guest_cnt,
			.guest_credit = held >= t->conf.buf_alloc ? 0 : t->conf.buf_alloc - held,
			.our_buf_alloc = t->conf.buf_alloc,
			.host_credit = peer_credit(c),
			.peer_buf_alloc = c->peer_buf_alloc,
			.queued_to_host = c->to_host.bytes,
			.queued_to_guest = c->to_guest.bytes,
		};
		snprintf(o->type, sizeof(o->type), "%s",
			 c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? "seqpacket" : "stream");
		snprintf(o->state, sizeof(o->state), "%s", state_name(c->state));
	}
	return t->nb_used;
}
