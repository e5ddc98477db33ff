/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile host programs on a VM's hybrid vsock socket: garbage, overlong and endless CONNECT
 * lines, a line without its newline and then a close (what crashed Cloud Hypervisor),
 * clients that connect and vanish, a client that never reads while the guest sends, and a
 * thousand sockets at once.
 *
 * Only the offending socket may suffer: after every case a well-behaved host program
 * connects to the same VM (3) and exchanges checked bytes with its guest, and VM 5, on the
 * same worker lcore, does the same in the other direction. At the end the app exits 0 on
 * SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile_util.h"
#include "tap.h"

#define MS 3000
#define GUEST_PORT 5000
#define SILENT_PORT 5001
#define LINE_TIMEOUT_MS 2000
/*
 * A socket the line timeout closes is closed after it, and before this bound past it: a
 * stalled timer list, not a slow machine. Measured from before the connect, so never early.
 */
#define LATE_MS 10000
#define CHECK_BYTES 2000
#define MANY 1100

static struct hu_env env;
static struct dp_env *vm3 = &env.o.dp;

static void
peer_check(const char *what)
{
	if (!tap_ok(hu_peer_check(&env) == 0, "%s: VM 5 on the same lcore still works", what))
		tap_diag("%s", env.why);
}

/* A non-blocking client socket connected to VM 3's hybrid vsock path, or -errno. */
static int
client(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t deadline = hu_now_ms() + MS;
	int fd, rc;

	memcpy(a.sun_path, vm3->uds, strlen(vm3->uds) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A full accept backlog answers EAGAIN: retry while the app catches up. */
	while ((rc = connect(fd, (struct sockaddr *)&a, sizeof(a))) < 0 && errno == EAGAIN &&
			hu_now_ms() < deadline)
		dp_tick(vm3, 0);
	if (rc < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static bool
send_all(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/*
 * Wait up to @p ms for the app to close @p fd: true when recv() reads the end (0) or a
 * reset, with nothing (no OK line) before it.
 */
static bool
closed_by_app(int fd, unsigned int ms, char *seen, size_t len)
{
	uint64_t deadline = hu_now_ms() + ms;
	char buf[64];
	ssize_t n;
	int err;

	/* recv()'s errno is kept at once: polling the guest in between may change it. */
	for (;;) {
		n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		err = errno;
		if (n >= 0 || err != EAGAIN || hu_now_ms() >= deadline)
			break;
		dp_tick(vm3, 0);
	}
	seen[0] = '\0';
	if (n > 0) {
		buf[n] = '\0';
		snprintf(seen, len, "read '%s'", buf);
		return false;
	}
	if (n < 0 && err == EAGAIN) {
		snprintf(seen, len, "still open after %u ms", ms);
		return false;
	}
	return n == 0 || err == ECONNRESET;
}

/* A well-behaved host program: CONNECT, OK, checked bytes both ways, guest closes. */
static void
vm3_check(const char *what)
{
	static uint64_t seed = 1000;
	struct dp_stream h2g, grx, g2h, hrx;
	struct vfe_guest_conn *c = NULL;
	uint32_t hp = 0;
	long r = -1;
	char b;
	int fd;

	fd = dp_host_to_guest(vm3, GUEST_PORT, &c, &hp, MS);
	if (!tap_ok(fd >= 0, "%s: a new host connection to VM 3 gets OK", what)) {
		tap_diag("rc %d", fd);
		return;
	}
	seed += 2;
	dp_stream_init(&h2g, seed, CHECK_BYTES);
	dp_stream_init(&grx, seed, CHECK_BYTES);
	dp_stream_init(&g2h, seed + 1, CHECK_BYTES);
	dp_stream_init(&hrx, seed + 1, CHECK_BYTES);
	DP_WAIT(vm3, (dp_host_send(fd, &h2g), dp_guest_recv(vm3, c, &grx),
		dp_guest_send(vm3, c, &g2h), dp_host_recv(fd, &hrx),
		(grx.done == CHECK_BYTES && hrx.done == CHECK_BYTES) ||
		grx.bad_at != UINT64_MAX || hrx.bad_at != UINT64_MAX), MS);
	tap_ok(dp_stream_ok(&grx) && dp_stream_ok(&hrx),
		"%s: and %u checked bytes each way (%llu, %llu)", what, CHECK_BYTES,
		(unsigned long long)grx.done, (unsigned long long)hrx.done);
	vfe_guest_shutdown(&vm3->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	DP_WAIT(vm3, c->state == VFE_GC_CLOSED, MS);
	DP_WAIT(vm3, (r = recv(fd, &b, 1, MSG_DONTWAIT)) >= 0 || errno != EAGAIN, MS);
	tap_ok(c->reset && r == 0, "%s: closed cleanly", what);
	close(fd);
	vfe_guest_release(&vm3->g, c);
}

static void
both_checks(const char *what)
{
	vm3_check(what);
	peer_check(what);
}

/*
 * Send @p line (@p len bytes) and expect the app to close the socket, counted. It closes at
 * once: the bound is the line timeout since the connect, after which the timeout would have
 * closed it too (and counted it the same).
 */
static void
bad_line(const char *what, const char *line, size_t len)
{
	uint64_t before = hu_stat(&env, 3, "errors.conn_connect_line"), t0 = hu_now_ms();
	char seen[96];
	int fd = client();
	uint64_t spent;

	if (!tap_ok(fd >= 0 && send_all(fd, line, len), "%s: sent", what)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	spent = hu_now_ms() - t0;
	if (!tap_ok(closed_by_app(fd, spent < LINE_TIMEOUT_MS - 100 ? LINE_TIMEOUT_MS - 100 -
			(unsigned int)spent : 0, seen, sizeof(seen)),
			"%s: the app closes the socket without an OK", what))
		tap_diag("%s", seen);
	tap_diag("%s: closed after %llu ms", what, (unsigned long long)(hu_now_ms() - t0));
	close(fd);
	tap_ok(hu_stat(&env, 3, "errors.conn_connect_line") == before + 1,
		"%s: counted in errors.conn_connect_line", what);
	both_checks(what);
}

static void
test_lines(void)
{
	static const struct {
		const char *what;
		const char *line;
	} bad[] = {
		{ "garbage line", "HELLO WORLD\n" },
		{ "CONNECT without a port", "CONNECT\n" },
		{ "CONNECT with letters", "CONNECT abc\n" },
		{ "CONNECT with a negative port", "CONNECT -1\n" },
		{ "CONNECT with a port above 32 bits", "CONNECT 4294967296\n" },
		{ "CONNECT with junk after the port", "CONNECT 5000 x\n" },
		{ "CONNECTX", "CONNECTX 5000\n" },
	};
	char big[200];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		bad_line(bad[i].what, bad[i].line, strlen(bad[i].line));
	bad_line("binary line with NUL bytes", "CON\0ECT 5000\n", 13);
	memset(big, 'A', sizeof(big));
	bad_line("200 bytes without a newline", big, sizeof(big));
	memcpy(big, "CONNECT 5000", 12);
	memset(big + 12, ' ', 40);
	big[52] = '\n';
	bad_line("CONNECT line of 53 bytes", big, 53);
}

static void
test_valid_variant(void)
{
	/* Not hostile: the keyword's case, several spaces and CRLF are accepted. */
	const char *what = "'connect   5000\\r\\n'";
	struct vfe_guest_conn *c = NULL;
	uint32_t hp;
	int fd = client();

	send_all(fd, "connect   5000\r\n", 16);
	tap_ok(dp_read_ok(vm3, fd, &hp, MS) == 0 && (c = vfe_guest_accept(&vm3->g)) != NULL,
		"%s: OK", what);
	close(fd);
	if (c != NULL) {
		/* The host closed: the guest hears SHUTDOWN, closes too, and the app resets. */
		DP_WAIT(vm3, c->peer_shut != 0, MS);
		vfe_guest_shutdown(&vm3->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV |
			VIRTIO_VSOCK_SHUTDOWN_SEND);
		DP_WAIT(vm3, c->state == VFE_GC_CLOSED, MS);
		vfe_guest_release(&vm3->g, c);
	}
}

static void
test_endless(void)
{
	const char *what;
	uint64_t t0, last, elapsed;
	char seen[96];
	bool closed;
	int fd;

	/*
	 * A line that never ends costs its slot until the timeout, then the socket closes. The
	 * clock starts before the connect: the app's starts at its accept, later.
	 */
	what = "CONNECT line never finished";
	t0 = hu_now_ms();
	fd = client();
	send_all(fd, "CONNECT 50", 10);
	closed = closed_by_app(fd, LINE_TIMEOUT_MS / 2, seen, sizeof(seen));
	elapsed = hu_now_ms() - t0;
	tap_ok(!closed || elapsed + 300 >= LINE_TIMEOUT_MS,
		"%s: kept while within the timeout (%llu ms)", what, (unsigned long long)elapsed);
	vm3_check("while a line is unfinished");
	closed = closed_by_app(fd, LINE_TIMEOUT_MS + LATE_MS, seen, sizeof(seen));
	elapsed = hu_now_ms() - t0;
	if (!tap_ok(closed && elapsed + 300 >= LINE_TIMEOUT_MS &&
			elapsed < LINE_TIMEOUT_MS + LATE_MS,
			"%s: closed at the timeout (%llu ms)", what, (unsigned long long)elapsed))
		tap_diag("%s", seen);
	close(fd);
	both_checks(what);

	/* One byte now and then does not reset the clock. */
	what = "CONNECT line trickled a byte every 200 ms";
	t0 = hu_now_ms();
	fd = client();
	last = t0;
	for (;;) {
		ssize_t n = recv(fd, seen, 1, MSG_DONTWAIT);

		if (n >= 0 || errno != EAGAIN || hu_now_ms() - t0 > LINE_TIMEOUT_MS + LATE_MS)
			break;
		if (hu_now_ms() - last >= 200) {
			send(fd, "C", 1, MSG_NOSIGNAL);
			last = hu_now_ms();
		}
		dp_tick(vm3, 0);
	}
	elapsed = hu_now_ms() - t0;
	closed = closed_by_app(fd, 0, seen, sizeof(seen));
	tap_ok(closed && elapsed + 300 >= LINE_TIMEOUT_MS &&
		elapsed < LINE_TIMEOUT_MS + LATE_MS, "%s: closed at the timeout (%llu ms)", what,
		(unsigned long long)elapsed);
	close(fd);
	both_checks(what);
}

static void
test_vanish(void)
{
	uint64_t before = hu_stat(&env, 3, "errors.conn_connect_line");
	uint64_t io_before = hu_stat(&env, 3, "errors.conn_host_io");
	struct vfe_guest_conn *c = NULL;
	const char *what;
	unsigned int i;
	int fd;

	/* Cloud Hypervisor crashed on this one (issue 6798). */
	what = "CONNECT without newline, then close";
	fd = client();
	send_all(fd, "CONNECT 5000", 12);
	close(fd);
	tap_ok(DP_WAIT(vm3, hu_stat(&env, 3, "errors.conn_connect_line") == before + 1, MS),
		"%s: counted in errors.conn_connect_line", what);
	tap_ok(hu_app_alive(&env), "%s: the app is alive", what);
	both_checks(what);

	what = "CONNECT without newline, then shutdown(SHUT_WR)";
	before = hu_stat(&env, 3, "errors.conn_connect_line");
	fd = client();
	send_all(fd, "CONNECT 5000", 12);
	shutdown(fd, SHUT_WR);
	{
		char seen[96];

		/* At once: before the line timeout would close it too. */
		tap_ok(closed_by_app(fd, LINE_TIMEOUT_MS - 200, seen, sizeof(seen)),
			"%s: the app closes the socket", what);
	}
	close(fd);
	both_checks(what);

	what = "50 clients connect and vanish";
	before = hu_stat(&env, 3, "errors.conn_connect_line");
	for (i = 0; i < 50; i++) {
		fd = client();
		if (fd >= 0)
			close(fd);
	}
	tap_ok(DP_WAIT(vm3, hu_stat(&env, 3, "errors.conn_connect_line") == before + 50, MS) &&
		ops_tel_u64(&env.o, "/vsock/vms", "3.conns") == 0,
		"%s: each counted, no slot left taken", what);
	both_checks(what);

	/* Gone before the guest answered: the OK cannot be written, the guest gets RST. */
	what = "CONNECT, then close before the OK";
	fd = client();
	send_all(fd, "CONNECT 5000\n", 13);
	close(fd);
	DP_WAIT(vm3, (c = c ? c : vfe_guest_accept(&vm3->g)) != NULL &&
		c->state == VFE_GC_CLOSED, MS);
	tap_ok(c != NULL && c->reset, "%s: the guest's accepted connection is reset", what);
	tap_ok(hu_stat(&env, 3, "errors.conn_host_io") == io_before + 1,
		"%s: counted in errors.conn_host_io", what);
	if (c != NULL)
		vfe_guest_release(&vm3->g, c);
	both_checks(what);

	/* Nobody listens in the guest: RST there, socket closed here, without an OK. */
	what = "CONNECT to a port the guest does not listen on";
	fd = client();
	send_all(fd, "CONNECT 5999\n", 13);
	{
		char seen[96];

		if (!tap_ok(closed_by_app(fd, MS, seen, sizeof(seen)),
				"%s: closed without an OK", what))
			tap_diag("%s", seen);
	}
	close(fd);
	both_checks(what);
}

/* A host program that never reads stalls only its own connection. */
static void
test_never_reads(void)
{
	const char *what = "host client that never reads";
	const uint64_t total = 2u << 20;
	struct dp_stream a_tx, a_rx, b_h2g, b_grx, b_g2h, b_hrx;
	struct vfe_guest_conn *ca = NULL, *cb = NULL;
	uint64_t stalled_at;
	char path[64];
	uint32_t hp;
	int fa, fb;

	fa = dp_host_to_guest(vm3, GUEST_PORT, &ca, &hp, MS);
	fb = dp_host_to_guest(vm3, GUEST_PORT, &cb, &hp, MS);
	if (!tap_ok(fa >= 0 && fb >= 0, "%s: two connections", what))
		return;
	dp_stream_init(&a_tx, 5, total);
	dp_stream_init(&a_rx, 5, total);
	/*
	 * The guest pushes until the host socket and the app's window are full: the app holds
	 * its whole buf_alloc for the host (no credit left to give), and the guest knows it.
	 */
	snprintf(path, sizeof(path), "conns.%u_%u.guest_credit", ca->local_port, ca->peer_port);
	DP_WAIT(vm3, (dp_guest_send(vm3, ca, &a_tx), vfe_guest_credit(ca) == 0 &&
		ops_tel_u64(&env.o, "/vsock/conns,3", path) == 0), LATE_MS);
	stalled_at = a_tx.done;
	tap_ok(stalled_at < total && vfe_guest_credit(ca) == 0,
		"%s: the guest is stalled after %llu bytes, no credit left", what,
		(unsigned long long)stalled_at);
	/* Meanwhile the other connection of the same VM moves 512 KiB each way. */
	dp_stream_init(&b_h2g, 6, 512u << 10);
	dp_stream_init(&b_grx, 6, 512u << 10);
	dp_stream_init(&b_g2h, 7, 512u << 10);
	dp_stream_init(&b_hrx, 7, 512u << 10);
	DP_WAIT(vm3, (dp_guest_send(vm3, ca, &a_tx), dp_host_send(fb, &b_h2g),
		dp_guest_recv(vm3, cb, &b_grx), dp_guest_send(vm3, cb, &b_g2h),
		dp_host_recv(fb, &b_hrx),
		(b_grx.done == b_grx.total && b_hrx.done == b_hrx.total) ||
		b_grx.bad_at != UINT64_MAX || b_hrx.bad_at != UINT64_MAX), 10000);
	tap_ok(dp_stream_ok(&b_grx) && dp_stream_ok(&b_hrx),
		"%s: another connection of VM 3 moves 512 KiB each way meanwhile", what);
	tap_ok(a_tx.done == stalled_at, "%s: the stalled connection stayed stalled", what);
	peer_check(what);
	/* Once the host reads, everything arrives intact. */
	DP_WAIT(vm3, (dp_guest_send(vm3, ca, &a_tx), dp_host_recv(fa, &a_rx),
		a_rx.done == total || a_rx.bad_at != UINT64_MAX), 10000);
	tap_ok(dp_stream_ok(&a_rx), "%s: once it reads, all %llu bytes arrive intact", what,
		(unsigned long long)total);
	vfe_guest_shutdown(&vm3->g, ca, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	vfe_guest_shutdown(&vm3->g, cb, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	DP_WAIT(vm3, ca->state == VFE_GC_CLOSED && cb->state == VFE_GC_CLOSED, MS);
	close(fa);
	close(fb);
	vfe_guest_release(&vm3->g, ca);
	vfe_guest_release(&vm3->g, cb);
}

static int many_fds[MANY];
/* When each socket was connected, and when we first saw it closed (0: not yet). */
static uint64_t many_conn[MANY], many_gone[MANY];

/* How many of the sockets the app has closed: recv() reads the end or an error. */
static unsigned int
many_closed(void)
{
	unsigned int i, n = 0;
	char b;

	for (i = 0; i < MANY; i++) {
		if (many_fds[i] >= 0 && !many_gone[i] &&
		    (recv(many_fds[i], &b, 1, MSG_DONTWAIT) == 0 ||
		     (errno != EAGAIN && errno != EWOULDBLOCK)))
			many_gone[i] = hu_now_ms();
		n += many_gone[i] != 0;
	}
	return n;
}

/* Of the sockets seen closed, those seen closed less than the line timeout after connecting. */
static unsigned int
many_early(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < MANY; i++)
		n += many_gone[i] && many_gone[i] - many_conn[i] + 300 < LINE_TIMEOUT_MS;
	return n;
}

/*
 * More sockets than the table holds, all silent. What the protocol guarantees, at any machine
 * speed: the app accepts every one; those beyond the table are counted and closed at once; one
 * in the table is closed by the line timeout, never before it (its clock starts at the accept,
 * after our connect), and soon after it (LATE_MS).
 */
static void
test_many(void)
{
	const char *what = "1100 silent sockets at once";
	const unsigned int beyond = MANY - HU_APP_MAX_CONNS;
	uint64_t full_before = hu_stat(&env, 3, "conns_table_full"), t0, held, late = 0;
	unsigned int i, opened = 0, closed, left = 0;
	bool young;

	t0 = hu_now_ms();
	for (i = 0; i < MANY; i++) {
		many_conn[i] = hu_now_ms();
		many_gone[i] = 0;
		many_fds[i] = client();
		opened += many_fds[i] >= 0;
	}
	tap_diag("%s: %u connected in %llu ms", what, opened,
		(unsigned long long)(hu_now_ms() - t0));
	/* The app accepts them all: those beyond the table are counted, then closed. */
	DP_WAIT(vm3, hu_stat(&env, 3, "conns_table_full") - full_before >= beyond &&
		many_closed() >= beyond, LATE_MS);
	held = ops_tel_u64(&env.o, "/vsock/vms", "3.conns");
	closed = many_closed();
	/* Until the first connect is a timeout old, no timer can have closed one. */
	young = hu_now_ms() - t0 + 300 < LINE_TIMEOUT_MS;
	tap_ok(opened == MANY && closed >= beyond && many_early() <= beyond &&
		(!young || closed == beyond),
		"%s: %u connected, the %u beyond the table closed at once (%u closed, %u before "
		"the timeout)", what, opened, beyond, closed, many_early());
	/* Every socket we see open is a connection the app held when asked just before. */
	tap_ok(hu_stat(&env, 3, "conns_table_full") == full_before + beyond &&
		held <= HU_APP_MAX_CONNS && held + closed >= MANY &&
		(!young || held == HU_APP_MAX_CONNS),
		"%s: counted in conns_table_full, the table holds %u (%llu)", what,
		HU_APP_MAX_CONNS, (unsigned long long)held);
	peer_check("while VM 3's table is full");
	/* The rest time out like any unfinished line: after the timeout, and soon after. */
	DP_WAIT(vm3, many_closed() == opened, many_conn[MANY - 1] - t0 + LINE_TIMEOUT_MS +
		LATE_MS);
	for (i = 0; i < MANY; i++) {
		if (many_fds[i] < 0)
			continue;
		left += many_gone[i] == 0;
		if (many_gone[i] && many_gone[i] - many_conn[i] > late)
			late = many_gone[i] - many_conn[i];
		close(many_fds[i]);
	}
	tap_diag("%s: the last silent socket was seen closed %llu ms after its connect", what,
		(unsigned long long)late);
	tap_ok(left == 0 && many_early() <= beyond, "%s: all closed by the line timeout, none "
		"before it (%u left, %u closed early, %u beyond the table)", what, left,
		many_early(), beyond);
	tap_ok(DP_WAIT(vm3, ops_tel_u64(&env.o, "/vsock/vms", "3.conns") == 0, MS),
		"%s: VM 3's table is empty again", what);
	both_checks(what);
}

int
main(void)
{
	int status;

	/* The app keeps one fd per connection: this process and its child may open them. */
	dp_raise_fd_limit(4096);
	if (!tap_ok(hu_start(&env) == 0, "app started with VM 3 and VM 5")) {
		tap_diag("%s", env.why);
		hu_stop(&env, true);
		return tap_done();
	}
	if (tap_ok(dp_attach_quiet(vm3, NULL, NULL) == 0, "VM 3 attached")) {
		vfe_guest_listen(&vm3->g, GUEST_PORT, true);
		both_checks("before any attack");
		test_lines();
		test_valid_variant();
		test_endless();
		test_vanish();
		test_never_reads();
		test_many();
		tap_ok(vm3->g.errors == 0, "VM 3's driver saw no protocol breach (%s)",
			vm3->g.err);
	}
	status = hu_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
