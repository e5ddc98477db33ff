/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ep_uds: the CONNECT line parser and reader, the OK reply, and the Unix socket calls, against
 * real sockets in a temporary directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ep_uds.h"
#include "path_check.h"
#include "vsock_pkt.h"
#include "tap.h"

static int parse(const char *s, uint32_t *port)
{
	return ep_uds_parse_connect(s, strlen(s), port);
}

static void test_parse(void)
{
	static const char *const bad[] = {
		"CONNECT\n", "CONNECT \n", "CONNECT x\n", "CONNECT 5 \n", "CONNECTX 5\n",
		"CONNECT -5\n", "CONNECT +5\n", "CONNECT 5", "OK 5\n", "CONNECT 4294967296\n",
		"CONNECT 99999999999999999999\n", " CONNECT 5\n", "CONNECT\t5\n", "CONNECT 5\r\r\n",
		"\n", "",
	};
	uint32_t port = 0;
	unsigned int i;
	int all = 1;

	tap_ok(parse("CONNECT 52\n", &port) == 0 && port == 52, "CONNECT 52");
	tap_ok(parse("connect 1\n", &port) == 0 && port == 1, "keyword in lower case");
	tap_ok(parse("CoNnEcT   7\r\n", &port) == 0 && port == 7, "mixed case, spaces, CRLF");
	tap_ok(parse("CONNECT 4294967295\n", &port) == 0 && port == UINT32_MAX, "port 2^32-1");
	tap_ok(parse("CONNECT 0\n", &port) == 0 && port == 0, "port 0 parses (the guest decides)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		port = 12345;
		if (parse(bad[i], &port) != -EPROTO || port != 12345) {
			all = 0;
			tap_diag("accepted: \"%s\"", bad[i]);
		}
	}
	tap_ok(all, "%u malformed lines refused, port untouched", i);
}

static void test_line_read(void)
{
	struct ep_uds_line l = { 0 };
	char rest[64], big[40];
	size_t line_len = 0;
	uint32_t port = 0;
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	tap_ok(ep_uds_line_read(sv[0], &l, &port, &line_len) == 0, "nothing sent yet: 0");
	tap_ok(write(sv[1], "CONN", 4) == 4 && ep_uds_line_read(sv[0], &l, &port, &line_len) == 0,
	       "partial line: 0");
	tap_ok(write(sv[1], "ECT 80\npayload", 14) == 14 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == 1 && port == 80 &&
	       line_len == 11 && l.len == 18 && memcmp(l.buf + 11, "payload", 7) == 0,
	       "line completed across two reads; the bytes after it kept as payload");
	close(sv[0]);
	close(sv[1]);

	/* Never read past the line buffer: what follows stays in the socket. */
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	memset(&l, 0, sizeof(l));
	memset(big, 'z', sizeof(big));
	tap_ok(write(sv[1], "CONNECT 1\n", 10) == 10 && write(sv[1], big, 40) == 40 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == 1 && port == 1 &&
	       l.len == EP_UDS_LINE_MAX, "reads at most %d bytes", EP_UDS_LINE_MAX);
	tap_ok(read(sv[0], rest, sizeof(rest)) == 50 - EP_UDS_LINE_MAX,
	       "the other %d bytes are still in the socket", 50 - EP_UDS_LINE_MAX);
	close(sv[0]);
	close(sv[1]);

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	memset(&l, 0, sizeof(l));
	tap_ok(write(sv[1], big, 20) == 20 && ep_uds_line_read(sv[0], &l, &port, &line_len) == 0 &&
	       write(sv[1], big, 20) == 20 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == -EPROTO,
	       "no newline within %d bytes: -EPROTO", EP_UDS_LINE_MAX);
	close(sv[0]);
	close(sv[1]);

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	memset(&l, 0, sizeof(l));
	tap_ok(write(sv[1], "HELLO 5\n", 8) == 8 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == -EPROTO, "bad keyword: -EPROTO");
	close(sv[0]);
	close(sv[1]);

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	memset(&l, 0, sizeof(l));
	tap_ok(write(sv[1], "CONNECT 5", 9) == 9 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == 0 && close(sv[1]) == 0 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == -ECONNRESET,
	       "client closes before the newline: -ECONNRESET");
	close(sv[0]);

	/* Both already there when the one edge-triggered event is read. */
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	memset(&l, 0, sizeof(l));
	tap_ok(write(sv[1], "CONNECT 5", 9) == 9 && shutdown(sv[1], SHUT_WR) == 0 &&
	       ep_uds_line_read(sv[0], &l, &port, &line_len) == -ECONNRESET,
	       "part of a line and the client's shutdown in one read: -ECONNRESET at once");
	close(sv[0]);
	close(sv[1]);
}

static void test_ok(void)
{
	char buf[EP_UDS_OK_MAX];

	tap_ok(ep_uds_format_ok(buf, 1u << 30) == 14 && memcmp(buf, "OK 1073741824\n", 14) == 0,
	       "OK 1073741824\\n");
	tap_ok(ep_uds_format_ok(buf, UINT32_MAX) == 14 && memcmp(buf, "OK 4294967295\n", 14) == 0,
	       "the longest reply fits");
}

static int nonblocking(int fd)
{
	return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

static void test_sockets(const char *dir)
{
	char base[96], path[128], longp[200];
	int lfd, cfd, afd, sfd, stale;

	snprintf(base, sizeof(base), "%s/vm.vsock", dir);
	/* A stale socket file from an earlier run must not stop the listener. */
	stale = ep_uds_listen(base);
	close(stale);
	lfd = ep_uds_listen(base);
	tap_ok(stale >= 0 && lfd >= 0 && nonblocking(lfd), "listen over a stale socket file");
	tap_ok(ep_uds_accept(lfd) == -EAGAIN, "accept with nobody waiting: -EAGAIN");
	close(lfd);

	snprintf(path, sizeof(path), "%s_1024", base);
	lfd = ep_uds_listen(path);
	cfd = ep_uds_connect(base, 1024, false);
	afd = ep_uds_accept(lfd);
	tap_ok(cfd >= 0 && afd >= 0 && nonblocking(cfd) && nonblocking(afd),
	       "connect to <base>_1024 and accept it, both non-blocking");
	tap_ok(write(cfd, "abc", 3) == 3 && read(afd, path, 3) == 3 && memcmp(path, "abc", 3) == 0,
	       "bytes flow");
	tap_ok(ep_uds_connect(base, 1024, true) == -EPROTOTYPE,
	       "SEQPACKET connect to a stream listener: -EPROTOTYPE");
	close(cfd);
	close(afd);
	close(lfd);
	tap_ok(ep_uds_connect(base, 1024, false) == -ECONNREFUSED,
	       "socket file without a listener: -ECONNREFUSED");
	tap_ok(ep_uds_connect(base, 1025, false) == -ENOENT, "no socket file: -ENOENT");

	snprintf(path, sizeof(path), "%s_77", base);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		memcpy(sa.sun_path, path, strlen(path));
		bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
		listen(lfd, 1);
	}
	sfd = ep_uds_connect(base, 77, true);
	tap_ok(sfd >= 0, "SEQPACKET connect to a SEQPACKET listener");
	close(sfd);
	close(lfd);

	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	tap_ok(ep_uds_connect(longp, 1, false) == -ENAMETOOLONG &&
	       ep_uds_listen(longp) == -ENAMETOOLONG, "path longer than sun_path: -ENAMETOOLONG");
}

/* Events of @p h now, the last one in *@p last. */
static int events(struct ep_host *h, struct ep_event *last)
{
	struct ep_event ev[8];
	int n = ep_host_events(h, ev, 8);

	if (n > 0)
		*last = ev[n - 1];
	return n;
}

/*
 * A socket endpoint asks for EPOLLOUT only while a write waits for room: the far side's
 * reads raise no event otherwise (each would cost an epoll_wait on a round trip's path),
 * and once a write came up short, the room the far side makes is reported, once.
 */
static void test_epollout(const char *dir)
{
	static char chunk[65536], sink[65536];
	const struct ep_addr a = { .dst_port = 2000, .type = VIRTIO_VSOCK_TYPE_STREAM };
	struct iovec one, scratch[4];
	struct ep_io io = { .iov = scratch, .n = 4 };
	struct ep_event ev = { 0 };
	struct mq q = { 0 };
	char base[96], path[128];
	uint32_t held = 0, moved;
	struct ep_host h;
	struct ep e;
	ssize_t w = 0;
	int lfd, afd, n, rounds = 0;

	snprintf(base, sizeof(base), "%s/out.vsock", dir);
	snprintf(path, sizeof(path), "%s_2000", base);
	lfd = ep_uds_listen(path);
	ep_init(&e);
	if (lfd < 0 || ep_host_init(&h, base, -1, NULL, NULL) < 0 ||
	    ep_connect(&h, &e, 42, &a, NULL) != 0 || (afd = ep_uds_accept(lfd)) < 0) {
		tap_ok(0, "a socket endpoint connected");
		return;
	}
	io.epfd = h.epfd;
	events(&h, &ev);	/* what the registration reported */
	one = (struct iovec){ .iov_base = chunk, .iov_len = 64 };
	tap_ok(ep_sock_writev(&e, &io, &one, 1, 64) == 64 && read(afd, sink, 64) == 64 &&
	       events(&h, &ev) == 0 && !e.want_out,
	       "a write taken whole, read by the far side: no event, EPOLLOUT not asked for");

	/* Fill the socket: a short write asks for EPOLLOUT. */
	one = (struct iovec){ .iov_base = chunk, .iov_len = sizeof(chunk) };
	while (rounds++ < 1024 && (w = ep_sock_writev(&e, &io, &one, 1, sizeof(chunk))) ==
	       (ssize_t)sizeof(chunk))
		;
	tap_ok(w >= 0 && w < (ssize_t)sizeof(chunk) && !(e.ev & EP_WRITABLE) && e.want_out,
	       "a short write: not writable, EPOLLOUT asked for");
	tap_ok(events(&h, &ev) == 0, "no event while the socket stays full");
	while ((n = (int)read(afd, sink, sizeof(sink))) > 0)
		;
	n = events(&h, &ev);
	tap_ok(n == 1 && ev.token == 42 && (ev.ev & EP_WRITABLE),
	       "the far side drained it: one event, writable, with the endpoint's token");
	e.ev |= ev.ev;

	/* Nothing left waiting: EPOLLOUT dropped, reads silent again. */
	tap_ok(ep_sock_send(&e, &io, &q, &held, &moved) == 0 && !e.want_out,
	       "the queue empty after a send: EPOLLOUT no longer asked for");
	one = (struct iovec){ .iov_base = chunk, .iov_len = 64 };
	tap_ok(ep_sock_writev(&e, &io, &one, 1, 64) == 64 && read(afd, sink, 64) == 64 &&
	       events(&h, &ev) == 0, "and the far side's reads raise no event again");
	close(afd);
	close(lfd);
	ep_close(&e, true, NULL);
	ep_host_fini(&h);
}

/* Only a socket is ever removed from where a listener goes; anything else is refused. */
static void test_listen_path(const char *dir)
{
	char file[128], link[128], sock[128], dangling[128];
	struct stat st;
	int fd;

	snprintf(file, sizeof(file), "%s/file.vsock", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
	tap_ok(fd >= 0 && write(fd, "keep me", 7) == 7 && close(fd) == 0, "a regular file");
	tap_ok(ep_uds_listen(file) == -EEXIST && path_holds(file, "keep me"),
	       "listen where a regular file is: -EEXIST, the file untouched");

	snprintf(link, sizeof(link), "%s/link.vsock", dir);
	tap_ok(symlink(file, link) == 0 && ep_uds_listen(link) == -EEXIST &&
	       path_links_to(link, file) && path_holds(file, "keep me"),
	       "listen where a symlink to a file is: -EEXIST, the link and its target untouched");

	snprintf(sock, sizeof(sock), "%s/target.sock", dir);
	fd = ep_uds_listen(sock);
	close(fd);
	snprintf(link, sizeof(link), "%s/sock-link.vsock", dir);
	tap_ok(fd >= 0 && symlink(sock, link) == 0 && ep_uds_listen(link) == -EEXIST &&
	       path_links_to(link, sock) && lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode),
	       "a symlink to a socket is not a socket: -EEXIST, both untouched");

	snprintf(dangling, sizeof(dangling), "%s/dangling.vsock", dir);
	tap_ok(symlink("/nonexistent/x", dangling) == 0 && ep_uds_listen(dangling) == -EEXIST &&
	       path_links_to(dangling, "/nonexistent/x"), "a dangling symlink: -EEXIST, untouched");

	snprintf(link, sizeof(link), "%s/dir.vsock", dir);
	tap_ok(mkdir(link, 0700) == 0 && ep_uds_listen(link) == -EEXIST &&
	       lstat(link, &st) == 0 && S_ISDIR(st.st_mode), "a directory: -EEXIST, untouched");
	fd = ep_uds_listen(sock);
	tap_ok(fd >= 0 && lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode),
	       "a stale socket is replaced by the listener");
	close(fd);
}

int main(void)
{
	char dir[] = "/tmp/test_ep_uds_XXXXXX";
	char cmd[64];

	test_parse();
	test_line_read();
	test_ok();
	if (mkdtemp(dir)) {
		test_sockets(dir);
		test_listen_path(dir);
		test_epollout(dir);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", dir);
	} else {
		tap_ok(0, "mkdtemp");
	}
	return tap_done();
}
