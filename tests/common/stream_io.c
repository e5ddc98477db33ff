/* SPDX-License-Identifier: BSD-3-Clause */
/* The transfer half of vsock-io and uds-io: see stream_io.h. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "pattern.h"
#include "stream_io.h"

#define REPLY_MAX 64
/* How long a close waits for the peer to close too (sio_run()), seconds. */
#define LINGER_S 10

/* The program running (sio_parse_opts()). */
static const struct sio_tool *tool;
static uint8_t buf[SIO_BUF_SIZE];
/* built before the alarm is armed: the handler may not call stdio */
static char timeout_msg[64];
static int timeout_len;

void sio_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", tool->name, what, strerror(errno));
	exit(1);
}

void sio_usage(void)
{
	fprintf(stderr, "usage: %s [--seqpacket] [--seed N] [--chunk N] [--msg-max N]"
		" [--timeout S]\n%s", tool->name, tool->usage);
	exit(1);
}

unsigned long long sio_parse_num(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		sio_usage();
	return v;
}

int sio_parse_opts(const struct sio_tool *t, int argc, char **argv, struct sio_opts *o)
{
	int i;

	tool = t;
	*o = (struct sio_opts){
		.type = SOCK_STREAM, .seed = PATTERN_SEED_DEFAULT, .chunk = SIO_BUF_SIZE,
		.msg_max = SIO_BUF_SIZE, .timeout = 120,
	};
	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--seqpacket") == 0)
			o->type = SOCK_SEQPACKET;
		else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
			o->seed = sio_parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--chunk") == 0)
			o->chunk = sio_parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--msg-max") == 0)
			o->msg_max = sio_parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0)
			o->timeout = sio_parse_num(argv[++i]);
		else
			sio_usage();
	}
	if (o->chunk == 0 || o->chunk > SIO_BUF_SIZE || o->msg_max == 0 ||
	    o->msg_max > SIO_BUF_SIZE || o->timeout == 0)
		sio_usage();
	return i;
}

void sio_parse_action(int argc, char **argv, int i, struct sio_opts *o)
{
	if (i < argc && strcmp(argv[i], "send") == 0 && argc - i == 2) {
		o->action = SIO_SEND;
		o->bytes = sio_parse_num(argv[i + 1]);
	} else if (i < argc && strcmp(argv[i], "recv") == 0 && argc - i == 1) {
		o->action = SIO_RECV;
	} else if (i < argc && strcmp(argv[i], "echo") == 0 && argc - i == 1) {
		o->action = SIO_ECHO;
	} else {
		sio_usage();
	}
}

bool sio_peer_gone(int err)
{
	return err == ECONNRESET || err == EPIPE;
}

/* Whether a failed call is to be reported as BROKEN rather than end in sio_die(). */
static bool reported(int err)
{
	return tool->report_broken && sio_peer_gone(err);
}

static __attribute__((noreturn)) void broken(const char *op, uint64_t done)
{
	int err = errno;

	if (!sio_peer_gone(err))
		sio_die(op);
	printf("BROKEN %s %s AFTER %" PRIu64 "\n", op, err == EPIPE ? "EPIPE" : "ECONNRESET",
	       done);
	exit(1);
}

int sio_write_all(int fd, const void *p, size_t len)
{
	const uint8_t *s = p;
	ssize_t n;

	while (len) {
		/* a vanished peer must be an errno to report, not a SIGPIPE */
		n = send(fd, s, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (reported(errno))
				return -1;
			sio_die("send");
		}
		s += n;
		len -= n;
	}
	return 0;
}

/* Like recv(); -1 with errno set when the peer reset the connection (reported). */
static ssize_t recv_msg(int fd, void *p, size_t len, const struct sio_opts *o)
{
	struct iovec iov = { .iov_base = p, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		n = recvmsg(fd, &msg, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (reported(errno))
			return -1;
		sio_die("recv");
	}
	if (o->type == SOCK_SEQPACKET && (msg.msg_flags & MSG_TRUNC)) {
		fprintf(stderr, "%s: message longer than %zu bytes\n", tool->name, len);
		exit(1);
	}
	return n;
}

static int do_send(int fd, const struct sio_opts *o)
{
	struct pattern pat;
	struct pattern_sizes sizes;
	uint64_t sum = PATTERN_FNV_INIT, left = o->bytes, peer;
	char reply[REPLY_MAX + 1];
	size_t len = 0;
	size_t n;
	ssize_t r;
	bool ok;

	pattern_init(&pat, o->seed);
	pattern_sizes_init(&sizes, o->seed, o->msg_max);
	while (left) {
		n = o->type == SOCK_SEQPACKET ? pattern_sizes_next(&sizes) : o->chunk;
		if (n > left)
			n = left;
		pattern_fill(&pat, buf, n);
		sum = fnv1a64(sum, buf, n);
		/* a seqpacket send is all or nothing, so one call is one message */
		if (sio_write_all(fd, buf, n) < 0)
			broken("send", o->bytes - left);
		left -= n;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		sio_die("shutdown");

	/* the reply is one line; on a stream it may arrive in pieces */
	while (len < REPLY_MAX && memchr(reply, '\n', len) == NULL) {
		r = recv_msg(fd, reply + len, REPLY_MAX - len, o);
		if (r < 0)
			broken("reply", o->bytes);
		if (r == 0)
			break;
		len += r;
	}
	reply[len] = '\0';
	if (sscanf(reply, "SUM %" SCNx64, &peer) == 1) {
		ok = peer == sum;
	} else {
		fprintf(stderr, "%s: bad reply \"%s\"\n", tool->name, reply);
		peer = 0;
		ok = false;
	}
	printf("SENT %" PRIu64 " SUM %016" PRIx64 " PEER %016" PRIx64 " %s\n",
	       o->bytes, sum, peer, ok ? "OK" : "MISMATCH");
	return ok ? 0 : 1;
}

static int do_recv(int fd, const struct sio_opts *o)
{
	struct pattern pat;
	struct pattern_sizes sizes;
	uint64_t sum = PATTERN_FNV_INIT, total = 0, msgs = 0, bad_at = UINT64_MAX;
	uint32_t expect;
	bool short_seen = false, len_ok = true, reset = false;
	char reply[REPLY_MAX];
	size_t bad;
	ssize_t n;
	int len;

	pattern_init(&pat, o->seed);
	pattern_sizes_init(&sizes, o->seed, o->msg_max);
	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : SIO_BUF_SIZE, o);
		if (n < 0)
			reset = true;
		if (n <= 0)
			break;
		if (o->type == SOCK_SEQPACKET) {
			expect = pattern_sizes_next(&sizes);
			/* only the last message may be shorter than its slot */
			if (short_seen || (uint32_t)n > expect) {
				fprintf(stderr, "%s: message %" PRIu64 " is %zd bytes, expected %u%s\n",
					tool->name, msgs, n, expect,
					short_seen ? " after a short one" : "");
				len_ok = false;
			}
			short_seen = (uint32_t)n < expect;
		}
		bad = pattern_check(&pat, buf, n);
		if (bad != (size_t)n && bad_at == UINT64_MAX)
			bad_at = total + bad;
		sum = fnv1a64(sum, buf, n);
		total += n;
		msgs++;
	}

	printf("RECV %" PRIu64 " SUM %016" PRIx64 " MSGS %" PRIu64 " PATTERN ", total, sum, msgs);
	if (bad_at == UINT64_MAX)
		printf("OK\n");
	else
		printf("BAD@%" PRIu64 "\n", bad_at);
	if (reset) {
		errno = ECONNRESET;
		broken("recv", total);
	}
	len = snprintf(reply, sizeof(reply), "SUM %016" PRIx64 "\n", sum);
	if (sio_write_all(fd, reply, len) < 0)
		broken("reply", total);
	return bad_at == UINT64_MAX && len_ok ? 0 : 1;
}

static int do_echo(int fd, const struct sio_opts *o)
{
	uint64_t total = 0, msgs = 0;
	ssize_t n;

	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : SIO_BUF_SIZE, o);
		if (n < 0)
			broken("recv", total);
		if (n == 0)
			break;
		if (sio_write_all(fd, buf, n) < 0)
			broken("send", total);
		total += n;
		msgs++;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		sio_die("shutdown");
	printf("ECHO %" PRIu64 " MSGS %" PRIu64 "\n", total, msgs);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	/* only async-signal-safe calls here */
	if (write(STDERR_FILENO, timeout_msg, timeout_len) < 0)
		_exit(1);
	_exit(1);
}

void sio_start(const struct sio_opts *o)
{
	/* results must reach a console or a pipe line by line, in order */
	setvbuf(stdout, NULL, _IOLBF, 0);
	timeout_len = snprintf(timeout_msg, sizeof(timeout_msg), "%s: timeout\n", tool->name);
	signal(SIGALRM, on_alarm);
	alarm(o->timeout);
}

int sio_run(int fd, const struct sio_opts *o)
{
	int rc;

	if (o->action == SIO_SEND)
		rc = do_send(fd, o);
	else if (o->action == SIO_RECV)
		rc = do_recv(fd, o);
	else
		rc = do_echo(fd, o);
	/*
	 * A lingering close, for what this side wrote last (a receiver's reply, an echo's tail).
	 * On AF_VSOCK a plain close() returns at once, the bytes maybe still in the guest
	 * driver's queue: a guest powered off next loses them, and the sender reads EOF where
	 * its reply belongs. Lingering, close() returns once the peer closed too, which a
	 * sender does after the reply; at most LINGER_S later. On a Unix socket it changes
	 * nothing.
	 */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1, .l_linger = LINGER_S },
		   sizeof(struct linger));
	close(fd);
	return rc;
}
