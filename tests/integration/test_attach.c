/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attach and detach: the vhost-user life cycle QEMU puts a backend through.
 * One app serves two VMs (CIDs 3 and 5) for the whole program:
 *  - attach, GET_CONFIG gives the CID, features as QEMU needs them;
 *  - stop (GET_VRING_BASE) gives back the ring indices that were set;
 *  - restart on the same connection, on a new one, after QEMU was killed;
 *  - two devices at once;
 *  - SIGTERM with a frontend attached: exit 0, no socket left.
 * After each (re)start a probe proves that the rings are really served: the
 * guest connects to a host port nobody listens on and must get an RST.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app_proc.h"
#include "tap.h"
#include "vfe.h"

#define APP_START_MS 15000
#define APP_STOP_MS 10000
#define REPLY_MS 3000
#define HOST_CID 2
#define NO_LISTENER_PORT 1234
#define RX_BUF_LEN 4096
#define RX_BUFS 4
#define SETTLE_US 100000

static struct app_proc app;
static char sock3[128];
static char sock5[128];

static int
attach(struct vfe_vsock *v, const char *path, const struct vfe_vsock_conf *conf,
		const char *what)
{
	int rc = vfe_vsock_attach(v, path, conf);

	if (!tap_ok(rc == 0, "%s: attach", what))
		tap_diag("rc %d (%s): %s", rc, strerror(-rc), v->conn.err);
	return rc;
}

/* Post @p n empty receive buffers, as the guest driver does at probe time. */
static int
post_rx(struct vfe_vsock *v, unsigned int n)
{
	struct vfe_vq *rx = &v->vq[VFE_VSOCK_RX];
	struct vfe_buf b = { .len = RX_BUF_LEN, .writable = true };
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (vfe_mem_alloc(&v->mem, RX_BUF_LEN, 64, &b.gpa) == NULL)
			return -ENOMEM;
		if (vfe_vq_add(rx, &b, 1, NULL) < 0)
			return -ENOSPC;
	}
	vfe_vq_publish(rx);
	return vfe_vq_kick(rx);
}

/*
 * The guest asks to connect from @p port to the host's NO_LISTENER_PORT:
 * the backend must consume the request and answer RST on rx, with a call.
 * Returns the rx buffers consumed (1 when all is well), or -1.
 */
static int
probe_rst(struct vfe_vsock *v, uint32_t port, const char *what)
{
	struct vfe_vq *tx = &v->vq[VFE_VSOCK_TX];
	struct vfe_vq *rx = &v->vq[VFE_VSOCK_RX];
	struct vfe_vsock_pkt req = {
		.src_cid = v->cid, .dst_cid = HOST_CID,
		.src_port = port, .dst_port = NO_LISTENER_PORT,
		.type = VIRTIO_VSOCK_TYPE_STREAM, .op = VIRTIO_VSOCK_OP_REQUEST,
		.buf_alloc = 256 * 1024,
	}, rst;
	struct virtio_vsock_hdr *h;
	struct vfe_buf b = { .len = sizeof(*h) };
	uint16_t used_before = rx->last_used;
	uint32_t len = 0;
	void *buf = NULL;
	int id;

	h = vfe_mem_alloc(&v->mem, sizeof(*h), 8, &b.gpa);
	if (h == NULL || post_rx(v, RX_BUFS) < 0) {
		tap_ok(0, "%s: probe buffers", what);
		return -1;
	}
	vfe_vsock_build(h, &req);
	vfe_vq_add(tx, &b, 1, NULL);
	vfe_vq_publish(tx);
	vfe_vq_kick(tx);

	tap_ok(vfe_vq_wait_used(tx, REPLY_MS) == 0 && vfe_vq_get_used(tx, NULL, NULL) >= 0,
		"%s: tx request consumed", what);
	if (!tap_ok(vfe_vq_wait_used(rx, REPLY_MS) == 0, "%s: rx packet for the guest", what))
		return -1;
	id = vfe_vq_get_used(rx, &len, NULL);
	if (id >= 0)
		buf = vfe_mem_ptr(&v->mem, rx->desc[id].addr, RX_BUF_LEN);
	if (!tap_ok(id >= 0 && buf != NULL && len >= sizeof(*h) &&
			vfe_vsock_parse(buf, len, &rst) == 0, "%s: rx used entry (id %d, len %u)",
			what, id, len))
		return -1;
	tap_ok(rst.op == VIRTIO_VSOCK_OP_RST && rst.type == VIRTIO_VSOCK_TYPE_STREAM &&
		rst.src_cid == HOST_CID && rst.src_port == NO_LISTENER_PORT &&
		rst.dst_cid == v->cid && rst.dst_port == port && rst.len == 0 &&
		len == sizeof(*h), "%s: RST from 2:%u to %llu:%u", what, NO_LISTENER_PORT,
		(unsigned long long)v->cid, port);
	if (rst.op != VIRTIO_VSOCK_OP_RST)
		tap_diag("got op %u type %u %llu:%u -> %llu:%u len %u, used len %u", rst.op,
			rst.type, (unsigned long long)rst.src_cid, rst.src_port,
			(unsigned long long)rst.dst_cid, rst.dst_port, rst.len, len);
	tap_ok(vfe_vq_wait_call(rx, REPLY_MS) == 0, "%s: guest interrupted for rx", what);
	return (uint16_t)(rx->last_used - used_before);
}

/*
 * Give both rings a new call eventfd, as QEMU does right after start. The
 * old ones stay open until the backend has handled the change: a call it
 * sent just before is not lost (QEMU also reads its old notifier).
 */
static int
replace_call_fds(struct vfe_vsock *v)
{
	int old[VFE_VSOCK_NQ];
	unsigned int q;
	int fd, rc = 0;

	for (q = 0; q < VFE_VSOCK_NQ; q++)
		old[q] = v->vq[q].call_fd;
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		v->vq[q].call_fd = fd;
		rc = vfe_set_vring_call(&v->conn, q, fd);
	}
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	for (q = 0; q < VFE_VSOCK_NQ; q++)
		if (v->vq[q].call_fd != old[q])
			close(old[q]);
	return rc;
}

/* First attach, then stop and start again on the same connection. */
static void
test_first_attach(void)
{
	struct vfe_vsock_conf conf = { .base = { 7, 300 } };
	struct vfe_vsock v;
	uint16_t base[2] = { 0, 0 };
	uint32_t low = ~0u, high = ~0u;
	uint64_t cid = 0;
	int rc, used;

	if (attach(&v, sock3, &conf, "vm3") < 0)
		return;
	tap_diag("features offered %#llx, acked %#llx; protocol features offered %#llx",
		(unsigned long long)v.device_features, (unsigned long long)v.features,
		(unsigned long long)v.device_protocol_features);
	tap_ok(v.cid == 3, "vm3: GET_CONFIG gives CID 3 (got %llu)", (unsigned long long)v.cid);
	tap_ok(!!(v.device_features & (1ULL << VIRTIO_F_VERSION_1)),
		"vm3: VIRTIO_F_VERSION_1 offered");
	tap_ok(!!(v.device_features & (1ULL << VFE_F_PROTOCOL_FEATURES)),
		"vm3: VHOST_USER_F_PROTOCOL_FEATURES (bit 30) offered");
	tap_ok(!!(v.device_protocol_features & (1ULL << VFE_PROTOCOL_F_CONFIG)),
		"vm3: VHOST_USER_PROTOCOL_F_CONFIG offered");
	tap_ok((v.features & ~v.device_features) == 0 &&
		(v.features & (1ULL << VIRTIO_F_VERSION_1)), "vm3: SET_FEATURES acked a subset");
	tap_ok(vfe_get_config_cid(&v.conn, &cid) == 0 && cid == 3,
		"vm3: GET_CONFIG again on a running device");
	tap_ok(vfe_get_config(&v.conn, 0, 4, &low) == 0 && low == htole32(3) &&
		vfe_get_config(&v.conn, 4, 4, &high) == 0 && high == 0,
		"vm3: GET_CONFIG of each half of guest_cid");

	/* Nothing moved on the rings: the backend gives back what it was told. */
	rc = vfe_vsock_stop(&v, base);
	tap_ok(rc == 0 && base[0] == 7 && base[1] == 300,
		"vm3: GET_VRING_BASE returns the bases set (rx %u, tx %u)", base[0], base[1]);

	/* As after "stop" and "cont" in QEMU: same connection, same rings. */
	if (!tap_ok(vfe_vsock_start(&v, base) == 0, "vm3: restart on the same connection"))
		tap_diag("%s", v.conn.err);
	used = probe_rst(&v, 40000, "vm3 restarted");
	rc = vfe_vsock_detach(&v, base, false);
	tap_ok(rc == 0 && used >= 0 && base[0] == 7 + used && base[1] == 301,
		"vm3: GET_VRING_BASE counts what was consumed (rx %u, tx %u)", base[0], base[1]);
	vfe_vsock_close(&v);
}

/*
 * A restarted QEMU connects some time after the old one died; give the
 * backend that time. Reconnecting at once is checked on its own.
 */
static void
settle(void)
{
	usleep(SETTLE_US);
}

/* QEMU restarted after a clean stop: a new connection to the same socket. */
static void
test_new_connection(void)
{
	struct vfe_vsock v;

	settle();
	if (attach(&v, sock3, NULL, "vm3 second connection") < 0)
		return;
	tap_ok(v.cid == 3, "vm3 second connection: CID 3 again");
	/* QEMU sends SET_VRING_CALL again right after start: calls go to the new fd. */
	if (!tap_ok(replace_call_fds(&v) == 0, "vm3 second connection: new call eventfds"))
		tap_diag("%s", v.conn.err);
	probe_rst(&v, 40001, "vm3 second connection");
	/* QEMU killed: no GET_VRING_BASE, the socket just closes. */
	vfe_vsock_close(&v);
}

static void
test_after_abrupt_close(void)
{
	struct vfe_vsock v;

	settle();
	if (attach(&v, sock3, NULL, "vm3 after abrupt close") < 0)
		return;
	tap_ok(v.cid == 3, "vm3 after abrupt close: CID 3 again");
	probe_rst(&v, 40002, "vm3 after abrupt close");
	vfe_vsock_close(&v);

	/* The backend may not have seen the close yet when the new connection comes. */
	if (attach(&v, sock3, NULL, "vm3 reconnect at once after abrupt close") < 0)
		return;
	probe_rst(&v, 40003, "vm3 reconnect at once after abrupt close");
	vfe_vsock_close(&v);
}

/* Returns whether @p v5 stays attached, for the SIGTERM test. */
static bool
test_two_devices(struct vfe_vsock *v5)
{
	struct vfe_vsock v3;

	/* Guest memory as three regions with holes, above 4 GiB guest-physical. */
	static const struct vfe_vsock_conf conf5 = {
		.mem = { .size = 6 << 20, .nregions = 3, .gpa_base = 1ULL << 32, .gap = 1 << 20 },
	};

	settle();
	if (attach(v5, sock5, &conf5, "two devices, vm5") < 0)
		return false;
	if (attach(&v3, sock3, NULL, "two devices, vm3") < 0)
		return true;
	tap_ok(v3.cid == 3 && v5->cid == 5, "two devices: CIDs 3 and 5 (got %llu and %llu)",
		(unsigned long long)v3.cid, (unsigned long long)v5->cid);
	probe_rst(v5, 50000, "two devices, vm5");
	probe_rst(&v3, 50001, "two devices, vm3");
	tap_ok(vfe_vsock_detach(&v3, NULL, false) == 0, "two devices: vm3 detached");
	vfe_vsock_close(&v3);
	return true;
}

int
main(void)
{
	char vm3[320], vm5[320], uds[128];
	const char *socks[3];
	struct vfe_vsock v5;
	uint64_t features;
	bool v5_attached;
	int status;

	if (app_proc_init(&app) < 0) {
		tap_ok(0, "run dir");
		return tap_done();
	}
	app_proc_path(&app, "vm3.sock", sock3, sizeof(sock3));
	app_proc_path(&app, "vm5.sock", sock5, sizeof(sock5));
	snprintf(vm3, sizeof(vm3), "cid=3,socket=%s,uds=%s", sock3,
		app_proc_path(&app, "vm3.vsock", uds, sizeof(uds)));
	snprintf(vm5, sizeof(vm5), "cid=5,socket=%s,uds=%s", sock5,
		app_proc_path(&app, "vm5.vsock", uds, sizeof(uds)));
	socks[0] = sock3;
	socks[1] = sock5;
	socks[2] = NULL;
	if (!tap_ok(app_proc_start(&app, NULL, (const char *[]){ "--vm", vm3, "--vm", vm5, NULL },
			socks, APP_START_MS) == 0, "app started with vm3 and vm5")) {
		app_proc_fini(&app);
		return tap_done();
	}

	test_first_attach();
	test_new_connection();
	test_after_abrupt_close();
	v5_attached = test_two_devices(&v5);

	/* vm5 is still attached: the app must let go of it and clean up. */
	status = app_proc_stop(&app, APP_STOP_MS);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	tap_ok(app_proc_sockets_left(&app) == 0, "app removed its sockets");
	if (v5_attached) {
		tap_ok(vfe_get_features(&v5.conn, &features) < 0,
			"vm5 connection closed by the app");
		vfe_vsock_close(&v5);
	}
	if (tap_failed)
		app_proc_dump_log(&app);
	app_proc_fini(&app);
	return tap_done();
}
