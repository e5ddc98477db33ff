/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the hostile tests (hostile_util.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostile_util.h"

#define PEER_MS 3000
#define PEER_BYTES 3000
#define PEER_PORT_FIRST 7000

uint64_t
hu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
hu_start(struct hu_env *h)
{
	return hu_start_with(h, NULL, NULL, NULL);
}

int
hu_start_with(struct hu_env *h, const char *const *extra, const char *vm_opts,
		const struct vfe_guest_conf *peer_gc)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->peer_lfd = -1;
	if (ops_start_vms(&h->o, true, false, extra, vm_opts) < 0) {
		snprintf(h->why, sizeof(h->why), "app did not start");
		return -1;
	}
	/* VM 5 lives next to VM 3 in the run directory. */
	memcpy(h->peer.sock, h->o.sock5, sizeof(h->peer.sock));
	app_proc_path(&h->o.dp.app, "vm5.vsock", h->peer.uds, sizeof(h->peer.uds));
	rc = dp_attach_quiet(&h->peer, NULL, peer_gc);
	if (rc < 0) {
		snprintf(h->why, sizeof(h->why), "VM 5 attach: %s", strerror(-rc));
		return -1;
	}
	h->peer_port = PEER_PORT_FIRST;
	h->peer_lfd = dp_listen(&h->peer, h->peer_port, SOCK_STREAM);
	if (h->peer_lfd < 0) {
		snprintf(h->why, sizeof(h->why), "VM 5 listener: %s", strerror(-h->peer_lfd));
		return -1;
	}
	return 0;
}

int
hu_stop(struct hu_env *h, bool dump_log)
{
	int status;

	if (h->peer_lfd >= 0)
		close(h->peer_lfd);
	h->peer_lfd = -1;
	dp_detach(&h->peer);
	if (dump_log)
		app_proc_dump_log(&h->o.dp.app);
	status = ops_stop(&h->o);
	return status;
}

/* Read from @p fd into @p s until @p n more bytes were checked. */
static bool
host_read_n(struct hu_env *h, int fd, struct dp_stream *s, uint64_t n)
{
	uint64_t want = s->done + n;

	DP_WAIT(&h->peer, (dp_host_recv(fd, s), s->done >= want || s->bad_at != UINT64_MAX),
		PEER_MS);
	return s->done == want && s->bad_at == UINT64_MAX;
}

int
hu_peer_check(struct hu_env *h)
{
	struct dp_env *e = &h->peer;
	struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c;
	long r = -1;
	char b;
	int fd;

	h->why[0] = '\0';
	h->peer_seed++;
	c = dp_guest_connect(e, h->peer_port, VIRTIO_VSOCK_TYPE_STREAM, PEER_MS);
	if (c == NULL || c->state != VFE_GC_ESTABLISHED) {
		snprintf(h->why, sizeof(h->why), "VM 5 connect: %s",
			c == NULL ? "no slot" : c->reset ? "RST" : "no answer");
		if (c != NULL)
			vfe_guest_release(&e->g, c);
		return -1;
	}
	fd = dp_accept(e, h->peer_lfd, PEER_MS);
	if (fd < 0) {
		snprintf(h->why, sizeof(h->why), "VM 5 host accept: %s", strerror(-fd));
		vfe_guest_release(&e->g, c);
		return -1;
	}
	dp_stream_init(&g2h, h->peer_seed * 2, PEER_BYTES);
	dp_stream_init(&hrx, h->peer_seed * 2, PEER_BYTES);
	dp_stream_init(&h2g, h->peer_seed * 2 + 1, PEER_BYTES);
	dp_stream_init(&grx, h->peer_seed * 2 + 1, PEER_BYTES);
	DP_WAIT(e, (dp_guest_send(e, c, &g2h), g2h.done == PEER_BYTES), PEER_MS);
	if (g2h.done != PEER_BYTES || !host_read_n(h, fd, &hrx, PEER_BYTES)) {
		snprintf(h->why, sizeof(h->why), "VM 5 -> host: %llu of %u bytes sent, %llu "
			"checked (bad at %lld)", (unsigned long long)g2h.done, PEER_BYTES,
			(unsigned long long)hrx.done, (long long)hrx.bad_at);
		goto fail;
	}
	DP_WAIT(e, (dp_host_send(fd, &h2g), dp_guest_recv(e, c, &grx),
		grx.done == PEER_BYTES || grx.bad_at != UINT64_MAX), PEER_MS);
	if (!dp_stream_ok(&grx)) {
		snprintf(h->why, sizeof(h->why), "host -> VM 5: %llu of %u bytes checked "
			"(bad at %lld)", (unsigned long long)grx.done, PEER_BYTES,
			(long long)grx.bad_at);
		goto fail;
	}
	vfe_guest_shutdown(&e->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	if (!DP_WAIT(e, c->state == VFE_GC_CLOSED, PEER_MS) || !c->reset) {
		snprintf(h->why, sizeof(h->why), "VM 5 close: no RST");
		goto fail;
	}
	if (!DP_WAIT(e, (r = recv(fd, &b, 1, MSG_DONTWAIT)) >= 0 || errno != EAGAIN, PEER_MS) ||
			r != 0) {
		snprintf(h->why, sizeof(h->why), "VM 5 close: host recv %ld, not EOF", r);
		goto fail;
	}
	if (e->g.errors != 0) {
		snprintf(h->why, sizeof(h->why), "VM 5 saw a protocol breach: %.200s", e->g.err);
		goto fail;
	}
	close(fd);
	vfe_guest_release(&e->g, c);
	return 0;
fail:
	close(fd);
	vfe_guest_release(&e->g, c);
	return -1;
}

int
hu_vm_lcore(struct hu_env *h, unsigned int cid)
{
	char path[32];

	snprintf(path, sizeof(path), "%u.lcore", cid);
	return (int)ops_tel_u64(&h->o, "/vsock/vms", path);
}

uint64_t
hu_stat(struct hu_env *h, unsigned int cid, const char *path)
{
	char cmd[32];

	snprintf(cmd, sizeof(cmd), "/vsock/stats,%u", cid);
	return ops_tel_u64(&h->o, cmd, path);
}

bool
hu_log_wait(struct hu_env *h, long mark, const char *needle, unsigned int ms)
{
	uint64_t deadline = hu_now_ms() + ms;
	bool found;

	while (!(found = ops_log_has(&h->o, mark, needle)) && hu_now_ms() < deadline)
		usleep(2000);
	return found;
}

bool
hu_app_alive(struct hu_env *h)
{
	return h->o.dp.app.pid > 0 && kill(h->o.dp.app.pid, 0) == 0;
}

/* ---- the raw guest ---- */

static int
rx_post(struct rawg *g, uint16_t i)
{
	struct vfe_buf b = { .gpa = g->rx_gpa[i], .len = RG_RX_LEN, .writable = true };

	memset(g->rx_buf[i], 0xee, 44);
	return vfe_vq_add(&g->v.vq[VFE_VSOCK_RX], &b, 1, (void *)(uintptr_t)(i + 1u));
}

const struct vfe_vsock_conf rg_conf_default = {
	.ring_size = 128,
	.indirect_max = 8,
	.mem = { .size = 32u << 20, .nregions = 2, .gap = 1u << 20 },
};

int
rg_attach(struct rawg *g, struct hu_env *h, const struct vfe_vsock_conf *conf)
{
	struct vfe_vsock_conf c = conf != NULL ? *conf : rg_conf_default;
	uint16_t i;
	int rc;

	memset(g, 0, offsetof(struct rawg, log));
	g->nlog = 0;
	g->log_overflow = false;
	if (c.ring_size == 0)
		c.ring_size = 128;
	rc = vfe_vsock_attach(&g->v, h->o.dp.sock, &c);
	if (rc < 0) {
		snprintf(h->why, sizeof(h->why), "VM 3 attach: %s: %s", strerror(-rc),
			g->v.conn.err);
		return rc;
	}
	g->attached = true;
	g->ring = c.ring_size;
	g->rx_buf = calloc(g->ring, sizeof(*g->rx_buf));
	g->rx_gpa = calloc(g->ring, sizeof(*g->rx_gpa));
	g->tx_buf = calloc(g->ring, sizeof(*g->tx_buf));
	g->tx_gpa = calloc(g->ring, sizeof(*g->tx_gpa));
	g->tx_free = calloc(g->ring, sizeof(*g->tx_free));
	if (!g->rx_buf || !g->rx_gpa || !g->tx_buf || !g->tx_gpa || !g->tx_free)
		goto nomem;
	for (i = 0; i < g->ring; i++) {
		g->rx_buf[i] = vfe_mem_alloc(&g->v.mem, RG_RX_LEN, 64, &g->rx_gpa[i]);
		g->tx_buf[i] = vfe_mem_alloc(&g->v.mem, RG_TX_LEN, 64, &g->tx_gpa[i]);
		if (g->rx_buf[i] == NULL || g->tx_buf[i] == NULL)
			goto nomem;
		g->tx_free[g->tx_nfree++] = i;
		if (rx_post(g, i) < 0)
			goto nomem;
	}
	vfe_vq_publish(&g->v.vq[VFE_VSOCK_RX]);
	vfe_vq_kick(&g->v.vq[VFE_VSOCK_RX]);
	return 0;
nomem:
	snprintf(h->why, sizeof(h->why), "VM 3: guest memory too small for the buffers");
	rg_close(g);
	return -ENOMEM;
}

void
rg_close(struct rawg *g)
{
	if (g->attached)
		vfe_vsock_close(&g->v);
	g->attached = false;
	free(g->rx_buf);
	free(g->rx_gpa);
	free(g->tx_buf);
	free(g->tx_gpa);
	free(g->tx_free);
	g->rx_buf = NULL;
	g->rx_gpa = NULL;
	g->tx_buf = NULL;
	g->tx_gpa = NULL;
	g->tx_free = NULL;
}

unsigned int
rg_poll(struct rawg *g)
{
	struct vfe_vq *rx = &g->v.vq[VFE_VSOCK_RX], *tx = &g->v.vq[VFE_VSOCK_TX];
	unsigned int n = 0, reposted = 0;
	void *cookie;
	uint32_t len;
	int id;

	while (!g->rx_held && (id = vfe_vq_get_used(rx, &len, &cookie)) != -EAGAIN) {
		uint16_t i = (uint16_t)((uintptr_t)cookie - 1);

		n++;
		if (id < 0 || cookie == NULL) {
			g->bad_used++;
			continue;
		}
		if (g->nlog == RG_LOG_MAX) {
			g->log_overflow = true;
		} else {
			struct rg_pkt *p = &g->log[g->nlog++];

			memset(p, 0, sizeof(*p));
			p->used_len = len;
			vfe_vsock_parse(g->rx_buf[i], len < RG_RX_LEN ? len : RG_RX_LEN, &p->p);
			if (len > 44) {
				uint32_t n = len - 44 < sizeof(p->payload) ? len - 44 :
					sizeof(p->payload);

				memcpy(p->payload, g->rx_buf[i] + 44, n);
			}
		}
		if (rx_post(g, i) >= 0)
			reposted++;
	}
	if (reposted) {
		vfe_vq_publish(rx);
		vfe_vq_kick(rx);
	}
	while ((id = vfe_vq_get_used(tx, &len, &cookie)) != -EAGAIN) {
		n++;
		if (id < 0 || cookie == NULL) {
			g->bad_used++;
			continue;
		}
		g->tx_completed++;
		if (cookie != RG_FOREIGN)
			g->tx_free[g->tx_nfree++] = (uint16_t)((uintptr_t)cookie - 1);
	}
	return n;
}

/* How tx_put() lays a packet out in descriptors. */
enum tx_layout {
	TX_ONE,		/* one descriptor (of 0 bytes if buf_len is 0) */
	TX_EMPTIES,	/* cut after 20 bytes, an empty descriptor before, between and after */
	TX_EMPTIES_INDIRECT,	/* the same in an indirect table */
};

static int
tx_put(struct rawg *g, const struct vfe_vsock_pkt *pkt, const void *payload, uint32_t plen,
		uint32_t buf_len, enum tx_layout layout)
{
	struct vfe_vq *tx = &g->v.vq[VFE_VSOCK_TX];
	struct virtio_vsock_hdr hdr;
	struct vfe_buf b[5];
	unsigned int n = 1;
	uint32_t cut;
	uint64_t gpa;
	uint16_t i;
	int rc;

	if (buf_len > RG_TX_LEN)
		return -EINVAL;
	if (g->tx_nfree == 0)
		rg_poll(g);
	if (g->tx_nfree == 0)
		return -ENOSPC;
	i = g->tx_free[--g->tx_nfree];
	vfe_vsock_build(&hdr, pkt);
	memset(g->tx_buf[i], 0, buf_len);
	memcpy(g->tx_buf[i], &hdr, buf_len < sizeof(hdr) ? buf_len : sizeof(hdr));
	if (payload != NULL && plen != 0)
		memcpy(g->tx_buf[i] + sizeof(hdr), payload, plen);
	gpa = g->tx_gpa[i];
	b[0] = (struct vfe_buf){ .gpa = gpa, .len = buf_len };
	if (layout != TX_ONE) {
		cut = buf_len < 20 ? buf_len : 20;
		b[0].len = 0;
		b[1] = (struct vfe_buf){ .gpa = gpa, .len = cut };
		b[2] = (struct vfe_buf){ .gpa = gpa + cut, .len = 0 };
		b[3] = (struct vfe_buf){ .gpa = gpa + cut, .len = buf_len - cut };
		b[4] = (struct vfe_buf){ .gpa = gpa + buf_len, .len = 0 };
		n = 5;
	}
	rc = layout == TX_EMPTIES_INDIRECT ?
		vfe_vq_add_indirect(tx, b, n, (void *)(uintptr_t)(i + 1u)) :
		vfe_vq_add(tx, b, n, (void *)(uintptr_t)(i + 1u));
	if (rc < 0) {
		g->tx_nfree++;
		return rc;
	}
	vfe_vq_publish(tx);
	vfe_vq_kick(tx);
	return 0;
}

uint8_t *
rg_last_tx(const struct rawg *g)
{
	/* tx_put() took the buffer at the top of the free stack: it is just above it. */
	return g->tx_buf[g->tx_free[g->tx_nfree]];
}

int
rg_send(struct rawg *g, const struct vfe_vsock_pkt *pkt, const void *payload)
{
	if (pkt->len > RG_TX_LEN - 44)
		return -EINVAL;
	return tx_put(g, pkt, payload, pkt->len, 44 + pkt->len, TX_ONE);
}

int
rg_send_empties(struct rawg *g, const struct vfe_vsock_pkt *pkt, const void *payload,
		bool indirect)
{
	if (pkt->len > RG_TX_LEN - 44)
		return -EINVAL;
	return tx_put(g, pkt, payload, pkt->len, 44 + pkt->len,
		indirect ? TX_EMPTIES_INDIRECT : TX_EMPTIES);
}

uint64_t
rg_request_storm(struct rawg *g, uint32_t *gport, uint32_t hport, unsigned int ms)
{
	uint64_t end = hu_now_ms() + ms, sent = 0;

	while (hu_now_ms() < end) {
		struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, ++*gport, hport);

		if (sent + 2 < RG_LOG_MAX && rg_send(g, &req, NULL) == 0)
			sent++;
		if (rg_poll(g) == 0)
			usleep(100);
	}
	return sent;
}

int
rg_send_raw(struct rawg *g, const struct vfe_vsock_pkt *pkt, uint32_t buf_len)
{
	return tx_put(g, pkt, NULL, 0, buf_len, TX_ONE);
}

int
rg_find(const struct rawg *g, unsigned int from, uint16_t op, uint32_t guest_port,
		uint32_t host_port)
{
	unsigned int i;

	for (i = from; i < g->nlog; i++)
		if (g->log[i].p.op == op && g->log[i].p.dst_port == guest_port &&
				g->log[i].p.src_port == host_port)
			return (int)i;
	return -1;
}

bool
rg_is_rst(const struct rawg *g, int k, uint32_t gport, uint32_t hport, uint16_t type,
		char *why, size_t len)
{
	return rg_is_rst_from(g, k, HU_HOST_CID, gport, hport, type, why, len);
}

bool
rg_is_rst_from(const struct rawg *g, int k, uint64_t src_cid, uint32_t gport, uint32_t hport,
		uint16_t type, char *why, size_t len)
{
	const struct rg_pkt *e;

	if (k < 0 || (unsigned int)k >= g->nlog) {
		snprintf(why, len, "no RST to port %u from %u among %u packets", gport, hport,
			g->nlog);
		return false;
	}
	e = &g->log[k];
	if (e->p.op == VIRTIO_VSOCK_OP_RST && e->p.src_cid == src_cid &&
			e->p.dst_cid == HU_ATTACKER_CID && e->p.src_port == hport &&
			e->p.dst_port == gport && e->p.type == type && e->p.len == 0 &&
			e->p.flags == 0 && e->used_len == 44)
		return true;
	snprintf(why, len, "got op %u type %u %llu:%u -> %llu:%u len %u flags %#x used %u",
		e->p.op, e->p.type, (unsigned long long)e->p.src_cid, e->p.src_port,
		(unsigned long long)e->p.dst_cid, e->p.dst_port, e->p.len, e->p.flags,
		e->used_len);
	return false;
}

struct vfe_vsock_pkt
rg_hdr(uint16_t op, uint32_t gport, uint32_t hport)
{
	return (struct vfe_vsock_pkt){
		.src_cid = HU_ATTACKER_CID, .dst_cid = HU_HOST_CID,
		.src_port = gport, .dst_port = hport,
		.type = VIRTIO_VSOCK_TYPE_STREAM, .op = op,
		.buf_alloc = 256 * 1024,
	};
}

struct hu_flip
hu_flip_choose(uint64_t r, bool benign, uint16_t ring, const uint64_t good_gpa[8])
{
	static const uint32_t lens[] = { 44, 0, 0xffffffffu, 20, 4096, 1u << 31, 64, 100000 };
	/* rx: any room for a header within the buffer; tx: header alone or with spare bytes. */
	static const uint32_t ok_len[2][4] = {
		{ 44, 64, 2048, RG_RX_LEN }, { 44, 64, 4096, 60000 } };
	struct hu_flip w = {
		.queue = (unsigned int)(r & 1), .desc = (uint16_t)((r >> 1) & (ring - 1)),
		.field = HU_FLIP_LEN,
	};

	if (benign) {
		w.value = ok_len[r & 1][(r >> 8) & 3];
		return w;
	}
	/* Mostly valid values, so that many chains are walked while they change. */
	if ((r >> 40) & 3) {
		w.value = (r & 1) ? 44 : 64;
		return w;
	}
	switch ((r >> 16) & 3) {
	case 0:
		w.field = HU_FLIP_ADDR;
		switch ((r >> 8) & 7) {
		case 0:
			w.value = RG_FAR_AWAY;
			break;
		case 1:
			w.value = RG_REGION0_END - 8;
			break;
		case 2:
			w.value = UINT64_MAX - 4;
			break;
		default:
			w.value = good_gpa[(r >> 12) & 7];
			break;
		}
		break;
	case 1:
		w.value = lens[(r >> 20) & 7];
		break;
	case 2:
		w.field = HU_FLIP_FLAGS;
		w.value = (r >> 24) & 7;
		break;
	default:
		w.field = HU_FLIP_INDEX;
		w.value = (r >> 28) & 0xff;
		break;
	}
	return w;
}
