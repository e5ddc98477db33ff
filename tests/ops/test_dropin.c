/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-vsock-app as a drop-in for rust-vmm's vhost-device-vsock (doc/migrating.md).
 *
 * Every command line and the YAML example of its README, with only the paths changed, start
 * VMs whose vhost-user GET_CONFIG answers the CID asked for; the lines naming its AF_VSOCK
 * backend (forward-cid) are refused by name, with a non-zero exit and no socket left. Its
 * sibling example carries bytes guest to guest between two userspace guests, and the same
 * VMs without groups are isolated here, which the app says in one start-up line.
 *
 * Then every per-VM limit shown at work: tx-buffer-size is the buf_alloc the guest sees and
 * all it can have in flight unread; max-connections refuses the next connect with an RST;
 * queue-size refuses a larger ring; the CONNECT-line and connect timeouts close the host
 * socket no sooner than configured (upper bounds are generous: the machine may be loaded).
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "ops_util.h"
#include "poll_wait.h"
#include "vfe_shim.h"

#define START_MS 15000
#define WAIT_MS 10000
/* No byte moved for this long: the sender is stalled. */
#define QUIET_MS 300
/* A timeout fired this much later than configured is still right on a loaded machine. */
#define LATE_MS 8000
#define G2G_BYTES (256u * 1024)
#define SMALL_TX_BUFFER 16384u

static struct dp_env e;
/* Only its prefix is used: ops_tel() finds the app's telemetry socket by it. */
static struct ops_env tel;

/* ---- starting the app with a command line of theirs ---- */

/* Replace every "%D" in @p tmpl by the run directory. */
static void expand(const char *tmpl, char *buf, size_t len)
{
	size_t o = 0;

	for (; *tmpl != '\0' && o + 1 < len; tmpl++) {
		if (tmpl[0] == '%' && tmpl[1] == 'D') {
			o += (size_t)snprintf(buf + o, len - o, "%s", e.app.dir);
			tmpl++;
		} else {
			buf[o++] = *tmpl;
		}
	}
	buf[o < len ? o : len - 1] = '\0';
}

/* A fresh run directory for the next launch(). */
static int prepare(void)
{
	memset(&e, 0, sizeof(e));
	snprintf(tel.prefix, sizeof(tel.prefix), "vsock-dropin-%d", (int)getpid());
	return app_proc_init(&e.app);
}

/*
 * Start the app with @p line (space-separated, "%D" the run directory) and wait for the
 * vhost-user sockets named in @p socks (NULL-terminated, in the run directory).
 * @p expect_fail: the app must exit non-zero instead. 0 when it did what was expected.
 */
static int launch(const char *line, const char *const *socks, bool expect_fail)
{
	static char buf[4096], paths[4][128], prefix[80];
	const char *eal[] = { APP_PROC_EAL_DEFAULT, prefix, NULL };
	const char *argv[32], *wait[5];
	char *save, *tok;
	unsigned int n = 0, i;
	int status;

	snprintf(prefix, sizeof(prefix), "--file-prefix=%s", tel.prefix);
	expand(line, buf, sizeof(buf));
	for (tok = strtok_r(buf, " ", &save); tok && n < 31; tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n] = NULL;
	for (i = 0; socks && socks[i] && i < 4; i++)
		wait[i] = app_proc_path(&e.app, socks[i], paths[i], sizeof(paths[i]));
	wait[i] = NULL;
	if (socks && socks[0])
		snprintf(e.sock, sizeof(e.sock), "%s", paths[0]);
	if (expect_fail) {
		if (app_proc_start(&e.app, eal, argv, NULL, START_MS) < 0)
			return -1;
		status = app_proc_wait(&e.app, START_MS);
		return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 ? 0 : -1;
	}
	if (app_proc_start(&e.app, eal, argv, wait, START_MS) < 0)
		return -1;
	return 0;
}

static int start(const char *line, const char *const *socks, bool expect_fail)
{
	if (prepare() < 0)
		return -1;
	if (launch(line, socks, expect_fail) < 0) {
		app_proc_fini(&e.app);
		return -1;
	}
	return 0;
}

/* After a launch expected to fail: what is left of it goes. */
static void finish_failed(void)
{
	app_proc_fini(&e.app);
	app_proc_remove_eal_files(tel.prefix);
}

static void stop(void)
{
	int status = dp_app_stop(&e, tap_failed != 0);

	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "app exits 0 on SIGTERM (status %#x)", status);
	app_proc_remove_eal_files(tel.prefix);
}

/* The CID a frontend on socket @p name reads with GET_CONFIG, or 0. */
static uint64_t config_cid(const char *name)
{
	struct vfe_vsock v;
	char path[160];
	uint64_t cid;

	if (vfe_vsock_attach(&v, app_proc_path(&e.app, name, path, sizeof(path)), NULL) < 0) {
		tap_diag("attach to %s: %s", name, v.conn.err);
		return 0;
	}
	cid = v.cid;
	vfe_vsock_detach(&v, NULL, false);
	vfe_vsock_close(&v);
	return cid;
}

/* Field @p f of VM @p cid in /vsock/vms. */
static uint64_t vm_u64(unsigned int cid, const char *f)
{
	char path[64];

	snprintf(path, sizeof(path), "%u.%s", cid, f);
	return ops_tel_u64(&tel, "/vsock/vms", path);
}

struct readme_line {
	const char *what;
	const char *line;
	/* The vhost-user sockets and the CID each answers. */
	const char *socks[3];
	uint64_t cids[3];
};

/* vhost-device-vsock's README, only the paths changed. */
static const struct readme_line readme[] = {
	{ "example: --vm guest-cid=4,uds-path=...,socket=...",
	  "--vm guest-cid=4,uds-path=%D/vm4.vsock,socket=%D/vhost4.socket",
	  { "vhost4.socket" }, { 4 } },
	{ "working example with tx-buffer-size and queue-size",
	  "--vm guest-cid=4,uds-path=%D/vm4.vsock,socket=%D/vhost4.socket,tx-buffer-size=65536,"
	  "queue-size=1024",
	  { "vhost4.socket" }, { 4 } },
	{ "usage: single-VM options",
	  "--guest-cid=4 --socket=%D/vhost4.socket --uds-path=%D/vm4.vsock "
	  "--tx-buffer-size=65536 --queue-size=1024 --groups=group1+group2",
	  { "vhost4.socket" }, { 4 } },
	{ "usage: --vm guest_cid=...",
	  "--vm guest_cid=4,socket=%D/vhost4.socket,uds-path=%D/vm4.vsock,tx-buffer-size=65536,"
	  "queue-size=1024,groups=group1+groupA",
	  { "vhost4.socket" }, { 4 } },
	{ "--vm repeated (its uds-path VMs)",
	  "--vm guest-cid=3,socket=%D/vhost3.socket,uds-path=%D/vm3.vsock,groups=group1+groupA "
	  "--vm guest-cid=4,socket=%D/vhost4.socket,uds-path=%D/vm4.vsock,tx-buffer-size=32768,"
	  "queue-size=256",
	  { "vhost3.socket", "vhost4.socket" }, { 3, 4 } },
};

static const char yaml_example[] =
	"vms:\n"
	"    - guest_cid: 3\n"
	"      socket: %D/vhost3.socket\n"
	"      uds_path: %D/vm3.vsock\n"
	"      tx_buffer_size: 65536\n"
	"      queue_size: 1024\n"
	"      groups: group1+groupA\n"
	"    - guest_cid: 4\n"
	"      socket: %D/vhost4.socket\n"
	"      uds_path: %D/vm4.vsock\n"
	"      tx_buffer_size: 32768\n"
	"      queue_size: 256\n"
	"      groups: group2+groupB\n";
static const char yaml_forward[] =
	"    - guest_cid: 5\n"
	"      socket: %D/vhost5.socket\n"
	"      forward-cid: 1\n"
	"      forward-listen: 9001+9002\n"
	"      tx_buffer_size: 32768\n"
	"      queue_size: 1024\n";

static void check_cids(const char *what, const char *const *socks, const uint64_t *cids)
{
	unsigned int i;

	for (i = 0; i < 3 && socks[i]; i++) {
		uint64_t cid = config_cid(socks[i]);

		tap_ok(cid == cids[i], "%s: %s answers GET_CONFIG with cid %llu (got %llu)", what,
		       socks[i], (unsigned long long)cids[i], (unsigned long long)cid);
	}
}

static void check_started(const struct readme_line *r)
{
	if (!tap_ok(start(r->line, r->socks, false) == 0, "%s: app started", r->what))
		return;
	check_cids(r->what, r->socks, r->cids);
	stop();
}

/* The README's multi-VM line whole: its VM 5 uses the AF_VSOCK backend. */
static void test_forward_refused(void)
{
	static const char line[] =
		"--vm guest-cid=3,socket=%D/vhost3.socket,uds-path=%D/vm3.vsock,groups=group1+groupA "
		"--vm guest-cid=4,socket=%D/vhost4.socket,uds-path=%D/vm4.vsock,"
		"tx-buffer-size=32768,queue-size=256 "
		"--vm guest-cid=5,socket=%D/vhost5.socket,forward-cid=1,forward-listen=9001+9002,"
		"tx-buffer-size=32768,queue-size=1024";

	tap_ok(start(line, NULL, true) == 0, "README's three --vm: refused, exit non-zero");
	tap_ok(app_proc_log_contains(&e.app, "forward-cid") &&
	       app_proc_log_contains(&e.app, "not supported") &&
	       app_proc_log_contains(&e.app, "uds-path"),
	       "the message names forward-cid and what to use instead");
	tap_ok(app_proc_sockets_left(&e.app) == 0, "no socket left behind");
	finish_failed();

	tap_ok(start("--guest-cid=4 --socket=%D/vhost4.socket --forward-cid=1 "
		     "--forward-listen=9001+9002", NULL, true) == 0 &&
	       app_proc_log_contains(&e.app, "--forward-cid"),
	       "single-VM --forward-cid refused by name");
	finish_failed();
}

static int write_file(const char *name, const char *tmpl, const char *more)
{
	char path[160], buf[2048], buf2[1024];
	FILE *f = fopen(app_proc_path(&e.app, name, path, sizeof(path)), "w");

	if (!f)
		return -1;
	expand(tmpl, buf, sizeof(buf));
	expand(more, buf2, sizeof(buf2));
	fprintf(f, "%s%s", buf, buf2);
	return fclose(f);
}

static void test_yaml(void)
{
	static const char *const socks[] = { "vhost3.socket", "vhost4.socket", NULL };
	static const uint64_t cids[] = { 3, 4 };

	/* The README's example whole: its VM 5 uses the AF_VSOCK backend. */
	if (prepare() < 0 || write_file("vsock.yaml", yaml_example, yaml_forward) < 0) {
		tap_ok(false, "README's YAML written");
		return;
	}
	tap_ok(launch("--config=%D/vsock.yaml", NULL, true) == 0,
	       "README's YAML (with its forward-cid VM): refused, exit non-zero");
	tap_ok(app_proc_log_contains(&e.app, "vsock.yaml:14:7: vms[2]: forward-cid"),
	       "the message gives line 14 column 7, the VM, and forward-cid");
	tap_ok(app_proc_sockets_left(&e.app) == 0, "no socket left behind");
	finish_failed();

	/* Its two uds_path VMs; the name says YAML, then the content alone does. */
	if (prepare() < 0 || write_file("vsock.yaml", yaml_example, "") < 0) {
		tap_ok(false, "README's YAML written");
		return;
	}
	if (tap_ok(launch("--config=%D/vsock.yaml", socks, false) == 0,
		   "README's YAML, its uds_path VMs: app started")) {
		check_cids("YAML", socks, cids);
		tap_ok(vm_u64(3, "tx_buffer_size") == 65536 && vm_u64(3, "queue_size") == 1024 &&
		       vm_u64(4, "tx_buffer_size") == 32768 && vm_u64(4, "queue_size") == 256,
		       "tx_buffer_size and queue_size of each VM in telemetry");
		stop();
	} else {
		app_proc_fini(&e.app);
	}
	if (prepare() < 0 || write_file("vsock.conf", yaml_example, "") < 0) {
		tap_ok(false, "README's YAML written");
		return;
	}
	if (tap_ok(launch("--config=%D/vsock.conf", socks, false) == 0,
		   "the same YAML named .conf: recognised by its 'vms:'")) {
		check_cids("YAML by content", socks, cids);
		stop();
	} else {
		app_proc_fini(&e.app);
	}
}

/* ---- two userspace guests talking to each other ---- */

struct guest {
	unsigned int cid, peer;
	struct vfe_vsock v;
	struct vfe_guest g;
	bool attached;
	/* Packets from a CID other than the peer's. */
	unsigned int stray;
};

static struct guest g3 = { .cid = 3, .peer = 4 }, g4 = { .cid = 4, .peer = 3 };

static void tx_hook(void *ctx, const struct vfe_vsock_pkt *pkt)
{
	struct guest *gs = ctx;
	struct virtio_vsock_hdr *h = vfe_shim_chain_just_added(&gs->v.vq[VFE_VSOCK_TX]);

	(void)pkt;
	if (h)
		h->dst_cid = htole64(gs->peer);
	else
		gs->stray++;
}

static void rx_hook(void *ctx, const struct vfe_vsock_pkt *pkt, uint32_t used_len)
{
	struct guest *gs = ctx;
	struct vfe_vsock_pkt *h = (struct vfe_vsock_pkt *)(uintptr_t)pkt;

	(void)used_len;
	if (h->src_cid != gs->peer)
		gs->stray++;
	h->src_cid = VFE_GUEST_HOST_CID;
}

static int guest_attach(struct guest *gs)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	const struct vfe_guest_conf gc = { .tx_hook = tx_hook, .rx_hook = rx_hook, .hook_ctx = gs };
	char name[32], path[160];
	int rc;

	snprintf(name, sizeof(name), "vhost%u.socket", gs->cid);
	gs->stray = 0;
	rc = vfe_vsock_attach(&gs->v, app_proc_path(&e.app, name, path, sizeof(path)), &vc);
	if (rc == 0 && (rc = vfe_guest_init(&gs->g, &gs->v, &gc)) < 0)
		vfe_vsock_close(&gs->v);
	gs->attached = rc == 0;
	return rc;
}

static void guest_detach(struct guest *gs)
{
	if (!gs->attached)
		return;
	gs->attached = false;
	vfe_vsock_detach(&gs->v, NULL, false);
	vfe_guest_fini(&gs->g);
	vfe_vsock_close(&gs->v);
}

static void tick2(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };

	if (vfe_guest_poll(&g3.g) + vfe_guest_poll(&g4.g) == 0)
		nanosleep(&pause, NULL);
}

#define WAIT2(cond, ms) POLL_WAIT(cond, ms, tick2())

/* Move @p len checked bytes from @p a's connection @p ca to @p b's @p cb. */
static bool g2g_transfer(struct guest *a, struct vfe_guest_conn *ca, struct guest *b,
			 struct vfe_guest_conn *cb, uint32_t len)
{
	static uint8_t out[G2G_BYTES], in[G2G_BYTES];
	size_t sent = 0, got = 0;
	uint64_t end = now_ms() + WAIT_MS * 3;
	uint32_t i;

	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(i * 7 + a->cid);
	while (got < len && now_ms() < end) {
		if (sent < len) {
			long n = vfe_guest_send(&a->g, ca, out + sent, len - sent);

			if (n > 0)
				sent += (size_t)n;
		}
		got += vfe_guest_recv(&b->g, cb, in + got, len - got);
		tick2();
	}
	return got == len && memcmp(in, out, len) == 0;
}

static void test_siblings(void)
{
	static const char *const socks[] = { "vhost3.socket", "vhost4.socket", NULL };
	struct vfe_guest_conn *c4, *c3;

	/* The README's "Sibling VM communication" example. */
	if (!tap_ok(start("--vm guest-cid=3,uds-path=%D/vm3.vsock,socket=%D/vhost3.socket,"
			  "groups=group1+group2 --vm guest-cid=4,uds-path=%D/vm4.vsock,"
			  "socket=%D/vhost4.socket,groups=group1", socks, false) == 0,
		    "sibling example: app started")) {
		return;
	}
	if (!tap_ok(guest_attach(&g3) == 0 && guest_attach(&g4) == 0,
		    "two userspace guests attached")) {
		goto out;
	}
	tap_ok(g3.v.cid == 3 && g4.v.cid == 4, "GET_CONFIG: cids 3 and 4");
	/* The app polls a VM once DPDK reported its device: until then it has no guest. */
	tap_ok(WAIT2(vm_u64(3, "running") == 1 && vm_u64(4, "running") == 1, WAIT_MS),
	       "both VMs running");
	vfe_guest_listen(&g3.g, 1234, true);
	c4 = vfe_guest_connect(&g4.g, 1234, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(c4 && WAIT2(c4->state != VFE_GC_CONNECTING, WAIT_MS) &&
	       c4->state == VFE_GC_ESTABLISHED, "guest 4 connects to guest 3 port 1234 "
	       "(shared group1)");
	c3 = NULL;
	WAIT2((c3 = vfe_guest_accept(&g3.g)) != NULL, WAIT_MS);
	if (!tap_ok(c3 != NULL, "guest 3 accepts")) {
		goto out;
	}
	tap_ok(g2g_transfer(&g4, c4, &g3, c3, G2G_BYTES), "%u bytes guest 4 -> 3, checked",
	       G2G_BYTES);
	tap_ok(g2g_transfer(&g3, c3, &g4, c4, G2G_BYTES), "%u bytes guest 3 -> 4, checked",
	       G2G_BYTES);
	tap_ok(g3.stray == 0 && g4.stray == 0 && g3.g.errors == 0 && g4.g.errors == 0,
	       "every packet from the peer's CID, and by the protocol (%s%s)", g3.g.err, g4.g.err);
	tap_ok(POLL_WAIT(app_proc_log_contains(&e.app, "serving 2 VMs"), WAIT_MS, usleep(1000)) &&
	       !app_proc_log_contains(&e.app, "no VM names a group"),
	       "no start-up notice: the VMs name groups");
out:
	guest_detach(&g3);
	guest_detach(&g4);
	stop();

	/* The same VMs without groups: theirs would share group 'default', ours are isolated. */
	if (!tap_ok(start("--vm guest-cid=3,uds-path=%D/vm3.vsock,socket=%D/vhost3.socket "
			  "--vm guest-cid=4,uds-path=%D/vm4.vsock,socket=%D/vhost4.socket",
			  socks, false) == 0, "same VMs without groups: app started")) {
		return;
	}
	/* Printed once the VMs are served, which may be after their sockets appeared. */
	tap_ok(POLL_WAIT(app_proc_log_contains(&e.app, "serving 2 VMs"), WAIT_MS, usleep(1000)) &&
	       app_proc_log_contains(&e.app, "no VM names a group") &&
	       app_proc_log_contains(&e.app, "groups=default"),
	       "one start-up line says they are isolated and how to join them");
	if (guest_attach(&g3) == 0 && guest_attach(&g4) == 0 &&
	    WAIT2(vm_u64(3, "running") == 1 && vm_u64(4, "running") == 1, WAIT_MS)) {
		vfe_guest_listen(&g3.g, 1234, true);
		c4 = vfe_guest_connect(&g4.g, 1234, VIRTIO_VSOCK_TYPE_STREAM);
		tap_ok(c4 && WAIT2(c4->state != VFE_GC_CONNECTING, WAIT_MS) && c4->reset &&
		       g3.g.rx_pkts == 0, "guest 4's connect is refused with an RST from cid 3, "
		       "guest 3 sees nothing");
	} else {
		tap_ok(false, "two userspace guests attached");
	}
	guest_detach(&g3);
	guest_detach(&g4);
	stop();
}

/* ---- the per-VM limits at work, one VM and one guest ---- */

static const char *const vm3_sock[] = { "vm3.sock", NULL };

static int start_vm3(const char *limits)
{
	char line[512];

	snprintf(line, sizeof(line), "--vm guest-cid=3,socket=%%D/vm3.sock,"
		 "uds-path=%%D/vm3.vsock%s", limits);
	if (start(line, vm3_sock, false) < 0)
		return -1;
	app_proc_path(&e.app, "vm3.vsock", e.uds, sizeof(e.uds));
	if (dp_attach_quiet(&e, NULL, NULL) < 0 ||
	    !DP_WAIT(&e, vm_u64(3, "running") == 1, WAIT_MS)) {
		stop();
		return -1;
	}
	return 0;
}

/* Field @p f of connection (guest port, host port) of VM 3 in /vsock/conns. */
static uint64_t conn_u64(uint32_t gport, uint32_t hport, const char *f)
{
	char path[64];

	snprintf(path, sizeof(path), "conns.%u_%u.%s", gport, hport, f);
	return ops_tel_u64(&tel, "/vsock/conns,3", path);
}

/*
 * tx-buffer-size: the guest sees it as the app's buf_alloc, and with the host reading
 * nothing it stalls once that much is in flight; the app never holds more. Then the host
 * reads and every byte arrives.
 */
static void test_tx_buffer(void)
{
	static struct dp_stream out, in;
	struct vfe_guest_conn *gc;
	uint32_t hport;
	uint64_t last, quiet;
	int fd;

	if (!tap_ok(start_vm3(",tx-buffer-size=16384") == 0, "tx-buffer-size=16384: started"))
		return;
	vfe_guest_listen(&e.g, 5000, true);
	fd = dp_host_to_guest(&e, 5000, &gc, &hport, WAIT_MS);
	if (!tap_ok(fd >= 0, "host CONNECT 5000 accepted by the guest"))
		goto out;
	tap_ok(gc->peer_buf_alloc == SMALL_TX_BUFFER, "the guest sees buf_alloc %u (got %u)",
	       SMALL_TX_BUFFER, gc->peer_buf_alloc);
	dp_stream_init(&out, 11, 4u << 20);
	dp_stream_init(&in, 11, 4u << 20);
	/* The host reads nothing: send until nothing moves for QUIET_MS. */
	last = gc->tx_cnt;
	quiet = now_ms();
	while (now_ms() - quiet < QUIET_MS && out.done < out.total) {
		dp_guest_send(&e, gc, &out);
		dp_tick(&e, UINT64_MAX);
		if (gc->tx_cnt != last) {
			last = gc->tx_cnt;
			quiet = now_ms();
		}
	}
	tap_ok(out.done < out.total && vfe_guest_credit(gc) == 0 &&
	       gc->tx_cnt - gc->peer_fwd_cnt == SMALL_TX_BUFFER,
	       "the guest stalls with exactly %u bytes unacknowledged (%u)", SMALL_TX_BUFFER,
	       gc->tx_cnt - gc->peer_fwd_cnt);
	tap_ok(conn_u64(gc->local_port, hport, "our_buf_alloc") == SMALL_TX_BUFFER &&
	       conn_u64(gc->local_port, hport, "queued_to_host") <= SMALL_TX_BUFFER,
	       "the app advertises %u and holds no more than that (%llu)", SMALL_TX_BUFFER,
	       (unsigned long long)conn_u64(gc->local_port, hport, "queued_to_host"));
	/* The host reads: the stream goes on to its end, checked. */
	DP_WAIT(&e, (dp_guest_send(&e, gc, &out), dp_host_recv(fd, &in), in.done == in.total),
		WAIT_MS * 3);
	tap_ok(dp_stream_ok(&in) && in.done == in.total, "then all %llu bytes arrive, checked",
	       (unsigned long long)in.total);
	close(fd);
out:
	stop();
}

/* max-connections=2: the third connect, either way, is refused; a freed slot serves again. */
static void test_max_conns(void)
{
	struct vfe_guest_conn *gc1, *gc2, *c;
	uint32_t hport;
	int fd1, fd2, fd3, lfd, rc;

	if (!tap_ok(start_vm3(",max-connections=2") == 0, "max-connections=2: started"))
		return;
	tap_ok(vm_u64(3, "max_conns") == 2, "telemetry shows max_conns 2");
	vfe_guest_listen(&e.g, 5000, true);
	fd1 = dp_host_to_guest(&e, 5000, &gc1, &hport, WAIT_MS);
	fd2 = dp_host_to_guest(&e, 5000, &gc2, &hport, WAIT_MS);
	tap_ok(fd1 >= 0 && fd2 >= 0, "two host connections established");
	/* Closed with the CONNECT line unread: EOF, or a reset (or EPIPE writing the line). */
	fd3 = dp_host_connect(&e, 5000);
	rc = fd3 >= 0 ? dp_read_ok(&e, fd3, &hport, WAIT_MS) : fd3;
	tap_ok(rc == -ENODATA || rc == -EPROTO || rc == -EPIPE || rc == -ECONNRESET,
	       "a third host connect is closed without OK (%d)", rc);
	if (fd3 >= 0)
		close(fd3);
	lfd = dp_listen(&e, 6000, SOCK_STREAM);
	c = dp_guest_connect(&e, 6000, VIRTIO_VSOCK_TYPE_STREAM, WAIT_MS);
	tap_ok(c && c->reset, "a guest connect is refused with an RST");
	tap_ok(ops_tel_u64(&tel, "/vsock/stats,3", "conns_table_full") >= 2,
	       "both counted as table full");
	if (fd1 >= 0)
		close(fd1);
	DP_WAIT(&e, vm_u64(3, "conns") == 1, WAIT_MS);
	c = dp_guest_connect(&e, 6000, VIRTIO_VSOCK_TYPE_STREAM, WAIT_MS);
	fd3 = lfd >= 0 ? dp_accept(&e, lfd, WAIT_MS) : -1;
	tap_ok(c && c->state == VFE_GC_ESTABLISHED && fd3 >= 0,
	       "once one closed, a guest connect is served again");
	if (fd3 >= 0)
		close(fd3);
	if (fd2 >= 0)
		close(fd2);
	if (lfd >= 0)
		close(lfd);
	stop();
}

/* queue-size=256: a ring of 512 entries is refused, one of 256 taken. */
static void test_queue_size(void)
{
	struct vfe_vsock v;
	char path[160];
	int rc;

	if (!tap_ok(start("--vm guest-cid=3,socket=%D/vm3.sock,uds-path=%D/vm3.vsock,"
			  "queue-size=256", vm3_sock, false) == 0, "queue-size=256: started"))
		return;
	app_proc_path(&e.app, "vm3.sock", path, sizeof(path));
	/* The frontend sends without waiting for replies: the refusal may follow its attach. */
	rc = vfe_vsock_attach(&v, path, &(struct vfe_vsock_conf){ .ring_size = 512 });
	tap_ok(POLL_WAIT(app_proc_log_contains(&e.app, "512 entries refused: larger than its "
					       "queue-size 256"), WAIT_MS, usleep(1000)) &&
	       vm_u64(3, "running") == 0,
	       "a 512-entry ring is refused, the VM does not run, the log says why (rc %d)", rc);
	if (rc == 0)
		vfe_vsock_close(&v);
	rc = vfe_vsock_attach(&v, path, &(struct vfe_vsock_conf){ .ring_size = 256 });
	tap_ok(rc == 0 && v.cid == 3, "a 256-entry ring is taken (rc %d)", rc);
	if (rc == 0) {
		tap_ok(POLL_WAIT(vm_u64(3, "running") == 1, WAIT_MS, usleep(1000)) &&
		       vm_u64(3, "tx_ring_size") == 256, "the VM runs with its 256-entry rings");
		vfe_vsock_detach(&v, NULL, false);
		vfe_vsock_close(&v);
	}
	stop();
}

/* Milliseconds until the app closes @p fd (EOF or reset), polling the guest if @p tick. */
static long ms_to_close(int fd, bool tick, uint64_t since)
{
	uint64_t end = since + LATE_MS + 5000;
	char c;

	while (now_ms() < end) {
		ssize_t n = read(fd, &c, 1);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			return (long)(now_ms() - since);
		if (tick)
			dp_tick(&e, UINT64_MAX);
		else
			poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 20);
	}
	return -1;
}

/* line-timeout-ms and connect-timeout-ms: no earlier than set, not much later. */
static void test_timeouts(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t t0;
	long ms;
	int fd;

	if (!tap_ok(start_vm3(",line-timeout-ms=300,connect-timeout-ms=700") == 0,
		    "line-timeout-ms=300, connect-timeout-ms=700: started"))
		return;
	tap_ok(vm_u64(3, "line_timeout_ms") == 300 && vm_u64(3, "connect_timeout_ms") == 700,
	       "telemetry shows both");
	/* A CONNECT line that never ends. */
	memcpy(a.sun_path, e.uds, strnlen(e.uds, sizeof(a.sun_path) - 1));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	t0 = now_ms();
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, "CONNECT 50", 10) == 10) {
		ms = ms_to_close(fd, true, t0);
		tap_ok(ms >= 300 && ms < 300 + LATE_MS, "an unfinished CONNECT line is closed "
		       "after %ld ms (300 set)", ms);
	} else {
		tap_ok(false, "host connect: %s", strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	/* A guest that never answers the REQUEST: it is not polled meanwhile. */
	vfe_guest_listen(&e.g, 5000, true);
	t0 = now_ms();
	fd = dp_host_connect(&e, 5000);
	ms = fd >= 0 ? ms_to_close(fd, false, t0) : -1;
	tap_ok(ms >= 700 && ms < 700 + LATE_MS, "a CONNECT the guest does not answer is closed "
	       "after %ld ms (700 set)", ms);
	if (fd >= 0)
		close(fd);
	DP_WAIT(&e, vm_u64(3, "conns") == 0, WAIT_MS);
	tap_ok(vm_u64(3, "conns") == 0, "no connection left");
	stop();
}

int main(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(readme) / sizeof(readme[0]); i++)
		check_started(&readme[i]);
	test_forward_refused();
	test_yaml();
	test_siblings();
	test_tx_buffer();
	test_max_conns();
	test_queue_size();
	test_timeouts();
	return tap_done();
}
