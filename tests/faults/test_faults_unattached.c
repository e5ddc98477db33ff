/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A host program that connects to a VM's hybrid vsock socket never waits forever, whatever
 * the state of the VM: before its first frontend attaches, between a detach and the next
 * attach, and with a frontend whose guest driver is not ready (no rx buffers) or never
 * answers. Without a guest a CONNECT line gets a close without OK (EOF, counted in
 * conns_refused); with a guest that does not answer, the close comes with the connect
 * timeout (errors.conn_timeout). A client still writing its line when the guest attaches
 * goes on to it, and with a guest a malformed line is closed at once. The app's resources
 * come back to their start values, and VM 5 on the same worker never notices.
 *
 * Bounds are progress bounds (the app's 2 s timeout and a wide margin), never latencies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "faults_checks.h"
#include "faults_util.h"
#include "tap.h"

#define PORT 5000
#define CLIENTS 20
#define XFER (256u * 1024)
#define WAIT_MS 5000
/* The app's connect and line timeout (CONN_TIMEOUT_MS_DEFAULT). */
#define TIMEOUT_MS 2000
/* Whatever closes a client does so well within this, on a loaded machine too. */
#define CLOSE_MS (TIMEOUT_MS + 8000)

static struct fx_env env;

/* How a host client's socket ended, and how many bytes came before (an OK line would). */
struct answer {
	int end;	/* 0 EOF, -ECONNRESET, -ETIMEDOUT */
	size_t bytes;
};

/* Connect to VM 3's hybrid vsock socket and write @p line (may be ""): a non-blocking fd. */
static int
client(const char *line)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(line);
	int fd;

	if (strlen(env.o.dp.uds) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, env.o.dp.uds);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (len && send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Poll the guests while waiting: VM 5 always, VM 3 only if @p poll_vm3 (see wait_close()). */
static void
tick(bool poll_vm3)
{
	static const struct timespec pause = { .tv_nsec = 200000 };

	if (poll_vm3 && env.o.dp.attached)
		vfe_guest_poll(&env.o.dp.g);
	if (env.peer.attached)
		vfe_guest_poll(&env.peer.g);
	nanosleep(&pause, NULL);
}

/* Read what @p fd holds into @p a; whether its far side closed it (a->end then set). */
static bool
drain(int fd, struct answer *a)
{
	char buf[256];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		a->bytes += (size_t)n;
	if (n == 0 || errno == ECONNRESET) {
		a->end = n == 0 ? 0 : -ECONNRESET;
		return true;
	}
	return false;
}

/*
 * Wait up to @p ms, all at once, for the far side of each of the @p n sockets @p fds to close
 * it, and close them; a negative fd is client()'s error, which becomes its answer. VM 3's
 * guest driver is polled only if @p poll_vm3: a guest that never answers is one never polled.
 */
static void
wait_close_all(const int *fds, unsigned int n, unsigned int ms, bool poll_vm3,
	       struct answer *a)
{
	uint64_t deadline = fx_now_ms() + ms;
	unsigned int i, open = 0;
	bool done[CLIENTS] = { false };

	for (i = 0; i < n; i++) {
		a[i] = (struct answer){ .end = fds[i] < 0 ? fds[i] : -ETIMEDOUT };
		done[i] = fds[i] < 0;
		open += !done[i];
	}
	while (open) {
		for (i = 0; i < n; i++) {
			if (!done[i] && drain(fds[i], &a[i])) {
				done[i] = true;
				open--;
			}
		}
		if (!open || fx_now_ms() >= deadline)
			break;
		tick(poll_vm3);
	}
	for (i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

static struct answer
wait_close(int fd, unsigned int ms, bool poll_vm3)
{
	struct answer a;

	wait_close_all(&fd, 1, ms, poll_vm3, &a);
	return a;
}

static const char *
end_str(int end)
{
	return end == 0 ? "EOF" : end == -ETIMEDOUT ? "still open" : strerror(-end);
}

static uint64_t
stat3(const char *path)
{
	return fx_stat(&env, FX_CID, path);
}

static uint64_t
vm3_running(void)
{
	return ops_tel_u64(&env.o, "/vsock/vms", "3.running");
}

/* @p n clients write a CONNECT line to VM 3, which has no guest: each reads EOF, no byte. */
static void
refused_clients(unsigned int n, const char *what)
{
	uint64_t refused0 = stat3("conns_refused");
	unsigned int i, eof = 0, silent = 0;
	struct answer a[CLIENTS];
	int fds[CLIENTS];

	for (i = 0; i < n; i++)
		fds[i] = client("CONNECT 5000\n");
	wait_close_all(fds, n, CLOSE_MS, false, a);
	for (i = 0; i < n; i++) {
		eof += a[i].end == 0;
		silent += a[i].bytes == 0;
		if (a[i].end != 0 || a[i].bytes != 0)
			tap_diag("%s: client %u: %s, %zu bytes", what, i, end_str(a[i].end),
				 a[i].bytes);
	}
	tap_ok(eof == n && silent == n, "%s: %u CONNECT lines closed within %u ms, EOF without "
	       "a byte (%u EOF, %u without a byte)", what, n, CLOSE_MS, eof, silent);
	tap_ok(stat3("conns_refused") - refused0 == n, "%s: conns_refused counts them (%llu)",
	       what, (unsigned long long)(stat3("conns_refused") - refused0));
}

/* Before the first attach: CONNECT lines, an unfinished line, a client that writes nothing. */
static void
case_before_attach(const struct fx_res *base)
{
	uint64_t line0 = stat3("errors.conn_connect_line");
	int fds[2] = { -1, -1 };
	struct answer a[2];

	tap_ok(vm3_running() == 0, "before attach: VM 3 has no frontend");
	refused_clients(CLIENTS, "before attach");
	fds[0] = client("CONNECT 50");
	fds[1] = client("");
	wait_close_all(fds, 2, CLOSE_MS, false, a);
	tap_ok(a[0].end == 0 && a[0].bytes == 0 && a[1].end == 0 && a[1].bytes == 0,
	       "before attach: an unfinished line and a silent client are closed by the line "
	       "timeout (%s, %s)", end_str(a[0].end), end_str(a[1].end));
	tap_ok(stat3("errors.conn_connect_line") - line0 == 2,
	       "before attach: both count in errors.conn_connect_line (%llu)",
	       (unsigned long long)(stat3("errors.conn_connect_line") - line0));
	fx_check_back(&env, base, WAIT_MS, "before attach");
	fx_check_peer(&env, "before attach");
}

/* XFER checked bytes each way over an established host <-> guest connection. */
static bool
xfer(int fd, struct vfe_guest_conn *gc, uint64_t seed)
{
	struct dp_env *e = &env.o.dp;
	struct dp_stream htx, grx, gtx, hrx;

	dp_stream_init(&htx, seed, XFER);
	dp_stream_init(&grx, seed, XFER);
	dp_stream_init(&gtx, seed + 1, XFER);
	dp_stream_init(&hrx, seed + 1, XFER);
	FX_WAIT(&env, (dp_host_send(fd, &htx), dp_guest_recv(e, gc, &grx),
		dp_guest_send(e, gc, &gtx), dp_host_recv(fd, &hrx),
		(grx.done == XFER && hrx.done == XFER) || grx.bad_at != UINT64_MAX ||
		hrx.bad_at != UINT64_MAX), 20000);
	return dp_stream_ok(&grx) && dp_stream_ok(&hrx);
}

static void
close_both(int fd, struct vfe_guest_conn *gc)
{
	struct dp_env *e = &env.o.dp;

	close(fd);
	FX_WAIT(&env, gc->state == VFE_GC_CLOSED || gc->peer_shut != 0, WAIT_MS);
	vfe_guest_shutdown(&e->g, gc, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	FX_WAIT(&env, gc->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_release(&e->g, gc);
}

/*
 * A client mid-line when the guest attaches finishes its line and gets the guest; then a
 * CONNECT made with the guest there; and a malformed line, closed at once.
 */
static void
case_attached(const struct fx_res *base)
{
	struct dp_env *e = &env.o.dp;
	uint64_t line0, t0, accepted_ms;
	struct vfe_guest_conn *gc = NULL;
	uint32_t host_port;
	struct fx_res r;
	struct answer a;
	int fd;

	t0 = fx_now_ms();
	fd = client("CONNECT 50");
	/* Accepted while VM 3 has no frontend: the connection is counted. */
	tap_ok(fd >= 0 && FX_WAIT(&env, fx_res(&env, &r) == 0 && r.conns == base->conns + 1,
				  WAIT_MS), "mid-line: the app took the client before any attach");
	if (!tap_ok(dp_attach_quiet(e, NULL, NULL) == 0 &&
		    FX_WAIT(&env, vm3_running() == 1, WAIT_MS), "VM 3 attached"))
		return;
	vfe_guest_listen(&e->g, PORT, true);
	accepted_ms = fx_now_ms() - t0;
	if (accepted_ms + 500 < TIMEOUT_MS) {
		tap_ok(fd >= 0 && send(fd, "00\n", 3, MSG_NOSIGNAL) == 3 &&
		       dp_read_ok(e, fd, &host_port, WAIT_MS) == 0 &&
		       FX_WAIT(&env, (gc = vfe_guest_accept(&e->g)) != NULL, WAIT_MS),
		       "mid-line: the rest of the line after the attach reaches the guest, OK");
		tap_ok(gc && xfer(fd, gc, 1), "mid-line: %u checked bytes each way", XFER);
		if (gc)
			close_both(fd, gc);
		else if (fd >= 0)
			close(fd);
	} else {
		/* The line timed out while the attach ran: nothing to assert about the line. */
		tap_ok(1, "# SKIP mid-line: the attach took %llu ms of the %u ms line timeout",
		       (unsigned long long)accepted_ms, TIMEOUT_MS);
		tap_ok(1, "# SKIP mid-line: no transfer");
		if (fd >= 0)
			close(fd);
	}

	gc = NULL;
	fd = dp_host_to_guest(e, PORT, &gc, &host_port, WAIT_MS);
	tap_ok(fd >= 0 && gc, "attached: CONNECT %u answered OK %u", PORT, host_port);
	tap_ok(fd >= 0 && gc && xfer(fd, gc, 3), "attached: %u checked bytes each way", XFER);
	if (fd >= 0 && gc)
		close_both(fd, gc);
	else if (fd >= 0)
		close(fd);

	line0 = stat3("errors.conn_connect_line");
	a = wait_close(client("CONNECT 5x00\n"), CLOSE_MS, true);
	tap_ok(a.end == 0 && a.bytes == 0 && stat3("errors.conn_connect_line") - line0 == 1,
	       "attached: a malformed line is closed without a byte (%s), counted", end_str(a.end));
	vfe_guest_listen(&e->g, PORT, false);
	dp_check_guest(e, "attached");
	/* The attached device has descriptors of its own: resources are compared after detach. */
}

/* Between a detach and the next attach, as before the first one. */
static void
case_after_detach(const struct fx_res *base)
{
	dp_detach(&env.o.dp);
	tap_ok(FX_WAIT(&env, vm3_running() == 0, WAIT_MS), "after detach: VM 3 has no frontend");
	refused_clients(CLIENTS, "after detach");
	fx_check_back(&env, base, WAIT_MS, "after detach");
	fx_check_peer(&env, "after detach");
}

/*
 * A frontend is attached but its guest does not answer: the CONNECT waits for the REQUEST's
 * answer, and the connect timeout closes it.
 */
static void
no_answer(const char *what)
{
	uint64_t timeout0 = stat3("errors.conn_timeout"), refused0 = stat3("conns_refused");
	struct answer a = wait_close(client("CONNECT 5000\n"), CLOSE_MS, false);

	tap_ok(a.end == 0 && a.bytes == 0, "%s: CONNECT closed within %u ms without a byte (%s)",
	       what, CLOSE_MS, end_str(a.end));
	tap_ok(stat3("errors.conn_timeout") - timeout0 == 1 &&
	       stat3("conns_refused") == refused0,
	       "%s: by the connect timeout (errors.conn_timeout +%llu, conns_refused +%llu)", what,
	       (unsigned long long)(stat3("errors.conn_timeout") - timeout0),
	       (unsigned long long)(stat3("conns_refused") - refused0));
}

static void
case_guest_not_ready(const struct fx_res *base)
{
	struct dp_env *e = &env.o.dp;
	int rc;

	/* The device runs, but no guest driver posts rx buffers. */
	rc = vfe_vsock_attach(&e->v, e->sock, NULL);
	if (tap_ok(rc == 0 && FX_WAIT(&env, vm3_running() == 1, WAIT_MS),
		   "driver not ready: VM 3's device runs without rx buffers (%d)", rc))
		no_answer("driver not ready");
	if (rc == 0) {
		vfe_vsock_detach(&e->v, NULL, false);
		vfe_vsock_close(&e->v);
	}
	tap_ok(FX_WAIT(&env, vm3_running() == 0, WAIT_MS), "driver not ready: detached");
	fx_check_back(&env, base, WAIT_MS, "driver not ready");

	/* rx buffers posted, but the guest never reads them. */
	if (tap_ok(dp_attach_quiet(e, NULL, NULL) == 0 &&
		   FX_WAIT(&env, vm3_running() == 1, WAIT_MS), "silent guest: VM 3 attached")) {
		e->attached = false;	/* fx_tick must not poll it */
		no_answer("silent guest");
		e->attached = true;
		dp_detach(e);
	}
	tap_ok(FX_WAIT(&env, vm3_running() == 0, WAIT_MS), "silent guest: detached");
	fx_check_back(&env, base, WAIT_MS, "silent guest");
	fx_check_peer(&env, "guest does not answer");
}

int
main(void)
{
	struct fx_res base = { 0 };
	int status, rc;

	if (!tap_ok(fx_start(&env, NULL) == 0, "app started with VMs 3 and 5")) {
		tap_diag("%s", env.why);
		return tap_done();
	}
	rc = fx_res(&env, &base);
	if (tap_ok(rc == 0, "start resources read (%llu mbufs, %llu fds, %llu conns)",
		   (unsigned long long)base.mbufs_in_use,
		   (unsigned long long)base.open_fds, (unsigned long long)base.conns)) {
		case_before_attach(&base);
		case_attached(&base);
		case_after_detach(&base);
		case_guest_not_ready(&base);
	}
	status = fx_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
