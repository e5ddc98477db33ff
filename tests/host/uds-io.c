/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uds-io: the host-side twin of tests/guest/vsock-io.c. It drives one hybrid
 * vsock connection (doc/hybrid-vsock.md) with the stream of
 * tests/common/pattern.h, so a test compares what both ends saw.
 *
 *   uds-io [OPTIONS] listen PATH ACTION      guest -> host: PATH is
 *                                            "<uds>_<port>"; accepts exactly
 *                                            one connection
 *   uds-io [OPTIONS] connect UDS PORT ACTION host -> guest: connects to the
 *                                            VM's uds path, writes
 *                                            "CONNECT <PORT>\n", expects
 *                                            "OK <host_port>\n"
 *
 * ACTION, OPTIONS and the result lines are those of vsock-io:
 *   send BYTES | recv | echo
 *   --seqpacket (listen only: host -> guest CONNECT is always a stream),
 *   --seed N, --chunk N, --msg-max N, --timeout S (default 120, overall)
 *
 * stdout, one line each: "LISTENING <path>" once listening (before accept),
 * "CONNECTED <path>" after accept or "CONNECTED <port> <host_port>" after
 * the OK line (host_port is what the guest's accept() reports as the peer
 * port), then the result:
 *   SENT <bytes> SUM <hex> PEER <hex> OK|MISMATCH
 *   RECV <bytes> SUM <hex> MSGS <n> PATTERN OK|BAD@<offset>
 *   ECHO <bytes> MSGS <n>
 * When the peer goes away mid-stream (a guest reboot) the host must see EOF
 * or an error, never a hang. recv therefore also prints its RECV line when
 * the stream ended with ECONNRESET, and a broken stream adds
 *   BROKEN <op> <errno name> AFTER <bytes>
 * (op: send, recv, reply); the exit status is then 1. A timeout prints only
 * "uds-io: timeout" on stderr. Exit status 0 when every check passed.
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
#include <sys/un.h>

#include "pattern.h"

#define BUF_SIZE (1u << 16)
#define REPLY_MAX 64
/* the backend's own bound on the CONNECT line; its OK line is shorter */
#define LINE_MAX_LEN 32

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
	fprintf(stderr, "uds-io: %s: %s\n", what, strerror(errno));
	exit(1);
}

static __attribute__((noreturn)) void fail(const char *what)
{
	fprintf(stderr, "uds-io: %s\n", what);
	exit(1);
}

static void on_alarm(int sig)
{
	static const char msg[] = "uds-io: timeout\n";

	(void)sig;
	/* only async-signal-safe calls here */
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static __attribute__((noreturn)) void usage(void)
{
	fprintf(stderr, "usage: uds-io [--seqpacket] [--seed N] [--chunk N] [--msg-max N]"
		" [--timeout S]\n"
		"       listen PATH send BYTES|recv|echo\n"
		"       connect UDS PORT send BYTES|recv|echo   (stream only)\n");
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

/* The peer vanishing is a result to report, anything else is a bug here. */
static bool peer_gone(int err)
{
	return err == ECONNRESET || err == EPIPE;
}

static __attribute__((noreturn)) void broken(const char *op, uint64_t done)
{
	int err = errno;

	if (!peer_gone(err))
		die(op);
	printf("BROKEN %s %s AFTER %" PRIu64 "\n", op, err == EPIPE ? "EPIPE" : "ECONNRESET",
	       done);
	exit(1);
}

/*
 * Write all of len; a stream socket may take less than asked. Returns 0, or
 * -1 with errno set when the peer is gone.
 */
static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *s = p;
	ssize_t n;

	while (len) {
		n = send(fd, s, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (peer_gone(errno))
				return -1;
			die("send");
		}
		s += n;
		len -= n;
	}
	return 0;
}

/* Like recv(); -1 with errno set when the peer reset the connection. */
static ssize_t recv_msg(int fd, void *p, size_t len, const struct opts *o)
{
	struct iovec iov = { .iov_base = p, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		n = recvmsg(fd, &msg, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (peer_gone(errno))
			return -1;
		die("recv");
	}
	if (o->type == SOCK_SEQPACKET && (msg.msg_flags & MSG_TRUNC)) {
		fprintf(stderr, "uds-io: message longer than %zu bytes\n", len);
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
		if (write_all(fd, buf, n) < 0)
			broken("send", bytes - left);
		left -= n;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");

	/* the reply is one line; on a stream it may arrive in pieces */
	while (len < REPLY_MAX && memchr(reply, '\n', len) == NULL) {
		r = recv_msg(fd, reply + len, REPLY_MAX - len, o);
		if (r < 0)
			broken("reply", bytes);
		if (r == 0)
			break;
		len += r;
	}
	reply[len] = '\0';
	if (sscanf(reply, "SUM %" SCNx64, &peer) == 1) {
		ok = peer == sum;
	} else {
		fprintf(stderr, "uds-io: bad reply \"%s\"\n", reply);
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
	uint32_t expect;
	bool short_seen = false, len_ok = true, reset = false;
	char reply[REPLY_MAX];
	size_t bad;
	ssize_t n;
	int len;

	pattern_init(&pat, o->seed);
	pattern_sizes_init(&sizes, o->seed, o->msg_max);
	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : BUF_SIZE, o);
		if (n < 0)
			reset = true;
		if (n <= 0)
			break;
		if (o->type == SOCK_SEQPACKET) {
			expect = pattern_sizes_next(&sizes);
			/* only the last message may be shorter than its slot */
			if (short_seen || (uint32_t)n > expect) {
				fprintf(stderr, "uds-io: message %" PRIu64 " is %zd bytes,"
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
	if (reset) {
		errno = ECONNRESET;
		broken("recv", total);
	}
	len = snprintf(reply, sizeof(reply), "SUM %016" PRIx64 "\n", sum);
	if (write_all(fd, reply, len) < 0)
		broken("reply", total);
	return bad_at == UINT64_MAX && len_ok ? 0 : 1;
}

static int do_echo(int fd, const struct opts *o)
{
	uint64_t total = 0, msgs = 0;
	ssize_t n;

	for (;;) {
		n = recv_msg(fd, buf, o->type == SOCK_SEQPACKET ? o->msg_max : BUF_SIZE, o);
		if (n < 0)
			broken("recv", total);
		if (n == 0)
			break;
		if (write_all(fd, buf, n) < 0)
			broken("send", total);
		total += n;
		msgs++;
	}
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");
	printf("ECHO %" PRIu64 " MSGS %" PRIu64 "\n", total, msgs);
	return 0;
}

static void unix_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		fail("socket path too long");
	strcpy(sa->sun_path, path);
}

/*
 * Read the backend's answer one byte at a time: the guest may start sending
 * right after accept(), and those bytes must stay in the socket for ACTION.
 */
static unsigned long read_ok_line(int fd, unsigned int port)
{
	char line[LINE_MAX_LEN + 1];
	unsigned long host_port;
	size_t len = 0;
	ssize_t n;
	char *end;

	while (len < LINE_MAX_LEN) {
		do {
			n = recv(fd, line + len, 1, 0);
		} while (n < 0 && errno == EINTR);
		if (n < 0 && !peer_gone(errno))
			die("recv OK line");
		if (n <= 0) {
			fprintf(stderr, "uds-io: closed before the OK line (nothing listens on"
				" guest port %u?)\n", port);
			exit(1);
		}
		if (line[len++] == '\n')
			break;
	}
	line[len] = '\0';
	if (len == 0 || line[len - 1] != '\n' || strncmp(line, "OK ", 3) != 0)
		goto bad;
	errno = 0;
	host_port = strtoul(line + 3, &end, 10);
	if (errno || end == line + 3 || *end != '\n' || host_port > UINT32_MAX)
		goto bad;
	return host_port;
bad:
	fprintf(stderr, "uds-io: bad answer to CONNECT: \"%.*s\"\n", (int)strcspn(line, "\n"),
		line);
	exit(1);
}

static int do_connect(const char *path, unsigned int port)
{
	struct sockaddr_un sa;
	char line[LINE_MAX_LEN];
	unsigned long host_port;
	int fd, len;

	unix_addr(&sa, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	len = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write_all(fd, line, len) < 0)
		die("send CONNECT");
	host_port = read_ok_line(fd, port);
	printf("CONNECTED %u %lu\n", port, host_port);
	return fd;
}

static int do_listen(const char *path, const struct opts *o)
{
	struct sockaddr_un sa;
	int lfd, fd;

	unix_addr(&sa, path);
	lfd = socket(AF_UNIX, o->type | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	/* a file left by an earlier run would make bind() fail */
	if (unlink(path) < 0 && errno != ENOENT)
		die("unlink");
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 1) < 0)
		die("listen");
	printf("LISTENING %s\n", path);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		die("accept");
	/* later guest connects to this port must see RST, not a dead backlog */
	close(lfd);
	unlink(path);
	printf("CONNECTED %s\n", path);
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
	unsigned long long port = 0;

	/* results must reach a pipe line by line, in order */
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

	/* check the whole command line before touching any socket */
	if (argc - i >= 4 && strcmp(argv[i], "connect") == 0 && o.type == SOCK_STREAM) {
		action = i + 3;
		port = parse_num(argv[i + 2]);
		if (port > UINT32_MAX)
			usage();
	} else if (argc - i >= 3 && strcmp(argv[i], "listen") == 0) {
		action = i + 2;
	} else {
		usage();
	}
	if (strcmp(argv[action], "send") == 0 && argc - action == 2)
		bytes = parse_num(argv[action + 1]);
	else if ((strcmp(argv[action], "recv") != 0 && strcmp(argv[action], "echo") != 0) ||
		 argc - action != 1)
		usage();

	buf = malloc(BUF_SIZE);
	if (buf == NULL)
		die("malloc");
	signal(SIGALRM, on_alarm);
	alarm(o.timeout);

	if (argv[i][0] == 'c')
		fd = do_connect(argv[i + 1], port);
	else
		fd = do_listen(argv[i + 1], &o);

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
