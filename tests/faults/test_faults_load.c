/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Load: 10 VMs x 1000 connections, all open at once, on one worker lcore. Each guest
 * connects 1000 times to its host listener; every connection then carries an 8-byte tag and
 * LOAD_BYTES of pattern from the guest, and LOAD_BYTES of another pattern back from the host,
 * each checked byte by byte at the far end; then every guest closes and every host socket
 * reads EOF. The app's memory (RSS) is reported before, with every connection open, and
 * after; its mbufs in use, descriptors and connections must return to their start values.
 * Bounded: every step must be done within LOAD_MS of the start, a bound for a stall, not a
 * speed (the run takes about 30 s here); the time taken is reported.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faults_util.h"
#include "pattern.h"
#include "tap.h"

#define NVMS 10
#define CONNS_PER_VM 1000
#define NCONNS (NVMS * CONNS_PER_VM)
#define LOAD_BYTES (64u * 1024)
#define CHUNK 4096u
#define TAG_LEN 8u
#define PORT 5000
#define FIRST_CID 3
#define LOAD_MS 140000u
/* Descriptors: 10,000 host sockets here and as many in the app, plus rings and listeners. */
#define FD_LIMIT 16384

#define MIN_U32(a, b) ((a) < (b) ? (a) : (b))

struct lconn {
	struct vfe_guest_conn *gc;
	int fd;
	struct pattern gtx, grx, htx, hrx;
	uint32_t g_sent, g_recv, h_sent, h_recv;
	uint8_t tag_got;
	uint8_t tag[TAG_LEN];
	bool bad, eof;
};

struct vm {
	struct dp_env e;
	int lfd;
	unsigned int opened;
};

static struct ops_env app;
static struct vm vms[NVMS];
static struct lconn conns[NCONNS];
static int epfd = -1;
static int host_fd_conn[65536];	/* accepted fd -> connection index + 1, 0 while tagless */

static uint64_t
seed_of(unsigned int idx, unsigned int dir)
{
	return ((uint64_t)idx << 8 | dir) * 0x9e3779b97f4a7c15ULL + 1;
}

static int
start_app(void)
{
	static struct dp_env *envs[NVMS];
	const struct ops_many v = { .n = NVMS, .first_cid = FIRST_CID, .mem_mb = "1024",
		.wait = true };
	unsigned int i;

	for (i = 0; i < NVMS; i++)
		envs[i] = &vms[i].e;
	return ops_start_many(&app, &v, envs);
}

/* The app's descriptors as "fd -> target" lines, for a diagnostic when the count is off. */
#define FD_LIST_MAX 256
static char fd_list[2][FD_LIST_MAX][340];
static unsigned int fd_list_n[2];

static void
fds_snapshot(unsigned int which)
{
	char dir[64], path[352], target[64];
	struct dirent *d;
	DIR *dp;

	fd_list_n[which] = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)app.dp.app.pid);
	dp = opendir(dir);
	if (dp == NULL)
		return;
	while ((d = readdir(dp)) != NULL && fd_list_n[which] < FD_LIST_MAX) {
		ssize_t n;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		snprintf(fd_list[which][fd_list_n[which]++], sizeof(fd_list[0][0]), "%s -> %s",
			 d->d_name, target);
	}
	closedir(dp);
}

/* The descriptors in one snapshot and not in the other, both ways. */
static void
fds_diff(void)
{
	unsigned int w, i, j;

	for (w = 0; w < 2; w++)
		for (i = 0; i < fd_list_n[w]; i++) {
			for (j = 0; j < fd_list_n[!w]; j++)
				if (strcmp(fd_list[w][i], fd_list[!w][j]) == 0)
					break;
			if (j == fd_list_n[!w])
				tap_diag("fd %s: %s", w ? "after only" : "attached only",
					 fd_list[w][i]);
		}
}

static bool
res_read(struct fx_res *r)
{
	char buf[OPS_TEL_MAX];
	int tries;

	/* A query can meet a telemetry socket that is not serving yet, just after start-up. */
	for (tries = 0; tries < 30; tries++) {
		if (ops_tel(&app, "/vsock/resources", buf, sizeof(buf)) == 0 &&
		    ops_json_u64(buf, "mbufs_in_use", &r->mbufs_in_use) == 0 &&
		    ops_json_u64(buf, "mbufs_total", &r->mbufs_total) == 0 &&
		    ops_json_u64(buf, "open_fds", &r->open_fds) == 0 &&
		    ops_json_u64(buf, "conns", &r->conns) == 0 &&
		    ops_json_u64(buf, "rss_bytes", &r->rss) == 0)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

static unsigned int
poll_guests(void)
{
	unsigned int i, work = 0;

	for (i = 0; i < NVMS; i++)
		work += vfe_guest_poll(&vms[i].e.g);
	return work;
}

/* Accept what the listeners have; a socket is mapped to its connection once its tag arrives. */
static unsigned int
accept_all(void)
{
	unsigned int i, n = 0;
	int fd;

	for (i = 0; i < NVMS; i++) {
		while ((fd = accept4(vms[i].lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET,
						  .data.fd = fd };

			if (fd >= (int)(sizeof(host_fd_conn) / sizeof(host_fd_conn[0])) ||
			    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
				close(fd);
				continue;
			}
			host_fd_conn[fd] = 0;
			n++;
		}
	}
	return n;
}

/* Guest side of connection @p k: send tag + pattern within credit, check what came back. */
static void
guest_io(unsigned int k)
{
	static uint8_t buf[LOAD_BYTES + TAG_LEN];
	struct lconn *c = &conns[k];
	struct vfe_guest *g = &vms[k / CONNS_PER_VM].e.g;
	uint32_t total = TAG_LEN + LOAD_BYTES;
	size_t n;
	long w;

	if (c->gc == NULL || c->gc->state != VFE_GC_ESTABLISHED)
		return;
	if (c->g_sent < total) {
		struct pattern p = c->gtx;
		uint32_t i, len = MIN_U32(total - c->g_sent, CHUNK);

		/* Regenerate from where the last send stopped; commit only what was taken. */
		for (i = 0; i < len; i++) {
			uint32_t off = c->g_sent + i;

			buf[i] = off < TAG_LEN ? (uint8_t)((uint64_t)k >> (8 * off)) :
				pattern_next(&p);
		}
		w = vfe_guest_send(g, c->gc, buf, len);
		for (i = 0; w > 0 && i < (uint32_t)w; i++)
			if (c->g_sent++ >= TAG_LEN)
				pattern_next(&c->gtx);
	}
	while (vfe_guest_rx_avail(c->gc) > 0) {
		n = vfe_guest_recv(g, c->gc, buf, sizeof(buf));
		if (pattern_check(&c->grx, buf, n) != n || c->g_recv + n > LOAD_BYTES)
			c->bad = true;
		c->g_recv += (uint32_t)n;
	}
}

/* Host side of the socket @p fd: read the tag, then check the pattern, send ours. */
static void
host_io(int fd)
{
	static uint8_t buf[LOAD_BYTES + TAG_LEN];
	struct lconn *c = NULL;
	ssize_t n;

	for (;;) {
		if (host_fd_conn[fd] == 0) {
			uint8_t tag[TAG_LEN];
			uint64_t k = 0;
			unsigned int i;

			n = recv(fd, tag, TAG_LEN, MSG_DONTWAIT | MSG_PEEK);
			if (n < (ssize_t)TAG_LEN)
				return;
			recv(fd, tag, TAG_LEN, MSG_DONTWAIT);
			for (i = 0; i < TAG_LEN; i++)
				k |= (uint64_t)tag[i] << (8 * i);
			if (k >= NCONNS || conns[k].fd >= 0) {
				close(fd);
				return;
			}
			host_fd_conn[fd] = (int)k + 1;
			conns[k].fd = fd;
		}
		c = &conns[host_fd_conn[fd] - 1];
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			c->eof = true;
		if (n <= 0)
			break;
		if (pattern_check(&c->hrx, buf, (size_t)n) != (size_t)n ||
		    c->h_recv + n > LOAD_BYTES)
			c->bad = true;
		c->h_recv += (uint32_t)n;
	}
	while (c->h_sent < LOAD_BYTES) {
		struct pattern p = c->htx;
		uint32_t len = MIN_U32(LOAD_BYTES - c->h_sent, 4 * CHUNK);

		pattern_fill(&p, buf, len);
		n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n <= 0)
			break;
		pattern_fill(&c->htx, buf, (size_t)n);
		c->h_sent += (uint32_t)n;
	}
}

static void
host_poll(void)
{
	struct epoll_event ev[256];
	int i, n;

	n = epoll_wait(epfd, ev, 256, 0);
	for (i = 0; i < n; i++)
		host_io(ev[i].data.fd);
}

static bool
conn_done(const struct lconn *c)
{
	return c->fd >= 0 && c->g_sent == TAG_LEN + LOAD_BYTES && c->h_recv == LOAD_BYTES &&
	       c->h_sent == LOAD_BYTES && c->g_recv == LOAD_BYTES;
}

int
main(void)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 16u << 20 } };
	static const struct vfe_guest_conf gc = { .buf_alloc = 16384, .tx_max_payload = 4096 };
	struct fx_res before = { 0 }, open = { 0 }, after = { 0 }, attached = { 0 };
	uint64_t t0 = fx_now_ms(), deadline = t0 + LOAD_MS, t_open, t_xfer;
	unsigned int i, k, established = 0, done = 0, bad = 0, eofs = 0;
	int status, rc;

	rc = dp_raise_fd_limit(FD_LIMIT);
	if (!tap_ok(rc == 0, "open file limit raised to %u (rc %d)", FD_LIMIT, rc))
		return tap_done();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!tap_ok(start_app() == 0, "app started with %u VMs", NVMS))
		return tap_done();
	/* Stay off the worker's CPU, as the other tests do. */
	{
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	rc = res_read(&before) ? 0 : -1;
	tap_ok(rc == 0, "before: RSS %" PRIu64 " KiB, %" PRIu64 " fds, %" PRIu64
		" mbufs in pools", before.rss >> 10, before.open_fds, before.mbufs_total);
	for (i = 0; i < NVMS; i++) {
		rc = dp_attach_quiet(&vms[i].e, &vc, &gc);
		vms[i].lfd = rc == 0 ? dp_listen(&vms[i].e, PORT, SOCK_STREAM) : -1;
		if (rc < 0 || vms[i].lfd < 0)
			break;
	}
	if (!tap_ok(i == NVMS, "%u guests attached, each with a host listener", NVMS))
		goto out;
	/*
	 * The baseline once the app has taken in the attaches: the last guest's vhost-user
	 * messages (its eventfds) may still be on their way when the test sees it attached.
	 */
	{
		struct fx_res prev;
		uint64_t end = fx_now_ms() + 5000;

		res_read(&attached);
		do {
			prev = attached;
			usleep(200 * 1000);
			poll_guests();
			res_read(&attached);
		} while (attached.open_fds != prev.open_fds && fx_now_ms() < end);
	}
	fds_snapshot(0);
	for (k = 0; k < NCONNS; k++) {
		conns[k].fd = -1;
		pattern_init(&conns[k].gtx, seed_of(k, 0));
		pattern_init(&conns[k].hrx, seed_of(k, 0));
		pattern_init(&conns[k].htx, seed_of(k, 1));
		pattern_init(&conns[k].grx, seed_of(k, 1));
	}

	/* Open them all; nothing is sent until every one is established. */
	while (established < NCONNS && fx_now_ms() < deadline) {
		for (i = 0; i < NVMS; i++) {
			struct vm *v = &vms[i];

			while (v->opened < CONNS_PER_VM) {
				struct lconn *c = &conns[i * CONNS_PER_VM + v->opened];

				c->gc = vfe_guest_connect(&v->e.g, PORT, VIRTIO_VSOCK_TYPE_STREAM);
				if (c->gc == NULL)
					break;
				v->opened++;
			}
		}
		poll_guests();
		accept_all();
		established = 0;
		for (k = 0; k < NCONNS; k++)
			established += conns[k].gc != NULL &&
				       conns[k].gc->state == VFE_GC_ESTABLISHED;
	}
	t_open = fx_now_ms() - t0;
	res_read(&open);
	tap_ok(established == NCONNS && open.conns == NCONNS, "%u connections established at once "
		"(app holds %" PRIu64 ", %" PRIu64 " ms)", established, open.conns, t_open);
	tap_diag("memory: app RSS %" PRIu64 " KiB before, %" PRIu64 " KiB with %u guests "
		"attached, %" PRIu64 " KiB with %u connections open: %" PRIu64 " bytes per "
		"connection", before.rss >> 10, attached.rss >> 10, NVMS, open.rss >> 10, NCONNS,
		open.rss > attached.rss ? (open.rss - attached.rss) / NCONNS : 0);
	tap_diag("descriptors: app holds %" PRIu64 " with every connection open (%" PRIu64
		" before)", open.open_fds, attached.open_fds);

	/* Every connection both ways at once. */
	t_xfer = fx_now_ms();
	while (done < NCONNS && fx_now_ms() < deadline) {
		unsigned int work = poll_guests();

		for (k = 0; k < NCONNS; k++)
			guest_io(k);
		host_poll();
		(void)work;
		done = 0;
		for (k = 0; k < NCONNS; k++)
			done += conn_done(&conns[k]);
	}
	for (k = 0; k < NCONNS; k++)
		bad += conns[k].bad;
	if (res_read(&after))
		tap_diag("memory: app RSS %" PRIu64 " KiB after the transfer, %" PRIu64 " mbufs "
			"in use", after.rss >> 10, after.mbufs_in_use);
	tap_ok(done == NCONNS && bad == 0, "%u connections carried %u bytes each way, every byte "
		"checked (%u short, %u wrong, %" PRIu64 " ms)", NCONNS, LOAD_BYTES, NCONNS - done,
		bad, fx_now_ms() - t_xfer);

	/* Close from the guests: every host socket reads EOF. */
	for (k = 0; k < NCONNS; k++)
		if (conns[k].gc != NULL)
			vfe_guest_shutdown(&vms[k / CONNS_PER_VM].e.g, conns[k].gc,
				VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	while (eofs < NCONNS && fx_now_ms() < deadline) {
		poll_guests();
		host_poll();
		eofs = 0;
		for (k = 0; k < NCONNS; k++)
			eofs += conns[k].eof;
	}
	tap_ok(eofs == NCONNS, "every host socket read EOF after the guest closed (%u)", eofs);
	for (k = 0; k < NCONNS; k++) {
		if (conns[k].fd >= 0)
			close(conns[k].fd);
		if (conns[k].gc != NULL)
			vfe_guest_release(&vms[k / CONNS_PER_VM].e.g, conns[k].gc);
	}
	{
		uint64_t end = fx_now_ms() + 5000;

		while (fx_now_ms() < end) {
			poll_guests();
			if (res_read(&after) && after.conns == 0 &&
			    after.mbufs_in_use == attached.mbufs_in_use &&
			    after.open_fds == attached.open_fds)
				break;
			usleep(20000);
		}
	}
	tap_ok(after.conns == 0 && after.mbufs_in_use == attached.mbufs_in_use &&
		after.open_fds == attached.open_fds, "after: connections %" PRIu64
		", mbufs in use %" PRIu64 " (start %" PRIu64 "), fds %" PRIu64 " (start %" PRIu64 ")", after.conns,
		after.mbufs_in_use, attached.mbufs_in_use, after.open_fds, attached.open_fds);
	if (after.open_fds != attached.open_fds) {
		fds_snapshot(1);
		fds_diff();
	}
	tap_diag("memory: app RSS %" PRIu64 " KiB after every connection closed", after.rss >> 10);
	for (i = 0; i < NVMS; i++)
		if (vms[i].e.g.errors)
			tap_diag("VM %u: %s", FIRST_CID + i, vms[i].e.g.err);
	tap_diag("the soak took %" PRIu64 " ms", fx_now_ms() - t0);
out:
	for (i = 0; i < NVMS; i++) {
		if (vms[i].lfd > 0)
			close(vms[i].lfd);
		dp_detach(&vms[i].e);
	}
	status = app_proc_stop(&app.dp.app, 20000);
	if (tap_failed || status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		app_proc_dump_log(&app.dp.app);
	app_proc_fini(&app.dp.app);
	app_proc_remove_eal_files(app.prefix);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
