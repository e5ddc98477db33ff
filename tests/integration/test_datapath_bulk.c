/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 1 GiB each way (one direction per run: argument g2h or h2g) through one connection, every byte checked against the
 * pattern and the FNV-1a checksums of both ends compared; the throughput is
 * reported as a diagnostic (the test process plays guest and host on one
 * core, so it is a floor, not the app's capacity). No rate is asserted: a
 * transfer fails only when it stops, no byte arriving for STALL_NS.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define BULK (1ull << 30)
#define MS 5000
/* Long enough for any scheduler hiccup, short enough to end a stuck run with a message. */
#define STALL_NS 10000000000ull

static struct dp_env env;
static struct dp_stream tx, rx;

/* Progress of rx: the bytes seen last and when they last grew. */
struct progress {
	uint64_t done, moved_at;
};

/* Whether rx still moves: false once it is complete, corrupt, or stalled for STALL_NS. */
static bool
moving(struct progress *p)
{
	uint64_t now = dp_now_ns();

	if (rx.done >= BULK || rx.bad_at != UINT64_MAX)
		return false;
	if (rx.done != p->done) {
		p->done = rx.done;
		p->moved_at = now;
	} else if (now - p->moved_at > STALL_NS) {
		tap_diag("stalled: no byte for %llu s at %llu of %llu bytes",
			 STALL_NS / 1000000000ull, (unsigned long long)rx.done,
			 (unsigned long long)BULK);
		return false;
	}
	return true;
}

static void
report(const char *what, uint64_t t0)
{
	double s = (double)(dp_now_ns() - t0) / 1e9;

	tap_ok(dp_stream_ok(&rx), "%s: 1 GiB arrived byte-exact (%llu bytes, first bad at %lld)",
		what, (unsigned long long)rx.done, (long long)rx.bad_at);
	tap_ok(tx.fnv == rx.fnv, "%s: FNV-1a %016llx at both ends", what,
		(unsigned long long)rx.fnv);
	tap_diag("%s: %.2f s, %.2f Gbit/s, %.0f MiB/s", what, s, BULK * 8 / s / 1e9,
		BULK / s / (1 << 20));
}

static void
guest_to_host(void)
{
	struct vfe_guest_conn *c;
	struct progress p;
	uint64_t t0;
	int lfd, fd;

	lfd = dp_listen(&env, 5000, SOCK_STREAM);
	c = dp_guest_connect(&env, 5000, VIRTIO_VSOCK_TYPE_STREAM, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0,
			"guest->host: connected"))
		return;
	dp_stream_init(&tx, 101, BULK);
	dp_stream_init(&rx, 101, BULK);
	t0 = dp_now_ns();
	p = (struct progress){ .moved_at = t0 };
	while (moving(&p)) {
		dp_guest_send(&env, c, &tx);
		while (dp_host_recv(fd, &rx) > 0)
			;
		vfe_guest_poll(&env.g);
	}
	report("guest->host", t0);
	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && dp_host_recv(fd, &rx) == 0,
		"guest->host: closed, host reads EOF after the last byte");
	close(fd);
	vfe_guest_release(&env.g, c);
}

static void
host_to_guest(void)
{
	struct vfe_guest_conn *c = NULL;
	struct progress p;
	uint64_t t0;
	uint32_t hp;
	int fd;

	vfe_guest_listen(&env.g, 6000, true);
	fd = dp_host_to_guest(&env, 6000, &c, &hp, MS);
	if (!tap_ok(fd >= 0, "host->guest: connected"))
		return;
	dp_stream_init(&tx, 202, BULK);
	dp_stream_init(&rx, 202, BULK);
	t0 = dp_now_ns();
	p = (struct progress){ .moved_at = t0 };
	while (moving(&p)) {
		while (dp_host_send(fd, &tx) > 0)
			;
		vfe_guest_poll(&env.g);
		dp_guest_recv(&env, c, &rx);
	}
	report("host->guest", t0);
	close(fd);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && vfe_guest_rx_avail(c) == 0,
		"host->guest: host close ends the connection, nothing after the last byte");
	vfe_guest_release(&env.g, c);
}

/* "g2h" or "h2g" runs one direction (meson runs them as two tests); none runs both. */
int
main(int argc, char **argv)
{
	bool g2h = argc < 2 || strcmp(argv[1], "h2g") != 0;
	bool h2g = argc < 2 || strcmp(argv[1], "g2h") != 0;

	if (dp_start(&env) < 0)
		return tap_done();
	if (dp_attach(&env, NULL, NULL) == 0) {
		if (g2h)
			guest_to_host();
		if (h2g)
			host_to_guest();
		dp_check_guest(&env, "bulk");
	}
	dp_stop(&env);
	return tap_done();
}
