/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Each VM's share of the pipe connections (max-pipes): one guest that opens every
 * guest-to-guest connection it can takes its own share and nothing more. In one process:
 * the engine with VMs 3 and 4 in group "a", 5 and 6 in group "b", all on default limits
 * (four VMs: 1024 / 4 = 256 pipes each), four userspace guests, and the test as the native
 * program. Guest 3 connects to guest 4 until it is refused: exactly its share is established,
 * the next connect gets an RST and is counted in pipes_refused. While it holds them all,
 * guest 5 -> guest 6, a native program -> guest 4 and guest 5 -> a native listener connect
 * and carry checked bytes both ways; a native connect to guest 3 is refused, its share being
 * used up. Once guest 3 closes everything, every share is back to 0 and guest 3 connects
 * again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <vsock_pmd.h>
#include <vsock_pmd_native.h>

#include "g2g_shim.h"
#include "native_io.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define NB_VMS 4
#define WAIT_MS 10000
#define BYTES (256u * 1024)
#define SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

struct vm {
	unsigned int cid;
	const char *group;
	struct vfe_vsock v;
	struct vfe_guest g;
	struct g2g_shim shim;
	bool attached;
};

static struct vm vms[NB_VMS] = {
	{ .cid = 3, .group = "a" }, { .cid = 4, .group = "a" },
	{ .cid = 5, .group = "b" }, { .cid = 6, .group = "b" },
};
static struct vm *const vm3 = &vms[0], *const vm4 = &vms[1], *const vm5 = &vms[2],
		 *const vm6 = &vms[3];
static char dir[64];
static struct rte_mempool *mp;
static uint8_t out[BYTES], back[BYTES], in[BYTES];
/* Guest 3's connections to guest 4, and guest 4's ends of them. */
static struct vfe_guest_conn *held[VFE_GUEST_MAX_CONNS], *held4[VFE_GUEST_MAX_CONNS];

static void tick(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };
	unsigned int i, work = 0;

	for (i = 0; i < NB_VMS; i++)
		if (vms[i].attached)
			work += vfe_guest_poll(&vms[i].g);
	if (work == 0)
		nanosleep(&pause, NULL);
}

#define WAIT(cond) POLL_WAIT(cond, WAIT_MS, tick())

static unsigned int vm_index(const struct vm *vm)
{
	return (unsigned int)(vm - vms);
}

static struct vsock_pmd_vm_info info_of(const struct vm *vm)
{
	struct vsock_pmd_vm_info vi = { 0 };

	vsock_pmd_vm_info_get(vm_index(vm), &vi);
	return vi;
}

static uint64_t pipes_refused(const struct vm *vm)
{
	struct vsock_pmd_vm_stats st = { 0 };

	vsock_pmd_vm_stats_get(vm->cid, &st);
	return st.pipes_refused;
}

static struct vfe_guest_conn *connect_to(struct vm *from, uint64_t cid, uint32_t port)
{
	return g2g_connect(&from->shim, &from->g, cid, port, VIRTIO_VSOCK_TYPE_STREAM);
}

/* Send what the credit allows of out, receive into in; both ends are guests. */
static bool g2g_bytes(struct vm *a, struct vfe_guest_conn *ca, struct vm *b,
		      struct vfe_guest_conn *cb)
{
	size_t sent_ab = 0, sent_ba = 0, got_ab = 0, got_ba = 0;
	long n;

	WAIT((((n = vfe_guest_send(&a->g, ca, out + sent_ab, BYTES - sent_ab)) > 0 ?
	       sent_ab += (size_t)n : 0),
	      ((n = vfe_guest_send(&b->g, cb, out + sent_ba, BYTES - sent_ba)) > 0 ?
	       sent_ba += (size_t)n : 0),
	      got_ab += vfe_guest_recv(&b->g, cb, in + got_ab, BYTES - got_ab),
	      got_ba += vfe_guest_recv(&a->g, ca, back + got_ba, BYTES - got_ba),
	      got_ab == BYTES && got_ba == BYTES));
	return got_ab == BYTES && got_ba == BYTES && memcmp(in, out, BYTES) == 0 &&
	       memcmp(back, out, BYTES) == 0;
}

/* The same between a native connection @p h and a guest's @p gc. */
static bool native_bytes(int h, struct vm *vm, struct vfe_guest_conn *gc)
{
	size_t sent_h = 0, sent_g = 0, got_g = 0, got_h = 0;
	long n;

	WAIT((((n = native_io_send(h, mp, out + sent_h, BYTES - sent_h, 2000)) > 0 ?
	       sent_h += (size_t)n : 0),
	      ((n = vfe_guest_send(&vm->g, gc, out + sent_g, BYTES - sent_g)) > 0 ?
	       sent_g += (size_t)n : 0),
	      got_g += vfe_guest_recv(&vm->g, gc, in + got_g, BYTES - got_g),
	      native_io_recv(h, back, &got_h, BYTES, NULL),
	      got_g == BYTES && got_h == BYTES));
	return got_g == BYTES && got_h == BYTES && memcmp(in, out, BYTES) == 0 &&
	       memcmp(back, out, BYTES) == 0;
}

/* A guest closes its end: the other guest answers with an RST, as Linux does. */
static bool g2g_close(struct vm *a, struct vfe_guest_conn *ca, struct vfe_guest_conn *cb)
{
	vfe_guest_shutdown(&a->g, ca, SHUT_BOTH);
	return WAIT(ca->state == VFE_GC_CLOSED && cb->state == VFE_GC_CLOSED);
}

static bool native_close(int h, struct vm *vm, struct vfe_guest_conn *gc)
{
	vsock_native_close(h);
	WAIT(gc->peer_shut == SHUT_BOTH || gc->state == VFE_GC_CLOSED);
	if (gc->state != VFE_GC_CLOSED)
		vfe_guest_send_ctl(&vm->g, gc, VIRTIO_VSOCK_OP_RST, 0);
	vfe_guest_release(&vm->g, gc);
	return true;
}

/* Guest 3 connects to guest 4 (who accepts each) until refused: how many it holds. */
static unsigned int fill_share(void)
{
	unsigned int n = 0;

	vfe_guest_listen(&vm4->g, 7000, true);
	while (n < VFE_GUEST_MAX_CONNS) {
		struct vfe_guest_conn *c = connect_to(vm3, vm4->cid, 7000);

		if (!c || !WAIT(c->state != VFE_GC_CONNECTING))
			break;
		if (c->state == VFE_GC_ESTABLISHED &&
		    !WAIT((held4[n] = vfe_guest_accept(&vm4->g)) != NULL))
			break;
		if (c->state != VFE_GC_ESTABLISHED) {
			/* Refused: the RST came from CID 4, whom it asked for. */
			tap_ok(c->reset && g2g_seen_from(&vm3->shim, VIRTIO_VSOCK_OP_RST,
							 c->local_port, 7000, NULL) == vm4->cid,
			       "guest 3's connect number %u is reset, by CID 4", n + 1);
			vfe_guest_release(&vm3->g, c);
			break;
		}
		held[n++] = c;
	}
	return n;
}

static void test_shares(void)
{
	const uint32_t share = info_of(vm3).max_pipes;
	struct vfe_guest_conn *c5, *c6 = NULL, *g4 = NULL;
	uint64_t refused3 = pipes_refused(vm3);
	unsigned int n, i, closed = 0;
	int h, l, h5 = -EAGAIN;
	bool ok;

	tap_ok(share == VSOCK_PMD_PIPES_DEFAULT_TOTAL / NB_VMS && info_of(vm6).max_pipes == share,
	       "four VMs on the default: %u pipes each", share);
	n = fill_share();
	tap_ok(n == share && info_of(vm3).pipes == share && pipes_refused(vm3) == refused3 + 1,
	       "guest 3 holds exactly its share of connections to guest 4 (%u of %u), the next "
	       "refused and counted (pipes_refused %lu)", n, share,
	       (unsigned long)(pipes_refused(vm3) - refused3));

	/* Another group's guests. */
	vfe_guest_listen(&vm6->g, 7100, true);
	c5 = connect_to(vm5, vm6->cid, 7100);
	ok = c5 && WAIT(c5->state == VFE_GC_ESTABLISHED && (c6 = vfe_guest_accept(&vm6->g)));
	tap_ok(ok && g2g_bytes(vm5, c5, vm6, c6) && g2g_close(vm5, c5, c6),
	       "meanwhile guest 5 connects to guest 6: %u bytes each way, intact, closed",
	       (unsigned int)BYTES);

	/* A native program to guest 4, whose share is its own. */
	vfe_guest_listen(&vm4->g, 7200, true);
	h = vsock_native_connect(vm4->cid, 7200, VSOCK_NATIVE_STREAM);
	ok = h >= 0 && WAIT((g4 = vfe_guest_accept(&vm4->g)) != NULL) &&
	     WAIT(vsock_native_state(h) == VSOCK_NATIVE_ESTABLISHED);
	tap_ok(ok && native_bytes(h, vm4, g4) && native_close(h, vm4, g4),
	       "meanwhile a native program connects to guest 4: %u bytes each way, intact",
	       (unsigned int)BYTES);

	/* Guest 5 to a native listener on its VM. */
	l = vsock_native_listen(vm5->cid, 7300);
	c5 = connect_to(vm5, VFE_GUEST_HOST_CID, 7300);
	ok = l >= 0 && c5 && WAIT((h5 = vsock_native_accept(l)) >= 0) &&
	     WAIT(c5->state == VFE_GC_ESTABLISHED);
	tap_ok(ok && native_bytes(h5, vm5, c5) && native_close(h5, vm5, c5),
	       "meanwhile guest 5 connects to a native listener: %u bytes each way, intact",
	       (unsigned int)BYTES);
	vsock_native_listen_close(l);

	/* Guest 3's own share is used up: a native connect to it is refused too. */
	vfe_guest_listen(&vm3->g, 7400, true);
	h = vsock_native_connect(vm3->cid, 7400, VSOCK_NATIVE_STREAM);
	tap_ok(h == -ENOBUFS && pipes_refused(vm3) == refused3 + 2,
	       "a native connect to guest 3 is refused (-ENOBUFS, counted): its share is in use");

	for (i = 0; i < n; i++) {
		closed += g2g_close(vm3, held[i], held4[i]);
		vfe_guest_release(&vm3->g, held[i]);
		vfe_guest_release(&vm4->g, held4[i]);
	}
	tap_ok(closed == n && WAIT(info_of(vm3).pipes == 0 && info_of(vm4).pipes == 0 &&
				   info_of(vm5).pipes == 0 && info_of(vm6).pipes == 0),
	       "guest 3 closes its %u connections: every share back to 0", closed);
	c5 = connect_to(vm3, vm4->cid, 7000);
	ok = c5 && WAIT(c5->state == VFE_GC_ESTABLISHED && (g4 = vfe_guest_accept(&vm4->g)));
	tap_ok(ok && g2g_close(vm3, c5, g4), "guest 3 connects to guest 4 again");
}

static int attach(struct vm *vm)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	struct vfe_guest_conf gc = { 0 };
	char sock[96];
	int rc;

	g2g_guest_conf(&vm->shim, &vm->v, &gc);
	snprintf(sock, sizeof(sock), "%s/vm%u.sock", dir, vm->cid);
	rc = vfe_vsock_attach(&vm->v, sock, &vc);
	if (rc == 0 && (rc = vfe_guest_init(&vm->g, &vm->v, &gc)) < 0)
		vfe_vsock_close(&vm->v);
	vm->attached = rc == 0;
	return rc;
}

int main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l",
			"0-1", "--log-level=lib.eal:error", "--log-level=lib.vhost.*:error",
			"--log-level=vsock:warning" };
	struct vsock_pmd_conf conf;
	unsigned int i;
	bool up = true;

	(void)argc;
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		tap_ok(0, "rte_eal_init");
		return tap_done();
	}
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 131 + (i >> 9));
	snprintf(dir, sizeof(dir), "/tmp/vsock-shares-XXXXXX");
	mp = rte_pktmbuf_pool_create("shares_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	if (!mkdtemp(dir) || !mp) {
		tap_ok(0, "run directory and mempool");
		return tap_done();
	}
	vsock_pmd_conf_init(&conf);
	conf.nb_vms = NB_VMS;
	conf.mbufs_per_vm = 2048;
	for (i = 0; i < NB_VMS; i++) {
		struct vsock_pmd_vm_conf *vc = &conf.vms[i];

		vc->cid = vms[i].cid;
		/*
		 * A connect that this machine stalls past the default 2 s would be refused by
		 * the timeout and read as the end of a share: shares are tested, not timeouts.
		 */
		vc->connect_timeout_ms = 3600000;
		vc->nb_groups = 1;
		snprintf(vc->groups[0], sizeof(vc->groups[0]), "%s", vms[i].group);
		snprintf(vc->socket_path, sizeof(vc->socket_path), "%s/vm%u.sock", dir, vms[i].cid);
		snprintf(vc->uds_path, sizeof(vc->uds_path), "%s/vm%u.vsock", dir, vms[i].cid);
	}
	if (!tap_ok(vsock_pmd_start(&conf) == 0, "engine started: VMs 3, 4 in group a, 5, 6 in b"))
		return tap_done();
	for (i = 0; i < NB_VMS; i++)
		up &= tap_ok(attach(&vms[i]) == 0 && WAIT(info_of(&vms[i]).running),
			     "guest %u attached and running", vms[i].cid);
	if (up)
		test_shares();
	for (i = 0; i < NB_VMS; i++) {
		tap_ok(vms[i].g.errors == 0 && vms[i].shim.errors == 0,
		       "guest %u: every packet followed the protocol (%s)", vms[i].cid,
		       vms[i].g.err);
		if (vms[i].attached) {
			vfe_vsock_detach(&vms[i].v, NULL, false);
			vfe_guest_fini(&vms[i].g);
			vfe_vsock_close(&vms[i].v);
		}
	}
	vsock_pmd_stop();
	tap_ok(rte_mempool_avail_count(mp) == 4095, "every mbuf the test sent came back (%u)",
	       rte_mempool_avail_count(mp));
	for (i = 0; i < NB_VMS; i++) {
		char p[96];

		snprintf(p, sizeof(p), "%s/vm%u.vsock", dir, vms[i].cid);
		unlink(p);
	}
	rmdir(dir);
	return tap_done();
}
