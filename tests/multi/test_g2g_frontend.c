/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest-to-guest routing through dpdk-vsock-app ($VSOCK_APP), with three userspace frontends
 * as the guests: VMs 3 and 4 share group "red" and are polled by different worker lcores,
 * VM 5 is alone in group "blue". Checked: a stream 3 -> 4 carrying 1 MiB each way byte for
 * byte; half-close and close seen by the peer; SEQPACKET 4 -> 3 keeping message boundaries;
 * credit end to end (guest 4 stops reading, guest 3 stalls with the app holding exactly its
 * buf_alloc, then everything arrives); refusals (another group, no such VM, a VM without a
 * guest) with the RST from the CID asked for; a spoofed source CID never delivered; guest 4
 * going away resetting guest 3's connection. The app's counters come from telemetry.
 * The guests talk to each other through tests/common/g2g_shim.h.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "app_proc.h"
#include "g2g_shim.h"
#include "ops_util.h"
#include "pattern.h"
#include "poll_wait.h"
#include "tap.h"
#include "vfe.h"
#include "vfe_guest.h"

#define HOST_CID VFE_GUEST_HOST_CID
#define NO_SUCH_CID 9
#define STREAM_PORT 6000	/* guest 4 listens */
#define SEQ_PORT 7000		/* guest 3 listens */
#define MIB (1u << 20)
#define CREDIT_BYTES (2u * MIB)	/* more than guest 4, the ring and VM 3 can hold */
/* Both guests' and the app's buf_alloc: the most either side holds unread. */
#define BUF_ALLOC (256u * 1024)
#define WAIT_MS 5000
/* No byte moved for this long: the sender is stalled. */
#define QUIET_MS 300
#define SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

struct vm {
	unsigned int cid;
	struct vfe_vsock v;
	struct vfe_guest g;
	bool attached;
	struct g2g_shim shim;
};

static struct vm vms[3] = { { .cid = 3 }, { .cid = 4 }, { .cid = 5 } };
static struct vm *const vm3 = &vms[0], *const vm4 = &vms[1], *const vm5 = &vms[2];
static struct app_proc app;
/* Only its prefix is used: ops_tel() finds the app's telemetry socket by it. */
static struct ops_env tel;
static uint8_t out34[MIB], out43[MIB], in34[MIB], in43[MIB];
static uint8_t credit_out[CREDIT_BYTES], credit_in[CREDIT_BYTES];
static uint8_t msg_in[100000];

/* Connect to port @p port of guest @p cid. */
static struct vfe_guest_conn *vm_connect(struct vm *vm, uint64_t cid, uint32_t port,
					 uint16_t type)
{
	return g2g_connect(&vm->shim, &vm->g, cid, port, type);
}

/* Source CID of the last packet @p op that @p vm received for (local, peer), or 0. */
static uint64_t seen_from(const struct vm *vm, uint16_t op, uint32_t local, uint32_t peer,
			  uint32_t *flags)
{
	return g2g_seen_from(&vm->shim, op, local, peer, flags);
}

/* ---- running ---- */

/* One round of every attached guest; a short pause when none had anything to do. */
static void tick(void)
{
	static const struct timespec pause = { .tv_nsec = 20000 };
	unsigned int i, work = 0;

	for (i = 0; i < 3; i++)
		if (vms[i].attached)
			work += vfe_guest_poll(&vms[i].g);
	if (work == 0)
		nanosleep(&pause, NULL);
}

#define WAIT(cond, ms) POLL_WAIT(cond, ms, tick())

/* Keep polling for @p ms whatever happens. */
static void settle(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		tick();
}

/* One number from telemetry command @p cmd of VM @p cid (UINT64_MAX if unreadable). */
static uint64_t tel_u64(const char *cmd, unsigned int cid, const char *path)
{
	char c[48];

	snprintf(c, sizeof(c), "%s,%u", cmd, cid);
	return ops_tel_u64(&tel, c, path);
}

static uint64_t vm_stat(const struct vm *vm, const char *path)
{
	return tel_u64("/vsock/stats", vm->cid, path);
}

/* A field of VM @p vm's connection (guest port, host port) in /vsock/conns. */
static uint64_t conn_u64(const struct vm *vm, uint32_t gport, uint32_t hport, const char *f)
{
	char path[64];

	snprintf(path, sizeof(path), "conns.%u_%u.%s", gport, hport, f);
	return tel_u64("/vsock/conns", vm->cid, path);
}

static bool conn_state_is(const struct vm *vm, uint32_t gport, uint32_t hport,
			  const char *state)
{
	static char json[OPS_TEL_MAX];
	char cmd[48], path[64], got[32];

	snprintf(cmd, sizeof(cmd), "/vsock/conns,%u", vm->cid);
	snprintf(path, sizeof(path), "conns.%u_%u.state", gport, hport);
	return ops_tel(&tel, cmd, json, sizeof(json)) == 0 &&
	       ops_json_str(json, path, got, sizeof(got)) == 0 && strcmp(got, state) == 0;
}

/* /vsock/vms: field @p f of VM @p vm. */
static uint64_t vms_u64(const struct vm *vm, const char *f)
{
	char path[48];

	snprintf(path, sizeof(path), "%u.%s", vm->cid, f);
	return ops_tel_u64(&tel, "/vsock/vms", path);
}

static int attach(struct vm *vm)
{
	static const struct vfe_vsock_conf vc = { .mem = { .size = 32u << 20 } };
	struct vfe_guest_conf gc = { .buf_alloc = BUF_ALLOC };
	char name[32], sock[128];
	int rc;

	g2g_guest_conf(&vm->shim, &vm->v, &gc);
	snprintf(name, sizeof(name), "vm%u.sock", vm->cid);
	rc = vfe_vsock_attach(&vm->v, app_proc_path(&app, name, sock, sizeof(sock)), &vc);
	if (rc == 0 && (rc = vfe_guest_init(&vm->g, &vm->v, &gc)) < 0)
		vfe_vsock_close(&vm->v);
	vm->attached = rc == 0;
	return rc;
}

static void detach(struct vm *vm)
{
	if (!vm->attached)
		return;
	vm->attached = false;
	vfe_vsock_detach(&vm->v, NULL, false);
	vfe_guest_fini(&vm->g);
	vfe_vsock_close(&vm->v);
}

static int start_app(void)
{
	char prefix[80], vm[3][400], socks[3][128];
	const char *eal[] = {
		"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
		/* Workers 1 and 2 on different CPUs of a 2-CPU machine; main shares CPU 0. */
		"--lcores", "0@0,1@0,2@1", "--log-level=lib.eal:error", prefix, NULL,
	};
	static const char *const conf[3] = { "lcore=1,group=red", "lcore=2,group=red",
					      "group=blue" };
	const char *args[7], *wait[4];
	unsigned int i;

	if (app_proc_init(&app) < 0)
		return -1;
	snprintf(tel.prefix, sizeof(tel.prefix), "vsock-g2g-%d", (int)getpid());
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s", tel.prefix);
	for (i = 0; i < 3; i++) {
		snprintf(socks[i], sizeof(socks[i]), "%s/vm%u.sock", app.dir, vms[i].cid);
		snprintf(vm[i], sizeof(vm[i]), "cid=%u,socket=%s,uds=%s/vm%u.vsock,%s", vms[i].cid,
			 socks[i], app.dir, vms[i].cid, conf[i]);
		args[2 * i] = "--vm";
		args[2 * i + 1] = vm[i];
		wait[i] = socks[i];
	}
	args[6] = NULL;
	wait[3] = NULL;
	if (app_proc_start(&app, eal, args, wait, 15000) < 0)
		return -1;
	/* Telemetry answers a little after the vhost-user sockets appear. */
	return WAIT(ops_tel_u64(&tel, "/vsock/config", "nb_vms") == 3, WAIT_MS) ? 0 : -1;
}

/* ---- the checks ---- */

/* The three guests attach; VMs 3 and 4 are polled by different lcores. */
static void test_attach(void)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		tap_ok(attach(&vms[i]) == 0 && vms[i].v.cid == vms[i].cid &&
		       WAIT(vms_u64(&vms[i], "running") == 1, WAIT_MS),
		       "guest %u attached, reads its CID, device running", vms[i].cid);
	tap_ok(vms_u64(vm3, "lcore") == 1 && vms_u64(vm4, "lcore") == 2 &&
	       vms_u64(vm5, "lcore") == 1, "VM 3 polled on lcore 1, VM 4 on lcore 2, VM 5 "
	       "(balanced) on lcore 1");
}

/* Bytes from one guest's connection to another's, checked at the end against @p out. */
struct flow {
	struct vm *src, *dst;
	struct vfe_guest_conn *sc, *dc;
	const uint8_t *out;
	uint8_t *in;
	size_t total, sent, rcvd;
	/** The receiving guest consumes what arrives (off: its window fills up). */
	bool reading;
};

static void flow_step(struct flow *f)
{
	long n;

	if (f->sent < f->total &&
	    (n = vfe_guest_send(&f->src->g, f->sc, f->out + f->sent, f->total - f->sent)) > 0)
		f->sent += (size_t)n;
	if (f->reading)
		f->rcvd += vfe_guest_recv(&f->dst->g, f->dc, f->in + f->rcvd, f->total - f->rcvd);
}

static bool flow_done(const struct flow *f)
{
	return f->rcvd == f->total && memcmp(f->in, f->out, f->total) == 0;
}

/* 3 -> 4 stream: 1 MiB each way, then half-close by 3, then close by 4. */
static void test_stream(void)
{
	uint64_t opened3 = vm_stat(vm3, "conns_opened"), opened4 = vm_stat(vm4, "conns_opened");
	uint64_t closed3 = vm_stat(vm3, "conns_closed"), closed4 = vm_stat(vm4, "conns_closed");
	uint64_t reset3 = vm_stat(vm3, "conns_reset"), reset4 = vm_stat(vm4, "conns_reset");
	struct vfe_guest_conn *c3, *c4 = NULL;
	struct flow a, b;
	struct pattern p;
	uint32_t port3, fl = 0;
	size_t got = 0;

	pattern_init(&p, 34);
	pattern_fill(&p, out34, MIB);
	pattern_init(&p, 43);
	pattern_fill(&p, out43, MIB);
	vfe_guest_listen(&vm4->g, STREAM_PORT, true);
	c3 = vm_connect(vm3, vm4->cid, STREAM_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	if (!tap_ok(c3 && WAIT(c3->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
		    (c4 = vfe_guest_accept(&vm4->g)) != NULL, "stream 3 -> 4:%u established",
		    STREAM_PORT))
		return;
	port3 = c3->local_port;
	tap_ok(seen_from(vm4, VIRTIO_VSOCK_OP_REQUEST, STREAM_PORT, port3, NULL) == vm3->cid &&
	       c4->peer_port == port3 && c4->local_port == STREAM_PORT,
	       "guest 4 got the REQUEST from CID 3 port %u", port3);
	tap_ok(seen_from(vm3, VIRTIO_VSOCK_OP_RESPONSE, port3, STREAM_PORT, NULL) == vm4->cid,
	       "guest 3 got the RESPONSE from CID 4");
	tap_ok(vm_stat(vm3, "conns_opened") == opened3 + 1 &&
	       vm_stat(vm4, "conns_opened") == opened4 + 1 &&
	       conn_state_is(vm3, port3, STREAM_PORT, "established") &&
	       conn_state_is(vm4, STREAM_PORT, port3, "established"),
	       "one connection opened in each VM's table, both halves established");

	a = (struct flow){ .src = vm3, .sc = c3, .dst = vm4, .dc = c4, .out = out34, .in = in34,
			   .total = MIB, .reading = true };
	b = (struct flow){ .src = vm4, .sc = c4, .dst = vm3, .dc = c3, .out = out43, .in = in43,
			   .total = MIB, .reading = true };
	WAIT((flow_step(&a), flow_step(&b), a.rcvd == MIB && b.rcvd == MIB), WAIT_MS);
	tap_ok(flow_done(&a), "1 MiB 3 -> 4 intact (%zu)", a.rcvd);
	tap_ok(flow_done(&b), "1 MiB 4 -> 3 intact (%zu)", b.rcvd);

	/* Guest 3 stops sending; guest 4 reads the end of the stream and still sends. */
	vfe_guest_shutdown(&vm3->g, c3, VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(WAIT(c4->peer_shut == VIRTIO_VSOCK_SHUTDOWN_SEND, WAIT_MS) &&
	       seen_from(vm4, VIRTIO_VSOCK_OP_SHUTDOWN, STREAM_PORT, port3, &fl) == vm3->cid &&
	       fl == VIRTIO_VSOCK_SHUTDOWN_SEND && c4->state == VFE_GC_ESTABLISHED,
	       "guest 3 SHUTDOWN(SEND): guest 4 gets SHUTDOWN(SEND) from CID 3, stays open");
	vfe_guest_send(&vm4->g, c4, out43, 1000);
	tap_ok(WAIT((got += vfe_guest_recv(&vm3->g, c3, in43 + got, 1000 - got)) == 1000,
		    WAIT_MS) && memcmp(in43, out43, 1000) == 0,
	       "guest 4 still sends to the half-closed guest 3: 1000 bytes arrive");

	/* Guest 4 closes: guest 3 sees both shutdowns and answers RST, as Linux does. */
	vfe_guest_shutdown(&vm4->g, c4, SHUT_BOTH);
	tap_ok(WAIT(c3->state == VFE_GC_CLOSED && c4->state == VFE_GC_CLOSED, WAIT_MS) &&
	       c3->peer_shut == SHUT_BOTH && !c3->reset && c4->reset &&
	       seen_from(vm4, VIRTIO_VSOCK_OP_RST, STREAM_PORT, port3, NULL) == vm3->cid,
	       "guest 4 closes: guest 3 gets SHUTDOWN(RCV|SEND), guest 4 the RST from CID 3");
	tap_ok(WAIT(vms_u64(vm3, "conns") == 0 && vms_u64(vm4, "conns") == 0, WAIT_MS) &&
	       vm_stat(vm3, "conns_closed") == closed3 + 1 &&
	       vm_stat(vm4, "conns_closed") == closed4 + 1 &&
	       vm_stat(vm3, "conns_reset") == reset3 && vm_stat(vm4, "conns_reset") == reset4,
	       "closed cleanly in both tables (conns_closed +1 each, no reset)");
}

/* 4 -> 3 SEQPACKET: each message arrives whole and alone, its end marked. */
static void test_seqpacket(void)
{
	static const uint32_t sizes[] = { 1, 2, 100, 4095, 4096, 4097, 8192, 65535, 65536,
					  65537, 100000, 3 };
	const unsigned int nmsg = sizeof(sizes) / sizeof(sizes[0]);
	unsigned int sent = 0, got = 0, good = 0, eor = 0;
	struct vfe_guest_conn *c4, *c3 = NULL;
	uint64_t end;
	size_t off_s = 0, off_r = 0;

	vfe_guest_listen(&vm3->g, SEQ_PORT, true);
	c4 = vm_connect(vm4, vm3->cid, SEQ_PORT, VIRTIO_VSOCK_TYPE_SEQPACKET);
	if (!tap_ok(c4 && WAIT(c4->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
		    (c3 = vfe_guest_accept(&vm3->g)) != NULL &&
		    c3->type == VIRTIO_VSOCK_TYPE_SEQPACKET &&
		    seen_from(vm3, VIRTIO_VSOCK_OP_REQUEST, SEQ_PORT, c4->local_port, NULL) ==
		    vm4->cid, "seqpacket 4 -> 3:%u established, REQUEST from CID 4", SEQ_PORT))
		return;
	/* Message i is out34 from the sum of the sizes before it; each sent with EOM|EOR. */
	end = now_ms() + WAIT_MS;
	while (got < nmsg && now_ms() < end) {
		uint32_t fl;
		size_t n;

		tick();
		if (sent < nmsg && vfe_guest_send_msg(&vm4->g, c4, out34 + off_s, sizes[sent]) == 1)
			off_s += sizes[sent++];
		if (vfe_guest_next_msg(c3, &fl) < 0)
			continue;
		n = vfe_guest_recv(&vm3->g, c3, msg_in, sizeof(msg_in));
		good += n == sizes[got] && (fl & VIRTIO_VSOCK_SEQ_EOM) &&
			memcmp(msg_in, out34 + off_r, n) == 0;
		eor += (fl & VIRTIO_VSOCK_SEQ_EOR) != 0;
		off_r += sizes[got++];
	}
	tap_ok(got == nmsg && good == nmsg && vfe_guest_rx_avail(c3) == 0,
	       "%u messages of 1..100000 bytes arrive one by one, each ending with EOM, intact "
	       "(%u good of %u)", nmsg, good, got);
	/* Linux hands EOR on to the reader as MSG_EOR: it must cross between guests. */
	tap_ok(got == nmsg && eor == nmsg, "the sender's EOR arrives with each message (%u of %u)",
	       eor, got);
	vfe_guest_shutdown(&vm4->g, c4, SHUT_BOTH);
	tap_ok(WAIT(c3->state == VFE_GC_CLOSED && c4->state == VFE_GC_CLOSED, WAIT_MS) &&
	       c3->peer_shut == SHUT_BOTH && WAIT(vms_u64(vm3, "conns") == 0 &&
						  vms_u64(vm4, "conns") == 0, WAIT_MS),
	       "guest 4 closes: guest 3 sees it, both tables empty");
}

/*
 * 4 -> 3 SEQPACKET, one message at a time, each read before the next is sent: messages of
 * 64 KiB fill guest 3's window up to its last 64 KiB, then one of 100000 bytes straddles
 * the rest. VM 3 may send only its first 64 KiB; guest 3 reads nothing of an unfinished
 * message, so the rest comes only because guest 3 gave credit back with each message it read,
 * as Linux does. A reader that waited for its free space to fall under 64 KiB stalled here.
 */
static void test_seqpacket_window(void)
{
	const uint32_t piece = 64 * 1024, last = sizeof(msg_in);
	struct vfe_guest_conn *c4, *c3 = NULL;
	unsigned int i, nfill, good = 0;
	size_t off = 0;

	c4 = vm_connect(vm4, vm3->cid, SEQ_PORT, VIRTIO_VSOCK_TYPE_SEQPACKET);
	if (!tap_ok(c4 && WAIT(c4->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
		    (c3 = vfe_guest_accept(&vm3->g)) != NULL && c3->buf_alloc > piece,
		    "seqpacket 4 -> 3:%u again, a fresh window", SEQ_PORT))
		return;
	nfill = (c3->buf_alloc - piece) / piece;
	for (i = 0; i <= nfill; i++) {
		uint32_t len = i < nfill ? piece : last, fl = 0;
		size_t n = 0;

		if (!WAIT(vfe_guest_send_msg(&vm4->g, c4, out34 + off, len) == 1, WAIT_MS) ||
		    !WAIT(vfe_guest_next_msg(c3, &fl) >= 0, WAIT_MS))
			break;
		n = vfe_guest_recv(&vm3->g, c3, msg_in, sizeof(msg_in));
		good += n == len && (fl & VIRTIO_VSOCK_SEQ_EOM) &&
			memcmp(msg_in, out34 + off, n) == 0;
		off += len;
	}
	tap_ok(good == nfill + 1,
	       "%u messages of 64 KiB, then one of %u bytes across the window's end: each arrives "
	       "whole (%u good)", nfill, last, good);
	vfe_guest_shutdown(&vm4->g, c4, SHUT_BOTH);
	tap_ok(WAIT(c3->state == VFE_GC_CLOSED && c4->state == VFE_GC_CLOSED, WAIT_MS) &&
	       WAIT(vms_u64(vm3, "conns") == 0 && vms_u64(vm4, "conns") == 0, WAIT_MS),
	       "guest 4 closes again: both tables empty");
}

/* Guest 4 stops reading: guest 3 runs out of credit, nothing is lost when 4 reads again. */
static struct vfe_guest_conn *test_credit(void)
{
	uint64_t stalls4 = vm_stat(vm4, "credit_stalls");
	uint64_t end, quiet_since;
	struct vfe_guest_conn *c3, *c4 = NULL;
	struct flow f;
	struct pattern p;
	size_t sent = 0, at_stall;
	uint32_t port3, rx4;

	pattern_init(&p, 3434);
	pattern_fill(&p, credit_out, CREDIT_BYTES);
	c3 = vm_connect(vm3, vm4->cid, STREAM_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	if (!tap_ok(c3 && WAIT(c3->state == VFE_GC_ESTABLISHED, WAIT_MS) &&
		    (c4 = vfe_guest_accept(&vm4->g)) != NULL, "second stream 3 -> 4 established"))
		return NULL;
	port3 = c3->local_port;
	f = (struct flow){ .src = vm3, .sc = c3, .dst = vm4, .dc = c4, .out = credit_out,
			   .in = credit_in, .total = CREDIT_BYTES, .reading = false };
	/*
	 * Guest 3 sends what it may; guest 4 receives but consumes nothing, until guest 3 has no
	 * credit, guest 4 holds its buf_alloc and no byte moved for QUIET_MS. A quiet spell alone
	 * may be this loop held up by the machine; the states say the stall is reached.
	 */
	rx4 = c4->rx_cnt;
	quiet_since = now_ms();
	end = quiet_since + WAIT_MS;
	while (now_ms() < end) {
		tick();
		flow_step(&f);
		if (f.sent != sent || c4->rx_cnt != rx4) {
			sent = f.sent;
			rx4 = c4->rx_cnt;
			quiet_since = now_ms();
		} else if (now_ms() - quiet_since >= QUIET_MS && vfe_guest_credit(c3) == 0 &&
			   vfe_guest_rx_avail(c4) == BUF_ALLOC) {
			break;
		}
	}
	tap_ok(now_ms() - quiet_since >= QUIET_MS && f.sent < CREDIT_BYTES &&
	       vfe_guest_credit(c3) == 0 && vfe_guest_rx_avail(c4) == BUF_ALLOC,
	       "guest 4 does not read: guest 3 stalls with no credit after %zu bytes, guest 4 "
	       "holds its buf_alloc (%u)", f.sent, vfe_guest_rx_avail(c4));
	/* The halves' books: guest 3 keeps offering, in case the last credit was in flight. */
	tap_ok(WAIT((flow_step(&f), conn_u64(vm3, port3, STREAM_PORT, "queued_to_host") ==
		     BUF_ALLOC && conn_u64(vm3, port3, STREAM_PORT, "guest_credit") == 0 &&
		     conn_u64(vm4, STREAM_PORT, port3, "host_credit") == 0), WAIT_MS),
	       "VM 3's half holds exactly its buf_alloc, VM 4's has no credit towards guest 4");
	tap_ok(WAIT(vm_stat(vm4, "credit_stalls") > stalls4, WAIT_MS), "VM 4 counts the stall");
	at_stall = f.sent;

	f.reading = true;
	WAIT((flow_step(&f), f.rcvd == f.total), WAIT_MS);
	tap_ok(f.sent > at_stall && flow_done(&f),
	       "guest 4 reads: guest 3 sends again, all %zu bytes arrive intact", f.rcvd);
	return c3;
}

/* Connections the routing refuses, each with an RST from the CID asked for. */
static void test_refused(void)
{
	uint64_t route3 = vm_stat(vm3, "errors.conn_route");
	uint64_t route5 = vm_stat(vm5, "errors.conn_route");
	uint64_t rx3 = vm3->g.rx_pkts;
	struct vfe_guest_conn *c;

	/* Guest 3 listens on SEQ_PORT: only the groups stand between them. */
	c = vm_connect(vm5, vm3->cid, SEQ_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(c && WAIT(c->state == VFE_GC_CLOSED, WAIT_MS) && c->reset &&
	       seen_from(vm5, VIRTIO_VSOCK_OP_RST, c->local_port, SEQ_PORT, NULL) == vm3->cid,
	       "5 -> 3 (other group): RST from CID 3");
	settle(50);
	tap_ok(vm_stat(vm5, "errors.conn_route") == route5 + 1 && vm3->g.rx_pkts == rx3 &&
	       vm3->g.accept_count == 0, "counted in VM 5's conn_route; guest 3 saw nothing");

	c = vm_connect(vm3, NO_SUCH_CID, STREAM_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(c && WAIT(c->state == VFE_GC_CLOSED, WAIT_MS) && c->reset &&
	       seen_from(vm3, VIRTIO_VSOCK_OP_RST, c->local_port, STREAM_PORT, NULL) ==
	       NO_SUCH_CID && vm_stat(vm3, "errors.conn_route") == route3 + 1,
	       "3 -> 9 (no such VM): RST from CID 9, counted in VM 3's conn_route");
}

/*
 * Guest 3 claims to be guest 5 to reach guest 4. vsock_pkt_validate() refuses the header
 * (src_cid not VM 3's): RST from the host to guest 3's real CID, hdr_src_cid counted,
 * nothing routed.
 */
static void test_spoof(void)
{
	uint64_t src3 = vm_stat(vm3, "errors.hdr_src_cid");
	uint64_t opened4 = vm_stat(vm4, "conns_opened"), route3 = vm_stat(vm3, "errors.conn_route");
	uint64_t rx4 = vm4->g.rx_pkts, rx5 = vm5->g.rx_pkts;
	struct vfe_guest_conn *c;

	vm3->shim.spoof_src = vm5->cid;
	c = vm_connect(vm3, vm4->cid, STREAM_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(c && WAIT(c->state == VFE_GC_CLOSED, WAIT_MS) && c->reset &&
	       vm3->shim.spoof_src == 0 &&
	       seen_from(vm3, VIRTIO_VSOCK_OP_RST, c->local_port, STREAM_PORT, NULL) == HOST_CID,
	       "REQUEST 3 -> 4 claiming src_cid 5: RST from the host (CID 2) to guest 3");
	settle(50);
	tap_ok(vm_stat(vm3, "errors.hdr_src_cid") == src3 + 1 &&
	       vm_stat(vm3, "errors.conn_route") == route3,
	       "counted in VM 3's hdr_src_cid (not routed)");
	tap_ok(vm4->g.rx_pkts == rx4 && vm4->g.accept_count == 0 && vm5->g.rx_pkts == rx5 &&
	       vm_stat(vm4, "conns_opened") == opened4, "guests 4 and 5 received nothing");
}

/* Guest 4 goes away: guest 3's connection to it is reset, new connects are refused. */
static void test_guest_gone(struct vfe_guest_conn *c3)
{
	uint64_t reset3 = vm_stat(vm3, "conns_reset"), route3 = vm_stat(vm3, "errors.conn_route");
	struct vfe_guest_conn *c;

	if (!tap_ok(c3 && c3->state == VFE_GC_ESTABLISHED && vms_u64(vm3, "conns") == 1,
		    "guest 3 has one connection to guest 4"))
		return;
	detach(vm4);
	tap_ok(WAIT(c3->state == VFE_GC_CLOSED, WAIT_MS) && c3->reset &&
	       seen_from(vm3, VIRTIO_VSOCK_OP_RST, c3->local_port, STREAM_PORT, NULL) ==
	       vm4->cid, "guest 4 detached: guest 3 gets an RST from CID 4");
	tap_ok(WAIT(vms_u64(vm3, "conns") == 0 && vms_u64(vm4, "running") == 0, WAIT_MS) &&
	       vm_stat(vm3, "conns_reset") == reset3 + 1,
	       "VM 3 counts the reset (conns_reset +1), its table is empty, VM 4 not running");
	c = vm_connect(vm3, vm4->cid, STREAM_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	tap_ok(c && WAIT(c->state == VFE_GC_CLOSED, WAIT_MS) && c->reset &&
	       seen_from(vm3, VIRTIO_VSOCK_OP_RST, c->local_port, STREAM_PORT, NULL) ==
	       vm4->cid && vm_stat(vm3, "errors.conn_route") == route3 + 1,
	       "3 -> 4 without guest 4: RST from CID 4, counted in conn_route");
}

int main(void)
{
	struct vfe_guest_conn *c;
	unsigned int i;
	int status;

	if (!tap_ok(start_app() == 0, "app started: VMs 3, 4 (group red), 5 (group blue)")) {
		app_proc_fini(&app);
		app_proc_remove_eal_files(tel.prefix);
		return tap_done();
	}
	test_attach();
	if (vm3->attached && vm4->attached && vm5->attached) {
		test_stream();
		test_seqpacket();
		test_seqpacket_window();
		c = test_credit();
		test_refused();
		test_spoof();
		test_guest_gone(c);
	}
	for (i = 0; i < 3; i++) {
		tap_ok(vms[i].g.errors == 0 && vms[i].shim.errors == 0,
		       "guest %u: every packet followed the protocol and came from the right CID "
		       "(%s)", vms[i].cid, vms[i].g.err);
		detach(&vms[i]);
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
