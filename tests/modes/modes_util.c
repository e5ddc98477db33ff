/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the wait-mode tests (modes_util.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "modes_util.h"

#define SETUP_MS 5000

static uint8_t buf[MD_MAX_LEN];

static void
dir_init(struct md_dir *d, uint64_t seed)
{
	d->sent = 0;
	pattern_init(&d->tx, seed);
	dp_stream_init(&d->rx, seed, UINT64_MAX / 2);
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int
md_start(struct md_env *m, const char *const *extra)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->lfd = m->fd_a = m->fd_b = -1;
	if (ops_start(&m->o, false, false, extra) < 0) {
		snprintf(m->why, sizeof(m->why), "app did not start");
		return -1;
	}
	rc = dp_attach_quiet(&m->o.dp, NULL, NULL);
	if (rc < 0) {
		snprintf(m->why, sizeof(m->why), "attach: %s", strerror(-rc));
		return -1;
	}
	return md_connect(m);
}

int
md_connect(struct md_env *m)
{
	static unsigned int round;
	struct dp_env *e = &m->o.dp;
	uint32_t host_port;
	unsigned int i;

	close_fd(&m->fd_a);
	close_fd(&m->fd_b);
	close_fd(&m->lfd);
	round++;
	for (i = 0; i < MD_NB_WAYS; i++)
		dir_init(&m->dir[i], 1000 * round + i);
	m->lfd = dp_listen(e, MD_PORT_A, SOCK_STREAM);
	m->gc_a = m->lfd >= 0 ? dp_guest_connect(e, MD_PORT_A, VIRTIO_VSOCK_TYPE_STREAM,
		SETUP_MS) : NULL;
	m->fd_a = m->gc_a != NULL ? dp_accept(e, m->lfd, SETUP_MS) : -1;
	if (m->fd_a < 0 || m->gc_a->state != VFE_GC_ESTABLISHED) {
		snprintf(m->why, sizeof(m->why), "connection A not established");
		return -1;
	}
	vfe_guest_listen(&e->g, MD_PORT_B, true);
	m->fd_b = dp_host_to_guest(e, MD_PORT_B, &m->gc_b, &host_port, SETUP_MS);
	if (m->fd_b < 0) {
		snprintf(m->why, sizeof(m->why), "connection B: %s", strerror(-m->fd_b));
		return -1;
	}
	return 0;
}

int
md_stop(struct md_env *m, bool dump_log)
{
	close_fd(&m->fd_a);
	close_fd(&m->fd_b);
	close_fd(&m->lfd);
	if (dump_log)
		app_proc_dump_log(&m->o.dp.app);
	return ops_stop(&m->o);
}

double
md_app_cpu(const struct md_env *m)
{
	unsigned long utime = 0, stime = 0;
	char path[64], line[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)m->o.dp.app.pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	/* Fields after the command name (which may hold spaces): state is field 3. */
	p = p != NULL ? strrchr(line, ')') : NULL;
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			&utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

uint64_t
md_lost_kicks(struct md_env *m)
{
	uint64_t sum = 0, v;
	unsigned int lcore;
	char key[32];

	for (lcore = 0; lcore < 8; lcore++) {
		snprintf(key, sizeof(key), "%u.lost_kicks", lcore);
		v = ops_tel_u64(&m->o, "/vsock/lcores", key);
		if (v != UINT64_MAX)
			sum += v;
	}
	return sum;
}

uint64_t
md_worker_rq_wait(const struct md_env *m)
{
	unsigned long long run, wait;
	char path[320], comm[32];
	struct dirent *d;
	uint64_t res = UINT64_MAX;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->o.dp.app.pid);
	dir = opendir(path);
	while (dir != NULL && res == UINT64_MAX && (d = readdir(dir)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)m->o.dp.app.pid,
			d->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		/* DPDK 22.11 names its worker threads "rte-worker-<lcore>". */
		if (fgets(comm, sizeof(comm), f) != NULL && strncmp(comm, "rte-worker-", 11) == 0) {
			fclose(f);
			snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat",
				(int)m->o.dp.app.pid, d->d_name);
			f = fopen(path, "r");
			if (f != NULL && fscanf(f, "%llu %llu", &run, &wait) == 2)
				res = wait;
		}
		if (f != NULL)
			fclose(f);
	}
	if (dir != NULL)
		closedir(dir);
	return res;
}

void
md_sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

double
md_idle_cpu(struct md_env *m, unsigned int ms)
{
	uint64_t t0 = dp_now_ns();
	double c0 = md_app_cpu(m), c1;

	md_sleep_us(ms * 1000);
	c1 = md_app_cpu(m);
	if (c0 < 0 || c1 < 0)
		return -1;
	return (c1 - c0) / ((double)(dp_now_ns() - t0) / 1e9);
}

void
md_spin_us(struct md_env *m, unsigned int us)
{
	uint64_t end = dp_now_ns() + (uint64_t)us * 1000;

	while (dp_now_ns() < end)
		vfe_guest_poll(&m->o.dp.g);
}

static bool
way_from_guest(enum md_way way)
{
	return way == MD_A_G2H || way == MD_B_G2H;
}

/* Send @p len bytes of @p way's stream: everything, or false (why set) after @p deadline. */
static bool
send_all(struct md_env *m, enum md_way way, uint32_t len, uint64_t deadline)
{
	struct dp_env *e = &m->o.dp;
	struct vfe_guest_conn *gc = way == MD_A_G2H ? m->gc_a : m->gc_b;
	int fd = way == MD_A_H2G ? m->fd_a : m->fd_b;
	uint64_t last = dp_now_ns(), now;
	uint32_t off = 0;
	long n;

	pattern_fill(&m->dir[way].tx, buf, len);
	while (off < len) {
		if (way_from_guest(way)) {
			n = vfe_guest_send(&e->g, gc, buf + off, len - off);
		} else {
			n = send(fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN) {
				snprintf(m->why, sizeof(m->why), "host send: %s", strerror(errno));
				return false;
			}
		}
		if (n > 0)
			off += (uint32_t)n;
		else if (!dp_tick(e, deadline))
			break;
		now = dp_now_ns();
		m->max_gap_ns = now - last > m->max_gap_ns ? now - last : m->max_gap_ns;
		last = now;
	}
	m->dir[way].sent += off;
	if (off < len)
		snprintf(m->why, sizeof(m->why), "way %d: %u of %u bytes sent", way, off, len);
	return off == len;
}

/* Receive and check until @p way's stream reached @p until bytes; false (why set) if not. */
static bool
recv_until(struct md_env *m, enum md_way way, uint64_t until, uint64_t deadline)
{
	struct dp_env *e = &m->o.dp;
	struct dp_stream *s = &m->dir[way].rx;
	uint64_t last = dp_now_ns(), now;

	while (s->done < until && s->bad_at == UINT64_MAX) {
		bool got;

		now = dp_now_ns();
		m->max_gap_ns = now - last > m->max_gap_ns ? now - last : m->max_gap_ns;
		last = now;
		if (way_from_guest(way)) {
			got = dp_host_recv(way == MD_A_G2H ? m->fd_a : m->fd_b, s) > 0;
			/* The guest gets its tx buffers back and sends CREDIT_UPDATEs. */
			vfe_guest_poll(&e->g);
		} else {
			vfe_guest_poll(&e->g);
			got = dp_guest_recv(e, way == MD_A_H2G ? m->gc_a : m->gc_b, s) > 0;
		}
		if (!got && dp_now_ns() >= deadline)
			break;
	}
	if (s->bad_at != UINT64_MAX)
		snprintf(m->why, sizeof(m->why), "way %d: byte %llu differs", way,
			(unsigned long long)s->bad_at);
	else if (s->done < until)
		snprintf(m->why, sizeof(m->why), "way %d: %llu of %llu bytes arrived", way,
			(unsigned long long)s->done, (unsigned long long)until);
	return s->done >= until && s->bad_at == UINT64_MAX;
}

int64_t
md_one_way(struct md_env *m, enum md_way way, uint32_t len, unsigned int ms)
{
	uint64_t t0 = dp_now_ns(), deadline = t0 + (uint64_t)ms * 1000000;
	uint64_t until = m->dir[way].rx.done + len;

	m->max_gap_ns = 0;
	if (len == 0 || len > MD_MAX_LEN || !send_all(m, way, len, deadline) ||
	    !recv_until(m, way, until, deadline))
		return -1;
	return (int64_t)(dp_now_ns() - t0);
}

bool
md_tx_kick_armed(const struct md_env *m)
{
	const struct vfe_vq *vq = &m->o.dp.v.vq[VFE_VSOCK_TX];

	return vfe_vq_avail_event(vq) == vq->avail_idx;
}

int64_t
md_race_rearm(struct md_env *m, uint32_t len, unsigned int ms)
{
	uint64_t deadline = dp_now_ns() + (uint64_t)ms * 1000000;

	while (!md_tx_kick_armed(m) && dp_now_ns() < deadline)
		vfe_guest_poll(&m->o.dp.g);
	while (md_tx_kick_armed(m) && dp_now_ns() < deadline)
		;
	if (dp_now_ns() >= deadline) {
		snprintf(m->why, sizeof(m->why), "the worker did not sleep and wake in %u ms", ms);
		return -1;
	}
	return md_one_way(m, MD_A_G2H, len, ms);
}

int
md_send(struct md_env *m, enum md_way way, uint32_t len, unsigned int ms)
{
	if (len == 0 || len > MD_MAX_LEN)
		return -1;
	return send_all(m, way, len, dp_now_ns() + (uint64_t)ms * 1000000) ? 0 : -1;
}

int
md_recv_all(struct md_env *m, enum md_way way, unsigned int ms)
{
	return recv_until(m, way, m->dir[way].sent, dp_now_ns() + (uint64_t)ms * 1000000) ?
		0 : -1;
}

int64_t
md_round_trip(struct md_env *m, bool from_host, uint32_t len, unsigned int ms)
{
	enum md_way go = from_host ? MD_B_H2G : MD_A_G2H;
	enum md_way back = from_host ? MD_B_G2H : MD_A_H2G;
	uint64_t t0 = dp_now_ns(), deadline = t0 + (uint64_t)ms * 1000000;

	m->max_gap_ns = 0;
	if (len == 0 || len > MD_MAX_LEN || !send_all(m, go, len, deadline) ||
	    !recv_until(m, go, m->dir[go].rx.done + len, deadline) ||
	    !send_all(m, back, len, deadline) ||
	    !recv_until(m, back, m->dir[back].rx.done + len, deadline))
		return -1;
	return (int64_t)(dp_now_ns() - t0);
}
