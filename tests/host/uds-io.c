/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uds-io: the host-side twin of tests/guest/vsock-io.c. It drives one hybrid
 * vsock connection (doc/hybrid-vsock.md) with the stream of
 * lib/vsock_harness/pattern.h, so a test compares what both ends saw.
 *
 *   uds-io [OPTIONS] listen PATH ACTION      guest -> host: PATH is
 *                                            "<uds>_<port>"; accepts exactly
 *                                            one connection
 *   uds-io [OPTIONS] connect UDS PORT ACTION host -> guest: connects to the
 *                                            VM's uds path, writes
 *                                            "CONNECT <PORT>\n", expects
 *                                            "OK <host_port>\n"
 *
 * ACTION, OPTIONS and the result lines are those of tests/common/stream_io.h:
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "stream_io.h"

/* the backend's own bound on the CONNECT line; its OK line is shorter */
#define LINE_MAX_LEN 32

static const struct sio_tool tool = {
	.name = "uds-io",
	.usage = "       listen PATH send BYTES|recv|echo\n"
		"       connect UDS PORT send BYTES|recv|echo   (stream only)\n",
	/* a guest reboot mid-stream is a result the QEMU tests check */
	.report_broken = true,
};

static __attribute__((noreturn)) void fail(const char *what)
{
	fprintf(stderr, "uds-io: %s\n", what);
	exit(1);
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
		if (n < 0 && !sio_peer_gone(errno))
			sio_die("recv OK line");
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
		sio_die("socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		sio_die("connect");
	len = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (sio_write_all(fd, line, len) < 0)
		sio_die("send CONNECT");
	host_port = read_ok_line(fd, port);
	printf("CONNECTED %u %lu\n", port, host_port);
	return fd;
}

static int do_listen(const char *path, const struct sio_opts *o)
{
	struct sockaddr_un sa;
	int lfd, fd;

	unix_addr(&sa, path);
	lfd = socket(AF_UNIX, o->type | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		sio_die("socket");
	/* a file left by an earlier run would make bind() fail */
	if (unlink(path) < 0 && errno != ENOENT)
		sio_die("unlink");
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		sio_die("bind");
	if (listen(lfd, 1) < 0)
		sio_die("listen");
	printf("LISTENING %s\n", path);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		sio_die("accept");
	/* later guest connects to this port must see RST, not a dead backlog */
	close(lfd);
	unlink(path);
	printf("CONNECTED %s\n", path);
	return fd;
}

int main(int argc, char **argv)
{
	struct sio_opts o;
	int i = sio_parse_opts(&tool, argc, argv, &o), fd;
	unsigned long long port = 0;

	/* check the whole command line before touching any socket */
	if (argc - i >= 4 && strcmp(argv[i], "connect") == 0 && o.type == SOCK_STREAM) {
		port = sio_parse_num(argv[i + 2]);
		if (port > UINT32_MAX)
			sio_usage();
		sio_parse_action(argc, argv, i + 3, &o);
	} else if (argc - i >= 3 && strcmp(argv[i], "listen") == 0) {
		sio_parse_action(argc, argv, i + 2, &o);
	} else {
		sio_usage();
	}

	sio_start(&o);
	if (argv[i][0] == 'c')
		fd = do_connect(argv[i + 1], port);
	else
		fd = do_listen(argv[i + 1], &o);
	return sio_run(fd, &o);
}
