/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One guest at every limit at once, its neighbour untouched. VM 3's raw guest, on a VM with
 * max-connections=32 and --mbufs 256, opens connections to a host program that never
 * reads until its table is full; floods REQUESTs to a port nobody listens on while it reads
 * nothing, so that the RSTs owed to it overflow their queue; and fills every connection's
 * credit, so that its mbuf quota runs out and its tx ring stalls behind a packet that must
 * wait. All of it holds while VM 5, polled by the same worker lcore, streams 4 MiB each way
 * to a host program and completes 200 round trips, every byte checked. Then VM 3's frontend
 * goes away without a word, and the app's mbufs, descriptors and connections come back to
 * what they were before the attack.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "hostile_util.h"
#include "pattern.h"
#include "poll_wait.h"
#include "tap.h"

#define MAX_CONNS 32
#define LPORT 6400		/* the attacker's host program, which never reads */
#define DEAD_PORT 6999		/* nobody listens */
#define FLOOD 600		/* REQUESTs to it: more than the rx ring and the RST queue */
#define PKT (64u * 1024)
#define STREAM_BYTES (4u << 20)
#define RTTS 200
#define MSG 64
#define WAIT_MS 20000

static struct hu_env h;
static struct rawg g;
static int host_fd[MAX_CONNS + 1];
static uint8_t junk[PKT];

static void tick3(void)
{
	if (rg_poll(&g) == 0)
		usleep(100);
}

#define WAIT3(cond) ({ \
	uint64_t d_ = hu_now_ms() + WAIT_MS; \
	bool ok_; \
	while (!(ok_ = (cond)) && hu_now_ms() < d_) \
		tick3(); \
	ok_; })

static uint64_t stat3(const char *path)
{
	return hu_stat(&h, HU_ATTACKER_CID, path);
}

/* What /vsock/resources says: mbufs in use, open descriptors, connections. */
static bool resources(uint64_t r[3])
{
	r[0] = ops_tel_u64(&h.o, "/vsock/resources", "mbufs_in_use");
	r[1] = ops_tel_u64(&h.o, "/vsock/resources", "open_fds");
	r[2] = ops_tel_u64(&h.o, "/vsock/resources", "conns");
	return r[0] != UINT64_MAX && r[1] != UINT64_MAX && r[2] != UINT64_MAX;
}

/* The table fills: MAX_CONNS connections established and accepted, the next refused. */
static void fill_table(int lfd)
{
	uint64_t full = stat3("conns_table_full");
	unsigned int i, established = 0, accepted = 0;
	int k = -1;

	for (i = 0; i <= MAX_CONNS; i++) {
		struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, 20000 + i, LPORT);
		unsigned int from = g.nlog;

		rg_send(&g, &req, NULL);
		WAIT3((k = rg_find(&g, from, VIRTIO_VSOCK_OP_RESPONSE, 20000 + i, LPORT)) >= 0 ||
		      rg_find(&g, from, VIRTIO_VSOCK_OP_RST, 20000 + i, LPORT) >= 0);
		if (k >= 0 && rg_find(&g, from, VIRTIO_VSOCK_OP_RESPONSE, 20000 + i, LPORT) >= 0)
			established++;
	}
	for (i = 0; i < MAX_CONNS; i++) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		host_fd[i] = poll(&p, 1, WAIT_MS) == 1 ? accept(lfd, NULL, NULL) : -1;
		accepted += host_fd[i] >= 0;
	}
	tap_ok(established == MAX_CONNS && accepted == MAX_CONNS &&
	       stat3("conns_table_full") == full + 1,
	       "VM 3's table is full: %u connections established and accepted, the next refused "
	       "(conns_table_full +1)", established);
}

/* REQUESTs nobody answers but with an RST, while the guest reads nothing. */
static void flood_rsts(void)
{
	uint64_t dropped = stat3("rst_dropped");
	unsigned int i, sent = 0;

	g.rx_held = true;
	for (i = 0; i < FLOOD; i++) {
		struct vfe_vsock_pkt req = rg_hdr(VIRTIO_VSOCK_OP_REQUEST, 30000 + i, DEAD_PORT);

		if (WAIT3(rg_send(&g, &req, NULL) == 0))
			sent++;
	}
	tap_ok(sent == FLOOD && WAIT3(stat3("rst_dropped") > dropped),
	       "%u REQUESTs to a closed port with the rx ring left full: RSTs beyond the queue are "
	       "dropped and counted (rst_dropped +%lu)", sent,
	       (unsigned long)(stat3("rst_dropped") - dropped));
}

/*
 * Every connection's credit sent to a host program that never reads: the quota runs out.
 * Each socket takes about 200 KiB before anything waits in mbufs, so the whole credit is
 * sent, a full ring waiting for the worker, until the tx ring stalls. Sending only what the
 * ring took at once depended on the worker's pace: under load it took 81 packets, at most
 * three a connection, which the sockets may hold whole, and nothing stalled.
 */
static void fill_credit(void)
{
	uint64_t bp = stat3("tx_backpressure");
	unsigned int i, k, sent = 0;
	bool stop = false;

	for (k = 0; k < HU_APP_BUF_ALLOC / PKT && !stop; k++) {
		for (i = 0; i < MAX_CONNS && !stop; i++) {
			struct vfe_vsock_pkt p = rg_hdr(VIRTIO_VSOCK_OP_RW, 20000 + i, LPORT);

			p.len = PKT;
			if (!WAIT3(rg_send(&g, &p, junk) == 0 ||
				   (stop = stat3("tx_backpressure") > bp)))
				stop = true;	/* neither came: the check below says so */
			else if (!stop)
				sent++;
		}
	}
	tap_ok(WAIT3(stat3("tx_backpressure") > bp) && sent > 0,
	       "every connection's 256 KiB of credit offered (%u packets of 64 KiB queued): the "
	       "mbuf quota runs out and the tx ring waits (tx_backpressure)", sent);
}

/* What a non-blocking read of @p fd gives now, 0 when nothing. */
static size_t host_recv_some(int fd, uint8_t *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);

	return n > 0 ? (size_t)n : 0;
}

/* VM 5: a stream each way and round trips, every byte checked, while VM 3 is at its limits. */
static void neighbour(void)
{
	struct dp_env *e = &h.peer;
	struct vfe_guest_conn *c;
	struct dp_stream g2h, hrx, h2g, grx;
	uint8_t ping[MSG], got[MSG];
	unsigned int rtts = 0, i;
	int fd;

	c = dp_guest_connect(e, h.peer_port, VIRTIO_VSOCK_TYPE_STREAM, WAIT_MS);
	fd = c && c->state == VFE_GC_ESTABLISHED ? dp_accept(e, h.peer_lfd, WAIT_MS) : -1;
	if (!tap_ok(fd >= 0, "VM 5 connects to its host program"))
		return;
	dp_stream_init(&g2h, 55, STREAM_BYTES);
	dp_stream_init(&hrx, 55, STREAM_BYTES);
	dp_stream_init(&h2g, 56, STREAM_BYTES);
	dp_stream_init(&grx, 56, STREAM_BYTES);
	DP_WAIT(e, (dp_guest_send(e, c, &g2h), dp_host_recv(fd, &hrx), dp_host_send(fd, &h2g),
		    dp_guest_recv(e, c, &grx),
		    (hrx.done == STREAM_BYTES && grx.done == STREAM_BYTES) ||
		    hrx.bad_at != UINT64_MAX || grx.bad_at != UINT64_MAX), WAIT_MS);
	tap_ok(dp_stream_ok(&hrx) && hrx.done == STREAM_BYTES && dp_stream_ok(&grx) &&
	       grx.done == STREAM_BYTES, "VM 5 streams %u MiB each way, intact (%llu and %llu)",
	       STREAM_BYTES >> 20, (unsigned long long)hrx.done, (unsigned long long)grx.done);
	for (i = 0; i < RTTS; i++) {
		size_t in = 0, back = 0;

		memset(ping, (int)i, sizeof(ping));
		if (vfe_guest_send(&e->g, c, ping, MSG) != MSG ||
		    !DP_WAIT(e, (in += host_recv_some(fd, got + in, MSG - in), in == MSG),
			     WAIT_MS) ||
		    send(fd, got, MSG, 0) != MSG ||
		    !DP_WAIT(e, (back += vfe_guest_recv(&e->g, c, got + back, MSG - back),
				 back == MSG), WAIT_MS) || memcmp(got, ping, MSG) != 0)
			break;
		rtts++;
	}
	tap_ok(rtts == RTTS, "VM 5 completes %u of %d round trips of %d bytes, each echoed intact",
	       rtts, RTTS, MSG);
	vfe_guest_shutdown(&e->g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	DP_WAIT(e, c->state == VFE_GC_CLOSED, WAIT_MS);
	vfe_guest_release(&e->g, c);
	close(fd);
}

int main(void)
{
	const char *extra[] = { "--mbufs", "256", NULL };
	uint64_t before[3], after[3] = { 0 };
	unsigned int i;
	int lfd = -1, status;
	bool back;

	if (!tap_ok(hu_start_with(&h, extra, "max-connections=32", NULL) == 0 &&
		    resources(before) && rg_attach(&g, &h, NULL) == 0 &&
		    (lfd = dp_listen(&h.o.dp, LPORT, SOCK_STREAM)) >= 0,
		    "app started: VMs 3 and 5 on one worker, max-connections=32, --mbufs 256: %s",
		    h.why))
		goto out;
	tap_ok(hu_vm_lcore(&h, HU_ATTACKER_CID) == hu_vm_lcore(&h, HU_PEER_CID),
	       "both VMs polled by worker lcore %d", hu_vm_lcore(&h, HU_PEER_CID));
	fill_table(lfd);
	flood_rsts();
	fill_credit();
	neighbour();
	tap_ok(hu_stat(&h, HU_PEER_CID, "conns_reset") == 0 &&
	       hu_stat(&h, HU_PEER_CID, "errors_total") == 0 && h.peer.g.errors == 0,
	       "VM 5 counted no reset and no error, its guest saw no protocol breach");
	tap_ok(stat3("conns_reset") == 0,
	       "VM 3's connections were only held back, never reset: it broke no rule");
	rg_close(&g);
	for (i = 0; i < MAX_CONNS; i++)
		if (host_fd[i] >= 0)
			close(host_fd[i]);
	/* Nothing of guest 3 to poll any more: just wait. */
	back = POLL_WAIT((resources(after), after[0] == before[0] && after[1] == before[1] &&
			  after[2] == before[2]), WAIT_MS, usleep(1000));
	tap_ok(back, "VM 3's frontend gone: mbufs in use %lu -> %lu, descriptors %lu -> %lu, "
	       "connections %lu -> %lu", (unsigned long)before[0], (unsigned long)after[0],
	       (unsigned long)before[1], (unsigned long)after[1], (unsigned long)before[2],
	       (unsigned long)after[2]);
	tap_ok(hu_peer_check(&h) == 0, "VM 5 still talks to the host: %s", h.why);
out:
	if (lfd >= 0)
		close(lfd);
	status = hu_stop(&h, tap_failed);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "app exits 0 (%#x)", status);
	return tap_done();
}
