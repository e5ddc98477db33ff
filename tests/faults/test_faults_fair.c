/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fairness among the VMs of one lcore: VM 3's guest floods its host with NFLOOD bulk
 * streams (guest -> host at full speed, 64 KiB packets) while VM 5, polled by the same
 * worker, plays ping-pong with its host (64 bytes each way). Both run in this one loop:
 * each turn offers the flood what it takes, drains its host end, and moves the ping-pong
 * one step. Checked: VM 5 completes round trips in every slice of the flood, none waits
 * while the flood moves FLOOD_PER_RTT (starvation, measured in the flood's own progress, so
 * that a slow or preempted machine, which holds up both VMs alike, is not taken for it),
 * every ping-pong byte is echoed intact, and the flood moves data the whole time (its bytes
 * checked too). The latencies are printed as diagnostics only: on a shared machine they
 * measure the neighbours too (vsock-perf is where latency is measured). Slices with and
 * without the flood alternate. Run twice: with host readers that keep up, and with host
 * readers that read slowly, so that VM 3 fills its queues and waits for mbufs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vsock_pmd.h>

#include "faults_util.h"
#include "tap.h"

#define NFLOOD 4
#define FLOOD_PORT 6400
#define SLICES 8
#define SLICE_MS 200
#define WAIT_MS 5000
#define MSG 64
/*
 * The most of VM 3's bytes that may reach its host while one round trip of VM 5 is open. A
 * worker round takes at most VSOCK_PMD_ROUND_BYTES of a VM's tx ring and a round trip needs a
 * few rounds, and without the worker's rounds the flood's host ends can read no more than
 * their sockets hold: a fair worker stays far below this, and a VM 5 starved by its
 * neighbour sees the flood go past it at any machine speed.
 */
#define FLOOD_PER_RTT (256u * VSOCK_PMD_ROUND_BYTES)
/*
 * A round trip still open after this is lost, not slow (the loop would wait for it forever):
 * a hang guard, far above any stall this machine showed (0.97 s, overloaded).
 */
#define RTT_GIVE_UP_US 30000000

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX_U64(a, b) ((a) > (b) ? (a) : (b))

struct flood {
	struct vfe_guest_conn *gc;
	int fd;
	uint64_t sent, rcvd;
};

static struct fx_env env;
static struct flood fl[NFLOOD];
#define RTT_MAX (1u << 18)
static uint64_t rtt_flood[RTT_MAX], rtt_quiet[RTT_MAX];
/*
 * The flood sends this block over and over: generating and checking a pattern would cost
 * this loop more than the app's round, and the round trips would measure the test. The
 * bulk tests check stream contents; here the host end checks byte counts and the first
 * bytes of every read against the block.
 */
static uint8_t block[64 * 1024];
static uint8_t sink[256 * 1024];

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* VM 3's guest connects NFLOOD times to its host listener @p lfd. */
static int
flood_open(int lfd)
{
	unsigned int i;

	for (i = 0; i < NFLOOD; i++) {
		struct flood *f = &fl[i];

		f->fd = -1;
		f->sent = f->rcvd = 0;
		f->gc = vfe_guest_connect(&env.o.dp.g, FLOOD_PORT, VIRTIO_VSOCK_TYPE_STREAM);
		if (f->gc == NULL)
			return -1;
		if (!FX_WAIT(&env, (f->fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
			SOCK_CLOEXEC)) >= 0, WAIT_MS) ||
		    !FX_WAIT(&env, f->gc->state == VFE_GC_ESTABLISHED, WAIT_MS))
			return -1;
	}
	return 0;
}

static void
flood_close(void)
{
	unsigned int i;

	for (i = 0; i < NFLOOD; i++) {
		struct flood *f = &fl[i];

		if (f->gc != NULL) {
			vfe_guest_shutdown(&env.o.dp.g, f->gc,
				VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
			/* The host drains what is queued, then the app ends the connection. */
			FX_WAIT(&env, (recv(f->fd, sink, sizeof(sink), MSG_DONTWAIT),
				f->gc->state == VFE_GC_CLOSED), WAIT_MS);
			vfe_guest_release(&env.o.dp.g, f->gc);
		}
		if (f->fd >= 0)
			close(f->fd);
		f->gc = NULL;
		f->fd = -1;
	}
}

/* The flood's bytes its host ends have read so far. */
static uint64_t
flood_rcvd(void)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < NFLOOD; i++)
		sum += fl[i].rcvd;
	return sum;
}

/*
 * VM 5's side of the ping-pong: host socket, guest connection, where the round stands, and
 * the most of the flood that went by one round trip (flood_max).
 */
struct pp {
	struct vfe_guest_conn *gc;
	int fd;
	uint8_t ping[MSG], echo[MSG], back[MSG];
	size_t echoed, got;
	uint64_t sent_at, flood_at, flood_max;
	unsigned int round, bad;
	bool waiting, stalled;
};

/*
 * One step of the ping-pong; the round trip in us when one completes, else 0. A round trip
 * still open when the flood moved FLOOD_PER_RTT past it, or after RTT_GIVE_UP_US, counts as
 * bad: the slice ends there.
 */
static uint64_t
pp_step(struct pp *p)
{
	struct vfe_guest *g = &env.peer.g;
	uint64_t flood;
	unsigned int i;

	if (!p->waiting) {
		for (i = 0; i < MSG; i++)
			p->ping[i] = (uint8_t)(p->round * 13 + i);
		p->sent_at = now_us();
		p->flood_at = flood_rcvd();
		if (send(p->fd, p->ping, MSG, MSG_DONTWAIT | MSG_NOSIGNAL) != MSG) {
			p->bad++;
			return 0;
		}
		p->waiting = true;
		p->echoed = p->got = 0;
	}
	vfe_guest_poll(g);
	if (p->echoed < MSG) {
		size_t l = vfe_guest_recv(g, p->gc, p->echo + p->echoed, MSG - p->echoed);

		if (l && vfe_guest_send(g, p->gc, p->echo + p->echoed, l) != (long)l)
			p->bad++;
		p->echoed += l;
	}
	if (p->got < MSG) {
		ssize_t l = recv(p->fd, p->back + p->got, MSG - p->got, MSG_DONTWAIT);

		if (l > 0)
			p->got += (size_t)l;
	}
	flood = flood_rcvd() - p->flood_at;
	p->flood_max = MAX_U64(p->flood_max, flood);
	if (p->got < MSG) {
		p->stalled = now_us() - p->sent_at > RTT_GIVE_UP_US;
		p->bad += flood >= FLOOD_PER_RTT || p->stalled;
		return 0;
	}
	p->bad += memcmp(p->back, p->ping, MSG) != 0;
	p->round++;
	p->waiting = false;
	return MAX_U64(now_us() - p->sent_at, 1);
}

/* The flood, one turn: a block per connection as far as credit allows; the host drains. */
static void
flood_step(bool reading, unsigned int *bad)
{
	unsigned int i;

	for (i = 0; i < NFLOOD; i++) {
		struct flood *f = &fl[i];
		uint64_t off = f->sent % sizeof(block);
		long w = vfe_guest_send(&env.o.dp.g, f->gc, block + off, sizeof(block) - off);
		ssize_t r;

		f->sent += w > 0 ? (uint64_t)w : 0;
		r = reading ? recv(f->fd, sink, sizeof(sink), MSG_DONTWAIT) : 0;
		if (r > 0) {
			size_t o = f->rcvd % sizeof(block);

			*bad += memcmp(sink, block + o, MIN((size_t)r, MIN(sizeof(block) - o,
				(size_t)MSG))) != 0;
			f->rcvd += (uint64_t)r;
		}
	}
	vfe_guest_poll(&env.o.dp.g);
}

static uint64_t
pct(uint64_t *v, unsigned int n, unsigned int p)
{
	qsort(v, n, sizeof(v[0]), cmp_u64);
	return n ? v[(uint64_t)n * p / 100] : 0;
}

/*
 * One run: SLICES slices of SLICE_MS with VM 3 flooding, each followed by one without, so
 * that whatever else this machine runs meanwhile weighs on both alike. @p slow_reader: the
 * flood's host ends read once every 5 ms, so that VM 3 backs up to its mbuf quota;
 * otherwise they read on every turn.
 */
static void
run(const char *what, bool slow_reader)
{
	struct dp_env *e5 = &env.peer;
	struct pp p = { .fd = -1 };
	uint64_t next_read = 0, flood0, flood1, us, q50, q99, f50, f99, fmax, qmax;
	unsigned int i, s, nf = 0, nq = 0, bad = 0, idle_slices = 0;
	int lfd = dp_listen(&env.o.dp, FLOOD_PORT, SOCK_STREAM);

	if (!tap_ok(lfd >= 0 && flood_open(lfd) == 0, "%s: VM 3 opened %d flood connections",
		what, NFLOOD))
		goto out;
	p.gc = vfe_guest_connect(&e5->g, env.peer_port, VIRTIO_VSOCK_TYPE_STREAM);
	if (!tap_ok(p.gc != NULL && FX_WAIT(&env, (p.fd = accept4(env.peer_lfd, NULL, NULL,
		SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0, WAIT_MS) &&
		FX_WAIT(&env, p.gc->state == VFE_GC_ESTABLISHED, WAIT_MS),
		"%s: VM 5 connected for ping-pong", what))
		goto out;
	flood0 = flood_rcvd();
	for (s = 0; s < 2 * SLICES && p.bad == 0; s++) {
		bool flood = s % 2 == 0;
		uint64_t end = now_us() + SLICE_MS * 1000;
		unsigned int rounds = 0;

		/* A slice ends with its last round trip, so that none straddles two. */
		while ((now_us() < end || p.waiting) && p.bad == 0) {
			bool reading = !slow_reader || now_us() >= next_read;

			if (flood) {
				flood_step(reading, &bad);
				if (reading && slow_reader)
					next_read = now_us() + 5000;
			}
			us = pp_step(&p);
			if (!us)
				continue;
			rounds++;
			if (flood && nf < RTT_MAX)
				rtt_flood[nf++] = us;
			else if (!flood && nq < RTT_MAX)
				rtt_quiet[nq++] = us;
		}
		idle_slices += rounds == 0;
	}
	flood1 = flood_rcvd();
	for (i = 0; i < NFLOOD; i++)
		bad += fl[i].rcvd > fl[i].sent;
	tap_ok(idle_slices == 0 && p.bad == 0 && bad == 0, "%s: VM 5 completed round trips of "
		"%d bytes in each of the %d slices of %d ms with and without the flood (%u with "
		"it), all intact; the flood's bytes intact too", what, MSG, 2 * SLICES, SLICE_MS,
		nf);
	q50 = pct(rtt_quiet, nq, 50);
	q99 = pct(rtt_quiet, nq, 99);
	qmax = nq ? rtt_quiet[nq - 1] : 0;
	f50 = pct(rtt_flood, nf, 50);
	f99 = pct(rtt_flood, nf, 99);
	fmax = nf ? rtt_flood[nf - 1] : 0;
	tap_diag("%s: VM 5 round trips without the flood: %u, p50 %lu us, p99 %lu us, max %lu "
		"us", what, nq, (unsigned long)q50, (unsigned long)q99, (unsigned long)qmax);
	tap_diag("%s: VM 5 round trips during the flood: %u, p50 %lu us, p99 %lu us, max %lu us",
		what, nf, (unsigned long)f50, (unsigned long)f99, (unsigned long)fmax);
	tap_ok(p.flood_max < FLOOD_PER_RTT && !p.stalled, "%s: no round trip of VM 5 waited "
		"while VM 3's flood moved %u MiB (most: %llu KiB), nor for %d s", what, FLOOD_PER_RTT >> 20,
		(unsigned long long)(p.flood_max >> 10), RTT_GIVE_UP_US / 1000000);
	tap_ok(flood1 > flood0, "%s: VM 3's flood moved %llu MiB meanwhile (%.2f Gbit/s)", what,
		(unsigned long long)((flood1 - flood0) >> 20),
		(double)(flood1 - flood0) * 8 / (SLICES * SLICE_MS * 1e6));
out:
	if (p.gc != NULL) {
		/* No ping in flight: the slice ended with its round trip. */
		vfe_guest_shutdown(&e5->g, p.gc,
			VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
		FX_WAIT(&env, p.gc->state == VFE_GC_CLOSED, WAIT_MS);
		vfe_guest_release(&e5->g, p.gc);
	}
	if (p.fd >= 0)
		close(p.fd);
	flood_close();
	if (lfd >= 0)
		close(lfd);
}

int
main(void)
{
	struct fx_res base = { 0 }, now;
	unsigned int i;
	int status;

	for (i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)(i * 7 + (i >> 8));
	if (!tap_ok(fx_start(&env, NULL) == 0, "app started with VMs 3 and 5 on one lcore")) {
		tap_diag("%s", env.why);
		return tap_done();
	}
	if (!tap_ok(dp_attach_quiet(&env.o.dp, NULL, NULL) == 0, "VM 3 attached"))
		goto out;
	FX_WAIT(&env, false, 50);
	fx_res(&env, &base);
	run("fast reader", false);
	run("slow reader", true);
	if (!tap_ok(fx_res_back(&env, &base, WAIT_MS, &now), "mbufs, descriptors and "
		"connections back to their start values"))
		tap_diag("%s", env.why);
	dp_check_guest(&env.o.dp, "VM 3");
	dp_check_guest(&env.peer, "VM 5");
out:
	status = fx_stop(&env, tap_failed != 0);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"app exits 0 on SIGTERM (status %#x)", status);
	return tap_done();
}
