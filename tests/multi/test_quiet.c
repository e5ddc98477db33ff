/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connects after quiet: users' guests are idle most of the time, and a worker skips the
 * rounds of a device with nothing to do. Three userspace guests on dpdk-vsock-app
 * ($VSOCK_APP): VMs 3 and 4 in one group on different worker lcores, VM 5 on its own. Each
 * round below starts after QUIET_MS without any guest or host activity, longer than every
 * timeout of the app (CONNECT line, connect answer, close: 2 s each), and then opens its
 * connections at once, each from a device that was quiet:
 *   1. guest 3 -> guest 4 (across lcores), and guest 5 -> a host program;
 *   2. guest 4 -> guest 3, and a host program -> guest 5 (CONNECT line);
 *   3. connections whose sender stalled on credit before the quiet (guest 4 and the host
 *      program not reading), read after it;
 *   4. a host program's connect to guest 5, which does not answer: the app's connect timeout.
 * After each quiet every VM's worker asks its guest for kicks: in poll mode, that it stopped
 * polling the VM's rings (cold devices, worker.c), which the rounds then wake.
 * Every connection carries checked pattern bytes both ways and closes cleanly; no timeout
 * and no reset is counted anywhere. The app's wait mode comes from $VSOCK_WAIT_MODE (poll,
 * adaptive, notify), the ring layout from $VFE_RING.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "app_proc.h"
#include "dp_env.h"
#include "g2g_shim.h"
#include "ops_env.h"
#include "poll_wait.h"
#include "tap.h"

#define HOST_CID VFE_GUEST_HOST_CID
/* Longer than the app's longest timeout (2000 ms, the default of each). */
#define QUIET_MS 3500
#define WAIT_MS 10000
#define BYTES (256u * 1024)
/* Enough that a sender that is not read stalls on credit: more than a window and a socket. */
#define STALL_BYTES (4u << 20)
#define SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

struct vm {
	unsigned int cid;
	struct dp_env e;	/* sock, uds, the frontend and its driver */
	struct g2g_shim shim;
};

static struct vm vms[3] = { { .cid = 3 }, { .cid = 4 }, { .cid = 5 } };
static struct vm *const vm3 = &vms[0], *const vm4 = &vms[1], *const vm5 = &vms[2];
static struct app_proc app;
/* Only its prefix is used: ops_tel() finds the app's telemetry socket by it. */
static struct ops_env tel;
static const char *wait_mode;

/* One round of every attached guest; a short pause when none had anything to do. */
static void tick(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };
	unsigned int i, work = 0;

	for (i = 0; i < 3; i++)
		if (vms[i].e.attached)
			work += vfe_guest_poll(&vms[i].e.g);
	if (work == 0)
		nanosleep(&pause, NULL);
}

#define WAIT(cond, ms) POLL_WAIT(cond, ms, tick())

/* Nobody does anything: no guest polls its rings, no host program acts. */
static void quiet(void)
{
	const struct timespec t = { .tv_sec = QUIET_MS / 1000,
				    .tv_nsec = (QUIET_MS % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static uint64_t vm_u64(const struct vm *vm, const char *cmd, const char *path)
{
	char c[48];

	snprintf(c, sizeof(c), "%s,%u", cmd, vm->cid);
	return ops_tel_u64(&tel, c, path);
}

/* Connections in VM @p vm's table (/vsock/vms). */
static uint64_t vm_conns(const struct vm *vm)
{
	char path[48];

	snprintf(path, sizeof(path), "%u.conns", vm->cid);
	return ops_tel_u64(&tel, "/vsock/vms", path);
}

static bool tables_empty(void)
{
	return vm_conns(vm3) == 0 && vm_conns(vm4) == 0 && vm_conns(vm5) == 0;
}

/* ---- the ends of a connection, and a checked stream between them ---- */

/* A guest's connection (vm, c) or a host program's socket (fd). */
struct end {
	struct vm *vm;
	struct vfe_guest_conn *c;
	int fd;
};

/* One direction of a connection: pattern bytes sent at one end and checked at the other. */
struct flow {
	struct end *from, *to;
	struct dp_stream out, in;
	bool reading;		/* the receiving end consumes (off: its window fills up) */
};

struct conn {
	const char *what;
	struct end a, b;	/* a opened it */
	struct flow ab, ba;
};

static void flow_init(struct flow *f, struct end *from, struct end *to, uint64_t seed,
		      uint64_t total)
{
	f->from = from;
	f->to = to;
	f->reading = true;
	dp_stream_init(&f->out, seed, total);
	dp_stream_init(&f->in, seed, total);
}

static void flow_step(struct flow *f)
{
	if (f->from->vm)
		dp_guest_send(&f->from->vm->e, f->from->c, &f->out);
	else
		dp_host_send(f->from->fd, &f->out);
	if (!f->reading)
		return;
	if (f->to->vm)
		dp_guest_recv(&f->to->vm->e, f->to->c, &f->in);
	else
		dp_host_recv(f->to->fd, &f->in);
}

static bool flow_done(const struct flow *f)
{
	return f->in.done == f->in.total && dp_stream_ok(&f->in);
}

static bool conns_step_done(struct conn *c, unsigned int n)
{
	unsigned int i;
	bool done = true;

	for (i = 0; i < n; i++) {
		flow_step(&c[i].ab);
		flow_step(&c[i].ba);
		done &= flow_done(&c[i].ab) && flow_done(&c[i].ba);
	}
	return done;
}

static void conn_streams(struct conn *c, uint64_t seed, uint64_t total)
{
	flow_init(&c->ab, &c->a, &c->b, seed, total);
	flow_init(&c->ba, &c->b, &c->a, seed + 1, total);
}

/* ---- opening: each in two halves, so that a round starts every connect at once ---- */

/* Guest @p a to guest @p b, port @p port (b listens): the REQUEST is sent. */
static void g2g_start(struct conn *c, const char *what, struct vm *a, struct vm *b,
		      uint32_t port)
{
	*c = (struct conn){ .what = what, .a = { .vm = a, .fd = -1 }, .b = { .vm = b, .fd = -1 } };
	c->a.c = g2g_connect(&a->shim, &a->e.g, b->cid, port, VIRTIO_VSOCK_TYPE_STREAM);
}

static bool g2g_finish(struct conn *c)
{
	return c->a.c && WAIT(c->a.c->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
	       WAIT((c->b.c = vfe_guest_accept(&c->b.vm->e.g)) != NULL, WAIT_MS);
}

/* Guest @p a to a host program listening on @p lfd (<uds>_<port>). */
static void g2h_start(struct conn *c, const char *what, struct vm *a, uint32_t port)
{
	*c = (struct conn){ .what = what, .a = { .vm = a, .fd = -1 }, .b = { .fd = -1 } };
	c->a.c = g2g_connect(&a->shim, &a->e.g, HOST_CID, port, VIRTIO_VSOCK_TYPE_STREAM);
}

static bool g2h_finish(struct conn *c, int lfd)
{
	return c->a.c && WAIT(c->a.c->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
	       (c->b.fd = dp_accept(&c->a.vm->e, lfd, WAIT_MS)) >= 0;
}

/* A host program to guest @p b's port @p port (b listens): CONNECT written. */
static void h2g_start(struct conn *c, const char *what, struct vm *b, uint32_t port)
{
	*c = (struct conn){ .what = what, .a = { .fd = -1 }, .b = { .vm = b, .fd = -1 } };
	c->a.fd = dp_host_connect(&b->e, port);
}

static bool h2g_finish(struct conn *c)
{
	uint32_t host_port;

	return c->a.fd >= 0 && dp_read_ok(&c->b.vm->e, c->a.fd, &host_port, WAIT_MS) == 0 &&
	       WAIT((c->b.c = vfe_guest_accept(&c->b.vm->e.g)) != NULL, WAIT_MS);
}

/* ---- closing ---- */

static bool end_closed(const struct end *e)
{
	return !e->vm || (e->c->state == VFE_GC_CLOSED);
}

/*
 * The opener closes; a guest at the other end sees both shutdowns and answers (RST, as Linux
 * does), a host program reads EOF.
 */
static bool conn_close(struct conn *c)
{
	char b;

	if (c->a.vm)
		vfe_guest_shutdown(&c->a.vm->e.g, c->a.c, SHUT_BOTH);
	else
		close(c->a.fd);
	if (!c->b.vm && !WAIT(read(c->b.fd, &b, 1) == 0, WAIT_MS))
		return false;
	if (!c->b.vm)
		close(c->b.fd);
	return WAIT(end_closed(&c->a) && end_closed(&c->b), WAIT_MS) &&
	       (!c->b.vm || (c->b.c->peer_shut == SHUT_BOTH && !c->b.c->reset));
}

/* Bytes both ways on every connection of a round, then each closed. */
static void conns_check(struct conn *c, unsigned int n, const char *round)
{
	unsigned int i;

	WAIT(conns_step_done(c, n), WAIT_MS);
	for (i = 0; i < n; i++)
		tap_ok(flow_done(&c[i].ab) && flow_done(&c[i].ba),
		       "%s: %s carries %llu bytes each way, intact (%llu and %llu)", round,
		       c[i].what, (unsigned long long)c[i].ab.in.total,
		       (unsigned long long)c[i].ab.in.done, (unsigned long long)c[i].ba.in.done);
	for (i = 0; i < n; i++)
		tap_ok(conn_close(&c[i]), "%s: %s closes cleanly", round, c[i].what);
	tap_ok(WAIT(tables_empty(), WAIT_MS), "%s: every table empty again", round);
}

/*
 * Whether every guest's tx ring asks for kicks after the quiet. A polling worker asks only
 * for a VM it stopped polling (worker.c: cold devices); a sleeping one asks anyway.
 */
static bool all_cold(void)
{
	const struct timespec pause = { .tv_nsec = 1000000 };
	unsigned int i;
	bool ok = true;

	for (i = 0; i < 3; i++)
		ok &= POLL_WAIT(vfe_vq_kicks_asked(&vms[i].e.v.vq[VFE_VSOCK_TX]), WAIT_MS,
				nanosleep(&pause, NULL));
	return ok;
}

/* ---- the rounds ---- */

static void round_first(void)
{
	const char *r = "after quiet, 1";
	struct conn c[2];
	bool ok[2];
	int lfd = dp_listen(&vm5->e, 6200, SOCK_STREAM);

	vfe_guest_listen(&vm4->e.g, 6100, true);
	quiet();
	tap_ok(all_cold(), "%s: every VM's worker asks its guest for kicks", r);
	g2g_start(&c[0], "guest 3 -> guest 4", vm3, vm4, 6100);
	g2h_start(&c[1], "guest 5 -> host", vm5, 6200);
	ok[0] = g2g_finish(&c[0]);
	ok[1] = g2h_finish(&c[1], lfd);
	tap_ok(ok[0], "%s: guest 3 connects to guest 4 after %d ms of quiet", r, QUIET_MS);
	tap_ok(ok[1], "%s: guest 5 connects to a host program after %d ms of quiet", r, QUIET_MS);
	if (ok[0] && ok[1]) {
		conn_streams(&c[0], 31, BYTES);
		conn_streams(&c[1], 51, BYTES);
		conns_check(c, 2, r);
	}
	close(lfd);
	vfe_guest_listen(&vm4->e.g, 6100, false);
}

static void round_second(void)
{
	const char *r = "after quiet, 2";
	struct conn c[2];
	bool ok[2];

	vfe_guest_listen(&vm3->e.g, 6101, true);
	vfe_guest_listen(&vm5->e.g, 6201, true);
	quiet();
	tap_ok(all_cold(), "%s: every VM's worker asks its guest for kicks", r);
	g2g_start(&c[0], "guest 4 -> guest 3", vm4, vm3, 6101);
	h2g_start(&c[1], "host -> guest 5", vm5, 6201);
	ok[0] = g2g_finish(&c[0]);
	ok[1] = h2g_finish(&c[1]);
	tap_ok(ok[0], "%s: guest 4 connects to guest 3 after %d ms of quiet", r, QUIET_MS);
	tap_ok(ok[1], "%s: a host program connects to guest 5 after %d ms of quiet", r, QUIET_MS);
	if (ok[0] && ok[1]) {
		conn_streams(&c[0], 43, BYTES);
		conn_streams(&c[1], 25, BYTES);
		conns_check(c, 2, r);
	}
	vfe_guest_listen(&vm3->e.g, 6101, false);
	vfe_guest_listen(&vm5->e.g, 6201, false);
}

/*
 * Credit over quiet: guest 3 streams to guest 4 and guest 5 to a host program, neither
 * receiver reading, until both senders have no credit left. After the quiet the receivers
 * read: the credit they give back must reach the senders, and every byte arrive.
 */
static void round_credit(void)
{
	const char *r = "credit over quiet";
	int lfd = dp_listen(&vm5->e, 6202, SOCK_STREAM);
	struct conn c[2];
	bool ok;

	vfe_guest_listen(&vm4->e.g, 6102, true);
	g2g_start(&c[0], "guest 3 -> guest 4", vm3, vm4, 6102);
	g2h_start(&c[1], "guest 5 -> host", vm5, 6202);
	ok = g2g_finish(&c[0]) && g2h_finish(&c[1], lfd);
	if (!tap_ok(ok, "%s: guest 3 -> guest 4 and guest 5 -> host open", r))
		goto out;
	conn_streams(&c[0], 34, STALL_BYTES);
	conn_streams(&c[1], 52, STALL_BYTES);
	c[0].ab.reading = c[1].ab.reading = false;
	ok = WAIT((conns_step_done(c, 2), vfe_guest_credit(c[0].a.c) == 0 &&
		   vfe_guest_credit(c[1].a.c) == 0), WAIT_MS);
	tap_ok(ok, "%s: both senders stall without credit (%llu and %llu bytes sent)", r,
	       (unsigned long long)c[0].ab.out.done, (unsigned long long)c[1].ab.out.done);
	quiet();
	c[0].ab.reading = c[1].ab.reading = true;
	conns_check(c, 2, r);
out:
	close(lfd);
	vfe_guest_listen(&vm4->e.g, 6102, false);
}

/*
 * A timer after quiet: a host program connects to guest 5, which is not polled and never
 * answers. The app's connect timeout must reset the connection, whose host socket ends.
 * @return whether it did.
 */
static bool round_timeout(void)
{
	const char *r = "timeout after quiet";
	const struct timespec pause = { .tv_nsec = 1000000 };
	char b;
	int fd;
	bool ok;

	quiet();
	tap_ok(all_cold(), "%s: every VM's worker asks its guest for kicks", r);
	fd = dp_host_connect(&vm5->e, 6203);
	ok = fd >= 0 && POLL_WAIT(read(fd, &b, 1) == 0 || (errno != EAGAIN && errno != EINTR),
				  WAIT_MS, nanosleep(&pause, NULL));
	tap_ok(ok, "%s: a connect guest 5 never answers ends at the app's timeout", r);
	if (fd >= 0)
		close(fd);
	/* The guest reads the request late and answers it; nothing is left of it after. */
	tap_ok(WAIT(tables_empty(), WAIT_MS), "%s: every table empty again", r);
	return ok;
}

/* ---- the app and the guests ---- */

static int start_app(void)
{
	char prefix[80], vm[3][400];
	const char *eal[] = {
		"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
		/* Workers 1 and 2 on different CPUs of a 2-CPU machine; main shares CPU 0. */
		"--lcores", "0@0,1@0,2@1", "--log-level=lib.eal:error", prefix, NULL,
	};
	static const char *const conf[3] = { "lcore=1,group=red", "lcore=2,group=red", "" };
	const char *args[9], *wait[4];
	unsigned int i;

	if (app_proc_init(&app) < 0)
		return -1;
	snprintf(tel.prefix, sizeof(tel.prefix), "vsock-quiet-%d", (int)getpid());
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s", tel.prefix);
	for (i = 0; i < 3; i++) {
		struct dp_env *e = &vms[i].e;
		char name[32];

		snprintf(name, sizeof(name), "vm%u.sock", vms[i].cid);
		app_proc_path(&app, name, e->sock, sizeof(e->sock));
		snprintf(name, sizeof(name), "vm%u.vsock", vms[i].cid);
		app_proc_path(&app, name, e->uds, sizeof(e->uds));
		snprintf(vm[i], sizeof(vm[i]), "cid=%u,socket=%s,uds=%s%s%s", vms[i].cid, e->sock,
			 e->uds, *conf[i] ? "," : "", conf[i]);
		args[2 * i] = "--vm";
		args[2 * i + 1] = vm[i];
		wait[i] = e->sock;
	}
	args[6] = "--wait-mode";
	args[7] = wait_mode;
	args[8] = NULL;
	wait[3] = NULL;
	if (app_proc_start(&app, eal, args, wait, 15000) < 0)
		return -1;
	return WAIT(ops_tel_u64(&tel, "/vsock/config", "nb_vms") == 3, WAIT_MS) ? 0 : -1;
}

static bool attach(struct vm *vm)
{
	struct vfe_guest_conf gc = { .buf_alloc = DP_APP_BUF_ALLOC };

	g2g_guest_conf(&vm->shim, &vm->e.v, &gc);
	return dp_attach_quiet(&vm->e, NULL, &gc) == 0 && vm->e.v.cid == vm->cid;
}

int main(void)
{
	uint64_t timeouts[3], resets[3];
	unsigned int i;
	bool all = true;
	int status;

	wait_mode = getenv("VSOCK_WAIT_MODE") ? getenv("VSOCK_WAIT_MODE") : "poll";
	if (!tap_ok(start_app() == 0, "app started, --wait-mode %s: VMs 3 and 4 (group red, "
		    "lcores 1 and 2), VM 5", wait_mode)) {
		app_proc_fini(&app);
		app_proc_remove_eal_files(tel.prefix);
		return tap_done();
	}
	for (i = 0; i < 3; i++) {
		all &= tap_ok(attach(&vms[i]), "guest %u attached", vms[i].cid);
		timeouts[i] = vm_u64(&vms[i], "/vsock/stats", "errors.conn_timeout");
		resets[i] = vm_u64(&vms[i], "/vsock/stats", "conns_reset");
	}
	if (all) {
		round_first();
		round_second();
		round_credit();
		/* Its one timeout is a reset too. */
		if (round_timeout()) {
			timeouts[2]++;
			resets[2]++;
		}
	}
	for (i = 0; i < 3; i++) {
		tap_ok(vm_u64(&vms[i], "/vsock/stats", "errors.conn_timeout") == timeouts[i] &&
		       vm_u64(&vms[i], "/vsock/stats", "conns_reset") == resets[i],
		       "VM %u counted no timeout and no reset but round_timeout()'s", vms[i].cid);
		tap_ok(vms[i].e.g.errors == 0 && vms[i].shim.errors == 0,
		       "guest %u: every packet followed the protocol and came from the right CID "
		       "(%s)", vms[i].cid, vms[i].e.g.err);
		if (vms[i].e.attached)
			dp_detach(&vms[i].e);
	}
	status = app_proc_stop(&app, 10000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "app exits 0 on SIGTERM (%#x)", status);
	if (tap_failed)
		app_proc_dump_log(&app);
	app_proc_fini(&app);
	app_proc_remove_eal_files(tel.prefix);
	return tap_done();
}
