/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the fault tests (faults_util.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "faults_util.h"

#define PEER_MS 5000
#define PEER_BYTES 3000
#define PEER_PORT 7000
#define IDLE_PAUSE_NS 20000

uint64_t
fx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
fx_start(struct fx_env *f, const char *const *extra)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->peer_lfd = -1;
	if (ops_start(&f->o, true, false, extra) < 0) {
		snprintf(f->why, sizeof(f->why), "app did not start");
		return -1;
	}
	memcpy(f->peer.sock, f->o.sock5, sizeof(f->peer.sock));
	app_proc_path(&f->o.dp.app, "vm5.vsock", f->peer.uds, sizeof(f->peer.uds));
	rc = dp_attach_quiet(&f->peer, NULL, NULL);
	if (rc < 0) {
		snprintf(f->why, sizeof(f->why), "VM 5 attach: %s", strerror(-rc));
		return -1;
	}
	f->peer_port = PEER_PORT;
	f->peer_lfd = dp_listen(&f->peer, f->peer_port, SOCK_STREAM);
	if (f->peer_lfd < 0) {
		snprintf(f->why, sizeof(f->why), "VM 5 listener: %s", strerror(-f->peer_lfd));
		return -1;
	}
	return 0;
}

int
fx_stop(struct fx_env *f, bool dump_log)
{
	if (f->peer_lfd >= 0)
		close(f->peer_lfd);
	f->peer_lfd = -1;
	dp_detach(&f->peer);
	if (dump_log)
		app_proc_dump_log(&f->o.dp.app);
	return ops_stop(&f->o);
}

void
fx_tick(struct fx_env *f)
{
	static const struct timespec pause = { .tv_nsec = IDLE_PAUSE_NS };
	unsigned int work = 0;

	if (f->o.dp.attached)
		work += vfe_guest_poll(&f->o.dp.g);
	if (f->peer.attached)
		work += vfe_guest_poll(&f->peer.g);
	if (work == 0)
		nanosleep(&pause, NULL);
}

int
fx_res(struct fx_env *f, struct fx_res *r)
{
	char buf[OPS_TEL_MAX];

	if (ops_tel(&f->o, "/vsock/resources", buf, sizeof(buf)) < 0 ||
	    ops_json_u64(buf, "mbufs_in_use", &r->mbufs_in_use) < 0 ||
	    ops_json_u64(buf, "mbufs_total", &r->mbufs_total) < 0 ||
	    ops_json_u64(buf, "open_fds", &r->open_fds) < 0 ||
	    ops_json_u64(buf, "conns", &r->conns) < 0 ||
	    ops_json_u64(buf, "rss_bytes", &r->rss) < 0) {
		snprintf(f->why, sizeof(f->why), "no /vsock/resources reply");
		return -1;
	}
	return 0;
}

static bool
res_equal(const struct fx_res *a, const struct fx_res *b)
{
	return a->mbufs_in_use == b->mbufs_in_use && a->open_fds == b->open_fds &&
	       a->conns == b->conns;
}

bool
fx_res_back(struct fx_env *f, const struct fx_res *base, unsigned int ms, struct fx_res *now)
{
	uint64_t deadline = fx_now_ms() + ms;
	uint64_t next = 0;

	memset(now, 0xff, sizeof(*now));
	for (;;) {
		/* Telemetry costs the app a thread wakeup: ask every 20 ms, tick in between. */
		if (fx_now_ms() >= next) {
			if (fx_res(f, now) == 0 && res_equal(now, base))
				return true;
			next = fx_now_ms() + 20;
		}
		if (fx_now_ms() >= deadline)
			break;
		fx_tick(f);
	}
	snprintf(f->why, sizeof(f->why), "resources: mbufs in use %llu (start %llu), fds %llu "
		"(start %llu), conns %llu (start %llu)",
		(unsigned long long)now->mbufs_in_use, (unsigned long long)base->mbufs_in_use,
		(unsigned long long)now->open_fds, (unsigned long long)base->open_fds,
		(unsigned long long)now->conns, (unsigned long long)base->conns);
	return false;
}

static bool
host_read_n(struct fx_env *f, int fd, struct dp_stream *s, uint64_t n)
{
	uint64_t want = s->done + n;

	FX_WAIT(f, (dp_host_recv(fd, s), s->done >= want || s->bad_at != UINT64_MAX), PEER_MS);
	return s->done == want && s->bad_at == UINT64_MAX;
}

int
fx_peer_check(struct fx_env *f)
{
	struct dp_env *e = &f->peer;
	struct dp_stream g2h, hrx, h2g, grx;
	struct vfe_guest_conn *c;
	uint64_t deadline;
	long r = -1;
	char b;
	int fd = -1;

	f->why[0] = '\0';
	f->seed++;
	c = vfe_guest_connect(&e->g, f->peer_port, VIRTIO_VSOCK_TYPE_STREAM);
	if (c == NULL) {
		snprintf(f->why, sizeof(f->why), "VM 5 connect: no slot");
		return -1;
	}
	deadline = fx_now_ms() + PEER_MS;
	while (fd < 0 && fx_now_ms() < deadline) {
		fd = accept4(f->peer_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			fx_tick(f);
	}
	if (fd < 0 || !FX_WAIT(f, c->state != VFE_GC_CONNECTING, PEER_MS) ||
	    c->state != VFE_GC_ESTABLISHED) {
		snprintf(f->why, sizeof(f->why), "VM 5 connect: %s", fd < 0 ? "no host accept" :
			c->reset ? "RST" : "no answer");
		goto fail;
	}
	dp_stream_init(&g2h, f->seed * 2, PEER_BYTES);
	dp_stream_init(&hrx, f->seed * 2, PEER_BYTES);
	dp_stream_init(&h2g, f->seed * 2 + 1, PEER_BYTES);
	dp_stream_init(&grx, f->seed * 2 + 1, PEER_BYTES);
	FX_WAIT(f, (dp_guest_send(e, c, &g2h), g2h.done == PEER_BYTES), PEER_MS);
	if (g2h.done != PEER_BYTES || !host_read_n(f, fd, &hrx, PEER_BYTES)) {
		snprintf(f->why, sizeof(f->why), "VM 5 -> host: %llu of %u bytes sent, %llu "
			"checked", (unsigned long long)g2h.done, PEER_BYTES,
			(unsigned long long)hrx.done);
		goto fail;
	}
	FX_WAIT(f, (dp_host_send(fd, &h2g), dp_guest_recv(e, c, &grx),
		grx.done == PEER_BYTES || grx.bad_at != UINT64_MAX), PEER_MS);
	if (!dp_stream_ok(&grx)) {
		snprintf(f->why, sizeof(f->why), "host -> VM 5: %llu of %u bytes checked",
			(unsigned long long)grx.done, PEER_BYTES);
		goto fail;
	}
	vfe_guest_shutdown(&e->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	if (!FX_WAIT(f, c->state == VFE_GC_CLOSED, PEER_MS)) {
		snprintf(f->why, sizeof(f->why), "VM 5 close: not closed");
		goto fail;
	}
	if (!FX_WAIT(f, (r = recv(fd, &b, 1, MSG_DONTWAIT)) >= 0 || errno != EAGAIN, PEER_MS) ||
	    r != 0) {
		snprintf(f->why, sizeof(f->why), "VM 5 close: host recv %ld, not EOF", r);
		goto fail;
	}
	if (e->g.errors != 0) {
		snprintf(f->why, sizeof(f->why), "VM 5 saw a protocol breach: %.200s", e->g.err);
		goto fail;
	}
	close(fd);
	vfe_guest_release(&e->g, c);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	vfe_guest_release(&e->g, c);
	return -1;
}

int
fx_host_gone(struct fx_env *f, int fd, unsigned int ms)
{
	static char buf[65536];
	uint64_t deadline = fx_now_ms() + ms;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			return 0;
		if (n < 0 && errno == ECONNRESET)
			return -ECONNRESET;
		if (n > 0)
			continue;
		if (fx_now_ms() >= deadline)
			return -ETIMEDOUT;
		fx_tick(f);
	}
}

uint64_t
fx_stat(struct fx_env *f, unsigned int cid, const char *path)
{
	char cmd[32];

	snprintf(cmd, sizeof(cmd), "/vsock/stats,%u", cid);
	return ops_tel_u64(&f->o, cmd, path);
}

