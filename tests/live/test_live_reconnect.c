/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The app restarted under a running guest: it runs as a vhost-user client (--vm ...,client=1)
 * of a frontend that listens, here the test playing QEMU with a server socket
 * (-chardev socket,server=on). The first app connects, the guest moves data, the app is
 * killed mid-transfer; the frontend keeps its guest memory and rings; a new app connects,
 * the frontend sets the device up again with the ring positions it kept, and:
 * - the host programs of the lost connections see them end;
 * - the guest's old connections are answered with RST when it uses them;
 * - new connections both ways work at once, and the rx buffers the guest posted before the
 *   restart are used (the rings resumed, they were not started over);
 * - a second restart by SIGTERM behaves the same.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define WAIT_MS 5000
#define BYTES (256u * 1024)

static struct dp_env env;
static int srv_fd = -1;
static char vm_arg[400];

/* Listen where the app will connect, as QEMU's -chardev socket,server=on,wait=off. */
static int
listen_frontend(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int
start_app(void)
{
	const char *args[] = { "--vm", vm_arg, NULL };
	const char *socks[] = { env.uds, NULL };

	/* The uds socket file of a killed app stays: wait for the new one's connection. */
	unlink(env.uds);
	return app_proc_start(&env.app, NULL, args, socks, 15000);
}

/* Accept the app's connection and set the device up as QEMU does, rings at @p base. */
static int
frontend_attach(const uint16_t *base)
{
	struct vfe_vsock *v = &env.v;
	uint64_t deadline = dp_now_ns() + (uint64_t)WAIT_MS * 1000000;
	int fd = -1, rc;

	while (fd < 0 && dp_now_ns() < deadline) {
		fd = accept4(srv_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			usleep(1000);
	}
	if (fd < 0)
		return -ETIMEDOUT;
	v->conn.fd = fd;
	v->conn.reply_timeout_ms = WAIT_MS;
	rc = vfe_get_features(&v->conn, &v->device_features);
	v->features = (v->device_features & VFE_VSOCK_DRIVER_FEATURES) |
		(1ULL << VFE_F_PROTOCOL_FEATURES);
	if (rc == 0)
		rc = vfe_get_protocol_features(&v->conn, &v->device_protocol_features);
	v->protocol_features = v->device_protocol_features & VFE_VSOCK_PROTOCOL_FEATURES;
	if (rc == 0)
		rc = vfe_set_protocol_features(&v->conn, v->protocol_features);
	if (rc == 0)
		rc = vfe_set_owner(&v->conn);
	if (rc == 0)
		rc = vfe_get_config_cid(&v->conn, &v->cid);
	if (rc == 0)
		rc = vfe_vsock_start(v, base);
	return rc;
}

/* The first attach: memory and rings made here, then the driver. */
static int
first_attach(void)
{
	static const struct vfe_vsock_conf conf = { .mem = { .size = 32u << 20 } };
	struct vfe_vsock *v = &env.v;
	unsigned int q;
	int rc;

	memset(v, 0, sizeof(*v));
	v->conn.fd = -1;
	rc = vfe_mem_init(&v->mem, &conf.mem);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++)
		rc = vfe_vq_init(&v->vq[q], &v->mem, 128, 0, 0);
	if (rc == 0)
		rc = frontend_attach(NULL);
	if (rc == 0)
		rc = vfe_guest_init(&env.g, v, NULL);
	env.attached = rc == 0;
	return rc;
}

struct xfer {
	int lfd, fd_g2h, fd_h2g;
	struct vfe_guest_conn *gc_g2h, *gc_h2g;
	struct dp_stream g2h_tx, g2h_rx, h2g_tx, h2g_rx;
};

static bool
xfer_open(struct xfer *x, uint64_t seed, uint32_t port)
{
	uint32_t host_port;

	memset(x, 0, sizeof(*x));
	x->fd_g2h = x->fd_h2g = -1;
	dp_stream_init(&x->g2h_tx, seed, BYTES);
	dp_stream_init(&x->g2h_rx, seed, BYTES);
	dp_stream_init(&x->h2g_tx, seed + 1, BYTES);
	dp_stream_init(&x->h2g_rx, seed + 1, BYTES);
	x->lfd = dp_listen(&env, port, SOCK_STREAM);
	x->gc_g2h = x->lfd >= 0 ? dp_guest_connect(&env, port, VIRTIO_VSOCK_TYPE_STREAM, WAIT_MS) :
		NULL;
	if (x->gc_g2h == NULL || x->gc_g2h->state != VFE_GC_ESTABLISHED)
		return false;
	x->fd_g2h = dp_accept(&env, x->lfd, WAIT_MS);
	vfe_guest_listen(&env.g, port + 1, true);
	x->fd_h2g = dp_host_to_guest(&env, port + 1, &x->gc_h2g, &host_port, WAIT_MS);
	return x->fd_g2h >= 0 && x->fd_h2g >= 0;
}

/* Move data both ways until @p until bytes were checked at each end. */
static bool
xfer_run(struct xfer *x, uint64_t until)
{
	DP_WAIT(&env, (dp_guest_send(&env, x->gc_g2h, &x->g2h_tx), dp_host_recv(x->fd_g2h,
		&x->g2h_rx), dp_host_send(x->fd_h2g, &x->h2g_tx), dp_guest_recv(&env, x->gc_h2g,
		&x->h2g_rx), (x->g2h_rx.done >= until && x->h2g_rx.done >= until) ||
		x->g2h_rx.bad_at != UINT64_MAX || x->h2g_rx.bad_at != UINT64_MAX), 20000);
	return x->g2h_rx.done >= until && x->h2g_rx.done >= until &&
	       x->g2h_rx.bad_at == UINT64_MAX && x->h2g_rx.bad_at == UINT64_MAX;
}

static void
xfer_close(struct xfer *x)
{
	if (x->fd_g2h >= 0)
		close(x->fd_g2h);
	if (x->fd_h2g >= 0)
		close(x->fd_h2g);
	if (x->lfd >= 0)
		close(x->lfd);
	vfe_guest_listen(&env.g, 0, false);
}

/* Read until EOF or reset: whether the far side went away within WAIT_MS. */
static bool
host_end_gone(int fd)
{
	char b[65536];
	uint64_t deadline = dp_now_ns() + (uint64_t)WAIT_MS * 1000000;
	ssize_t n;

	while (dp_now_ns() < deadline) {
		n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return true;
		if (n < 0)
			usleep(1000);
	}
	return false;
}

/* One restart of the app (@p sig: SIGKILL for a crash, SIGTERM for a planned one). */
static void
restart(int sig, const char *what, uint64_t seed)
{
	struct vfe_vsock *v = &env.v;
	struct xfer x, y;
	uint16_t base[VFE_VSOCK_NQ];
	uint64_t rx_used_before;
	unsigned int q;
	bool ok;
	char b;
	int status, rc;

	ok = xfer_open(&x, seed, 7000 + (uint32_t)seed * 2) && xfer_run(&x, BYTES / 4);
	if (!tap_ok(ok, "%s: a connection each way moves checked bytes (%llu, %llu)", what,
		(unsigned long long)x.g2h_rx.done, (unsigned long long)x.h2g_rx.done))
		return;
	kill(env.app.pid, sig);
	status = app_proc_wait(&env.app, WAIT_MS);
	tap_ok(status >= 0, "%s: the app is gone (status %#x)", what, status);
	/* QEMU would see its chardev close: the device's state is all in guest memory. */
	tap_ok(recv(v->conn.fd, &b, 1, 0) <= 0, "%s: the frontend sees its connection close", what);
	vfe_conn_close(&v->conn);
	tap_ok(host_end_gone(x.fd_g2h) && host_end_gone(x.fd_h2g),
		"%s: the host programs of the lost connections see them end", what);

	rc = start_app();
	if (!tap_ok(rc == 0, "%s: a new app starts (rc %d)", what, rc))
		return;
	/*
	 * Ring positions as the frontend keeps them: what the device last published. Our
	 * backend completes whatever it takes before it publishes, so nothing was in flight.
	 */
	for (q = 0; q < VFE_VSOCK_NQ; q++)
		base[q] = le16toh(v->vq[q].used->idx);
	rx_used_before = base[VFE_VSOCK_RX];
	rc = frontend_attach(base);
	tap_ok(rc == 0, "%s: the new app connects, the frontend sets the device up again with "
		"its ring positions (rx %u, tx %u; rc %d %s)", what, base[0], base[1], rc,
		v->conn.err);
	/* The guest's old connection from the guest side: its next packet gets an RST. */
	vfe_guest_send_ctl(&env.g, x.gc_g2h, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	tap_ok(DP_WAIT(&env, x.gc_g2h->state == VFE_GC_CLOSED, WAIT_MS) && x.gc_g2h->reset,
		"%s: the guest's old connection is reset when it sends on it", what);
	ok = xfer_open(&y, seed + 100, 7100 + (uint32_t)seed * 2) && xfer_run(&y, BYTES);
	tap_ok(ok, "%s: new connections both ways move %u checked bytes at once (%llu, %llu)", what,
		BYTES, (unsigned long long)y.g2h_rx.done, (unsigned long long)y.h2g_rx.done);
	tap_ok((uint16_t)(le16toh(v->vq[VFE_VSOCK_RX].used->idx) - rx_used_before) > 0 &&
		env.g.errors == 0, "%s: the rx ring went on from %llu, every packet valid (%llu "
		"breaches)", what, (unsigned long long)rx_used_before,
		(unsigned long long)env.g.errors);
	xfer_close(&x);
	xfer_close(&y);
	vfe_guest_release(&env.g, x.gc_g2h);
	if (x.gc_h2g != NULL)
		vfe_guest_release(&env.g, x.gc_h2g);
}

int
main(void)
{
	char sock[128];
	int status;

	if (!tap_ok(app_proc_init(&env.app) == 0, "run directory"))
		return tap_done();
	app_proc_path(&env.app, "vm3.sock", sock, sizeof(sock));
	memcpy(env.sock, sock, sizeof(env.sock));
	app_proc_path(&env.app, "vm3.vsock", env.uds, sizeof(env.uds));
	snprintf(vm_arg, sizeof(vm_arg), "cid=3,socket=%s,uds=%s,client=1", env.sock, env.uds);
	srv_fd = listen_frontend(env.sock);
	if (!tap_ok(srv_fd >= 0, "the frontend listens on %s", env.sock))
		return tap_done();
	if (!tap_ok(start_app() == 0, "app started as a vhost-user client"))
		return tap_done();
	if (!tap_ok(first_attach() == 0, "the app connected; device set up, guest driver "
		"running (%s)", env.v.conn.err)) {
		app_proc_dump_log(&env.app);
		return tap_done();
	}
	restart(SIGKILL, "killed", 1);
	restart(SIGTERM, "stopped", 2);
	vfe_guest_fini(&env.g);
	env.attached = false;
	status = app_proc_stop(&env.app, 10000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	tap_ok(access(env.sock, F_OK) == 0, "the frontend's socket is left alone");
	if (tap_failed)
		app_proc_dump_log(&env.app);
	vfe_vsock_close(&env.v);
	close(srv_fd);
	app_proc_fini(&env.app);
	return tap_done();
}
