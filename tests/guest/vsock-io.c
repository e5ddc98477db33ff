/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vsock-io: drive one vsock connection with the deterministic stream of
 * tests/common/pattern.h, so that a host-side test checks every byte.
 *
 *   vsock-io [OPTIONS] connect CID PORT ACTION
 *   vsock-io [OPTIONS] listen PORT ACTION     (accepts exactly one connection)
 *
 * ACTION:
 *   send BYTES  write BYTES bytes of the stream, shutdown(SHUT_WR), read the
 *               peer's "SUM <16 hex>\n" and compare it with our checksum
 *   recv        read to EOF, check the bytes against the stream, answer
 *               "SUM <16 hex>\n" (FNV-1a 64 of what was read), close
 *   echo        write back everything read until EOF, then shutdown(SHUT_WR)
 *
 * OPTIONS:
 *   --seqpacket  SOCK_SEQPACKET: send cuts the stream into messages whose
 *                lengths come from pattern_sizes (the last one may be cut
 *                short); recv checks every message length; echo returns each
 *                message as one message; the SUM reply is one message
 *   --seed N     stream seed (default PATTERN_SEED_DEFAULT)
 *   --chunk N    write size of a stream send (default 65536)
 *   --msg-max N  largest seqpacket message (default 65536)
 *   --timeout S  give up after S seconds overall, connect included
 *                (default 120)
 *
 * stdout, one line each: "LISTENING <port>" once listening (before accept),
 * "CONNECTED <peer cid> <peer port>", then the result:
 *   SENT <bytes> SUM <hex> PEER <hex> OK|MISMATCH
 *   RECV <bytes> SUM <hex> MSGS <n> PATTERN OK|BAD@<offset>
 *   ECHO <bytes> MSGS <n>
 * Exit status 0 when every check passed, 1 otherwise (reason on stderr).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/vm_sockets.h>

#include "pattern.h"

#define BUF_SIZE (1u << 16)
#define REPLY_MAX 64

struct opts {
	int type;
	uint64_t seed;
	size_t chunk;
	size_t msg_max;
	unsigned int timeout;
};

static uint8_t *buf;

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "vsock-io: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_alarm(int sig)
{
	static const char msg[] = "vsock-io: timeout\n";

	(void)sig;
	/* only async-signal-safe calls here */
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static __attribute__((noreturn)) void usage(void)
{
	fprintf(stderr, "usage: vsock-io [--seqpacket] [--seed N] [--chunk N] [--msg-max N]"
		" [--timeout S]\n"
		"       connect CID PORT send BYTES|recv|echo\n"
		"       listen PORT send BYTES|recv|echo\n");
	exit(1);
}

static unsigned long long parse_num(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

/* Write all of len; a stream socket may take less than asked. */
static void write_all(int fd, const void *p, size_t len)
{
	const uint8_t *s = p;
	ssize_t n;

	while (len) {
		n = send(fd, s, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("send");
		}
		s += n;
		len -= n;
	}
}

static ssize_t recv_msg(int fd, void *p, size_t len, const struct opts *o)
{
	struct iovec iov = { .iov_base = p, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		n = recvmsg(fd, &msg, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		die("recv");
	if (o->type == SOCK_SEQPACKET && (msg.msg_flags & MSG_TRUNC)) {
		fprintf(stderr, "vsock-io: message longer than %zu bytes\n", len);
		exit(1);
	}
	return n;
}

static int do_send(int fd, uint64_t bytes, const struct opts *o)
{
	struct pattern pat;
	struct pattern_sizes sizes;
	uint64_t sum = PATTERN_FNV_INIT, left = bytes, peer;
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
		write_all(fd, buf, n);
		left -= n;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");

	/* the reply is one line; on a stream it may arrive in pieces */
	while (len < REPLY_MAX && memchr(reply, '\n', len) == NULL) {
		r = recv_msg(fd, reply + len, REPLY_MAX - len, o);
		if (r == 0)
			break;
		len += r;
	}
	reply[len] = '\0';
	if (sscanf(reply, "SUM %" SCNx64, &peer) == 1) {
		ok = peer == sum;
	} else {
		fprintf(stderr, "vsock-io: bad reply \"%s\"\n", reply);
		peer = 0;
		ok = false;
	}
	printf("SENT %" PRIu64 " SUM %016" PRIx64 " PEER %016" PRIx64 " %s\n",
	       bytes, sum, peer, ok ? "OK" : "MISMATCH");
	return ok ? 0 : 1;
}

static int do_recv(int fd, const struct opts *o)
{
	struct pattern pat;
	struct pattern_sizes sizes;
	uint64_t sum = PATTERN_FNV_INIT, total = 0, msgs = 0, bad_at = UINT64_MAX;
	uint32_t expect = 0;
	bool short_seen = false, len_ok = true;
	char reply[REPLY_MAX];
	size_t bad;
	ssize_t n;
	int len;

	pattern_init(&pat, o->seed);
	pattern_sizes_init(&sizes, o->seed, o->msg_max);
	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : BUF_SIZE, o);
		if (n == 0)
			break;
		if (o->type == SOCK_SEQPACKET) {
			expect = pattern_sizes_next(&sizes);
			/* only the last message may be shorter than its slot */
			if (short_seen || (uint32_t)n > expect) {
				fprintf(stderr, "vsock-io: message %" PRIu64 " is %zd bytes,"
					" expected %u%s\n", msgs, n, expect,
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
	len = snprintf(reply, sizeof(reply), "SUM %016" PRIx64 "\n", sum);
	write_all(fd, reply, len);
	return bad_at == UINT64_MAX && len_ok ? 0 : 1;
}

static int do_echo(int fd, const struct opts *o)
{
	uint64_t total = 0, msgs = 0;
	ssize_t n;

	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : BUF_SIZE, o);
		if (n == 0)
			break;
		write_all(fd, buf, n);
		total += n;
		msgs++;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");
	printf("ECHO %" PRIu64 " MSGS %" PRIu64 "\n", total, msgs);
	return 0;
}

static int open_socket(const struct opts *o)
{
	struct timeval tv = { .tv_sec = o->timeout };
	int fd;

	fd = socket(AF_VSOCK, o->type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	/* the 2 s default is short for a TCG guest; the alarm still bounds it */
	if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv)) < 0)
		die("setsockopt SO_VM_SOCKETS_CONNECT_TIMEOUT");
	return fd;
}

static int do_connect(unsigned int cid, unsigned int port, const struct opts *o)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port,
	};
	int fd = open_socket(o);

	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	printf("CONNECTED %u %u\n", cid, port);
	return fd;
}

static int do_listen(unsigned int port, const struct opts *o)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port,
	};
	socklen_t len = sizeof(sa);
	int lfd = open_socket(o), fd;

	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 1) < 0)
		die("listen");
	printf("LISTENING %u\n", port);
	fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
	if (fd < 0)
		die("accept");
	close(lfd);
	printf("CONNECTED %u %u\n", sa.svm_cid, sa.svm_port);
	return fd;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.type = SOCK_STREAM, .seed = PATTERN_SEED_DEFAULT, .chunk = BUF_SIZE,
		.msg_max = BUF_SIZE, .timeout = 120,
	};
	uint64_t bytes = 0;
	int i = 1, action, fd, rc;

	/* results must reach the console in order even when piped */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--seqpacket") == 0)
			o.type = SOCK_SEQPACKET;
		else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
			o.seed = parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--chunk") == 0)
			o.chunk = parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--msg-max") == 0)
			o.msg_max = parse_num(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0)
			o.timeout = parse_num(argv[++i]);
		else
			usage();
	}
	if (o.chunk == 0 || o.chunk > BUF_SIZE || o.msg_max == 0 || o.msg_max > BUF_SIZE ||
	    o.timeout == 0)
		usage();

	buf = malloc(BUF_SIZE);
	if (buf == NULL)
		die("malloc");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(o.timeout);

	/* check the whole command line before touching the network */
	if (argc - i >= 4 && strcmp(argv[i], "connect") == 0)
		action = i + 3;
	else if (argc - i >= 3 && strcmp(argv[i], "listen") == 0)
		action = i + 2;
	else
		usage();
	if (strcmp(argv[action], "send") == 0 && argc - action == 2)
		bytes = parse_num(argv[action + 1]);
	else if ((strcmp(argv[action], "recv") != 0 && strcmp(argv[action], "echo") != 0) ||
		 argc - action != 1)
		usage();

	if (argv[i][0] == 'c')
		fd = do_connect(parse_num(argv[i + 1]), parse_num(argv[i + 2]), &o);
	else
		fd = do_listen(parse_num(argv[i + 1]), &o);

	if (argv[action][0] == 's')
		rc = do_send(fd, bytes, &o);
	else if (argv[action][0] == 'r')
		rc = do_recv(fd, &o);
	else
		rc = do_echo(fd, &o);
	close(fd);
	free(buf);
	return rc;
}
