/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A guest that rewrites a packet's header after the app wrote part of it.
 *
 * VM 3 (the raw guest) and VM 5 share a group. --mbufs 64 leaves VM 3 a guest-to-host quota
 * of 20 mbufs (40 KiB), and guest 5 advertises a 4 KiB window and reads nothing at first:
 * a 64 KiB packet from guest 3 to guest 5 goes into the pipe as far as the quota lets it
 * and waits, written in part, at the head of guest 3's tx ring (tx_backpressure). Guest 3
 * then rewrites that packet's header in its buffer, and guest 5 reads. The app must finish
 * the packet as it read it first: guest 5 gets exactly the 64 KiB sent, on the connection
 * they were sent on, and VM 3's books count 64 KiB with the credit it shows guest 3 within
 * its buf_alloc. The rewrites: a length shorter than what was written, and the ports of
 * guest 3's other connection to guest 5.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "g2g_shim.h"
#include "hostile_util.h"
#include "pattern.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe_guest.h"

#define PORT_A 7000
#define PORT_B 7001
#define PKT (64u * 1024)
/* Guest 5's buf_alloc: VM 5 takes no more than this from the pipe until guest 5 reads. */
#define G5_WINDOW 4096u
#define WAIT_MS 10000
#define SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

static struct hu_env h;
static struct rawg g;
/* Guest 5's driver talks to the host only: the shim makes it talk to guest 3. */
static struct g2g_shim shim5;
static uint32_t next_gport = 40000;
static uint8_t out[PKT], in_a[2 * PKT], in_b[2 * PKT];

static void tick(void)
{
	unsigned int n = rg_poll(&g) + vfe_guest_poll(&h.peer.g);

	if (n == 0)
		usleep(100);
}

#define WAIT(cond) POLL_WAIT(cond, WAIT_MS, tick())

/* A header from guest 3 to guest 5. */
static struct vfe_vsock_pkt to5(uint16_t op, uint32_t gport, uint32_t port, uint32_t len,
				uint32_t flags)
{
	struct vfe_vsock_pkt p = rg_hdr(op, gport, port);

	p.dst_cid = HU_PEER_CID;
	p.len = len;
	p.flags = flags;
	return p;
}

/* Guest 3 connects from @p gport to guest 5's @p port: guest 5's end, or NULL. */
static struct vfe_guest_conn *open_to5(uint32_t gport, uint32_t port)
{
	struct vfe_vsock_pkt req = to5(VIRTIO_VSOCK_OP_REQUEST, gport, port, 0, 0);
	struct vfe_guest_conn *c = NULL;
	unsigned int from = g.nlog;

	if (rg_send(&g, &req, NULL) < 0)
		return NULL;
	if (!WAIT((c != NULL || (c = vfe_guest_accept(&h.peer.g)) != NULL) &&
		  rg_find(&g, from, VIRTIO_VSOCK_OP_RESPONSE, gport, port) >= 0))
		return NULL;
	return c;
}

/* A number of VM 3's connection (gport, port) in /vsock/conns. */
static uint64_t conn3(uint32_t gport, uint32_t port, const char *field)
{
	char path[80];

	snprintf(path, sizeof(path), "conns.%u_%u.%s", gport, port, field);
	return ops_tel_u64(&h.o, "/vsock/conns,3", path);
}

static uint64_t vm_conns(unsigned int cid)
{
	char path[32];

	snprintf(path, sizeof(path), "%u.conns", cid);
	return ops_tel_u64(&h.o, "/vsock/vms", path);
}

/* Guest 3 closes (gport, port); guest 5 answers with an RST, as Linux does. */
static bool close_to5(uint32_t gport, uint32_t port, struct vfe_guest_conn *c5)
{
	struct vfe_vsock_pkt shut = to5(VIRTIO_VSOCK_OP_SHUTDOWN, gport, port, 0, SHUT_BOTH);
	unsigned int from = g.nlog;

	return rg_send(&g, &shut, NULL) == 0 && WAIT(c5->state == VFE_GC_CLOSED) &&
	       WAIT(rg_find(&g, from, VIRTIO_VSOCK_OP_RST, gport, port) >= 0);
}

enum rewrite { SHORTER, OTHER_CONN };

static void test_rewrite(enum rewrite how)
{
	const char *what = how == SHORTER ? "its len made 100" : "the ports of the other connection";
	uint32_t ga = next_gport++, gb = next_gport++;
	uint64_t bp = hu_stat(&h, HU_ATTACKER_CID, "tx_backpressure");
	uint64_t reset3 = hu_stat(&h, HU_ATTACKER_CID, "conns_reset");
	uint64_t reset5 = hu_stat(&h, HU_PEER_CID, "conns_reset");
	struct vfe_guest_conn *a5 = open_to5(ga, PORT_A), *b5 = open_to5(gb, PORT_B);
	struct vfe_vsock_pkt p = to5(VIRTIO_VSOCK_OP_RW, ga, PORT_A, PKT, 0);
	struct virtio_vsock_hdr *hdr;
	uint64_t completed;
	size_t got_a = 0, got_b = 0;
	struct pattern pat;
	bool ok;

	if (!tap_ok(a5 && b5, "%s: guest 3 opens two connections to guest 5", what))
		return;
	pattern_init(&pat, how + 1);
	pattern_fill(&pat, out, PKT);
	completed = g.tx_completed;
	ok = rg_send(&g, &p, out) == 0;
	hdr = (struct virtio_vsock_hdr *)rg_last_tx(&g);
	/* Guest 5 takes what arrives into its window but reads nothing. */
	ok = ok && WAIT(hu_stat(&h, HU_ATTACKER_CID, "tx_backpressure") > bp);
	tap_ok(ok && g.tx_completed == completed && vfe_guest_rx_avail(a5) <= G5_WINDOW,
	       "%s: guest 5 does not read: the 64 KiB packet waits, written in part", what);
	ok = conn3(ga, PORT_A, "from_guest_bytes") < PKT &&
	     conn3(ga, PORT_A, "guest_credit") <= conn3(ga, PORT_A, "our_buf_alloc");
	tap_ok(ok, "%s: meanwhile VM 3 counts the part written (%llu of %u bytes), its credit "
	       "for guest 3 within buf_alloc", what,
	       (unsigned long long)conn3(ga, PORT_A, "from_guest_bytes"), PKT);

	/* The rewrite, in guest memory, while the app holds what it read of the packet. */
	if (how == SHORTER) {
		hdr->len = htole32(100);
	} else {
		hdr->src_port = htole32(gb);
		hdr->dst_port = htole32(PORT_B);
	}
	WAIT((got_a += vfe_guest_recv(&h.peer.g, a5, in_a + got_a, sizeof(in_a) - got_a),
	      got_b += vfe_guest_recv(&h.peer.g, b5, in_b + got_b, sizeof(in_b) - got_b),
	      got_a >= PKT && g.tx_completed > completed));
	tap_ok(got_a == PKT && memcmp(in_a, out, PKT) == 0 && got_b == 0,
	       "%s: guest 5 reads: the 64 KiB as first sent arrive on the connection they were "
	       "sent on, once each (%zu bytes), the other gets nothing (%zu)", what, got_a, got_b);
	ok = WAIT(conn3(ga, PORT_A, "queued_to_host") == 0) &&
	     conn3(ga, PORT_A, "from_guest_bytes") == PKT &&
	     conn3(ga, PORT_A, "guest_credit") == conn3(ga, PORT_A, "our_buf_alloc") &&
	     conn3(gb, PORT_B, "from_guest_bytes") == 0;
	tap_ok(ok, "%s: VM 3's books: 64 KiB from guest 3 on that connection, all passed on, "
	       "the credit it shows guest 3 its buf_alloc and no more (%llu of %llu), none on the "
	       "other", what, (unsigned long long)conn3(ga, PORT_A, "guest_credit"),
	       (unsigned long long)conn3(ga, PORT_A, "our_buf_alloc"));
	tap_ok(hu_stat(&h, HU_ATTACKER_CID, "conns_reset") == reset3 &&
	       hu_stat(&h, HU_PEER_CID, "conns_reset") == reset5,
	       "%s: no connection reset", what);
	ok = close_to5(ga, PORT_A, a5) && close_to5(gb, PORT_B, b5) &&
	     WAIT(vm_conns(HU_ATTACKER_CID) == 0 && vm_conns(HU_PEER_CID) == 0);
	tap_ok(ok, "%s: both closed, both tables empty", what);
}

int main(void)
{
	const char *extra[] = { "--mbufs", "64", NULL };
	struct vfe_guest_conf peer = { .buf_alloc = G5_WINDOW };
	int status;

	g2g_guest_conf(&shim5, &h.peer.v, &peer);
	if (!tap_ok(hu_start_with(&h, extra, "group=g", &peer) == 0 &&
		    rg_attach(&g, &h, NULL) == 0, "app started (--mbufs 64), VMs 3 and 5 in one "
		    "group, guest 5 with a %u-byte window: %s", G5_WINDOW, h.why))
		goto out;
	vfe_guest_listen(&h.peer.g, PORT_A, true);
	vfe_guest_listen(&h.peer.g, PORT_B, true);
	test_rewrite(SHORTER);
	test_rewrite(OTHER_CONN);
	tap_ok(g.bad_used == 0 && h.peer.g.errors == 0 && shim5.errors == 0,
	       "every used entry named a chain in flight; guest 5 saw no protocol error (%s)",
	       h.peer.g.err);
	tap_ok(hu_peer_check(&h) == 0, "VM 5 still talks to the host: %s", h.why);
	rg_close(&g);
out:
	status = hu_stop(&h, tap_failed);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "app exits 0 (%#x)", status);
	return tap_done();
}
