/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datapath environment (dp_env.h).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dp_env.h"
#include "tap.h"

#define APP_START_MS 15000
#define APP_STOP_MS 10000
#define IDLE_PAUSE_NS 10000

uint64_t dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int dp_raise_fd_limit(unsigned int want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur >= want)
		return 0;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	return rl.rlim_cur >= want ? 0 : -EMFILE;
}

/*
 * The app's worker lcore (1 with APP_PROC_EAL_DEFAULT) spins on its CPU: a
 * test sharing that CPU would get the time slices the scheduler leaves it,
 * and every round trip with the app would cost one. Stay off it.
 */
static void pin_off_worker(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return;
	CPU_CLR(1, &set);
	if (CPU_COUNT(&set) > 0)
		sched_setaffinity(0, sizeof(set), &set);
}

int dp_app_start(struct dp_env *e)
{
	char vm[400];
	const char *socks[2];

	memset(e, 0, sizeof(*e));
	if (app_proc_init(&e->app) < 0)
		return -1;
	app_proc_path(&e->app, "vm3.sock", e->sock, sizeof(e->sock));
	app_proc_path(&e->app, "vm3.vsock", e->uds, sizeof(e->uds));
	snprintf(vm, sizeof(vm), "cid=%d,socket=%s,uds=%s", DP_CID, e->sock, e->uds);
	socks[0] = e->sock;
	socks[1] = NULL;
	if (app_proc_start(&e->app, NULL, (const char *[]){ "--vm", vm, NULL }, socks,
			APP_START_MS) < 0) {
		app_proc_fini(&e->app);
		return -1;
	}
	pin_off_worker();
	return 0;
}

int dp_app_stop(struct dp_env *e, bool dump_log)
{
	int status;

	if (e->attached)
		dp_detach(e);
	status = app_proc_stop(&e->app, APP_STOP_MS);
	if (dump_log || status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		app_proc_dump_log(&e->app);
	app_proc_fini(&e->app);
	return status;
}

int dp_attach_quiet(struct dp_env *e, const struct vfe_vsock_conf *vc,
		const struct vfe_guest_conf *gc)
{
	/* Room for a 64 KiB tx buffer per ring entry besides the rx buffers. */
	static const struct vfe_vsock_conf big = { .mem = { .size = 32u << 20 } };
	int rc;

	/* VFE_RING=packed (the *-packed suites) makes the frontend lay out packed rings. */
	rc = vfe_vsock_attach(&e->v, e->sock, vc != NULL ? vc : &big);
	if (rc == 0 && e->v.vq[0].packed)
		tap_diag("packed rings: features %#llx", (unsigned long long)e->v.features);

	if (rc < 0) {
		tap_diag("attach: rc %d (%s): %s", rc, strerror(-rc), e->v.conn.err);
		return rc;
	}
	rc = vfe_guest_init(&e->g, &e->v, gc);
	if (rc < 0) {
		tap_diag("guest driver: rc %d (%s)", rc, strerror(-rc));
		vfe_guest_fini(&e->g);
		vfe_vsock_close(&e->v);
		return rc;
	}
	e->attached = true;
	return 0;
}

void dp_detach(struct dp_env *e)
{
	if (!e->attached)
		return;
	vfe_vsock_detach(&e->v, NULL, false);
	vfe_guest_fini(&e->g);
	vfe_vsock_close(&e->v);
	e->attached = false;
}

bool dp_tick(struct dp_env *e, uint64_t deadline)
{
	static const struct timespec pause = { .tv_nsec = IDLE_PAUSE_NS };

	if (vfe_guest_poll(&e->g) == 0)
		nanosleep(&pause, NULL);
	return dp_now_ns() < deadline;
}

static int uds_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	strcpy(a->sun_path, path);
	return 0;
}

int dp_listen(const struct dp_env *e, uint32_t port, int type)
{
	struct sockaddr_un a;
	char path[160];
	int fd, rc;

	snprintf(path, sizeof(path), "%s_%u", e->uds, port);
	if (uds_addr(&a, path) < 0)
		return -ENAMETOOLONG;
	unlink(path);
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1024) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int dp_accept(struct dp_env *e, int lfd, unsigned int ms)
{
	int fd = -EAGAIN;

	DP_WAIT(e, (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0 ||
		errno != EAGAIN, ms);
	return fd >= 0 ? fd : -errno;
}

int dp_host_connect(const struct dp_env *e, uint32_t port)
{
	struct sockaddr_un a;
	char line[32];
	int fd, n, rc;

	if (uds_addr(&a, e->uds) < 0)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	/* The app may close it at once (table full, no guest): EPIPE or ECONNRESET, no signal. */
	rc = (int)send(fd, line, (size_t)n, MSG_NOSIGNAL);
	if (rc != n) {
		rc = rc < 0 ? -errno : -EIO;
		close(fd);
		return rc;
	}
	/* Non-blocking from here on: the test's loop never waits in a syscall. */
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int dp_read_ok(struct dp_env *e, int fd, uint32_t *host_port, unsigned int ms)
{
	char line[32];
	size_t len = 0;
	ssize_t n = -1;
	unsigned long port;
	char *end;

	/* One byte at a time: what follows the line is the guest's stream. */
	while (len < sizeof(line) - 1) {
		if (!DP_WAIT(e, (n = read(fd, line + len, 1)) >= 0 || errno != EAGAIN, ms))
			return -ETIMEDOUT;
		if (n == 0)
			return -ENODATA;
		if (n < 0)
			return -errno;
		if (line[len++] == '\n')
			break;
	}
	line[len] = '\0';
	if (strncmp(line, "OK ", 3) != 0 || line[len - 1] != '\n')
		return -EPROTO;
	errno = 0;
	port = strtoul(line + 3, &end, 10);
	if (errno || end != line + len - 1 || port > UINT32_MAX)
		return -EPROTO;
	*host_port = (uint32_t)port;
	return 0;
}

struct vfe_guest_conn *dp_guest_connect(struct dp_env *e, uint32_t port, uint16_t type,
		unsigned int ms)
{
	struct vfe_guest_conn *c = vfe_guest_connect(&e->g, port, type);

	if (c == NULL)
		return NULL;
	DP_WAIT(e, c->state != VFE_GC_CONNECTING, ms);
	return c;
}

int dp_host_to_guest(struct dp_env *e, uint32_t port, struct vfe_guest_conn **gc,
		uint32_t *host_port, unsigned int ms)
{
	int fd = dp_host_connect(e, port);
	int rc;

	if (fd < 0)
		return fd;
	rc = dp_read_ok(e, fd, host_port, ms);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*gc = vfe_guest_accept(&e->g);
	if (*gc == NULL) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* ---- pattern streams ---- */

/* pattern_fill()/pattern_check() a word at a time where the stream is word-aligned. */
static void pat_fill(struct pattern *p, uint8_t *d, size_t len)
{
	while (len && p->left) {
		*d++ = pattern_next(p);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		p->state = pattern_xorshift(p->state);
		w = htole64(p->state);
		memcpy(d, &w, 8);
		p->offset += 8;
		d += 8;
		len -= 8;
	}
	while (len--)
		*d++ = pattern_next(p);
}

static size_t pat_check(struct pattern *p, const uint8_t *s, size_t len)
{
	size_t i = 0, bad;

	while (i < len && p->left) {
		if (pattern_next(p) != s[i])
			return i;
		i++;
	}
	while (len - i >= 8) {
		struct pattern save = *p;
		uint64_t w;

		p->state = pattern_xorshift(p->state);
		w = htole64(p->state);
		if (memcmp(&w, s + i, 8) != 0) {
			*p = save;
			bad = pattern_check(p, s + i, 8);
			return i + bad;
		}
		p->offset += 8;
		i += 8;
	}
	for (; i < len; i++)
		if (pattern_next(p) != s[i])
			return i;
	return len;
}

void dp_stream_init(struct dp_stream *s, uint64_t seed, uint64_t total)
{
	pattern_init(&s->pat, seed);
	s->fnv = PATTERN_FNV_INIT;
	s->total = total;
	s->done = 0;
	s->bad_at = UINT64_MAX;
	s->stage_off = 0;
	s->stage_len = 0;
}

bool dp_stream_check(struct dp_stream *s, const void *buf, size_t len)
{
	size_t good;

	if (s->bad_at != UINT64_MAX)
		return false;
	if (s->done + len > s->total) {
		s->bad_at = s->total;	/* more than was sent */
		return false;
	}
	good = pat_check(&s->pat, buf, len);
	s->fnv = fnv1a64(s->fnv, buf, len);
	if (good < len) {
		s->bad_at = s->done + good;
		return false;
	}
	s->done += len;
	return true;
}

bool dp_stream_ok(const struct dp_stream *s)
{
	return s->bad_at == UINT64_MAX && s->done == s->total;
}

/* Bytes staged for sending: generated once, resent until taken. */
static size_t stage(struct dp_stream *s)
{
	if (s->stage_off == s->stage_len) {
		uint64_t left = s->total - s->done;
		size_t n = left < DP_STAGE ? (size_t)left : DP_STAGE;

		pat_fill(&s->pat, s->stage, n);
		s->fnv = fnv1a64(s->fnv, s->stage, n);
		s->stage_off = 0;
		s->stage_len = n;
	}
	return s->stage_len - s->stage_off;
}

static void staged_taken(struct dp_stream *s, size_t n)
{
	s->stage_off += n;
	s->done += n;
}

long dp_host_send(int fd, struct dp_stream *s)
{
	size_t n = stage(s);
	ssize_t w;

	if (n == 0)
		return 0;
	w = send(fd, s->stage + s->stage_off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN ? 0 : -errno;
	staged_taken(s, (size_t)w);
	return w;
}

long dp_host_recv(int fd, struct dp_stream *s)
{
	static uint8_t buf[DP_STAGE * 4];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return -errno;
	if (n > 0)
		dp_stream_check(s, buf, (size_t)n);
	return n;
}

long dp_guest_send(struct dp_env *e, struct vfe_guest_conn *c, struct dp_stream *s)
{
	size_t n = stage(s);
	long w;

	if (n == 0)
		return 0;
	w = vfe_guest_send(&e->g, c, s->stage + s->stage_off, n);
	if (w > 0)
		staged_taken(s, (size_t)w);
	return w;
}

size_t dp_guest_recv(struct dp_env *e, struct vfe_guest_conn *c, struct dp_stream *s)
{
	static uint8_t buf[DP_APP_BUF_ALLOC];
	size_t n = vfe_guest_recv(&e->g, c, buf, sizeof(buf));

	if (n)
		dp_stream_check(s, buf, n);
	return n;
}

struct dp_log dp_log;

static void log_add(const struct vfe_vsock_pkt *pkt, uint32_t used_len, bool tx)
{
	if (dp_log.n == DP_LOG_MAX) {
		dp_log.overflow = true;
		return;
	}
	dp_log.e[dp_log.n++] = (struct dp_log_entry){ .p = *pkt, .used_len = used_len, .tx = tx };
}

void dp_log_rx(void *ctx, const struct vfe_vsock_pkt *pkt, uint32_t used_len)
{
	(void)ctx;
	log_add(pkt, used_len, false);
}

void dp_log_tx(void *ctx, const struct vfe_vsock_pkt *pkt)
{
	(void)ctx;
	log_add(pkt, 0, true);
}

void dp_log_clear(void)
{
	dp_log.n = 0;
	dp_log.overflow = false;
}
