/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native host API from DPDK secondary processes (vsock_native_attach()): dpdk-vsock-app
 * runs as the primary (hugepages, a shared configuration under its own --file-prefix), this
 * test attaches the userspace frontend as VM 3's guest and then attaches itself as a
 * secondary process, on lcore id 8. Checked: calls before attach fail with -ENODEV; bytes
 * both ways through an accepted stream and a connected seqpacket connection, checked end to
 * end; a ping-pong whose host end would wait for the worker's epoll timeout if the worker's
 * eventfd had not reached this process (--wait-mode notify); another secondary with a clashing
 * lcore id is refused; a secondary that dies (SIGKILL) with a listener and a connection has
 * them closed by the primary (the guest sees the shutdown, the port is free again); detach
 * closes this process's connections; app/vsock-native-example runs as a secondary and echoes;
 * and the primary stopping under an attached secondary turns every call into -ENODEV, not a
 * crash.
 *
 *   test_secondary [notify]        the test (TAP); VSOCK_APP names dpdk-vsock-app,
 *                                  VSOCK_EXAMPLE vsock-native-example
 *   test_secondary child MODE ...  a second secondary process the test runs (MODE: crash,
 *                                  clash), reporting on fd 3
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd_native.h>

#include "app_proc.h"
#include "native_io.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define CID 3
#define WAIT_MS 5000
#define CHUNK 1400
#define BULK (1u << 20)
#define HUGEPAGES_NEEDED 160	/* -m 256 for the primary, and some room */
#define PORT_ACCEPT 5000
#define PORT_CRASH 6000
#define PORT_GUEST 7000
#define PORT_ECHO 7100
#define PINGS 100

static struct app_proc app;
static char prefix[32];
static struct vfe_vsock v;
static struct vfe_guest g;
static struct rte_mempool *mp;
static uint8_t pat[BULK], got[BULK];

/* One round of the guest driver; a short pause when it had nothing to do. */
static void tick(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };

	if (vfe_guest_poll(&g) == 0)
		nanosleep(&pause, NULL);
}

#define WAIT(cond, ms) POLL_WAIT(cond, ms, tick())

static int eal_secondary(const char *lcores)
{
	char *argv[] = {
		"test_secondary", "--proc-type=secondary", "--file-prefix", prefix,
		"--lcores", (char *)lcores, "--no-pci", "--log-level=lib.eal:error", NULL,
	};

	return rte_eal_init((int)RTE_DIM(argv) - 1, argv);
}

static long native_send(int h, size_t off, size_t len)
{
	return native_io_send(h, mp, pat + off, len, CHUNK);
}

/* Append what the guest sent on @p h to got at @p *len. */
static int native_recv(int h, size_t *len)
{
	return native_io_recv(h, got, len, sizeof(got), NULL);
}

/* Wait up to WAIT_MS for a line on @p fd (a child's report); true if it is @p want. */
static bool child_says(int fd, const char *want)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char line[64] = "";
	size_t n = 0;
	uint64_t end = now_ms() + WAIT_MS;

	while (n < sizeof(line) - 1 && now_ms() < end) {
		/* The guest keeps running meanwhile: the child may be waiting for it. */
		if (poll(&pfd, 1, 0) != 1) {
			tick();
			continue;
		}
		if (read(fd, line + n, 1) != 1)
			break;
		if (line[n] == '\n') {
			line[n] = '\0';
			return strcmp(line, want) == 0;
		}
		n++;
	}
	line[n] = '\0';
	tap_diag("child said '%s', expected '%s'", line, want);
	return false;
}

/* Run this program as "child MODE lcores"; its reports come back on the returned fd. */
static pid_t child_start(const char *mode, const char *lcores, int *report)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 3);
		execl("/proc/self/exe", "test_secondary", "child", mode, lcores, prefix, NULL);
		_exit(127);
	}
	close(fds[1]);
	*report = fds[0];
	return pid;
}

static int child_status(pid_t pid)
{
	int status = 0;
	uint64_t end = now_ms() + WAIT_MS;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		tick();
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * A second secondary process.
 * crash: listen on PORT_CRASH, accept the guest, send "hi", report, then wait to be killed.
 * clash: attach with lcore ids someone else has; exit 0 if refused with -EBUSY.
 */
static int child_main(const char *mode, const char *lcores)
{
	int rc, lh, h = -1;
	uint64_t end;

	if (eal_secondary(lcores) < 0)
		return 10;
	rc = vsock_native_attach();
	if (strcmp(mode, "clash") == 0)
		return rc == -EBUSY ? 0 : 11;
	if (rc < 0)
		return 12;
	lh = vsock_native_listen(CID, PORT_CRASH);
	if (lh < 0)
		return 13;
	dprintf(3, "LISTENING\n");
	for (end = now_ms() + WAIT_MS; h < 0 && now_ms() < end;)
		h = vsock_native_accept(lh);
	if (h < 0)
		return 14;
	struct rte_mbuf *m = rte_pktmbuf_alloc(rte_pktmbuf_pool_create("crash_pool", 255, 0, 0,
			RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY));

	if (!m)
		return 15;
	memcpy(rte_pktmbuf_append(m, 2), "hi", 2);
	if (vsock_native_send_burst(h, &m, 1) != 1)
		return 16;
	dprintf(3, "ACCEPTED\n");
	pause();
	return 0;
}

static bool hugepages_free(unsigned int want)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned int n = 0;

	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "HugePages_Free: %u", &n);
	if (f)
		fclose(f);
	return n >= want;
}

static int start_primary(bool notify)
{
	/*
	 * A secondary maps the primary's memory at the same addresses: a fixed base far from
	 * where libraries and ASan's shadow land keeps those free in every process.
	 */
	const char *eal[] = {
		"-l", "0-1", "-m", "256", "--no-pci", "--file-prefix", prefix,
		"--base-virtaddr", "0x200000000000", "--log-level=lib.eal:error", NULL,
	};
	const char *args[] = { "--vm", NULL, "--wait-mode", notify ? "notify" : "poll", NULL };
	const char *socks[] = { NULL, NULL };
	char vm[256], sock[96];

	app_proc_path(&app, "vm3.sock", sock, sizeof(sock));
	snprintf(vm, sizeof(vm), "cid=%d,socket=%s,uds=%s/vm3.vsock", CID, sock, app.dir);
	args[1] = vm;
	socks[0] = sock;
	if (app_proc_start(&app, eal, args, socks, 20000) < 0)
		return -1;
	return vfe_vsock_attach(&v, sock, &(struct vfe_vsock_conf){ .mem = { .size = 32u << 20 } })
	       ?: vfe_guest_init(&g, &v, NULL);
}

/* An accepted stream: 1 MiB each way, checked byte for byte. Its handle and guest end. */
static int test_accept_stream(struct vfe_guest_conn **gcp)
{
	struct vfe_guest_conn *gc;
	size_t sent = 0, rcvd = 0, len = 0;
	int lh, h = -1;

	lh = vsock_native_listen(CID, PORT_ACCEPT);
	tap_ok(lh >= 0, "secondary listens on port %d (%d)", PORT_ACCEPT, lh);
	gc = vfe_guest_connect(&g, PORT_ACCEPT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(gc && WAIT((h = vsock_native_accept(lh)) >= 0, WAIT_MS) &&
	       WAIT(gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
	       "the guest's connect is accepted by the secondary");
	if (!gc || h < 0)
		return -1;
	WAIT((sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + sent, BULK - sent), 0L),
	      native_recv(h, &len), len >= BULK), 30000);
	tap_ok(len == BULK && memcmp(got, pat, BULK) == 0,
	       "1 MiB guest -> secondary, byte for byte (%zu bytes)", len);
	sent = 0;
	WAIT((sent += (size_t)RTE_MAX(native_send(h, sent, BULK - sent), 0L),
	      rcvd += vfe_guest_recv(&g, gc, got + rcvd, BULK - rcvd), rcvd >= BULK), 30000);
	tap_ok(rcvd == BULK && memcmp(got, pat, BULK) == 0,
	       "1 MiB secondary -> guest, byte for byte (%zu bytes)", rcvd);
	tap_ok(vsock_native_listen_close(lh) == 0, "listener closed");
	*gcp = gc;
	return h;
}

/* A seqpacket connection the secondary opens: messages keep their boundaries. */
static void test_connect_seqpacket(void)
{
	static const uint16_t sizes[] = { 1, 700, 2000 };
	struct vfe_guest_conn *gc = NULL;
	unsigned int i, ok = 0;
	int h;

	vfe_guest_listen(&g, PORT_GUEST, true);
	h = vsock_native_connect(CID, PORT_GUEST, VSOCK_NATIVE_SEQPACKET);
	tap_ok(h >= 0 && WAIT((gc = gc ? gc : vfe_guest_accept(&g)) != NULL &&
			      vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED, WAIT_MS),
	       "secondary connects to the guest's port %d (seqpacket)", PORT_GUEST);
	if (!gc)
		return;
	for (i = 0; i < RTE_DIM(sizes); i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
		char *d = m ? rte_pktmbuf_append(m, sizes[i]) : NULL;

		if (d)
			memcpy(d, pat + i, sizes[i]);
		if (!d || vsock_native_send_burst(h, &m, 1) != 1)
			rte_pktmbuf_free(m);
	}
	for (i = 0; i < RTE_DIM(sizes); i++) {
		uint32_t flags = 0;
		long l = -1;

		if (WAIT((l = vfe_guest_next_msg(gc, &flags)) >= 0, WAIT_MS) && l == sizes[i] &&
		    vfe_guest_recv(&g, gc, got, (size_t)l) == (size_t)l &&
		    memcmp(got, pat + i, (size_t)l) == 0)
			ok++;
	}
	tap_ok(ok == RTE_DIM(sizes), "3 messages arrive whole, in order (%u)", ok);
	tap_ok(vsock_native_close(h) == 0 &&
	       WAIT(gc->peer_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND),
		    WAIT_MS), "close reaches the guest as a shutdown");
	vfe_guest_listen(&g, PORT_GUEST, false);
	vfe_guest_release(&g, gc);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Ping-pong on @p h (accepted, guest end @p gc). Under --wait-mode notify the worker sleeps
 * between pings; only the eventfd the primary passed us wakes it at once for our pong.
 */
static void test_pingpong(int h, struct vfe_guest_conn *gc, bool notify)
{
	static uint64_t rtt[PINGS];
	unsigned int i, done = 0;

	for (i = 0; i < PINGS; i++) {
		size_t len = 0, rcvd = 0;
		uint64_t t0 = now_us();

		if (vfe_guest_send(&g, gc, pat, 64) != 64 ||
		    !WAIT((native_recv(h, &len), len >= 64), WAIT_MS) ||
		    native_send(h, 0, 64) != 64 ||
		    !WAIT((rcvd += vfe_guest_recv(&g, gc, got, 64 - rcvd), rcvd >= 64), WAIT_MS))
			break;
		rtt[done++] = now_us() - t0;
	}
	tap_ok(done == PINGS, "%u of %u ping-pongs through the secondary", done, PINGS);
	if (done == 0)
		return;
	qsort(rtt, done, sizeof(rtt[0]), cmp_u64);
	tap_diag("%u ping-pongs (%s): p50 %llu us, max %llu us", done, notify ? "notify" : "poll",
		 (unsigned long long)rtt[done / 2], (unsigned long long)rtt[done - 1]);
	/*
	 * Without our wake-ups, each pong waits for the rest of the sleeping worker's 10 ms
	 * timeout (it fell asleep as our ping left it): half under 5 ms tells the two apart
	 * on a loaded machine too.
	 */
	if (notify)
		tap_ok(rtt[done / 2] < 5000, "the sleeping worker is woken by the secondary (half "
		       "the round trips under 5000 us, half its 10 ms sleep timeout)");
}

static void test_children(void)
{
	struct vfe_guest_conn *gc;
	int report, lh = -1;
	pid_t pid;

	tap_ok(child_status(child_start("clash", "1", &report)) == 0,
	       "a secondary on the primary's lcore 1 is refused (-EBUSY)");
	close(report);
	tap_ok(child_status(child_start("clash", "8@1", &report)) == 0,
	       "a secondary on our lcore id 8 is refused (-EBUSY)");
	close(report);

	pid = child_start("crash", "9@1", &report);
	tap_ok(pid > 0 && child_says(report, "LISTENING"), "second secondary listens");
	tap_ok(vsock_native_listen(CID, PORT_CRASH) == -EADDRINUSE,
	       "its port is taken for us too (-EADDRINUSE)");
	gc = vfe_guest_connect(&g, PORT_CRASH, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(gc && child_says(report, "ACCEPTED") &&
	       WAIT(vfe_guest_rx_avail(gc) >= 2, WAIT_MS), "it accepted the guest and sent");
	close(report);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tap_ok(gc && WAIT(gc->peer_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV |
					    VIRTIO_VSOCK_SHUTDOWN_SEND) || gc->reset, WAIT_MS),
	       "killed: the primary closes its connection, the guest sees the shutdown");
	tap_ok(WAIT((lh = vsock_native_listen(CID, PORT_CRASH)) >= 0, WAIT_MS),
	       "and its port is free again (%d)", lh);
	/* The primary logs once the handles are closed: maybe just after we got the port. */
	tap_ok(WAIT(app_proc_log_contains(&app, "exited without detaching"), WAIT_MS),
	       "the primary logs the process that went away");
	vsock_native_listen_close(lh);
	if (gc)
		vfe_guest_release(&g, gc);
}

/* vsock-native-example as a secondary process: the guest's bytes come back. */
static void test_example(void)
{
	const char *exe = getenv("VSOCK_EXAMPLE");
	struct vfe_guest_conn *gc = NULL;
	size_t sent = 0, rcvd = 0;
	char port[16], line[64] = "";
	int out[2], status = -1;
	FILE *f = NULL;
	pid_t pid;

	snprintf(port, sizeof(port), "%d", PORT_ECHO);
	if (!exe || pipe(out) < 0) {
		tap_ok(false, "vsock-native-example (VSOCK_EXAMPLE) as a secondary");
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		execl(exe, exe, "--proc-type=secondary", "--file-prefix", prefix, "--lcores", "10@1",
		      "--no-pci", "--log-level=lib.eal:error", "--", "--cid", "3", "--port", port,
		      "--mode", "echo", NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	if (f && fgets(line, sizeof(line), f))
		line[strcspn(line, "\n")] = '\0';
	tap_ok(pid > 0 && strncmp(line, "LISTENING", 9) == 0,
	       "vsock-native-example attaches as a secondary and listens (%s)", line);
	gc = vfe_guest_connect(&g, PORT_ECHO, VIRTIO_VSOCK_TYPE_STREAM);
	WAIT(gc && (sent += (size_t)RTE_MAX(vfe_guest_send(&g, gc, pat + sent, 65536 - sent), 0L),
		    rcvd += vfe_guest_recv(&g, gc, got + rcvd, 65536 - rcvd), rcvd >= 65536),
	     WAIT_MS);
	tap_ok(rcvd == 65536 && memcmp(got, pat, rcvd) == 0,
	       "its echo service returns 64 KiB byte for byte (%zu)", rcvd);
	if (pid > 0) {
		kill(pid, SIGTERM);
		status = child_status(pid);
	}
	tap_ok(status == 0, "it detaches and exits 0 on SIGTERM (%d)", status);
	if (gc)
		vfe_guest_release(&g, gc);
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	bool notify = argc > 1 && strcmp(argv[1], "notify") == 0;
	struct vfe_guest_conn *gc = NULL;
	int h;

	if (argc == 5 && strcmp(argv[1], "child") == 0) {
		snprintf(prefix, sizeof(prefix), "%s", argv[4]);
		return child_main(argv[2], argv[3]);
	}
	if (geteuid() != 0 || !hugepages_free(HUGEPAGES_NEEDED)) {
		printf("1..0 # SKIP needs root and %u free 2 MiB hugepages (scripts/setup.sh)\n",
		       HUGEPAGES_NEEDED);
		return 0;
	}
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + (i >> 9));
	snprintf(prefix, sizeof(prefix), "vsock-sec-%d", getpid());
	if (!tap_ok(app_proc_init(&app) == 0 && start_primary(notify) == 0,
		    "dpdk-vsock-app primary (--file-prefix %s) and the guest", prefix))
		goto out;
	tap_ok(vsock_native_listen(CID, 1) == -ENODEV, "before attach: -ENODEV");
	tap_ok(vsock_native_attach() == -EINVAL, "before the EAL: not a secondary (-EINVAL)");
	if (!tap_ok(eal_secondary("8@0") >= 0, "EAL as a secondary process, lcore id 8"))
		goto out;
	tap_ok(vsock_native_attach() == 0, "attach");
	tap_ok(vsock_native_attach() == -EALREADY, "attach again: -EALREADY");
	mp = rte_pktmbuf_pool_create("sec_pool", 4095, 128, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     SOCKET_ID_ANY);
	if (!tap_ok(mp != NULL, "the secondary's own mbuf pool"))
		goto out;

	h = test_accept_stream(&gc);
	if (h >= 0)
		test_pingpong(h, gc, notify);
	test_connect_seqpacket();
	test_children();
	test_example();

	tap_ok(vsock_native_detach() == 0, "detach");
	tap_ok(h >= 0 && WAIT(gc->peer_shut == (VIRTIO_VSOCK_SHUTDOWN_RCV |
						VIRTIO_VSOCK_SHUTDOWN_SEND), WAIT_MS),
	       "detach closed our connection: the guest sees the shutdown");
	tap_ok(vsock_native_state(h) == -ENODEV && vsock_native_listen(CID, 1) == -ENODEV,
	       "after detach: -ENODEV");
	tap_ok(vsock_native_detach() == -ENODEV, "detach again: -ENODEV");

	tap_ok(vsock_native_attach() == 0 && (h = vsock_native_listen(CID, 1)) >= 0,
	       "attach again and listen");
	tap_ok(WIFEXITED(app_proc_stop(&app, 10000)), "the primary stops under us");
	tap_ok(vsock_native_listen(CID, 2) == -ENODEV && vsock_native_listen_close(h) == -ENODEV &&
	       vsock_native_connect(CID, 1, VSOCK_NATIVE_STREAM) == -ENODEV,
	       "then every call is -ENODEV");
	tap_ok(vsock_native_detach() == 0, "and detach still works");
out:
	app_proc_fini(&app);
	app_proc_remove_eal_files(prefix);
	return tap_done();
}
