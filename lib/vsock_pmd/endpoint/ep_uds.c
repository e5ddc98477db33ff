/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unix socket side of hybrid vsock: connect, accept, the CONNECT line and the OK reply.
 * doc/hybrid-vsock.md describes the convention and why we answer the way we do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ep_uds.h"

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	return 0;
}

int ep_uds_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd, ret;

	ret = fill_addr(&sa, path);
	if (ret < 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int ep_uds_connect(const char *uds_path, uint32_t port, bool seqpacket)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct sockaddr_un sa;
	int fd, ret, n;

	n = snprintf(path, sizeof(path), "%s_%u", uds_path, port);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	ret = fill_addr(&sa, path);
	if (ret < 0)
		return ret;
	fd = socket(AF_UNIX, (seqpacket ? SOCK_SEQPACKET : SOCK_STREAM) |
		    SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/*
	 * A Unix connect completes or fails at once; a non-blocking one fails with EAGAIN instead
	 * of waiting for room in a full backlog, so it never leaves a connect in progress.
	 */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int ep_uds_accept(int listen_fd)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int ep_uds_parse_connect(const char *line, size_t len, uint32_t *port)
{
	static const char kw[] = "CONNECT";
	const size_t kwlen = sizeof(kw) - 1;
	uint64_t v = 0;
	size_t i, digits = 0;

	if (len < kwlen + 3 || line[len - 1] != '\n')
		return -EPROTO;
	len--;
	if (line[len - 1] == '\r')
		len--;
	if (strncasecmp(line, kw, kwlen) != 0 || line[kwlen] != ' ')
		return -EPROTO;
	for (i = kwlen; i < len && line[i] == ' '; i++)
		;
	for (; i < len; i++, digits++) {
		if (line[i] < '0' || line[i] > '9')
			return -EPROTO;
		v = v * 10 + (uint64_t)(line[i] - '0');
		if (v > UINT32_MAX)
			return -EPROTO;
	}
	if (digits == 0)
		return -EPROTO;
	*port = (uint32_t)v;
	return 0;
}

int ep_uds_line_read(int fd, struct ep_uds_line *l, uint32_t *port, size_t *line_len)
{
	char *nl;
	ssize_t n;

	n = recv(fd, l->buf + l->len, sizeof(l->buf) - l->len, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	l->len += (uint8_t)n;
	nl = memchr(l->buf, '\n', l->len);
	if (!nl)
		return l->len == sizeof(l->buf) ? -EPROTO : 0;
	*line_len = (size_t)(nl - l->buf) + 1;
	if (ep_uds_parse_connect(l->buf, *line_len, port) < 0)
		return -EPROTO;
	return 1;
}

size_t ep_uds_format_ok(char *buf, uint32_t port)
{
	return (size_t)snprintf(buf, EP_UDS_OK_MAX, "OK %u\n", port);
}
