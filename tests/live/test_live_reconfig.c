/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frontend changes the device under a running transfer, as QEMU does on memory hotplug
 * and as a guest driver reload does: the worker must stop touching the rings while DPDK
 * replaces them and pick them up again after, never reading or writing outside the guest's
 * memory, and traffic must go on intact.
 *
 * - SET_MEM_TABLE with the same table;
 * - SET_MEM_TABLE with the same memory cut into two regions (DPDK unmaps and maps again:
 *   every address the worker held is gone);
 * - SET_MEM_TABLE with the memory at new front-end addresses, which leaves DPDK unable to
 *   find the rings until SET_VRING_ADDR sets them again;
 * - SET_VRING_NUM growing a ring past the end of its memory region on a running device (a
 *   hostile frontend): the ring is refused, the app survives;
 * - a driver reload: GET_VRING_BASE, RESET_OWNER, SET_FEATURES with other features, the
 *   rings set up afresh; the old connections end, new ones work at once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>

#include "modes_util.h"
#include "tap.h"

#define WAIT_MS 5000
/* Steps of 20 ms while waiting for a line in the app's log: WAIT_MS in all. */
#define LOG_WAIT_STEPS (WAIT_MS / 20)
#define CHUNK 65536u

static struct md_env env;

/* Data in flight both ways on both connections, for the change to happen under. */
static bool
start_traffic(void)
{
	unsigned int w;

	for (w = 0; w < MD_NB_WAYS; w++)
		if (md_send(&env, (enum md_way)w, CHUNK, WAIT_MS) < 0)
			return false;
	return true;
}

/* Everything sent arrives intact, then one more exchange each way. */
static void
check_traffic(const char *what)
{
	bool ok = true;
	unsigned int w;

	for (w = 0; w < MD_NB_WAYS && ok; w++)
		ok = md_recv_all(&env, (enum md_way)w, WAIT_MS) == 0;
	for (w = 0; w < MD_NB_WAYS && ok; w++)
		ok = md_one_way(&env, (enum md_way)w, CHUNK, WAIT_MS) > 0;
	if (!tap_ok(ok, "%s: the transfers in flight and new ones arrive intact, both "
		"connections, both ways", what))
		tap_diag("%s", env.why);
}

static bool
app_alive(void)
{
	return kill(env.o.dp.app.pid, 0) == 0 &&
	       ops_tel_u64(&env.o, "/vsock/stats,3", "from_guest_pkts") != UINT64_MAX;
}

static void
case_same_table(void)
{
	struct vfe_vsock *v = &env.o.dp.v;
	int rc;

	tap_ok(start_traffic(), "same table: traffic under way");
	rc = vfe_set_mem_table(&v->conn, &v->mem);
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "same table: SET_MEM_TABLE handled (rc %d %s)", rc, v->conn.err);
	check_traffic("same table");
}

/* The same bytes described as two regions: DPDK drops its mappings and makes new ones. */
static void
case_split_table(void)
{
	struct vfe_vsock *v = &env.o.dp.v;
	struct vfe_mem saved = v->mem;
	int rc;

	v->mem.nregions = 2;
	v->mem.region[0].size = saved.size / 2;
	v->mem.region[1] = (struct vfe_mem_region){ .gpa = saved.region[0].gpa + saved.size / 2,
		.size = saved.size / 2, .offset = saved.size / 2 };
	tap_ok(start_traffic(), "two regions: traffic under way");
	rc = vfe_set_mem_table(&v->conn, &v->mem);
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "two regions: SET_MEM_TABLE handled (rc %d %s)", rc, v->conn.err);
	check_traffic("two regions");
	/* And back to one region: mapped again. */
	v->mem = saved;
	tap_ok(start_traffic(), "one region again: traffic under way");
	rc = vfe_set_mem_table(&v->conn, &v->mem);
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "one region again: SET_MEM_TABLE handled (rc %d)", rc);
	check_traffic("one region again");
}

/*
 * The front end maps the memory a second time and describes it at the new addresses: DPDK
 * cannot translate the rings' old addresses any more, and the device waits until
 * SET_VRING_ADDR gives them again.
 */
static void
case_moved_table(void)
{
	struct vfe_vsock *v = &env.o.dp.v;
	uint8_t *base = v->mem.base, *moved;
	struct vfe_vring_addr addr;
	unsigned int q, i;
	long mark;
	int rc;

	moved = mmap(NULL, v->mem.size, PROT_READ | PROT_WRITE, MAP_SHARED, v->mem.fd, 0);
	if (!tap_ok(moved != MAP_FAILED, "moved: the memory mapped at a second address"))
		return;
	tap_ok(start_traffic(), "moved: traffic under way");
	mark = ops_log_mark(&env.o);
	v->mem.base = moved;
	rc = vfe_set_mem_table(&v->conn, &v->mem);
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "moved: SET_MEM_TABLE handled (rc %d %s)", rc, v->conn.err);
	/* The app says so when its control thread gets to it: wait for the line, bounded. */
	for (i = 0; i < LOG_WAIT_STEPS && !ops_log_has(&env.o, mark, "waits for its rings"); i++)
		md_spin_us(&env, 20000);
	tap_ok(app_alive() && ops_log_has(&env.o, mark, "waits for its rings"),
		"moved: the app waits for the rings, which DPDK can no longer find");
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		/* The same rings, seen through the second mapping. */
		vfe_vq_addr(&v->vq[q], q, &addr);
		addr.desc += (uint64_t)(moved - base);
		addr.avail += (uint64_t)(moved - base);
		addr.used += (uint64_t)(moved - base);
		rc = vfe_set_vring_addr(&v->conn, &addr);
	}
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "moved: SET_VRING_ADDR for both rings at the new addresses (rc %d)", rc);
	check_traffic("moved");
	v->mem.base = base;
	munmap(moved, v->mem.size);
	/* Describe the first mapping again (and re-set the rings there) for what follows. */
	rc = vfe_set_mem_table(&v->conn, &v->mem);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		vfe_vq_addr(&v->vq[q], q, &addr);
		rc = vfe_set_vring_addr(&v->conn, &addr);
	}
	if (rc == 0)
		rc = vfe_conn_sync(&v->conn);
	tap_ok(rc == 0, "moved back: table and rings at the first addresses (rc %d)", rc);
	check_traffic("moved back");
}

/* Stop, RESET_OWNER, other features, fresh rings and driver: as a guest reloading its driver. */
static int
reload(uint64_t features)
{
	struct dp_env *e = &env.o.dp;
	struct vfe_vsock *v = &e->v;
	struct vfe_msg msg = { .request = VFE_REQ_RESET_OWNER };
	static const uint16_t zero[VFE_VSOCK_NQ];
	unsigned int q;
	int rc;

	rc = vfe_vsock_stop(v, NULL);
	vfe_guest_fini(&e->g);
	e->attached = false;
	if (rc == 0)
		rc = vfe_conn_request(&v->conn, &msg, NULL, 0);
	v->features = features | (1ULL << VFE_F_PROTOCOL_FEATURES);
	if (rc == 0)
		rc = vfe_set_protocol_features(&v->conn, v->protocol_features);
	for (q = 0; rc == 0 && q < VFE_VSOCK_NQ; q++) {
		uint16_t num = v->vq[q].num;

		vfe_vq_fini(&v->vq[q]);
		rc = vfe_vq_init(&v->vq[q], &v->mem, num, 0, 0);
	}
	if (rc == 0)
		rc = vfe_vsock_start(v, zero);
	if (rc == 0)
		rc = vfe_guest_init(&e->g, v, NULL);
	if (rc == 0)
		e->attached = true;
	return rc;
}

/* The host ends of the old connections see them end (EOF or reset). */
static bool
old_conns_ended(void)
{
	char b[4096];
	bool a = false, bb = false;
	uint64_t deadline = dp_now_ns() + (uint64_t)WAIT_MS * 1000000;
	ssize_t n;

	while ((!a || !bb) && dp_now_ns() < deadline) {
		while (!a && ((n = recv(env.fd_a, b, sizeof(b), MSG_DONTWAIT)) > 0))
			;
		a = a || n == 0 || (n < 0 && errno != EAGAIN);
		while (!bb && ((n = recv(env.fd_b, b, sizeof(b), MSG_DONTWAIT)) > 0))
			;
		bb = bb || n == 0 || (n < 0 && errno != EAGAIN);
		vfe_guest_poll(&env.o.dp.g);
	}
	return a && bb;
}

static void
case_reload(uint64_t features, const char *what)
{
	char buf[OPS_TEL_MAX];
	uint64_t negotiated = 0;
	int rc;

	tap_ok(start_traffic(), "%s: traffic under way", what);
	rc = reload(features);
	if (!tap_ok(rc == 0, "%s: GET_VRING_BASE, RESET_OWNER, SET_FEATURES %#llx, rings set up "
		"again (rc %d %s)", what, (unsigned long long)features, rc, env.o.dp.v.conn.err))
		return;
	tap_ok(old_conns_ended(), "%s: the host ends of the old connections see them end", what);
	rc = ops_tel(&env.o, "/vsock/vms", buf, sizeof(buf)) == 0 &&
		ops_json_u64(buf, "features", &negotiated) == 0;
	tap_ok(rc && (negotiated & ~(1ULL << VFE_F_PROTOCOL_FEATURES)) == features,
		"%s: the app runs with the new features (%#llx)", what,
		(unsigned long long)negotiated);
	rc = md_connect(&env);
	if (!tap_ok(rc == 0, "%s: new connections both ways at once", what)) {
		tap_diag("%s", env.why);
		return;
	}
	check_traffic(what);
}

/*
 * A hostile frontend grows a running ring to 32768 entries: its used ring (and the
 * avail_event behind it) would then end 256 KiB further, past its 64 KiB memory region.
 * DPDK checked the ring's size when it translated the address, not since.
 */
static void
case_ring_outgrows_memory(void)
{
	static const struct vfe_vsock_conf small = { .mem = { .size = 8u << 16, .nregions = 8 } };
	struct dp_env *e = &env.o.dp;
	struct vfe_vsock v;
	unsigned int i;
	long mark;
	int rc;

	dp_detach(e);
	rc = vfe_vsock_attach(&v, e->sock, &small);
	if (!tap_ok(rc == 0, "outgrown ring: a frontend with 8 regions of 64 KiB attached (rc %d "
		"%s)", rc, v.conn.err))
		return;
	mark = ops_log_mark(&env.o);
	rc = vfe_set_vring_num(&v.conn, VFE_VSOCK_RX, 32768);
	if (rc == 0)
		rc = vfe_set_mem_table(&v.conn, &v.mem);
	if (rc == 0)
		rc = vfe_conn_sync(&v.conn);
	for (i = 0; i < LOG_WAIT_STEPS && !ops_log_has(&env.o, mark, "outside guest memory"); i++)
		md_sleep_us(20000);
	tap_ok(app_alive(), "outgrown ring: the app is alive after SET_VRING_NUM 32768 and "
		"SET_MEM_TABLE (rc %d)", rc);
	tap_ok(ops_log_has(&env.o, mark, "outside guest memory"),
		"outgrown ring: the app refused the ring, saying why");
	vfe_vsock_detach(&v, NULL, false);
	vfe_vsock_close(&v);
	rc = dp_attach_quiet(e, NULL, NULL);
	if (rc == 0)
		rc = md_connect(&env);
	tap_ok(rc == 0, "outgrown ring: a well-behaved frontend attaches afterwards (rc %d)", rc);
	check_traffic("outgrown ring, next frontend");
}

int
main(void)
{
	const uint64_t all = VFE_VSOCK_DRIVER_FEATURES;
	const uint64_t few = (1ULL << VIRTIO_F_VERSION_1);
	int status;

	if (!tap_ok(md_start(&env, NULL) == 0, "app started, VM 3 attached, a connection each "
		"way")) {
		tap_diag("%s", env.why);
		md_stop(&env, true);
		return tap_done();
	}
	case_same_table();
	case_split_table();
	case_moved_table();
	case_reload(few, "reload without EVENT_IDX, INDIRECT, SEQPACKET");
	case_reload(all, "reload with every feature again");
	case_ring_outgrows_memory();
	dp_check_guest(&env.o.dp, "live changes");
	status = md_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
