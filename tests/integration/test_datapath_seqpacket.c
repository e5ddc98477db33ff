/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SOCK_SEQPACKET (VIRTIO_VSOCK_F_SEQPACKET negotiated): messages of 1 B to
 * 64 KiB keep their boundaries both ways.
 *  - guest -> host: each message goes out in 16 KiB packets, EOM|EOR on the
 *    last; the host's SOCK_SEQPACKET socket gets it with one recv(), whole;
 *  - host -> guest: each send() arrives split over 4 KiB rx buffers, flags 0
 *    on every piece but the last, which carries EOM|EOR;
 *  - a SEQPACKET REQUEST to a stream listener is refused with RST.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_datapath_util.h"

#define MS 5000
#define NRANDOM 300
#define MAX_MSG 65536u
#define SEQ_NS 30000000000ull

static struct dp_env env;
static const uint32_t fixed_sizes[] = {
	1, 2, 43, 44, 45, 100, 4051, 4052, 4053, 4095, 4096, 4097, 16383, 16384, 16385,
	65535, 65536, 1, 65536,
};
#define NFIXED (sizeof(fixed_sizes) / sizeof(fixed_sizes[0]))
#define NMSG (NFIXED + NRANDOM)

static uint32_t sizes[NMSG];
static uint8_t msg[MAX_MSG];
/* One more than the largest message: a longer one would show as MSG_TRUNC. */
static uint8_t in[MAX_MSG + 1];

static void
make_sizes(uint64_t seed)
{
	struct pattern_sizes ps;
	unsigned int i;

	pattern_sizes_init(&ps, seed, MAX_MSG);
	for (i = 0; i < NMSG; i++)
		sizes[i] = i < NFIXED ? fixed_sizes[i] : pattern_sizes_next(&ps);
}

static void
guest_to_host(struct vfe_guest_conn *c, int fd)
{
	struct dp_stream gen, chk;
	unsigned int sent = 0, got = 0, whole = 0;
	uint64_t deadline = dp_now_ns() + SEQ_NS;
	bool staged = false;

	make_sizes(41);
	dp_stream_init(&gen, 41, UINT64_MAX);
	dp_stream_init(&chk, 41, UINT64_MAX);
	while (got < NMSG && chk.bad_at == UINT64_MAX && dp_now_ns() < deadline) {
		struct iovec iov = { .iov_base = in, .iov_len = sizeof(in) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (sent < NMSG) {
			if (!staged) {
				/* The generator's staging is for streams: fill the message directly. */
				pattern_fill(&gen.pat, msg, sizes[sent]);
				staged = true;
			}
			if (vfe_guest_send_msg(&env.g, c, msg, sizes[sent]) == 1) {
				sent++;
				staged = false;
			}
		}
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n > 0) {
			bool one = (size_t)n == sizes[got] && !(mh.msg_flags & MSG_TRUNC);

			if (!one && whole == got)	/* the first mismatch only */
				tap_diag("message %u: recv %zd bytes (flags %#x), sent %u", got, n,
					mh.msg_flags, sizes[got]);
			whole += one;
			dp_stream_check(&chk, in, (size_t)n);
			got++;
		}
		vfe_guest_poll(&env.g);
	}
	tap_ok(got == NMSG && whole == NMSG, "guest->host: %zu messages of 1 B..64 KiB, one recv "
		"each, sizes exact (%u of %u)", NMSG, whole, got);
	tap_ok(chk.bad_at == UINT64_MAX && chk.done == gen.pat.offset,
		"guest->host: message bytes exact (first bad at %lld)", (long long)chk.bad_at);
}

static void
host_to_guest(struct vfe_guest_conn *c, int fd)
{
	struct dp_stream gen, chk;
	unsigned int sent = 0, got = 0, exact = 0, mark = dp_log.n, i, eom = 0, bad_flags = 0;
	uint64_t deadline = dp_now_ns() + SEQ_NS;
	bool staged = false;
	uint32_t flags = 0;
	long len;

	make_sizes(42);
	dp_stream_init(&gen, 42, UINT64_MAX);
	dp_stream_init(&chk, 42, UINT64_MAX);
	while (got < NMSG && chk.bad_at == UINT64_MAX && dp_now_ns() < deadline) {
		if (sent < NMSG) {
			if (!staged) {
				pattern_fill(&gen.pat, msg, sizes[sent]);
				staged = true;
			}
			if (send(fd, msg, sizes[sent], MSG_DONTWAIT) == (ssize_t)sizes[sent]) {
				sent++;
				staged = false;
			}
		}
		vfe_guest_poll(&env.g);
		while ((len = vfe_guest_next_msg(c, &flags)) >= 0) {
			size_t n = vfe_guest_recv(&env.g, c, in, sizeof(in));

			bool one = (uint32_t)len == sizes[got] && n == (size_t)len &&
				flags == (VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR);

			if (!one && exact == got)	/* the first mismatch only */
				tap_diag("message %u: %ld bytes (flags %#x), sent %u", got, len, flags,
					sizes[got]);
			exact += one;
			dp_stream_check(&chk, in, n);
			got++;
		}
	}
	tap_ok(got == NMSG && exact == NMSG, "host->guest: %zu messages, each ends with EOM|EOR "
		"exactly where the host's send() ended (%u of %u)", NMSG, exact, got);
	tap_ok(chk.bad_at == UINT64_MAX && chk.done == gen.pat.offset,
		"host->guest: message bytes exact (first bad at %lld)", (long long)chk.bad_at);
	for (i = mark; i < dp_log.n; i++) {
		const struct dp_log_entry *l = &dp_log.e[i];

		if (l->tx || l->p.op != VIRTIO_VSOCK_OP_RW || l->p.dst_port != c->local_port)
			continue;
		if (l->p.type != VIRTIO_VSOCK_TYPE_SEQPACKET ||
		    (l->p.flags != 0 && l->p.flags != (VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR)))
			bad_flags++;
		eom += l->p.flags != 0;
	}
	tap_ok(!dp_log.overflow && eom == NMSG && bad_flags == 0,
		"host->guest: one EOM|EOR packet per message, flags 0 on the others, type "
		"SEQPACKET (%u EOM, %u bad)", eom, bad_flags);
}

int
main(void)
{
	struct vfe_guest_conf gc = {
		.tx_max_payload = 16384, .rx_hook = dp_log_rx, .tx_hook = dp_log_tx,
	};
	struct vfe_guest_conn *c;
	int lfd, fd, k;
	char b;

	if (dp_start(&env) < 0)
		return tap_done();
	if (dp_attach(&env, NULL, &gc) < 0)
		goto out;
	tap_ok(!!(env.v.features & (1ULL << VIRTIO_VSOCK_F_SEQPACKET)),
		"VIRTIO_VSOCK_F_SEQPACKET negotiated");

	lfd = dp_listen(&env, 7000, SOCK_SEQPACKET);
	c = dp_guest_connect(&env, 7000, VIRTIO_VSOCK_TYPE_SEQPACKET, MS);
	fd = dp_accept(&env, lfd, MS);
	close(lfd);
	if (!tap_ok(c != NULL && c->state == VFE_GC_ESTABLISHED && fd >= 0,
			"SEQPACKET connection to a SOCK_SEQPACKET listener"))
		goto out;
	for (k = (int)dp_log.n - 1; k >= 0; k--)
		if (!dp_log.e[k].tx && dp_log.e[k].p.op == VIRTIO_VSOCK_OP_RESPONSE)
			break;
	tap_ok(k >= 0 && dp_log.e[k].p.type == VIRTIO_VSOCK_TYPE_SEQPACKET,
		"RESPONSE has type SEQPACKET");
	guest_to_host(c, fd);
	dp_log_clear();
	host_to_guest(c, fd);

	vfe_guest_shutdown(&env.g, c, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	tap_ok(DP_WAIT(&env, c->state == VFE_GC_CLOSED, MS) && c->reset &&
		recv(fd, &b, 1, MSG_DONTWAIT) == 0, "guest close: RST, host reads EOF");
	close(fd);
	vfe_guest_release(&env.g, c);

	/* The listener's type decides: a stream listener refuses a SEQPACKET connection. */
	lfd = dp_listen(&env, 7001, SOCK_STREAM);
	c = dp_guest_connect(&env, 7001, VIRTIO_VSOCK_TYPE_SEQPACKET, MS);
	tap_ok(lfd >= 0 && c != NULL && c->state == VFE_GC_CLOSED && c->reset,
		"SEQPACKET REQUEST to a stream listener refused with RST");
	close(lfd);
	dp_check_guest(&env, "seqpacket");
out:
	dp_stop(&env);
	return tap_done();
}
